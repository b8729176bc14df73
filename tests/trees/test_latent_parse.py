"""The coarse-to-fine PCFG-LA parser against every tree of tiny grammars: log Z, max-rule-product,
Viterbi, the coarse posteriors behind the pruning, and pruning off or tiny = the exact parser."""
import numpy as np
import pytest
from tests.brute_latent import best_annotation, enumerate_annotations, parser_derivations

from cvbayes.data.trees import parse_trees
from cvbayes.trees.grammar import BINARY, LEXICAL
from cvbayes.trees.latent import AnnotatedTables, treebank_weights
from cvbayes.trees.latent_parse import coarse_masks, full_masks, parse_sentence, parser_grammar, sum_pass
from cvbayes.trees.latent_parser import LatentParser, prune_charts, remove_root, rows_to_tree
from cvbayes.trees.treebank import debinarise, prepare_treebank

TREES = parse_trees("""
(S (NP (D a) (N b)) (VP (V c) (NP (N b))))
(NP (N b))
(S (NP (N a)) (V c) (N b))
(VP (V c) (NP (D a) (N b)))
(S (NP (D a) (N b)) (V c))
""")
SENTENCES = [["b"], ["a", "b"], ["a", "b", "c"], ["b", "c", "b"], ["a", "b", "c", "b"]]


@pytest.fixture(scope="module")
def grammar():
    return prepare_treebank(TREES, min_count=1).grammar


def random_weights(grammar, n_sub, seed):
    rng = np.random.default_rng(seed)
    return AnnotatedTables(*(0.1 + rng.random(shape) for shape in (
        (len(grammar.binary_rules), n_sub, n_sub, n_sub), (len(grammar.unary_rules), n_sub, n_sub),
        (len(grammar.lexical_rules), n_sub))))


def brute(grammar, weights, words):
    """Every derivation with its weight summed over annotations, its best annotation and its rules."""
    found = []
    for tree, anchored in parser_derivations(grammar, words):
        log_z, _ = enumerate_annotations(tree, grammar, weights)
        found.append((tree, anchored, np.exp(log_z), best_annotation(tree, grammar, weights)))
    return found


def items_of(grammar, anchored):
    """The chart items of a derivation: bottom items (binary, lexical nodes), top items (children of
    binary rules and of ROOT's unary rule)."""
    bottom, top = set(), set()
    for kind, rule, i, j, k in anchored:
        if kind == BINARY:
            parent, left, right = grammar.binary_rules[rule]
            bottom.add((int(parent), i, k))
            top.update({(int(left), i, j), (int(right), j, k)})
        elif kind == LEXICAL:
            bottom.add((int(grammar.lexical_rules[rule, 0]), i, k))
        elif grammar.unary_rules[rule, 0] == 0:
            top.add((int(grammar.unary_rules[rule, 1]), i, k))
    return bottom, top


def run(kernel, weights, ids, max_rule=True):
    """`parse_sentence` on the whole chart: (score, rows as tuples)."""
    with np.errstate(divide="ignore"):
        log_weights = [np.log(table) for table in weights]
    rows = np.empty((4 * len(ids), 5), dtype=np.int64)
    score, n, _ = parse_sentence(kernel, *weights, *log_weights, ids, *full_masks(len(ids), kernel.n_symbols, 0),
                                 False, max_rule, rows)
    return score, [tuple(int(v) for v in row) for row in rows[:n]]


def encoded(grammar, words):
    return np.array([grammar.word_index[w] for w in words], dtype=np.int64)


@pytest.mark.parametrize("n_sub", [1, 2])
def test_log_z_and_the_two_decoders_against_every_tree(grammar, n_sub):
    kernel = parser_grammar(grammar)
    weights = random_weights(grammar, n_sub, seed=n_sub)
    for words in SENTENCES:
        derivations = brute(grammar, weights, words)
        assert derivations, words
        ids = encoded(grammar, words)
        total = sum(p for _, _, p, _ in derivations)
        log_z = sum_pass(kernel, *weights, ids, *full_masks(len(words), kernel.n_symbols, 0))[0]
        assert log_z == pytest.approx(np.log(total), rel=1e-12)
        # max-rule-product: anchored rule posteriors from the enumeration
        posterior = {}
        for _, anchored, p, _ in derivations:
            for rule in anchored:
                posterior[rule] = posterior.get(rule, 0.0) + p / total
        scores = [sum(np.log(posterior[rule]) for rule in anchored) for _, anchored, _, _ in derivations]
        score, rows = run(kernel, weights, ids)
        assert score == pytest.approx(max(scores), rel=1e-10)
        assert sum(np.log(posterior[rule]) for rule in rows) == pytest.approx(max(scores), rel=1e-10)
        best = derivations[int(np.argmax(scores))][0]
        assert rows_to_tree(grammar, np.array(rows), words) == best
        # Viterbi: the best annotated derivation
        score, rows = run(kernel, weights, ids, max_rule=False)
        best_weight = max(b for _, _, _, b in derivations)
        assert score == pytest.approx(np.log(best_weight), rel=1e-12)
        tree = rows_to_tree(grammar, np.array(rows), words)
        assert best_annotation(tree, grammar, weights) == pytest.approx(best_weight, rel=1e-12)


def test_coarse_pruning_keeps_exactly_the_items_above_the_threshold(grammar):
    kernel = parser_grammar(grammar)
    coarse = treebank_weights(grammar)
    for words in SENTENCES:
        derivations = brute(grammar, coarse, words)
        total = sum(p for _, _, p, _ in derivations)
        bottom_posterior, top_posterior = {}, {}
        for _, anchored, p, _ in derivations:
            bottom, top = items_of(grammar, anchored)
            for item in bottom:
                bottom_posterior[item] = bottom_posterior.get(item, 0.0) + p / total
            for item in top:
                top_posterior[item] = top_posterior.get(item, 0.0) + p / total
        for threshold in (1e-9, 0.05, 0.3):
            keep_bottom, keep_top, kept = coarse_masks(kernel, *coarse, encoded(grammar, words), threshold)
            got_bottom = {(a, i, k) for i, k, a in zip(*np.nonzero(keep_bottom))}
            got_top = {(a, i, k) for i, k, a in zip(*np.nonzero(keep_top))}
            # posteriors within 1e-9 of the threshold could fall either side
            assert got_bottom == {item for item, q in bottom_posterior.items() if q >= threshold}
            assert got_top == {item for item, q in top_posterior.items() if q >= threshold}
            assert kept == len(got_bottom) + len(got_top)


@pytest.mark.parametrize("decoder", ["max-rule", "viterbi"])
def test_pruning_off_or_tiny_is_the_exact_parser(grammar, decoder):
    weights = random_weights(grammar, 2, seed=9)
    parser = LatentParser(grammar, weights, decoder=decoder)
    exact = parser.parse(SENTENCES, pruning=None)
    pruned = parser.parse(SENTENCES, pruning=1e-12)
    assert pruned.trees == exact.trees
    np.testing.assert_allclose(pruned.log_scores, exact.log_scores, rtol=1e-12, atol=1e-12)
    assert pruned.pruning.kept_share < 1.0 and exact.pruning is None
    # the batch API returns the kernels' trees, debinarised and without ROOT
    kernel = parser_grammar(grammar)
    for words, tree in zip(SENTENCES, exact.trees):
        _, rows = run(kernel, weights, encoded(grammar, words), max_rule=decoder == "max-rule")
        assert tree == remove_root(debinarise(rows_to_tree(grammar, np.array(rows), words)))
    # a pruning made once serves any split of the grammar
    pruning = prune_charts(grammar, SENTENCES, 1e-12)
    assert parser.parse(SENTENCES, pruning).trees == exact.trees
    with pytest.raises(ValueError, match="other sentences"):
        parser.parse(SENTENCES[:2], pruning)


def test_words_without_a_tree_fall_back_to_their_signatures_then_to_none(grammar):
    parser = LatentParser(grammar, random_weights(grammar, 2, seed=1))
    batch = parser.parse([["zzz"], ["a", "b"], []], pruning=1e-4)
    assert batch.trees[0] is None and batch.trees[2] is None
    assert batch.trees[1] is not None and batch.as_unknown == 0
    assert np.isneginf(batch.log_scores[0])


@pytest.mark.parametrize("n_sub", [1, 3])
def test_counting_semiring_counts_derivations_and_annotations(grammar, n_sub):
    """Every weight 1: the sum chart counts every derivation's annotations, H^(nodes - 1) each (ROOT's
    subtype is fixed), and the Viterbi decoder's best is 1."""
    kernel = parser_grammar(grammar)
    weights = AnnotatedTables(*(np.ones_like(table) for table in random_weights(grammar, n_sub, seed=0)))
    for words in SENTENCES:
        count = sum(n_sub ** (len(anchored) - 1) for _, anchored in parser_derivations(grammar, words))
        ids = encoded(grammar, words)
        log_z = sum_pass(kernel, *weights, ids, *full_masks(len(words), kernel.n_symbols, 0))[0]
        assert log_z == pytest.approx(np.log(count), rel=1e-12)
        assert run(kernel, weights, ids, max_rule=False)[0] == 0.0

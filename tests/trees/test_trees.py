"""Tree kernels against brute-force enumeration of every tree of tiny grammars (thesis eq. 4.8-4.9, 4.15)."""
import math
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chi2

from cvbayes.data.trees import Tree, tree_rule_ids
from cvbayes.trees.inside_outside import derivation_to_tree
from cvbayes.trees import (compile_grammar, expected_counts, full_cnf_grammar, inside_outside, log_z, make_tables,
                           parse_grammar, sample_tree, viterbi, viterbi_batch)
from cvbayes.trees.grammar import LEXICAL, SPAN, UNARY, Terminal


# ------------------------------------------------------------------ the enumerator
def enumerate_trees(compiled, weights, words, max_unary_chain=12):
    """Every tree of `words` rooted in the start symbol, as {Tree: (weight, Counter of global rule ids)}.

    Works on the user's rules (n-ary rules unbinarised, unary rules as
    written, <any> families by substring), independently of the kernels'
    binarisation and closure.  Unary chains are cut at `max_unary_chain`
    rules, which is exact for acyclic grammars and a tiny truncation for
    cycles of small weight.
    """
    names = compiled.nonterminals
    rows = {name: range(compiled.row_offsets[a], compiled.row_offsets[a + 1]) for a, name in enumerate(names)}
    memo = {}

    def rhs_of(rule_id):
        if compiled.grammar is None:     # full CNF layout
            n = len(names)
            offset = rule_id - compiled.row_offsets[compiled.rule_parent[rule_id]]
            if offset < n * n:
                return (names[offset // n], names[offset % n])
            return (Terminal(compiled.vocabulary.symbol(int(offset - n * n))),)
        return compiled.grammar.rules[compiled.rule_source[rule_id]].rhs

    def sequences(symbols, i, k, budget):
        """Derivations of a symbol sequence over words[i:k], each symbol over a non-empty part."""
        if not symbols:
            return [(1.0, Counter(), [])] if i == k else []
        head, rest = symbols[0], symbols[1:]
        out = []
        for mid in range(i + 1, k - len(rest) + 1):
            if isinstance(head, Terminal):
                firsts = [(1.0, Counter(), words[i])] if mid == i + 1 and words[i] == head.text else []
            else:
                firsts = derive(head, i, mid, budget)
            if not firsts:
                continue
            for w2, c2, trees2 in sequences(rest, mid, k, budget):
                for w1, c1, t1 in firsts:
                    out.append((w1 * w2, c1 + c2, [t1] + trees2))
        return out

    def derive(symbol, i, k, budget):
        key = (symbol, i, k, budget)
        if key in memo:
            return memo[key]
        out = []
        for rule_id in rows[symbol]:
            w = weights[rule_id]
            if w == 0.0:
                continue
            kind = compiled.rule_kind[rule_id]
            one = Counter({int(rule_id): 1})
            if kind == SPAN:
                substring = compiled.substrings.index(compiled.vocabulary.encode(words[i:k]))
                family = np.flatnonzero(compiled.kernel.span_parent == names.index(symbol))[0]
                if rule_id == compiled.kernel.span_base[family] + substring:
                    out.append((w, one, Tree(symbol, words[i:k])))
                continue
            rhs = rhs_of(rule_id)
            if kind == UNARY:
                if budget == 0:
                    continue
                for w1, c1, t1 in derive(rhs[0], i, k, budget - 1):
                    out.append((w * w1, one + c1, Tree(symbol, [t1])))
                continue
            if kind == LEXICAL:
                if k == i + 1 and words[i] == rhs[0].text:
                    out.append((w, one, Tree(symbol, [words[i]])))
                continue
            for w1, c1, children in sequences(list(rhs), i, k, max_unary_chain):
                out.append((w * w1, one + c1, Tree(symbol, children)))
        memo[key] = out
        return out

    trees = {}
    for w, counts, tree in derive(names[compiled.start], 0, len(words), max_unary_chain):
        assert tree not in trees, "two derivations of one tree"
        trees[tree] = (w, counts)
    return trees


def exact_posterior(compiled, weights, words, **kw):
    """log Z, expected counts (R,), span marginals (T+1, T+1, n_nonterminals), best tree, tree probabilities."""
    trees = enumerate_trees(compiled, weights, words, **kw)
    total = sum(w for w, _ in trees.values())
    counts = np.zeros(compiled.n_rules)
    marginals = np.zeros((len(words) + 1, len(words) + 1, compiled.n_nonterminals))
    index = {name: a for a, name in enumerate(compiled.nonterminals)}
    for tree, (w, rule_counts) in trees.items():
        for rule_id, c in rule_counts.items():
            counts[rule_id] += c * w / total
        for label, begin, end, _ in tree.spans():
            marginals[begin, end, index[label]] += w / total
    best = max(trees, key=lambda t: trees[t][0])
    probs = {tree: w / total for tree, (w, _) in trees.items()}
    return math.log(total), counts, marginals, best, probs


def random_weights(compiled, rng, concentration=1.0):
    """A random proper table: each row drawn from a Dirichlet."""
    return compiled.normalize(rng.gamma(concentration, size=compiled.n_rules))


# ------------------------------------------------------------------ grammars
UNARY_NARY = """
S -> NP VP
S -> VP
NP -> N
NP -> D N
NP -> D A N
NP -> NP "and" NP
VP -> V NP
VP -> V
VP -> S "too"
N -> "dog"
N -> "cat"
A -> "big"
D -> "the"
V -> "sees"
V -> "dog"
"""

CYCLE = """
S -> A B
S -> A
A -> B
B -> A
A -> "x"
B -> "x"
B -> "y"
"""

MORPHOLOGY = """
Word -> V
Word -> V M
Word -> SM V M
Word -> SM T V M
SM -> <any>
T -> <any:1>
V -> <any>
M -> <any:2>
"""


def cnf(layout, n=3, words=3):
    return full_cnf_grammar(n, words, layout=layout)


def check_against_enumeration(compiled, weights, words, **kw):
    tables = make_tables(compiled, weights)
    want_log_z, want_counts, want_marginals, want_best, _ = exact_posterior(compiled, weights, words, **kw)
    got = inside_outside(compiled, tables, words, marginals=True)
    assert got.log_z == pytest.approx(want_log_z, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(got.counts, want_counts, atol=1e-10)
    np.testing.assert_allclose(got.span_marginals, want_marginals, atol=1e-10)
    assert log_z(compiled, tables, words) == pytest.approx(want_log_z, rel=1e-10, abs=1e-10)
    best = viterbi(compiled, tables, words)
    assert derivation_to_tree(compiled, best, words) == want_best
    assert best.log_weight == pytest.approx(math.log(exact_tree_weight(compiled, weights, want_best)))
    np.testing.assert_array_equal(np.sort(best.rules), np.sort(tree_rule_ids(compiled, want_best)))
    return got


def exact_tree_weight(compiled, weights, tree):
    return float(np.prod(weights[tree_rule_ids(compiled, tree)]))


# ------------------------------------------------------------------ log Z, counts, marginals, Viterbi
@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("length", [1, 2, 4])
def test_full_cnf_matches_enumeration(layout, length):
    rng = np.random.default_rng(length)
    compiled = cnf(layout)
    assert compiled.kernel.dense == (layout == "dense")
    weights = random_weights(compiled, rng, 0.5)
    words = [f"w{i}" for i in rng.integers(0, 3, size=length)]
    check_against_enumeration(compiled, weights, words)


def test_unary_chains_and_nary_rules_match_enumeration():
    rng = np.random.default_rng(5)
    compiled = compile_grammar(parse_grammar(UNARY_NARY))
    assert any(name.startswith("@") for name in compiled.symbols)   # binarised internally
    for sentence in ["the dog sees the big cat", "dog sees cat and the cat", "sees dog too",
                     "the cat sees dog too", "dog sees dog"]:
        weights = random_weights(compiled, rng)
        check_against_enumeration(compiled, weights, sentence.split())


def test_unary_cycle_is_summed_exactly():
    rng = np.random.default_rng(8)
    compiled = compile_grammar(parse_grammar(CYCLE))
    weights = random_weights(compiled, rng)
    # keep the cycle A -> B -> A light so that truncating it at 40 rules is exact to 1e-15
    weights[compiled.rule_kind == UNARY] *= 0.3
    for words in (["x"], ["x", "y"], ["y"]):
        check_against_enumeration(compiled, weights, words, max_unary_chain=40)


def test_span_rules_match_enumeration():
    rng = np.random.default_rng(11)
    data = ["lebona", "bona", "kebona", "lea"]
    sentences = [list(word) for word in data]
    compiled = compile_grammar(parse_grammar(MORPHOLOGY), sentences)
    sub = compiled.substrings
    assert len(sub) == len({tuple(w[i:j]) for w in data for i in range(len(w)) for j in range(i + 1, len(w) + 1)})
    sizes = dict(zip(compiled.nonterminals, compiled.row_sizes))
    assert sizes["V"] == len(sub) and sizes["T"] == sub.count(1) and sizes["M"] == sub.count(2)
    assert sizes["Word"] == 4
    for sentence in sentences:
        weights = random_weights(compiled, rng, 0.3)
        check_against_enumeration(compiled, weights, sentence)


def test_unseen_substring_has_weight_zero():
    compiled = compile_grammar(parse_grammar("Word -> V\nV -> <any>"), [list("ab")])
    tables = make_tables(compiled, np.full(compiled.n_rules, 0.5))
    assert log_z(compiled, tables, list("ab")) == pytest.approx(2 * math.log(0.5))
    assert log_z(compiled, tables, list("ba")) == -np.inf
    result = inside_outside(compiled, tables, list("ba"))
    assert result.log_z == -np.inf and not result.counts.any()
    assert viterbi(compiled, tables, list("ba")) is None


# ------------------------------------------------------------------ batches
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_batch_equals_sum_of_sentences(layout):
    rng = np.random.default_rng(3)
    compiled = cnf(layout, n=4, words=5)
    weights = random_weights(compiled, rng)
    tables = make_tables(compiled, weights)
    sentences = [[f"w{i}" for i in rng.integers(0, 5, size=rng.integers(1, 9))] for _ in range(13)]
    batch = compiled.prepare(sentences)
    counts, log_zs = expected_counts(compiled, tables, batch)
    singles = [inside_outside(compiled, tables, s) for s in sentences]
    np.testing.assert_allclose(log_zs, [r.log_z for r in singles], rtol=1e-12)
    np.testing.assert_allclose(counts, sum(r.counts for r in singles), rtol=1e-10, atol=1e-12)
    # every sentence of T words uses T lexical and T - 1 binary rules
    lengths = np.array([len(s) for s in sentences])
    assert counts[compiled.rule_kind == LEXICAL].sum() == pytest.approx(lengths.sum())
    assert counts[compiled.rule_kind == 0].sum() == pytest.approx((lengths - 1).sum())
    for sentence, parse in zip(sentences, viterbi_batch(compiled, tables, batch)):
        np.testing.assert_array_equal(parse.applications, viterbi(compiled, tables, sentence).applications)


def test_batch_with_span_rules_and_an_impossible_sentence():
    rng = np.random.default_rng(4)
    sentences = [list(w) for w in ["lebona", "bona", "kebona"]]
    compiled = compile_grammar(parse_grammar(MORPHOLOGY), sentences + [list("zz")])
    weights = random_weights(compiled, rng)
    # V never rewrites to "z": "zz" has no tree (Word needs V)
    for rule_id in range(compiled.n_rules):
        if compiled.rule_kind[rule_id] == SPAN and "z" in compiled.describe(rule_id):
            weights[rule_id] = 0.0
    tables = make_tables(compiled, weights)
    batch = compiled.prepare(sentences + [list("zz")])
    counts, log_zs = expected_counts(compiled, tables, batch)
    assert log_zs[-1] == -np.inf
    want = sum(inside_outside(compiled, tables, s).counts for s in sentences)
    np.testing.assert_allclose(counts, want, rtol=1e-10, atol=1e-14)
    parses = viterbi_batch(compiled, tables, batch)
    assert parses[-1] is None
    for sentence, parse in zip(sentences, parses):
        single = viterbi(compiled, tables, sentence)
        assert parse.log_weight == single.log_weight
        np.testing.assert_array_equal(parse.applications, single.applications)


@pytest.mark.parametrize("text", [MORPHOLOGY, None])
def test_take_equals_preparing_the_chosen_sentences(text):
    sentences = [list(w) for w in ["lebona", "bona", "kebona", "le"]]
    compiled = (compile_grammar(parse_grammar(text), sentences) if text else cnf("sparse", n=3, words=5))
    if not text:
        sentences = [["w1", "w3"], ["w0"], ["w4", "w2", "w2"], ["w3"]]
    ids = [2, 0, 2, 3]      # repeats allowed
    taken = compiled.prepare(sentences).take(ids)
    want = compiled.prepare([sentences[i] for i in ids])
    assert bool(want.span_ids.shape[0]) == bool(text)
    for got, expected in zip(taken, want):
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype


# ------------------------------------------------------------------ underflow
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_long_sentence_with_tiny_weights_stays_finite(layout):
    rng = np.random.default_rng(9)
    compiled = cnf(layout, n=3, words=4)
    weights = random_weights(compiled, rng)
    words = [f"w{i}" for i in rng.integers(0, 4, size=150)]
    base = inside_outside(compiled, make_tables(compiled, weights), words)
    tiny = weights.copy()
    lexical = compiled.rule_kind == LEXICAL
    tiny[lexical] *= 1e-5           # Z scales by 1e-5 per word: about 1e-750, far below float range
    tiny[~lexical] *= 1e-3          # and by 1e-3 per binary rule
    result = inside_outside(compiled, make_tables(compiled, tiny), words)
    want = base.log_z + 150 * math.log(1e-5) + 149 * math.log(1e-3)
    assert np.isfinite(result.log_z) and result.log_z == pytest.approx(want, rel=1e-10)
    # scaling every rule of a kind leaves the posterior unchanged
    np.testing.assert_allclose(result.counts, base.counts, rtol=1e-7, atol=1e-9)
    assert result.counts[lexical].sum() == pytest.approx(150)


# ------------------------------------------------------------------ sampling
def chi_square_p_value(observed: Counter, probs: dict, n_draws: int) -> float:
    """p-value of Pearson's test, cells with expected count below 5 pooled into one."""
    expected = np.array([p * n_draws for p in probs.values()])
    counts = np.array([observed.get(tree, 0) for tree in probs])
    assert sum(observed.values()) == n_draws and set(observed) <= set(probs)
    small = expected < 5
    exp_cells = np.r_[expected[~small], expected[small].sum()] if small.any() else expected
    obs_cells = np.r_[counts[~small], counts[small].sum()] if small.any() else counts
    statistic = ((obs_cells - exp_cells) ** 2 / exp_cells).sum()
    return float(chi2.sf(statistic, len(exp_cells) - 1))


@pytest.mark.parametrize("case", ["dense", "unary", "cycle", "span"])
def test_sampled_trees_follow_the_exact_distribution(case):
    rng = np.random.default_rng(21)
    chain = 12
    if case == "dense":
        compiled = cnf("dense", n=2, words=2)
        words = ["w0", "w1", "w0"]
    elif case == "unary":
        compiled = compile_grammar(parse_grammar(UNARY_NARY))
        words = "dog and cat and dog sees dog too".split()
    elif case == "cycle":
        compiled = compile_grammar(parse_grammar(CYCLE))
        words = ["x", "y"]
        chain = 40
    else:
        sentences = [list(w) for w in ["lebona", "bona"]]
        compiled = compile_grammar(parse_grammar(MORPHOLOGY), sentences)
        words = sentences[0]
    weights = random_weights(compiled, rng)
    if case == "cycle":
        weights[compiled.rule_kind == UNARY] *= 0.5
    tables = make_tables(compiled, weights)
    probs = exact_posterior(compiled, weights, words, max_unary_chain=chain)[4]
    assert 4 <= len(probs) <= 2000
    n_draws = 4000
    observed = Counter()
    for seed in range(n_draws):
        draw = sample_tree(compiled, tables, words, seed)
        tree = derivation_to_tree(compiled, draw, words)
        observed[tree] += 1
        if seed < 50:   # the returned weight and counts are the tree's
            assert draw.log_weight == pytest.approx(math.log(exact_tree_weight(compiled, weights, tree)))
            np.testing.assert_array_equal(np.sort(draw.rules), np.sort(tree_rule_ids(compiled, tree)))
    assert chi_square_p_value(observed, probs, n_draws) > 1e-3
    # the test has power: the same draws are rejected against a distribution off by a factor 1.5 on one tree
    top = max(probs, key=probs.get)
    wrong = dict(probs)
    wrong[top] = probs[top] * 1.5
    total = sum(wrong.values())
    wrong = {t: p / total for t, p in wrong.items()}
    assert chi_square_p_value(observed, wrong, n_draws) < 1e-3


def test_sampling_is_reproducible_and_binarised_trees_are_kept_on_request():
    compiled = compile_grammar(parse_grammar(UNARY_NARY))
    tables = make_tables(compiled, random_weights(compiled, np.random.default_rng(1)))
    words = "the big dog sees the cat".split()
    first = sample_tree(compiled, tables, words, 7)
    again = sample_tree(compiled, tables, words, 7)
    np.testing.assert_array_equal(first.applications, again.applications)
    binary_tree = derivation_to_tree(compiled, first, words, binarized=True)
    assert any(node.label.startswith("@") for node in binary_tree.subtrees())
    assert all(len(node.children) <= 2 for node in binary_tree.subtrees())
    assert binary_tree.leaves() == words


# ------------------------------------------------------------------ tables
def test_unary_cycle_with_unbounded_mass_is_rejected():
    compiled = compile_grammar(parse_grammar(CYCLE))
    weights = np.ones(compiled.n_rules)   # A -> B -> A with weight 1 each: infinite chains
    with pytest.raises(ValueError, match="spectral radius"):
        make_tables(compiled, weights)
    with pytest.raises(ValueError, match="shape"):
        make_tables(compiled, np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        make_tables(compiled, -np.ones(compiled.n_rules))


def test_full_cnf_layout_and_rule_ids():
    compiled = full_cnf_grammar(3, 4)
    assert compiled.n_rules == 3 * (9 + 4)
    np.testing.assert_array_equal(compiled.row_sizes, [13, 13, 13])
    assert compiled.rule_id("1", [Tree("2", ["w0"]), Tree("0", ["w1"])]) == 13 + 2 * 3 + 0
    assert compiled.rule_id("2", ["w3"]) == 26 + 9 + 3
    assert compiled.describe(13 + 7) == "1 -> 2 1"
    assert compiled.describe(26 + 9 + 3) == '2 -> "w3"'
    with pytest.raises(ValueError, match="no rule"):
        compiled.rule_id("0", [Tree("1", ["w0"])])


def test_binarised_counts_map_back_to_the_users_rule():
    compiled = compile_grammar(parse_grammar(UNARY_NARY))
    nary = [r for r in range(compiled.n_rules) if compiled.describe(r) == "NP -> D A N"]
    tables = make_tables(compiled, random_weights(compiled, np.random.default_rng(2)))
    result = inside_outside(compiled, tables, "the big cat sees dog".split())
    assert result.counts[nary[0]] == pytest.approx(1.0)
    assert not np.isnan(result.counts).any()


def test_exhaustive_enumerator_counts_catalan_trees():
    """The enumerator itself: a 1-symbol CNF grammar has Catalan(T-1) trees."""
    compiled = cnf("dense", n=1, words=1)
    for length, catalan in [(1, 1), (2, 1), (3, 2), (4, 5), (5, 14), (6, 42)]:
        assert len(enumerate_trees(compiled, np.ones(compiled.n_rules), ["w0"] * length)) == catalan


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_counting_semiring_both_semirings_of_the_chart(layout):
    """Every weight 1: the sum chart counts the trees, Catalan(T-1) N^(2T-2) (every node but the root
    labelled freely), up to T = 40 (a count of 1e49: the scaling at work); the max chart's best is 1."""
    n = 3
    compiled = cnf(layout, n=n, words=2)
    tables = make_tables(compiled, np.ones(compiled.n_rules))
    for length in (1, 2, 3, 7, 40):
        words = ["w0", "w1"] * (length // 2) + ["w0"] * (length % 2)
        catalan = math.comb(2 * (length - 1), length - 1) // length
        want = math.log(catalan) + (2 * length - 2) * math.log(n)
        assert log_z(compiled, tables, words) == pytest.approx(want, rel=1e-12)
        best = viterbi(compiled, tables, words)
        assert best.log_weight == 0.0
        assert len(best.applications) == 2 * length - 1

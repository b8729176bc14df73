"""Inside-outside over latent annotations (Matsuzaki et al. 2005) against enumeration of every annotation."""
import numba
import numpy as np
import pytest
from tests.brute_latent import annotated_nodes, enumerate_annotations, random_tree

from cvbayes.data.trees import Tree
from cvbayes.trees.latent import (AnnotatedTables, RowLayout, add_posteriors, add_row_totals,
                                  latent_inside_outside, normalise_rows, parent_totals, posterior_offsets,
                                  row_sizes, split_grammar, tree_inside_outside, zero_annotated_tables)
from cvbayes.trees.treebank import ROOT, extract_grammar, prepare_treebank, tree_nodes


def random_weights(rng, grammar, n_sub, zeros=False):
    tables = AnnotatedTables(
        rng.random((len(grammar.binary_rules), n_sub, n_sub, n_sub)),
        rng.random((len(grammar.unary_rules), n_sub, n_sub)),
        rng.random((len(grammar.lexical_rules), n_sub)),
    )
    if zeros:
        for table in tables:
            table[rng.random(table.shape) < 0.3] = 0.0
    return tables


@pytest.mark.parametrize("n_sub,n_words", [(1, 5), (2, 3), (2, 5), (3, 3)])
def test_inside_outside_matches_enumeration(n_sub, n_words):
    rng = np.random.default_rng(10 * n_sub + n_words)
    trees = [random_tree(rng, n_words) for _ in range(4)]
    prepared = prepare_treebank(trees, horizontal=1, min_count=1)
    grammar = prepared.grammar
    for zeros in (False, True):
        weights = random_weights(rng, grammar, n_sub, zeros=zeros)
        result = latent_inside_outside(prepared.nodes, weights)
        want_counts = zero_annotated_tables(grammar, n_sub)
        for t, tree in enumerate(prepared.trees):
            log_z, counts = enumerate_annotations(tree, grammar, weights)
            assert result.log_z[t] == pytest.approx(log_z, rel=1e-12, abs=1e-12)
            if np.isfinite(log_z):
                want_counts = AnnotatedTables(*(a + b for a, b in zip(want_counts, counts)))
        for got, want in zip(result.counts, want_counts):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_zero_probability_tree_gives_minus_inf_and_no_counts():
    rng = np.random.default_rng(3)
    trees = [random_tree(rng, 4) for _ in range(3)]
    prepared = prepare_treebank(trees, min_count=1)
    weights = random_weights(rng, prepared.grammar, 2)
    first = prepared.nodes.rule[prepared.nodes.tree_offsets[1]]  # tree 1's first word
    weights.lexical[first] = 0.0
    result = latent_inside_outside(prepared.nodes, weights)
    assert result.log_z[1] == -np.inf
    alone = [t for t in (0, 2) if np.isfinite(result.log_z[t])]
    kept = tree_nodes([prepared.trees[t] for t in alone], prepared.grammar)
    for got, want in zip(result.counts, latent_inside_outside(kept, weights).counts):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def log_space_reference(tree, grammar, weights):
    """log Z by a log-space recursion (logaddexp), slow but immune to underflow."""
    symbol, word = grammar.symbol_index, grammar.word_index
    binary = {tuple(map(int, row)): r for r, row in enumerate(grammar.binary_rules)}
    lexical = {tuple(map(int, row)): r for r, row in enumerate(grammar.lexical_rules)}
    unary = {tuple(map(int, row)): r for r, row in enumerate(grammar.unary_rules)}
    memo = {}
    for node, children in reversed(annotated_nodes(tree)):
        if not children:
            value = np.log(weights.lexical[lexical[symbol[node.label], word[node.children[0]]]])
        elif len(children) == 1:
            r = unary[symbol[node.label], symbol[node.children[0].label]]
            value = np.logaddexp.reduce(np.log(weights.unary[r]) + memo[id(node.children[0])], axis=1)
        else:
            r = binary[tuple(symbol[child.label] for child in (node, *node.children))]
            left, right = (memo[id(child)] for child in node.children)
            value = np.logaddexp.reduce(
                np.log(weights.binary[r]) + left[None, :, None] + right[None, None, :], axis=(1, 2)
            )
        memo[id(node)] = value
    return memo[id(tree)][0]


def test_deep_tree_does_not_underflow():
    # One flat phrase of 1,500 words binarises to a chain 1,500 deep whose weight is far below 1e-308.
    n_words = 1500
    tree = Tree("S", [Tree("D", ["a"]) for _ in range(n_words)])
    prepared = prepare_treebank([tree], min_count=1)
    rng = np.random.default_rng(0)
    weights = AnnotatedTables(*(table * 1e-2 for table in random_weights(rng, prepared.grammar, 3)))
    result = latent_inside_outside(prepared.nodes, weights)
    want = log_space_reference(prepared.trees[0], prepared.grammar, weights)
    assert want < -3000
    assert result.log_z[0] == pytest.approx(want, rel=1e-10)
    # Each of the n_words - 1 binary nodes has a posterior summing to one.
    assert result.counts.binary.sum() == pytest.approx(n_words - 1, rel=1e-10)


def test_parallel_chunks_agree_with_one_chunk():
    rng = np.random.default_rng(5)
    trees = [random_tree(rng, int(n)) for n in rng.integers(1, 9, size=40)]
    prepared = prepare_treebank(trees, min_count=1)
    weights = random_weights(rng, prepared.grammar, 2)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = latent_inside_outside(prepared.nodes, weights)
    finally:
        numba.set_num_threads(threads)
    many = latent_inside_outside(prepared.nodes, weights)
    np.testing.assert_allclose(one.log_z, many.log_z, rtol=1e-13)
    for a, b in zip(one.counts, many.counts):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_stored_posteriors_add_up_to_the_counts_and_leave_a_tree_out():
    rng = np.random.default_rng(8)
    trees = [random_tree(rng, int(n)) for n in rng.integers(1, 7, size=6)]
    prepared = prepare_treebank(trees, min_count=1)
    nodes, grammar = prepared.nodes, prepared.grammar
    n_sub = 3
    weights = random_weights(rng, grammar, n_sub)
    offsets = posterior_offsets(nodes, n_sub)
    store = np.zeros(offsets[-1], dtype=np.float32)
    result = latent_inside_outside(nodes, weights, store=store)
    rebuilt = zero_annotated_tables(grammar, n_sub)
    for t in range(nodes.n_trees):
        add_posteriors(nodes.tree_offsets, nodes.kind, nodes.rule, t, store, offsets, 1.0, *rebuilt)
    # The counts received the stored float32 values themselves.
    for a, b in zip(rebuilt, result.counts):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    emptied = AnnotatedTables(*(table.copy() for table in result.counts))
    for t in range(nodes.n_trees):
        add_posteriors(nodes.tree_offsets, nodes.kind, nodes.rule, t, store, offsets, -1.0, *emptied)
    for table in emptied:
        assert np.abs(table).max() < 1e-12
    # Leaving tree 2 out gives the counts of the other trees (C^{\i}, eq. 4.24).
    left_out = AnnotatedTables(*(table.copy() for table in result.counts))
    add_posteriors(nodes.tree_offsets, nodes.kind, nodes.rule, 2, store, offsets, -1.0, *left_out)
    others = tree_nodes([tree for t, tree in enumerate(prepared.trees) if t != 2], grammar)
    for a, b in zip(left_out, latent_inside_outside(others, weights).counts):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_row_totals_move_with_the_stored_posteriors():
    rng = np.random.default_rng(12)
    prepared = prepare_treebank([random_tree(rng, int(n)) for n in rng.integers(1, 7, size=5)], min_count=1)
    nodes, grammar = prepared.nodes, prepared.grammar
    offsets = posterior_offsets(nodes, 3)
    store = np.zeros(offsets[-1], dtype=np.float32)
    counts = latent_inside_outside(nodes, random_weights(rng, grammar, 3), store=store).counts
    totals = parent_totals(grammar, counts)
    parents = [np.ascontiguousarray(rules[:, 0]) for rules in
               (grammar.binary_rules, grammar.unary_rules, grammar.lexical_rules)]
    add_posteriors(nodes.tree_offsets, nodes.kind, nodes.rule, 3, store, offsets, -1.0, *counts)
    add_row_totals(nodes.tree_offsets, nodes.kind, nodes.rule, 3, store, offsets, -1.0, *parents, totals)
    np.testing.assert_allclose(totals, parent_totals(grammar, counts), rtol=1e-12, atol=1e-12)
    # the flat layout's rows are the same rows
    layout = RowLayout(grammar, 3)
    np.testing.assert_allclose(np.bincount(layout.cell_row, layout.flatten(counts), minlength=layout.n_rows),
                               totals.ravel(), rtol=1e-12, atol=1e-12)
    assert np.array_equal(np.bincount(layout.cell_row, minlength=layout.n_rows), layout.row_width)
    assert all(np.array_equal(a, b) for a, b in zip(layout.tables(layout.flatten(counts)), counts))


def test_single_tree_kernel_matches_driver_and_fills_its_block():
    rng = np.random.default_rng(11)
    prepared = prepare_treebank([random_tree(rng, 5), random_tree(rng, 4)], min_count=1)
    nodes, grammar = prepared.nodes, prepared.grammar
    weights = random_weights(rng, grammar, 2)
    offsets = posterior_offsets(nodes, 2)
    store = np.full(offsets[-1], np.nan, dtype=np.float32)
    counts = zero_annotated_tables(grammar, 2)
    first, last = nodes.tree_offsets[1], nodes.tree_offsets[2]
    work = np.empty((last - first, 2))
    log_z = tree_inside_outside(nodes.kind, nodes.rule, nodes.left, nodes.right, first, last,
                                *weights, work, work.copy(), np.empty(last - first), *counts,
                                store, offsets)
    assert log_z == pytest.approx(latent_inside_outside(nodes, weights).log_z[1], rel=1e-13)
    assert np.isnan(store[: offsets[first]]).all()
    block = store[offsets[first]: offsets[last]]
    assert np.isfinite(block).all()
    # The root's block is a distribution over its annotations; it has subtype 0.
    root_block = store[offsets[last - 1]: offsets[last]].reshape(2, -1)
    assert root_block.sum() == pytest.approx(1.0, rel=1e-6)
    assert root_block[1].sum() == 0.0


def test_row_layout_totals_and_sizes():
    trees = [Tree("S", [Tree("NP", [Tree("D", ["a"]), Tree("N", ["b"])]), Tree("V", ["c"])]),
             Tree("S", [Tree("NP", [Tree("N", ["b"])]), Tree("V", ["c"])])]
    grammar = extract_grammar(prepare_treebank(trees, min_count=1).trees)
    n_sub = 2
    sizes = dict(zip(grammar.symbols, row_sizes(grammar, n_sub)))
    # S -> NP V (binary); NP -> D N (binary) and NP -> N (unary); ROOT -> S; D, N, V lexical.
    assert sizes == {"ROOT": 2, "S": 4, "NP": 4 + 2, "D": 1, "N": 1, "V": 1}
    ones = AnnotatedTables(*(np.ones_like(table) for table in zero_annotated_tables(grammar, n_sub)))
    totals = parent_totals(grammar, ones)
    np.testing.assert_array_equal(totals, np.repeat(row_sizes(grammar, n_sub)[:, None], n_sub, axis=1))
    uniform = normalise_rows(grammar, zero_annotated_tables(grammar, n_sub))
    np.testing.assert_allclose(parent_totals(grammar, uniform), 1.0)


def test_split_grammar_is_normalised_seeded_and_near_the_treebank_grammar():
    rng = np.random.default_rng(2)
    prepared = prepare_treebank([random_tree(rng, int(n)) for n in (3, 5, 6, 2, 4)], min_count=1)
    grammar = prepared.grammar
    a = split_grammar(grammar, 4, np.random.default_rng(0))
    b = split_grammar(grammar, 4, np.random.default_rng(0))
    c = split_grammar(grammar, 4, np.random.default_rng(1))
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x, y)
        assert not np.array_equal(x, z)
    np.testing.assert_allclose(parent_totals(grammar, a), 1.0)
    # Summed over child subtypes, each annotated rule is its unsplit MLE within the 1 % noise.
    totals = np.zeros(grammar.n_symbols)
    np.add.at(totals, grammar.binary_rules[:, 0], grammar.binary_counts)
    np.add.at(totals, grammar.unary_rules[:, 0], grammar.unary_counts)
    np.add.at(totals, grammar.lexical_rules[:, 0], grammar.lexical_counts)
    mle = grammar.binary_counts / totals[grammar.binary_rules[:, 0]]
    ratio = a.binary.sum(axis=(2, 3)) / mle[:, None]
    assert np.all(np.abs(ratio - 1.0) < 0.021)
    assert np.any(np.abs(ratio - 1.0) > 1e-4)


def test_em_never_lowers_the_likelihood():
    # A test of the expected counts: EM with them and a plain normalisation (eq. 4.10) must climb.
    rng = np.random.default_rng(4)
    trees = [random_tree(rng, int(n)) for n in rng.integers(2, 9, size=12)]
    prepared = prepare_treebank(trees, horizontal=1, min_count=1)
    for n_sub in (2, 3):
        weights = split_grammar(prepared.grammar, n_sub, np.random.default_rng(n_sub), noise=0.3)
        previous = -np.inf
        history = []
        for _ in range(15):
            result = latent_inside_outside(prepared.nodes, weights)
            log_lik = result.log_z.sum()
            assert log_lik >= previous - 1e-9 * abs(previous)
            history.append(log_lik)
            previous = log_lik
            weights = normalise_rows(prepared.grammar, result.counts)
        # The counts must be doing something: the split grammar fits better than it started.
        assert history[-1] > history[0] + 1e-3


def test_root_symbol_is_required():
    tree = Tree("S", [Tree("D", ["a"]), Tree("N", ["b"])])
    prepared = prepare_treebank([tree], min_count=1)
    assert prepared.trees[0].label == ROOT
    with pytest.raises(ValueError, match="n_subtypes"):
        zero_annotated_tables(prepared.grammar, 0)
    with pytest.raises(ValueError, match="store"):
        latent_inside_outside(prepared.nodes, zero_annotated_tables(prepared.grammar, 2), store=np.zeros(3))

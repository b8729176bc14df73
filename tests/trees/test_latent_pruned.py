"""Pruned PCFG-LA training (Petrov et al. 2006): the pruned E-step against enumeration of the kept
annotations, threshold 0 against the dense kernels, the kept mass, and monotone EM and VB under pruning."""
import itertools

import numpy as np
import pytest
from tests.brute_latent import random_tree

from cvbayes import PCFGLA
from cvbayes.trees.grammar import LEXICAL, UNARY
from cvbayes.trees.latent import (AnnotatedTables, latent_inside_outside, normalise_rows, parent_totals,
                                  posterior_offsets,
                                  row_sizes, split_grammar, zero_annotated_tables)
from cvbayes.trees.latent_pruned import (KeptSubtypes, keep_subtypes, kept_inside_outside, kept_store_offsets,
                                         node_posteriors, split_tables)
from cvbayes.trees.treebank import prepare_treebank


def treebank(seed, n_trees=6, longest=5):
    rng = np.random.default_rng(seed)
    trees = [random_tree(rng, int(n)) for n in rng.integers(2, longest + 1, size=n_trees)]
    return trees, prepare_treebank(trees, horizontal=1, min_count=1)


def random_kept(rng, nodes, n_sub):
    """Random kept subsets (every node keeps at least one subtype, the roots subtype 0)."""
    keep = rng.random((len(nodes.kind), n_sub)) < 0.6
    keep[np.arange(len(keep)), rng.integers(0, n_sub, size=len(keep))] = True
    keep[nodes.tree_offsets[1:] - 1, 0] = True
    offsets = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    return KeptSubtypes(offsets, np.nonzero(keep)[1].astype(np.int64), n_sub)


def enumerate_kept(nodes, weights, kept, tree):
    """log Z and expected counts of one tree by enumerating every annotation within the kept subtypes
    (the root's subtype 0)."""
    first, last = nodes.tree_offsets[tree], nodes.tree_offsets[tree + 1]
    choices = [kept.subtypes[kept.offsets[n]:kept.offsets[n + 1]] for n in range(first, last)]
    choices[-1] = [0]
    counts = AnnotatedTables(*(np.zeros_like(table) for table in weights))
    z = 0.0
    for annotation in itertools.product(*choices):
        sub = dict(zip(range(first, last), annotation))
        cells = []
        for n in range(first, last):
            r, kind = nodes.rule[n], nodes.kind[n]
            if kind == LEXICAL:
                cells.append((counts.lexical, weights.lexical, (r, sub[n])))
            elif kind == UNARY:
                cells.append((counts.unary, weights.unary, (r, sub[n], sub[nodes.left[n]])))
            else:
                cells.append((counts.binary, weights.binary, (r, sub[n], sub[nodes.left[n]], sub[nodes.right[n]])))
        p = np.prod([table[index] for _, table, index in cells])
        z += p
        for target, _, index in cells:
            target[index] += p
    return np.log(z), AnnotatedTables(*(table / z for table in counts))


def random_weights(rng, grammar, n_sub):
    return AnnotatedTables(rng.random((len(grammar.binary_rules), n_sub, n_sub, n_sub)),
                           rng.random((len(grammar.unary_rules), n_sub, n_sub)),
                           rng.random((len(grammar.lexical_rules), n_sub)))


@pytest.mark.parametrize("n_sub", [2, 3])
def test_pruned_e_step_matches_enumeration_of_the_kept_annotations(n_sub):
    rng = np.random.default_rng(n_sub)
    _, prepared = treebank(n_sub, n_trees=4, longest=3)
    nodes = prepared.nodes
    weights = random_weights(rng, prepared.grammar, n_sub)
    kept = random_kept(rng, nodes, n_sub)
    assert kept.kept_share < 1
    result = kept_inside_outside(nodes, weights, kept)
    want = zero_annotated_tables(prepared.grammar, n_sub)
    for t in range(nodes.n_trees):
        log_z, counts = enumerate_kept(nodes, weights, kept, t)
        assert result.log_z[t] == pytest.approx(log_z, rel=1e-12)
        want = AnnotatedTables(*(a + b for a, b in zip(want, counts)))
    for got, expected in zip(result.counts, want):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # the store holds every node's posteriors over its kept combinations, and the counts are their sums
    store = np.zeros(kept_store_offsets(nodes, kept)[-1], dtype=np.float32)
    stored = kept_inside_outside(nodes, weights, kept, store=store)
    for got, expected in zip(stored.counts, want):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    assert store.sum() == pytest.approx(sum(table.sum() for table in stored.counts), rel=1e-6)


def test_threshold_zero_equals_the_dense_e_step():
    rng = np.random.default_rng(1)
    _, prepared = treebank(1, n_trees=8, longest=7)
    nodes, grammar = prepared.nodes, prepared.grammar
    coarse = split_grammar(grammar, 2, rng)
    kept = keep_subtypes(nodes, coarse, 4, 0.0)
    assert kept.kept_share == 1.0
    np.testing.assert_array_equal(kept_store_offsets(nodes, kept), posterior_offsets(nodes, 4))
    weights = random_weights(rng, grammar, 4)
    dense_store, kept_store = (np.zeros(posterior_offsets(nodes, 4)[-1], dtype=np.float32) for _ in range(2))
    dense = latent_inside_outside(nodes, weights, store=dense_store)
    pruned = kept_inside_outside(nodes, weights, kept, store=kept_store)
    np.testing.assert_allclose(pruned.log_z, dense.log_z, rtol=1e-13)
    for got, want in zip(pruned.counts, dense.counts):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kept_store, dense_store, rtol=1e-6, atol=1e-12)


def test_split_tables_without_noise_keep_every_tree_probability():
    rng = np.random.default_rng(2)
    _, prepared = treebank(2)
    coarse = split_grammar(prepared.grammar, 2, rng)
    fine = split_tables(prepared.grammar, coarse, 4, rng, noise=0.0)
    for table in parent_totals(prepared.grammar, fine)[:, :]:
        np.testing.assert_allclose(table[table > 0], 1.0)
    np.testing.assert_allclose(latent_inside_outside(prepared.nodes, fine).log_z,
                               latent_inside_outside(prepared.nodes, coarse).log_z, rtol=1e-12)
    noisy = split_tables(prepared.grammar, coarse, 4, np.random.default_rng(0))
    assert not np.allclose(noisy.binary, fine.binary)
    with pytest.raises(ValueError, match="multiple"):
        split_tables(prepared.grammar, coarse, 3, rng)


@pytest.mark.parametrize("threshold", [0.02, 0.1])
def test_the_kept_annotations_hold_all_but_the_pruned_coarse_mass(threshold):
    rng = np.random.default_rng(3)
    _, prepared = treebank(3, n_trees=10, longest=8)
    nodes = prepared.nodes
    skewed = AnnotatedTables(*(table ** 3 for table in split_grammar(prepared.grammar, 2, rng, noise=0.9)))
    coarse = normalise_rows(prepared.grammar, skewed)  # so that the split without noise is the same grammar
    fine = split_tables(prepared.grammar, coarse, 4, rng, noise=0.0)
    kept = keep_subtypes(nodes, coarse, 4, threshold)
    assert kept.kept_share < 1
    posteriors = node_posteriors(nodes, coarse)
    np.testing.assert_allclose(posteriors.sum(axis=1), 1.0, rtol=1e-12)
    pruned_mass = np.where(posteriors < threshold, posteriors, 0.0)
    lost = np.add.reduceat(pruned_mass.sum(axis=1), nodes.tree_offsets[:-1])
    full = latent_inside_outside(nodes, fine).log_z
    kept_share = np.exp(kept_inside_outside(nodes, fine, kept).log_z - full)
    # an annotation is lost only if one of its nodes takes a pruned subtype (the union bound)
    assert np.all(kept_share <= 1 + 1e-12)
    assert np.all(kept_share >= 1 - lost - 1e-12)
    assert np.all(lost <= (np.diff(nodes.tree_offsets)) * 2 * threshold)
    assert kept_share.min() < 1 - 1e-6   # something of weight was cut


@pytest.fixture(scope="module")
def coarse_fit():
    trees, _ = treebank(4, n_trees=14, longest=8)
    return trees, PCFGLA(n_subtypes=2, alpha=1.0, horizontal=1, min_count=1, algorithm="em", n_iter=15,
                         random_state=0).fit(trees)


@pytest.mark.parametrize("algorithm,alpha", [("em", 1.0), ("vb", 0.5)])
def test_em_and_vb_objectives_never_decrease_under_pruning(coarse_fit, algorithm, alpha):
    trees, coarse = coarse_fit
    model = PCFGLA(n_subtypes=4, alpha=alpha, horizontal=1, min_count=1, algorithm=algorithm, n_iter=15,
                   random_state=1, pruning=0.05).fit(trees, coarse=coarse)
    assert model.kept_share_ < 0.9
    objectives = [record.objective for record in model.history_]
    for before, after in zip(objectives, objectives[1:]):
        assert after >= before - 1e-9 * abs(before)
    assert objectives[-1] > objectives[0]


@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi"])
def test_pruning_at_zero_fits_as_unpruned_training(coarse_fit, algorithm):
    trees, coarse = coarse_fit
    fits = [PCFGLA(n_subtypes=4, alpha=0.5, horizontal=1, min_count=1, algorithm=algorithm, n_iter=4,
                   random_state=2, pruning=pruning).fit(trees, coarse=coarse) for pruning in (None, 0.0)]
    # the pruned kernels at a threshold below every positive posterior skip only the subtypes EM's coarse
    # grammar gives posterior 0: nothing of weight
    fits.append(PCFGLA(n_subtypes=4, alpha=0.5, horizontal=1, min_count=1, algorithm=algorithm, n_iter=4,
                       random_state=2, pruning=1e-300).fit(trees, coarse=coarse))
    unpruned, zero, tiny = fits
    assert zero.kept_share_ == 1.0 and tiny.kept_share_ < 1.0
    for other in (zero, tiny):
        np.testing.assert_allclose([r.objective for r in other.history_],
                                   [r.objective for r in unpruned.history_], rtol=1e-9)
        for got, want in zip(other.counts_, unpruned.counts_):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_a_pruned_cvi_pass_leaves_each_tree_out_over_its_kept_annotations():
    trees, _ = treebank(5, n_trees=5, longest=3)   # small enough to enumerate 4 subtypes a node
    coarse = PCFGLA(n_subtypes=2, alpha=1.0, horizontal=1, min_count=1, algorithm="em", n_iter=10,
                    random_state=0).fit(trees)
    alpha = 0.3
    model = PCFGLA(n_subtypes=4, alpha=alpha, horizontal=1, min_count=1, algorithm="cvi", n_iter=2,
                   random_state=5, pruning=0.05).fit(trees, coarse=coarse)
    prepared = prepare_treebank(trees, horizontal=1, min_count=1)
    nodes, grammar = prepared.nodes, prepared.grammar
    kept = keep_subtypes(nodes, coarse.tables_, 4, 0.05)
    assert kept.kept_share < 1
    start = split_tables(grammar, coarse.tables_, 4, np.random.default_rng(5))
    local = [enumerate_kept(nodes, start, kept, t)[1] for t in range(nodes.n_trees)]
    total = AnnotatedTables(*(sum(parts) for parts in zip(*local)))
    sizes = np.repeat(row_sizes(grammar, 4)[:, None], 4, axis=1)
    for iteration in range(2):
        objective = 0.0
        for t in range(nodes.n_trees):
            others = AnnotatedTables(*(a - b for a, b in zip(total, local[t])))
            rows = parent_totals(grammar, others)
            mean = AnnotatedTables(*(
                (table + alpha) / (rows[rules[:, 0]] + alpha * sizes[rules[:, 0]]).reshape(
                    (len(rules), 4) + (1,) * (table.ndim - 2))
                for table, rules in zip(others, (grammar.binary_rules, grammar.unary_rules, grammar.lexical_rules))))
            tree_log_z, local[t] = enumerate_kept(nodes, mean, kept, t)
            objective += tree_log_z
            total = AnnotatedTables(*(a + b for a, b in zip(others, local[t])))
        assert model.history_[iteration].objective == pytest.approx(objective, rel=1e-6)
    for got, want in zip(model.counts_, total):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bad_coarse_models_and_thresholds_are_refused(coarse_fit):
    trees, coarse = coarse_fit
    with pytest.raises(ValueError, match="multiple"):
        PCFGLA(n_subtypes=3, horizontal=1, min_count=1, n_iter=1).fit(trees, coarse=coarse)
    with pytest.raises(ValueError, match="another treebank"):
        PCFGLA(n_subtypes=4, horizontal=1, min_count=1, n_iter=1).fit(trees[:5], coarse=coarse)
    with pytest.raises(TypeError, match="fitted PCFGLA"):
        PCFGLA(n_subtypes=4, horizontal=1, min_count=1, n_iter=1).fit(trees, coarse="grammar.npz")
    with pytest.raises(ValueError, match="pruning"):
        PCFGLA(pruning=1.5)
    with pytest.raises(ValueError, match="threshold"):
        PCFGLA(n_subtypes=4, horizontal=1, min_count=1, n_iter=1, pruning=0.6).fit(trees, coarse=coarse)

"""PCFG-LA learners (thesis §4.5.3): one EM, VB and CVI update against brute force, monotone objectives,
save/load, and core.rules' rows of different widths."""
import numpy as np
import pytest
from brute_latent import enumerate_annotations, random_tree
from scipy.special import digamma, gammaln

from cvbayes import PCFGLA
from cvbayes.core import rules
from cvbayes.data.trees import parse_trees
from cvbayes.models.pcfg_la import ALGORITHMS
from cvbayes.schedules import batch, leave_one_out
from cvbayes.trees.latent import AnnotatedTables, split_grammar, zero_annotated_tables
from cvbayes.trees.treebank import prepare_treebank

TREES = parse_trees("""
(S (NP (D a) (N b)) (V c))
(S (NP (N b)) (V c) (NP (D a) (N b)))
(NP (D a) (N b))
(S (NP (N c)) (V a))
""")


def annotated_rows(grammar, n_sub):
    """Every row A[a] as a list of (table name, cell), built by plain loops."""
    rows = {}
    for name, table_rules, tail in (("binary", grammar.binary_rules, 2), ("unary", grammar.unary_rules, 1),
                                    ("lexical", grammar.lexical_rules, 0)):
        for r, rule in enumerate(table_rules):
            for a in range(n_sub):
                for rest in np.ndindex(*(n_sub,) * tail):
                    rows.setdefault((int(rule[0]), a), []).append((name, (r, a) + rest))
    return rows


def hand_table(rule, counts, alpha, grammar):
    """MAP (eq. 4.10), VB (eq. 4.12) or MEAN (eq. 4.24) of every row A[a], cell by cell."""
    out = zero_annotated_tables(grammar, counts.n_subtypes)
    for cells in annotated_rows(grammar, counts.n_subtypes).values():
        values = np.array([getattr(counts, name)[cell] for name, cell in cells])
        width = len(cells)
        for (name, cell), value in zip(cells, values):
            if rule == "map":
                pseudo = max(alpha - 1.0, 0.0)
                denominator = values.sum() + width * pseudo
                result = (value + pseudo) / denominator if denominator > 0 else 1.0 / width
            elif rule == "vb":
                result = np.exp(digamma(value + alpha) - digamma(values.sum() + width * alpha))
            else:
                result = (value + alpha) / (values.sum() + width * alpha)
            getattr(out, name)[cell] = result
    return out


def hand_kl(counts, alpha, grammar):
    """sum over rows A[a] of KL(Dir(C + alpha) || Dir(alpha)) (eq. 4.3)."""
    total = 0.0
    for cells in annotated_rows(grammar, counts.n_subtypes).values():
        values = np.array([getattr(counts, name)[cell] for name, cell in cells])
        prior_total = len(cells) * alpha
        total += (gammaln(values.sum() + prior_total) - gammaln(prior_total)
                  - (gammaln(values + alpha) - gammaln(alpha)
                     - values * (digamma(values + alpha) - digamma(values.sum() + prior_total))).sum())
    return total


def enumerated(trees, grammar, weights):
    """Summed log Z and expected counts of trees by enumeration of their annotations."""
    log_z = 0.0
    counts = zero_annotated_tables(grammar, weights.n_subtypes)
    for tree in trees:
        tree_log_z, tree_counts = enumerate_annotations(tree, grammar, weights)
        log_z += tree_log_z
        counts = AnnotatedTables(*(a + b for a, b in zip(counts, tree_counts)))
    return log_z, counts


def assert_tables(got, want, rtol=1e-10):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


@pytest.fixture(scope="module")
def prepared():
    return prepare_treebank(TREES, min_count=1)


def test_the_algorithm_table_pairs_a_schedule_with_a_rule():
    assert {name: (how.schedule, how.rule) for name, how in ALGORITHMS.items()} == {
        "em": (batch, rules.MAP), "vb": (batch, rules.VB), "cvi": (leave_one_out, rules.MEAN)}


@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_one_em_update_is_the_map_of_the_enumerated_counts(prepared, alpha):
    grammar = prepared.grammar
    model = PCFGLA(n_subtypes=2, alpha=alpha, min_count=1, algorithm="em", n_iter=1, random_state=3).fit(TREES)
    start = split_grammar(grammar, 2, np.random.default_rng(3))
    log_z, counts = enumerated(prepared.trees, grammar, start)
    log_prior = sum((max(alpha - 1.0, 0.0) * np.log(table)).sum() for table in start)
    assert model.history_[0].objective == pytest.approx(log_z + log_prior, rel=1e-10)
    assert_tables(model.counts_, counts)
    assert_tables(model.tables_, hand_table("map", counts, alpha, grammar))


def test_one_vb_update_starts_from_the_counts_of_the_split_grammar(prepared):
    grammar, alpha = prepared.grammar, 0.3
    model = PCFGLA(n_subtypes=2, alpha=alpha, min_count=1, algorithm="vb", n_iter=1, random_state=5).fit(TREES)
    _, start_counts = enumerated(prepared.trees, grammar, split_grammar(grammar, 2, np.random.default_rng(5)))
    geometric = hand_table("vb", start_counts, alpha, grammar)
    log_z, counts = enumerated(prepared.trees, grammar, geometric)
    assert model.history_[0].objective == pytest.approx(log_z - hand_kl(start_counts, alpha, grammar), rel=1e-10)
    assert_tables(model.counts_, counts)
    assert_tables(model.tables_, hand_table("mean", counts, alpha, grammar))


def test_one_cvi_pass_leaves_each_tree_out_in_turn(prepared):
    grammar, alpha = prepared.grammar, 0.2
    model = PCFGLA(n_subtypes=2, alpha=alpha, min_count=1, algorithm="cvi", n_iter=2, random_state=7).fit(TREES)
    start = split_grammar(grammar, 2, np.random.default_rng(7))
    local = [enumerate_annotations(tree, grammar, start)[1] for tree in prepared.trees]
    total = AnnotatedTables(*(sum(parts) for parts in zip(*local)))
    for iteration in range(2):
        objective = 0.0
        for i, tree in enumerate(prepared.trees):
            others = AnnotatedTables(*(a - b for a, b in zip(total, local[i])))
            tree_log_z, local[i] = enumerate_annotations(tree, grammar, hand_table("mean", others, alpha, grammar))
            objective += tree_log_z
            total = AnnotatedTables(*(a + b for a, b in zip(others, local[i])))
        # the local counts are kept in float32
        assert model.history_[iteration].objective == pytest.approx(objective, rel=1e-6)
    assert_tables(model.counts_, total, rtol=1e-5)
    assert_tables(model.tables_, hand_table("mean", total, alpha, grammar), rtol=1e-5)


@pytest.mark.parametrize("algorithm,alpha", [("em", 1.0), ("em", 1.3), ("vb", 0.1), ("vb", 1.0)])
def test_em_and_vb_objectives_never_decrease(algorithm, alpha):
    rng = np.random.default_rng(4)
    trees = [random_tree(rng, int(n)) for n in rng.integers(2, 9, size=12)]
    model = PCFGLA(n_subtypes=3, alpha=alpha, horizontal=1, min_count=1, algorithm=algorithm, n_iter=20,
                   random_state=1).fit(trees)
    objectives = [record.objective for record in model.history_]
    for before, after in zip(objectives, objectives[1:]):
        assert after >= before - 1e-9 * abs(before)
    assert objectives[-1] > objectives[0]


def test_cvi_learns_from_a_symmetric_start():
    rng = np.random.default_rng(6)
    trees = [random_tree(rng, int(n)) for n in rng.integers(2, 9, size=12)]
    model = PCFGLA(n_subtypes=2, alpha=0.1, horizontal=1, min_count=1, algorithm="cvi", n_iter=10).fit(trees)
    objectives = [record.objective for record in model.history_]
    assert objectives[-1] > objectives[0] + 1e-3
    assert np.all(np.isfinite(objectives))


def test_a_prepared_treebank_fits_as_its_trees_do(prepared):
    from_trees = PCFGLA(n_subtypes=2, min_count=1, algorithm="em", n_iter=3, random_state=2).fit(TREES)
    from_prepared = PCFGLA(n_subtypes=2, min_count=1, algorithm="em", n_iter=3, random_state=2).fit(prepared)
    assert_tables(from_prepared.tables_, from_trees.tables_, rtol=0)
    with pytest.raises(ValueError, match="prepared with"):
        PCFGLA(n_subtypes=2, min_count=2).fit(prepared)


def test_save_and_load_round_trip(tmp_path, prepared):
    model = PCFGLA(n_subtypes=2, alpha=0.5, min_count=1, algorithm="cvi", n_iter=2, random_state=1).fit(TREES)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = PCFGLA.load(path)
    assert (loaded.n_subtypes, loaded.alpha, loaded.algorithm_) == (2, 0.5, "cvi")
    assert loaded.grammar_.symbols == model.grammar_.symbols and loaded.grammar_.words == model.grammar_.words
    assert_tables(loaded.tables_, model.tables_, rtol=0)
    assert [r.objective for r in loaded.history_] == [r.objective for r in model.history_]
    sentences = [tree.leaves() for tree in TREES]
    assert loaded.parse(sentences) == model.parse(sentences)
    with open(path, "rb") as handle:
        assert b"pickle" not in handle.read(200)
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a cvbayes model file"):
        PCFGLA.load(tmp_path / "bad.npz")


def test_parse_gives_penn_trees_without_root():
    model = PCFGLA(n_subtypes=2, alpha=0.1, min_count=1, algorithm="em", n_iter=5).fit(TREES)
    parsed = model.parse([tree.leaves() for tree in TREES], decoder="viterbi", pruning=None)
    assert [tree.leaves() for tree in parsed] == [tree.leaves() for tree in TREES]
    assert all(tree.label != "ROOT" for tree in parsed)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="n_subtypes"):
        PCFGLA(n_subtypes=0)
    with pytest.raises(ValueError, match="alpha"):
        PCFGLA(alpha=0.0)
    with pytest.raises(ValueError, match="unknown algorithm"):
        PCFGLA(algorithm="gibbs").fit(TREES)
    with pytest.raises(RuntimeError, match="not fitted"):
        PCFGLA().parse([["a"]])


def test_slot_rules_take_one_width_a_row():
    # rows of widths 2, 3 and 1 laid end to end equal the same rows as dense tables
    rng = np.random.default_rng(0)
    widths = np.array([2, 3, 1])
    slot_row = np.repeat(np.arange(3), widths)
    counts = rng.exponential(1.0, size=slot_row.shape[0])
    counts[-1] = 0.0
    totals = np.bincount(slot_row, counts)
    for prior in (0.3, 1.7):
        for rule in rules.RULES:
            got = rules.slot_table(rule, counts, slot_row, totals, prior, widths)
            want = np.concatenate([rules.dirichlet_table(rule, counts[slot_row == r][None], prior)[0]
                                   for r in range(3)])
            np.testing.assert_allclose(got, want, rtol=1e-12)
        dense = [counts[slot_row == r][None] for r in range(3)]
        assert rules.slot_kl(counts, slot_row, totals, prior, widths) == pytest.approx(
            sum(rules.dirichlet_kl(row, prior) for row in dense), rel=1e-12)
        assert rules.slot_log_marginal(counts, slot_row, totals, prior, widths) == pytest.approx(
            sum(rules.dirichlet_log_marginal(row, prior) for row in dense), rel=1e-12)
        table = rules.slot_table(rules.MAP, counts, slot_row, totals, prior, widths)
        assert rules.slot_log_prior(table, slot_row, totals, prior, widths) == pytest.approx(
            sum(rules.dirichlet_log_prior(table[slot_row == r][None], prior) for r in range(3)), rel=1e-12)


def test_the_experiment_names_what_it_cut_from_the_protocol():
    from cvbayes.experiments.pcfg_la import FULL_PROTOCOL, cuts
    full = {**FULL_PROTOCOL, "dev_sentences": 2001}
    assert cuts(full, 2001) == []
    small = {**full, "subtypes": (1, 2, 4), "alphas": (1.0, 0.01), "runs": 2, "iterations": 30, "dev_sentences": 300}
    assert cuts(small, 2001) == ["H = 8 not trained (the issue asks H = 1, 2, 4, 8)", "alpha 0.1, 0.001 not tried",
                                 "best of 2 runs, not 5", "30 passes, not 50",
                                 "alpha and the run chosen on 300 of the 2001 dev sentences"]

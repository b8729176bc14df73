"""The engine's core: the Dirichlet rules, digamma, count moves, the draw, and the generic schedules."""
import numpy as np
import pytest
from numba import njit
from scipy.special import digamma as scipy_digamma
from scipy.special import gammaln

from cvbayes.core import rules
from cvbayes.core.sampling import draw, seed_numba
from cvbayes.core.special import digamma
from cvbayes.core.statistics import DecayingCounts, move, move_slots, store
from cvbayes.schedules import Minibatch, batch, gibbs, leave_one_out, passes, stochastic


def test_digamma_matches_scipy_from_tiny_to_huge():
    x = np.concatenate([np.geomspace(1e-9, 1e9, 500), np.linspace(0.05, 40.0, 500)])
    mine = np.array([digamma(v) for v in x])
    assert np.allclose(mine, scipy_digamma(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("prior", [1e-6, 0.1, 1.0, 2.5])
def test_dirichlet_tables_follow_their_definitions(prior):
    rng = np.random.default_rng(0)
    counts = rng.exponential(3.0, size=(4, 6))
    counts[1] = 0.0
    row = counts.sum(axis=1, keepdims=True)
    width = counts.shape[1]
    pseudo = max(prior - 1.0, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected_map = np.where(row + width * pseudo > 0, (counts + pseudo) / (row + width * pseudo), 1 / width)
    assert np.allclose(rules.dirichlet_table(rules.MAP, counts, prior), expected_map)
    expected_vb = np.exp(scipy_digamma(counts + prior) - scipy_digamma(row + width * prior))
    assert np.allclose(rules.dirichlet_table(rules.VB, counts, prior), np.maximum(expected_vb, 1e-308),
                       rtol=1e-12)
    assert np.allclose(rules.dirichlet_table(rules.MEAN, counts, prior), (counts + prior) / (row + width * prior))
    assert np.allclose(rules.dirichlet_table(rules.MEAN, counts, prior).sum(axis=1), 1.0)
    assert np.allclose(rules.dirichlet_table(rules.MAP, counts, prior).sum(axis=1), 1.0)


def test_an_asymmetric_prior_with_its_own_total_is_the_hdp_surrogate():
    counts = np.array([[3.0, 0.0, 1.0]])
    prior_row = np.array([0.5, 0.2, 0.1])
    table = rules.dirichlet_table(rules.MEAN, counts, prior_row, total=1.0)
    assert np.allclose(table, (counts + prior_row) / (4.0 + 1.0))
    out = np.zeros((1, 3))
    rules.mean_rows(counts, prior_row, 1.0, np.array([0]), out)
    assert np.allclose(out, table)


def test_sparse_rows_equal_dense_rows_with_the_unstored_entries_at_zero():
    rng = np.random.default_rng(1)
    width = 7
    dense = np.zeros((3, width))
    slots = [(0, 1), (0, 4), (1, 0), (2, 2), (2, 6), (2, 3)]
    slot_row = np.array([r for r, _ in slots])
    counts = rng.exponential(2.0, size=len(slots))
    for (r, c), v in zip(slots, counts):
        dense[r, c] = v
    row_counts = dense.sum(axis=1)
    for rule in rules.RULES:
        for prior in (0.01, 1.5):
            table = rules.dirichlet_table(rule, dense, prior)
            sparse = rules.slot_table(rule, counts, slot_row, row_counts, prior, width)
            assert np.allclose(sparse, [table[r, c] for r, c in slots])
    for prior in (0.01, 1.5):
        assert np.isclose(rules.slot_kl(counts, slot_row, row_counts, prior, width), rules.dirichlet_kl(dense, prior))
        assert np.isclose(rules.slot_log_marginal(counts, slot_row, row_counts, prior, width),
                          rules.dirichlet_log_marginal(dense, prior))
        map_table = rules.dirichlet_table(rules.MAP, dense, prior)
        sparse_map = rules.slot_table(rules.MAP, counts, slot_row, row_counts, prior, width)
        assert np.isclose(rules.slot_log_prior(sparse_map, slot_row, row_counts, prior, width),
                          rules.dirichlet_log_prior(map_table, prior))


def test_kl_and_log_marginal_against_their_closed_forms():
    counts = np.array([[2.0, 0.0, 5.0], [0.0, 0.0, 0.0]])
    prior = 0.3
    post = counts + prior
    kl = 0.0
    for c, p in zip(counts, post):
        kl += (gammaln(p.sum()) - gammaln(3 * prior) - (gammaln(p) - gammaln(prior)).sum()
               + ((p - prior) * (scipy_digamma(p) - scipy_digamma(p.sum()))).sum())
    assert np.isclose(rules.dirichlet_kl(counts, prior), kl)
    marginal = sum(gammaln(3 * prior) - gammaln(3 * prior + c.sum()) + (gammaln(c + prior) - gammaln(prior)).sum()
                   for c in counts)
    assert np.isclose(rules.dirichlet_log_marginal(counts, prior), marginal)


def test_moves_round_trip_and_store_adds_the_rounded_values():
    target = np.arange(6.0).reshape(2, 3)
    values = np.full((2, 3), 0.1, dtype=np.float32)
    move(target, values, -1.0)
    move(target, values, 1.0)
    assert np.array_equal(target, np.arange(6.0).reshape(2, 3))
    local = np.zeros((2, 3), dtype=np.float32)
    store(np.full((2, 3), 1 / 3), local, target)
    assert np.array_equal(target, np.arange(6.0).reshape(2, 3) + np.float64(np.float32(1 / 3)))
    counts, totals = np.zeros(3), np.zeros(2)
    move_slots(counts, totals, np.array([2, 0, 1]), np.array([0, 0, 1]), 0, 3,
               np.array([1.0, 2.0, 3.0], dtype=np.float32), 1.0)
    assert np.array_equal(counts, [2.0, 3.0, 1.0]) and np.array_equal(totals, [5.0, 1.0])


def test_draw_follows_the_tempered_weights():
    seed_numba(3)
    weights = np.array([1.0, 0.0, 3.0])
    n = 20000
    hits = np.bincount([draw(weights.copy(), 3, 1.0) for _ in range(n)], minlength=3) / n
    assert hits[1] == 0.0 and abs(hits[2] - 0.75) < 0.02
    hits = np.bincount([draw(weights.copy(), 3, 0.5) for _ in range(n)], minlength=3) / n
    assert abs(hits[2] - np.sqrt(3) / (1 + np.sqrt(3))) < 0.02


def test_decaying_counts_equal_the_direct_update():
    rng = np.random.default_rng(2)
    direct = rng.random((5, 2))
    lazy = DecayingCounts(direct)
    for rho in (0.9, 0.5, 0.3):
        rows = np.array([1, 3])
        update = rng.random((2, 2))
        direct = (1 - rho) * direct
        direct[rows] += rho * update
        lazy.decay(1 - rho)
        lazy.add(rows, rho * update)
    assert np.allclose(lazy.values(), direct)


@njit(cache=True)
def _halve_unit(state, unit):
    values, seen = state
    seen[unit] += 1
    if values[unit] < 0:
        return -np.inf
    values[unit] *= 0.5
    return np.log(values[unit])


@njit(cache=True)
def _halve_sweep(state, order):
    return leave_one_out(_halve_unit, state, order)


def test_leave_one_out_visits_units_in_order_and_stops_at_the_first_impossible_one():
    values = np.array([4.0, 2.0, -1.0, 8.0])
    seen = np.zeros(4, dtype=np.int64)
    objective, bad = _halve_sweep((values, seen), np.array([1, 0, 2, 3]))
    assert bad == 2 and np.isclose(objective, np.log(1.0) + np.log(2.0))
    assert list(seen) == [1, 1, 1, 0]


@njit(cache=True)
def _count_site(state, site, power):
    counts, = state
    counts[site] += power
    return site != 3


@njit(cache=True)
def _count_sweep(state, order, power):
    return gibbs(_count_site, state, order, power)


def test_gibbs_visits_sites_and_reports_the_first_that_cannot_be_drawn():
    counts = np.zeros(5)
    assert _count_sweep((counts,), np.array([0, 1, 2]), 2.0) == -1
    assert _count_sweep((counts,), np.array([4, 3, 0]), 1.0) == 3
    assert list(counts) == [2.0, 2.0, 2.0, 1.0, 1.0]  # the pass stopped at site 3


class _Coin:
    """A Beta-Bernoulli 'structure': one Dirichlet row of 2 outcomes, every unit one observed flip."""

    def __init__(self, flips):
        self.flips = np.asarray(flips)
        self.n_units = len(flips)

    def tables(self, statistics, rule):
        return rules.dirichlet_table(rule, statistics, 2.0)

    def expectations(self, table):
        heads = self.flips.sum()
        counts = np.array([heads, self.n_units - heads], dtype=float)
        return counts, float(counts @ np.log(table))

    def penalty(self, rule, statistics, table):
        return rules.dirichlet_log_prior(table, 2.0) if rule == rules.MAP else -rules.dirichlet_kl(statistics, 2.0)

    def minibatch(self, ids):
        heads = self.flips[ids].sum()
        counts = np.array([heads, len(ids) - heads], dtype=float)
        return Minibatch([("coin", slice(None), counts, self.n_units / len(ids))], 0.0, len(ids))


def test_batch_em_reaches_the_map_estimate_and_vb_the_posterior():
    coin = _Coin([1, 1, 1, 0])
    history = []
    counts = batch(coin, rules.MAP, 3, lambda *record: history.append(record), statistics=np.array([1.0, 1.0]))
    assert np.allclose(rules.dirichlet_table(rules.MAP, counts, 2.0), [4 / 6, 2 / 6])
    assert history[-1][1] >= history[0][1]
    history = []
    batch(coin, rules.VB, 3, lambda *record: history.append(record), statistics=np.array([1.0, 1.0]))
    assert [h[0] for h in history] == [0, 1, 2]
    assert history[1][1] >= history[0][1]


def test_stochastic_with_full_batches_and_rho_one_is_the_batch_update():
    coin = _Coin([1, 0, 1, 1, 1])
    counts = {"coin": DecayingCounts([10.0, 10.0])}
    records = []
    steps = stochastic(coin, counts, 2, 5, 0.0, 1.0, np.random.default_rng(0),
                       lambda *record: records.append(record))
    assert steps == 2 and len(records) == 2
    assert np.allclose(counts["coin"].values(), [4.0, 1.0])


def test_passes_records_every_iteration_after_the_hook():
    order = []
    passes(lambda it: order.append(("sweep", it)) or float(it), 2,
           lambda it, objective, seconds: order.append(("record", it, objective)),
           after_pass=lambda it: order.append(("after", it)))
    assert order == [("sweep", 0), ("after", 0), ("record", 0, 0.0), ("sweep", 1), ("after", 1), ("record", 1, 1.0)]

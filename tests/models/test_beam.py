"""Beam sampler for the HDP-HMM: exact posteriors on tiny data, planted recovery, API.

The exact reference: under the Chinese restaurant franchise (restaurant 0 is
the start row, restaurant j + 1 the transitions out of state j), the prior of a
state partition z with n_jk customers of restaurant j eating dish k is

    p(z) = sum_m  prod_j [Gamma(sigma) / Gamma(sigma + n_j.) prod_k s(n_jk, m_jk) sigma^m_jk]
                  * gamma^K Gamma(gamma) / Gamma(gamma + m..) prod_k Gamma(m_.k)

(m_jk tables, s the unsigned Stirling numbers of the first kind; thesis
eq. 5.11-5.12 with pi integrated out by the top-level CRP).  The formula is
itself checked against a brute-force enumeration of every seating history.
"""
import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln

from cvbayes.chains.ffbs import beam_ffbs, beam_ffbs_log
from cvbayes.data import Corpus
from cvbayes.core import units
from cvbayes.families import Categorical, Gaussian
from cvbayes.families.ops import state_stats
from cvbayes.models import beam
from cvbayes.models.beam import BeamResult, beam_sample
from cvbayes.models.hdp import effective_states
from cvbayes.synthetic import sample_categorical_hmm

# --------------------------------------------------------------------------------------------
# exact references


def set_partitions(n):
    """Every partition of n items as a label tuple, labels in order of first appearance."""
    def grow(prefix, n_labels):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for label in range(n_labels + 1):
            yield from grow(prefix + [label], max(n_labels, label + 1))
    yield from grow([], 0)


def canonical(states):
    labels = {}
    return tuple(labels.setdefault(int(s), len(labels)) for s in states)


def transition_counts(z, lengths):
    n = np.zeros((max(z) + 2, max(z) + 1), dtype=int)
    pos = 0
    for length in lengths:
        prev = 0
        for _ in range(length):
            n[prev, z[pos]] += 1
            prev = z[pos] + 1
            pos += 1
    return n


def stirling_first(n_max):
    s = np.zeros((n_max + 1, n_max + 1))
    s[0, 0] = 1.0
    for n in range(n_max):
        for m in range(1, n + 2):
            s[n + 1, m] = n * s[n, m] + s[n, m - 1]
    return s


def log_prior_stirling(z, lengths, sigma, gamma):
    """log p(z) of the HDP-HMM by summing the table counts (module docstring)."""
    n = transition_counts(z, lengths)
    n_states = n.shape[1]
    s = stirling_first(int(n.max()))
    cells = list(zip(*np.nonzero(n)))
    total = 0.0
    for ms in itertools.product(*[range(1, n[j, k] + 1) for j, k in cells]):
        m = np.zeros_like(n)
        for (j, k), v in zip(cells, ms):
            m[j, k] = v
        log_p = 0.0
        for j in range(n.shape[0]):
            if n[j].sum():
                log_p += math.lgamma(sigma) - math.lgamma(sigma + n[j].sum())
        for j, k in cells:
            log_p += math.log(s[n[j, k], m[j, k]]) + m[j, k] * math.log(sigma)
        dish = m.sum(axis=0)
        log_p += (n_states * math.log(gamma) + math.lgamma(gamma) - math.lgamma(gamma + dish.sum())
                  + sum(math.lgamma(v) for v in dish))
        total += math.exp(log_p)
    return math.log(total)


def prior_crf_enumeration(lengths, sigma, gamma):
    """p(z) for every partition by enumerating every seating of the franchise."""
    n_tokens = sum(lengths)
    starts = set(np.cumsum([0] + list(lengths[:-1])).tolist())
    out = {}

    def seat(t, z, tables, dish_tables, p):
        if t == n_tokens:
            out[tuple(z)] = out.get(tuple(z), 0.0) + p
            return
        r = 0 if t in starts else z[-1] + 1
        here = tables.get(r, ())
        n_r = sum(count for _, count in here)
        for i, (dish, count) in enumerate(here):
            grown = dict(tables)
            grown[r] = here[:i] + ((dish, count + 1),) + here[i + 1:]
            seat(t + 1, z + [dish], grown, dish_tables, p * count / (sigma + n_r))
        m_total = sum(dish_tables)
        for dish in range(len(dish_tables) + 1):
            if dish < len(dish_tables):
                q = dish_tables[dish] / (gamma + m_total)
                counts = dish_tables[:dish] + (dish_tables[dish] + 1,) + dish_tables[dish + 1:]
            else:
                q = gamma / (gamma + m_total)
                counts = dish_tables + (1,)
            grown = dict(tables)
            grown[r] = here + ((dish, 1),)
            seat(t + 1, z + [dish], grown, counts, p * sigma / (sigma + n_r) * q)

    seat(0, [], {}, (), 1.0)
    return out


def log_dirichlet_multinomial(z, x, n_symbols, beta):
    counts = np.zeros((max(z) + 1, n_symbols))
    np.add.at(counts, (np.array(z), np.array(x)), 1)
    return float((gammaln(n_symbols * beta) - gammaln(n_symbols * beta + counts.sum(1))).sum()
                 + (gammaln(beta + counts) - gammaln(beta)).sum())


def log_normal_gamma_marginal(z, x, mu0, kappa0, a0, b0):
    """Marginal likelihood of 1-d Gaussian data per state, Normal-Gamma prior."""
    z, total = np.array(z), 0.0
    for k in range(z.max() + 1):
        v = x[z == k]
        n = len(v)
        kappa = kappa0 + n
        a = a0 + n / 2
        b = b0 + 0.5 * ((v - v.mean()) ** 2).sum() + kappa0 * n * (v.mean() - mu0) ** 2 / (2 * kappa)
        total += (math.lgamma(a) - math.lgamma(a0) + a0 * math.log(b0) - a * math.log(b)
                  + 0.5 * math.log(kappa0 / kappa) - n / 2 * math.log(2 * math.pi))
    return total


def exact_posterior(parts, lengths, sigma, gamma, log_lik):
    log_p = np.array([log_prior_stirling(z, lengths, sigma, gamma) + log_lik(z) for z in parts])
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def partition_frequencies(parts, run, burn_in):
    index = {z: i for i, z in enumerate(parts)}
    counts = np.zeros(len(parts))

    def record(iteration, states, info):
        if iteration > burn_in:
            counts[index[canonical(states)]] += 1

    run(record)
    return counts / counts.sum(), counts.sum()


def iid_expected_tv(p, n):
    """E[TV] of n independent draws from p (normal approximation of each |error|)."""
    return 0.5 * np.sum(np.sqrt(2 * p * (1 - p) / (np.pi * n)))


def tv(p, q):
    return 0.5 * np.abs(p - q).sum()


# --------------------------------------------------------------------------------------------
# effective states


def test_effective_states_hand_examples():
    assert effective_states([99, 1]) == 1
    assert effective_states([98, 1, 1]) == 2
    assert effective_states([1, 98, 1]) == 2  # order does not matter
    assert effective_states([25, 25, 25, 25]) == 4
    assert effective_states([25, 25, 25, 25], coverage=0.5) == 2
    assert effective_states([25, 25, 25, 25], coverage=0.51) == 3
    assert effective_states([5, 0, 0]) == 1
    assert effective_states([0, 0]) == 0
    assert effective_states([]) == 0
    assert effective_states(np.array([0.5, 0.3, 0.2]), coverage=1.0) == 3


@pytest.mark.parametrize("counts, coverage", [([1, -1], 0.99), ([1, np.nan], 0.99), ([1, 2], 0.0),
                                              ([1, 2], 1.5)])
def test_effective_states_rejects_bad_input(counts, coverage):
    with pytest.raises(ValueError):
        effective_states(counts, coverage)


# --------------------------------------------------------------------------------------------
# the references themselves


@pytest.mark.parametrize("sigma, gamma", [(1.0, 1.0), (0.5, 2.0), (3.0, 0.7)])
def test_stirling_prior_matches_franchise_enumeration(sigma, gamma):
    lengths = [3, 2]
    enumerated = prior_crf_enumeration(lengths, sigma, gamma)
    parts = list(set_partitions(5))
    assert set(enumerated) == set(parts)
    assert sum(enumerated.values()) == pytest.approx(1.0)
    for z in parts:
        expected = math.log(enumerated[z])
        assert log_prior_stirling(z, lengths, sigma, gamma) == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------------------------
# the slice-restricted forward filter, backward sampler


def _slice_path_distribution(trans, lik, x, u):
    n_states, n_steps = trans.shape[1], len(x)
    paths = list(itertools.product(range(n_states), repeat=n_steps))
    weights = np.zeros(len(paths))
    for i, path in enumerate(paths):
        allowed = trans[0, path[0]] > u[0] and all(trans[path[t - 1] + 1, path[t]] > u[t]
                                                   for t in range(1, n_steps))
        weights[i] = allowed * np.prod([lik[x[t], path[t]] for t in range(n_steps)])
    return weights / weights.sum()


@pytest.mark.parametrize("threaded", [False, True])
def test_ffbs_samples_the_slice_posterior(threaded, monkeypatch):
    """p(z | u, theta, phi) ∝ prod_t 1[theta_{z_{t-1} z_t} > u_t] lik_t(z_t), by enumeration."""
    if threaded:
        monkeypatch.setattr(units, "MIN_WORK_PER_THREAD", 1)  # one chunk a thread however small
    rng = np.random.default_rng(0)
    n_states, n_steps, n_symbols, copies = 3, 5, 4, 30000
    trans = rng.dirichlet(np.full(n_states, 0.7), size=n_states + 1)
    lik = rng.random((n_symbols, n_states)) + 0.05
    x = rng.integers(0, n_symbols, n_steps)
    u = rng.random(n_steps) * 0.3
    exact = _slice_path_distribution(trans, lik, x, u)
    assert 5 < np.count_nonzero(exact) < n_states ** n_steps  # the slice does cut paths
    offsets = np.arange(0, n_steps * copies + 1, n_steps, dtype=np.int64)
    order = np.argsort(-trans, axis=1, kind="stable").astype(np.int64)
    states = np.empty(n_steps * copies, dtype=np.int32)
    failed = np.zeros(copies, dtype=bool)
    beam_ffbs(trans, order, lik, np.tile(x, copies).astype(np.int64), np.tile(u, copies),
              rng.random(n_steps * copies), offsets, states, failed)
    assert not failed.any()
    code = (states.reshape(copies, n_steps) * n_states ** np.arange(n_steps - 1, -1, -1)).sum(axis=1)
    freq = np.bincount(code, minlength=n_states ** n_steps) / copies
    assert tv(freq, exact) < 4 * iid_expected_tv(exact, copies)
    assert np.all(freq[exact == 0] == 0)


def test_ffbs_underflow_falls_back_to_log_space():
    """Emission weights of 1e-300 on every allowed state underflow the linear filter."""
    rng = np.random.default_rng(4)
    n_states, n_steps, copies = 3, 4, 8000
    trans = np.array([[0.6, 0.4, 0.0], [0.5, 0.5, 0.0], [0.3, 0.7, 0.0], [0.3, 0.3, 0.4]])
    x = np.array([0, 1, 1, 0])
    log_lik = np.log(np.array([[1e-300, 3e-300, 1.0], [2e-300, 1e-300, 1.0]]))  # state 2 unreachable
    u = np.full(n_steps, 0.1)
    offsets = np.arange(0, n_steps * copies + 1, n_steps, dtype=np.int64)
    order = np.argsort(-trans, axis=1, kind="stable").astype(np.int64)
    states = np.zeros(n_steps * copies, dtype=np.int32)
    failed = np.zeros(copies, dtype=bool)
    index = np.tile(x, copies).astype(np.int64)
    draws = rng.random(n_steps * copies)
    beam_ffbs(trans, order, np.exp(log_lik), index, np.tile(u, copies), draws, offsets, states, failed)
    assert failed.all()
    for i in range(copies):
        beam_ffbs_log(trans, log_lik, index, np.tile(u, copies), draws, offsets[i], offsets[i + 1], states)
    lik_reachable = np.exp(log_lik + 690)
    lik_reachable[:, 2] = 1.0
    exact = _slice_path_distribution(trans, lik_reachable, x, u)
    code = (states.reshape(copies, n_steps) * n_states ** np.arange(n_steps - 1, -1, -1)).sum(axis=1)
    freq = np.bincount(code, minlength=n_states ** n_steps) / copies
    assert tv(freq, exact) < 4 * iid_expected_tv(exact, copies)


# --------------------------------------------------------------------------------------------
# the conditional draws of steps 1-2


def test_top_level_chain_targets_the_collapsed_stick_posterior():
    """With z fixed, repeated (m | pi, pi | m) draws have the pi-marginal
    p(pi_1 | z) ∝ pi_1^-1 (1 - pi_1)^(gamma - 1) prod_j Gamma(sigma pi_1 + n_j1) / Gamma(sigma pi_1)
    (one state entered 3 times from the start row and 7 times from itself).
    Setting every m_jk to 1 instead of the Antoniak draw would give a mean of 2 / 3."""
    sigma, gamma = 1.0, 1.5
    counts = np.array([[3], [7]])
    grid = np.linspace(1e-9, 1 - 1e-9, 200001)
    log_f = (-np.log(grid) + (gamma - 1) * np.log1p(-grid)
             + sum(gammaln(sigma * grid + n) - gammaln(sigma * grid) for n in counts[:, 0]))
    density = np.exp(log_f - log_f.max())
    density /= np.trapezoid(density, grid)
    mean = np.trapezoid(grid * density, grid)
    sd = np.sqrt(np.trapezoid(grid ** 2 * density, grid) - mean ** 2)
    rng = np.random.default_rng(0)
    log_pi = np.log([0.5, 0.5])
    draws = np.empty(12000)
    for i in range(len(draws)):
        log_pi = beam.sample_top_level(rng, counts, log_pi, sigma, gamma)
        draws[i] = np.exp(log_pi[0])
    assert abs(draws.mean() - mean) < 0.01  # batch-means standard error about 0.002
    assert abs(draws.std() - sd) < 0.01


def test_transition_rows_have_the_dirichlet_posterior_mean():
    """E[theta_jk | z, pi] = (sigma pi_k + n_jk) / (sigma + n_j.), also for a rest mass of 1e-3."""
    rng = np.random.default_rng(1)
    sigma = 2.0
    pi = np.array([0.6, 0.3995, 0.0005])  # two states and the rest: sigma pi_rest = 0.001
    counts = np.array([[2, 0], [5, 1], [0, 0]])
    draws = np.exp(np.stack([beam.sample_transitions(rng, counts, np.log(pi), sigma) for _ in range(10000)]))
    assert np.all(np.isfinite(draws))
    np.testing.assert_allclose(draws.sum(axis=2), 1.0)
    full = np.hstack([counts, np.zeros((3, 1))]) + sigma * pi
    expected = full / full.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(draws.mean(axis=0), expected, atol=0.008)


def _draws(family, observations, states, n_states, rng, n_draws):
    """``n_draws`` of the family's posterior parameters given the assignment ``states``."""
    corpus = Corpus(observations, np.array([0, len(states)]))
    family.prepare(corpus, n_states)
    stats = state_stats(family.code, family.index(corpus), family.features(corpus), states, n_states,
                        family.n_stats())
    return [family.draw_parameters(rng, stats) for _ in range(n_draws)], stats


def test_emission_draws_have_the_conjugate_posterior_mean():
    rng = np.random.default_rng(2)
    x = np.array([0, 0, 1, 2, 2, 2, 1])
    states = np.array([0, 0, 0, 1, 1, 1, 1], dtype=np.int32)
    draws, stats = _draws(Categorical(0.5, n_symbols=3), x, states, 2, rng, 8000)
    phi = np.exp(np.stack([d["log_emissionprob"] for d in draws]))
    counts = np.array([[2, 1, 0], [0, 1, 3]]) + 0.5
    np.testing.assert_allclose(phi.mean(axis=0), counts / counts.sum(axis=1, keepdims=True), atol=0.01)
    # with no statistics the draw is the prior's
    prior = Categorical(0.5, n_symbols=3)
    prior.prepare(Corpus(x, np.array([0, len(x)])), 1)
    assert prior.draw_parameters(rng, np.zeros((4, 1)))["log_emissionprob"].shape == (1, 3)

    y = np.array([[0.5], [1.5], [1.0], [-2.0], [-3.0], [-2.5], [-2.2]])
    mu0, kappa0, a0, b0 = 0.0, 0.5, 2.0, 1.0
    draws, _ = _draws(Gaussian(mean=mu0, kappa=kappa0, shape=a0, rate=b0), y, states, 2, rng, 8000)
    means = np.stack([d["means"] for d in draws])
    precisions = np.stack([d["precisions"] for d in draws])
    for k in range(2):
        v = y[states == k, 0]
        kappa = kappa0 + len(v)
        a = a0 + len(v) / 2
        b = b0 + 0.5 * ((v - v.mean()) ** 2).sum() + kappa0 * len(v) * (v.mean() - mu0) ** 2 / (2 * kappa)
        assert means[:, k, 0].mean() == pytest.approx((kappa0 * mu0 + v.sum()) / kappa, abs=0.02)
        assert precisions[:, k, 0].mean() == pytest.approx(a / b, rel=0.03)


# --------------------------------------------------------------------------------------------
# the whole sampler against the exact posterior of tiny data sets


@pytest.mark.slow
def test_categorical_posterior_matches_enumeration():
    """Two sequences (3 + 2 tokens, W = 2): sampled partition frequencies vs the exact posterior.

    Monte Carlo error: with n draws the expected total variation of iid
    samples is iid_expected_tv (0.019 here); the chain's draws are
    autocorrelated (about two iterations per independent draw, measured on
    five seeds: TV 1.1-1.9 times the iid value), so the tolerance is 3.5 times
    the iid value.  The exact posteriors under sigma = 2 or gamma = 2 lie
    well outside it, so the check has the power to see a wrong sampler.
    """
    x = np.array([0, 1, 0, 1, 1], dtype=np.int32)
    offsets = np.array([0, 3, 5])
    lengths = [3, 2]
    parts = list(set_partitions(5))
    n_iter, burn_in = 14200, 200

    def posterior(sigma, gamma, beta=1.0):
        return exact_posterior(parts, lengths, sigma, gamma,
                               lambda z: log_dirichlet_multinomial(z, x, 2, beta))

    freq, n = partition_frequencies(parts, lambda cb: beam_sample(
        x, offsets, 2, n_iter, gamma=1.0, sigma=1.0, beta=1.0, n_init_states=3, seed=11, callback=cb),
        burn_in)
    tolerance = 3.5 * iid_expected_tv(posterior(1.0, 1.0), n)
    assert tv(freq, posterior(1.0, 1.0)) < tolerance
    assert tv(freq, posterior(2.0, 1.0)) > tolerance
    assert tv(freq, posterior(1.0, 2.0)) > tolerance


@pytest.mark.slow
def test_gaussian_posterior_matches_enumeration():
    """Two sequences of 1-d Gaussian data (2 + 2 tokens), Normal-Gamma prior.

    The Gaussian chain mixes more slowly (measured TV up to 2.6 times the iid
    value), hence 5 times the iid value; a prior with b0 doubled lies outside.
    """
    x = np.array([-1.0, -0.7, 1.1, 0.9])
    offsets = np.array([0, 2, 4])
    lengths = [2, 2]
    parts = list(set_partitions(4))
    prior = dict(mu0=0.0, kappa0=0.5, a0=2.0, b0=1.0)
    n_iter, burn_in = 10100, 100

    def posterior(b0):
        return exact_posterior(parts, lengths, 1.0, 1.0,
                               lambda z: log_normal_gamma_marginal(z, x, 0.0, 0.5, 2.0, b0))

    freq, n = partition_frequencies(parts, lambda cb: beam_sample(
        x[:, None], offsets, 0, n_iter, n_init_states=3, seed=5, callback=cb, emission="gaussian",
        gaussian_prior=prior), burn_in)
    tolerance = 5 * iid_expected_tv(posterior(1.0), n)
    assert tv(freq, posterior(1.0)) < tolerance
    assert tv(freq, posterior(2.0)) > tolerance


# --------------------------------------------------------------------------------------------
# planted structure


def _planted(seed):
    transmat = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])
    emission = np.zeros((3, 9))
    for k in range(3):
        emission[k, 3 * k:3 * k + 3] = 1 / 3
    return sample_categorical_hmm(np.full(3, 1 / 3), transmat, emission, [50] * 20, seed=seed)


def _many_to_one(states, gold):
    return sum(np.bincount(gold[states == k]).max() for k in np.unique(states)) / len(states)


def test_planted_three_states_are_recovered():
    corpus = _planted(2)
    result = beam_sample(corpus.observations, corpus.offsets, 9, 2500, seed=2, n_init_states=10)
    effective = [h["n_effective"] for h in result.history]
    assert effective[0] >= 8
    assert np.median(effective[-500:]) == 3
    assert _many_to_one(result.states, corpus.gold) > 0.97
    # the three largest states emit the planted symbol groups
    top = np.sort(np.argmax(result.emissionprob_[:3], axis=1) // 3)
    assert top.tolist() == [0, 1, 2]
    assert result.transmat_[:3, :3].diagonal().min() > 0.8


def test_new_states_are_instantiated_from_one():
    corpus = _planted(1)
    result = beam_sample(corpus.observations, corpus.offsets, 9, 300, seed=1, n_init_states=1)
    assert result.history[0]["n_states"] >= 1
    assert max(h["n_states"] for h in result.history) >= 3
    assert max(h["n_instantiated"] for h in result.history) > max(h["n_states"] for h in result.history[:1])
    assert result.history[-1]["n_effective"] >= 2


# --------------------------------------------------------------------------------------------
# API


def test_result_fields_and_labels_by_occupancy():
    corpus = _planted(0)
    seen = []
    result = beam_sample(corpus.observations, corpus.offsets, 9, 30, seed=0,
                         callback=lambda it, states, info: seen.append((it, states.copy(), info)))
    assert isinstance(result, BeamResult) and result.n_iter == 30 and len(seen) == 30
    k = result.n_states
    assert result.states.dtype == np.int32 and result.states.shape == corpus.observations.shape
    occupancy = np.bincount(result.states)
    assert len(occupancy) == k and np.all(np.diff(occupancy) <= 0) and occupancy.min() > 0
    assert result.transmat_.shape == (k, k) and result.startprob_.shape == (k,)
    assert result.emissionprob_.shape == (k, 9)
    np.testing.assert_allclose(result.transmat_.sum(axis=1), 1.0)
    np.testing.assert_allclose(result.emissionprob_.sum(axis=1), 1.0)
    assert result.top_level_.shape == (k + 1,) and result.top_level_.sum() == pytest.approx(1.0)
    entry = result.history[-1]
    assert set(entry) == {"iteration", "n_states", "n_instantiated", "n_effective", "log_joint", "seconds"}
    assert entry["n_effective"] == effective_states(occupancy) and entry["n_states"] == k
    assert np.isfinite(entry["log_joint"]) and entry["seconds"] > 0
    np.testing.assert_array_equal(seen[-1][1], result.states)


def test_callback_stops_early():
    corpus = _planted(0)
    result = beam_sample(corpus.observations, corpus.offsets, 9, 50, seed=0,
                         callback=lambda it, states, info: it == 7)
    assert result.n_iter == 7 and result.history[-1]["iteration"] == 7


def test_same_seed_same_run_whatever_the_threading(monkeypatch):
    corpus = _planted(0)

    def run(seed):
        result = beam_sample(corpus.observations, corpus.offsets, 9, 25, seed=seed)
        return result.states, [(h["n_states"], h["log_joint"]) for h in result.history]

    states, history = run(7)
    monkeypatch.setattr(units, "MIN_WORK_PER_THREAD", 1)  # the threaded kernel, same uniforms
    states_threaded, history_threaded = run(7)
    np.testing.assert_array_equal(states, states_threaded)
    assert history == history_threaded
    other, _ = run(8)
    assert not np.array_equal(states, other)


def test_gaussian_runs_on_planted_data():
    rng = np.random.default_rng(0)
    gold = np.repeat([0, 1, 0, 2], 50)
    x = np.array([-4.0, 0.0, 4.0])[gold][:, None] + 0.5 * rng.standard_normal((200, 1))
    result = beam_sample(x, np.array([0, 100, 200]), 0, 300, seed=0, emission="gaussian",
                         gaussian_prior=(0.0, 0.1, 2.0, 1.0))
    assert result.history[-1]["n_effective"] == 3
    np.testing.assert_allclose(np.sort(result.means_[:3, 0]), [-4, 0, 4], atol=0.3)
    assert result.variances_.shape == (result.n_states, 1) and result.emissionprob_ is None


@pytest.mark.parametrize("kwargs, message", [
    (dict(offsets=np.array([0, 2, 4])), "offsets"),
    (dict(offsets=np.array([1, 5])), "offsets"),
    (dict(offsets=np.array([0.0, 5.0])), "offsets"),
    (dict(observations=np.array([0, 1, 2, 1, 0])), "symbol ids"),
    (dict(observations=np.array([0, -1, 1, 1, 0])), "symbol ids"),
    (dict(observations=np.array([0.0, 1.0, 1.0, 1.0, 0.0])), "integer"),
    (dict(gamma=0.0), "gamma"),
    (dict(sigma=-1.0), "sigma"),
    (dict(beta=np.nan), "beta"),
    (dict(n_init_states=0), "n_init_states"),
    (dict(n_iter=-1), "n_iter"),
    (dict(emission="poisson"), "emission"),
    (dict(emission="gaussian", observations=np.array([[0.0], [np.inf], [1.0], [1.0], [0.0]])), "finite"),
    (dict(emission="gaussian", observations=np.zeros((5, 1)), gaussian_prior=dict(mu0=0.0, kappa0=1.0)),
     "keys"),
    (dict(emission="gaussian", observations=np.zeros((5, 1)), gaussian_prior=(0.0, 1.0, -1.0, 1.0)),
     "kappa0"),
])
def test_input_validation(kwargs, message):
    args = dict(observations=np.array([0, 1, 1, 1, 0], dtype=np.int32), offsets=np.array([0, 3, 5]),
                n_symbols=2, n_iter=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        beam_sample(**args)

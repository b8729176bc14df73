"""The chain-of-units kernels (cvbayes.chains.composite) against enumeration of every path."""
import numpy as np
import pytest

from tests.brute import unit_paths, unit_posterior
from cvbayes.chains.composite import (batch_unit_log_evidence, batch_unit_posteriors, batch_unit_sample,
                                      batch_unit_viterbi, unit_forward_backward, unit_viterbi)
from cvbayes.core.units import equal_token_chunks


def tiny_chain(rng, n_units, n_states, n_steps, normalised=True):
    """Random tables and emission rows of a chain of units; VB-like sub-normalised tables otherwise."""
    entry = rng.dirichlet(np.ones(n_units))
    stay = rng.uniform(0.1, 0.9, n_units * n_states)
    leave = 1.0 - stay
    if not normalised:
        entry, stay, leave = 0.8 * entry, 0.9 * stay, 0.7 * leave
    lik = rng.uniform(0.05, 1.0, (n_steps, n_units * n_states))
    return entry, stay, leave, lik


def start_weights(rng, n_steps, presegmented):
    """Every frame a possible unit start (weight 1), or a pre-segmentation: some frames barred (0), and
    weights between to check that the kernels multiply the weight in, not only test it."""
    if not presegmented:
        return np.ones(n_steps)
    return rng.choice([0.0, 1.0, 0.5], n_steps, p=[0.4, 0.4, 0.2])


def logs(*tables):
    with np.errstate(divide="ignore"):  # a barred unit start: weight 0, log -inf
        return [np.log(table) for table in tables]


def run_posterior(entry, stay, leave, lik, n_states, start=None):
    n_steps, n_composite = lik.shape
    start = np.ones(n_steps) if start is None else start
    buffers = [np.empty((n_steps, n_composite)) for _ in range(3)]
    counts = np.zeros(n_composite // n_states)
    log_z = unit_forward_backward(*logs(entry, stay, leave, start, lik), n_steps, n_states, *buffers, counts)
    return log_z, buffers[2], counts


@pytest.mark.parametrize("n_units,n_states,n_steps", [(2, 3, 7), (3, 2, 6), (2, 1, 5), (3, 1, 4), (1, 3, 3)])
@pytest.mark.parametrize("normalised", [True, False])
@pytest.mark.parametrize("presegmented", [False, True])
def test_forward_backward_matches_enumeration(n_units, n_states, n_steps, normalised, presegmented):
    rng = np.random.default_rng(n_units * 100 + n_states * 10 + n_steps)
    entry, stay, leave, lik = tiny_chain(rng, n_units, n_states, n_steps, normalised)
    start = start_weights(rng, n_steps, presegmented)
    exact_log_z, exact_marginals, exact_counts = unit_posterior(entry, stay, leave, lik, n_states, start)
    log_z, marginals, counts = run_posterior(entry, stay, leave, lik, n_states, start)
    assert log_z == pytest.approx(exact_log_z, rel=1e-12)
    np.testing.assert_allclose(marginals, exact_marginals, atol=1e-12)
    np.testing.assert_allclose(counts, exact_counts, atol=1e-12)
    # every occurrence leaves each state once: E[stay_us] = occupancy - E[n_u] >= 0
    occupancy = marginals.sum(axis=0).reshape(n_units, n_states)
    assert np.all(occupancy - counts[:, None] > -1e-12)


def test_emissions_far_below_the_best_state_do_not_underflow():
    """A frame whose best state is unreachable from the frame before, every reachable state 1,000 nats
    below it: log space keeps the path (emission rows divided by their maximum would underflow to 0)."""
    n_units, n_states = 2, 3
    log_lik = np.zeros((4, n_units * n_states))
    log_lik[1] = -1000.0
    log_lik[1, 2] = 0.0   # the best state at frame 1 is unit 0's last, two steps from any start
    n_steps = log_lik.shape[0]
    buffers = [np.empty((n_steps, n_units * n_states)) for _ in range(3)]
    counts = np.zeros(n_units)
    entry, stay, leave = np.log(np.full(n_units, 0.5)), np.log(np.full(6, 0.5)), np.log(np.full(6, 0.5))
    log_z = unit_forward_backward(entry, stay, leave, np.zeros(n_steps), log_lik, n_steps, n_states, *buffers, counts)
    assert np.isfinite(log_z) and log_z < -999
    # the best state takes no path, so the chain is the one with frame 1 shifted up by 1,000 nats
    lik = np.ones_like(log_lik)
    exact_log_z, exact_marginals, _ = unit_posterior(np.exp(entry), np.exp(stay), np.exp(leave), lik, n_states)
    assert log_z == pytest.approx(exact_log_z - 1000.0, rel=1e-12)
    np.testing.assert_allclose(buffers[2], exact_marginals, atol=1e-12)


def test_too_short_utterance_has_no_path():
    rng = np.random.default_rng(0)
    entry, stay, leave, lik = tiny_chain(rng, 2, 3, 2)
    log_z, _, counts = run_posterior(entry, stay, leave, lik, 3)
    assert log_z == -np.inf and not counts.any()


@pytest.mark.parametrize("n_units,n_states,n_steps", [(2, 3, 7), (3, 1, 5), (2, 2, 6)])
@pytest.mark.parametrize("presegmented", [False, True])
def test_viterbi_matches_enumeration(n_units, n_states, n_steps, presegmented):
    rng = np.random.default_rng(7 + n_steps)
    entry, stay, leave, lik = tiny_chain(rng, n_units, n_states, n_steps)
    start = start_weights(rng, n_steps, presegmented)
    states, starts, p = max(unit_paths(entry, stay, leave, lik, n_states, start), key=lambda path: path[2])
    got_states = np.empty(n_steps, dtype=np.int32)
    got_starts = np.empty(n_steps, dtype=np.bool_)
    score = unit_viterbi(*logs(entry, stay, leave, start, lik), n_steps, n_states, got_states, got_starts)
    assert score == pytest.approx(np.log(p), rel=1e-12)
    assert tuple(got_states) == states and tuple(got_starts) == starts


def test_batch_kernels_agree_with_one_utterance_kernels():
    rng = np.random.default_rng(3)
    n_units, n_states = 3, 2
    lengths = [5, 1, 6, 4]  # the 1-frame utterance has no path with two states a unit
    entry, stay, leave, lik = tiny_chain(rng, n_units, n_states, sum(lengths))
    start = start_weights(rng, sum(lengths), True)
    tables = logs(entry, stay, leave, start, lik)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    chunks = equal_token_chunks(offsets)
    gamma = np.zeros_like(lik)
    counts = np.zeros((len(lengths), n_units))
    log_z = np.empty(len(lengths))
    batch_unit_posteriors(*tables, offsets, n_states, chunks, gamma, counts, log_z)
    evidence = np.empty(len(lengths))
    batch_unit_log_evidence(*tables, offsets, n_states, chunks, evidence)
    np.testing.assert_allclose(evidence, log_z)
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        if b - a < n_states:
            assert log_z[i] == -np.inf
            continue
        exact_log_z, exact_marginals, exact_counts = unit_posterior(entry, stay, leave, lik[a:b], n_states, start[a:b])
        assert log_z[i] == pytest.approx(exact_log_z, rel=1e-12)
        np.testing.assert_allclose(gamma[a:b], exact_marginals, atol=1e-12)
        np.testing.assert_allclose(counts[i], exact_counts, atol=1e-12)
    states = np.empty(offsets[-1], dtype=np.int32)
    starts = np.empty(offsets[-1], dtype=np.bool_)
    scores = np.empty(len(lengths))
    batch_unit_viterbi(*tables, offsets, n_states, chunks, states, starts, scores)
    assert scores[1] == -np.inf and np.all(np.isfinite(scores[[0, 2, 3]]))


@pytest.mark.parametrize("n_states,presegmented", [(1, False), (3, False), (1, True)])
def test_sampled_paths_follow_the_exact_posterior(n_states, presegmented):
    """FFBS draws of one utterance, copied 20,000 times with a generator each, against the
    enumerated posterior of its paths (states and unit starts): every path's frequency within
    4.5 standard errors, and the total variation distance small."""
    rng = np.random.default_rng(11)
    n_units, n_steps, n_draws = 2, 5, 20_000
    entry, stay, leave, lik = tiny_chain(rng, n_units, n_states, n_steps)
    start = start_weights(rng, n_steps, presegmented)
    paths = [path for path in unit_paths(entry, stay, leave, lik, n_states, start) if path[2] > 0]
    total = sum(p for _, _, p in paths)
    exact = {(states, starts): p / total for states, starts, p in paths}
    copies = np.tile(lik, (n_draws, 1))
    offsets = np.arange(n_draws + 1, dtype=np.int64) * n_steps
    states = np.empty(copies.shape[0], dtype=np.int32)
    starts = np.empty(copies.shape[0], dtype=np.bool_)
    log_z = np.empty(n_draws)
    batch_unit_sample(*logs(entry, stay, leave, np.tile(start, n_draws), copies), offsets, n_states,
                      equal_token_chunks(offsets), 5, 0, states, starts, log_z)
    np.testing.assert_allclose(log_z, np.log(total))
    drawn = {}
    for i in range(n_draws):
        key = (tuple(states[i * n_steps:(i + 1) * n_steps]), tuple(starts[i * n_steps:(i + 1) * n_steps]))
        assert key in exact, f"drew an impossible path {key}"
        drawn[key] = drawn.get(key, 0) + 1
    for key, p in exact.items():
        frequency = drawn.get(key, 0) / n_draws
        assert abs(frequency - p) <= 4.5 * np.sqrt(p * (1 - p) / n_draws) + 1e-9
    assert 0.5 * sum(abs(drawn.get(key, 0) / n_draws - p) for key, p in exact.items()) < 0.03

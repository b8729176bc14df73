"""CVI-3 (eq. 3.56-3.82): one subchain update against brute-force enumeration, and bookkeeping."""
import numpy as np
import pytest

from brute import guarded_posterior
from cvbayes import HMM
from cvbayes.families.ops import CATEGORICAL
from cvbayes.models.hmm_kernels import subchain_pass, subchain_state, subchain_workspace

K, W, ALPHA, BETA = 2, 3, 0.4, 0.3


def _random_local_state(rng, offsets, is_first, tokens):
    """Consistent random local statistics and the global counts they sum to."""
    n_sub = offsets.shape[0] - 1
    marginals = rng.dirichlet(np.ones(K), size=tokens.shape[0]).astype(np.float32)
    internal = np.zeros((n_sub, K, K), dtype=np.float32)
    boundary = np.zeros((n_sub, K, K), dtype=np.float32)
    for i in range(n_sub):
        n = offsets[i + 1] - offsets[i]
        internal[i] = rng.gamma(1.0, 1.0, size=(K, K)) * (n - 1) / K ** 2
        if not is_first[i]:
            boundary[i] = rng.dirichlet(np.ones(K * K)).reshape(K, K)
    start = marginals[offsets[:-1][is_first]].sum(axis=0, dtype=float)
    trans = internal.sum(axis=0, dtype=float) + boundary.sum(axis=0, dtype=float)
    stats = np.zeros((W + 1, K))
    for t, w in enumerate(tokens):
        stats[w] += marginals[t]
        stats[W] += marginals[t]
    return start, trans, stats, marginals, internal, boundary


def _pass(tokens, offsets, is_first, order, start, trans, stats, marginals, internal, boundary):
    """One CVI-3 pass of the unit update over ``order``, with the finite HMM's symmetric priors."""
    emissions = (CATEGORICAL, np.array([[BETA]]), np.zeros((0, K)), tokens, np.empty((tokens.shape[0], 0)))
    state = subchain_state(emissions, np.full(K, ALPHA), K * ALPHA, offsets, is_first, start, trans, stats, marginals,
                           internal, boundary, subchain_workspace(offsets, K))
    return subchain_pass(state, order)


@pytest.mark.parametrize("target", [1, 2])
def test_one_subchain_update_matches_enumeration_with_the_thesis_counts(target):
    rng = np.random.default_rng(target)
    tokens = np.array([0, 2, 1, 1, 0, 2, 1], dtype=np.int32)
    offsets = np.array([0, 2, 4, 6, 7], dtype=np.int64)
    is_first = np.array([True, False, False, False])
    start, trans, stats, marginals, internal, boundary = _random_local_state(rng, offsets, is_first, tokens)
    begin, end = offsets[target], offsets[target + 1]

    # the reference: eq. 3.57 and the counts of eq. 3.73 and 3.75, built by hand
    c_without = trans - internal[target] - boundary[target] - boundary[target + 1]
    left_counts = c_without - internal[target - 1] - (0 if is_first[target - 1] else boundary[target - 1])
    right_counts = c_without - internal[target + 1] - (boundary[target + 2] if target + 2 < 4 else 0)
    stats_without = stats.copy()
    for t in range(begin, end):
        stats_without[tokens[t]] -= marginals[t]
        stats_without[W] -= marginals[t]
    theta_bar = (c_without + ALPHA) / (c_without.sum(axis=1, keepdims=True) + K * ALPHA)
    phi_rows = np.array([(stats_without[tokens[t]] + BETA) / (stats_without[W] + W * BETA)
                         for t in range(begin, end)])
    expected = guarded_posterior(marginals[begin - 1].astype(float), left_counts, theta_bar, phi_rows,
                                 right_counts, marginals[end].astype(float), ALPHA)
    exp_marginals, exp_pairs, exp_left, exp_right, _ = expected

    _pass(tokens, offsets, is_first, np.array([target]), start, trans, stats, marginals, internal, boundary)
    np.testing.assert_allclose(marginals[begin:end], exp_marginals, atol=1e-6)
    np.testing.assert_allclose(internal[target], exp_pairs, atol=1e-6)
    np.testing.assert_allclose(boundary[target], exp_left, atol=1e-6)
    np.testing.assert_allclose(boundary[target + 1], exp_right, atol=1e-6)


def test_global_counts_stay_the_sum_of_the_local_statistics():
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, W, size=23).astype(np.int32)
    offsets = np.array([0, 4, 8, 10, 14, 18, 23], dtype=np.int64)
    is_first = np.array([True, False, False, True, False, False])
    start, trans, stats, marginals, internal, boundary = _random_local_state(rng, offsets, is_first, tokens)
    for _ in range(3):
        objective, bad = _pass(tokens, offsets, is_first, np.arange(6), start, trans, stats, marginals, internal,
                               boundary)
        assert bad == -1 and np.isfinite(objective)
    np.testing.assert_allclose(trans, internal.sum(axis=0, dtype=float) + boundary.sum(axis=0, dtype=float),
                               atol=1e-9)
    np.testing.assert_allclose(start, marginals[[0, 10]].sum(axis=0, dtype=float), atol=1e-9)
    assert trans.sum() == pytest.approx(23 - 2, rel=1e-6)
    assert not boundary[is_first].any()
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-6)


def test_cvi3_with_whole_sequences_is_cvi2():
    """With no subchain boundaries inside a sequence there are no guards: CVI-2 exactly."""
    rng = np.random.default_rng(0)
    sequences = [rng.integers(0, 6, size=n) for n in rng.integers(3, 12, size=30)]
    cvi2 = HMM(3, 0.3, 0.2, algorithm="cvi2", n_iter=4, random_state=2).fit(sequences)
    cvi3 = HMM(3, 0.3, 0.2, algorithm="cvi3", n_iter=4, random_state=2, subchain_length=100).fit(sequences)
    np.testing.assert_allclose([r.objective for r in cvi3.history_], [r.objective for r in cvi2.history_],
                               rtol=1e-6)
    np.testing.assert_allclose(cvi3.transmat_, cvi2.transmat_, rtol=1e-5)
    np.testing.assert_allclose(cvi3.emissionprob_, cvi2.emissionprob_, rtol=1e-5)


def test_cvi3_on_one_long_sequence_learns_and_reports_memory():
    rng = np.random.default_rng(1)
    trans = np.array([[0.05, 0.95], [0.9, 0.1]])
    states = [0]
    for _ in range(1999):
        states.append(rng.choice(2, p=trans[states[-1]]))
    emission = np.array([[0.7, 0.3, 0.0], [0.0, 0.2, 0.8]])
    tokens = np.array([rng.choice(3, p=emission[z]) for z in states])
    # a weak start off the symmetric point (random local chains average out over 2,000 tokens)
    init = {"startprob": np.array([0.5, 0.5]), "transmat": np.full((2, 2), 0.5),
            "emissionprob": np.array([[0.4, 0.3, 0.3], [0.3, 0.3, 0.4]])}
    model = HMM(2, 0.5, 0.5, algorithm="cvi3", n_iter=15, init=init, subchain_length=10).fit([tokens])
    assert model.local_memory_bytes_ == 2000 * 2 * 4 + 2 * 200 * 2 * 2 * 4
    np.testing.assert_allclose(model.transmat_, trans, atol=0.05)
    assert all(np.isfinite(r.objective) for r in model.history_)
    # CVI-2 cannot learn from one sequence: leaving it out leaves no data (the reason for CVI-3)
    with pytest.warns(UserWarning, match="use 'cvi3'"):
        cvi2 = HMM(2, 0.5, 0.5, algorithm="cvi2", n_iter=15, init=init).fit([tokens])
    np.testing.assert_allclose(cvi2.transmat_, 0.5, atol=0.02)

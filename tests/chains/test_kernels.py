"""Chain kernels against brute-force enumeration (thesis eq. 3.15-3.17)."""
import numpy as np
import pytest

from tests.brute import best_path, chain_posterior
from cvbayes.chains.forward_backward import (fill_rows_from_table, forward_backward, forward_log_z,
                                             mat_vec, vec_mat, viterbi)


def random_chain(rng, n_states, n_steps, sparse=False):
    start = rng.dirichlet(np.ones(n_states))
    trans = rng.dirichlet(np.full(n_states, 0.3 if sparse else 1.0), size=n_states)
    lik = rng.random((n_steps, n_states))
    return start, trans, lik


@pytest.mark.parametrize("n_states,n_steps", [(1, 4), (2, 1), (3, 2), (3, 5), (5, 6), (6, 4)])
def test_forward_backward_matches_enumeration(n_states, n_steps):
    rng = np.random.default_rng(n_states * 10 + n_steps)
    start, trans, lik = random_chain(rng, n_states, n_steps, sparse=True)
    alpha, beta, gamma = (np.empty((n_steps, n_states)) for _ in range(3))
    outer = np.zeros((n_states, n_states))
    log_z = forward_backward(start, trans, lik, n_steps, alpha, beta, gamma, outer)
    want_log_z, want_marg, want_pairs = chain_posterior(start, trans, lik)
    assert log_z == pytest.approx(want_log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(gamma, want_marg, atol=1e-12)
    np.testing.assert_allclose(outer * trans, want_pairs, atol=1e-12)
    assert forward_log_z(start, trans, lik, n_steps, np.empty((n_steps, n_states))) == pytest.approx(want_log_z)


def test_forward_backward_accumulates_and_handles_zero_rows():
    rng = np.random.default_rng(1)
    start, trans, lik = random_chain(rng, 3, 4)
    buffers = [np.empty((4, 3)) for _ in range(3)]
    outer = np.ones((3, 3))
    forward_backward(start, trans, lik, 4, *buffers, outer)
    _, _, pairs = chain_posterior(start, trans, lik)
    np.testing.assert_allclose((outer - 1.0) * trans, pairs, atol=1e-12)
    lik[2] = 0.0
    assert forward_backward(start, trans, lik, 4, *buffers, np.zeros((3, 3))) == -np.inf


def test_viterbi_matches_enumeration():
    rng = np.random.default_rng(7)
    for n_states, n_steps in [(2, 1), (3, 5), (4, 4), (5, 3)]:
        start, trans, lik = random_chain(rng, n_states, n_steps, sparse=True)
        path = np.empty(n_steps, dtype=np.int32)
        score = viterbi(np.log(start), np.log(trans), lik, n_steps, path)
        want, want_p = best_path(start, trans, lik)
        np.testing.assert_array_equal(path, want)
        assert score == pytest.approx(np.log(want_p))


def test_emission_rows_are_max_normalised_with_log_scale_and_mask():
    table = np.array([[0.2, 0.4], [0.5, 0.0], [0.0, 0.0]])
    offset = np.array([0.0, 1.0, 0.0])
    index = np.array([0, 1, 0], dtype=np.int32)
    lik = np.empty((3, 2))
    log_scale = fill_rows_from_table(table, offset, np.zeros((0, 2)), index, 0, 3, lik)
    np.testing.assert_allclose(lik, [[0.5, 1.0], [1.0, 0.0], [0.5, 1.0]])
    assert log_scale == pytest.approx(np.log(0.4) + np.log(0.5) + 1.0 + np.log(0.4))
    mask = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    fill_rows_from_table(table, offset, mask, index, 0, 1, lik)
    np.testing.assert_allclose(lik[0], [1.0, 0.0])
    index[0] = 2
    assert fill_rows_from_table(table, offset, np.zeros((0, 2)), index, 0, 1, lik) == -np.inf


def test_unrolled_products_match_numpy():
    rng = np.random.default_rng(3)
    for n in (1, 3, 4, 5, 9, 45):
        mat = rng.random((n, n))
        vec = rng.random(n)
        out = np.empty(n)
        vec_mat(vec, mat, out)
        np.testing.assert_allclose(out, vec @ mat)
        mat_vec(mat, vec, out, np.ones(n))
        np.testing.assert_allclose(out, mat @ vec)


def test_unrolled_products_skip_zero_blocks_exactly():
    """The tag-dictionary shortcuts: zero blocks of vec are skipped, rows not
    needed come out zero, and everything else is the dense product."""
    rng = np.random.default_rng(4)
    for n in (5, 9, 45):
        mat = rng.random((n, n))
        vec = rng.random(n) * (rng.random(n) < 0.2)
        needed = (rng.random(n) < 0.3).astype(float)
        out = np.full(n, np.nan)
        vec_mat(vec, mat, out)
        np.testing.assert_allclose(out, vec @ mat)
        mat_vec(mat, vec, out, needed)
        kept = needed > 0
        np.testing.assert_allclose(out[kept], (mat @ vec)[kept])
        blocks_skipped = np.repeat(needed[: n - n % 4].reshape(-1, 4).sum(axis=1) == 0, 4)
        assert np.all(out[: n - n % 4][blocks_skipped] == 0.0)


def test_long_chain_stays_finite():
    rng = np.random.default_rng(5)
    n_steps, n_states = 100_000, 4
    start, trans, _ = random_chain(rng, n_states, 1)
    lik = rng.random((n_steps, n_states)) * 1e-3
    buffers = [np.empty((n_steps, n_states)) for _ in range(3)]
    log_z = forward_backward(start, trans, lik, n_steps, *buffers, np.zeros((n_states, n_states)))
    assert np.isfinite(log_z) and log_z < -n_steps * np.log(1e3) + n_steps
    np.testing.assert_allclose(buffers[2].sum(axis=1), 1.0)

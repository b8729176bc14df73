"""The edit lattice (chains/edits.py) against brute-force enumeration of every edit sequence."""
import itertools

import numpy as np
import pytest

from cvbayes.chains.edits import (DELETE, INSERT, edit_posteriors, edit_viterbi, fill_weights,
                                  lattice_buffers, log_likelihood, sample_surface, scatter_counts)


def edit_sequences(n, m, max_insertions):
    """Every edit sequence rewriting n underlying symbols into m surface ones, in the generative order
    (gap 0, x_0's emission, gap 1 if x_0 was kept, ..., gap n), each as (edits used (r, c) of the weight layout, the
    alignment rows (i, j))."""
    out = []

    def gap(g, j, k, used, rows):
        if k < max_insertions and j < m:
            gap(g, j + 1, k + 1, used + [(n + g, 1 + j)], rows + [(INSERT, j)])
        leave(g, j, used + ([(n + g, 0)] if k < max_insertions else []), rows)

    def leave(g, j, used, rows):
        if g == n:
            if j == m:
                out.append((used, rows))
            return
        leave(g + 1, j, used + [(g, 0)], rows + [(g, DELETE)])  # a deleted symbol opens no gap
        if j < m:
            gap(g + 1, j + 1, 0, used + [(g, 1 + j)], rows + [(g, j)])

    gap(0, 0, 0, [], [])
    return out


def brute(w, n, m, max_insertions):
    """(log Z, expected uses of every edit, the best sequence's log probability and alignment)."""
    z, post = 0.0, np.zeros((2 * n + 1, m + 1))
    best, best_rows = -np.inf, None
    for used, rows in edit_sequences(n, m, max_insertions):
        p = np.prod([w[r, c] for r, c in used])
        z += p
        for r, c in used:
            post[r, c] += p
        if np.log(p) > best:
            best, best_rows = np.log(p), rows
    return np.log(z), post / z, best, np.array(best_rows, dtype=np.int64).reshape(-1, 2)


def run(w, n, m, max_insertions):
    alpha, beta, exits, scales = lattice_buffers(n, m, max_insertions)
    post = np.empty((2 * n + 1, m + 1))
    log_z = edit_posteriors(w, n, m, max_insertions, alpha, beta, exits, scales, post)
    return log_z, post


@pytest.mark.parametrize("n,m,max_insertions", [(0, 0, 1), (0, 2, 2), (1, 0, 1), (1, 3, 1), (2, 2, 0), (2, 3, 1),
                                                (3, 2, 2), (3, 4, 1), (2, 5, 2), (4, 3, 1)])
def test_lattice_matches_enumeration(n, m, max_insertions):
    rng = np.random.default_rng(100 * n + 10 * m + max_insertions)
    w = rng.random((2 * n + 1, m + 1)) + 0.05
    want_log_z, want_post, want_best, want_rows = brute(w, n, m, max_insertions)
    log_z, post = run(w, n, m, max_insertions)
    assert log_z == pytest.approx(want_log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(post, want_post, atol=1e-12)
    alpha, _, exits, scales = lattice_buffers(n, m, max_insertions)
    assert log_likelihood(w, n, m, max_insertions, alpha, exits, scales) == pytest.approx(want_log_z, rel=1e-12)
    alignment = np.empty((n + m, 2), dtype=np.int64)
    best, count = edit_viterbi(w, n, m, max_insertions, alignment)
    assert best == pytest.approx(want_best, rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(alignment[:count], want_rows)


def test_counting_semiring_identity():
    """With every weight 1, Z is the number of edit sequences."""
    for n, m, max_insertions in [(2, 3, 1), (3, 3, 2), (4, 2, 1)]:
        log_z, _ = run(np.ones((2 * n + 1, m + 1)), n, m, max_insertions)
        assert np.exp(log_z) == pytest.approx(len(edit_sequences(n, m, max_insertions)))


def test_channel_is_a_distribution_over_surface_strings():
    """Normalised rows: p(y | x) sums to one over every surface string the channel can write."""
    rng = np.random.default_rng(7)
    n_underlying, n_surface, max_insertions = 3, 2, 1
    table = rng.dirichlet(np.ones(n_surface + 1), size=2 * n_underlying + 1)
    x = np.array([2, 0, 2], dtype=np.int64)
    n = x.shape[0]
    total = 0.0
    for m in range(n + (n + 1) * max_insertions + 1):
        for y in itertools.product(range(n_surface), repeat=m):
            y = np.array(y, dtype=np.int64)
            w = np.empty((2 * n + 1, m + 1))
            fill_weights(x, y, n_underlying, table, w)
            log_z, _ = run(w, n, m, max_insertions)
            total += np.exp(log_z)
    assert total == pytest.approx(1.0, rel=1e-12)


def test_impossible_pair_and_scatter():
    n, m = 1, 2
    w = np.ones((2 * n + 1, m + 1))
    assert run(w, n, m, 0)[0] == -np.inf          # two surface symbols, no insertions allowed
    w[:n, 1:] = 0.0                               # x_0 can only be deleted
    assert run(w, n, 1, 0)[0] == -np.inf
    x, y = np.array([1], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    log_z, post = run(np.ones((3, 3)), 1, 2, 1)
    counts, totals = np.zeros((5, 3)), np.zeros(5)
    scatter_counts(x, y, 2, post, 1.0, counts, totals)
    # every pair's edits: one emission of x_0 and one draw or forced stop in each of its two gaps
    assert counts[1].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(totals, counts.sum(axis=1))
    scatter_counts(x, y, 2, post, -1.0, counts, totals)
    np.testing.assert_allclose(counts, 0.0, atol=1e-15)


def test_sampler_follows_the_lattice():
    """`sample_surface`'s draws: their frequencies match p(y | x), and each edit sequence is one the
    lattice enumerates."""
    rng = np.random.default_rng(11)
    table = rng.dirichlet(np.ones(3), size=5)
    x = np.array([0, 1], dtype=np.int64)
    draws = {}
    for _ in range(4000):
        y, rows = sample_surface(rng, table, x, 1)
        assert any(np.array_equal(np.array(seq, dtype=np.int64).reshape(-1, 2), rows)
                   for _, seq in edit_sequences(2, y.shape[0], 1))
        draws[tuple(y)] = draws.get(tuple(y), 0) + 1
    for y, count in draws.items():
        y = np.array(y, dtype=np.int64)
        w = np.empty((5, y.shape[0] + 1))
        fill_weights(x, y, 2, table, w)
        p = np.exp(run(w, 2, y.shape[0], 1)[0])
        assert abs(count / 4000 - p) < 4 * np.sqrt(p * (1 - p) / 4000) + 1e-3

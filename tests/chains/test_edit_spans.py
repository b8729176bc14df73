"""Span scores of the edit channel (chains/edit_spans.py) against enumerating underlying words and edit
sequences on a tiny alphabet."""
import itertools

import numpy as np
import pytest

from cvbayes.chains.edit_spans import (base_buffers, base_span_counts, base_span_marginals, word_span_likelihoods,
                                      word_span_work)
from cvbayes.chains.edits import edit_posteriors, fill_weights, lattice_buffers, scatter_counts
from tests.chains.test_edits import edit_sequences


def random_table(rng, n_underlying, n_surface, deletion=0.05):
    """A normalised (2U + 1, B + 1) channel table whose emission rows delete with probability ``deletion``."""
    table = rng.random((2 * n_underlying + 1, n_surface + 1)) + 0.1
    table[:n_underlying, 0] = 0.0
    table[:n_underlying] *= (1.0 - deletion) / table[:n_underlying].sum(axis=1, keepdims=True)
    table[:n_underlying, 0] = deletion
    return table / table.sum(axis=1, keepdims=True)


def enumerated_likelihood(x, y, n_underlying, table, max_insertions):
    """p(y | x) as the sum over every edit sequence of the product of its edits' weights."""
    w = np.empty((2 * len(x) + 1, len(y) + 1))
    fill_weights(np.array(x, dtype=np.int64), np.array(y, dtype=np.int64), n_underlying, table, w)
    return sum(np.prod([w[r, c] for r, c in used]) for used, _ in edit_sequences(len(x), len(y), max_insertions))


def pair_statistics(x, y, n_underlying, table, max_insertions):
    """(p(y | x), its expected edit counts in table cells) by `edits.edit_posteriors` (itself tested against
    enumeration in test_edits.py)."""
    x, y = np.array(x, dtype=np.int64), np.array(y, dtype=np.int64)
    n, m = len(x), len(y)
    w, post = np.empty((2 * n + 1, m + 1)), np.empty((2 * n + 1, m + 1))
    fill_weights(x, y, n_underlying, table, w)
    log_z = edit_posteriors(w, n, m, max_insertions, *lattice_buffers(n, m, max_insertions), post)
    counts = np.zeros_like(table)
    if log_z > -np.inf:
        scatter_counts(x, y, n_underlying, post, 1.0, counts, np.zeros(table.shape[0]))
    return np.exp(log_z), counts


@pytest.mark.parametrize("n,m,max_insertions,longest", [(1, 3, 1, 9), (2, 4, 1, 9), (3, 5, 2, 9), (2, 5, 0, 9),
                                                        (3, 6, 1, 3)])
def test_word_spans_match_enumeration(n, m, max_insertions, longest):
    rng = np.random.default_rng(10 * n + m)
    table = random_table(rng, 2, 3, deletion=0.2)
    x, y = rng.integers(0, 2, n), rng.integers(0, 3, m)
    out = np.full((m + 1, m + 1), -1.0)
    word_span_likelihoods(x, y, 2, table, max_insertions, longest, word_span_work(n, longest, max_insertions), out)
    for a in range(m + 1):
        for b in range(m + 1):
            want = enumerated_likelihood(x, y[a:b], 2, table, max_insertions) if a <= b <= a + longest else 0.0
            assert out[a, b] == pytest.approx(want, rel=1e-12, abs=1e-300), (a, b)


def base_probability(x, stop, phones):
    """P0(x) = s (1 - s)^(n - 1) prod_i phi(x_i)."""
    return stop * (1.0 - stop) ** (len(x) - 1) * np.prod(phones[list(x)])


def enumerated_base(y, stop, phones, table, max_insertions, tau, longest_x):
    """(sum_x P0(x) p(y_a..b-1 | x) for every span, sum_{a, b} tau[a, b] sum_x P0(x) p(y_ab | x) E[counts | x,
    y_ab]) over every x of 1..longest_x symbols (the tail beyond is below 1e-10 of the total here)."""
    m = len(y)
    marginals, counts = np.zeros((m + 1, m + 1)), np.zeros_like(table)
    for n in range(1, longest_x + 1):
        for x in itertools.product(range(len(phones)), repeat=n):
            prior = base_probability(x, stop, phones)
            for a in range(m + 1):
                for b in range(a, m + 1):
                    p, expected = pair_statistics(x, y[a:b], len(phones), table, max_insertions)
                    marginals[a, b] += prior * p
                    counts += tau[a, b] * prior * p * expected
    return marginals, counts


@pytest.mark.parametrize("m,max_insertions", [(2, 1), (3, 1), (3, 0), (2, 2)])
def test_base_marginal_and_counts_match_enumeration(m, max_insertions):
    rng = np.random.default_rng(m + 7 * max_insertions)
    phones = np.array([0.3, 0.7])
    stop = 0.6
    table = random_table(rng, 2, 2, deletion=0.03)
    y = rng.integers(0, 2, m)
    tau = np.triu(rng.random((m + 1, m + 1)))
    want_marginals, want_counts = enumerated_base(y, stop, phones, table, max_insertions, tau, m + 6)
    buffers = base_buffers(2, m, max_insertions)
    marginals = np.full((m + 1, m + 1), -1.0)
    base_span_marginals(y, stop, phones, table, max_insertions, m, buffers, marginals)
    np.testing.assert_allclose(marginals, want_marginals, rtol=1e-8, atol=1e-300)
    counts = np.zeros_like(table)
    base_span_counts(y, stop, phones, table, max_insertions, m, buffers, tau, counts)
    np.testing.assert_allclose(counts, want_counts, rtol=1e-7, atol=1e-12)


def test_base_marginal_is_a_distribution_over_surface_strings():
    """Summed over every surface string up to a length (and the empty one), the base marginal approaches 1."""
    rng = np.random.default_rng(3)
    phones, stop, max_insertions = np.array([0.5, 0.5]), 0.7, 1
    table = random_table(rng, 2, 2, deletion=0.05)
    total = 0.0
    buffers = base_buffers(2, 12, max_insertions)
    out = np.empty((13, 13))
    for length in range(0, 13):
        for y in itertools.product(range(2), repeat=length):
            base_span_marginals(np.array(y, dtype=np.int64), stop, phones, table, max_insertions, 12, buffers, out)
            total += out[0, length]
    assert 0.99 < total <= 1.0 + 1e-12

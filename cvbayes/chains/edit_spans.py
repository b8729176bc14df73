"""Span scores of the edit channel over a surface string: p(y_a..b-1 | x) for every span at once, and the
base distribution's channel marginal sum_x P0(x) p(y_a..b-1 | x) with its expected edit counts.

The joint model of seed 004 (Lee, O'Donnell and Glass 2015, §3) realises every word token of an adaptor
grammar, an underlying string x, through the noisy channel of `cvbayes.chains.edits` (its generative story,
gaps and table layout are that module's).  A chart over a surface string y of length m then needs, for every
span (a, b), the probability that one word produced exactly y_a..y_{b-1}:

*A cached word x* (eq. S1).  The weights of the pair (x, y_a..y_{b-1}) are the first b - a + 1 columns of
those of (x, y_a..y_{m-1}) (`edits.fill_weights` reads y_j only in column 1 + j), and the forward's last
layer at column j, exits[n, j], is the mass of the complete edit sequences that emitted j symbols.  So one
forward pass from each start a gives every end b:

    p(y_a..b-1 | x) = exits_a[n, b - a] * prod_g scales_a[g]                       (S1)

(`edits.prefix_likelihoods`), m forward passes of O(n (m - a) (K + 1)) a word instead of m^2 / 2.

*The base distribution.*  The unigram grammar's base draws an underlying word of n >= 1 symbols as
P0(x) = s (1 - s)^(n - 1) prod_i phi(x_i) (``Word -> Phon+``: stop probability s, phones phi).  Its channel
marginal is a forward over the edit lattice with x summed out symbol by symbol, on states that keep only
what the channel's next draw depends on (never x itself):

* gap 0, G0[j, k]: the start boundary's gap after emitting j surface symbols with k insertions; G0[0, 0] = 1;
* the gap owned by a kept symbol u, Gu[u, j, k] (a deleted symbol opens no gap);
* between two symbols at surface position j, S0[j] before the first symbol and S1[j] after at least one.

Gaps insert y_j from their owner's insertion row (G[j + 1, k + 1] += G[j, k] I(y_j | owner)) and leave by its
stop cell (k < K) or without a draw (k = K), into S0 (gap 0) or S1 (gap u): A0[j] and A1[j] are those
exits.  From S0[j] and S1[j] the next symbol is drawn, u ~ phi with the continuation 1 - s after the first
symbol: the *entry* mass E[j] = S0[j] + (1 - s) S1[j] draws u; u deleted (E(eps | u)) goes to S1[j], u
rewritten to y_j (E(y_j | u)) opens Gu[u, j + 1, 0] = E[j] phi(u) E(y_j | u).  Deletions loop at j: with
D = sum_u phi(u) E(eps | u), S1[j] = A1[j] + D S0[j] + (1 - s) D S1[j], so

    S0[j] = A0[j],   S1[j] = (A1[j] + D A0[j]) / (1 - (1 - s) D),
    sum_x P0(x) p(y_a..a+j-1 | x) = s S1[j]                                          (S2)

(the geometric series of consecutive deletions in closed form; O(U (m - a) (K + 1)) from a start a for
every end).  The expected edit counts of the base-generated words, each span's weighted by tau[a, b]
(a chart's d log Z / d score(a, b) times the base's share), are the forward-backward of the same graph: the
backward of S1 is (tau s + (1 - s) L[j]) / (1 - (1 - s) D) with L[j] = sum_u phi(u) E(y_j | u) Gu'[u, j + 1, 0]
the launches' backward, that of S0 is D S1'[j] + L[j], and the expected uses of an edge are

    forward(source) * weight * backward(target),                                      (S3)

the deletion edges at j counted from E[j] with S1's backward (the loop's own traversals included, as
forward-backward on a graph with cycles gives them).  Tests:
``tests/chains/test_edit_spans.py`` against enumerating x and every edit sequence.
"""
import numpy as np
from numba import njit

from .edits import fill_weights, lattice_buffers, prefix_likelihoods


@njit(cache=True)
def word_span_work(longest_x, longest, max_insertions):
    """Work arrays of `word_span_likelihoods` for words up to ``longest_x`` symbols and spans up to ``longest``:
    (w, prefix, alpha, exits, scales)."""
    alpha, _, exits, scales = lattice_buffers(longest_x, longest, max_insertions)
    return np.empty((2 * longest_x + 1, longest + 1)), np.empty(longest + 1), alpha, exits, scales


@njit(cache=True)
def word_span_likelihoods(x, y, n_underlying, table, max_insertions, longest, work, out):
    """out[a, b] = p(y_a..y_{b-1} | x) (eq. S1) for 0 <= a <= b <= m, b - a <= ``longest`` (others 0).

    ``table`` is the channel's (2U + 1, B + 1) table in the layout of `edits.edit_cells`; ``work`` from
    `word_span_work`; ``out`` (>= m + 1, >= m + 1).
    """
    n, m = x.shape[0], y.shape[0]
    span = min(longest, n + (n + 1) * max_insertions)   # the longest surface x can have (`edits` notes)
    w, prefix, alpha, exits, scales = work
    for a in range(m + 1):
        out[a, :] = 0.0
        width = min(span, m - a)
        suffix = y[a:a + width]
        fill_weights(x, suffix, n_underlying, table, w)
        prefix_likelihoods(w, n, width, max_insertions, alpha, exits, scales, prefix)
        for j in range(width + 1):
            out[a, a + j] = prefix[j]


@njit(cache=True)
def base_buffers(n_underlying, longest, max_insertions):
    """Work arrays of the base marginal for spans up to ``longest``: (G0, Gu, A0, entry, S1) and the
    backward's (G0', Gu')."""
    width = longest + 1
    return (np.zeros((width, max_insertions + 1)), np.zeros((n_underlying, width, max_insertions + 1)),
            np.zeros(width), np.zeros(width), np.zeros(width),
            np.zeros((width, max_insertions + 1)), np.zeros((n_underlying, width, max_insertions + 1)))


@njit(cache=True)
def _deletion_mass(phones, table):
    """D = sum_u phi(u) E(eps | u)."""
    total = 0.0
    for u in range(phones.shape[0]):
        total += phones[u] * table[u, 0]
    return total


@njit(cache=True)
def _base_forward(y, a, width, stop, phones, table, max_insertions, buffers):
    """The forward of eq. S2 from start a over ``width`` surface symbols: fills G0, Gu, A0, entry and S1."""
    g0, gu, exit0, entry, after = buffers[0], buffers[1], buffers[2], buffers[3], buffers[4]
    U, K = phones.shape[0], max_insertions
    start = 2 * U
    go_on = 1.0 - stop
    deletion = _deletion_mass(phones, table)
    closure = 1.0 / (1.0 - go_on * deletion)
    g0[:width + 1] = 0.0
    gu[:, :width + 1] = 0.0
    g0[0, 0] = 1.0
    for j in range(width + 1):
        a0 = g0[j, K]
        for k in range(K):
            a0 += g0[j, k] * table[start, 0]
        a1 = 0.0
        for u in range(U):
            a1 += gu[u, j, K]
            for k in range(K):
                a1 += gu[u, j, k] * table[U + u, 0]
        exit0[j] = a0
        after[j] = (a1 + deletion * a0) * closure
        entry[j] = a0 + go_on * after[j]
        if j == width:
            break
        outcome = 1 + y[a + j]
        for k in range(K):
            g0[j + 1, k + 1] = g0[j, k] * table[start, outcome]
        for u in range(U):
            gu[u, j + 1, 0] = entry[j] * phones[u] * table[u, outcome]
            for k in range(K):
                gu[u, j + 1, k + 1] = gu[u, j, k] * table[U + u, outcome]


@njit(cache=True)
def base_span_marginals(y, stop, phones, table, max_insertions, longest, buffers, out):
    """out[a, b] = sum_x P0(x) p(y_a..y_{b-1} | x) (eq. S2) for b - a <= ``longest`` (others 0), P0(x) = s (1 -
    s)^(n - 1) prod_i phi(x_i) with s = ``stop`` and phi = ``phones`` (U,); ``buffers`` from `base_buffers`."""
    m = y.shape[0]
    for a in range(m + 1):
        out[a, :] = 0.0
        width = min(longest, m - a)
        _base_forward(y, a, width, stop, phones, table, max_insertions, buffers)
        for j in range(width + 1):
            out[a, a + j] = stop * buffers[4][j]


@njit(cache=True)
def base_span_counts(y, stop, phones, table, max_insertions, longest, buffers, tau, counts):
    """counts += sum_{a, b} tau[a, b] sum_x P0(x) sum over edit sequences of x into y_a..y_{b-1} of their
    probability times their uses of each table cell (eq. S3): with tau = d log Z / d score(a, b) times the
    base's share of the score, the expected edit counts of the base-generated words.  ``counts`` is (2U + 1,
    B + 1) in the channel's layout."""
    g0, gu, _, entry, _, back0, backu = buffers
    m = y.shape[0]
    U, K = phones.shape[0], max_insertions
    start = 2 * U
    go_on = 1.0 - stop
    deletion = _deletion_mass(phones, table)
    closure = 1.0 / (1.0 - go_on * deletion)
    for a in range(m + 1):
        width = min(longest, m - a)
        weighted = False
        for j in range(width + 1):
            weighted = weighted or tau[a, a + j] != 0.0
        if not weighted:
            continue
        _base_forward(y, a, width, stop, phones, table, max_insertions, buffers)
        for j in range(width, -1, -1):
            launch = 0.0
            outcome = 0
            if j < width:
                outcome = 1 + y[a + j]
                for u in range(U):
                    launch += phones[u] * table[u, outcome] * backu[u, j + 1, 0]
            back1 = (tau[a, a + j] * stop + go_on * launch) * closure
            back_start = deletion * back1 + launch
            for u in range(U):
                counts[u, 0] += entry[j] * phones[u] * table[u, 0] * back1
                if j < width:
                    counts[u, outcome] += entry[j] * phones[u] * table[u, outcome] * backu[u, j + 1, 0]
            for u in range(U):
                backu[u, j, K] = back1
                for k in range(K - 1, -1, -1):
                    v = table[U + u, 0] * back1
                    counts[U + u, 0] += gu[u, j, k] * v
                    if j < width:
                        insert = table[U + u, outcome] * backu[u, j + 1, k + 1]
                        counts[U + u, outcome] += gu[u, j, k] * insert
                        v += insert
                    backu[u, j, k] = v
            back0[j, K] = back_start
            for k in range(K - 1, -1, -1):
                v = table[start, 0] * back_start
                counts[start, 0] += g0[j, k] * v
                if j < width:
                    insert = table[start, outcome] * back0[j + 1, k + 1]
                    counts[start, outcome] += g0[j, k] * insert
                    v += insert
                back0[j, k] = v

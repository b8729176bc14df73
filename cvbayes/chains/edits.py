"""The edit lattice of a stochastic edit channel between an underlying string x and a surface string y.

The channel of Lee, O'Donnell and Glass (2015, §3) rewrites each top-level unit of x into zero, one or
more bottom-level units; Ristad and Yianilos (1998) learn such a channel by EM with the alignment
latent.  Our generative story, for x = x_0 .. x_{n-1} over U underlying symbols and y over B surface
symbols, has n + 1 gaps (gap 0 before x_0, gap g after x_{g-1}) and two kinds of Dirichlet rows:

* an *emission* row per underlying symbol u over B + 1 outcomes: outcome 0 deletes u (u -> eps),
  outcome 1 + b substitutes b for it (u -> b, the identity included);
* an *insertion* row per gap owner (the symbol x_{g-1} before the gap, or the start boundary for gap
  0) over B + 1 outcomes: outcome 0 stops the gap, outcome 1 + b inserts b (eps -> b).

Each gap draws from its owner's insertion row until it stops or has inserted ``max_insertions`` = K
symbols, when it stops without a draw: at most K insertions a gap keep the lattice finite, of
(n + 1)(m + 1)(K + 1) nodes, and a pair has an edit sequence only if m <= n + (n + 1) K.  A deleted symbol opens no gap: as in Lee et al.'s three exclusive
operations (substitute u -> b, split u -> b b', delete u -> eps; the split is our K = 1 with the inserted
symbol conditioned on u), a unit either vanishes or is rewritten.  Letting a deleted symbol insert would
give every substitution u -> b a second path, delete u then insert b, and EM and CVI do wander into that
mode (a symbol learned as "always deleted, then re-inserted").  The generative order is gap 0, x_0's
emission, gap 1 (only if x_0 was kept), x_1's emission, ..., gap n.

One pair's edit weights are a matrix ``w`` (2n + 1, m + 1): row i < n holds x_i's emission row
restricted to y (``w[i, 0]`` deletion, ``w[i, 1 + j]`` substitution of y_j), row n + g gap g's insertion
row (``w[n + g, 0]`` stop, ``w[n + g, 1 + j]`` insertion of y_j).  EM, VB and CVI differ only in which
table fills it (the package's shortcut, DESIGN.md); `edit_posteriors` returns the expected number of
uses of each of these edits in the same layout, which a caller scatters into table cells with
`edit_cells`.  Messages are scaled once per gap layer (every path crosses every layer), so no log
space is needed.
"""
import math

import numpy as np
from numba import njit

from ..core.units import max_length

DELETE = -1  # the surface position of a deletion (x_i -> eps) in an alignment
INSERT = -1  # the underlying position of an insertion (eps -> y_j)


@njit(cache=True)
def lattice_buffers(longest_x, longest_y, max_insertions):
    """Work arrays for pairs up to the given lengths: (alpha, beta, exits, scales)."""
    layers = longest_x + 1
    width = longest_y + 1
    return (np.empty((layers, width, max_insertions + 1)), np.empty((layers, width, max_insertions + 1)),
            np.empty((layers, width)), np.empty(layers))


@njit(cache=True)
def edit_cells(x, y, n_underlying, r, c):
    """The table cell (row, outcome) of local edit (r, c) of a pair (module notes): emission rows
    0..U-1, insertion rows U + u for gaps after u and 2U for gap 0."""
    n = x.shape[0]
    outcome = 0 if c == 0 else 1 + y[c - 1]
    if r < n:
        return x[r], outcome
    g = r - n
    return (2 * n_underlying if g == 0 else n_underlying + x[g - 1]), outcome


@njit(cache=True)
def fill_weights(x, y, n_underlying, table, w):
    """w[r, c] = table[edit_cells(r, c)]: the pair's edit weights from a (2U + 1, B + 1) table."""
    n, m = x.shape[0], y.shape[0]
    for r in range(2 * n + 1):
        for c in range(m + 1):
            row, outcome = edit_cells(x, y, n_underlying, r, c)
            w[r, c] = table[row, outcome]


@njit(cache=True)
def scatter_counts(x, y, n_underlying, post, sign, counts, totals):
    """counts[cell] += sign * post[r, c] over a pair's edits (and each row's total in ``totals``)."""
    n, m = x.shape[0], y.shape[0]
    for r in range(2 * n + 1):
        for c in range(m + 1):
            row, outcome = edit_cells(x, y, n_underlying, r, c)
            v = sign * np.float64(post[r, c])
            counts[row, outcome] += v
            totals[row] += v


@njit(cache=True)
def _forward(w, n, m, max_insertions, alpha, exits, scales):
    """Scaled forward messages (the sum over edit paths of Ristad and Yianilos 1998, eq. 6-7, in our
    lattice): alpha[g, j, k] is the mass of the paths in gap g having emitted y_0..y_{j-1} with k
    insertions in it, exits[g, j] the mass that leaves gap g there (with the paths that deleted x_{g-1}
    and so skipped the gap); each layer is divided by its sum scales[g].  Returns the log of the product
    of the scales (-inf when a layer has no mass): exits[n, j] times its exponential is p(y_0..y_{j-1} | x)."""
    K = max_insertions
    log_z = 0.0
    for g in range(n + 1):
        gap = n + g
        for j in range(m + 1):
            for k in range(K + 1):
                alpha[g, j, k] = 0.0
            if g == 0:
                exits[0, j] = 0.0
                alpha[0, j, 0] = 1.0 if j == 0 else 0.0
            else:
                i = g - 1  # x_i is emitted between gap g - 1 and gap g
                exits[g, j] = exits[i, j] * w[i, 0]
                if j > 0:
                    alpha[g, j, 0] = exits[i, j - 1] * w[i, j]
        for k in range(K):
            for j in range(m):
                alpha[g, j + 1, k + 1] += alpha[g, j, k] * w[gap, 1 + j]
        total = 0.0
        for j in range(m + 1):
            v = exits[g, j] + alpha[g, j, K]
            total += exits[g, j] + alpha[g, j, K]
            for k in range(K):
                v += alpha[g, j, k] * w[gap, 0]
                total += alpha[g, j, k]
            exits[g, j] = v
        if total <= 0.0:
            return -np.inf
        scales[g] = total
        inverse = 1.0 / total
        for j in range(m + 1):
            exits[g, j] *= inverse
            for k in range(K + 1):
                alpha[g, j, k] *= inverse
        log_z += math.log(total)
    return log_z


@njit(cache=True)
def _complete(log_scale, exits, n, m):
    """log p(y | x) from `_forward`'s log scale and its last layer (-inf when no path reaches the end)."""
    if log_scale == -np.inf or exits[n, m] <= 0.0:
        return -np.inf
    return log_scale + math.log(exits[n, m])


@njit(cache=True)
def edit_posteriors(w, n, m, max_insertions, alpha, beta, exits, scales, post):
    """Forward-backward over one pair's edit lattice: the E-step of Ristad and Yianilos (1998, §3.2,
    the expectation step of their eq. 8) in the layout of the module notes.

    Parameters
    ----------
    w : (>= 2n + 1, >= m + 1) the pair's edit weights (module notes)
    n, m : the lengths of x and y
    alpha, beta, exits, scales : work arrays of `lattice_buffers`
    post : (>= 2n + 1, >= m + 1) output, the expected number of uses of each edit given y and x

    Returns
    -------
    float
        log p(y | x) under ``w``, -inf when no edit sequence rewrites x into y (``post`` then undefined).
    """
    K = max_insertions
    log_z = _complete(_forward(w, n, m, max_insertions, alpha, exits, scales), exits, n, m)
    if log_z == -np.inf:
        return log_z
    inverse_z = 1.0 / exits[n, m]
    for r in range(2 * n + 1):
        for c in range(m + 1):
            post[r, c] = 0.0
    # beta[g, j, k]: the scaled mass of completing the path from node (g, j, k); beta[g, j, K], where the
    # gap stops without a draw, is also the mass of completing it from leaving gap g at j (`after`)
    for g in range(n, -1, -1):
        gap = n + g
        for j in range(m, -1, -1):
            if g == n:
                after = 1.0 if j == m else 0.0
            else:
                inverse_next = 1.0 / scales[g + 1]
                delete = w[g, 0] * beta[g + 1, j, K]  # x_g deleted: straight out of gap g + 1
                post[g, 0] += exits[g, j] * delete * inverse_next * inverse_z
                after = delete
                if j < m:
                    substitute = w[g, 1 + j] * beta[g + 1, j + 1, 0]
                    post[g, 1 + j] += exits[g, j] * substitute * inverse_next * inverse_z
                    after += substitute
                after *= inverse_next
            beta[g, j, K] = after
            for k in range(K - 1, -1, -1):
                v = w[gap, 0] * after
                post[gap, 0] += alpha[g, j, k] * v * inverse_z
                if j < m:
                    insert = w[gap, 1 + j] * beta[g, j + 1, k + 1]
                    post[gap, 1 + j] += alpha[g, j, k] * insert * inverse_z
                    v += insert
                beta[g, j, k] = v
    return log_z


@njit(cache=True)
def log_likelihood(w, n, m, max_insertions, alpha, exits, scales):
    """log p(y | x) under ``w`` (the forward pass of `edit_posteriors` alone)."""
    return _complete(_forward(w, n, m, max_insertions, alpha, exits, scales), exits, n, m)


@njit(cache=True)
def prefix_likelihoods(w, n, m, max_insertions, alpha, exits, scales, out):
    """out[j] = p(y_0 .. y_{j-1} | x) for j = 0..m from one forward pass: the weights of a prefix of y are the
    first columns of y's, and the forward's last layer at column j, exits[n, j], is the mass of the complete
    edit sequences that have emitted y_0..y_{j-1} (`_forward`)."""
    log_scale = _forward(w, n, m, max_insertions, alpha, exits, scales)
    scale = 0.0 if log_scale == -np.inf else math.exp(log_scale)
    for j in range(m + 1):
        out[j] = exits[n, j] * scale


@njit(cache=True)
def edit_viterbi(w, n, m, max_insertions, alignment):
    """The most probable edit sequence of one pair (the max-product pass of `edit_posteriors`).

    Writes it to ``alignment`` (>= n + m, 2) in the generative order as rows (i, j): a substitution
    x_i -> y_j, (i, DELETE) a deletion of x_i, (INSERT, j) an insertion of y_j.  Returns (log
    probability of that sequence, its number of edits); (-inf, 0) when none exists.  Ties go to the
    deletion before the substitution, and to fewer insertions.
    """
    K = max_insertions
    score = np.full((n + 1, m + 1, K + 1), -np.inf)
    exit_score = np.full((n + 1, m + 1), -np.inf)
    exit_k = np.zeros((n + 1, m + 1), dtype=np.int64)  # insertions of the best way out; -1: x deleted
    with_log = np.full((2 * n + 1, m + 1), -np.inf)
    for r in range(2 * n + 1):
        for c in range(m + 1):
            if w[r, c] > 0.0:
                with_log[r, c] = math.log(w[r, c])
    for g in range(n + 1):
        gap = n + g
        if g == 0:
            score[0, 0, 0] = 0.0
        else:
            for j in range(1, m + 1):
                score[g, j, 0] = exit_score[g - 1, j - 1] + with_log[g - 1, j]
        for k in range(K):
            for j in range(m):
                score[g, j + 1, k + 1] = score[g, j, k] + with_log[gap, 1 + j]
        for j in range(m + 1):
            best, best_k = score[g, j, K], K
            for k in range(K - 1, -1, -1):
                v = score[g, j, k] + with_log[gap, 0]
                if v >= best:
                    best, best_k = v, k
            if g > 0:
                v = exit_score[g - 1, j] + with_log[g - 1, 0]
                if v >= best:
                    best, best_k = v, -1
            exit_score[g, j] = best
            exit_k[g, j] = best_k
    if exit_score[n, m] == -np.inf:
        return -np.inf, 0
    # backtrack from the end, writing the edits in reverse, then reverse them
    count = 0
    j = m
    for g in range(n, -1, -1):
        if exit_k[g, j] < 0:
            alignment[count, 0], alignment[count, 1] = g - 1, DELETE
            count += 1
            continue
        for _ in range(exit_k[g, j]):
            j -= 1
            alignment[count, 0], alignment[count, 1] = INSERT, j
            count += 1
        if g == 0:
            break
        j -= 1
        alignment[count, 0], alignment[count, 1] = g - 1, j
        count += 1
    for a in range(count // 2):
        b = count - 1 - a
        for side in range(2):
            alignment[a, side], alignment[b, side] = alignment[b, side], alignment[a, side]
    return exit_score[n, m], count


def sample_surface(rng, table, x, max_insertions):
    """Draw y from the channel's generative story (module notes) for the underlying ids ``x`` under a
    (2U + 1, B + 1) table of normalised rows; returns (y, its edit sequence in `edit_viterbi`'s rows)."""
    n_underlying = (table.shape[0] - 1) // 2
    y, rows = [], []

    def gap(owner):
        for _ in range(max_insertions):
            outcome = rng.choice(table.shape[1], p=table[owner])
            if outcome == 0:
                return
            rows.append((INSERT, len(y)))
            y.append(outcome - 1)

    gap(2 * n_underlying)
    for i, u in enumerate(x):
        outcome = rng.choice(table.shape[1], p=table[u])
        if outcome == 0:
            rows.append((i, DELETE))
            continue
        rows.append((i, len(y)))
        y.append(outcome - 1)
        gap(n_underlying + u)
    return np.array(y, dtype=np.int64), np.array(rows, dtype=np.int64).reshape(-1, 2)


def best_alignments(x_ids, x_offsets, y_ids, y_offsets, n_underlying, table, max_insertions):
    """`edit_viterbi` of every pair laid end to end (pair p: x_ids[x_offsets[p]:x_offsets[p + 1]], y likewise)
    under the (2U + 1, B + 1) ``table``: per pair an (edits, 2) int array of rows (i, j) in the generative
    order, (i, DELETE) for a deletion of x_i and (INSERT, j) for an insertion of y_j."""
    longest_x, longest_y = max_length(x_offsets), max_length(y_offsets)
    w = np.empty((2 * longest_x + 1, longest_y + 1))
    alignment = np.empty((longest_x + longest_y, 2), dtype=np.int64)
    out = []
    for p in range(x_offsets.shape[0] - 1):
        x = x_ids[x_offsets[p]:x_offsets[p + 1]]
        y = y_ids[y_offsets[p]:y_offsets[p + 1]]
        fill_weights(x, y, n_underlying, table, w)
        _, count = edit_viterbi(w, x.shape[0], y.shape[0], max_insertions, alignment)
        out.append(alignment[:count].copy())
    return out

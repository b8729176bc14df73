"""The edit channel's passes over many (x, y) pairs: the batch E-step of EM and VB, and CVI's update of
one pair against the counts of all others (the lattice itself is `cvbayes.chains.edits`).

Pairs are laid out as flat symbol arrays with offsets (``x_ids``, ``x_offsets``, ``y_ids``,
``y_offsets``); a pair's local statistics, the (2n + 1)(m + 1) expected edit uses of
`edits.edit_posteriors`, start at ``cell_offsets[p]`` of a float32 array.  The global counts are one
(2U + 1, B + 1) table: U emission rows, then U + 1 insertion rows (`edits.edit_cells`).
"""
import numpy as np
from numba import njit

from ..chains.edits import edit_cells, edit_posteriors, fill_weights, lattice_buffers, log_likelihood, scatter_counts
from ..core.rules import mean_cell
from ..core.units import max_length
from ..schedules import leave_one_out


@njit(cache=True)
def _work(x_offsets, y_offsets, max_insertions):
    """(w, post, alpha, beta, exits, scales) for the longest pair of a corpus."""
    longest_x, longest_y = max_length(x_offsets), max_length(y_offsets)
    w = np.empty((2 * longest_x + 1, longest_y + 1))
    return (w, np.empty_like(w), *lattice_buffers(longest_x, longest_y, max_insertions))


@njit(cache=True)
def expected_counts(x_ids, x_offsets, y_ids, y_offsets, cell_offsets, n_underlying, table, max_insertions,
                    counts, local):
    """The E-step of every pair under one table (EM: MAP's, VB: exp E[log theta], thesis eq. 3.16-3.17 and
    3.20-3.22 with the edit lattice as the structure): adds the expected edit counts to ``counts`` and,
    when ``local`` is not empty, keeps each pair's (float32) at ``cell_offsets``.

    Returns (sum of log p(y | x), the first pair no edit sequence explains or -1).
    """
    w, post, alpha, beta, exits, scales = _work(x_offsets, y_offsets, max_insertions)
    totals = np.zeros(counts.shape[0])
    keep = local.shape[0] > 0
    log_evidence = 0.0
    for p in range(x_offsets.shape[0] - 1):
        x, y = x_ids[x_offsets[p]:x_offsets[p + 1]], y_ids[y_offsets[p]:y_offsets[p + 1]]
        n, m = x.shape[0], y.shape[0]
        fill_weights(x, y, n_underlying, table, w)
        log_z = edit_posteriors(w, n, m, max_insertions, alpha, beta, exits, scales, post)
        if log_z == -np.inf:
            return log_evidence, p
        log_evidence += log_z
        if keep:
            mine = local[cell_offsets[p]:cell_offsets[p + 1]].reshape((2 * n + 1, m + 1))
            for r in range(2 * n + 1):
                for c in range(m + 1):
                    mine[r, c] = post[r, c]
            scatter_counts(x, y, n_underlying, mine, 1.0, counts, totals)
        else:
            scatter_counts(x, y, n_underlying, post, 1.0, counts, totals)
    return log_evidence, -1


@njit(cache=True)
def log_likelihoods(x_ids, x_offsets, y_ids, y_offsets, n_underlying, table, max_insertions, out):
    """out[p] = log p(y_p | x_p) under ``table`` (-inf where no edit sequence explains the pair)."""
    w, _, alpha, _, exits, scales = _work(x_offsets, y_offsets, max_insertions)
    for p in range(x_offsets.shape[0] - 1):
        x, y = x_ids[x_offsets[p]:x_offsets[p + 1]], y_ids[y_offsets[p]:y_offsets[p + 1]]
        fill_weights(x, y, n_underlying, table, w)
        out[p] = log_likelihood(w, x.shape[0], y.shape[0], max_insertions, alpha, exits, scales)


def collapsed_state(data, max_insertions, pseudo, counts, totals, local):
    """The state of `cvi_pass`: the layout, the per-row pseudo-count a and prior total A = (B + 1) a
    (``pseudo`` (2U + 1,)), the global counts with their row totals, and the pairs' local statistics."""
    layout = (data.x_ids, data.x_offsets, data.y_ids, data.y_offsets, data.cell_offsets, data.n_underlying,
              max_insertions)
    prior = (pseudo, pseudo * counts.shape[1])
    return layout, prior, (counts, totals, local), _work(data.x_offsets, data.y_offsets, max_insertions)


@njit(cache=True)
def cvi_pair_update(state, p):
    """CVI for one pair, the unit whose edit counts are collapsed (thesis eq. 3.44-3.50 with the edit
    lattice for the chain): the pair's stored expected counts come out of the globals, its edit weights
    are the posterior means of everyone else's counts,

        theta_bar(o | u) = (E[C^{-p}_{u o}] + a_u) / (E[C^{-p}_{u .}] + (B + 1) a_u)      eq. 3.49-3.50,

    forward-backward runs on them and the new expected counts go back in.  Like the thesis's CVI-2
    (eq. 3.47) the weights stay fixed within the pair (no within-pair count corrections).  Returns the
    pair's leave-one-out predictive log p(y | x), -inf when no edit sequence explains it.
    """
    (x_ids, x_offsets, y_ids, y_offsets, cell_offsets, n_underlying, max_insertions), (pseudo, prior_total), \
        (counts, totals, local), (w, post, alpha, beta, exits, scales) = state
    x, y = x_ids[x_offsets[p]:x_offsets[p + 1]], y_ids[y_offsets[p]:y_offsets[p + 1]]
    n, m = x.shape[0], y.shape[0]
    mine = local[cell_offsets[p]:cell_offsets[p + 1]].reshape((2 * n + 1, m + 1))
    scatter_counts(x, y, n_underlying, mine, -1.0, counts, totals)
    for r in range(2 * n + 1):
        for c in range(m + 1):
            row, outcome = edit_cells(x, y, n_underlying, r, c)
            w[r, c] = mean_cell(counts[row, outcome], pseudo[row], totals[row], prior_total[row])
    log_z = edit_posteriors(w, n, m, max_insertions, alpha, beta, exits, scales, post)
    if log_z == -np.inf:
        return log_z
    for r in range(2 * n + 1):
        for c in range(m + 1):
            mine[r, c] = post[r, c]
    scatter_counts(x, y, n_underlying, mine, 1.0, counts, totals)
    return log_z


@njit(cache=True)
def cvi_pass(state, order):
    """One CVI pass over the pairs in ``order``: (objective, first bad pair)."""
    return leave_one_out(cvi_pair_update, state, order)

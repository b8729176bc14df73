"""Collapsed variational updates for the aligners: CVI-1 (token) and CVI-2 (sentence).

Both keep local statistics (the variational posteriors) and global expected
counts equal to their sum, and refresh the globals after every unit:

* translation counts C[slot] with row totals C_f. (alignment/index.py);
* jump-bucket counts N_d (HMM only, alignment/jumps.py).

The surrogate ("posterior mean without the unit") parameters are

    t_bar(e | f) = (C^{-u}_{fe} + beta) / (C^{-u}_{f.} + V_e beta)     eq. 3.50
    theta_bar_d  = (N^{-u}_d + alpha) / (N^{-u}_. + (2M + 1) alpha)     eq. 3.49

Local statistics are stored in float32 and the globals always receive
exactly the stored values, so taking a unit out later removes what it put in.
"""
import math

import numpy as np
from numba import njit

from ..inference.sweeps import max_length
from .batch import collapse_states
from .chain import alignment_buffers, alignment_posteriors
from .jumps import add_bucket_counts, add_outer_bucket_counts, bucket_sizes, jump_matrix


@njit(cache=True)
def translation_mean(counts, totals, slot, row, prior, v_prior):
    """t_bar(e | f) for one slot: (C_fe + beta) / (C_f. + V beta) (eq. 3.50)."""
    return (max(counts[slot], 0.0) + prior) / (max(totals[row], 0.0) + v_prior)


@njit(cache=True)
def jump_mean(jump_counts, jump_prior, out):
    """theta_bar_d = (N_d + alpha) / (N_. + (2M + 1) alpha) (eq. 3.49)."""
    n_buckets = jump_counts.shape[0]
    total = 0.0
    for b in range(n_buckets):
        out[b] = max(jump_counts[b], 0.0) + jump_prior
        total += out[b]
    for b in range(n_buckets):
        out[b] /= total


@njit(cache=True)
def _move_cells(cell_post, first, n_cand, cell_slot, slot_row, counts, totals, sign):
    """Add (sign = 1) or remove (sign = -1) one token's stored cell posteriors."""
    for i in range(n_cand):
        slot = cell_slot[first + i]
        v = sign * np.float64(cell_post[first + i])
        counts[slot] += v
        totals[slot_row[slot]] += v


@njit(cache=True)
def ibm1_cvi1_token(first, n_cand, prior, v_prior, cell_slot, slot_row, counts, totals, cell_post, q):
    """CVI-1 for one IBM1 token: CVB0 (Teh et al. 2007; thesis eq. 3.33 without transitions).

    q(a_j = i) ∝ (E[C^{-j}_{f_i e_j}] + beta) / (E[C^{-j}_{f_i .}] + V beta):
    the leave-one-token-out predictive of e_j from f_i, the uniform 1/(I+1)
    alignment prior cancelling.  Returns the log normaliser
    log(sum_i t_bar(e_j | f_i) / (I + 1)), the token's leave-one-out
    predictive log-probability.
    """
    _move_cells(cell_post, first, n_cand, cell_slot, slot_row, counts, totals, -1.0)
    total = 0.0
    for i in range(n_cand):
        slot = cell_slot[first + i]
        q[i] = translation_mean(counts, totals, slot, slot_row[slot], prior, v_prior)
        total += q[i]
    inv = 1.0 / total
    for i in range(n_cand):
        cell_post[first + i] = q[i] * inv
    _move_cells(cell_post, first, n_cand, cell_slot, slot_row, counts, totals, 1.0)
    return math.log(total / n_cand)


@njit(cache=True)
def ibm1_cvi1_sweep(prior, v_prior, src_offsets, tgt_offsets, cell_offsets, cell_slot, slot_row,
                    counts, totals, cell_post):
    """One CVI-1 pass over every IBM1 token in corpus order; returns the summed log normalisers."""
    q = np.empty(max_length(src_offsets) + 1)
    objective = 0.0
    for s in range(src_offsets.shape[0] - 1):
        n_cand = src_offsets[s + 1] - src_offsets[s] + 1
        for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
            objective += ibm1_cvi1_token(cell_offsets[s] + j * n_cand, n_cand, prior, v_prior, cell_slot,
                                         slot_row, counts, totals, cell_post, q)
    return objective


@njit(cache=True)
def ibm1_cvi2_sweep(prior, v_prior, src_offsets, tgt_offsets, cell_offsets, cell_slot, slot_row,
                    counts, totals, cell_post):
    """One CVI-2 pass for IBM1 (eq. 3.47-3.50 with an order-free alignment model).

    Each sentence pair's expected counts come out, its tokens' posteriors are
    recomputed against t_bar from all other pairs (without the within-pair
    count corrections, as eq. 3.47 drops them), and the counts go back in.
    Returns sum over pairs of log p(e | f) under t_bar (a leave-one-pair-out
    predictive log-likelihood).
    """
    q = np.empty(max_length(src_offsets) + 1)
    objective = 0.0
    for s in range(src_offsets.shape[0] - 1):
        n_cand = src_offsets[s + 1] - src_offsets[s] + 1
        n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
        base = cell_offsets[s]
        for j in range(n_tgt):
            _move_cells(cell_post, base + j * n_cand, n_cand, cell_slot, slot_row, counts, totals, -1.0)
        for j in range(n_tgt):
            first = base + j * n_cand
            total = 0.0
            for i in range(n_cand):
                slot = cell_slot[first + i]
                q[i] = translation_mean(counts, totals, slot, slot_row[slot], prior, v_prior)
                total += q[i]
            objective += math.log(total / n_cand)
            for i in range(n_cand):
                cell_post[first + i] = q[i] / total
        for j in range(n_tgt):
            _move_cells(cell_post, base + j * n_cand, n_cand, cell_slot, slot_row, counts, totals, 1.0)
    return objective


@njit(cache=True)
def _store_buckets(local, stored, jump_counts):
    """stored = local (rounded to float32); jump_counts += the stored values."""
    for b in range(local.shape[0]):
        stored[b] = local[b]
        jump_counts[b] += np.float64(stored[b])


@njit(cache=True)
def hmm_cvi2_sweep(prior, v_prior, jump_prior, p0, max_jump, src_offsets, tgt_offsets, cell_offsets,
                   cell_slot, slot_row, counts, totals, jump_counts, cell_post, jump_local):
    """One CVI-2 pass for the HMM aligner (thesis eq. 3.44-3.50).

    For each sentence pair: take its stored cell posteriors and expected
    bucket counts ``jump_local[s]`` out of the globals, build the surrogate
    t_bar and theta_bar from everyone else's counts (eq. 3.49-3.50), run
    forward-backward on them (eq. 3.48), and put the new expected counts
    back.  Per pair: O(J I^2) for the chain plus O(M) for theta_bar, never
    O(V).

    Returns (objective, first_bad): sum over pairs of log p(e | f) under the
    surrogate parameters (a leave-one-pair-out predictive log-likelihood,
    eq. 3.47) and the first pair no alignment explains (-1 if none).
    """
    n_buckets = jump_counts.shape[0]
    lik, table, alpha, back, weights, gamma, pairs, scale, acc = alignment_buffers(
        max_length(src_offsets), max_length(tgt_offsets))
    theta = np.empty(n_buckets)
    local = np.empty(n_buckets)
    sizes = np.empty((max_length(src_offsets) + 1, n_buckets))
    objective = 0.0
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        n_cand = n_src + 1
        n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
        base = cell_offsets[s]
        for j in range(n_tgt):
            _move_cells(cell_post, base + j * n_cand, n_cand, cell_slot, slot_row, counts, totals, -1.0)
        for b in range(n_buckets):
            jump_counts[b] -= np.float64(jump_local[s, b])
        jump_mean(jump_counts, jump_prior, theta)
        bucket_sizes(n_src, max_jump, sizes)
        jump_matrix(theta, n_src, max_jump, sizes, table)
        for j in range(n_tgt):
            for i in range(n_cand):
                slot = cell_slot[base + j * n_cand + i]
                lik[j, i] = translation_mean(counts, totals, slot, slot_row[slot], prior, v_prior)
        log_z = alignment_posteriors(lik, table, p0, n_src, n_tgt, alpha, back, weights, gamma, pairs, scale, acc)
        if log_z == -np.inf:
            return objective, s
        objective += log_z
        collapse_states(gamma, n_src, n_tgt, cell_post, base)
        for j in range(n_tgt):
            _move_cells(cell_post, base + j * n_cand, n_cand, cell_slot, slot_row, counts, totals, 1.0)
        local[:] = 0.0
        add_bucket_counts(pairs, table, theta, n_src, max_jump, sizes, 1.0, local)
        _store_buckets(local, jump_local[s], jump_counts)
    return objective, -1


@njit(cache=True)
def _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, sign):
    """Add or remove one token's translation counts from its 2I state marginals
    (real i -> cell i, all NULL states -> cell I)."""
    null = 0.0
    for i in range(n_src):
        slot = cell_slot[first + i]
        v = sign * np.float64(state_post[row + i])
        counts[slot] += v
        totals[slot_row[slot]] += v
        null += np.float64(state_post[row + n_src + i])
    slot = cell_slot[first + n_src]
    counts[slot] += sign * null
    totals[slot_row[slot]] += sign * null


@njit(cache=True)
def _transition_buckets(state_post, prev_row, row, n_src, table, theta, max_jump, sizes, left, right, local):
    """Expected bucket counts of the jump into the token at ``row`` under the
    factorised q(a_{j-1}) q(a_j) of CVI-1 (eq. 3.28): the expected number of
    jumps from memory m to real i is (q(a_{j-1} = m) + q(a_{j-1} = NULL m))
    q(a_j = i); prev_row < 0 marks the first token, whose jump starts at -1."""
    left[0] = 1.0 if prev_row < 0 else 0.0
    for m in range(n_src):
        left[m + 1] = 0.0 if prev_row < 0 else (np.float64(state_post[prev_row + m])
                                                + np.float64(state_post[prev_row + n_src + m]))
        right[m] = state_post[row + m]
    local[:] = 0.0
    add_outer_bucket_counts(left, right, table, theta, n_src, max_jump, sizes, local)


@njit(cache=True)
def hmm_cvi1_init(max_jump, src_offsets, tgt_offsets, cell_offsets, state_offsets, cell_slot, slot_row,
                  cell_post, state_post, into, counts, totals):
    """Start CVI-1 for the HMM from per-cell posteriors (IBM1's).

    Real states keep their cell's mass and NULL mass is spread evenly over
    the I NULL states.  Fills ``counts``/``totals`` (zeroed by the caller)
    with exactly what `hmm_cvi1_sweep` will take out, and each token's
    incoming-jump bucket counts ``into[t]`` under the prior mean theta
    (uniform); returns the bucket counts' sum.
    """
    n_buckets = into.shape[1]
    theta = np.full(n_buckets, 1.0 / n_buckets)
    longest = max_length(src_offsets)
    table = np.empty((longest + 1, longest))
    sizes = np.empty((longest + 1, n_buckets))
    left = np.empty(longest + 1)
    right = np.empty(longest)
    local = np.empty(n_buckets)
    jump_counts = np.zeros(n_buckets)
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
        bucket_sizes(n_src, max_jump, sizes)
        jump_matrix(theta, n_src, max_jump, sizes, table)
        for j in range(n_tgt):
            first = cell_offsets[s] + j * (n_src + 1)
            row = state_offsets[s] + j * 2 * n_src
            for i in range(n_src):
                state_post[row + i] = cell_post[first + i]
                state_post[row + n_src + i] = cell_post[first + n_src] / n_src
            _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, 1.0)
            prev_row = row - 2 * n_src if j > 0 else -1
            _transition_buckets(state_post, prev_row, row, n_src, table, theta, max_jump, sizes, left, right, local)
            _store_buckets(local, into[tgt_offsets[s] + j], jump_counts)
    return jump_counts


@njit(cache=True)
def hmm_cvi1_sweep(prior, v_prior, jump_prior, p0, max_jump, src_offsets, tgt_offsets, cell_offsets,
                   state_offsets, cell_slot, slot_row, counts, totals, jump_counts, state_post, into):
    """One CVI-1 pass for the HMM aligner: token-level mean field (thesis eq. 3.28-3.39).

    q(a) = prod_j q(a_j) over the 2I states.  Token j's own contributions
    (its translation counts and the expected bucket counts ``into[j]``,
    ``into[j + 1]`` of the jumps into and out of it) are taken out, and

        q(a_j = s) ∝ F1(s) F2(s) t_bar(e_j | f_s),
        F1(s) = sum_s' q(a_{j-1} = s') T_bar(s' -> s)          (eq. 3.37)
        F2(s) = sum_s'' T_bar(s -> s'') q(a_{j+1} = s'')       (eq. 3.39)

    with T_bar the transition of alignment/chain.py under theta_bar.  As in
    eq. 3.32-3.33, expectations of logs of counts are replaced by logs of
    expected counts, and the expectation over the neighbour is taken inside:
    F1 averages T_bar over q(a_{j-1}) (eq. 3.37's first term).  Two
    simplifications against eq. 3.37-3.39, both O(1 / N) on a jump table
    shared by every pair of the corpus: the counts behind T_bar keep the
    neighbouring jumps (j-2 -> j-1, j+1 -> j+2) at their factorised
    expectations instead of conditioning them on a_{j-1}, a_{j+1}; and the
    delta corrections of eq. 3.25/3.33 (a bucket shared by the jumps into
    and out of j) are dropped.  Translation counts are exact
    leave-one-token-out, as CVB0.  The new q then puts its translation
    counts and the two jumps' factorised bucket counts back.

    Returns (objective, first_bad): the sum of the updates' log normalisers
    (F1 is a distribution, so each is a leave-one-token-out predictive
    log-probability of e_j given its neighbours' alignments) and the first
    pair on which a token had no admissible state (-1 if none).
    """
    n_buckets = jump_counts.shape[0]
    longest = max_length(src_offsets)
    stay = 1.0 - p0
    table = np.empty((longest + 1, longest))
    sizes = np.empty((longest + 1, n_buckets))
    left = np.empty(longest + 1)
    right = np.empty(longest)
    theta = np.empty(n_buckets)
    local = np.empty(n_buckets)
    lik = np.empty(longest + 1)
    f1 = np.empty(2 * longest)
    out = np.empty(longest)
    acc = np.empty(longest)
    q = np.empty(2 * longest)
    objective = 0.0
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
        width = 2 * n_src
        bucket_sizes(n_src, max_jump, sizes)
        for j in range(n_tgt):
            first = cell_offsets[s] + j * (n_src + 1)
            row = state_offsets[s] + j * width
            prev_row = row - width if j > 0 else -1
            next_row = row + width if j + 1 < n_tgt else -1
            t = tgt_offsets[s] + j
            _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, -1.0)
            for b in range(n_buckets):
                jump_counts[b] -= np.float64(into[t, b])
                if next_row >= 0:
                    jump_counts[b] -= np.float64(into[t + 1, b])
            jump_mean(jump_counts, jump_prior, theta)
            jump_matrix(theta, n_src, max_jump, sizes, table)
            for i in range(n_src + 1):
                slot = cell_slot[first + i]
                lik[i] = translation_mean(counts, totals, slot, slot_row[slot], prior, v_prior)
            if prev_row < 0:
                for i in range(n_src):
                    f1[i] = stay * table[0, i]
                    f1[n_src + i] = 0.0
                f1[n_src] = p0
            else:
                for i in range(n_src):
                    acc[i] = 0.0
                for m in range(n_src):
                    r = np.float64(state_post[prev_row + m]) + np.float64(state_post[prev_row + n_src + m])
                    f1[n_src + m] = p0 * r
                    for i in range(n_src):
                        acc[i] += r * table[m + 1, i]
                for i in range(n_src):
                    f1[i] = stay * acc[i]
            for m in range(n_src):
                if next_row < 0:
                    out[m] = 1.0
                else:
                    v = 0.0
                    for i in range(n_src):
                        v += table[m + 1, i] * state_post[next_row + i]
                    out[m] = stay * v + p0 * state_post[next_row + n_src + m]
            total = 0.0
            for i in range(n_src):
                q[i] = f1[i] * out[i] * lik[i]
                q[n_src + i] = f1[n_src + i] * out[i] * lik[n_src]
                total += q[i] + q[n_src + i]
            if not total > 0.0:
                return objective, s
            objective += math.log(total)
            for k in range(width):
                state_post[row + k] = q[k] / total
            _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, 1.0)
            _transition_buckets(state_post, prev_row, row, n_src, table, theta, max_jump, sizes, left, right, local)
            _store_buckets(local, into[t], jump_counts)
            if next_row >= 0:
                _transition_buckets(state_post, row, next_row, n_src, table, theta, max_jump, sizes, left, right, local)
                _store_buckets(local, into[t + 1], jump_counts)
    return objective, -1


@njit(cache=True)
def collapse_state_posteriors(src_offsets, tgt_offsets, cell_offsets, state_offsets, state_post, cell_post):
    """Per-cell posteriors from CVI-1's 2I state marginals (NULL states summed into cell I)."""
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
            first = cell_offsets[s] + j * (n_src + 1)
            row = state_offsets[s] + j * 2 * n_src
            null = 0.0
            for i in range(n_src):
                cell_post[first + i] = state_post[row + i]
                null += np.float64(state_post[row + n_src + i])
            cell_post[first + n_src] = null

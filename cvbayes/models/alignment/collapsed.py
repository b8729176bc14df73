"""The aligners' units for the leave-one-out schedule: CVI-1 updates a target token, CVI-2 a sentence pair.

Both keep local statistics (the variational posteriors, in float32) and global expected counts equal to
their sum (`cvbayes.core.statistics`):

* translation counts C[slot] with row totals C_f. (models/alignment/index.py);
* jump-bucket counts N_d (HMM only, chains/jumps.py).

A unit's update (`cvbayes.schedules.leave_one_out`) takes its statistics out, runs its structure on the
MEAN tables of everything else (`cvbayes.core.rules`),

    t_bar(e | f) = (C^{-u}_{fe} + beta) / (C^{-u}_{f.} + V_e beta)     eq. 3.50
    theta_bar_d  = (N^{-u}_d + alpha) / (N^{-u}_. + (2M + 1) alpha)     eq. 3.49

and puts the new statistics back.  A state is a tuple ``(layout, translation, jumps, buffers)`` (built by
`ibm1_state`, `hmm_pair_state` and `hmm_token_state`):

* layout: ``AlignmentData.layout()``;
* translation: ``(prior, v_prior, cell_slot, slot_row, counts, totals, local)``, ``prior`` and ``v_prior`` the
  pseudo-counts a_fe and row totals A_f of `priors.Pseudocounts` (numbers, or per-entry arrays under a priors
  file; `entry` reads both), ``local`` the per-cell posteriors (CVI-1 on the HMM: ``(state_offsets,
  states)``, its 2I state marginals a token);
* jumps: ``(jump_prior, jump_total, p0, max_jump, jump_counts, local)``, the prior row, its total, and the
  stored bucket counts of every pair (CVI-2) or of the jump into every token (CVI-1);
* buffers: work arrays.
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ...chains.alignment import alignment_buffers, alignment_posteriors, collapse_states
from ...chains.jumps import add_bucket_counts, add_outer_bucket_counts, bucket_sizes, jump_matrix
from ...core.rules import mean_cell, mean_rows
from ...core.statistics import move, move_slots, store
from ...core.units import max_length
from ...schedules import leave_one_out

def entry(values, k):
    """values[k] of a per-entry array, or ``values`` itself when it is one number for every entry."""
    return values[k]


@overload(entry, inline="always")
def _entry(values, k):
    if isinstance(values, types.Array):
        return lambda values, k: values[k]
    return lambda values, k: values


def ibm1_state(data, prior, counts, totals, cells):
    """The state of `ibm1_token_pass` and `ibm1_pair_pass`: per-cell posteriors ``cells`` (float32) whose
    slot and row sums are ``counts`` and ``totals``; ``prior`` the `priors.Pseudocounts`."""
    translation = (prior.slot, prior.row, data.cell_slot, data.slot_row, counts, totals, cells)
    return data.layout(), translation, np.empty(max_length(data.src_offsets) + 1)


def hmm_pair_state(data, prior, null_prob, max_jump, counts, totals, cells, jump_counts, jump_local):
    """The state of `hmm_pair_pass`: as `ibm1_state`, with the bucket counts ``jump_counts`` the sum of
    the pairs' stored ones ``jump_local`` (n_pairs, 2M + 1; float32)."""
    n_buckets = jump_counts.shape[0]
    longest_src = max_length(data.src_offsets)
    translation = (prior.slot, prior.row, data.cell_slot, data.slot_row, counts, totals, cells)
    jumps = (prior.jumps, prior.jump_total, null_prob, max_jump, jump_counts, jump_local)
    buffers = (*alignment_buffers(longest_src, max_length(data.tgt_offsets)), np.empty(n_buckets),
               np.empty(n_buckets), np.empty((longest_src + 1, n_buckets)))
    return data.layout(), translation, jumps, buffers


def state_offsets(data):
    """Where each pair's 2I state marginals a token start in CVI-1's ``states`` array."""
    offsets = np.zeros(data.n_pairs + 1, dtype=np.int64)
    np.cumsum(2 * np.diff(data.src_offsets) * np.diff(data.tgt_offsets), out=offsets[1:])
    return offsets


def hmm_token_state(data, prior, null_prob, max_jump, counts, totals, offsets, states, jump_counts, into):
    """The state of `hmm_token_pass`: the 2I state marginals ``states`` of every token (float32, at
    ``offsets`` = `state_offsets`), their translation sums ``counts``, ``totals``, and the bucket counts
    ``jump_counts`` the sum of the stored counts ``into`` (n_tokens, 2M + 1) of the jump into each token
    (`hmm_cvi1_init` starts them all)."""
    n_buckets = jump_counts.shape[0]
    longest = max_length(data.src_offsets)
    translation = (prior.slot, prior.row, data.cell_slot, data.slot_row, counts, totals, (offsets, states))
    jumps = (prior.jumps, prior.jump_total, null_prob, max_jump, jump_counts, into)
    buffers = (np.empty((longest + 1, longest)), np.empty((longest + 1, n_buckets)), np.empty(longest + 1),
               np.empty(longest), np.empty(n_buckets), np.empty(n_buckets), np.empty(longest + 1),
               np.empty(2 * longest), np.empty(longest), np.empty(longest), np.empty(2 * longest),
               np.full(1, -1, dtype=np.int64))
    return data.layout(), translation, jumps, buffers


@njit(cache=True, inline="always")
def translation_means(counts, totals, cell_slot, slot_row, first, n_cand, prior, v_prior, out):
    """out[i] = t_bar(e | f_i) (eq. 3.50) for the n_cand candidates of one token, whose cells start at
    ``first``, with the pseudo-counts a_fe (``prior``) and row totals A_f (``v_prior``) of `entry`; returns
    their sum."""
    total = 0.0
    for i in range(n_cand):
        slot = cell_slot[first + i]
        row = slot_row[slot]
        out[i] = mean_cell(counts[slot], entry(prior, slot), totals[row], entry(v_prior, row))
        total += out[i]
    return total


@njit(cache=True)
def jump_means(jump_counts, jump_prior, jump_total, theta):
    """theta_bar (eq. 3.49) of the bucket counts: ``jump_prior`` the prior row, ``jump_total`` its sum."""
    mean_rows(jump_counts[np.newaxis, :], jump_prior, jump_total, range(1), theta[np.newaxis, :])


# -- IBM Model 1 ---------------------------------------------------------------------------------


@njit(cache=True)
def ibm1_token_update(state, t):
    """CVI-1 for one IBM1 token: CVB0 (Teh et al. 2007; thesis eq. 3.33 without transitions).

    q(a_j = i) ∝ (E[C^{-j}_{f_i e_j}] + beta) / (E[C^{-j}_{f_i .}] + V beta): the leave-one-token-out
    predictive of e_j from f_i, the uniform 1/(I+1) alignment prior cancelling.  Returns the log
    normaliser log(sum_i t_bar(e_j | f_i) / (I + 1)), the token's leave-one-out predictive log-probability.
    """
    (src_offsets, tgt_offsets, cell_offsets, token_pair), translation, q = state
    prior, v_prior, cell_slot, slot_row, counts, totals, cells = translation
    s = token_pair[t]
    n_cand = src_offsets[s + 1] - src_offsets[s] + 1
    first = cell_offsets[s] + (t - tgt_offsets[s]) * n_cand
    move_slots(counts, totals, cell_slot, slot_row, first, n_cand, cells, -1.0)
    total = translation_means(counts, totals, cell_slot, slot_row, first, n_cand, prior, v_prior, q)
    inv = 1.0 / total
    for i in range(n_cand):
        cells[first + i] = q[i] * inv
    move_slots(counts, totals, cell_slot, slot_row, first, n_cand, cells, 1.0)
    return math.log(total / n_cand)


@njit(cache=True)
def ibm1_pair_update(state, s):
    """CVI-2 for one IBM1 sentence pair (eq. 3.47-3.50 with an order-free alignment model).

    The pair's expected counts come out, its tokens' posteriors are recomputed against t_bar from all
    other pairs (without the within-pair count corrections, as eq. 3.47 drops them), and the counts go
    back in.  Returns log p(e | f) under t_bar (a leave-one-pair-out predictive log-likelihood).
    """
    (src_offsets, tgt_offsets, cell_offsets, _), translation, q = state
    prior, v_prior, cell_slot, slot_row, counts, totals, cells = translation
    n_cand = src_offsets[s + 1] - src_offsets[s] + 1
    n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
    base = cell_offsets[s]
    move_slots(counts, totals, cell_slot, slot_row, base, n_tgt * n_cand, cells, -1.0)
    log_z = 0.0
    for j in range(n_tgt):
        first = base + j * n_cand
        total = translation_means(counts, totals, cell_slot, slot_row, first, n_cand, prior, v_prior, q)
        log_z += math.log(total / n_cand)
        for i in range(n_cand):
            cells[first + i] = q[i] / total
    move_slots(counts, totals, cell_slot, slot_row, base, n_tgt * n_cand, cells, 1.0)
    return log_z


@njit(cache=True)
def ibm1_token_pass(state, order):
    """One CVI-1 pass over the IBM1 tokens in ``order``: (objective, first bad token)."""
    return leave_one_out(ibm1_token_update, state, order)


@njit(cache=True)
def ibm1_pair_pass(state, order):
    """One CVI-2 pass over the IBM1 pairs in ``order``: (objective, first bad pair)."""
    return leave_one_out(ibm1_pair_update, state, order)


# -- the HMM aligner ---------------------------------------------------------------------------------


@njit(cache=True)
def hmm_pair_update(state, s):
    """CVI-2 for one sentence pair of the HMM aligner (thesis eq. 3.44-3.50).

    Takes the pair's stored cell posteriors and expected bucket counts out of the globals, builds t_bar
    and theta_bar from everyone else's counts (eq. 3.49-3.50), runs forward-backward on them (eq. 3.48)
    and puts the new expected counts back.  O(J I^2) for the chain plus O(M) for theta_bar, never O(V).
    Returns log p(e | f) under the surrogate parameters (eq. 3.47), -inf if no alignment explains it.
    """
    (src_offsets, tgt_offsets, cell_offsets, _), translation, jumps, buffers = state
    prior, v_prior, cell_slot, slot_row, counts, totals, cells = translation
    jump_prior, jump_total, p0, max_jump, jump_counts, jump_local = jumps
    lik, table, alpha, back, weights, gamma, pairs, scale, acc, theta, local, sizes = buffers
    n_src = src_offsets[s + 1] - src_offsets[s]
    n_cand = n_src + 1
    n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
    base = cell_offsets[s]
    move_slots(counts, totals, cell_slot, slot_row, base, n_tgt * n_cand, cells, -1.0)
    move(jump_counts, jump_local[s], -1.0)
    jump_means(jump_counts, jump_prior, jump_total, theta)
    bucket_sizes(n_src, max_jump, sizes)
    jump_matrix(theta, n_src, max_jump, sizes, table)
    for j in range(n_tgt):
        translation_means(counts, totals, cell_slot, slot_row, base + j * n_cand, n_cand, prior, v_prior, lik[j])
    log_z = alignment_posteriors(lik, table, p0, n_src, n_tgt, alpha, back, weights, gamma, pairs, scale, acc)
    if log_z == -np.inf:
        return log_z
    collapse_states(gamma, n_src, n_tgt, cells, base)
    move_slots(counts, totals, cell_slot, slot_row, base, n_tgt * n_cand, cells, 1.0)
    local[:] = 0.0
    add_bucket_counts(pairs, table, theta, n_src, max_jump, sizes, 1.0, local)
    store(local, jump_local[s], jump_counts)
    return log_z


@njit(cache=True)
def hmm_pair_pass(state, order):
    """One CVI-2 pass over the HMM aligner's pairs in ``order``: (objective, first bad pair)."""
    return leave_one_out(hmm_pair_update, state, order)


@njit(cache=True)
def _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, sign):
    """Add or remove one token's translation counts from its 2I state marginals at ``row``: real state i
    to cell first + i, and all NULL states, summed in float64, to cell first + I."""
    move_slots(counts, totals, cell_slot[first:], slot_row, 0, n_src, state_post[row:], sign)
    null = 0.0
    for i in range(n_src):
        null += np.float64(state_post[row + n_src + i])
    slot = cell_slot[first + n_src]
    counts[slot] += sign * null
    totals[slot_row[slot]] += sign * null


@njit(cache=True)
def _transition_buckets(state_post, prev_row, row, n_src, table, theta, max_jump, sizes, left, right, local):
    """Expected bucket counts of the jump into the token at ``row`` under the factorised q(a_{j-1}) q(a_j)
    of CVI-1 (eq. 3.28): the expected number of jumps from memory m to real i is (q(a_{j-1} = m) +
    q(a_{j-1} = NULL m)) q(a_j = i); prev_row < 0 marks the first token, whose jump starts at -1."""
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

    Real states keep their cell's mass and NULL mass is spread evenly over the I NULL states.  Fills
    ``counts``/``totals`` (zeroed by the caller) with exactly what `hmm_token_update` will take out, and
    each token's incoming-jump bucket counts ``into[t]`` under the prior mean theta (uniform); returns the
    bucket counts' sum.
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
            store(local, into[tgt_offsets[s] + j], jump_counts)
    return jump_counts


@njit(cache=True)
def hmm_token_update(state, t):
    """CVI-1 for one target token of the HMM aligner: token-level mean field (thesis eq. 3.28-3.39).

    q(a) = prod_j q(a_j) over the 2I states.  Token j's own contributions (its translation counts and the
    expected bucket counts ``into[j]``, ``into[j + 1]`` of the jumps into and out of it) are taken out, and

        q(a_j = s) ∝ F1(s) F2(s) t_bar(e_j | f_s),
        F1(s) = sum_s' q(a_{j-1} = s') T_bar(s' -> s)          (eq. 3.37)
        F2(s) = sum_s'' T_bar(s -> s'') q(a_{j+1} = s'')       (eq. 3.39)

    with T_bar the transition of chains/alignment.py under theta_bar.  As in eq. 3.32-3.33, expectations
    of logs of counts are replaced by logs of expected counts, and the expectation over the neighbour is
    taken inside: F1 averages T_bar over q(a_{j-1}) (eq. 3.37's first term).  Two simplifications against
    eq. 3.37-3.39, both O(1 / N) on a jump table shared by every pair of the corpus: the counts behind
    T_bar keep the neighbouring jumps (j-2 -> j-1, j+1 -> j+2) at their factorised expectations instead of
    conditioning them on a_{j-1}, a_{j+1}; and the delta corrections of eq. 3.25/3.33 (a bucket shared by
    the jumps into and out of j) are dropped.  Translation counts are exact leave-one-token-out, as CVB0.
    The new q then puts its translation counts and the two jumps' factorised bucket counts back.

    Returns the update's log normaliser (F1 is a distribution, so it is a leave-one-token-out predictive
    log-probability of e_j given its neighbours' alignments), -inf if the token has no admissible state.
    """
    (src_offsets, tgt_offsets, cell_offsets, token_pair), translation, jumps, buffers = state
    prior, v_prior, cell_slot, slot_row, counts, totals, (state_offsets, state_post) = translation
    jump_prior, jump_total, p0, max_jump, jump_counts, into = jumps
    table, sizes, left, right, theta, local, lik, f1, out, acc, q, sized = buffers
    stay = 1.0 - p0
    s = token_pair[t]
    n_src = src_offsets[s + 1] - src_offsets[s]
    n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
    width = 2 * n_src
    j = t - tgt_offsets[s]
    if sized[0] != s:
        bucket_sizes(n_src, max_jump, sizes)
        sized[0] = s
    first = cell_offsets[s] + j * (n_src + 1)
    row = state_offsets[s] + j * width
    prev_row = row - width if j > 0 else -1
    next_row = row + width if j + 1 < n_tgt else -1
    _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, -1.0)
    move(jump_counts, into[t], -1.0)
    if next_row >= 0:
        move(jump_counts, into[t + 1], -1.0)
    jump_means(jump_counts, jump_prior, jump_total, theta)
    jump_matrix(theta, n_src, max_jump, sizes, table)
    translation_means(counts, totals, cell_slot, slot_row, first, n_src + 1, prior, v_prior, lik)
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
        return -np.inf
    for k in range(width):
        state_post[row + k] = q[k] / total
    _move_states(state_post, row, n_src, first, cell_slot, slot_row, counts, totals, 1.0)
    _transition_buckets(state_post, prev_row, row, n_src, table, theta, max_jump, sizes, left, right, local)
    store(local, into[t], jump_counts)
    if next_row >= 0:
        _transition_buckets(state_post, row, next_row, n_src, table, theta, max_jump, sizes, left, right, local)
        store(local, into[t + 1], jump_counts)
    return math.log(total)


@njit(cache=True)
def hmm_token_pass(state, order):
    """One CVI-1 pass over the HMM aligner's tokens in ``order``: (objective, first bad token)."""
    return leave_one_out(hmm_token_update, state, order)


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

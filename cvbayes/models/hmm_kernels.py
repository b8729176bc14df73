"""The HMM's numba bindings to the schedules of `cvbayes.schedules` (thesis §3.3-3.7).

Each binding is the HMM's part of one schedule; the schedule owns the loop:

* `batch_expectations`: the E-step of EM and VB (schedules.batch, eq. 3.13-3.17), and
  `chain_expectations`, the minibatch E-step of SVI and SCVI (schedules.stochastic, eq. 3.98-3.104),
  in parallel over chunks of chains under one table;
* `update_subchain`: CVI's unit update (schedules.leave_one_out) for CVI-2 (the unit a sequence,
  eq. 3.47-3.50) and CVI-3 (a subchain, guarded by its neighbours' boundary beliefs, eq. 3.56-3.82):
  one update, whose units differ only in having neighbours;
* `update_token`: CVI-1's unit update, token-level mean field (eq. 3.33-3.39);
* `resample_token`: collapsed Gibbs' site update (schedules.gibbs, eq. 3.25).

Every parameter table they run on comes from the rules of `cvbayes.core.rules`: MEAN rows of the
counts of everything but the unit for the collapsed updates (``mean_rows``, ``mean_cell``, the
family's predictive rows), the tables the caller built for the others.

The HDP-HMM (thesis §5.3) uses the same updates: the transition prior is a row a_k with a
denominator total A (sigma G[pi_k] and sigma, eq. 5.38), and its occupancy strategy (models/hdp.py)
hands `update_subchain` the running products prod_i q(C^i = 0) of eq. 5.46 its table counts need
(`chains.occupancy.multiply_no_transition`); the finite HMM's state has None there, and numba compiles
its update without them.  The minibatch E-step `chain_expectations` takes the method code
NO_OCCUPANCY for the finite HMM.

Statistics: ``start_counts`` (K,), ``trans_counts`` (K, K), ``trans_rows`` (K,) = the row sums of
trans_counts (the C_{j,.} of eq. 3.8, which differ from the emission totals because a sequence's
last state has no successor), and the family table ``stats`` (S, K) of families/ops.py.  The
collapsed updates keep each unit's local statistics in float32 and move exactly the rounded values
in and out of the global counts (`cvbayes.core.statistics`), so that taking a unit out later
removes what it put in.
"""
import math
import numpy as np
from numba import njit, prange

from ..chains.forward_backward import (FAST, add_pair_outer, chain_buffers, chain_marginals,
                                       fill_rows_from_table, mat_vec, table_forward_backward, vec_mat)
from ..chains.guarded import add_left_guard_pairs, add_right_guard_pairs, guard_end, guard_start
from ..chains.occupancy import multiply_no_transition
from ..core.rules import mean_cell, mean_rows, mean_weight
from ..core.sampling import draw
from ..core.statistics import move, store
from ..core.units import first_bad, max_length, parallel_over_chunks
from ..families.ops import add_token_state, add_token_stats, predictive_rows
from ..schedules import gibbs, leave_one_out

NO_OCCUPANCY = -1

# How a minibatch unit's chain starts (eq. 3.98 and its subchain variants)
START_ROW = 0     # the sequence's own first token: the start row theta_0
STATIONARY = 1    # mid-sequence, no guard: the stationary distribution of the chain
GUARDED = 2       # SCVI-3: the message from the left guard's belief (eq. 3.77, 3.79)


# The kernels' state is a plain tuple: numba's on-disk cache pickles the argument types of every
# compiled signature, and a tuple of arrays and scalars names no Python class that a later edit could
# rename.
#
# emissions = (family code, the family's `prior_array`, the tag dictionary mask (W, K) ((0, K) when
#     unused), index, features): the emission side of every kernel.
#
# Subchains, the state of `update_subchain` (`subchain_state` builds it):
#     (emissions, trans_prior (K,), trans_prior_total, offsets of the units (a sequence, or a piece of
#     one), is_first (the unit starts a sequence), start_counts, trans_counts, stats, marginals (N, K)
#     float32, internal_pairs (I, K, K) float32 (each unit's internal transitions), boundary_pairs
#     (I, K, K) float32 (the transition into each unit from its left neighbour; (0, K, K) when no unit
#     has one), work (`subchain_workspace`), occupancy (None for the finite HMM; the HDP-HMM's
#     (q(C = 0) products, method code, n_samples, seed)))
#
# Tokens, the state of `update_token` and `resample_token` (`token_state` builds it):
#     (emissions, alpha (the finite HMM's symmetric prior), offsets of the sequences, sequence_of
#     (every token's sequence), start_counts, trans_counts, trans_rows, stats, local (the token
#     marginals (N, K) float32 of CVI-1, or the states (N,) of CGS), work (`token_workspace`: separate
#     arrays, which the compiler keeps apart better than rows of one))


def subchain_state(emissions, trans_prior, trans_prior_total, offsets, is_first, start_counts, trans_counts, stats,
                   marginals, internal_pairs, boundary_pairs, work, occupancy=None):
    """The state tuple of `update_subchain` (layout above)."""
    return (emissions, trans_prior, float(trans_prior_total), offsets, is_first, start_counts, trans_counts, stats,
            marginals, internal_pairs, boundary_pairs, work, occupancy)


def token_state(emissions, alpha, offsets, sequence_of, start_counts, trans_counts, trans_rows, stats, local,
                work):
    """The state tuple of `update_token` and `resample_token` (layout above)."""
    return (emissions, float(alpha), offsets, sequence_of, start_counts, trans_counts, trans_rows, stats, local,
            work)


def subchain_workspace(offsets, n_states):
    """Work rows of `update_subchain`: chain buffers, the pair block, the guards' counts, the start
    row, the end vector, the surrogate transitions, the rows a unit leaves, and every row's index."""
    longest = int(max_length(offsets))
    return (*chain_buffers(longest, n_states), np.empty((n_states, n_states)), np.empty((n_states, n_states)),
            np.empty((n_states, n_states)), np.empty((1, n_states)), np.empty(n_states),
            np.zeros((n_states, n_states)), np.empty(n_states, dtype=np.bool_), np.arange(n_states))


@njit(cache=True)
def _transition_sources(mask, index, begin, end, is_source):
    """The states a chain on tokens begin..end-1 can leave: every state, or under a tag dictionary
    those allowed before the last token (only their rows of the counts change)."""
    use_mask = mask.shape[0] > 0
    is_source[:] = not use_mask
    if use_mask:
        for t in range(begin, end - 1):
            for k in range(is_source.shape[0]):
                if mask[index[t], k] != 0.0:
                    is_source[k] = True
    return np.flatnonzero(is_source)


@njit(cache=True, fastmath=FAST)
def _without(counts, internal, boundary, use_boundary, out):
    """out = counts - internal - (boundary if use_boundary): C^{\\i} minus one more subchain."""
    n_states = counts.shape[0]
    for j in range(n_states):
        for k in range(n_states):
            v = counts[j, k] - internal[j, k]
            if use_boundary:
                v -= boundary[j, k]
            out[j, k] = v


@njit(cache=True, fastmath=FAST)
def _chain_occupancy(occupancy, i, fwd, bwd, gamma, trans_bar, n_steps, is_first, has_right, index, begin):
    """The HDP-HMM's q(C^i = 0) products of unit i's chain, by its method (chains/occupancy.py); nothing
    for the finite HMM, whose ``occupancy`` is None (numba prunes the branch at compile time)."""
    if occupancy is None:
        return
    zero, method, n_samples, seed = occupancy
    multiply_no_transition(method, n_samples, seed + i, fwd, bwd, gamma, trans_bar, n_steps, is_first, has_right,
                           index, begin, zero)


@njit(cache=True, fastmath=FAST)
def _guard_occupancy(occupancy, guard_pairs):
    """The HDP-HMM's heuristic q(C = 0) of a left boundary pair: prod (1 - pair); nothing for the finite HMM."""
    if occupancy is None:
        return
    zero_pairs = occupancy[0][1]
    for j in range(zero_pairs.shape[0]):
        for k in range(zero_pairs.shape[1]):
            zero_pairs[j, k] *= 1.0 - guard_pairs[j, k]


@njit(cache=True, fastmath=FAST)
def update_subchain(state, i):
    """CVI-2 / CVI-3 on unit i (eq. 3.47-3.50, 3.56-3.82); returns its log normaliser.

    Take the unit's tokens, internal transitions and both boundary transitions out of the global
    counts (C^{\\i}, eq. 3.49, 3.57); form the MEAN tables theta_bar, phi_bar (eq. 3.49-3.50,
    3.63-3.64); start the chain from the start row, or, with a left neighbour, from the guard
    message of its last marginal under C^{\\i-1,i}, and end it, with a right neighbour, with the
    guard message of its first marginal under C^{\\i,i+1} (eq. 3.72-3.80, chains/guarded.py); run
    forward-backward; and put the new statistics back, the guards' pairs included (eq. 3.82).

    The log normaliser is a predictive log-probability of the unit's tokens (and its right guard):
    CVI-2's leave-one-sequence-out term of eq. 3.47.  For the HDP-HMM, the occupancy's products receive
    the unit's q(C^i = 0) by its method, its left boundary pair by the heuristic.
    """
    ((family, prior, mask, index, features), trans_prior, trans_prior_total, offsets, is_first, start_counts,
     trans_counts, stats, marginals, internal, boundary, work, occupancy) = state
    begin = offsets[i]
    end = offsets[i + 1]
    n_steps = end - begin
    if n_steps == 0:
        return 0.0
    n_units = offsets.shape[0] - 1
    lik, fwd, bwd, gamma, outer, left_counts, right_counts, start, end_vector, trans_bar, is_source, every_row = work
    n_states = start_counts.shape[0]
    has_left = not is_first[i]
    has_right = i + 1 < n_units and not is_first[i + 1]
    # the rows of the surrogate transitions the chain can use (guards reach every row)
    sources = every_row if has_left or has_right else _transition_sources(mask, index, begin, end, is_source)
    # C^{\i} (eq. 3.49, 3.56-3.57)
    if is_first[i]:
        move(start_counts, marginals[begin], -1.0)
    for t in range(begin, end):
        add_token_stats(family, stats, index, features, t, marginals[t], -1.0)
    # (the rows of states the unit cannot leave hold zeros: moving whole blocks is exact and faster)
    move(trans_counts, internal[i], -1.0)
    if has_left:
        move(trans_counts, boundary[i], -1.0)
    if has_right:
        move(trans_counts, boundary[i + 1], -1.0)
    mean_rows(trans_counts, trans_prior, trans_prior_total, sources, trans_bar)
    log_scale = predictive_rows(family, stats, prior, index, features, begin, end, mask, lik)
    if log_scale == -np.inf:
        return -np.inf
    if has_left:
        # C^{\i-1,i}: subchain i-1's internal and left boundary transitions also go
        _without(trans_counts, internal[i - 1], boundary[i - 1], not is_first[i - 1], left_counts)
        guard_start(marginals[begin - 1], left_counts, trans_prior, start[0])
    else:
        mean_rows(start_counts.reshape((1, n_states)), trans_prior, trans_prior_total, every_row[:1], start)
    if has_right:
        # C^{\i,i+1}: subchain i+1's internal and right boundary transitions also go
        _without(trans_counts, internal[i + 1], boundary[min(i + 2, n_units - 1)],
                 i + 2 < n_units and not is_first[i + 2], right_counts)
        guard_end(right_counts, marginals[end], trans_prior, trans_prior_total, end_vector)
        for k in range(n_states):
            lik[n_steps - 1, k] *= end_vector[k]
    log_z = chain_marginals(start[0], trans_bar, lik, n_steps, fwd, bwd, gamma)
    if log_z == -np.inf:
        return -np.inf
    # the new local statistics, back into the global counts
    for t in range(n_steps):
        for k in range(n_states):
            marginals[begin + t, k] = gamma[t, k]
        add_token_stats(family, stats, index, features, begin + t, marginals[begin + t], 1.0)
    if is_first[i]:
        move(start_counts, marginals[begin], 1.0)
    outer[:, :] = 0.0
    add_pair_outer(fwd, bwd, 1, n_steps, outer)
    outer *= trans_bar
    store(outer, internal[i], trans_counts)
    _chain_occupancy(occupancy, i, fwd, bwd, gamma, trans_bar, n_steps, is_first[i], has_right, index, begin)
    if has_left:
        outer[:, :] = 0.0
        add_left_guard_pairs(marginals[begin - 1], left_counts, trans_prior, gamma[0], 1.0, outer)
        store(outer, boundary[i], trans_counts)
        _guard_occupancy(occupancy, outer)
    if has_right:
        outer[:, :] = 0.0
        add_right_guard_pairs(right_counts, marginals[end], trans_prior, gamma[n_steps - 1], 1.0, outer)
        store(outer, boundary[i + 1], trans_counts)
    return log_z + log_scale


@njit(cache=True, nogil=True)
def subchain_pass(state, order):
    """One CVI-2 / CVI-3 pass over the units in ``order``: (objective, first bad unit or -1).  Without the
    GIL, so that the shards of one process (`hmm_shards`) run it on threads at once."""
    return leave_one_out(update_subchain, state, order)


def token_workspace(n_states):
    """Work rows of the token updates: the emission row (1, K), then eight K-rows."""
    return np.zeros((9, n_states))


@njit(cache=True, fastmath=FAST)
def update_token(state, pos):
    """CVI-1 on token ``pos``: q(z_t = k) ∝ F1(k) F2(k) phi_bar(k) (eq. 3.33); returns the log
    normaliser (a leave-one-token-out predictive log-probability).

    With p = old q(z_t), r = q(z_{t-1}), r2 = q(z_{t-2}), n = q(z_{t+1}), n2 = q(z_{t+2}) and G the
    global expected transition counts, the expected counts without the token's transitions are

    F1(k) = sum_j r_j G_jk - r_k <r, r2> - p_k <r, r> - n_k <r, p> + r2_k r_k    (eq. 3.37-3.38)
    F2(k) = sum_l G_kl n_l - r_k <n, p> - p_k <n, n> - n_k <n, n2> + n_k n2_k + r_k n_k  (eq. 3.39)

    (the subtracted products are the local transitions t-2..t+1 that E[C^{-t-1,t}] must exclude,
    the added ones the "one contribution" terms of eq. 3.37/3.39 and the delta terms of eq. 3.25),
    and the factors are MEAN cells: F1 of the expected row into z_t (normalised over k, which leaves
    q(z_t) alone but makes the normaliser a predictive), F2 of the row out of z_t with the total
    G_k. - p_k.  At t = 1 the first factor uses the start counts; at t = T there is no F2.
    """
    (family, prior, mask, index, features), alpha, offsets, sequence_of, start_counts, trans_counts, trans_rows, \
        stats, marginals, work = state
    n_states = trans_counts.shape[0]
    k_alpha = n_states * alpha
    begin = offsets[sequence_of[pos]]
    end = offsets[sequence_of[pos] + 1]
    lik = work[:1]
    p, q, r, r2, nx, n2, into, out_of = work[1], work[2], work[3], work[4], work[5], work[6], work[7], work[8]
    has_prev = pos > begin
    has_next = pos < end - 1
    for k in range(n_states):
        p[k] = marginals[pos, k]
        r[k] = marginals[pos - 1, k] if has_prev else 0.0
        r2[k] = marginals[pos - 2, k] if pos > begin + 1 else 0.0
        nx[k] = marginals[pos + 1, k] if has_next else 0.0
        n2[k] = marginals[pos + 2, k] if pos < end - 2 else 0.0
    add_token_stats(family, stats, index, features, pos, p, -1.0)
    log_scale = predictive_rows(family, stats, prior, index, features, pos, pos + 1, mask, lik)
    if log_scale == -np.inf:
        return -np.inf
    r_r2 = 0.0
    r_r = 0.0
    r_p = 0.0
    n_p = 0.0
    n_n = 0.0
    n_n2 = 0.0
    for k in range(n_states):
        r_r2 += r[k] * r2[k]
        r_r += r[k] * r[k]
        r_p += r[k] * p[k]
        n_p += nx[k] * p[k]
        n_n += nx[k] * nx[k]
        n_n2 += nx[k] * n2[k]
    if has_prev:
        vec_mat(r, trans_counts, into)
    if has_next:
        mat_vec(trans_counts, nx, out_of, lik[0])
    into_total = 0.0
    for k in range(n_states):
        if has_prev:
            q[k] = into[k] - r[k] * r_r2 - p[k] * r_r - nx[k] * r_p + r2[k] * r[k]
        else:
            q[k] = start_counts[k] - p[k]
        into_total += max(q[k], 0.0)
    total = 0.0
    for k in range(n_states):
        v = mean_cell(q[k], alpha, into_total, k_alpha)
        if has_next:
            f2 = out_of[k] - r[k] * n_p - p[k] * n_n - nx[k] * n_n2 + nx[k] * n2[k] + r[k] * nx[k]
            v *= mean_cell(f2, alpha, trans_rows[k] - p[k], k_alpha)
        v *= lik[0, k]
        q[k] = v
        total += v
    if not total > 0.0:
        return -np.inf
    for k in range(n_states):
        q[k] = np.float32(q[k] / total)
    if has_prev:
        for j in range(n_states):
            if r[j] == 0.0:
                continue
            for k in range(n_states):
                trans_counts[j, k] += r[j] * (q[k] - p[k])
    else:
        for k in range(n_states):
            start_counts[k] += q[k] - p[k]
    if has_next:
        for j in range(n_states):
            d = q[j] - p[j]
            if d == 0.0:
                continue
            trans_rows[j] += d
            for k in range(n_states):
                trans_counts[j, k] += d * nx[k]
    for k in range(n_states):
        marginals[pos, k] = q[k]
    add_token_stats(family, stats, index, features, pos, q, 1.0)
    return math.log(total) + log_scale


@njit(cache=True)
def token_pass(state, order):
    """One CVI-1 pass over the tokens in ``order``: (objective, first bad token or -1)."""
    return leave_one_out(update_token, state, order)


@njit(cache=True, inline="always")
def _move_token(family, index, features, stats, start_counts, trans_counts, trans_rows, pos, z, zp, zn, sign):
    """Add (sign 1) or remove (-1) token ``pos`` in state z, between states zp and zn (-1: none)."""
    add_token_state(family, stats, index, features, pos, z, sign)
    if zp >= 0:
        trans_counts[zp, z] += sign
        trans_rows[zp] += sign
    else:
        start_counts[z] += sign
    if zn >= 0:
        trans_counts[z, zn] += sign
        trans_rows[z] += sign


@njit(cache=True)
def resample_token(state, pos, power):
    """Collapsed Gibbs on token ``pos`` (eq. 3.25): z_t from the MEAN predictive of every other
    token's counts, p(z_t = k | z^{-t}) ∝ theta_bar(z_{t-1}, k) theta_bar(k, z_{t+1}) phi_bar_k(x_t),
    the second cell counting the transition into z_t when both are k; tempered by ``power``.  The
    first cell's normaliser does not depend on k, so its weight (C + alpha) is enough for the draw.
    Returns False when no state can emit the token."""
    (family, prior, mask, index, features), alpha, offsets, sequence_of, start_counts, trans_counts, trans_rows, \
        stats, states, work = state
    n_states = start_counts.shape[0]
    k_alpha = n_states * alpha
    zp = states[pos - 1] if pos > offsets[sequence_of[pos]] else -1
    zn = states[pos + 1] if pos < offsets[sequence_of[pos] + 1] - 1 else -1
    _move_token(family, index, features, stats, start_counts, trans_counts, trans_rows, pos, states[pos], zp, zn, -1.0)
    lik, weights = work[:1], work[1]
    if predictive_rows(family, stats, prior, index, features, pos, pos + 1, mask, lik) == -np.inf:
        return False
    for k in range(n_states):
        v = mean_weight(trans_counts[zp, k] if zp >= 0 else start_counts[k], alpha)
        if zn >= 0:
            into_same = 1.0 if k == zp else 0.0
            v *= mean_cell(trans_counts[k, zn] + (into_same if k == zn else 0.0), alpha, trans_rows[k] + into_same,
                           k_alpha)
        weights[k] = v * lik[0, k]
    z = draw(weights, n_states, power)
    states[pos] = z
    _move_token(family, index, features, stats, start_counts, trans_counts, trans_rows, pos, z, zp, zn, 1.0)
    return True


@njit(cache=True)
def gibbs_pass(state, order, power):
    """One collapsed Gibbs sweep over the tokens in ``order``: the first token that could not be
    drawn, or -1."""
    return gibbs(resample_token, state, order, power)


# -- starting statistics ------------------------------------------------------------------------


@njit(cache=True)
def factorised_transitions(offsets, marginals):
    """Start and transition counts under a factorised q(z) = prod_t q(z_t) (CVI-1)."""
    n_states = marginals.shape[1]
    start_counts = np.zeros(n_states)
    trans_counts = np.zeros((n_states, n_states))
    for i in range(offsets.shape[0] - 1):
        begin = offsets[i]
        end = offsets[i + 1]
        if end == begin:
            continue
        for k in range(n_states):
            start_counts[k] += marginals[begin, k]
        for t in range(begin + 1, end):
            for j in range(n_states):
                a = np.float64(marginals[t - 1, j])
                for k in range(n_states):
                    trans_counts[j, k] += a * np.float64(marginals[t, k])
    return start_counts, trans_counts


@njit(cache=True)
def hard_transitions(offsets, states, n_states):
    """Start counts, transition counts and their row sums of a hard state assignment (CGS)."""
    start_counts = np.zeros(n_states)
    trans_counts = np.zeros((n_states, n_states))
    trans_rows = np.zeros(n_states)
    for i in range(offsets.shape[0] - 1):
        for pos in range(offsets[i], offsets[i + 1]):
            if pos == offsets[i]:
                start_counts[states[pos]] += 1.0
            else:
                trans_counts[states[pos - 1], states[pos]] += 1.0
                trans_rows[states[pos - 1]] += 1.0
    return start_counts, trans_counts, trans_rows


@njit(cache=True)
def unit_totals(offsets, is_first, marginals, internal_pairs, boundary_pairs):
    """Global start and transition counts from the stored local statistics of CVI-2 / CVI-3."""
    n_states = marginals.shape[1]
    start_counts = np.zeros(n_states)
    trans_counts = np.zeros((n_states, n_states))
    for i in range(offsets.shape[0] - 1):
        if offsets[i + 1] == offsets[i]:
            continue
        if is_first[i]:
            move(start_counts, marginals[offsets[i]], 1.0)
        move(trans_counts, internal_pairs[i], 1.0)
        if not is_first[i]:
            move(trans_counts, boundary_pairs[i], 1.0)
    return start_counts, trans_counts


@njit(cache=True)
def independent_boundaries(offsets, is_first, marginals, boundary_pairs):
    """boundary_pairs[i] = q(last state of i-1) (x) q(first state of i), the pair counts of
    neighbouring subchains under q(z) = prod_i q(z^i) (eq. 3.58): CVI-3's start from
    per-subchain local posteriors."""
    n_states = marginals.shape[1]
    for i in range(offsets.shape[0] - 1):
        if is_first[i] or offsets[i + 1] == offsets[i]:
            continue
        before = marginals[offsets[i] - 1]
        after = marginals[offsets[i]]
        for j in range(n_states):
            for k in range(n_states):
                boundary_pairs[i, j, k] = before[j] * after[k]


# -- the E-step of EM, VB, SVI and SCVI ----------------------------------------------------------


@njit(cache=True)
def _chunk_sums(n_chunks, n_states, n_stats):
    """One row a thread's chunk of the E-steps' sums: start counts, pair blocks, family statistics,
    log Z, and the chunk's first bad chain."""
    return (np.zeros((n_chunks, n_states)), np.zeros((n_chunks, n_states, n_states)),
            np.zeros((n_chunks, n_stats, n_states)), np.zeros(n_chunks), np.full(n_chunks, -1, dtype=np.int64))


@parallel_over_chunks()
def batch_expectations(emissions, start, trans, table, table_log_offset, offsets, chunk_bounds, n_stats):
    """Expected counts of all sequences under one parameter table: the E-step of EM and VB
    (eq. 3.13-3.17).  `chain_expectations` does the same with subchains, buffers and guards; this
    plain kernel is kept because it runs 20-25 % faster on whole sequences.

    Returns (start_counts, trans_counts, stats, log_evidence, first_bad): log_evidence = sum_i
    log Z_i, first_bad the first sequence with zero probability (-1 if none).
    """
    family, _, mask, index, features = emissions
    n_states = start.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(offsets)
    start_acc, outer_acc, stats_acc, log_z_acc, bad_acc = _chunk_sums(n_chunks, n_states, n_stats)
    for c in prange(n_chunks):
        lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = offsets[i]
            end = offsets[i + 1]
            if end == begin:
                continue
            log_z = table_forward_backward(start, trans, table, table_log_offset, mask, index, begin, end, lik, fwd,
                                           bwd, gamma, outer_acc[c])
            if log_z == -np.inf:
                if bad_acc[c] < 0:
                    bad_acc[c] = i
                continue
            log_z_acc[c] += log_z
            for k in range(n_states):
                start_acc[c, k] += gamma[0, k]
            for t in range(end - begin):
                add_token_stats(family, stats_acc[c], index, features, begin + t, gamma[t], 1.0)
    pair = outer_acc.sum(axis=0) * trans
    return start_acc.sum(axis=0), pair, stats_acc.sum(axis=0), log_z_acc.sum(), first_bad(bad_acc)


@parallel_over_chunks()
def chain_expectations(emissions, start_row, stationary, trans, guard_counts, trans_prior, trans_prior_total,
                       table, table_log_offset, chain_offsets, own_begin, own_end, start_kind, right_guarded,
                       left_beliefs, right_beliefs, n_stats, chunk_bounds, out_edges, occupancy, n_samples, seed,
                       n_emission_rows):
    """Expected counts of a minibatch of units under one set of tables: the E-step of SVI and SCVI
    (eq. 3.98-3.100).

    Unit u's chain is the tokens chain_offsets[u]..chain_offsets[u+1] (its own tokens
    own_begin[u]..own_end[u] plus any SVI buffer).  It starts from ``start_row``, ``stationary`` or
    the guard message of ``left_beliefs[u]`` (start_kind), and when ``right_guarded[u]`` ends with
    the guard factor of ``right_beliefs[u]`` (eq. 3.75-3.76, 3.78).  Only the unit's own tokens and
    the transitions into them are counted: the start row when the chain starts the sequence, the
    left guard pair (eq. 3.82), the buffer's last transition into the first own token, and the
    internal transitions.  In parallel over chunks of units.

    With an ``occupancy`` method (the HDP-HMM's SCVI), the units' q(C^B = 0) products of eq. 5.46
    come back too (guard pairs by the heuristic); units then must have no buffer.  With
    ``n_emission_rows`` > 0 (categorical emissions, learning beta tau of §5.5.3) so do
    prod_t (1 - q(z_t = k)) over the tokens of every row of ``index``, the minibatch's words.

    Returns (start_counts, trans_counts, stats, sum of log Z, first bad unit or -1, (zero start,
    zero pairs, zero exits, zero emissions (n_emission_rows, K))) and writes q(first own token),
    q(last own token) to out_edges[u].
    """
    family, _, mask, index, features = emissions
    n_states = trans.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(chain_offsets)
    start_acc, outer_acc, stats_acc, log_z_acc, bad_acc = _chunk_sums(n_chunks, n_states, n_stats)
    guard_acc = np.zeros((n_chunks, n_states, n_states))
    with_zero = occupancy != NO_OCCUPANCY
    n_zero = n_chunks if with_zero else 0
    zero_start_acc = np.ones((n_zero, n_states))
    zero_pairs_acc = np.ones((n_zero, n_states, n_states))
    zero_exits_acc = np.ones((n_zero, n_states))
    zero_emissions_acc = np.ones((n_zero, n_emission_rows, n_states))
    for c in prange(n_chunks):
        lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
        start = np.empty(n_states)
        end_vector = np.empty(n_states)
        for u in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = chain_offsets[u]
            n_steps = chain_offsets[u + 1] - begin
            if n_steps == 0:
                continue
            log_scale = fill_rows_from_table(table, table_log_offset, mask, index, begin, begin + n_steps, lik)
            if start_kind[u] == START_ROW:
                start[:] = start_row
            elif start_kind[u] == STATIONARY:
                start[:] = stationary
            else:
                guard_start(left_beliefs[u], guard_counts, trans_prior, start)
            if right_guarded[u]:
                guard_end(guard_counts, right_beliefs[u], trans_prior, trans_prior_total, end_vector)
                for k in range(n_states):
                    lik[n_steps - 1, k] *= end_vector[k]
            log_z = -np.inf
            if log_scale > -np.inf:
                log_z = chain_marginals(start, trans, lik, n_steps, fwd, bwd, gamma)
            if log_z == -np.inf:
                if bad_acc[c] < 0:
                    bad_acc[c] = u
                continue
            log_z_acc[c] += log_z + log_scale
            first = own_begin[u] - begin
            last = own_end[u] - begin
            add_pair_outer(fwd, bwd, max(first, 1), last, outer_acc[c])
            if first == 0 and start_kind[u] == START_ROW:
                for k in range(n_states):
                    start_acc[c, k] += gamma[0, k]
            elif start_kind[u] == GUARDED:
                if with_zero:
                    guard_pairs = np.zeros((n_states, n_states))
                    add_left_guard_pairs(left_beliefs[u], guard_counts, trans_prior, gamma[0], 1.0, guard_pairs)
                    for j in range(n_states):
                        for k in range(n_states):
                            guard_acc[c, j, k] += guard_pairs[j, k]
                            zero_pairs_acc[c, j, k] *= 1.0 - guard_pairs[j, k]
                else:
                    add_left_guard_pairs(left_beliefs[u], guard_counts, trans_prior, gamma[0], 1.0, guard_acc[c])
            if with_zero:
                multiply_no_transition(occupancy, n_samples, seed + u, fwd, bwd, gamma, trans, n_steps,
                                       start_kind[u] == START_ROW, right_guarded[u], index, begin,
                                       (zero_start_acc[c], zero_pairs_acc[c], zero_exits_acc[c],
                                        zero_emissions_acc[c]))
            for t in range(first, last):
                add_token_stats(family, stats_acc[c], index, features, begin + t, gamma[t], 1.0)
            for k in range(n_states):
                out_edges[u, 0, k] = gamma[first, k]
                out_edges[u, 1, k] = gamma[last - 1, k]
    pairs = outer_acc.sum(axis=0) * trans + guard_acc.sum(axis=0)
    zero = (np.ones(n_states), np.ones((n_states, n_states)), np.ones(n_states),
            np.ones((n_emission_rows, n_states)))
    for c in range(n_zero):
        zero[0][:] *= zero_start_acc[c]
        zero[1][:, :] *= zero_pairs_acc[c]
        zero[2][:] *= zero_exits_acc[c]
        zero[3][:, :] *= zero_emissions_acc[c]
    return start_acc.sum(axis=0), pairs, stats_acc.sum(axis=0), log_z_acc.sum(), first_bad(bad_acc), zero

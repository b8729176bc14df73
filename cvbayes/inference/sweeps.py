"""Update schedules: one numba driver per way of refreshing the statistics.

* ``batch_expectations``: the E-step of EM and VB; all sequences see the same
  table, so it runs in parallel over chunks of sequences (eq. 3.13-3.17).
* ``cvi2_sweep``: CVI algorithm 2; each sequence is updated against surrogate
  parameters built from everyone else's expected counts (eq. 3.47-3.50).
* ``cvi1_sweep``: CVI algorithm 1; token-level mean field (eq. 3.33-3.39).
* ``cgs_sweep``: collapsed Gibbs sampling (eq. 3.25), optionally annealed.
* ``cvi3_sweep``: CVI algorithm 3; subchains of long sequences updated with
  the guarded sum-product (eq. 3.56-3.82).

The two collapsed sweeps also serve the HDP-HMM (thesis §5.3): the transition
prior is a row a_k with a denominator total A (eq. 5.38), and ``zero`` carries
the running products prod_i q(C^i = 0) of eq. 5.46 that its table counts need,
filled by `add_no_transition` as each sequence is updated (an empty ``zero``
with method NO_OCCUPANCY skips them for the finite HMM).

Statistics layout: ``start_counts`` (K,), ``trans_counts`` (K, K),
``trans_rows`` (K,) = row sums of trans_counts (the C_{j,.} of eq. 3.8, which
differ from the emission totals because a sequence's last state has no
successor), and the family table ``stats`` (S, K) of families/ops.py.

Local statistics of the collapsed algorithms are stored in float32 and the
global tables always receive exactly the rounded values, so subtracting a
sequence later removes what was added (no drift from rounding).
"""
import math

import numpy as np
from numba import njit, prange

from ..chains.forward_backward import (FAST, add_pair_outer, chain_buffers, chain_marginals,
                                       fill_rows_from_table, forward_backward, forward_log_z, mat_vec,
                                       vec_mat, viterbi)
from ..chains.guarded import add_left_guard_pairs, add_right_guard_pairs, guard_end, guard_start
from ..chains.occupancy import HEURISTIC, chain_zero
from ..core.sampling import seed_numba, splitmix64 as _splitmix64, uniform as _uniform
from ..core.units import equal_token_chunks, first_bad, max_length
from ..families.ops import CATEGORICAL, add_token_stats, predictive_rows

MPD = 0
VITERBI = 1
NO_OCCUPANCY = -1


def no_occupancy():
    """The ``zero`` products and method of a finite HMM: none."""
    return (np.ones(0), np.ones((0, 0)), np.ones(0), np.ones((0, 0))), NO_OCCUPANCY


@njit(cache=True, fastmath=FAST)
def add_no_transition(method, n_samples, seed, fwd, bwd, gamma, trans_bar, n_steps, starts, exits_at_end,
                      family, index, begin, zero):
    """Multiply one chain's q(C = 0) into the running products (eq. 5.46).

    ``zero`` = (start (K,), pairs (K, K), exits (K,), emissions (W, K) or
    (0, 0)): q(C_0k = 0) = 1 - q(z_1 = k) when the chain ``starts`` a sequence
    (eq. 5.51); q(C_jk = 0) by ``method`` (occupancy.METHODS codes; the
    heuristic of eq. 5.67 straight from the forward-backward messages,
    the others from the chain's conditionals); q(C_j. = 0) for the states the
    chain leaves, its last state too when ``exits_at_end`` (a subchain with a
    right neighbour, whose boundary pair the heuristic covers); and for
    categorical emissions q(C_kw = 0) = prod_t (1 - q(z_t = k)) over the tokens
    of word w, the emission counterpart of eq. 5.67 for the prior beta tau.
    """
    zero_start, zero_pairs, zero_exits, zero_emissions = zero
    n_states = gamma.shape[1]
    if starts:
        for k in range(n_states):
            zero_start[k] *= 1.0 - gamma[0, k]
    if method == HEURISTIC:
        for t in range(1, n_steps):
            for j in range(n_states):
                a = fwd[t - 1, j]
                if a == 0.0:
                    continue
                row = zero_pairs[j]
                for k in range(n_states):
                    row[k] *= 1.0 - a * trans_bar[j, k] * bwd[t, k]
        for t in range(n_steps - 1):
            for j in range(n_states):
                zero_exits[j] *= 1.0 - gamma[t, j]
    elif n_steps > 1:
        conditionals = np.empty((n_steps - 1, n_states, n_states))
        for t in range(1, n_steps):
            for j in range(n_states):
                total = 0.0
                for k in range(n_states):
                    v = trans_bar[j, k] * bwd[t, k]
                    conditionals[t - 1, j, k] = v
                    total += v
                inv = 1.0 / total if total > 0.0 else 0.0
                for k in range(n_states):
                    conditionals[t - 1, j, k] *= inv
        pairs, exits = chain_zero(method, gamma[0].copy(), conditionals, n_samples, seed)
        for j in range(n_states):
            zero_exits[j] *= exits[j]
            for k in range(n_states):
                zero_pairs[j, k] *= pairs[j, k]
    if exits_at_end:
        for j in range(n_states):
            zero_exits[j] *= 1.0 - gamma[n_steps - 1, j]
    if family == CATEGORICAL and zero_emissions.shape[0] > 0:
        for t in range(n_steps):
            row = zero_emissions[index[begin + t]]
            for k in range(n_states):
                row[k] *= 1.0 - gamma[t, k]


@njit(parallel=True, cache=True)
def batch_expectations(family, start, trans, table, table_log_offset, mask, index, features,
                       offsets, chunk_bounds, n_stats):
    """Expected counts of all sequences under one parameter table (E-step).

    Returns (start_counts, trans_counts, stats, log_evidence, first_bad) where
    log_evidence = sum_i log Z_i and first_bad is the index of the first
    sequence with zero probability (-1 if none).
    """
    n_states = start.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(offsets)
    start_acc = np.zeros((n_chunks, n_states))
    outer_acc = np.zeros((n_chunks, n_states, n_states))
    stats_acc = np.zeros((n_chunks, n_stats, n_states))
    log_z_acc = np.zeros(n_chunks)
    bad_acc = np.full(n_chunks, -1, dtype=np.int64)
    for c in prange(n_chunks):
        lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = offsets[i]
            end = offsets[i + 1]
            if end == begin:
                continue
            log_scale = fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik)
            log_z = -np.inf
            if log_scale > -np.inf:
                log_z = forward_backward(start, trans, lik, end - begin, fwd, bwd, gamma, outer_acc[c])
            if log_z == -np.inf:
                if bad_acc[c] < 0:
                    bad_acc[c] = i
                continue
            log_z_acc[c] += log_z + log_scale
            for k in range(n_states):
                start_acc[c, k] += gamma[0, k]
            for t in range(end - begin):
                add_token_stats(family, stats_acc[c], index, features, begin + t, gamma[t], 1.0)
    pair = outer_acc.sum(axis=0) * trans
    return start_acc.sum(axis=0), pair, stats_acc.sum(axis=0), log_z_acc.sum(), first_bad(bad_acc)


@njit(parallel=True, cache=True)
def batch_log_evidence(start, trans, table, table_log_offset, mask, index, offsets, chunk_bounds):
    """log Z_i of every sequence under one parameter table (eq. 3.108)."""
    n_states = start.shape[0]
    n_seq = offsets.shape[0] - 1
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(offsets)
    out = np.zeros(n_seq)
    for c in prange(n_chunks):
        lik = np.empty((longest, n_states))
        fwd = np.empty((longest, n_states))
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = offsets[i]
            end = offsets[i + 1]
            if end == begin:
                continue
            log_scale = fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik)
            if log_scale == -np.inf:
                out[i] = -np.inf
            else:
                out[i] = forward_log_z(start, trans, lik, end - begin, fwd) + log_scale
    return out


@njit(parallel=True, cache=True)
def batch_decode(start, trans, table, table_log_offset, mask, index, offsets, chunk_bounds,
                 method, out_states, out_posteriors):
    """Max-posterior (eq. 3.16) or Viterbi states for every sequence.

    ``out_posteriors`` (N, K) receives q(z_t) for MPD (pass a (0, K) array to
    skip).  Returns the first sequence with zero probability, or -1.
    """
    n_states = start.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(offsets)
    keep = out_posteriors.shape[0] > 0
    log_start = np.log(start)
    log_trans = np.log(trans)
    bad_acc = np.full(n_chunks, -1, dtype=np.int64)
    for c in prange(n_chunks):
        lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
        outer = np.zeros((n_states, n_states))
        path = np.empty(longest, dtype=np.int32)
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = offsets[i]
            end = offsets[i + 1]
            if end == begin:
                continue
            ok = fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik) > -np.inf
            if ok and method == VITERBI:
                ok = viterbi(log_start, log_trans, lik, end - begin, path) > -np.inf
                for t in range(end - begin):
                    out_states[begin + t] = path[t]
            elif ok:
                ok = forward_backward(start, trans, lik, end - begin, fwd, bwd, gamma, outer) > -np.inf
                for t in range(end - begin):
                    best = 0
                    for k in range(1, n_states):
                        if gamma[t, k] > gamma[t, best]:
                            best = k
                    out_states[begin + t] = best
                    if keep:
                        for k in range(n_states):
                            out_posteriors[begin + t, k] = gamma[t, k]
            if not ok and bad_acc[c] < 0:
                bad_acc[c] = i
    return first_bad(bad_acc)


@njit(parallel=True, cache=True, fastmath=FAST)
def random_chain_posteriors(seed, offsets, n_states, mask, index, chunk_bounds, marginals, local_pairs):
    """Random local posteriors q(z_t | z_{t-1}) ∝ U[0, 1] (thesis footnote 5).

    Each sequence gets a heterogeneous Markov chain with uniform random rows
    (restricted to the tag dictionary when one is given), drawn from its own
    generator seeded by (seed, sequence index), so the draw does not depend on
    the number of threads.  Writes the chain's marginals to ``marginals``
    (N, K) float32 and, when ``local_pairs`` has one slot per sequence, its
    expected transition counts to ``local_pairs[i]``.  Returns the global
    (start_counts, trans_counts) in float64, summed from the rounded values
    that were stored.
    """
    n_seq = offsets.shape[0] - 1
    n_chunks = chunk_bounds.shape[0] - 1
    keep_pairs = local_pairs.shape[0] == n_seq
    use_mask = mask.shape[0] > 0
    start_acc = np.zeros((n_chunks, n_states))
    trans_acc = np.zeros((n_chunks, n_states, n_states))
    base = _splitmix64(np.uint64(seed))
    for c in prange(n_chunks):
        state = np.empty(1, dtype=np.uint64)
        prev = np.empty(n_states)
        cur = np.empty(n_states)
        allowed = np.ones(n_states)
        row = np.empty(n_states)
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            state[0] = _splitmix64(base ^ np.uint64(i)) | np.uint64(1)
            for t in range(offsets[i], offsets[i + 1]):
                if use_mask:
                    for k in range(n_states):
                        allowed[k] = mask[index[t], k]
                if t == offsets[i]:
                    total = 0.0
                    for k in range(n_states):
                        cur[k] = _uniform(state) * allowed[k]
                        total += cur[k]
                    for k in range(n_states):
                        cur[k] = np.float32(cur[k] / total)
                        start_acc[c, k] += cur[k]
                else:
                    for k in range(n_states):
                        cur[k] = 0.0
                    for j in range(n_states):
                        total = 0.0
                        for k in range(n_states):
                            row[k] = _uniform(state) * allowed[k]
                            total += row[k]
                        weight = prev[j] / total
                        for k in range(n_states):
                            v = np.float64(np.float32(weight * row[k]))
                            cur[k] += v
                            trans_acc[c, j, k] += v
                            if keep_pairs:
                                local_pairs[i, j, k] += v
                    for k in range(n_states):
                        cur[k] = np.float32(cur[k])
                for k in range(n_states):
                    marginals[t, k] = cur[k]
                    prev[k] = cur[k]
    return start_acc.sum(axis=0), trans_acc.sum(axis=0)


@njit(cache=True)
def token_stats(family, index, features, marginals, n_stats):
    """Family statistics sum_t q(z_t) s(x_t) from stored marginals."""
    n_states = marginals.shape[1]
    stats = np.zeros((n_stats, n_states))
    for t in range(marginals.shape[0]):
        add_token_stats(family, stats, index, features, t, marginals[t], 1.0)
    return stats


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


@njit(cache=True, fastmath=FAST)
def _surrogate_rows(counts, prior_row, prior_total, rows, out):
    """out[j, k] = (max(C_jk, 0) + a_k) / (C_j. + A) for j in ``rows``: eq. 3.49 with
    a_k = alpha, A = K alpha; eq. 5.38 with a_k = sigma G[pi_k], A = sigma."""
    width = counts.shape[1]
    for j in rows:
        total = prior_total
        for k in range(width):
            c = max(counts[j, k], 0.0)
            out[j, k] = c + prior_row[k]
            total += c
        inv = 1.0 / total
        for k in range(width):
            out[j, k] *= inv


@njit(cache=True, fastmath=FAST)
def cvi2_sweep(family, prior, trans_prior, trans_prior_total, mask, index, features, offsets, order,
               start_counts, trans_counts, stats, marginals, local_pairs, zero, occupancy, n_samples, seed):
    """One pass of CVI algorithm 2 over the sequences in ``order`` (eq. 3.47-3.50).

    For each sequence i: subtract its stored expected counts from the global
    ones, form the surrogate parameters theta_bar, phi_bar from everyone else's
    counts, run forward-backward on them (eq. 3.48), and add the new expected
    counts back.  Per-sequence cost is O(T K^2 + K^2); the emission part only
    touches the rows of the sequence's own tokens, never all W.

    For the HDP-HMM, ``zero`` receives every sequence's q(C^i = 0) by the
    ``occupancy`` method (see `add_no_transition`).

    Returns (objective, first_bad): objective is sum_i log Z_i under the
    surrogate parameters, i.e. the leave-one-sequence-out predictive
    log-likelihood of eq. 3.47; first_bad is the first sequence that no
    state path can explain (-1 if none).
    """
    n_states = start_counts.shape[0]
    longest = max_length(offsets)
    lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
    outer = np.empty((n_states, n_states))
    start_bar = np.empty((1, n_states))
    # rows a sequence never leaves keep finite stale values, which the
    # kernels only ever multiply by zero
    trans_bar = np.zeros((n_states, n_states))
    use_mask = mask.shape[0] > 0
    is_source = np.empty(n_states, dtype=np.bool_)
    first_row = np.zeros(1, dtype=np.int64)
    objective = 0.0
    for i in order:
        begin = offsets[i]
        end = offsets[i + 1]
        n_steps = end - begin
        if n_steps == 0:
            continue
        # Under a tag dictionary only the states allowed before the last token
        # start a transition, so only their rows of the counts change
        is_source[:] = not use_mask
        if use_mask:
            for t in range(begin, end - 1):
                for k in range(n_states):
                    if mask[index[t], k] != 0.0:
                        is_source[k] = True
        sources = np.flatnonzero(is_source)
        for k in range(n_states):
            start_counts[k] -= marginals[begin, k]
        for t in range(begin, end):
            add_token_stats(family, stats, index, features, t, marginals[t], -1.0)
        for j in sources:
            for k in range(n_states):
                trans_counts[j, k] -= local_pairs[i, j, k]
        _surrogate_rows(start_counts.reshape((1, n_states)), trans_prior, trans_prior_total, first_row, start_bar)
        _surrogate_rows(trans_counts, trans_prior, trans_prior_total, sources, trans_bar)
        log_scale = predictive_rows(family, stats, prior, index, features, begin, end, mask, lik)
        log_z = -np.inf
        if log_scale > -np.inf:
            outer[:, :] = 0.0
            log_z = forward_backward(start_bar[0], trans_bar, lik, n_steps, fwd, bwd, gamma, outer)
        if log_z == -np.inf:
            return objective, i
        objective += log_z + log_scale
        if occupancy != NO_OCCUPANCY:
            add_no_transition(occupancy, n_samples, seed + i, fwd, bwd, gamma, trans_bar, n_steps, True,
                              False, family, index, begin, zero)
        for t in range(n_steps):
            for k in range(n_states):
                marginals[begin + t, k] = gamma[t, k]
            add_token_stats(family, stats, index, features, begin + t, marginals[begin + t], 1.0)
        for k in range(n_states):
            start_counts[k] += marginals[begin, k]
        for j in sources:
            for k in range(n_states):
                local_pairs[i, j, k] = outer[j, k] * trans_bar[j, k]
                trans_counts[j, k] += local_pairs[i, j, k]
    return objective, -1


@njit(cache=True, fastmath=FAST)
def cvi1_sweep(family, prior, alpha, mask, index, features, offsets,
               start_counts, trans_counts, trans_rows, stats, marginals):
    """One pass of CVI algorithm 1: token-level mean field (eq. 3.33).

    q(z_t = k) ∝ F1(k) F2(k) phi_bar(k), with, under the factorised q,
    (p = old q(z_t), r = q(z_{t-1}), r2 = q(z_{t-2}), n = q(z_{t+1}),
    n2 = q(z_{t+2}), G = global expected transition counts):

    F1(k) = sum_j r_j G_jk - r_k <r, r2> - p_k <r, r> - n_k <r, p>
            + r2_k r_k + alpha                                   (eq. 3.37-3.38)
    F2(k) = [sum_l G_kl n_l - r_k <n, p> - p_k <n, n> - n_k <n, n2>
             + n_k n2_k + r_k n_k + alpha] / [G_k. - p_k + K alpha] (eq. 3.39)

    The subtracted products are the local transitions t-2..t+1 that
    E[C^{-t-1,t}] must exclude; the added products are the "one contribution"
    terms of eq. 3.37/3.39 and the delta terms of eq. 3.25.  At t = 1 the
    first factor uses the start counts; at t = T there is no F2.

    Returns (objective, first_bad): objective is the sum over tokens of the
    log normaliser of the update with F1 normalised over k, a
    leave-one-token-out predictive log-likelihood.
    """
    n_states = start_counts.shape[0]
    k_alpha = n_states * alpha
    lik = np.empty((1, n_states))
    p = np.empty(n_states)
    q = np.empty(n_states)
    r = np.zeros(n_states)
    r2 = np.zeros(n_states)
    nx = np.zeros(n_states)
    n2 = np.zeros(n_states)
    into = np.empty(n_states)
    out_of = np.empty(n_states)
    objective = 0.0
    for i in range(offsets.shape[0] - 1):
        begin = offsets[i]
        end = offsets[i + 1]
        n_steps = end - begin
        for t in range(n_steps):
            pos = begin + t
            has_prev = t > 0
            has_prev2 = t > 1
            has_next = t < n_steps - 1
            has_next2 = t < n_steps - 2
            for k in range(n_states):
                p[k] = marginals[pos, k]
                r[k] = marginals[pos - 1, k] if has_prev else 0.0
                r2[k] = marginals[pos - 2, k] if has_prev2 else 0.0
                nx[k] = marginals[pos + 1, k] if has_next else 0.0
                n2[k] = marginals[pos + 2, k] if has_next2 else 0.0
            add_token_stats(family, stats, index, features, pos, p, -1.0)
            log_scale = predictive_rows(family, stats, prior, index, features, pos, pos + 1, mask, lik)
            if log_scale == -np.inf:
                return objective, i
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
            f1_total = 0.0
            for k in range(n_states):
                if has_prev:
                    f1 = into[k] - r[k] * r_r2 - p[k] * r_r - nx[k] * r_p + r2[k] * r[k]
                else:
                    f1 = start_counts[k] - p[k]
                q[k] = max(f1, 0.0) + alpha
                f1_total += q[k]
            total = 0.0
            for k in range(n_states):
                # F1 / sum_k F1 is the transition predictive into z_t; its
                # denominator does not depend on z_t, so q(z_t) is unchanged,
                # but the log normaliser becomes a predictive log-likelihood
                v = q[k] / f1_total
                if has_next:
                    f2 = out_of[k] - r[k] * n_p - p[k] * n_n - nx[k] * n_n2 + nx[k] * n2[k] + r[k] * nx[k]
                    v *= (max(f2, 0.0) + alpha) / (max(trans_rows[k] - p[k], 0.0) + k_alpha)
                v *= lik[0, k]
                q[k] = v
                total += v
            if not total > 0.0:
                return objective, i
            objective += math.log(total) + log_scale
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
    return objective, -1


@njit(cache=True)
def cgs_sweep(family, prior, alpha, mask, index, features, offsets, states,
              start_counts, trans_counts, trans_rows, stats, temperature):
    """One pass of collapsed Gibbs sampling (eq. 3.25), tempered by 1/temperature.

    Returns the first sequence on which some token had no admissible state,
    or -1.
    """
    n_states = start_counts.shape[0]
    k_alpha = n_states * alpha
    lik = np.empty((1, n_states))
    onehot = np.zeros(n_states)
    probs = np.empty(n_states)
    power = 1.0 / temperature
    for i in range(offsets.shape[0] - 1):
        begin = offsets[i]
        end = offsets[i + 1]
        for pos in range(begin, end):
            z = states[pos]
            has_prev = pos > begin
            has_next = pos < end - 1
            zp = states[pos - 1] if has_prev else -1
            zn = states[pos + 1] if has_next else -1
            onehot[z] = 1.0
            add_token_stats(family, stats, index, features, pos, onehot, -1.0)
            onehot[z] = 0.0
            if has_prev:
                trans_counts[zp, z] -= 1.0
                trans_rows[zp] -= 1.0
            else:
                start_counts[z] -= 1.0
            if has_next:
                trans_counts[z, zn] -= 1.0
                trans_rows[z] -= 1.0
            if predictive_rows(family, stats, prior, index, features, pos, pos + 1, mask, lik) == -np.inf:
                return i
            peak = 0.0
            for k in range(n_states):
                v = max(trans_counts[zp, k] if has_prev else start_counts[k], 0.0) + alpha
                if has_next:
                    same_prev = 1.0 if k == zp else 0.0
                    same_both = 1.0 if (k == zp and k == zn) else 0.0
                    v *= ((max(trans_counts[k, zn], 0.0) + alpha + same_both)
                          / (max(trans_rows[k], 0.0) + k_alpha + same_prev))
                v *= lik[0, k]
                probs[k] = v
                peak = max(peak, v)
            total = 0.0
            for k in range(n_states):
                # annealing: p^(1/T), scaled by the peak first so it cannot underflow
                if power != 1.0:
                    probs[k] = (probs[k] / peak) ** power
                total += probs[k]
            u = np.random.random() * total
            z = n_states - 1
            acc = 0.0
            for k in range(n_states):
                acc += probs[k]
                if u < acc and probs[k] > 0.0:
                    z = k
                    break
            states[pos] = z
            onehot[z] = 1.0
            add_token_stats(family, stats, index, features, pos, onehot, 1.0)
            onehot[z] = 0.0
            if has_prev:
                trans_counts[zp, z] += 1.0
                trans_rows[zp] += 1.0
            else:
                start_counts[z] += 1.0
            if has_next:
                trans_counts[z, zn] += 1.0
                trans_rows[z] += 1.0
    return -1


@njit(cache=True)
def state_counts(family, index, features, offsets, states, n_states, n_stats):
    """Counts of a hard state assignment: start, transitions, row sums, family stats."""
    start_counts = np.zeros(n_states)
    trans_counts = np.zeros((n_states, n_states))
    trans_rows = np.zeros(n_states)
    stats = np.zeros((n_stats, n_states))
    onehot = np.zeros(n_states)
    for i in range(offsets.shape[0] - 1):
        begin = offsets[i]
        end = offsets[i + 1]
        for pos in range(begin, end):
            z = states[pos]
            if pos == begin:
                start_counts[z] += 1.0
            else:
                trans_counts[states[pos - 1], z] += 1.0
                trans_rows[states[pos - 1]] += 1.0
            onehot[z] = 1.0
            add_token_stats(family, stats, index, features, pos, onehot, 1.0)
            onehot[z] = 0.0
    return start_counts, trans_counts, trans_rows, stats


@njit(parallel=True, cache=True)
def batch_local_posteriors(start, trans, table, table_log_offset, mask, index, offsets,
                           chunk_bounds, marginals, local_pairs):
    """Store every sequence's q(z_t) and expected transitions under one table.

    Starts the collapsed algorithms from given parameters (``init`` dict).
    ``local_pairs`` may have zero slots when only marginals are wanted.
    Returns the first sequence with zero probability, or -1.
    """
    n_states = start.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(offsets)
    keep_pairs = local_pairs.shape[0] == offsets.shape[0] - 1
    bad_acc = np.full(n_chunks, -1, dtype=np.int64)
    for c in prange(n_chunks):
        lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
        outer = np.empty((n_states, n_states))
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = offsets[i]
            end = offsets[i + 1]
            if end == begin:
                continue
            outer[:, :] = 0.0
            ok = fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik) > -np.inf
            if ok:
                ok = forward_backward(start, trans, lik, end - begin, fwd, bwd, gamma, outer) > -np.inf
            if not ok:
                if bad_acc[c] < 0:
                    bad_acc[c] = i
                continue
            for t in range(end - begin):
                for k in range(n_states):
                    marginals[begin + t, k] = gamma[t, k]
            if keep_pairs:
                for j in range(n_states):
                    for k in range(n_states):
                        local_pairs[i, j, k] = outer[j, k] * trans[j, k]
    return first_bad(bad_acc)


@njit(cache=True)
def pair_totals(offsets, marginals, local_pairs):
    """Global start and transition counts from stored local statistics (CVI-2)."""
    n_states = marginals.shape[1]
    start_counts = np.zeros(n_states)
    trans_counts = np.zeros((n_states, n_states))
    for i in range(offsets.shape[0] - 1):
        if offsets[i + 1] == offsets[i]:
            continue
        for k in range(n_states):
            start_counts[k] += marginals[offsets[i], k]
        for j in range(n_states):
            for k in range(n_states):
                trans_counts[j, k] += local_pairs[i, j, k]
    return start_counts, trans_counts


@njit(cache=True)
def independent_boundaries(offsets, is_first, marginals, boundary_pairs):
    """boundary_pairs[i] = q(last state of i-1) (x) q(first state of i), the pair
    counts of neighbouring subchains under q(z) = prod_i q(z^i) (eq. 3.58).

    Starts CVI-3 from per-subchain local posteriors.  Returns their sum.
    """
    n_states = marginals.shape[1]
    total = np.zeros((n_states, n_states))
    for i in range(offsets.shape[0] - 1):
        if is_first[i] or offsets[i + 1] == offsets[i]:
            continue
        before = marginals[offsets[i] - 1]
        after = marginals[offsets[i]]
        for j in range(n_states):
            for k in range(n_states):
                boundary_pairs[i, j, k] = before[j] * after[k]
                total[j, k] += boundary_pairs[i, j, k]
    return total


@njit(cache=True, fastmath=FAST)
def _without_neighbour(counts, internal, boundary, use_boundary, out):
    """out = counts - internal - (boundary if use_boundary): C^{\\i} minus one more subchain."""
    n_states = counts.shape[0]
    for j in range(n_states):
        for k in range(n_states):
            v = counts[j, k] - internal[j, k]
            if use_boundary:
                v -= boundary[j, k]
            out[j, k] = v


@njit(cache=True, fastmath=FAST)
def _store_pairs(source, local, counts):
    """local = source (rounded to float32); counts += the stored values."""
    n_states = source.shape[0]
    for j in range(n_states):
        for k in range(n_states):
            local[j, k] = source[j, k]
            counts[j, k] += local[j, k]


@njit(cache=True, fastmath=FAST)
def cvi3_sweep(family, prior, trans_prior, trans_prior_total, mask, index, features, offsets, is_first, order,
               start_counts, trans_counts, stats, marginals, internal_pairs, boundary_pairs, zero, occupancy,
               n_samples, seed):
    """One pass of CVI algorithm 3 over the subchains in ``order`` (eq. 3.56-3.82).

    Subchain i covers tokens offsets[i]..offsets[i+1]; ``is_first[i]`` marks the
    first subchain of a sequence.  Local statistics: the marginals, the
    expected internal transitions of each subchain ``internal_pairs[i]`` and the
    expected transition into each subchain from its left neighbour
    ``boundary_pairs[i]`` (zero when is_first[i]).

    For each subchain: remove its tokens, internal transitions and both
    boundary transitions from the global counts (C^{\\i}, eq. 3.57); form the
    surrogate theta_bar, phi_bar (eq. 3.63-3.64); guard it with the left
    neighbour's last marginal under C^{\\i-1,i} and the right neighbour's first
    marginal under C^{\\i,i+1} (eq. 3.72-3.76); run the guarded sum-product
    (eq. 3.77-3.82, chains/guarded.py); and add the new statistics back, both
    boundary pairs included.

    For the HDP-HMM, ``zero`` receives each subchain's q(C^i = 0) by the
    ``occupancy`` method, its left boundary pair by the heuristic.

    Returns (objective, first_bad): objective is the sum of the guarded chains'
    log normalisers (the boundary messages normalised, so each term is a
    predictive log-probability of the subchain's tokens and its right guard).
    """
    n_states = start_counts.shape[0]
    n_sub = offsets.shape[0] - 1
    longest = max_length(offsets)
    lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
    outer = np.empty((n_states, n_states))
    guard_pairs = np.empty((n_states, n_states))
    left_counts = np.empty((n_states, n_states))
    right_counts = np.empty((n_states, n_states))
    start = np.empty(n_states)
    end_vector = np.empty(n_states)
    start_bar = np.empty((1, n_states))
    trans_bar = np.empty((n_states, n_states))
    all_rows = np.arange(n_states)
    first_row = np.zeros(1, dtype=np.int64)
    objective = 0.0
    for i in order:
        begin = offsets[i]
        end = offsets[i + 1]
        n_steps = end - begin
        if n_steps == 0:
            continue
        has_left = not is_first[i]
        has_right = i + 1 < n_sub and not is_first[i + 1]
        # C^{\i} (eq. 3.56-3.57)
        if is_first[i]:
            for k in range(n_states):
                start_counts[k] -= marginals[begin, k]
        for t in range(begin, end):
            add_token_stats(family, stats, index, features, t, marginals[t], -1.0)
        for j in range(n_states):
            for k in range(n_states):
                v = trans_counts[j, k] - internal_pairs[i, j, k]
                if has_left:
                    v -= boundary_pairs[i, j, k]
                if has_right:
                    v -= boundary_pairs[i + 1, j, k]
                trans_counts[j, k] = v
        _surrogate_rows(trans_counts, trans_prior, trans_prior_total, all_rows, trans_bar)
        log_scale = predictive_rows(family, stats, prior, index, features, begin, end, mask, lik)
        if log_scale == -np.inf:
            return objective, i
        if has_left:
            # C^{\i-1,i}: subchain i-1's internal and left boundary transitions also go
            _without_neighbour(trans_counts, internal_pairs[i - 1], boundary_pairs[i - 1],
                               not is_first[i - 1], left_counts)
            guard_start(marginals[begin - 1], left_counts, trans_prior, start)
        else:
            _surrogate_rows(start_counts.reshape((1, n_states)), trans_prior, trans_prior_total, first_row, start_bar)
            start[:] = start_bar[0]
        if has_right:
            # C^{\i,i+1}: subchain i+1's internal and right boundary transitions also go
            _without_neighbour(trans_counts, internal_pairs[i + 1], boundary_pairs[min(i + 2, n_sub - 1)],
                               i + 2 < n_sub and not is_first[i + 2], right_counts)
            guard_end(right_counts, marginals[end], trans_prior, trans_prior_total, end_vector)
            for k in range(n_states):
                lik[n_steps - 1, k] *= end_vector[k]
        log_z = chain_marginals(start, trans_bar, lik, n_steps, fwd, bwd, gamma)
        if log_z == -np.inf:
            return objective, i
        objective += log_z + log_scale
        for t in range(n_steps):
            for k in range(n_states):
                marginals[begin + t, k] = gamma[t, k]
            add_token_stats(family, stats, index, features, begin + t, marginals[begin + t], 1.0)
        if is_first[i]:
            for k in range(n_states):
                start_counts[k] += marginals[begin, k]
        outer[:, :] = 0.0
        add_pair_outer(fwd, bwd, 1, n_steps, outer)
        outer *= trans_bar
        _store_pairs(outer, internal_pairs[i], trans_counts)
        if occupancy != NO_OCCUPANCY:
            add_no_transition(occupancy, n_samples, seed + i, fwd, bwd, gamma, trans_bar, n_steps, is_first[i],
                              has_right, family, index, begin, zero)
        if has_left:
            guard_pairs[:, :] = 0.0
            add_left_guard_pairs(marginals[begin - 1], left_counts, trans_prior, gamma[0], 1.0, guard_pairs)
            _store_pairs(guard_pairs, boundary_pairs[i], trans_counts)
            if occupancy != NO_OCCUPANCY:
                for j in range(n_states):
                    for k in range(n_states):
                        zero[1][j, k] *= 1.0 - guard_pairs[j, k]
        if has_right:
            guard_pairs[:, :] = 0.0
            add_right_guard_pairs(right_counts, marginals[end], trans_prior, gamma[n_steps - 1], 1.0, guard_pairs)
            _store_pairs(guard_pairs, boundary_pairs[i + 1], trans_counts)
    return objective, -1

"""Collapsed Gibbs sampling for the aligners (thesis eq. 3.25; eflomal's approach).

The translation rows t(. | f) and the jump buckets theta are integrated out;
the sampler's state is the alignment a_j of every target word (a_j = I for
NULL) and, for the HMM, the bucket b_j that each jump into a real position
was drawn from (alignment/jumps.py; -1 for NULL words).  Counts are whole
numbers kept in float64 arrays.

Every draw uses numba's generator (seed it with
``cvbayes.inference.sweeps.seed_numba``).  With ``accumulate`` set, each
token's conditional distribution over its I + 1 candidates is added to
``rb`` (Rao-Blackwellised marginals; the aligner decodes from their average).
"""
import numpy as np
from numba import njit

from ..inference.sweeps import max_length
from .collapsed import translation_mean
from .jumps import bucket_of, bucket_sizes, jump_weight


@njit(cache=True)
def _draw(weights, n, total):
    """Index k with probability weights[k] / total."""
    u = np.random.random() * total
    acc = 0.0
    last = n - 1
    for k in range(n):
        if weights[k] > 0.0:
            last = k
            acc += weights[k]
            if u < acc:
                return k
    return last


@njit(cache=True)
def _move_token(first, x, cell_slot, slot_row, counts, totals, sign):
    slot = cell_slot[first + x]
    counts[slot] += sign
    totals[slot_row[slot]] += sign


@njit(cache=True)
def ibm1_cgs_sweep(prior, v_prior, src_offsets, tgt_offsets, cell_offsets, cell_slot, slot_row,
                   align, counts, totals, rb, accumulate):
    """One Gibbs pass for IBM1: p(a_j = i | rest) ∝ (C^{-j}_{f_i e_j} + beta) / (C^{-j}_{f_i .} + V beta)."""
    weights = np.empty(max_length(src_offsets) + 1)
    for s in range(src_offsets.shape[0] - 1):
        n_cand = src_offsets[s + 1] - src_offsets[s] + 1
        for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
            first = cell_offsets[s] + j * n_cand
            t = tgt_offsets[s] + j
            _move_token(first, align[t], cell_slot, slot_row, counts, totals, -1.0)
            total = 0.0
            for i in range(n_cand):
                slot = cell_slot[first + i]
                weights[i] = translation_mean(counts, totals, slot, slot_row[slot], prior, v_prior)
                total += weights[i]
            x = _draw(weights, n_cand, total)
            align[t] = x
            _move_token(first, x, cell_slot, slot_row, counts, totals, 1.0)
            if accumulate:
                for i in range(n_cand):
                    rb[first + i] += weights[i] / total


@njit(cache=True)
def _restart_masses(jump_counts, jump_prior, sizes, n_src, out):
    """out[src + 1] = sum of (N_d + alpha) over the buckets that hold no position from src."""
    for r in range(n_src + 1):
        v = 0.0
        for b in range(jump_counts.shape[0]):
            if sizes[r, b] == 0:
                v += jump_counts[b] + jump_prior
        out[r] = v


@njit(cache=True)
def _reach(jump_counts, jump_prior, sizes, restart, src, dst, n_src, max_jump):
    """sum_d w(d; src, dst) (N_d + alpha): the unnormalised predictive of a jump src -> dst."""
    b = bucket_of(dst - src, max_jump)
    return (jump_counts[b] + jump_prior) / sizes[src + 1, b] + restart[src + 1] / n_src


@njit(cache=True)
def hmm_cgs_sweep(prior, v_prior, jump_prior, p0, max_jump, src_offsets, tgt_offsets, cell_offsets,
                  cell_slot, slot_row, align, bucket, counts, totals, jump_counts, rb, accumulate):
    """One Gibbs pass for the HMM aligner: a blocked draw of (a_j, b_j, b_k) per token.

    k is the next target word aligned to a real position; its jump starts
    from a_j's memory, so changing a_j moves it.  With the translation and
    bucket counts of everything else (superscript -),

        p(a_j = i, b_j = d, b_k = d' | rest) ∝
            t_bar(e_j | f_i) (1 - p0) w(d; src, i) (N_d + alpha) / (N + B alpha)
            x w(d'; i, a_k) (N_d' + alpha + [d' = d]) / (N + 1 + B alpha),

    and for a_j = NULL the first factor is p0 and the second
    w(d'; m, a_k) (N_d' + alpha) / (N + B alpha), m the memory carried
    through.  (eq. 3.25: the +[d' = d] and +1 are its delta terms.)  src is
    the memory before j (-1 for the first word).  a_j is drawn with both
    buckets summed out,

        sum_d sum_d' ... = [R(src, i) R(i, a_k) + sum_d w(d; src, i) (N_d + alpha) w(d; i, a_k)] / (...),

    R(src, dst) = sum_d w(d; src, dst) (N_d + alpha); then b_j given a_j, then
    b_k given both.  O(I M) a token.
    """
    n_buckets = jump_counts.shape[0]
    b_alpha = n_buckets * jump_prior
    stay = 1.0 - p0
    longest = max_length(src_offsets)
    weights = np.empty(longest + 1)
    bucket_weights = np.empty(n_buckets)
    sizes = np.empty((longest + 1, n_buckets))
    restart = np.empty(longest + 1)
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
        base = tgt_offsets[s]
        bucket_sizes(n_src, max_jump, sizes)
        memory = -1
        for j in range(n_tgt):
            first = cell_offsets[s] + j * (n_src + 1)
            t = base + j
            _move_token(first, align[t], cell_slot, slot_row, counts, totals, -1.0)
            if bucket[t] >= 0:
                jump_counts[bucket[t]] -= 1.0
            k = j + 1
            while k < n_tgt and align[base + k] == n_src:
                k += 1
            has_next = k < n_tgt
            dst = align[base + k] if has_next else -1
            if has_next:
                jump_counts[bucket[base + k]] -= 1.0
            n_jumps = jump_counts.sum()
            _restart_masses(jump_counts, jump_prior, sizes, n_src, restart)
            null_memory = max(memory, 0)
            total = 0.0
            for x in range(n_src + 1):
                slot = cell_slot[first + x]
                v = translation_mean(counts, totals, slot, slot_row[slot], prior, v_prior)
                if x == n_src:
                    v *= p0
                    if has_next:
                        v *= _reach(jump_counts, jump_prior, sizes, restart, null_memory, dst, n_src,
                                    max_jump) / (n_jumps + b_alpha)
                else:
                    into = _reach(jump_counts, jump_prior, sizes, restart, memory, x, n_src, max_jump)
                    if has_next:
                        into *= _reach(jump_counts, jump_prior, sizes, restart, x, dst, n_src, max_jump)
                        for b in range(n_buckets):
                            w_in = jump_weight(b, memory, x, n_src, max_jump, sizes)
                            if w_in > 0.0:
                                into += w_in * (jump_counts[b] + jump_prior) * jump_weight(b, x, dst, n_src,
                                                                                          max_jump, sizes)
                        into /= n_jumps + 1.0 + b_alpha
                    v *= stay * into / (n_jumps + b_alpha)
                weights[x] = v
                total += v
            x = _draw(weights, n_src + 1, total)
            align[t] = x
            _move_token(first, x, cell_slot, slot_row, counts, totals, 1.0)
            chosen = -1
            if x < n_src:
                reach_out = 0.0
                if has_next:
                    reach_out = _reach(jump_counts, jump_prior, sizes, restart, x, dst, n_src, max_jump)
                b_total = 0.0
                for b in range(n_buckets):
                    v = jump_weight(b, memory, x, n_src, max_jump, sizes) * (jump_counts[b] + jump_prior)
                    if has_next:
                        v *= reach_out + jump_weight(b, x, dst, n_src, max_jump, sizes)
                    bucket_weights[b] = v
                    b_total += v
                chosen = _draw(bucket_weights, n_buckets, b_total)
                jump_counts[chosen] += 1.0
                memory = x
            else:
                memory = null_memory
            bucket[t] = chosen
            if has_next:
                b_total = 0.0
                for b in range(n_buckets):
                    v = jump_weight(b, memory, dst, n_src, max_jump, sizes) * (jump_counts[b] + jump_prior)
                    bucket_weights[b] = v
                    b_total += v
                chosen_next = _draw(bucket_weights, n_buckets, b_total)
                bucket[base + k] = chosen_next
                jump_counts[chosen_next] += 1.0
            if accumulate:
                for i in range(n_src + 1):
                    rb[first + i] += weights[i] / total


@njit(cache=True)
def hmm_cgs_init(max_jump, src_offsets, tgt_offsets, align, bucket, jump_counts):
    """Buckets for a given alignment (IBM1's last sample): each jump into a
    real position takes the bucket of its width; adds them to ``jump_counts``."""
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        memory = -1
        for t in range(tgt_offsets[s], tgt_offsets[s + 1]):
            x = align[t]
            if x < n_src:
                bucket[t] = bucket_of(x - memory, max_jump)
                jump_counts[bucket[t]] += 1.0
                memory = x
            else:
                bucket[t] = -1
                memory = max(memory, 0)


@njit(cache=True)
def hmm_alignment_log_prob(p0, max_jump, src_offsets, tgt_offsets, align, bucket):
    """sum_j log p(a_j | b_j, memory): log p0 for NULL, log((1 - p0) w(b_j; src, a_j)) otherwise.

    With the Dirichlet-multinomial of the bucket counts this is the
    alignment part of the collapsed log joint log p(e, a, b) (eq. 3.24).
    """
    total = 0.0
    log_p0 = np.log(p0)
    log_stay = np.log(1.0 - p0)
    sizes = np.empty((max_length(src_offsets) + 1, 2 * max_jump + 1))
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        bucket_sizes(n_src, max_jump, sizes)
        memory = -1
        for t in range(tgt_offsets[s], tgt_offsets[s + 1]):
            x = align[t]
            if x < n_src:
                total += log_stay + np.log(jump_weight(bucket[t], memory, x, n_src, max_jump, sizes))
                memory = x
            else:
                total += log_p0
                memory = max(memory, 0)
    return total


@njit(cache=True)
def sample_cells(cell_offsets, src_offsets, tgt_offsets, align, out):
    """One-hot per-cell indicators of an alignment sample (for the slot counts)."""
    for s in range(src_offsets.shape[0] - 1):
        n_cand = src_offsets[s + 1] - src_offsets[s] + 1
        for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
            first = cell_offsets[s] + j * n_cand
            for i in range(n_cand):
                out[first + i] = 0.0
            out[first + align[tgt_offsets[s] + j]] = 1.0

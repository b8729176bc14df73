"""The aligners' structures: IBM Model 1's independent tokens and the HMM aligner's chain with NULL
(Vogel et al. 1996; Och and Ney 2003), with their E-steps over many sentence pairs.

A sentence pair with I source and J target words is a chain of J steps over
2I states: state i < I aligns the target word to source position i; state
I + m aligns it to NULL and remembers m, the last real position, so that the
next jump starts from there (Och and Ney 2003, §3.1).  From any state whose
memory is m:

    to real i   with (1 - p0) p(i | m)      (the jump model, chains/jumps.py)
    to NULL m   with p0                     (the same memory; no other NULL state)

and the first target word starts from the virtual position -1: real i with
(1 - p0) p(i | -1), or NULL with p0, which then remembers position 0.
Emissions are t(e_j | f_i) for real states and t(e_j | NULL) for NULL states.

Because transitions depend on the previous state only through its memory,
a forward step costs O(I^2) rather than O((2I)^2), and the backward message
of a state depends only on its memory (I values a step).  The generic
kernels of chains/forward_backward.py would run the 2I x 2I product, four
times the work, so this chain has its own kernel.  Messages are scaled at
every step (thesis §3.8.2), so no log-space is needed.

The E-steps (`ibm1_expectations`, `hmm_expectations`) run every pair of a corpus laid out as the
aligner's cells (models/alignment/index.py) on fixed tables: EM's and VB's passes, and the stochastic
schedule's minibatches (a minibatch is laid out the same way).  The tables do not change within a call,
so pairs run in parallel over chunks of equal work (``prange``).  Each pair writes its own per-cell
posteriors, so no thread writes another's memory, and no thread keeps a copy of the large translation
table: the caller sums the cells into slots afterwards.
"""
import math

import numpy as np
from numba import njit, prange

from ..core.units import first_bad, max_length, parallel_over_chunks
from ..core.special import FAST
from .jumps import add_bucket_counts, bucket_sizes, jump_matrix


@njit(cache=True)
def alignment_buffers(longest_src, longest_tgt):
    """Work arrays for sentences up to the given lengths:
    (lik, table, alpha, back, weights, gamma, pairs, scale, acc)."""
    n_src = max(longest_src, 1)
    n_tgt = max(longest_tgt, 1)
    return (np.empty((n_tgt, n_src + 1)), np.empty((n_src + 1, n_src)), np.empty((n_tgt, 2 * n_src)),
            np.empty((n_tgt, n_src)), np.empty((n_tgt, n_src)), np.empty((n_tgt, 2 * n_src)),
            np.empty((n_src + 1, n_src)), np.empty(n_tgt), np.empty(n_src))


@njit(cache=True, fastmath=FAST)
def alignment_posteriors(lik, table, p0, n_src, n_tgt, alpha, back, weights, gamma, pairs, scale, acc):
    """Scaled forward-backward on one sentence pair (the E-step of eq. 3.16-3.17 for this chain).

    Parameters
    ----------
    lik : (>= J, >= I + 1)
        ``lik[j, i]`` = t(e_j | f_i) for i < I, ``lik[j, I]`` = t(e_j | NULL);
        EM, VB and CVI-2 differ only in which table fills it.
    table : (>= I + 1, >= I)
        ``table[src + 1, i]`` = p(i | src), from `jumps.jump_matrix`.
    p0 : float
        Probability of a jump to NULL.
    alpha, back, weights, scale, acc : work arrays (see `alignment_buffers`).
    gamma : (>= J, >= 2I) output
        q(a_j = state): real states 0..I-1, NULL states I..2I-1 by memory.
    pairs : (>= I + 1, >= I) output
        ``pairs[src + 1, i]`` = expected number of jumps from src into real
        position i (src = -1 for the first word); `jumps.add_bucket_counts`
        turns it into expected bucket counts.

    Returns
    -------
    float
        log p(e | f) of the pair under the given tables, -inf when no
        alignment has positive probability.
    """
    stay = 1.0 - p0
    log_z = 0.0
    for j in range(n_tgt):
        a = alpha[j]
        if j == 0:
            for i in range(n_src):
                a[i] = stay * table[0, i] * lik[0, i]
                a[n_src + i] = 0.0
            a[n_src] = p0 * lik[0, n_src]
        else:
            prev = alpha[j - 1]
            for i in range(n_src):
                acc[i] = 0.0
            null_lik = p0 * lik[j, n_src]
            for m in range(n_src):
                r = prev[m] + prev[n_src + m]
                a[n_src + m] = r * null_lik
                if r == 0.0:
                    continue
                row = table[m + 1]
                for i in range(n_src):
                    acc[i] += r * row[i]
            for i in range(n_src):
                a[i] = stay * acc[i] * lik[j, i]
        total = 0.0
        for k in range(2 * n_src):
            total += a[k]
        if not total > 0.0:
            return -np.inf
        inv = 1.0 / total
        for k in range(2 * n_src):
            a[k] *= inv
        scale[j] = total
        log_z += math.log(total)
    # back[j, m]: scaled backward message of every state whose memory is m
    for m in range(n_src):
        back[n_tgt - 1, m] = 1.0
    for j in range(n_tgt - 1, 0, -1):
        inv = 1.0 / scale[j]
        w = weights[j]
        for i in range(n_src):
            w[i] = lik[j, i] * back[j, i] * inv
        null_w = p0 * lik[j, n_src] * inv
        for m in range(n_src):
            row = table[m + 1]
            s = 0.0
            for i in range(n_src):
                s += row[i] * w[i]
            back[j - 1, m] = stay * s + null_w * back[j, m]
    for j in range(n_tgt):
        for i in range(n_src):
            gamma[j, i] = alpha[j, i] * back[j, i]
            gamma[j, n_src + i] = alpha[j, n_src + i] * back[j, i]
    for i in range(n_src):
        pairs[0, i] = gamma[0, i]
        for m in range(n_src):
            pairs[m + 1, i] = 0.0
    for j in range(1, n_tgt):
        prev = alpha[j - 1]
        w = weights[j]
        for m in range(n_src):
            r = prev[m] + prev[n_src + m]
            if r == 0.0:
                continue
            row = pairs[m + 1]
            for i in range(n_src):
                row[i] += r * w[i]
    for m in range(n_src):
        for i in range(n_src):
            pairs[m + 1, i] *= stay * table[m + 1, i]
    return log_z


@parallel_over_chunks()
def ibm1_expectations(slot_table, src_offsets, tgt_offsets, cell_offsets, cell_slot, chunk_bounds, cell_post):
    """IBM Model 1 E-step (Brown et al. 1993): q(a_j = i) = t(e_j | f_i) / sum_i' t(e_j | f_i').

    ``slot_table`` holds t(e | f) per slot (the MAP table for EM, exp E[log t]
    for VB, eq. 3.21-3.22).  Writes q into ``cell_post`` (i = I is NULL).

    Returns (log_z, first_bad): per chunk of ``chunk_bounds``, the sum over its
    pairs of log p(e | f) = sum_j log(sum_i t(e_j | f_i) / (I + 1)) (one chunk a
    pair gives each pair's), and the first pair whose target word no candidate
    can emit (-1 if none).
    """
    n_chunks = chunk_bounds.shape[0] - 1
    log_z = np.zeros(n_chunks)
    bad = np.full(n_chunks, -1, dtype=np.int64)
    for c in prange(n_chunks):
        # accumulate in locals: neighbouring chunks' slots share a cache line
        chunk_log_z = 0.0
        chunk_bad = -1
        for s in range(chunk_bounds[c], chunk_bounds[c + 1]):
            n_cand = src_offsets[s + 1] - src_offsets[s] + 1
            base = cell_offsets[s]
            for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
                first = base + j * n_cand
                total = 0.0
                for i in range(n_cand):
                    total += slot_table[cell_slot[first + i]]
                if not total > 0.0:
                    if chunk_bad < 0:
                        chunk_bad = s
                    break
                chunk_log_z += math.log(total / n_cand)
                inv = 1.0 / total
                for i in range(n_cand):
                    cell_post[first + i] = slot_table[cell_slot[first + i]] * inv
        log_z[c] = chunk_log_z
        bad[c] = chunk_bad
    return log_z, first_bad(bad)


@parallel_over_chunks()
def hmm_expectations(slot_table, theta, p0, max_jump, src_offsets, tgt_offsets, cell_offsets, cell_slot,
                     chunk_bounds, cell_post):
    """HMM aligner E-step (Baum-Welch, thesis eq. 3.16-3.17, on `alignment_posteriors`' chain).

    ``slot_table`` holds t(e | f) per slot and ``theta`` the jump buckets
    (MAP for EM; exp E[log .] for VB, eq. 3.21-3.22).  Writes the per-cell
    posteriors q(a_j = i) into ``cell_post`` (NULL states summed into i = I).

    Returns (bucket_counts, log_z, first_bad): the expected jump-bucket
    counts, per chunk of ``chunk_bounds`` the sum over its pairs of
    log p(e | f) (one chunk a pair gives each pair's), and the first pair no
    alignment explains (-1 if none).
    """
    n_chunks = chunk_bounds.shape[0] - 1
    n_buckets = theta.shape[0]
    longest_src = max_length(src_offsets)
    longest_tgt = max_length(tgt_offsets)
    buckets = np.zeros((n_chunks, n_buckets))
    log_z = np.zeros(n_chunks)
    bad = np.full(n_chunks, -1, dtype=np.int64)
    for c in prange(n_chunks):
        lik, table, alpha, back, weights, gamma, pairs, scale, acc = alignment_buffers(longest_src, longest_tgt)
        sizes = np.empty((longest_src + 1, n_buckets))
        chunk_buckets = np.zeros(n_buckets)
        chunk_log_z = 0.0
        chunk_bad = -1
        for s in range(chunk_bounds[c], chunk_bounds[c + 1]):
            n_src = src_offsets[s + 1] - src_offsets[s]
            n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
            base = cell_offsets[s]
            for j in range(n_tgt):
                for i in range(n_src + 1):
                    lik[j, i] = slot_table[cell_slot[base + j * (n_src + 1) + i]]
            bucket_sizes(n_src, max_jump, sizes)
            jump_matrix(theta, n_src, max_jump, sizes, table)
            pair_log_z = alignment_posteriors(lik, table, p0, n_src, n_tgt, alpha, back, weights, gamma, pairs,
                                              scale, acc)
            if pair_log_z == -np.inf:
                if chunk_bad < 0:
                    chunk_bad = s
                continue
            chunk_log_z += pair_log_z
            collapse_states(gamma, n_src, n_tgt, cell_post, base)
            add_bucket_counts(pairs, table, theta, n_src, max_jump, sizes, 1.0, chunk_buckets)
        buckets[c] = chunk_buckets
        log_z[c] = chunk_log_z
        bad[c] = chunk_bad
    return buckets.sum(axis=0), log_z, first_bad(bad)


@njit(cache=True)
def collapse_states(gamma, n_src, n_tgt, cell_post, base):
    """Per-cell posteriors from the 2I state marginals: NULL states summed into cell I."""
    for j in range(n_tgt):
        first = base + j * (n_src + 1)
        null = 0.0
        for i in range(n_src):
            cell_post[first + i] = gamma[j, i]
            null += gamma[j, n_src + i]
        cell_post[first + n_src] = null


@njit(cache=True)
def argmax_segments(values, lengths):
    """Index of the largest value within each consecutive segment (ties: the first)."""
    out = np.empty(lengths.shape[0], dtype=np.int64)
    start = 0
    for t in range(lengths.shape[0]):
        best = 0
        for i in range(1, lengths[t]):
            if values[start + i] > values[start + best]:
                best = i
        out[t] = best
        start += lengths[t]
    return out

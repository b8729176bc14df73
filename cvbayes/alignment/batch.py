"""E-steps of EM and VB: every sentence pair sees the same tables.

The tables do not change within a pass, so sentence pairs are processed in
parallel over chunks of equal work (``prange``).  Each pair writes its own
per-cell posteriors, so no thread ever writes another's memory; the slot
counts are summed afterwards (``AlignmentData.slot_totals``), which keeps
per-thread copies of the (large) translation table out of memory.
"""
import math

import numpy as np
from numba import njit, prange

from ..inference.sweeps import first_bad, max_length
from .chain import alignment_buffers, alignment_posteriors
from .jumps import add_bucket_counts, bucket_sizes, jump_matrix


@njit(parallel=True, cache=True)
def ibm1_expectations(slot_table, src_offsets, tgt_offsets, cell_offsets, cell_slot, chunk_bounds, cell_post):
    """IBM Model 1 E-step (Brown et al. 1993): q(a_j = i) = t(e_j | f_i) / sum_i' t(e_j | f_i').

    ``slot_table`` holds t(e | f) per slot (the MAP table for EM, exp E[log t]
    for VB, eq. 3.21-3.22).  Writes q into ``cell_post`` (i = I is NULL).

    Returns (log_z, first_bad): sum over pairs of log p(e | f) =
    sum_j log(sum_i t(e_j | f_i) / (I + 1)), and the first pair whose target
    word no candidate can emit (-1 if none).
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
    return log_z.sum(), first_bad(bad)


@njit(parallel=True, cache=True)
def hmm_expectations(slot_table, theta, p0, max_jump, src_offsets, tgt_offsets, cell_offsets, cell_slot,
                     chunk_bounds, cell_post):
    """HMM aligner E-step (Baum-Welch, thesis eq. 3.16-3.17, on the chain of alignment/chain.py).

    ``slot_table`` holds t(e | f) per slot and ``theta`` the jump buckets
    (MAP for EM; exp E[log .] for VB, eq. 3.21-3.22).  Writes the per-cell
    posteriors q(a_j = i) into ``cell_post`` (NULL states summed into i = I).

    Returns (bucket_counts, log_z, first_bad): the expected jump-bucket
    counts, sum over pairs of log p(e | f), and the first pair no alignment
    explains (-1 if none).
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
    return buckets.sum(axis=0), log_z.sum(), first_bad(bad)


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

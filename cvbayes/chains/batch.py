"""Forward-backward over many chains under one parameter table, in parallel over chunks of chains.

The chains lie end to end (``offsets``); token t reads emission row ``index[t]`` of ``table``
(`forward_backward.fill_rows_from_table`), restricted by the tag dictionary ``mask`` when one is
given.  Every driver returns or reports the first chain that no state path can explain.  The
E-step that also gathers the family's statistics is the HMM's (models/hmm_kernels.py).
"""
import numpy as np
from numba import prange

from ..core.sampling import uniform, unit_generator
from ..core.units import first_bad, max_length, parallel_over_chunks
from .forward_backward import (FAST, chain_buffers, fill_rows_from_table, forward_log_z, table_forward_backward,
                               viterbi)

MPD = 0
VITERBI = 1


@parallel_over_chunks()
def batch_log_evidence(start, trans, table, table_log_offset, mask, index, offsets, chunk_bounds):
    """log Z_i of every chain under one parameter table (eq. 3.108)."""
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


@parallel_over_chunks()
def batch_decode(start, trans, table, table_log_offset, mask, index, offsets, chunk_bounds,
                 method, out_states, out_posteriors):
    """Max-posterior (MPD, eq. 3.16) or Viterbi states of every chain.

    ``out_posteriors`` (N, K) receives q(z_t) for MPD (pass a (0, K) array to
    skip).  Returns the first chain with zero probability, or -1.
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
            if method == VITERBI:
                ok = fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik) > -np.inf
                if ok:
                    ok = viterbi(log_start, log_trans, lik, end - begin, path) > -np.inf
                    for t in range(end - begin):
                        out_states[begin + t] = path[t]
            else:
                ok = table_forward_backward(start, trans, table, table_log_offset, mask, index, begin, end, lik, fwd,
                                            bwd, gamma, outer) > -np.inf
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


@parallel_over_chunks()
def batch_local_posteriors(start, trans, table, table_log_offset, mask, index, offsets,
                           chunk_bounds, marginals, local_pairs):
    """Store every chain's q(z_t) and expected transitions under one table.

    Starts the collapsed algorithms from given parameters (an ``init`` dict).
    ``local_pairs`` may have zero slots when only marginals are wanted.
    Returns the first chain with zero probability, or -1.
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
            if table_forward_backward(start, trans, table, table_log_offset, mask, index, begin, end, lik, fwd, bwd,
                                      gamma, outer) == -np.inf:
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


@parallel_over_chunks(fastmath=FAST)
def random_chain_posteriors(seed, offsets, n_states, mask, index, chunk_bounds, marginals, local_pairs):
    """Random local posteriors q(z_t | z_{t-1}) ∝ U[0, 1] (thesis footnote 5).

    Each chain gets a heterogeneous Markov chain with uniform random rows
    (restricted to the tag dictionary when one is given), drawn from its own
    generator seeded by (seed, chain index), so the draw does not depend on
    the number of threads.  Writes the chain's marginals to ``marginals``
    (N, K) float32 and, when ``local_pairs`` has one slot per chain, its
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
    for c in prange(n_chunks):
        prev = np.empty(n_states)
        cur = np.empty(n_states)
        allowed = np.ones(n_states)
        row = np.empty(n_states)
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            state = unit_generator(seed, i)
            for t in range(offsets[i], offsets[i + 1]):
                if use_mask:
                    for k in range(n_states):
                        allowed[k] = mask[index[t], k]
                if t == offsets[i]:
                    total = 0.0
                    for k in range(n_states):
                        cur[k] = uniform(state) * allowed[k]
                        total += cur[k]
                    # a token no state may take (an empty tag dictionary row) gets no mass; the
                    # E-step then reports its chain
                    for k in range(n_states):
                        cur[k] = np.float32(cur[k] / total if total > 0.0 else 0.0)
                        start_acc[c, k] += cur[k]
                else:
                    for k in range(n_states):
                        cur[k] = 0.0
                    for j in range(n_states):
                        total = 0.0
                        for k in range(n_states):
                            row[k] = uniform(state) * allowed[k]
                            total += row[k]
                        weight = prev[j] / total if total > 0.0 else 0.0
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

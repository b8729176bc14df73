"""Forward filtering, backward sampling of state paths under a slice (the beam sampler, Van Gael et al.
2008; thesis §5.5.1).

Given transition rows theta (row 0 the start row), slice variables u_t and emission weights, the
beam sampler draws z from p(z | u, theta, phi, x), in which only transitions with theta_{z_{t-1} z_t}
> u_t are allowed (Van Gael et al. 2008, eq. 3).  The forward filter visits each row's columns in
decreasing theta and stops at the first one at or below u_t, so a step costs the allowed transitions
only.  Every uniform is drawn beforehand (`cvbayes.core.sampling.pick`), so a run does not depend on
the number of threads.
"""
import numpy as np
from numba import njit, prange

from ..core.sampling import pick
from ..core.units import equal_token_chunks, parallel_over_chunks


@njit(cache=True)
def _ffbs_one(trans, trans_t, order, lik, index, slice_u, draws, begin, end, alpha, weights, states):
    """Slice-restricted forward filter, backward sampler for one sequence.

    ``alpha[t, k]`` ∝ lik_t(k) sum_{j : theta_jk > u_t} alpha[t-1, j]; the
    columns of each row are visited in decreasing ``theta`` order and the scan
    stops at the first entry <= u_t, so a step costs the number of allowed
    transitions out of the states with alpha > 0.  Returns False when the
    messages underflow (the caller then uses the log-space version).
    """
    n_states = trans.shape[1]
    n_steps = end - begin
    for t in range(n_steps):
        cur = alpha[t]
        for k in range(n_states):
            cur[k] = 0.0
        u = slice_u[begin + t]
        if t == 0:
            for idx in range(n_states):
                k = order[0, idx]
                if trans[0, k] <= u:
                    break
                cur[k] = 1.0
        else:
            prev = alpha[t - 1]
            for j in range(n_states):
                a = prev[j]
                if a == 0.0:
                    continue
                row = j + 1
                for idx in range(n_states):
                    k = order[row, idx]
                    if trans[row, k] <= u:
                        break
                    cur[k] += a
        r = index[begin + t]
        total = 0.0
        for k in range(n_states):
            v = cur[k]
            if v != 0.0:
                v *= lik[r, k]
                cur[k] = v
                total += v
        if not total > 1e-290:
            return False
        inv = 1.0 / total
        for k in range(n_states):
            cur[k] *= inv
    k = pick(alpha[n_steps - 1], n_states, draws[end - 1])
    states[end - 1] = k
    for t in range(n_steps - 1, 0, -1):
        u = slice_u[begin + t]
        prev = alpha[t - 1]
        for j in range(n_states):
            weights[j] = prev[j] if trans_t[k, j + 1] > u else 0.0
        k = pick(weights, n_states, draws[begin + t - 1])
        states[begin + t - 1] = k
    return True


@njit(cache=True)
def beam_ffbs_log(trans, log_lik, index, slice_u, draws, begin, end, states):
    """Log-space `_ffbs_one` for one sequence (a dense scan; for the sequences whose linear-space
    messages underflowed, which `beam_ffbs` flags).  ``log_lik`` (R, K) holds log emission weights."""
    n_states = trans.shape[1]
    n_steps = end - begin
    log_alpha = np.full((n_steps, n_states), -np.inf)
    weights = np.empty(n_states)
    for t in range(n_steps):
        u = slice_u[begin + t]
        r = index[begin + t]
        for k in range(n_states):
            acc = -np.inf
            if t == 0:
                if trans[0, k] > u:
                    acc = 0.0
            else:
                for j in range(n_states):
                    a = log_alpha[t - 1, j]
                    if a > -np.inf and trans[j + 1, k] > u:
                        acc = np.logaddexp(acc, a)
            if acc > -np.inf:
                log_alpha[t, k] = acc + log_lik[r, k]
        top = log_alpha[t].max()
        for k in range(n_states):
            log_alpha[t, k] -= top
    for k in range(n_states):
        weights[k] = np.exp(log_alpha[n_steps - 1, k])
    k = pick(weights, n_states, draws[end - 1])
    states[end - 1] = k
    for t in range(n_steps - 1, 0, -1):
        u = slice_u[begin + t]
        for j in range(n_states):
            weights[j] = np.exp(log_alpha[t - 1, j]) if trans[j + 1, k] > u else 0.0
        k = pick(weights, n_states, draws[begin + t - 1])
        states[begin + t - 1] = k


@njit(cache=True)
def _ffbs_sequences(trans, trans_t, order, lik, index, slice_u, draws, offsets, first_seq, last_seq,
                    longest, states, failed):
    """`_ffbs_one` on sequences first_seq..last_seq-1 (one thread's share)."""
    n_states = trans.shape[1]
    alpha = np.empty((longest, n_states))
    weights = np.empty(n_states)
    for i in range(first_seq, last_seq):
        begin = offsets[i]
        end = offsets[i + 1]
        if end > begin:
            ok = _ffbs_one(trans, trans_t, order, lik, index, slice_u, draws, begin, end,
                           alpha, weights, states)
            failed[i] = not ok


@parallel_over_chunks()
def _ffbs_parallel(trans, trans_t, order, lik, index, slice_u, draws, offsets, chunk_bounds, longest,
                   states, failed):
    for c in prange(chunk_bounds.shape[0] - 1):
        _ffbs_sequences(trans, trans_t, order, lik, index, slice_u, draws, offsets, chunk_bounds[c],
                        chunk_bounds[c + 1], longest, states, failed)


def beam_ffbs(trans, order, lik, index, slice_u, draws, offsets, states, failed):
    """Sample every sequence's states given theta, the slice and the emissions.

    Parameters
    ----------
    trans : (K+1, K) theta restricted to the instantiated states; row 0 is
        the start row theta_0, row j+1 leaves state j.
    order : (K+1, K) int64, the columns of each row by decreasing ``trans``.
    lik : (R, K) emission weights (any positive scale per row); token t reads
        row ``index[t]``.
    slice_u, draws : (N,) slice variables u_t and uniforms for the backward draws.
    states : (N,) int32, written.
    failed : (I,) bool, set for sequences whose linear-space messages underflowed
        (their states are left for the log-space fallback).

    Threads over sequences when the work is large enough (`equal_token_chunks`, at most K^2 steps a
    token); results do not depend on it (the uniforms are drawn beforehand).
    """
    longest = max(int(np.diff(offsets).max()), 1)
    trans_t = np.ascontiguousarray(trans.T)
    _ffbs_parallel(trans, trans_t, order, lik, index, slice_u, draws, offsets,
                   equal_token_chunks(offsets, trans.shape[1] ** 2), longest, states, failed)

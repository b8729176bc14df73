"""Forward-backward, Viterbi and emission-row kernels for one chain.

Every inference algorithm in cvbayes runs on these kernels: EM, VB, CVI and the
score/decode paths differ only in the tables they pass in (thesis §3.3.1, §3.5:
"the dynamic programming used in the EM algorithm can be applied here").

Conventions
-----------
* ``start`` (K,) is the start-state row theta_0 of eq. 3.1 and ``trans`` (K, K)
  the transition table theta_{j,k}; both are probabilities (MLE, exp E[log], or
  surrogate parameters).
* ``lik`` (T, K) holds one emission row per token, already divided by its row
  maximum; the caller adds the log of those maxima to log Z.  Scaling each row
  keeps continuous densities and extreme priors (1e-6) inside float range.
* Forward messages are normalised at every step (scaled forward-backward), so
  T = 10^5 costs nothing in range.
"""
import numpy as np
from numba import njit

# Reassociation lets LLVM vectorise the K-long reductions; no NaN/Inf
# assumptions are made, so a zero-probability sequence still shows up as -inf.
FAST = {"reassoc", "contract", "arcp", "nsz"}


@njit(cache=True, fastmath=FAST)
def fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik):
    """Gather and max-normalise emission rows ``table[index[t]]``.

    ``table`` is (R, K) likelihoods indexed by word id (categorical) or token
    position (continuous families); ``table_log_offset`` (R,) is the log scale
    the family already took out of each row.  ``mask`` (W, K) of 0/1 is the tag
    dictionary of §3.8.1 (empty when unused).  Returns the summed log scale;
    -inf marks a token on which every state has zero probability.
    """
    n_states = table.shape[1]
    use_mask = mask.shape[0] > 0
    log_scale = 0.0
    for t in range(begin, end):
        row = lik[t - begin]
        r = index[t]
        peak = 0.0
        for k in range(n_states):
            v = table[r, k]
            if use_mask:
                v *= mask[r, k]
            row[k] = v
            if v > peak:
                peak = v
        if peak <= 0.0:
            return -np.inf
        inv = 1.0 / peak
        for k in range(n_states):
            row[k] *= inv
        log_scale += np.log(peak) + table_log_offset[r]
    return log_scale


@njit(cache=True, fastmath=FAST)
def normalise_log_rows(log_lik, lik):
    """Turn log-likelihood rows into max-normalised rows; return the log scale."""
    n_steps, n_states = log_lik.shape
    log_scale = 0.0
    for t in range(n_steps):
        peak = -np.inf
        for k in range(n_states):
            if log_lik[t, k] > peak:
                peak = log_lik[t, k]
        if peak == -np.inf:
            return -np.inf
        for k in range(n_states):
            lik[t, k] = np.exp(log_lik[t, k] - peak)
        log_scale += peak
    return log_scale


@njit(cache=True, fastmath=FAST)
def forward_backward(start, trans, lik, n_steps, alpha, beta, gamma, pair_outer):
    """Scaled forward-backward on one chain (eq. 3.16-3.17).

    Parameters
    ----------
    start, trans : the parameter tables (see module notes).
    lik : (>= n_steps, K) max-normalised emission rows.
    alpha, beta : (>= n_steps, K) work buffers.
    gamma : (>= n_steps, K) output, the marginals q(z_t).
    pair_outer : (K, K) accumulator; receives
        ``sum_t alpha_{t-1}(j) * lik_t(k) beta_t(k) / c_t``.  Multiplying it
        elementwise by ``trans`` gives the expected transition counts
        ``sum_t q(z_{t-1}=j, z_t=k)`` of eq. 3.17; the caller does that once per
        table instead of once per token.

    Returns
    -------
    float
        log Z of the chain, excluding the emission row scales.
    """
    n_states = start.shape[0]
    if n_steps == 0:
        return 0.0
    log_z = 0.0
    # forward: alpha_t = (alpha_{t-1} @ trans) * lik_t, normalised
    total = 0.0
    for k in range(n_states):
        v = start[k] * lik[0, k]
        alpha[0, k] = v
        total += v
    if total <= 0.0:
        return -np.inf
    inv = 1.0 / total
    for k in range(n_states):
        alpha[0, k] *= inv
    log_z += np.log(total)
    scale = np.empty(n_steps)
    scale[0] = total
    for t in range(1, n_steps):
        cur = alpha[t]
        for k in range(n_states):
            cur[k] = 0.0
        prev = alpha[t - 1]
        for j in range(n_states):
            a = prev[j]
            if a != 0.0:
                row = trans[j]
                for k in range(n_states):
                    cur[k] += a * row[k]
        total = 0.0
        for k in range(n_states):
            cur[k] *= lik[t, k]
            total += cur[k]
        if total <= 0.0:
            return -np.inf
        inv = 1.0 / total
        for k in range(n_states):
            cur[k] *= inv
        scale[t] = total
        log_z += np.log(total)
    # backward: beta_{t-1}(j) = sum_k trans[j,k] lik_t(k) beta_t(k) / c_t
    last = n_steps - 1
    for k in range(n_states):
        beta[last, k] = 1.0
    weighted = np.empty(n_states)
    for t in range(last, 0, -1):
        inv = 1.0 / scale[t]
        for k in range(n_states):
            weighted[k] = lik[t, k] * beta[t, k] * inv
        prev = alpha[t - 1]
        for j in range(n_states):
            row = trans[j]
            acc = 0.0
            for k in range(n_states):
                acc += row[k] * weighted[k]
            beta[t - 1, j] = acc
            a = prev[j]
            if a != 0.0:
                out = pair_outer[j]
                for k in range(n_states):
                    out[k] += a * weighted[k]
    for t in range(n_steps):
        for k in range(n_states):
            gamma[t, k] = alpha[t, k] * beta[t, k]
    return log_z


@njit(cache=True, fastmath=FAST)
def forward_log_z(start, trans, lik, n_steps, alpha):
    """Forward pass only: log Z of one chain (eq. 3.108 numerator)."""
    n_states = start.shape[0]
    if n_steps == 0:
        return 0.0
    total = 0.0
    for k in range(n_states):
        alpha[0, k] = start[k] * lik[0, k]
        total += alpha[0, k]
    if total <= 0.0:
        return -np.inf
    log_z = np.log(total)
    for k in range(n_states):
        alpha[0, k] /= total
    for t in range(1, n_steps):
        for k in range(n_states):
            alpha[t, k] = 0.0
        for j in range(n_states):
            a = alpha[t - 1, j]
            if a != 0.0:
                for k in range(n_states):
                    alpha[t, k] += a * trans[j, k]
        total = 0.0
        for k in range(n_states):
            alpha[t, k] *= lik[t, k]
            total += alpha[t, k]
        if total <= 0.0:
            return -np.inf
        log_z += np.log(total)
        for k in range(n_states):
            alpha[t, k] /= total
    return log_z


@njit(cache=True)
def viterbi(log_start, log_trans, lik, n_steps, out_states):
    """Most probable state path of one chain, in log space.

    ``lik`` rows are max-normalised probabilities (as for forward_backward);
    their logs differ from the true emission logs by a per-token constant,
    which does not move the argmax.  Returns the path's log score (without
    the row scales), -inf if no path has positive probability.
    """
    n_states = log_start.shape[0]
    if n_steps == 0:
        return 0.0
    delta = np.empty((n_steps, n_states))
    back = np.empty((n_steps, n_states), dtype=np.int32)
    for k in range(n_states):
        delta[0, k] = log_start[k] + np.log(lik[0, k])
    for t in range(1, n_steps):
        for k in range(n_states):
            best = -np.inf
            arg = 0
            for j in range(n_states):
                v = delta[t - 1, j] + log_trans[j, k]
                if v > best:
                    best = v
                    arg = j
            delta[t, k] = best + np.log(lik[t, k])
            back[t, k] = arg
    best = -np.inf
    arg = 0
    for k in range(n_states):
        if delta[n_steps - 1, k] > best:
            best = delta[n_steps - 1, k]
            arg = k
    out_states[n_steps - 1] = arg
    for t in range(n_steps - 1, 0, -1):
        arg = back[t, arg]
        out_states[t - 1] = arg
    return best

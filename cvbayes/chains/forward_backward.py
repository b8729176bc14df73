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

from ..core.special import FAST



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


@njit(cache=True)
def chain_buffers(longest, n_states):
    """Work rows for chains of up to ``longest`` tokens: (lik, alpha, beta, gamma)."""
    return (np.empty((longest, n_states)), np.empty((longest, n_states)),
            np.empty((longest, n_states)), np.empty((longest, n_states)))


@njit(cache=True, fastmath=FAST)
def vec_mat(vec, mat, out):
    """out = vec @ mat, four rows of ``mat`` per pass so each load of out[k]
    feeds four multiply-adds (the forward step and CVI-1's sum_j r_j G_jk).

    Blocks of four zero entries in ``vec`` are skipped: under a tag
    dictionary a token allows about two of K states, so this turns the
    O(K^2) step into O(K) per allowed state.
    """
    n_rows, width = mat.shape
    for k in range(width):
        out[k] = 0.0
    j = 0
    while j + 4 <= n_rows:
        a0 = vec[j]
        a1 = vec[j + 1]
        a2 = vec[j + 2]
        a3 = vec[j + 3]
        if a0 == 0.0 and a1 == 0.0 and a2 == 0.0 and a3 == 0.0:
            j += 4
            continue
        r0 = mat[j]
        r1 = mat[j + 1]
        r2 = mat[j + 2]
        r3 = mat[j + 3]
        for k in range(width):
            out[k] += a0 * r0[k] + a1 * r1[k] + a2 * r2[k] + a3 * r3[k]
        j += 4
    while j < n_rows:
        a0 = vec[j]
        r0 = mat[j]
        for k in range(width):
            out[k] += a0 * r0[k]
        j += 1


@njit(cache=True, fastmath=FAST)
def mat_vec(mat, vec, out, needed):
    """out = mat @ vec, four dot products per pass over ``vec``.

    Only rows j with ``needed[j] != 0`` are computed (the others are set to
    zero), in blocks of four: the callers pass the next token's emission row,
    which is zero for every state the tag dictionary excludes.
    """
    n_rows, width = mat.shape
    j = 0
    while j + 4 <= n_rows:
        if needed[j] == 0.0 and needed[j + 1] == 0.0 and needed[j + 2] == 0.0 and needed[j + 3] == 0.0:
            out[j] = 0.0
            out[j + 1] = 0.0
            out[j + 2] = 0.0
            out[j + 3] = 0.0
            j += 4
            continue
        r0 = mat[j]
        r1 = mat[j + 1]
        r2 = mat[j + 2]
        r3 = mat[j + 3]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for k in range(width):
            w = vec[k]
            s0 += r0[k] * w
            s1 += r1[k] * w
            s2 += r2[k] * w
            s3 += r3[k] * w
        out[j] = s0
        out[j + 1] = s1
        out[j + 2] = s2
        out[j + 3] = s3
        j += 4
    while j < n_rows:
        r0 = mat[j]
        s0 = 0.0
        for k in range(width):
            s0 += r0[k] * vec[k]
        out[j] = s0
        j += 1


@njit(cache=True, fastmath=FAST)
def _forward(start, trans, lik, n_steps, alpha, scale):
    """Scaled forward pass; alpha[t] = p(z_t | x_1..t), scale[t] = p(x_t | x_<t)
    (up to the emission row scales).  Returns log Z or -inf."""
    n_states = start.shape[0]
    log_z = 0.0
    for t in range(n_steps):
        cur = alpha[t]
        if t == 0:
            for k in range(n_states):
                cur[k] = start[k]
        else:
            vec_mat(alpha[t - 1], trans, cur)
        total = 0.0
        for k in range(n_states):
            cur[k] *= lik[t, k]
            total += cur[k]
        if not total > 0.0:
            return -np.inf
        inv = 1.0 / total
        for k in range(n_states):
            cur[k] *= inv
        scale[t] = total
        log_z += np.log(total)
    return log_z


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
        log Z of the chain, excluding the emission row scales; -inf when no
        state path has positive probability.
    """
    log_z = chain_marginals(start, trans, lik, n_steps, alpha, beta, gamma)
    if log_z > -np.inf:
        add_pair_outer(alpha, beta, 1, n_steps, pair_outer)
    return log_z


@njit(cache=True, fastmath=FAST)
def table_forward_backward(start, trans, table, table_log_offset, mask, index, begin, end, lik, alpha, beta, gamma,
                           pair_outer):
    """`forward_backward` on the chain of tokens ``begin .. end - 1`` under one parameter table: its emission
    rows (`fill_rows_from_table`), then eq. 3.16-3.17.  Returns the chain's log Z including the row scales
    (eq. 3.108), or -inf when no state path explains it."""
    log_scale = fill_rows_from_table(table, table_log_offset, mask, index, begin, end, lik)
    if log_scale == -np.inf:
        return -np.inf
    return forward_backward(start, trans, lik, end - begin, alpha, beta, gamma, pair_outer) + log_scale


@njit(cache=True, fastmath=FAST)
def chain_marginals(start, trans, lik, n_steps, alpha, beta, gamma):
    """The forward and backward passes of `forward_backward`, without pair counts.

    Afterwards ``beta[t]`` (t >= 1) holds the weighted row lik_t beta_t / c_t,
    which `add_pair_outer` turns into pair counts for any range of t.
    """
    n_states = start.shape[0]
    if n_steps == 0:
        return 0.0
    # gamma[:, 0] holds the forward scales until gamma[t] itself is written
    scale = gamma[:, 0]
    log_z = _forward(start, trans, lik, n_steps, alpha, scale)
    if log_z == -np.inf:
        return log_z
    last = n_steps - 1
    for k in range(n_states):
        beta[last, k] = 1.0
    for t in range(last, 0, -1):
        inv = 1.0 / scale[t]
        bt = beta[t]
        for k in range(n_states):
            gamma[t, k] = alpha[t, k] * bt[k]
            # beta[t] becomes the weighted row lik_t beta_t / c_t, which both
            # the backward step and the pair counts need
            bt[k] = lik[t, k] * bt[k] * inv
        mat_vec(trans, bt, beta[t - 1], lik[t - 1])
    for k in range(n_states):
        gamma[0, k] = alpha[0, k] * beta[0, k]
    return log_z


@njit(cache=True, fastmath=FAST)
def add_pair_outer(alpha, beta, first, last, pair_outer):
    """pair_outer += sum_{t=first}^{last-1} alpha[t-1] (x) beta[t], four steps a pass.

    With ``alpha`` and ``beta`` as `chain_marginals` leaves them, this times
    ``trans`` is the expected count of the transitions into z_first..z_{last-1}.
    """
    n_states = pair_outer.shape[0]
    t = first
    while t + 4 <= last:
        w0 = beta[t]
        w1 = beta[t + 1]
        w2 = beta[t + 2]
        w3 = beta[t + 3]
        for j in range(n_states):
            a0 = alpha[t - 1, j]
            a1 = alpha[t, j]
            a2 = alpha[t + 1, j]
            a3 = alpha[t + 2, j]
            if a0 == 0.0 and a1 == 0.0 and a2 == 0.0 and a3 == 0.0:
                continue
            out = pair_outer[j]
            for k in range(n_states):
                out[k] += a0 * w0[k] + a1 * w1[k] + a2 * w2[k] + a3 * w3[k]
        t += 4
    while t < last:
        w0 = beta[t]
        for j in range(n_states):
            a0 = alpha[t - 1, j]
            if a0 == 0.0:
                continue
            out = pair_outer[j]
            for k in range(n_states):
                out[k] += a0 * w0[k]
        t += 1


@njit(cache=True, fastmath=FAST)
def forward_log_z(start, trans, lik, n_steps, alpha):
    """Forward pass only: log Z of one chain (eq. 3.108 numerator)."""
    if n_steps == 0:
        return 0.0
    return _forward(start, trans, lik, n_steps, alpha, np.empty(n_steps))


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

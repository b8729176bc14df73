"""Forward-backward for the HMM aligner with NULL (Vogel et al. 1996; Och and Ney 2003).

A sentence pair with I source and J target words is a chain of J steps over
2I states: state i < I aligns the target word to source position i; state
I + m aligns it to NULL and remembers m, the last real position, so that the
next jump starts from there (Och and Ney 2003, §3.1).  From any state whose
memory is m:

    to real i   with (1 - p0) p(i | m)      (the jump model, alignment/jumps.py)
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
"""
import math

import numpy as np
from numba import njit

from ..chains.forward_backward import FAST


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

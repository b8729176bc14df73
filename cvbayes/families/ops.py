"""Numba-side operations of the conjugate emission families (thesis §3.7).

Every family keeps its expected sufficient statistics in one float64 table
``stats`` of shape (S, K), one column per state, so that subtracting or adding
a token's contribution is a handful of contiguous row updates:

* Categorical-Dirichlet: S = W + 1; row w holds E[C_{k,w}], row W the totals
  E[C_{.,k}] (eq. 3.7-3.8).
* Diagonal Gaussian with a Normal-Gamma prior: S = 1 + 2D; row 0 holds the
  expected counts, rows 1..D the weighted sums of x_d and rows D+1..2D the
  weighted sums of x_d^2 (the s(w) of eq. 3.83, 3.85-3.86).

Observations reach the kernels as ``index`` (int32, the word id for
categorical data and the token position for continuous data) plus
``features`` (N, D) float64 (an (N, 0) array for categorical data).

The collapsed algorithms need the posterior predictive of one observation
given everyone else's statistics (eq. 3.96): the Dirichlet-categorical ratio of
eq. 3.50, or a Student-t for the Gaussian.  New families add a code here and a
branch in the three dispatch functions below.
"""
import math

import numpy as np
from numba import njit

CATEGORICAL = 0
GAUSSIAN = 1


@njit(cache=True)
def add_token_stats(family, stats, index, features, t, weights, sign):
    """stats += sign * weights[k] * s(x_t) for every state k."""
    n_states = weights.shape[0]
    if family == CATEGORICAL:
        w = index[t]
        totals = stats.shape[0] - 1
        for k in range(n_states):
            stats[w, k] += sign * weights[k]
            stats[totals, k] += sign * weights[k]
    else:
        n_dims = features.shape[1]
        for k in range(n_states):
            stats[0, k] += sign * weights[k]
        for d in range(n_dims):
            x = features[t, d]
            xx = x * x
            for k in range(n_states):
                stats[1 + d, k] += sign * weights[k] * x
                stats[1 + n_dims + d, k] += sign * weights[k] * xx


@njit(cache=True)
def _student_t_constants(stats, prior, k, d, n_dims, out):
    """Student-t predictive of state k, dimension d (Normal-Gamma posterior).

    Writes (location, log normaliser, 1 / (nu * scale^2), (nu + 1) / 2) to out.
    """
    mu0 = prior[0, d]
    kappa0 = prior[1, d]
    a0 = prior[2, d]
    b0 = prior[3, d]
    n = max(stats[0, k], 0.0)
    s1 = stats[1 + d, k]
    s2 = stats[1 + n_dims + d, k]
    kappa = kappa0 + n
    mean = (kappa0 * mu0 + s1) / kappa
    a = a0 + 0.5 * n
    # b_n = b0 + (sum x^2 + kappa0 mu0^2 - kappa_n mu_n^2) / 2, floored at b0 for
    # the rounding of near-empty states
    b = b0 + 0.5 * max(s2 + kappa0 * mu0 * mu0 - kappa * mean * mean, 0.0)
    nu = 2.0 * a
    scale2 = b * (kappa + 1.0) / (a * kappa)
    out[0] = mean
    out[1] = (math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu)
              - 0.5 * math.log(nu * math.pi * scale2))
    out[2] = 1.0 / (nu * scale2)
    out[3] = 0.5 * (nu + 1.0)


@njit(cache=True)
def predictive_rows(family, stats, prior, index, features, begin, end, mask, lik):
    """Posterior-predictive emission rows for tokens begin..end (eq. 3.50, 3.96).

    ``stats`` must already exclude the tokens' own contribution.  Rows are
    max-normalised into ``lik``; returns their summed log scale (-inf when some
    token has no admissible state).
    """
    n_states = stats.shape[1]
    use_mask = mask.shape[0] > 0
    log_scale = 0.0
    if family == CATEGORICAL:
        totals = stats.shape[0] - 1
        # a (1, 1) prior is the symmetric beta; a (W + 1, 1) one holds beta tau_w
        # and its total beta (the HDP-HMM's emission prior, thesis §5.5.3)
        asymmetric = prior.shape[0] > 1
        beta = prior[0, 0]
        w_beta = prior[totals, 0] if asymmetric else totals * beta
        for t in range(begin, end):
            w = index[t]
            row = lik[t - begin]
            peak = 0.0
            if asymmetric:
                beta = prior[w, 0]
            for k in range(n_states):
                v = (max(stats[w, k], 0.0) + beta) / (max(stats[totals, k], 0.0) + w_beta)
                if use_mask:
                    v *= mask[w, k]
                row[k] = v
                if v > peak:
                    peak = v
            if peak <= 0.0:
                return -np.inf
            inv = 1.0 / peak
            for k in range(n_states):
                row[k] *= inv
            log_scale += math.log(peak)
        return log_scale
    n_dims = features.shape[1]
    consts = np.empty((n_states, n_dims, 4))
    for k in range(n_states):
        for d in range(n_dims):
            _student_t_constants(stats, prior, k, d, n_dims, consts[k, d])
    for t in range(begin, end):
        row = lik[t - begin]
        peak = -np.inf
        for k in range(n_states):
            v = 0.0
            for d in range(n_dims):
                c = consts[k, d]
                z = features[t, d] - c[0]
                v += c[1] - c[3] * math.log1p(z * z * c[2])
            row[k] = v
            if v > peak:
                peak = v
        for k in range(n_states):
            row[k] = math.exp(row[k] - peak)
        log_scale += peak
    return log_scale


@njit(cache=True)
def log_marginal_likelihood(family, stats, prior):
    """log p(x | z) with the emission parameters integrated out (eq. 3.24)."""
    n_states = stats.shape[1]
    total = 0.0
    if family == CATEGORICAL:
        n_words = stats.shape[0] - 1
        beta = prior[0, 0]
        for k in range(n_states):
            total += math.lgamma(n_words * beta) - math.lgamma(n_words * beta + stats[n_words, k])
            for w in range(n_words):
                c = stats[w, k]
                if c != 0.0:
                    total += math.lgamma(beta + c) - math.lgamma(beta)
        return total
    n_dims = (stats.shape[0] - 1) // 2
    for k in range(n_states):
        n = stats[0, k]
        for d in range(n_dims):
            mu0 = prior[0, d]
            kappa0 = prior[1, d]
            a0 = prior[2, d]
            b0 = prior[3, d]
            s1 = stats[1 + d, k]
            s2 = stats[1 + n_dims + d, k]
            kappa = kappa0 + n
            mean = (kappa0 * mu0 + s1) / kappa
            a = a0 + 0.5 * n
            b = b0 + 0.5 * max(s2 + kappa0 * mu0 * mu0 - kappa * mean * mean, 0.0)
            total += (math.lgamma(a) - math.lgamma(a0) + a0 * math.log(b0) - a * math.log(b)
                      + 0.5 * (math.log(kappa0) - math.log(kappa)) - 0.5 * n * math.log(2.0 * math.pi))
    return total

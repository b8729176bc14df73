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
given everyone else's statistics (eq. 3.96): the Dirichlet rule MEAN of
`cvbayes.core.rules` for categorical rows (eq. 3.50), a Student-t for the
Gaussian.  New families add a code here and a branch in the dispatch
functions below.
"""
import math

import numpy as np
from numba import njit, prange

from ..core.rules import mean_cell
from ..core.special import FAST

CATEGORICAL = 0
GAUSSIAN = 1
LOG_2PI = math.log(2.0 * math.pi)


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


@njit(cache=True, inline="always")
def add_token_state(family, stats, index, features, t, z, sign):
    """stats += sign * s(x_t) in state z alone: `add_token_stats` of a hard assignment (the samplers'
    moves), inlined into the samplers' per-token loops."""
    if family == CATEGORICAL:
        stats[index[t], z] += sign
        stats[stats.shape[0] - 1, z] += sign
    else:
        n_dims = features.shape[1]
        stats[0, z] += sign
        for d in range(n_dims):
            x = features[t, d]
            stats[1 + d, z] += sign * x
            stats[1 + n_dims + d, z] += sign * x * x


@njit(cache=True)
def token_stats(family, index, features, marginals, n_stats):
    """Family statistics sum_t q(z_t) s(x_t) from stored marginals (N, K)."""
    stats = np.zeros((n_stats, marginals.shape[1]))
    for t in range(marginals.shape[0]):
        add_token_stats(family, stats, index, features, t, marginals[t], 1.0)
    return stats


@njit(cache=True)
def state_stats(family, index, features, states, n_states, n_stats):
    """Family statistics of a hard assignment: sum_t s(x_t) [z_t = k] (the samplers' counts)."""
    stats = np.zeros((n_stats, n_states))
    for t in range(states.shape[0]):
        add_token_state(family, stats, index, features, t, states[t], 1.0)
    return stats


@njit(cache=True)
def normal_gamma_posterior(stats, prior, k, d, n_dims):
    """(kappa_n, mu_n, a_n, b_n) of state k, dimension d: the Normal-Gamma posterior from the prior
    rows (mu0, kappa0, a0, b0) of `Gaussian.prior_array` and the statistics (eq. 3.83-3.86)."""
    mu0 = prior[0, d]
    kappa0 = prior[1, d]
    n = max(stats[0, k], 0.0)
    kappa = kappa0 + n
    mean = (kappa0 * mu0 + stats[1 + d, k]) / kappa
    # b_n = b0 + (sum x^2 + kappa0 mu0^2 - kappa_n mu_n^2) / 2, floored at b0 for
    # the rounding of near-empty states
    b = prior[3, d] + 0.5 * max(stats[1 + n_dims + d, k] + kappa0 * mu0 * mu0 - kappa * mean * mean, 0.0)
    return kappa, mean, prior[2, d] + 0.5 * n, b


@njit(cache=True)
def normal_gamma_posteriors(stats, prior):
    """`normal_gamma_posterior` of every state and dimension: four (K, D) arrays."""
    n_dims = prior.shape[1]
    n_states = stats.shape[1]
    out = np.empty((4, n_states, n_dims))
    for k in range(n_states):
        for d in range(n_dims):
            out[0, k, d], out[1, k, d], out[2, k, d], out[3, k, d] = normal_gamma_posterior(stats, prior, k, d, n_dims)
    return out[0], out[1], out[2], out[3]


@njit(cache=True)
def _student_t_constants(stats, prior, k, d, n_dims, out):
    """Student-t predictive of state k, dimension d (eq. 3.96): writes (location,
    log normaliser, 1 / (nu * scale^2), (nu + 1) / 2) to out."""
    kappa, mean, a, b = normal_gamma_posterior(stats, prior, k, d, n_dims)
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

    ``stats`` must already exclude the tokens' own contribution.  ``prior`` is the
    family's `prior_array`: [[beta]] (symmetric), or beta tau_w for w < W then the
    total beta (the HDP-HMM's emission prior, §5.5.3).  Rows are max-normalised
    into ``lik``; returns their summed log scale (-inf when some token has no
    admissible state).
    """
    n_states = stats.shape[1]
    use_mask = mask.shape[0] > 0
    log_scale = 0.0
    if family == CATEGORICAL:
        totals = stats.shape[0] - 1
        asymmetric = prior.shape[0] > 1
        pseudo = prior[0, 0]
        row_prior = prior[totals, 0] if asymmetric else totals * pseudo
        for t in range(begin, end):
            w = index[t]
            row = lik[t - begin]
            if asymmetric:
                pseudo = prior[w, 0]
            peak = 0.0
            for k in range(n_states):
                v = mean_cell(stats[w, k], pseudo, stats[totals, k], row_prior)
                if use_mask:
                    v *= mask[w, k]
                row[k] = v
                peak = max(peak, v)
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
def gaussian_log_density(features, means, precisions):
    """(N, K) log N(x_t | mu_k, 1 / tau_k) of diagonal Gaussians, without an (N, K, D) temporary."""
    n_tokens, n_dims = features.shape
    n_states = means.shape[0]
    const = np.zeros(n_states)
    for k in range(n_states):
        for d in range(n_dims):
            const[k] += 0.5 * (math.log(precisions[k, d]) - LOG_2PI)
    out = np.empty((n_tokens, n_states))
    for t in range(n_tokens):
        for k in range(n_states):
            acc = const[k]
            for d in range(n_dims):
                diff = features[t, d] - means[k, d]
                acc -= 0.5 * precisions[k, d] * diff * diff
            out[t, k] = acc
    return out


# -- mixtures of diagonal Gaussians (cvbayes.families.gaussian.GaussianMixture) -----------------------
#
# A mixture's components are consecutive columns of the (1 + 2D, K) statistics table: mixture c owns
# columns c * M .. c * M + M - 1.  The kernels below turn per-component log densities (T, K) into
# per-mixture emission rows and the responsibilities of each mixture's components.

# the (1 + q) factors of this many dimensions are multiplied before the running product is cut back to
# [0.5, 1) by its binary exponent (frexp), so that one log a component serves every dimension; 8 factors
# of q < 1e38 stay finite
_PRODUCT_GROUP = 8
_LOG_2 = math.log(2.0)


@njit(cache=True)
def student_t_constants(stats, prior, loc, inverse_scale, power, log_norm):
    """The Student-t posterior predictive of every component (eq. 3.96), as the constants `student_t_row`
    reads: location mu_n (D, K), 1 / (nu s^2) (D, K), (nu + 1) / 2 (K,) and the summed log normaliser
    sum_d [log Gamma((nu+1)/2) - log Gamma(nu/2) - log(nu pi s_d^2) / 2] (K,), with nu = 2 a_n and
    s_d^2 = b_nd (kappa_n + 1) / (a_n kappa_n).  The prior's Gamma shape a0 is one number
    (`Gaussian.shape`), so a_n, nu and the power are one a component.  Dimensions are rows, so that
    `student_t_row` runs along the components."""
    n_dims = prior.shape[1]
    for k in range(stats.shape[1]):
        total = 0.0
        nu = 0.0
        for d in range(n_dims):
            kappa, mean, a, b = normal_gamma_posterior(stats, prior, k, d, n_dims)
            nu = 2.0 * a
            scale2 = b * (kappa + 1.0) / (a * kappa)
            loc[d, k] = mean
            inverse_scale[d, k] = 1.0 / (nu * scale2)
            total -= 0.5 * math.log(nu * math.pi * scale2)
        power[k] = 0.5 * (nu + 1.0)
        log_norm[k] = total + n_dims * (math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu))


@njit(cache=True, fastmath=FAST)
def student_t_row(features, t, loc, inverse_scale, power, log_norm, out, exponents):
    """out[k] = log t_k(x_t) for every component: log_norm_k - power_k sum_d log(1 + q_kd) with
    q_kd = (x_td - loc_dk)^2 inverse_scale_dk, as the log of a product kept in range by its binary
    exponent (``exponents`` a work row of K); a product that overflows all the same (a frame some 1e19
    scales out) is summed a log at a time."""
    n_dims = features.shape[1]
    n_columns = out.shape[0]
    for k in range(n_columns):
        out[k] = 1.0
        exponents[k] = 0.0
    for d in range(n_dims):
        x = features[t, d]
        centre = loc[d]
        weight = inverse_scale[d]
        for k in range(n_columns):
            z = x - centre[k]
            out[k] *= 1.0 + z * z * weight[k]
        if d % _PRODUCT_GROUP == _PRODUCT_GROUP - 1 or d == n_dims - 1:
            for k in range(n_columns):
                mantissa, exponent = math.frexp(out[k])
                out[k] = mantissa
                exponents[k] += exponent
    for k in range(n_columns):
        if out[k] < np.inf:
            log_sum = math.log(out[k]) + exponents[k] * _LOG_2
        else:
            log_sum = 0.0
            for d in range(n_dims):
                z = features[t, d] - loc[d, k]
                log_sum += math.log1p(z * z * inverse_scale[d, k])
        out[k] = log_norm[k] - power[k] * log_sum


@njit(parallel=True, cache=True)
def student_t_log_densities(features, loc, inverse_scale, power, log_norm, out):
    """out (T, K) = log t_k(x_t) of every frame and component (`student_t_row`), frames in parallel."""
    for t in prange(features.shape[0]):
        student_t_row(features, t, loc, inverse_scale, power, log_norm, out[t], np.empty(out.shape[1]))


@njit(cache=True, fastmath=FAST)
def mixture_row(component_log, n_components, log_lik):
    """One frame: log_lik[c] = log sum_m exp(component_log[c M + m]) for every mixture c, and the
    responsibilities r(m | c) written over ``component_log``."""
    for c in range(log_lik.shape[0]):
        first = c * n_components
        top = component_log[first]
        for m in range(1, n_components):
            top = max(top, component_log[first + m])
        total = 0.0
        for m in range(n_components):
            v = math.exp(component_log[first + m] - top)
            component_log[first + m] = v
            total += v
        inv = 1.0 / total
        for m in range(n_components):
            component_log[first + m] *= inv
        log_lik[c] = top + math.log(total)


@njit(parallel=True, cache=True)
def mixture_likelihoods(component_log, n_components, log_lik):
    """`mixture_row` for every frame in parallel: ``log_lik`` (T, C) the mixtures' log emission
    densities, ``component_log`` (T, C M) left holding r(m | c)."""
    for t in prange(component_log.shape[0]):
        mixture_row(component_log[t], n_components, log_lik[t])

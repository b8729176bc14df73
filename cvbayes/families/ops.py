"""Numba-side operations of the conjugate emission families (thesis §3.7).

Every family keeps its expected sufficient statistics in one float64 table
``stats`` of shape (S, K), one column per state, so that subtracting or adding
a token's contribution is a handful of contiguous row updates:

* Categorical-Dirichlet: S = W + 1; row w holds E[C_{k,w}], row W the totals
  E[C_{.,k}] (eq. 3.7-3.8).
* Diagonal Gaussian with a Normal-Gamma prior: S = 1 + 2D; row 0 holds the
  expected counts, rows 1..D the weighted sums of x_d and rows D+1..2D the
  weighted sums of x_d^2 (the s(w) of eq. 3.83, 3.85-3.86).
* Poisson with a Gamma prior per count dimension: S = 1 + 2D; row 0 the
  expected counts, rows 1..D the weighted sums of x_d, rows D+1..2D those of
  log x_d! (the base measure h(x), kept so that log p(x | z) needs only the table).
  Its ``features`` are (N, 2D): the counts, then their log x!.
* Full-covariance Gaussian with a Normal-Wishart prior: S = 1 + D + D(D+1)/2;
  row 0 the expected counts, rows 1..D the weighted sums of x, then the weighted
  sums of x_d x_e for d <= e, row by row of the upper triangle.

Observations reach the kernels as ``index`` (int32, the word id for
categorical data and the token position for the others) plus
``features`` (N, F) float64 (an (N, 0) array for categorical data).

The collapsed algorithms need the posterior predictive of one observation
given everyone else's statistics (eq. 3.96): the Dirichlet rule MEAN of
`cvbayes.core.rules` for categorical rows (eq. 3.50), a Student-t for the
Gaussians, a negative binomial for the Poisson.  New families add a code here
and a branch in the dispatch functions below.
"""
import math

import numpy as np
from numba import njit, prange

from ..core.rules import mean_cell
from ..core.special import FAST

CATEGORICAL = 0
GAUSSIAN = 1
POISSON = 2
FULL_GAUSSIAN = 3
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
        return
    for k in range(n_states):
        stats[0, k] += sign * weights[k]
    if family == FULL_GAUSSIAN:
        n_dims = features.shape[1]
        for d in range(n_dims):
            x = features[t, d]
            for k in range(n_states):
                stats[1 + d, k] += sign * weights[k] * x
        row = 1 + n_dims
        for d in range(n_dims):
            for e in range(d, n_dims):
                xx = features[t, d] * features[t, e]
                for k in range(n_states):
                    stats[row, k] += sign * weights[k] * xx
                row += 1
        return
    # the diagonal Gaussian's x and x^2, or the Poisson's x and log x! (its features' second half)
    n_dims = stats.shape[0] // 2
    for d in range(n_dims):
        x = features[t, d]
        second = x * x if family == GAUSSIAN else features[t, n_dims + d]
        for k in range(n_states):
            stats[1 + d, k] += sign * weights[k] * x
            stats[1 + n_dims + d, k] += sign * weights[k] * second


@njit(cache=True, inline="always")
def add_token_state(family, stats, index, features, t, z, sign):
    """stats += sign * s(x_t) in state z alone: `add_token_stats` of a hard assignment (the samplers'
    moves), inlined into the samplers' per-token loops."""
    if family == CATEGORICAL:
        stats[index[t], z] += sign
        stats[stats.shape[0] - 1, z] += sign
        return
    stats[0, z] += sign
    if family == FULL_GAUSSIAN:
        n_dims = features.shape[1]
        row = 1 + n_dims
        for d in range(n_dims):
            stats[1 + d, z] += sign * features[t, d]
            for e in range(d, n_dims):
                stats[row, z] += sign * features[t, d] * features[t, e]
                row += 1
        return
    n_dims = stats.shape[0] // 2
    for d in range(n_dims):
        x = features[t, d]
        stats[1 + d, z] += sign * x
        stats[1 + n_dims + d, z] += sign * (x * x if family == GAUSSIAN else features[t, n_dims + d])


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
    family's `prior_array`: for categorical rows [[beta]] (symmetric), or beta tau_w
    for w < W then the total beta (the HDP-HMM's emission prior, §5.5.3).  Rows are
    max-normalised into ``lik``; returns their summed log scale (-inf when some
    token has no admissible state).
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
    if family == GAUSSIAN:
        _diagonal_student_rows(stats, prior, features, begin, end, lik)
    elif family == POISSON:
        negative_binomial_log_rows(stats, prior, features, begin, end, lik)
    else:
        multivariate_student_log_rows(stats, prior, features, begin, end, lik)
    for t in range(begin, end):
        row = lik[t - begin]
        peak = -np.inf
        for k in range(n_states):
            peak = max(peak, row[k])
        for k in range(n_states):
            row[k] = math.exp(row[k] - peak)
        log_scale += peak
    return log_scale


@njit(cache=True)
def _diagonal_student_rows(stats, prior, features, begin, end, log_lik):
    """log_lik[t - begin, k] = sum_d log t(x_td) under the Student-t predictive of every state (eq. 3.96)."""
    n_states = stats.shape[1]
    n_dims = features.shape[1]
    consts = np.empty((n_states, n_dims, 4))
    for k in range(n_states):
        for d in range(n_dims):
            _student_t_constants(stats, prior, k, d, n_dims, consts[k, d])
    for t in range(begin, end):
        row = log_lik[t - begin]
        for k in range(n_states):
            v = 0.0
            for d in range(n_dims):
                c = consts[k, d]
                z = features[t, d] - c[0]
                v += c[1] - c[3] * math.log1p(z * z * c[2])
            row[k] = v


@njit(cache=True)
def gamma_posterior(stats, prior, k, d, n_dims):
    """(a_n, b_n) of state k, count dimension d: the Gamma(shape a0, rate b0) prior of `Poisson.prior_array`
    updated by the expected counts, a_n = a0 + sum_t q_t x_td, b_n = b0 + sum_t q_t (Bernardo and Smith
    1994, Appendix A, the Poisson model with its conjugate Gamma prior; the lambda of eq. 3.83-3.84 for
    this pair)."""
    return prior[0, d] + max(stats[1 + d, k], 0.0), prior[1, d] + max(stats[0, k], 0.0)


@njit(cache=True)
def negative_binomial_log_rows(stats, prior, features, begin, end, log_lik):
    """log_lik[t - begin, k] = sum_d log NB(x_td | a_n, b_n / (b_n + 1)): the Poisson-Gamma predictive of
    eq. 3.96 (Bernardo and Smith 1994, Appendix A: the Poisson-Gamma distribution Pg(x | a_n, b_n, 1)),
    Gamma(a_n + x) / (Gamma(a_n) x!) (b_n / (b_n + 1))^a_n (1 / (b_n + 1))^x.  ``features`` hold the
    counts and then their log x!."""
    n_states = stats.shape[1]
    n_dims = features.shape[1] // 2
    shape = np.empty((n_states, n_dims))
    constant = np.empty((n_states, n_dims))
    log_odds = np.empty((n_states, n_dims))
    for k in range(n_states):
        for d in range(n_dims):
            a, b = gamma_posterior(stats, prior, k, d, n_dims)
            shape[k, d] = a
            constant[k, d] = a * math.log(b / (b + 1.0)) - math.lgamma(a)
            log_odds[k, d] = math.log1p(b)
    for t in range(begin, end):
        row = log_lik[t - begin]
        for k in range(n_states):
            v = 0.0
            for d in range(n_dims):
                x = features[t, d]
                v += math.lgamma(shape[k, d] + x) + constant[k, d] - x * log_odds[k, d] - features[t, n_dims + d]
            row[k] = v


@njit(cache=True)
def cholesky_in_place(a):
    """Overwrite the symmetric (D, D) ``a`` with its lower Cholesky factor L (L L^T = a, zeros above);
    False, with ``a`` spoilt, when ``a`` is not positive definite."""
    n = a.shape[0]
    for j in range(n):
        s = a[j, j]
        for p in range(j):
            s -= a[j, p] * a[j, p]
        if not s > 0.0:
            return False
        pivot = math.sqrt(s)
        a[j, j] = pivot
        for i in range(j + 1, n):
            s = a[i, j]
            for p in range(j):
                s -= a[i, p] * a[j, p]
            a[i, j] = s / pivot
        for i in range(j):
            a[i, j] = 0.0
    return True


@njit(cache=True)
def normal_wishart_posterior(stats, prior, k, mean, chol):
    """The Normal-Wishart posterior of state k (Murphy 2007, the Normal-Wishart prior's posterior; Bishop
    2006, eq. 10.60-10.63): kappa_n = kappa0 + n, nu_n = nu0 + n, mu_n = (kappa0 mu0 + sum x) /
    kappa_n and the inverse scale Psi_n = Psi0 + sum x x^T + kappa0 mu0 mu0^T - kappa_n mu_n mu_n^T (the
    matrix form of the diagonal family's b_n, eq. 3.85-3.86).  Writes mu_n to ``mean`` (D,) and the lower
    Cholesky factor of Psi_n to ``chol`` (D, D); returns (kappa_n, nu_n).  ``prior`` is
    `FullGaussian.prior_array`: rows mu0, kappa0, nu0, then Psi0.  A Psi_n that rounding leaves not
    positive definite (a near-empty state, whose scatter is noise) falls back to Psi0, as the diagonal
    family floors b_n at b0."""
    n_dims = mean.shape[0]
    kappa0 = prior[1, 0]
    n = max(stats[0, k], 0.0)
    kappa = kappa0 + n
    for d in range(n_dims):
        mean[d] = (kappa0 * prior[0, d] + stats[1 + d, k]) / kappa
    row = 1 + n_dims
    for d in range(n_dims):
        for e in range(d, n_dims):
            v = prior[3 + d, e] + stats[row, k] + kappa0 * prior[0, d] * prior[0, e] - kappa * mean[d] * mean[e]
            chol[d, e] = v
            chol[e, d] = v
            row += 1
    if not cholesky_in_place(chol):
        chol[:, :] = prior[3:3 + n_dims]
        cholesky_in_place(chol)
    return kappa, prior[2, 0] + n


@njit(cache=True)
def normal_wishart_posteriors(stats, prior):
    """`normal_wishart_posterior` of every state: kappa_n (K,), nu_n (K,), mu_n (K, D), chol(Psi_n) (K, D, D)."""
    n_dims = prior.shape[1]
    n_states = stats.shape[1]
    kappa = np.empty(n_states)
    nu = np.empty(n_states)
    mean = np.empty((n_states, n_dims))
    chol = np.empty((n_states, n_dims, n_dims))
    for k in range(n_states):
        kappa[k], nu[k] = normal_wishart_posterior(stats, prior, k, mean[k], chol[k])
    return kappa, nu, mean, chol


@njit(cache=True)
def multivariate_student_t_constants(kappa, nu, chol):
    """(log normaliser, q-scale, power) of the Normal-Wishart posterior predictive (eq. 3.96; Murphy 2007,
    the Normal-Wishart posterior predictive; Bishop 2006, §2.3.7): t_{nu'}(x | mu_n, Sigma) with nu' = nu_n - D + 1 and Sigma = Psi_n (kappa_n + 1) /
    (kappa_n nu'), whose log density is log_norm - power log(1 + qscale |L^-1 (x - mu_n)|^2) with
    L = chol(Psi_n), power = (nu' + D) / 2 and qscale = kappa_n / (kappa_n + 1)."""
    n_dims = chol.shape[0]
    dof = nu - n_dims + 1.0
    log_det = 0.0
    for d in range(n_dims):
        log_det += math.log(chol[d, d])
    log_norm = (math.lgamma(0.5 * (dof + n_dims)) - math.lgamma(0.5 * dof) - 0.5 * n_dims * math.log(dof * math.pi)
                - 0.5 * n_dims * math.log((kappa + 1.0) / (kappa * dof)) - log_det)
    return log_norm, kappa / (kappa + 1.0), 0.5 * (dof + n_dims)


@njit(cache=True, inline="always")
def _mahalanobis(features, t, mean, chol, work):
    """|L^-1 (x_t - mean)|^2 by forward substitution (``work`` a row of D)."""
    n_dims = mean.shape[0]
    total = 0.0
    for d in range(n_dims):
        s = features[t, d] - mean[d]
        for e in range(d):
            s -= chol[d, e] * work[e]
        s /= chol[d, d]
        work[d] = s
        total += s * s
    return total


@njit(cache=True)
def mahalanobis_table(features, mean, chol):
    """(N, K) |L_k^-1 (x_t - mean_k)|^2 of every token and state: with L_k = chol(Sigma_k) the Gaussian's
    quadratic form, with L_k = chol(Psi_n) the Normal-Wishart tables' (`FullGaussian`)."""
    n_tokens = features.shape[0]
    n_states = mean.shape[0]
    out = np.empty((n_tokens, n_states))
    work = np.empty(mean.shape[1])
    for t in range(n_tokens):
        for k in range(n_states):
            out[t, k] = _mahalanobis(features, t, mean[k], chol[k], work)
    return out


@njit(cache=True)
def multivariate_student_log_rows(stats, prior, features, begin, end, log_lik):
    """log_lik[t - begin, k] = log t_k(x_t), the multivariate Student-t predictive of every state under
    the Normal-Wishart posterior of ``stats`` (`multivariate_student_t_constants`): one Cholesky factor
    a state, then a forward substitution a token and state."""
    kappa, nu, mean, chol = normal_wishart_posteriors(stats, prior)
    n_states = stats.shape[1]
    log_norm = np.empty(n_states)
    qscale = np.empty(n_states)
    power = np.empty(n_states)
    for k in range(n_states):
        log_norm[k], qscale[k], power[k] = multivariate_student_t_constants(kappa[k], nu[k], chol[k])
    work = np.empty(mean.shape[1])
    for t in range(begin, end):
        row = log_lik[t - begin]
        for k in range(n_states):
            row[k] = log_norm[k] - power[k] * math.log1p(qscale[k] * _mahalanobis(features, t, mean[k], chol[k], work))


def as_table(log_table):
    """(exp(log_table - row peak), row peak): an (N, K) log table as the kernels read it, a per-token
    table with its log offsets (NumPy, for the families' batch tables)."""
    peak = log_table.max(axis=1)
    return np.exp(log_table - peak[:, None]), peak


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

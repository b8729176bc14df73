"""Full-covariance Gaussian emissions with a Normal-Wishart prior (thesis §3.7, eq. 3.83-3.86 and 3.96).

State k emits x ~ N(mu_k, Lambda_k^-1) with (mu_k, Lambda_k) ~ NW(mu0, kappa0, nu0, Psi0):
Lambda ~ Wishart(nu0, scale Psi0^-1), mu | Lambda ~ N(mu0, (kappa0 Lambda)^-1) (Bishop 2006, eq. 2.155-2.157;
Murphy 2007, the Normal-Wishart prior).  hmmlearn's GaussianHMM(covariance_type="full"), with the conjugate
prior.  The posterior predictive that the collapsed algorithms plug in is the multivariate Student-t
(eq. 3.96: "in the Gaussian-GaussianWishart case, (3.96) is the student distribution") of
`ops.multivariate_student_t_constants`.

In one dimension the family is the diagonal `Gaussian` with shape a0 = nu0 / 2 and rate b0 = Psi0 / 2 (the
Wishart of a scalar is that Gamma); the defaults (nu0 = D + 1, Psi0 = nu0 diag(var)) match the diagonal
family's (a0 = 1, b0 = a0 var), so that the prior's expected precision is the data's inverse variance.
"""
import math

import numpy as np
from scipy.special import digamma, gammaln

from ..core.rules import MAP, VB
from ..data import Corpus
from ..synthetic import sample_states
from .kmeans import weighted_kmeans
from .rows import RealVectors, feature_variances
from .ops import (FULL_GAUSSIAN, LOG_2PI, as_table, mahalanobis_table, multivariate_student_log_rows, normal_wishart_posteriors,
                  token_stats)

LOG_PI = math.log(math.pi)


def log_multivariate_gamma(x, n_dims):
    """log Gamma_D(x) = D (D - 1) / 4 log pi + sum_{i=1}^D log Gamma(x + (1 - i) / 2), elementwise in x."""
    x = np.asarray(x, dtype=float)
    return 0.25 * n_dims * (n_dims - 1) * LOG_PI + sum(gammaln(x - 0.5 * i) for i in range(n_dims))


def _log_det(chol):
    """log |L L^T| of lower Cholesky factors (..., D, D)."""
    return 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)


class FullGaussian(RealVectors):
    """Full-covariance Gaussian family with a Normal-Wishart prior.

    Parameters
    ----------
    mean, kappa
        The prior on the means, as in `Gaussian`.
    dof : float, optional
        Wishart degrees of freedom nu0, above D (so that EM's mode exists); D + 1 when None.
    scale : array-like of shape (D, D), optional
        The Wishart's inverse scale Psi0 (symmetric positive definite); ``dof`` times the diagonal of the
        training data's variances when None, so that E[Lambda] = nu0 Psi0^-1 is their inverse.
    """

    code = FULL_GAUSSIAN
    param_names = ("means", "covars")

    def __init__(self, mean=None, kappa=0.01, dof=None, scale=None):
        if not kappa > 0:
            raise ValueError(f"the Normal-Wishart prior needs kappa > 0, got {kappa}")
        self.mean = None if mean is None else np.atleast_1d(np.asarray(mean, dtype=float))
        self.kappa = float(kappa)
        self.dof = None if dof is None else float(dof)
        self.scale = None if scale is None else np.atleast_2d(np.asarray(scale, dtype=float))
        self.n_dims = None
        if self.scale is not None:
            self._check_prior(self.scale.shape[0])

    def _check_prior(self, n_dims):
        if self.dof is not None and not self.dof > n_dims:
            raise ValueError(f"the Normal-Wishart prior needs dof > D = {n_dims}, got {self.dof}")
        if self.scale is None:
            return
        if self.scale.shape != (n_dims, n_dims) or not np.allclose(self.scale, self.scale.T):
            raise ValueError(f"scale must be a symmetric ({n_dims}, {n_dims}) matrix")
        if np.linalg.eigvalsh(self.scale).min() <= 0:
            raise ValueError("scale must be positive definite")

    def config(self):
        """Constructor arguments, as JSON-ready values (model files)."""
        return {"name": "gaussian-full", "mean": self.mean.tolist(), "kappa": self.kappa, "dof": self.dof,
                "scale": self.scale.tolist()}

    def prepare(self, corpus, n_states):
        if corpus.is_discrete:
            raise ValueError("gaussian-full emissions need real-valued features of shape (N, D)")
        x = corpus.observations
        self.n_dims = n_dims = x.shape[1]
        self._check_prior(n_dims)
        if self.mean is None:
            self.mean = x.mean(axis=0) if len(x) else np.zeros(n_dims)
        self.mean = np.broadcast_to(self.mean, (n_dims,)).astype(float)
        if self.dof is None:
            self.dof = n_dims + 1.0
        if self.scale is None:
            self.scale = self.dof * np.diag(feature_variances(x))

    def prior_array(self):
        """(3 + D, D): rows mu0, kappa0, nu0, then Psi0 (`ops.normal_wishart_posterior` reads them)."""
        d = self.n_dims
        return np.vstack([self.mean, np.full(d, self.kappa), np.full(d, self.dof), self.scale])

    def n_stats(self):
        return 1 + self.n_dims + self.n_dims * (self.n_dims + 1) // 2

    # -- posterior ------------------------------------------------------------
    def posterior(self, stats):
        """(kappa_n (K,), nu_n (K,), mu_n (K, D), chol(Psi_n) (K, D, D)) from the statistics
        (`ops.normal_wishart_posterior`)."""
        return normal_wishart_posteriors(np.ascontiguousarray(stats, dtype=float), self.prior_array())

    def map_params(self, stats):
        """EM's M-step: the joint mode of the Normal-Wishart posterior, mu = mu_n and
        Sigma = Psi_n / (nu_n - D), which maximises E[log p(x, z | mu, Lambda)] + log p(mu, Lambda) (the
        diagonal family's b_n / (a_n - 1/2) in one dimension)."""
        kappa, nu, mu, chol = self.posterior(stats)
        return {"means": mu, "covars": chol @ chol.transpose(0, 2, 1) / (nu - self.n_dims)[:, None, None]}

    def _covariance_factors(self, params):
        means = np.asarray(params["means"], dtype=float)
        covars = np.asarray(params["covars"], dtype=float)
        d = self.n_dims
        if means.ndim != 2 or means.shape[1] != d or covars.shape != (means.shape[0], d, d):
            raise ValueError(f"means must have shape (K, {d}) and covars (K, {d}, {d})")
        try:
            return np.ascontiguousarray(means), np.linalg.cholesky(covars)
        except np.linalg.LinAlgError:
            raise ValueError("every covars matrix must be symmetric positive definite") from None

    def _gaussian_log_table(self, params, features):
        """(N, K) log N(x_t | mu_k, Sigma_k) of point parameters."""
        means, chol = self._covariance_factors(params)
        return (-0.5 * self.n_dims * LOG_2PI - 0.5 * _log_det(chol))[None] - 0.5 * mahalanobis_table(features, means,
                                                                                                      chol)

    def table_from_params(self, params, corpus):
        """(N, K) per-token likelihood table of point parameters, with its per-token log offsets."""
        return as_table(self._gaussian_log_table(params, self.features(corpus)))

    def table(self, stats, rule, corpus):
        """Per-token table under ``rule``: VB's exp E[log N(x | mu, Lambda)] or MEAN's multivariate
        Student-t predictive (eq. 3.96)."""
        return self.compact_table(stats, rule, self.features(corpus))

    def compact_table(self, stats, rule, features, rows=None):
        """The table of `table` for the feature rows ``features``.  VB (Bishop 2006, eq. 10.64-10.65):
        E[log N(x | mu, Lambda)] = E[log |Lambda|] / 2 - D log(2 pi) / 2 - D / (2 kappa_n)
        - nu_n (x - mu_n)^T Psi_n^-1 (x - mu_n) / 2, with E[log |Lambda|] = sum_{i=1}^D psi((nu_n + 1 - i) / 2)
        + D log 2 - log |Psi_n|.  MEAN: `ops.multivariate_student_log_rows`."""
        stats = np.ascontiguousarray(stats, dtype=float)
        if rule == VB:
            kappa, nu, mu, chol = self.posterior(stats)
            constant = 0.5 * self._expected_log_det(nu, chol) - 0.5 * self.n_dims * (LOG_2PI + 1.0 / kappa)
            return as_table(constant[None] - 0.5 * nu[None] * mahalanobis_table(features, mu, chol))
        log_table = np.empty((features.shape[0], stats.shape[1]))
        multivariate_student_log_rows(stats, self.prior_array(), features, 0, features.shape[0], log_table)
        return as_table(log_table)

    def _expected_log_det(self, nu, chol):
        """E[log |Lambda|] under Wishart(nu, Psi^-1), Psi = chol chol^T (Bishop 2006, eq. 10.65)."""
        d = self.n_dims
        return sum(digamma(0.5 * (nu - i)) for i in range(d)) + d * math.log(2.0) - _log_det(chol)

    # -- stochastic inference (models/hmm_structures.py) ------------------------
    def random_stats(self, rng, corpus, n_states, per_state=5):
        """Each state gets the statistics of a few random tokens, scaled to the corpus (the diagonal
        family's stand-in for eq. 3.107's exponential counts)."""
        take = np.sort(rng.choice(corpus.n_tokens, size=min(per_state * n_states, corpus.n_tokens), replace=False))
        weights = np.zeros((take.shape[0], n_states))
        weights[np.arange(take.shape[0]), rng.permutation(take.shape[0]) % n_states] = corpus.n_tokens / take.shape[0]
        features = self.features(corpus, take)
        return token_stats(self.code, np.arange(take.shape[0], dtype=np.int32), features, weights, self.n_stats())

    def draw_start(self, rng, corpus, n_states):
        """Random parameters for ``HMM(init="params")``: means from k-means on the tokens (`weighted_kmeans`),
        each state's covariance that of its cluster's tokens, or the diagonal of the data's variances for a
        cluster of D tokens or fewer (whose scatter is singular) (the diagonal family's start, issue 15)."""
        x = self.features(corpus)
        means, cluster, size = weighted_kmeans(x, np.ones(x.shape[0]), n_states, rng)
        covars = np.repeat(np.diag(feature_variances(x))[None], n_states, axis=0)
        for k in np.flatnonzero(size > self.n_dims):
            spread = x[cluster == k] - means[k]
            scatter = spread.T @ spread / spread.shape[0]
            if np.linalg.eigvalsh(scatter).min() > 1e-9 * np.trace(scatter):
                covars[k] = scatter
        return {"means": means, "covars": covars}

    # -- objectives and estimates ---------------------------------------------
    def kl(self, stats):
        """Sum over states of KL(NW posterior || NW prior): VB's penalty (eq. 3.11).  The Wishart part
        E_q[log W(Lambda | Psi_n^-1, nu_n) - log W(Lambda | Psi0^-1, nu0)] (Bishop 2006, eq. 2.155-2.156,
        with E[Lambda] = nu_n Psi_n^-1 and E[log |Lambda|] of eq. 10.65), plus the expected KL of the
        Gaussians on mu given Lambda, (D kappa0 / kappa_n - D + D log(kappa_n / kappa0)
        + kappa0 nu_n (mu_n - mu0)^T Psi_n^-1 (mu_n - mu0)) / 2; in one dimension the diagonal family's."""
        kappa, nu, mu, chol = self.posterior(stats)
        d, k0, nu0, psi0 = self.n_dims, self.kappa, self.dof, self.scale
        psi = chol @ chol.transpose(0, 2, 1)
        log_det, log_det0 = _log_det(chol), np.linalg.slogdet(psi0)[1]
        trace = np.trace(np.linalg.solve(psi, np.broadcast_to(psi0, psi.shape)), axis1=1, axis2=2)
        kl_wishart = (0.5 * nu * log_det - 0.5 * nu0 * log_det0 - log_multivariate_gamma(0.5 * nu, d)
                      + log_multivariate_gamma(0.5 * nu0, d) - 0.5 * (nu - nu0) * d * math.log(2.0)
                      + 0.5 * (nu - nu0) * self._expected_log_det(nu, chol) - 0.5 * nu * d + 0.5 * nu * trace)
        spread = mahalanobis_table(self.mean[None], mu, chol)[0]
        kl_normal = 0.5 * (d * k0 / kappa - d + d * np.log(kappa / k0) + k0 * nu * spread)
        return float((kl_wishart + kl_normal).sum())

    def log_prior(self, params):
        """log Normal-Wishart prior density of (mu, Lambda = Sigma^-1), up to a constant (EM's objective):
        (nu0 - D) / 2 log |Lambda| - kappa0 (mu - mu0)^T Lambda (mu - mu0) / 2 - tr(Psi0 Lambda) / 2."""
        means, chol = self._covariance_factors(params)
        precision = np.linalg.inv(np.asarray(params["covars"], dtype=float))
        spread = mahalanobis_table(self.mean[None], means, chol)[0]
        return float((-0.5 * (self.dof - self.n_dims) * _log_det(chol) - 0.5 * self.kappa * spread
                      - 0.5 * np.einsum("de,ked->k", self.scale, precision)).sum())

    def log_marginal(self, stats):
        """log p(x | z) with every state's mean and precision integrated out (Murphy 2007, the
        Normal-Wishart marginal likelihood): per state -n D / 2 log pi + log Gamma_D(nu_n / 2)
        - log Gamma_D(nu0 / 2) + nu0 / 2 log |Psi0| - nu_n / 2 log |Psi_n| + D / 2 log(kappa0 / kappa_n)."""
        kappa, nu, mu, chol = self.posterior(stats)
        d = self.n_dims
        n = np.maximum(stats[0], 0.0)
        return float((-0.5 * n * d * LOG_PI + log_multivariate_gamma(0.5 * nu, d)
                      - log_multivariate_gamma(0.5 * self.dof, d) + 0.5 * self.dof * np.linalg.slogdet(self.scale)[1]
                      - 0.5 * nu * _log_det(chol) + 0.5 * d * np.log(self.kappa / kappa)).sum())

    def fitted(self, stats, rule):
        """``means_`` (K, D) and ``covars_`` (K, D, D): the MAP for EM; otherwise mu_n and E[Lambda]^-1 =
        Psi_n / nu_n (the diagonal family's b_n / a_n)."""
        if rule == MAP:
            params = self.map_params(stats)
            return {"means_": params["means"], "covars_": params["covars"]}
        kappa, nu, mu, chol = self.posterior(stats)
        return {"means_": mu, "covars_": chol @ chol.transpose(0, 2, 1) / nu[:, None, None]}

    def sample_hmm(self, startprob, transmat, fitted, lengths, seed):
        """A continuous Corpus drawn from the HMM with Gaussians N(means_, covars_), the true states as
        ``gold``."""
        rng = np.random.default_rng(seed)
        states, offsets = sample_states(startprob, transmat, np.asarray(lengths), rng)
        chol = np.linalg.cholesky(fitted["covars_"])[states]
        noise = rng.standard_normal((states.shape[0], self.n_dims))
        return Corpus(fitted["means_"][states] + np.einsum("tde,te->td", chol, noise), offsets, gold=states)


"""Diagonal Gaussian emissions with a Normal-Gamma prior per dimension (thesis §3.7).

Prior on state k, dimension d:  tau ~ Gamma(shape a0, rate b0),
mu | tau ~ Normal(mu0, 1 / (kappa0 tau)).  The posterior predictive that the
collapsed algorithms plug in (eq. 3.96) is a Student-t with 2 a_n degrees of
freedom, location mu_n and squared scale b_n (kappa_n + 1) / (a_n kappa_n).

`GaussianMixture` groups the components of this family into mixtures of M with Dirichlet weights: the
emissions of the acoustic unit models (Lee and Glass 2012; Ondel et al. 2016), one mixture a state.
"""
from typing import NamedTuple

import numpy as np
from scipy.special import digamma, gammaln

from ..core import rules
from ..core.rules import MAP, MEAN, VB, check_prior
from ..core.sampling import log_dirichlet_draws
from ..core.units import threads_for
from ..synthetic import sample_gaussian_hmm
from .kmeans import weighted_kmeans
from .ops import (GAUSSIAN, LOG_2PI, as_table, gaussian_log_density, mixture_likelihoods, normal_gamma_posteriors,
                  student_t_constants, student_t_log_densities)
from .poisson import gamma_kl
from .rows import RealVectors, feature_variances


class Gaussian(RealVectors):
    """Diagonal-covariance Gaussian family with a Normal-Gamma prior.

    Parameters
    ----------
    mean : array-like of shape (D,), optional
        Prior mean mu0; the training data's mean when None.
    kappa : float
        Prior pseudo-count on the mean (kappa0).
    shape : float
        Gamma shape a0 of the precision prior.
    rate : array-like of shape (D,), optional
        Gamma rate b0; ``shape * variance`` of the training data when None, so
        the prior's expected precision is the data's inverse variance.
    """

    code = GAUSSIAN
    param_names = ("means", "covars")

    def __init__(self, mean=None, kappa=0.01, shape=1.0, rate=None):
        if not kappa > 0 or not shape > 0.5:
            raise ValueError("the Normal-Gamma prior needs kappa > 0 and shape > 0.5")
        self.mean = None if mean is None else np.atleast_1d(np.asarray(mean, dtype=float))
        self.kappa = float(kappa)
        self.shape = float(shape)
        self.rate = None if rate is None else np.atleast_1d(np.asarray(rate, dtype=float))
        self.n_dims = None

    def config(self):
        """Constructor arguments, as JSON-ready values (model files)."""
        return {"name": "gaussian", "mean": self.mean.tolist(), "kappa": self.kappa,
                "shape": self.shape, "rate": self.rate.tolist()}

    def prepare(self, corpus, n_states):
        if corpus.is_discrete:
            raise ValueError("gaussian emissions need real-valued features of shape (N, D)")
        x = corpus.observations
        self.n_dims = x.shape[1]
        if not np.all(np.isfinite(x)):
            bad = int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])
            raise ValueError(f"feature row {bad} is not finite")
        if self.mean is None:
            self.mean = x.mean(axis=0) if len(x) else np.zeros(self.n_dims)
        if self.rate is None:
            self.rate = self.shape * feature_variances(x)
        self.mean = np.broadcast_to(self.mean, (self.n_dims,)).astype(float)
        self.rate = np.broadcast_to(self.rate, (self.n_dims,)).astype(float)

    def prior_array(self):
        d = self.n_dims
        return np.stack([self.mean, np.full(d, self.kappa), np.full(d, self.shape), self.rate])

    def n_stats(self):
        return 1 + 2 * self.n_dims

    # -- posterior hyperparameters ------------------------------------------
    def posterior(self, stats):
        """(kappa_n, mu_n, a_n, b_n), each (K, D), from the (1 + 2D, K) statistics."""
        return normal_gamma_posteriors(np.ascontiguousarray(stats, dtype=float), self.prior_array())

    def map_params(self, stats):
        """EM's M-step: the joint mode of the Normal-Gamma posterior.

        mu = mu_n and tau = (a_n - 1/2) / b_n maximise E[log p(x, z | mu, tau)]
        + log p(mu, tau), so EM raises the MAP objective.
        """
        kappa, mu, a, b = self.posterior(stats)
        return {"means": mu, "covars": b / (a - 0.5)}

    def table_from_params(self, params, corpus):
        """(N, K) per-token likelihood table with its per-token log offsets."""
        mu = np.asarray(params["means"], dtype=float)
        var = np.asarray(params["covars"], dtype=float)
        if mu.shape != var.shape or mu.ndim != 2 or mu.shape[1] != self.n_dims:
            raise ValueError(f"means and covars must both have shape (K, {self.n_dims})")
        return as_table(gaussian_log_density(self.features(corpus), np.ascontiguousarray(mu),
                                                   np.ascontiguousarray(1.0 / var)))

    def table(self, stats, rule, corpus):
        """Per-token table under ``rule``: VB (exp E[log N(x | mu, tau)]) or MEAN
        (the Student-t posterior predictive, eq. 3.96): the rules of `cvbayes.core.rules`
        applied to the Normal-Gamma posterior."""
        return self.compact_table(stats, rule, self.features(corpus))

    def compact_table(self, stats, rule, features, rows=None):
        """The table of `table` for the feature rows ``features`` (``rows``, the
        statistics rows, are all of them here)."""
        kappa, mu, a, b = self.posterior(stats)
        diff2 = (features[:, None, :] - mu[None]) ** 2
        if rule == VB:
            log_table = (0.5 * (digamma(a) - np.log(b) - LOG_2PI) - 0.5 * (a / b) * diff2 - 0.5 / kappa)
        else:
            nu = 2.0 * a
            scale2 = b * (kappa + 1.0) / (a * kappa)
            log_table = (gammaln(0.5 * (nu + 1)) - gammaln(0.5 * nu) - 0.5 * np.log(nu * np.pi * scale2)
                         - 0.5 * (nu + 1) * np.log1p(diff2 / (nu * scale2)))
        return as_table(log_table.sum(axis=2))

    # -- stochastic inference (models/hmm_structures.py) ------------------------
    def random_stats(self, rng, corpus, n_states, per_state=5):
        """Each state gets the statistics of a few random tokens, scaled to the
        corpus: the continuous stand-in for eq. 3.107's exponential counts (many
        random soft weights would give every state the same mean)."""
        take = rng.choice(corpus.n_tokens, size=min(per_state * n_states, corpus.n_tokens), replace=False)
        x = self.features(corpus)[np.sort(take)]
        weights = np.zeros((x.shape[0], n_states))
        weights[np.arange(x.shape[0]), rng.permutation(x.shape[0]) % n_states] = corpus.n_tokens / x.shape[0]
        return np.vstack([weights.sum(axis=0), x.T @ weights, (x ** 2).T @ weights])

    def draw_start(self, rng, corpus, n_states):
        """Random parameters for ``HMM(init="params")`` (thesis footnote 5's random
        parameters): means from k-means on the tokens (`weighted_kmeans`: k-means++ seeding
        and Lloyd steps; hmmlearn's GaussianHMM also starts its means with k-means),
        and each state's variances those of its cluster's tokens (the whole data's for a cluster of
        fewer than two tokens or none spread): with the whole data's variances, as hmmlearn starts,
        the first posteriors smear over neighbouring clusters and a sampler started from them
        merges states (issue 15)."""
        x = self.features(corpus)
        means, cluster, size = weighted_kmeans(x, np.ones(x.shape[0]), n_states, rng)
        overall = feature_variances(x)
        spread = np.zeros_like(means)
        np.add.at(spread, cluster, (x - means[cluster]) ** 2)
        variances = spread / np.maximum(size, 1.0)[:, None]
        usable = (size[:, None] >= 2) & (variances > 0)
        return {"means": means, "covars": np.where(usable, variances, overall)}

    def kl(self, stats):
        """Sum over states and dimensions of KL(NG posterior || NG prior)."""
        kappa, mu, a, b = self.posterior(stats)
        k0, m0, a0, b0 = self.kappa, self.mean, self.shape, self.rate
        kl_gamma = gamma_kl(a, b, a0, b0)
        kl_normal = 0.5 * (k0 / kappa - 1.0 + np.log(kappa / k0) + k0 * (a / b) * (mu - m0) ** 2)
        return float((kl_gamma + kl_normal).sum())

    def log_prior(self, params):
        """log Normal-Gamma prior density of (mu, tau), up to a constant."""
        tau = 1.0 / np.asarray(params["covars"])
        mu = np.asarray(params["means"])
        return float((0.5 * np.log(tau) - 0.5 * self.kappa * tau * (mu - self.mean) ** 2
                      + (self.shape - 1.0) * np.log(tau) - self.rate * tau).sum())

    def log_marginal(self, stats):
        """log p(x | z) with every state's mean and precision integrated out (eq. 3.24's
        counterpart for the Normal-Gamma prior)."""
        kappa, mu, a, b = self.posterior(stats)
        n = np.maximum(stats[0], 0.0)[:, None]
        return float((gammaln(a) - gammaln(self.shape) + self.shape * np.log(self.rate) - a * np.log(b)
                      + 0.5 * (np.log(self.kappa) - np.log(kappa)) - 0.5 * n * LOG_2PI).sum())

    # -- the samplers' draws (models/beam.py) --------------------------------------
    def draw_parameters(self, rng, stats):
        """(means, precisions) of every state drawn from the Normal-Gamma posterior of ``stats``
        (the prior where a state has no statistics): tau ~ Gamma(a_n, rate b_n),
        mu | tau ~ N(mu_n, 1 / (kappa_n tau))."""
        kappa, mu, a, b = self.posterior(stats)
        precisions = rng.standard_gamma(a) / b
        means = mu + rng.standard_normal(mu.shape) / np.sqrt(kappa * precisions)
        return {"means": means, "precisions": precisions}

    def log_table(self, params, corpus):
        """(N, K) log-likelihood of every token under every state's drawn parameters."""
        return gaussian_log_density(self.features(corpus), np.ascontiguousarray(params["means"]),
                                    np.ascontiguousarray(params["precisions"]))

    def fitted(self, stats, rule):
        if rule == MAP:
            params = self.map_params(stats)
            return {"means_": params["means"], "covars_": params["covars"]}
        kappa, mu, a, b = self.posterior(stats)
        return {"means_": mu, "covars_": b / a}

    def sample_hmm(self, startprob, transmat, fitted, lengths, seed):
        """A continuous Corpus drawn from the HMM with the fitted ``means_`` and ``covars_``."""
        return sample_gaussian_hmm(startprob, transmat, fitted["means_"], fitted["covars_"], lengths, seed)


class LinearTable(NamedTuple):
    """Component log densities that are linear in (1, x, x^2): log p_k(x) = [1, x, x^2] @ weights[:, k]
    with ``weights`` (1 + 2D, K); VB's E[log w] + E[log N(x | mu, tau)] and point parameters' log w +
    log N(x | mu, tau) both take this form, so a block of frames costs one matrix product."""

    weights: np.ndarray


class StudentTable(NamedTuple):
    """Component log densities log w_k + log t_k(x) of Student-t predictives (eq. 3.96), as
    `ops.student_t_constants` lays them out (``loc`` and ``inverse_scale`` (D, K); log w already in
    ``log_norm``)."""

    loc: np.ndarray
    inverse_scale: np.ndarray
    power: np.ndarray
    log_norm: np.ndarray


def quadratic_features(features):
    """[1, x, x^2] (T, 1 + 2D): the frames' sufficient statistics s(x) (eq. 3.85-3.86), whose products
    with a `LinearTable` give log densities and with posteriors give expected statistics."""
    out = np.empty((features.shape[0], 1 + 2 * features.shape[1]))
    out[:, 0] = 1.0
    n_dims = features.shape[1]
    out[:, 1:1 + n_dims] = features
    np.square(features, out=out[:, 1 + n_dims:])
    return out


class GaussianMixture:
    """Mixtures of M diagonal Gaussians: the components are a `Gaussian` family's states (one Normal-Gamma
    prior each, statistics (1 + 2D, C M) in its layout), grouped by mixture c into columns
    c M .. c M + M - 1, each mixture's weights w_c ~ Dir(``weight_prior``).

    The rules of `cvbayes.core.rules` give the emission tables: VB's exp(E[log w_cm] + E[log N(x | mu_cm,
    tau_cm)]) (a `LinearTable`), MEAN's w-bar_cm t_cm(x) with the Student-t predictive of eq. 3.96 (a
    `StudentTable`); a mixture's emission is the sum over its components, and the share of each is the
    component's responsibility (`emission_rows`).

    Parameters
    ----------
    n_components : int
        Components M of each mixture.
    weight_prior : float
        Symmetric Dirichlet concentration on each mixture's weights.
    mean, kappa, shape, rate : the Normal-Gamma prior of every component (`Gaussian`).
    """

    def __init__(self, n_components=2, weight_prior=1.0, mean=None, kappa=0.01, shape=1.0, rate=None):
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components}")
        self.n_components = int(n_components)
        self.weight_prior = check_prior("weight_prior", weight_prior)
        self.components = Gaussian(mean, kappa, shape, rate)
        self.n_mixtures = None

    def prepare(self, corpus, n_mixtures):
        """Fix D and the prior's data-dependent parts (`Gaussian.prepare`) for ``n_mixtures`` mixtures."""
        self.components.prepare(corpus, n_mixtures * self.n_components)
        self.n_mixtures = int(n_mixtures)

    @property
    def n_dims(self):
        return self.components.n_dims

    def n_stats(self):
        return self.components.n_stats()

    def work(self, n_frames, n_mixtures=None):
        """About the multiply-adds of the emission rows of ``n_frames`` frames under ``n_mixtures`` mixtures (all
        when None) (`core.units.threads_for`)."""
        return n_frames * (n_mixtures or self.n_mixtures) * self.n_components * self.n_dims

    def weight_counts(self, stats):
        """(C, M) expected frames of every component, by mixture."""
        return np.maximum(stats[0], 0.0).reshape(self.n_mixtures, self.n_components)

    def log_weights(self, stats, rule):
        """log of the weights' table under ``rule`` (C, M): VB's E[log w] (eq. 3.21) or MEAN's log w-bar."""
        return np.log(rules.dirichlet_table(rule, self.weight_counts(stats), self.weight_prior)).ravel()

    # -- tables -----------------------------------------------------------------------------------
    def table(self, stats, rule):
        """The emission table of ``rule`` from statistics (1 + 2D, C M): VB or MEAN."""
        log_weights = self.log_weights(stats, rule)
        if rule == VB:
            kappa, mu, a, b = self.components.posterior(stats)
            precision = a / b
            constant = 0.5 * (digamma(a) - np.log(b) - LOG_2PI) - 0.5 / kappa - 0.5 * precision * mu ** 2
            return _linear(constant.sum(axis=1) + log_weights, precision * mu, precision)
        if rule == MEAN:
            n_columns, n_dims = stats.shape[1], self.n_dims
            table = StudentTable(np.empty((n_dims, n_columns)), np.empty((n_dims, n_columns)), np.empty(n_columns),
                                 np.empty(n_columns))
            student_t_constants(np.ascontiguousarray(stats, dtype=float), self.components.prior_array(), *table)
            table.log_norm[:] += log_weights
            return table
        raise ValueError(f"mixture tables take the rules {VB!r} and {MEAN!r}, not {rule!r}")

    def table_from_params(self, means, variances, weights):
        """The `LinearTable` of point parameters: means and variances (C M, D), weights (C, M)."""
        precision = 1.0 / np.asarray(variances, dtype=float)
        means = np.asarray(means, dtype=float)
        constant = 0.5 * (np.log(precision) - LOG_2PI) - 0.5 * precision * means ** 2
        return _linear(constant.sum(axis=1) + np.log(np.asarray(weights, dtype=float)).ravel(), precision * means,
                       precision)

    def draw_table(self, rng, stats):
        """The `LinearTable` of parameters drawn from the posterior of ``stats`` (Gibbs sampling):
        weights ~ Dir(counts + weight_prior), (mu, tau) ~ Normal-Gamma posterior."""
        drawn = self.components.draw_parameters(rng, stats)
        weights = np.exp(log_dirichlet_draws(rng, self.weight_counts(stats) + self.weight_prior))
        return self.table_from_params(drawn["means"], 1.0 / drawn["precisions"], weights)

    def component_log_densities(self, table, features, out=None):
        """(T, C M) log w_k + log p_k(x_t) of a block of frames under a `LinearTable` or `StudentTable`."""
        if isinstance(table, LinearTable):
            return np.matmul(quadratic_features(features), table.weights, out=out)
        if out is None:
            out = np.empty((features.shape[0], table_width(table)))
        student_t_log_densities(np.ascontiguousarray(features, dtype=float), *table, out)
        return out

    def emission_rows(self, table, features, frame_groups=None, group_size=1):
        """(log_lik (T, C), responsibilities (T, C M)): the mixtures' log emission densities and the
        components' shares r(m | c, x_t); frames in parallel when they are worth the threads.

        ``frame_groups`` (T,), optional: frame t's rows under the ``group_size`` mixtures g G .. g G + G - 1 of
        its group g = frame_groups[t] alone, -inf in log_lik under every other mixture, and the responsibilities
        compact, (T, G M): column j of frame t is component g G M + j (`add_statistics` scatters them back): a
        reading's unit at every frame and its S states' mixtures, every path off the reading given probability
        zero (`AcousticUnits.reading_expectations`; eq. J1 of `cvbayes.models.discovery_nbest`).  The frames of a
        group are computed together against its columns of ``table``: G / C of the whole rows."""
        if frame_groups is None:
            return self._mixture_rows(table, features)
        n_columns = group_size * self.n_components
        log_lik = np.full((features.shape[0], self.n_mixtures), -np.inf)
        responsibilities = np.empty((features.shape[0], n_columns))
        for group, frames in group_members(frame_groups):
            rows = self._mixture_rows(table_columns(table, slice(group * n_columns, (group + 1) * n_columns)),
                                      features[frames])
            log_lik[frames, group * group_size:(group + 1) * group_size], responsibilities[frames] = rows
        return log_lik, responsibilities

    def add_statistics(self, stats, features, posterior, frame_groups=None, group_size=1):
        """stats (1 + 2D, C M) += sum_t s(x_t) q_t: the components' expected statistics (s(x) of eq. 3.85-3.86,
        `quadratic_features`) of frames with component posteriors q_t (T, C M), or with ``frame_groups`` compact
        ones (T, G M) over frame t's group's components alone, as `emission_rows` lays them out, each group's
        frames added to its G M columns."""
        s = quadratic_features(features)
        if frame_groups is None:
            stats += s.T @ posterior
            return
        n_columns = group_size * self.n_components
        for group, frames in group_members(frame_groups):
            stats[:, group * n_columns:(group + 1) * n_columns] += s[frames].T @ posterior[frames]

    def _mixture_rows(self, table, features):
        """`emission_rows` of every frame under every mixture of ``table`` (`component_log_densities`, then
        `ops.mixture_likelihoods`)."""
        n_mixtures = table_width(table) // self.n_components
        with threads_for(features.shape[0], self.work(features.shape[0], n_mixtures)):
            component_log = self.component_log_densities(table, features)
            log_lik = np.empty((features.shape[0], n_mixtures))
            mixture_likelihoods(component_log, self.n_components, log_lik)
        return log_lik, component_log

    # -- objectives and estimates ---------------------------------------------------------------------
    def kl(self, stats):
        """KL(q || p) of every component's Normal-Gamma and every mixture's Dirichlet weights (VB's penalty)."""
        return self.components.kl(stats) + rules.dirichlet_kl(self.weight_counts(stats), self.weight_prior)

    def log_marginal(self, stats):
        """log p(x, m | z) with the components' parameters and the weights integrated out (hard statistics)."""
        return self.components.log_marginal(stats) + rules.dirichlet_log_marginal(self.weight_counts(stats),
                                                                                  self.weight_prior)

    def fitted(self, stats):
        """Posterior means: means (C, M, D), variances b_n / a_n (C, M, D), weights (C, M)."""
        kappa, mu, a, b = self.components.posterior(stats)
        shape = (self.n_mixtures, self.n_components, self.n_dims)
        weights = rules.dirichlet_table(MEAN, self.weight_counts(stats), self.weight_prior)
        return {"means": mu.reshape(shape), "covars": (b / a).reshape(shape), "weights": weights}


def _linear(constant, linear, quadratic):
    """A `LinearTable` from per-component constants (K,), coefficients of x (K, D) and precisions (K, D)."""
    return LinearTable(np.ascontiguousarray(np.vstack([constant[None], linear.T, -0.5 * quadratic.T])))


def group_members(frame_groups):
    """(group, its frames in order) of every group some frame of ``frame_groups`` (T,) is in."""
    order = np.argsort(frame_groups, kind="stable")
    groups, firsts = np.unique(frame_groups[order], return_index=True)
    return zip(groups, np.split(order, firsts[1:]))


def table_width(table):
    """The components K of a `LinearTable` or `StudentTable`."""
    return table.weights.shape[1] if isinstance(table, LinearTable) else table.loc.shape[1]


def table_columns(table, columns):
    """The components ``columns`` (a slice) of a `LinearTable` or `StudentTable`, as a table of their own
    (contiguous, as the kernels take them)."""
    if isinstance(table, LinearTable):
        return LinearTable(np.ascontiguousarray(table.weights[:, columns]))
    return StudentTable(*(np.ascontiguousarray(part[..., columns]) for part in table))

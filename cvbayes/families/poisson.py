"""Poisson emissions with a Gamma prior per count dimension (thesis §3.7, eq. 3.83-3.86 and 3.96).

State k emits D independent counts, x_d ~ Poisson(lambda_kd), lambda_kd ~ Gamma(shape a0_d, rate b0_d)
(hmmlearn's PoissonHMM, with the conjugate prior).  The posterior is Gamma(a0 + sum x, b0 + n) and the
posterior predictive that the collapsed algorithms plug in (eq. 3.96: "in the Poisson-Gamma case, (3.96)
is the negative binomial distribution") is the Poisson-Gamma distribution of Bernardo and Smith (1994,
Appendix A), a negative binomial with a_n successes and success probability b_n / (b_n + 1).

The counts are (N,) integers (one dimension) or (N, D) floats holding non-negative integers (the corpus
reader keeps integer arrays for word ids).
"""
import numpy as np
from scipy.special import digamma, gammaln, xlogy

from ..core.rules import MAP, VB, check_prior
from ..data import Corpus
from ..synthetic import sample_states
from .kmeans import weighted_kmeans
from .ops import POISSON, as_table, negative_binomial_log_rows
from .rows import TokenRows


def gamma_kl(a, b, a0, b0):
    """KL(Gamma(a, rate b) || Gamma(a0, rate b0)), elementwise."""
    return ((a - a0) * digamma(a) - gammaln(a) + gammaln(a0) + a0 * (np.log(b) - np.log(b0)) + a * (b0 - b) / b)


class Poisson(TokenRows):
    """Poisson emission family with a Gamma prior on every state's rates.

    Parameters
    ----------
    shape : float
        Gamma shape a0 of every rate's prior.
    rate : array-like of shape (D,), optional
        Gamma rate b0; ``shape / mean`` of the training counts when None, so that the prior's mean rate is
        the data's mean count (``shape`` where a dimension's counts are all zero).
    """

    code = POISSON
    param_names = ("lambdas",)

    def __init__(self, shape=1.0, rate=None):
        self.shape = check_prior("shape", shape)
        self.rate = None if rate is None else np.atleast_1d(np.asarray(rate, dtype=float))
        if self.rate is not None and not np.all(self.rate > 0):
            raise ValueError("the Gamma prior needs rate > 0")
        self.n_dims = None

    def config(self):
        """Constructor arguments, as JSON-ready values (model files)."""
        return {"name": "poisson", "shape": self.shape, "rate": self.rate.tolist()}

    def counts(self, corpus, positions=None):
        """The (N, D) float counts of ``corpus`` (of its tokens at ``positions``), checked: non-negative
        finite integers."""
        x = corpus.observations if positions is None else corpus.observations[positions]
        x = x[:, None].astype(float) if corpus.is_discrete else np.asarray(x, dtype=float)
        bad = ~(np.isfinite(x) & (x >= 0) & (x == np.round(x)))
        if bad.any():
            row = int(np.flatnonzero(bad.any(axis=1))[0])
            raise ValueError(f"poisson emissions need non-negative integer counts; row {row} holds {x[row].tolist()}")
        return x

    def prepare(self, corpus, n_states):
        x = self.counts(corpus)
        self.n_dims = x.shape[1]
        if self.rate is None:
            mean = x.mean(axis=0) if len(x) else np.ones(self.n_dims)
            self.rate = self.shape / np.where(mean > 0, mean, 1.0)
        if self.rate.shape[0] not in (1, self.n_dims):
            raise ValueError(f"rate has {self.rate.shape[0]} values; the counts have {self.n_dims} dimensions")
        self.rate = np.broadcast_to(self.rate, (self.n_dims,)).astype(float)

    def check(self, corpus):
        if self.counts(corpus).shape[1] != self.n_dims:
            raise ValueError(f"this model expects counts with {self.n_dims} dimensions")

    def prior_array(self):
        """Rows a0 and b0, (2, D) (`ops.gamma_posterior` reads them)."""
        return np.stack([np.full(self.n_dims, self.shape), self.rate])

    def n_stats(self):
        return 1 + 2 * self.n_dims

    def features(self, corpus, positions=None):
        """(N, 2D): the counts, then log x! (the base measure h(x) of eq. 3.83, read by the kernels); of the
        tokens at ``positions`` only when given."""
        x = self.counts(corpus, positions)
        return np.ascontiguousarray(np.hstack([x, gammaln(x + 1.0)]))

    # -- posterior ------------------------------------------------------------
    def posterior(self, stats):
        """(a_n, b_n), each (K, D): a0 + sum_t q_tk x_td and b0 + sum_t q_tk (`ops.gamma_posterior`, the
        kernels' form)."""
        n_dims = self.n_dims
        return (self.shape + np.maximum(stats[1:1 + n_dims].T, 0.0),
                self.rate + np.maximum(stats[0], 0.0)[:, None])

    def map_params(self, stats):
        """EM's M-step: the posterior mode lambda = (a_n - 1) / b_n, which maximises E[log p(x, z | lambda)]
        + log p(lambda); clipped at zero where a_n < 1 (a shape a0 < 1 puts the mode of an unused
        dimension at lambda = 0, the MLE's answer)."""
        a, b = self.posterior(stats)
        return {"lambdas": np.maximum(a - 1.0, 0.0) / b}

    def table_from_params(self, params, corpus):
        """(N, K) per-token likelihood table of point rates, with its per-token log offsets."""
        lambdas = np.asarray(params["lambdas"], dtype=float)
        if lambdas.ndim != 2 or lambdas.shape[1] != self.n_dims or np.any(lambdas < 0):
            raise ValueError(f"lambdas must be non-negative with shape (K, {self.n_dims})")
        features = self.features(corpus)
        d = self.n_dims
        # x log lambda with 0 log 0 = 0: a zero rate emits zeros only
        log_table = (xlogy(features[:, None, :d], lambdas[None]).sum(axis=2) - lambdas.sum(axis=1)[None]
                     - features[:, d:].sum(axis=1)[:, None])
        return as_table(log_table)

    def table(self, stats, rule, corpus):
        """Per-token table under ``rule``: VB's exp E[log Poisson(x | lambda)] (eq. 3.22's emission part) or
        MEAN's negative binomial predictive (eq. 3.96)."""
        return self.compact_table(stats, rule, self.features(corpus))

    def compact_table(self, stats, rule, features, rows=None):
        """The table of `table` for the feature rows ``features``: VB's sum_d x_d E[log lambda_d] - E[lambda_d]
        - log x_d! with E[log lambda] = psi(a_n) - log b_n, E[lambda] = a_n / b_n; MEAN's log NB(x | a_n, b_n / (b_n + 1)) (`ops.negative_binomial_log_rows`)."""
        if rule == VB:
            a, b = self.posterior(stats)
            d = self.n_dims
            return as_table(features[:, :d] @ (digamma(a) - np.log(b)).T - (a / b).sum(axis=1)[None]
                             - features[:, d:].sum(axis=1)[:, None])
        log_table = np.empty((features.shape[0], stats.shape[1]))
        negative_binomial_log_rows(np.ascontiguousarray(stats, dtype=float), self.prior_array(), features, 0,
                                   features.shape[0], log_table)
        return as_table(log_table)

    # -- stochastic inference (models/hmm_structures.py) ------------------------
    def random_stats(self, rng, corpus, n_states, per_state=5):
        """Each state gets the statistics of a few random tokens, scaled to the corpus (the Gaussian
        family's stand-in for eq. 3.107's exponential counts)."""
        take = rng.choice(corpus.n_tokens, size=min(per_state * n_states, corpus.n_tokens), replace=False)
        features = self.features(corpus, np.sort(take))
        weights = np.zeros((features.shape[0], n_states))
        weights[np.arange(features.shape[0]), rng.permutation(features.shape[0]) % n_states] = \
            corpus.n_tokens / features.shape[0]
        return np.vstack([weights.sum(axis=0), features.T @ weights])

    def draw_start(self, rng, corpus, n_states, noise=0.1):
        """Rates for ``HMM(init="params")``: the means of k-means clusters of the counts (k-means++ seeding,
        `weighted_kmeans`), mixed with weight ``noise`` with the data's mean so that no rate is zero where
        the data have counts."""
        x = self.counts(corpus)
        means, _, _ = weighted_kmeans(x, np.ones(x.shape[0]), n_states, rng)
        return {"lambdas": (1.0 - noise) * np.maximum(means, 0.0) + noise * x.mean(axis=0)}

    # -- objectives and estimates ---------------------------------------------
    def kl(self, stats):
        """Sum over states and dimensions of KL(Gamma posterior || Gamma prior): VB's penalty (eq. 3.11)."""
        a, b = self.posterior(stats)
        return float(gamma_kl(a, b, self.shape, self.rate).sum())

    def log_prior(self, params):
        """log Gamma prior density of the rates, up to a constant (EM's objective)."""
        lambdas = np.asarray(params["lambdas"], dtype=float)
        return float((xlogy(self.shape - 1.0, lambdas) - self.rate * lambdas).sum())

    def log_marginal(self, stats):
        """log p(x | z) with every rate integrated out: per state and dimension
        a0 log b0 - log Gamma(a0) + log Gamma(a_n) - a_n log b_n - sum_t log x_td! (Bernardo and Smith 1994,
        Appendix A; the chain rule over the negative binomial predictives)."""
        a, b = self.posterior(stats)
        return float((self.shape * np.log(self.rate) - gammaln(self.shape) + gammaln(a) - a * np.log(b)).sum()
                     - stats[1 + self.n_dims:].sum())

    def fitted(self, stats, rule):
        """``lambdas_`` (K, D): the MAP for EM, the posterior mean a_n / b_n otherwise."""
        if rule == MAP:
            return {"lambdas_": self.map_params(stats)["lambdas"]}
        a, b = self.posterior(stats)
        return {"lambdas_": a / b}

    def sample_hmm(self, startprob, transmat, fitted, lengths, seed):
        """A continuous Corpus of (N, D) float counts drawn from the HMM with rates ``fitted["lambdas_"]``,
        the true states as ``gold``."""
        rng = np.random.default_rng(seed)
        states, offsets = sample_states(startprob, transmat, np.asarray(lengths), rng)
        return Corpus(rng.poisson(fitted["lambdas_"][states]).astype(float), offsets, gold=states)


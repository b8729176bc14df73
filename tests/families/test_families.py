"""Emission families: predictive rows and parameter tables against scipy."""
import numpy as np
import pytest
from scipy import stats

from scipy.special import gammaln

from cvbayes.core.rules import MEAN
from cvbayes.data import Corpus
from cvbayes.families import Categorical, FullGaussian, Gaussian, Poisson
from cvbayes.families.ops import (CATEGORICAL, GAUSSIAN, add_token_state, add_token_stats, predictive_rows,
                                  state_stats, token_stats)


def test_gaussian_predictive_is_the_normal_gamma_student_t():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 2))
    corpus = Corpus.from_sequences([x])
    family = Gaussian(kappa=0.5, shape=2.0, rate=[1.5, 0.7], mean=[0.1, -0.2])
    family.prepare(corpus, 3)
    weights = rng.dirichlet(np.ones(3), size=40)
    stat = np.zeros((family.n_stats(), 3))
    index = family.index(corpus)
    for t in range(40):
        add_token_stats(GAUSSIAN, stat, index, x, t, weights[t], 1.0)
    lik = np.empty((5, 3))
    log_scale = predictive_rows(GAUSSIAN, stat, family.prior_array(), index, x, 0, 5, np.zeros((0, 3)), lik)
    # closed-form posterior, then scipy's Student-t
    n = weights.sum(axis=0)[:, None]
    mean_x = (weights.T @ x) / n
    kappa = 0.5 + n
    mu = (0.5 * np.array([0.1, -0.2]) + weights.T @ x) / kappa
    a = 2.0 + n / 2
    scatter = weights.T @ x ** 2 - n * mean_x ** 2
    b = np.array([1.5, 0.7]) + 0.5 * scatter + 0.5 * n * 0.5 * (mean_x - [0.1, -0.2]) ** 2 / kappa
    scale = np.sqrt(b * (kappa + 1) / (a * kappa))
    want = stats.t.logpdf(x[:5, None, :], df=2 * a, loc=mu, scale=scale).sum(axis=2)
    np.testing.assert_allclose(np.log(lik) + (want.max(axis=1))[:, None], want, atol=1e-9)
    assert abs(log_scale - want.max(axis=1).sum()) < 1e-9
    # the batch table of the same rule agrees with the kernel
    table, offset = family.table(stat, MEAN, corpus)
    np.testing.assert_allclose(np.log(table[:5]) + offset[:5, None], want, atol=1e-9)


def _categorical(tau=None):
    corpus = Corpus.from_sequences([np.array([0, 2, 2, 3, 0, 2])])
    family = Categorical(beta=0.7, n_symbols=4)
    family.prepare(corpus, 2)
    family.set_prior(0.7 if tau is None else 2.0, tau)
    states = np.array([0, 1, 1, 0, 0, 1], dtype=np.int32)
    stats = state_stats(CATEGORICAL, family.index(corpus), family.features(corpus), states, 2, family.n_stats())
    return family, corpus, states, stats


def test_categorical_log_marginal_is_the_dirichlet_multinomial_under_either_prior():
    """eq. 3.24 per state, with Dir(beta) or the HDP-HMM's Dir(beta tau) (§5.5.3), summed by hand."""
    for tau in (None, np.array([0.1, 0.2, 0.3, 0.4])):
        family, corpus, states, stats = _categorical(tau)
        pseudo = np.full(4, 0.7) if tau is None else 2.0 * tau
        want = 0.0
        for k in range(2):
            counts = np.bincount(corpus.observations[states == k], minlength=4)
            want += (gammaln(pseudo.sum()) - gammaln(pseudo.sum() + counts.sum())
                     + (gammaln(counts + pseudo) - gammaln(pseudo)).sum())
        assert np.isclose(family.log_marginal(stats), want, rtol=1e-12)


def test_categorical_predictive_rows_honour_tau():
    family, corpus, states, stats = _categorical(np.array([0.1, 0.2, 0.3, 0.4]))
    lik = np.empty((6, 2))
    log_scale = predictive_rows(CATEGORICAL, stats, family.prior_array(), family.index(corpus),
                                family.features(corpus), 0, 6, np.zeros((0, 2)), lik)
    counts = stats[:-1]
    want = (counts + 2.0 * family.tau[:, None]) / (counts.sum(axis=0) + 2.0)
    rows = want[corpus.observations]
    np.testing.assert_allclose(lik * rows.max(axis=1, keepdims=True), rows, rtol=1e-12)
    assert np.isclose(log_scale, np.log(rows.max(axis=1)).sum())


def _chain_cases():
    """(family, observations) of every family with a real-valued or count feature table."""
    rng = np.random.default_rng(3)
    return [(Gaussian(kappa=0.3, shape=1.5, rate=[0.8, 1.2], mean=[0.2, 0.0]), rng.normal(size=(9, 2))),
            (FullGaussian(mean=[0.3, -0.2], kappa=0.7, dof=3.5, scale=[[1.5, 0.4], [0.4, 0.9]]),
             rng.multivariate_normal([1.0, -1.0], [[1.0, 0.6], [0.6, 2.0]], size=9)),
            (Poisson(shape=1.7, rate=[0.6, 1.3]), rng.poisson([2.0, 5.0], size=(9, 2)).astype(float))]


@pytest.mark.parametrize("case", range(3), ids=["gaussian", "gaussian-full", "poisson"])
def test_log_marginal_is_the_product_of_its_predictives(case):
    """log p(x_1..n | z) = sum_t log p(x_t | x_<t, z): the chain rule over the predictives of eq. 3.96
    (Student-t, multivariate Student-t, negative binomial), token by token as CGS adds them."""
    family, x = _chain_cases()[case]
    corpus = Corpus.from_sequences([x])
    family.prepare(corpus, 2)
    states = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1], dtype=np.int32)
    index, features = family.index(corpus), family.features(corpus)
    running = np.zeros((family.n_stats(), 2))
    lik = np.empty((1, 2))
    chain = 0.0
    for t, z in enumerate(states):
        log_scale = predictive_rows(family.code, running, family.prior_array(), index, features, t, t + 1,
                                    np.zeros((0, 2)), lik)
        chain += np.log(lik[0, z]) + log_scale
        add_token_state(family.code, running, index, features, t, z, 1.0)
    stats = state_stats(family.code, index, features, states, 2, family.n_stats())
    np.testing.assert_allclose(running, stats, atol=1e-12)
    assert np.isclose(family.log_marginal(stats), chain, rtol=1e-10)


def test_a_hard_assignment_is_a_one_hot_soft_one():
    family, corpus, states, stats = _categorical()
    onehot = np.eye(2)[states]
    np.testing.assert_array_equal(stats, token_stats(CATEGORICAL, family.index(corpus), family.features(corpus),
                                                     onehot, family.n_stats()))
    moved = stats.copy()
    add_token_state(CATEGORICAL, moved, family.index(corpus), family.features(corpus), 2, 1, -1.0)
    add_token_stats(CATEGORICAL, stats, family.index(corpus), family.features(corpus), 2, onehot[2], -1.0)
    np.testing.assert_array_equal(moved, stats)

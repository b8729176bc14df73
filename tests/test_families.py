"""Emission families: predictive rows and parameter tables against scipy."""
import numpy as np
from scipy import stats

from cvbayes.data import Corpus
from cvbayes.families import Gaussian
from cvbayes.families.ops import GAUSSIAN, add_token_stats, predictive_rows


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
    table, offset = family.table(stat, "predictive", corpus)
    np.testing.assert_allclose(np.log(table[:5]) + offset[:5, None], want, atol=1e-9)

"""The Poisson-Gamma family: its negative binomial predictive (eq. 3.96), VB's expectations, the KL term and
the marginal likelihood against numerical integrals over the rate."""
import numpy as np
import pytest
from scipy import integrate, stats

from cvbayes.core.rules import MEAN, VB
from cvbayes.data import Corpus
from cvbayes.families import POISSON, Poisson
from cvbayes.families.ops import add_token_stats, predictive_rows, state_stats, token_stats

SHAPE, RATE = 1.7, [0.6, 1.3]


def _family_and_counts(n_tokens=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.poisson([2.0, 5.0], size=(n_tokens, 2)).astype(float)
    corpus = Corpus.from_sequences([x])
    family = Poisson(shape=SHAPE, rate=RATE)
    family.prepare(corpus, 3)
    return family, corpus, x, rng


def _gamma_integral(f, a, b):
    """int_0^inf f(lambda) Gamma(lambda | shape a, rate b) d lambda, by quadrature."""
    density = stats.gamma(a, scale=1.0 / b)
    upper = density.ppf(1.0 - 1e-14)
    return integrate.quad(lambda lam: f(lam) * density.pdf(lam), 0.0, upper, limit=200, epsabs=1e-13,
                          epsrel=1e-11)[0]


def test_predictive_is_the_integral_of_the_poisson_over_the_gamma_posterior():
    """Leave-one-token-out predictive rows (CVI-1's and CGS's use of eq. 3.96) against
    int Poisson(x | lambda) Gamma(lambda | a_n, b_n) d lambda, dimension by dimension, with the posterior
    (a_n, b_n) of the other tokens' soft counts computed here by hand."""
    family, corpus, x, rng = _family_and_counts()
    weights = rng.dirichlet(np.ones(3), size=x.shape[0])
    features, index = family.features(corpus), family.index(corpus)
    table = token_stats(POISSON, index, features, weights, family.n_stats())
    errors = []
    for t in (0, 3, 7):
        stat = table.copy()
        add_token_stats(POISSON, stat, index, features, t, weights[t], -1.0)
        lik = np.empty((1, 3))
        log_scale = predictive_rows(POISSON, stat, family.prior_array(), index, features, t, t + 1,
                                    np.zeros((0, 3)), lik)
        others = np.delete(np.arange(x.shape[0]), t)
        for k in range(3):
            a = SHAPE + weights[others, k] @ x[others]
            b = np.asarray(RATE) + weights[others, k].sum()
            want = np.prod([_gamma_integral(lambda lam: stats.poisson.pmf(x[t, d], lam), a[d], b[d])
                            for d in range(2)])
            got = lik[0, k] * np.exp(log_scale)
            errors.append(abs(got - want) / want)
    assert max(errors) < 1e-8


def test_vb_table_is_the_expected_log_likelihood_and_mean_table_the_kernels():
    family, corpus, x, rng = _family_and_counts()
    states = rng.integers(0, 3, size=x.shape[0]).astype(np.int32)
    features = family.features(corpus)
    stat = state_stats(POISSON, family.index(corpus), features, states, 3, family.n_stats())
    a, b = family.posterior(stat)
    table, offset = family.table(stat, VB, corpus)
    for t in (0, 5):
        for k in range(3):
            want = sum(_gamma_integral(lambda lam: stats.poisson.logpmf(x[t, d], lam), a[k, d], b[k, d])
                       for d in range(2))
            assert np.log(table[t, k]) + offset[t] == pytest.approx(want, rel=1e-9)
    table, offset = family.table(stat, MEAN, corpus)
    lik = np.empty((x.shape[0], 3))
    log_scale = predictive_rows(POISSON, stat, family.prior_array(), family.index(corpus), features, 0, x.shape[0],
                                np.zeros((0, 3)), lik)
    np.testing.assert_allclose(table, lik, rtol=1e-12)
    assert offset.sum() == pytest.approx(log_scale, rel=1e-12)


def test_kl_is_the_integral_of_log_q_over_p():
    family, corpus, x, rng = _family_and_counts(n_tokens=6)
    stat = token_stats(POISSON, family.index(corpus), family.features(corpus), rng.dirichlet(np.ones(2), size=6),
                       family.n_stats())
    a, b = family.posterior(stat)
    want = 0.0
    for k in range(2):
        for d in range(2):
            q, p = stats.gamma(a[k, d], scale=1.0 / b[k, d]), stats.gamma(SHAPE, scale=1.0 / RATE[d])
            want += _gamma_integral(lambda lam: q.logpdf(lam) - p.logpdf(lam), a[k, d], b[k, d])
    assert family.kl(stat) == pytest.approx(want, rel=1e-8)


def test_counts_are_checked_and_integer_ids_are_one_dimension():
    family = Poisson()
    family.prepare(Corpus.from_sequences([np.array([0, 3, 1, 2])]), 2)
    assert family.n_dims == 1 and family.rate[0] == pytest.approx(1.0 / 1.5)
    for bad in (np.array([[1.0], [-1.0]]), np.array([[1.0], [0.5]])):
        with pytest.raises(ValueError, match="row 1"):
            Poisson().prepare(Corpus.from_sequences([bad]), 2)
    with pytest.raises(ValueError, match="shape must be positive"):
        Poisson(shape=0.0)


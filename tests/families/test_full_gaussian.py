"""The full-covariance Normal-Wishart family: its multivariate Student-t predictive (eq. 3.96) against
scipy's closed form and a Monte Carlo average over Normal-Wishart draws, VB's expectations and KL term,
the marginal likelihood, and the one-dimensional case against the diagonal Normal-Gamma family."""
import numpy as np
import pytest
from scipy import stats

import cvbayes
from cvbayes.core.rules import MAP, MEAN, VB
from cvbayes.data import Corpus
from cvbayes.families import FULL_GAUSSIAN, GAUSSIAN, FullGaussian, Gaussian
from cvbayes.families.ops import add_token_stats, predictive_rows, state_stats, token_stats
from cvbayes.models.hmm import ALGORITHMS

MEAN0 = np.array([0.3, -0.2])
KAPPA0, DOF0 = 0.7, 3.5
SCALE0 = np.array([[1.5, 0.4], [0.4, 0.9]])


def _family_and_data(n_tokens=15, seed=0, n_states=3):
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal([1.0, -1.0], [[1.0, 0.6], [0.6, 2.0]], size=n_tokens)
    corpus = Corpus.from_sequences([x])
    family = FullGaussian(mean=MEAN0, kappa=KAPPA0, dof=DOF0, scale=SCALE0)
    family.prepare(corpus, n_states)
    weights = rng.dirichlet(np.ones(n_states), size=n_tokens)
    stat = token_stats(FULL_GAUSSIAN, family.index(corpus), x, weights, family.n_stats())
    return family, corpus, x, weights, stat, rng


def _posterior_by_hand(x, w):
    """(kappa_n, mu_n, nu_n, Psi_n) of weighted data by the scatter form (Murphy 2007):
    Psi_n = Psi0 + S + kappa0 n / kappa_n (xbar - mu0)(xbar - mu0)^T, not the code's raw-moment form."""
    n = w.sum()
    xbar = w @ x / n
    scatter = (w[:, None] * (x - xbar)).T @ (x - xbar)
    kappa = KAPPA0 + n
    mu = (KAPPA0 * MEAN0 + n * xbar) / kappa
    psi = SCALE0 + scatter + KAPPA0 * n / kappa * np.outer(xbar - MEAN0, xbar - MEAN0)
    return kappa, mu, DOF0 + n, psi


def _leave_one_out_rows(family, corpus, x, weights, stat, t):
    left = stat.copy()
    add_token_stats(FULL_GAUSSIAN, left, family.index(corpus), x, t, weights[t], -1.0)
    lik = np.empty((1, stat.shape[1]))
    log_scale = predictive_rows(FULL_GAUSSIAN, left, family.prior_array(), family.index(corpus), x, t, t + 1,
                                np.zeros((0, stat.shape[1])), lik)
    return np.log(lik[0]) + log_scale


def test_predictive_is_scipys_multivariate_t_of_the_posterior():
    """Leave-one-token-out rows against scipy.stats.multivariate_t with df = nu_n - D + 1 and shape
    Psi_n (kappa_n + 1) / (kappa_n df), the posterior of the other tokens computed by hand."""
    family, corpus, x, weights, stat, _ = _family_and_data()
    errors = []
    for t in (0, 4, 11):
        got = _leave_one_out_rows(family, corpus, x, weights, stat, t)
        others = np.delete(np.arange(x.shape[0]), t)
        for k in range(3):
            kappa, mu, nu, psi = _posterior_by_hand(x[others], weights[others, k])
            df = nu - 2 + 1
            want = stats.multivariate_t(mu, psi * (kappa + 1) / (kappa * df), df=df).logpdf(x[t])
            errors.append(abs(got[k] - want))
    assert max(errors) < 1e-10


@pytest.mark.parametrize("n_dims", [1, 2])
def test_predictive_is_the_average_gaussian_over_normal_wishart_draws(n_dims):
    """p(x | stats) = E[N(x | mu, Lambda^-1)] over (mu, Lambda) from the Normal-Wishart posterior: a Monte
    Carlo average of 40,000 draws (Lambda ~ Wishart(nu_n, Psi_n^-1), mu | Lambda ~ N(mu_n, (kappa_n
    Lambda)^-1)) within four standard errors of the predictive (0.1-2 % here)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, n_dims)) + 1.0
    corpus = Corpus.from_sequences([x])
    family = FullGaussian(mean=np.zeros(n_dims), kappa=0.5, dof=n_dims + 1.5, scale=np.eye(n_dims) * 0.8)
    family.prepare(corpus, 1)
    stat = state_stats(FULL_GAUSSIAN, family.index(corpus), x, np.zeros(6, dtype=np.int32), 1, family.n_stats())
    kappa, nu, mu, chol = family.posterior(stat)
    psi = chol[0] @ chol[0].T
    precisions = stats.wishart(df=nu[0], scale=np.linalg.inv(psi)).rvs(40_000, random_state=rng)
    precisions = precisions.reshape(-1, n_dims, n_dims)
    covariances = np.linalg.inv(precisions)
    means = mu[0] + np.einsum("sde,se->sd", np.linalg.cholesky(covariances / kappa[0]),
                              rng.standard_normal((precisions.shape[0], n_dims)))
    probe = np.array([[0.5] * n_dims, [2.0] * n_dims, [-1.0] + [1.5] * (n_dims - 1)])
    table, offset = family.compact_table(stat, MEAN, probe)
    predictive = table[:, 0] * np.exp(offset)
    for i, point in enumerate(probe):
        diff = point - means
        quadratic = np.einsum("sd,sde,se->s", diff, precisions, diff)
        density = np.exp(-0.5 * quadratic - 0.5 * n_dims * np.log(2 * np.pi)) * np.sqrt(np.linalg.det(precisions))
        assert density.mean() == pytest.approx(predictive[i], abs=4 * density.std() / np.sqrt(density.shape[0]))


@pytest.mark.slow
def test_vb_table_and_kl_against_monte_carlo_over_the_posterior():
    """VB's E[log N(x | mu, Lambda)] (Bishop 2006, eq. 10.64-10.65) and KL(NW_n || NW_0) against averages
    over 40,000 (10,000) Normal-Wishart draws, within four standard errors."""
    family, corpus, x, weights, stat, rng = _family_and_data(n_states=2)
    kappa, nu, mu, chol = family.posterior(stat)
    table, offset = family.table(stat, VB, corpus)
    kl = 0.0
    spread = []
    for k in range(2):
        psi = chol[k] @ chol[k].T
        wishart = stats.wishart(df=nu[k], scale=np.linalg.inv(psi))
        precisions = wishart.rvs(40_000, random_state=rng)
        covariances = np.linalg.inv(precisions)
        means = mu[k] + np.einsum("sde,se->sd", np.linalg.cholesky(covariances / kappa[k]),
                                  rng.standard_normal((precisions.shape[0], 2)))
        for t in (0, 6):
            log_density = _log_normal(np.broadcast_to(x[t], means.shape), means, precisions)
            error = 4 * log_density.std() / np.sqrt(log_density.shape[0])
            assert np.log(table[t, k]) + offset[t] == pytest.approx(log_density.mean(), abs=error)
        # scipy's Wishart density takes 80 us a matrix: the KL averages over the first 10,000 draws
        some, means = precisions[:10_000], means[:10_000]
        prior = stats.wishart(df=DOF0, scale=np.linalg.inv(SCALE0))
        log_q = wishart.logpdf(some.T) + _log_normal(means, mu[k], kappa[k] * some)
        log_p = prior.logpdf(some.T) + _log_normal(means, MEAN0, KAPPA0 * some)
        spread.append((log_q - log_p).std() / np.sqrt(some.shape[0]))
        kl += np.mean(log_q - log_p)
    assert family.kl(stat) == pytest.approx(kl, abs=4 * np.sqrt(np.sum(np.square(spread))))


def _log_normal(points, centre, precisions):
    """log N(points_s | centre, precisions_s^-1) of every draw s."""
    diff = points - centre
    return (0.5 * np.linalg.slogdet(precisions)[1] - 0.5 * points.shape[1] * np.log(2 * np.pi)
            - 0.5 * np.einsum("sd,sde,se->s", diff, precisions, diff))


def _twins(x, n_states):
    """The diagonal family with (a0, b0) and the full one with nu0 = 2 a0, Psi0 = 2 b0, prepared on x (1-D)."""
    corpus = Corpus.from_sequences([x])
    diagonal = Gaussian(mean=[0.4], kappa=0.3, shape=1.6, rate=[0.9])
    full = FullGaussian(mean=[0.4], kappa=0.3, dof=3.2, scale=[[1.8]])
    diagonal.prepare(corpus, n_states)
    full.prepare(corpus, n_states)
    return corpus, diagonal, full


def test_one_dimension_is_the_diagonal_normal_gamma_family():
    """A Wishart of one dimension is a Gamma (shape nu / 2, rate Psi / 2): every rule, objective and
    estimate of the full family equals the diagonal one's."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20, 1)) * 2.0
    corpus, diagonal, full = _twins(x, 3)
    weights = rng.dirichlet(np.ones(3), size=20)
    stat_diagonal = token_stats(GAUSSIAN, diagonal.index(corpus), x, weights, diagonal.n_stats())
    stat_full = token_stats(FULL_GAUSSIAN, full.index(corpus), x, weights, full.n_stats())
    np.testing.assert_allclose(stat_full, stat_diagonal, rtol=1e-14)   # [n, sum x, sum x^2] in both layouts
    for rule in (VB, MEAN):
        for got, want in zip(full.table(stat_full, rule, corpus), diagonal.table(stat_diagonal, rule, corpus)):
            np.testing.assert_allclose(got, want, rtol=1e-10)
    lik_full, lik_diagonal = np.empty((20, 3)), np.empty((20, 3))
    assert predictive_rows(FULL_GAUSSIAN, stat_full, full.prior_array(), full.index(corpus), x, 0, 20,
                           np.zeros((0, 3)), lik_full) == pytest.approx(
        predictive_rows(GAUSSIAN, stat_diagonal, diagonal.prior_array(), diagonal.index(corpus), x, 0, 20,
                        np.zeros((0, 3)), lik_diagonal), rel=1e-12)
    np.testing.assert_allclose(lik_full, lik_diagonal, rtol=1e-10)
    assert full.kl(stat_full) == pytest.approx(diagonal.kl(stat_diagonal), rel=1e-10)
    assert full.log_marginal(stat_full) == pytest.approx(diagonal.log_marginal(stat_diagonal), rel=1e-12)
    for rule in (MAP, MEAN):
        got, want = full.fitted(stat_full, rule), diagonal.fitted(stat_diagonal, rule)
        np.testing.assert_allclose(got["means_"], want["means_"], rtol=1e-12)
        np.testing.assert_allclose(got["covars_"][:, :, 0], want["covars_"], rtol=1e-12)
    params = full.map_params(stat_full)
    assert full.log_prior(params) == pytest.approx(
        diagonal.log_prior({"means": params["means"], "covars": params["covars"][:, :, 0]}), rel=1e-12)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_one_dimensional_fits_follow_the_diagonal_familys(algorithm):
    """Every learner, from the same seed, takes the same path with either family on 1-D data."""
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(-2.0, 1.0, size=(30, 1)), rng.normal(2.0, 0.5, size=(30, 1))])
    sequences = [x[i::6] for i in range(6)]
    _, diagonal, full = _twins(x, 2)
    histories = []
    for family in (diagonal, full):
        model = cvbayes.HMM(2, alpha=0.8, emission=family, algorithm=algorithm, n_iter=4, random_state=3,
                            batch_size=3, subchain_length=4 if algorithm == "cvi3" else None)
        model.fit(sequences)
        histories.append([record.objective for record in model.history_])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-9)


def test_bad_priors_and_parameters_are_refused():
    corpus = Corpus.from_sequences([np.zeros((4, 2))])
    with pytest.raises(ValueError, match="dof > D"):
        FullGaussian(dof=2.0).prepare(corpus, 2)
    with pytest.raises(ValueError, match="positive definite"):
        FullGaussian(scale=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="kappa"):
        FullGaussian(kappa=0.0)
    family = FullGaussian()
    family.prepare(corpus, 2)
    with pytest.raises(ValueError, match="positive definite"):
        family.table_from_params({"means": np.zeros((2, 2)), "covars": -np.ones((2, 2, 2))}, corpus)
    with pytest.raises(ValueError, match="covars"):
        family.table_from_params({"means": np.zeros((2, 2)), "covars": np.ones((2, 2))}, corpus)


def test_a_scale_that_rounding_leaves_indefinite_falls_back_to_the_priors():
    """Psi_n = Psi0 + sum x x^T + kappa0 mu0 mu0^T - kappa_n mu_n mu_n^T of an empty state whose second
    moments rounding left negative is not positive definite: the posterior takes Psi0, as the diagonal
    family floors b_n at b0."""
    family = FullGaussian(mean=MEAN0, kappa=KAPPA0, dof=DOF0, scale=SCALE0)
    family.prepare(Corpus.from_sequences([np.zeros((3, 2))]), 1)
    stat = np.zeros((family.n_stats(), 1))
    stat[3:, 0] = [-5.0, 0.0, -5.0]   # sum x_1^2, sum x_1 x_2, sum x_2^2
    kappa, nu, mu, chol = family.posterior(stat)
    np.testing.assert_allclose(chol[0] @ chol[0].T, SCALE0, rtol=1e-12)
    assert kappa[0] == KAPPA0 and nu[0] == DOF0
    stat[3:, 0] = [-0.1, 0.0, -0.1]   # small enough for Psi0 to absorb: kept
    kappa, nu, mu, chol = family.posterior(stat)
    np.testing.assert_allclose(chol[0] @ chol[0].T, SCALE0 - 0.1 * np.eye(2), rtol=1e-12)

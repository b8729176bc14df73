"""The guarded sum-product of CVI-3 against brute-force enumeration of q2 (eq. 3.71)."""
import itertools

import numpy as np
import pytest

from tests.brute import guarded_posterior
from cvbayes.chains.forward_backward import add_pair_outer, chain_marginals
from cvbayes.chains.guarded import add_left_guard_pairs, add_right_guard_pairs, guard_end, guard_start


def _prior(alpha, n_states, prior_total=None):
    row = np.broadcast_to(np.asarray(alpha, dtype=float), (n_states,)).copy()
    return row, (row.sum() if prior_total is None else prior_total)


def _guarded_chain(left_belief, left_counts, theta_bar, phi_rows, right_counts, right_belief, alpha,
                   prior_total=None):
    """Run the kernels the way the CVI-3 sweep does."""
    n_steps, n_states = phi_rows.shape
    prior_row, prior_total = _prior(alpha, n_states, prior_total)
    start = np.empty(n_states)
    guard_start(left_belief, left_counts, prior_row, start)
    end = np.empty(n_states)
    guard_end(right_counts, right_belief, prior_row, prior_total, end)
    lik = phi_rows.copy()
    lik[-1] *= end
    fwd = np.empty_like(lik)
    bwd = np.empty_like(lik)
    gamma = np.empty_like(lik)
    chain_marginals(start, theta_bar, lik, n_steps, fwd, bwd, gamma)
    outer = np.zeros((n_states, n_states))
    add_pair_outer(fwd, bwd, 1, n_steps, outer)
    left_pairs = np.zeros((n_states, n_states))
    add_left_guard_pairs(left_belief, left_counts, prior_row, gamma[0], 1.0, left_pairs)
    right_pairs = np.zeros((n_states, n_states))
    add_right_guard_pairs(right_counts, right_belief, prior_row, gamma[-1], 1.0, right_pairs)
    return gamma, outer * theta_bar, left_pairs, right_pairs, start, end


def _random_problem(rng, n_states, n_steps):
    left_belief = rng.dirichlet(np.ones(n_states))
    right_belief = rng.dirichlet(np.ones(n_states))
    left_counts = rng.gamma(1.0, 3.0, size=(n_states, n_states))
    right_counts = rng.gamma(1.0, 3.0, size=(n_states, n_states))
    counts = rng.gamma(1.0, 3.0, size=(n_states, n_states))
    theta_bar = (counts + 0.3) / (counts + 0.3).sum(axis=1, keepdims=True)
    phi_rows = rng.random((n_steps, n_states))
    return left_belief, left_counts, theta_bar, phi_rows, right_counts, right_belief


@pytest.mark.parametrize("n_states,n_steps", [(2, 1), (2, 3), (3, 2), (3, 4)])
@pytest.mark.parametrize("alpha", [0.1, 1.0, "hdp"])
def test_guarded_marginals_match_enumeration_of_q2(n_states, n_steps, alpha):
    """Symmetric alpha, and the HDP-HMM's per-state priors sigma G[pi_k] with total sigma."""
    rng = np.random.default_rng(n_states * 10 + n_steps)
    problem = _random_problem(rng, n_states, n_steps)
    prior_total = None
    if alpha == "hdp":
        prior_total = 2.0
        alpha = prior_total * rng.dirichlet(np.ones(n_states + 1))[:n_states]
    marginals, pairs, left_pairs, right_pairs, _ = guarded_posterior(*problem, alpha, prior_total)
    got_marginals, got_pairs, got_left, got_right, _, _ = _guarded_chain(*problem, alpha, prior_total)
    np.testing.assert_allclose(got_marginals, marginals, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_pairs, pairs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_left, left_pairs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_right, right_pairs, rtol=1e-10, atol=1e-12)
    # the guard pairs are consistent with the chain's end marginals
    np.testing.assert_allclose(got_left.sum(axis=0), got_marginals[0], rtol=1e-10)
    np.testing.assert_allclose(got_right.sum(axis=1), got_marginals[-1], rtol=1e-10)


@pytest.mark.parametrize("alpha", [0.1, 2.0])
def test_summing_out_the_guards_gives_eq_3_70(alpha):
    """sum over z0, z_{T+1} of q2 equals the boundary-expanded q(z^i) of eq. 3.70."""
    n_states, n_steps = 3, 3
    rng = np.random.default_rng(7)
    left_belief, left_counts, theta_bar, phi_rows, right_counts, right_belief = _random_problem(
        rng, n_states, n_steps)
    *_, summed_out = guarded_posterior(left_belief, left_counts, theta_bar, phi_rows,
                                       right_counts, right_belief, alpha)
    k_alpha = n_states * alpha
    weights = {}
    for inner in itertools.product(range(n_states), repeat=n_steps):
        p = left_belief @ left_counts[:, inner[0]] + alpha
        p *= (right_counts[inner[-1]] @ right_belief + alpha) / (right_counts[inner[-1]].sum() + k_alpha)
        for t in range(1, n_steps):
            p *= theta_bar[inner[t - 1], inner[t]]
        for t in range(n_steps):
            p *= phi_rows[t, inner[t]]
        weights[inner] = p
    total = sum(weights.values())
    for inner, p in weights.items():
        assert summed_out[inner] == pytest.approx(p / total, rel=1e-10)


def test_guard_start_and_end_are_the_guard_messages():
    """The start vector is the normalised message f_1 sends to z_1 (eq. 3.79 at t = 1)
    and the end vector the message f_{T+1} sends to z_T (eq. 3.80 at t = T)."""
    rng = np.random.default_rng(3)
    n_states, alpha = 4, 0.5
    left_belief, left_counts, _, _, right_counts, right_belief = _random_problem(rng, n_states, 1)
    prior_row, prior_total = _prior(alpha, n_states)
    start = np.empty(n_states)
    guard_start(left_belief, left_counts, prior_row, start)
    message = (left_belief[:, None] * (left_counts + alpha / (n_states * left_belief[:, None]))).sum(axis=0)
    np.testing.assert_allclose(start, message / message.sum())
    end = np.empty(n_states)
    guard_end(right_counts, right_belief, prior_row, prior_total, end)
    factor = ((right_counts + alpha / (n_states * right_belief[None])) * right_belief[None]).sum(axis=1)
    np.testing.assert_allclose(end, factor / (right_counts.sum(axis=1) + n_states * alpha))

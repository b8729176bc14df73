"""The guarded sum-product of CVI-3 and SCVI-3 (thesis eq. 3.71-3.82; eq. 13-23 of
Wang and Blunsom, Stochastic Collapsed Variational Inference for Hidden Markov Models).

A subchain z_1..z_T of a long sequence is updated together with two guarding
variables: z_0, the last state of the previous subchain, and z_{T+1}, the first
state of the next one.  Their beliefs q(z_0) and q(z_{T+1}) are the marginals
the neighbouring subchains last computed, so messages flow along the whole
sequence through the subchain boundaries.

With C the transition counts the boundary factors may use (C^{\\i-1,i} and
C^{\\i,i+1} in the batch algorithm, the global N in the stochastic one), the
potentials of eq. 3.72-3.76 pair up as

    f_0 f_1:        g_left(z0, z1)  = q(z0) C[z0, z1] + a_{z1} / K   (times phi_bar(z1))
    f_{T+1} f_{T+2}: g_right(zT, z') = (q(z') C[zT, z'] + a_{z'} / K) / (C[zT, .] + A)

with a_k = alpha and A = K alpha for the finite HMM; the HDP-HMM's surrogate
(eq. 5.38) replaces them by sigma G[pi_k] and sigma, the prior of the
transition's target state.  Summing out the guards (eq. 3.79 at t = 1 and
eq. 3.80 at t = T) leaves an ordinary chain with the start vector
sum_{z0} g_left = q(z0) C + a and the
end vector sum_{z'} g_right, which `chain_marginals` handles once the end
vector is folded into the last emission row.  The guards' pair marginals then
follow from the chain's own end marginals (eq. 3.82):

    q2(z0, z1) = q(z1) g_left(z0, z1) / sum_{z0'} g_left(z0', z1)
    q2(zT, z') = q(zT) g_right(zT, z') / sum_{z''} g_right(zT, z'')
"""
from numba import njit

from ..core.rules import mean_cell
from ..core.special import FAST


@njit(cache=True, fastmath=FAST)
def guard_start(left_belief, counts, prior_row, out):
    """Start vector of a guarded subchain: the message into z_1 (eq. 3.77, 3.79).

    out[k] = MEAN of the expected row sum_j q(z0 = j) C[j, k] under the prior a_k,
    normalised over k so that the chain's log normaliser is a predictive
    log-probability.
    """
    n_states = out.shape[0]
    for k in range(n_states):
        out[k] = 0.0
    for j in range(n_states):
        q = left_belief[j]
        if q == 0.0:
            continue
        for k in range(n_states):
            out[k] += q * max(counts[j, k], 0.0)
    row_count = 0.0
    for k in range(n_states):
        row_count += out[k]
    row_prior = prior_row.sum()
    for k in range(n_states):
        out[k] = mean_cell(out[k], prior_row[k], row_count, row_prior)


@njit(cache=True, fastmath=FAST)
def guard_end(counts, right_belief, prior_row, prior_total, out):
    """End vector of a guarded subchain: the message into z_T (eq. 3.78, 3.80).

    out[j] = (sum_k C[j, k] q(z_{T+1} = k) + sum_k a_k / K) / (C[j, .] + A): the
    MEAN of the expected count under the average prior a_k.
    """
    n_states = out.shape[0]
    per_row = prior_row.sum() / n_states
    for j in range(n_states):
        expected = 0.0
        row_count = 0.0
        for k in range(n_states):
            c = max(counts[j, k], 0.0)
            expected += c * right_belief[k]
            row_count += c
        out[j] = mean_cell(expected, per_row, row_count, prior_total)


@njit(cache=True, fastmath=FAST)
def _add_guard_pairs(belief, counts, prior_row, prior_on_rows, marginal, weight, out):
    """out[j, k] += weight q(k) g(j, k) / sum_j' g(j', k), g(j, k) = belief_j C[j, k] + a / K,
    where a is the prior of the transition's target state: a_k for the left guard,
    a_j on the transposed counts of the right guard."""
    n_states = out.shape[0]
    for k in range(n_states):
        m = marginal[k]
        if m == 0.0:
            continue
        den = 0.0
        for j in range(n_states):
            den += belief[j] * max(counts[j, k], 0.0) + (prior_row[j] if prior_on_rows else prior_row[k]) / n_states
        scale = weight * m / den
        for j in range(n_states):
            cell = (prior_row[j] if prior_on_rows else prior_row[k]) / n_states
            out[j, k] += scale * (belief[j] * max(counts[j, k], 0.0) + cell)


@njit(cache=True, fastmath=FAST)
def add_left_guard_pairs(left_belief, counts, prior_row, first_marginal, weight, out):
    """out += weight * q2(z0, z1) (eq. 3.82 at t = 1), from q(z1) and the guard factor."""
    _add_guard_pairs(left_belief, counts, prior_row, False, first_marginal, weight, out)


@njit(cache=True, fastmath=FAST)
def add_right_guard_pairs(counts, right_belief, prior_row, last_marginal, weight, out):
    """out += weight * q2(z_T, z_{T+1}) (eq. 3.82 at t = T + 1): the left guard's
    formula with time reversed, i.e. on the transposed counts and output."""
    _add_guard_pairs(right_belief, counts.T, prior_row, True, last_marginal, weight, out.T)

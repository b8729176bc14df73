"""The guarded sum-product of CVI-3 and SCVI-3 (thesis eq. 3.71-3.82; seeds/002 eq. 13-23).

A subchain z_1..z_T of a long sequence is updated together with two guarding
variables: z_0, the last state of the previous subchain, and z_{T+1}, the first
state of the next one.  Their beliefs q(z_0) and q(z_{T+1}) are the marginals
the neighbouring subchains last computed, so messages flow along the whole
sequence through the subchain boundaries.

With C the transition counts the boundary factors may use (C^{\\i-1,i} and
C^{\\i,i+1} in the batch algorithm, the global N in the stochastic one), the
potentials of eq. 3.72-3.76 pair up as

    f_0 f_1:        g_left(z0, z1)  = q(z0) C[z0, z1] + alpha / K   (times phi_bar(z1))
    f_{T+1} f_{T+2}: g_right(zT, z') = (q(z') C[zT, z'] + alpha / K) / (C[zT, .] + K alpha)

so summing out the guards (eq. 3.79 at t = 1 and eq. 3.80 at t = T) leaves an
ordinary chain with the start vector sum_{z0} g_left = q(z0) C + alpha and the
end vector sum_{z'} g_right, which `chain_marginals` handles once the end
vector is folded into the last emission row.  The guards' pair marginals then
follow from the chain's own end marginals (eq. 3.82):

    q2(z0, z1) = q(z1) g_left(z0, z1) / sum_{z0'} g_left(z0', z1)
    q2(zT, z') = q(zT) g_right(zT, z') / sum_{z''} g_right(zT, z'')
"""
from numba import njit

from .forward_backward import FAST


@njit(cache=True, fastmath=FAST)
def guard_start(left_belief, counts, alpha, out):
    """Start vector of a guarded subchain: the message into z_1 (eq. 3.77, 3.79).

    out[k] ∝ sum_j q(z0 = j) C[j, k] + alpha, normalised to sum to one so that
    the chain's log normaliser is a predictive log-probability.
    """
    n_states = out.shape[0]
    total = 0.0
    for k in range(n_states):
        out[k] = alpha
    for j in range(n_states):
        q = left_belief[j]
        if q == 0.0:
            continue
        for k in range(n_states):
            out[k] += q * max(counts[j, k], 0.0)
    for k in range(n_states):
        total += out[k]
    for k in range(n_states):
        out[k] /= total


@njit(cache=True, fastmath=FAST)
def guard_end(counts, right_belief, alpha, out):
    """End vector of a guarded subchain: the message into z_T (eq. 3.78, 3.80).

    out[j] = (sum_k C[j, k] q(z_{T+1} = k) + alpha) / (C[j, .] + K alpha).
    """
    n_states = out.shape[0]
    k_alpha = n_states * alpha
    for j in range(n_states):
        num = alpha
        den = k_alpha
        for k in range(n_states):
            c = max(counts[j, k], 0.0)
            num += c * right_belief[k]
            den += c
        out[j] = num / den


@njit(cache=True, fastmath=FAST)
def add_left_guard_pairs(left_belief, counts, alpha, first_marginal, weight, out):
    """out += weight * q2(z0, z1) (eq. 3.82 at t = 1), from q(z1) and the guard factor."""
    n_states = out.shape[0]
    per_state = alpha / n_states
    for k in range(n_states):
        m = first_marginal[k]
        if m == 0.0:
            continue
        den = alpha
        for j in range(n_states):
            den += left_belief[j] * max(counts[j, k], 0.0)
        scale = weight * m / den
        for j in range(n_states):
            out[j, k] += scale * (left_belief[j] * max(counts[j, k], 0.0) + per_state)


@njit(cache=True, fastmath=FAST)
def add_right_guard_pairs(counts, right_belief, alpha, last_marginal, weight, out):
    """out += weight * q2(z_T, z_{T+1}) (eq. 3.82 at t = T + 1): the left guard's
    formula with time reversed, i.e. on the transposed counts and output."""
    add_left_guard_pairs(right_belief, counts.T, alpha, last_marginal, weight, out.T)

"""q(C_jk = 0): the probability that a transition j -> k never occurs (thesis §5.4).

The HDP-HMM's collapsed updates need, for every pair (j, k), the probability
under q(z) that the transition count C_jk is zero (eq. 5.41-5.46).  Each
sequence's posterior is a Markov chain (eq. 5.48-5.49), given here as its first
marginal q(z_1) (K,) and its conditionals q(z_t | z_{t-1}) (T-1, K, K); the
corpus-level value is 1 - prod_i q(C^i_jk = 0) (eq. 5.46), which `combine`
accumulates in log space.

Four ways to compute q(C^i_jk = 0), as the thesis compares them:

* ``exact``: message passing over the chain with the (j, k) transition
  removed (eq. 5.53-5.56), O(T K^2) a pair, O(T K^4) in all;
* ``mean_field``: the same under q(z) = prod_t q(z_t) (eq. 5.57-5.64), two
  numbers a step, O(T K^2) in all;
* ``sampling``: the fraction of S ancestral samples without the transition
  (eq. 5.65), the samples shared by every pair, O(T S + S K^2);
* ``heuristic``: prod_t (1 - q(z_{t-1} = j, z_t = k)), overlapping pairs treated
  as independent (eq. 5.67), O(T K^2).

The start "transition" 0 -> k is absent exactly when z_1 != k, so
q(C_0k = 0) = 1 - q(z_1 = k) (eq. 5.51) for every method.
"""
import numpy as np
from numba import njit

METHODS = ("exact", "mean_field", "sampling", "heuristic")


@njit(cache=True)
def chain_marginals(first, conditionals):
    """q(z_t) of a Markov chain from q(z_1) and q(z_t | z_{t-1})."""
    n_steps = conditionals.shape[0] + 1
    n_states = first.shape[0]
    marginals = np.empty((n_steps, n_states))
    marginals[0] = first
    for t in range(1, n_steps):
        for k in range(n_states):
            total = 0.0
            for j in range(n_states):
                total += marginals[t - 1, j] * conditionals[t - 1, j, k]
            marginals[t, k] = total
    return marginals


@njit(cache=True)
def exact_zero(first, conditionals):
    """q(C_jk = 0) for every pair by message passing (eq. 5.53-5.56).

    m_1 = q(z_1); m_t(z') = sum_z m_{t-1}(z) q(z' | z) [(z, z') != (j, k)];
    q(C_jk = 0) = sum m_T.
    """
    n_states = first.shape[0]
    out = np.empty((n_states, n_states))
    message = np.empty(n_states)
    update = np.empty(n_states)
    for j in range(n_states):
        for k in range(n_states):
            message[:] = first
            for t in range(conditionals.shape[0]):
                cond = conditionals[t]
                for b in range(n_states):
                    total = 0.0
                    for a in range(n_states):
                        total += message[a] * cond[a, b]
                    update[b] = total
                update[k] -= message[j] * cond[j, k]
                message[:] = update
            out[j, k] = message.sum()
    return out


@njit(cache=True)
def mean_field_zero(marginals):
    """q(C_jk = 0) under q(z) = prod_t q(z_t) (eq. 5.57-5.64).

    Only the message's sum s_t and its j-th entry are needed:
    s_t = s_{t-1} - q_t(k) m_{t-1}(j) (eq. 5.63) and
    m_t(j) = q_t(j) (s_{t-1} - [j = k] m_{t-1}(j)) (eq. 5.61, 5.64).
    """
    n_steps, n_states = marginals.shape
    out = np.empty((n_states, n_states))
    for j in range(n_states):
        for k in range(n_states):
            total = 1.0
            at_j = marginals[0, j]
            for t in range(1, n_steps):
                q = marginals[t]
                new_total = total - q[k] * at_j
                at_j = q[j] * (total - (at_j if j == k else 0.0))
                total = new_total
            out[j, k] = total
    return out


@njit(cache=True)
def sampled_zero(first, conditionals, n_samples, seed):
    """The fraction of ancestral samples of the chain without each transition (eq. 5.65)."""
    np.random.seed(seed)
    n_states = first.shape[0]
    n_steps = conditionals.shape[0] + 1
    seen_in = np.full((n_states, n_states), -1, dtype=np.int64)
    with_pair = np.zeros((n_states, n_states))
    for s in range(n_samples):
        z = _draw(first)
        for t in range(1, n_steps):
            nxt = _draw(conditionals[t - 1, z])
            if seen_in[z, nxt] != s:
                seen_in[z, nxt] = s
                with_pair[z, nxt] += 1.0
            z = nxt
    return 1.0 - with_pair / n_samples


@njit(cache=True)
def _draw(probs):
    u = np.random.random() * probs.sum()
    acc = 0.0
    for k in range(probs.shape[0]):
        acc += probs[k]
        if u < acc and probs[k] > 0.0:
            return k
    return probs.shape[0] - 1


@njit(cache=True)
def heuristic_zero(first, conditionals):
    """prod_t (1 - q(z_{t-1} = j, z_t = k)) (eq. 5.67)."""
    n_states = first.shape[0]
    out = np.ones((n_states, n_states))
    previous = first.copy()
    current = np.empty(n_states)
    for t in range(conditionals.shape[0]):
        cond = conditionals[t]
        current[:] = 0.0
        for j in range(n_states):
            for k in range(n_states):
                pair = previous[j] * cond[j, k]
                out[j, k] *= 1.0 - pair
                current[k] += pair
        previous[:] = current
    return out


def no_transition(first, conditionals, method="exact", n_samples=1000, seed=0):
    """(q(C_0k = 0) (K,), q(C_jk = 0) (K, K)) of one chain posterior by ``method``."""
    first = np.ascontiguousarray(first, dtype=float)
    conditionals = np.ascontiguousarray(conditionals, dtype=float).reshape(-1, first.shape[0], first.shape[0])
    if method == "exact":
        pairs = exact_zero(first, conditionals)
    elif method == "mean_field":
        pairs = mean_field_zero(chain_marginals(first, conditionals))
    elif method == "sampling":
        pairs = sampled_zero(first, conditionals, int(n_samples), int(seed))
    elif method == "heuristic":
        pairs = heuristic_zero(first, conditionals)
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return 1.0 - first, pairs


def combine(log_zero, zero):
    """log_zero += log q(C^i = 0): the running log of prod_i q(C^i = 0) (eq. 5.46).

    q(C > 0) is then 1 - exp(log_zero).
    """
    with np.errstate(divide="ignore"):
        log_zero += np.log(np.clip(zero, 0.0, 1.0))
    return log_zero


def occupied(log_zero):
    """q(C > 0) = 1 - prod_i q(C^i = 0) from the accumulated logs."""
    return -np.expm1(log_zero)


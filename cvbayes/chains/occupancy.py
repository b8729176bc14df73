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
q(C_0k = 0) = 1 - q(z_1 = k) (eq. 5.51) for every method.  Restaurant j is
empty, C_j. = 0, when state j never occurs before the last token (eq. 5.44-5.45);
`no_exit` computes q(C_j. = 0) by the same four methods, the heuristic and mean
field coinciding there (one variable a factor).
"""
import numpy as np
from numba import njit

from ..core.sampling import draw
from ..core.special import FAST

METHODS = ("exact", "mean_field", "sampling", "heuristic")
# codes of METHODS inside numba kernels
EXACT, MEAN_FIELD, SAMPLING, HEURISTIC = range(4)


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
    return _sampled_zero_and_exits(first, conditionals, n_samples, seed)[0]


@njit(cache=True)
def _sampled_zero_and_exits(first, conditionals, n_samples, seed):
    """Eq. 5.65 for the pairs and for the exits C_j., from the same S samples."""
    np.random.seed(seed)
    n_states = first.shape[0]
    n_steps = conditionals.shape[0] + 1
    seen_in = np.full((n_states, n_states), -1, dtype=np.int64)
    with_pair = np.zeros((n_states, n_states))
    exit_seen_in = np.full(n_states, -1, dtype=np.int64)
    with_exit = np.zeros(n_states)
    for s in range(n_samples):
        z = draw(first, n_states, 1.0)
        for t in range(1, n_steps):
            nxt = draw(conditionals[t - 1, z], n_states, 1.0)
            if seen_in[z, nxt] != s:
                seen_in[z, nxt] = s
                with_pair[z, nxt] += 1.0
            if exit_seen_in[z] != s:
                exit_seen_in[z] = s
                with_exit[z] += 1.0
            z = nxt
    return 1.0 - with_pair / n_samples, 1.0 - with_exit / n_samples


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


@njit(cache=True)
def exact_no_exit(first, conditionals):
    """q(C_j. = 0) by message passing with state j removed at t = 1..T-1 (eq. 5.44-5.45)."""
    n_states = first.shape[0]
    n_steps = conditionals.shape[0] + 1
    out = np.empty(n_states)
    message = np.empty(n_states)
    update = np.empty(n_states)
    for j in range(n_states):
        message[:] = first
        for t in range(1, n_steps):
            message[j] = 0.0
            cond = conditionals[t - 1]
            for b in range(n_states):
                total = 0.0
                for a in range(n_states):
                    total += message[a] * cond[a, b]
                update[b] = total
            message[:] = update
        out[j] = message.sum() if n_steps > 1 else 1.0
    return out


@njit(cache=True)
def factorised_no_exit(marginals):
    """prod_{t < T} (1 - q(z_t = j)): q(C_j. = 0) under mean field, and the heuristic's value."""
    out = np.ones(marginals.shape[1])
    for t in range(marginals.shape[0] - 1):
        for j in range(marginals.shape[1]):
            out[j] *= 1.0 - marginals[t, j]
    return out


@njit(cache=True)
def chain_zero(method, first, conditionals, n_samples, seed):
    """(q(C_jk = 0) (K, K), q(C_j. = 0) (K,)) of one chain by the method code."""
    if method == EXACT:
        return exact_zero(first, conditionals), exact_no_exit(first, conditionals)
    if method == SAMPLING:
        return _sampled_zero_and_exits(first, conditionals, n_samples, seed)
    marginals = chain_marginals(first, conditionals)
    exits = factorised_no_exit(marginals)
    if method == MEAN_FIELD:
        return mean_field_zero(marginals), exits
    return heuristic_zero(first, conditionals), exits


@njit(cache=True, fastmath=FAST)
def multiply_no_transition(method, n_samples, seed, fwd, bwd, gamma, trans, n_steps, starts, exits_at_end,
                           index, begin, zero):
    """Multiply one chain's q(C = 0) into the running products prod_i q(C^i = 0) (eq. 5.46).

    The chain is the one `forward_backward.chain_marginals` just ran on ``trans``
    (its ``fwd``, ``bwd`` and ``gamma``).  ``zero`` = (start (K,), pairs (K, K),
    exits (K,), emissions (W, K) or (0, K)): q(C_0k = 0) = 1 - q(z_1 = k) when
    the chain ``starts`` a sequence (eq. 5.51); q(C_jk = 0) by ``method`` (the
    heuristic of eq. 5.67 straight from the forward-backward messages, the
    others from the chain's conditionals); q(C_j. = 0) for the states the chain
    leaves, its last state too when ``exits_at_end`` (a subchain with a right
    neighbour, whose boundary pair the heuristic covers); and, when ``zero``
    has emission rows (categorical emissions, learning beta tau of §5.5.3),
    q(C_kw = 0) = prod_t (1 - q(z_t = k)) over the tokens of word w =
    index[begin + t], the emission counterpart of eq. 5.67.
    """
    zero_start, zero_pairs, zero_exits, zero_emissions = zero
    n_states = gamma.shape[1]
    if starts:
        for k in range(n_states):
            zero_start[k] *= 1.0 - gamma[0, k]
    if method == HEURISTIC:
        for t in range(1, n_steps):
            for j in range(n_states):
                a = fwd[t - 1, j]
                if a == 0.0:
                    continue
                row = zero_pairs[j]
                for k in range(n_states):
                    row[k] *= 1.0 - a * trans[j, k] * bwd[t, k]
        for t in range(n_steps - 1):
            for j in range(n_states):
                zero_exits[j] *= 1.0 - gamma[t, j]
    elif n_steps > 1:
        conditionals = np.empty((n_steps - 1, n_states, n_states))
        for t in range(1, n_steps):
            for j in range(n_states):
                total = 0.0
                for k in range(n_states):
                    v = trans[j, k] * bwd[t, k]
                    conditionals[t - 1, j, k] = v
                    total += v
                inv = 1.0 / total if total > 0.0 else 0.0
                for k in range(n_states):
                    conditionals[t - 1, j, k] *= inv
        pairs, exits = chain_zero(method, gamma[0].copy(), conditionals, n_samples, seed)
        for j in range(n_states):
            zero_exits[j] *= exits[j]
            for k in range(n_states):
                zero_pairs[j, k] *= pairs[j, k]
    if exits_at_end:
        for j in range(n_states):
            zero_exits[j] *= 1.0 - gamma[n_steps - 1, j]
    for t in range(n_steps if zero_emissions.shape[0] > 0 else 0):
        row = zero_emissions[index[begin + t]]
        for k in range(n_states):
            row[k] *= 1.0 - gamma[t, k]


def _chain_arrays(first, conditionals):
    first = np.ascontiguousarray(first, dtype=float)
    conditionals = np.ascontiguousarray(conditionals, dtype=float).reshape(-1, first.shape[0], first.shape[0])
    return first, conditionals


def method_code(method):
    """The numba code of a q(C = 0) method name."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return METHODS.index(method)


def no_transition(first, conditionals, method="exact", n_samples=1000, seed=0):
    """(q(C_0k = 0) (K,), q(C_jk = 0) (K, K)) of one chain posterior by ``method``."""
    first, conditionals = _chain_arrays(first, conditionals)
    pairs, _ = chain_zero(method_code(method), first, conditionals, int(n_samples), int(seed))
    return 1.0 - first, pairs


def no_exit(first, conditionals, method="exact", n_samples=1000, seed=0):
    """q(C_j. = 0) (K,) of one chain posterior by ``method`` (eq. 5.44-5.45)."""
    first, conditionals = _chain_arrays(first, conditionals)
    return chain_zero(method_code(method), first, conditionals, int(n_samples), int(seed))[1]


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


"""Chains of units: forward-backward, Viterbi and sampling over composite left-to-right HMMs.

An utterance is a sequence of units (the acoustic units of Lee and Glass 2012 and Ondel et al. 2016),
each unit u a left-to-right HMM of S states that every occurrence passes through in order, one frame or
more each.  The composite chain's state c = u S + s (unit u, state s); its transitions are sparse:

* state s < S - 1 of a unit stays (``stay[c]``) or moves on to s + 1 (``leave[c]``);
* the last state stays or leaves the unit, and the next unit u' is entered with ``entry[u']``;
* an utterance starts by entering a unit and ends by leaving its last unit's last state.

So a step of the forward pass is O(U S), not O((U S)^2): the only dense part, leaving one unit for
another, factors through the scalar exit mass sum_u alpha(u, S-1) leave(u, S-1).  A pre-segmentation
(Lee and Glass 2012: unit boundaries only at candidate frames) multiplies every path on which a unit
begins at frame t > 0 by a weight, ``log_start[t]`` in the kernels: 0 where a unit may begin, -inf
where it may not; it scales the exit mass of frame t, so the cost is unchanged.  ``entry``, ``stay``
and ``leave`` are probabilities, or VB's geometric means, which need not sum to one (eq. 3.21-3.22).

The kernels run in log space on ``log_lik`` (T, U S), each frame's log emission densities.  The
scaled recursion of `forward_backward` (emission rows divided by their maximum, messages normalised
every step) does not suit these chains: a frame's best state is often unreachable from the frame
before (the middle of a unit right after another unit), and the reachable states' emissions, tens of
dimensions of Gaussians hundreds of nats below the best, underflow to zero.  Each state's update adds
two terms, so log space costs one exp and one log1p a state a frame (skipped where the terms differ
by more than `_NEGLIGIBLE` nats).  Every kernel returns -inf for an utterance no path explains (one
shorter than S frames).  A unit occurrence leaves each of its states exactly once, so the
expected transitions are the state occupancies and the unit counts: E[leave_us] = E[n_u] and E[stay_us]
= sum_t q(z_t = (u, s)) - E[n_u]; the kernels return the marginals q(z_t) and E[n_u] only.
"""
import math

import numpy as np
from numba import njit, prange

from ..core.sampling import pick, uniform, unit_generator
from ..core.special import FAST
from ..core.units import max_length, parallel_over_chunks

# log1p(exp(-40)) = 4e-18: below the rounding of any log-probability the kernels add it to
_NEGLIGIBLE = 40.0


@njit(cache=True, fastmath=FAST, inline="always")
def log_add(a, b):
    """log(exp(a) + exp(b)), -inf when both are."""
    if a < b:
        a, b = b, a
    if b == -np.inf or b - a < -_NEGLIGIBLE:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(cache=True, fastmath=FAST)
def log_sum(values, first, step, count, offsets):
    """log sum_j exp(values[first + j step] + offsets[first + j step]) over j < count."""
    top = -np.inf
    for j in range(count):
        i = first + j * step
        top = max(top, values[i] + offsets[i])
    if top == -np.inf:
        return top
    total = 0.0
    for j in range(count):
        i = first + j * step
        total += math.exp(values[i] + offsets[i] - top)
    return top + math.log(total)


@njit(cache=True, fastmath=FAST)
def unit_forward(log_entry, log_stay, log_leave, log_start, log_lik, n_steps, n_states, alpha):
    """Forward pass over one utterance of ``n_steps`` frames, in log space.

    alpha[t, c] = log p(x_1..t, z_t = c).  ``log_start[t]`` is added to every path on which a unit begins at
    frame t > 0 (0 everywhere: no constraint; -inf where a pre-segmentation allows no boundary, module
    notes).  Returns log Z, -inf when no path has positive probability.
    """
    n_composite = log_lik.shape[1]
    n_units = n_composite // n_states
    last = n_states - 1
    if n_steps == 0:
        return -np.inf
    for c in range(n_composite):
        alpha[0, c] = -np.inf
    for u in range(n_units):
        alpha[0, u * n_states] = log_entry[u] + log_lik[0, u * n_states]
    for t in range(1, n_steps):
        prev = alpha[t - 1]
        cur = alpha[t]
        exit_mass = log_sum(prev, last, n_states, n_units, log_leave) + log_start[t]
        for u in range(n_units):
            base = u * n_states
            cur[base] = log_add(prev[base] + log_stay[base], exit_mass + log_entry[u]) + log_lik[t, base]
            for s in range(1, n_states):
                c = base + s
                cur[c] = log_add(prev[c] + log_stay[c], prev[c - 1] + log_leave[c - 1]) + log_lik[t, c]
    return log_sum(alpha[n_steps - 1], last, n_states, n_units, log_leave)


@njit(cache=True, fastmath=FAST)
def unit_forward_backward(log_entry, log_stay, log_leave, log_start, log_lik, n_steps, n_states, alpha, beta, gamma,
                          unit_counts):
    """Forward-backward over one utterance (eq. 3.16-3.17 on the composite chain), in log space.

    Writes the marginals q(z_t = c) to ``gamma`` and adds the expected occurrences E[n_u] of every unit
    to ``unit_counts``; returns log Z as `unit_forward` does (nothing is written when it is -inf).
    ``alpha``, ``beta`` and ``gamma`` have at least ``n_steps`` rows.
    """
    log_z = unit_forward(log_entry, log_stay, log_leave, log_start, log_lik, n_steps, n_states, alpha)
    if log_z == -np.inf:
        return log_z
    n_composite = log_lik.shape[1]
    n_units = n_composite // n_states
    last = n_states - 1
    t_last = n_steps - 1
    for c in range(n_composite):
        beta[t_last, c] = log_leave[c] if c % n_states == last else -np.inf
    for t in range(t_last, 0, -1):
        # beta[t] becomes log_lik_t + beta_t, which the step back and the unit entries both need
        bt = beta[t]
        for c in range(n_composite):
            gamma[t, c] = math.exp(alpha[t, c] + bt[c] - log_z)
            bt[c] += log_lik[t, c]
        prev = alpha[t - 1]
        exit_mass = log_sum(prev, last, n_states, n_units, log_leave) + log_start[t]
        enter = -np.inf
        top = -np.inf
        for u in range(n_units):
            top = max(top, log_entry[u] + bt[u * n_states])
        if top > -np.inf and log_start[t] > -np.inf:
            total = 0.0
            for u in range(n_units):
                total += math.exp(log_entry[u] + bt[u * n_states] - top)
            enter = top + math.log(total) + log_start[t]
        back = beta[t - 1]
        for u in range(n_units):
            base = u * n_states
            unit_counts[u] += math.exp(exit_mass + log_entry[u] + bt[base] - log_z)
            for s in range(last):
                c = base + s
                back[c] = log_add(log_stay[c] + bt[c], log_leave[c] + bt[c + 1])
            c = base + last
            back[c] = log_add(log_stay[c] + bt[c], log_leave[c] + enter)
    for c in range(n_composite):
        gamma[0, c] = math.exp(alpha[0, c] + beta[0, c] - log_z)
    for u in range(n_units):
        unit_counts[u] += gamma[0, u * n_states]
    return log_z


@njit(cache=True)
def unit_viterbi(log_entry, log_stay, log_leave, log_start, log_lik, n_steps, n_states, states, starts):
    """The most probable path of one utterance.

    Writes its composite states to ``states`` and True to ``starts[t]`` where a unit begins at frame t
    (with one state a unit, a unit followed by itself is told apart from a longer stay only by this);
    returns the path's log probability, -inf when there is no path.
    """
    n_composite = log_lik.shape[1]
    n_units = n_composite // n_states
    last_state = n_states - 1
    if n_steps == 0:
        return -np.inf
    delta = np.full((n_steps, n_composite), -np.inf)
    back = np.zeros((n_steps, n_composite), dtype=np.int32)
    entered = np.zeros((n_steps, n_composite), dtype=np.bool_)
    for u in range(n_units):
        delta[0, u * n_states] = log_entry[u] + log_lik[0, u * n_states]
        entered[0, u * n_states] = True
    for t in range(1, n_steps):
        prev = delta[t - 1]
        best_exit = -np.inf
        from_state = last_state
        for u in range(n_units):
            c = u * n_states + last_state
            v = prev[c] + log_leave[c]
            if v > best_exit:
                best_exit = v
                from_state = c
        for u in range(n_units):
            base = u * n_states
            v_stay = prev[base] + log_stay[base]
            v_enter = best_exit + log_start[t] + log_entry[u]
            if v_enter > v_stay:
                delta[t, base] = v_enter
                back[t, base] = from_state
                entered[t, base] = True
            else:
                delta[t, base] = v_stay
                back[t, base] = base
            for s in range(1, n_states):
                c = base + s
                v_stay = prev[c] + log_stay[c]
                v_move = prev[c - 1] + log_leave[c - 1]
                if v_move > v_stay:
                    delta[t, c] = v_move
                    back[t, c] = c - 1
                else:
                    delta[t, c] = v_stay
                    back[t, c] = c
            for c in range(base, base + n_states):
                delta[t, c] += log_lik[t, c]
    best = -np.inf
    state = last_state
    for u in range(n_units):
        c = u * n_states + last_state
        v = delta[n_steps - 1, c] + log_leave[c]
        if v > best:
            best = v
            state = c
    if best == -np.inf:
        return best
    for t in range(n_steps - 1, -1, -1):
        states[t] = state
        starts[t] = entered[t, state]
        state = back[t, state]
    return best


@njit(cache=True)
def _pick_log(log_weights, n, u):
    """`pick` from log weights (shifted by their maximum first)."""
    top = -np.inf
    for k in range(n):
        top = max(top, log_weights[k])
    for k in range(n):
        log_weights[k] = math.exp(log_weights[k] - top)
    return pick(log_weights, n, u)


@njit(cache=True)
def unit_sample(log_entry, log_stay, log_leave, log_start, log_lik, n_steps, n_states, alpha, generator, states,
                starts, weights):
    """Draw one path of an utterance from its posterior: forward filtering, backward sampling.

    ``generator`` is a `core.sampling.unit_generator` state; ``weights`` a work row of U + 1 entries.
    Writes ``states`` and ``starts`` as `unit_viterbi` does; returns log Z (-inf: nothing drawn).
    """
    log_z = unit_forward(log_entry, log_stay, log_leave, log_start, log_lik, n_steps, n_states, alpha)
    if log_z == -np.inf:
        return log_z
    n_units = log_lik.shape[1] // n_states
    last = n_states - 1
    for u in range(n_units):
        c = u * n_states + last
        weights[u] = alpha[n_steps - 1, c] + log_leave[c]
    state = _pick_log(weights, n_units, uniform(generator)) * n_states + last
    for t in range(n_steps - 1, 0, -1):
        states[t] = state
        prev = alpha[t - 1]
        starts[t] = False
        if state % n_states > 0:
            weights[0] = prev[state] + log_stay[state]
            weights[1] = prev[state - 1] + log_leave[state - 1]
            if _pick_log(weights, 2, uniform(generator)) == 1:
                state = state - 1
            continue
        u = state // n_states
        for v in range(n_units):
            c = v * n_states + last
            weights[v] = prev[c] + log_leave[c] + log_entry[u] + log_start[t]
        weights[n_units] = prev[state] + log_stay[state]
        choice = _pick_log(weights, n_units + 1, uniform(generator))
        if choice < n_units:
            starts[t] = True
            state = choice * n_states + last
    states[0] = state
    starts[0] = True
    return log_z


# -- many utterances, in parallel over chunks of them -----------------------------------------------------


@parallel_over_chunks()
def batch_unit_posteriors(log_entry, log_stay, log_leave, log_start, log_lik, offsets, n_states, chunk_bounds,
                          gamma, unit_counts, log_z):
    """`unit_forward_backward` of every utterance of ``offsets`` under one table: the marginals to
    ``gamma`` (N, U S), each utterance's E[n_u] to ``unit_counts`` (I, U) and its log Z to ``log_z`` (I,),
    -inf for an utterance without a path."""
    n_composite = log_lik.shape[1]
    longest = max_length(offsets)
    for chunk in prange(chunk_bounds.shape[0] - 1):
        alpha = np.empty((longest, n_composite))
        beta = np.empty((longest, n_composite))
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            log_z[i] = unit_forward_backward(log_entry, log_stay, log_leave, log_start[begin:], log_lik[begin:],
                                             offsets[i + 1] - begin, n_states, alpha, beta, gamma[begin:],
                                             unit_counts[i])


@parallel_over_chunks()
def batch_unit_log_evidence(log_entry, log_stay, log_leave, log_start, log_lik, offsets, n_states, chunk_bounds,
                            log_z):
    """log Z of every utterance (forward passes only)."""
    n_composite = log_lik.shape[1]
    longest = max_length(offsets)
    for chunk in prange(chunk_bounds.shape[0] - 1):
        alpha = np.empty((longest, n_composite))
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            log_z[i] = unit_forward(log_entry, log_stay, log_leave, log_start[begin:], log_lik[begin:],
                                    offsets[i + 1] - begin, n_states, alpha)


@parallel_over_chunks()
def batch_unit_viterbi(log_entry, log_stay, log_leave, log_start, log_lik, offsets, n_states, chunk_bounds, states,
                       starts, log_score):
    """`unit_viterbi` of every utterance: states (N,) int32, starts (N,) bool, log scores (I,)."""
    for chunk in prange(chunk_bounds.shape[0] - 1):
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            log_score[i] = unit_viterbi(log_entry, log_stay, log_leave, log_start[begin:], log_lik[begin:],
                                        offsets[i + 1] - begin, n_states, states[begin:], starts[begin:])


@parallel_over_chunks()
def batch_unit_sample(log_entry, log_stay, log_leave, log_start, log_lik, offsets, n_states, chunk_bounds, seed,
                      first_utterance, states, starts, log_z):
    """`unit_sample` of every utterance, utterance i drawing from its own generator seeded by
    (``seed``, ``first_utterance`` + i), so that the draws do not depend on the number of threads."""
    n_composite = log_lik.shape[1]
    longest = max_length(offsets)
    n_units = n_composite // n_states
    for chunk in prange(chunk_bounds.shape[0] - 1):
        alpha = np.empty((longest, n_composite))
        weights = np.empty(n_units + 1)
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            generator = unit_generator(seed, first_utterance + i)
            log_z[i] = unit_sample(log_entry, log_stay, log_leave, log_start[begin:], log_lik[begin:],
                                   offsets[i + 1] - begin, n_states, alpha, generator, states[begin:], starts[begin:],
                                   weights)

"""Chains of units: forward-backward, Viterbi and sampling over composite left-to-right HMMs.

An utterance is a sequence of units (the acoustic units of Lee and Glass 2012 and Ondel et al. 2016),
each unit u a left-to-right HMM of S states that every occurrence passes through in order, one frame or
more each.  The composite chain's state c = u S + s (unit u, state s); its transitions are sparse:

* state s < S - 1 of a unit stays (``stay[c]``) or moves on to s + 1 (``leave[c]``);
* the last state stays or leaves the unit, and the next unit u' is entered with ``entry[u']``;
* an utterance starts by entering a unit and ends by leaving its last unit's last state.

So a step of the forward pass is O(U S), not O((U S)^2): the only dense part, leaving one unit for
another, factors through the scalar exit mass sum_u alpha(u, S-1) leave(u, S-1).  ``entry``, ``stay``
and ``leave`` are probabilities, or VB's geometric means, which need not sum to one (eq. 3.21-3.22).

Conventions as in `forward_backward`: ``lik`` (T, U S) holds each frame's emission rows divided by
their maximum (the caller adds the log maxima to log Z), forward messages are normalised every step,
and every kernel returns -inf for an utterance no path explains (one shorter than S frames, or one
whose emissions are all zero).  A unit occurrence leaves each of its states exactly once, so the
expected transitions are the state occupancies and the unit counts: E[leave_us] = E[n_u] and E[stay_us]
= sum_t q(z_t = (u, s)) - E[n_u]; the kernels return the marginals q(z_t) and E[n_u] only.
"""
import numpy as np
from numba import njit, prange

from ..core.sampling import pick, uniform, unit_generator
from ..core.special import FAST
from ..core.units import max_length


@njit(cache=True, fastmath=FAST)
def unit_forward(entry, stay, leave, lik, n_steps, n_states, alpha, scale):
    """Scaled forward pass over one utterance of ``n_steps`` frames.

    alpha[t] = p(z_t | x_1..t) (normalised), scale[t] its normaliser for t < n_steps and
    scale[n_steps] the probability of ending after the last frame.  Returns log Z (without the
    emission rows' scales), -inf when no path has positive probability.
    """
    n_composite = lik.shape[1]
    n_units = n_composite // n_states
    last = n_states - 1
    log_z = 0.0
    for t in range(n_steps):
        cur = alpha[t]
        if t == 0:
            for c in range(n_composite):
                cur[c] = 0.0
            for u in range(n_units):
                cur[u * n_states] = entry[u]
        else:
            prev = alpha[t - 1]
            exit_mass = 0.0
            for u in range(n_units):
                c = u * n_states + last
                exit_mass += prev[c] * leave[c]
            for u in range(n_units):
                base = u * n_states
                cur[base] = prev[base] * stay[base] + exit_mass * entry[u]
                for s in range(1, n_states):
                    c = base + s
                    cur[c] = prev[c] * stay[c] + prev[c - 1] * leave[c - 1]
        total = 0.0
        for c in range(n_composite):
            cur[c] *= lik[t, c]
            total += cur[c]
        if not total > 0.0:
            return -np.inf
        inv = 1.0 / total
        for c in range(n_composite):
            cur[c] *= inv
        scale[t] = total
        log_z += np.log(total)
    final = 0.0
    if n_steps > 0:
        for u in range(n_units):
            c = u * n_states + last
            final += alpha[n_steps - 1, c] * leave[c]
    if not final > 0.0:
        return -np.inf
    scale[n_steps] = final
    return log_z + np.log(final)


@njit(cache=True, fastmath=FAST)
def unit_forward_backward(entry, stay, leave, lik, n_steps, n_states, alpha, beta, scale, gamma, unit_counts):
    """Forward-backward over one utterance (eq. 3.16-3.17 on the composite chain).

    Writes the marginals q(z_t = c) to ``gamma`` and adds the expected occurrences E[n_u] of every unit
    to ``unit_counts``; returns log Z as `unit_forward` does (nothing is written when it is -inf).
    ``alpha``, ``beta`` and ``gamma`` have at least ``n_steps`` rows, ``scale`` n_steps + 1 entries.
    """
    log_z = unit_forward(entry, stay, leave, lik, n_steps, n_states, alpha, scale)
    if log_z == -np.inf:
        return log_z
    n_composite = lik.shape[1]
    n_units = n_composite // n_states
    last_state = n_states - 1
    t_last = n_steps - 1
    final = scale[n_steps]
    for c in range(n_composite):
        beta[t_last, c] = leave[c] / final if c % n_states == last_state else 0.0
    for t in range(t_last, 0, -1):
        bt = beta[t]
        inv = 1.0 / scale[t]
        for c in range(n_composite):
            gamma[t, c] = alpha[t, c] * bt[c]
            # beta[t] becomes lik_t beta_t / c_t, which the step back and the unit entries both need
            bt[c] = lik[t, c] * bt[c] * inv
        prev = alpha[t - 1]
        exit_mass = 0.0
        enter = 0.0
        for u in range(n_units):
            c = u * n_states + last_state
            exit_mass += prev[c] * leave[c]
            enter += entry[u] * bt[u * n_states]
        back = beta[t - 1]
        for u in range(n_units):
            base = u * n_states
            unit_counts[u] += exit_mass * entry[u] * bt[base]
            for s in range(last_state):
                c = base + s
                back[c] = stay[c] * bt[c] + leave[c] * bt[c + 1]
            c = base + last_state
            back[c] = stay[c] * bt[c] + leave[c] * enter
    for c in range(n_composite):
        gamma[0, c] = alpha[0, c] * beta[0, c]
    for u in range(n_units):
        unit_counts[u] += gamma[0, u * n_states]
    return log_z


@njit(cache=True)
def unit_viterbi(entry, stay, leave, lik, n_steps, n_states, states, starts):
    """The most probable path of one utterance, in log space.

    Writes its composite states to ``states`` and True to ``starts[t]`` where a unit begins at frame t
    (with one state a unit, a unit followed by itself is told apart from a longer stay only by this);
    returns the path's log score without the emission rows' scales, -inf when there is no path.
    """
    n_composite = lik.shape[1]
    n_units = n_composite // n_states
    last_state = n_states - 1
    if n_steps == 0:
        return 0.0
    log_entry = np.log(entry)
    log_stay = np.log(stay)
    log_leave = np.log(leave)
    delta = np.full((n_steps, n_composite), -np.inf)
    back = np.zeros((n_steps, n_composite), dtype=np.int32)
    entered = np.zeros((n_steps, n_composite), dtype=np.bool_)
    for u in range(n_units):
        delta[0, u * n_states] = log_entry[u] + np.log(lik[0, u * n_states])
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
            v_enter = best_exit + log_entry[u]
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
                delta[t, c] += np.log(lik[t, c])
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
def unit_sample(entry, stay, leave, lik, n_steps, n_states, alpha, scale, generator, states, starts, weights):
    """Draw one path of an utterance from its posterior: forward filtering, backward sampling.

    ``generator`` is a `core.sampling.unit_generator` state; ``weights`` a work row of U + 1 entries.
    Writes ``states`` and ``starts`` as `unit_viterbi` does; returns log Z (-inf: nothing drawn).
    """
    log_z = unit_forward(entry, stay, leave, lik, n_steps, n_states, alpha, scale)
    if log_z == -np.inf:
        return log_z
    n_composite = lik.shape[1]
    n_units = n_composite // n_states
    last_state = n_states - 1
    for u in range(n_units):
        c = u * n_states + last_state
        weights[u] = alpha[n_steps - 1, c] * leave[c]
    state = pick(weights, n_units, uniform(generator)) * n_states + last_state
    for t in range(n_steps - 1, 0, -1):
        states[t] = state
        prev = alpha[t - 1]
        s = state % n_states
        if s > 0:
            stay_weight = prev[state] * stay[state]
            move_weight = prev[state - 1] * leave[state - 1]
            starts[t] = False
            if uniform(generator) * (stay_weight + move_weight) >= stay_weight:
                state = state - 1
            continue
        u = state // n_states
        for v in range(n_units):
            c = v * n_states + last_state
            weights[v] = prev[c] * leave[c] * entry[u]
        weights[n_units] = prev[state] * stay[state]
        choice = pick(weights, n_units + 1, uniform(generator))
        starts[t] = choice < n_units
        if choice < n_units:
            state = choice * n_states + last_state
    states[0] = state
    starts[0] = True
    return log_z


# -- many utterances, in parallel over chunks of them -----------------------------------------------------


@njit(parallel=True, cache=True)
def batch_unit_posteriors(entry, stay, leave, lik, log_scale, offsets, n_states, chunk_bounds, gamma,
                          unit_counts, log_z):
    """`unit_forward_backward` of every utterance of ``offsets`` under one table.

    ``lik`` (N, U S) and ``log_scale`` (N,) are the frames' emission rows and their log scales;
    writes the marginals to ``gamma`` (N, U S), each utterance's E[n_u] to ``unit_counts`` (I, U) and its
    log Z (with the scales) to ``log_z`` (I,), -inf for an utterance without a path.
    """
    n_composite = lik.shape[1]
    longest = max_length(offsets)
    for chunk in prange(chunk_bounds.shape[0] - 1):
        alpha = np.empty((longest, n_composite))
        beta = np.empty((longest, n_composite))
        scale = np.empty(longest + 1)
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            n_steps = offsets[i + 1] - begin
            value = unit_forward_backward(entry, stay, leave, lik[begin:], n_steps, n_states, alpha, beta, scale,
                                          gamma[begin:], unit_counts[i])
            for t in range(begin, begin + n_steps):
                value += log_scale[t]
            log_z[i] = value


@njit(parallel=True, cache=True)
def batch_unit_log_evidence(entry, stay, leave, lik, log_scale, offsets, n_states, chunk_bounds, log_z):
    """log Z of every utterance (forward passes only), with the emission rows' scales."""
    n_composite = lik.shape[1]
    longest = max_length(offsets)
    for chunk in prange(chunk_bounds.shape[0] - 1):
        alpha = np.empty((longest, n_composite))
        scale = np.empty(longest + 1)
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            n_steps = offsets[i + 1] - begin
            value = unit_forward(entry, stay, leave, lik[begin:], n_steps, n_states, alpha, scale)
            for t in range(begin, begin + n_steps):
                value += log_scale[t]
            log_z[i] = value


@njit(parallel=True, cache=True)
def batch_unit_viterbi(entry, stay, leave, lik, log_scale, offsets, n_states, chunk_bounds, states, starts, log_score):
    """`unit_viterbi` of every utterance: states (N,) int32, starts (N,) bool, log scores (I,)."""
    for chunk in prange(chunk_bounds.shape[0] - 1):
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            n_steps = offsets[i + 1] - begin
            value = unit_viterbi(entry, stay, leave, lik[begin:], n_steps, n_states, states[begin:], starts[begin:])
            for t in range(begin, begin + n_steps):
                value += log_scale[t]
            log_score[i] = value


@njit(parallel=True, cache=True)
def batch_unit_sample(entry, stay, leave, lik, offsets, n_states, chunk_bounds, seed, first_utterance, states,
                      starts, log_z):
    """`unit_sample` of every utterance, utterance i drawing from its own generator seeded by
    (``seed``, ``first_utterance`` + i), so that the draws do not depend on the number of threads."""
    n_composite = lik.shape[1]
    longest = max_length(offsets)
    n_units = n_composite // n_states
    for chunk in prange(chunk_bounds.shape[0] - 1):
        alpha = np.empty((longest, n_composite))
        scale = np.empty(longest + 1)
        weights = np.empty(n_units + 1)
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            begin = offsets[i]
            generator = unit_generator(seed, first_utterance + i)
            log_z[i] = unit_sample(entry, stay, leave, lik[begin:], offsets[i + 1] - begin, n_states, alpha, scale,
                                   generator, states[begin:], starts[begin:], weights)

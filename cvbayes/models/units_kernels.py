"""The acoustic unit model's part of the collapsed schedule: CVI's update of one utterance (numba).

`update_utterance` is the unit update `schedules.leave_one_out` runs (thesis eq. 3.47-3.50, 3.95-3.96 on
the chain of units of `cvbayes.chains.composite`): take the utterance's local statistics out of the
global ones, build the MEAN tables of what is left (the units' stick-breaking weights, the states' stay
and leave probabilities, the mixtures' weights and the components' Student-t predictives), run
forward-backward, and put the new local statistics back.

Local statistics are kept per utterance for the unit occurrences (U,) and the stays and leaves (U S, 2),
and per frame for the components: each frame's posterior over the U S M components is cut to its
``width`` largest entries, renormalised to one, and stored as (component, weight) pairs in float32
(module notes of `cvbayes.models.units`).  The component statistics an utterance adds are those of the
stored pairs, so taking it out later removes exactly what it put in.
"""
import numpy as np
from numba import njit, prange

from ..chains.composite import unit_forward_backward
from ..core.rules import stick_mean_row
from ..core.sampling import pick, uniform, unit_generator
from ..core.special import FAST
from ..core.units import parallel_over_chunks
from ..families.ops import GAUSSIAN, add_token_state, mixture_row, student_t_constants, student_t_row
from ..schedules import leave_one_out


def cvi_state(features, offsets, log_start, n_states, n_components, priors, counts, local, work):
    """The tuple `update_utterance` reads: data (frames, offsets, log unit-start weights), priors (gamma, transition prior, weight prior, the
    Normal-Gamma prior array (4, D)), global counts (units, trans, stats), local statistics (units
    (I, U), trans (I, U S, 2), kept components and weights (N, width)) and work arrays."""
    return (features, offsets, log_start, n_states, n_components, *priors, *counts, *local, *work)


def cvi_workspace(longest, n_units, n_states, n_components, n_dims):
    """Work arrays of one utterance of up to ``longest`` frames."""
    n_composite = n_units * n_states
    n_columns = n_composite * n_components
    return (np.empty((longest, n_composite)), np.empty((longest, n_composite)), np.empty((longest, n_composite)),
            np.empty((longest, n_composite)), np.empty((longest, n_columns)), np.empty((n_dims, n_columns)),
            np.empty((n_dims, n_columns)), np.empty(n_columns), np.empty(n_columns), np.empty(n_units),
            np.empty(n_composite), np.empty(n_composite), np.empty(n_units))


@njit(cache=True, fastmath=FAST)
def move_frames(features, begin, end, kept, kept_weight, stats, sign):
    """stats[:, k] += sign * w [1, x_t, x_t^2] for every stored (k, w) of frames begin..end."""
    no_index = np.empty(0, dtype=np.int32)
    for t in range(begin, end):
        for r in range(kept.shape[1]):
            if kept_weight[t, r] != 0.0:
                add_token_state(GAUSSIAN, stats, no_index, features, t, kept[t, r],
                                sign * np.float64(kept_weight[t, r]))


@njit(cache=True)
def keep_largest(posterior, width, kept_row, weight_row):
    """The ``width`` largest entries of one frame's component posterior, renormalised (float32)."""
    for r in range(width):
        kept_row[r] = 0
        weight_row[r] = 0.0
    n_kept = 0
    for k in range(posterior.shape[0]):
        v = posterior[k]
        if v <= 0.0 or (n_kept == width and v <= weight_row[width - 1]):
            continue
        r = min(n_kept, width - 1)
        while r > 0 and weight_row[r - 1] < v:
            weight_row[r] = weight_row[r - 1]
            kept_row[r] = kept_row[r - 1]
            r -= 1
        weight_row[r] = v
        kept_row[r] = k
        n_kept = min(n_kept + 1, width)
    total = 0.0
    for r in range(n_kept):
        total += weight_row[r]
    for r in range(n_kept):
        weight_row[r] = np.float32(weight_row[r] / total)


@njit(parallel=True, cache=True)
def utterance_emissions(features, begin, n_steps, n_components, loc, inverse_scale, power, log_norm, component,
                        log_lik):
    """Student-t emission rows of one utterance's frames, frames in parallel (the update's costly part)."""
    for t in prange(n_steps):
        student_t_row(features, begin + t, loc, inverse_scale, power, log_norm, component[t],
                      np.empty(component.shape[1]))
        mixture_row(component[t], n_components, log_lik[t])


@njit(cache=True, fastmath=FAST)
def mean_tables(units, trans, stats, gamma_prior, trans_prior, weight_prior, prior, n_components, log_entry,
                log_stay, log_leave, loc, inverse_scale, power, log_norm):
    """The MEAN tables of counts (eq. 3.49-3.50, 3.96, and the sticks' posterior means), in logs: unit
    entry (U,), stay and leave (U S,), and the components' Student-t constants with log w-bar added."""
    stick_mean_row(units, gamma_prior, log_entry)
    for u in range(units.shape[0]):
        log_entry[u] = np.log(log_entry[u])
    for c in range(trans.shape[0]):
        a = max(trans[c, 0], 0.0) + trans_prior
        b = max(trans[c, 1], 0.0) + trans_prior
        log_stay[c] = np.log(a / (a + b))
        log_leave[c] = np.log(b / (a + b))
    student_t_constants(stats, prior, loc, inverse_scale, power, log_norm)
    for c in range(trans.shape[0]):
        total = n_components * weight_prior
        for m in range(n_components):
            total += max(stats[0, c * n_components + m], 0.0)
        for m in range(n_components):
            k = c * n_components + m
            log_norm[k] += np.log((max(stats[0, k], 0.0) + weight_prior) / total)


@njit(cache=True, fastmath=FAST)
def update_utterance(state, i):
    """CVI's update of utterance i (module notes); returns its log normaliser, -inf without a path."""
    (features, offsets, log_start, n_states, n_components, gamma_prior, trans_prior, weight_prior, prior, units, trans, stats,
     local_units, local_trans, kept, kept_weight, alpha, beta, gamma, log_lik, component, loc, inverse_scale, power,
     log_norm, log_entry, log_stay, log_leave, unit_row) = state
    begin = offsets[i]
    end = offsets[i + 1]
    n_steps = end - begin
    n_units = units.shape[0]
    n_composite = trans.shape[0]
    for u in range(n_units):
        units[u] -= local_units[i, u]
    for c in range(n_composite):
        trans[c, 0] -= local_trans[i, c, 0]
        trans[c, 1] -= local_trans[i, c, 1]
    move_frames(features, begin, end, kept, kept_weight, stats, -1.0)
    mean_tables(units, trans, stats, gamma_prior, trans_prior, weight_prior, prior, n_components, log_entry, log_stay,
                log_leave, loc, inverse_scale, power, log_norm)
    utterance_emissions(features, begin, n_steps, n_components, loc, inverse_scale, power, log_norm, component,
                        log_lik)
    unit_row[:] = 0.0
    log_z = unit_forward_backward(log_entry, log_stay, log_leave, log_start[begin:], log_lik, n_steps, n_states, alpha,
                                  beta, gamma, unit_row)
    if log_z == -np.inf:
        return log_z
    for u in range(n_units):
        local_units[i, u] = unit_row[u]
        units[u] += local_units[i, u]
    for c in range(n_composite):
        occupancy = 0.0
        for t in range(n_steps):
            occupancy += gamma[t, c]
        leaves = unit_row[c // n_states]
        local_trans[i, c, 0] = max(occupancy - leaves, 0.0)
        local_trans[i, c, 1] = leaves
        trans[c, 0] += local_trans[i, c, 0]
        trans[c, 1] += local_trans[i, c, 1]
    width = kept.shape[1]
    for t in range(n_steps):
        row = component[t]
        for c in range(n_composite):
            g = gamma[t, c]
            for m in range(n_components):
                row[c * n_components + m] *= g
        keep_largest(row, width, kept[begin + t], kept_weight[begin + t])
    move_frames(features, begin, end, kept, kept_weight, stats, 1.0)
    return log_z


@njit(cache=True)
def cvi_pass(state, order):
    """One CVI pass over the utterances in ``order`` (schedules.leave_one_out)."""
    return leave_one_out(update_utterance, state, order)


@njit(parallel=True, cache=True)
def keep_frames(posterior, first_frame, kept, kept_weight):
    """`keep_largest` of every frame of a block (the local statistics a start leaves)."""
    width = kept.shape[1]
    for t in prange(posterior.shape[0]):
        keep_largest(posterior[t], width, kept[first_frame + t], kept_weight[first_frame + t])


@parallel_over_chunks()
def sample_components(responsibilities, states, n_components, offsets, chunk_bounds, seed, first_utterance,
                      components):
    """Every frame's component drawn from r(m | z_t) (T, U S M) given its drawn state, utterance i from
    its own generator seeded by (``seed``, ``first_utterance`` + i)."""
    for chunk in prange(chunk_bounds.shape[0] - 1):
        for i in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            generator = unit_generator(seed, first_utterance + i)
            for t in range(offsets[i], offsets[i + 1]):
                first = states[t] * n_components
                components[t] = first + pick(responsibilities[t, first:first + n_components], n_components,
                                             uniform(generator))

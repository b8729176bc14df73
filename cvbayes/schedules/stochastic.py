"""The stochastic schedule of SVI and SCVI: Robbins-Monro steps on minibatches (thesis §3.7.2, §3.8.4).

Each step samples ``batch_size`` units uniformly with replacement, runs the structure's dynamic program
on them under tables built from the current global counts (VB's for SVI, MEAN's for SCVI, eq. 3.98-3.100),
and moves every global block towards the minibatch's statistics scaled to the corpus:
N <- (1 - rho_m) N + rho_m * scale * E[C^B], rho_m = (tau0 + m)^-kappa (eq. 3.103-3.104).  Only the
global blocks are kept, so memory is O(the parameters) whatever the corpus size.
"""
import time
from typing import NamedTuple

import numpy as np

from ..checkpoints import NO_CHECKPOINT


class Minibatch(NamedTuple):
    """What a structure's ``minibatch(ids)`` returns: ``updates`` a list of (block name, rows, values,
    scale) (rows ``slice(None)`` for a whole block; scale the factor from the minibatch to the corpus),
    the summed log normalisers and the number of tokens in the minibatch's chains."""

    updates: list
    log_z: float
    n_tokens: int


def step_size(step, kappa, tau0):
    """rho_m = (tau0 + m)^-kappa; the thesis uses tau0 = 1 and kappa in [0.5, 1) (§3.8.4)."""
    return (tau0 + step) ** -kappa


def stochastic(structure, counts, n_iter, batch_size, kappa, tau0, rng, record, after_step=None,
               after_pass=None, callback=None, callback_every=None, checkpoint=NO_CHECKPOINT):
    """Run ``n_iter`` passes of n_units / batch_size steps each; returns the number of steps.

    Parameters
    ----------
    structure : has ``n_units`` and ``minibatch(ids) -> Minibatch`` (tables from ``counts``)
    counts : dict of block name -> core.statistics.DecayingCounts, the global statistics, updated in place
    rng : numpy Generator drawing the minibatches
    record : ``record(iteration, objective, seconds)`` after every pass; the objective is the pass's
        log normalisers per token
    after_step : ``after_step(rho)`` after every step, inside its time (the HDP's stick gradients,
        eq. 5.40; a progress bar's step)
    after_pass : ``after_pass()`` after every pass, inside its time
    callback, callback_every : ``callback(step, train_seconds)`` every ``callback_every`` steps
        (outside the timed region); None: not called here
    checkpoint : `cvbayes.checkpoints.Checkpoint`: the global blocks (values and decay scale), the step
        count and ``rng`` are saved after every pass and resumed from
    """
    n_units = structure.n_units
    steps_per_pass = -(-n_units // batch_size)
    step = 0
    trained = 0.0

    def saved():
        return {"step": step, "trained": trained, "rng": rng.bit_generator.state,
                "counts": {name: (block.stored, block.scale) for name, block in counts.items()}}

    def restore(state):
        nonlocal step, trained
        step, trained = state["step"], state["trained"]
        rng.bit_generator.state = state["rng"]
        for name, (stored, scale) in state["counts"].items():
            counts[name].stored = np.array(stored)
            counts[name].scale = scale

    checkpoint.track("stochastic", saved, restore)
    for iteration in range(checkpoint.resume(), n_iter):
        log_z = 0.0
        n_tokens = 0
        seconds = 0.0
        for _ in range(steps_per_pass):
            started = time.perf_counter()
            if batch_size >= n_units:
                ids = np.arange(n_units)
            else:
                ids = np.sort(rng.integers(0, n_units, size=batch_size))
            batch = structure.minibatch(ids)
            rho = step_size(step, kappa, tau0)
            step += 1
            for name, rows, values, scale in batch.updates:
                counts[name].decay(1.0 - rho)
                counts[name].add(rows, rho * scale * values)
            if after_step is not None:
                after_step(rho)
            seconds += time.perf_counter() - started
            log_z += batch.log_z
            n_tokens += batch.n_tokens
            if callback is not None and callback_every is not None and step % callback_every == 0:
                callback(step, trained + seconds)
        started = time.perf_counter()
        if after_pass is not None:
            after_pass()
        seconds += time.perf_counter() - started
        trained += seconds
        record(iteration, log_z / max(n_tokens, 1), seconds)
        checkpoint.save_if_due(iteration, n_iter)
    return step

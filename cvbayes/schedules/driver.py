"""The fit every model shares: checks, seeds, restarts, checkpoints, progress, history and callbacks.

A model (`cvbayes.models.base.BayesModel`) names its learners in an ``ALGORITHMS`` table of `Algorithm`
records and supplies a few hooks; `fit` does the rest:

* ``_prepare(X, y, **options) -> data``: check the input and lay it out as the model's units (once,
  before any restart); ``_fingerprint(data) -> arrays``: what identifies the data in a checkpoint;
* one structure hook per schedule the model runs, each given the data and the `Run`:
  ``_batch(data, run) -> (structure, statistics, tables)`` for `batch` (the structure and where it
  starts), ``_collapsed(data, run)`` for `leave_one_out`, ``_sampler(data, run)`` for `gibbs` (objects
  with ``sweep(iteration) -> objective`` and ``current()``) and ``_stochastic(data, run)`` for
  `stochastic` (``n_units``, ``counts``, ``minibatch(ids)`` and ``current()``), the kernels bound to
  the data and to the run's start.  A pass or sweep structure may add ``after_pass(iteration)``, a
  stochastic one ``after_step(rho)`` and ``after_pass()``; any may add ``attributes()``, fitted
  attributes beside the statistics (name -> value), ``stage(iteration) -> (iteration in its stage,
  stage name)`` for a fit of stages (the aligner's IBM1, then its HMM), and ``close()``.  The hook
  declares the state the passes change to ``run.checkpoint``;
* ``_set_fitted(statistics, rule, data)``: the fitted attributes from the statistics (``data`` is
  None when a file is loaded);
* optional: ``_n_passes()`` (default ``n_iter``), ``_step_sizes()`` (default the model's
  ``batch_size``, ``kappa`` and ``tau0``), ``_restart_objective(data)`` (default the last objective) and
  ``_best_restart(runs, objectives, data)`` (default the run of the highest objective, the first on ties).

Restart r of ``n_init`` runs on a copy of the model from seed ``random_state + r``; the model becomes
the copy `_best_restart` picks.
"""
from __future__ import annotations

import copy
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from ..checkpoints import NO_CHECKPOINT, open_checkpoint, run_identity
from ..core.rules import MEAN
from ..core.sampling import seed_numba
from .batch import batch
from .collapsed import leave_one_out, passes
from .progress import Progress
from .sampling import gibbs
from .stochastic import stochastic


class Algorithm(NamedTuple):
    """How an ``algorithm=`` name runs (DESIGN.md): the schedule of `cvbayes.schedules` that refreshes
    the statistics, the rule of `cvbayes.core.rules` its tables follow, and the unit one update
    refreshes; where the learner comes from, and its default number of passes where a model's default
    differs by algorithm."""

    schedule: Callable
    rule: str
    unit: str
    paper: str = ""
    default_iterations: int | None = None


class Run(NamedTuple):
    """What a model's structure hooks are given for one run of `fit`.

    ``rng`` is the generator of the schedule's own draws (the minibatches), seeded by ``seed``; a model
    may draw its start from it too.  ``checkpoint`` is where a structure declares the state its passes
    change (`cvbayes.checkpoints`).
    """

    algorithm: str
    how: Algorithm
    n_iter: int
    seed: int
    rng: np.random.Generator
    checkpoint: Any


HOOKS = {batch: "_batch", leave_one_out: "_collapsed", gibbs: "_sampler", stochastic: "_stochastic"}


def check_positive_int(name, value):
    """``value`` as an int, or ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_seed(value):
    """``random_state`` as an int: the seed of every stream a fit draws from."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"random_state must be an integer seed, got {value!r}")
    return int(value)


def fit(model, X, y=None, *, progress=False, callback=None, callback_every=None, checkpoint=None,
        checkpoint_every=1, options=None):
    """Fit ``model`` (a `cvbayes.models.base.BayesModel`) to ``X``: every argument checked before any
    work, then ``n_init`` runs of its algorithm (module notes); returns the model.

    Parameters
    ----------
    X, y : the data and the model's second input, handed to ``model._prepare``
    progress : show a progress bar
    callback : ``callback(model, iteration)`` after every pass, with the fitted attributes of the
        statistics so far (``model.train_seconds_`` the training time so far); not timed
    callback_every : stochastic schedules: call ``callback`` every this many minibatch steps instead
    checkpoint, checkpoint_every : `cvbayes.checkpoints` (one run: not with ``n_init`` > 1)
    options : the model's own fit options, for ``_prepare``

    Sets ``fit_seconds_``, the wall time of the whole fit (data preparation and restarts included), and
    ``best_restart_``, the index of the restart kept.
    """
    started = time.perf_counter()
    algorithm = model.algorithm
    if algorithm not in model.ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(model.ALGORITHMS)}")
    how = model.ALGORITHMS[algorithm]
    n_iter = model._n_passes()
    n_init = check_positive_int("n_init", model.n_init)
    seed = check_seed(model.random_state)
    check_positive_int("checkpoint_every", checkpoint_every)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    if callback_every is not None:
        if how.schedule is not stochastic:
            raise ValueError(f"callback_every applies to the stochastic algorithms, not {algorithm!r}")
        check_positive_int("callback_every", callback_every)
    if n_init > 1 and checkpoint is not None:
        raise ValueError("checkpoint resumes one run: use n_init=1 with it")
    data = model._prepare(X, y, **(options or {}))
    params = {name: value for name, value in model.get_params().items()
              if name not in ("algorithm", "n_iter", "n_init", "random_state")}
    checkpoint = open_checkpoint(checkpoint, checkpoint_every, run_identity(
        model.MODEL_NAME, algorithm, n_iter, seed, model._fingerprint(data), params=params))
    model.algorithm_ = algorithm
    model.objective_name_ = model.OBJECTIVES[algorithm]
    arguments = (data, how, algorithm, n_iter, progress, callback, callback_every)
    if n_init == 1:
        _fit_once(model, seed, checkpoint, *arguments)
        model.best_restart_ = 0
    else:
        runs = []
        for restart in range(n_init):
            runs.append(copy.deepcopy(model))
            _fit_once(runs[-1], seed + restart, NO_CHECKPOINT, *arguments)
        objectives = [float(run._restart_objective(data)) for run in runs]
        best = model._best_restart(runs, objectives, data)
        model.__dict__.update(runs[best].__dict__)
        model.restart_objectives_, model.best_restart_ = objectives, best
    model.resumed_from_ = checkpoint.resumed_from
    model.fit_seconds_ = time.perf_counter() - started
    return model


def _fit_once(model, seed, checkpoint, data, how, algorithm, n_iter, progress, callback, callback_every):
    """One run of the model's algorithm from ``seed``: its structure built by the model's hook, driven by
    the schedule, and the fitted attributes set from the final statistics."""
    run = Run(algorithm, how, n_iter, seed, np.random.default_rng(seed), checkpoint)
    schedule = how.schedule
    if schedule is gibbs:
        seed_numba(seed)
        checkpoint.track_numba_random()
    built = getattr(model, HOOKS[schedule])(data, run)
    structure = built[0] if schedule is batch else built
    description = algorithm
    if schedule is stochastic:
        batch_size, kappa, tau0 = model._step_sizes()
        bar = Progress(n_iter * -(-structure.n_units // batch_size), description, progress, unit="batch")
    else:
        bar = Progress(n_iter, description, progress)
    model.history_ = bar.history
    checkpoint.track_progress(bar)

    stage = getattr(structure, "stage", lambda iteration: (iteration, ""))

    def write(iteration, objective, seconds, advance=True):
        local, name = stage(iteration)
        bar.record(local, objective, seconds, stage=name, advance=advance)

    def call_back(iteration, statistics, rule=MEAN, seconds=None):
        if callback is not None:
            model.train_seconds_ = bar.train_seconds if seconds is None else seconds
            model._set_fitted(statistics, rule, data)
            callback(model, iteration)

    try:
        with bar:
            if schedule is batch:
                def record(iteration, objective, statistics, seconds):
                    write(iteration, objective, seconds)
                    call_back(iteration, statistics, how.rule)

                _, statistics, tables = built
                final = batch(structure, how.rule, n_iter, record, statistics, tables, checkpoint=checkpoint)
            elif schedule is stochastic:
                def record(iteration, objective, seconds):
                    write(iteration, objective, seconds, advance=False)
                    if callback_every is None:
                        call_back(iteration, structure.current())

                def after_step(rho):
                    if hasattr(structure, "after_step"):
                        structure.after_step(rho)
                    bar.advance()

                model.steps_ = stochastic(
                    structure, structure.counts, n_iter, batch_size, kappa, tau0, run.rng, record,
                    after_step=after_step, after_pass=getattr(structure, "after_pass", None),
                    callback=lambda step, seconds: call_back(step, structure.current(), seconds=seconds),
                    callback_every=callback_every, checkpoint=checkpoint)
                final = structure.current()
            else:
                def record(iteration, objective, seconds):
                    write(iteration, objective, seconds)
                    call_back(iteration, structure.current())

                passes(structure.sweep, n_iter, record, after_pass=getattr(structure, "after_pass", None),
                       checkpoint=checkpoint)
                final = structure.current()
        # before close: a structure on shards gathers them from its workers
        attributes = getattr(structure, "attributes", dict)()
    finally:
        if hasattr(structure, "close"):  # threads or workers of a structure on shards
            structure.close()
    for name, value in attributes.items():
        setattr(model, name, value)
    model._set_fitted(final, how.rule if schedule is batch else MEAN, data)

"""`BayesModel`: the one convention every model follows (scikit-learn's), and the fit it shares.

Hyperparameters, the ``algorithm``, ``n_iter``, ``n_init`` and ``random_state`` go to the constructor;
data go to ``fit(X, ...)`` with the arguments that only shape one call (progress, callback, checkpoint;
the HMM's client); ``get_params`` returns the constructor's arguments as given and ``set_params``
changes them, so ``sklearn.base.clone`` works.  ``fit`` itself is `cvbayes.schedules.driver.fit`, which
runs the model's algorithm through the hooks its notes list; ``save`` and ``load`` come from
`cvbayes.models.files.Persistent`.

The call forms of before, ``fit(X, algorithm=..., n_iter=..., seed=..., ...)`` with the constructor's
arguments given to ``fit``, still work for one release: they set those parameters (``seed`` is
``random_state``) with a DeprecationWarning.
"""
from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable
from typing import Any, Self

import numpy as np

from ..schedules import driver
from .files import Persistent

# what the runtime arguments of fit are (everything else a model takes goes to its constructor)
FIT_ARGUMENTS = ("progress", "callback", "callback_every", "checkpoint", "checkpoint_every")


class NotFittedError(RuntimeError, ValueError):
    """A fitted model's method called before ``fit``."""


class BayesModel(Persistent):
    """The base class of every model: the scikit-learn conventions and the shared ``fit``.

    A model sets ``ALGORITHMS`` (name -> `cvbayes.schedules.Algorithm`), ``OBJECTIVES`` (name -> what
    its ``history_`` objective is), ``MODEL_NAME`` (``SAVE_FORMAT`` follows from it, `Persistent`),
    ``FITTED`` (the attribute a fitted model has, ``counts_`` unless it says otherwise) and ``FIT_OPTIONS``
    (its own arguments of ``fit`` beside ``X`` and ``y``), calls
    ``self._keep_params(locals())`` first in its constructor, and writes the hooks of
    `cvbayes.schedules.driver` and of `cvbayes.models.files.Persistent`.
    """

    ALGORITHMS: dict = {}
    OBJECTIVES: dict = {}
    FITTED = "counts_"
    FIT_OPTIONS: tuple = ()

    def _keep_params(self, arguments):
        """Keep the constructor's arguments (``locals()`` at its start) as given, for `get_params`, and as
        attributes of their names (scikit-learn's convention; the constructor may then convert them).
        A constructor that took ``seed`` before keeps it for one release as a deprecated keyword: a value
        given there becomes ``random_state``."""
        params = {name: value for name, value in arguments.items() if name not in ("self", "__class__")}
        seed = params.pop("seed", None)
        if seed is not None:
            params["random_state"] = seed
        self._params = params
        if seed is not None:
            warnings.warn(f"{type(self).__name__}(seed=...) is deprecated and goes in the next release: "
                          f"use random_state=...", DeprecationWarning, stacklevel=3)
        for name, value in params.items():
            setattr(self, name, value)

    # -- scikit-learn's parameter protocol ----------------------------------------------------------------
    def get_params(self, deep=True):
        """The constructor's arguments as given (scikit-learn's convention, so that ``sklearn.base.clone``
        works); ``deep`` is accepted for that interface and changes nothing."""
        return dict(self._params)

    def set_params(self, **params):
        """Change constructor arguments (scikit-learn's convention); returns the model, to be fitted again.
        Invalid values are refused with the model left as it was."""
        unknown = set(params) - set(self._params)
        if unknown:
            raise ValueError(f"unknown parameters {', '.join(sorted(unknown))} for {type(self).__name__}; "
                             f"valid: {', '.join(self._params)}")
        merged = {**self._params, **params}
        type(self)(**merged)    # checks the values before this model changes
        self.__init__(**merged)
        return self

    def __repr__(self):
        defaults = inspect.signature(type(self).__init__).parameters
        changed = [f"{name}={value!r}" for name, value in self._params.items()
                   if name not in defaults or _differs(value, defaults[name].default)]
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- fitting ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, progress: bool = False, callback: Callable | None = None,
            callback_every: int | None = None, checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = 1, **options: Any) -> Self:
        """Learn from ``X`` by the constructor's ``algorithm``; returns the model.

        Parameters
        ----------
        X : the training data (the model's class notes say which forms it reads)
        y : the model's second input where it has one (the HMM's ``lengths``), else ignored
        progress : bool
            Show a progress bar.
        callback : callable, optional
            ``callback(model, iteration)`` after every pass, with the model's fitted attributes set to
            the current estimates (so that its methods work inside it); its time is not counted in
            ``history_``, and ``model.train_seconds_`` holds the training time so far.  With ``n_init``
            > 1 it sees every restart.
        callback_every : int, optional
            Stochastic algorithms: call ``callback`` every this many minibatch steps instead.
        checkpoint : path, optional
            Save the run's state to this file every ``checkpoint_every`` passes (passes over the data
            for the stochastic algorithms too) and after the last; the same call again resumes from it
            and ends bit for bit as an uninterrupted run (`cvbayes.checkpoints`; another run's
            checkpoint is refused).  The finished fit leaves it marked complete: the same call then
            restores the model without training.  Not with ``n_init`` > 1.
        checkpoint_every : int
            Passes between checkpoints (default 1).
        options : the model's own fit arguments (``FIT_OPTIONS``).  The constructor's arguments given
            here (and ``seed``, ``random_state``'s old name) are the deprecated call form.
        """
        deprecated = {name: options.pop(name) for name in list(options)
                      if name not in self.FIT_OPTIONS and (name in self._params or name == "seed")}
        if deprecated:
            self._deprecated_fit(deprecated)
        unknown = sorted(set(options) - set(self.FIT_OPTIONS))
        if unknown:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected keyword arguments {', '.join(unknown)}")
        return driver.fit(self, X, y, progress=progress, callback=callback, callback_every=callback_every,
                          checkpoint=checkpoint, checkpoint_every=checkpoint_every, options=options)

    def _deprecated_fit(self, given):
        """The old call form: constructor arguments given to ``fit`` become the model's (None: unchanged)."""
        name = type(self).__name__
        warnings.warn(f"{name}.fit({', '.join(f'{key}=...' for key in given)}) is deprecated and goes in the next "
                      f"release: give them to the constructor, {name}(..., "
                      f"{', '.join(f'{_new_name(key)}=...' for key in given)}), or to set_params",
                      DeprecationWarning, stacklevel=3)
        self.set_params(**{_new_name(key): value for key, value in given.items() if value is not None})

    def _check_learner(self, *positive):
        """The checks every constructor shares: a known ``algorithm``, and the parameters ``positive``
        (``n_iter``, ``n_init``, ``batch_size``, ...) positive integers."""
        if self.algorithm not in self.ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; choose one of {', '.join(self.ALGORITHMS)}")
        for name in positive:
            driver.check_positive_int(name, getattr(self, name))

    # -- the driver's defaults ----------------------------------------------------------------------------
    def _n_passes(self):
        """The passes of one run (the stochastic algorithms: passes over the data)."""
        return driver.check_positive_int("n_iter", self.n_iter)

    def _step_sizes(self):
        """(batch_size, kappa, tau0) of the stochastic algorithms: rho_m = (tau0 + m)^-kappa."""
        return self.batch_size, self.kappa, self.tau0

    def _restart_objective(self, data):
        """What ``n_init`` restarts compare: the last objective of ``history_``."""
        return self.history_[-1].objective

    def _best_restart(self, runs, objectives, data):
        """Which of the ``n_init`` fitted copies ``runs`` the model keeps: the one of the highest
        objective, the first on ties (NaN counts as the lowest)."""
        return int(np.argmax(np.nan_to_num(objectives, nan=-np.inf)))

    def _fingerprint(self, data):
        """The arrays that identify the training data in a checkpoint."""
        raise NotImplementedError

    def _check_fitted(self):
        if not hasattr(self, self.FITTED):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    @property
    def train_seconds(self):
        """Training time of the last fit (the sum of the history's pass times)."""
        return sum(record.seconds for record in self.history_)


def _new_name(name):
    return "random_state" if name == "seed" else name


def _differs(value, default):
    try:
        return bool(value != default)
    except (TypeError, ValueError):   # arrays and the like
        return value is not default

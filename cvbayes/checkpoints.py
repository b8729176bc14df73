"""Checkpoints: a fit that resumes where it was stopped and ends bit for bit as an uninterrupted one.

``model.fit(..., checkpoint="run.ckpt", checkpoint_every=N)`` writes, every N passes (every N passes
over the data for svi and scvi too) and after the last one, all the state that determines the rest of
the run: the global statistics, every unit's local statistics (CVI's float32 ones), samples, the NumPy
Generator's state and numba's (the samplers'), the stochastic schedule's step count and decay scale,
and the history so far.  The same call again restores that state and runs only the remaining passes;
the arrays it fits and the objectives of ``history_`` equal those of an uninterrupted run (the times
differ).

Who saves what: the model opens a `Checkpoint` with the identity of its run (`run_identity`: model,
parameters, algorithm, n_iter, seed, options and a fingerprint of the data) and declares its state
(`track_arrays` for arrays the passes change in place, `track` for values it rebinds,
`track_numba_random`, `track_progress`); the schedule (`cvbayes.schedules`) declares its own loop
state, calls `resume` once before its loop (the number of passes already done) and `save_if_due` after
every pass.  A checkpoint of another run (other arguments or data) is refused with a message saying
which argument differs.

When the fit ends, the checkpoint holds the final state and is marked complete: calling the same fit
again restores the fitted model without training.  ``cvbayes fit --checkpoint`` (and ``lda fit``)
removes it once the model file is written; in Python, delete it (or use another path) to train afresh.

Files are written atomically with a checksum (`cvbayes.files`): a kill at any moment leaves the
previous checkpoint or the new one, and a damaged file is refused by name.
"""
import hashlib
import json
import os
from contextlib import suppress

import numpy as np

from .files import check_format, read_archive, remove_stale_temporaries, write_archive

FORMAT = "cvbayes-checkpoint-1"
WHAT = "cvbayes checkpoint"


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed here: another run's, or damaged; the message names the file."""


def fingerprint(*arrays):
    """SHA-256 (hex) of arrays' dtypes, shapes and bytes: the identity of a run's data."""
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.reshape(-1).view(np.uint8) if array.size else b"")
    return digest.hexdigest()


def plain(value):
    """``value`` as JSON-able data: arrays by their fingerprint, numpy scalars as Python numbers."""
    if isinstance(value, np.ndarray):
        return {"array": fingerprint(value), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    config = getattr(value, "config", None)  # an emission family
    return plain(config()) if callable(config) else repr(value)


def run_identity(model, algorithm, n_iter, seed, data, **arguments):
    """The identity a checkpoint records and checks: the model's name, ``algorithm``, ``n_iter``,
    ``seed``, a fingerprint of ``data`` (arrays) and the other ``arguments`` (JSON-able or arrays)."""
    return plain({"model": model, "algorithm": algorithm, "n_iter": int(n_iter), "seed": seed,
                  "data": fingerprint(*data), **arguments})


# -- values packed into an archive: arrays as members, the rest as JSON -----------------------------------

def _pack(value, name, arrays):
    if isinstance(value, np.ndarray):
        arrays[name] = value
        return {"array": name}
    if isinstance(value, tuple):
        return {"tuple": [_pack(v, f"{name}.{i}", arrays) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return {"list": [_pack(v, f"{name}.{i}", arrays) for i, v in enumerate(value)]}
    if isinstance(value, dict):
        return {"dict": {str(k): _pack(v, f"{name}.{k}", arrays) for k, v in value.items()}}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"a checkpoint cannot hold a {type(value).__name__} ({name})")


def _unpack(packed, arrays):
    kind, content = next(iter(packed.items()))
    if kind == "array":
        return arrays[content]
    if kind == "tuple":
        return tuple(_unpack(v, arrays) for v in content)
    if kind == "list":
        return [_unpack(v, arrays) for v in content]
    if kind == "dict":
        return {k: _unpack(v, arrays) for k, v in content.items()}
    return content


def numba_random_state():
    """The state of numba's generator in this thread (the samplers' `core.sampling.draw`)."""
    from numba import _helperlib

    index, keys = _helperlib.rnd_get_state(_helperlib.rnd_get_np_state_ptr())
    return {"index": int(index), "keys": [int(k) for k in keys]}


def set_numba_random_state(state):
    from numba import _helperlib

    _helperlib.rnd_set_state(_helperlib.rnd_get_np_state_ptr(), (state["index"], list(state["keys"])))


class Checkpoint:
    """The checkpoint of one fit at ``path``: what the model and the schedule declared, saved every
    ``every`` passes and after the last, restored by `resume` (module notes).

    Parameters
    ----------
    path : str or os.PathLike
    every : int
        Passes between saves (the last pass is always saved).
    run : dict
        The run's identity (`run_identity`), recorded and checked on resume.
    """

    def __init__(self, path, every=1, run=None):
        if int(every) != every or every < 1:
            raise ValueError(f"checkpoint_every must be a positive integer, got {every}")
        self.path = os.fspath(path)
        self.every = int(every)
        self.run = json.loads(json.dumps(run or {}))
        self._tracked = {}          # name -> (get, set)
        self.resumed_from = 0
        self.saves = 0

    # -- what the model and the schedule declare --------------------------------------------------------
    def track(self, name, get, set):
        """A value ``get()`` returns and ``set(value)`` restores: arrays, numbers, strings, None and
        tuples, lists and dicts of them."""
        if name in self._tracked:
            raise ValueError(f"checkpoint state {name!r} declared twice")
        self._tracked[name] = (get, set)

    def track_arrays(self, name, arrays):
        """Arrays (a dict name -> array, or a tuple) that the passes change in place; restored in place."""
        items = dict(arrays) if isinstance(arrays, dict) else dict(enumerate(arrays))
        items = {str(k): v for k, v in items.items() if isinstance(v, np.ndarray)}

        def restore(saved):
            for key, array in items.items():
                array[...] = saved[key]

        self.track(name, lambda: dict(items), restore)

    def track_numba_random(self):
        """numba's generator (seeded by `core.sampling.seed_numba`)."""
        self.track("numba_random", numba_random_state, set_numba_random_state)

    def track_generator(self, name, rng):
        """A NumPy Generator's bit generator state."""
        def restore(state):
            rng.bit_generator.state = state

        self.track(name, lambda: rng.bit_generator.state, restore)

    def track_progress(self, progress):
        """A `schedules.Progress`: its history (the records so far) and its bar."""
        self.track("history", progress.saved_history, progress.restore_history)

    # -- what the schedule calls ------------------------------------------------------------------------
    def resume(self):
        """Restore the saved state if the checkpoint exists; returns the passes it holds (0 if none).

        Raises
        ------
        CheckpointError
            Naming the file, when it is another run's or was written by another cvbayes version, or
            is damaged.
        """
        remove_stale_temporaries(self.path)
        if not os.path.exists(self.path):
            return 0
        meta, arrays = read_checkpoint(self.path)
        if meta["run"] != self.run:
            raise CheckpointError(f"{self.path}: the checkpoint of another run ({_difference(meta['run'], self.run)}); "
                                  f"remove it, or give another checkpoint path, to start this run afresh")
        state = _unpack(meta["state"], arrays)
        missing = set(self._tracked) - set(state)
        if missing:
            raise CheckpointError(f"{self.path}: the checkpoint lacks {', '.join(sorted(missing))}")
        for name, (_, restore) in self._tracked.items():
            restore(state[name])
        self.resumed_from = int(meta["passes"])
        return self.resumed_from

    def save_if_due(self, iteration, n_iter):
        """After pass ``iteration`` (0-based) of ``n_iter``: save every ``every`` passes and after the last."""
        done = iteration + 1
        if done % self.every == 0 or done == n_iter:
            self.save(done, complete=done == n_iter)

    def save(self, passes, complete=False):
        arrays = {}
        state = _pack({name: get() for name, (get, _) in self._tracked.items()}, "state", arrays)
        meta = {"format": FORMAT, "run": self.run, "passes": int(passes), "complete": bool(complete),
                "state": state}
        write_archive(self.path, meta, arrays, compressed=False)
        self.saves += 1

    def remove(self):
        """Delete the checkpoint (once what it led to is safely saved)."""
        with suppress(FileNotFoundError):
            os.unlink(self.path)


class NoCheckpoint:
    """What a fit without ``checkpoint=`` uses: declares nothing, resumes nothing, saves nothing."""

    path = None
    resumed_from = 0

    def track(self, name, get, set):
        pass

    def track_arrays(self, name, arrays):
        pass

    def track_numba_random(self):
        pass

    def track_generator(self, name, rng):
        pass

    def track_progress(self, progress):
        pass

    def resume(self):
        return 0

    def save_if_due(self, iteration, n_iter):
        pass

    def remove(self):
        pass


NO_CHECKPOINT = NoCheckpoint()


def open_checkpoint(path, every, run):
    """A `Checkpoint` at ``path``, or `NO_CHECKPOINT` when ``path`` is None."""
    if path is None:
        if int(every) != every or every < 1:
            raise ValueError(f"checkpoint_every must be a positive integer, got {every}")
        return NO_CHECKPOINT
    return Checkpoint(path, every, run)


def read_checkpoint(path):
    """(meta, arrays) of a checkpoint file, its checksum and format checked."""
    try:
        meta, arrays = read_archive(path, WHAT, "fit(..., checkpoint=PATH) or --checkpoint PATH")
        check_format(path, meta, (FORMAT,), WHAT)
    except ValueError as error:
        raise CheckpointError(str(error)) from None
    return meta, arrays


def checkpoint_passes(path):
    """(passes saved, complete) of the checkpoint at ``path``, or None when there is none."""
    if path is None or not os.path.exists(path):
        return None
    meta, _ = read_checkpoint(path)
    return int(meta["passes"]), bool(meta["complete"])


def _difference(saved, now):
    """The first argument whose value differs between two run identities, for the refusal message."""
    first = ["model", "algorithm", "n_iter", "seed", "data"]
    for key in first + sorted((set(saved) | set(now)) - set(first)):
        if saved.get(key) != now.get(key):
            if key == "data":
                return "other data"
            return f"{key}: saved {_short(saved.get(key))}, now {_short(now.get(key))}"
    return "other arguments"


def _short(value):
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."

"""A corpus cut into shards for Dask workers: what every sharded learner shares (issues 21 and 32).

A learner whose statistics are sums over units (sequences, utterances, documents) runs each unit's
work on the shard that holds it and adds the shards' results up.  This module holds the pieces that do
not depend on the model:

* `Shards`: the corpus cut into shards of whole units of about equal size (`shard_bounds`), saved once
  as uncompressed corpus files (`Corpus.save`) in a temporary folder, or in ``$CVBAYES_SHARED_DIR``,
  which must be on a file system every worker sees when the workers are on other machines, or in a
  folder the caller names (kept after the fit and used again by a later fit of the same corpus, refused
  with a clear error when it holds another corpus's shards: the folder's manifest records the corpus's
  checksum).  A worker memory-maps its shard (`opened`) the first time a task needs it, after checking
  that the file's own checksum is the one written for this fit, and keeps it in a per-process cache, so
  a pass moves only tables and statistics.  ``map_reduce`` runs a function on every shard and adds the
  results up pairwise on the workers (`tree_sum`: the same tree as in one process, so the sums agree to
  the order of floating-point additions); ``map_gather`` brings the results back one by one;
* the timing of every pass (`PassTiming`, ``Shards.passes``): compute seconds per shard measured inside
  the workers' tasks, bytes sent (the broadcast tables once per worker, the per-shard arguments) and
  returned (every shard's result), the reduction's summed and critical-path seconds, and the scheduler's
  overhead: the pass's wall time less the broadcast, the slowest shard and the reduction's critical path.
  This is the data the scaling model (docs/scaling.md) is fitted to.
* `Sharding`, fit's ``client=``, ``n_shards=`` and ``shard_folder=`` checked once for every model, and
  `ShardedBatch`, the batch (EM, VB) structure whose E-step is any model's per-shard function summed
  over the shards (the HMM's, the DMV's, the PCFG's, the adaptor grammar's VB); `ShardStates`, the
  state of the sharded collapsed learners kept on the shards' workers.

Dask (``pip install "cvbayes[distributed]"``) is imported only when a client is used.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
import weakref
from contextlib import contextmanager
from typing import Any, NamedTuple

import numba
import numpy as np

from ..data import Corpus
from ..files import atomic_write, checksum
from ..schedules.driver import check_positive_int

MANIFEST = "shards.json"
MANIFEST_FORMAT = "cvbayes-shards-1"

# Per worker process: the opened shards and learners' local state, by (fit token, shard, kind).
_OPENED = {}


class ShardMismatchError(ValueError):
    """A shard folder, or a shard file, that is not the one this fit cut from its corpus."""


# ------------------------------------------------------------------ cutting and adding up

def shard_bounds(offsets, n_shards):
    """Unit boundaries cutting the corpus of ``offsets`` into at most ``n_shards`` shards of whole
    units with about equal token counts; (n + 1,) int64, empty shards dropped."""
    n_units = offsets.shape[0] - 1
    targets = np.linspace(0, offsets[-1], max(1, min(n_shards, n_units)) + 1)
    bounds = np.searchsorted(offsets, targets, side="left")
    bounds[0], bounds[-1] = 0, n_units
    return np.unique(np.maximum.accumulate(bounds)).astype(np.int64)


def headed_corpus(heads, tokens, offsets):
    """A Corpus whose unit i is the integers ``heads[:, i]`` (what a shard's work needs of unit i besides its
    tokens: an utterance type's number of copies, ...) followed by its tokens ``tokens[offsets[i]:offsets[i +
    1]]``; `split_heads` reads it back."""
    heads = np.atleast_2d(heads)
    n_heads, n_units = heads.shape
    offsets = np.asarray(offsets, dtype=np.int64) + n_heads * np.arange(n_units + 1)
    observations = np.empty(offsets[-1], dtype=np.int32)
    body = np.ones(offsets[-1], dtype=bool)
    for h in range(n_heads):
        observations[offsets[:-1] + h] = heads[h]
        body[offsets[:-1] + h] = False
    observations[body] = tokens
    return Corpus(observations, offsets)


def split_heads(corpus, n_heads):
    """`headed_corpus`'s parts: (the heads (n_heads, I) int64, the tokens laid end to end (int64), their
    offsets (I + 1,))."""
    observations, offsets = np.asarray(corpus.observations), np.asarray(corpus.offsets)
    n_units = offsets.shape[0] - 1
    places = offsets[:-1] + np.arange(n_heads)[:, None]
    body = np.ones(observations.shape[0], dtype=bool)
    body[places.ravel()] = False
    return (observations[places].astype(np.int64), observations[body].astype(np.int64),
            offsets - n_heads * np.arange(n_units + 1))


def add_up(first, second):
    """Elementwise sum of two nested tuples of arrays and numbers (shards' statistics); a named tuple
    stays one of its kind."""
    if isinstance(first, tuple):
        sums = (add_up(a, b) for a, b in zip(first, second))
        return type(first)._make(sums) if hasattr(first, "_make") else tuple(sums)
    return first + second


def tree_sum(items, add=add_up):
    """Sum ``items`` pairwise, level by level: (0+1)+(2+3)... .  The same tree for values and for
    Dask futures (``add`` submitting `add_up`), so a sum is the same to the bit either way."""
    items = list(items)
    while len(items) > 1:
        items = [add(items[i], items[i + 1]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


# ------------------------------------------------------------------ on the workers

class ShardFile(NamedTuple):
    """A saved shard as a task names it: its path and the checksum its file was written with."""

    path: str
    checksum: str

    def open(self):
        """The shard's corpus, memory-mapped; ShardMismatchError if the file is not the one written."""
        found = _stored_checksum(self.path)
        if found != self.checksum:
            raise ShardMismatchError(f"{self.path}: not the shard this fit saved (its checksum {found[:12]}... is "
                                     f"not {self.checksum[:12]}...): the shard folder was changed or holds "
                                     f"another corpus's shards")
        return Corpus.load(self.path, mmap=True)


def _stored_checksum(path):
    """The checksum `Corpus.save` wrote into the file (read from its small member alone)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return str(archive["checksum"])
    except (OSError, KeyError, ValueError) as error:
        raise ShardMismatchError(f"{path}: not a readable shard ({type(error).__name__}: {error})") from None


def limit_threads():
    """In a Dask worker, numba uses as many threads as the worker has (``threads_per_worker``), so
    that workers sharing a machine do not oversubscribe its cores."""
    from distributed import get_worker
    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, get_worker().state.nthreads)))


@contextmanager
def numbered_in_corpus(first, unit):
    """A shard's ValueError (its message numbering the ``unit`` in the shard) re-raised naming where the
    shard starts in the whole corpus (its ``first`` unit)."""
    try:
        yield
    except ValueError as error:
        raise type(error)(f"in the shard starting at {unit} {first}: {error}") from None


def opened(token, shard, payload, kind, build):
    """``build(payload, corpus)`` of the shard (a `ShardFile`, memory-mapped) for ``kind`` of work, once
    per worker process and fit."""
    key = (token, shard, kind)
    if key not in _OPENED:
        _OPENED[key] = build(payload, shard.open())
    return _OPENED[key]


def kept(token, key):
    """A learner's state kept on this worker under ``key`` by `keep` (None if this process has none)."""
    return _OPENED.get((token, key, "state"))


def keep(token, key, value):
    _OPENED[(token, key, "state")] = value


def _forget(token):
    """Drop a finished fit's shards and state from this process's cache."""
    for key in [key for key in _OPENED if key[0] == token]:
        del _OPENED[key]


def _timed(function, *args):
    """``function(*args)`` as a partial sum of one shard: (its result, (the seconds it took,), 0, 0, the
    result's bytes, (the CPU seconds of its thread,)): a shard's compute time measured where it runs; its
    CPU time over its wall time is the share of a core the task had (below 1 on a loaded machine)."""
    started, cpu_started = time.perf_counter(), time.thread_time()
    result = function(*args)
    return (result, (time.perf_counter() - started,), 0.0, 0.0, _nbytes(result),
            (time.thread_time() - cpu_started,))


def _timed_add(first, second):
    """`add_up` of two partial sums (value, compute seconds per shard, reduction seconds summed, the
    reduction's critical path, bytes returned by the shards, CPU seconds per shard)."""
    started = time.perf_counter()
    value = add_up(first[0], second[0])
    spent = time.perf_counter() - started
    return (value, first[1] + second[1], first[2] + second[2] + spent, max(first[3], second[3]) + spent,
            first[4] + second[4], first[5] + second[5])


# ------------------------------------------------------------------ the pass record

class PassTiming(dict):
    """One pass's breakdown (a dict, saved as JSON by the benchmarks): ``compute`` seconds per shard,
    ``compute_cpu`` CPU seconds per shard (the task's thread: numba's other threads not counted),
    ``bytes_sent`` and ``bytes_returned``, ``broadcast`` seconds, ``reduce`` seconds summed over the
    reduction's additions and ``reduce_path`` along its critical path, ``wall`` seconds of the rounds
    of tasks, and ``overhead`` = wall - broadcast - slowest shard - reduce_path (scheduling, transfers,
    serialisation); ``rounds`` the rounds of tasks (a stochastic pass has one a minibatch)."""

    @classmethod
    def empty(cls, n_shards):
        return cls(compute=[0.0] * n_shards, compute_cpu=[0.0] * n_shards, bytes_sent=0, bytes_returned=0,
                   broadcast=0.0, reduce=0.0, reduce_path=0.0, wall=0.0, overhead=0.0, rounds=0)

    def add_round(self, shards, compute, cpu, sent, returned, broadcast, reduce, reduce_path, wall):
        for s, seconds, cpu_seconds in zip(shards, compute, cpu):
            self["compute"][s] += seconds
            self["compute_cpu"][s] += cpu_seconds
        self["bytes_sent"] += int(sent)
        self["bytes_returned"] += int(returned)
        self["broadcast"] += broadcast
        self["reduce"] += reduce
        self["reduce_path"] += reduce_path
        self["wall"] += wall
        self["overhead"] += wall - broadcast - max(compute, default=0.0) - reduce_path
        self["rounds"] += 1


def _nbytes(value, depth=0):
    """The bytes of ``value``'s arrays (in tuples, lists and objects' attributes, four levels deep), other
    Python objects at their own size: what moving it costs, less the framing."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if depth < 4 and isinstance(value, (tuple, list)):
        return sum(_nbytes(item, depth + 1) for item in value)
    if depth < 4 and hasattr(value, "__dict__"):
        return sum(_nbytes(item, depth + 1) for item in vars(value).values())
    return sys.getsizeof(value)


# ------------------------------------------------------------------ the shards of one fit

class Shards:
    """A corpus cut into shards of whole units, saved for the workers of ``client`` (or only cut,
    without one), and the ``payload`` every shard's work needs (sent to every worker once).

    Parameters
    ----------
    corpus : the Corpus to cut (its sequences are the units)
    payload : what every task receives after its shard (the model's parts), or None
    client : dask.distributed.Client or None
    n_shards : shards (default: one per worker; without a client, numba's thread count)
    folder : where to save the shards (kept after the fit, used again by a fit of the same corpus cut
        the same way, refused if it holds another's); default a temporary folder, removed after the fit
    identity : the corpus's checksum, recorded in the folder's manifest (needed with ``folder``)
    """

    def __init__(self, corpus, payload=None, client=None, n_shards=None, folder=None, identity=None):
        self.client = client
        self.token = uuid.uuid4().hex
        workers = _workers(client) if client is not None else []
        if n_shards is None:
            n_shards = len(workers) if client is not None else numba.get_num_threads()
        if int(n_shards) != n_shards or n_shards < 1:
            raise ValueError(f"n_shards must be a positive integer, got {n_shards}")
        offsets = np.asarray(corpus.offsets)
        self.bounds = shard_bounds(offsets, int(n_shards))   # unit boundaries
        self.token_bounds = offsets[self.bounds]
        self.n_shards = self.bounds.shape[0] - 1
        self.files = []
        self.folder = None
        self.payload = payload
        self.passes = []
        self.start_timing = None
        self._pass = None
        if client is None:
            return
        if folder is None:
            self.folder = tempfile.mkdtemp(prefix="cvbayes-shards-", dir=os.environ.get("CVBAYES_SHARED_DIR"))
            self.files = self._save(corpus)
        else:
            self.folder = os.fspath(folder)
            self.files = self._reuse_or_save(corpus, identity)
        removed = self.folder if folder is None else None
        self._finalizer = weakref.finalize(self, _clean_up, client, self.token, removed)
        self.n_workers = len(workers)
        # each shard prefers one worker, so that it is opened once; any other may take it over
        self.homes = [workers[s % len(workers)] for s in range(self.n_shards)]
        self.sent_payload = client.scatter(payload, broadcast=True, hash=False)

    def _save(self, corpus):
        files = []
        for s in range(self.n_shards):
            path = os.path.join(self.folder, f"shard-{s:05d}.npz")
            corpus[int(self.bounds[s]):int(self.bounds[s + 1])].save(path)
            files.append(ShardFile(path, _stored_checksum(path)))
        return files

    def _reuse_or_save(self, corpus, identity):
        """The shards of a named folder: those saved there before for this corpus and cut, or new ones."""
        if identity is None:
            raise ValueError("a shard folder needs the corpus's checksum (identity=)")
        manifest_path = os.path.join(self.folder, MANIFEST)
        if os.path.isfile(manifest_path):
            with open(manifest_path, encoding="utf-8") as stream:
                manifest = json.load(stream)
            if manifest.get("format") != MANIFEST_FORMAT or manifest.get("corpus") != identity:
                raise ShardMismatchError(f"shard folder {self.folder} holds the shards of another corpus (its "
                                         f"checksum {str(manifest.get('corpus'))[:12]}... is not this corpus's "
                                         f"{identity[:12]}...); give an empty or new folder")
            if manifest["bounds"] != self.bounds.tolist():
                raise ShardMismatchError(f"shard folder {self.folder} holds this corpus cut into "
                                         f"{len(manifest['bounds']) - 1} shards, not {self.n_shards}; give "
                                         f"n_shards={len(manifest['bounds']) - 1} or another folder")
            return [ShardFile(os.path.join(self.folder, name), checksum) for name, checksum in manifest["files"]]
        os.makedirs(self.folder, exist_ok=True)
        files = self._save(corpus)
        manifest = {"format": MANIFEST_FORMAT, "corpus": identity, "bounds": self.bounds.tolist(),
                    "files": [[os.path.basename(f.path), f.checksum] for f in files]}
        with atomic_write(manifest_path, "w", encoding="utf-8") as stream:
            json.dump(manifest, stream)
        return files

    # -- running tasks -----------------------------------------------------------------------------

    def submit(self, function, s, *args, pinned=False):
        """``function(token, shard file, payload, *args)`` for shard ``s`` on its preferred worker (any
        other may take it over, unless ``pinned``: the shard's state lives there); the future's result is
        a partial sum of one shard (`_timed`)."""
        return self.client.submit(_timed, function, self.token, self.files[s], self.sent_payload, *args,
                                  workers=[self.homes[s]], allow_other_workers=not pinned, pure=False)

    def broadcast(self, value):
        """``value`` scattered to every worker once: (its future, the seconds, the bytes sent)."""
        started = time.perf_counter()
        sent = self.client.scatter(value, broadcast=True, hash=False)
        return sent, time.perf_counter() - started, _nbytes(value) * self.n_workers

    def map_reduce(self, function, broadcast, arguments=None):
        """The sum over the shards of ``function(token, shard, payload, sent, *arguments[s])``, with
        ``broadcast`` sent to every worker once, added up pairwise on the workers (`tree_sum`).

        Dask scatters to the workers running at that moment and cannot recover scattered data from a
        worker that dies: under load a worker may be missing from the scatter, and the one that got the
        data may then die.  Such a pass is sent again, once, with the payload; a shard's work keeps no
        state that the lost pass changed, so the result is the same."""
        from distributed.client import FutureCancelledError
        try:
            return self._map_reduce(function, broadcast, arguments)
        except FutureCancelledError:
            self.sent_payload = self.client.scatter(self.payload, broadcast=True, hash=False)
            return self._map_reduce(function, broadcast, arguments)

    def _map_reduce(self, function, broadcast, arguments):
        started = time.perf_counter()
        sent, broadcast_seconds, sent_bytes = self.broadcast(broadcast)
        arguments = arguments or [()] * self.n_shards
        futures = [self.submit(function, s, sent, *arguments[s]) for s in range(self.n_shards)]
        value, compute, reduce, reduce_path, returned, cpu = tree_sum(
            futures, lambda a, b: self.client.submit(_timed_add, a, b, pure=False)).result()
        self.record(range(self.n_shards), compute, cpu, sent_bytes + _nbytes(arguments), returned, broadcast_seconds,
                    reduce, reduce_path, time.perf_counter() - started)
        return value

    def map_gather(self, function, owners, arguments, broadcast=None, pinned=False):
        """The results of ``function(token, shard, payload, [sent,] *arguments[i])`` on the shards
        ``owners`` (with ``sent`` the future of ``broadcast``, sent to every worker once, when given),
        brought back here in order; the caller adds them up (and times that with `add_reduction`).
        ``pinned``: each on its shard's own worker, `WorkerLostError` if one of those leaves."""
        started = time.perf_counter()
        prefix, broadcast_seconds, sent_bytes = (), 0.0, 0
        if broadcast is not None:
            sent, broadcast_seconds, sent_bytes = self.broadcast(broadcast)
            prefix = (sent,)
        futures = [self.submit(function, s, *prefix, *args, pinned=pinned) for s, args in zip(owners, arguments)]
        timed = self._gather_pinned(futures, owners) if pinned else self.client.gather(futures)
        self.record(owners, [part[1][0] for part in timed], [part[5][0] for part in timed],
                    sent_bytes + _nbytes(arguments), sum(part[4] for part in timed), broadcast_seconds, 0.0, 0.0,
                    time.perf_counter() - started)
        return [part[0] for part in timed]

    def _gather_pinned(self, futures, owners):
        """The results of tasks pinned to the workers of the shards ``owners``, waited for in steps of
        `LOST_WORKER_CHECK` seconds; `WorkerLostError` once one of those workers has left the cluster (its
        tasks would wait for it for ever, or are cancelled when the data scattered to it is lost)."""
        from concurrent.futures import CancelledError

        from distributed import wait
        homes = {self.homes[s] for s in owners}

        def raise_if_gone():
            gone = homes - set(_worker_addresses(self.client))
            if gone:
                self.client.cancel(futures)
                raise WorkerLostError(f"the worker {', '.join(sorted(gone))} left the cluster")

        while True:
            raise_if_gone()
            try:
                wait(futures, timeout=LOST_WORKER_CHECK)
                return self.client.gather(futures)
            except TimeoutError:
                continue
            except CancelledError:
                raise_if_gone()
                raise

    def map_threads(self, pool, function, items):
        """``function(item)`` for the shards' ``items`` on the threads of ``pool`` (shards without a
        client), each shard's compute time recorded."""
        started = time.perf_counter()
        timed = list(pool.map(lambda item: _timed(function, item), items))
        self.record(range(len(items)), [part[1][0] for part in timed], [part[5][0] for part in timed], 0, 0,
                    0.0, 0.0, 0.0, time.perf_counter() - started)
        return [part[0] for part in timed]

    def record(self, shards, compute, cpu, sent, returned, broadcast, reduce, reduce_path, wall):
        """Add a round of tasks to the current pass's `PassTiming`."""
        if self._pass is None:
            self._pass = PassTiming.empty(self.n_shards)
        self._pass.add_round(shards, compute, cpu, sent, returned, broadcast, reduce, reduce_path, wall)

    def add_reduction(self, seconds):
        """Time the caller spent adding the gathered results up, into the current pass's record."""
        for name in ("reduce", "reduce_path", "wall"):
            self._pass[name] += seconds

    def end_pass(self, start=False):
        """Close the current pass's record (a structure calls it after each pass; ``start``: the work
        before the first pass, kept apart as ``start_timing``)."""
        if self._pass is not None:
            if start:
                self.start_timing = self._pass
            else:
                self.passes.append(self._pass)
            self._pass = None

    def attributes(self):
        """The fitted model's ``shard_timings_``: one `PassTiming` a pass."""
        return {"shard_timings_": self.passes}

    def close(self):
        if self.client is not None:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# seconds to wait for a first worker to join a client's scheduler (a LocalCluster's may still be starting)
WORKER_TIMEOUT = 60
# seconds between checks that the workers holding shards' state are still there
LOST_WORKER_CHECK = 2


class WorkerLostError(RuntimeError):
    """A worker that held shards' state between passes left the cluster."""


def _worker_addresses(client):
    """The addresses of the workers the scheduler has now, asked of it: ``client.scheduler_info()`` may
    return the client's periodic cache, which carries no workers, so a check on it could see every worker
    gone."""
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def _workers(client):
    """The addresses of the client's workers, sorted, once at least one has joined."""
    if not _worker_addresses(client):
        try:
            client.wait_for_workers(1, timeout=WORKER_TIMEOUT)
        except TimeoutError:
            raise RuntimeError(f"no Dask worker joined the scheduler {client.scheduler.address} within "
                               f"{WORKER_TIMEOUT} s; start workers (dask worker ADDRESS)") from None
    return sorted(_worker_addresses(client))


def _clean_up(client, token, folder):
    try:
        client.run(_forget, token)
    except Exception:  # the client or its cluster is gone: nothing left to forget
        pass
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------ fit's options and the batch E-step

class Sharding(NamedTuple):
    """What ``fit(client=, n_shards=, shard_folder=)`` asked for (`checked`), and the shards it makes.

    The options mean the same for every model that fits on shards (its docstring says which learners run
    on a ``client``'s workers).  ``n_shards``: how many shards of whole units, by default one per worker;
    without a client, for the learners that run shards on threads of this process, numba's thread count.
    ``shard_folder``: with a client, where the shards are saved (on a file system every worker sees) and
    kept for the next fit of the same data cut the same way; a folder that holds another corpus's shards
    is refused by checksum.  By default a temporary folder, removed after the fit.
    """

    client: Any = None
    n_shards: int | None = None
    folder: Any = None

    @classmethod
    def checked(cls, algorithm, client, n_shards, folder, on_client, on_threads=()):
        """The options of a fit of ``algorithm``, refused unless it is one of ``on_client`` (with a
        client) or of ``on_threads`` (``n_shards`` without one: shards on threads of this process)."""
        if (client is not None and algorithm not in on_client) or (
                client is None and n_shards is not None and algorithm not in on_threads):
            threads = f", and n_shards= without a client only {', '.join(on_threads)}" if on_threads else ""
            raise ValueError(f"algorithm {algorithm!r} does not run on shards; client= takes "
                             f"{', '.join(on_client)}{threads}")
        if n_shards is not None:
            check_positive_int("n_shards", n_shards)
        if folder is not None and client is None:
            raise ValueError("shard_folder= is where the shards for a client's workers are saved: give client= too")
        return cls(client, n_shards, folder)

    def shards(self, corpus, payload, fingerprint):
        """The `Shards` of ``corpus``; a named folder is tied to the checksum of the model's
        ``fingerprint`` arrays of its training data."""
        identity = None
        if self.folder is not None:
            identity = checksum({str(i): np.asarray(array) for i, array in enumerate(fingerprint)})
        return Shards(corpus, payload, self.client, self.n_shards, self.folder, identity)


class ShardedBatch:
    """A model's structure for `schedules.batch` (EM, VB) with its E-step summed over the shards of a
    client: ``tables`` and ``penalty`` are the in-process structure ``local``'s; ``expectations(tables)``
    sends ``send(tables)`` to every worker once and adds up ``work(token, shard, payload, sent, first)``
    of every shard (``first``: the shard's first unit in the whole corpus) pairwise on the workers, then
    hands the summed statistics to ``after`` (a learner whose E-step ends by updating its own state, as
    the adaptor grammar's VB updates q).  A shard keeps no state between passes, so a pass whose worker
    dies is rerun elsewhere, the same."""

    def __init__(self, local, shards, work, send=None, after=None):
        self.local = local
        self.shards = shards
        self.work = work
        self.send = send
        self.after = after

    def tables(self, statistics, rule):
        return self.local.tables(statistics, rule)

    def penalty(self, rule, statistics, tables):
        return self.local.penalty(rule, statistics, tables)

    def expectations(self, tables, start=False):
        """The E-step over every shard: (statistics, sum of log Z); ``start``: the fit's start, timed
        apart from the passes."""
        shards = self.shards
        sent = tables if self.send is None else self.send(tables)
        total = shards.map_reduce(self.work, sent, [(int(first),) for first in shards.bounds[:-1]])
        shards.end_pass(start=start)
        if self.after is not None:
            self.after(total[0])
        return total

    def attributes(self):
        return self.shards.attributes()

    def close(self):
        self.shards.close()


# ------------------------------------------------------------------ state that lives on the shards

def _place(token, shard, payload, state, s, place):
    keep(token, s, state if place is None else place(token, shard, payload, state))


def _state_call(token, shard, payload, s, what, method, *args):
    """``method`` of shard ``s``'s state kept on this worker, with ``args``."""
    limit_threads()
    state = kept(token, s)
    if state is None:
        raise RuntimeError(f"the {what} state of shard {s} was lost with its worker (it lives on one worker "
                           "between passes); fit again")
    return getattr(state, method)(*args)


def _sweep_call(token, shard, payload, frozen, s, what):
    return _state_call(token, shard, payload, s, what, "sweep", frozen)


class ShardStates:
    """One state object per shard, kept between passes on the shard's worker (or in this process, its
    shards run on threads, without a client): the sharded collapsed learners (the HMM's cvi2-sharded,
    LDA's cvb0-sharded), which sweep their shard against counts frozen at the start of the pass.

    A state has ``sweep(frozen) -> (change in the counts, objective, first bad unit or -1)``; ``what``
    names the learner in the error a lost worker raises.  ``place(token, shard, payload, state)``, if
    given, makes the state a worker keeps from the one sent (e.g. its sentences from the memory-mapped
    shard, `opened`, rather than sent with it); without a client the states are complete as given.
    """

    def __init__(self, shards, states, what, place=None):
        self.shards = shards
        self.what = what
        if shards.client is None:
            from concurrent.futures import ThreadPoolExecutor
            self.states = states
            self.threads = ThreadPoolExecutor(max_workers=shards.n_shards)
            return
        self.states = None
        self._pinned(_place, [(state, s, place) for s, state in enumerate(states)])
        shards.end_pass(start=True)

    def _pinned(self, function, arguments, broadcast=None):
        """``function`` on every shard's own worker (`Shards.map_gather`, pinned), in shard order."""
        try:
            return self.shards.map_gather(function, range(self.shards.n_shards), arguments, broadcast, pinned=True)
        except WorkerLostError as error:
            raise RuntimeError(f"the {self.what} state of the shards lives on their workers between passes, and "
                               f"{error}; fit again") from None

    def sweep(self, frozen):
        """Every shard's ``sweep(frozen)`` (frozen sent to every worker once), in shard order; the
        changes are added up by the caller (`sum_changes`)."""
        shards = self.shards
        if self.states is not None:
            return shards.map_threads(self.threads, lambda state: state.sweep(frozen), self.states)
        return self._pinned(_sweep_call, [(s, self.what) for s in range(shards.n_shards)], frozen)

    def sum_changes(self, results, frozen):
        """Add the shards' changes (`tree_sum`) to the ``frozen`` counts in place; the summed objective."""
        started = time.perf_counter()
        change = tree_sum([result[0] for result in results])
        for block, delta in zip(frozen, change):
            block += delta
        self.shards.add_reduction(time.perf_counter() - started)
        self.shards.end_pass()
        return sum(result[1] for result in results)

    def collect(self, method):
        """Every shard's ``method()`` of its state, in shard order (the fitted attributes at the end)."""
        if self.states is not None:
            return [getattr(state, method)() for state in self.states]
        results = self._pinned(_state_call, [(s, self.what, method) for s in range(self.shards.n_shards)])
        self.shards.end_pass(start=True)
        return results

    def close(self):
        if self.states is not None:
            self.threads.shutdown()
        self.shards.close()

"""Learning on shards of a corpus: across Dask workers, and the sharded CVI-2 (issue 21).

EM, VB, SVI and SCVI need the data only through sums over units of per-unit statistics (the E-step,
thesis eq. 3.13-3.17, and the minibatch statistics of eq. 3.98-3.104), so a corpus cut into shards of
whole sequences gives the same sums shard by shard.  This module supplies the structures the schedules
of `cvbayes.schedules` drive, with the per-unit work moved to the shards; the schedules are unchanged:

* `ShardedBatch`: the structure of `schedules.batch` (EM, VB).  The tables and the penalty are built
  where the fit runs; every pass sends only the tables to the workers and gets back the summed expected
  counts and log Z (a tree reduction).  Same objective trajectory as one process, up to the order of
  the floating-point sums (measured below 1e-12 relative);
* `ShardedMinibatches`: the structure of `schedules.stochastic` (SVI, SCVI).  The minibatch's units
  are drawn where the fit runs, by the schedule's own generator, so the draws are those of one process;
  each shard gets the units it owns, the current counts of the rows they touch, and returns its
  statistics.  Same result as one process up to the order of the sums.  Not offered: SCVI on guarded
  subchains (its boundary beliefs are state that would live on the workers) and the HDP-HMM;
* `ShardedSweep`: the separately named algorithm ``"cvi2-sharded"``, an approximation of CVI-2 in the
  manner of AD-LDA (Newman et al. 2009, "Distributed algorithms for topic models", JMLR 10) for Gibbs
  sampling.  Each shard runs CVI-2's sequence updates (eq. 3.47-3.50) over its own sequences against a
  copy of the global counts frozen at the start of the pass plus its own changes; after the pass the
  shards' changes are added up.  A sequence therefore sees the other shards' counts one pass stale; the
  objective is the sum of the shards' leave-one-out log normalisers under those stale counts.  With
  one shard it is CVI-2 exactly.  It runs without Dask (shards on threads of this process: the kernel
  runs without the GIL) or on a client's workers.

Shards are saved once per fit as uncompressed corpus files (`Corpus.save`) in a temporary folder (or
``$CVBAYES_SHARED_DIR``, which must be on a file system every worker sees when the workers are on other
machines); a worker memory-maps its shard (`Corpus.load(mmap=True)`) the first time a task needs it and
keeps it in a per-process cache, so a pass moves only tables and statistics.  A shard of EM, VB, SVI
and SCVI holds no state between passes, so when a worker dies Dask reruns its tasks on another worker,
which opens the shard again: the pass completes with the same result.  The sharded CVI-2's local
statistics live on the workers; losing a worker stops the fit with a clear error.

Dask (``pip install "cvbayes[distributed]"``) is imported only when a client is used.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from ..core.units import ZeroProbabilityError
from ..data import Corpus
from .hmm_kernels import subchain_pass, subchain_state, subchain_workspace, unit_totals
from .hmm_structures import ChainData, Minibatches, Units, gather_ranges

# The largest block of tokens a worker draws the random start for at once (its (tokens, K) float32
# marginals are temporary): keeps a worker's peak memory that of its shard, not of K times it.
START_BLOCK_TOKENS = 1_000_000

# Per worker process: the opened shards and the sharded CVI-2's local state, by (fit token, shard).
_OPENED = {}


# ------------------------------------------------------------------ shards and their reduction

def shard_bounds(offsets, n_shards):
    """Sequence boundaries cutting the corpus of ``offsets`` into at most ``n_shards`` shards of whole
    sequences with about equal token counts; (n + 1,) int64, empty shards dropped."""
    n_sequences = offsets.shape[0] - 1
    targets = np.linspace(0, offsets[-1], max(1, min(n_shards, n_sequences)) + 1)
    bounds = np.searchsorted(offsets, targets, side="left")
    bounds[0], bounds[-1] = 0, n_sequences
    return np.unique(np.maximum.accumulate(bounds)).astype(np.int64)


def add_up(first, second):
    """Elementwise sum of two nested tuples of arrays and numbers (shards' statistics)."""
    if isinstance(first, tuple):
        return tuple(add_up(a, b) for a, b in zip(first, second))
    return first + second


def tree_sum(items, add=add_up):
    """Sum ``items`` pairwise, level by level: (0+1)+(2+3)... .  The same tree for values and for
    Dask futures (``add`` submitting `add_up`), so a sum is the same to the bit either way."""
    items = list(items)
    while len(items) > 1:
        items = [add(items[i], items[i + 1]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def worker_parts(parts):
    """The HMM's parts as a shard's work needs them (sent to every worker once): the finite HMM's only."""
    if parts.occupancy is not None:
        raise NotImplementedError("fitting an HDP-HMM on shards is not supported; only the HMM is")
    return parts


def _limit_threads():
    """In a Dask worker, numba uses as many threads as the worker has (``threads_per_worker``), so
    that workers sharing a machine do not oversubscribe its cores."""
    from distributed import get_worker
    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, get_worker().state.nthreads)))


def _opened(token, path, parts, kind, build):
    """The shard at ``path`` opened (memory-mapped) for ``kind`` of work, once per worker process."""
    key = (token, path, kind)
    if key not in _OPENED:
        _OPENED[key] = build(parts, Corpus.load(path, mmap=True))
    return _OPENED[key]


def _forget(token):
    """Drop a finished fit's shards from this process's cache."""
    for key in [key for key in _OPENED if key[0] == token]:
        del _OPENED[key]


class Shards:
    """A corpus cut into shards of whole sequences, saved for the workers of ``client`` (or kept in
    this process without one), and the parts of the HMM the workers run.

    Parameters
    ----------
    parts : the `Parts` of the HMM being fitted (its family prepared on the whole corpus)
    corpus : the training Corpus
    client : dask.distributed.Client or None
    n_shards : shards (default: one per worker; without a client, numba's thread count)
    """

    def __init__(self, parts, corpus, client=None, n_shards=None):
        self.client = client
        self.corpus = corpus
        self.token = uuid.uuid4().hex
        if n_shards is None:
            n_shards = len(client.scheduler_info()["workers"]) if client is not None else numba.get_num_threads()
        if int(n_shards) != n_shards or n_shards < 1:
            raise ValueError(f"n_shards must be a positive integer, got {n_shards}")
        offsets = np.asarray(corpus.offsets)
        self.bounds = shard_bounds(offsets, int(n_shards))   # sequence boundaries
        self.token_bounds = offsets[self.bounds]
        self.n_shards = self.bounds.shape[0] - 1
        self.paths = []
        self.folder = None
        self.parts = worker_parts(parts)
        if client is None:
            return
        self.folder = tempfile.mkdtemp(prefix="cvbayes-shards-", dir=os.environ.get("CVBAYES_SHARED_DIR"))
        self._finalizer = weakref.finalize(self, _clean_up, client, self.token, self.folder)
        for s in range(self.n_shards):
            path = os.path.join(self.folder, f"shard-{s:05d}.npz")
            corpus[int(self.bounds[s]):int(self.bounds[s + 1])].save(path)
            self.paths.append(path)
        workers = sorted(client.scheduler_info()["workers"])
        # each shard prefers one worker, so that it is opened once; any other may take it over
        self.homes = [workers[s % len(workers)] for s in range(self.n_shards)]
        self.sent_parts = client.scatter(self.parts, broadcast=True, hash=False)

    def submit(self, function, s, *args):
        """``function(token, path, parts, *args)`` for shard ``s`` on its preferred worker."""
        return self.client.submit(function, self.token, self.paths[s], self.sent_parts, *args, workers=[self.homes[s]],
                                  allow_other_workers=True, pure=False)

    def reduce(self, futures):
        """The sum of the shards' results (futures), added pairwise on the workers."""
        return tree_sum(futures, lambda a, b: self.client.submit(add_up, a, b, pure=False)).result()

    def close(self):
        if self.client is not None:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _clean_up(client, token, folder):
    try:
        client.run(_forget, token)
    except Exception:  # the client or its cluster is gone: nothing left to forget
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _reraise_in_shard(error, first_sequence):
    """A shard's ZeroProbabilityError, with its sequence numbered in the whole corpus."""
    return ZeroProbabilityError(f"in the shard starting at sequence {first_sequence}: {error}")


# ------------------------------------------------------------------------ EM and VB

def _batch_shard(token, path, parts, tables, first_sequence):
    """One shard's E-step under ``tables``: ((start, trans, stats), sum of log Z) (eq. 3.13-3.17)."""
    _limit_threads()
    data = _opened(token, path, parts, "batch", ChainData)
    try:
        return data.expectations(tables.start, tables.trans, tables.emission, tables.emission_log_offset)
    except ZeroProbabilityError as error:
        raise _reraise_in_shard(error, first_sequence) from None


def _random_shard(token, path, parts, seed, first_sequence):
    """The expected counts of the random start (thesis footnote 5) over one shard: every sequence's
    generator is seeded by its index in the whole corpus (``first_sequence`` + its index here), as in
    one process; drawn in blocks of about `START_BLOCK_TOKENS` tokens."""
    _limit_threads()
    corpus = Corpus.load(path, mmap=True)
    offsets = np.asarray(corpus.offsets)
    blocks = shard_bounds(offsets, max(1, -(-int(offsets[-1]) // START_BLOCK_TOKENS)))
    total = None
    for a, b in zip(blocks[:-1], blocks[1:]):
        block = corpus[int(a):int(b)]
        # empty chains before the block number its sequences as in the whole corpus
        padded = np.concatenate([np.zeros(first_sequence + a, dtype=np.int64), block.offsets])
        counts = ChainData(parts, block, padded).random_counts(seed)
        total = counts if total is None else add_up(total, counts)
    return total


class ShardedBatch:
    """The HMM's `BatchChains` with its E-step summed over the shards of a Dask client (EM, VB)."""

    def __init__(self, local, shards):
        self.local = local
        self.shards = shards

    def tables(self, statistics, rule):
        return self.local.tables(statistics, rule)

    def from_params(self, params):
        return self.local.from_params(params)

    def penalty(self, rule, statistics, tables):
        return self.local.penalty(rule, statistics, tables)

    def expectations(self, tables):
        shards = self.shards
        # the tables once to every worker; MAP's parameters stay here (only the penalty reads them)
        sent = shards.client.scatter(tables._replace(params=None), broadcast=True, hash=False)
        futures = [shards.submit(_batch_shard, s, sent, int(shards.bounds[s])) for s in range(shards.n_shards)]
        return shards.reduce(futures)

    def random_counts(self, seed):
        """The random start's expected counts, drawn on the workers: those of one process."""
        shards = self.shards
        futures = [shards.submit(_random_shard, s, int(seed), int(shards.bounds[s])) for s in range(shards.n_shards)]
        return shards.reduce(futures)

    def close(self):
        self.shards.close()


# ------------------------------------------------------------------------ SVI and SCVI

class _Fixed:
    """A global block as a worker sees it during one step: the values sent with the step."""

    def __init__(self, values):
        self._values = values

    def values(self):
        return self._values


class _SentRows:
    """The emission statistics as a worker sees them during one step: the rows of the whole
    minibatch (sorted, the totals row last), of which the shard asks for a subset."""

    def __init__(self, rows, values):
        self._rows = rows
        self._values = values

    def rows(self, rows):
        where = np.searchsorted(self._rows, rows)
        if not np.array_equal(self._rows[where], rows):
            raise RuntimeError("a shard asked for statistics rows the step did not send")
        return self._values[where]


def _chain_positions(structure, ids):
    """Token positions of the chains of units ``ids`` with their buffers, as
    `Minibatches.expectations` lays them out."""
    begin, end, seq_begin, seq_end = structure.units.ranges(ids)
    positions, _ = gather_ranges(np.maximum(seq_begin, begin - structure.buffer),
                                 np.minimum(seq_end, end + structure.buffer))
    return positions


def _minibatch_shard(token, path, parts, settings, ids, rows, stats, start, trans):
    """One shard's part of a minibatch step: `Minibatches.expectations` of its units ``ids`` (its
    own numbering) under the counts sent (eq. 3.98-3.100)."""
    _limit_threads()
    rule, length, buffer, vanilla = settings
    structure = _opened(token, path, parts, ("minibatch", settings),
                        lambda p, corpus: Minibatches(p, corpus, rule, Units(np.asarray(corpus.offsets), length),
                                                      buffer, vanilla))
    structure.counts = {"start": _Fixed(start), "trans": _Fixed(trans), "stats": _SentRows(rows, stats)}
    return structure.expectations(ids)


class ShardedMinibatches(Minibatches):
    """The HMM's `Minibatches` with the minibatch's forward-backward run on the shards that own its
    units (SVI, SCVI).  The counts, the draws and the steps stay here; `minibatch` is inherited."""

    def __init__(self, parts, corpus, rule, units, buffer, vanilla, shards):
        super().__init__(parts, corpus, rule, units, buffer, vanilla)
        if self.guarded:
            raise NotImplementedError("SCVI on guarded subchains keeps boundary beliefs between steps, which is "
                                      "not offered on shards; use whole sequences, vanilla=True, or no client")
        self.shards = shards
        self.settings = (rule, units.length, buffer, vanilla)
        # the first unit of every shard (units of a sequence are numbered consecutively)
        first_unit = units.first_unit if units.length is not None else np.arange(units.n_units + 1)
        self.unit_bounds = first_unit[shards.bounds]

    def expectations(self, ids):
        """`Minibatches.expectations` of the units ``ids``, summed over the shards that own them."""
        rows = self.parts.family.minibatch_layout(self.corpus, _chain_positions(self, ids))[2]
        stats_rows = self.counts["stats"].rows(rows)
        start, trans = self.counts["start"].values(), self.counts["trans"].values()
        cuts = np.searchsorted(ids, self.unit_bounds)
        shards = self.shards
        futures = [shards.submit(_minibatch_shard, s, self.settings, ids[cuts[s]:cuts[s + 1]] - self.unit_bounds[s],
                                 rows, stats_rows, start, trans)
                   for s in range(shards.n_shards) if cuts[s + 1] > cuts[s]]
        parts = shards.client.gather(futures)
        stats = np.zeros((rows.shape[0], self.parts.n_states))
        for part in parts:
            stats[np.searchsorted(rows, part[3])] += part[2]
        total = tree_sum([(p[0], p[1], p[4], p[5], p[6], p[7]) for p in parts])
        start_counts, pairs, log_z, n_tokens, n_pairs, n_chain_tokens = total
        return start_counts, pairs, stats, rows, log_z, n_tokens, n_pairs, n_chain_tokens, parts[0][8]

    def close(self):
        self.shards.close()


# ------------------------------------------------------------------------ the sharded CVI-2

@njit(cache=True, nogil=True)
def _shard_pass(state, order):
    """`subchain_pass` without the GIL, so that shards of one process run on threads at once."""
    return subchain_pass(state, order)


class _ShardState:
    """One shard's CVI-2 state: its emissions, sequence offsets, local statistics (views of the whole
    corpus's in this process) and work rows; a pass copies the frozen counts into its state."""

    def __init__(self, emissions, offsets, marginals, internal, trans_prior, trans_prior_total):
        n_states = marginals.shape[1]
        self.emissions = emissions
        self.offsets = offsets
        self.is_first = np.ones(offsets.shape[0] - 1, dtype=np.bool_)
        self.marginals = marginals
        self.internal = internal
        self.boundary = np.zeros((0, n_states, n_states), dtype=np.float32)
        self.order = np.arange(offsets.shape[0] - 1, dtype=np.int64)
        self.work = subchain_workspace(offsets, n_states)
        self.trans_prior = trans_prior
        self.trans_prior_total = trans_prior_total

    def sweep(self, frozen):
        """One CVI-2 pass over the shard against a copy of ``frozen`` counts (start, trans, stats):
        (the change in the counts, the summed log normalisers, the first bad sequence or -1)."""
        counts = tuple(np.array(block) for block in frozen)
        state = subchain_state(self.emissions, self.trans_prior, self.trans_prior_total, self.offsets, self.is_first,
                               *counts, self.marginals, self.internal, self.boundary, self.work)
        objective, bad = _shard_pass(state, self.order)
        return tuple(after - before for after, before in zip(counts, frozen)), objective, bad


def _sweep_shard(token, s, frozen):
    """A worker's pass over its shard ``s`` of the sharded CVI-2."""
    _limit_threads()
    state = _OPENED.get((token, s, "cvi2"))
    if state is None:
        raise RuntimeError(f"the sharded CVI-2 state of shard {s} was lost with its worker (it lives on one "
                           "worker between passes); fit again")
    return state.sweep(frozen)


def _place_shard(token, s, state):
    _OPENED[(token, s, "cvi2")] = state


class ShardedSweep:
    """The sharded CVI-2 (``algorithm="cvi2-sharded"``) for `schedules.passes`: ``sweep(iteration) ->
    objective`` and ``current()``.

    Starts from CVI-2's random local posteriors (or those under the tables ``start`` of given
    parameters), the same as ``"cvi2"``'s, drawn here for the whole corpus; each shard's part is then
    sent to its worker (or kept as views in this process).
    """

    def __init__(self, parts, data, start, seed, shards):
        self.shards = shards
        self.data = data
        offsets = data.offsets
        marginals, internal = data.local_posteriors(start, seed, keep_pairs=True)
        is_first = np.ones(data.n_chains, dtype=np.bool_)
        no_boundary = np.zeros((0, *internal.shape[1:]), dtype=np.float32)
        self.start_counts, self.trans_counts = unit_totals(offsets, is_first, marginals, internal, no_boundary)
        self.stats = data.token_stats(marginals)
        code, prior, mask, index, features = data.emissions()
        trans_prior, trans_prior_total = parts.transitions.prior()
        states = []
        for s in range(shards.n_shards):
            a, b = int(shards.bounds[s]), int(shards.bounds[s + 1])
            begin, end = int(offsets[a]), int(offsets[b])
            states.append(_ShardState((code, prior, mask, index[begin:end], features[begin:end]),
                                      offsets[a:b + 1] - begin, marginals[begin:end], internal[a:b],
                                      trans_prior, float(trans_prior_total)))
        if shards.client is None:
            self.states = states
            self.threads = ThreadPoolExecutor(max_workers=shards.n_shards)
            return
        self.states = None
        client = shards.client
        for s, state in enumerate(states):
            # copies of the views: a worker keeps its shard's local statistics between passes
            state.emissions = tuple(np.array(part) if isinstance(part, np.ndarray) else part
                                    for part in state.emissions)
            state.marginals, state.internal = np.array(state.marginals), np.array(state.internal)
            client.submit(_place_shard, shards.token, s, state, workers=[shards.homes[s]], pure=False).result()

    def current(self):
        return self.start_counts, self.trans_counts, self.stats

    def sweep(self, iteration):
        frozen = self.current()
        shards = self.shards
        if shards.client is None:
            results = list(self.threads.map(lambda state: state.sweep(frozen), self.states))
        else:
            sent = shards.client.scatter(frozen, broadcast=True, hash=False)
            # another worker may take a shard over only to report that its state is lost
            futures = [shards.client.submit(_sweep_shard, shards.token, s, sent, workers=[shards.homes[s]],
                                            allow_other_workers=True, pure=False) for s in range(shards.n_shards)]
            results = shards.client.gather(futures)
        for s, (_, _, bad) in enumerate(results):
            if bad >= 0:
                self.data.raise_if_bad(int(shards.bounds[s]) + bad)
        change = tree_sum([result[0] for result in results])
        for block, delta in zip(frozen, change):
            block += delta
        return sum(result[1] for result in results)

    def close(self):
        if self.states is not None:
            self.threads.shutdown()
        self.shards.close()


# the algorithms fit(client=...) runs
SHARDED_ALGORITHMS = ("em", "vb", "svi", "scvi", "cvi2-sharded")

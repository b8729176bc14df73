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

The shards, their files, the workers' cache and the timing of every pass are `cvbayes.models.shards`'
(``shard_timings_`` of the fitted model).  A shard of EM, VB, SVI and SCVI holds no state between
passes, so when a worker dies Dask reruns its tasks on another worker, which opens the shard again: the
pass completes with the same result.  The sharded CVI-2's local statistics live on the workers; losing
a worker stops the fit with a clear error.

Dask (``pip install "cvbayes[distributed]"``) is imported only when a client is used.
"""
from __future__ import annotations

import time

import numpy as np

from .hmm_kernels import subchain_pass, subchain_state, subchain_workspace, unit_totals
from .hmm_structures import ChainData, Minibatches, Units, gather_ranges
from . import shards as shared
from .shards import Shards, ShardStates, add_up, limit_threads, numbered_in_corpus, opened, shard_bounds, tree_sum

# The largest block of tokens a worker draws the random start for at once (its (tokens, K) float32
# marginals are temporary): keeps a worker's peak memory that of its shard, not of K times it.
START_BLOCK_TOKENS = 1_000_000


def worker_parts(parts):
    """The HMM's parts as a shard's work needs them (sent to every worker once): the finite HMM's only."""
    if parts.occupancy is not None:
        raise NotImplementedError("fitting an HDP-HMM on shards is not supported; only the HMM is")
    return parts


def hmm_shards(parts, corpus, client=None, n_shards=None, folder=None, identity=None):
    """The corpus's `Shards` for the HMM of ``parts`` (whole sequences)."""
    return Shards(corpus, worker_parts(parts), client, n_shards, folder, identity)


# ------------------------------------------------------------------------ EM and VB

def _batch_shard(token, shard, parts, tables, first_sequence):
    """One shard's E-step under ``tables``: ((start, trans, stats), sum of log Z) (eq. 3.13-3.17)."""
    limit_threads()
    data = opened(token, shard, parts, "batch", ChainData)
    with numbered_in_corpus(first_sequence, "sequence"):
        return data.expectations(tables.start, tables.trans, tables.emission, tables.emission_log_offset)


def _random_shard(token, shard, parts, seed, first_sequence):
    """The expected counts of the random start (thesis footnote 5) over one shard: every sequence's
    generator is seeded by its index in the whole corpus (``first_sequence`` + its index here), as in
    one process; drawn in blocks of about `START_BLOCK_TOKENS` tokens."""
    limit_threads()
    corpus = shard.open()
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


class ShardedBatch(shared.ShardedBatch):
    """The HMM's `BatchChains` with its E-step summed over the shards of a Dask client (EM, VB)."""

    def __init__(self, local, shards):
        # the tables once to every worker a pass; MAP's parameters stay here (only the penalty reads them)
        super().__init__(local, shards, _batch_shard, lambda tables: tables._replace(params=None))

    def from_params(self, params):
        return self.local.from_params(params)

    def random_counts(self, seed):
        """The random start's expected counts, drawn on the workers: those of one process."""
        shards = self.shards
        total = shards.map_reduce(_random_shard, int(seed), [(int(first),) for first in shards.bounds[:-1]])
        shards.end_pass(start=True)
        return total


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


def _minibatch_shard(token, shard, parts, settings, ids, rows, stats, start, trans):
    """One shard's part of a minibatch step: `Minibatches.expectations` of its units ``ids`` (its
    own numbering) under the counts sent (eq. 3.98-3.100)."""
    limit_threads()
    rule, length, buffer, vanilla = settings
    structure = opened(token, shard, parts, ("minibatch", settings),
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
        owners = [s for s in range(shards.n_shards) if cuts[s + 1] > cuts[s]]
        arguments = [(self.settings, ids[cuts[s]:cuts[s + 1]] - self.unit_bounds[s], rows, stats_rows, start, trans)
                     for s in owners]
        parts = shards.map_gather(_minibatch_shard, owners, arguments)
        started = time.perf_counter()
        stats = np.zeros((rows.shape[0], self.parts.n_states))
        for part in parts:
            stats[np.searchsorted(rows, part[3])] += part[2]
        total = tree_sum([(p[0], p[1], p[4], p[5], p[6], p[7]) for p in parts])
        shards.add_reduction(time.perf_counter() - started)
        start_counts, pairs, log_z, n_tokens, n_pairs, n_chain_tokens = total
        return start_counts, pairs, stats, rows, log_z, n_tokens, n_pairs, n_chain_tokens, parts[0][8]

    def after_pass(self):
        super().after_pass()
        self.shards.end_pass()

    def attributes(self):
        return {**super().attributes(), **self.shards.attributes()}

    def close(self):
        self.shards.close()


# ------------------------------------------------------------------------ the sharded CVI-2

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
        objective, bad = subchain_pass(state, self.order)
        return tuple(after - before for after, before in zip(counts, frozen)), objective, bad


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
        if shards.client is not None:
            for state in states:
                # copies of the views: a worker keeps its shard's local statistics between passes
                state.emissions = tuple(np.array(part) if isinstance(part, np.ndarray) else part
                                        for part in state.emissions)
                state.marginals, state.internal = np.array(state.marginals), np.array(state.internal)
        self.states = ShardStates(shards, states, "sharded CVI-2")

    def current(self):
        return self.start_counts, self.trans_counts, self.stats

    def sweep(self, iteration):
        frozen = self.current()
        results = self.states.sweep(frozen)
        for s, (_, _, bad) in enumerate(results):
            if bad >= 0:
                self.data.raise_if_bad(int(self.shards.bounds[s]) + bad)
        return self.states.sum_changes(results, frozen)

    def attributes(self):
        return self.shards.attributes()

    def close(self):
        self.states.close()


# the algorithms fit(client=...) runs
SHARDED_ALGORITHMS = ("em", "vb", "svi", "scvi", "cvi2-sharded")

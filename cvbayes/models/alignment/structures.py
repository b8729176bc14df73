"""An aligner's model bound to one direction's data: what the schedules run on.

The statistics are three count blocks (`Statistics`): the sparse translation rows (one slot per
co-occurring source and target word, models/alignment/index.py), their row totals, and the jump buckets
(HMM only).  The tables of a rule come from `cvbayes.core.rules` (``slot_table`` for the sparse rows,
``dirichlet_table`` for the buckets) and the E-steps from `cvbayes.chains.alignment`.

Every fit runs IBM1, then (model "hmm") the HMM from IBM1's statistics: one run of a schedule whose
passes belong to the two stages in turn (`Stages`).  `AlignmentStructure` is one stage's model for the
batch and stochastic schedules; `StagedBatch`, `StagedSweep`, `StagedSampler` and `StagedMinibatches`
are the fit's structures for `cvbayes.schedules.batch`, ``leave_one_out``, ``gibbs`` and
``stochastic``, each holding ``cells``: the training pairs' per-cell alignment posteriors (float32).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...chains.alignment import hmm_expectations, ibm1_expectations
from ...core.rules import MAP, dirichlet_kl, dirichlet_log_marginal, dirichlet_log_prior, dirichlet_table
from ...core.sampling import seed_numba
from ...core.statistics import DecayingCounts
from ...schedules import Minibatch
from . import collapsed
from . import gibbs as sampler


def check_pair(data, pair, describe):
    """Raise when training pair ``pair`` (-1: none) has no alignment of positive probability."""
    if pair >= 0:
        raise ValueError(f"sentence pair {int(data.pairs[pair])} has no alignment of positive probability "
                         f"under the {describe} tables; use a larger prior")


class Statistics(NamedTuple):
    """Expected counts: per translation slot, per translation row (source word or NULL), per jump bucket."""

    translation: np.ndarray
    rows: np.ndarray
    jumps: np.ndarray


class Tables(NamedTuple):
    """t(e | f) per slot and theta over the jump buckets (None for IBM1)."""

    translation: np.ndarray
    jumps: np.ndarray | None


class AlignmentStructure:
    """IBM1 or the HMM aligner on one direction's `AlignmentData`, with its Dirichlet pseudo-counts ``prior``
    (`priors.Pseudocounts`).

    For `cvbayes.schedules.batch`: ``tables``, ``expectations`` (writing the per-cell posteriors into
    ``cells``) and ``penalty``.  For `cvbayes.schedules.stochastic`: ``n_units`` (sentence pairs) and
    ``minibatch``, on the tables of ``rule`` from the global ``counts`` (a dict of DecayingCounts with the
    blocks "translation", "rows" and, for the HMM, "jumps").
    """

    def __init__(self, data, model, prior, null_prob, max_jump, cells, describe, rule=None, counts=None):
        self.data = data
        self.model = model
        self.prior = prior
        self.null_prob = null_prob
        self.max_jump = max_jump
        self.cells = cells
        self.describe = describe
        self.rule = rule
        self.counts = counts
        self.n_units = data.n_pairs

    def tables(self, statistics, rule):
        """t(e | f) per slot and theta of ``rule`` (eq. 3.18-3.22, 3.49-3.50)."""
        statistics = Statistics(*statistics)  # a checkpoint gives the blocks back as a plain tuple
        translation = self.prior.table(rule, statistics.translation, self.data.slot_row, statistics.rows)
        jumps = dirichlet_table(rule, statistics.jumps, self.prior.jumps) if self.model == "hmm" else None
        return Tables(translation, jumps)

    def _expectations(self, tables, src_offsets, tgt_offsets, cell_offsets, cell_slot, chunk_bounds, cells):
        """The E-step of every pair of a layout: (bucket counts, per chunk the sum of log p(e | f), first bad
        pair)."""
        if self.model == "ibm1":
            log_z, bad = ibm1_expectations(tables.translation, src_offsets, tgt_offsets, cell_offsets, cell_slot,
                                           chunk_bounds, cells)
            return np.zeros(2 * self.max_jump + 1), log_z, bad
        return hmm_expectations(tables.translation, tables.jumps, self.null_prob, self.max_jump, src_offsets,
                                tgt_offsets, cell_offsets, cell_slot, chunk_bounds, cells)

    def expectations(self, tables):
        """E-step over every pair (eq. 3.16-3.17): the expected counts and sum log p(e | f)."""
        data = self.data
        jumps, log_z, bad = self._expectations(tables, data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                               data.cell_slot, data.chunk_bounds, self.cells)
        check_pair(data, bad, self.describe)
        translation = data.slot_totals(self.cells)
        return Statistics(translation, data.row_totals(translation), jumps), log_z.sum()

    def pair_log_likelihoods(self, tables):
        """log p(e | f) of every pair under fixed ``tables``: one E-step with a chunk a pair, its posteriors
        written into ``cells``."""
        data = self.data
        _, log_z, bad = self._expectations(tables, data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                           data.cell_slot, np.arange(data.n_pairs + 1, dtype=np.int64), self.cells)
        check_pair(data, bad, self.describe)
        return log_z

    def penalty(self, rule, statistics, tables):
        """MAP: the log prior of the tables (EM raises the posterior); VB: -KL(q(t, theta) || p(t, theta))
        of the counts the tables came from (the ELBO, eq. 3.11)."""
        data, prior = self.data, self.prior
        statistics = Statistics(*statistics)
        if rule == MAP:
            value = prior.log_prior(tables.translation, data.slot_row, statistics.rows)
            return value + (dirichlet_log_prior(tables.jumps, prior.jumps) if self.model == "hmm" else 0.0)
        value = prior.kl(statistics.translation, data.slot_row, statistics.rows)
        return -(value + (dirichlet_kl(statistics.jumps, prior.jumps) if self.model == "hmm" else 0.0))

    def statistics(self):
        """The global counts of the stochastic schedule as `Statistics`."""
        jumps = self.counts["jumps"].values() if "jumps" in self.counts else np.zeros(2 * self.max_jump + 1)
        return Statistics(self.counts["translation"].values(), self.counts["rows"].values(), jumps)

    def minibatch(self, ids):
        """The E-step of pairs ``ids`` on the tables of the current counts (eq. 3.98-3.100), as updates of the
        touched slots and rows and of every bucket, scaled from the minibatch to the corpus."""
        data = self.data
        batch = data.minibatch(ids)
        translation = self.prior.table(self.rule, self.counts["translation"].rows(batch.slots), batch.slot_row,
                                       self.counts["rows"].rows(batch.rows), batch.slots, batch.rows)
        jumps = (dirichlet_table(self.rule, self.counts["jumps"].values(), self.prior.jumps) if self.model == "hmm"
                 else None)
        posteriors = np.empty(batch.cell_slot.shape[0], dtype=np.float32)
        bucket_counts, log_z, bad = self._expectations(
            Tables(translation, jumps), batch.src_offsets, batch.tgt_offsets, batch.cell_offsets, batch.cell_slot,
            batch.chunk_bounds, posteriors)
        log_z = log_z.sum()
        check_pair(data, ids[bad] if bad >= 0 else -1, self.describe)
        slot_counts = np.bincount(batch.cell_slot, weights=posteriors, minlength=batch.slots.size)
        row_counts = np.bincount(batch.slot_row, weights=slot_counts, minlength=batch.rows.size)
        scale = self.n_units / ids.size
        updates = [("translation", batch.slots, slot_counts, scale), ("rows", batch.rows, row_counts, scale)]
        if self.model == "hmm":
            updates.append(("jumps", slice(None), bucket_counts, scale))
        return Minibatch(updates, log_z, int(batch.tgt_offsets[-1]))


# ------------------------------------------------------------------ the fit's stages

class Stages:
    """The passes of a fit of ``stages`` ((model, passes), ...): IBM1's, then the HMM's."""

    def __init__(self, stages):
        self.names = [name for name, _ in stages]
        self.ends = np.cumsum([n for _, n in stages])

    def index(self, iteration):
        """The stage pass ``iteration`` (0-based, over the whole fit) belongs to."""
        return int(np.searchsorted(self.ends, iteration, side="right"))

    def stage(self, iteration):
        """(the pass's number in its stage, the stage's model): the history's labels."""
        i = self.index(iteration)
        return int(iteration - (self.ends[i - 1] if i else 0)), self.names[i]

    def first(self, name):
        """The first pass of stage ``name``."""
        i = self.names.index(name)
        return int(self.ends[i - 1]) if i else 0

    @property
    def final(self):
        return self.names[-1]


def _models(data, stages, prior, null_prob, max_jump, cells, describe, rule=None, counts=None):
    return {name: AlignmentStructure(data, name, prior, null_prob, max_jump, cells, describe, rule, counts)
            for name in stages.names}


class StagedBatch:
    """EM and VB for `cvbayes.schedules.batch`: E-steps in parallel on fixed tables, then the tables from
    the counts; the HMM takes over IBM1's translation counts (IBM1 counts no jumps)."""

    def __init__(self, data, stages, prior, null_prob, max_jump, describe, checkpoint):
        self.stages = stages
        self.cells = np.empty(data.cell_slot.shape[0], dtype=np.float32)
        self.models = _models(data, stages, prior, null_prob, max_jump, self.cells, describe)
        self.passes = 0
        self.start = Statistics(np.zeros(data.n_slots), np.zeros(data.n_rows), np.zeros(2 * max_jump + 1))
        checkpoint.track("stage passes", lambda: self.passes, lambda passes: setattr(self, "passes", passes))

    def stage(self, iteration):
        return self.stages.stage(iteration)

    def _model(self):
        return self.models[self.stages.names[self.stages.index(self.passes)]]

    def tables(self, statistics, rule):
        return self._model().tables(statistics, rule)

    def penalty(self, rule, statistics, tables):
        return self._model().penalty(rule, statistics, tables)

    def expectations(self, tables):
        result = self._model().expectations(tables)
        self.passes += 1
        return result

    def attributes(self):
        return {"_cells": self.cells}


class StagedSweep:
    """CVI-1 (``unit`` "token") and CVI-2 ("pair") for `cvbayes.schedules.leave_one_out`, from uniform
    IBM1 posteriors; local statistics in float32.  The HMM's CVI-1 keeps 2I state marginals a token,
    started from IBM1's cells at its first pass and collapsed back into cells after its last."""

    def __init__(self, data, stages, unit, prior, null_prob, max_jump, describe, checkpoint):
        self.data, self.stages, self.unit, self.describe = data, stages, unit, describe
        self.prior, self.null_prob, self.max_jump = prior, null_prob, max_jump
        n_src = np.diff(data.src_offsets)
        self.cells = np.repeat((1.0 / (n_src + 1)).astype(np.float32), (n_src + 1) * np.diff(data.tgt_offsets))
        self.counts = data.slot_totals(self.cells)
        self.totals = data.row_totals(self.counts)
        self.token_pair = data.layout()[3] if unit == "token" else None
        self.order = np.arange(data.n_target_tokens if unit == "token" else data.n_pairs)
        n_buckets = 2 * max_jump + 1
        self.jump_counts = np.zeros(n_buckets)
        arrays = {"cells": self.cells, "counts": self.counts, "totals": self.totals, "jumps": self.jump_counts}
        hmm = "hmm" in stages.names
        if unit == "pair":
            self.jump_local = np.zeros((data.n_pairs if hmm else 0, n_buckets), dtype=np.float32)
            arrays["jump_local"] = self.jump_local
        else:
            self.offsets = collapsed.state_offsets(data)
            self.states = np.empty(self.offsets[-1] if hmm else 0, dtype=np.float32)
            self.into = np.empty((data.n_target_tokens if hmm else 0, n_buckets), dtype=np.float32)
            arrays.update(states=self.states, into=self.into)
        checkpoint.track_arrays("cvi", arrays)
        self.states_of = {}   # model -> (numba state, pass)

    def stage(self, iteration):
        return self.stages.stage(iteration)

    def _state(self, name, iteration):
        """The numba state of stage ``name``, built at its first pass (or its first after a resume)."""
        if name in self.states_of:
            return self.states_of[name]
        data, prior = self.data, self.prior
        if name == "ibm1":
            built = (collapsed.ibm1_state(data, prior, self.counts, self.totals, self.cells),
                     collapsed.ibm1_token_pass if self.unit == "token" else collapsed.ibm1_pair_pass)
        elif self.unit == "pair":
            built = (collapsed.hmm_pair_state(data, prior, self.null_prob, self.max_jump, self.counts, self.totals,
                                              self.cells, self.jump_counts, self.jump_local),
                     collapsed.hmm_pair_pass)
        else:
            if iteration == self.stages.first("hmm"):   # the HMM's start from IBM1's cells
                self.counts[:] = 0.0
                self.totals[:] = 0.0
                self.jump_counts[:] = collapsed.hmm_cvi1_init(
                    self.max_jump, data.src_offsets, data.tgt_offsets, data.cell_offsets, self.offsets,
                    data.cell_slot, data.slot_row, self.cells, self.states, self.into, self.counts, self.totals)
            built = (collapsed.hmm_token_state(data, prior, self.null_prob, self.max_jump, self.counts, self.totals,
                                               self.offsets, self.states, self.jump_counts, self.into),
                     collapsed.hmm_token_pass)
        self.states_of[name] = built
        return built

    def sweep(self, iteration):
        name = self.stages.names[self.stages.index(iteration)]
        state, one_pass = self._state(name, iteration)
        objective, bad = one_pass(state, self.order)
        if bad >= 0:
            check_pair(self.data, bad if self.token_pair is None else self.token_pair[bad], self.describe)
        last = self.stages.ends[-1] - 1
        if name == "hmm" and self.unit == "token" and iteration == last:
            collapsed.collapse_state_posteriors(self.data.src_offsets, self.data.tgt_offsets, self.data.cell_offsets,
                                                self.offsets, self.states, self.cells)
        return objective

    def current(self):
        return Statistics(self.counts, self.totals, self.jump_counts)

    def attributes(self):
        return {"_cells": self.cells}


class StagedSampler:
    """Collapsed Gibbs sampling for `cvbayes.schedules.gibbs`: IBM1 sweeps from a uniform random alignment
    (``rng``), then HMM sweeps from IBM1's last sample; the links come from the conditional distributions
    averaged over the last half of the final model's sweeps (the Rao-Blackwell sums)."""

    def __init__(self, data, stages, prior, null_prob, max_jump, describe, rng, checkpoint):
        self.data, self.stages, self.describe = data, stages, describe
        self.prior, self.null_prob, self.max_jump = prior, null_prob, max_jump
        n_src = np.diff(data.src_offsets)
        n_tgt = np.diff(data.tgt_offsets)
        seed_numba(int(rng.integers(2**31)))
        self.align = rng.integers(0, np.repeat(n_src, n_tgt) + 1).astype(np.int32)
        self.rb = np.empty(data.cell_slot.shape[0], dtype=np.float32)
        sampler.sample_cells(data.cell_offsets, data.src_offsets, data.tgt_offsets, self.align, self.rb)
        self.counts = data.slot_totals(self.rb)
        self.totals = data.row_totals(self.counts)
        self.rb[:] = 0.0
        self.accumulate = np.zeros(1, dtype=np.bool_)
        self.kept = np.zeros(1, dtype=np.int64)     # the sweeps summed into rb
        self.order = np.arange(data.n_pairs)
        self.uniform_alignment = float((n_tgt * np.log(n_src + 1.0)).sum())
        self.jump_counts = np.zeros(2 * max_jump + 1)
        self.bucket = np.empty(data.n_target_tokens, dtype=np.int32)
        checkpoint.track_arrays("cgs", {"align": self.align, "rb": self.rb, "counts": self.counts,
                                        "totals": self.totals, "jumps": self.jump_counts, "bucket": self.bucket,
                                        "kept": self.kept})
        self.states_of = {}

    def stage(self, iteration):
        return self.stages.stage(iteration)

    def _state(self, name, iteration):
        if name not in self.states_of:
            data = self.data
            if name == "ibm1":
                state = sampler.ibm1_gibbs_state(data, self.prior, self.counts, self.totals, self.align, self.rb,
                                                 self.accumulate)
            else:
                if iteration == self.stages.first("hmm"):   # IBM1's last sample gives the buckets
                    self.jump_counts[:] = 0.0
                    sampler.hmm_cgs_init(self.max_jump, data.src_offsets, data.tgt_offsets, self.align, self.bucket,
                                         self.jump_counts)
                state = sampler.hmm_gibbs_state(data, self.prior, self.null_prob, self.max_jump, self.counts,
                                                self.totals, self.align, self.rb, self.accumulate, self.jump_counts,
                                                self.bucket)
            self.states_of[name] = state
        return self.states_of[name]

    def sweep(self, iteration):
        data = self.data
        local, name = self.stages.stage(iteration)
        # the final model's last half: local + (the passes left) is its number of passes
        final = name == self.stages.final
        self.accumulate[0] = final and local >= (local + self.stages.ends[-1] - iteration) // 2
        self.kept[0] += self.accumulate[0]
        state = self._state(name, iteration)
        if name == "ibm1":
            check_pair(data, sampler.ibm1_gibbs_pass(state, self.order, 1.0), self.describe)
            alignment = -self.uniform_alignment
        else:
            check_pair(data, sampler.hmm_gibbs_pass(state, self.order, 1.0), self.describe)
            alignment = (dirichlet_log_marginal(self.jump_counts, self.prior.jumps)
                         + sampler.hmm_alignment_log_prob(self.null_prob, self.max_jump, data.src_offsets,
                                                          data.tgt_offsets, self.align, self.bucket))
        return self.prior.log_marginal(self.counts, data.slot_row, self.totals) + alignment

    def current(self):
        return Statistics(self.counts, self.totals, self.jump_counts)

    def attributes(self):
        return {"_cells": self.rb / np.float32(self.kept[0])}


class StagedMinibatches:
    """SVI and SCVI for `cvbayes.schedules.stochastic` from zero counts: the HMM continues IBM1's counts
    and step count, with its jump buckets from zero.  The links come from one E-step on the final
    tables."""

    def __init__(self, data, stages, rule, prior, null_prob, max_jump, describe, checkpoint):
        self.stages, self.rule = stages, rule
        self.cells = np.empty(data.cell_slot.shape[0], dtype=np.float32)
        # the jump block stays zero (and undecayed) until the HMM's first step
        self.counts = {"translation": DecayingCounts(np.zeros(data.n_slots)),
                       "rows": DecayingCounts(np.zeros(data.n_rows)),
                       "jumps": DecayingCounts(np.zeros(2 * max_jump + 1))}
        self.models = _models(data, stages, prior, null_prob, max_jump, self.cells, describe, rule, self.counts)
        self.n_units = data.n_pairs
        self.passes = 0
        checkpoint.track("stage passes", lambda: self.passes, lambda passes: setattr(self, "passes", passes))

    def stage(self, iteration):
        return self.stages.stage(iteration)

    def _model(self):
        return self.models[self.stages.names[self.stages.index(self.passes)]]

    def minibatch(self, ids):
        return self._model().minibatch(ids)

    def after_pass(self):
        self.passes += 1

    def current(self):
        return self.models[self.stages.final].statistics()

    def attributes(self):
        final = self.models[self.stages.final]
        final.expectations(final.tables(final.statistics(), self.rule))
        return {"_cells": self.cells}

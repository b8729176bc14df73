"""An aligner's model bound to one direction's data: what the batch and stochastic schedules run on.

The statistics are three count blocks (`Statistics`): the sparse translation rows (one slot per
co-occurring source and target word, models/alignment/index.py), their row totals, and the jump buckets
(HMM only).  The tables of a rule come from `cvbayes.core.rules` (``slot_table`` for the sparse rows,
``dirichlet_table`` for the buckets) and the E-steps from `cvbayes.chains.alignment`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...chains.alignment import hmm_expectations, ibm1_expectations
from ...core.rules import MAP, dirichlet_kl, dirichlet_log_prior, dirichlet_table, slot_kl, slot_log_prior, slot_table
from ...schedules import Minibatch


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
    """IBM1 or the HMM aligner on one direction's `AlignmentData`, with its Dirichlet ``prior``.

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
        translation = slot_table(rule, statistics.translation, self.data.slot_row, statistics.rows, self.prior,
                                 self.data.n_target_types)
        jumps = dirichlet_table(rule, statistics.jumps, self.prior) if self.model == "hmm" else None
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
        data, width = self.data, self.data.n_target_types
        if rule == MAP:
            value = slot_log_prior(tables.translation, data.slot_row, statistics.rows, self.prior, width)
            return value + (dirichlet_log_prior(tables.jumps, self.prior) if self.model == "hmm" else 0.0)
        value = slot_kl(statistics.translation, data.slot_row, statistics.rows, self.prior, width)
        return -(value + (dirichlet_kl(statistics.jumps, self.prior) if self.model == "hmm" else 0.0))

    def statistics(self):
        """The global counts of the stochastic schedule as `Statistics`."""
        jumps = self.counts["jumps"].values() if "jumps" in self.counts else np.zeros(2 * self.max_jump + 1)
        return Statistics(self.counts["translation"].values(), self.counts["rows"].values(), jumps)

    def minibatch(self, ids):
        """The E-step of pairs ``ids`` on the tables of the current counts (eq. 3.98-3.100), as updates of the
        touched slots and rows and of every bucket, scaled from the minibatch to the corpus."""
        data = self.data
        batch = data.minibatch(ids)
        translation = slot_table(self.rule, self.counts["translation"].rows(batch.slots), batch.slot_row,
                                 self.counts["rows"].rows(batch.rows), self.prior, data.n_target_types)
        jumps = dirichlet_table(self.rule, self.counts["jumps"].values(), self.prior) if self.model == "hmm" else None
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

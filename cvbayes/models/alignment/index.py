"""The co-occurrence index: sparse translation tables over the pairs that occur.

A dense (source types x target types) table does not fit for real corpora
(12k x 28k doubles is 2.7 GB for the Bible), yet t(e | f) is only ever
needed where f and e share a sentence pair.  So every table is a 1-D array
over *slots*, one slot per co-occurring (source word, target word) pair,
sorted by (f, e), with per-source-word totals beside it.

Layout of one direction's training data (`AlignmentData`):

* ``src_ids``/``src_offsets`` and ``tgt_ids``/``tgt_offsets``: the sentences
  as flat int32 ids with int64 CSR offsets;
* *cells*: for sentence pair s, target position j and source position
  i in 0..I (i = I is NULL) the cell ``cell_offsets[s] + j (I + 1) + i``, so a
  target token's I + 1 candidates are contiguous; ``cell_slot`` maps each
  cell to its slot;
* ``slot_row``: the source word of each slot, NULL being row
  ``n_source_types``.

Memory is O(number of cells) = O(sum_s (I_s + 1) J_s): 4 bytes a cell for the
slot ids, plus 4 for every per-cell statistic an algorithm stores.  Building
the index takes 8 more bytes a cell while it runs (the packed sort keys; 16
in the argsort fallback, when a key and a cell position do not fit in one
int64), freed before it returns; summing cells into slots takes none.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit

from ...core.units import equal_token_chunks
from .corpus import ParallelCorpus


@dataclass
class AlignmentData:
    """One direction's training arrays; see the module notes."""

    pairs: np.ndarray          # (n,) corpus index of each training pair
    src_ids: np.ndarray        # int32
    src_offsets: np.ndarray    # int64 (n + 1,)
    tgt_ids: np.ndarray
    tgt_offsets: np.ndarray
    cell_offsets: np.ndarray   # int64 (n + 1,)
    cell_slot: np.ndarray      # int32 (n_cells,)
    slot_row: np.ndarray       # int32 (n_slots,)
    n_source_types: int
    n_target_types: int
    chunk_bounds: np.ndarray   # int64, sentence ranges of equal work for the parallel E-steps
    # scratch of `minibatch`: a local number per slot and row, -1 between calls
    _slot_number: np.ndarray | None = field(default=None, repr=False)
    _row_number: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_pairs(self) -> int:
        return self.pairs.shape[0]

    @property
    def n_slots(self) -> int:
        return self.slot_row.shape[0]

    @property
    def n_rows(self) -> int:
        """Source words plus NULL."""
        return self.n_source_types + 1

    @property
    def n_target_tokens(self) -> int:
        return int(self.tgt_offsets[-1])

    @property
    def longest_source(self) -> int:
        return int(np.diff(self.src_offsets).max(initial=1))

    @property
    def longest_target(self) -> int:
        return int(np.diff(self.tgt_offsets).max(initial=1))

    def layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What every collapsed unit and Gibbs site reads: (src_offsets, tgt_offsets, cell_offsets,
        token_pair), ``token_pair[t]`` the pair of target token t."""
        token_pair = np.repeat(np.arange(self.n_pairs), np.diff(self.tgt_offsets))
        return self.src_offsets, self.tgt_offsets, self.cell_offsets, token_pair

    def row_totals(self, slot_counts: np.ndarray) -> np.ndarray:
        """Per-source-word totals C_f. of a slot table."""
        return np.bincount(self.slot_row, weights=slot_counts, minlength=self.n_rows)

    def slot_totals(self, cell_values: np.ndarray) -> np.ndarray:
        """Sum per-cell values (posteriors, sample indicators) into slots."""
        return _slot_totals(self.cell_slot, cell_values, self.n_slots)

    def minibatch(self, ids: np.ndarray) -> Minibatch:
        """Pairs ``ids`` (repeats allowed) laid out as a corpus of their own, for the E-steps of
        `cvbayes.chains.alignment` on the stochastic schedule's minibatches; see `Minibatch`."""
        layout = []
        for offsets in (self.src_offsets, self.tgt_offsets, self.cell_offsets):
            local = np.zeros(ids.size + 1, dtype=np.int64)
            np.cumsum(offsets[ids + 1] - offsets[ids], out=local[1:])
            layout.append(local)
        if self._slot_number is None:
            self._slot_number = np.full(self.n_slots, -1, dtype=np.int32)
            self._row_number = np.full(self.n_rows, -1, dtype=np.int32)
        cell_slot = np.empty(layout[2][-1], dtype=np.int32)
        slots, slot_row, rows = _number_minibatch(ids, self.cell_offsets, self.cell_slot, self.slot_row,
                                                  self._slot_number, self._row_number, cell_slot)
        return Minibatch(*layout, cell_slot, slots, slot_row, rows, cell_chunks(layout[1], layout[2]))


def cell_chunks(tgt_offsets, cell_offsets):
    """Thread chunks of pairs cut at equal cell counts, a cell costing about 4 (I + 1) steps (the HMM
    aligner's forward, backward and pair sums over the previous source position; IBM Model 1 does
    less)."""
    return equal_token_chunks(cell_offsets, 4 * cell_offsets[-1] / max(tgt_offsets[-1], 1))


class Minibatch(NamedTuple):
    """Some pairs of an `AlignmentData` as a corpus of their own: their offsets and cells, each cell's local
    slot (``cell_slot``), the local slots' global ids (``slots``) and local rows (``slot_row``), the local
    rows' global ids (``rows``), and the chunks of the parallel E-steps."""

    src_offsets: np.ndarray
    tgt_offsets: np.ndarray
    cell_offsets: np.ndarray
    cell_slot: np.ndarray
    slots: np.ndarray
    slot_row: np.ndarray
    rows: np.ndarray
    chunk_bounds: np.ndarray


@njit(cache=True)
def _number_minibatch(ids, cell_offsets, cell_slot, slot_row, slot_number, row_number, local_cell_slot):
    """Number the slots of the cells of pairs ``ids`` and their rows in order of first appearance:
    fills local_cell_slot and returns (slots, local slot_row, rows).  ``slot_number`` and ``row_number``
    (global, -1 everywhere) hold the numbers meanwhile and are -1 again on return."""
    slots = np.empty(local_cell_slot.shape[0], dtype=np.int64)
    n_slots = 0
    c = 0
    for s in ids:
        for cell in range(cell_offsets[s], cell_offsets[s + 1]):
            slot = cell_slot[cell]
            if slot_number[slot] < 0:
                slot_number[slot] = n_slots
                slots[n_slots] = slot
                n_slots += 1
            local_cell_slot[c] = slot_number[slot]
            c += 1
    local_slot_row = np.empty(n_slots, dtype=np.int64)
    rows = np.empty(n_slots, dtype=np.int64)
    n_rows = 0
    for k in range(n_slots):
        row = slot_row[slots[k]]
        if row_number[row] < 0:
            row_number[row] = n_rows
            rows[n_rows] = row
            n_rows += 1
        local_slot_row[k] = row_number[row]
        slot_number[slots[k]] = -1
    for k in range(n_rows):
        row_number[rows[k]] = -1
    return slots[:n_slots], local_slot_row, rows[:n_rows]


@njit(cache=True)
def _slot_totals(cell_slot, cell_values, n_slots):
    # np.bincount would first copy float32 values to a float64 array; same sums, same order
    totals = np.zeros(n_slots)
    for c in range(cell_slot.shape[0]):
        totals[cell_slot[c]] += cell_values[c]
    return totals


def _flatten(sentences: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([s.size for s in sentences], out=offsets[1:])
    ids = np.concatenate(sentences).astype(np.int32) if sentences else np.zeros(0, np.int32)
    return ids, offsets


@njit(cache=True)
def _pack_cells(src_ids, src_offsets, tgt_ids, tgt_offsets, cell_offsets, null_row, n_target_types, index_bits,
                packed):
    """packed[cell] = key << index_bits | cell, key = f * n_target_types + e (f = NULL's row for a token's last cell).

    With index_bits = 0 that is the bare key.
    """
    mask = (np.int64(1) << index_bits) - 1
    for s in range(src_offsets.shape[0] - 1):
        s0 = src_offsets[s]
        n_src = src_offsets[s + 1] - s0
        c = cell_offsets[s]
        for t in range(tgt_offsets[s], tgt_offsets[s + 1]):
            e = np.int64(tgt_ids[t])
            for i in range(n_src):
                packed[c] = (np.int64(src_ids[s0 + i]) * n_target_types + e) << index_bits | (c & mask)
                c += 1
            packed[c] = (np.int64(null_row) * n_target_types + e) << index_bits | (c & mask)
            c += 1


@njit(cache=True)
def _number_packed(packed, index_bits, cell_slot):
    """cell_slot from the sorted packed values; the distinct keys overwrite packed[:n_slots]. Returns n_slots."""
    mask = (np.int64(1) << index_bits) - 1
    slot, previous = -1, np.int64(-1)
    for k in range(packed.shape[0]):
        value = packed[k]
        key = value >> index_bits
        if key != previous:
            slot += 1
            previous = key
        cell_slot[value & mask] = slot
        packed[slot] = key  # slot <= k: only entries already read
    return slot + 1


@njit(cache=True)
def _number_sorted(keys, order, cell_slot):
    """As `_number_packed` for keys and their argsort; the distinct keys overwrite order[:n_slots]."""
    slot, previous = -1, np.int64(-1)
    for k in range(order.shape[0]):
        cell = order[k]
        key = keys[cell]
        if key != previous:
            slot += 1
            previous = key
        cell_slot[cell] = slot
        order[slot] = key
    return slot + 1


def _index_bits(n_cells: int, largest_key: int) -> int:
    """Bits for a cell position beside the key in an int64, or 0 when both do not fit in 63 bits."""
    index_bits = max(int(n_cells - 1).bit_length(), 1)
    return index_bits if int(largest_key).bit_length() + index_bits <= 63 else 0


def _slots(packed: np.ndarray, index_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct keys and, per cell, its key's index among them; overwrites ``packed``.

    One in-place sort of the packed (key, position) values (the whole index
    of the Bible's 22M cells: about 1 s); np.unique's hashing and
    searchsorted on unsorted keys are 10-20 times slower at that size.
    ``index_bits`` = 0 means bare keys, sorted through an argsort (8 more
    bytes a cell).
    """
    cell_slot = np.empty(packed.size, dtype=np.int32)
    if index_bits:
        packed.sort()
        n_slots = _number_packed(packed, index_bits, cell_slot)
        return packed[:n_slots].copy(), cell_slot
    order = np.argsort(packed)
    n_slots = _number_sorted(packed, order, cell_slot)
    return order[:n_slots].copy(), cell_slot


def build_index(corpus: ParallelCorpus) -> AlignmentData:
    """Index a corpus for aligning its target words to its source words.

    Pairs with an empty side carry no alignment and are left out (they get
    no links); ``pairs`` maps training pairs back to corpus indices.
    """
    keep = np.array([s.size > 0 and t.size > 0 for s, t in zip(corpus.source, corpus.target)], dtype=bool)
    pairs = np.flatnonzero(keep)
    src_ids, src_offsets = _flatten([corpus.source[k] for k in pairs])
    tgt_ids, tgt_offsets = _flatten([corpus.target[k] for k in pairs])
    n_src = np.diff(src_offsets)
    cell_offsets = np.zeros(pairs.size + 1, dtype=np.int64)
    np.cumsum((n_src + 1) * np.diff(tgt_offsets), out=cell_offsets[1:])
    n_source_types = len(corpus.source_vocabulary)
    n_target_types = len(corpus.target_vocabulary)
    n_cells = int(cell_offsets[-1])
    index_bits = _index_bits(n_cells, (n_source_types + 1) * n_target_types - 1)
    packed = np.empty(n_cells, dtype=np.int64)
    _pack_cells(src_ids, src_offsets, tgt_ids, tgt_offsets, cell_offsets, n_source_types, n_target_types,
                index_bits, packed)
    slot_keys, cell_slot = _slots(packed, index_bits)
    del packed
    slot_row = (slot_keys // n_target_types).astype(np.int32)
    return AlignmentData(pairs, src_ids, src_offsets, tgt_ids, tgt_offsets, cell_offsets, cell_slot, slot_row,
                         n_source_types, n_target_types, cell_chunks(tgt_offsets, cell_offsets))

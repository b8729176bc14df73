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

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..inference.sweeps import equal_token_chunks
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

    def row_totals(self, slot_counts: np.ndarray) -> np.ndarray:
        """Per-source-word totals C_f. of a slot table."""
        return np.bincount(self.slot_row, weights=slot_counts, minlength=self.n_rows)

    def slot_totals(self, cell_values: np.ndarray) -> np.ndarray:
        """Sum per-cell values (posteriors, sample indicators) into slots."""
        return _slot_totals(self.cell_slot, cell_values, self.n_slots)


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
                         n_source_types, n_target_types, equal_token_chunks(cell_offsets))

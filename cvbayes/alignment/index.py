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
slot ids, plus 4 for every per-cell statistic an algorithm stores.
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
        return np.bincount(self.cell_slot, weights=cell_values, minlength=self.n_slots)


def _flatten(sentences: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([s.size for s in sentences], out=offsets[1:])
    ids = np.concatenate(sentences).astype(np.int32) if sentences else np.zeros(0, np.int32)
    return ids, offsets


@njit(cache=True)
def _cell_keys(src_ids, src_offsets, tgt_ids, tgt_offsets, cell_offsets, null_row, n_target_types, keys):
    """keys[cell] = f * n_target_types + e, f = NULL's row for the last cell of a token."""
    for s in range(src_offsets.shape[0] - 1):
        s0 = src_offsets[s]
        n_src = src_offsets[s + 1] - s0
        c = cell_offsets[s]
        for t in range(tgt_offsets[s], tgt_offsets[s + 1]):
            e = np.int64(tgt_ids[t])
            for i in range(n_src):
                keys[c] = np.int64(src_ids[s0 + i]) * n_target_types + e
                c += 1
            keys[c] = np.int64(null_row) * n_target_types + e
            c += 1


def _slots(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct keys and, per key, its index among them.

    One in-place sort of (key, position) packed into an int64 when both fit
    in 63 bits (25M cells of the Bible: about 3 s); np.unique's hashing and
    searchsorted on unsorted keys are 10-20 times slower at that size.
    """
    n = keys.size
    if n == 0:
        return keys, np.zeros(0, dtype=np.int32)
    index_bits = max(int(n - 1).bit_length(), 1)
    if int(keys.max()).bit_length() + index_bits <= 63:
        packed = keys << index_bits
        packed |= np.arange(n, dtype=np.int64)
        packed.sort()
        order = packed & ((1 << index_bits) - 1)
        packed >>= index_bits
        sorted_keys = packed
    else:
        order = np.argsort(keys)
        sorted_keys = keys[order]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    cell_slot = np.empty(n, dtype=np.int32)
    cell_slot[order] = np.cumsum(first, dtype=np.int32) - 1
    return sorted_keys[first], cell_slot


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
    keys = np.empty(cell_offsets[-1], dtype=np.int64)
    _cell_keys(src_ids, src_offsets, tgt_ids, tgt_offsets, cell_offsets, n_source_types, n_target_types, keys)
    slot_keys, cell_slot = _slots(keys)
    del keys
    slot_row = (slot_keys // n_target_types).astype(np.int32)
    return AlignmentData(pairs, src_ids, src_offsets, tgt_ids, tgt_offsets, cell_offsets, cell_slot, slot_row,
                         n_source_types, n_target_types, equal_token_chunks(cell_offsets))

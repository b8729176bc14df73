"""The co-occurrence index against a plain NumPy reference (np.unique over every cell's (f, e) key)."""
import numpy as np
import pytest

from cvbayes.models.alignment import ParallelCorpus, index
from cvbayes.models.alignment.index import build_index


def random_corpus(rng, n_pairs=60, n_source=9, n_target=7):
    """Zipf-like words on both sides, some pairs with an empty side."""
    def sentence(prefix, n_types):
        length = rng.integers(0, 6)
        return [f"{prefix}{min(int(rng.zipf(1.5)), n_types)}" for _ in range(length)]
    return ParallelCorpus.from_tokens([sentence("f", n_source) for _ in range(n_pairs)],
                                      [sentence("e", n_target) for _ in range(n_pairs)])


def reference_index(corpus):
    """Per cell (pair s, target j, source i with i = I being NULL) its key f * V_e + e, then np.unique."""
    null, n_target = len(corpus.source_vocabulary), len(corpus.target_vocabulary)
    keys = [f * n_target + e
            for source, target in zip(corpus.source, corpus.target) if source.size and target.size
            for e in target.tolist()
            for f in source.tolist() + [null]]
    distinct, inverse = np.unique(np.array(keys, dtype=np.int64), return_inverse=True)
    return inverse, distinct // n_target


@pytest.mark.parametrize("packed", [True, False], ids=["packed-sort", "argsort-fallback"])
def test_build_index_equals_np_unique(monkeypatch, packed):
    if not packed:
        monkeypatch.setattr(index, "_index_bits", lambda n_cells, largest_key: 0)
    corpus = random_corpus(np.random.default_rng(3))
    data = build_index(corpus)
    cell_slot, slot_row = reference_index(corpus)
    assert data.cell_slot.dtype == np.int32 and data.slot_row.dtype == np.int32
    np.testing.assert_array_equal(data.cell_slot, cell_slot)
    np.testing.assert_array_equal(data.slot_row, slot_row)
    assert data.slot_row.max() == data.n_source_types  # the NULL row is there
    assert np.flatnonzero([s.size and t.size for s, t in zip(corpus.source, corpus.target)]).tolist() \
        == data.pairs.tolist()


def test_index_bits_falls_back_when_key_and_cell_overflow_63_bits():
    assert index._index_bits(2**23, 2**39 - 1) == 23
    assert index._index_bits(2**23, 2**40 - 1) == 23
    assert index._index_bits(2**23, 2**40) == 0
    assert index._index_bits(1, 5) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slot_totals_equal_bincount(dtype):
    data = build_index(random_corpus(np.random.default_rng(4)))
    values = np.random.default_rng(5).random(data.cell_slot.size).astype(dtype)
    totals = data.slot_totals(values)
    assert totals.dtype == np.float64
    np.testing.assert_array_equal(totals, np.bincount(data.cell_slot, weights=values, minlength=data.n_slots))


def test_a_minibatch_is_laid_out_as_a_corpus_of_its_own():
    data = build_index(random_corpus(np.random.default_rng(6)))
    ids = np.array([4, 0, 4, 7, data.n_pairs - 1])  # a pair may come twice (sampling with replacement)
    for _ in range(2):  # the scratch numbering is reset between calls
        batch = data.minibatch(ids)
        cells = np.concatenate([np.arange(data.cell_offsets[s], data.cell_offsets[s + 1]) for s in ids])
        np.testing.assert_array_equal(batch.slots[batch.cell_slot], data.cell_slot[cells])
        np.testing.assert_array_equal(batch.rows[batch.slot_row], data.slot_row[batch.slots])
        assert np.unique(batch.slots).size == batch.slots.size and np.unique(batch.rows).size == batch.rows.size
        for local, offsets in ((batch.src_offsets, data.src_offsets), (batch.tgt_offsets, data.tgt_offsets),
                               (batch.cell_offsets, data.cell_offsets)):
            np.testing.assert_array_equal(np.diff(local), (offsets[ids + 1] - offsets[ids]))
        assert batch.chunk_bounds[0] == 0 and batch.chunk_bounds[-1] == ids.size
        assert np.all(data._slot_number == -1) and np.all(data._row_number == -1)

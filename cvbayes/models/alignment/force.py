"""Aligning new text with a translation table learned before (fast_align's ``-f``, ``--force_align``).

``cvbayes align -p FILE`` writes a direction's final table t(e | f) as fast_align does (``source<TAB>
target<TAB>log t``, NULL written ``<eps>``).  `force_align` reads such a table back and aligns a corpus
without learning: each target word links to the source word, or NULL, of the highest t(e_j | f_i)
(IBM Model 1's alignment rule, every position equally likely a priori; thesis eq. 3.78 with the table
fixed), which is what fast_align's ``-f`` does without ``-d``.  A word pair the table lacks gets
probability `FLOOR`, as fast_align's ``safe_prob``.  The table holds no jump distribution, so the HMM
aligner's preference for small jumps is not used here.
"""
from __future__ import annotations

import numpy as np

from ...data.errors import CorpusFormatError, read_text_file
from .corpus import ParallelCorpus
from .index import build_index
from .model import best_links

NULL_WORD = "<eps>"   # fast_align's name for NULL in its -p tables
FLOOR = 1e-9          # t(e | f) of a word pair the table lacks, as fast_align's safe_prob


def read_translation_table(path) -> tuple[list, list, np.ndarray]:
    """(source words, target words, log t) of a table file; NULL's source word is None.

    Raises
    ------
    CorpusFormatError
        Naming the file and line, for a line that is not three tab-separated fields ending in a number.
    """
    sources, targets, values = [], [], []
    for number, line in enumerate(read_text_file(path).splitlines(), start=1):
        fields = line.split("\t")
        try:
            value = float(fields[2]) if len(fields) == 3 else None
        except ValueError:
            value = None
        if value is None:
            raise CorpusFormatError("expected 'source<TAB>target<TAB>log t(target | source)' (the format of "
                                    "align -p)", path, number)
        sources.append(None if fields[0] == NULL_WORD else fields[0])
        targets.append(fields[1])
        values.append(value)
    if not values:
        raise CorpusFormatError("no table entries (the file is empty)", path)
    return sources, targets, np.array(values)


def force_align(corpus: ParallelCorpus, table, null: bool = True) -> tuple[list, np.ndarray]:
    """Align ``corpus`` (target words to source words) under the fixed ``table`` of `read_translation_table`.

    Parameters
    ----------
    corpus : ParallelCorpus
    table : (source words, target words, log t) with None for NULL's source
    null : bool
        Whether target words may link to NULL (fast_align's ``-N`` turns it off).

    Returns
    -------
    links : list of set of (source_i, target_j)
    log_likelihoods : (n_pairs,) log p(e | f) = sum_j log(sum_i t(e_j | f_i) / (I + 1)) under the table (I
        without NULL); NaN for a pair with an empty side.
    """
    data = build_index(corpus)
    sources, targets, log_prob = table
    n_columns = data.n_target_types
    # the table's entries in this corpus's ids (NULL is row n_source_types); entries of other words go
    known = np.array([(f is None or f in corpus.source_vocabulary) and e in corpus.target_vocabulary
                      for f, e in zip(sources, targets)], dtype=bool)
    rows = np.array([data.n_source_types if f is None else corpus.source_vocabulary.index(f)
                     for f, keep in zip(sources, known) if keep], dtype=np.int64)
    columns = np.asarray(corpus.target_vocabulary.encode([e for e, keep in zip(targets, known) if keep]),
                         dtype=np.int64)
    keys = rows * n_columns + columns
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], np.exp(log_prob[known][order])
    # each slot's (source row, target word), as `Aligner.translation_table` lays them out
    n_candidates = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    slot_target = np.empty(data.n_slots, dtype=np.int64)
    slot_target[data.cell_slot] = np.repeat(data.tgt_ids, n_candidates)
    slot_keys = data.slot_row.astype(np.int64) * n_columns + slot_target
    slot_prob = np.full(data.n_slots, FLOOR)
    if keys.size:
        where = np.minimum(np.searchsorted(keys, slot_keys), keys.size - 1)
        found = keys[where] == slot_keys
        slot_prob[found] = values[where[found]]
    cells = slot_prob[data.cell_slot]
    if not null:
        cells[data.slot_row[data.cell_slot] == data.n_source_types] = 0.0
    links = best_links(data, cells, len(corpus))
    # per target token the mean over its candidates, then per pair the sum of the logs
    starts = np.concatenate([[0], np.cumsum(n_candidates)[:-1]]).astype(np.int64)
    token_log = np.log(np.add.reduceat(cells, starts) / (n_candidates - (0 if null else 1))) if cells.size \
        else np.zeros(0)
    pair_of_token = np.repeat(np.arange(data.n_pairs), np.diff(data.tgt_offsets))
    out = np.full(len(corpus), np.nan)
    out[data.pairs] = np.bincount(pair_of_token, weights=token_log, minlength=data.n_pairs)
    return links, out

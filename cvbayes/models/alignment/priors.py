"""Prior knowledge for the aligner: eflomal's priors files as per-entry Dirichlet pseudo-counts.

A priors file (eflomal's ``--priors`` format; UTF-8, one entry a line, fields separated by tabs):

* ``LEX  src  trg  alpha``: alpha added to the pseudo-count of translating src to trg; ``<NULL>`` is the
  NULL word (as src: the forward direction's NULL row; as trg: the reverse direction's);
* ``src  trg  alpha``: eflomal's older form of a LEX line;
* ``HMMF  jump  alpha`` and ``HMMR  jump  alpha``: alpha added to the pseudo-count of a jump of the forward
  and the reverse direction, jump = i - i' between consecutive aligned positions, -1 before the first;
* ``FERF  word  fertility  alpha``, ``FERR ...``: fertility priors; the models here have no fertility, so
  they are read, counted and ignored.

How our directions and buckets map onto eflomal's:

* the forward direction (`Aligner` on the corpus) aligns each target word to a source position, as
  eflomal's forward model: LEX src trg is a pseudo-count on t(trg | src), HMMF on its jumps over source
  positions;
* the reverse direction (`Aligner` on ``corpus.reversed()``) takes the same LEX entries transposed, a
  pseudo-count on t(src | trg), as eflomal's reverse model does, and HMMR: `AlignmentPriors.reversed`;
* a jump d adds its alpha to bucket clip(d, -M, M) of the jump distribution (chains/jumps.py,
  ``--max-jump`` M), the bucket the HMM draws a jump of width d from.  eflomal also counts a jump to the
  end of the sentence (I - i' after the last aligned word); our chain has no end transition, so such a
  jump, which a file does not mark, counts as a forward jump of its width.

With a the symmetric prior (``--prior``) and p_fe the file's alpha, row f of the translation table has
the Dirichlet pseudo-counts a_fe = a + p_fe over the V_e target words, total A_f = V_e a + sum_e p_fe
(eq. 3.49-3.50 with per-entry pseudo-counts).  The tables are sparse over the word pairs that share a
sentence pair (index.py); a prior on a pair that never does only raises its row's total A_f: its t(e | f)
is never needed, but the row's other entries share the mass it takes.  `Pseudocounts` holds a_fe per
stored entry, A_f per row and the jump buckets' pseudo-counts, and computes each rule's tables and
objectives from them (`cvbayes.core.rules` written for per-entry pseudo-counts; without priors it is
`cvbayes.core.rules`'s symmetric ``slot_*`` functions themselves).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from ...core.rules import (MAP, MEAN, VB, log_dirichlet_table, map_pseudo, mean_table, slot_kl, slot_log_marginal,
                           slot_log_prior, slot_table)
from ...data.errors import CorpusFormatError, read_text_file
from ...files import atomic_write

NULL = "<NULL>"     # eflomal's NULL word in priors files
_TINY = np.finfo(float).tiny


@dataclass
class AlignmentPriors:
    """The entries of a priors file, oriented for the forward direction.

    ``lexical``: (source word, target word, alpha), None for NULL; ``jumps``/``reverse_jumps``: jump ->
    alpha of the forward and the reverse direction; ``fertility``: (kind "FERF"/"FERR", word, fertility,
    alpha), kept only to be written again.
    """

    lexical: list = field(default_factory=list)
    jumps: dict = field(default_factory=dict)
    reverse_jumps: dict = field(default_factory=dict)
    fertility: list = field(default_factory=list)

    def reversed(self) -> AlignmentPriors:
        """The priors of the reverse direction: LEX pairs transposed, HMMR as the jumps."""
        return AlignmentPriors([(e, f, alpha) for f, e, alpha in self.lexical], self.reverse_jumps, self.jumps,
                               self.fertility)

    def to_json(self) -> dict:
        """The entries as JSON types (a saved model keeps its priors)."""
        return {"lexical": [list(entry) for entry in self.lexical], "jumps": sorted(self.jumps.items()),
                "reverse_jumps": sorted(self.reverse_jumps.items()),
                "fertility": [list(entry) for entry in self.fertility]}

    @classmethod
    def from_json(cls, saved: dict) -> AlignmentPriors:
        return cls([tuple(entry) for entry in saved["lexical"]], dict(saved["jumps"]), dict(saved["reverse_jumps"]),
                   [tuple(entry) for entry in saved["fertility"]])

    def used(self, corpus) -> int:
        """How many lexical entries have both words in ``corpus`` (NULL always is), eflomal's "used"."""
        return sum((f is None or f in corpus.source_vocabulary) and (e is None or e in corpus.target_vocabulary)
                   for f, e, _ in self.lexical)


def _alpha(text):
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError
    return value


def read_priors(path) -> AlignmentPriors:
    """Read an eflomal priors file (the module notes).

    Raises
    ------
    CorpusFormatError
        Naming the file and line of a line that is none of the five kinds (or the old three-column LEX
        form), or whose alpha is not a non-negative number or whose jump or fertility is not an integer.
    """
    priors = AlignmentPriors()
    for number, line in enumerate(read_text_file(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        kind = fields[0]
        try:
            if kind == "LEX" and len(fields) == 4:
                priors.lexical.append((_word(fields[1]), _word(fields[2]), _alpha(fields[3])))
            elif kind in ("HMMF", "HMMR") and len(fields) == 3:
                jumps = priors.jumps if kind == "HMMF" else priors.reverse_jumps
                jump = int(fields[1])
                jumps[jump] = jumps.get(jump, 0.0) + _alpha(fields[2])
            elif kind in ("FERF", "FERR") and len(fields) == 4:
                priors.fertility.append((kind, fields[1], int(fields[2]), _alpha(fields[3])))
            elif len(fields) == 3 and kind not in ("LEX", "HMMF", "HMMR", "FERF", "FERR"):
                priors.lexical.append((_word(fields[0]), _word(fields[1]), _alpha(fields[2])))
            else:
                raise ValueError
        except ValueError:
            raise CorpusFormatError("expected 'LEX<TAB>src<TAB>trg<TAB>alpha', 'src<TAB>trg<TAB>alpha', "
                                    "'HMMF<TAB>jump<TAB>alpha', 'HMMR<TAB>jump<TAB>alpha' or 'FERF/FERR<TAB>"
                                    "word<TAB>fertility<TAB>alpha' with alpha >= 0 (eflomal's priors)",
                                    path, number) from None
    return priors


def _word(text):
    return None if text == NULL else text


def write_priors(priors: AlignmentPriors, path) -> None:
    """Write ``priors`` in eflomal's format (LEX, FERF, FERR, HMMF, HMMR lines, as eflomal-makepriors)."""
    with atomic_write(path, "w", encoding="utf-8") as out:
        for f, e, alpha in sorted(priors.lexical, key=lambda entry: (entry[0] or NULL, entry[1] or NULL)):
            out.write(f"LEX\t{f or NULL}\t{e or NULL}\t{alpha:g}\n")
        for kind, word, fertility, alpha in sorted(priors.fertility):
            out.write(f"{kind}\t{word}\t{fertility}\t{alpha:g}\n")
        for kind, jumps in (("HMMF", priors.jumps), ("HMMR", priors.reverse_jumps)):
            for jump, alpha in sorted(jumps.items()):
                out.write(f"{kind}\t{jump}\t{alpha:g}\n")


def _jump_counts(links, n_positions):
    """eflomal's jump counts of one direction's links (target j -> source i, at most one a j): i - i' for
    consecutive aligned words (i' = -1 before the first), then n_positions - i' (the end)."""
    counts = Counter()
    last = -1
    for i, _ in sorted(links, key=lambda link: link[1]):
        counts[i - last] += 1
        last = i
    counts[n_positions - last] += 1
    return counts


def make_priors(corpus, forward=None, reverse=None) -> AlignmentPriors:
    """Priors from alignments of ``corpus`` (eflomal-makepriors): lexical counts from the forward links
    (from the reverse ones when only they are given), the jump counts of each direction, and fertilities.

    ``forward``, ``reverse``: per pair, sets of (source i, target j) from the forward and the reverse
    direction (``reverse`` in the same source-target orientation); either may be None.
    """
    lexical, forward_jumps, reverse_jumps, fertility = Counter(), Counter(), Counter(), Counter()
    source_words = corpus.source_vocabulary.symbols
    target_words = corpus.target_vocabulary.symbols
    for k, (source, target) in enumerate(zip(corpus.source, corpus.target)):
        if not (source.size and target.size):
            continue    # a pair left out of training (no links, no jumps)
        if forward is not None:
            forward_jumps.update(_jump_counts(forward[k], source.size))
            fertility.update(("FERF", source_words[source[i]], n)
                             for i, n in Counter(i for i, _ in forward[k]).items())
        if reverse is not None:
            reverse_jumps.update(_jump_counts({(j, i) for i, j in reverse[k]}, target.size))
            fertility.update(("FERR", target_words[target[j]], n)
                             for j, n in Counter(j for _, j in reverse[k]).items())
        lexical.update((source_words[source[i]], target_words[target[j]])
                       for i, j in (forward if forward is not None else reverse)[k])
    return AlignmentPriors([(f, e, float(n)) for (f, e), n in lexical.items()],
                           {d: float(n) for d, n in forward_jumps.items()},
                           {d: float(n) for d, n in reverse_jumps.items()},
                           [(kind, word, fert, float(n)) for (kind, word, fert), n in fertility.items()])


class Pseudocounts:
    """The Dirichlet pseudo-counts of one direction's translation rows and jump buckets (module notes).

    ``slot``: a_fe per stored entry (an array), or the symmetric a when no lexical prior applies;
    ``row``: A_f per row (NULL last), or V_e a; ``jumps``, ``jump_total``: the buckets' pseudo-counts and
    their sum.  The collapsed and Gibbs kernels read ``slot`` and ``row`` as they are (`collapsed.entry`).
    """

    def __init__(self, data, prior, max_jump, priors=None, vocabularies=None):
        self.prior = prior
        self.width = data.n_target_types
        self.slot, self.row = prior, self.width * prior
        n_buckets = 2 * max_jump + 1
        extra = np.zeros(n_buckets)
        if priors is not None:
            for jump, alpha in priors.jumps.items():
                extra[min(max(jump, -max_jump), max_jump) + max_jump] += alpha
            self._bind_lexical(data, priors.lexical, *vocabularies)
        self.jumps = prior + extra
        self.jump_total = n_buckets * prior + extra.sum()

    def _bind_lexical(self, data, lexical, source_vocabulary, target_vocabulary):
        """Per-entry a_fe and per-row A_f for the entries of ``lexical`` whose words this direction has."""
        width, n_rows = self.width, data.n_rows
        rows, columns, alphas = [], [], []
        for f, e, alpha in lexical:
            if e is not None and e in target_vocabulary and (f is None or f in source_vocabulary):
                rows.append(n_rows - 1 if f is None else source_vocabulary.index(f))
                columns.append(target_vocabulary.index(e))
                alphas.append(alpha)
        if not alphas:
            return
        keys, where = np.unique(np.array(rows, dtype=np.int64) * width + np.array(columns), return_inverse=True)
        alpha = np.bincount(where, weights=alphas)
        n_candidates = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
        slot_target = np.empty(data.n_slots, dtype=np.int64)
        slot_target[data.cell_slot] = np.repeat(data.tgt_ids, n_candidates)
        slot_keys = data.slot_row.astype(np.int64) * width + slot_target    # ascending (index.py)
        position = np.minimum(np.searchsorted(slot_keys, keys), max(data.n_slots - 1, 0))
        stored = slot_keys[position] == keys if data.n_slots else np.zeros(keys.size, dtype=bool)
        key_row = keys // width
        self.slot = np.full(data.n_slots, self.prior)
        self.slot[position[stored]] += alpha[stored]
        self.row = width * self.prior + np.bincount(key_row, weights=alpha, minlength=n_rows)
        # MAP's (a - 1)+ summed over each whole row: the stored entries, the pairs of the file that share
        # no sentence pair, and the rest of the V_e entries at the symmetric a
        self._unstored_row = key_row[~stored]
        self._unstored_pseudo = map_pseudo(self.prior + alpha[~stored])
        n_plain = (width - np.bincount(data.slot_row, minlength=n_rows)
                   - np.bincount(self._unstored_row, minlength=n_rows))
        self._map_row = (np.bincount(data.slot_row, weights=map_pseudo(self.slot), minlength=n_rows)
                         + np.bincount(self._unstored_row, weights=self._unstored_pseudo, minlength=n_rows)
                         + n_plain * float(map_pseudo(self.prior)))
        self._n_plain = n_plain

    @property
    def lexical(self) -> bool:
        """Whether any lexical prior applies (per-entry arrays, not the symmetric numbers)."""
        return np.ndim(self.slot) > 0

    def table(self, rule, counts, slot_row, row_counts, slots=slice(None), rows=slice(None)):
        """`cvbayes.core.rules.slot_table` with per-entry pseudo-counts: the entries ``slots`` of rows
        ``rows`` (a minibatch's), ``slot_row`` numbering their rows within ``rows``."""
        if not self.lexical:
            return slot_table(rule, counts, slot_row, row_counts, self.prior, self.width)
        pseudo = self.slot[slots]
        totals = np.maximum(row_counts, 0.0)[slot_row]
        if rule == MEAN:    # eq. 3.49-3.50
            return mean_table(counts, pseudo, totals, self.row[rows][slot_row])
        if rule == VB:      # eq. 3.21-3.22
            return np.maximum(np.exp(log_dirichlet_table(VB, counts, pseudo, totals, self.row[rows][slot_row])),
                              _TINY)
        if rule == MAP:     # eq. 3.18-3.19: the mode, MEAN's formula on the pseudo-counts (a - 1)+
            denominator = totals + self._map_row[rows][slot_row]
            with np.errstate(divide="ignore", invalid="ignore"):
                mode = (np.maximum(counts, 0.0) + map_pseudo(pseudo)) / denominator
            return np.where(denominator > 0, mode, 1.0 / self.width)
        raise ValueError(f"unknown rule {rule!r}")

    def log_prior(self, table, slot_row, row_counts):
        """sum over every entry of every row of (a_fe - 1)+ log t(e | f): MAP's penalty (the stored entries
        of ``table``, the others at their mode)."""
        if not self.lexical:
            return slot_log_prior(table, slot_row, row_counts, self.prior, self.width)
        denominator = np.maximum(row_counts, 0.0) + self._map_row
        plain = float(map_pseudo(self.prior))
        with np.errstate(divide="ignore", invalid="ignore"):
            stored = np.where(map_pseudo(self.slot) > 0, map_pseudo(self.slot) * np.log(table), 0.0).sum()
            unstored = np.where(self._unstored_pseudo > 0, self._unstored_pseudo
                                * np.log(self._unstored_pseudo / denominator[self._unstored_row]), 0.0).sum()
            rest = (self._n_plain * plain * np.log(plain / denominator)).sum() if plain > 0 else 0.0
        return float(stored + unstored + rest)

    def kl(self, counts, slot_row, row_counts):
        """sum over rows of KL(Dir(C + a) || Dir(a)) with per-entry a (VB's penalty, eq. 3.11); the entries
        without counts add nothing."""
        if not self.lexical:
            return slot_kl(counts, slot_row, row_counts, self.prior, self.width)
        counts, row_counts = np.maximum(counts, 0.0), np.maximum(row_counts, 0.0)
        log_geometric = log_dirichlet_table(VB, counts, self.slot, row_counts[slot_row], self.row[slot_row])
        return float((gammaln(row_counts + self.row) - gammaln(self.row)).sum()
                     - (gammaln(counts + self.slot) - gammaln(self.slot) - counts * log_geometric).sum())

    def log_marginal(self, counts, slot_row, row_counts):
        """sum over rows of the Dirichlet-multinomial log p(C | a) with per-entry a (eq. 3.24)."""
        if not self.lexical:
            return slot_log_marginal(counts, slot_row, row_counts, self.prior, self.width)
        return float((gammaln(self.row) - gammaln(self.row + row_counts)).sum()
                     + (gammaln(counts + self.slot) - gammaln(self.slot)).sum())

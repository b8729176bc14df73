"""Parallel corpora and the Pharaoh alignment format.

A `ParallelCorpus` holds one int32 array of word ids per sentence, per side.
The aligners flatten them into CSR arrays once per fit (models/alignment/index.py),
so the lists here never enter a hot loop.

Formats
-------
* parallel text: two files, one sentence a line, tokens separated by
  whitespace; line k of one file translates line k of the other;
* fast_align input: one file, ``source ||| target`` a line;
* Pharaoh alignments: one line per sentence pair, ``i-j`` items separated by
  spaces, i the 0-based source position and j the 0-based target position
  (as fast_align and eflomal write them);
* gold alignments: Pharaoh lines whose sure links are written ``i-j`` and
  possible links ``i?j`` (the convention of several hand-aligned test sets).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

import numpy as np

from ...files import atomic_write
from ...data.errors import CorpusFormatError
from ...data.vocabulary import Vocabulary

__all__ = ["ParallelCorpus", "read_fast_align", "read_gold_alignments", "read_parallel",
           "read_pharaoh", "write_pharaoh"]

PathLike = str | os.PathLike[str]
Links = list[set[tuple[int, int]]]

_PHARAOH_ITEM = re.compile(r"([0-9]+)([-?])([0-9]+)")


class ParallelCorpus:
    """Sentence pairs as word-id arrays over two vocabularies.

    Parameters
    ----------
    source, target : sequence of 1-D integer arrays
        One array per sentence pair; pair k is ``(source[k], target[k])``.
        Either side of a pair may be empty (such pairs get no links).
    source_vocabulary, target_vocabulary : Vocabulary
        Every id must lie in ``range(len(vocabulary))``.

    Attributes
    ----------
    source, target : list of numpy.ndarray of int32
    source_vocabulary, target_vocabulary : Vocabulary
    """

    def __init__(self, source: Sequence, target: Sequence,
                 source_vocabulary: Vocabulary, target_vocabulary: Vocabulary) -> None:
        if len(source) != len(target):
            raise ValueError(f"{len(source)} source sentences but {len(target)} target sentences")
        self.source = [_as_ids(s, len(source_vocabulary), "source") for s in source]
        self.target = [_as_ids(t, len(target_vocabulary), "target") for t in target]
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary

    @classmethod
    def from_tokens(cls, source_sentences: Sequence[Sequence[str]],
                    target_sentences: Sequence[Sequence[str]]) -> ParallelCorpus:
        """Build a corpus and both vocabularies from lists of token lists.

        Each vocabulary holds every word of its side (no ``<unk>``), ordered
        by decreasing frequency, ties alphabetically.
        """
        if len(source_sentences) != len(target_sentences):
            raise ValueError(f"{len(source_sentences)} source sentences but "
                             f"{len(target_sentences)} target sentences")
        source_vocabulary = Vocabulary.from_counts(_chain(source_sentences), unknown=False)
        target_vocabulary = Vocabulary.from_counts(_chain(target_sentences), unknown=False)
        return cls([source_vocabulary.encode(list(s)) for s in source_sentences],
                   [target_vocabulary.encode(list(t)) for t in target_sentences],
                   source_vocabulary, target_vocabulary)

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index: slice) -> ParallelCorpus:
        """The sentence pairs selected by a slice, over the same vocabularies."""
        if not isinstance(index, slice):
            raise TypeError("ParallelCorpus supports slices only")
        return ParallelCorpus(self.source[index], self.target[index],
                              self.source_vocabulary, self.target_vocabulary)

    def __repr__(self) -> str:
        return (f"ParallelCorpus({len(self)} pairs, {self.n_source_tokens} source and "
                f"{self.n_target_tokens} target tokens)")

    @property
    def n_source_tokens(self) -> int:
        return int(sum(s.size for s in self.source))

    @property
    def n_target_tokens(self) -> int:
        return int(sum(t.size for t in self.target))

    def reversed(self) -> ParallelCorpus:
        """The same pairs with source and target swapped (for the reverse direction)."""
        return ParallelCorpus(self.target, self.source, self.target_vocabulary, self.source_vocabulary)


def _chain(sentences: Iterable[Sequence[str]]) -> Iterable[str]:
    for sentence in sentences:
        yield from sentence


def _as_ids(ids, size: int, side: str) -> np.ndarray:
    array = np.asarray(ids)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ValueError(f"each {side} sentence must be a 1-D array of integer word ids")
    array = array.astype(np.int32, copy=False)
    if array.size and (array.min() < 0 or array.max() >= size):
        raise ValueError(f"{side} word ids must lie in [0, {size})")
    return array


def _lines(path: PathLike) -> list[str]:
    """A UTF-8 file's lines without terminators; a final newline ends the last line.

    Not str.splitlines(): it also breaks at form feeds and U+2028, which would
    shift the line numbers that errors report.
    """
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise CorpusFormatError(f"invalid utf-8 bytes {data[error.start:error.end]!r}", path, line) from error
    text = text.removeprefix("\ufeff")
    if not text:
        return []
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines[-1] == "":
        lines.pop()
    return lines


def _tokens(line: str, lowercase: bool) -> list[str]:
    return (line.lower() if lowercase else line).split()


def read_parallel(source_path: PathLike, target_path: PathLike, lowercase: bool = False) -> ParallelCorpus:
    """Read a sentence-aligned pair of files, one sentence a line.

    Raises
    ------
    CorpusFormatError
        When the files have different numbers of lines: it names the shorter
        file and the first line it lacks.
    """
    source_lines = _lines(source_path)
    target_lines = _lines(target_path)
    if len(source_lines) != len(target_lines):
        short, n_short, other, n_other = ((source_path, len(source_lines), target_path, len(target_lines))
                                          if len(source_lines) < len(target_lines)
                                          else (target_path, len(target_lines), source_path, len(source_lines)))
        raise CorpusFormatError(f"file ends after {n_short} lines but {os.fspath(other)} has {n_other}",
                                short, n_short + 1)
    return ParallelCorpus.from_tokens([_tokens(line, lowercase) for line in source_lines],
                                      [_tokens(line, lowercase) for line in target_lines])


def read_fast_align(path: PathLike, lowercase: bool = False) -> ParallelCorpus:
    """Read fast_align's input format: ``source ||| target`` on every line.

    Raises
    ------
    CorpusFormatError
        Naming the file and line of a line without exactly one ``|||``.
    """
    source, target = [], []
    for number, line in enumerate(_lines(path), start=1):
        parts = line.split("|||")
        if len(parts) != 2:
            raise CorpusFormatError(f"expected 'source ||| target', found {len(parts) - 1} '|||' separators",
                                    path, number)
        source.append(_tokens(parts[0], lowercase))
        target.append(_tokens(parts[1], lowercase))
    return ParallelCorpus.from_tokens(source, target)


def write_pharaoh(links: Iterable[Iterable[tuple[int, int]]], handle, scores=None) -> None:
    """Write one line per sentence pair: sorted ``i-j`` items separated by spaces.

    ``handle`` is an open text file (or a path, which is replaced atomically).  ``scores``, if given, holds per
    pair a sequence of numbers written after ``' ||| '`` (fast_align's ``-s`` lines).
    """
    if not hasattr(handle, "write"):
        with atomic_write(handle, "w", encoding="utf-8") as file:
            write_pharaoh(links, file, scores)
        return
    for k, pair_links in enumerate(links):
        line = " ".join(f"{i}-{j}" for i, j in sorted(pair_links))
        if scores is not None:
            line += " ||| " + " ".join(f"{value:.6g}" for value in scores[k])
        handle.write(line + "\n")


def _read_links(path: PathLike, allow_possible: bool) -> tuple[Links, Links]:
    sure: Links = []
    possible: Links = []
    for number, line in enumerate(_lines(path), start=1):
        line_sure, line_possible = set(), set()
        for item in line.split():
            match = _PHARAOH_ITEM.fullmatch(item)
            if match is None or (match.group(2) == "?" and not allow_possible):
                expected = "'i-j' or 'i?j'" if allow_possible else "'i-j'"
                raise CorpusFormatError(f"alignment item {item!r} is not {expected} with "
                                        "non-negative integers", path, number)
            link = (int(match.group(1)), int(match.group(3)))
            (line_sure if match.group(2) == "-" else line_possible).add(link)
        sure.append(line_sure)
        possible.append(line_sure | line_possible)
    return sure, possible


def read_pharaoh(path: PathLike) -> Links:
    """Read Pharaoh alignments: a list (one per line) of sets of (source_i, target_j).

    Raises
    ------
    CorpusFormatError
        Naming the file and line of an item that is not ``i-j``.
    """
    return _read_links(path, allow_possible=False)[0]


def read_gold_alignments(path: PathLike) -> tuple[Links, Links]:
    """Read gold alignments with sure ``i-j`` and possible ``i?j`` links.

    Returns
    -------
    sure, possible : lists of sets of (source_i, target_j)
        ``possible`` includes the sure links (S ⊆ P, Och and Ney 2003).
    """
    return _read_links(path, allow_possible=True)

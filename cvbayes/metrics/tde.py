"""Spoken term discovery scores from the field's own evaluator, the ZeroSpeech toolkit ``tde``.

A term discoverer outputs word tokens (utterance, start, end in seconds) grouped into classes, the
discovered word types.  `term_discovery_scores` writes them and the gold phones and words to files and
calls ``tde`` (PyPI ``zerospeech-tde``, the evaluator of the ZeroSpeech 2017 and 2020 challenges, Dunbar
et al. 2017; measures of Ludusan et al. 2014): boundary, token and type precision/recall/F1, coverage,
NED and grouping precision/recall/F1.  The measures are tde's own code, with two changes that leave
their values as they are: F1 is the harmonic mean of tde's precision and recall taken here (tde's fails
when precision is 0, `_f1`), and grouping collects the pairs of each class in place (tde rebuilds its
sets for each class, which took 73 of 76 s on 12k Buckeye tokens in 1840 classes).

How tde reads the data (``tde/readers``, version 2.0.3):

* Each discovered token is transcribed by the gold phones it covers; an edge phone counts when the
  token covers at least 30 ms of it (phones of 60 ms and more) or half of it (shorter phones).  A token
  that covers no gold phone is thrown away before scoring (it counts nowhere); ``n_tokens`` is the
  number of distinct tokens kept.
* Silence is phone ``SIL`` (and spoken noise ``SPN``): keep both in the phones, where coverage leaves
  them out of its count and NED out of its transcriptions; a discovered token over a pause is
  transcribed ``SIL`` and is a wrong token.  Word labels in `TDE_SILENCE_LABELS` are not written to the
  gold words (tde itself skips only ``SIL`` there and counts any other label as a word).
* Boundary scores compare the edge times of a token's transcription (gold phone times) with the gold
  word edges, so gold word edges must be phone edges; both files are written to the microsecond.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from pathlib import Path

from ..data.errors import CorpusFormatError, read_text_file
from ..files import write_text
from ..speech.alignments import Interval, write_alignments

__all__ = ["TDE_DEFAULT_MEASURES", "TDE_MEASURES", "TDE_SILENCE_LABELS", "read_classes", "term_discovery_scores",
           "write_classes"]

TDE_MEASURES = ("boundary", "token_type", "coverage", "ned", "grouping")
# grouping's time and memory grow with the square of the class sizes: 40 s and 1.9 GB on 31k Buckeye tokens
TDE_DEFAULT_MEASURES = ("boundary", "token_type", "coverage", "ned")
TDE_SILENCE_LABELS = frozenset({"SIL", "SPN"})
_INSTALL = 'pip install "cvbayes[experiment]"'

Token = tuple[str, float, float]
Classes = Sequence[Iterable[Token]] | Mapping[str, Iterable[Token]]


def _named(classes: Classes) -> dict[str, list[Token]]:
    """{class name: tokens}: a mapping's keys as names, a sequence's positions."""
    items = classes.items() if isinstance(classes, Mapping) else enumerate(classes)
    return {str(name): [(str(u), float(s), float(e)) for u, s, e in tokens] for name, tokens in items}


def write_classes(path: str | os.PathLike[str], classes: Classes) -> None:
    """Write discovered classes in the ZeroSpeech class format, atomically.

    `classes` is a sequence of classes (named by position from 0) or a mapping {name: tokens}; a token
    is ``(utterance, start, end)`` in seconds.  Each class is a ``Class NAME`` line, one
    ``UTTERANCE START END`` line a token (single spaces, times to the microsecond) and a blank line,
    so the file ends with an empty line as tde requires.

    Raises
    ------
    ValueError
        For a name or utterance that is empty or holds white space, or a token that does not end
        after it starts.
    """
    lines = []
    for name, tokens in _named(classes).items():
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"class name {name!r} is empty or holds white space")
        lines.append(f"Class {name}\n")
        for utterance, start, end in tokens:
            if not utterance or any(c.isspace() for c in utterance):
                raise ValueError(f"utterance {utterance!r} in class {name} is empty or holds white space")
            if not end > start:
                raise ValueError(f"token {utterance} {start:g}-{end:g} in class {name} does not end after it starts")
            lines.append(f"{utterance} {start:.6f} {end:.6f}\n")
        lines.append("\n")
    write_text(path, "".join(lines))


def read_classes(path: str | os.PathLike[str]) -> dict[str, list[Token]]:
    """Read a ZeroSpeech class file into {class name: [(utterance, start, end), ...]} in file order.

    A ``Class NAME [anything]`` line opens a class; token lines ``UTTERANCE START END`` follow; a blank
    line or the end of the file closes it.

    Raises
    ------
    CorpusFormatError
        Naming file and line: a token outside a class, a line that is neither, a time that is not a
        number, a token that does not end after it starts, a class name used twice.
    """
    classes: dict[str, list[Token]] = {}
    current: list[Token] | None = None
    for number, line in enumerate(read_text_file(path).splitlines(), start=1):
        fields = line.split()
        if not fields:
            current = None
        elif fields[0] == "Class":
            if len(fields) < 2:
                raise CorpusFormatError("'Class' line without a class name", path, number)
            if fields[1] in classes:
                raise CorpusFormatError(f"class {fields[1]} appears twice", path, number)
            current = classes[fields[1]] = []
        elif len(fields) != 3:
            raise CorpusFormatError(f"expected 'Class NAME' or 'UTTERANCE START END', got {line.strip()!r}",
                                    path, number)
        elif current is None:
            raise CorpusFormatError(f"token {line.strip()!r} is not under a 'Class' line", path, number)
        else:
            utterance, start_text, end_text = fields
            try:
                start, end = float(start_text), float(end_text)
            except ValueError:
                raise CorpusFormatError(f"times must be numbers, got {start_text!r} {end_text!r}",
                                        path, number) from None
            if not end > start:
                raise CorpusFormatError(f"token {start:g}-{end:g} does not end after it starts", path, number)
            current.append((utterance, start, end))
    return classes


def _f1(precision: float, recall: float) -> float:
    """Harmonic mean; 0 when either is 0 (tde's ``fscore`` divides by zero when both are, and its
    token/type one asserts that token precision is not 0), else NaN when either is NaN (tde's 0/0)."""
    if precision == 0 or recall == 0:
        return 0.0
    if precision != precision or recall != recall:
        return float("nan")
    return 2 * precision * recall / (precision + recall)


def _scores(prefix: str, precision: float, recall: float) -> dict[str, float]:
    precision, recall = float(precision), float(recall)
    return {f"{prefix}_precision": precision, f"{prefix}_recall": recall, f"{prefix}_fscore": _f1(precision, recall)}


def _import_tde():
    try:
        from tde.measures.boundary import Boundary
        from tde.measures.coverage import Coverage
        from tde.measures.grouping import Grouping
        from tde.measures.ned import Ned
        from tde.measures.token_type import TokenType
        from tde.readers.disc_reader import Disc
        from tde.readers.gold_reader import Gold
    except ImportError as error:
        raise ImportError(f"term discovery scores need zerospeech-tde and pandas: {_INSTALL}") from error

    class LinearGrouping(Grouping):
        def get_found_pairs(self):
            """tde's ``get_found_pairs`` with the same result, its sets grown in place: tde builds them
            anew for each class, a time of classes x pairs."""
            for tokens in self.clusters.values():
                self.found_pairs.update(combinations(tokens, 2))
                # a class's transcriptions count as found types only if it has a pair
                if len(tokens) > 1:
                    self.found_types.update(ngram for *_, ngram in tokens)
            self.found_pairs = {tuple(sorted(pair, key=lambda token: (token[0], token[1])))
                                for pair in self.found_pairs}

    return Gold, Disc, Boundary, TokenType, Coverage, Ned, LinearGrouping


def _gold(alignments: Mapping[str, Sequence[Interval]], drop: frozenset[str] = frozenset()):
    """The intervals tde accepts: labels in `drop` left out, and those without length at its precision
    (tde asserts that each ends after it starts)."""
    kept = {name: [(s, e, label) for s, e, label in intervals
                   if label not in drop and round(e, 6) > round(s, 6)]
            for name, intervals in alignments.items()}
    return {name: intervals for name, intervals in kept.items() if intervals}


def term_discovery_scores(classes: Classes, phones: Mapping[str, Sequence[Interval]],
                          words: Mapping[str, Sequence[Interval]],
                          measures: Iterable[str] = TDE_DEFAULT_MEASURES) -> dict[str, float]:
    """Score discovered classes against gold phones and words with tde (module notes).

    Parameters
    ----------
    classes : discovered classes as for `write_classes`: tokens ``(utterance, start, end)`` in seconds.
    phones, words : gold {utterance: intervals ``(start, end, label)``} in seconds; phones with their
        ``SIL`` (and ``SPN``) intervals, words with or without them.
    measures : any of `TDE_MEASURES`; all but grouping by default.  NED takes every two tokens of a
        class, grouping those and every two tokens with one transcription, so both grow with the square
        of the class sizes.  On Buckeye's gold words (bench_tde.py; reading 0.3 / 1.3 / 3.5 s) NED took
        0.07 / 0.8 / 5 s and grouping 0.4 / 4 / 40 s (1.9 GB) for 3k / 12k / 31k tokens; the others
        take less than reading.

    Returns
    -------
    dict
        ``n_classes`` and ``n_tokens`` (classes and distinct tokens tde kept), and for each measure:
        ``boundary_precision/recall/fscore``, ``token_precision/recall/fscore`` and
        ``type_precision/recall/fscore`` (measure ``token_type``), ``coverage``, ``ned`` (NaN when no
        class has two tokens), ``grouping_precision/recall/fscore``.

    Raises
    ------
    ValueError
        For an unknown measure, or a token of an utterance without gold phones or without gold words.
    ImportError
        If zerospeech-tde is not installed.
    """
    measures = tuple(measures)
    unknown = sorted(set(measures) - set(TDE_MEASURES))
    if unknown:
        raise ValueError(f"unknown measures {', '.join(unknown)}; choose from {', '.join(TDE_MEASURES)}")
    Gold, Disc, Boundary, TokenType, Coverage, Ned, Grouping = _import_tde()
    # tde cannot read a file without a class; an empty class is nothing found too
    named = _named(classes) or {"0": []}
    gold_phones, gold_words = _gold(phones), _gold(words, TDE_SILENCE_LABELS)
    # tde fails with a KeyError (phones) or a ValueError mid-way (words) on these
    used = {utterance for tokens in named.values() for utterance, _, _ in tokens}
    for gold, what in ((gold_phones, "phones"), (gold_words, "words")):
        missing = sorted(used - gold.keys())
        if missing:
            raise ValueError(f"{len(missing)} utterances with discovered tokens have no gold {what}: "
                             f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")

    scores: dict[str, float] = {}
    # tde prints progress and counts; our commands keep their output
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        folder = Path(folder)
        write_alignments(folder / "gold.phn", gold_phones)
        write_alignments(folder / "gold.wrd", gold_words)
        write_classes(folder / "discovered.class", named)
        gold = Gold(wrd_path=str(folder / "gold.wrd"), phn_path=str(folder / "gold.phn"))
        disc = Disc(str(folder / "discovered.class"), gold)
        scores["n_classes"], scores["n_tokens"] = len(disc.clusters), len(disc.intervals)
        if "boundary" in measures:
            boundary = Boundary(gold, disc)
            boundary.compute_boundary()
            scores.update(_scores("boundary", boundary.precision, boundary.recall))
        if "token_type" in measures:
            token_type = TokenType(gold, disc)
            token_type.compute_token_type()
            (token_precision, type_precision), (token_recall, type_recall) = token_type.precision, token_type.recall
            scores.update(_scores("token", token_precision, token_recall))
            scores.update(_scores("type", type_precision, type_recall))
        if "coverage" in measures:
            coverage = Coverage(gold, disc)
            coverage.compute_coverage()
            scores["coverage"] = float(coverage.coverage)
        if "ned" in measures:
            # tde's mean over no pairs is numpy's empty-mean warning
            if any(len(tokens) > 1 for tokens in disc.clusters.values()):
                ned = Ned(disc)
                ned.compute_ned()
                scores["ned"] = float(ned.ned)
            else:
                scores["ned"] = float("nan")
        if "grouping" in measures:
            grouping = Grouping(disc)
            grouping.compute_grouping()
            scores.update(_scores("grouping", grouping.precision, grouping.recall))
    return scores

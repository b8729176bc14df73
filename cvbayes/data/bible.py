"""Verse-aligned Bibles for word alignment: hand-aligned Greek-English and silver English-Spanish.

Two corpora, both verse-aligned (a verse is one sentence pair):

**Greek New Testament - English, with manual gold alignments** (`fetch_nt_alignments`,
`load_nt_alignments`). The sdist of the PyPI package ``bible-alignments==0.4.2`` (Clear
Bible / Biblica) carries, under ``bible_alignments-0.4.2/data/``:

- ``sources/SBLGNT.tsv``: the SBL Greek New Testament, one token a line (``id``,
  ``text``, Strong's number, lemma, part of speech ...), 137,741 tokens, no punctuation;
- ``eng/targets/BSB/nt_BSB.tsv``: the Berean Standard Bible New Testament, one token a
  line (``id``, ``source_verse``, ``text``, ``skip_space_after``, ``exclude`` ...),
  201,136 tokens of which 29,242 are punctuation marked ``exclude = y``;
- ``eng/alignments/BSB/SBLGNT-BSB-manual.json``: 115,008 manual alignment records
  (Scripture Burrito 0.3), each a list of Greek token ids and a list of English token
  ids, all with ``process = manual``.

Token ids are ``BBCCCVVVWWW`` (book, chapter, verse, word; the Greek ones carry an ``n``
prefix); book 40 is Matthew, 43 John, 66 Revelation. `fetch_nt_alignments` downloads the
sdist with pip (nothing is installed) into ``<cache>/nt`` and copies these three files
out of it.

`load_nt_alignments` makes one sentence pair per verse: the Greek tokens of the verse
(source) and the English tokens whose ``source_verse`` is that verse (target; 11 English
tokens of Acts 19:41 belong to Greek verse 19:40 this way), both in file order. It drops the
English punctuation (``exclude = y``), and lowercases both sides by default (Greek too:
capitals there mark sentence starts and names, and the vocabulary is sparse enough
already); it does not strip Greek accents. Verses with tokens on one side only (Rom 16:24-27,
2 Cor 13:14, 3 John 1:15 and Rev 12:18 are versified differently) are dropped: 7,936
verses remain, 137,712 Greek and 171,796 English tokens.

A record that aligns Greek tokens G with English tokens E gives every link of G x E (the
Scripture Burrito reading): 189,927 links. There is no sure/possible distinction: every
link is *sure*. Links are kept as 0-based ``(greek_position, english_position)`` pairs of
the kept tokens of their verse. Links that cannot be expressed that way are dropped and
counted in ``ParallelVerses.notes``: links to an excluded (punctuation) token (none in
0.4.2), links whose two tokens lie in different verses (454, from 80 records that span a
verse boundary), and links in verses that were dropped.

Licence: the alignments and the SBLGNT are CC BY 4.0 (alignments (c) 2022 Clear Bible,
Inc. / Biblica; SBLGNT (c) 2010 Society of Biblical Literature and Logos Bible Software);
the BSB is public domain. Nothing of them is committed here; tests use small made-up files.

**English KJV - Spanish Reina-Valera 1909, with silver links from Strong's numbers**
(`fetch_bible`, `load_bible`). The Debian packages ``sword-text-kjv`` and
``sword-text-sparv`` install the SWORD modules ``engKJV2006eb`` (King James Version, 1769
text) and ``spaRV1909eb`` under ``/usr/share/sword``; both follow the KJV versification
(31,102 verses) and tag words with Strong's numbers (``<w lemma="strong:H7225">``).
`fetch_bible` asks for them when missing (giving the apt-get command to run as root),
reads them with ``pysword`` (the optional dependency group ``cvbayes[bible]``; reading
takes about 100 s a module) and caches each as ``<cache>/bible/MODULE.txt``: one verse a line, ``BBCCCVVV<TAB>tokens``
with tokens ``form`` or ``form|H7225`` (several numbers joined by ``+``), books numbered
1 (Genesis) to 66 (Revelation); ``#`` lines are comments.

Tokenisation of the SWORD text (`tokenize_osis`): footnotes (``<note>``) are removed;
the other markup is dropped but its text kept (so the KJV's italic supplied words,
``<transChange type="added">``, stay, without a Strong's number); entities are decoded;
the text is lowercased and split into words (letters and digits, with inner apostrophes
or hyphens) and single punctuation marks; the paragraph sign ``¶`` is dropped. Every
word inside ``<w lemma="strong:...">`` carries that element's numbers (the Spanish often
tags a phrase: ``<w lemma="strong:H7225">EN el principio</w>`` gives three tagged
words). Numbers lose their zero padding (``H0430`` -> ``H430``). `load_bible` drops
punctuation by default.

A ``<w>`` may carry several numbers (the RV1909 writes ``lemma="strong:H5315 H2416"``).
`load_bible` drops the verses that are empty on a side: 18 KJV verses that the RV1909 merges
into a neighbour (Num 12:16, Job 38:39-41, Acts 19:41, 2 Cor 13:14, ...), leaving 31,084
verses, 790,653 English and 703,741 Spanish words (punctuation dropped).

Silver links: inside a verse, English word i and Spanish word j are linked when they share
a Strong's number (743,778 links). They exist only where both words are tagged (about 46 % of the English
and 96 % of the Spanish words), so they measure recall well but precision only against the
tagged words; ``ParallelVerses.source_marked`` / ``target_marked`` say which words are
tagged, so that precision can be restricted to links between two tagged words.

Licence: both texts are public domain (the modules' ``About`` fields).
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..files import atomic_write
from .archives import fetch_pypi_members
from .cache import corpus_folder, fetcher
from .errors import CorpusFormatError

__all__ = [
    "BIBLE_MODULES",
    "GOSPELS",
    "ParallelVerses",
    "fetch_bible",
    "fetch_nt_alignments",
    "load_bible",
    "load_nt_alignments",
    "read_bible_cache",
    "tokenize_osis",
]

NT_PYPI = "bible-alignments==0.4.2"
_NT_SDIST = "bible_alignments-0.4.2.tar.gz"
_NT_ROOT = "bible_alignments-0.4.2/"
# member of the sdist -> name in <cache>/nt
NT_FILES = {
    "data/sources/SBLGNT.tsv": "SBLGNT.tsv",
    "data/eng/targets/BSB/nt_BSB.tsv": "nt_BSB.tsv",
    "data/eng/alignments/BSB/SBLGNT-BSB-manual.json": "SBLGNT-BSB-manual.json",
    "LICENSE.md": "LICENSE.md",
}
GOSPELS = (40, 41, 42, 43)
NT_BOOKS = tuple(range(40, 67))

SWORD_PATH = "/usr/share/sword"
SWORD_PACKAGES = ("sword-text-kjv", "sword-text-sparv")
PYSWORD_PYPI = "pysword==0.2.8"
BIBLE_MODULES = {"english": "engKJV2006eb", "spanish": "spaRV1909eb"}
_CACHE_HEADER = "# cvbayes bible cache v1"

_GREEK_ID = re.compile(r"n?(\d{11})")
_ENGLISH_ID = re.compile(r"\d{11}")
_VERSE_ID = re.compile(r"\d{8}")


@dataclass
class ParallelVerses:
    """Verse-aligned token lists with reference links, one entry a verse.

    Attributes
    ----------
    source, target : list of list of str
        The tokens of each verse, source side (Greek, or English KJV) and target side
        (English BSB, or Spanish RV1909).
    verse_ids : list of str
        ``BBCCCVVV`` for each verse (book 1-66, chapter, verse).
    links : list of set of (int, int)
        Reference links of each verse as 0-based ``(source_position, target_position)``:
        manual gold (all sure) for the NT, Strong's-number silver for the Bible.
    source_marked, target_marked : list of list of bool, or None
        For silver links: whether each token carries a Strong's number, i.e. could have a
        reference link at all. None when every token is annotated (the NT gold).
    description : str
        Where the data came from and how it was read.
    notes : dict
        Counts of what was dropped while loading, and other facts worth reporting.
    """

    source: list[list[str]]
    target: list[list[str]]
    verse_ids: list[str]
    links: list[set[tuple[int, int]]]
    source_marked: list[list[bool]] | None = None
    target_marked: list[list[bool]] | None = None
    description: str = ""
    notes: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.verse_ids)
        sizes = [len(self.source), len(self.target), len(self.links)]
        for marked in (self.source_marked, self.target_marked):
            if marked is not None:
                sizes.append(len(marked))
        if any(size != n for size in sizes):
            raise ValueError(f"ParallelVerses: {n} verse ids but parts of lengths {sizes}")

    def __len__(self) -> int:
        return len(self.verse_ids)

    @property
    def n_source_tokens(self) -> int:
        return sum(len(words) for words in self.source)

    @property
    def n_target_tokens(self) -> int:
        return sum(len(words) for words in self.target)

    @property
    def n_links(self) -> int:
        return sum(len(links) for links in self.links)

    @property
    def books(self) -> list[int]:
        """The book number of each verse."""
        return [int(verse[:2]) for verse in self.verse_ids]

    def select(self, indices: Iterable[int]) -> ParallelVerses:
        """The verses at `indices`, in that order (notes and description are kept)."""
        indices = list(indices)

        def pick(values):
            return None if values is None else [values[i] for i in indices]

        return ParallelVerses(
            pick(self.source), pick(self.target), pick(self.verse_ids), pick(self.links),
            pick(self.source_marked), pick(self.target_marked), self.description, dict(self.notes),
        )

    def head(self, n_verses: int) -> ParallelVerses:
        """The first `n_verses` verses."""
        return self.select(range(min(n_verses, len(self))))

    def in_books(self, books: Iterable[int]) -> ParallelVerses:
        """The verses of the given books (numbers 1-66)."""
        wanted = {int(book) for book in books}
        return self.select(i for i, book in enumerate(self.books) if book in wanted)

    def summary(self) -> dict:
        """Sizes, for reports."""
        return {
            "verses": len(self),
            "source_tokens": self.n_source_tokens,
            "target_tokens": self.n_target_tokens,
            "links": self.n_links,
            **self.notes,
        }


# --- helpers -------------------------------------------------------------------------------


def _books(books: Iterable[int] | None, allowed: Sequence[int]) -> set[int] | None:
    if books is None:
        return None
    wanted = {int(book) for book in books}
    unknown = sorted(wanted - set(allowed))
    if unknown:
        raise ValueError(f"unknown book number(s) {unknown}; books are {allowed[0]}-{allowed[-1]}")
    return wanted


def _read_tsv(path: Path, required: Sequence[str]) -> tuple[dict[str, int], list[tuple[int, list[str]]]]:
    """Rows of a tab-separated file with a header: (column index by name, [(line, fields)])."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CorpusFormatError(f"not UTF-8 ({error.reason})", path) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise CorpusFormatError("file is empty", path)
    header = lines[0].rstrip("\r").split("\t")
    columns = {name: i for i, name in enumerate(header)}
    missing = [name for name in required if name not in columns]
    if missing:
        raise CorpusFormatError(f"header lacks the column(s) {', '.join(missing)}", path, 1)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.rstrip("\r").split("\t")
        if len(fields) != len(header):
            raise CorpusFormatError(
                f"{len(fields)} tab-separated fields, the header has {len(header)}", path, number
            )
        rows.append((number, fields))
    return columns, rows


# --- Greek NT - English gold -----------------------------------------------------------------


def _nt_is_extracted(folder: Path) -> bool:
    return all((folder / name).is_file() for name in NT_FILES.values())


@fetcher("nt")
def fetch_nt_alignments(folder: Path, progress: bool) -> Path:
    """Download the Greek NT - English gold alignments, unless they are already there.

    Runs ``python -m pip download --no-deps --no-binary :all: bible-alignments==0.4.2``
    into ``<cache>/nt`` (nothing is installed) and copies ``SBLGNT.tsv``, ``nt_BSB.tsv``,
    ``SBLGNT-BSB-manual.json`` and the licence out of the sdist, next to it.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the sdist lacks the files.
    """
    return fetch_pypi_members(["--no-deps", "--no-binary", ":all:", NT_PYPI], _NT_SDIST, folder,
                              "the Greek NT - English alignments",
                              {_NT_ROOT + member: folder / name for member, name in NT_FILES.items()}, progress)


def _greek_tokens(path: Path) -> tuple[dict[str, list[str]], dict[str, tuple[str, int]]]:
    """Greek verses (verse -> forms) and token id -> (verse, position)."""
    columns, rows = _read_tsv(path, ("id", "text"))
    verses: dict[str, list[str]] = {}
    where: dict[str, tuple[str, int]] = {}
    for number, fields in rows:
        token_id, form = fields[columns["id"]], fields[columns["text"]].strip()
        match = _GREEK_ID.fullmatch(token_id)
        if match is None:
            raise CorpusFormatError(f"token id {token_id!r} is not [n]BBCCCVVVWWW", path, number)
        if not form or any(ch.isspace() for ch in form):
            raise CorpusFormatError(f"token {token_id} has the text {form!r}, not one word", path, number)
        if token_id in where:
            raise CorpusFormatError(f"token id {token_id} occurs twice", path, number)
        verse = match.group(1)[:8]
        words = verses.setdefault(verse, [])
        where[token_id] = (verse, len(words))
        words.append(form)
    return verses, where


def _english_tokens(
    path: Path,
) -> tuple[dict[str, list[str]], dict[str, tuple[str, int] | None], int]:
    """English verses (source verse -> kept forms), token id -> (verse, position) or None
    when excluded, and the number of excluded tokens."""
    columns, rows = _read_tsv(path, ("id", "source_verse", "text", "exclude"))
    verses: dict[str, list[str]] = {}
    where: dict[str, tuple[str, int] | None] = {}
    n_excluded = 0
    for number, fields in rows:
        token_id = fields[columns["id"]]
        verse = fields[columns["source_verse"]]
        form = fields[columns["text"]].strip()
        exclude = fields[columns["exclude"]]
        if _ENGLISH_ID.fullmatch(token_id) is None:
            raise CorpusFormatError(f"token id {token_id!r} is not BBCCCVVVWWW", path, number)
        if _VERSE_ID.fullmatch(verse) is None:
            raise CorpusFormatError(f"source_verse {verse!r} is not BBCCCVVV", path, number)
        if exclude not in ("", "y"):
            raise CorpusFormatError(f"exclude is {exclude!r}, expected '' or 'y'", path, number)
        if token_id in where:
            raise CorpusFormatError(f"token id {token_id} occurs twice", path, number)
        if exclude == "y":
            where[token_id] = None
            n_excluded += 1
            continue
        if not form or any(ch.isspace() for ch in form):
            raise CorpusFormatError(f"token {token_id} has the text {form!r}, not one word", path, number)
        words = verses.setdefault(verse, [])
        where[token_id] = (verse, len(words))
        words.append(form)
    return verses, where, n_excluded


def _records(path: Path) -> list[dict]:
    try:
        with path.open(encoding="utf-8") as stream:
            document = json.load(stream)
    except json.JSONDecodeError as error:
        raise CorpusFormatError(f"not valid JSON: {error.msg}", path, error.lineno) from None
    except UnicodeDecodeError as error:
        raise CorpusFormatError(f"not UTF-8 ({error.reason})", path) from None
    records = document.get("records") if isinstance(document, dict) else None
    if not isinstance(records, list):
        raise CorpusFormatError("no 'records' list at the top level", path)
    for index, record in enumerate(records):
        if not (
            isinstance(record, dict)
            and isinstance(record.get("source"), list)
            and isinstance(record.get("target"), list)
            and all(isinstance(t, str) for t in record["source"] + record["target"])
        ):
            raise CorpusFormatError(
                f"record {index} lacks 'source' and 'target' lists of token ids: {str(record)[:120]}", path
            )
    return records


def load_nt_alignments(
    books: Iterable[int] | None = None,
    cache: str | os.PathLike[str] | None = None,
    lowercase: bool = True,
) -> ParallelVerses:
    """Load the Greek NT (SBLGNT, source) - English (BSB, target) verses with their gold links.

    See the module docstring for the exact reading: one pair a verse, English punctuation
    dropped, both sides lowercased by default, every manual link sure, links to dropped
    tokens or across verses dropped and counted in ``notes``.

    Parameters
    ----------
    books : iterable of int, optional
        Book numbers to keep, 40 (Matthew) to 66 (Revelation); all 27 by default.
        `GOSPELS` (40-43) is the development set.
    cache : str or os.PathLike, optional
        The cache folder that `fetch_nt_alignments` filled; `cache_dir()` by default.
    lowercase : bool, default True
        Lowercase the Greek and the English tokens.

    Returns
    -------
    ParallelVerses
        All books: 7,936 verses, 137,712 Greek and 171,796 English tokens, 189,473 links
        (Gospels: 3,768 verses, 64,686 and 78,362 tokens, 87,144 links).

    Raises
    ------
    FileNotFoundError
        If the data has not been fetched; run ``cvbayes data fetch nt``.
    CorpusFormatError
        If a file is malformed (the message names the file and line, or the record).
    """
    folder = corpus_folder(cache, "nt")
    if not _nt_is_extracted(folder):
        raise FileNotFoundError(
            f"the Greek NT - English alignments are not in {folder}; "
            "run `cvbayes data fetch nt` (needs pip and access to PyPI)"
        )
    wanted = _books(books, NT_BOOKS)
    greek_path, english_path, links_path = (folder / name for name in list(NT_FILES.values())[:3])
    greek, greek_at = _greek_tokens(greek_path)
    english, english_at, n_excluded = _english_tokens(english_path)

    verse_ids = [verse for verse in greek if english.get(verse)]
    one_sided = (set(greek) | set(english)) - set(verse_ids)
    kept = {verse for verse in verse_ids if wanted is None or int(verse[:2]) in wanted}
    links: dict[str, set[tuple[int, int]]] = {verse: set() for verse in kept}
    dropped = Counter()
    n_all = 0
    for index, record in enumerate(_records(links_path)):
        for greek_id in record["source"]:
            if greek_id not in greek_at:
                raise CorpusFormatError(
                    f"record {index} names the Greek token {greek_id!r}, which {greek_path.name} lacks",
                    links_path,
                )
            greek_verse, i = greek_at[greek_id]
            for english_id in record["target"]:
                if english_id not in english_at:
                    raise CorpusFormatError(
                        f"record {index} names the English token {english_id!r}, "
                        f"which {english_path.name} lacks",
                        links_path,
                    )
                n_all += 1
                target = english_at[english_id]
                if target is None:
                    dropped["links_to_excluded_tokens"] += 1
                    continue
                english_verse, j = target
                if english_verse != greek_verse:
                    dropped["links_across_verses"] += 1
                elif greek_verse in links:
                    links[greek_verse].add((i, j))
                elif greek_verse in one_sided:
                    dropped["links_in_one_sided_verses"] += 1

    verse_ids = [verse for verse in verse_ids if verse in kept]

    def case(words):
        return [word.lower() for word in words] if lowercase else list(words)

    notes = {
        "excluded_english_tokens": n_excluded,
        "one_sided_verses_dropped": len(one_sided),
        "links_in_file": n_all,
        "links_to_excluded_tokens": dropped["links_to_excluded_tokens"],
        "links_across_verses": dropped["links_across_verses"],
        "links_in_one_sided_verses": dropped["links_in_one_sided_verses"],
        "verses_without_links": sum(1 for verse in verse_ids if not links[verse]),
        "lowercase": lowercase,
        "books": sorted(wanted) if wanted is not None else list(NT_BOOKS),
    }
    description = (
        f"Greek NT (SBLGNT) -> English (BSB) with the manual alignments of {NT_PYPI}, from {folder}; "
        "one pair a verse, English punctuation dropped, "
        + ("lowercased, " if lowercase else "")
        + "all links sure"
    )
    return ParallelVerses(
        [case(greek[verse]) for verse in verse_ids],
        [case(english[verse]) for verse in verse_ids],
        verse_ids,
        [links[verse] for verse in verse_ids],
        description=description,
        notes=notes,
    )


# --- English KJV - Spanish RV1909, silver links ---------------------------------------------------

_NOTE = re.compile(r"<note\b[^>]*>.*?</note>", re.DOTALL)
_TAG_OR_TEXT = re.compile(r"<(/?)(\w+)([^>]*?)(/?)>|([^<]+)")
_LEMMA = re.compile(r'lemma="([^"]*)"')
_STRONG = re.compile(r"strong:([GH])0*(\d+)([a-zA-Z]?)")
_WORD = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]")
_DROPPED_MARKS = {"¶", "\u00b6"}


def tokenize_osis(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """Tokens of one verse of SWORD OSIS markup: ``[(form, strong_numbers)]``.

    Footnotes are removed, other markup dropped with its text kept, entities decoded;
    words are lowercased; words inside ``<w lemma="strong:...">`` carry its Strong's
    numbers (zero padding removed), other tokens carry none; punctuation marks are tokens
    of their own; the paragraph sign is dropped.

    Examples
    --------
    >>> tokenize_osis('<w lemma="strong:H7225">EN el principio</w>, crió<note>x</note>')
    [('en', ('H7225',)), ('el', ('H7225',)), ('principio', ('H7225',)), (',', ()), ('crió', ())]
    """
    text = _NOTE.sub(" ", text)
    tokens: list[tuple[str, tuple[str, ...]]] = []
    stack: list[tuple[str, ...]] = []  # the Strong's numbers of each open <w>
    for match in _TAG_OR_TEXT.finditer(text):
        closing, name, attributes, empty, chunk = match.groups()
        if chunk is None:
            if name != "w" or empty:
                continue
            if closing:
                if stack:
                    stack.pop()
                continue
            lemma = _LEMMA.search(attributes)
            stack.append(_strong_numbers(lemma.group(1) if lemma else ""))
            continue
        numbers = tuple(dict.fromkeys(n for level in stack for n in level))
        for word in _WORD.findall(html.unescape(chunk).lower()):
            if word in _DROPPED_MARKS:
                continue
            tokens.append((word, numbers if _is_word(word) else ()))
    return tokens


def _strong_numbers(lemma: str) -> tuple[str, ...]:
    """``"strong:H0430 H2416"`` -> ``("H430", "H2416")``: the RV1909 writes the prefix once."""
    numbers = []
    for item in lemma.split():
        match = _STRONG.fullmatch(item if item.startswith("strong:") else "strong:" + item)
        if match is not None:
            letter, number, suffix = match.groups()
            numbers.append(f"{letter}{number}{suffix}")
    return tuple(dict.fromkeys(numbers))


def _is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def _cache_file(folder: Path, module: str) -> Path:
    return folder / f"{module}.txt"


def _check_sword(sword_path: Path) -> None:
    """Raise with the command that installs the SWORD modules when any is missing (it needs root, so
    the package never runs it itself)."""
    missing = [m for m in BIBLE_MODULES.values() if not (sword_path / "mods.d" / f"{m}.conf").is_file()]
    if missing:
        raise RuntimeError(
            f"the SWORD modules {', '.join(missing)} are not in {sword_path}; install the Debian packages "
            f"{' and '.join(SWORD_PACKAGES)} (as root: `apt-get install -y {' '.join(SWORD_PACKAGES)}`, "
            "after `apt-get update` if apt does not know them), then run `cvbayes data fetch bible` again"
        )


def _book_numbers(structure) -> list[tuple[int, object]]:
    books = structure.get_books()
    ordered = list(books.get("ot", [])) + list(books.get("nt", []))
    return list(enumerate(ordered, start=1))


def _write_module_cache(modules, module: str, path: Path, progress: bool) -> int:
    bible = modules.get_bible_from_module(module)
    books = _book_numbers(bible.get_structure())
    if len(books) != 66:
        raise RuntimeError(f"the SWORD module {module} has {len(books)} books, expected 66")
    n_verses = 0
    with atomic_write(path, "w", encoding="utf-8") as out:
        out.write(f"{_CACHE_HEADER} module={module}: BBCCCVVV<TAB>tokens, form|STRONG+STRONG\n")
        for number, book in books:
            if progress:
                print(f"\r{module}: {book.name:<20}", end="", file=sys.stderr)
            for chapter, n_in_chapter in enumerate(book.chapter_lengths, start=1):
                for verse in range(1, n_in_chapter + 1):
                    texts = list(bible.get_iter(books=[book.name], chapters=[chapter], verses=[verse], clean=False))
                    tokens = tokenize_osis(" ".join(texts))
                    cells = [form + ("|" + "+".join(numbers) if numbers else "") for form, numbers in tokens]
                    out.write(f"{number:02d}{chapter:03d}{verse:03d}\t{' '.join(cells)}\n")
                    n_verses += 1
    if progress:
        print(file=sys.stderr)
    return n_verses


def fetch_bible(
    cache: str | os.PathLike[str] | None = None,
    progress: bool = True,
    sword_path: str | os.PathLike[str] = SWORD_PATH,
) -> Path:
    """Read the KJV and RV1909 SWORD modules and cache them as text.

    The modules come from the Debian packages ``sword-text-kjv`` and ``sword-text-sparv``
    (``apt-get install -y sword-text-kjv sword-text-sparv``, as root); when they are not in
    `sword_path` this raises with that command.  Reads ``engKJV2006eb`` and ``spaRV1909eb`` with
    ``pysword`` (install it with ``pip install 'cvbayes[bible]'`` or ``pip install
    pysword==0.2.8``) and writes ``<cache>/bible/engKJV2006eb.txt`` and
    ``spaRV1909eb.txt`` (format in the module docstring). Takes about 100 s a module;
    `load_bible` then reads the text files in seconds.

    Returns
    -------
    pathlib.Path
        ``<cache>/bible``.

    Raises
    ------
    RuntimeError
        If the SWORD modules are not installed (the message gives the command), or pysword is not.
    """
    folder = corpus_folder(cache, "bible")
    paths = {module: _cache_file(folder, module) for module in BIBLE_MODULES.values()}
    if all(path.is_file() for path in paths.values()):
        return folder
    sword_path = Path(sword_path)
    _check_sword(sword_path)
    try:
        from pysword.modules import SwordModules
    except ImportError:
        raise RuntimeError(
            "reading the SWORD modules needs pysword: "
            f"`{sys.executable} -m pip install 'cvbayes[bible]'` (or `pip install {PYSWORD_PYPI}`)"
        ) from None
    modules = SwordModules(str(sword_path))
    found = modules.parse_modules()
    folder.mkdir(parents=True, exist_ok=True)
    for module, path in paths.items():
        if path.is_file():
            continue
        if module not in found:
            raise RuntimeError(f"pysword finds no module {module} in {sword_path} (it finds {sorted(found)})")
        if progress:
            print(f"reading {module} from {sword_path} (about 100 s) ...", file=sys.stderr)
        _write_module_cache(modules, module, path, progress)
    if progress:
        print(f"KJV and RV1909 written to {folder}", file=sys.stderr)
    return folder


def read_bible_cache(path: str | os.PathLike[str]) -> list[tuple[str, list[tuple[str, tuple[str, ...]]]]]:
    """Read one cached module: ``[(verse_id, [(form, strong_numbers)])]`` in file order.

    Raises
    ------
    CorpusFormatError
        On a malformed line (the message names the file and line).
    """
    path = Path(path)
    verses = []
    seen = set()
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line or line.startswith("#"):
                continue
            verse, tab, text = line.partition("\t")
            if not tab or _VERSE_ID.fullmatch(verse) is None:
                raise CorpusFormatError("expected BBCCCVVV<TAB>tokens", path, number)
            if verse in seen:
                raise CorpusFormatError(f"verse {verse} occurs twice", path, number)
            seen.add(verse)
            tokens = []
            for cell in text.split():
                form, bar, numbers = cell.partition("|")
                strongs = tuple(numbers.split("+")) if bar else ()
                if not form or (bar and not all(_STRONG.fullmatch("strong:" + n) for n in strongs)):
                    raise CorpusFormatError(f"malformed token {cell!r} (expected form or form|H123+G45)",
                                            path, number)
                tokens.append((form, strongs))
            verses.append((verse, tokens))
    if not verses:
        raise CorpusFormatError("file contains no verses", path)
    return verses


def load_bible(
    max_verses: int | None = None,
    cache: str | os.PathLike[str] | None = None,
    books: Iterable[int] | None = None,
    punctuation: bool = False,
) -> ParallelVerses:
    """Load KJV English (source) and RV1909 Spanish (target), verse-aligned, with silver links.

    A link joins English word i and Spanish word j of a verse when they share a Strong's
    number (see the module docstring). Verses empty on either side are dropped (counted in
    ``notes``).

    Parameters
    ----------
    max_verses : int, optional
        Keep the first N verses (canonical order, Genesis first) after the other filters.
    cache : str or os.PathLike, optional
        The cache folder that `fetch_bible` filled; `cache_dir()` by default.
    books : iterable of int, optional
        Book numbers to keep, 1 (Genesis) to 66 (Revelation).
    punctuation : bool, default False
        Keep punctuation tokens (they never carry Strong's numbers).

    Returns
    -------
    ParallelVerses
        With ``source_marked`` / ``target_marked`` telling which words are tagged. All of
        it: 31,084 verses, 790,653 English and 703,741 Spanish words, 743,778 silver links.

    Raises
    ------
    FileNotFoundError
        If the text has not been cached; run ``cvbayes data fetch bible``.
    CorpusFormatError
        On a malformed cache file, or if the two files do not list the same verses.
    """
    folder = corpus_folder(cache, "bible")
    paths = [_cache_file(folder, BIBLE_MODULES[side]) for side in ("english", "spanish")]
    if not all(path.is_file() for path in paths):
        raise FileNotFoundError(
            f"the KJV / RV1909 text is not cached in {folder}; run `cvbayes data fetch bible` "
            "(needs the SWORD modules from apt and `pip install 'cvbayes[bible]'`)"
        )
    if max_verses is not None and max_verses < 1:
        raise ValueError(f"max_verses must be positive, got {max_verses}")
    wanted = _books(books, range(1, 67))
    english, spanish = (read_bible_cache(path) for path in paths)
    if [v for v, _ in english] != [v for v, _ in spanish]:
        ids_en, ids_es = [v for v, _ in english], [v for v, _ in spanish]
        first = next((a, b) for a, b in zip(ids_en + [None], ids_es + [None]) if a != b)
        raise CorpusFormatError(
            f"{paths[0].name} and {paths[1].name} list different verses (first difference: {first})", paths[1]
        )
    source, target, verse_ids, links, source_marked, target_marked = [], [], [], [], [], []
    empty = 0
    for (verse, en), (_, es) in zip(english, spanish):
        if wanted is not None and int(verse[:2]) not in wanted:
            continue
        if not punctuation:
            en = [token for token in en if _is_word(token[0])]
            es = [token for token in es if _is_word(token[0])]
        if not en or not es:
            empty += 1
            continue
        positions: dict[str, list[int]] = {}
        for j, (_, numbers) in enumerate(es):
            for number in numbers:
                positions.setdefault(number, []).append(j)
        verse_links = {(i, j) for i, (_, numbers) in enumerate(en) for n in numbers for j in positions.get(n, ())}
        source.append([form for form, _ in en])
        target.append([form for form, _ in es])
        source_marked.append([bool(numbers) for _, numbers in en])
        target_marked.append([bool(numbers) for _, numbers in es])
        verse_ids.append(verse)
        links.append(verse_links)
        if max_verses is not None and len(verse_ids) >= max_verses:
            break
    n_source = sum(map(len, source))
    n_target = sum(map(len, target))
    notes = {
        "verses_empty_on_a_side_dropped": empty,
        "source_marked_share": sum(map(sum, source_marked)) / max(n_source, 1),
        "target_marked_share": sum(map(sum, target_marked)) / max(n_target, 1),
        "punctuation": punctuation,
        "verses_without_links": sum(1 for verse_links in links if not verse_links),
    }
    description = (
        f"English KJV ({BIBLE_MODULES['english']}) -> Spanish RV1909 ({BIBLE_MODULES['spanish']}), from {folder}; "
        "one pair a verse, lowercased, "
        + ("punctuation kept" if punctuation else "punctuation dropped")
        + "; silver links between words sharing a Strong's number"
    )
    return ParallelVerses(source, target, verse_ids, links, source_marked, target_marked, description, notes)

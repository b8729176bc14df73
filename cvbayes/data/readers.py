"""Readers for plain-text, word/TAG and CoNLL-U corpora.

Every reader returns a `Corpus` whose token ids are one flat int32 array:
the Python lists built while reading are converted once, at the end.
"""

from __future__ import annotations

import bisect
import io
import os
import re
from collections.abc import Callable, Iterator, Sequence

import conllu
import numpy as np

from .corpus import Corpus
from .errors import CorpusFormatError, read_text_file
from .vocabulary import Vocabulary

__all__ = ["read_conllu", "read_tagged", "read_text"]

PathLike = str | os.PathLike[str]

# CoNLL-U word ids: plain integers, multiword ranges ("1-2") and empty nodes ("1.1").
_CONLLU_ID = re.compile(r"[1-9][0-9]*|[1-9][0-9]*-[1-9][0-9]*|[0-9]+\.[1-9][0-9]*")
_CONLLU_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
# conllu would parse these columns into Python objects (and reject some
# values); they are not used here, so keep them as raw strings.
_RAW_COLUMNS = {name: (lambda fields, i: fields[i]) for name in ("feats", "head", "deps", "misc")}


def _read_lines(path: PathLike, encoding: str) -> list[str]:
    """Decode a whole file and split it into lines, without line terminators."""
    text = read_text_file(path, encoding)
    if not text:
        raise CorpusFormatError("file is empty", path)
    # Not str.splitlines(): it also breaks at form feeds, U+2028 etc., which
    # would shift the line numbers reported in errors.
    return [line.removesuffix("\r") for line in text.split("\n")]


def _encode(
    symbols: list[str],
    vocabulary: Vocabulary,
    kind: str,
    line_of: Callable[[int], int],
    path: PathLike,
) -> np.ndarray:
    """Encode symbols; report one that a closed vocabulary lacks by its line.

    `line_of` maps a token's position in `symbols` to its line in the file.
    """
    try:
        return vocabulary.encode(symbols)
    except KeyError:
        position = next(i for i, symbol in enumerate(symbols) if symbol not in vocabulary)
        noun = "vocabulary" if kind == "word" else "tag set"
        raise CorpusFormatError(
            f"{kind} {symbols[position]!r} is not in the given {noun}", path, line_of(position)
        ) from None


def _build(
    path: PathLike,
    words: list[str],
    offsets: list[int],
    line_of: Callable[[int], int],
    vocabulary: Vocabulary | None,
    min_count: int,
    tags: list[str] | None = None,
    tagset: Vocabulary | None = None,
) -> Corpus:
    """Turn the lists gathered while reading into a `Corpus`."""
    if not words:
        raise CorpusFormatError("file contains no tokens", path)
    if vocabulary is None:
        vocabulary = Vocabulary.from_counts(words, min_count=min_count)
    ids = _encode(words, vocabulary, "word", line_of, path)
    gold = None
    if tags is not None:
        if tagset is None:
            tagset = Vocabulary.from_counts(tags, unknown=False)
        gold = _encode(tags, tagset, "tag", line_of, path)
    return Corpus(
        ids,
        np.array(offsets, dtype=np.int64),
        vocabulary=vocabulary,
        gold=gold,
        tagset=tagset,
        source=os.fspath(path),
    )


def _sentence_lines(path: PathLike, encoding: str) -> list[tuple[int, list[str]]]:
    """(line number, whitespace-separated tokens) of every non-blank line: one sentence a line."""
    return [(number, tokens) for number, line in enumerate(_read_lines(path, encoding), start=1)
            if (tokens := line.split())]


def _sentence_offsets(lines: list[tuple[int, list[str]]]) -> tuple[list[int], Callable[[int], int]]:
    """The offsets of `_sentence_lines`' sentences in their tokens laid end to end, and the line of a
    token by its position there."""
    offsets = [0]
    for _, tokens in lines:
        offsets.append(offsets[-1] + len(tokens))

    def line_of(position: int) -> int:
        return lines[bisect.bisect_right(offsets, position) - 1][0]

    return offsets, line_of


def read_text(
    path: PathLike,
    *,
    vocabulary: Vocabulary | None = None,
    min_count: int = 1,
    lowercase: bool = False,
    encoding: str = "utf-8",
) -> Corpus:
    """Read one whitespace-tokenised sentence per line.

    Parameters
    ----------
    path : str or os.PathLike
    vocabulary : Vocabulary, optional
        Fixed vocabulary; words it lacks map to ``"<unk>"``. If None, one
        is built from the file.
    min_count : int, default 1
        When building the vocabulary, rarer words map to ``"<unk>"``.
    lowercase : bool, default False
        Lowercase every word before lookup.
    encoding : str, default "utf-8"

    Returns
    -------
    Corpus
        One sequence per non-blank line.

    Raises
    ------
    CorpusFormatError
        If the file is empty, has no tokens or is not valid in `encoding`.
    FileNotFoundError
        If `path` does not exist.
    """
    lines = _sentence_lines(path, encoding)
    words = [token.lower() if lowercase else token for _, tokens in lines for token in tokens]
    offsets, line_of = _sentence_offsets(lines)
    return _build(path, words, offsets, line_of, vocabulary, min_count)


def read_tagged(
    path: PathLike,
    sep: str = "/",
    tagset: Vocabulary | None = None,
    *,
    vocabulary: Vocabulary | None = None,
    min_count: int = 1,
    lowercase: bool = False,
    encoding: str = "utf-8",
) -> Corpus:
    """Read Brown/NLTK-style ``word/TAG`` tokens, one sentence per line.

    Parameters
    ----------
    path : str or os.PathLike
    sep : str, default "/"
        Separates word and tag. The tag follows the *last* `sep`, so words
        may contain it (``"1/2/CD"`` is the word ``"1/2"`` tagged ``CD``).
    tagset : Vocabulary, optional
        Fixed tag set, normally built with ``unknown=False`` so that an
        unexpected tag is an error. If None, one is built from the file.
    vocabulary, min_count, lowercase, encoding
        As in `read_text`; `lowercase` applies to words, not tags.

    Returns
    -------
    Corpus
        One sequence per non-blank line, with `gold` and `tagset` set.

    Raises
    ------
    CorpusFormatError
        As `read_text`, and for a token without `sep`, with an empty word or
        an empty tag, or with a tag outside a fixed `tagset`.
    """
    if not sep:
        raise ValueError("sep must be a non-empty string")
    lines = _sentence_lines(path, encoding)
    words: list[str] = []
    tags: list[str] = []
    for number, tokens in lines:
        for token in tokens:
            word, found, tag = token.rpartition(sep)
            if not found:
                raise CorpusFormatError(f"token {token!r} has no '{sep}TAG' part", path, number)
            if not word:
                raise CorpusFormatError(f"token {token!r} has an empty word", path, number)
            if not tag:
                raise CorpusFormatError(f"token {token!r} has an empty tag", path, number)
            words.append(word.lower() if lowercase else word)
            tags.append(tag)
    offsets, line_of = _sentence_offsets(lines)
    return _build(path, words, offsets, line_of, vocabulary, min_count, tags, tagset)


def _conllu_sentences(lines: Sequence[str], path: PathLike) -> list[list[int]]:
    """Validate CoNLL-U token lines; return the line numbers of each sentence's tokens.

    Sentences are split at blank lines exactly as `conllu.parse_incr` splits
    them, so the result lines up with its output one to one.
    """
    sentences: list[list[int]] = []
    current: list[int] | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        if current is None:
            current = []
            sentences.append(current)
        if stripped.startswith("#"):
            continue
        fields = stripped.split("\t")
        if len(fields) != len(_CONLLU_COLUMNS):
            raise CorpusFormatError(
                f"expected {len(_CONLLU_COLUMNS)} tab-separated fields, found {len(fields)}",
                path,
                number,
            )
        word_id = fields[0]
        first, dash, last = word_id.partition("-")
        if not _CONLLU_ID.fullmatch(word_id) or (dash and int(last) < int(first)):
            raise CorpusFormatError(f"invalid word id {word_id!r}", path, number)
        if "  " in stripped:
            # conllu also splits columns at runs of spaces, which would
            # shift every later field.
            raise CorpusFormatError("a field contains two consecutive spaces", path, number)
        current.append(number)
    return sentences


def _conllu_tokens(path: PathLike, encoding: str) -> Iterator[list[tuple[dict, int]]]:
    """The (token, line number) pairs of every block of a CoNLL-U file, validated by `_conllu_sentences`
    before the first is given (a block of comments only has none)."""
    lines = _read_lines(path, encoding)
    sentence_lines = _conllu_sentences(lines, path)
    parsed = conllu.parse_incr(
        io.StringIO("\n".join(lines)), fields=_CONLLU_COLUMNS, field_parsers=_RAW_COLUMNS
    )
    for sentence, numbers in zip(parsed, sentence_lines, strict=True):
        yield list(zip(sentence, numbers, strict=True))


def read_conllu(
    path: PathLike,
    tag: str | None = "upos",
    tagset: Vocabulary | None = None,
    *,
    vocabulary: Vocabulary | None = None,
    min_count: int = 1,
    lowercase: bool = False,
    encoding: str = "utf-8",
) -> Corpus:
    """Read a CoNLL-U treebank, one sequence per sentence.

    Words are the FORM column. Multiword-token ranges (``1-2``) and empty
    nodes (``1.1``) are skipped, so each sequence holds the syntactic words.

    Parameters
    ----------
    path : str or os.PathLike
    tag : {"upos", "xpos"} or None, default "upos"
        The column read into `gold`; None reads words only.
    tagset : Vocabulary, optional
        As in `read_tagged`.
    vocabulary, min_count, lowercase, encoding
        As in `read_text`; `lowercase` applies to words, not tags.

    Returns
    -------
    Corpus

    Raises
    ------
    CorpusFormatError
        As `read_text`, and for a token line without exactly 10
        tab-separated fields, an invalid word id, a missing (``_``) tag or a
        tag outside a fixed `tagset`.
    """
    if tag not in ("upos", "xpos", None):
        raise ValueError(f"tag must be 'upos', 'xpos' or None, got {tag!r}")
    words: list[str] = []
    tags: list[str] = []
    offsets = [0]
    token_lines: list[int] = []
    for sentence in _conllu_tokens(path, encoding):
        for token, number in sentence:
            if not isinstance(token["id"], int):
                continue
            form = token["form"]
            words.append(form.lower() if lowercase else form)
            token_lines.append(number)
            if tag is not None:
                # conllu reads "_" as None in XPOS but keeps it in UPOS.
                value = token[tag]
                if value is None or value == "_":
                    raise CorpusFormatError(f"word {form!r} has no {tag.upper()} tag", path, number)
                tags.append(value)
        # Comment-only blocks are not sentences.
        if sentence:
            offsets.append(len(words))
    return _build(
        path,
        words,
        offsets,
        token_lines.__getitem__,
        vocabulary,
        min_count,
        None if tag is None else tags,
        tagset,
    )

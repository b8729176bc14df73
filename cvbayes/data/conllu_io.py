"""Lossless CoNLL-U: read a treebank, replace one column, write it back byte for byte.

A `ConlluDocument` keeps every line of the file as written: comments (``# sent_id``,
``# text`` and any other), multiword-token ranges (``1-2``), empty nodes (``5.1``), the
ten tab-separated columns of every token line (``_`` included), the blank lines between
sentences (however many), a byte-order mark, the line terminator (``\\n`` or ``\\r\\n``)
and whether the last line ends with one. A caller replaces one column of the ordinary
words (integer IDs) with `ConlluDocument.replace_column`, or one ``key=value`` item of
their MISC column with `ConlluDocument.set_misc`; `ConlluDocument.to_text` then returns
the file with those fields changed and every other byte as it was (CoNLL-U format:
https://universaldependencies.org/format.html).

Token lines are kept as strings and split into fields only when a column is read or
replaced, so a treebank costs about twice its size in memory (31 MB for the 13 MB of
EWT train, 204,576 words, read in about 0.5 s).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import write_bytes
from .errors import CorpusFormatError

__all__ = [
    "COLUMNS",
    "ConlluDocument",
    "ConlluSentence",
    "parse_conllu_text",
    "read_conllu_document",
    "write_conllu_document",
]

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
_COLUMN_INDEX = {name: i for i, name in enumerate(COLUMNS)}
_WORD_ID = re.compile(r"[1-9][0-9]*")
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_EMPTY_ID = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)")
_BAD_FIELD = re.compile(r"[\t\n\r]|^\s|\s$")


def _column_index(column: str) -> int:
    index = _COLUMN_INDEX.get(column.lower())
    if index is None:
        raise ValueError(f"unknown CoNLL-U column {column!r}; choose one of {', '.join(COLUMNS)}")
    return index


def _check_field(value: str, what: str) -> None:
    if not value or _BAD_FIELD.search(value):
        raise ValueError(
            f"{what} {value!r} cannot be written: a CoNLL-U field is non-empty ('_' for "
            "none), without tabs, line breaks or surrounding spaces"
        )


def _misc_with(misc: str, key: str, value: str | None) -> str:
    """`misc` with its first ``key=...`` item set to `value` (appended if absent; removed if None)."""
    items = [] if misc == "_" else misc.split("|")
    prefix = key + "="
    for i, item in enumerate(items):
        if item.startswith(prefix):
            if value is None:
                del items[i]
            else:
                items[i] = prefix + value
            break
    else:
        if value is not None:
            items.append(prefix + value)
    return "|".join(items) if items else "_"


@dataclass(eq=False, slots=True)
class ConlluSentence:
    """One sentence block of a CoNLL-U file: its lines as written.

    Attributes
    ----------
    lines : list of str
        Every line of the block (comments, words, ranges, empty nodes), without the line
        terminator.
    word_rows : list of int
        Indices into `lines` of the ordinary words (integer IDs), in order.
    first_line : int
        The 1-based line number of ``lines[0]`` in the file read (for error messages).
    blank_after : int
        The number of blank lines that followed the block in the file (1 in a well-formed
        file; 0 for a last block without a closing blank line).
    path : str or None
        The file the sentence was read from.
    """

    lines: list[str]
    word_rows: list[int]
    first_line: int = 1
    blank_after: int = 1
    path: str | None = None

    def __len__(self) -> int:
        return len(self.word_rows)

    def __repr__(self) -> str:
        sent_id = self.metadata.get("sent_id")
        name = f" {sent_id}" if sent_id else ""
        return f"<ConlluSentence{name}: {len(self)} words, line {self.first_line}>"

    @property
    def n_words(self) -> int:
        """The number of ordinary words (ranges and empty nodes not counted)."""
        return len(self.word_rows)

    def line_number(self, word: int) -> int:
        """The 1-based file line of word `word` (0-based position among the ordinary words)."""
        return self.first_line + self.word_rows[word]

    @property
    def metadata(self) -> dict[str, str | None]:
        """The comments as a dict: ``# key = value`` gives ``{key: value}``; a comment
        without `` = `` gives ``{text: None}``. The first of repeated keys wins."""
        found: dict[str, str | None] = {}
        for line in self.lines:
            if not line.startswith("#"):
                continue
            body = line[1:].strip()
            key, sep, value = body.partition(" = ")
            if not sep and body.endswith(" ="):
                key, sep, value = body[:-2], " = ", ""
            found.setdefault(key.strip(), value.strip() if sep else None)
        return found

    def column(self, column: str) -> list[str]:
        """The `column` field of every ordinary word, as written (``_`` included)."""
        index = _column_index(column)
        lines = self.lines
        return [lines[row].split("\t")[index] for row in self.word_rows]

    def heads(self) -> np.ndarray:
        """The HEAD column as 1-based integers (0 = root), one per ordinary word.

        Raises
        ------
        CorpusFormatError
            If a HEAD is not an integer between 0 and the number of words.
        """
        heads = np.empty(len(self.word_rows), dtype=np.int64)
        for i, head in enumerate(self.column("head")):
            if not head.isascii() or not head.isdigit() or int(head) > len(self.word_rows):
                raise CorpusFormatError(
                    f"HEAD {head!r} is not a word number from 0 to {len(self.word_rows)}",
                    self.path,
                    self.line_number(i),
                )
            heads[i] = int(head)
        return heads

    def _check_count(self, values: Sequence[object]) -> None:
        if len(values) != len(self.word_rows):
            raise ValueError(
                f"sentence at line {self.first_line} has {len(self.word_rows)} words, "
                f"got {len(values)} values"
            )

    def _column_values(self, index: int, values: Sequence[object]) -> list[str]:
        """`values` as field texts for column `index`, checked."""
        if index == 0:
            raise ValueError("the ID column cannot be replaced: it defines the sentence's structure")
        self._check_count(values)
        texts = [str(value) for value in values]
        for text in texts:
            _check_field(text, COLUMNS[index].upper())
            if index == 6 and not (
                text.isascii() and text.isdigit() and int(text) <= len(self.word_rows)
            ):
                raise ValueError(f"HEAD {text!r} is not a word number from 0 to {len(self.word_rows)}")
        return texts

    def _misc_values(self, key: str, values: Sequence[object | None]) -> list[str | None]:
        """`values` as MISC item values for `key`, checked."""
        if not key or any(ch in key for ch in "|= \t\n\r"):
            raise ValueError(f"MISC key {key!r} must be non-empty, without '|', '=' or spaces")
        self._check_count(values)
        texts = [None if value is None else str(value) for value in values]
        for text in texts:
            if text is not None:
                _check_field(text, f"MISC value of {key}")
                if "|" in text:
                    raise ValueError(f"MISC value {text!r} must not contain '|'")
        return texts

    def _write_column(self, index: int, texts: list[str]) -> None:
        lines = self.lines
        for row, text in zip(self.word_rows, texts):
            fields = lines[row].split("\t")
            fields[index] = text
            lines[row] = "\t".join(fields)

    def _write_misc(self, key: str, texts: list[str | None]) -> None:
        lines = self.lines
        for row, text in zip(self.word_rows, texts):
            head, _, misc = lines[row].rpartition("\t")
            lines[row] = head + "\t" + _misc_with(misc, key, text)

    def replace_column(self, column: str, values: Sequence[object]) -> None:
        """Write `values` (one per ordinary word, as ``str(value)``) into `column`.

        Ranges, empty nodes, comments and every other field keep their text.

        Raises
        ------
        ValueError
            For the ID column, a wrong number of values, a value that is not a valid
            field, or a HEAD outside 0 .. n_words. Nothing is written then.
        """
        index = _column_index(column)
        self._write_column(index, self._column_values(index, values))

    def set_misc(self, key: str, values: Sequence[object | None]) -> None:
        """Set ``key=value`` in the MISC column of every ordinary word.

        The first existing ``key=`` item is replaced in place, otherwise the item is
        appended (``_`` becomes ``key=value``); a value of None removes the item (an
        emptied MISC becomes ``_``). Other items keep their order and text.
        """
        self._write_misc(key, self._misc_values(key, values))


@dataclass(eq=False)
class ConlluDocument:
    """A CoNLL-U file as a list of `ConlluSentence` plus what lies between them.

    Attributes
    ----------
    sentences : list of ConlluSentence
        The blocks of non-blank lines, in file order. A block of comments only (no token
        line) is kept as a sentence without words.
    path : str or None
        The file read.
    newline : {"\\n", "\\r\\n"}
        The line terminator of the file.
    bom : bool
        The file began with a UTF-8 byte-order mark.
    leading_blank_lines : int
        Blank lines before the first block.
    final_newline : bool
        The last line ended with `newline`.
    """

    sentences: list[ConlluSentence]
    path: str | None = None
    newline: str = "\n"
    bom: bool = False
    leading_blank_lines: int = 0
    final_newline: bool = True

    def __post_init__(self) -> None:
        if self.newline not in ("\n", "\r\n"):
            raise ValueError(f"newline must be '\\n' or '\\r\\n', got {self.newline!r}")

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self) -> Iterator[ConlluSentence]:
        return iter(self.sentences)

    def __getitem__(self, index: int) -> ConlluSentence:
        return self.sentences[index]

    def __repr__(self) -> str:
        return f"<ConlluDocument {self.path or ''}: {len(self)} sentences, {self.n_words} words>"

    @property
    def n_words(self) -> int:
        """The number of ordinary words in all sentences."""
        return sum(len(sentence.word_rows) for sentence in self.sentences)

    def column(self, column: str) -> list[list[str]]:
        """`ConlluSentence.column` of every sentence."""
        return [sentence.column(column) for sentence in self.sentences]

    def _per_sentence(self, values: Sequence[object]) -> Iterator[tuple[ConlluSentence, Sequence[object]]]:
        n_words = self.n_words
        if len(values) != n_words:
            raise ValueError(
                f"expected {n_words} values, one per ordinary word of the document, got {len(values)}"
            )
        start = 0
        for sentence in self.sentences:
            stop = start + len(sentence.word_rows)
            yield sentence, values[start:stop]
            start = stop

    def replace_column(self, column: str, values: Sequence[object]) -> None:
        """Write `values`, one per ordinary word of the document in order, into `column`.

        See `ConlluSentence.replace_column`; all values are checked before any is written.
        """
        index = _column_index(column)
        checked = [(s, s._column_values(index, part)) for s, part in self._per_sentence(values)]
        for sentence, texts in checked:
            sentence._write_column(index, texts)

    def set_misc(self, key: str, values: Sequence[object | None]) -> None:
        """`ConlluSentence.set_misc` with `values` given for every ordinary word in order;
        all values are checked before any is written."""
        checked = [(s, s._misc_values(key, part)) for s, part in self._per_sentence(values)]
        for sentence, texts in checked:
            sentence._write_misc(key, texts)

    def select(self, indices: Iterable[int]) -> ConlluDocument:
        """A document of copies of the chosen sentences, each followed by one blank line,
        with this one's line terminator and byte-order mark: a well-formed file whatever
        the blank lines were here."""
        chosen = [self.sentences[i] for i in indices]
        copies = [ConlluSentence(list(s.lines), list(s.word_rows), s.first_line, 1, s.path) for s in chosen]
        return ConlluDocument(copies, self.path, self.newline, self.bom, 0, True)

    def to_text(self) -> str:
        """The file's text: what was read, with the replaced fields changed."""
        lines = [""] * self.leading_blank_lines
        for sentence in self.sentences:
            lines += sentence.lines
            lines += [""] * sentence.blank_after
        text = self.newline.join(lines)
        if self.final_newline and lines:
            text += self.newline
        return ("\ufeff" if self.bom else "") + text

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write `to_text` to `path` as UTF-8 (atomically)."""
        write_bytes(path, self.to_text().encode("utf-8"))


def _decode(data: bytes, path: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        bad = data[error.start : error.end]
        raise CorpusFormatError(f"invalid UTF-8 bytes {bad!r}", path, line) from None


def _newline_of(text: str, path: str | None) -> str:
    """The file's line terminator; mixed terminators are refused."""
    first = text.find("\n")
    newline = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"
    n_crlf = text.count("\r\n")
    if newline == "\n" and n_crlf:
        line = text.count("\n", 0, text.find("\r\n")) + 1
        raise CorpusFormatError("mixed line endings: '\\r\\n' in a '\\n' file", path, line)
    if newline == "\r\n" and n_crlf != text.count("\n"):
        bare = re.search(r"(?<!\r)\n", text)
        line = text.count("\n", 0, bare.start()) + 1
        raise CorpusFormatError("mixed line endings: '\\n' in a '\\r\\n' file", path, line)
    return newline


def _check_token_line(line: str, path: str | None, number: int, expected_word: int) -> int:
    """Validate a token line; return 1 for an ordinary word, 0 for a range or empty node."""
    if line.isspace():
        raise CorpusFormatError("line holds only whitespace", path, number)
    if line.count("\t") != 9:
        raise CorpusFormatError(
            f"{line.count(chr(9)) + 1} tab-separated fields, CoNLL-U has 10", path, number
        )
    if "\t\t" in line or line[0] == "\t" or line[-1] == "\t":
        column = COLUMNS[line.split("\t").index("")].upper()
        raise CorpusFormatError(f"empty {column} field (CoNLL-U writes '_' for none)", path, number)
    token_id = line[: line.index("\t")]
    if token_id == str(expected_word):
        return 1
    if _WORD_ID.fullmatch(token_id):
        raise CorpusFormatError(
            f"word ID {token_id} where {expected_word} was expected", path, number
        )
    match = _RANGE_ID.fullmatch(token_id)
    if match:
        start, end = int(match.group(1)), int(match.group(2))
        if start != expected_word or end <= start:
            raise CorpusFormatError(
                f"multiword range {token_id} must start at the next word ({expected_word}) "
                "and span at least two words",
                path,
                number,
            )
        return 0
    match = _EMPTY_ID.fullmatch(token_id)
    if match:
        if int(match.group(1)) != expected_word - 1:
            raise CorpusFormatError(
                f"empty node {token_id} must follow word {expected_word - 1}", path, number
            )
        return 0
    raise CorpusFormatError(
        f"bad ID {token_id!r}: expected a word number, a range like 1-2 or an empty node like 5.1",
        path,
        number,
    )


def parse_conllu_text(text: str, path: str | os.PathLike[str] | None = None) -> ConlluDocument:
    """Parse CoNLL-U `text` into a `ConlluDocument` (see `read_conllu_document`)."""
    where = None if path is None else os.fspath(path)
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    newline = _newline_of(text, where)
    lines = text.split(newline) if text else []
    final_newline = bool(lines) and lines[-1] == ""
    if final_newline:
        lines.pop()
    sentences: list[ConlluSentence] = []
    leading = 0
    block: list[str] = []
    rows: list[int] = []
    start = 0
    expected_word, word_prefix = 1, "1\t"
    for index, line in enumerate(lines):
        if not line:
            if block:
                sentences.append(ConlluSentence(block, rows, start + 1, 1, where))
                block, rows, expected_word, word_prefix = [], [], 1, "1\t"
            elif sentences:
                sentences[-1].blank_after += 1
            else:
                leading += 1
            continue
        if not block:
            start = index
        if line[0] != "#":
            # The common case, an ordinary word with the expected ID, is checked inline.
            if (
                line.startswith(word_prefix)
                and line.count("\t") == 9
                and "\t\t" not in line
                and line[-1] != "\t"
            ) or _check_token_line(line, where, index + 1, expected_word):
                rows.append(len(block))
                expected_word += 1
                word_prefix = f"{expected_word}\t"
        block.append(line)
    if block:
        sentences.append(ConlluSentence(block, rows, start + 1, 0, where))
    return ConlluDocument(sentences, where, newline, bom, leading, final_newline)


def read_conllu_document(path: str | os.PathLike[str]) -> ConlluDocument:
    """Read a CoNLL-U file losslessly.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    ConlluDocument
        Its `ConlluDocument.to_text` gives the file's text back unchanged.

    Raises
    ------
    CorpusFormatError
        Naming the file and line: invalid UTF-8, mixed line endings, a token line without
        exactly 10 tab-separated fields or with an empty field, an ID that is not a word
        number, range or empty node, word IDs that do not run 1, 2, 3 ... within a sentence,
        a range that does not start at the next word, an empty node not after the word it
        names, or a line of spaces only.
    """
    data = Path(path).read_bytes()
    return parse_conllu_text(_decode(data, os.fspath(path)), path)


def write_conllu_document(document: ConlluDocument, path: str | os.PathLike[str]) -> None:
    """Write `document` to `path` (see `ConlluDocument.write`)."""
    document.write(path)

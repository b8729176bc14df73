"""Exceptions raised while reading corpora."""

from __future__ import annotations

import os

__all__ = ["CorpusFormatError", "read_text_file"]


class CorpusFormatError(ValueError):
    """A corpus file (or in-memory corpus) is malformed.

    Parameters
    ----------
    message : str
        What is wrong, e.g. ``"token 'foo' has no '/TAG' part"``.
    path : str or os.PathLike, optional
        The file the problem was found in.
    line : int, optional
        The 1-based line number of the problem within `path`.

    Attributes
    ----------
    message : str
        The bare message, without file and line.
    path : str or None
        The file name as given, converted to ``str``.
    line : int or None
        The 1-based line number.

    Examples
    --------
    >>> str(CorpusFormatError("token 'foo' has no '/TAG' part", "corpus.txt", 12))
    "corpus.txt, line 12: token 'foo' has no '/TAG' part"
    """

    def __init__(
        self,
        message: str,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.line = line
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.line is not None:
            where.append(f"line {self.line}")
        if not where:
            return self.message
        return f"{', '.join(where)}: {self.message}"

    def __reduce__(self):
        # The default reduction would pass the formatted text back as the
        # message and lose `path` and `line` (e.g. across multiprocessing).
        return (type(self), (self.message, self.path, self.line))


def read_text_file(path, encoding: str = "utf-8", error=CorpusFormatError) -> str:
    """The whole of a text file, decoded, without a byte-order mark.

    Bytes that are not ``encoding`` raise ``error`` (a `CorpusFormatError` class) naming the file and
    the line of the first bad byte.
    """
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as problem:
        # everything before the first bad byte decodes, so its newlines give the line number
        line = data.count(b"\n", 0, problem.start) + 1
        bad = data[problem.start:problem.end]
        raise error(f"invalid {encoding} bytes {bad!r}", path, line) from problem
    # byte-order marks are common in files saved by Windows editors
    return text.removeprefix("\ufeff")

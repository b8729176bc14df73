"""Mapping between symbols (words, tags) and integer ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

import numpy as np

__all__ = ["Vocabulary"]

UNKNOWN = "<unk>"


class Vocabulary:
    """A bijection between strings and the integer ids ``0 .. len - 1``.

    Parameters
    ----------
    symbols : sequence of str, default ()
        The known symbols, in id order. Must not contain duplicates, nor
        ``"<unk>"`` when `unknown` is true.
    unknown : bool, default True
        Reserve id 0 for the unknown-word symbol ``"<unk>"``; every symbol
        not in the vocabulary then maps to it. Tag sets use ``False`` so that
        an unexpected tag is an error rather than a silent ``"<unk>"``.

    Examples
    --------
    >>> v = Vocabulary(["the", "cat"])
    >>> v.symbols
    ['<unk>', 'the', 'cat']
    >>> v.encode(["the", "dog"]).tolist()
    [1, 0]
    """

    def __init__(self, symbols: Sequence[str] = (), unknown: bool = True) -> None:
        self._unknown = bool(unknown)
        self._symbols: list[str] = [UNKNOWN] if self._unknown else []
        self._index: dict[str, int] = {}
        for symbol in symbols:
            if not isinstance(symbol, str):
                raise TypeError(f"vocabulary symbols must be str, got {type(symbol).__name__}")
            if symbol == UNKNOWN and self._unknown:
                raise ValueError(f"{UNKNOWN!r} is reserved for id 0 when unknown=True")
            if symbol in self._index:
                raise ValueError(f"duplicate vocabulary symbol {symbol!r}")
            self._index[symbol] = len(self._symbols)
            self._symbols.append(symbol)
        if self._unknown:
            self._index[UNKNOWN] = 0

    @classmethod
    def from_counts(
        cls,
        tokens: Iterable[str],
        min_count: int = 1,
        max_size: int | None = None,
        unknown: bool = True,
    ) -> Vocabulary:
        """Build a vocabulary from the symbols of a token stream.

        Parameters
        ----------
        tokens : iterable of str
            The tokens to count.
        min_count : int, default 1
            Keep only symbols seen at least this many times.
        max_size : int, optional
            Upper bound on ``len(vocabulary)``, ``"<unk>"`` included; the
            most frequent symbols are kept.
        unknown : bool, default True
            See `Vocabulary`. With ``False``, dropped symbols cannot be
            encoded at all.

        Returns
        -------
        Vocabulary
            Symbols ordered by decreasing count, ties alphabetically, so the
            ids do not depend on the order of the tokens.
        """
        if min_count < 1:
            raise ValueError(f"min_count must be at least 1, got {min_count}")
        if max_size is not None and max_size < int(unknown):
            raise ValueError(f"max_size must be at least {int(unknown)}, got {max_size}")
        counts = Counter(tokens)
        if unknown:
            # The literal "<unk>" already has id 0.
            counts.pop(UNKNOWN, None)
        kept = sorted(
            (symbol for symbol, count in counts.items() if count >= min_count),
            key=lambda symbol: (-counts[symbol], symbol),
        )
        if max_size is not None:
            kept = kept[: max_size - int(unknown)]
        return cls(kept, unknown=unknown)

    def __len__(self) -> int:
        return len(self._symbols)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self._index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self._unknown == other._unknown and self._symbols == other._symbols

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, unknown={self._unknown})"

    @property
    def symbols(self) -> list[str]:
        """All symbols in id order (a new list)."""
        return list(self._symbols)

    @property
    def unknown_id(self) -> int | None:
        """The id of ``"<unk>"``: 0, or None when there is none."""
        return 0 if self._unknown else None

    def index(self, symbol: str) -> int:
        """Return the id of `symbol`.

        Raises
        ------
        KeyError
            If `symbol` is unknown and the vocabulary has no ``"<unk>"``.
        """
        i = self._index.get(symbol)
        if i is not None:
            return i
        if self._unknown:
            return 0
        raise KeyError(f"symbol {symbol!r} is not in the vocabulary")

    def symbol(self, i: int) -> str:
        """Return the symbol with id `i`.

        Raises
        ------
        IndexError
            If `i` is not in ``0 .. len - 1``.
        """
        if not 0 <= i < len(self._symbols):
            raise IndexError(f"id {i} is out of range for a vocabulary of size {len(self)}")
        return self._symbols[i]

    def encode(self, symbols: Sequence[str]) -> np.ndarray:
        """Map symbols to ids.

        Parameters
        ----------
        symbols : sequence of str

        Returns
        -------
        numpy.ndarray of int32, shape (len(symbols),)

        Raises
        ------
        KeyError
            Naming the first symbol not in a vocabulary without ``"<unk>"``.
        """
        default = 0 if self._unknown else -1
        ids = np.fromiter(
            map(self._index.get, symbols, repeat(default)), dtype=np.int32, count=len(symbols)
        )
        if not self._unknown:
            missing = np.flatnonzero(ids < 0)
            if missing.size:
                raise KeyError(f"symbol {symbols[missing[0]]!r} is not in the vocabulary")
        return ids

    def decode(self, ids: Any) -> list[str]:
        """Map ids back to symbols.

        Parameters
        ----------
        ids : array_like of int, 1-D

        Returns
        -------
        list of str
        """
        ids = np.asarray(ids)
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise ValueError("ids must be a 1-D array of integers")
        if ids.size and (ids.min() < 0 or ids.max() >= len(self._symbols)):
            raise IndexError(f"ids must lie in [0, {len(self)}) for this vocabulary")
        symbols = self._symbols
        return [symbols[i] for i in ids.tolist()]

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable description; see `from_json`."""
        start = 1 if self._unknown else 0
        return {"unknown": self._unknown, "symbols": self._symbols[start:]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Vocabulary:
        """Rebuild a vocabulary from the output of `to_json`."""
        try:
            return cls(data["symbols"], unknown=data["unknown"])
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a serialised Vocabulary: {error}") from error

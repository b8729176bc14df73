"""Ragged corpora: many variable-length sequences stored as one flat array."""

from __future__ import annotations

import itertools
import json
import operator
import os
import struct
import zipfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..files import atomic_write, checksum
from .errors import CorpusFormatError
from .vocabulary import Vocabulary

__all__ = ["Corpus", "as_corpus"]

_INT32_MAX = int(np.iinfo(np.int32).max)
_FORMAT_VERSION = 1


def _ids(values: Any, name: str, n_symbols: int | None) -> np.ndarray:
    """Check that `values` is a 1-D array of ids below `n_symbols`; return it as int32."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size:
        low, high = int(arr.min()), int(arr.max())
        if low < 0:
            raise ValueError(f"{name} must be non-negative, found {low}")
        if n_symbols is not None and high >= n_symbols:
            raise ValueError(
                f"{name} contain id {high} but the vocabulary has only {n_symbols} symbols"
            )
        if high > _INT32_MAX:
            raise ValueError(f"{name} contain id {high}, which does not fit in int32")
    return arr.astype(np.int32, copy=False)


def _features(values: Any) -> np.ndarray:
    """Check continuous observations of shape (N, D); return them as finite float64."""
    arr = np.asarray(values)
    if arr.ndim != 2:
        raise ValueError(
            f"float observations must have shape (N, D), got shape {arr.shape}; "
            "pass integer token ids for discrete data, or reshape 1-D features to (N, 1)"
        )
    if arr.shape[1] == 0:
        raise ValueError("float observations must have at least one feature column")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        raise ValueError("observations contain NaN or infinite values")
    return arr


def _memmap_member(path: str | os.PathLike[str], name: str) -> np.ndarray:
    """Memory-map the array `name` of an uncompressed ``.npz`` (read-only), not reading it.

    An uncompressed zip member's bytes lie as they are in the file, after its
    local header (30 bytes, then the file name and an extra field); they
    start with the ``.npy`` header, then the raw array.
    """
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise CorpusFormatError(
            f"member {name!r} is compressed, so it cannot be memory-mapped; "
            "load with mmap=False, or save again with Corpus.save (uncompressed)",
            path,
        )
    with open(path, "rb") as file:
        file.seek(info.header_offset)
        local = file.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise CorpusFormatError(f"member {name!r} has no valid zip local header", path)
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        file.seek(info.header_offset + 30 + name_length + extra_length)
        version = np.lib.format.read_magic(file)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
        else:
            raise CorpusFormatError(f"member {name!r} has .npy version {version}", path)
        offset = file.tell()
    if dtype.hasobject:
        raise CorpusFormatError(f"member {name!r} holds Python objects", path)
    if 0 in shape:
        # mmap cannot map zero bytes.
        return np.empty(shape, dtype=dtype)
    order = "F" if fortran else "C"
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)


def _offsets_from_lengths(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _concatenate(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
    # Empty parts are dropped because `np.asarray([])` is float64 and would
    # otherwise promote integer data to float.
    parts = [part for part in parts if part.size]
    return np.concatenate(parts) if parts else empty


class Corpus:
    """A collection of sequences stored as one flat array plus offsets.

    Sequence ``i`` is ``observations[offsets[i]:offsets[i + 1]]``. Keeping the
    data flat lets the inference kernels loop over plain contiguous arrays.

    Parameters
    ----------
    observations : array_like
        Either integer token ids of shape (N,), stored as int32, for discrete
        data; or float feature vectors of shape (N, D), stored as float64,
        for continuous data.
    offsets : array_like of int, shape (I + 1,)
        Sequence boundaries: ``offsets[0] == 0``, ``offsets[-1] == N`` and
        non-decreasing (empty sequences are allowed). Stored as int64.
    vocabulary : Vocabulary, optional
        The symbols behind discrete token ids.
    gold : array_like of int, shape (N,), optional
        Reference labels (e.g. part-of-speech tags), stored as int32.
    tagset : Vocabulary, optional
        The symbols behind `gold`.
    source : str, optional
        Where the data came from (a file name), for messages.

    Raises
    ------
    ValueError
        If shapes, dtypes or id ranges are inconsistent.

    See Also
    --------
    as_corpus : Convert the inputs accepted by ``fit`` methods.

    Notes
    -----
    Arrays that already have the stored dtype are kept, not copied.
    """

    def __init__(
        self,
        observations: Any,
        offsets: Any,
        vocabulary: Vocabulary | None = None,
        gold: Any = None,
        tagset: Vocabulary | None = None,
        source: str | None = None,
    ) -> None:
        obs = np.asarray(observations)
        if obs.dtype.kind in "iu":
            obs = _ids(obs, "token ids", None if vocabulary is None else len(vocabulary))
        elif obs.dtype.kind == "f":
            if vocabulary is not None:
                raise ValueError("a vocabulary only applies to integer token ids")
            obs = _features(obs)
        else:
            raise ValueError(
                "observations must be integer token ids or float feature vectors, "
                f"got dtype {obs.dtype}"
            )
        n_tokens = obs.shape[0]

        off = np.asarray(offsets)
        if off.ndim != 1 or off.size == 0 or off.dtype.kind not in "iu":
            raise ValueError("offsets must be a non-empty 1-D array of integers")
        if off[0] != 0 or off[-1] != n_tokens:
            raise ValueError(
                f"offsets must start at 0 and end at the number of tokens ({n_tokens}), "
                f"got {off[0]} and {off[-1]}"
            )
        # Compared rather than differenced: np.diff would wrap around for uint.
        if np.any(off[1:] < off[:-1]):
            raise ValueError("offsets must be non-decreasing")

        if gold is not None:
            gold = _ids(gold, "gold labels", None if tagset is None else len(tagset))
            if gold.shape[0] != n_tokens:
                raise ValueError(f"gold has {gold.shape[0]} labels but there are {n_tokens} tokens")

        self._observations = obs
        self._offsets = off.astype(np.int64, copy=False)
        self._vocabulary = vocabulary
        self._gold = gold
        self._tagset = tagset
        self._source = source

    @classmethod
    def from_sequences(
        cls,
        sequences: Sequence[Any],
        vocabulary: Vocabulary | None = None,
        gold: Sequence[Any] | None = None,
        tagset: Vocabulary | None = None,
    ) -> Corpus:
        """Build a corpus from one array per sequence.

        Parameters
        ----------
        sequences : sequence of array_like
            Either all 1-D integer token ids, or all 2-D float arrays with the
            same number of columns. Empty sequences are allowed; a corpus of
            only empty sequences is discrete.
        vocabulary : Vocabulary, optional
        gold : sequence of array_like of int, optional
            One label array per sequence, of matching lengths.
        tagset : Vocabulary, optional

        Returns
        -------
        Corpus
        """
        arrays = [np.asarray(seq) for seq in sequences]
        if not arrays:
            raise ValueError("need at least one sequence")
        kinds = set()
        for i, arr in enumerate(arrays):
            if arr.size == 0:
                continue
            if arr.dtype.kind in "iu" and arr.ndim == 1:
                kinds.add("discrete")
            elif arr.dtype.kind == "f" and arr.ndim == 2:
                kinds.add(("continuous", arr.shape[1]))
            else:
                raise ValueError(
                    f"sequence {i} must be 1-D integer token ids or a 2-D float array, "
                    f"got dtype {arr.dtype} and shape {arr.shape}"
                )
        if len(kinds) > 1:
            raise ValueError(
                "sequences mix integer and float data or have different numbers of features"
            )
        if kinds and kinds != {"discrete"}:
            ((_, n_features),) = kinds
            empty = np.empty((0, n_features), dtype=np.float64)
        else:
            empty = np.empty(0, dtype=np.int32)
        lengths = np.array([len(arr) for arr in arrays], dtype=np.int64)
        observations = _concatenate(arrays, empty)

        flat_gold = None
        if gold is not None:
            labels = [np.asarray(g) for g in gold]
            if len(labels) != len(arrays):
                raise ValueError(f"gold has {len(labels)} sequences, expected {len(arrays)}")
            for i, (g, n) in enumerate(zip(labels, lengths, strict=True)):
                if len(g) != n:
                    raise ValueError(f"gold sequence {i} has {len(g)} labels, expected {n}")
            flat_gold = _concatenate(labels, np.empty(0, dtype=np.int32))

        return cls(observations, _offsets_from_lengths(lengths), vocabulary, flat_gold, tagset)

    @classmethod
    def from_concatenated(
        cls,
        X: Any,
        lengths: Any = None,
        vocabulary: Vocabulary | None = None,
    ) -> Corpus:
        """Build a corpus from hmmlearn's layout: all sequences stacked, plus lengths.

        Parameters
        ----------
        X : array_like
            Integer token ids of shape (N,) or (N, 1) for discrete data, or
            floats of shape (N, D) for continuous data.
        lengths : array_like of int, optional
            The length of each sequence; must sum to N. None means that `X`
            is a single sequence.
        vocabulary : Vocabulary, optional

        Returns
        -------
        Corpus
        """
        X = np.asarray(X)
        if X.ndim == 0:
            raise ValueError("X must be an array of observations, got a scalar")
        if X.dtype.kind in "iu" and X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        elif X.dtype.kind in "iu" and X.ndim != 1:
            raise ValueError(f"integer observations must have shape (N,) or (N, 1), got {X.shape}")
        n = X.shape[0]
        if lengths is None:
            return cls(X, np.array([0, n], dtype=np.int64), vocabulary)
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or (lengths.size and lengths.dtype.kind not in "iu"):
            raise ValueError("lengths must be a 1-D sequence of integers")
        if lengths.size and lengths.min() < 0:
            raise ValueError("lengths must be non-negative")
        total = int(lengths.sum())
        if total != n:
            raise ValueError(f"lengths sum to {total} but X has {n} rows")
        return cls(X, _offsets_from_lengths(lengths.astype(np.int64)), vocabulary)

    @property
    def observations(self) -> np.ndarray:
        """The int32 (N,) token ids or float64 (N, D) feature vectors."""
        return self._observations

    @property
    def offsets(self) -> np.ndarray:
        """The int64 (I + 1,) sequence boundaries."""
        return self._offsets

    @property
    def vocabulary(self) -> Vocabulary | None:
        """The symbols behind the token ids, if known."""
        return self._vocabulary

    @property
    def gold(self) -> np.ndarray | None:
        """The int32 (N,) reference labels, if any."""
        return self._gold

    @property
    def tagset(self) -> Vocabulary | None:
        """The symbols behind `gold`, if known."""
        return self._tagset

    @property
    def source(self) -> str | None:
        """Where the corpus came from (a file name), if known."""
        return self._source

    @property
    def n_sequences(self) -> int:
        """The number of sequences, I."""
        return len(self._offsets) - 1

    @property
    def n_tokens(self) -> int:
        """The total number of tokens, N."""
        return self._observations.shape[0]

    @property
    def lengths(self) -> np.ndarray:
        """The int64 (I,) sequence lengths."""
        return np.diff(self._offsets)

    @property
    def is_discrete(self) -> bool:
        """Whether the observations are integer token ids."""
        return self._observations.dtype.kind in "iu"

    def __len__(self) -> int:
        return self.n_sequences

    def __iter__(self) -> Iterator[np.ndarray]:
        obs = self._observations
        for start, stop in itertools.pairwise(self._offsets.tolist()):
            yield obs[start:stop]

    def __getitem__(self, key: Any) -> np.ndarray | Corpus:
        """Return sequence `key` as a view, or a sub-corpus for a slice or index array."""
        if isinstance(key, (int, np.integer)):
            n = self.n_sequences
            i = operator.index(key)
            if not -n <= i < n:
                raise IndexError(f"sequence {i} is out of range for a corpus of {n} sequences")
            i %= n
            return self._observations[self._offsets[i] : self._offsets[i + 1]]
        selected = np.arange(self.n_sequences)[key]
        if selected.ndim != 1:
            raise IndexError("a corpus can only be indexed by an int, a slice or a 1-D index array")
        return self._select(selected)

    def recoded(self, vocabulary: Vocabulary) -> Corpus:
        """The same corpus with its words encoded by ``vocabulary`` (a fitted model's).

        Words ``vocabulary`` lacks get its unknown id (see `Vocabulary`).

        Raises
        ------
        ValueError
            If this corpus has no vocabulary, or ``vocabulary`` has no ``"<unk>"`` and lacks one of
            its words.
        """
        if self._vocabulary is None:
            raise ValueError("a corpus of raw ids has no words to encode with another vocabulary")
        if vocabulary == self._vocabulary:
            return self
        # one lookup per word type, not per token
        types = np.unique(self._observations)
        try:
            renumber = np.zeros(len(self._vocabulary), dtype=np.int32)
            renumber[types] = vocabulary.encode(self._vocabulary.decode(types))
        except KeyError as error:
            raise ValueError(f"{error.args[0]} (it has no '<unk>' for unseen words)") from None
        return Corpus(renumber[self._observations], self._offsets, vocabulary, self._gold, self._tagset,
                      self._source)

    def _select(self, selected: np.ndarray) -> Corpus:
        lengths = self.lengths[selected]
        offsets = _offsets_from_lengths(lengths)
        # Position of every kept token in the old arrays: each selected run,
        # shifted from its new start back to its old start.
        shift = np.repeat(self._offsets[selected] - offsets[:-1], lengths)
        tokens = np.arange(offsets[-1]) + shift
        return Corpus(
            self._observations[tokens],
            offsets,
            self._vocabulary,
            None if self._gold is None else self._gold[tokens],
            self._tagset,
            self._source,
        )

    def __repr__(self) -> str:
        if self.is_discrete:
            kind = "discrete"
        else:
            kind = f"continuous, n_features={self._observations.shape[1]}"
        gold = ", gold" if self._gold is not None else ""
        source = f", source={self._source!r}" if self._source is not None else ""
        return (
            f"Corpus(n_sequences={self.n_sequences}, n_tokens={self.n_tokens}, "
            f"{kind}{gold}{source})"
        )

    def split_like(self, values: Any) -> list[np.ndarray]:
        """Cut a flat per-token array (e.g. decoded states) into sequences.

        Parameters
        ----------
        values : array_like, shape (N, ...)

        Returns
        -------
        list of numpy.ndarray
            One view of `values` per sequence.
        """
        values = np.asarray(values)
        if values.ndim == 0 or values.shape[0] != self.n_tokens:
            raise ValueError(
                f"expected {self.n_tokens} values, one per token, got shape {values.shape}"
            )
        return np.split(values, self._offsets[1:-1])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the corpus to a single ``.npz`` file, read back by `load`.

        The file is written atomically (`cvbayes.files.atomic_write`) with a ``checksum`` member, the
        SHA-256 of the others, which `load` verifies.

        Parameters
        ----------
        path : str or os.PathLike
            Written as given (no ``.npz`` suffix is added).
        """
        arrays = {
            "format_version": np.array(_FORMAT_VERSION),
            "observations": self._observations,
            "offsets": self._offsets,
        }
        if self._gold is not None:
            arrays["gold"] = self._gold
        if self._vocabulary is not None:
            arrays["vocabulary"] = np.array(json.dumps(self._vocabulary.to_json()))
        if self._tagset is not None:
            arrays["tagset"] = np.array(json.dumps(self._tagset.to_json()))
        if self._source is not None:
            arrays["source"] = np.array(self._source)
        arrays["checksum"] = np.array(checksum(arrays))
        # A file object stops numpy from appending ".npz" to the name.
        with atomic_write(path, "wb") as file:
            np.savez(file, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = False) -> Corpus:
        """Read a corpus written by `save`.

        Parameters
        ----------
        path : str or os.PathLike
        mmap : bool, default False
            Memory-map the token ids, offsets and gold labels (read-only)
            instead of reading them, so that a corpus larger than memory
            can be used and several processes share one copy. The file must
            be uncompressed, as `save` writes it, and stay in place while the
            corpus is used. Loading still scans the ids once to check them.

        Returns
        -------
        Corpus
            Its `source` is the one saved, or else `path`.

        Raises
        ------
        CorpusFormatError
            If the file is not a saved corpus or its contents are
            inconsistent or do not match its checksum (files saved before
            checksums are read unchecked), or, with `mmap`, an array member
            is compressed.
        """
        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, EOFError, zipfile.BadZipFile) as error:
            raise CorpusFormatError(f"not a saved corpus: {error}", path) from error
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise CorpusFormatError("not a saved corpus: expected an .npz archive", path)
        with archive:
            files = set(archive.files)
            if "format_version" not in files or int(archive["format_version"]) != _FORMAT_VERSION:
                raise CorpusFormatError(
                    f"not a saved corpus of format version {_FORMAT_VERSION}", path
                )
            missing = {"observations", "offsets"} - files
            if missing:
                raise CorpusFormatError(f"saved corpus lacks {sorted(missing)}", path)

            def vocabulary(key: str) -> Vocabulary | None:
                if key not in files:
                    return None
                return Vocabulary.from_json(json.loads(archive[key].item()))

            loaded: dict[str, np.ndarray] = {}

            def array(key: str) -> np.ndarray | None:
                if key not in files:
                    return None
                if key not in loaded:
                    loaded[key] = _memmap_member(path, key) if mmap else archive[key]
                return loaded[key]

            if "checksum" in files:
                try:
                    members = {key: array(key) for key in files - {"checksum"}}
                except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:
                    raise CorpusFormatError(f"damaged saved corpus (unreadable: {error})", path) from None
                if str(archive["checksum"]) != checksum(members):
                    raise CorpusFormatError("damaged saved corpus: its contents do not match the checksum "
                                            "written with them", path)

            try:
                return cls(
                    array("observations"),
                    array("offsets"),
                    vocabulary=vocabulary("vocabulary"),
                    gold=array("gold"),
                    tagset=vocabulary("tagset"),
                    source=archive["source"].item() if "source" in files else os.fspath(path),
                )
            except CorpusFormatError:
                raise
            except ValueError as error:
                raise CorpusFormatError(f"invalid saved corpus: {error}", path) from error


def as_corpus(X: Any, lengths: Any = None) -> Corpus:
    """Convert the inputs accepted by ``fit`` methods to a `Corpus`.

    Parameters
    ----------
    X : Corpus, list or tuple of array_like, or array_like
        A `Corpus` is returned unchanged. A list or tuple holds one array
        per sequence (see `Corpus.from_sequences`). Anything else is
        hmmlearn's concatenated layout (see `Corpus.from_concatenated`).
    lengths : array_like of int, optional
        Sequence lengths for the concatenated layout only.

    Returns
    -------
    Corpus

    Examples
    --------
    >>> as_corpus(np.array([0, 1, 1, 2, 0]), lengths=[2, 3]).lengths.tolist()
    [2, 3]
    >>> as_corpus([np.array([0, 1]), np.array([2])]).n_tokens
    3
    """
    if isinstance(X, Corpus):
        if lengths is not None:
            raise ValueError("lengths must not be given with a Corpus, which has its own")
        return X
    if isinstance(X, (list, tuple)):
        if lengths is not None:
            raise ValueError(
                "lengths is only for a concatenated array; "
                "a list or tuple is read as one array per sequence"
            )
        return Corpus.from_sequences(X)
    return Corpus.from_concatenated(X, lengths)

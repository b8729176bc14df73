"""Where fetched corpora live, and the calling form every corpus fetcher shares.

A fetcher is written as ``fetch(folder, progress) -> Path``: it fills `folder` unless the
folder is already complete. `fetcher` gives it the public form ``fetch_NAME(cache=None,
progress=True) -> Path`` and the documentation of those two arguments, written once here.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["cache_dir", "corpus_folder", "fetcher"]

_SHARED_SECTIONS = """Parameters
----------
cache : str or os.PathLike, optional
    The cache folder; `cache_dir()` by default.
progress : bool, default True
    Say on stderr what is being fetched.

Returns
-------
pathlib.Path
    {returns}

"""


def cache_dir() -> Path:
    """Return the folder where fetched corpora live.

    Returns
    -------
    pathlib.Path
        ``$CVBAYES_CACHE`` if that is set, else ``~/.cache/cvbayes``.
    """
    return Path(os.environ.get("CVBAYES_CACHE") or Path.home() / ".cache" / "cvbayes")


def corpus_folder(cache: str | os.PathLike[str] | None, name: str) -> Path:
    """``<cache>/<name>``, with `cache_dir()` for a `cache` of None."""
    return Path(cache if cache is not None else cache_dir()) / name


def fetcher(name: str, returns: str | None = None) -> Callable[[Callable[[Path, bool], Path]], Callable[..., Path]]:
    """Turn ``fetch(folder, progress)`` into ``fetch_NAME(cache=None, progress=True)`` on ``<cache>/<name>``.

    `returns` describes the path it returns (``<cache>/<name>`` by default); the Parameters and
    Returns sections go before the fetcher's own Raises section.
    """

    def decorate(fetch: Callable[[Path, bool], Path]) -> Callable[..., Path]:
        def fetch_corpus(cache: str | os.PathLike[str] | None = None, progress: bool = True) -> Path:
            return fetch(corpus_folder(cache, name), progress)

        own = inspect.cleandoc(fetch.__doc__ or "")
        head, raises, tail = own.partition("Raises\n------")
        shared = _SHARED_SECTIONS.format(returns=returns or f"``<cache>/{name}``.")
        fetch_corpus.__doc__ = head + shared + raises + tail
        fetch_corpus.__name__ = fetch_corpus.__qualname__ = fetch.__name__
        fetch_corpus.__module__ = fetch.__module__
        return fetch_corpus

    return decorate

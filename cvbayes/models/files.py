"""Model files: one ``.npz`` archive of named arrays plus a JSON ``meta`` entry, for every model.

Written by `cvbayes.files.write_archive`: atomically (a temporary file beside the target, fsync'd, then
`os.replace`), so an interrupted save never leaves half a model where a good one was, and with a
SHA-256 of the contents that `read_model` checks (files from before checksums are read unchecked).
``meta["format"]`` names the model and its file version (``cvbayes-hmm-1``).
"""
from ..files import check_format, read_archive, write_archive

WHAT = "cvbayes model file"
WRITERS = "'cvbayes fit', 'lda fit -o', 'induce' or a model's save()"


def write_model(path, meta, arrays):
    """Write ``meta`` (JSON-able dict with a ``"format"`` key) and ``arrays`` (name -> ndarray) to ``path``."""
    write_archive(path, meta, arrays, compressed=True)


def read_model(path, formats):
    """(meta, arrays) of a file `write_model` wrote with ``meta["format"]`` in ``formats``.

    Raises
    ------
    ValueError
        Naming ``path``, when it is not a cvbayes model file, is damaged (checksum), is of another format
        version, or holds another model.
    """
    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    meta, arrays = read_archive(path, WHAT, WRITERS)
    check_format(path, meta, formats, WHAT)
    return meta, arrays

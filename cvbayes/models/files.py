"""Model files: one ``.npz`` archive of named arrays plus a JSON ``meta`` entry, for every model.

Written by `cvbayes.files.write_archive`: atomically (a temporary file beside the target, fsync'd, then
`os.replace`), so an interrupted save never leaves half a model where a good one was, and with a
SHA-256 of the contents that `read_model` checks (files from before checksums are read unchecked).
``meta["format"]`` names the model and its file version (``cvbayes-hmm-1``).  `Persistent` gives every
model its ``save`` and ``load`` over these two functions.
"""
from dataclasses import astuple

from ..files import check_format, read_archive, write_archive
from ..schedules import IterationRecord

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


class Persistent:
    """``save`` and ``load`` for a model (gensim's ``SaveLoad`` in spirit, without pickles).

    A model names itself ``MODEL_NAME``; its file version ``SAVE_FORMAT`` is ``cvbayes-<MODEL_NAME>-1``
    unless it (or a model it extends) sets one.  It writes two hooks:
    ``_saved() -> (meta, arrays)``, what of its fitted state the file keeps (JSON-able values, NumPy
    arrays), and the class method ``_from_saved(meta, arrays, path) -> model``.  The file also keeps the
    model's name, the algorithm and the history, which `load` restores.  A file written by a subclass
    (an `HDPHMM`'s, of format ``cvbayes-hmm-1``) loads through the base class's ``load`` too.
    """

    MODEL_NAME = ""
    SAVE_FORMAT = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.MODEL_NAME and not cls.SAVE_FORMAT:
            cls.SAVE_FORMAT = f"cvbayes-{cls.MODEL_NAME}-1"

    def save(self, path):
        """Write the fitted model to ``path`` (a NumPy ``.npz`` archive, no pickles, written atomically);
        ``load`` reads it back."""
        write_model(path, *self.archive())

    def archive(self):
        """(meta, arrays) of the file ``save`` writes; a model made of models keeps its parts' in its own file."""
        self._check_fitted()
        meta, arrays = self._saved()
        meta = {"format": self.SAVE_FORMAT, "model": self.MODEL_NAME, "algorithm": self.algorithm_,
                "history": [astuple(record) for record in self.history_], **meta}
        return meta, arrays

    @classmethod
    def load(cls, path):
        """Read a model written by ``save``."""
        return cls.from_archive(*read_model(path, cls.SAVE_FORMAT), path)

    @classmethod
    def from_archive(cls, meta, arrays, path):
        """The model of an ``archive()``'s (meta, arrays); ``path`` names where they were read, for errors."""
        # files of models from before the name was stored are their format's only model
        name = meta.get("model", cls.MODEL_NAME)
        matching = [c for c in (cls, *cls.__subclasses__()) if c.MODEL_NAME == name]
        if not matching:
            raise ValueError(f"{path}: holds a {name} model, which {cls.__name__}.load cannot read")
        model = matching[0]._from_saved(meta, arrays, path)
        model.algorithm_ = meta["algorithm"]
        model.objective_name_ = model.OBJECTIVES[model.algorithm_]
        model.history_ = [IterationRecord(int(i), float(o), float(t), *rest) for i, o, t, *rest in meta["history"]]
        return model

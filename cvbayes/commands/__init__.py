"""The ``cvbayes`` subcommands of the larger models, each adding its parser to `cvbayes.cli.build_parser`."""
import os


def check_writable(path):
    """Refuse an output path that cannot be written, before any training (``-`` is standard output)."""
    if path in (None, "-"):
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a folder, not an output file")
    if not os.path.isdir(folder):
        raise ValueError(f"{path}: cannot write there, the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{path}: cannot write there, permission denied")

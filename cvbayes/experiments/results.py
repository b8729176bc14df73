"""What every experiment's results.json shares."""
import math
from pathlib import Path

import numpy as np

from ..files import write_json, write_text


def seed_range(settings, count=None):
    """The seeds of an experiment's runs: ``--seed`` (the first, default 0) up to ``--seed`` + ``--seeds``
    (or ``count``) - 1, so that more runs can be added beside the ones already made."""
    first = getattr(settings, "seed", None) or 0
    return range(first, first + (settings.seeds if count is None else count))


def plain_json(value):
    """Plain JSON values: numpy arrays and scalars as lists and numbers, non-finite floats
    (such as log10 of an error of exactly 0) as null, dict keys as strings."""
    if isinstance(value, dict):
        return {str(key): plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(item) for item in value]
    if isinstance(value, np.ndarray):
        return plain_json(value.tolist())
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def publish(out, results, text, figure, draw, quiet):
    """Write ``results`` (plain JSON) to out/results.json, ``text`` to out/table.md and the plot ``draw(path)``
    makes to out/``figure``; print the table unless ``quiet``."""
    out = Path(out)
    write_json(out / "results.json", plain_json(results), indent=1)
    write_text(out / "table.md", text)
    draw(out / figure)
    if not quiet:
        print(text)


def mean_curve(curves_, key):
    """The mean of ``key`` over the runs' curves, point by point, over the points they all have (runs of one
    setting appended with different numbers of passes share their first ones)."""
    length = min(len(c) for c in curves_)
    return np.mean([[p[key] for p in c[:length]] for c in curves_], axis=0)

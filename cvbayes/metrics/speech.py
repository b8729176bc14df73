"""Scores of acoustic units against gold phones: boundary precision/recall/F1 and frame-level purity and NMI.

Boundaries (the phone segmentation evaluation of Räsänen, Laine and Altosaar 2009 and of the ZeroSpeech
and acoustic unit discovery literature, at a 20 ms tolerance):

* **Gold boundaries** of an utterance are the distinct start and end times of its gold intervals (phones,
  silences included) less the utterance's first start and last end: the edges are given to every
  segmenter, so they are not counted (as in `cvbayes.metrics.segmentation`).
* **Predicted boundaries** are times; `frame_boundaries` turns a frame labelling into them, placing the
  boundary between frames t-1 and t halfway between their centres.
* **Matching is one-to-one**: a predicted boundary is a hit when it lies within `tolerance` seconds of a
  gold boundary (``|p - g| <= tolerance``) and each gold boundary and each predicted boundary is in at
  most one hit.  The hits are a maximum matching, found by one sweep over both sorted lists (on a line
  with equal windows the greedy sweep is optimal).  This is the correction the field made to evaluators
  that let several predictions hit one gold boundary, which inflates precision.
* Precision = hits / predicted, recall = hits / gold, summed over utterances before dividing; F1 their
  harmonic mean; and Räsänen's R-value ``1 - (|r1| + |r2|) / 2`` with ``r1 = sqrt((1 - HR)^2 + OS^2)``,
  ``r2 = (HR - OS - 1) / sqrt(2)``, HR the recall and OS = predicted / gold - 1 the over-segmentation.

Frames: each frame gets the gold label of the interval holding its centre (`frame_labels`); frames no
interval holds are left out.  **Purity** is the fraction of frames whose unit's most frequent phone is
their phone (many-to-one accuracy, `cvbayes.metrics.many_to_one`); **NMI** is the mutual information of
units and phones over the average of their entropies (scikit-learn's default normalisation; it equals
the V-measure), with the geometric, min and max means as options.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .segmentation import precision_recall_f1
from .tagging import _entropies, contingency, many_to_one

__all__ = ["BoundaryScores", "boundary_scores", "boundary_time", "frame_boundaries", "frame_labels", "normalized_mutual_info",
           "phone_boundaries", "unit_purity", "units_report"]

TOLERANCE = 0.020
HOP = 0.010
WINDOW = 0.025


class BoundaryScores(NamedTuple):
    """Boundary precision, recall, F1 and R-value (fractions) with the counts behind them."""

    precision: float
    recall: float
    f1: float
    r_value: float
    matched: int
    predicted: int
    gold: int


def phone_boundaries(intervals: Sequence[Sequence]) -> np.ndarray:
    """The internal boundaries (seconds, sorted) of one utterance's gold intervals ``(start, end, label)``."""
    times = np.unique(np.round([t for start, end, *_ in intervals for t in (start, end)], 9))
    return times[1:-1]


def frame_boundaries(units: Any, hop: float = HOP, first_frame: int = 0, window: float = WINDOW) -> np.ndarray:
    """Times where a frame labelling changes: between frames t-1 and t, halfway between their centres,
    ``(first_frame + t) * hop + window / 2 - hop / 2`` seconds (frame t of a file starting at ``t * hop``)."""
    units = np.asarray(units)
    changes = np.flatnonzero(units[1:] != units[:-1]) + 1
    return boundary_time(changes, hop, first_frame, window)


def boundary_time(frame: Any, hop: float = HOP, first_frame: int = 0, window: float = WINDOW) -> Any:
    """Seconds of the boundary before frame ``frame`` (an int or an array): halfway between the centres of
    frames ``frame`` - 1 and ``frame`` of a file whose frame t starts at ``t * hop``."""
    return (first_frame + np.asarray(frame)) * hop + window / 2 - hop / 2


def _matches(predicted: np.ndarray, gold: np.ndarray, tolerance: float) -> int:
    """Size of a maximum one-to-one matching of sorted points within `tolerance` of each other."""
    i = j = hits = 0
    while i < predicted.size and j < gold.size:
        if abs(predicted[i] - gold[j]) <= tolerance + 1e-12:
            hits += 1
            i += 1
            j += 1
        elif predicted[i] < gold[j]:
            i += 1
        else:
            j += 1
    return hits


def boundary_scores(predicted: Sequence[Any], gold: Sequence[Any], tolerance: float = TOLERANCE) -> BoundaryScores:
    """Boundary scores of predicted against gold boundary times, one array per utterance (module notes).

    Parameters
    ----------
    predicted, gold : sequences of equal length of 1-D arrays of times in seconds (e.g. `frame_boundaries`
        of each utterance's units and `phone_boundaries` of its gold phones).
    tolerance : a hit is within this many seconds (20 ms by default).
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted utterances but {len(gold)} gold ones")
    hits = n_predicted = n_gold = 0
    for p, g in zip(predicted, gold):
        p, g = np.sort(np.asarray(p, dtype=np.float64)), np.sort(np.asarray(g, dtype=np.float64))
        hits += _matches(p, g, tolerance)
        n_predicted += p.size
        n_gold += g.size
    scores = precision_recall_f1(hits, n_predicted, n_gold)
    over = n_predicted / n_gold - 1 if n_gold else 0.0
    r1 = math.hypot(1 - scores.recall, over)
    r2 = (scores.recall - over - 1) / math.sqrt(2)
    return BoundaryScores(scores.precision, scores.recall, scores.f1, 1 - (abs(r1) + abs(r2)) / 2, hits,
                          n_predicted, n_gold)


def frame_labels(intervals: Sequence[Sequence], n_frames: int, first_frame: int = 0, hop: float = HOP,
                 window: float = WINDOW) -> np.ndarray:
    """The label of the interval holding each frame's centre ``(first_frame + t) * hop + window / 2``; None
    where no interval does.  An object array of length `n_frames`."""
    centres = (first_frame + np.arange(n_frames)) * hop + window / 2
    labels = np.full(n_frames, None, dtype=object)
    starts = np.array([interval[0] for interval in intervals])
    ends = np.array([interval[1] for interval in intervals])
    index = np.searchsorted(starts, centres, side="right") - 1
    inside = (index >= 0) & (centres < ends[np.maximum(index, 0)])
    labels[inside] = [intervals[i][2] for i in index[inside]]
    return labels


def _coded(units: Any, phones: Any) -> tuple[np.ndarray, np.ndarray]:
    """Flatten per-utterance lists, drop frames without a phone, and code both as integers from 0."""
    def flat(x):
        if isinstance(x, np.ndarray) or (len(x) and np.ndim(x[0]) == 0):
            return np.asarray(x, dtype=object)
        return np.concatenate([np.asarray(part, dtype=object) for part in x]) if len(x) else np.empty(0, object)

    units, phones = flat(units), flat(phones)
    if units.shape != phones.shape:
        raise ValueError(f"{units.size} unit frames but {phones.size} phone frames")
    keep = np.array([p is not None for p in phones], dtype=bool)
    if not keep.any():
        raise ValueError("no frame has a gold phone")
    codes = [np.unique(x[keep].astype(str), return_inverse=True)[1].astype(np.int64) for x in (units, phones)]
    return codes[0], codes[1]


def unit_purity(units: Any, phones: Any) -> float:
    """Fraction of frames whose unit's most frequent phone is their phone (many-to-one accuracy).

    `units` and `phones` are per-frame labels: flat arrays, or lists of per-utterance arrays; frames whose
    phone is None (see `frame_labels`) are left out.
    """
    return many_to_one(*_coded(units, phones))


def normalized_mutual_info(units: Any, phones: Any, average_method: str = "arithmetic") -> float:
    """``I(U; P) / mean(H(U), H(P))`` of per-frame units and phones (inputs as `unit_purity`).

    `average_method` is scikit-learn's: ``"arithmetic"`` (default; equals the V-measure), ``"geometric"``,
    ``"min"`` or ``"max"``.  1 when either labelling is constant and both are (sklearn's convention).
    """
    means = {"arithmetic": lambda a, b: (a + b) / 2, "geometric": lambda a, b: math.sqrt(a * b), "min": min,
             "max": max}
    if average_method not in means:
        raise ValueError(f"average_method must be one of {', '.join(means)}, got {average_method!r}")
    h = _entropies(contingency(*_coded(units, phones)))
    if h.pred == 0.0 and h.gold == 0.0:
        return 1.0
    mutual = max(h.gold - h.gold_given_pred, 0.0)
    denominator = means[average_method](h.pred, h.gold)
    return 0.0 if denominator == 0.0 else min(mutual / denominator, 1.0)


def units_report(units: Sequence[Any], phones: Sequence[Sequence[Sequence]], first_frames: Sequence[int] | None = None,
                 tolerance: float = TOLERANCE) -> dict[str, float]:
    """Every score at once: per-utterance frame units and gold phone intervals ``(start, end, label)`` ->
    ``{"boundary_precision", "boundary_recall", "boundary_f1", "r_value", "purity", "nmi", "units_used"}``."""
    if len(units) != len(phones):
        raise ValueError(f"{len(units)} unit sequences but {len(phones)} gold utterances")
    firsts = first_frames if first_frames is not None else [0] * len(units)
    boundaries = boundary_scores([frame_boundaries(u, first_frame=f) for u, f in zip(units, firsts)],
                                 [phone_boundaries(p) for p in phones], tolerance)
    labels = [frame_labels(p, len(u), f) for u, p, f in zip(units, phones, firsts)]
    return {"boundary_precision": boundaries.precision, "boundary_recall": boundaries.recall,
            "boundary_f1": boundaries.f1, "r_value": boundaries.r_value, "purity": unit_purity(units, labels),
            "nmi": normalized_mutual_info(units, labels),
            "units_used": int(np.unique(np.concatenate([np.asarray(u) for u in units])).size)}

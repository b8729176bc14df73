"""Candidate unit boundaries from spectral change: the pre-segmentation of Lee and Glass (2012, §4), after
Glass (2003).

Lee and Glass let a unit boundary fall only where the spectrum changes: "we first use the method of [Glass
2003] to find the boundary candidates", and sample boundaries among them.  Here the change at frame t
(between frames t-1 and t) is the Euclidean distance between the mean of the ``window`` frames before and
of the ``window`` frames after it, over the first ``n_dims`` dimensions (the static cepstra of MFCC + Δ +
ΔΔ features: their deltas are themselves differences over ±2 frames and add noise), and a candidate is a
frame whose change is the largest within ``spacing`` frames either side.  Every utterance's first frame is
a unit start.  The candidates over-generate on purpose: the units choose among them.

Measured on 300 trimmed training utterances of synthetic Brent (utterances 6001-6300, outside every
experiment slice; docs/results/units/README.md), candidates against gold phone boundaries at 20 ms: window 2,
13 dimensions, spacing 1 gives 1.91 candidates a gold boundary and holds 87.6 % of them.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import maximum_filter1d

__all__ = ["spectral_change", "spectral_change_starts"]

WINDOW = 2
N_DIMS = 13
SPACING = 1


def spectral_change(frames: np.ndarray, window: int = WINDOW, n_dims: int = N_DIMS) -> np.ndarray:
    """The spectral change of every frame of one utterance (T,): ||mean(x[t-w:t]) - mean(x[t:t+w])|| over the
    first ``n_dims`` dimensions, the windows cut at the utterance's edges; 0 at frame 0."""
    x = np.asarray(frames, dtype=np.float64)[:, :n_dims]
    n = x.shape[0]
    if n == 0:
        return np.zeros(0)
    sums = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
    t = np.arange(1, n)
    left, right = np.maximum(t - window, 0), np.minimum(t + window, n)
    before = (sums[t] - sums[left]) / (t - left)[:, None]
    after = (sums[right] - sums[t]) / (right - t)[:, None]
    return np.concatenate([[0.0], np.linalg.norm(before - after, axis=1)])


def spectral_change_starts(frames: np.ndarray, window: int = WINDOW, n_dims: int = N_DIMS,
                           spacing: int = SPACING) -> np.ndarray:
    """Where a unit may begin in one utterance (T,) bool: frame 0 and every frame whose `spectral_change` is
    the largest within ``spacing`` frames either side (module notes)."""
    change = spectral_change(frames, window, n_dims)
    if change.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    neighbourhood = maximum_filter1d(change, 2 * spacing + 1, mode="constant", cval=-np.inf)
    starts = (change >= neighbourhood) & (change > 0.0)
    starts[0] = True
    return starts

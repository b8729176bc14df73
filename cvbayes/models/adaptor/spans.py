"""The unigram grammar's chart on given span scores: ``Sentence -> Word+`` with every word's score S(a, b).

The entry point for a model whose words are scored by something other than the grammar's own rules (the
noisy channel of `cvbayes.models.noisy_words`: a word's score is its cache's and base's channel
probability of the surface span).  With ``Word+ -> Word Word+`` of weight c and ``Word+ -> Word`` of
weight e, a segmentation of y_0..y_{m-1} into k words has the weight c^(k - 1) e prod S(a, b), and the
inside of the utterance is a semi-Markov forward (in logs, scores can be small):

    F[0] = 1,   F[b] = sum_{a < b} F'[a] S(a, b),   F'[a] = c F[a] (a > 0), F'[0] = 1,   Z = e F[m]   (W1)

the backward R[m] = e, R[a] = c sum_{b > a} S(a, b) R[b] (a > 0; R[0] without the c), and the chart's
outside of a span,

    d log Z / d S(a, b) = F'[a] R[b] / Z,                                                              (W2)

which times S(a, b) is the posterior probability of a word over (a, b), and times a component of S the
posterior of that component (the expected customers of a cached word, the base's new words).
"""
import math

import numpy as np
from numba import njit


@njit(cache=True)
def _log(value):
    return math.log(value) if value > 0.0 else -np.inf


@njit(cache=True)
def _log_add(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    top = max(a, b)
    return top + math.log(math.exp(a - top) + math.exp(b - top))


@njit(cache=True)
def word_chart(scores, m, go_on, end, outside):
    """log Z of eq. W1 over spans of ``scores`` (>= m + 1, >= m + 1; S(a, b) at [a, b], 0 where no word fits)
    and ``outside[a, b]`` = d log Z / d S(a, b) (eq. W2) for a < b <= m; -inf (``outside`` zero) when no
    segmentation has positive weight."""
    log_go, log_end = _log(go_on), _log(end)
    forward = np.full(m + 1, -np.inf)      # log F'
    forward[0] = 0.0
    for b in range(1, m + 1):
        total = -np.inf
        for a in range(b):
            total = _log_add(total, forward[a] + _log(scores[a, b]))
        forward[b] = total + (log_end if b == m else log_go)    # F'[m] carries e: log Z
    log_z = forward[m]
    outside[:m + 1, :m + 1] = 0.0
    if log_z == -np.inf:
        return log_z
    backward = np.full(m + 1, -np.inf)     # log dZ / dF'[b] (F'[m] = Z)
    backward[m] = 0.0
    for a in range(m - 1, -1, -1):
        total = -np.inf
        for b in range(a + 1, m + 1):
            total = _log_add(total, _log(scores[a, b]) + backward[b] + (log_end if b == m else log_go))
        backward[a] = total
    for a in range(m):
        for b in range(a + 1, m + 1):
            if forward[a] > -np.inf and backward[b] > -np.inf:
                outside[a, b] = math.exp(forward[a] + backward[b] + (log_end if b == m else log_go) - log_z)
    return log_z


@njit(cache=True)
def best_words(scores, m, go_on, end, bounds):
    """The segmentation of highest weight (eq. W1 in max-product): writes its word ends to ``bounds`` (>= m)
    in order and returns their number (0 when none has positive weight)."""
    log_go, log_end = _log(go_on), _log(end)
    best = np.full(m + 1, -np.inf)
    back = np.zeros(m + 1, dtype=np.int64)
    best[0] = 0.0
    for b in range(1, m + 1):
        step = log_end if b == m else log_go
        for a in range(b):
            v = best[a] + _log(scores[a, b]) + step
            if v > best[b]:
                best[b], back[b] = v, a
    if best[m] == -np.inf:
        return 0
    count, b = 0, m
    while b > 0:
        bounds[count] = b
        count += 1
        b = back[b]
    bounds[:count] = bounds[:count][::-1].copy()
    return count

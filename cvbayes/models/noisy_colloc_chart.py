"""The colloc grammar's chart on given span scores (`cvbayes.models.noisy_colloc`, eq. K1-K2).

``Sentence -> Colloc+`` (weights c_S to go on, e_S to stop), ``@Colloc -> Word+`` (c_W, e_W): a collocation over
the surface span [a, b) is either one cached atom, of summed score A(a, b), or the base's (weight B) sequence
of words with scores S(a, b).  Two states at every position j: OUT, between collocations, and IN, inside a
base-generated collocation after a word.  In the forward (logs: scores can be small), with step(b) = c_S for
b < m and e_S at b = m,

    I[b] = sum_{a < b} (O[a] B + I[a] c_W) S(a, b),
    O[b] = step(b) (sum_{a < b} O[a] A(a, b) + I[b] e_W),   O[0] = 1,   Z = O[m]              (K1)

and with the backward O'[a] = dZ / dO[a], I'[a] = dZ / dI[a] (O'[m] = 1),

    d log Z / d A(a, b) = O[a] step(b) O'[b] / Z,   d log Z / d S(a, b) = (O[a] B + I[a] c_W) I'[b] / Z     (K2)

which times A (S) is the posterior of a cached collocation (a word of a base collocation) over [a, b).  O(m^2)
a state, as the unigram chart (`cvbayes.models.adaptor.spans`).
"""
import math

import numpy as np
from numba import njit

from .adaptor.spans import _log, _log_add


@njit(cache=True)
def _step(b, m, log_go, log_end):
    return log_end if b == m else log_go


@njit(cache=True)
def colloc_chart(cached, scores, m, base, go_s, end_s, go_w, end_w, paths, outside_cached, outside_words):
    """log Z of eq. K1 on the scores ``cached`` A and ``scores`` S ((>= m + 1)^2; 0 where nothing fits), the
    outside of eq. K2 written to ``outside_cached`` and ``outside_words``, and the forward and backward logs
    (O, I, O', I') to the rows of ``paths`` (4, >= m + 1).  Returns (log Z, the expected base collocations,
    the expected words after the first of a base collocation); log Z = -inf (outside zero) without a parse."""
    log_base, log_go_s, log_end_s, log_go_w, log_end_w = _log(base), _log(go_s), _log(end_s), _log(go_w), _log(end_w)
    out_f, in_f, out_b, in_b = paths[0], paths[1], paths[2], paths[3]
    paths[:, :m + 1] = -np.inf
    out_f[0] = 0.0
    for b in range(1, m + 1):
        inside, ended = -np.inf, -np.inf
        for a in range(b):
            inside = _log_add(inside, _log_add(out_f[a] + log_base, in_f[a] + log_go_w) + _log(scores[a, b]))
            ended = _log_add(ended, out_f[a] + _log(cached[a, b]))
        in_f[b] = inside
        out_f[b] = _log_add(ended, inside + log_end_w) + _step(b, m, log_go_s, log_end_s)
    log_z = out_f[m]
    outside_cached[:m + 1, :m + 1] = 0.0
    outside_words[:m + 1, :m + 1] = 0.0
    if log_z == -np.inf:
        return log_z, 0.0, 0.0
    out_b[m] = 0.0
    in_b[m] = log_end_w + log_end_s
    for a in range(m - 1, -1, -1):
        total, words = -np.inf, -np.inf
        for b in range(a + 1, m + 1):
            total = _log_add(total, _log(cached[a, b]) + _step(b, m, log_go_s, log_end_s) + out_b[b])
            total = _log_add(total, log_base + _log(scores[a, b]) + in_b[b])
            words = _log_add(words, log_go_w + _log(scores[a, b]) + in_b[b])
        out_b[a] = total
        in_b[a] = _log_add(words, log_end_w + log_go_s + total) if a > 0 else -np.inf
    bases, continued = 0.0, 0.0
    for a in range(m):
        for b in range(a + 1, m + 1):
            if out_f[a] > -np.inf and out_b[b] > -np.inf:
                outside_cached[a, b] = math.exp(out_f[a] + _step(b, m, log_go_s, log_end_s) + out_b[b] - log_z)
            if in_b[b] > -np.inf:
                first = math.exp(out_f[a] + log_base + in_b[b] - log_z) if out_f[a] > -np.inf else 0.0
                later = math.exp(in_f[a] + log_go_w + in_b[b] - log_z) if in_f[a] > -np.inf else 0.0
                outside_words[a, b] = first + later
                bases += first * scores[a, b]
                continued += later * scores[a, b]
    return log_z, bases, continued


@njit(cache=True)
def best_collocs(cached, scores, m, base, go_s, end_s, go_w, end_w, ends, kinds):
    """The derivation of highest weight (eq. K1 in max-product): its pieces' ends to ``ends`` (>= m) in order,
    each piece's kind to ``kinds``: 0 a cached collocation, 1 the first word of a base collocation, 2 a later
    word; returns their number (0 when none has positive weight)."""
    log_base, log_go_s, log_end_s, log_go_w, log_end_w = _log(base), _log(go_s), _log(end_s), _log(go_w), _log(end_w)
    best_out, best_in = np.full(m + 1, -np.inf), np.full(m + 1, -np.inf)
    # back pointers: the piece's start and kind (OUT reached from IN at the same place: kind -1)
    out_from, out_kind = np.zeros(m + 1, np.int64), np.zeros(m + 1, np.int64)
    in_from, in_kind = np.zeros(m + 1, np.int64), np.zeros(m + 1, np.int64)
    best_out[0] = 0.0
    for b in range(1, m + 1):
        for a in range(b):
            log_s = _log(scores[a, b])
            for value, kind in ((best_out[a] + log_base + log_s, 1), (best_in[a] + log_go_w + log_s, 2)):
                if value > best_in[b]:
                    best_in[b], in_from[b], in_kind[b] = value, a, kind
            value = best_out[a] + _log(cached[a, b])
            if value > best_out[b]:
                best_out[b], out_from[b], out_kind[b] = value, a, 0
        if best_in[b] + log_end_w > best_out[b]:
            best_out[b], out_from[b], out_kind[b] = best_in[b] + log_end_w, b, -1
        best_out[b] += _step(b, m, log_go_s, log_end_s)
    if best_out[m] == -np.inf:
        return 0
    count, b, inside = 0, m, False
    while b > 0:
        if not inside and out_kind[b] == -1:
            inside = True
            continue
        if inside:
            ends[count], kinds[count] = b, in_kind[b]
            inside = in_kind[b] == 2
            b = in_from[b]
        else:
            ends[count], kinds[count] = b, 0
            b = out_from[b]
        count += 1
    ends[:count] = ends[:count][::-1].copy()
    kinds[:count] = kinds[:count][::-1].copy()
    return count

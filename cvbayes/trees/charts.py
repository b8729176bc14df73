"""The span chart of a binarised grammar: one inside pass over a semiring, and the outside pass (numba).

Chart
-----
``inside[i, k, A]`` for the span of tokens i..k-1 (0 <= i < k <= T) and
kernel symbol A, one contiguous N-vector a cell, so a split (i, j, k) reads
two contiguous rows.  ``inside0`` is the same before the unary closure (the
inside of "A with a binary, lexical or span rule at the top"),
``inside = (I - U)^{-1} inside0`` sums the unary chains above it exactly
(eq. 4.8 with unary rules added); without unary rules the two are one array.
``outside`` is the outside of the top of a cell's unary chain and
``outside0 = (I - U)^{-T} outside`` the outside of its bottom.

One inside pass, two semirings (`cvbayes.trees.semiring`)
---------------------------------------------------------
`sentence_inside` fills the chart in the sum-product semiring (log Z, eq. 4.8) and
`sentence_max_inside` in the max-product semiring (the CKY chart of the best tree); both are the
one routine `_inside`, whose cell is terminals, then the binary step (dense or sparse), then the
unary closure, each a small helper over the semiring.  Only the scaling below is the sum's own.

Scaling (why not log space)
---------------------------
The sum's charts are in **scaled space**: each cell is divided by its largest entry
and the log of that factor is kept in ``log_scale[i, k]``; a split combines
its two cells with one factor exp(s_ij + s_jk - s_ik) (a scalar a split, no
log-sum-exp per entry).  The outside chart is stored as
alpha(A, i, k) exp(s_ik) / Z, so that ``outside0 * inside`` is directly the
posterior expected number of A-nodes over the span and no outside scales are
needed.  The range across cells is unbounded, so log Z is exact for any
sentence length and any positive rule weights (1e-5 priors, exp-digamma weights
of VB, MLE tables with rules of weight 1e-200).  A cell is first filled against
a quick reference (its terminals' largest weight and its splits' scale
products, rule weights ignored); when only rules of tiny weight can build it,
that reference lies far above the cell, and a cell whose peak falls below
``RESCALE_BELOW`` (1e-200) is filled again in log space against its exact
largest contribution (`_cell_in_logs`).  Splits of such a cell have factors
beyond exp(``LARGEST_GAP``), so the outside pass and the sampler form their
terms in logs too.  What remains: within one cell, entries below 1e-308 of the
cell's largest are flushed to zero; their posterior mass is not bounded by that
share when the symbol with the large entry has no parent that can use it (a
grammar needs rule weights near 1e-300 for that to happen).  The max chart is in
log space and needs none of this.

Layouts of the binary step (why two)
------------------------------------
* **dense** (full CNF grammars, `KernelGrammar.dense`): the binary weights are
  an (N, N*N) matrix W[A, B*N + C].  A cell first sums the outer products of
  its splits, P[B, C] = sum_j f_j inside[i,j,B] inside[j,k,C] (O(N^2) a
  split, contiguous), then inside0 = W P (O(N^3) a cell), so a sentence costs
  O(T^3 N^2 + T^2 N^3) instead of O(T^3 N^3).  The outside mirrors it with
  G = W^T outside0, and the expected binary counts are accumulated as
  sum_cells outside0 (x) P, multiplied by W once per table
  (`add_binary_counts`) as `forward_backward` does for transitions.
* **sparse** (hand-written and binarised grammars): a list of B binary
  rules, O(B) a split; at a few dozen rules over dozens of symbols this is
  far below N^3.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..core.special import FAST
from .semiring import lift, one, plus, times, zero
from .tables import rule_weight, span_weight


@njit(cache=True)
def chart_buffers(kernel, longest):
    """Charts for sentences of up to `longest` tokens.

    Returns (inside, inside0, outside, outside0, log_scale, work); the
    ``0`` charts are the same arrays as the others when the grammar has no
    unary rules.  Memory: 2 or 4 charts of (T+1)^2 N floats plus 3 N^2.
    """
    n = kernel.n_symbols
    size = longest + 1
    inside = np.zeros((size, size, n))
    outside = np.zeros((size, size, n))
    if kernel.unary_parent.shape[0] > 0:
        inside0 = np.zeros((size, size, n))
        outside0 = np.zeros((size, size, n))
    else:
        inside0 = inside
        outside0 = outside
    log_scale = np.full((size, size), -np.inf)
    work = np.zeros((3, n * n))
    return inside, inside0, outside, outside0, log_scale, work


# ------------------------------------------------------------------ the cell's steps
# What `_terminals` does with each terminal rule of positive weight over a span.
REFERENCE = 0   # the largest log weight
ADD = 1         # cell0[A] (+)= the weight, in the semiring
COUNT = 2       # its expected count (eq. 4.9), from the outside of its parent


@njit(cache=True, inline="always", fastmath=FAST)
def _terminal(action, viterbi, w, reference, entry, best):
    """One terminal rule of weight w > 0, on scalars (an inlined helper that took the chart's arrays paid
    numba's reference counts at every rule): (best, entry) after it.  REFERENCE: best = max(best, log w);
    ADD: entry = cell0[A] (+) w, in the semiring; COUNT: entry = outside0[A] w exp(-reference), the
    rule's expected count."""
    if action == REFERENCE:
        return max(best, math.log(w)), entry
    if action == ADD:
        return best, plus(viterbi, entry, lift(viterbi, w, reference))
    return best, entry * math.exp(math.log(w) - reference)


@njit(cache=True, inline="always", fastmath=FAST)
def _terminals(action, viterbi, kernel, rule_weights, tokens, span_ids, i, k, reference, cell, counts):
    """Visit the lexical (k = i + 1) and span rules over span (i, k) of positive weight (`_terminal`):
    REFERENCE returns the largest log weight; ADD adds each weight to ``cell`` (inside0, scaled by
    exp(-reference) for the sum); COUNT adds ``cell`` (outside0) w exp(-reference) to ``counts``."""
    n_tokens = tokens.shape[0]
    best = -np.inf
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                rule = kernel.lexical_rule[e]
                w = rule_weight(rule_weights, rule)
                if w > 0.0:
                    a = kernel.lexical_parent[e]
                    best, value = _terminal(action, viterbi, w, reference, cell[a], best)
                    if action == ADD:
                        cell[a] = value
                    elif action == COUNT and rule >= 0:
                        counts[rule] += value
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        substring = span_ids[i * (n_tokens + 1) + k]
        for p in range(n_families):
            w = span_weight(kernel, rule_weights, p, substring)
            if w > 0.0:
                a = kernel.span_parent[p]
                best, value = _terminal(action, viterbi, w, reference, cell[a], best)
                if action == ADD:
                    cell[a] = value
                elif action == COUNT:
                    counts[kernel.span_base[p] + substring] += value
    return best


@njit(cache=True, inline="always")
def _split_factor(viterbi, log_scale, i, j, k, reference):
    """(live, factor) of split j of (i, k): for the scaled sum, whether both children have an inside
    and exp(s_ij + s_jk - reference); for max, the identity (log space has no scales)."""
    if viterbi:
        return True, one(viterbi)
    shift = log_scale[i, j] + log_scale[j, k]
    if shift == -np.inf:
        return False, 0.0
    return True, math.exp(shift - reference)


@njit(cache=True, inline="always", fastmath=FAST)
def _split_pairs(viterbi, inside, log_scale, i, k, reference, n, pair):
    """pair[B*N + C] = (+)_j f_j inside[i,j,B] inside[j,k,C]; returns whether some split has two
    derivable children."""
    possible = False
    for x in range(n * n):
        pair[x] = zero(viterbi)
    for j in range(i + 1, k):
        live, factor = _split_factor(viterbi, log_scale, i, j, k, reference)
        if not live:
            continue
        possible = True
        left = inside[i, j]
        right = inside[j, k]
        for b in range(n):
            lb = times(viterbi, left[b], factor)
            if lb == zero(viterbi):
                continue
            row = b * n
            for c in range(n):
                pair[row + c] = plus(viterbi, pair[row + c], times(viterbi, lb, right[c]))
    return possible


# `_split_pairs` compiled on its own, once a semiring: a call rather than inlined, as LLVM vectorises
# its inner loop in a small function and not inside the whole inside pass
@njit(cache=True, fastmath=FAST)
def _sum_pairs(inside, log_scale, i, k, reference, n, pair):
    return _split_pairs(False, inside, log_scale, i, k, reference, n, pair)


@njit(cache=True)
def _max_pairs(inside, log_scale, i, k, reference, n, pair):
    return _split_pairs(True, inside, log_scale, i, k, reference, n, pair)


@njit(cache=True, inline="always", fastmath=FAST)
def _dense_step(viterbi, weights, inside, log_scale, i, k, reference, n, pair, cell0):
    """Dense binary step: the split pairs P (`_split_pairs`), then cell0[A] (+)= (+)_x W[A, x] P[x].
    Returns whether some split has two derivable children."""
    if viterbi:
        possible = _max_pairs(inside, log_scale, i, k, reference, n, pair)
    else:
        possible = _sum_pairs(inside, log_scale, i, k, reference, n, pair)
    for a in range(n):
        row = weights[a]
        total = zero(viterbi)
        for x in range(n * n):
            total = plus(viterbi, total, times(viterbi, row[x], pair[x]))
        cell0[a] = plus(viterbi, cell0[a], total)
    return possible


@njit(cache=True, inline="always", fastmath=FAST)
def _sparse_step(viterbi, kernel, weights, inside, log_scale, i, k, reference, cell0):
    """Sparse binary step: cell0[A] (+)= f_j w(A -> B C) inside[i,j,B] inside[j,k,C] over the splits j
    and the binary rules.  Returns whether some rule has two derivable children."""
    possible = False
    for j in range(i + 1, k):
        live, factor = _split_factor(viterbi, log_scale, i, j, k, reference)
        if not live:
            continue
        left = inside[i, j]
        right = inside[j, k]
        for b in range(kernel.binary_parent.shape[0]):
            lv = left[kernel.binary_left[b]]
            rv = right[kernel.binary_right[b]]
            if lv != zero(viterbi) and rv != zero(viterbi) and weights[b] != zero(viterbi):
                possible = True
                a = kernel.binary_parent[b]
                cell0[a] = plus(viterbi, cell0[a], times(viterbi, times(viterbi, times(viterbi, factor, weights[b]),
                                                                        lv), rv))
    return possible


# compiled on its own, once a semiring, for the reason `_sum_pairs` is
@njit(cache=True, fastmath=FAST)
def _sum_sparse(kernel, weights, inside, log_scale, i, k, reference, cell0):
    return _sparse_step(False, kernel, weights, inside, log_scale, i, k, reference, cell0)


@njit(cache=True)
def _max_sparse(kernel, weights, inside, log_scale, i, k, reference, cell0):
    return _sparse_step(True, kernel, weights, inside, log_scale, i, k, reference, cell0)


@njit(cache=True, inline="always", fastmath=FAST)
def _closure_step(viterbi, closure, cell0, cell, n):
    """cell[A] = (+)_B closure[A, B] (x) cell0[B]: every unary chain above the cell's bottom."""
    for a in range(n):
        row = closure[a]
        total = zero(viterbi)
        for b in range(n):
            total = plus(viterbi, total, times(viterbi, row[b], cell0[b]))
        cell[a] = total


@njit(cache=True, inline="always", fastmath=FAST)
def _fill_cell(viterbi, kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair, i, k, reference):
    """inside0[i, k] (terminals and binary rules over the splits) and inside[i, k] (its unary
    closure), in the semiring (sum: every contribution scaled by exp(-reference)).

    Returns (peak, possible): the cell's largest entry, and whether some binary rule has two children
    of positive inside (so that a zero peak may be underflow rather than an impossible cell).
    """
    n = kernel.n_symbols
    cell0 = inside0[i, k]
    cell = inside[i, k]
    for a in range(n):
        cell0[a] = zero(viterbi)
    _terminals(ADD, viterbi, kernel, tables.rule_weights, tokens, span_ids, i, k, reference, cell0, pair[:0])
    possible = False
    if k > i + 1:
        if kernel.dense:
            possible = _dense_step(viterbi, tables.dense_binary, inside, log_scale, i, k, reference, n, pair, cell0)
        else:
            if viterbi:
                possible = _max_sparse(kernel, tables.binary_weights, inside, log_scale, i, k, reference, cell0)
            else:
                possible = _sum_sparse(kernel, tables.binary_weights, inside, log_scale, i, k, reference, cell0)
    if kernel.unary_parent.shape[0] > 0:
        _closure_step(viterbi, tables.unary_closure, cell0, cell, n)
    peak = zero(viterbi)
    for a in range(n):
        peak = max(peak, cell[a])
    return peak, possible


# ------------------------------------------------------------------ the sum's rescue of tiny cells
@njit(cache=True, inline="always")
def _log_product(left, right):
    """log(left * right) without forming the product (both may be 1e-200); -inf if either is 0."""
    if left > 0.0 and right > 0.0:
        return math.log(left) + math.log(right)
    return -np.inf


@njit(cache=True, fastmath=FAST)
def _binary_terms(kernel, tables, inside, log_scale, i, k, log_pair, reference, cell0):
    """Every binary term of cell (i, k) in logs (dense: log W[A, x] + log_pair[x]; sparse: the
    split's scales, the rule's weight and its children's inside values); returns their maximum and,
    with a non-empty `cell0`, adds exp(term - reference) to cell0[parent]."""
    best = -np.inf
    accumulate = cell0.shape[0] > 0
    if kernel.dense:
        n = kernel.n_symbols
        weights = tables.dense_binary
        for a in range(n):
            for x in range(n * n):
                if weights[a, x] > 0.0 and log_pair[x] > -np.inf:
                    term = math.log(weights[a, x]) + log_pair[x]
                    best = max(best, term)
                    if accumulate:
                        cell0[a] += math.exp(term - reference)
        return best
    weights = tables.binary_weights
    for j in range(i + 1, k):
        shift = log_scale[i, j] + log_scale[j, k]
        if shift == -np.inf:
            continue
        for b in range(kernel.binary_parent.shape[0]):
            v = _log_product(inside[i, j, kernel.binary_left[b]], inside[j, k, kernel.binary_right[b]])
            if v > -np.inf and weights[b] > 0.0:
                term = shift + math.log(weights[b]) + v
                best = max(best, term)
                if accumulate:
                    cell0[kernel.binary_parent[b]] += math.exp(term - reference)
    return best


@njit(cache=True, fastmath=FAST)
def _pair_terms(inside, log_scale, i, k, n, log_pair, work):
    """The terms s_ij + s_jk + log inside[i,j,B] + log inside[j,k,C] of the dense pair P[B, C] over the
    splits j: with an empty `work`, log_pair[B*N + C] = their maximum; otherwise
    work[B*N + C] += exp(term - log_pair[B*N + C])."""
    maximum = work.shape[0] == 0
    for j in range(i + 1, k):
        shift = log_scale[i, j] + log_scale[j, k]
        if shift == -np.inf:
            continue
        for b in range(n):
            for c in range(n):
                v = _log_product(inside[i, j, b], inside[j, k, c])
                x = b * n + c
                if maximum:
                    log_pair[x] = max(log_pair[x], shift + v)
                elif v > -np.inf:
                    work[x] += math.exp(shift + v - log_pair[x])


@njit(cache=True, fastmath=FAST)
def _cell_in_logs(kernel, tables, tokens, span_ids, inside, inside0, log_scale, i, k, log_pair):
    """Cell (i, k) against the exact largest single contribution, every term formed in log space.

    The quick reference of `sentence_inside` is the largest product of the children's scales, which
    ignores the rule weights; when only rules of tiny weight, or children far below their cells'
    peaks, can combine, it sits far above the cell and the cell underflows.  Here each term is
    exp(log w + s_ij + log inside[i,j,B] + s_jk + log inside[j,k,C] - reference), none above one and
    the largest exactly one.  O(splits * B) logs and exps (dense: O(splits * N^2 + N^3)): the slow
    path, taken only for such cells.  Returns (peak, reference).
    """
    n = kernel.n_symbols
    rule_weights = tables.rule_weights
    reference = _terminals(REFERENCE, False, kernel, rule_weights, tokens, span_ids, i, k, 0.0, log_pair,
                           log_pair[:0])
    if kernel.dense:
        # log_pair[B*N + C] = log sum_j exp(s_ij + s_jk) inside[i,j,B] inside[j,k,C], by its own maximum
        for x in range(n * n):
            log_pair[x] = -np.inf
        _pair_terms(inside, log_scale, i, k, n, log_pair, log_pair[:0])
        work = np.zeros(n * n)
        _pair_terms(inside, log_scale, i, k, n, log_pair, work)
        for x in range(n * n):
            if work[x] > 0.0:
                log_pair[x] += math.log(work[x])
    no_cell = inside0[0, 0, :0]
    reference = max(reference, _binary_terms(kernel, tables, inside, log_scale, i, k, log_pair, 0.0, no_cell))
    cell0 = inside0[i, k]
    cell = inside[i, k]
    for a in range(n):
        cell0[a] = 0.0
    if reference == -np.inf:
        return 0.0, reference
    _terminals(ADD, False, kernel, rule_weights, tokens, span_ids, i, k, reference, cell0, cell0[:0])
    _binary_terms(kernel, tables, inside, log_scale, i, k, log_pair, reference, cell0)
    peak = 0.0
    if kernel.unary_parent.shape[0] > 0:
        _closure_step(False, tables.unary_closure, cell0, cell, n)
    for a in range(n):
        peak = max(peak, cell[a])
    return peak, reference


# A cell whose peak lands below this share of its quick reference is recomputed with the exact one.
RESCALE_BELOW = 1e-200


# ------------------------------------------------------------------ the inside pass
@njit(cache=True, inline="always", fastmath=FAST)
def _inside(viterbi, kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair):
    """The inside pass over one sentence in a semiring; returns the start symbol's value over the
    whole sentence (log Z for the sum, the best tree's log weight for max; -inf if it has no tree).

    A cell is `_fill_cell` in both semirings.  The sum first takes a quick reference (the largest of
    its terminal weights and of its splits' scale products); when that leaves a cell that can be
    derived with a peak below ``RESCALE_BELOW`` (rules of tiny weight, down to subnormal ones, as MLE
    and VB tables with small priors have), the cell is filled again in log space against the exact
    largest contribution (`_cell_in_logs`); then the cell is divided by its peak.
    """
    n = kernel.n_symbols
    n_tokens = tokens.shape[0]
    if n_tokens == 0:
        return -np.inf
    has_unary = kernel.unary_parent.shape[0] > 0
    for width in range(1, n_tokens + 1):
        for i in range(n_tokens - width + 1):
            k = i + width
            if viterbi:
                _fill_cell(viterbi, kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair, i, k, 0.0)
                continue
            cell0 = inside0[i, k]
            cell = inside[i, k]
            terminal = _terminals(REFERENCE, False, kernel, tables.rule_weights, tokens, span_ids, i, k, 0.0, pair,
                                  pair[:0])
            reference = terminal
            for j in range(i + 1, k):
                reference = max(reference, log_scale[i, j] + log_scale[j, k])
            peak = 0.0
            if reference > -np.inf:
                peak, possible = _fill_cell(viterbi, kernel, tables, tokens, span_ids, inside, inside0, log_scale,
                                            pair, i, k, reference)
                # below this the peak may be subnormal, and x / peak (x * (1 / peak) under fastmath) overflow
                if peak < RESCALE_BELOW and (possible or terminal > -np.inf):
                    peak, reference = _cell_in_logs(kernel, tables, tokens, span_ids, inside, inside0, log_scale,
                                                    i, k, pair)
            if not peak > 0.0:
                log_scale[i, k] = -np.inf
                for a in range(n):
                    cell0[a] = 0.0
                    cell[a] = 0.0
                continue
            for a in range(n):
                cell[a] /= peak
            if has_unary:
                for a in range(n):
                    cell0[a] /= peak
            log_scale[i, k] = reference + math.log(peak)
    root = inside[0, n_tokens, kernel.start]
    if viterbi:
        return root
    if not root > 0.0 or log_scale[0, n_tokens] == -np.inf:
        return -np.inf
    return math.log(root) + log_scale[0, n_tokens]


@njit(cache=True, fastmath=FAST)
def sentence_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair):
    """Inside pass over one sentence in scaled space (the P_IN of eq. 4.8-4.9; `_inside` with sum).

    Parameters
    ----------
    kernel : KernelGrammar
    tables : RuleTables
    tokens : int (T,) terminal ids
    span_ids : int ((T+1)^2,) substring id of span (j, l) at j*(T+1)+l, or empty without <any> rules
    inside, inside0, log_scale : charts from `chart_buffers`
    pair : (N*N,) work row

    Returns
    -------
    float
        log Z, the log of the total weight of every tree of the sentence
        rooted in the start symbol; -inf if there is none.
    """
    return _inside(False, kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair)


@njit(cache=True)
def sentence_max_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair):
    """The CKY chart of one sentence (`_inside` with max, in log space): ``inside[i, k, A]`` is the
    log weight of the best derivation of A over tokens i..k-1 (-inf: none), ``inside0`` the same
    with a binary, lexical or span rule at the top (`log_scale` is not used).  `tables` is a
    `MaxTables`.  Returns the best tree's log weight (-inf: no tree)."""
    return _inside(True, kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair)


# ------------------------------------------------------------------ the outside pass (sum)
# Largest log factor exp(s_ij + s_jk - s_ik) a split is multiplied by in scaled space: a cell filled
# against the quick reference has its peak above RESCALE_BELOW, so its splits stay below this; only
# the cells of `_cell_in_logs` exceed it, and their splits are summed in logs.
LARGEST_GAP = -math.log(RESCALE_BELOW)


@njit(cache=True, inline="always")
def term_in_logs(gap, weight, left, right):
    """exp(gap) * weight * left * right, formed in logs (exp(gap) alone may overflow)."""
    if weight > 0.0 and left > 0.0 and right > 0.0:
        return math.exp(gap + math.log(weight) + math.log(left) + math.log(right))
    return 0.0


@njit(cache=True)
def _outside_split_in_logs(kernel, tables, bottom, left, right, out_left, out_right, gap, counts):
    """One split's outside messages and expected binary counts with every term in logs, for a parent
    cell far below its children (see LARGEST_GAP); dense counts go to `counts` directly."""
    n = kernel.n_symbols
    if kernel.dense:
        weights = tables.dense_binary
        for a in range(n):
            if bottom[a] <= 0.0:
                continue
            top = gap + math.log(bottom[a])
            for x in range(n * n):
                w = weights[a, x]
                if w <= 0.0:
                    continue
                b = x // n
                c = x % n
                out_left[b] += term_in_logs(top, w, 1.0, right[c])
                out_right[c] += term_in_logs(top, w, left[b], 1.0)
                rule = kernel.binary_rule[kernel.dense_index[a, x]]
                if rule >= 0:
                    counts[rule] += term_in_logs(top, w, left[b], right[c])
        return
    weights = tables.binary_weights
    for b in range(kernel.binary_parent.shape[0]):
        t = bottom[kernel.binary_parent[b]]
        if t <= 0.0 or weights[b] <= 0.0:
            continue
        top = gap + math.log(t) + math.log(weights[b])
        lv = left[kernel.binary_left[b]]
        rv = right[kernel.binary_right[b]]
        out_left[kernel.binary_left[b]] += term_in_logs(top, 1.0, 1.0, rv)
        out_right[kernel.binary_right[b]] += term_in_logs(top, 1.0, lv, 1.0)
        rule = kernel.binary_rule[b]
        if rule >= 0:
            counts[rule] += term_in_logs(top, 1.0, lv, rv)


@njit(cache=True, inline="always", fastmath=FAST)
def _dense_outside_split(grad, factor, left, right, out_left, out_right, pair, n):
    """One split of the dense outside step: messages G = W^T outside0 to both children, and the
    split's outer product added to ``pair`` (the binary counts come from it once a cell)."""
    for b in range(n):
        row = b * n
        total = 0.0
        for c in range(n):
            total += grad[row + c] * right[c]
        out_left[b] += factor * total
        lb = left[b] * factor
        if lb == 0.0:
            continue
        for c in range(n):
            out_right[c] += lb * grad[row + c]
            pair[row + c] += lb * right[c]


@njit(cache=True, inline="always", fastmath=FAST)
def _sparse_outside_split(kernel, weights, bottom, factor, left, right, out_left, out_right, counts):
    """One split of the sparse outside step: each binary rule's messages and expected count."""
    for b in range(kernel.binary_parent.shape[0]):
        t = bottom[kernel.binary_parent[b]]
        if t == 0.0:
            continue
        t *= factor * weights[b]
        lv = left[kernel.binary_left[b]]
        rv = right[kernel.binary_right[b]]
        out_left[kernel.binary_left[b]] += t * rv
        out_right[kernel.binary_right[b]] += t * lv
        rule = kernel.binary_rule[b]
        if rule >= 0:
            counts[rule] += t * lv * rv


@njit(cache=True, inline="always", fastmath=FAST)
def _dense_gradient(weights, bottom, grad, pair, n):
    """G[x] = sum_A outside0[A] W[A, x], and ``pair`` cleared; returns whether any outside is nonzero."""
    for x in range(n * n):
        grad[x] = 0.0
    any_mass = False
    for a in range(n):
        t = bottom[a]
        if t == 0.0:
            continue
        any_mass = True
        row = weights[a]
        for x in range(n * n):
            grad[x] += t * row[x]
    for x in range(n * n):
        pair[x] = 0.0
    return any_mass


@njit(cache=True, fastmath=FAST)
def sentence_inside_outside(kernel, tables, tokens, span_ids, buffers, counts, binary_outer, marginals):
    """Inside-outside on one sentence: log Z, expected rule counts and span marginals.

    Expected counts (eq. 4.8-4.9, with unary rules: E[C_{A->B}] = sum over
    spans of outside0(A) U[A, B] inside(B) / Z) are **added** to `counts` (R,),
    by global rule id.  For the dense layout the binary counts go to
    `binary_outer` (N, N*N) instead, to be multiplied by the binary weights
    once by `add_binary_counts`; the sparse layout adds them to `counts`
    directly (pass a (0, 0) `binary_outer` then).

    Parameters
    ----------
    kernel, tables, tokens, span_ids : as for `sentence_inside`
    buffers : tuple from `chart_buffers`
    counts : float (R,) accumulator
    binary_outer : float (N, N*N) accumulator (dense layout) or (0, 0)
    marginals : float (T+1, T+1, N) output or (0, 0, 0) to skip
        ``marginals[i, k, A]`` = expected number of nodes labelled A that
        span tokens i..k-1 (every node of a unary chain counts).

    Returns
    -------
    float
        log Z; -inf (and nothing added) if the sentence has no tree.
    """
    inside, inside0, outside, outside0, log_scale, work = buffers
    n = kernel.n_symbols
    n_tokens = tokens.shape[0]
    pair = work[0]
    log_z = sentence_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair)
    if log_z == -np.inf:
        return log_z
    rule_weights = tables.rule_weights
    has_unary = kernel.unary_parent.shape[0] > 0
    dense = kernel.dense
    want_marginals = marginals.shape[0] > 0
    for i in range(n_tokens + 1):
        for k in range(i + 1, n_tokens + 1):
            for a in range(n):
                outside[i, k, a] = 0.0
    outside[0, n_tokens, kernel.start] = 1.0 / inside[0, n_tokens, kernel.start]
    grad = work[1]
    for width in range(n_tokens, 0, -1):
        for i in range(n_tokens - width + 1):
            k = i + width
            scale = log_scale[i, k]
            if scale == -np.inf:
                if want_marginals:
                    for a in range(n):
                        marginals[i, k, a] = 0.0
                continue
            top = outside[i, k]
            bottom = outside0[i, k]
            if has_unary:
                closure = tables.unary_closure
                for b in range(n):
                    bottom[b] = 0.0
                for a in range(n):
                    t = top[a]
                    if t == 0.0:
                        continue
                    row = closure[a]
                    for b in range(n):
                        bottom[b] += t * row[b]
                for u in range(kernel.unary_parent.shape[0]):
                    rule = kernel.unary_rule[u]
                    if rule >= 0:
                        parent = kernel.unary_parent[u]
                        child = kernel.unary_child[u]
                        counts[rule] += bottom[parent] * rule_weights[rule] * inside[i, k, child]
            if want_marginals:
                for a in range(n):
                    marginals[i, k, a] = bottom[a] * inside[i, k, a]
            _terminals(COUNT, False, kernel, rule_weights, tokens, span_ids, i, k, scale, bottom, counts)
            if width == 1:
                continue
            if dense and not _dense_gradient(tables.dense_binary, bottom, grad, pair, n):
                continue
            for j in range(i + 1, k):
                shift = log_scale[i, j] + log_scale[j, k]
                if shift == -np.inf:
                    continue
                if shift - scale > LARGEST_GAP:
                    _outside_split_in_logs(kernel, tables, bottom, inside[i, j], inside[j, k], outside[i, j],
                                           outside[j, k], shift - scale, counts)
                    continue
                factor = math.exp(shift - scale)
                if dense:
                    _dense_outside_split(grad, factor, inside[i, j], inside[j, k], outside[i, j], outside[j, k],
                                         pair, n)
                else:
                    _sparse_outside_split(kernel, tables.binary_weights, bottom, factor, inside[i, j], inside[j, k],
                                          outside[i, j], outside[j, k], counts)
            if dense:
                for a in range(n):
                    t = bottom[a]
                    if t == 0.0:
                        continue
                    acc = binary_outer[a]
                    for x in range(n * n):
                        acc[x] += t * pair[x]
    return log_z


@njit(cache=True)
def add_binary_counts(kernel, tables, binary_outer, counts):
    """counts[rule of A -> B C] += W[A, B*N + C] * binary_outer[A, B*N + C] (dense layout; no-op when sparse)."""
    if not kernel.dense:
        return
    n = kernel.n_symbols
    weights = tables.dense_binary
    for b in range(kernel.binary_parent.shape[0]):
        rule = kernel.binary_rule[b]
        if rule < 0:
            continue
        x = kernel.binary_left[b] * n + kernel.binary_right[b]
        counts[rule] += weights[kernel.binary_parent[b], x] * binary_outer[kernel.binary_parent[b], x]


# inlined: its callers' per-sentence loops compile as when they wrote these steps themselves
@njit(cache=True, inline="always")
def sentence_rule_counts(kernel, tables, tokens, span_ids, buffers, counts, binary_outer, marginals):
    """One sentence's expected rule counts (eq. 4.8-4.9) added to `counts` (R,) in either layout:
    `sentence_inside_outside`, then `add_binary_counts` from `binary_outer`, zeroed first.

    Returns log Z; -inf (and nothing added) if the sentence has no tree.
    """
    if kernel.dense:
        binary_outer[:, :] = 0.0
    log_z = sentence_inside_outside(kernel, tables, tokens, span_ids, buffers, counts, binary_outer, marginals)
    if log_z > -np.inf:
        add_binary_counts(kernel, tables, binary_outer, counts)
    return log_z

"""Inside-outside, CKY Viterbi and tree sampling over a binarised grammar (numba).

Every PCFG learner runs on these kernels: EM, VB, CVI and MH differ only in
the rule table they pass in (thesis eq. 4.7-4.12, 4.15-4.16, 4.24), exactly
as the chain learners share `cvbayes.chains.forward_backward`.  A table is a
(R,) array of rule weights indexed by global rule id (`CompiledGrammar`);
expected counts come back in the same (R,) layout.

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

Scaling (why not log space)
---------------------------
The charts are in **scaled space**: each cell is divided by its largest entry
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
grammar needs rule weights near 1e-300 for that to happen).

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

Kernel derivations
------------------
Viterbi and sampling return a tree as rule applications in preorder, one row
``(kind, index, i, j, k)`` each: ``BINARY`` (index: kernel binary rule; split
j), ``UNARY`` (kernel unary rule; j unused), ``LEXICAL`` (lexical entry;
k = i + 1), ``SPAN`` (``<any>`` family; j = the substring id).
`derivation_rule_ids` maps them to global rule ids (deterministic pieces of
binarised rules dropped); `cvbayes.trees.grammar.derivation_to_tree` to a `Tree`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, prange

from ..core.special import FAST
from .grammar import BINARY, LEXICAL, SPAN, UNARY, CompiledGrammar, SentenceBatch

__all__ = [
    "Derivation",
    "InsideOutside",
    "RuleTables",
    "add_binary_counts",
    "batch_inside_outside",
    "batch_log_z",
    "batch_viterbi",
    "build_tables",
    "chart_buffers",
    "cubic_chunks",
    "derivation_rule_ids",
    "expected_counts",
    "inside_outside",
    "log_z",
    "make_tables",
    "sample_tree",
    "sentence_inside",
    "sentence_inside_outside",
    "sentence_sample",
    "sentence_viterbi",
    "viterbi",
    "viterbi_batch",
]

# Relative tolerance of the check that (I - U)^{-1} is non-negative.
CLOSURE_TOLERANCE = 1e-9


class RuleTables(NamedTuple):
    """Kernel tables built from one (R,) rule-weight table (`build_tables`).

    ``rule_weights`` (R,) the table itself (lexical and span weights are read
    from it); ``binary_weights`` (B,) per kernel binary rule; ``dense_binary``
    (N, N*N) W[A, B*N + C] or (0, 0) for the sparse layout;
    ``unary_weights`` U (N, N) and ``unary_closure`` (I - U)^{-1} (N, N), or
    (0, 0) without unary rules.
    """

    rule_weights: np.ndarray
    binary_weights: np.ndarray
    dense_binary: np.ndarray
    unary_weights: np.ndarray
    unary_closure: np.ndarray


@njit(cache=True, inline="always")
def _rule_weight(rule_weights, rule):
    """Weight of a kernel rule: its global rule's, or 1 for a deterministic piece (-1)."""
    return 1.0 if rule < 0 else rule_weights[rule]


@njit(cache=True)
def build_tables(kernel, rule_weights):
    """Gather the kernel tables of one (R,) rule-weight table.

    The unary closure (I - U)^{-1} = sum_n U^n sums every chain of unary
    rules; it exists and is non-negative exactly when the spectral radius of U
    is below one, which is checked (a ValueError otherwise: the weights give
    unary cycles infinite mass).  Cost O(B + N^3) with unary rules, O(B)
    without: cheap enough to rebuild per sentence for CVI (eq. 4.24).
    """
    n = kernel.n_symbols
    n_binary = kernel.binary_parent.shape[0]
    binary_weights = np.empty(n_binary)
    for b in range(n_binary):
        binary_weights[b] = _rule_weight(rule_weights, kernel.binary_rule[b])
    if kernel.dense:
        dense_binary = np.zeros((n, n * n))
        for b in range(n_binary):
            dense_binary[kernel.binary_parent[b], kernel.binary_left[b] * n + kernel.binary_right[b]] = \
                binary_weights[b]
    else:
        dense_binary = np.zeros((0, 0))
    n_unary = kernel.unary_parent.shape[0]
    if n_unary > 0:
        unary = np.zeros((n, n))
        for u in range(n_unary):
            unary[kernel.unary_parent[u], kernel.unary_child[u]] += _rule_weight(rule_weights,
                                                                                kernel.unary_rule[u])
        system = -unary
        for a in range(n):
            system[a, a] += 1.0
        try:
            closure = np.linalg.inv(system)
        except Exception:  # I - U singular: spectral radius exactly one; fails the check below
            closure = np.full((n, n), -1.0)
        for a in range(n):
            for b in range(n):
                if closure[a, b] < -CLOSURE_TOLERANCE * max(1.0, closure[a, a]) or not np.isfinite(closure[a, b]):
                    raise ValueError("unary rule weights have spectral radius >= 1: chains of unary "
                                     "rules (a cycle) have unbounded total weight")
                if closure[a, b] < 0.0:
                    closure[a, b] = 0.0
    else:
        unary = np.zeros((0, 0))
        closure = np.zeros((0, 0))
    return RuleTables(rule_weights, binary_weights, dense_binary, unary, closure)


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


@njit(cache=True, inline="always")
def _span_weight(kernel, rule_weights, family, substring):
    """Weight of <any> family `family` rewriting to substring id `substring` (0 if outside the family)."""
    if substring < 0 or substring >= kernel.span_count[family]:
        return 0.0
    return rule_weights[kernel.span_base[family] + substring]


@njit(cache=True, inline="always", fastmath=FAST)
def _terminal_reference(kernel, rule_weights, tokens, span_ids, i, k):
    """Largest log weight of the lexical (k = i + 1) and span rules over span (i, k)."""
    n_tokens = tokens.shape[0]
    best = -np.inf
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                w = _rule_weight(rule_weights, kernel.lexical_rule[e])
                if w > 0.0:
                    best = max(best, math.log(w))
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        substring = span_ids[i * (n_tokens + 1) + k]
        for p in range(n_families):
            w = _span_weight(kernel, rule_weights, p, substring)
            if w > 0.0:
                best = max(best, math.log(w))
    return best


@njit(cache=True, inline="always", fastmath=FAST)
def _add_terminals(kernel, rule_weights, tokens, span_ids, i, k, reference, cell0):
    """cell0[A] += weight(A -> x_i or A -> x_i..x_{k-1}) exp(-reference)."""
    n_tokens = tokens.shape[0]
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                w = _rule_weight(rule_weights, kernel.lexical_rule[e])
                if w > 0.0:
                    cell0[kernel.lexical_parent[e]] += math.exp(math.log(w) - reference)
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        substring = span_ids[i * (n_tokens + 1) + k]
        for p in range(n_families):
            w = _span_weight(kernel, rule_weights, p, substring)
            if w > 0.0:
                cell0[kernel.span_parent[p]] += math.exp(math.log(w) - reference)


@njit(cache=True, fastmath=FAST)
def _split_pairs(inside, log_scale, i, k, reference, n, pair):
    """pair[B*N + C] = sum_j exp(s_ij + s_jk - reference) inside[i,j,B] inside[j,k,C]."""
    for x in range(n * n):
        pair[x] = 0.0
    for j in range(i + 1, k):
        shift = log_scale[i, j] + log_scale[j, k]
        if shift == -np.inf:
            continue
        factor = math.exp(shift - reference)
        left = inside[i, j]
        right = inside[j, k]
        for b in range(n):
            lb = left[b] * factor
            if lb == 0.0:
                continue
            row = b * n
            for c in range(n):
                pair[row + c] += lb * right[c]


@njit(cache=True, inline="always", fastmath=FAST)
def _fill_cell(kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair, i, k, reference):
    """inside0[i, k] (terminals and binary rules over the splits) and inside[i, k] (its unary
    closure), every contribution scaled by exp(-reference).

    Returns (peak, possible): the cell's largest entry, and whether some binary rule has two children
    of positive inside (so that a zero peak may be underflow rather than an impossible cell).
    """
    n = kernel.n_symbols
    cell0 = inside0[i, k]
    cell = inside[i, k]
    for a in range(n):
        cell0[a] = 0.0
    _add_terminals(kernel, tables.rule_weights, tokens, span_ids, i, k, reference, cell0)
    possible = False
    if k > i + 1:
        if kernel.dense:
            _split_pairs(inside, log_scale, i, k, reference, n, pair)
            weights = tables.dense_binary
            for a in range(n):
                row = weights[a]
                total = 0.0
                for x in range(n * n):
                    total += row[x] * pair[x]
                cell0[a] += total
            for j in range(i + 1, k):
                if log_scale[i, j] + log_scale[j, k] > -np.inf:
                    possible = True
        else:
            weights = tables.binary_weights
            for j in range(i + 1, k):
                shift = log_scale[i, j] + log_scale[j, k]
                if shift == -np.inf:
                    continue
                factor = math.exp(shift - reference)
                left = inside[i, j]
                right = inside[j, k]
                for b in range(kernel.binary_parent.shape[0]):
                    lv = left[kernel.binary_left[b]]
                    rv = right[kernel.binary_right[b]]
                    if lv > 0.0 and rv > 0.0 and weights[b] > 0.0:
                        possible = True
                        cell0[kernel.binary_parent[b]] += factor * weights[b] * lv * rv
    if kernel.unary_parent.shape[0] > 0:
        closure = tables.unary_closure
        for a in range(n):
            row = closure[a]
            total = 0.0
            for b in range(n):
                total += row[b] * cell0[b]
            cell[a] = total
    peak = 0.0
    for a in range(n):
        peak = max(peak, cell[a])
    return peak, possible


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
    reference = _terminal_reference(kernel, rule_weights, tokens, span_ids, i, k)
    if kernel.dense:
        # log_pair[B*N + C] = log sum_j exp(s_ij + s_jk) inside[i,j,B] inside[j,k,C], by its own maximum
        for x in range(n * n):
            log_pair[x] = -np.inf
        for j in range(i + 1, k):
            shift = log_scale[i, j] + log_scale[j, k]
            if shift == -np.inf:
                continue
            for b in range(n):
                for c in range(n):
                    v = _log_product(inside[i, j, b], inside[j, k, c])
                    log_pair[b * n + c] = max(log_pair[b * n + c], shift + v)
        work = np.zeros(n * n)
        for j in range(i + 1, k):
            shift = log_scale[i, j] + log_scale[j, k]
            if shift == -np.inf:
                continue
            for b in range(n):
                for c in range(n):
                    v = _log_product(inside[i, j, b], inside[j, k, c])
                    if v > -np.inf:
                        work[b * n + c] += math.exp(shift + v - log_pair[b * n + c])
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
    _add_terminals(kernel, rule_weights, tokens, span_ids, i, k, reference, cell0)
    _binary_terms(kernel, tables, inside, log_scale, i, k, log_pair, reference, cell0)
    peak = 0.0
    if kernel.unary_parent.shape[0] > 0:
        closure = tables.unary_closure
        for a in range(n):
            total = 0.0
            for b in range(n):
                total += closure[a, b] * cell0[b]
            cell[a] = total
    for a in range(n):
        peak = max(peak, cell[a])
    return peak, reference


# A cell whose peak lands below this share of its quick reference is recomputed with the exact one.
RESCALE_BELOW = 1e-200


@njit(cache=True, fastmath=FAST)
def sentence_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair):
    """Inside pass over one sentence in scaled space (the P_IN of eq. 4.8-4.9).

    Each cell is first filled against a quick reference (the largest of its terminal weights and of
    its splits' scale products); when that leaves a cell that can be derived with a peak below
    ``RESCALE_BELOW`` (rules of tiny weight, down to subnormal ones, as MLE and VB tables with small
    priors have), the cell
    is filled again in log space against the exact largest contribution (`_cell_in_logs`).

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
    n = kernel.n_symbols
    n_tokens = tokens.shape[0]
    if n_tokens == 0:
        return -np.inf
    has_unary = kernel.unary_parent.shape[0] > 0
    for width in range(1, n_tokens + 1):
        for i in range(n_tokens - width + 1):
            k = i + width
            cell0 = inside0[i, k]
            cell = inside[i, k]
            terminal = _terminal_reference(kernel, tables.rule_weights, tokens, span_ids, i, k)
            reference = terminal
            for j in range(i + 1, k):
                reference = max(reference, log_scale[i, j] + log_scale[j, k])
            peak = 0.0
            if reference > -np.inf:
                peak, possible = _fill_cell(kernel, tables, tokens, span_ids, inside, inside0, log_scale, pair,
                                            i, k, reference)
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
    if not root > 0.0 or log_scale[0, n_tokens] == -np.inf:
        return -np.inf
    return math.log(root) + log_scale[0, n_tokens]


@njit(cache=True, inline="always", fastmath=FAST)
def _add_terminal_counts(kernel, rule_weights, tokens, span_ids, i, k, scale, bottom, counts):
    """Expected counts of the lexical and span rules over (i, k) (eq. 4.9)."""
    n_tokens = tokens.shape[0]
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                rule = kernel.lexical_rule[e]
                w = _rule_weight(rule_weights, rule)
                if rule >= 0 and w > 0.0:
                    counts[rule] += bottom[kernel.lexical_parent[e]] * math.exp(math.log(w) - scale)
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        substring = span_ids[i * (n_tokens + 1) + k]
        for p in range(n_families):
            w = _span_weight(kernel, rule_weights, p, substring)
            if w > 0.0:
                counts[kernel.span_base[p] + substring] += bottom[kernel.span_parent[p]] * math.exp(
                    math.log(w) - scale)


# Largest log factor exp(s_ij + s_jk - s_ik) a split is multiplied by in scaled space: a cell filled
# against the quick reference has its peak above RESCALE_BELOW, so its splits stay below this; only
# the cells of `_cell_in_logs` exceed it, and their splits are summed in logs.
LARGEST_GAP = -math.log(RESCALE_BELOW)


@njit(cache=True, inline="always")
def _term_in_logs(gap, weight, left, right):
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
                out_left[b] += _term_in_logs(top, w, 1.0, right[c])
                out_right[c] += _term_in_logs(top, w, left[b], 1.0)
                rule = kernel.binary_rule[kernel.dense_index[a, x]]
                if rule >= 0:
                    counts[rule] += _term_in_logs(top, w, left[b], right[c])
        return
    weights = tables.binary_weights
    for b in range(kernel.binary_parent.shape[0]):
        t = bottom[kernel.binary_parent[b]]
        if t <= 0.0 or weights[b] <= 0.0:
            continue
        top = gap + math.log(t) + math.log(weights[b])
        lv = left[kernel.binary_left[b]]
        rv = right[kernel.binary_right[b]]
        out_left[kernel.binary_left[b]] += _term_in_logs(top, 1.0, 1.0, rv)
        out_right[kernel.binary_right[b]] += _term_in_logs(top, 1.0, lv, 1.0)
        rule = kernel.binary_rule[b]
        if rule >= 0:
            counts[rule] += _term_in_logs(top, 1.0, lv, rv)


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
    n_binary = kernel.binary_parent.shape[0]
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
            _add_terminal_counts(kernel, rule_weights, tokens, span_ids, i, k, scale, bottom, counts)
            if width == 1:
                continue
            if dense:
                weights = tables.dense_binary
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
                if not any_mass:
                    continue
                for x in range(n * n):
                    pair[x] = 0.0
                for j in range(i + 1, k):
                    shift = log_scale[i, j] + log_scale[j, k]
                    if shift == -np.inf:
                        continue
                    if shift - scale > LARGEST_GAP:
                        _outside_split_in_logs(kernel, tables, bottom, inside[i, j], inside[j, k], outside[i, j],
                                               outside[j, k], shift - scale, counts)
                        continue
                    factor = math.exp(shift - scale)
                    left = inside[i, j]
                    right = inside[j, k]
                    out_left = outside[i, j]
                    out_right = outside[j, k]
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
                for a in range(n):
                    t = bottom[a]
                    if t == 0.0:
                        continue
                    acc = binary_outer[a]
                    for x in range(n * n):
                        acc[x] += t * pair[x]
            else:
                weights = tables.binary_weights
                for j in range(i + 1, k):
                    shift = log_scale[i, j] + log_scale[j, k]
                    if shift == -np.inf:
                        continue
                    if shift - scale > LARGEST_GAP:
                        _outside_split_in_logs(kernel, tables, bottom, inside[i, j], inside[j, k], outside[i, j],
                                               outside[j, k], shift - scale, counts)
                        continue
                    factor = math.exp(shift - scale)
                    left = inside[i, j]
                    right = inside[j, k]
                    out_left = outside[i, j]
                    out_right = outside[j, k]
                    for b in range(n_binary):
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


@njit(cache=True)
def _longest_in(offsets, first, last):
    longest = 1
    for i in range(first, last):
        longest = max(longest, offsets[i + 1] - offsets[i])
    return longest


def cubic_chunks(offsets: np.ndarray, n_chunks: int | None = None) -> np.ndarray:
    """Split sentences into one chunk a thread at equal sum of T^3 (the cost of inside-outside)."""
    n_sentences = offsets.shape[0] - 1
    n_chunks = max(1, min(n_sentences, n_chunks or get_num_threads()))
    cost = np.zeros(n_sentences + 1)
    np.cumsum(np.diff(offsets).astype(np.float64) ** 3 + 1.0, out=cost[1:])
    bounds = np.searchsorted(cost, np.linspace(0.0, cost[-1], n_chunks + 1), side="left")
    bounds[0], bounds[-1] = 0, n_sentences
    return np.ascontiguousarray(np.maximum.accumulate(bounds), dtype=np.int64)


@njit(parallel=True, cache=True)
def batch_inside_outside(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, n_rules):
    """Expected counts of many sentences under one rule table (the E-step of EM and VB).

    All sentences see the same table, so chunks of sentences run in parallel,
    each with its own charts and count accumulators (R + N^3 floats a
    thread), summed at the end.

    Returns
    -------
    counts : (R,) expected rule counts summed over the sentences
    log_z : (I,) log Z of every sentence (-inf for one without a tree; it adds no counts)
    """
    n = kernel.n_symbols
    n_chunks = chunk_bounds.shape[0] - 1
    n_sentences = offsets.shape[0] - 1
    outer_size = n if kernel.dense else 0
    counts_acc = np.zeros((n_chunks, n_rules))
    outer_acc = np.zeros((n_chunks, outer_size, outer_size * outer_size))
    log_z = np.empty(n_sentences)
    no_marginals = np.zeros((0, 0, 0))
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    for c in prange(n_chunks):
        buffers = chart_buffers(kernel, _longest_in(offsets, chunk_bounds[c], chunk_bounds[c + 1]))
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            sentence = tokens[offsets[i]:offsets[i + 1]]
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
            log_z[i] = sentence_inside_outside(kernel, tables, sentence, spans, buffers, counts_acc[c],
                                               outer_acc[c], no_marginals)
    counts = counts_acc.sum(axis=0)
    if kernel.dense:
        add_binary_counts(kernel, tables, outer_acc.sum(axis=0), counts)
    return counts, log_z


@njit(parallel=True, cache=True)
def batch_log_z(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds):
    """log Z of every sentence under one rule table (inside only; held-out likelihood)."""
    n_chunks = chunk_bounds.shape[0] - 1
    n_sentences = offsets.shape[0] - 1
    log_z = np.empty(n_sentences)
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    for c in prange(n_chunks):
        inside, inside0, _, _, log_scale, work = chart_buffers(
            kernel, _longest_in(offsets, chunk_bounds[c], chunk_bounds[c + 1]))
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            sentence = tokens[offsets[i]:offsets[i + 1]]
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
            log_z[i] = sentence_inside(kernel, tables, sentence, spans, inside, inside0, log_scale, work[0])
    return log_z


# ------------------------------------------------------------------ Viterbi (CKY)
@njit(cache=True)
def _unary_max_closure(kernel, tables):
    """Best unary chain between every two symbols (Floyd-Warshall in the max-product semiring).

    Returns (log_best (N, N) with log_best[a, a] = 0 for the empty chain,
    next_hop (N, N) the first symbol after a on the best chain to b,
    unary_index (N, N) the kernel unary rule a -> b or -1).  Every cycle has
    weight below one (checked by `build_tables`), so best chains are simple.
    """
    n = kernel.n_symbols
    log_best = np.full((n, n), -np.inf)
    next_hop = np.full((n, n), -1, dtype=np.int64)
    unary_index = np.full((n, n), -1, dtype=np.int64)
    for u in range(kernel.unary_parent.shape[0]):
        a = kernel.unary_parent[u]
        b = kernel.unary_child[u]
        w = tables.unary_weights[a, b]
        unary_index[a, b] = u
        if w > 0.0 and a != b:
            log_best[a, b] = math.log(w)
            next_hop[a, b] = b
    for a in range(n):
        log_best[a, a] = 0.0
        next_hop[a, a] = a
    for m in range(n):
        for a in range(n):
            if log_best[a, m] == -np.inf:
                continue
            for b in range(n):
                v = log_best[a, m] + log_best[m, b]
                if v > log_best[a, b]:
                    log_best[a, b] = v
                    next_hop[a, b] = next_hop[a, m]
    return log_best, next_hop, unary_index


@njit(cache=True)
def _log_or_inf(w):
    return math.log(w) if w > 0.0 else -np.inf


@njit(cache=True)
def sentence_viterbi(kernel, tables, tokens, span_ids, out):
    """The most probable tree of one sentence (CKY in log space, max-product of eq. 4.8).

    The dense layout factorises like the inside pass: max over splits of
    delta(B) + delta(C) first (O(N^2) a split), then max over (B, C) of
    log W + that (O(N^3) a cell).  Unary chains use the max-product closure
    (`_unary_max_closure`).  Backpointers are not stored: the backtrace
    recomputes the best option of each of the tree's O(T) nodes.

    Parameters
    ----------
    out : int64 (at least 2T - 1 + (2T - 1)(N - 1), 5) rule applications, preorder

    Returns
    -------
    (float, int)
        Log weight of the best tree (sum of the log weights of its rules)
        and the number of rule applications written; (-inf, 0) without a tree.
    """
    n = kernel.n_symbols
    n_tokens = tokens.shape[0]
    if n_tokens == 0:
        return -np.inf, 0
    rule_weights = tables.rule_weights
    size = n_tokens + 1
    delta = np.full((size, size, n), -np.inf)
    has_unary = kernel.unary_parent.shape[0] > 0
    delta0 = np.full((size, size, n), -np.inf) if has_unary else delta
    log_best, next_hop, unary_index = _unary_max_closure(kernel, tables)
    dense = kernel.dense
    n_binary = kernel.binary_parent.shape[0]
    log_binary = np.empty(n_binary)
    for b in range(n_binary):
        log_binary[b] = _log_or_inf(tables.binary_weights[b])
    log_dense = np.log(tables.dense_binary) if dense else np.zeros((0, 0))
    best_pair = np.empty(n * n)
    for width in range(1, size):
        for i in range(n_tokens - width + 1):
            k = i + width
            cell0 = delta0[i, k]
            _max_terminals(kernel, rule_weights, tokens, span_ids, i, k, cell0)
            if width > 1:
                if dense:
                    for x in range(n * n):
                        best_pair[x] = -np.inf
                    for j in range(i + 1, k):
                        left = delta[i, j]
                        right = delta[j, k]
                        for b in range(n):
                            if left[b] == -np.inf:
                                continue
                            for c in range(n):
                                v = left[b] + right[c]
                                if v > best_pair[b * n + c]:
                                    best_pair[b * n + c] = v
                    for a in range(n):
                        row = log_dense[a]
                        best = cell0[a]
                        for x in range(n * n):
                            v = row[x] + best_pair[x]
                            if v > best:
                                best = v
                        cell0[a] = best
                else:
                    for j in range(i + 1, k):
                        for b in range(n_binary):
                            v = log_binary[b] + delta[i, j, kernel.binary_left[b]] + delta[j, k, kernel.binary_right[b]]
                            if v > cell0[kernel.binary_parent[b]]:
                                cell0[kernel.binary_parent[b]] = v
            if has_unary:
                for a in range(n):
                    best = -np.inf
                    for b in range(n):
                        v = log_best[a, b] + cell0[b]
                        if v > best:
                            best = v
                    delta[i, k, a] = best
    score = delta[0, n_tokens, kernel.start]
    if score == -np.inf:
        return score, 0
    # backtrace with an explicit stack of (symbol, i, k)
    stack = np.empty((2 * n_tokens, 3), dtype=np.int64)
    stack[0, 0] = kernel.start
    stack[0, 1] = 0
    stack[0, 2] = n_tokens
    depth = 1
    n_out = 0
    while depth > 0:
        depth -= 1
        symbol = stack[depth, 0]
        i = stack[depth, 1]
        k = stack[depth, 2]
        if has_unary:
            bottom = symbol
            best = -np.inf
            for b in range(n):
                v = log_best[symbol, b] + delta0[i, k, b]
                if v > best:
                    best = v
                    bottom = b
            while symbol != bottom:
                hop = next_hop[symbol, bottom]
                n_out = _emit(out, n_out, UNARY, unary_index[symbol, hop], i, -1, k)
                symbol = hop
        target = delta0[i, k, symbol]
        choice_kind, choice_index, choice_split = _best_terminal(kernel, rule_weights, tokens, span_ids, i, k,
                                                                 symbol)
        best = _terminal_log_weight(kernel, rule_weights, tokens, span_ids, choice_kind, choice_index, i, k)
        left_symbol = -1
        right_symbol = -1
        if k > i + 1:
            for j in range(i + 1, k):
                if dense:
                    row = log_dense[symbol]
                    for b in range(n):
                        lv = delta[i, j, b]
                        if lv == -np.inf:
                            continue
                        for c in range(n):
                            v = row[b * n + c] + lv + delta[j, k, c]
                            if v > best:
                                best = v
                                choice_kind = BINARY
                                choice_index = kernel.dense_index[symbol, b * n + c]
                                choice_split = j
                                left_symbol = b
                                right_symbol = c
                else:
                    for b in range(n_binary):
                        if kernel.binary_parent[b] != symbol:
                            continue
                        v = log_binary[b] + delta[i, j, kernel.binary_left[b]] + delta[j, k, kernel.binary_right[b]]
                        if v > best:
                            best = v
                            choice_kind = BINARY
                            choice_index = b
                            choice_split = j
                            left_symbol = kernel.binary_left[b]
                            right_symbol = kernel.binary_right[b]
        if choice_kind == BINARY:
            n_out = _emit(out, n_out, BINARY, choice_index, i, choice_split, k)
            stack[depth, 0] = right_symbol
            stack[depth, 1] = choice_split
            stack[depth, 2] = k
            stack[depth + 1, 0] = left_symbol
            stack[depth + 1, 1] = i
            stack[depth + 1, 2] = choice_split
            depth += 2
        else:
            n_out = _emit(out, n_out, choice_kind, choice_index, i, choice_split, k)
        if best < target - 1e-9 * abs(target) - 1e-12:
            raise RuntimeError("CKY backtrace disagrees with the chart")
    return score, n_out


@njit(cache=True)
def _emit(out, n_out, kind, index, i, j, k):
    out[n_out, 0] = kind
    out[n_out, 1] = index
    out[n_out, 2] = i
    out[n_out, 3] = j
    out[n_out, 4] = k
    return n_out + 1


@njit(cache=True)
def _max_terminals(kernel, rule_weights, tokens, span_ids, i, k, cell0):
    """cell0[A] = max log weight of A's lexical / span rules over (i, k) (-inf if none)."""
    n_tokens = tokens.shape[0]
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                v = _log_or_inf(_rule_weight(rule_weights, kernel.lexical_rule[e]))
                a = kernel.lexical_parent[e]
                if v > cell0[a]:
                    cell0[a] = v
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        substring = span_ids[i * (n_tokens + 1) + k]
        for p in range(n_families):
            v = _log_or_inf(_span_weight(kernel, rule_weights, p, substring))
            a = kernel.span_parent[p]
            if v > cell0[a]:
                cell0[a] = v


@njit(cache=True)
def _best_terminal(kernel, rule_weights, tokens, span_ids, i, k, symbol):
    """(kind, index, substring) of `symbol`'s best lexical or span rule over (i, k); kind -1 if none."""
    n_tokens = tokens.shape[0]
    best = -np.inf
    kind = -1
    index = -1
    substring_out = -1
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                if kernel.lexical_parent[e] != symbol:
                    continue
                v = _log_or_inf(_rule_weight(rule_weights, kernel.lexical_rule[e]))
                if v > best:
                    best = v
                    kind = LEXICAL
                    index = e
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        substring = span_ids[i * (n_tokens + 1) + k]
        for p in range(n_families):
            if kernel.span_parent[p] != symbol:
                continue
            v = _log_or_inf(_span_weight(kernel, rule_weights, p, substring))
            if v > best:
                best = v
                kind = SPAN
                index = p
                substring_out = substring
    return kind, index, substring_out


@njit(cache=True)
def _terminal_log_weight(kernel, rule_weights, tokens, span_ids, kind, index, i, k):
    if kind == LEXICAL:
        return _log_or_inf(_rule_weight(rule_weights, kernel.lexical_rule[index]))
    if kind == SPAN:
        substring = span_ids[i * (tokens.shape[0] + 1) + k]
        return _log_or_inf(_span_weight(kernel, rule_weights, index, substring))
    return -np.inf


@njit(parallel=True, cache=True)
def batch_viterbi(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, row_offsets):
    """`sentence_viterbi` on every sentence, in parallel (one table for all).

    Sentence i writes its rule applications to
    ``applications[row_offsets[i]:row_offsets[i + 1]]`` (reserve
    ``(2T - 1)(N + 1)`` rows each, as `viterbi_batch` does).

    Returns
    -------
    scores : (I,) log weight of each best tree (-inf: no tree)
    n_applications : (I,) rows used by each sentence (0: no tree)
    applications : (row_offsets[-1], 5) int64
    """
    n_sentences = offsets.shape[0] - 1
    n_chunks = chunk_bounds.shape[0] - 1
    scores = np.empty(n_sentences)
    used = np.zeros(n_sentences, dtype=np.int64)
    applications = np.empty((row_offsets[-1], 5), dtype=np.int64)
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    for c in prange(n_chunks):
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            sentence = tokens[offsets[i]:offsets[i + 1]]
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
            score, n_out = sentence_viterbi(kernel, tables, sentence, spans,
                                            applications[row_offsets[i]:row_offsets[i + 1]])
            scores[i] = score
            used[i] = max(n_out, 0)
    return scores, used, applications


# ------------------------------------------------------------------ sampling
@njit(cache=True)
def _draw(total):
    return np.random.random() * total


@njit(cache=True, fastmath=FAST)
def sentence_sample(kernel, tables, tokens, span_ids, buffers, seed, out):
    """Draw one tree from p(tree | sentence, table), top-down from the inside chart.

    Goodman (1998); Johnson, Griffiths and Goldwater (2007): the proposal
    of the MH sampler is a tree drawn from the rule probabilities theta^H
    (eq. 4.15-4.16).  At a cell's top the unary chain goes on to A -> B with
    probability U[A, B] inside(B) / inside(A) or stops with
    inside0(A) / inside(A); at its bottom a binary rule and split, lexical or
    span rule is drawn in proportion to its share of inside0(A).

    Parameters
    ----------
    buffers : tuple from `chart_buffers`
    seed : int
        Seeds numba's generator of the calling thread when >= 0 (draws
        depend on nothing else); < 0 continues the current stream.
    out : int64 (rows, 5) rule applications in preorder (see module notes); a
        unary chain longer than the rows left ends the draw with n = -1.

    Returns
    -------
    (float, int)
        log weight of the tree (sum of the log weights of its rules, so
        log q(tree) = that - log Z) and the number of rows written;
        (-inf, 0) if the sentence has no tree.
    """
    if seed >= 0:
        np.random.seed(seed)
    inside, inside0, _, _, log_scale, work = buffers
    n = kernel.n_symbols
    n_tokens = tokens.shape[0]
    log_z = sentence_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, work[0])
    if log_z == -np.inf:
        return -np.inf, 0
    rule_weights = tables.rule_weights
    has_unary = kernel.unary_parent.shape[0] > 0
    dense = kernel.dense
    n_binary = kernel.binary_parent.shape[0]
    unary_of = np.full((n, n), -1, dtype=np.int64)
    for u in range(kernel.unary_parent.shape[0]):
        unary_of[kernel.unary_parent[u], kernel.unary_child[u]] = u
    stack = np.empty((2 * n_tokens, 3), dtype=np.int64)
    stack[0, 0] = kernel.start
    stack[0, 1] = 0
    stack[0, 2] = n_tokens
    depth = 1
    n_out = 0
    log_weight = 0.0
    rows = out.shape[0]
    while depth > 0:
        depth -= 1
        symbol = stack[depth, 0]
        i = stack[depth, 1]
        k = stack[depth, 2]
        scale = log_scale[i, k]
        if has_unary:
            # walk down the unary chain: stop with inside0(A), go on to B with U[A,B] inside(B)
            while True:
                u = _draw(inside[i, k, symbol])
                u -= inside0[i, k, symbol]
                if u < 0.0:
                    break
                nxt = -1
                last = -1
                for b in range(n):
                    w = tables.unary_weights[symbol, b] * inside[i, k, b]
                    if w <= 0.0:
                        continue
                    last = b
                    u -= w
                    if u < 0.0:
                        nxt = b
                        break
                if nxt < 0:
                    if last < 0 or inside0[i, k, symbol] > 0.0:
                        break  # rounding at the end of the options: stop
                    nxt = last
                if n_out >= rows:
                    return log_weight, -1
                n_out = _emit(out, n_out, UNARY, unary_of[symbol, nxt], i, -1, k)
                log_weight += math.log(tables.unary_weights[symbol, nxt])
                symbol = nxt
        u = _draw(inside0[i, k, symbol])
        # the options in a fixed order; the last positive one absorbs rounding
        kind = -1
        index = -1
        split = -1
        left_symbol = -1
        right_symbol = -1
        chosen_log = 0.0
        found = False
        if k == i + 1:
            word = tokens[i]
            if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
                for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
                    if kernel.lexical_parent[e] != symbol:
                        continue
                    w = _rule_weight(rule_weights, kernel.lexical_rule[e])
                    if w <= 0.0:
                        continue
                    kind = LEXICAL
                    index = e
                    chosen_log = math.log(w)
                    u -= math.exp(chosen_log - scale)
                    if u < 0.0:
                        found = True
                        break
        if not found and kernel.span_parent.shape[0] > 0:
            substring = span_ids[i * (n_tokens + 1) + k]
            for p in range(kernel.span_parent.shape[0]):
                if kernel.span_parent[p] != symbol:
                    continue
                w = _span_weight(kernel, rule_weights, p, substring)
                if w <= 0.0:
                    continue
                kind = SPAN
                index = p
                split = substring
                chosen_log = math.log(w)
                u -= math.exp(chosen_log - scale)
                if u < 0.0:
                    found = True
                    break
        for j in range(i + 1, k):
            if found:
                break
            shift = log_scale[i, j] + log_scale[j, k]
            if shift == -np.inf:
                continue
            # a split far above its parent (a cell of `_cell_in_logs`): each option's weight in logs
            in_logs = shift - scale > LARGEST_GAP
            factor = 1.0 if in_logs else math.exp(shift - scale)
            left = inside[i, j]
            right = inside[j, k]
            if dense:
                row = tables.dense_binary[symbol]
                for b in range(n):
                    lb = left[b] * factor
                    if lb == 0.0:
                        continue
                    for c in range(n):
                        if in_logs:
                            w = _term_in_logs(shift - scale, row[b * n + c], left[b], right[c])
                        else:
                            w = row[b * n + c] * lb * right[c]
                        if w <= 0.0:
                            continue
                        kind = BINARY
                        index = kernel.dense_index[symbol, b * n + c]
                        split = j
                        left_symbol = b
                        right_symbol = c
                        u -= w
                        if u < 0.0:
                            found = True
                            break
                    if found:
                        break
            else:
                for b in range(n_binary):
                    if kernel.binary_parent[b] != symbol:
                        continue
                    if in_logs:
                        w = _term_in_logs(shift - scale, tables.binary_weights[b], left[kernel.binary_left[b]],
                                          right[kernel.binary_right[b]])
                    else:
                        w = (tables.binary_weights[b] * left[kernel.binary_left[b]] * right[kernel.binary_right[b]]
                             * factor)
                    if w <= 0.0:
                        continue
                    kind = BINARY
                    index = b
                    split = j
                    left_symbol = kernel.binary_left[b]
                    right_symbol = kernel.binary_right[b]
                    u -= w
                    if u < 0.0:
                        found = True
                        break
        if kind < 0 or n_out >= rows:
            return log_weight, -1  # no option (cannot happen when inside0 > 0) or out of rows
        n_out = _emit(out, n_out, kind, index, i, split, k)
        if kind == BINARY:
            log_weight += math.log(tables.binary_weights[index])
            stack[depth, 0] = right_symbol
            stack[depth, 1] = split
            stack[depth, 2] = k
            stack[depth + 1, 0] = left_symbol
            stack[depth + 1, 1] = i
            stack[depth + 1, 2] = split
            depth += 2
        else:
            log_weight += chosen_log
    return log_weight, n_out


@njit(cache=True)
def derivation_rule_ids(kernel, applications, n_applications):
    """Global rule ids of a derivation's applications, in order (deterministic pieces dropped)."""
    out = np.empty(n_applications, dtype=np.int64)
    n_out = 0
    for r in range(n_applications):
        kind = applications[r, 0]
        index = applications[r, 1]
        if kind == BINARY:
            rule = kernel.binary_rule[index]
        elif kind == UNARY:
            rule = kernel.unary_rule[index]
        elif kind == LEXICAL:
            rule = kernel.lexical_rule[index]
        else:
            rule = kernel.span_base[index] + applications[r, 3]
        if rule >= 0:
            out[n_out] = rule
            n_out += 1
    return out[:n_out]


# ------------------------------------------------------------------ Python API
class InsideOutside(NamedTuple):
    """Result of `inside_outside` on one sentence.

    ``log_z`` float; ``counts`` (R,) expected rule counts by global id;
    ``span_marginals`` (T+1, T+1, n_nonterminals) expected number of nodes
    labelled A over tokens i..k-1 (``[i, k, A]``), or None.
    """

    log_z: float
    counts: np.ndarray
    span_marginals: np.ndarray | None


class Derivation(NamedTuple):
    """One tree of a sentence: ``log_weight`` (sum of its rules' log weights),
    ``rules`` (global rule ids used, with repeats: the tree's counts C^i of
    eq. 4.13-4.14), ``applications`` (n, 5) int64 kernel rows (see module notes)."""

    log_weight: float
    rules: np.ndarray
    applications: np.ndarray


def make_tables(grammar: CompiledGrammar, rule_weights) -> RuleTables:
    """`build_tables` for a compiled grammar; checks the table's shape and values."""
    weights = np.ascontiguousarray(rule_weights, dtype=np.float64)
    if weights.shape != (grammar.n_rules,):
        raise ValueError(f"rule_weights must have shape ({grammar.n_rules},), got {weights.shape}")
    if weights.size and not (np.all(np.isfinite(weights)) and weights.min() >= 0.0):
        raise ValueError("rule weights must be finite and non-negative")
    return build_tables(grammar.kernel, weights)


def _sentence_arrays(grammar: CompiledGrammar, sentence):
    tokens = grammar.encode(sentence)
    if grammar.substrings is not None:
        spans = grammar.substrings.span_ids(tokens)
    else:
        spans = np.zeros(0, dtype=np.int64)
    return tokens, spans


def inside_outside(grammar: CompiledGrammar, tables: RuleTables, sentence, *,
                   marginals: bool = False) -> InsideOutside:
    """log Z, expected rule counts (eq. 4.8-4.9) and optionally span marginals of one sentence.

    `sentence` is a sequence of tokens (strings) or of terminal ids.  Span
    marginals are returned for the user's nonterminals only.
    """
    kernel = grammar.kernel
    tokens, spans = _sentence_arrays(grammar, sentence)
    buffers = chart_buffers(kernel, max(len(tokens), 1))
    counts = np.zeros(grammar.n_rules)
    n = kernel.n_symbols
    outer = np.zeros((n, n * n)) if kernel.dense else np.zeros((0, 0))
    chart = np.zeros((len(tokens) + 1, len(tokens) + 1, n)) if marginals else np.zeros((0, 0, 0))
    log_z = sentence_inside_outside(kernel, tables, tokens, spans, buffers, counts, outer, chart)
    add_binary_counts(kernel, tables, outer, counts)
    return InsideOutside(float(log_z), counts,
                         chart[:, :, :grammar.n_nonterminals].copy() if marginals else None)


def log_z(grammar: CompiledGrammar, tables: RuleTables, sentence) -> float:
    """log Z of one sentence (inside pass only)."""
    kernel = grammar.kernel
    tokens, spans = _sentence_arrays(grammar, sentence)
    inside, inside0, _, _, log_scale, work = chart_buffers(kernel, max(len(tokens), 1))
    return float(sentence_inside(kernel, tables, tokens, spans, inside, inside0, log_scale, work[0]))


def _application_rows(grammar: CompiledGrammar, n_tokens: int) -> np.ndarray:
    """Room for a tree's rule applications: 2T - 1 nodes, each with a unary chain of at most N - 1 rules."""
    nodes = max(2 * n_tokens - 1, 1)
    return np.empty((nodes * (grammar.kernel.n_symbols + 1), 5), dtype=np.int64)


def viterbi(grammar: CompiledGrammar, tables: RuleTables, sentence) -> Derivation | None:
    """The most probable tree of one sentence (CKY), or None if it has no tree."""
    tokens, spans = _sentence_arrays(grammar, sentence)
    out = _application_rows(grammar, len(tokens))
    score, n_out = sentence_viterbi(grammar.kernel, tables, tokens, spans, out)
    if n_out <= 0:
        return None
    applications = out[:n_out].copy()
    return Derivation(float(score), derivation_rule_ids(grammar.kernel, applications, n_out), applications)


def viterbi_batch(grammar: CompiledGrammar, tables: RuleTables, batch: SentenceBatch) -> list[Derivation | None]:
    """The most probable tree of every sentence of a batch (parallel CKY); None where a sentence has no tree."""
    lengths = np.diff(batch.offsets)
    rows = np.maximum(2 * lengths - 1, 1) * (grammar.kernel.n_symbols + 1)
    row_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(rows, out=row_offsets[1:])
    scores, used, applications = batch_viterbi(grammar.kernel, tables, batch.tokens, batch.offsets, batch.span_ids,
                                               batch.span_offsets, cubic_chunks(batch.offsets), row_offsets)
    out: list[Derivation | None] = []
    for i in range(len(lengths)):
        if used[i] == 0:
            out.append(None)
            continue
        rows_i = applications[row_offsets[i]:row_offsets[i] + used[i]].copy()
        out.append(Derivation(float(scores[i]), derivation_rule_ids(grammar.kernel, rows_i, used[i]), rows_i))
    return out


def sample_tree(grammar: CompiledGrammar, tables: RuleTables, sentence, seed: int) -> Derivation | None:
    """One tree drawn from p(tree | sentence, table) (Goodman 1998), or None if it has no tree.

    `seed` (a non-negative int, e.g. from ``rng.integers(2**62)``) fixes the draw.
    """
    if seed < 0:
        raise ValueError("seed must be non-negative")
    tokens, spans = _sentence_arrays(grammar, sentence)
    buffers = chart_buffers(grammar.kernel, max(len(tokens), 1))
    # unary chains can be long under heavy unary weights: allow a generous budget
    out = np.empty((_application_rows(grammar, len(tokens)).shape[0] * 8, 5), dtype=np.int64)
    score, n_out = sentence_sample(grammar.kernel, tables, tokens, spans, buffers, int(seed), out)
    if n_out == 0:
        return None
    if n_out < 0:
        raise RuntimeError("tree sampling ran out of rows (an extremely long unary chain)")
    applications = out[:n_out].copy()
    return Derivation(float(score), derivation_rule_ids(grammar.kernel, applications, n_out), applications)


def expected_counts(grammar: CompiledGrammar, tables: RuleTables, batch: SentenceBatch,
                    chunk_bounds: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Expected rule counts (R,) summed over a batch of sentences and each sentence's log Z.

    The E-step of EM (eq. 4.10) and VB (eq. 4.12), parallel over sentences.
    """
    if chunk_bounds is None:
        chunk_bounds = cubic_chunks(batch.offsets)
    return batch_inside_outside(grammar.kernel, tables, batch.tokens, batch.offsets, batch.span_ids,
                                batch.span_offsets, chunk_bounds, grammar.n_rules)

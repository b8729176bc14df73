"""Dependency Model with Valence: inside-outside, Viterbi and tree sampling.

The DMV of Klein and Manning (2004) generates a sentence's projective
dependency tree from a single ROOT: ROOT picks one word h (``root``); every
word then generates its dependents on each side, innermost first, each time
deciding first whether to stop (``stop``, conditioned on its type, the side
and whether it already has a dependent on that side, the *valence*) and if
not, which type to attach (``attach``, conditioned on its type and the side).
The two sides are independent given the head (each decision sees only its
own side's valence), so the order in which they are generated does not
matter.  The thesis trains its Dirichlet-multinomial form with EM, VB and CVI
(P. Wang 2016, §4.5.2); all three run the inside-outside algorithm of this
module on different tables (eq. 4.7-4.9 for EM, 4.12 for VB, 4.24 for CVI).

Chart
-----
Eisner's first-order O(n^3) algorithm (Eisner 1996, 2000) on *split-head*
half-constituents (Eisner and Satta 1999): a word's left and right dependents
are collected in separate halves, so no span carries a head index inside it
and the DMV's valence needs no extra state: a half of width zero is exactly
"no dependent yet on this side".  Every projective single-root tree has
exactly one derivation, so the sum over derivations is the sum over trees.
Items, each over words i..j (0-based, i <= j):

* ``RU[h, j]``, ``LU[i, h]``: open right (left) half of head h: h with its
  right (left) dependents and their subtrees, not yet stopped;
* ``RS``, ``LS``: the same halves after the final stop decision (sealed);
* ``RI[h, m]``, ``LI[m, h]``: h has just taken m as its outermost dependent
  so far on that side; covers h's half up to m and m's inner half.

Rules (log weights added): ``RS[h,j] = RU[h,j] + stop(h,R,j>h,STOP)``;
``RU[h,j] = sum_m RI[h,m] RS[m,j]``; ``RI[h,m] = sum_k RU[h,k] LS[k+1,m]
cont(h,R,k>h) attach(h->m)``, and mirrored on the left;
``Z = sum_h root(h) LS[0,h] RS[h,n-1]``.

Numerics: log space throughout (a cell is a log-sum-exp over its splits), so
log Z stays finite for long sentences and weights of any size, e.g. VB's
exp-digamma weights (eq. 4.12) near exp(-100) for alpha = 0.01.  The outside
pass propagates posterior *marginals* of items top-down (each split gets its
parent's marginal times its share of the parent's inside value), so every
number it handles lies in [0, 1] and no outside log values are needed.

Layouts
-------
Tables over V types (tags or words); every Dirichlet row is the last axis:

* ``root`` (V,): P(type is the ROOT's dependent), one row;
* ``stop`` (V, 2, 2, 2): ``[head, direction, valence, decision]`` with
  direction ``LEFT = 0``, ``RIGHT = 1``; valence ``NO_DEPENDENT = 0`` (no
  dependent yet on that side, K&M's "adjacent") or ``HAS_DEPENDENT = 1``;
  decision ``STOP = 0``, ``CONTINUE = 1``; 4V rows of 2 outcomes;
* ``attach`` (V, 2, V): ``[head, direction, dependent]``; 2V rows over V.

Kernels take the natural logs of these tables (``log_root``, ``log_stop``,
``log_attach``); -inf marks an impossible event.  Expected counts come back
in the same three shapes, so a Dirichlet rule applies row by row along the
last axis.  Their identities, per sentence of n words: ``root`` sums to 1,
``attach`` to n - 1, each word contributes one STOP per side (the valence-0
and valence-1 STOP counts of a (type, side) together count its tokens),
and CONTINUE at valence 0 equals STOP at valence 1.

Per sentence, the kernels work on position-level log weights gathered from
the tables by `sentence_weights` (or computed directly, e.g. CVI's
leave-one-out weights for the sentence's own cells only):

* ``w_root`` (>= n,): log weight of word p being the root;
* ``w_stop`` (>= n, 2, 2, 2): the stop table row of word p's type;
* ``w_attach`` (>= n, >= n): ``[h, m]`` log weight of h taking m as a
  dependent (side: m < h is LEFT); the diagonal is unused.

Local posteriors of a sentence (what CVI keeps per sentence and subtracts):

* ``head_marginals`` (n, n + 1): ``[m, h]`` = P(head of word m is h), h in
  CoNLL-U's HEAD convention (0 = ROOT, h = p + 1 for word p); rows sum to 1;
* ``none_marginals`` (n, 2): ``[p, d]`` = P(word p has no dependent on side
  d); 1 exactly for the side facing the sentence edge.

`add_posterior_counts` turns them into expected counts (with a signed
weight, so the same call subtracts them), `add_tree_counts` does the same for
one tree given by its heads.  Heads are 1-based with 0 for the root.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..core.special import FAST
from ..core.rules import mean_cell
from ..core.sampling import pick, uniform, unit_generator
from ..core.units import cubic_chunks, first_bad, max_length, parallel_over_chunks
from .top_down import push

LEFT = 0
RIGHT = 1
NO_DEPENDENT = 0
HAS_DEPENDENT = 1
STOP = 0
CONTINUE = 1

# chart item kinds, the first index of the chart arrays
RU = 0
LU = 1
RS = 2
LS = 3
RI = 4
LI = 5
N_ITEMS = 6


# not cached: numba 0.68 fails ("'descr' is NULL") when Python calls a cached function that returns
# arrays after the function was loaded from the cache as another cached kernel's callee; its callers
# are cached with its code inside them, so only direct calls from Python compile it (a fraction of a second)
@njit
def dmv_buffers(longest):
    """Work arrays for sentences of up to ``longest`` words.

    Returns (w_root, w_stop, w_attach, chart, posterior, terms, head_marginals,
    none_marginals, stack, heads): the position-level weights, the inside chart
    and the item posteriors (6, L, L), a scratch row, the local posteriors, the
    top-down stack and a head array.
    """
    n = max(longest, 1)
    return (np.empty(n), np.empty((n, 2, 2, 2)), np.empty((n, n)), np.empty((N_ITEMS, n, n)),
            np.empty((N_ITEMS, n, n)), np.empty(n), np.empty((n, n + 1)), np.empty((n, 2)),
            np.empty((6 * n + 4, 3), dtype=np.int64), np.empty(n, dtype=np.int32))


@njit(cache=True)
def sentence_weights(tags, begin, n, log_root, log_stop, log_attach, w_root, w_stop, w_attach):
    """Gather the position-level log weights of words ``tags[begin:begin + n]``.

    Parameters
    ----------
    tags : (N,) int type ids.
    log_root, log_stop, log_attach : the log tables (module notes).
    w_root, w_stop, w_attach : outputs, position-level weights (module notes).
    """
    for p in range(n):
        t = tags[begin + p]
        w_root[p] = log_root[t]
        for d in range(2):
            for v in range(2):
                for o in range(2):
                    w_stop[p, d, v, o] = log_stop[t, d, v, o]
        for q in range(n):
            if q < p:
                w_attach[p, q] = log_attach[t, LEFT, tags[begin + q]]
            elif q > p:
                w_attach[p, q] = log_attach[t, RIGHT, tags[begin + q]]
            else:
                w_attach[p, q] = -np.inf


@njit(cache=True)
def mean_sentence_weights(tags, begin, n, alpha, root_counts, root_total, stop_counts, attach_counts,
                          attach_totals, w_root, w_stop, w_attach):
    """CVI's position-level log weights of one sentence, from counts that leave it out (thesis eq. 4.24).

    Every cell the sentence can use gets log theta_bar = log (E[C^{\\i}] + alpha) / (E[C^{\\i}_.] + K alpha),
    by `cvbayes.core.rules.mean_cell`, with K the row's width (V for the root and attach rows, 2 for
    a stop row).  Only the sentence's own cells are computed: O(n^2), never O(V^2).

    Parameters
    ----------
    tags : (N,) int type ids; the sentence is ``tags[begin:begin + n]``.
    alpha : float, the symmetric Dirichlet pseudo-count of every row.
    root_counts (V,), stop_counts (V, 2, 2, 2), attach_counts (V, 2, V) :
        expected counts of every other sentence.
    root_total : (1,) the root row's total; attach_totals : (V, 2) each attach
        row's total (kept by `add_row_totals`, so a row is never summed here).
    w_root, w_stop, w_attach : outputs, position-level weights (module notes).
    """
    n_types = root_counts.shape[0]
    for p in range(n):
        t = tags[begin + p]
        w_root[p] = math.log(mean_cell(root_counts[t], alpha, root_total[0], n_types * alpha))
        for d in range(2):
            for v in range(2):
                row = max(stop_counts[t, d, v, STOP], 0.0) + max(stop_counts[t, d, v, CONTINUE], 0.0)
                for o in range(2):
                    w_stop[p, d, v, o] = math.log(mean_cell(stop_counts[t, d, v, o], alpha, row, 2.0 * alpha))
        for q in range(n):
            if q == p:
                w_attach[p, q] = -np.inf
                continue
            side = LEFT if q < p else RIGHT
            w_attach[p, q] = math.log(mean_cell(attach_counts[t, side, tags[begin + q]], alpha,
                                                attach_totals[t, side], n_types * alpha))


@njit(cache=True)
def add_row_totals(tags, begin, n, head_marginals, weight, root_total, attach_totals):
    """Add ``weight`` x one sentence's share of the root row's and the attach rows' totals.

    The totals of what `add_posterior_counts` adds with the same arguments (the stop rows have two
    cells and need no kept total), so CVI can keep them in step at O(n^2) a sentence.

    Parameters
    ----------
    head_marginals : (>= n, >= n + 1), as `add_posterior_counts`.
    root_total : (1,) and attach_totals : (V, 2) accumulators.
    """
    for m in range(n):
        root_total[0] += weight * head_marginals[m, 0]
        for h in range(n):
            if h != m:
                attach_totals[tags[begin + h], LEFT if m < h else RIGHT] += weight * head_marginals[m, h + 1]


@njit(cache=True, fastmath=FAST)
def _reduce(terms, count, viterbi):
    """log sum exp (or max, for Viterbi) of ``terms[:count]``; -inf if all are."""
    best = -np.inf
    for k in range(count):
        if terms[k] > best:
            best = terms[k]
    if viterbi or best == -np.inf:
        return best
    total = 0.0
    for k in range(count):
        total += math.exp(terms[k] - best)
    return best + math.log(total)


@njit(cache=True, fastmath=FAST)
def _choose(terms, count, viterbi, state):
    """Index of the largest of ``terms[:count]`` (Viterbi), or one drawn with
    probability proportional to exp(term) with one uniform from ``state``
    (``terms`` is then overwritten)."""
    best = 0
    for k in range(1, count):
        if terms[k] > terms[best]:
            best = k
    if viterbi:
        return best
    top = terms[best]
    for k in range(count):
        terms[k] = math.exp(terms[k] - top)
    return pick(terms, count, uniform(state))


# ROOT's item over the whole sentence: its splits are the root word h, over LS[0, h] and RS[h, n - 1]
ROOT_ITEM = N_ITEMS


@njit(cache=True, inline="always")
def _n_splits(kind, i, j):
    """The number of splits of item (kind, i, j): its root words (ROOT_ITEM), else its width j - i."""
    return j + 1 if kind == ROOT_ITEM else j - i


@njit(cache=True, inline="always")
def _split_term(chart, w_root, w_stop, kind, i, j, x):
    """The log weight of split x of item (kind, i, j), 0 <= x < `_n_splits`.

    The item's inside is the log-sum-exp (max for Viterbi) of its splits, plus its attach weight for
    RI and LI; the outside pass hands each split its share of the item's posterior, the top-down pass
    chooses one; `_children` names the two items under split x.  RS and LS have the splits of RU and LU.
    """
    if kind == ROOT_ITEM:
        return w_root[x] + chart[LS, 0, x] + chart[RS, x, j]
    if kind == RU or kind == RS:
        m = i + 1 + x
        return chart[RI, i, m] + chart[RS, m, j]
    if kind == LU or kind == LS:
        m = i + x
        return chart[LS, i, m] + chart[LI, m, j]
    k = i + x
    if kind == RI:
        # i takes j as its outermost right dependent so far; k ends i's inner half
        return chart[RU, i, k] + chart[LS, k + 1, j] + w_stop[i, RIGHT, 1 if k > i else 0, CONTINUE]
    # j takes i as its outermost left dependent so far
    return chart[RS, i, k] + chart[LU, k + 1, j] + w_stop[j, LEFT, 1 if k + 1 < j else 0, CONTINUE]


@njit(cache=True, inline="always")
def _split_terms(chart, w_root, w_stop, kind, i, j, terms):
    """Every split's `_split_term` of item (kind, i, j), in order, to ``terms``; returns their number."""
    count = _n_splits(kind, i, j)
    # k counts from i (split k - i), as in the hand-written loops this replaced: so shaped, LLVM leaves
    # the loop scalar; counting x from 0 it vectorises it with gathers, slower on spans of a few words
    for k in range(i, i + count):
        terms[k - i] = _split_term(chart, w_root, w_stop, kind, i, j, k - i)
    return count


@njit(cache=True, inline="always")
def _children(kind, i, j, x):
    """The two items (kind, left, right) under split x of item (kind, i, j) (`_split_terms`' order)."""
    if kind == ROOT_ITEM:
        return LS, 0, x, RS, x, j
    if kind == RU or kind == RS:
        # open halves end with their outermost dependent's sealed outer half
        return RI, i, i + 1 + x, RS, i + 1 + x, j
    if kind == LU or kind == LS:
        return LS, i, i + x, LI, i + x, j
    if kind == RI:
        return RU, i, i + x, LS, i + x + 1, j
    return RS, i, i + x, LU, i + x + 1, j


@njit(cache=True, fastmath=FAST)
def dmv_inside(w_root, w_stop, w_attach, n, chart, terms, viterbi):
    """Inside pass of the split-head DMV chart (Eisner 2000; Klein and Manning 2004).

    The inside probabilities P_IN of thesis eq. 4.8, for the DMV's items (module
    notes), in log space; with ``viterbi`` the sums become maxima (the best
    derivation's log weight).

    Parameters
    ----------
    w_root, w_stop, w_attach : position-level log weights (module notes).
    n : int, number of words (>= 1).
    chart : (6, >= n, >= n) output, the inside log values of the items
        ``chart[kind, left, right]`` for kind RU, LU, RS, LS, RI, LI.
    terms : (>= n,) scratch.
    viterbi : bool.

    Returns
    -------
    float
        log Z = log sum over projective single-root trees of their weight (the
        best tree's log weight with ``viterbi``); -inf if no tree is possible.
    """
    ru = chart[RU]
    lu = chart[LU]
    rs = chart[RS]
    ls = chart[LS]
    ri = chart[RI]
    li = chart[LI]
    for h in range(n):
        ru[h, h] = 0.0
        lu[h, h] = 0.0
        rs[h, h] = w_stop[h, RIGHT, NO_DEPENDENT, STOP]
        ls[h, h] = w_stop[h, LEFT, NO_DEPENDENT, STOP]
    for width in range(1, n):
        for i in range(n - width):
            j = i + width
            ri[i, j] = _reduce(terms, _split_terms(chart, w_root, w_stop, RI, i, j, terms), viterbi) + w_attach[i, j]
            li[i, j] = _reduce(terms, _split_terms(chart, w_root, w_stop, LI, i, j, terms), viterbi) + w_attach[j, i]
            ru[i, j] = _reduce(terms, _split_terms(chart, w_root, w_stop, RU, i, j, terms), viterbi)
            lu[i, j] = _reduce(terms, _split_terms(chart, w_root, w_stop, LU, i, j, terms), viterbi)
            rs[i, j] = ru[i, j] + w_stop[i, RIGHT, HAS_DEPENDENT, STOP]
            ls[i, j] = lu[i, j] + w_stop[j, LEFT, HAS_DEPENDENT, STOP]
    return _reduce(terms, _split_terms(chart, w_root, w_stop, ROOT_ITEM, 0, n - 1, terms), viterbi)


@njit(cache=True, inline="always", fastmath=FAST)
def _share(chart, w_root, w_stop, kind, i, j, mass, base, posterior):
    """Hand item (kind, i, j)'s posterior ``mass`` to its splits, each in proportion to exp(its log
    weight + ``base``), and each split's share to both its items."""
    if not mass > 0.0:
        return
    for k in range(i, i + _n_splits(kind, i, j)):  # from i, as in `_split_terms`: kept scalar
        share = mass * math.exp(_split_term(chart, w_root, w_stop, kind, i, j, k - i) + base)
        first, a1, b1, second, a2, b2 = _children(kind, i, j, k - i)
        posterior[first, a1, b1] += share
        posterior[second, a2, b2] += share


@njit(cache=True, fastmath=FAST)
def dmv_posteriors(w_root, w_stop, w_attach, n, chart, log_z, posterior, head_marginals, none_marginals):
    """Outside pass: posterior marginals of every item, top-down (thesis eq. 4.8).

    P(item) = P_OUT P_IN / Z is pushed from parents to children: a split of
    a parent receives the parent's marginal times exp(split's inside log weight
    - parent's inside log value).  Parents are always wider than their
    children or, within one cell, come first (seal, then open half, then arc),
    so one sweep from the widest cell down suffices.

    Parameters
    ----------
    w_root, w_stop, w_attach, n : as `dmv_inside`.
    chart : the inside chart filled by `dmv_inside` (sum mode).
    log_z : its return value (finite).
    posterior : (6, >= n, >= n) output, the item marginals.
    head_marginals : (>= n, >= n + 1) output (module notes).
    none_marginals : (>= n, 2) output (module notes).
    """
    for kind in range(N_ITEMS):
        for i in range(n):
            for j in range(n):
                posterior[kind, i, j] = 0.0
    for m in range(n):
        for h in range(n + 1):
            head_marginals[m, h] = 0.0
    _share(chart, w_root, w_stop, ROOT_ITEM, 0, n - 1, 1.0, -log_z, posterior)
    for h in range(n):
        head_marginals[h, 0] = posterior[LS, 0, h]
    for width in range(n - 1, -1, -1):
        for i in range(n - width):
            j = i + width
            posterior[RU, i, j] += posterior[RS, i, j]
            posterior[LU, i, j] += posterior[LS, i, j]
            if width == 0:
                none_marginals[i, RIGHT] = 1.0 if i == n - 1 else min(posterior[RS, i, i], 1.0)
                none_marginals[i, LEFT] = 1.0 if i == 0 else min(posterior[LS, i, i], 1.0)
                continue
            _share(chart, w_root, w_stop, RU, i, j, posterior[RU, i, j], -chart[RU, i, j], posterior)
            _share(chart, w_root, w_stop, LU, i, j, posterior[LU, i, j], -chart[LU, i, j], posterior)
            head_marginals[j, i + 1] = posterior[RI, i, j]
            _share(chart, w_root, w_stop, RI, i, j, posterior[RI, i, j], w_attach[i, j] - chart[RI, i, j], posterior)
            head_marginals[i, j + 1] = posterior[LI, i, j]
            _share(chart, w_root, w_stop, LI, i, j, posterior[LI, i, j], w_attach[j, i] - chart[LI, i, j], posterior)


@njit(cache=True, fastmath=FAST)
def dmv_inside_outside(w_root, w_stop, w_attach, n, chart, posterior, terms, head_marginals, none_marginals):
    """Inside-outside on one sentence: log Z and its local posteriors (thesis eq. 4.7-4.9).

    Parameters
    ----------
    w_root, w_stop, w_attach : position-level log weights (module notes).
    n : int, number of words (>= 1).
    chart, posterior : (6, >= n, >= n) work arrays.
    terms : (>= n,) scratch.
    head_marginals : (>= n, >= n + 1) output, P(head of m is h), h = 0 for ROOT.
    none_marginals : (>= n, 2) output, P(word p has no dependent on side d).

    Returns
    -------
    float
        log Z; -inf (outputs untouched) when no tree has positive weight.
    """
    log_z = dmv_inside(w_root, w_stop, w_attach, n, chart, terms, False)
    if log_z > -np.inf:
        dmv_posteriors(w_root, w_stop, w_attach, n, chart, log_z, posterior, head_marginals, none_marginals)
    return log_z


@njit(cache=True, fastmath=FAST)
def dmv_top_down(w_root, w_stop, n, chart, viterbi, state, terms, stack, heads):
    """Read one tree off an inside chart: the best one, or a draw from the posterior.

    After `dmv_inside` in sum mode this draws a tree with probability
    weight / Z, exactly (Goodman's inside parsing, outside sampling, as in the
    proposal of thesis eq. 4.15): each item picks its split in proportion to
    the split's inside weight.  After `dmv_inside` in Viterbi mode it follows
    the maximising splits (first maximum on ties) and returns the best tree.

    Parameters
    ----------
    w_root, w_stop : position-level log weights (module notes); the attach
        weights are already inside the RI/LI chart cells.
    n : int, number of words (>= 1).
    chart : the inside chart of `dmv_inside` (whose ``log_z`` was finite).
    viterbi : bool, how ``chart`` was filled.
    state : (1,) uint64 xorshift state, advanced once per draw (unused with
        ``viterbi``).
    terms : (>= n,) scratch.
    stack : (>= 6 n + 4, 3) int64 scratch.
    heads : (>= n,) int output, 1-based heads, 0 for the root word.
    """
    root = _choose(terms, _split_terms(chart, w_root, w_stop, ROOT_ITEM, 0, n - 1, terms), viterbi, state)
    heads[root] = 0
    first, a1, b1, second, a2, b2 = _children(ROOT_ITEM, 0, n - 1, root)
    top = push(stack, 0, first, a1, b1)
    top = push(stack, top, second, a2, b2)
    while top > 0:
        top -= 1
        kind = stack[top, 0]
        i = stack[top, 1]
        j = stack[top, 2]
        if i == j and kind <= LS:
            continue
        if kind == RI:
            heads[j] = i + 1
        elif kind == LI:
            heads[i] = j + 1
        x = _choose(terms, _split_terms(chart, w_root, w_stop, kind, i, j, terms), viterbi, state)
        first, a1, b1, second, a2, b2 = _children(kind, i, j, x)
        top = push(stack, top, first, a1, b1)
        top = push(stack, top, second, a2, b2)


@njit(cache=True)
def add_posterior_counts(tags, begin, n, head_marginals, none_marginals, weight,
                         root_counts, stop_counts, attach_counts):
    """Add ``weight`` x one sentence's expected counts (thesis eq. 4.8-4.9 for the DMV).

    From the local posteriors (module notes): root and attach counts are the
    head marginals; for head p and side d, with p0 = P(no dependent on d) and
    E = expected number of dependents on d, STOP at valence 0 gets p0,
    CONTINUE at valence 0 and STOP at valence 1 get 1 - p0, and CONTINUE at
    valence 1 gets E - (1 - p0) (floored at 0 against rounding).  A negative
    ``weight`` removes what the same arrays added (CVI's E[C^i], eq. 4.24).

    Parameters
    ----------
    tags : (N,) int type ids; the sentence is ``tags[begin:begin + n]``.
    head_marginals : (>= n, >= n + 1), none_marginals : (>= n, 2).
    weight : float.
    root_counts (V,), stop_counts (V, 2, 2, 2), attach_counts (V, 2, V) :
        accumulators, float64.
    """
    for m in range(n):
        t = tags[begin + m]
        root_counts[t] += weight * head_marginals[m, 0]
        for h in range(n):
            if h != m:
                side = LEFT if m < h else RIGHT
                attach_counts[tags[begin + h], side, t] += weight * head_marginals[m, h + 1]
    for h in range(n):
        t = tags[begin + h]
        for side in range(2):
            expected = 0.0
            lo, hi = (0, h) if side == LEFT else (h + 1, n)
            for m in range(lo, hi):
                expected += head_marginals[m, h + 1]
            none = np.float64(none_marginals[h, side])
            some = 1.0 - none
            row = stop_counts[t, side]
            row[NO_DEPENDENT, STOP] += weight * none
            row[NO_DEPENDENT, CONTINUE] += weight * some
            row[HAS_DEPENDENT, STOP] += weight * some
            row[HAS_DEPENDENT, CONTINUE] += weight * max(expected - some, 0.0)


@njit(cache=True)
def add_tree_counts(tags, begin, n, heads, weight, root_counts, stop_counts, attach_counts):
    """Add ``weight`` x the counts of one tree (the C^i of thesis eq. 4.13 for the DMV).

    Parameters
    ----------
    tags : (N,) int type ids; the sentence is ``tags[begin:begin + n]``.
    heads : (>= n,) int, 1-based heads, 0 for the root; read as ``heads[:n]``.
    weight : float.
    root_counts, stop_counts, attach_counts : accumulators (module notes).
    """
    n_left = np.zeros(n, dtype=np.int64)
    n_right = np.zeros(n, dtype=np.int64)
    for m in range(n):
        t = tags[begin + m]
        h = heads[m] - 1
        if h < 0:
            root_counts[t] += weight
        elif m < h:
            attach_counts[tags[begin + h], LEFT, t] += weight
            n_left[h] += 1
        else:
            attach_counts[tags[begin + h], RIGHT, t] += weight
            n_right[h] += 1
    for h in range(n):
        t = tags[begin + h]
        for side in range(2):
            k = n_left[h] if side == LEFT else n_right[h]
            row = stop_counts[t, side]
            if k == 0:
                row[NO_DEPENDENT, STOP] += weight
            else:
                row[NO_DEPENDENT, CONTINUE] += weight
                row[HAS_DEPENDENT, CONTINUE] += weight * (k - 1)
                row[HAS_DEPENDENT, STOP] += weight


@njit(cache=True)
def tree_log_weight(tags, begin, n, heads, log_root, log_stop, log_attach):
    """log P(tree, sentence | tables) of one tree given by its heads (Klein and Manning 2004).

    The tree is not checked for projectivity; any head array gets the DMV's
    product of root, stop and attach weights.
    """
    root = np.zeros(log_root.shape[0])
    stop = np.zeros(log_stop.shape)
    attach = np.zeros(log_attach.shape)
    add_tree_counts(tags, begin, n, heads, 1.0, root, stop, attach)
    total = 0.0
    for t in range(root.shape[0]):
        if root[t] > 0.0:
            total += root[t] * log_root[t]
        for d in range(2):
            for v in range(2):
                for o in range(2):
                    if stop[t, d, v, o] > 0.0:
                        total += stop[t, d, v, o] * log_stop[t, d, v, o]
            for a in range(attach.shape[2]):
                if attach[t, d, a] > 0.0:
                    total += attach[t, d, a] * log_attach[t, d, a]
    return total


# ------------------------------------------------------------ corpus drivers
# What `dmv_batch` does with every sentence.
EXPECT = 0    # inside-outside: local posteriors, expected counts and log Z (E-step, eq. 4.7-4.9)
RANDOM = 1    # the same on random position weights (`cvbayes.trees.dmv_init`'s random posteriors)
LOG_Z = 2     # the inside pass only
DECODE = 3    # Viterbi: the best tree's heads and log weight
SAMPLE = 4    # one tree drawn from the posterior (eq. 4.15's proposal), and its counts


@njit(cache=True)
def random_weights(state, n, w_root, w_stop, w_attach):
    """Position-level log weights of n words, each an independent U(0, 1] draw from ``state``."""
    for p in range(n):
        # 1 - u lies in (0, 1], so every log weight is finite
        w_root[p] = np.log(1.0 - uniform(state))
        for d in range(2):
            for v in range(2):
                for o in range(2):
                    w_stop[p, d, v, o] = np.log(1.0 - uniform(state))
        for q in range(n):
            w_attach[p, q] = np.log(1.0 - uniform(state))


@njit(cache=True)
def store_and_count(tags, begin, n, i, hm, none, head_offsets, head_store, none_store, root, stop, attach):
    """Copy sentence i's local posteriors into the stores (if any) and add the counts of the stored
    (rounded) values, so that subtracting them later with `add_posterior_counts` removes what was added."""
    if head_store.shape[0] > 0:
        block = head_store[head_offsets[i]:head_offsets[i + 1]].reshape((n, n + 1))
        for m in range(n):
            for h in range(n + 1):
                block[m, h] = hm[m, h]
            none_store[begin + m, 0] = none[m, 0]
            none_store[begin + m, 1] = none[m, 1]
        add_posterior_counts(tags, begin, n, block, none_store[begin:begin + n], 1.0, root, stop, attach)
    else:
        add_posterior_counts(tags, begin, n, hm, none, 1.0, root, stop, attach)


@njit(cache=True, inline="always")
def _dmv_sentence(mode, seed, i, tags, begin, n, log_root, log_stop, log_attach, buffers, state, head_offsets,
                  head_store, none_store, heads_out, root, stop, attach):
    """One sentence of `dmv_batch`: its chart and what ``mode`` does with it; returns log Z (or the
    best tree's log weight), adding nothing when it is -inf."""
    w_root, w_stop, w_attach, chart, posterior, terms, hm, none, stack, heads = buffers
    if mode == RANDOM or mode == SAMPLE:
        state[0] = unit_generator(seed, i)[0]
    if mode == RANDOM:
        random_weights(state, n, w_root, w_stop, w_attach)
    else:
        sentence_weights(tags, begin, n, log_root, log_stop, log_attach, w_root, w_stop, w_attach)
    # the semiring as a literal at each call: LLVM then folds it where it inlines the chart
    if mode == EXPECT or mode == RANDOM:
        log_z = dmv_inside_outside(w_root, w_stop, w_attach, n, chart, posterior, terms, hm, none)
    elif mode == DECODE:
        log_z = dmv_inside(w_root, w_stop, w_attach, n, chart, terms, True)
    else:
        log_z = dmv_inside(w_root, w_stop, w_attach, n, chart, terms, False)
    if mode == LOG_Z or log_z == -np.inf:
        return log_z
    if mode == EXPECT or mode == RANDOM:
        store_and_count(tags, begin, n, i, hm, none, head_offsets, head_store, none_store, root, stop, attach)
        return log_z
    if mode == DECODE:
        dmv_top_down(w_root, w_stop, n, chart, True, state, terms, stack, heads)
    else:
        dmv_top_down(w_root, w_stop, n, chart, False, state, terms, stack, heads)
    for m in range(n):
        heads_out[begin + m] = heads[m]
    if mode == SAMPLE:
        add_tree_counts(tags, begin, n, heads, 1.0, root, stop, attach)
    return log_z


@parallel_over_chunks()
def dmv_batch(mode, seed, tags, offsets, chunk_bounds, log_root, log_stop, log_attach, head_offsets, head_store,
              none_store, heads_out, per_sentence):
    """The chart of every sentence under one set of tables, in parallel: the one driver of the DMV's
    E-steps, initialisers, likelihoods, parses and samples (``mode``: EXPECT, RANDOM, LOG_Z, DECODE,
    SAMPLE).

    Sentences are independent given the tables, so chunks run in parallel, each with its own count
    accumulators, summed at the end.  Draws (RANDOM, SAMPLE) come from a generator seeded by (seed,
    sentence index), so they do not depend on the number of threads.

    Parameters
    ----------
    mode : int; seed : int (RANDOM, SAMPLE).
    tags : (N,) int type ids; offsets : (I + 1,) int64 sentence boundaries.
    chunk_bounds : (C + 1,) int64 sentence indices, at most one chunk a thread (`work_chunks`).
    log_root, log_stop, log_attach : log tables (module notes); RANDOM reads only V = len(log_root).
    head_offsets : (I + 1,) int64, `head_block_offsets` (ignored when not storing).
    head_store : flat float32/float64 (sum n_i (n_i + 1),) receiving each sentence's head marginals
        as an (n, n + 1) block at head_offsets[i] (EXPECT, RANDOM); empty to keep nothing.
    none_store : (N, 2) float32/float64 receiving the none marginals (or (0, 2)).
    heads_out : (N,) int32 output (DECODE, SAMPLE), 1-based heads, 0 = root; a sentence without a tree
        keeps its heads.
    per_sentence : (I,) float64 output (LOG_Z, DECODE): each sentence's log Z or best tree's log
        weight (-inf: no tree; 0 for an empty sentence).

    Returns
    -------
    (root_counts (V,), stop_counts (V, 2, 2, 2), attach_counts (V, 2, V), log_evidence, first_bad)
        The expected (EXPECT, RANDOM) or drawn (SAMPLE) counts, log_evidence = sum_i log Z_i over the
        possible sentences, and the first sentence no tree explains (-1 if none).
    """
    n_types = log_root.shape[0] if mode != LOG_Z and mode != DECODE else 0  # the modes that count
    n_chunks = chunk_bounds.shape[0] - 1
    longest = max_length(offsets)
    root_acc = np.zeros((n_chunks, n_types))
    stop_acc = np.zeros((n_chunks, n_types, 2, 2, 2))
    attach_acc = np.zeros((n_chunks, n_types, 2, n_types))
    log_z_acc = np.zeros(n_chunks)
    bad_acc = np.full(n_chunks, -1, dtype=np.int64)
    for c in prange(n_chunks):
        buffers = dmv_buffers(longest)
        state = np.ones(1, dtype=np.uint64)  # Viterbi draws nothing
        root, stop, attach = root_acc[c], stop_acc[c], attach_acc[c]
        # accumulate in locals: neighbouring chunks' slots share a cache line
        chunk_log_z = 0.0
        chunk_bad = -1
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = offsets[i]
            n = offsets[i + 1] - begin
            if n == 0:
                if mode == DECODE:
                    per_sentence[i] = 0.0
                continue
            log_z = _dmv_sentence(mode, seed, i, tags, begin, n, log_root, log_stop, log_attach, buffers, state,
                                  head_offsets, head_store, none_store, heads_out, root, stop, attach)
            if mode == LOG_Z or mode == DECODE:
                per_sentence[i] = log_z
            if mode == LOG_Z:
                continue
            if log_z == -np.inf:
                if chunk_bad < 0:
                    chunk_bad = i
                continue
            chunk_log_z += log_z
        log_z_acc[c] = chunk_log_z
        bad_acc[c] = chunk_bad
    return (root_acc.sum(axis=0), stop_acc.sum(axis=0), attach_acc.sum(axis=0), log_z_acc.sum(),
            first_bad(bad_acc))


_NO_HEADS = np.zeros(0, dtype=np.int32)
_NO_SENTENCES = np.zeros(0)
_NO_STORES = (np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros((0, 2)))


def dmv_batch_expectations(tags, offsets, chunk_bounds, log_root, log_stop, log_attach, head_offsets, head_store,
                           none_store):
    """Expected counts of all sentences under one set of tables (E-step, thesis eq. 4.7-4.9; EM, VB and
    any batch learner): `dmv_batch` in EXPECT mode, returning (root_counts, stop_counts, attach_counts,
    log_evidence, first_bad).  With stores, the counts are summed from the stored (rounded) values."""
    return dmv_batch(EXPECT, 0, tags, offsets, chunk_bounds, log_root, log_stop, log_attach, head_offsets,
                     head_store, none_store, _NO_HEADS, _NO_SENTENCES)


def dmv_batch_log_evidence(tags, offsets, chunk_bounds, log_root, log_stop, log_attach):
    """log Z_i of every sentence (the inside pass only), as (I,) float64; 0 for empty ones."""
    out = np.zeros(offsets.shape[0] - 1)
    dmv_batch(LOG_Z, 0, tags, offsets, chunk_bounds, log_root, log_stop, log_attach, *_NO_STORES, _NO_HEADS, out)
    return out


def dmv_batch_decode(tags, offsets, chunk_bounds, log_root, log_stop, log_attach, heads_out, log_best_out):
    """Viterbi parse of every sentence: its most probable tree's heads to ``heads_out`` (N,) int32
    (1-based, 0 = root) and log weight to ``log_best_out`` (I,) (-inf when no tree is possible; its
    heads are then left as they were).  Returns the first sentence with no possible tree, or -1."""
    return dmv_batch(DECODE, 0, tags, offsets, chunk_bounds, log_root, log_stop, log_attach, *_NO_STORES,
                     heads_out, log_best_out)[4]


def dmv_batch_sample(seed, tags, offsets, chunk_bounds, log_root, log_stop, log_attach, heads_out):
    """Draw one tree per sentence from its posterior under fixed tables (exact sampling; the proposal of
    the thesis's Hastings sampler, eq. 4.15, on CVI's tables), its heads to ``heads_out``; each sentence
    draws from its own generator seeded by (seed, sentence index).  Returns (root_counts, stop_counts,
    attach_counts, log_evidence, first_bad) of the drawn trees."""
    return dmv_batch(SAMPLE, seed, tags, offsets, chunk_bounds, log_root, log_stop, log_attach, *_NO_STORES,
                     heads_out, _NO_SENTENCES)


# ------------------------------------------------------------ Python helpers
class DMVCounts(NamedTuple):
    """Expected (or sampled) DMV counts, in the table layout of the module notes.

    Every Dirichlet row lies along the last axis: ``root`` (V,) is one row,
    ``stop`` (V, 2, 2, 2) holds 4V rows ``[head, direction, valence]`` over
    (STOP, CONTINUE), ``attach`` (V, 2, V) holds 2V rows ``[head, direction]``
    over dependent types.
    """

    root: np.ndarray
    stop: np.ndarray
    attach: np.ndarray

    @classmethod
    def zeros(cls, n_types):
        """All-zero counts for ``n_types`` types."""
        return cls(np.zeros(n_types), np.zeros((n_types, 2, 2, 2)), np.zeros((n_types, 2, n_types)))


class LocalPosteriors(NamedTuple):
    """Every sentence's local posteriors (module notes), e.g. for CVI to subtract.

    ``heads`` is flat: sentence i's (n, n + 1) head-marginal block starts at
    ``head_offsets[i]``; ``none`` (N, 2) is indexed by token.  Memory:
    4 (sum_i n_i (n_i + 1) + 2N) bytes in float32.
    """

    head_offsets: np.ndarray
    heads: np.ndarray
    none: np.ndarray

    @classmethod
    def empty(cls, offsets, dtype=np.float32):
        """Zeroed stores for the sentences of ``offsets``."""
        head_offsets = head_block_offsets(offsets)
        return cls(head_offsets, np.zeros(int(head_offsets[-1]), dtype=dtype),
                   np.zeros((int(np.asarray(offsets)[-1]), 2), dtype=dtype))

    def sentence(self, i, offsets):
        """Sentence i's (head_marginals (n, n + 1), none_marginals (n, 2)) views."""
        begin, end = int(offsets[i]), int(offsets[i + 1])
        n = end - begin
        return (self.heads[self.head_offsets[i]:self.head_offsets[i + 1]].reshape(n, n + 1),
                self.none[begin:end])


def work_chunks(offsets):
    """Chunk bounds for the parallel drivers: `cubic_chunks`, the chart's n^3 / 6 splits each taking
    four log-space terms in and out (about 20 steps an n^3)."""
    return cubic_chunks(np.asarray(offsets, dtype=np.int64), 20)


def head_block_offsets(offsets):
    """Start of each sentence's (n, n + 1) head-marginal block in a flat store, (I + 1,) int64."""
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths * (lengths + 1), out=starts[1:])
    return starts


def check_sentences(tags, offsets, n_types=None):
    """Validate type ids and offsets; return them as contiguous int32 and int64 arrays."""
    tags = np.ascontiguousarray(tags)
    offsets = np.ascontiguousarray(offsets)
    if tags.ndim != 1 or (tags.size and tags.dtype.kind not in "iu"):
        raise ValueError(f"tags must be a 1-D integer array, got dtype {tags.dtype} and shape {tags.shape}")
    if offsets.ndim != 1 or offsets.size == 0 or offsets.dtype.kind not in "iu":
        raise ValueError("offsets must be a non-empty 1-D integer array")
    if offsets[0] != 0 or offsets[-1] != tags.size or np.any(offsets[1:] < offsets[:-1]):
        raise ValueError(f"offsets must rise from 0 to the number of tokens ({tags.size})")
    if tags.size and (tags.min() < 0 or (n_types is not None and tags.max() >= n_types)):
        raise ValueError(f"tags must lie in [0, {n_types}), found {tags.min()} to {tags.max()}")
    return tags.astype(np.int32, copy=False), offsets.astype(np.int64, copy=False)


def check_log_tables(log_root, log_stop, log_attach):
    """Validate the log tables' shapes (module notes) and values; return float64 copies if needed."""
    log_root, log_stop, log_attach = (np.ascontiguousarray(a, dtype=np.float64)
                                      for a in (log_root, log_stop, log_attach))
    n_types = log_root.shape[0] if log_root.ndim == 1 else -1
    if (n_types < 1 or log_stop.shape != (n_types, 2, 2, 2) or log_attach.shape != (n_types, 2, n_types)):
        raise ValueError("expected log_root (V,), log_stop (V, 2, 2, 2) and log_attach (V, 2, V), got "
                         f"{log_root.shape}, {log_stop.shape} and {log_attach.shape}")
    for name, table in (("log_root", log_root), ("log_stop", log_stop), ("log_attach", log_attach)):
        if np.isnan(table).any() or (table == np.inf).any():
            raise ValueError(f"{name} contains NaN or +inf; pass log probabilities (or log weights)")
    return log_root, log_stop, log_attach


def _raise_impossible(bad):
    if bad >= 0:
        raise ValueError(f"sentence {bad} has no tree of positive probability under these tables "
                         "(an event it needs has weight 0)")


def dmv_expected_counts(tags, offsets, log_root, log_stop, log_attach, local=None):
    """Expected counts and log-likelihood of a corpus under fixed tables (E-step, thesis eq. 4.7-4.9).

    Parameters
    ----------
    tags : (N,) int type ids; offsets : (I + 1,) sentence boundaries.
    log_root, log_stop, log_attach : log tables (module notes).
    local : LocalPosteriors, optional
        Receives every sentence's local posteriors.

    Returns
    -------
    (DMVCounts, float)
        The counts and sum_i log Z_i.

    Raises
    ------
    ValueError
        On malformed input, or naming the first sentence that no tree explains.
    """
    log_root, log_stop, log_attach = check_log_tables(log_root, log_stop, log_attach)
    tags, offsets = check_sentences(tags, offsets, log_root.shape[0])
    if local is None:
        local = LocalPosteriors(np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros((0, 2)))
    root, stop, attach, log_z, bad = dmv_batch_expectations(
        tags, offsets, work_chunks(offsets), log_root, log_stop, log_attach, *local)
    _raise_impossible(bad)
    return DMVCounts(root, stop, attach), log_z


def dmv_log_evidence(tags, offsets, log_root, log_stop, log_attach):
    """log Z_i of every sentence, (I,) float64 (-inf where no tree is possible)."""
    log_root, log_stop, log_attach = check_log_tables(log_root, log_stop, log_attach)
    tags, offsets = check_sentences(tags, offsets, log_root.shape[0])
    return dmv_batch_log_evidence(tags, offsets, work_chunks(offsets), log_root, log_stop, log_attach)


def dmv_parse(tags, offsets, log_root, log_stop, log_attach):
    """Viterbi parse: each sentence's most probable projective tree.

    Returns
    -------
    heads : (N,) int32
        1-based heads within each sentence, 0 for the root (CoNLL-U's HEAD).
    log_best : (I,) float64
        The best tree's log P(tree, sentence).
    """
    log_root, log_stop, log_attach = check_log_tables(log_root, log_stop, log_attach)
    tags, offsets = check_sentences(tags, offsets, log_root.shape[0])
    heads = np.zeros(tags.size, dtype=np.int32)
    log_best = np.zeros(offsets.size - 1)
    _raise_impossible(dmv_batch_decode(tags, offsets, work_chunks(offsets), log_root, log_stop, log_attach,
                                       heads, log_best))
    return heads, log_best


def dmv_sample(tags, offsets, log_root, log_stop, log_attach, seed):
    """Draw one tree per sentence from its posterior; deterministic given ``seed``.

    Returns
    -------
    heads : (N,) int32
        1-based heads, 0 for the root.
    counts : DMVCounts
        The drawn trees' counts.
    log_evidence : float
        sum_i log Z_i.
    """
    log_root, log_stop, log_attach = check_log_tables(log_root, log_stop, log_attach)
    tags, offsets = check_sentences(tags, offsets, log_root.shape[0])
    heads = np.zeros(tags.size, dtype=np.int32)
    root, stop, attach, log_z, bad = dmv_batch_sample(
        int(seed), tags, offsets, work_chunks(offsets), log_root, log_stop, log_attach, heads)
    _raise_impossible(bad)
    return heads, DMVCounts(root, stop, attach), log_z

"""The chart of a split grammar over kept items: one pass in three modes, the outside pass (numba).

The kernels of the coarse-to-fine parser (`cvbayes.trees.latent_parse`, Petrov and Klein 2007) for a
PCFG-LA (`cvbayes.trees.latent`, thesis §4.5.3), written over the parser's `ParserGrammar`.

The chart
---------
Every span (i, k) holds two layers of items, each an H-vector over a symbol's subtypes:

* **bottom** items A over (i, k): A rewrites by a lexical rule (k = i + 1) or a binary rule A -> B C
  whose children are top items over (i, j) and (j, k);
* **top** items A over (i, k): the bottom item A itself, or a unary rule A -> B over the bottom item B
  (at most one unary rule a span, as in the Berkeley parser; ROOT's own unary rules excepted).

ROOT (the treebank's start symbol, subtype 0) is a third layer over the whole sentence: its bottom
item, or a unary rule ROOT -> X over the top item X, so chains ROOT -> X -> Y are derived, the only
unary chains of the converted EWT trees (`cvbayes.data.ud_to_penn`).  A training tree with a longer
chain elsewhere can still be learned; the parser cannot return it.

One pass, three modes
---------------------
`_chart` is written once and inlined into one entry point a mode (`cvbayes.trees.semiring`):
`chart_inside` (the sum semiring: inside values, log Z), `chart_viterbi` (the max semiring over the
annotated rules' log weights: the most probable annotated derivation, its subtypes dropped) and
`chart_max_rule` (the max semiring over anchored rule posteriors, after the sum pass and
`chart_outside`: the tree maximising the product of
q(A -> B C, i, j, k) = sum_{a,b,c} out(A_a, i, k) w(A_a -> B_b C_c) in(B_b, i, j) in(C_c, j, k) / Z,
with q of unary and lexical rules alike, Petrov and Klein 2007 §4; a top item without a unary rule
adds no factor).  The two max modes store backpointers and share one backtrace (`_backtrace`).

Scaling
-------
As in `cvbayes.trees.charts`: the items of a span share one scale, the log of which is
``log_scale[i, k]``; inside vectors are divided by their span's largest entry and outside vectors are
kept as alpha · exp(log_scale) / Z, so an item's posterior is outside · inside and a binary rule
anchored at (i, j, k) carries the factor exp(s_ij + s_jk - s_ik).  Viterbi runs in log space.

Cost
----
A binary step starts from the span's live left children (top items with a positive inside, or a
finite Viterbi score) and walks the rules with that left child (``left_offsets``), so a pruned chart
costs in proportion to its kept items: O(kept binary combinations · H^3) for inside, outside and the
decoder.  Kernels read rows of 2-D arrays through indices, not views, whose reference counting would
dominate the innermost loop.

A tree comes back as rule applications in preorder, ``(kind, rule, i, j, k)`` as in
`cvbayes.trees.top_down` (kind BINARY, UNARY or LEXICAL of `cvbayes.trees.grammar`, ``rule`` an
index into the treebank grammar's rule array of that kind).
"""
import numpy as np
from numba import njit

from ..core.special import FAST
from .grammar import BINARY, LEXICAL, UNARY
from .latent import binary_inside
from .top_down import emit

__all__ = [
    "chart_inside",
    "chart_max_rule",
    "chart_outside",
    "chart_viterbi",
    "full_masks",
    "item_slots",
    "keep_likely",
    "sum_pass",
]


# ------------------------------------------------------------------ items
@njit(cache=True)
def item_slots(keep):
    """Number the kept items of a (T+1, T+1, N) mask: slot ids in span order, -1 where left out."""
    size = keep.shape[0]
    slot = np.full(keep.shape, -1, dtype=np.int64)
    n = 0
    for i in range(size):
        for k in range(i + 1, size):
            for a in range(keep.shape[2]):
                if keep[i, k, a]:
                    slot[i, k, a] = n
                    n += 1
    return slot, n


@njit(cache=True)
def full_masks(n_words, n_symbols, start):
    """(keep_bottom, keep_top) (T+1, T+1, N) masks keeping every item (the start symbol has no top
    item: ROOT's layer replaces it)."""
    keep_bottom = np.zeros((n_words + 1, n_words + 1, n_symbols), dtype=np.bool_)
    for i in range(n_words):
        keep_bottom[i, i + 1:] = True
    keep_top = keep_bottom.copy()
    keep_top[:, :, start] = False
    return keep_bottom, keep_top


@njit(cache=True)
def _live_arrays(n_words, n_symbols):
    """(alive, alive_list, alive_count): which top items of each span derive its words, as a mask
    (T+1, T+1, N) and as a list of symbols with its length (the binary loops start from them)."""
    size = n_words + 1
    return (np.zeros((size, size, n_symbols), dtype=np.bool_), np.zeros((size, size, n_symbols), dtype=np.int64),
            np.zeros((size, size), dtype=np.int64))


@njit(cache=True)
def _mark_live(top_slots, values, floor, i, k, alive, alive_list, alive_count):
    """Record the top items of span (i, k) with a value above ``floor`` in some subtype (inside > 0,
    Viterbi > -inf)."""
    n = 0
    for symbol in range(top_slots.shape[0]):
        t = top_slots[symbol]
        live = False
        if t >= 0:
            for a in range(values.shape[1]):
                if values[t, a] > floor:
                    live = True
                    break
        alive[i, k, symbol] = live
        if live:
            alive_list[i, k, n] = symbol
            n += 1
    alive_count[i, k] = n


@njit(cache=True)
def _split_factors(log_scale, i, k, reference, factors):
    """factors[j - i - 1] = exp(s_ij + s_jk - reference) for every split j of (i, k)."""
    for j in range(i + 1, k):
        shift = log_scale[i, j] + log_scale[j, k]
        factors[j - i - 1] = 0.0 if shift == -np.inf else np.exp(shift - reference)


@njit(cache=True)
def _combination_buffer(g, n_words):
    """Room for the binary steps of any span: at most (T - 1) splits times every binary rule."""
    return np.empty((max(n_words - 1, 1) * g.binary_parent.shape[0], 5), dtype=np.int64)


@njit(cache=True)
def _combinations(g, i, k, slot_bottom, slot_top, alive, alive_list, alive_count, combos):
    """The binary steps of span (i, k): rows (j, rule, parent slot, left slot, right slot) of ``combos``
    for every split j, live left child, rule with that left child, live right child and kept parent;
    returns their number.  Inside, outside and both decoders walk a span through this one list."""
    n = 0
    bottom_slots = slot_bottom[i, k]
    for j in range(i + 1, k):
        for m in range(alive_count[i, j]):
            left_symbol = alive_list[i, j, m]
            for e in range(g.left_offsets[left_symbol], g.left_offsets[left_symbol + 1]):
                r = g.left_rule[e]
                right_symbol = g.binary_right[r]
                parent = bottom_slots[g.binary_parent[r]]
                if parent < 0 or not alive[j, k, right_symbol]:
                    continue
                combos[n, 0] = j
                combos[n, 1] = r
                combos[n, 2] = parent
                combos[n, 3] = slot_top[i, j, left_symbol]
                combos[n, 4] = slot_top[j, k, right_symbol]
                n += 1
    return n


# ------------------------------------------------------------------ the chart's steps, in three modes
# What a pass over the kept items computes (`_chart`): the sum semiring's inside values (scaled
# space), the max semiring over annotated rules in logs (the best annotated derivation), or the max
# semiring over the anchored rule posteriors of a finished sum pass (max-rule-product).
SUM = 0
VITERBI = 1
MAX_RULE = 2
OUTSIDE = 3   # the top layer only, transposed: outside values from top items down to bottom items


@njit(cache=True, fastmath=FAST)
def _unary_into(weights, r, inside, child, out, at):
    """out[at, a] += sum_b w(A_a -> B_b) inside[child, b] for unary rule r."""
    n_sub = out.shape[1]
    for a in range(n_sub):
        total = 0.0
        for b in range(n_sub):
            total += weights[r, a, b] * inside[child, b]
        out[at, a] += total


@njit(cache=True)
def _posterior(outside, at, values, row):
    """sum_a outside[at, a] values[row, a]: an item's (or an anchored rule's) posterior."""
    total = 0.0
    for a in range(outside.shape[1]):
        total += outside[at, a] * values[row, a]
    return total


@njit(cache=True, inline="always")
def _lexical_step(mode, lexical, r, s, bottom, bottom_back, in_bottom, out_bottom):
    """Bottom item s over one word by lexical rule r."""
    if mode == MAX_RULE:
        posterior = _posterior(out_bottom, s, in_bottom, s)
        if posterior > 0.0:
            bottom[s, 0] = np.log(posterior)
            bottom_back[s, 0, 1] = r
        return
    for a in range(bottom.shape[1]):
        bottom[s, a] = lexical[r, a]
        if mode == VITERBI:
            bottom_back[s, a, 1] = r


@njit(cache=True)
def _binary_max(log_binary, r, top, left, right, bottom, s, bottom_back, j):
    """Viterbi's binary step: bottom[s, a] = max over (b, c) of log w(A_a -> B_b C_c) + top[left, b]
    + top[right, c] if larger, with its backpointer (j, r, b, c)."""
    n_sub = bottom.shape[1]
    for a in range(n_sub):
        for b in range(n_sub):
            left_b = top[left, b]
            if left_b == -np.inf:
                continue
            for c in range(n_sub):
                score = log_binary[r, a, b, c] + left_b + top[right, c]
                if score > bottom[s, a]:
                    bottom[s, a] = score
                    bottom_back[s, a, 0] = j
                    bottom_back[s, a, 1] = r
                    bottom_back[s, a, 2] = b
                    bottom_back[s, a, 3] = c


@njit(cache=True, inline="always")
def _binary_step(mode, g, binary, r, s, left, right, j, factor, bottom, top, bottom_back, in_top, out_bottom,
                 reached, work):
    """Bottom item s by binary rule r over top items left (i..j) and right (j..k)."""
    if mode == SUM:
        binary_inside(binary, r, top, left, right, factor, bottom, s)
    elif mode == VITERBI:
        _binary_max(binary, r, top, left, right, bottom, s, bottom_back, j)
    else:
        children = top[left, 0] + top[right, 0]
        if children == -np.inf or not reached[g.binary_parent[r]]:
            return
        work[0, :] = 0.0
        binary_inside(binary, r, in_top, left, right, factor, work, 0)
        posterior = _posterior(out_bottom, s, work, 0)
        if posterior > 0.0 and np.log(posterior) + children > bottom[s, 0]:
            bottom[s, 0] = np.log(posterior) + children
            bottom_back[s, 0, 0] = j
            bottom_back[s, 0, 1] = r


@njit(cache=True, inline="always")
def _unary_step(mode, unary, r, t, child, bottom, top, top_back, in_bottom, out_top, work):
    """Top item t by unary rule r over bottom item child (OUTSIDE: t's outside sent down to child)."""
    n_sub = top.shape[1]
    if mode == SUM:
        _unary_into(unary, r, bottom, child, top, t)
    elif mode == VITERBI:
        for a in range(n_sub):
            for b in range(n_sub):
                score = unary[r, a, b] + bottom[child, b]
                if score > top[t, a]:
                    top[t, a] = score
                    top_back[t, a, 0] = r
                    top_back[t, a, 1] = b
    elif mode == OUTSIDE:
        for b in range(n_sub):
            total = 0.0
            for a in range(n_sub):
                total += top[t, a] * unary[r, a, b]
            bottom[child, b] += total
    elif bottom[child, 0] > -np.inf:
        work[0, :] = 0.0
        _unary_into(unary, r, in_bottom, child, work, 0)
        posterior = _posterior(out_top, t, work, 0)
        if posterior > 0.0 and np.log(posterior) + bottom[child, 0] > top[t, 0]:
            top[t, 0] = np.log(posterior) + bottom[child, 0]
            top_back[t, 0, 0] = r
            top_back[t, 0, 1] = 0


@njit(cache=True, inline="always")
def _top_layer(mode, g, unary, bottom_slots, top_slots, bottom, top, top_back, in_bottom, out_top, work):
    """A span's top items: each the bottom item of its symbol, or a unary rule over another bottom item
    (OUTSIDE: the same edges walked down, each top item's outside added to its bottom items')."""
    for symbol in range(g.n_symbols):
        t = top_slots[symbol]
        if t < 0:
            continue
        s = bottom_slots[symbol]
        if s >= 0:
            for a in range(top.shape[1]):
                if mode == OUTSIDE:
                    bottom[s, a] += top[t, a]
                else:
                    top[t, a] = bottom[s, a]
        for r in range(g.unary_offsets[symbol], g.unary_offsets[symbol + 1]):
            child = bottom_slots[g.unary_child[r]]
            if child >= 0:
                _unary_step(mode, unary, r, t, child, bottom, top, top_back, in_bottom, out_top, work)


@njit(cache=True)
def _normalise(bottom_slots, top_slots, bottom, top):
    """Divide a span's inside values by their largest; returns that peak (0: nothing derives it)."""
    peak = 0.0
    for slots, values in ((bottom_slots, bottom), (top_slots, top)):
        for symbol in range(slots.shape[0]):
            s = slots[symbol]
            if s >= 0:
                for a in range(values.shape[1]):
                    peak = max(peak, values[s, a])
    if peak > 0.0:
        inverse = 1.0 / peak
        for slots, values in ((bottom_slots, bottom), (top_slots, top)):
            for symbol in range(slots.shape[0]):
                s = slots[symbol]
                if s >= 0:
                    for a in range(values.shape[1]):
                        values[s, a] *= inverse
    return peak


@njit(cache=True, inline="always")
def _chart(mode, g, binary, unary, lexical, words, slot_bottom, slot_top, bottom, top, log_scale, alive,
           alive_list, alive_count, bottom_back, top_back, sums):
    """One bottom-up pass over the kept items, in the semiring of ``mode`` (a literal: this is
    inlined into one entry point a mode, `cvbayes.trees.semiring`).

    Every span is its words (lexical rules) or its binary steps (`_combinations`), then its top layer
    (the bottom item itself, or a unary rule over another one), in all modes.  The sum also scales
    each span by its peak (``log_scale``) and records the live top items the wider spans start from;
    Viterbi records them too, over its own scores; max-rule reads the sum pass's (``sums`` = its
    (in_bottom, in_top, out_bottom, out_top), ``log_scale``, ``alive``) and skips the parents no
    outside reaches.  ``binary``, ``unary``, ``lexical`` are the rule weights (SUM, MAX_RULE) or
    their logs (VITERBI); ``bottom``, ``top`` the items' values (H columns; MAX_RULE: one), the
    backpointers (j, rule, left subtype, right subtype) and (unary rule or -1, child subtype) go to
    ``bottom_back`` and ``top_back`` (max modes).
    """
    n_words = words.shape[0]
    in_bottom, in_top, out_bottom, out_top = sums
    factors = np.empty(max(n_words, 1))
    combos = _combination_buffer(g, n_words)
    reached = np.zeros(g.n_symbols, dtype=np.bool_)
    work = np.empty((1, in_top.shape[1]))
    for width in range(1, n_words + 1):
        for i in range(n_words - width + 1):
            k = i + width
            if mode == SUM:
                log_scale[i, k] = -np.inf
            elif mode == MAX_RULE and log_scale[i, k] == -np.inf:
                continue
            bottom_slots = slot_bottom[i, k]
            top_slots = slot_top[i, k]
            reference = 0.0
            if width == 1:
                w = words[i]
                if w >= 0:
                    for e in range(g.word_offsets[w], g.word_offsets[w + 1]):
                        r = g.word_rule[e]
                        s = bottom_slots[g.lexical_parent[r]]
                        if s >= 0:
                            _lexical_step(mode, lexical, r, s, bottom, bottom_back, in_bottom, out_bottom)
            else:
                steps = True
                if mode == SUM:
                    reference = -np.inf
                    for j in range(i + 1, k):
                        reference = max(reference, log_scale[i, j] + log_scale[j, k])
                    if reference == -np.inf:
                        continue
                elif mode == MAX_RULE:
                    reference = log_scale[i, k]
                    steps = _mark_reached(bottom_slots, out_bottom, reached)
                if steps:
                    if mode != VITERBI:
                        _split_factors(log_scale, i, k, reference, factors)
                    for c in range(_combinations(g, i, k, slot_bottom, slot_top, alive, alive_list, alive_count,
                                                 combos)):
                        j = combos[c, 0]
                        _binary_step(mode, g, binary, combos[c, 1], combos[c, 2], combos[c, 3], combos[c, 4], j,
                                     factors[j - i - 1], bottom, top, bottom_back, in_top, out_bottom, reached, work)
            _top_layer(mode, g, unary, bottom_slots, top_slots, bottom, top, top_back, in_bottom, out_top, work)
            if mode == SUM:
                peak = _normalise(bottom_slots, top_slots, bottom, top)
                if peak > 0.0:
                    log_scale[i, k] = reference + np.log(peak)
                    _mark_live(top_slots, top, 0.0, i, k, alive, alive_list, alive_count)
            elif mode == VITERBI:
                _mark_live(top_slots, top, -np.inf, i, k, alive, alive_list, alive_count)


@njit(cache=True)
def _root_inside(g, unary_weights, bottom_slots, top_slots, in_bottom, in_top):
    """Inside of ROOT[0] over the whole sentence, in the span's scale: its bottom item plus its unary
    rules over top items."""
    total = 0.0
    s = bottom_slots[g.start]
    if s >= 0:
        total += in_bottom[s, 0]
    for r in range(g.unary_offsets[g.start], g.unary_offsets[g.start + 1]):
        t = top_slots[g.unary_child[r]]
        if t >= 0:
            for x in range(in_top.shape[1]):
                total += unary_weights[r, 0, x] * in_top[t, x]
    return total


@njit(cache=True)
def _no_items(n_sub):
    """Empty item arrays for the arguments a mode does not read: values, bottom and top backpointers."""
    return np.zeros((0, n_sub)), np.zeros((0, n_sub, 4), dtype=np.int64), np.zeros((0, n_sub, 2), dtype=np.int64)


@njit(cache=True)
def chart_inside(g, binary_weights, unary_weights, lexical_weights, words, slot_bottom, slot_top,
                 in_bottom, in_top, log_scale, alive, alive_list, alive_count):
    """The inside pass over the kept items (eq. 4.8 with subtypes; Matsuzaki et al. 2005): `_chart` in
    the sum semiring.

    Parameters
    ----------
    g : ParserGrammar
    binary_weights, unary_weights, lexical_weights : ndarray
        Annotated rule weights (`cvbayes.trees.latent.AnnotatedTables` layout).
    words : int array (T,)
        Word ids of the grammar; -1 for a word with no lexical rule (no item over it).
    slot_bottom, slot_top : int64 (T+1, T+1, N)
        Item slots (-1: left out).
    in_bottom, in_top : float (n_slots, H), zero on entry
        Scaled inside vectors on return.
    log_scale : float (T+1, T+1)
        Each span's log scale on return (-inf: no item of the span derives its words).
    alive, alive_list, alive_count : from `_live_arrays`, filled here
        The top items with a positive inside, which the binary steps start from.

    Returns
    -------
    (float, float)
        log Z (-inf if the sentence has no tree over the kept items) and ROOT's scaled inside.
    """
    empty, bottom_back, top_back = _no_items(in_bottom.shape[1])
    _chart(SUM, g, binary_weights, unary_weights, lexical_weights, words, slot_bottom, slot_top, in_bottom, in_top,
           log_scale, alive, alive_list, alive_count, bottom_back, top_back, (empty, empty, empty, empty))
    n_words = words.shape[0]
    if n_words == 0 or log_scale[0, n_words] == -np.inf:
        return -np.inf, 0.0
    root = _root_inside(g, unary_weights, slot_bottom[0, n_words], slot_top[0, n_words], in_bottom, in_top)
    if not root > 0.0:
        return -np.inf, 0.0
    return log_scale[0, n_words] + np.log(root), root


# ------------------------------------------------------------------ the outside pass (sum)
@njit(cache=True, fastmath=FAST)
def _binary_outside(weights, r, out_bottom, parent, inside, left, right, factor, out_top):
    """Send bottom item ``parent``'s outside through binary rule r to its children's top items
    ``left`` and ``right``."""
    n_sub = out_bottom.shape[1]
    for a in range(n_sub):
        out_a = out_bottom[parent, a] * factor
        if out_a == 0.0:
            continue
        for b in range(n_sub):
            out_ab = out_a * inside[left, b]
            to_left = 0.0
            for c in range(n_sub):
                weight = weights[r, a, b, c]
                to_left += weight * inside[right, c]
                out_top[right, c] += out_ab * weight
            out_top[left, b] += out_a * to_left


@njit(cache=True)
def _mark_reached(bottom_slots, out_bottom, reached):
    """reached[A] = the bottom item A of a span has a nonzero outside; returns whether any has."""
    anything = False
    for symbol in range(bottom_slots.shape[0]):
        s = bottom_slots[symbol]
        live = False
        if s >= 0:
            for a in range(out_bottom.shape[1]):
                if out_bottom[s, a] != 0.0:
                    live = True
                    break
        reached[symbol] = live
        anything = anything or live
    return anything


@njit(cache=True)
def chart_outside(g, binary_weights, unary_weights, slot_bottom, slot_top, in_bottom, in_top, log_scale,
                  root_inside, out_bottom, out_top, alive, alive_list, alive_count):
    """The outside pass (eq. 4.9 with subtypes) after `chart_inside`: ``out_bottom``, ``out_top``
    (zero on entry) receive outside · exp(log_scale) / Z, so outside · inside is an item's posterior."""
    n_words = slot_bottom.shape[0] - 1
    n_sub = in_bottom.shape[1]
    factors = np.empty(max(n_words, 1))
    combos = _combination_buffer(g, n_words)
    reached = np.zeros(g.n_symbols, dtype=np.bool_)
    no_backs = _no_items(n_sub)[2]
    no_work = np.empty((1, n_sub))
    root_out = 1.0 / root_inside
    s = slot_bottom[0, n_words, g.start]
    if s >= 0:
        out_bottom[s, 0] += root_out
    for r in range(g.unary_offsets[g.start], g.unary_offsets[g.start + 1]):
        t = slot_top[0, n_words, g.unary_child[r]]
        if t >= 0:
            for x in range(n_sub):
                out_top[t, x] += root_out * unary_weights[r, 0, x]
    for width in range(n_words, 0, -1):
        for i in range(n_words - width + 1):
            k = i + width
            if log_scale[i, k] == -np.inf:
                continue
            bottom_slots = slot_bottom[i, k]
            top_slots = slot_top[i, k]
            _top_layer(OUTSIDE, g, unary_weights, bottom_slots, top_slots, out_bottom, out_top, no_backs, in_bottom,
                       out_top, no_work)
            if width == 1 or not _mark_reached(bottom_slots, out_bottom, reached):
                continue
            _split_factors(log_scale, i, k, log_scale[i, k], factors)
            for c in range(_combinations(g, i, k, slot_bottom, slot_top, alive, alive_list, alive_count, combos)):
                j, r, parent, left, right = combos[c, 0], combos[c, 1], combos[c, 2], combos[c, 3], combos[c, 4]
                if reached[g.binary_parent[r]]:
                    _binary_outside(binary_weights, r, out_bottom, parent, in_top, left, right, factors[j - i - 1],
                                    out_top)


@njit(cache=True)
def keep_likely(slot, inside, outside, threshold, keep):
    """keep[i, k, A] = the item's posterior (sum over subtypes of outside · inside) >= threshold;
    returns the number kept."""
    kept = 0
    for i in range(slot.shape[0]):
        for k in range(i + 1, slot.shape[1]):
            for a in range(slot.shape[2]):
                s = slot[i, k, a]
                posterior = 0.0
                if s >= 0:
                    for x in range(inside.shape[1]):
                        posterior += inside[s, x] * outside[s, x]
                keep[i, k, a] = s >= 0 and posterior >= threshold
                if keep[i, k, a]:
                    kept += 1
    return kept


# ------------------------------------------------------------------ decoders
@njit(cache=True)
def _best_root(mode, g, unary, slot_bottom, slot_top, bottom, top, in_top, root_inside, n_words):
    """ROOT's layer of a max pass: its bottom item, or a unary rule ROOT -> X over the top item X.
    Returns (score, unary rule or -1, X's subtype)."""
    best = -np.inf
    root_rule = -1
    root_child = 0
    if n_words == 0:
        return best, root_rule, root_child
    s = slot_bottom[0, n_words, g.start]
    if s >= 0:
        best = bottom[s, 0]
    for r in range(g.unary_offsets[g.start], g.unary_offsets[g.start + 1]):
        t = slot_top[0, n_words, g.unary_child[r]]
        if t < 0:
            continue
        if mode == VITERBI:
            for x in range(top.shape[1]):
                score = unary[r, 0, x] + top[t, x]
                if score > best:
                    best = score
                    root_rule = r
                    root_child = x
            continue
        if top[t, 0] == -np.inf:
            continue
        posterior = 0.0
        for x in range(in_top.shape[1]):
            posterior += unary[r, 0, x] * in_top[t, x]
        posterior /= root_inside
        if posterior > 0.0 and np.log(posterior) + top[t, 0] > best:
            best = np.log(posterior) + top[t, 0]
            root_rule = r
    return best, root_rule, root_child


@njit(cache=True)
def _backtrace(g, slot_bottom, slot_top, bottom_back, top_back, root_rule, root_child, n_words, rows):
    """The tree of a max pass's backpointers, as rule applications in preorder; returns their number."""
    # (layer, symbol, subtype, i, k) with layer 0 bottom, 1 top
    stack = np.empty((4 * n_words + 4, 5), dtype=np.int64)
    n = 0
    if root_rule >= 0:
        n = emit(rows, n, UNARY, root_rule, 0, -1, n_words)
        stack[0, 0], stack[0, 1], stack[0, 2] = 1, g.unary_child[root_rule], root_child
    else:
        stack[0, 0], stack[0, 1], stack[0, 2] = 0, g.start, 0
    stack[0, 3], stack[0, 4] = 0, n_words
    depth = 1
    while depth > 0:
        depth -= 1
        layer, symbol, a, i, k = stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3], stack[depth, 4]
        if layer == 1:
            t = slot_top[i, k, symbol]
            r = top_back[t, a, 0]
            stack[depth, 0] = 0
            if r >= 0:
                n = emit(rows, n, UNARY, r, i, -1, k)
                stack[depth, 1], stack[depth, 2] = g.unary_child[r], top_back[t, a, 1]
            depth += 1
        else:
            s = slot_bottom[i, k, symbol]
            j, r, b, c = bottom_back[s, a, 0], bottom_back[s, a, 1], bottom_back[s, a, 2], bottom_back[s, a, 3]
            if k == i + 1:
                n = emit(rows, n, LEXICAL, r, i, i, k)
            else:
                n = emit(rows, n, BINARY, r, i, j, k)
                stack[depth, 0], stack[depth, 1], stack[depth, 2] = 1, g.binary_right[r], c
                stack[depth, 3], stack[depth, 4] = j, k
                stack[depth + 1, 0], stack[depth + 1, 1], stack[depth + 1, 2] = 1, g.binary_left[r], b
                stack[depth + 1, 3], stack[depth + 1, 4] = i, j
                depth += 2
    return n


@njit(cache=True, inline="always")
def _decode(mode, g, binary, unary, lexical, words, slot_bottom, slot_top, n_sub, log_scale, alive, alive_list,
            alive_count, sums, root_inside, rows):
    """A max pass (`_chart`) and the tree of its best ROOT: (score, rows used); (-inf, 0) if none."""
    n_words = words.shape[0]
    n_bottom = 0
    n_top = 0
    for i in range(n_words + 1):
        for k in range(n_words + 1):
            for a in range(g.n_symbols):
                n_bottom = max(n_bottom, slot_bottom[i, k, a] + 1)
                n_top = max(n_top, slot_top[i, k, a] + 1)
    bottom = np.full((n_bottom, n_sub), -np.inf)
    top = np.full((n_top, n_sub), -np.inf)
    bottom_back = np.zeros((n_bottom, n_sub, 4), dtype=np.int64)
    top_back = np.full((n_top, n_sub, 2), -1, dtype=np.int64)
    _chart(mode, g, binary, unary, lexical, words, slot_bottom, slot_top, bottom, top, log_scale, alive, alive_list,
           alive_count, bottom_back, top_back, sums)
    best, root_rule, root_child = _best_root(mode, g, unary, slot_bottom, slot_top, bottom, top, sums[1],
                                             root_inside, n_words)
    if best == -np.inf:
        return -np.inf, 0
    return best, _backtrace(g, slot_bottom, slot_top, bottom_back, top_back, root_rule, root_child, n_words, rows)


@njit(cache=True)
def chart_max_rule(g, binary_weights, unary_weights, words, slot_bottom, slot_top, in_bottom, in_top,
                   out_bottom, out_top, log_scale, root_inside, alive, alive_list, alive_count, rows):
    """Max-rule-product decoding (Petrov and Klein 2007 §4) after `chart_inside` and `chart_outside`:
    `_chart` in the max semiring over the anchored rule posteriors.

    Returns (log score, number of rows): the log product of the tree's anchored rule posteriors, and
    its rule applications in preorder written to ``rows``; (-inf, 0) if no tree has a positive score.
    """
    return _decode(MAX_RULE, g, binary_weights, unary_weights, in_top, words, slot_bottom, slot_top, 1, log_scale,
                   alive, alive_list, alive_count, (in_bottom, in_top, out_bottom, out_top), root_inside, rows)


@njit(cache=True)
def chart_viterbi(g, log_binary, log_unary, log_lexical, words, slot_bottom, slot_top, rows):
    """The most probable annotated derivation over the kept items: `_chart` in the max semiring over
    the annotated rules' log weights (CKY in log space).

    Returns (log weight, number of rows): the derivation's log probability and its rule applications
    (subtypes dropped) in preorder; (-inf, 0) if the sentence has no tree over the kept items.
    """
    n_words = words.shape[0]
    empty = _no_items(log_lexical.shape[1])[0]
    alive, alive_list, alive_count = _live_arrays(n_words, g.n_symbols)
    return _decode(VITERBI, g, log_binary, log_unary, log_lexical, words, slot_bottom, slot_top, log_lexical.shape[1],
                   np.zeros((n_words + 1, n_words + 1)), alive, alive_list, alive_count,
                   (empty, empty, empty, empty), 0.0, rows)


# ------------------------------------------------------------------ one sentence, many sentences
@njit(cache=True)
def sum_pass(g, binary_weights, unary_weights, lexical_weights, words, keep_bottom, keep_top):
    """Inside and outside over the kept items (masks as from `full_masks`).

    Returns (log Z, ROOT's scaled inside, slot_bottom, slot_top, in_bottom, in_top, out_bottom, out_top,
    log_scale, alive, alive_list, alive_count): an item's posterior is the sum over subtypes of
    inside · outside at its slot.
    """
    slot_bottom, n_bottom = item_slots(keep_bottom)
    slot_top, n_top = item_slots(keep_top)
    n_sub = lexical_weights.shape[1]
    n_words = words.shape[0]
    in_bottom = np.zeros((n_bottom, n_sub))
    in_top = np.zeros((n_top, n_sub))
    out_bottom = np.zeros((n_bottom, n_sub))
    out_top = np.zeros((n_top, n_sub))
    log_scale = np.full((n_words + 1, n_words + 1), -np.inf)
    alive, alive_list, alive_count = _live_arrays(n_words, g.n_symbols)
    log_z, root = chart_inside(g, binary_weights, unary_weights, lexical_weights, words, slot_bottom, slot_top,
                               in_bottom, in_top, log_scale, alive, alive_list, alive_count)
    if log_z > -np.inf:
        chart_outside(g, binary_weights, unary_weights, slot_bottom, slot_top, in_bottom, in_top, log_scale, root,
                      out_bottom, out_top, alive, alive_list, alive_count)
    return (log_z, root, slot_bottom, slot_top, in_bottom, in_top, out_bottom, out_top, log_scale, alive,
            alive_list, alive_count)

"""Coarse-to-fine CKY parsing with a split grammar (PCFG-LA; Petrov and Klein 2007): the chart kernels.
Their Python API (`prune_charts`, `LatentParser`) is `cvbayes.trees.latent_parser`.

A PCFG-LA (`cvbayes.trees.latent`, thesis §4.5.3) is parsed over its coarse symbols: the tree it returns
has the treebank's labels, the subtypes being summed over (max-rule-product) or maximised over
(Viterbi) in the chart.

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

Scaling
-------
As in `cvbayes.trees.inside_outside`: the items of a span share one scale, the log of which is
``log_scale[i, k]``; inside vectors are divided by their span's largest entry and outside vectors are
kept as alpha · exp(log_scale) / Z, so an item's posterior is outside · inside and a binary rule
anchored at (i, j, k) carries the factor exp(s_ij + s_jk - s_ik).  Viterbi runs in log space.

One inside pass, two semirings
------------------------------
`chart_inside` (sum, scaled space) and `chart_viterbi` (max, log space) are one routine, `_inside`,
specialised at compile time (`cvbayes.trees.semiring`): a span's lexical or binary steps (the latter
walked through `_combinations`) fill its bottom items, and its top items are their bottom items (+) their
unary rules (walked through `_unary_links`); the scaling is the sum's own, the backpointers the max's.
Both decoders read their tree off backpointers in one layout by one top-down pass, `_backtrack`.
Max-rule's chart is not the max semiring over subtypes but a max over coarse items of posteriors
summed over subtypes, read off the sum's inside and outside: a pass of its own, whose backpointers
have one "subtype".

Coarse-to-fine pruning
----------------------
`prune_charts` parses every sentence with the unsplit treebank grammar
(`cvbayes.trees.latent.treebank_weights`, H = 1) over the whole chart and keeps the items whose
posterior under it is at least a threshold (Petrov and Klein 2007 §3, with one coarse level); the fine
pass of `LatentParser.parse` visits only those.  The coarse grammar depends on the treebank grammar
alone, so one `Pruning` of a set of sentences serves every split of it (any H, any learner).  If the
fine grammar has no tree over the kept items, the sentence is parsed again on the whole chart (counted
as ``retried``).  Without pruning the parser is exact.  A sentence that still has no tree (a known
word whose tags fit no rule over it) is parsed once more with every word read as unknown, by its
signature (``as_unknown``); only then is it given up (None).

Cost
----
A binary step starts from the span's live left children (top items with a positive inside, or a
finite Viterbi score) and walks the rules with that left child (``left_offsets``), so a pruned chart
costs in proportion to its kept items: O(kept binary combinations · H^3) for inside, outside and the
decoder.  Kernels read rows of 2-D arrays through indices, not views, whose reference counting would
dominate the innermost loop.

Decoders
--------
* ``"max-rule"``: the tree maximising the product of its anchored rule posteriors
  q(A -> B C, i, j, k) = sum_{a,b,c} out(A_a, i, k) w(A_a -> B_b C_c) in(B_b, i, j) in(C_c, j, k) / Z,
  with q of unary and lexical rules alike (max-rule-product, Petrov and Klein 2007 §4); a top item
  without a unary rule adds no factor.
* ``"viterbi"``: the most probable annotated derivation, its subtypes dropped.

A tree comes back as rule applications in preorder, ``(kind, rule, i, j, k)`` as in
`cvbayes.trees.inside_outside` (kind BINARY, UNARY or LEXICAL of `cvbayes.trees.grammar`, ``rule`` an
index into the treebank grammar's rule array of that kind).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..core.special import FAST
from ..core.units import parallel_over_chunks
from .grammar import BINARY, LEXICAL, UNARY
from .latent import binary_inside
from .semiring import plus, times, zero
from .top_down import emit
from .treebank import TreebankGrammar

__all__ = [
    "DECODERS",
    "ParserGrammar",
    "chart_inside",
    "chart_max_rule",
    "chart_outside",
    "chart_viterbi",
    "coarse_masks",
    "full_masks",
    "parse_many",
    "parse_sentence",
    "parser_grammar",
    "prune_many",
    "sum_pass",
]

DECODERS = ("max-rule", "viterbi")


class ParserGrammar(NamedTuple):
    """A `TreebankGrammar` indexed for the chart kernels.

    Fields
    ------
    start, n_symbols : int
    binary_parent, binary_left, binary_right : int32 (Rb,)
    left_offsets : int64 (N + 1,); the binary rules with left child B are
        ``left_rule[left_offsets[B]:left_offsets[B+1]]``
    left_rule : int64 (Rb,)
    unary_offsets : int64 (N + 1,); unary_child : int32 (Ru,)
    lexical_parent : int32 (Rl,)
    word_offsets : int64 (W + 1,); the lexical rules of word w are ``word_rule[word_offsets[w]:word_offsets[w+1]]``
    word_rule : int64 (Rl,)
    """

    start: int
    n_symbols: int
    binary_parent: np.ndarray
    binary_left: np.ndarray
    binary_right: np.ndarray
    left_offsets: np.ndarray
    left_rule: np.ndarray
    unary_offsets: np.ndarray
    unary_child: np.ndarray
    lexical_parent: np.ndarray
    word_offsets: np.ndarray
    word_rule: np.ndarray


def parser_grammar(grammar: TreebankGrammar) -> ParserGrammar:
    """Index a treebank grammar for the chart kernels (its rules are sorted by parent)."""
    words = grammar.lexical_rules[:, 1]
    word_offsets = np.searchsorted(np.sort(words), np.arange(grammar.n_words + 1)).astype(np.int64)
    binary = grammar.binary_rules
    by_left = np.lexsort((binary[:, 0], binary[:, 2], binary[:, 1])).astype(np.int64)
    left_offsets = np.searchsorted(binary[by_left, 1], np.arange(grammar.n_symbols + 1)).astype(np.int64)
    return ParserGrammar(
        0,
        grammar.n_symbols,
        np.ascontiguousarray(binary[:, 0]),
        np.ascontiguousarray(binary[:, 1]),
        np.ascontiguousarray(binary[:, 2]),
        left_offsets,
        by_left,
        grammar.parent_offsets(UNARY),
        np.ascontiguousarray(grammar.unary_rules[:, 1]),
        np.ascontiguousarray(grammar.lexical_rules[:, 0]),
        word_offsets,
        np.argsort(words, kind="stable").astype(np.int64),
    )


# ------------------------------------------------------------------ items
@njit(cache=True)
def _slots(keep):
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


@njit(cache=True)
def _link_buffer(g):
    """Room for the top items of any span: each symbol's own bottom item and its unary rules."""
    return np.empty((g.n_symbols + g.unary_child.shape[0], 3), dtype=np.int64)


@njit(cache=True, inline="always")
def _unary_links(g, bottom_slots, top_slots, links):
    """The top items of a span: rows (top slot, unary rule, child's bottom slot) of ``links``, rule -1
    for the top item's own bottom item (first), then its unary rules over kept children; returns
    their number.  Inside, outside and max-rule walk a span's top items through this one list."""
    n = 0
    for symbol in range(g.n_symbols):
        t = top_slots[symbol]
        if t < 0:
            continue
        s = bottom_slots[symbol]
        if s >= 0:
            links[n, 0], links[n, 1], links[n, 2] = t, -1, s
            n += 1
        for r in range(g.unary_offsets[symbol], g.unary_offsets[symbol + 1]):
            child = bottom_slots[g.unary_child[r]]
            if child >= 0:
                links[n, 0], links[n, 1], links[n, 2] = t, r, child
                n += 1
    return n


# ------------------------------------------------------------------ inside, in a semiring
# `_inside` is the one inside pass of both semirings (`cvbayes.trees.semiring`): sum in scaled space
# (`chart_inside`, eq. 4.8 with subtypes) and max in log space (`chart_viterbi`, CKY), which also
# keeps backpointers for `_backtrack`.
@njit(cache=True, inline="always")
def _unary_step(viterbi, weights, r, inside, child, out, at, back):
    """out[at, a] (+)= (+)_b w(A_a -> B_b) (x) inside[child, b] for unary rule r; max writes (r, b) to
    back[at, a] when the rule beats out[at, a] (the first best b wins)."""
    n_sub = out.shape[1]
    for a in range(n_sub):
        total = zero(viterbi)
        best = -1
        for b in range(n_sub):
            value = times(viterbi, weights[r, a, b], inside[child, b])
            if viterbi and value > total:
                best = b
            total = plus(viterbi, total, value)
        if not viterbi:
            out[at, a] += total
        elif total > out[at, a]:
            out[at, a] = total
            back[at, a, 0] = r
            back[at, a, 1] = best


# the sum's unary step compiled on its own with fastmath (also the max-rule decoder's); ``no_back`` empty
@njit(cache=True, fastmath=FAST)
def _unary_into(weights, r, inside, child, out, at, no_back):
    _unary_step(False, weights, r, inside, child, out, at, no_back)


@njit(cache=True, inline="always")
def _best_binary(log_weights, r, j, best_top, left, right, best_bottom, parent, back):
    """The max's binary step: best_bottom[parent, a] = max(itself, log w(A_a -> B_b C_c) + left's b +
    right's c) with the first maximising (split j, rule r, b, c) in back[parent, a].  (The sum's is
    `cvbayes.trees.latent.binary_inside`, shared with the observed trees' E-step.)"""
    n_sub = best_bottom.shape[1]
    for a in range(n_sub):
        for b in range(n_sub):
            left_b = best_top[left, b]
            if left_b == -np.inf:
                continue
            for c in range(n_sub):
                score = log_weights[r, a, b, c] + left_b + best_top[right, c]
                if score > best_bottom[parent, a]:
                    best_bottom[parent, a] = score
                    back[parent, a, 0] = j
                    back[parent, a, 1] = r
                    back[parent, a, 2] = b
                    back[parent, a, 3] = c


@njit(cache=True, inline="always")
def _root_step(viterbi, g, unary_weights, bottom_slots, top_slots, in_bottom, in_top):
    """ROOT[0] over the whole sentence: its bottom item (+) its unary rules over top items, in the
    span's scale (sum).  Returns (value, rule, subtype): max's best unary rule (-1: the bottom item)
    and its child's subtype."""
    total = zero(viterbi)
    rule = -1
    child = 0
    s = bottom_slots[g.start]
    if s >= 0:
        total = plus(viterbi, total, in_bottom[s, 0])
    for r in range(g.unary_offsets[g.start], g.unary_offsets[g.start + 1]):
        t = top_slots[g.unary_child[r]]
        if t < 0:
            continue
        for x in range(in_top.shape[1]):
            value = times(viterbi, unary_weights[r, 0, x], in_top[t, x])
            if viterbi and value > total:
                rule = r
                child = x
            total = plus(viterbi, total, value)
    return total, rule, child


@njit(cache=True, inline="always")
def _inside(viterbi, g, binary_weights, unary_weights, lexical_weights, words, slot_bottom, slot_top, in_bottom,
            in_top, log_scale, alive, alive_list, alive_count, bottom_back, top_back):
    """The inside pass over the kept items in a semiring: a span's lexical or binary steps fill its
    bottom items, each top item is its bottom item (+) its unary rules, then (sum) the span is scaled.
    The weights are probabilities (sum) or their logs (max).

    Returns (value, ROOT's value, root rule, root subtype): sum gives (log Z, ROOT's scaled inside,
    -1, 0), max (the best derivation's log probability twice, and ROOT's choice of `_root_step`);
    the value is -inf without a tree over the kept items.
    """
    n_words = words.shape[0]
    n_sub = lexical_weights.shape[1]
    factors = np.empty(max(n_words, 1))
    combos = _combination_buffer(g, n_words)
    links = _link_buffer(g)
    for width in range(1, n_words + 1):
        for i in range(n_words - width + 1):
            k = i + width
            bottom_slots = slot_bottom[i, k]
            top_slots = slot_top[i, k]
            reference = 0.0
            if not viterbi:
                log_scale[i, k] = -np.inf
            if width == 1:
                w = words[i]
                if w >= 0:
                    for e in range(g.word_offsets[w], g.word_offsets[w + 1]):
                        r = g.word_rule[e]
                        s = bottom_slots[g.lexical_parent[r]]
                        if s >= 0:
                            for a in range(n_sub):
                                in_bottom[s, a] = lexical_weights[r, a]
                                if viterbi:
                                    bottom_back[s, a, 1] = r
            else:
                if not viterbi:
                    reference = -np.inf
                    for j in range(i + 1, k):
                        reference = max(reference, log_scale[i, j] + log_scale[j, k])
                    if reference == -np.inf:
                        continue
                    _split_factors(log_scale, i, k, reference, factors)
                for c in range(_combinations(g, i, k, slot_bottom, slot_top, alive, alive_list, alive_count, combos)):
                    j, r, parent, left, right = combos[c, 0], combos[c, 1], combos[c, 2], combos[c, 3], combos[c, 4]
                    if viterbi:
                        _best_binary(binary_weights, r, j, in_top, left, right, in_bottom, parent, bottom_back)
                    else:
                        binary_inside(binary_weights, r, in_top, left, right, factors[j - i - 1], in_bottom, parent)
            for u in range(_unary_links(g, bottom_slots, top_slots, links)):
                t, r, child = links[u, 0], links[u, 1], links[u, 2]
                if r < 0:
                    for a in range(n_sub):
                        in_top[t, a] = in_bottom[child, a]
                elif viterbi:
                    _unary_step(True, unary_weights, r, in_bottom, child, in_top, t, top_back)
                else:
                    _unary_into(unary_weights, r, in_bottom, child, in_top, t, top_back)
            if not viterbi:
                _rescale(bottom_slots, top_slots, in_bottom, in_top, log_scale, i, k, reference)
            _mark_live(top_slots, in_top, zero(viterbi), i, k, alive, alive_list, alive_count)
    if n_words == 0:
        return -np.inf, zero(viterbi), -1, 0
    root, rule, child = _root_step(viterbi, g, unary_weights, slot_bottom[0, n_words], slot_top[0, n_words],
                                   in_bottom, in_top)
    if viterbi:
        return root, root, rule, child
    if log_scale[0, n_words] == -np.inf or not root > 0.0:
        return -np.inf, 0.0, -1, 0
    return log_scale[0, n_words] + np.log(root), root, -1, 0


@njit(cache=True)
def _rescale(bottom_slots, top_slots, in_bottom, in_top, log_scale, i, k, reference):
    """Divide span (i, k)'s items by their largest entry and set its log scale (the sum's scaling)."""
    peak = 0.0
    for slots, values in ((bottom_slots, in_bottom), (top_slots, in_top)):
        for symbol in range(slots.shape[0]):
            s = slots[symbol]
            if s >= 0:
                for a in range(values.shape[1]):
                    peak = max(peak, values[s, a])
    if peak > 0.0:
        inverse = 1.0 / peak
        for slots, values in ((bottom_slots, in_bottom), (top_slots, in_top)):
            for symbol in range(slots.shape[0]):
                s = slots[symbol]
                if s >= 0:
                    for a in range(values.shape[1]):
                        values[s, a] *= inverse
        log_scale[i, k] = reference + np.log(peak)


@njit(cache=True)
def chart_inside(g, binary_weights, unary_weights, lexical_weights, words, slot_bottom, slot_top,
                 in_bottom, in_top, log_scale, alive, alive_list, alive_count):
    """The inside pass over the kept items (eq. 4.8 with subtypes; Matsuzaki et al. 2005): `_inside`
    with sum, in scaled space.

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
    no_back = np.empty((0, 0, 4), dtype=np.int64)
    log_z, root, _, _ = _inside(False, g, binary_weights, unary_weights, lexical_weights, words, slot_bottom,
                                slot_top, in_bottom, in_top, log_scale, alive, alive_list, alive_count, no_back,
                                no_back)
    return log_z, root


# ------------------------------------------------------------------ outside (sum) and the coarse pass's pruning
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
    links = _link_buffer(g)
    reached = np.zeros(g.n_symbols, dtype=np.bool_)
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
            for u in range(_unary_links(g, bottom_slots, slot_top[i, k], links)):
                t, r, child = links[u, 0], links[u, 1], links[u, 2]
                if r < 0:
                    for a in range(n_sub):
                        out_bottom[child, a] += out_top[t, a]
                else:
                    for b in range(n_sub):
                        total = 0.0
                        for a in range(n_sub):
                            total += out_top[t, a] * unary_weights[r, a, b]
                        out_bottom[child, b] += total
            if width == 1 or not _mark_reached(bottom_slots, out_bottom, reached):
                continue
            _split_factors(log_scale, i, k, log_scale[i, k], factors)
            for c in range(_combinations(g, i, k, slot_bottom, slot_top, alive, alive_list, alive_count, combos)):
                j, r, parent, left, right = combos[c, 0], combos[c, 1], combos[c, 2], combos[c, 3], combos[c, 4]
                if reached[g.binary_parent[r]]:
                    _binary_outside(binary_weights, r, out_bottom, parent, in_top, left, right, factors[j - i - 1],
                                    out_top)


@njit(cache=True)
def _keep_likely(slot, inside, outside, threshold, keep):
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
def chart_max_rule(g, binary_weights, unary_weights, words, slot_bottom, slot_top, in_bottom, in_top,
                   out_bottom, out_top, log_scale, root_inside, alive, alive_list, alive_count, rows):
    """Max-rule-product decoding (Petrov and Klein 2007 §4) after `chart_inside` and `chart_outside`.

    A max over coarse items of anchored rule posteriors, each a sum over subtypes read off the sum
    chart, not the max semiring over subtypes: its own pass, its backpointers in `_backtrack`'s
    layout with one subtype.

    Returns (log score, number of rows): the log product of the tree's anchored rule posteriors, and
    its rule applications in preorder written to ``rows``; (-inf, 0) if no tree has a positive score.
    """
    n_words = words.shape[0]
    n_sub = in_bottom.shape[1]
    best_bottom = np.full(in_bottom.shape[0], -np.inf)
    best_top = np.full(in_top.shape[0], -np.inf)
    bottom_back = np.zeros((in_bottom.shape[0], 1, 4), dtype=np.int64)
    top_back = np.full((in_top.shape[0], 1, 2), -1, dtype=np.int64)
    no_back = np.empty((0, 0, 2), dtype=np.int64)
    factors = np.empty(max(n_words, 1))
    combos = _combination_buffer(g, n_words)
    links = _link_buffer(g)
    reached = np.zeros(g.n_symbols, dtype=np.bool_)
    work = np.empty((1, n_sub))
    for width in range(1, n_words + 1):
        for i in range(n_words - width + 1):
            k = i + width
            if log_scale[i, k] == -np.inf:
                continue
            bottom_slots = slot_bottom[i, k]
            if width == 1:
                w = words[i]
                for e in range(g.word_offsets[w], g.word_offsets[w + 1]):
                    r = g.word_rule[e]
                    s = bottom_slots[g.lexical_parent[r]]
                    if s < 0:
                        continue
                    posterior = 0.0
                    for a in range(n_sub):
                        posterior += out_bottom[s, a] * in_bottom[s, a]
                    if posterior > 0.0:
                        best_bottom[s] = np.log(posterior)
                        bottom_back[s, 0, 1] = r
            elif _mark_reached(bottom_slots, out_bottom, reached):
                _split_factors(log_scale, i, k, log_scale[i, k], factors)
                for c in range(_combinations(g, i, k, slot_bottom, slot_top, alive, alive_list, alive_count,
                                             combos)):
                    j, r, s, left, right = combos[c, 0], combos[c, 1], combos[c, 2], combos[c, 3], combos[c, 4]
                    children = best_top[left] + best_top[right]
                    if children == -np.inf or not reached[g.binary_parent[r]]:
                        continue
                    work[0, :] = 0.0
                    binary_inside(binary_weights, r, in_top, left, right, factors[j - i - 1], work, 0)
                    posterior = 0.0
                    for a in range(n_sub):
                        posterior += out_bottom[s, a] * work[0, a]
                    if posterior > 0.0 and np.log(posterior) + children > best_bottom[s]:
                        best_bottom[s] = np.log(posterior) + children
                        bottom_back[s, 0, 0] = j
                        bottom_back[s, 0, 1] = r
            for u in range(_unary_links(g, bottom_slots, slot_top[i, k], links)):
                t, r, child = links[u, 0], links[u, 1], links[u, 2]
                if r < 0:
                    best_top[t] = best_bottom[child]
                elif best_bottom[child] > -np.inf:
                    work[0, :] = 0.0
                    _unary_into(unary_weights, r, in_bottom, child, work, 0, no_back)
                    posterior = 0.0
                    for a in range(n_sub):
                        posterior += out_top[t, a] * work[0, a]
                    if posterior > 0.0 and np.log(posterior) + best_bottom[child] > best_top[t]:
                        best_top[t] = np.log(posterior) + best_bottom[child]
                        top_back[t, 0, 0] = r
                        top_back[t, 0, 1] = 0
    # ROOT's layer
    best = -np.inf
    root_back = -1
    s = slot_bottom[0, n_words, g.start]
    if s >= 0:
        best = best_bottom[s]
    for r in range(g.unary_offsets[g.start], g.unary_offsets[g.start + 1]):
        t = slot_top[0, n_words, g.unary_child[r]]
        if t < 0 or best_top[t] == -np.inf:
            continue
        posterior = 0.0
        for x in range(n_sub):
            posterior += unary_weights[r, 0, x] * in_top[t, x]
        posterior /= root_inside
        if posterior > 0.0 and np.log(posterior) + best_top[t] > best:
            best = np.log(posterior) + best_top[t]
            root_back = r
    if best == -np.inf:
        return -np.inf, 0
    return best, _backtrack(g, slot_bottom, slot_top, bottom_back, top_back, root_back, 0, rows)


@njit(cache=True)
def chart_viterbi(g, log_binary, log_unary, log_lexical, words, slot_bottom, slot_top, rows):
    """The most probable annotated derivation over the kept items (CKY in log space: `_inside` with
    max, then `_backtrack`).

    Returns (log weight, number of rows): the derivation's log probability and its rule applications
    (subtypes dropped) in preorder; (-inf, 0) if the sentence has no tree over the kept items.
    """
    n_words = words.shape[0]
    n_sub = log_lexical.shape[1]
    n_bottom = 0
    n_top = 0
    for i in range(n_words + 1):
        for k in range(n_words + 1):
            for a in range(g.n_symbols):
                n_bottom = max(n_bottom, slot_bottom[i, k, a] + 1)
                n_top = max(n_top, slot_top[i, k, a] + 1)
    best_bottom = np.full((n_bottom, n_sub), -np.inf)
    best_top = np.full((n_top, n_sub), -np.inf)
    # bottom: split, rule, left subtype, right subtype; top: unary rule (-1: none), child subtype
    bottom_back = np.zeros((n_bottom, n_sub, 4), dtype=np.int64)
    top_back = np.full((n_top, n_sub, 2), -1, dtype=np.int64)
    alive, alive_list, alive_count = _live_arrays(n_words, g.n_symbols)
    best, _, root_rule, root_child = _inside(True, g, log_binary, log_unary, log_lexical, words, slot_bottom,
                                             slot_top, best_bottom, best_top, np.empty((0, 0)), alive, alive_list,
                                             alive_count, bottom_back, top_back)
    if best == -np.inf:
        return -np.inf, 0
    return best, _backtrack(g, slot_bottom, slot_top, bottom_back, top_back, root_rule, root_child, rows)


@njit(cache=True)
def _backtrack(g, slot_bottom, slot_top, bottom_back, top_back, root_rule, root_child, rows):
    """Write the decoded tree's rule applications in preorder to ``rows``; returns their number.

    Backpointers of either decoder, per item and subtype (one subtype for max-rule):
    ``bottom_back[slot, a]`` = (split, rule, left subtype, right subtype) of a bottom item (rule alone
    over one word), ``top_back[slot, a]`` = (unary rule, child subtype) of a top item (-1: its bottom
    item); ROOT takes unary rule ``root_rule`` to subtype ``root_child`` of its child (-1: its own
    bottom item, subtype 0).
    """
    n_words = slot_bottom.shape[0] - 1
    # (layer, symbol, subtype, i, k), layer 0 bottom, 1 top
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


# ------------------------------------------------------------------ one sentence, many sentences
@njit(cache=True)
def sum_pass(g, binary_weights, unary_weights, lexical_weights, words, keep_bottom, keep_top):
    """Inside and outside over the kept items (masks as from `full_masks`).

    Returns (log Z, ROOT's scaled inside, slot_bottom, slot_top, in_bottom, in_top, out_bottom, out_top,
    log_scale, alive, alive_list, alive_count): an item's posterior is the sum over subtypes of
    inside · outside at its slot.
    """
    slot_bottom, n_bottom = _slots(keep_bottom)
    slot_top, n_top = _slots(keep_top)
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


@njit(cache=True)
def _fine_parse(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical, words,
                keep_bottom, keep_top, max_rule, rows):
    """Decode over the kept items: (log score, rows used)."""
    if not max_rule:
        slot_bottom, _ = _slots(keep_bottom)
        slot_top, _ = _slots(keep_top)
        return chart_viterbi(g, log_binary, log_unary, log_lexical, words, slot_bottom, slot_top, rows)
    (log_z, root, slot_bottom, slot_top, in_bottom, in_top, out_bottom, out_top, log_scale, alive, alive_list,
     alive_count) = sum_pass(g, binary_weights, unary_weights, lexical_weights, words, keep_bottom, keep_top)
    if log_z == -np.inf:
        return -np.inf, 0
    return chart_max_rule(g, binary_weights, unary_weights, words, slot_bottom, slot_top, in_bottom, in_top,
                          out_bottom, out_top, log_scale, root, alive, alive_list, alive_count, rows)


@njit(cache=True)
def parse_sentence(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical, words,
                   keep_bottom, keep_top, pruned, max_rule, rows):
    """Decode one sentence over the kept items; if they are ``pruned`` and hold no tree, over the whole
    chart.

    Returns
    -------
    (log_score, n_rows, retried)
        The decoder's score and the rows of the tree written to ``rows`` (0 rows: no tree), and whether
        the whole chart had to be parsed again.
    """
    score, n = _fine_parse(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical,
                           words, keep_bottom, keep_top, max_rule, rows)
    if n > 0 or not pruned:
        return score, n, False
    keep_bottom, keep_top = full_masks(words.shape[0], g.n_symbols, g.start)
    score, n = _fine_parse(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical,
                           words, keep_bottom, keep_top, max_rule, rows)
    return score, n, True


@njit(cache=True)
def coarse_masks(g, coarse_binary, coarse_unary, coarse_lexical, words, threshold):
    """The items of the fine chart: those whose posterior under the coarse grammar is at least
    ``threshold`` (Petrov and Klein 2007 §3).  Returns (keep_bottom, keep_top, kept); nothing is kept
    when the coarse grammar has no tree."""
    keep_bottom, keep_top = full_masks(words.shape[0], g.n_symbols, g.start)
    coarse = sum_pass(g, coarse_binary, coarse_unary, coarse_lexical, words, keep_bottom, keep_top)
    if coarse[0] == -np.inf:
        keep_bottom[:] = False
        keep_top[:] = False
        return keep_bottom, keep_top, 0
    slot_bottom, slot_top, in_bottom, in_top, out_bottom, out_top = coarse[2:8]
    kept = _keep_likely(slot_bottom, in_bottom, out_bottom, threshold, keep_bottom)
    kept += _keep_likely(slot_top, in_top, out_top, threshold, keep_top)
    return keep_bottom, keep_top, kept


@njit(cache=True)
def _pack(keep, flat):
    """Copy the spans (i < k) of a (T+1, T+1, N) mask into ``flat``, span after span."""
    n = 0
    for i in range(keep.shape[0]):
        for k in range(i + 1, keep.shape[1]):
            for a in range(keep.shape[2]):
                flat[n] = keep[i, k, a]
                n += 1


@njit(cache=True)
def _unpack(flat, n_words, n_symbols):
    """The (T+1, T+1, N) mask `_pack` wrote (False outside the spans)."""
    keep = np.zeros((n_words + 1, n_words + 1, n_symbols), dtype=np.bool_)
    n = 0
    for i in range(n_words + 1):
        for k in range(i + 1, n_words + 1):
            for a in range(n_symbols):
                keep[i, k, a] = flat[n]
                n += 1
    return keep


@parallel_over_chunks()
def prune_many(g, coarse_binary, coarse_unary, coarse_lexical, tokens, offsets, chunk_bounds, threshold,
                mask_offsets, flat_bottom, flat_top, kept):
    """`coarse_masks` of every sentence, packed; one chunk of about equal cubic cost a thread."""
    for chunk in prange(chunk_bounds.shape[0] - 1):
        for s in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            keep_bottom, keep_top, kept[s] = coarse_masks(g, coarse_binary, coarse_unary, coarse_lexical,
                                                          tokens[offsets[s]:offsets[s + 1]], threshold)
            _pack(keep_bottom, flat_bottom[mask_offsets[s]:mask_offsets[s + 1]])
            _pack(keep_top, flat_top[mask_offsets[s]:mask_offsets[s + 1]])


@parallel_over_chunks()
def parse_many(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical, tokens,
                offsets, chunk_bounds, pruned, mask_offsets, flat_bottom, flat_top, max_rule, rows, row_offsets,
                scores, n_rows, retried):
    """`parse_sentence` over sentences, one chunk of about equal cubic cost a thread; ``pruned``: the
    packed masks of `_prune_many` say which items each fine chart keeps (else all)."""
    for chunk in prange(chunk_bounds.shape[0] - 1):
        for s in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            words = tokens[offsets[s]:offsets[s + 1]]
            n_words = words.shape[0]
            if pruned:
                keep_bottom = _unpack(flat_bottom[mask_offsets[s]:mask_offsets[s + 1]], n_words, g.n_symbols)
                keep_top = _unpack(flat_top[mask_offsets[s]:mask_offsets[s + 1]], n_words, g.n_symbols)
            else:
                keep_bottom, keep_top = full_masks(n_words, g.n_symbols, g.start)
            scores[s], n_rows[s], retried[s] = parse_sentence(
                g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical, words,
                keep_bottom, keep_top, pruned, max_rule, rows[row_offsets[s]:row_offsets[s + 1]])

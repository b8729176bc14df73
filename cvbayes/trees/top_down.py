"""One tree read off a filled span chart, top-down: the best one (max) or a draw (sum) (numba).

`_top_down` walks from the start symbol over the whole sentence; at each node it offers the node's
options in one fixed order (lexical rules, span rules, then every split and binary rule) to
`cvbayes.trees.semiring.offer`, which keeps the argmax of the max chart (CKY's backtrace, recomputing
each node's best option instead of storing backpointers) or draws one in proportion to its share of
the sum chart (Goodman 1998).  Only the unary chain above a node is walked differently: max jumps to
the bottom of the best chain (`MaxTables.next_hop`), the sampler steps down one rule at a time.

Kernel derivations
------------------
A tree comes back as rule applications in preorder, one row ``(kind, index, i, j, k)`` each:
``BINARY`` (index: kernel binary rule; split j), ``UNARY`` (kernel unary rule; j unused),
``LEXICAL`` (lexical entry; k = i + 1), ``SPAN`` (``<any>`` family; j = the substring id).
`derivation_rule_ids` maps them to global rule ids (deterministic pieces of binarised rules dropped);
`cvbayes.trees.inside_outside.derivation_to_tree` to a `Tree`.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..core.special import FAST
from .charts import LARGEST_GAP, chart_buffers, sentence_inside, sentence_max_inside, term_in_logs
from .grammar import BINARY, LEXICAL, SPAN, UNARY
from .semiring import offer, zero
from .tables import max_tables, n_lexical, rule_weight, span_weight, unary_index


@njit(cache=True, inline="always")
def emit(out, n_out, kind, index, i, j, k):
    """Write one rule application (kind, index, i, j, k) at row n_out; returns n_out + 1."""
    out[n_out, 0] = kind
    out[n_out, 1] = index
    out[n_out, 2] = i
    out[n_out, 3] = j
    out[n_out, 4] = k
    return n_out + 1


@njit(cache=True, inline="always")
def push(stack, depth, a, b, c):
    """Push the triple (a, b, c) on a top-down stack; returns the new depth."""
    stack[depth, 0] = a
    stack[depth, 1] = b
    stack[depth, 2] = c
    return depth + 1


@njit(cache=True)
def _draw(total):
    return np.random.random() * total


@njit(cache=True, inline="always")
def _option_value(viterbi, w, scale):
    """A terminal rule's weight w > 0 as an option of a top-down choice: log w (max), or w over the
    cell's scale (sum)."""
    return math.log(w) if viterbi else math.exp(math.log(w) - scale)


@njit(cache=True, inline="always")
def _best_chain(kernel, tables, inside0, i, k, symbol, out, n_out):
    """Max: emit the best unary chain from `symbol` down to the bottom of cell (i, k); returns
    (bottom symbol, n_out)."""
    bottom = symbol
    best = -np.inf
    for b in range(kernel.n_symbols):
        v = tables.unary_closure[symbol, b] + inside0[i, k, b]
        if v > best:
            best = v
            bottom = b
    while symbol != bottom:
        hop = tables.next_hop[symbol, bottom]
        n_out = emit(out, n_out, UNARY, tables.unary_index[symbol, hop], i, -1, k)
        symbol = hop
    return symbol, n_out


@njit(cache=True, inline="always", fastmath=FAST)
def _sampled_chain(kernel, tables, unary_of, inside, inside0, i, k, symbol, out, n_out, log_weight):
    """Sum: walk down the unary chain above cell (i, k)'s bottom: stop with inside0(A), go on to B
    with U[A,B] inside(B); returns (bottom symbol, n_out (-1: out of rows), log_weight)."""
    while True:
        u = _draw(inside[i, k, symbol])
        u -= inside0[i, k, symbol]
        if u < 0.0:
            break
        nxt = -1
        last = -1
        for b in range(kernel.n_symbols):
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
        if n_out >= out.shape[0]:
            return symbol, -1, log_weight
        n_out = emit(out, n_out, UNARY, unary_of[symbol, nxt], i, -1, k)
        log_weight += math.log(tables.unary_weights[symbol, nxt])
        symbol = nxt
    return symbol, n_out, log_weight


@njit(cache=True, inline="always", fastmath=FAST)
def _top_down(viterbi, kernel, tables, tokens, span_ids, inside, inside0, log_scale, unary_of, out):
    """Read one tree off a chart filled by `_inside` with the same semiring (module notes).

    Returns (log weight of the tree's rules (sum only), rows written): -1 rows when `out` is too
    short or a node has no option (which a chart of a derivable sentence cannot give).
    """
    n = kernel.n_symbols
    n_tokens = tokens.shape[0]
    rule_weights = tables.rule_weights
    has_unary = kernel.unary_parent.shape[0] > 0
    dense = kernel.dense
    stack = np.empty((2 * n_tokens, 3), dtype=np.int64)
    depth = push(stack, 0, kernel.start, 0, n_tokens)
    n_out = 0
    log_weight = 0.0
    rows = out.shape[0]
    while depth > 0:
        depth -= 1
        symbol = stack[depth, 0]
        i = stack[depth, 1]
        k = stack[depth, 2]
        if has_unary:
            if viterbi:
                symbol, n_out = _best_chain(kernel, tables, inside0, i, k, symbol, out, n_out)
            else:
                symbol, n_out, log_weight = _sampled_chain(kernel, tables, unary_of, inside, inside0, i, k, symbol,
                                                           out, n_out, log_weight)
                if n_out < 0:
                    return log_weight, -1
        scale = 0.0 if viterbi else log_scale[i, k]
        target = zero(viterbi) if viterbi else _draw(inside0[i, k, symbol])
        # the options in a fixed order; max keeps the first best, the sampler's last one absorbs rounding
        kind = -1
        index = -1
        split = -1
        left_symbol = -1
        right_symbol = -1
        chosen_log = 0.0
        done = False
        # two explicit loops: one over the m-th terminal rule (lexical or span) compiled 3x slower
        lexical = n_lexical(kernel, tokens, i, k)
        first = kernel.lexical_offsets[tokens[i]] if lexical > 0 else 0
        for e in range(first, first + lexical):
            w = rule_weight(rule_weights, kernel.lexical_rule[e])
            if kernel.lexical_parent[e] != symbol or w <= 0.0:
                continue
            take, done, target = offer(viterbi, _option_value(viterbi, w, scale), target)
            if take:
                kind, index, split, chosen_log = LEXICAL, e, -1, math.log(w)
            if done:
                break
        if not done and kernel.span_parent.shape[0] > 0:
            substring = span_ids[i * (n_tokens + 1) + k]
            for p in range(kernel.span_parent.shape[0]):
                w = span_weight(kernel, rule_weights, p, substring)
                if kernel.span_parent[p] != symbol or w <= 0.0:
                    continue
                take, done, target = offer(viterbi, _option_value(viterbi, w, scale), target)
                if take:
                    kind, index, split, chosen_log = SPAN, p, substring, math.log(w)
                if done:
                    break
        for j in range(i + 1, k):
            if done:
                break
            in_logs = False
            factor = 1.0
            shift = 0.0
            if not viterbi:
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
                    lb = left[b] if viterbi else left[b] * factor
                    if lb == zero(viterbi):
                        continue
                    for c in range(n):
                        if viterbi:
                            w = row[b * n + c] + lb + right[c]
                        elif in_logs:
                            w = term_in_logs(shift - scale, row[b * n + c], left[b], right[c])
                        else:
                            w = row[b * n + c] * lb * right[c]
                        if not viterbi and w <= 0.0:
                            continue
                        take, done, target = offer(viterbi, w, target)
                        if take:
                            kind = BINARY
                            index = kernel.dense_index[symbol, b * n + c]
                            split = j
                            left_symbol = b
                            right_symbol = c
                        if done:
                            break
                    if done:
                        break
            else:
                weights = tables.binary_weights
                for b in range(kernel.binary_parent.shape[0]):
                    if kernel.binary_parent[b] != symbol:
                        continue
                    lv = left[kernel.binary_left[b]]
                    rv = right[kernel.binary_right[b]]
                    if viterbi:
                        w = weights[b] + lv + rv
                    elif in_logs:
                        w = term_in_logs(shift - scale, weights[b], lv, rv)
                    else:
                        w = weights[b] * lv * rv * factor
                    if not viterbi and w <= 0.0:
                        continue
                    take, done, target = offer(viterbi, w, target)
                    if take:
                        kind = BINARY
                        index = b
                        split = j
                        left_symbol = kernel.binary_left[b]
                        right_symbol = kernel.binary_right[b]
                    if done:
                        break
        if kind < 0 or n_out >= rows:
            return log_weight, -1  # no option (cannot happen when inside0 > 0) or out of rows
        if viterbi and target < inside0[i, k, symbol] - 1e-9 * abs(inside0[i, k, symbol]) - 1e-12:
            raise RuntimeError("CKY backtrace disagrees with the chart")
        n_out = emit(out, n_out, kind, index, i, split, k)
        if kind == BINARY:
            if not viterbi:
                log_weight += math.log(tables.binary_weights[index])
            depth = push(stack, depth, right_symbol, split, k)
            depth = push(stack, depth, left_symbol, i, split)
        else:
            log_weight += chosen_log
    return log_weight, n_out


@njit(cache=True)
def viterbi_top_down(kernel, tables, tokens, span_ids, buffers, out):
    """CKY on one sentence with ready `MaxTables` and charts: (best tree's log weight, rows)."""
    inside, inside0, _, _, log_scale, work = buffers
    score = sentence_max_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, work[0])
    if score == -np.inf:
        return score, 0
    _, n_out = _top_down(True, kernel, tables, tokens, span_ids, inside, inside0, log_scale,
                         tables.unary_index, out)
    return score, n_out


@njit(cache=True)
def sentence_viterbi(kernel, tables, tokens, span_ids, out):
    """The most probable tree of one sentence (CKY in log space, max-product of eq. 4.8).

    The dense layout factorises like the inside pass: max over splits of
    delta(B) + delta(C) first (O(N^2) a split), then max over (B, C) of
    log W + that (O(N^3) a cell).  Unary chains use the max-product closure
    (`cvbayes.trees.tables.max_tables`).  Backpointers are not stored: the backtrace
    recomputes the best option of each of the tree's O(T) nodes.

    Parameters
    ----------
    tables : RuleTables
    out : int64 (at least 2T - 1 + (2T - 1)(N - 1), 5) rule applications, preorder

    Returns
    -------
    (float, int)
        Log weight of the best tree (sum of the log weights of its rules)
        and the number of rule applications written; (-inf, 0) without a tree.
    """
    return viterbi_top_down(kernel, max_tables(kernel, tables), tokens, span_ids,
                            chart_buffers(kernel, max(tokens.shape[0], 1)), out)


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
    log_z = sentence_inside(kernel, tables, tokens, span_ids, inside, inside0, log_scale, work[0])
    if log_z == -np.inf:
        return -np.inf, 0
    return _top_down(False, kernel, tables, tokens, span_ids, inside, inside0, log_scale, unary_index(kernel), out)


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

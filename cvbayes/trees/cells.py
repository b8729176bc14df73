"""A sentence's *cells*: the global rules it can use (the PCFG's and the adaptor grammar's collapsed learners).

A sentence can only use some rules: every binary rule (when it has two tokens or more), every unary
rule, the lexical rules of its tokens and the ``<any>`` rules of its substrings.  Those global rule ids
are the sentence's cells (`sentence_cells`, deduplicated), ``cell_rules[cell_offsets[i]:cell_offsets[i +
1]]``: the collapsed learners keep a sentence's local statistics on its cells only and write the
surrogate table only there, so a step costs O(cells), not O(R).
"""
import numpy as np
from numba import njit


@njit(cache=True)
def _shared_rules(kernel):
    """Global ids of the binary and unary rules (deterministic binarisation pieces have none)."""
    n_binary = 0
    for b in range(kernel.binary_rule.shape[0]):
        if kernel.binary_rule[b] >= 0:
            n_binary += 1
    n_unary = 0
    for u in range(kernel.unary_rule.shape[0]):
        if kernel.unary_rule[u] >= 0:
            n_unary += 1
    out = np.empty(n_binary + n_unary, dtype=np.int64)
    n = 0
    for b in range(kernel.binary_rule.shape[0]):
        if kernel.binary_rule[b] >= 0:
            out[n] = kernel.binary_rule[b]
            n += 1
    for u in range(kernel.unary_rule.shape[0]):
        if kernel.unary_rule[u] >= 0:
            out[n] = kernel.unary_rule[u]
            n += 1
    return out, n_binary


@njit(cache=True)
def shared_rules(kernel):
    """Every binary and unary global rule id: the rules every sentence's table needs (`build_tables`)."""
    return _shared_rules(kernel)[0]


@njit(cache=True)
def _visit_cells(kernel, tokens, spans, shared, n_binary, stamp, mark, out, n_out):
    """Write (or, with an empty `out`, count) the distinct global rules one sentence can use."""
    n_tokens = tokens.shape[0]
    n = n_out
    write = out.shape[0] > 0
    first = 0 if n_tokens >= 2 else n_binary   # a one-token sentence has no binary node
    for s in range(first, shared.shape[0]):
        if stamp[shared[s]] != mark:
            stamp[shared[s]] = mark
            if write:
                out[n] = shared[s]
            n += 1
    n_words = kernel.lexical_offsets.shape[0] - 1
    for t in range(n_tokens):
        word = tokens[t]
        if word < 0 or word >= n_words:
            continue
        for e in range(kernel.lexical_offsets[word], kernel.lexical_offsets[word + 1]):
            rule = kernel.lexical_rule[e]
            if rule >= 0 and stamp[rule] != mark:
                stamp[rule] = mark
                if write:
                    out[n] = rule
                n += 1
    n_families = kernel.span_parent.shape[0]
    if n_families > 0:
        for i in range(n_tokens):
            for k in range(i + 1, n_tokens + 1):
                substring = spans[i * (n_tokens + 1) + k]
                if substring < 0:
                    continue
                for p in range(n_families):
                    if substring >= kernel.span_count[p]:
                        continue
                    rule = kernel.span_base[p] + substring
                    if stamp[rule] != mark:
                        stamp[rule] = mark
                        if write:
                            out[n] = rule
                        n += 1
    return n


@njit(cache=True)
def sentence_cells(kernel, tokens, offsets, span_ids, span_offsets, n_rules):
    """The cells of every sentence (module notes): (cell_offsets (I + 1,) int64, cell_rules int32)."""
    n_sentences = offsets.shape[0] - 1
    shared, n_binary = _shared_rules(kernel)
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    stamp = np.full(n_rules, -1, dtype=np.int64)
    cell_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    nothing = np.zeros(0, dtype=np.int32)
    for i in range(n_sentences):
        spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
        count = _visit_cells(kernel, tokens[offsets[i]:offsets[i + 1]], spans, shared, n_binary, stamp, i,
                             nothing, 0)
        cell_offsets[i + 1] = cell_offsets[i] + count
    cell_rules = np.empty(cell_offsets[-1], dtype=np.int32)
    stamp[:] = -1
    for i in range(n_sentences):
        spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
        _visit_cells(kernel, tokens[offsets[i]:offsets[i + 1]], spans, shared, n_binary, stamp, i,
                     cell_rules[cell_offsets[i]:cell_offsets[i + 1]], 0)
    return cell_offsets, cell_rules

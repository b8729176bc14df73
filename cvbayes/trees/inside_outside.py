"""Inside-outside, CKY Viterbi and tree sampling over a binarised grammar: the batch driver and the
Python API (numba kernels in the modules below).

Every PCFG learner runs on these kernels: EM, VB, CVI and MH differ only in
the rule table they pass in (thesis eq. 4.7-4.12, 4.15-4.16, 4.24), exactly
as the chain learners share `cvbayes.chains.forward_backward`.  A table is a
(R,) array of rule weights indexed by global rule id (`CompiledGrammar`);
expected counts come back in the same (R,) layout.

Where things are
----------------
* `cvbayes.trees.tables`: the kernel tables of one rule-weight table, in the sum semiring
  (`RuleTables`, `build_tables`, `make_tables`) and in the max semiring (`MaxTables`, `max_tables`);
* `cvbayes.trees.charts`: the chart, its one inside pass over a semiring (`sentence_inside`,
  `sentence_max_inside`; scaling, dense and sparse layouts) and the outside pass
  (`sentence_inside_outside`, `add_binary_counts`, both at once `sentence_rule_counts`);
* `cvbayes.trees.top_down`: one tree off a filled chart, the best one or a draw (`sentence_viterbi`,
  `sentence_sample`; the kernel derivation rows);
* here: `batch_charts`, the one parallel driver over sentences (counts, log Z or best trees), and
  the Python API on sentences of tokens.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..core.units import cubic_chunks, parallel_over_chunks
from ..data.trees import Tree, unbinarize
from .charts import (add_binary_counts, chart_buffers, sentence_inside, sentence_inside_outside,
                     sentence_rule_counts)
from .grammar import BINARY, LEXICAL, SPAN, UNARY, CompiledGrammar, SentenceBatch
from .tables import MaxTables, RuleTables, build_tables, make_tables, max_tables
from .top_down import derivation_rule_ids, sentence_sample, sentence_viterbi, viterbi_top_down

__all__ = [
    "COUNTS",
    "Derivation",
    "InsideOutside",
    "LOG_Z",
    "RuleTables",
    "VITERBI",
    "add_binary_counts",
    "batch_charts",
    "batch_inside_outside",
    "batch_log_z",
    "batch_viterbi",
    "build_tables",
    "chart_buffers",
    "chart_chunks",
    "derivation_rule_ids",
    "derivation_to_tree",
    "expected_counts",
    "inside_outside",
    "log_z",
    "make_tables",
    "sample_tree",
    "sentence_inside",
    "sentence_inside_outside",
    "sentence_rule_counts",
    "sentence_sample",
    "sentence_viterbi",
    "viterbi",
    "viterbi_batch",
]

# What `batch_charts` computes for every sentence.
COUNTS = 0    # inside-outside: expected rule counts (summed) and log Z
LOG_Z = 1     # the inside pass only: log Z
VITERBI = 2   # CKY: the best tree's log weight and its rule applications


@njit(cache=True)
def _longest_in(offsets, first, last):
    longest = 1
    for i in range(first, last):
        longest = max(longest, offsets[i + 1] - offsets[i])
    return longest


def chart_chunks(kernel, offsets: np.ndarray) -> np.ndarray:
    """Thread chunks of sentences for the chart kernels: `cubic_chunks`, each (span, split) visiting
    the grammar's binary rules."""
    return cubic_chunks(offsets, max(kernel.binary_parent.shape[0], 1))


def _no_max_tables(tables):
    """Empty `MaxTables` for the modes that do not decode (CKY's are built once a batch)."""
    no_index = np.zeros((0, 0), dtype=np.int64)
    return MaxTables(tables.rule_weights, np.zeros(0), np.zeros((0, 0)), np.zeros((0, 0)), no_index, no_index)


@njit(cache=True)
def _sentence_chart(mode, kernel, tables, best, sentence, spans, buffers, counts, outer, marginals, rows):
    """One sentence of `batch_charts`: (log Z or the best tree's log weight, rows used)."""
    if mode == COUNTS:
        return sentence_inside_outside(kernel, tables, sentence, spans, buffers, counts, outer, marginals), 0
    if mode == LOG_Z:
        inside, inside0, _, _, log_scale, work = buffers
        return sentence_inside(kernel, tables, sentence, spans, inside, inside0, log_scale, work[0]), 0
    score, n_out = viterbi_top_down(kernel, best, sentence, spans, buffers, rows)
    return score, max(n_out, 0)


@parallel_over_chunks()
def batch_charts(kernel, tables, best, tokens, offsets, span_ids, span_offsets, chunk_bounds, mode, n_rules,
                 row_offsets):
    """The chart of every sentence under one rule table, in parallel: the one driver of the E-steps
    of EM and VB (`COUNTS`), held-out likelihoods (`LOG_Z`) and CKY decoding (`VITERBI`).

    All sentences see the same table, so chunks of sentences run in parallel,
    each with its own charts and accumulators (R + N^3 floats a thread for
    the counts), summed at the end.

    Parameters
    ----------
    kernel, tables : KernelGrammar, RuleTables
    best : MaxTables of the same table (VITERBI: `max_tables`, built once a batch) or empty ones
    tokens, offsets, span_ids, span_offsets : the sentences (a `SentenceBatch`)
    chunk_bounds : (C + 1,) sentence indices, at most one chunk a thread (`chart_chunks`)
    mode : COUNTS, LOG_Z or VITERBI
    n_rules : R (COUNTS; 0 otherwise)
    row_offsets : (I + 1,) int64 (VITERBI; (1,) otherwise): sentence i writes its rule
        applications to ``applications[row_offsets[i]:row_offsets[i + 1]]`` (reserve
        ``(2T - 1)(N + 1)`` rows each, as `viterbi_batch` does)

    Returns
    -------
    counts : (R,) expected rule counts summed over the sentences
    log_z : (I,) log Z of every sentence, or (VITERBI) the log weight of its best tree; -inf for
        one without a tree (it adds no counts)
    used : (I,) rows used by each sentence's best tree (0: no tree)
    applications : (row_offsets[-1], 5) int64
    """
    n = kernel.n_symbols
    n_chunks = chunk_bounds.shape[0] - 1
    n_sentences = offsets.shape[0] - 1
    outer_size = n if kernel.dense and mode == COUNTS else 0
    counts_acc = np.zeros((n_chunks, n_rules))
    outer_acc = np.zeros((n_chunks, outer_size, outer_size * outer_size))
    log_z = np.empty(n_sentences)
    used = np.zeros(n_sentences, dtype=np.int64)
    applications = np.empty((row_offsets[-1], 5), dtype=np.int64)
    no_marginals = np.zeros((0, 0, 0))
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    for c in prange(n_chunks):
        buffers = chart_buffers(kernel, _longest_in(offsets, chunk_bounds[c], chunk_bounds[c + 1]))
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            sentence = tokens[offsets[i]:offsets[i + 1]]
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
            log_z[i], used[i] = _sentence_chart(mode, kernel, tables, best, sentence, spans, buffers, counts_acc[c],
                                                outer_acc[c], no_marginals,
                                                applications[row_offsets[i]:row_offsets[i + 1]] if mode == VITERBI
                                                else applications)
    counts = counts_acc.sum(axis=0)
    if outer_size > 0:
        add_binary_counts(kernel, tables, outer_acc.sum(axis=0), counts)
    return counts, log_z, used, applications


_NO_ROWS = np.zeros(1, dtype=np.int64)


def batch_inside_outside(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, n_rules):
    """Expected counts (R,) of many sentences under one rule table (the E-step of EM and VB) and each
    sentence's log Z (I,) (-inf for one without a tree; it adds no counts): `batch_charts`."""
    counts, log_z, _, _ = batch_charts(kernel, tables, _no_max_tables(tables), tokens, offsets, span_ids,
                                       span_offsets, chunk_bounds, COUNTS, n_rules, _NO_ROWS)
    return counts, log_z


def batch_log_z(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds):
    """log Z of every sentence under one rule table (inside only; held-out likelihood): `batch_charts`."""
    return batch_charts(kernel, tables, _no_max_tables(tables), tokens, offsets, span_ids, span_offsets,
                        chunk_bounds, LOG_Z, 0, _NO_ROWS)[1]


def batch_viterbi(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, row_offsets):
    """`sentence_viterbi` on every sentence, in parallel (one table for all): `batch_charts`.

    Returns (scores (I,) the best trees' log weights (-inf: no tree), n_applications (I,) rows used
    by each sentence (0: no tree), applications (row_offsets[-1], 5) int64).
    """
    _, scores, used, applications = batch_charts(kernel, tables, max_tables(kernel, tables), tokens, offsets,
                                                 span_ids, span_offsets, chunk_bounds, VITERBI, 0, row_offsets)
    return scores, used, applications


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
    log_z = sentence_rule_counts(kernel, tables, tokens, spans, buffers, counts, outer, chart)
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
                                               batch.span_offsets, chart_chunks(grammar.kernel, batch.offsets),
                                               row_offsets)
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
        chunk_bounds = chart_chunks(grammar.kernel, batch.offsets)
    return batch_inside_outside(grammar.kernel, tables, batch.tokens, batch.offsets, batch.span_ids,
                                batch.span_offsets, chunk_bounds, grammar.n_rules)


def derivation_to_tree(grammar, applications, words, *, binarized: bool = False) -> Tree:
    """The `Tree` of a kernel derivation (Viterbi or sampled).

    Parameters
    ----------
    grammar : CompiledGrammar
    applications : Derivation or int array (n, 5)
        Rule applications in preorder (`cvbayes.trees.inside_outside`).
    words : sequence of str or of ids
        The sentence; ids are decoded with ``grammar.vocabulary``.
    binarized : bool, default False
        Keep the internal ``@`` symbols (the kernel's binary tree) instead of
        returning the user's n-ary tree.
    """
    rows = np.asarray(getattr(applications, "applications", applications))
    array = np.asarray(words)
    words = grammar.vocabulary.decode(array) if array.dtype.kind in "iu" else [str(w) for w in words]
    kernel = grammar.kernel
    symbols = grammar.symbols
    position = 0

    def build() -> Tree:
        nonlocal position
        if position >= len(rows):
            raise ValueError("the derivation ends before its tree is complete")
        kind, index, begin, split, end = (int(v) for v in rows[position])
        position += 1
        if kind == BINARY:
            left = build()
            right = build()
            return Tree(symbols[kernel.binary_parent[index]], [left, right])
        if kind == UNARY:
            return Tree(symbols[kernel.unary_parent[index]], [build()])
        if kind == LEXICAL:
            return Tree(symbols[kernel.lexical_parent[index]], [words[begin]])
        if kind == SPAN:
            return Tree(symbols[kernel.span_parent[index]], words[begin:end])
        raise ValueError(f"unknown rule application kind {kind}")

    tree = build()
    if position != len(rows):
        raise ValueError(f"the derivation has {len(rows) - position} rows after its tree")
    return tree if binarized else unbinarize(tree)

"""Coarse-to-fine CKY parsing with a split grammar (PCFG-LA; Petrov and Klein 2007).

A PCFG-LA (`cvbayes.trees.latent`, thesis §4.5.3) is parsed over its coarse symbols: the tree it returns
has the treebank's labels, the subtypes being summed over (max-rule-product) or maximised over
(Viterbi) in the chart (`cvbayes.trees.latent_chart`, which describes the chart, its items and the two
decoders).

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

Decoders
--------
* ``"max-rule"``: the tree maximising the product of its anchored rule posteriors (max-rule-product);
* ``"viterbi"``: the most probable annotated derivation, its subtypes dropped.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..data.trees import Tree
from .grammar import BINARY, UNARY
from .inside_outside import cubic_chunks
from .latent import AnnotatedTables, treebank_weights
from .latent_chart import chart_max_rule, chart_viterbi, full_masks, item_slots, keep_likely, sum_pass
from .treebank import ROOT, TreebankGrammar, debinarise, encode_words

__all__ = [
    "DECODERS",
    "LatentParser",
    "ParseBatch",
    "ParserGrammar",
    "Pruning",
    "coarse_masks",
    "parse_sentence",
    "parser_grammar",
    "prune_charts",
    "remove_root",
    "rows_to_tree",
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


@njit(cache=True)
def _fine_parse(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical, words,
                keep_bottom, keep_top, max_rule, rows):
    """Decode over the kept items: (log score, rows used)."""
    if not max_rule:
        slot_bottom, _ = item_slots(keep_bottom)
        slot_top, _ = item_slots(keep_top)
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
    kept = keep_likely(slot_bottom, in_bottom, out_bottom, threshold, keep_bottom)
    kept += keep_likely(slot_top, in_top, out_top, threshold, keep_top)
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


@njit(parallel=True, cache=True)
def _prune_many(g, coarse_binary, coarse_unary, coarse_lexical, tokens, offsets, chunk_bounds, threshold,
                mask_offsets, flat_bottom, flat_top, kept):
    """`coarse_masks` of every sentence, packed; one chunk of about equal cubic cost a thread."""
    for chunk in prange(chunk_bounds.shape[0] - 1):
        for s in range(chunk_bounds[chunk], chunk_bounds[chunk + 1]):
            keep_bottom, keep_top, kept[s] = coarse_masks(g, coarse_binary, coarse_unary, coarse_lexical,
                                                          tokens[offsets[s]:offsets[s + 1]], threshold)
            _pack(keep_bottom, flat_bottom[mask_offsets[s]:mask_offsets[s + 1]])
            _pack(keep_top, flat_top[mask_offsets[s]:mask_offsets[s + 1]])


@njit(parallel=True, cache=True)
def _parse_many(g, binary_weights, unary_weights, lexical_weights, log_binary, log_unary, log_lexical, tokens,
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


# ------------------------------------------------------------------ Python API
def rows_to_tree(grammar: TreebankGrammar, rows: np.ndarray, words: Sequence[str]) -> Tree:
    """The binarised tree (ROOT on top) of rule applications in preorder, over the given words."""
    symbols = grammar.symbols
    position = 0

    def build() -> Tree:
        nonlocal position
        kind, rule, i, _, _ = (int(v) for v in rows[position])
        position += 1
        if kind == BINARY:
            left = build()
            return Tree(symbols[grammar.binary_rules[rule, 0]], [left, build()])
        if kind == UNARY:
            return Tree(symbols[grammar.unary_rules[rule, 0]], [build()])
        return Tree(symbols[grammar.lexical_rules[rule, 0]], [words[i]])

    return build()


def remove_root(tree: Tree) -> Tree:
    """The tree under ROOT (the inverse of `cvbayes.trees.treebank.add_root`); a ROOT with several
    children is kept."""
    if tree.label == ROOT and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        return tree.children[0]
    return tree


def _encode(grammar: TreebankGrammar, sentences, as_unknown=False):
    """Word ids of every sentence laid end to end: (tokens int64, offsets int64, lengths)."""
    lengths = np.array([len(words) for words in sentences], dtype=np.int64)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.concatenate([encode_words(words, grammar, as_unknown=as_unknown) for words in sentences]
                            + [np.zeros(0, np.int32)])
    return tokens.astype(np.int64), offsets, lengths


class Pruning(NamedTuple):
    """Which chart items the fine pass keeps, from the coarse pass of `prune_charts`.

    The coarse grammar is the same for every split of one treebank grammar, so one `Pruning` of a set
    of sentences serves every model trained on that grammar (any H, any algorithm).  ``keep_bottom``
    and ``keep_top`` are packed masks (spans i < k in order, N symbols each) of sentence s at
    ``mask_offsets[s]:mask_offsets[s + 1]``; ``kept_items`` and ``chart_items`` sum over the
    sentences (bottom and top items; ROOT has no top item); ``seconds`` is the coarse pass's time.
    """

    threshold: float
    lengths: np.ndarray
    mask_offsets: np.ndarray
    keep_bottom: np.ndarray
    keep_top: np.ndarray
    kept_items: int
    chart_items: int
    seconds: float

    @property
    def kept_share(self) -> float:
        """The share of chart items the pruning keeps."""
        return self.kept_items / self.chart_items if self.chart_items else 1.0


def prune_charts(grammar: TreebankGrammar, sentences: Sequence[Sequence[str]], threshold: float = 1e-4,
                 coarse: AnnotatedTables | None = None) -> Pruning:
    """Run the coarse pass on sentences (in parallel) and keep the items above ``threshold``.

    Parameters
    ----------
    grammar : TreebankGrammar
    sentences : sequence of sequences of str
    threshold : float in (0, 1)
    coarse : AnnotatedTables, optional
        The H = 1 weights of the coarse pass; default the treebank's relative frequencies
        (`cvbayes.trees.latent.treebank_weights`).
    """
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
    started = time.perf_counter()
    coarse = treebank_weights(grammar) if coarse is None else coarse
    if coarse.n_subtypes != 1:
        raise ValueError("the coarse grammar must have one subtype (H = 1)")
    coarse = AnnotatedTables(*(np.ascontiguousarray(table, dtype=np.float64) for table in coarse))
    sentences = [list(words) for words in sentences]
    tokens, offsets, lengths = _encode(grammar, sentences)
    n_symbols = grammar.n_symbols
    mask_offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths * (lengths + 1) // 2 * n_symbols, out=mask_offsets[1:])
    flat_bottom = np.zeros(mask_offsets[-1], dtype=np.bool_)
    flat_top = np.zeros(mask_offsets[-1], dtype=np.bool_)
    kept = np.zeros(len(sentences), dtype=np.int64)
    if sentences:
        _prune_many(parser_grammar(grammar), *coarse, tokens, offsets, cubic_chunks(offsets), float(threshold),
                    mask_offsets, flat_bottom, flat_top, kept)
    chart_items = int((lengths * (lengths + 1) // 2 * (2 * n_symbols - 1)).sum())
    return Pruning(float(threshold), lengths, mask_offsets, flat_bottom, flat_top, int(kept.sum()), chart_items,
                   time.perf_counter() - started)


class ParseBatch(NamedTuple):
    """What `LatentParser.parse` returns.

    ``trees`` Penn trees (debinarised, ROOT removed), None for a sentence without a tree;
    ``log_scores`` the decoder's score of each (-inf without a tree); ``pruning`` the `Pruning` used
    (None: the whole chart); ``retried`` sentences parsed again on the whole chart because pruning
    left no tree; ``as_unknown`` sentences that had no tree until every word was read as an unknown
    word (by its signature, `encode_words`), on the whole chart; ``seconds`` the wall time of the fine
    pass and decoding (the coarse pass's is ``pruning.seconds``).
    """

    trees: list
    log_scores: np.ndarray
    pruning: Pruning | None
    retried: int
    as_unknown: int
    seconds: float


class LatentParser:
    """CKY parser of a split grammar, coarse-to-fine (module notes).

    Parameters
    ----------
    grammar : TreebankGrammar
    weights : AnnotatedTables
        The split grammar's rule weights (each row A[a] a distribution).
    decoder : {"max-rule", "viterbi"}
    """

    def __init__(self, grammar: TreebankGrammar, weights: AnnotatedTables, *, decoder: str = "max-rule"):
        if decoder not in DECODERS:
            raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
        self.grammar = grammar
        self.kernel = parser_grammar(grammar)
        self.weights = AnnotatedTables(*(np.ascontiguousarray(table, dtype=np.float64) for table in weights))
        with np.errstate(divide="ignore"):
            self.log_weights = AnnotatedTables(*(np.log(table) for table in self.weights))
        self.decoder = decoder

    def parse(self, sentences: Sequence[Sequence[str]], pruning: float | Pruning | None = 1e-4) -> ParseBatch:
        """Parse sentences (sequences of words) in parallel.

        Parameters
        ----------
        sentences : sequence of sequences of str
        pruning : float, Pruning or None
            A threshold for `prune_charts` (run here, on the treebank grammar), a `Pruning` of these
            sentences made earlier, or None (or 0) for the whole chart: the exact parser.
        """
        sentences = [list(words) for words in sentences]
        if pruning is not None and not isinstance(pruning, Pruning):
            pruning = prune_charts(self.grammar, sentences, float(pruning)) if pruning else None
        tokens, offsets, lengths = _encode(self.grammar, sentences)
        if pruning is not None and not np.array_equal(pruning.lengths, lengths):
            raise ValueError("the pruning was made for other sentences")
        started = time.perf_counter()
        scores, rows, row_offsets, n_rows, retried = self._decode(tokens, offsets, lengths, pruning)
        failed = np.flatnonzero(n_rows == 0)
        if failed.size:
            # the known words' own tags admit no tree: read every word by its signature
            again = [sentences[s] for s in failed]
            tokens, offsets, lengths = _encode(self.grammar, again, as_unknown=True)
            found = self._decode(tokens, offsets, lengths, None)
            for position, s in enumerate(failed):
                scores[s] = found[0][position]
                n_rows[s] = found[3][position]
                if n_rows[s]:
                    first = found[2][position]
                    rows[row_offsets[s]:row_offsets[s] + n_rows[s]] = found[1][first:first + n_rows[s]]
        trees = []
        for s, words in enumerate(sentences):
            if n_rows[s] == 0:
                trees.append(None)
                continue
            tree = rows_to_tree(self.grammar, rows[row_offsets[s]:row_offsets[s] + n_rows[s]], words)
            trees.append(remove_root(debinarise(tree)))
        return ParseBatch(trees, scores, pruning, int(retried.sum()), int(np.count_nonzero(n_rows[failed])),
                          time.perf_counter() - started)

    def _decode(self, tokens, offsets, lengths, pruning):
        """The kernels on encoded sentences: (scores, rows, row_offsets, n_rows, retried)."""
        n = lengths.shape[0]
        row_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.maximum(4 * lengths, 1), out=row_offsets[1:])
        rows = np.empty((row_offsets[-1], 5), dtype=np.int64)
        scores = np.full(n, -np.inf)
        n_rows = np.zeros(n, dtype=np.int64)
        retried = np.zeros(n, dtype=np.bool_)
        if n:
            masks = (pruning.mask_offsets, pruning.keep_bottom, pruning.keep_top) if pruning is not None else (
                np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.bool_))
            _parse_many(self.kernel, *self.weights, *self.log_weights, tokens, offsets, cubic_chunks(offsets),
                        pruning is not None, *masks, self.decoder == "max-rule", rows, row_offsets, scores, n_rows,
                        retried)
        return scores, rows, row_offsets, n_rows, retried

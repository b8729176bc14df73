"""The coarse-to-fine parser of a split grammar (PCFG-LA; Petrov and Klein 2007) from Python: the coarse
pass's `Pruning` (`prune_charts`), `LatentParser` and the trees it returns.  The chart kernels, the decoders
and what they compute are in `cvbayes.trees.latent_parse`."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..core.units import cubic_chunks
from ..data.trees import Tree
from .grammar import BINARY, UNARY
from .latent import AnnotatedTables, treebank_weights
from .latent_parse import DECODERS, parse_many, parser_grammar, prune_many
from .treebank import ROOT, TreebankGrammar, debinarise, encode_words

__all__ = ["LatentParser", "ParseBatch", "Pruning", "prune_charts", "remove_root", "rows_to_tree"]


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
        prune_many(parser_grammar(grammar), *coarse, tokens, offsets, cubic_chunks(offsets, coarse.binary.size),
                    float(threshold), mask_offsets, flat_bottom, flat_top, kept)
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
            parse_many(self.kernel, *self.weights, *self.log_weights, tokens, offsets,
                        cubic_chunks(offsets, self.weights.binary.size), pruning is not None, *masks,
                        self.decoder == "max-rule", rows, row_offsets, scores, n_rows, retried)
        return scores, rows, row_offsets, n_rows, retried

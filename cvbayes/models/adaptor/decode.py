"""Segmenting with a fitted adaptor grammar: Viterbi word spans, and the fitted weights carried to the grammar
compiled over other utterances (new text, or a loaded model's).
"""
from __future__ import annotations

import numpy as np

from ...trees.grammar import BINARY, LEXICAL, SPAN, UNARY, CompiledGrammar
from ...trees.inside_outside import make_tables, viterbi_batch
from .layout import base_chart_grammar


class PortableWeights:
    """Rule weights that any compilation of the grammar can take: the plain (non-span) rules' in the
    grammar's order, and every span family's by the symbols of its yields (positive weights only).

    plain : (P,) float
    families : list of dict of tuple of str to float, one per span family in the kernel's order
    """

    def __init__(self, plain, families):
        self.plain, self.families = np.asarray(plain, dtype=float), families

    @classmethod
    def of(cls, compiled: CompiledGrammar, weights) -> PortableWeights:
        """The weights of `compiled`'s rules."""
        kernel, families = compiled.kernel, []
        for family in range(kernel.span_parent.shape[0]):
            first, count = kernel.span_base[family], kernel.span_count[family]
            found = weights[first:first + count]
            families.append({tuple(compiled.vocabulary.decode(list(compiled.substrings.substrings[s]))): float(found[s])
                             for s in np.flatnonzero(found > 0)})
        return cls(weights[compiled.rule_kind != SPAN], families)

    def on(self, compiled: CompiledGrammar) -> np.ndarray:
        """The weights over `compiled`'s rules (a yield the fitted model never saw weighs 0)."""
        weights = np.zeros(compiled.n_rules)
        plain = compiled.rule_kind != SPAN
        if int(plain.sum()) != self.plain.shape[0]:
            raise ValueError("the fitted weights belong to another grammar")
        weights[plain] = self.plain
        kernel = compiled.kernel
        for family, known in enumerate(self.families):
            first, count = kernel.span_base[family], kernel.span_count[family]
            for s in range(count):
                weights[first + s] = known.get(tuple(compiled.vocabulary.decode(list(compiled.substrings.substrings[s]))),
                                               0.0)
        return weights


class Decoder:
    """Word spans of Viterbi parses, expanding cached constituents above the word level by the best
    parse of their yield under their base rules (`AdaptorGrammar.segment`)."""

    def __init__(self, spec, word, compiled: CompiledGrammar, weights, sentences):
        self.spec, self.word, self.compiled, self.weights, self.sentences = spec, word, compiled, weights, sentences
        self.inner: dict[str, tuple] = {}
        grammar = spec.grammar
        reaches = {name: {s for r in grammar.rules if r.lhs == name for s in r.rhs if isinstance(s, str)}
                   for name in grammar.nonterminals}
        changed = True
        while changed:
            changed = False
            for name, below in reaches.items():
                grown = below.union(*(reaches[s] for s in below))
                changed |= grown != below
                reaches[name] = grown
        self.opaque = {name for name in spec.adapted if name != word and word in reaches[name]}

    def word_spans(self, compiled, weights, utterances, start=None):
        """Sorted (begin, end) word spans of each utterance's best parse (None: no parse)."""
        tables = make_tables(compiled, weights)
        kernel = compiled.kernel
        word = compiled.nonterminals.index(self.word)
        opaque_symbols = {compiled.nonterminals.index(name) for name in self.opaque if name in compiled.nonterminals}
        parents = {BINARY: kernel.binary_parent, UNARY: kernel.unary_parent, LEXICAL: kernel.lexical_parent,
                   SPAN: kernel.span_parent}
        out, opaque = [], []
        for u, (utterance, derivation) in enumerate(zip(utterances, viterbi_batch(compiled, tables,
                                                                                  compiled.prepare(utterances)))):
            if derivation is None:
                out.append(None)
                continue
            spans = set()
            for kind, index, begin, _, end in derivation.applications:
                parent = int(parents[int(kind)][index])
                if parent == start:
                    continue
                if parent == word:
                    spans.add((int(begin), int(end)))
                elif kind == SPAN and parent in opaque_symbols:
                    opaque.append((compiled.nonterminals[parent], u, int(begin), int(end)))
            out.append(spans)
        for name in {item[0] for item in opaque}:   # one batch of inner parses per adapted nonterminal
            items = [item for item in opaque if item[0] == name]
            inner_compiled, inner_weights, inner_start = self._inner(name)
            pieces = [utterances[u][begin:end] for _, u, begin, end in items]
            inner = self.word_spans(inner_compiled, inner_weights, pieces, inner_start)
            for (_, u, begin, end), found in zip(items, inner):
                out[u].update((begin + i, begin + k) for i, k in (found or [(0, end - begin)]))
        return [None if spans is None else (sorted(spans) or [(0, len(utterance))])
                for utterance, spans in zip(utterances, out)]

    def _inner(self, name):
        """The grammar whose start rewrites by the base rules of adapted `name` only, with the fitted weights."""
        if name not in self.inner:
            inner, to_global, top = base_chart_grammar(self.spec, self.compiled, self.sentences, name)
            self.inner[name] = (inner, self.weights[to_global], top)
        return self.inner[name]

"""The adaptor grammar compiled for the tree kernels: one cache family per adapted nonterminal, and the
rule layout every learner reads (`cvbayes.models.adaptor.kernels` module notes).

An adapted X gets a span family ``X -> <any>`` (Johnson, Griffiths and Goldwater 2007's PCFG
approximation: one ``X -> s`` rule per yield s) beside its own rules, the *base* rules.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...trees.grammar import SPAN, AnySubstring, CompiledGrammar, Grammar, Rule, SentenceBatch, compile_grammar
from .grammar import AdaptorGrammarSpec


class RuleLayout(NamedTuple):
    """Where the global rules of a compiled adaptor grammar belong.

    adapted_of : (n_nonterminals,) int32
        A nonterminal's adapted index (0 .. M-1, in the spec's order) or -1.
    adapted_symbol : (M,) int64
        The kernel symbol of each adapted nonterminal.
    cache_of : (R,) int32
        The adapted nonterminal whose cache family a rule belongs to, -1 for a base rule (a Dirichlet
        cell of its parent's row).
    row_prior : (n_nonterminals,) float
        |base rules of A| alpha, each row's prior total.
    base : (R,) bool
        cache_of < 0.
    """

    adapted_of: np.ndarray
    adapted_symbol: np.ndarray
    cache_of: np.ndarray
    row_prior: np.ndarray
    base: np.ndarray

    def cache_family(self, compiled: CompiledGrammar, x: int) -> tuple[int, int]:
        """(first global rule, number of yields) of adapted X's cache family."""
        kernel = compiled.kernel
        family = int(np.flatnonzero(kernel.span_parent == self.adapted_symbol[x])[0])
        return int(kernel.span_base[family]), int(kernel.span_count[family])


def augmented_grammar(spec: AdaptorGrammarSpec) -> Grammar:
    """The CFG with one ``X -> <any>`` cache family per adapted X (after X's base rules)."""
    grammar = spec.grammar
    rules = []
    for name in grammar.nonterminals:
        rules.extend(rule for rule in grammar.rules if rule.lhs == name)
        if name in spec.adapted:
            rules.append(Rule(name, (AnySubstring(None),)))
    return Grammar(rules, start=grammar.start, path=grammar.path)


def compile_adaptor(spec: AdaptorGrammarSpec, alpha: float, utterances) -> tuple[CompiledGrammar, RuleLayout]:
    """The augmented grammar compiled over `utterances` and its rule layout."""
    compiled = compile_grammar(augmented_grammar(spec), utterances, layout="sparse")
    kernel = compiled.kernel
    names = {name: i for i, name in enumerate(compiled.nonterminals)}
    adapted_names = tuple(spec.adapted)
    adapted_of = np.full(compiled.n_nonterminals, -1, dtype=np.int32)
    adapted_symbol = np.empty(len(adapted_names), dtype=np.int64)
    cache_of = np.full(compiled.n_rules, -1, dtype=np.int32)
    for x, name in enumerate(adapted_names):
        symbol = names[name]
        adapted_of[symbol] = x
        adapted_symbol[x] = symbol
        family = int(np.flatnonzero(kernel.span_parent == symbol)[0])
        first = kernel.span_base[family]
        cache_of[first:first + kernel.span_count[family]] = x
    base = cache_of < 0
    widths = np.bincount(compiled.rule_parent[base], minlength=compiled.n_nonterminals)
    return compiled, RuleLayout(adapted_of, adapted_symbol, cache_of, (widths * alpha).astype(float), base)


def base_chart_grammar(spec: AdaptorGrammarSpec, compiled: CompiledGrammar, sentences, name):
    """The augmented grammar's rules below a new start ``name%base`` that rewrites by adapted `name`'s base
    rules only.

    Compiled over the same `sentences` and vocabulary as `compiled`, so that its span families index the
    same substrings in the same order.  Returns (inner, to_global, start symbol): ``to_global`` (inner
    rules,) int64 maps every inner rule to its rule in `compiled` (a ``name%base`` rule to ``name``'s).
    """
    top = f"{name}%base"
    augmented = augmented_grammar(spec)
    rules = [Rule(top, r.rhs) for r in augmented.rules if r.lhs == name and r.kind != SPAN]
    # only what X's base rules reach: every other rule, above all every span family, would add a cell per
    # substring of every yield (on Brent the colloc-syllable grammar's charts took 3 times the memory)
    reached, stack = {top}, [top]
    while stack:
        lhs = stack.pop()
        for rule in rules if lhs == top else (r for r in augmented.rules if r.lhs == lhs):
            for child in rule.rhs:
                if isinstance(child, str) and child not in reached:
                    reached.add(child)
                    stack.append(child)
    rules += [r for r in augmented.rules if r.lhs in reached]
    inner = compile_grammar(Grammar(rules, start=top), sentences, vocabulary=compiled.vocabulary, layout="sparse")
    old_ids = {}
    for rule in np.flatnonzero(compiled.rule_kind != SPAN):
        source = compiled.grammar.rules[compiled.rule_source[rule]]
        old_ids[(source.lhs, source.rhs)] = rule
    to_global = np.zeros(inner.n_rules, dtype=np.int64)
    for rule in np.flatnonzero(inner.rule_kind != SPAN):
        source = inner.grammar.rules[inner.rule_source[rule]]
        to_global[rule] = old_ids[(name if source.lhs == top else source.lhs, source.rhs)]
    for family, parent in enumerate(inner.kernel.span_parent):   # same substrings, same order
        old_family = int(np.flatnonzero(compiled.kernel.span_parent ==
                                        compiled.nonterminals.index(inner.nonterminals[parent]))[0])
        first, count = inner.kernel.span_base[family], inner.kernel.span_count[family]
        old_first = compiled.kernel.span_base[old_family]
        to_global[first:first + count] = np.arange(old_first, old_first + count)
    return inner, to_global, inner.nonterminals.index(top)


def utterance_types(utterances) -> tuple[np.ndarray, np.ndarray]:
    """(the index of each distinct utterance's first copy, its number of copies), in order of first
    appearance: identical utterances have identical expectations and parses."""
    first, copies = {}, {}
    for i, utterance in enumerate(utterances):
        key = tuple(utterance)
        first.setdefault(key, i)
        copies[key] = copies.get(key, 0) + 1
    return np.fromiter(first.values(), np.int64, len(first)), np.fromiter(copies.values(), float, len(copies))


class Training(NamedTuple):
    """What a learner is given: the grammar compiled over the utterances, and the model's settings.

    ``discount`` and ``concentration`` (M,) are the model's own arrays: a learner that learns them
    (``estimate``) writes them in place; ``learn_discount`` (M,) bool says whose a may move (a = 0 at the
    start stays a Dirichlet process); ``resample_tables`` the sampler's table-label move.
    """

    spec: AdaptorGrammarSpec
    compiled: CompiledGrammar
    layout: RuleLayout
    batch: SentenceBatch
    utterances: list
    alpha: float
    truncation: int
    init: str
    unit: str
    predictive: str
    anneal: tuple | None
    resample_tables: bool
    estimate: bool
    discount: np.ndarray
    concentration: np.ndarray
    learn_discount: np.ndarray

"""Brute-force references for PCFG-LA: every annotation of a tree, every tree of a sentence."""
import itertools

import numpy as np

from cvbayes.data.trees import Tree
from cvbayes.trees.grammar import BINARY, LEXICAL, UNARY
from cvbayes.trees.latent import AnnotatedTables, zero_annotated_tables


def random_tree(rng, n_words, depth=0):
    """A random Penn tree over n_words words: flat, unary and branching phrases mixed."""
    if n_words == 1 and (depth > 0 and rng.random() < 0.6):
        return Tree(str(rng.choice(["D", "N", "V"])), [str(rng.choice(["a", "b", "c"]))])
    if n_words == 1:
        return Tree(str(rng.choice(["NP", "VP"])), [random_tree(rng, 1, depth + 1)])
    n_children = int(rng.integers(2, min(n_words, 3) + 1))
    cuts = np.sort(rng.choice(np.arange(1, n_words), size=n_children - 1, replace=False))
    sizes = np.diff(np.concatenate([[0], cuts, [n_words]]))
    label = str(rng.choice(["S", "NP", "VP"]))
    return Tree(label, [random_tree(rng, int(size), depth + 1) for size in sizes])


def annotated_nodes(tree):
    """Pre-order list of [node, child indices] of a binarised tree (iterative: binarised trees are deep)."""
    nodes = []
    stack = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if parent is not None:
            nodes[parent][1].append(len(nodes))
        nodes.append([node, []])
        if not isinstance(node.children[0], str):
            stack.extend((child, len(nodes) - 1) for child in reversed(node.children))
    return nodes


def _rule_index(grammar):
    return {kind: {tuple(map(int, row)): r for r, row in enumerate(rules)}
            for kind, rules in ((BINARY, grammar.binary_rules), (UNARY, grammar.unary_rules),
                                (LEXICAL, grammar.lexical_rules))}


def annotations(tree, grammar, weights):
    """Every annotation of a binarised tree (root subtype 0) as (weight, [(table name, cell), ...])."""
    n_sub = weights.n_subtypes
    symbol, word = grammar.symbol_index, grammar.word_index
    index = _rule_index(grammar)
    nodes = annotated_nodes(tree)
    for rest in itertools.product(range(n_sub), repeat=len(nodes) - 1):
        subtypes = (0,) + rest
        weight = 1.0
        hits = []
        for position, (node, children) in enumerate(nodes):
            a = subtypes[position]
            if not children:
                cell = (index[LEXICAL][symbol[node.label], word[node.children[0]]], a)
                hits.append(("lexical", cell))
                weight *= weights.lexical[cell]
            elif len(children) == 1:
                cell = (index[UNARY][symbol[node.label], symbol[node.children[0].label]], a, subtypes[children[0]])
                hits.append(("unary", cell))
                weight *= weights.unary[cell]
            else:
                rule = index[BINARY][tuple(symbol[child.label] for child in (node, *node.children))]
                cell = (rule, a, subtypes[children[0]], subtypes[children[1]])
                hits.append(("binary", cell))
                weight *= weights.binary[cell]
        yield weight, hits


def enumerate_annotations(tree, grammar, weights):
    """log Z and expected counts of one tree by summing over every annotation (root subtype 0)."""
    counts = zero_annotated_tables(grammar, weights.n_subtypes)
    total = 0.0
    for weight, hits in annotations(tree, grammar, weights):
        total += weight
        for name, cell in hits:
            getattr(counts, name)[cell] += weight
    if total == 0.0:
        return -np.inf, counts
    return np.log(total), AnnotatedTables(*(table / total for table in counts))


def best_annotation(tree, grammar, weights):
    """The largest weight of one annotation of the tree (root subtype 0)."""
    return max(weight for weight, _ in annotations(tree, grammar, weights))


def parser_derivations(grammar, words):
    """Every derivation in the latent parser's space (`cvbayes.trees.latent_parse`) of a sentence.

    Bottom items rewrite by a lexical or a binary rule over two top items; a top item is its bottom item
    or one unary rule over a bottom item (ROOT excepted); ROOT over the sentence is its bottom item or a
    unary rule over a top item.  Yields (binarised Tree topped by ROOT, anchored rules), the rules as
    (kind, rule, i, j, k) with j = -1 for unary rules (the parser's rows).
    """
    symbols = grammar.symbols
    index = _rule_index(grammar)
    word_ids = [grammar.word_index[w] for w in words]
    n = len(words)

    def bottom(a, i, k):
        if k == i + 1:
            rule = index[LEXICAL].get((a, word_ids[i]))
            if rule is not None:
                yield Tree(symbols[a], [words[i]]), [(LEXICAL, rule, i, i, k)]
            return
        for rule, (parent, left, right) in enumerate(grammar.binary_rules):
            if parent != a:
                continue
            for j in range(i + 1, k):
                for left_tree, left_rules in list(top(int(left), i, j)):
                    for right_tree, right_rules in list(top(int(right), j, k)):
                        yield (Tree(symbols[a], [left_tree, right_tree]),
                               [(BINARY, rule, i, j, k)] + left_rules + right_rules)

    def top(a, i, k):
        if a == 0:
            return
        yield from bottom(a, i, k)
        for rule, (parent, child) in enumerate(grammar.unary_rules):
            if parent == a:
                for tree, rules in bottom(int(child), i, k):
                    yield Tree(symbols[a], [tree]), [(UNARY, rule, i, -1, k)] + rules

    yield from bottom(0, 0, n)
    for rule, (parent, child) in enumerate(grammar.unary_rules):
        if parent == 0:
            for tree, rules in top(int(child), 0, n):
                yield Tree(symbols[0], [tree]), [(UNARY, rule, 0, -1, n)] + rules

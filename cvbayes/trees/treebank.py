"""Treebank preprocessing for PCFG-LA training, as in Petrov et al. (2006).

Thesis §4.5.3 trains PCFGs with latent annotations on trees prepared as
Petrov et al. (2006) prepare the WSJ: right-binarised, with rare words
replaced by word classes. This module does that and extracts the treebank
grammar in arrays the numba kernels index.

Trees
-----
Trees are ``cvbayes.data.trees.Tree`` values. A preterminal has exactly one
child, its word; every other node has tree children only. Labels are used
as they are: strip the PTB's function tags (``NP-SBJ``) and empty elements
(``-NONE-``) before, if the treebank has them (the converted UD trees of
``cvbayes.data.ud_to_penn`` have none).

Binarisation and its labels
---------------------------
`binarise` puts ``ROOT`` above the tree (unless it is there) and
right-binarises every node with more than two children (Klein and Manning
2003, §2; Petrov et al. 2006, §2). X -> Y1 Y2 ... Yn becomes

    X -> Y1 @X...,  @X... -> Y2 @X...,  ...,  @X... -> Y(n-1) Yn

The labels it introduces are:

* ``@X`` followed by ``<Y>`` for each of the last `horizontal` siblings
  already generated (horizontal markovisation of order h), e.g. with h = 1
  ``(NP DT JJ NN NN)`` gives ``NP -> DT @NP<DT>``, ``@NP<DT> -> JJ @NP<JJ>``,
  ``@NP<JJ> -> NN NN``; h = 0 gives the bare ``@NP`` (Petrov et al.'s
  X-bar start grammar) and h = None the full history ``@NP<DT><JJ>``, which
  loses nothing.
* ``X^P`` for a phrasal node X whose parent is P when ``vertical = 2``
  (parent annotation; ``X^P^G`` with the grandparent G when ``vertical = 3``,
  and so on). Preterminals and ROOT are never annotated; intermediate nodes
  carry their phrase's annotation (``@NP^S<DT>``). Sibling labels in a
  history are the bare labels.

`debinarise` splices out every ``@`` node and strips every ``^``
annotation, so ``debinarise(binarise(t))`` is ``t`` (under ROOT) for all h
and v. Original labels must therefore not start with ``@`` or contain ``^``.

Rare words
----------
Words seen fewer than `min_count` times in training are replaced by a
signature (`word_signature`): ``UNK`` followed by features for
capitalisation, digits, hyphens and a common English suffix, e.g.
``UNK-INITCAP-ing``. The idea is the Berkeley parser's; the feature set is
our own.

Grammar arrays
--------------
`extract_grammar` numbers symbols (ROOT is 0) and words, and returns the
rules sorted by parent with their counts: binary ``(parent, left, right)``,
unary ``(parent, child)`` and lexical ``(parent, word)``. `tree_nodes` lists
each tree's rule occurrences (its nodes) in post-order with their kind,
rule index, children and span.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cvbayes.data.trees import Tree, unbinarize

from .grammar import BINARY, LEXICAL, UNARY

__all__ = [
    "ROOT",
    "UNKNOWN",
    "PreparedTreebank",
    "TreeNodes",
    "TreebankGrammar",
    "add_root",
    "binarise",
    "debinarise",
    "encode_words",
    "extract_grammar",
    "known_words",
    "prepare_treebank",
    "replace_rare_words",
    "tree_nodes",
    "word_signature",
]

ROOT = "ROOT"
UNKNOWN = "UNK"

_INTERMEDIATE = "@"
_PARENT = "^"

# Checked longest first; "s" only as a plural-like ending (see word_signature).
_SUFFIXES = tuple(
    sorted(
        ("ing", "ed", "ion", "er", "est", "ly", "ity", "ness", "ment", "able", "ive", "ous",
         "ful", "ic", "al", "y", "s"),
        key=len,
        reverse=True,
    )
)
# Characters a number may contain besides digits: 1,000.5, 3/4, 10:30, +44, 5%.
_NUMBER_MARKS = frozenset(".,:/-+%")


def _check_label(label: str) -> None:
    if label.startswith(_INTERMEDIATE) or _PARENT in label:
        raise ValueError(
            f"label {label!r}: labels may not start with {_INTERMEDIATE!r} or contain {_PARENT!r}, "
            "which binarisation reserves"
        )


def add_root(tree: Tree, root: str = ROOT) -> Tree:
    """Put `root` above `tree`; an unlabelled top node (PTB's ``( (S ...) )``) is relabelled instead."""
    if tree.label == root:
        return tree
    if tree.label == "":
        return Tree(root, list(tree.children))
    return Tree(root, [tree])


def binarise(tree: Tree, *, horizontal: int | None = 0, vertical: int = 1) -> Tree:
    """Right-binarise a tree with optional markovisation (Klein and Manning 2003; Petrov et al. 2006).

    Parameters
    ----------
    tree : Tree
        With or without ROOT on top (`add_root` is applied).
    horizontal : int or None, default 0
        Siblings remembered by intermediate labels; None keeps them all.
    vertical : int, default 1
        1 + the number of ancestor labels added to phrasal labels
        (1: none, 2: parent annotation).

    Returns
    -------
    Tree
        Every node has at most two children; labels as in the module docstring.
    """
    if horizontal is not None and horizontal < 0:
        raise ValueError(f"horizontal must be >= 0 or None, got {horizontal}")
    if vertical < 1:
        raise ValueError(f"vertical must be >= 1, got {vertical}")
    return _binarise(add_root(tree), (), horizontal, vertical)


def _binarise(tree: Tree, ancestors: tuple[str, ...], horizontal: int | None, vertical: int) -> Tree:
    _check_label(tree.label)
    if tree.is_preterminal:
        return tree
    if any(isinstance(child, str) for child in tree.children):
        raise ValueError(f"node {tree.label!r} mixes words and phrases; only preterminals hold words")
    label = tree.label
    context = ancestors[max(0, len(ancestors) - (vertical - 1)):] if vertical > 1 else ()
    if context:
        label = label + "".join(_PARENT + above for above in reversed(context))
    below = ancestors + (tree.label,)
    children = [_binarise(child, below, horizontal, vertical) for child in tree.children]
    if len(children) <= 2:
        return Tree(label, children)
    # Build the right-branching chain from its bottom, the last two children.
    bare = [child.label for child in tree.children]

    def intermediate(generated: int) -> str:
        history = bare[:generated]
        if horizontal is not None:
            history = history[max(0, len(history) - horizontal):] if horizontal else []
        return _INTERMEDIATE + label + "".join(f"<{sibling}>" for sibling in history)

    node = Tree(intermediate(len(children) - 2), children[-2:])
    for generated in range(len(children) - 3, 0, -1):
        node = Tree(intermediate(generated), [children[generated], node])
    return Tree(label, [children[0], node])


def debinarise(tree: Tree) -> Tree:
    """Undo `binarise`: splice out ``@`` nodes (`cvbayes.data.trees.unbinarize`) and strip ``^`` annotations.

    ROOT stays on top.
    """
    return _strip_annotations(unbinarize(tree))


def _strip_annotations(tree: Tree) -> Tree:
    if tree.is_preterminal:
        return tree
    return Tree(tree.label.split(_PARENT, 1)[0], [_strip_annotations(child) for child in tree.children])


def word_signature(word: str, sentence_initial: bool = False) -> str:
    """The word class of a rare or unknown word (after the Berkeley parser's signatures).

    ``UNK`` followed by, in this order and only when they apply:

    * capitalisation: ``-ALLCAPS`` (two or more letters, all upper case),
      ``-FIRSTCAP`` (initial capital on the sentence's first word, where it
      says less), ``-INITCAP`` (initial capital elsewhere), ``-MIXEDCAP``
      (a capital after the first character, e.g. iPhone);
    * ``-NUM`` if the word is digits with number punctuation only (1,000.5,
      3/4, 10:30), otherwise ``-DIGIT`` if it contains a digit;
    * ``-SYMBOL`` if it has neither letters nor digits;
    * ``-HYPHEN`` if it contains a hyphen;
    * ``-<suffix>``: the longest of ing, ment, ness, able, ion, ity, ive,
      ous, ful, est, ed, er, ly, ic, al, y, s that ends the lower-cased word
      and leaves at least two characters before it; ``s`` not after s, u or
      i (class, virus, this are not plurals). Only for words with a
      lower-case letter.

    Parameters
    ----------
    word : str
    sentence_initial : bool, default False
        Whether the word opens its sentence.

    Returns
    -------
    str
        E.g. ``UNK-INITCAP-ing`` for "Walking" inside a sentence, ``UNK-NUM``
        for "1,200", ``UNK-HYPHEN-ed`` for "well-deserved".
    """
    features = [UNKNOWN]
    letters = [ch for ch in word if ch.isalpha()]
    has_digit = any(ch.isdigit() for ch in word)
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        features.append("ALLCAPS")
    elif word[:1].isupper():
        features.append("FIRSTCAP" if sentence_initial else "INITCAP")
    elif any(ch.isupper() for ch in word[1:]):
        features.append("MIXEDCAP")
    if has_digit:
        is_number = all(ch.isdigit() or ch in _NUMBER_MARKS for ch in word)
        features.append("NUM" if is_number else "DIGIT")
    elif not letters:
        features.append("SYMBOL")
    if "-" in word and letters:
        features.append("HYPHEN")
    if any(ch.islower() for ch in word):
        lower = word.lower()
        for suffix in _SUFFIXES:
            if lower.endswith(suffix) and len(lower) - len(suffix) >= 2:
                if suffix == "s" and lower[-2] in "sui":
                    continue
                features.append(suffix)
                break
    return "-".join(features)


def known_words(trees: Iterable[Tree], min_count: int = 2) -> frozenset[str]:
    """The words seen at least `min_count` times in `trees` (case-sensitive)."""
    counts = Counter(word for tree in trees for word in tree.leaves())
    return frozenset(word for word, count in counts.items() if count >= min_count)


def replace_rare_words(tree: Tree, known: frozenset[str] | set[str]) -> Tree:
    """Replace every word not in `known` by its `word_signature`."""
    position = 0

    def rebuild(node: Tree) -> Tree:
        nonlocal position
        if node.is_preterminal:
            word = node.children[0]
            if word not in known:
                word = word_signature(word, sentence_initial=position == 0)
            position += 1
            return Tree(node.label, [word])
        return Tree(node.label, [rebuild(child) for child in node.children])

    return rebuild(tree)


@dataclass(frozen=True, eq=False)
class TreebankGrammar:
    """The rules of a binarised treebank with their counts, grouped by parent.

    Attributes
    ----------
    symbols : tuple of str
        Symbol names by id; ``symbols[0]`` is ROOT. Phrasal, intermediate
        (``@``) and preterminal symbols share one numbering.
    words : tuple of str
        Word names by id (known words and signatures).
    binary_rules : ndarray, shape (n_binary, 3), int32
        ``(parent, left, right)`` symbol ids, sorted; rule r is A -> B C.
    unary_rules : ndarray, shape (n_unary, 2), int32
        ``(parent, child)`` symbol ids, sorted.
    lexical_rules : ndarray, shape (n_lexical, 2), int32
        ``(parent, word)`` ids, sorted.
    binary_counts, unary_counts, lexical_counts : ndarray of int64
        Occurrences of each rule in the training trees.
    """

    symbols: tuple[str, ...]
    words: tuple[str, ...]
    binary_rules: np.ndarray
    unary_rules: np.ndarray
    lexical_rules: np.ndarray
    binary_counts: np.ndarray
    unary_counts: np.ndarray
    lexical_counts: np.ndarray

    @property
    def n_symbols(self) -> int:
        return len(self.symbols)

    @property
    def n_words(self) -> int:
        return len(self.words)

    @cached_property
    def symbol_index(self) -> dict[str, int]:
        return {symbol: i for i, symbol in enumerate(self.symbols)}

    @cached_property
    def word_index(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.words)}

    def parent_offsets(self, kind: int) -> np.ndarray:
        """Rules of kind `kind` with parent A are ``offsets[A]:offsets[A + 1]``; shape (n_symbols + 1,)."""
        rules = {BINARY: self.binary_rules, UNARY: self.unary_rules, LEXICAL: self.lexical_rules}[kind]
        return np.searchsorted(rules[:, 0], np.arange(self.n_symbols + 1)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class TreeNodes:
    """Rule occurrences of binarised trees, one row per node, flat over the treebank.

    The nodes of tree t are ``tree_offsets[t]:tree_offsets[t + 1]``, in
    post-order (children before parents), so its root is the last one.

    Attributes
    ----------
    tree_offsets : ndarray, shape (n_trees + 1,), int64
    kind : ndarray, shape (n_nodes,), int8
        `LEXICAL` (a preterminal, A -> w), `UNARY` (A -> B) or `BINARY` (A -> B C).
    rule : ndarray, shape (n_nodes,), int32
        Index into the grammar's rule array of that kind.
    left, right : ndarray, shape (n_nodes,), int32
        Global node index of the first and second child; -1 where absent.
    start, end : ndarray, shape (n_nodes,), int32
        The node's span: words ``start .. end - 1`` of its sentence.
    """

    tree_offsets: np.ndarray
    kind: np.ndarray
    rule: np.ndarray
    left: np.ndarray
    right: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @property
    def n_trees(self) -> int:
        return len(self.tree_offsets) - 1

    @property
    def n_nodes(self) -> int:
        return len(self.kind)


def _occurrences(tree: Tree) -> list[tuple[int, tuple[str, ...], int, int, int, int]]:
    """The rule occurrences of a binarised tree in post-order.

    Each is ``(kind, key, start, end, left, right)``: the rule's names
    (parent first; for a lexical rule parent and word), the span, and the
    local indices of the children (-1 where absent). Iterative, as
    binarised trees are deep.
    """
    rows: list[tuple[int, tuple[str, ...], int, int, int, int]] = []
    position = 0
    # [node, start, indices of the children done so far]
    frames: list[list] = [[tree, 0, []]]
    while frames:
        node, start, done = frames[-1]
        children = node.children
        if node.is_preterminal:
            rows.append((LEXICAL, (node.label, children[0]), position, position + 1, -1, -1))
            position += 1
        elif len(done) < len(children) or not children:
            if not done:
                if not 1 <= len(children) <= 2:
                    raise ValueError(f"node {node.label!r} has {len(children)} children; binarise first")
                if any(isinstance(child, str) for child in children):
                    raise ValueError(f"node {node.label!r} mixes words and phrases; only preterminals hold words")
            frames.append([children[len(done)], position, []])
            continue
        elif len(children) == 1:
            rows.append((UNARY, (node.label, children[0].label), start, position, done[0], -1))
        else:
            key = (node.label, children[0].label, children[1].label)
            rows.append((BINARY, key, start, position, done[0], done[1]))
        frames.pop()
        if frames:
            frames[-1][2].append(len(rows) - 1)
    return rows


def _tree_occurrences(trees: Sequence[Tree], root: str) -> list[list]:
    """`_occurrences` of every tree, checking it is topped by `root`; errors name the tree."""
    out = []
    for index, tree in enumerate(trees):
        if tree.label != root:
            raise ValueError(f"tree {index}: the top label is {tree.label!r}, not {root!r}; binarise first")
        try:
            out.append(_occurrences(tree))
        except ValueError as error:
            raise ValueError(f"tree {index}: {error}") from None
    return out


def _grammar_of(occurrences: list[list]) -> TreebankGrammar:
    counts: dict[int, Counter] = {BINARY: Counter(), UNARY: Counter(), LEXICAL: Counter()}
    for rows in occurrences:
        for kind, key, _, _, _, _ in rows:
            counts[kind][key] += 1
    symbol_names = {key[0] for table in counts.values() for key in table}
    symbol_names |= {name for kind in (UNARY, BINARY) for key in counts[kind] for name in key[1:]}
    symbol_names.discard(ROOT)
    symbols = (ROOT,) + tuple(sorted(symbol_names))
    words = tuple(sorted({key[1] for key in counts[LEXICAL]}))
    symbol_id = {symbol: i for i, symbol in enumerate(symbols)}
    word_id = {word: i for i, word in enumerate(words)}

    def table(kind: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        rows = []
        for key, count in counts[kind].items():
            ids = [symbol_id[key[0]]]
            ids += [word_id[key[1]]] if kind == LEXICAL else [symbol_id[name] for name in key[1:]]
            rows.append((*ids, count))
        rows.sort()
        array = np.array(rows, dtype=np.int64).reshape(-1, width + 1)
        return array[:, :width].astype(np.int32), array[:, width].copy()

    lexical, lexical_counts = table(LEXICAL, 2)
    unary, unary_counts = table(UNARY, 2)
    binary, binary_counts = table(BINARY, 3)
    return TreebankGrammar(
        symbols, words, binary, unary, lexical, binary_counts, unary_counts, lexical_counts
    )


def _nodes_of(occurrences: list[list], grammar: TreebankGrammar) -> TreeNodes:
    symbol_id, word_id = grammar.symbol_index, grammar.word_index
    rule_index = {
        kind: {tuple(int(i) for i in row): r for r, row in enumerate(rules)}
        for kind, rules in (
            (LEXICAL, grammar.lexical_rules),
            (UNARY, grammar.unary_rules),
            (BINARY, grammar.binary_rules),
        )
    }
    n_nodes = sum(len(rows) for rows in occurrences)
    offsets = np.zeros(len(occurrences) + 1, dtype=np.int64)
    np.cumsum([len(rows) for rows in occurrences], out=offsets[1:])
    kinds = np.empty(n_nodes, dtype=np.int8)
    rules = np.empty(n_nodes, dtype=np.int32)
    lefts = np.empty(n_nodes, dtype=np.int32)
    rights = np.empty(n_nodes, dtype=np.int32)
    starts = np.empty(n_nodes, dtype=np.int32)
    ends = np.empty(n_nodes, dtype=np.int32)
    n = 0
    for index, rows in enumerate(occurrences):
        base = int(offsets[index])
        for kind, key, start, end, left, right in rows:
            try:
                if kind == LEXICAL:
                    ids = (symbol_id[key[0]], word_id[key[1]])
                else:
                    ids = tuple(symbol_id[name] for name in key)
                rules[n] = rule_index[kind][ids]
            except KeyError:
                raise ValueError(
                    f"tree {index}: rule {key[0]} -> {' '.join(key[1:])} is not in the grammar"
                ) from None
            kinds[n] = kind
            lefts[n] = base + left if left >= 0 else -1
            rights[n] = base + right if right >= 0 else -1
            starts[n] = start
            ends[n] = end
            n += 1
    return TreeNodes(offsets, kinds, rules, lefts, rights, starts, ends)


def extract_grammar(trees: Sequence[Tree]) -> TreebankGrammar:
    """Count the rules of binarised trees, each topped by ROOT (Petrov et al. 2006's treebank grammar).

    Raises
    ------
    ValueError
        If there are no trees, or a tree is not binarised or not topped by
        ROOT (naming the tree).
    """
    if not trees:
        raise ValueError("no trees")
    return _grammar_of(_tree_occurrences(trees, ROOT))


def tree_nodes(trees: Sequence[Tree], grammar: TreebankGrammar) -> TreeNodes:
    """List every tree's rule occurrences (nodes) as `TreeNodes`.

    Raises
    ------
    ValueError
        If a tree is not binarised, not topped by ROOT, or uses a rule the
        grammar lacks (naming the tree and the rule).
    """
    return _nodes_of(_tree_occurrences(trees, grammar.symbols[0]), grammar)


def encode_words(words: Sequence[str], grammar: TreebankGrammar, *, as_unknown: bool = False) -> np.ndarray:
    """Word ids of a sentence for parsing: the word, else its signature, else ``UNK``, else -1.

    Known training words are in ``grammar.words`` as themselves; rare ones
    only through their signatures, so a word the grammar lacks is looked up
    by its `word_signature` (position 0 is sentence-initial), then by the
    bare ``UNK`` class; -1 if the grammar has neither. ``as_unknown`` looks
    every word up as if it had not been seen in training (a parser's fallback
    when the known words' own tags admit no tree).
    """
    index = grammar.word_index
    fallback = index.get(UNKNOWN, -1)
    ids = np.empty(len(words), dtype=np.int32)
    for position, word in enumerate(words):
        found = None if as_unknown else index.get(word)
        if found is None:
            found = index.get(word_signature(word, sentence_initial=position == 0), fallback)
        ids[position] = found
    return ids


@dataclass(frozen=True, eq=False)
class PreparedTreebank:
    """Training trees after `prepare_treebank`, with their grammar and rule occurrences.

    Attributes
    ----------
    trees : list of Tree
        Binarised, ROOT-topped, rare words replaced by signatures.
    grammar : TreebankGrammar
    nodes : TreeNodes
        Rule occurrences of `trees`, in order.
    known : frozenset of str
        The words kept as themselves.
    horizontal, vertical, min_count
        The settings of `prepare_treebank` that made them.
    """

    trees: list[Tree]
    grammar: TreebankGrammar
    nodes: TreeNodes
    known: frozenset[str]
    horizontal: int | None = 0
    vertical: int = 1
    min_count: int = 2


def prepare_treebank(
    trees: Sequence[Tree],
    *,
    horizontal: int | None = 0,
    vertical: int = 1,
    min_count: int = 2,
) -> PreparedTreebank:
    """Petrov et al. (2006)'s preprocessing: rare words to signatures, binarise, extract the grammar.

    Parameters
    ----------
    trees : sequence of Tree
        Training trees (Penn trees, with or without ROOT).
    horizontal, vertical : int
        Markovisation orders, as in `binarise`.
    min_count : int, default 2
        Words seen fewer times become signatures (2: the singletons).

    Returns
    -------
    PreparedTreebank
    """
    known = known_words(trees, min_count)
    binarised = [
        binarise(replace_rare_words(tree, known), horizontal=horizontal, vertical=vertical)
        for tree in trees
    ]
    if not binarised:
        raise ValueError("no trees")
    occurrences = _tree_occurrences(binarised, ROOT)
    grammar = _grammar_of(occurrences)
    return PreparedTreebank(binarised, grammar, _nodes_of(occurrences, grammar), known, horizontal, vertical,
                            min_count)

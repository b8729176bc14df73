"""Penn-bracket trees: a small `Tree` type, a reader and a writer, and kernel conversions.

Format
------
``(S (NP (DT the) (NN dog)) (VP (VBZ barks)))``: a node is ``(`` label
children ``)``, a child is a node or a word.  Trees may share a line or span
several; the Penn Treebank's unlabelled outer wrapper ``( (S ...) )`` is
removed by default.  A node whose children are all words is *lexical*: a
preterminal ``(DT the)``, or a span-lexical node ``(V l e b)`` whose label
rewrites to the whole substring (thesis §4.5.1).  Words cannot contain
whitespace or parentheses (the PTB writes ``-LRB-`` and ``-RRB-``).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..files import atomic_write
from .errors import CorpusFormatError, read_text_file

__all__ = [
    "Tree",
    "format_tree",
    "parse_trees",
    "read_trees",
    "tree_rule_ids",
    "unbinarize",
    "write_trees",
]

INTERNAL_PREFIX = "@"
TERMINAL_PREFIX = '@"'


class Tree:
    """A node of a parse tree: a label and children, each a `Tree` or a word (str).

    Parameters
    ----------
    label : str
    children : sequence of Tree or str
        Stored as a tuple; trees are immutable values compared by structure.

    Examples
    --------
    >>> t = Tree("S", [Tree("NP", [Tree("DT", ["the"]), Tree("NN", ["dog"])]), Tree("VP", ["barks"])])
    >>> t.leaves()
    ['the', 'dog', 'barks']
    >>> str(t)
    '(S (NP (DT the) (NN dog)) (VP barks))'
    """

    __slots__ = ("label", "children")

    def __init__(self, label: str, children: Sequence[Tree | str] = ()):
        if not isinstance(label, str):
            raise TypeError(f"a tree label must be a str, got {type(label).__name__}")
        children = tuple(children)
        for child in children:
            if not isinstance(child, Tree | str):
                raise TypeError(f"tree children must be Tree or str, got {type(child).__name__}")
        self.label = label
        self.children = children

    @property
    def is_lexical(self) -> bool:
        """Whether every child is a word (a preterminal or a span-lexical node)."""
        return bool(self.children) and all(isinstance(child, str) for child in self.children)

    @property
    def is_preterminal(self) -> bool:
        """Whether the node has exactly one child and it is a word."""
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def leaves(self) -> list[str]:
        """The words under the node, left to right."""
        out: list[str] = []
        pending: list[Tree | str] = [self]
        while pending:
            node = pending.pop()
            if isinstance(node, str):
                out.append(node)
            else:
                pending.extend(reversed(node.children))
        return out

    def subtrees(self) -> Iterator[Tree]:
        """Every node, in preorder."""
        pending: list[Tree] = [self]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(child for child in reversed(node.children) if isinstance(child, Tree))

    def spans(self) -> list[tuple[str, int, int, Tree]]:
        """(label, start, end, node) of every node in preorder; the node covers words start..end-1."""
        out: list[tuple[str, int, int, Tree]] = []

        def visit(node: Tree, start: int) -> int:
            position = len(out)
            out.append((node.label, start, start, node))
            end = start
            for child in node.children:
                end = end + 1 if isinstance(child, str) else visit(child, end)
            out[position] = (node.label, start, end, node)
            return end

        visit(self, 0)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return self.label == other.label and self.children == other.children

    def __hash__(self) -> int:
        return hash((self.label, self.children))

    def __repr__(self) -> str:
        return f"Tree({format_tree(self)!r})"

    def __str__(self) -> str:
        return format_tree(self)


# ------------------------------------------------------------------ reading
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def _tokens_with_lines(text: str) -> Iterator[tuple[str, int]]:
    for number, line in enumerate(text.split("\n"), start=1):
        for match in _TOKEN.finditer(line):
            yield match.group(), number


def parse_trees(text: str, path=None, *, strip_wrapper: bool = True) -> list[Tree]:
    """Parse Penn-bracketed trees from a string.

    Parameters
    ----------
    text : str
    path : str, optional
        File name used in error messages.
    strip_wrapper : bool, default True
        Replace an unlabelled root with a single child tree, the PTB's
        ``( (S ...) )``, by that child.

    Raises
    ------
    CorpusFormatError
        On unbalanced parentheses, a word outside any tree, an empty node
        ``()`` or ``(X)``, or a node label that is a bracket; names the file
        and line.
    """
    trees: list[Tree] = []
    # stack of [label, children, line]
    stack: list[list] = []
    tokens = _tokens_with_lines(text)
    for token, line in tokens:
        if token == "(":
            stack.append([None, [], line])
            continue
        if token == ")":
            if not stack:
                raise CorpusFormatError("')' without a matching '('", path, line)
            label, children, opened = stack.pop()
            if label is None:
                label = ""
            if not children:
                raise CorpusFormatError(f"empty node ({label}) opened on line {opened}", path, line)
            node = Tree(label, children)
            if stack:
                stack[-1][1].append(node)
            else:
                if strip_wrapper and node.label == "" and len(node.children) == 1 and isinstance(
                        node.children[0], Tree):
                    node = node.children[0]
                trees.append(node)
            continue
        if not stack:
            raise CorpusFormatError(f"word {token!r} outside any tree", path, line)
        top = stack[-1]
        if top[0] is None and not top[1]:
            top[0] = token
        else:
            top[1].append(token)
    if stack:
        raise CorpusFormatError(f"'(' opened on line {stack[-1][2]} is never closed", path, stack[-1][2])
    return trees


def read_trees(path, *, encoding: str = "utf-8", strip_wrapper: bool = True) -> list[Tree]:
    """Read every Penn-bracketed tree of a file (see `parse_trees`)."""
    trees = parse_trees(read_text_file(path, encoding), path=path, strip_wrapper=strip_wrapper)
    if not trees:
        raise CorpusFormatError("file contains no trees", path)
    return trees


# ------------------------------------------------------------------ writing
def format_tree(tree: Tree, *, wrapper: bool = False) -> str:
    """One-line Penn brackets; ``wrapper=True`` adds the PTB's ``( ... )`` around it."""
    parts: list[str] = []

    def visit(node: Tree) -> None:
        parts.append("(" + node.label)
        for child in node.children:
            parts.append(" ")
            if isinstance(child, str):
                parts.append(child)
            else:
                visit(child)
        parts.append(")")

    visit(tree)
    text = "".join(parts)
    return f"( {text})" if wrapper else text


def write_trees(trees: Iterable[Tree], path, *, wrapper: bool = False) -> None:
    """Write trees one a line (UTF-8, atomically); `read_trees` reads them back equal."""
    with atomic_write(path, "w", encoding="utf-8") as file:
        for tree in trees:
            file.write(format_tree(tree, wrapper=wrapper) + "\n")


# ------------------------------------------------------------------ kernels <-> trees
def unbinarize(tree: Tree) -> Tree:
    """Undo the grammar's internal binarisation: splice out every ``@`` node.

    An intermediate ``@r:k`` node is replaced by its children; a
    terminal symbol ``@"t"`` by its word.  Applied to a binarised derivation
    of an n-ary rule this gives back the user's rule.
    """
    children: list[Tree | str] = []
    pending: list[Tree | str] = list(reversed(tree.children))
    while pending:
        child = pending.pop()
        if isinstance(child, Tree) and child.label.startswith(INTERNAL_PREFIX):
            pending.extend(reversed(child.children))
        elif isinstance(child, Tree):
            children.append(unbinarize(child))
        else:
            children.append(child)
    return Tree(tree.label, children)


def tree_rule_ids(grammar, tree: Tree) -> np.ndarray:
    """Global rule ids of an n-ary tree under a compiled grammar, in preorder (the tree's C^i).

    A lexical node with several words is read as a span rule (``<any>``);
    one with a single word as a lexical rule, or a span rule when its label
    has an ``<any>`` family.

    Raises
    ------
    ValueError
        If a node uses a rule the grammar lacks.
    """
    out = [grammar.rule_id(node.label, node.children) for node in tree.subtrees()
           if not node.label.startswith(INTERNAL_PREFIX)]
    return np.asarray(out, dtype=np.int64)

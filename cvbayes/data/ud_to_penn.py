"""Phrase-structure trees from Universal Dependencies trees (for PCFG-LA on UD English EWT).

**These are converted trees, not the Penn Treebank.** No Penn constituency
treebank is reachable from this project's machines, so thesis §4.5.3's
PCFG-LA experiment runs on trees derived here, deterministically, from the
gold dependency trees of a UD treebank such as English EWT. Bracket scores
on them are not comparable with WSJ scores.

The conversion
--------------
It follows the "flattest projection" of Collins et al. (1999) as described
by Xia and Palmer (2001): every word that has dependents projects exactly
one phrase, holding its own preterminal and the subtrees of all its
dependents in sentence order; a word without dependents is just its
preterminal (it projects no phrase), except the root word, which always
projects. The root word's phrase goes under ``ROOT``. Preterminals are the
XPOS tags (the PTB tags in EWT; ``tag="upos"`` takes UPOS instead) over the
FORM of each word, written as the PTB writes brackets: ``(`` becomes
``-LRB-`` and ``)`` ``-RRB-`` (also inside words, so ``:)`` is ``:-RRB-``),
and a space inside a form becomes ``_``, since Penn brackets cannot hold
either. Punctuation is kept where UD attaches it.

Phrase labels (a head h, its dependents after projectivisation):

1. h is a **predicate** if its UPOS is VERB or AUX or it has a ``cop``
   dependent. Its phrase is

   * ``SBAR`` if it has a ``mark`` dependent that is not a PART (``that``,
     ``because``, ``if``; infinitival *to* is a PART and does not count);
   * else ``S`` if it has a subject (``nsubj``, ``csubj``, ``expl``, any
     subtype) or is the root word;
   * else ``VP``.

2. Otherwise ``PP`` if it has a ``case`` dependent that is an ADP (UD
   attaches prepositions to their nouns; the PTB makes the phrase a PP;
   possessive 's is a PART and keeps NP), else by its UPOS:

   ====================================  ======
   UPOS of h                             label
   ====================================  ======
   NOUN, PROPN, PRON, NUM, DET, SYM      NP
   ADJ                                   ADJP
   ADV                                   ADVP
   ADP                                   PP
   SCONJ                                 SBAR
   CCONJ                                 CONJP
   PART                                  PRT
   INTJ                                  INTJ
   PUNCT, X, any other                   X
   ====================================  ======

Relative clauses and questions get S or SBAR from these rules alone (there
are no WHNP); coordination stays as UD has it (conjuncts inside the first
conjunct's phrase).

Non-projective arcs, multiword tokens, empty nodes
--------------------------------------------------
A phrase must cover a contiguous span, so non-projective arcs are first
**lifted** (as in pseudo-projective parsing, Nivre and Nilsson 2005): while
some arc h -> d spans a word that h does not dominate, the shortest such arc
(ties: the leftmost dependent) has d re-attached to h's head. Each lift
moves d one step towards the root, whose arcs are always projective, so this
ends; the number of lifts per sentence is reported (EWT: 379 of the 12,544
training sentences need lifts, 507 arcs in all; 43 of the 2,001 dev
sentences, 52 arcs). Multiword-token lines
(``3-4 don't``) are ignored and their syntactic words (``do``, ``n't``)
become the leaves, as the PTB tokenises. Empty nodes (``8.1``, enhanced
dependencies only) are ignored.

The conllu package parses the file; malformed input (a bad head, a missing
tag, several roots, a cycle) raises `CorpusFormatError` naming the file and
the line.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import conllu

from .errors import CorpusFormatError
from .readers import _CONLLU_COLUMNS, _RAW_COLUMNS, _conllu_sentences, _read_lines
from .trees import Tree, format_tree

__all__ = [
    "PHRASE_OF_UPOS",
    "ConvertedSentence",
    "convert_conllu",
    "dependencies_to_tree",
    "main",
    "penn_word",
]

# The label `cvbayes.trees.treebank` expects on top of every training tree.
ROOT = "ROOT"

PHRASE_OF_UPOS = {
    "NOUN": "NP",
    "PROPN": "NP",
    "PRON": "NP",
    "NUM": "NP",
    "DET": "NP",
    "SYM": "NP",
    "ADJ": "ADJP",
    "ADV": "ADVP",
    "ADP": "PP",
    "SCONJ": "SBAR",
    "CCONJ": "CONJP",
    "PART": "PRT",
    "INTJ": "INTJ",
    "PUNCT": "X",
    "X": "X",
}
_PREDICATE_UPOS = frozenset({"VERB", "AUX"})
_SUBJECTS = frozenset({"nsubj", "csubj", "expl"})
_PENN_WORD = str.maketrans({"(": "-LRB-", ")": "-RRB-"})


def penn_word(form: str) -> str:
    """A form as a Penn-bracket leaf: brackets as -LRB- / -RRB-, whitespace as ``_``."""
    return "_".join(form.translate(_PENN_WORD).split())


@dataclass(frozen=True)
class ConvertedSentence:
    """One converted sentence.

    Attributes
    ----------
    tree : Tree
        ``(ROOT (...))`` with preterminals over the words.
    sent_id : str or None
        The ``# sent_id`` comment, if any.
    n_lifted : int
        Non-projective arcs lifted (0 for a projective sentence).
    """

    tree: Tree
    sent_id: str | None
    n_lifted: int


def _projectivise(heads: list[int]) -> int:
    """Lift non-projective arcs in place (heads[d - 1] is d's head, 0 the root); return the lifts."""
    n = len(heads)
    lifts = 0
    while True:
        ancestors = []
        for word in range(1, n + 1):
            above = set()
            node = heads[word - 1]
            while node:
                above.add(node)
                node = heads[node - 1]
            ancestors.append(above)
        worst = None
        for dependent in range(1, n + 1):
            head = heads[dependent - 1]
            if head == 0:
                continue
            low, high = min(head, dependent), max(head, dependent)
            if any(head not in ancestors[k - 1] for k in range(low + 1, high)):
                key = (high - low, dependent)
                if worst is None or key < worst:
                    worst = key
        if worst is None:
            return lifts
        dependent = worst[1]
        heads[dependent - 1] = heads[heads[dependent - 1] - 1]
        lifts += 1


def _phrase_label(
    head: int, is_root: bool, dependents: list[int], upos: Sequence[str], deprels: Sequence[str]
) -> str:
    """The label of the phrase `head` projects (rules 1 and 2 of the module docstring)."""
    relations = [deprels[d - 1].split(":", 1)[0] for d in dependents]
    kinds = [upos[d - 1] for d in dependents]
    if upos[head - 1] in _PREDICATE_UPOS or "cop" in relations:
        if any(rel == "mark" and kind != "PART" for rel, kind in zip(relations, kinds)):
            return "SBAR"
        if is_root or _SUBJECTS.intersection(relations):
            return "S"
        return "VP"
    if any(rel == "case" and kind == "ADP" for rel, kind in zip(relations, kinds)):
        return "PP"
    return PHRASE_OF_UPOS.get(upos[head - 1], "X")


def dependencies_to_tree(
    forms: Sequence[str],
    tags: Sequence[str],
    upos: Sequence[str],
    heads: Sequence[int],
    deprels: Sequence[str],
) -> tuple[Tree, int]:
    """Convert one dependency tree to a phrase-structure tree (flattest projection; module docstring).

    Parameters
    ----------
    forms, tags, upos, deprels : sequence of str
        One entry per word: its form (written with `penn_word`), its
        preterminal, its UPOS and its relation to its head.
    heads : sequence of int
        1-based head of each word, 0 for the root word (exactly one).

    Returns
    -------
    tree : Tree
        ``(ROOT (label ...))``.
    n_lifted : int
        Non-projective arcs lifted first.

    Raises
    ------
    ValueError
        If the heads do not form one tree rooted at 0.
    """
    n = len(forms)
    if n == 0:
        raise ValueError("a sentence has no words")
    heads = [int(h) for h in heads]
    if any(not 0 <= h <= n for h in heads):
        raise ValueError(f"a head is outside 0..{n}")
    roots = [d for d in range(1, n + 1) if heads[d - 1] == 0]
    if len(roots) != 1:
        raise ValueError(f"{len(roots)} words have head 0; a tree has exactly one")
    for word in range(1, n + 1):
        node, steps = word, 0
        while node:
            node = heads[node - 1]
            steps += 1
            if steps > n:
                raise ValueError(f"word {word} is on a cycle of heads")
    n_lifted = _projectivise(heads)
    dependents: list[list[int]] = [[] for _ in range(n + 1)]
    for word in range(1, n + 1):
        dependents[heads[word - 1]].append(word)
    # Reversed pre-order visits dependents before their heads: no recursion, whatever the depth.
    order = []
    pending = [roots[0]]
    while pending:
        word = pending.pop()
        order.append(word)
        pending.extend(dependents[word])
    built: dict[int, Tree] = {}
    for word in reversed(order):
        leaf = Tree(tags[word - 1], [penn_word(forms[word - 1])])
        if not dependents[word] and word != roots[0]:
            built[word] = leaf
            continue
        members = sorted(dependents[word] + [word])
        children = [leaf if member == word else built.pop(member) for member in members]
        built[word] = Tree(_phrase_label(word, word == roots[0], dependents[word], upos, deprels), children)
    return Tree(ROOT, [built[roots[0]]]), n_lifted


def convert_conllu(
    path: str | os.PathLike[str],
    *,
    tag: str = "xpos",
    encoding: str = "utf-8",
) -> list[ConvertedSentence]:
    """Read a CoNLL-U file with the conllu package and convert every sentence.

    Parameters
    ----------
    path : str or os.PathLike
    tag : {"xpos", "upos"}, default "xpos"
        The column that gives the preterminals.
    encoding : str, default "utf-8"

    Returns
    -------
    list of ConvertedSentence
        In file order; comment-only blocks are skipped.

    Raises
    ------
    CorpusFormatError
        For malformed CoNLL-U, a word without the chosen tag, a head that is
        not an integer in range, or heads that do not form one tree (naming
        the file and line).
    """
    if tag not in ("xpos", "upos"):
        raise ValueError(f"tag must be 'xpos' or 'upos', got {tag!r}")
    lines = _read_lines(path, encoding)
    sentence_lines = _conllu_sentences(lines, path)
    parsed = conllu.parse_incr(
        io.StringIO("\n".join(lines)), fields=_CONLLU_COLUMNS, field_parsers=_RAW_COLUMNS
    )
    converted = []
    for sentence, numbers in zip(parsed, sentence_lines, strict=True):
        words = [(token, number) for token, number in zip(sentence, numbers, strict=True)
                 if isinstance(token["id"], int)]
        if not words:
            continue
        heads = []
        for position, (token, number) in enumerate(words, start=1):
            if token["id"] != position:
                raise CorpusFormatError(f"word id {token['id']} where {position} was expected", path, number)
            value = token[tag]
            if value is None or value == "_":
                raise CorpusFormatError(f"word {token['form']!r} has no {tag.upper()} tag", path, number)
            head = token["head"]
            if not head.isdigit() or int(head) > len(words):
                raise CorpusFormatError(f"head {head!r} is not a word id of this sentence", path, number)
            heads.append(int(head))
        tokens = [token for token, _ in words]
        try:
            tree, n_lifted = dependencies_to_tree(
                [token["form"] for token in tokens],
                [token[tag] for token in tokens],
                [token["upos"] for token in tokens],
                heads,
                [token["deprel"] for token in tokens],
            )
        except ValueError as error:
            raise CorpusFormatError(f"sentence starting here: {error}", path, words[0][1]) from None
        converted.append(ConvertedSentence(tree, sentence.metadata.get("sent_id"), n_lifted))
    return converted


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cvbayes.data.ud_to_penn FILE.conllu [--upos]``: Penn brackets on stdout, one tree a line."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m cvbayes.data.ud_to_penn",
        description="Convert UD dependency trees to phrase-structure trees in Penn brackets "
        "(converted trees, not the Penn Treebank; see the module's documentation).",
    )
    parser.add_argument("conllu", help="a CoNLL-U file")
    parser.add_argument("--upos", action="store_true", help="preterminals from UPOS instead of XPOS")
    args = parser.parse_args(argv)
    for sentence in convert_conllu(args.conllu, tag="upos" if args.upos else "xpos"):
        print(format_tree(sentence.tree))
    return 0


if __name__ == "__main__":
    sys.exit(main())

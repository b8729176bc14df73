"""Bracket precision, recall and F1 of parse trees, with evalb's conventions.

Scores are corpus-level, as evalb reports them: matched, gold and predicted
brackets are summed over sentences before dividing (Black et al. 1991;
Sekine and Collins' evalb with ``COLLINS.prm``).

Conventions (the defaults follow ``COLLINS.prm``)
-------------------------------------------------
* **Brackets** are (label, start, end) of every node that is not lexical:
  preterminals such as ``(DT the)`` are not counted, nor are span-lexical
  nodes ``(V l e b)`` unless ``count_lexical=True``.
* **Root**: the root bracket (the S under the PTB's empty wrapper, which the
  reader removes) is counted, as in evalb.  ``root=False`` drops the
  bracket over the whole sentence, as unsupervised parsing papers do
  (Klein and Manning 2002).
* **Punctuation and traces** (evalb's ``DELETE_LABEL``): a preterminal
  whose label is in `delete_labels` (``, : `` '' .`` and ``-NONE-``) is
  removed with its word before scoring, spans are recomputed without it, and
  a bracket left empty disappears; a phrase with such a label (``TOP``) is
  not counted, its children are.
* **Labels** lose their functional tags, as in evalb: they are cut at the
  first ``-`` or ``=`` (``NP-SBJ-1`` -> ``NP``) unless they start with
  ``-``; ``PRT`` is scored as ``ADVP`` (evalb's ``EQ_LABEL ADVP PRT``).
* Brackets are a multiset: a unary chain X -> Y over one span gives two
  brackets, each matched at most once.
* **Exact match**: a sentence whose bracket multisets are equal.
* **Unlabelled** scoring ignores labels (so a unary chain's brackets over
  one span still count once each).

Both trees of a pair must have the same number of words after deletion;
evalb refuses the pair otherwise, and so does `bracket_scores`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["BracketScores", "EVALB_DELETE_LABELS", "bracket_scores", "brackets", "parsing_report"]

# COLLINS.prm: DELETE_LABEL for words (punctuation, traces) and for brackets (TOP).
EVALB_DELETE_LABELS = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
EVALB_EQUIVALENT_LABELS = {"PRT": "ADVP"}


class BracketScores(NamedTuple):
    """Corpus-level bracket scores (fractions in [0, 1]) and the counts behind them."""

    precision: float
    recall: float
    f1: float
    exact_match: float
    matched: int
    gold: int
    predicted: int
    sentences: int


def _bare_label(label: str, equivalent: dict[str, str]) -> str:
    if not label.startswith("-"):
        for mark in ("-", "="):
            cut = label.find(mark)
            if cut > 0:
                label = label[:cut]
    return equivalent.get(label, label)


def brackets(tree, *, labelled: bool = True, root: bool = True, count_lexical: bool = False,
             delete_labels: Iterable[str] = EVALB_DELETE_LABELS,
             equivalent_labels: dict[str, str] | None = None) -> tuple[Counter, int]:
    """The scored brackets of one tree and its number of words after deletion.

    Parameters
    ----------
    tree : cvbayes.data.trees.Tree
    labelled, root, count_lexical, delete_labels, equivalent_labels
        See the module notes.

    Returns
    -------
    (Counter, int)
        Multiset of (label, start, end) (label None when unlabelled) and the
        sentence length.
    """
    delete = frozenset(delete_labels)
    equivalent = EVALB_EQUIVALENT_LABELS if equivalent_labels is None else equivalent_labels
    found: list[tuple[str, int, int, bool]] = []

    def visit(node, start: int) -> int:
        if node.is_lexical and node.label in delete:
            return start
        position = len(found)
        found.append(("", 0, 0, False))
        end = start
        for child in node.children:
            end = end + 1 if isinstance(child, str) else visit(child, end)
        found[position] = (node.label, start, end, node.is_lexical)
        return end

    length = visit(tree, 0)
    out: Counter = Counter()
    for index, (label, start, end, lexical) in enumerate(found):
        if end == start or (lexical and not count_lexical):
            continue
        if not root and index == 0:
            continue
        bare = _bare_label(label, equivalent)
        if label in delete or bare in delete:
            continue
        out[(bare if labelled else None, start, end)] += 1
    return out, length


def bracket_scores(predicted: Sequence, gold: Sequence, *, labelled: bool = True, root: bool = True,
                   count_lexical: bool = False, delete_labels: Iterable[str] = EVALB_DELETE_LABELS,
                   equivalent_labels: dict[str, str] | None = None) -> BracketScores:
    """Corpus-level bracket precision, recall, F1 and exact match (evalb).

    Parameters
    ----------
    predicted, gold : sequences of Tree, paired by position
    labelled, root, count_lexical, delete_labels, equivalent_labels
        See the module notes; the defaults are evalb's.

    Returns
    -------
    BracketScores
        Precision is 0 when nothing is predicted, recall 0 when there is no
        gold bracket, F1 0 when both are 0.

    Raises
    ------
    ValueError
        On a different number of trees, or a pair whose lengths differ.
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted trees but {len(gold)} gold trees")
    if not gold:
        raise ValueError("cannot score an empty list of trees")
    delete = frozenset(delete_labels)
    options = dict(labelled=labelled, root=root, count_lexical=count_lexical, delete_labels=delete,
                   equivalent_labels=equivalent_labels)
    matched = n_gold = n_predicted = exact = 0
    for i, (tree, reference) in enumerate(zip(predicted, gold)):
        test, test_length = brackets(tree, **options)
        want, want_length = brackets(reference, **options)
        if test_length != want_length:
            raise ValueError(f"sentence {i}: the predicted tree has {test_length} words but the gold tree "
                             f"has {want_length} (after deleting {sorted(delete)})")
        matched += sum((test & want).values())
        n_gold += sum(want.values())
        n_predicted += sum(test.values())
        exact += test == want
    precision = matched / n_predicted if n_predicted else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BracketScores(precision, recall, f1, exact / len(gold), matched, n_gold, n_predicted, len(gold))


def parsing_report(predicted: Sequence, gold: Sequence, **options) -> dict[str, BracketScores]:
    """Labelled and unlabelled `bracket_scores` (keys ``'labelled'``, ``'unlabelled'``)."""
    return {"labelled": bracket_scores(predicted, gold, labelled=True, **options),
            "unlabelled": bracket_scores(predicted, gold, labelled=False, **options)}

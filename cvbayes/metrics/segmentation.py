"""Word segmentation scores: token, boundary and lexicon precision, recall and F1.

The definitions of Goldwater, Griffiths and Johnson (2009, "A Bayesian framework for word segmentation:
exploring the effects of context", Cognition 112, §3.1.3), which Johnson and Goldwater (2009) and the
adaptor grammar literature report (their "token f-score" is the token F1 here).  Every score is
corpus-level: matches, predictions and gold items are summed over utterances before dividing.

Conventions
-----------
* **Token**: a predicted word token is correct when the gold segmentation of the same utterance has a
  word over exactly the same positions, i.e. both its boundaries are correct and no gold boundary falls
  inside it.  Precision divides by the predicted tokens, recall by the gold tokens.
* **Boundary**: only utterance-internal boundaries count (the positions 1 .. n-1 between two symbols of
  an utterance of n symbols).  Utterance edges are given to every segmenter, so counting them would
  inflate every score; Goldwater et al. leave them out, and so do we.
* **Lexicon**: the set of word types (distinct symbol tuples) proposed anywhere in the corpus against
  the set of gold word types; a proposed type is correct when it is a gold type.
* F1 is the harmonic mean 2PR / (P + R), 0 when P + R = 0.  When nothing is predicted precision is
  0/0: taken as 1 when there is also nothing to find (then recall is 1 too) and 0 otherwise; recall with
  nothing to find is 1.  (All single-word utterances, segmented as such, score boundary F1 = 1.)

Both segmentations must cut the same symbols: utterance i of the prediction, its words joined, must
equal utterance i of the gold; otherwise a `ValueError` names the first utterance that differs.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["PrecisionRecall", "SegmentationScores", "precision_recall_f1", "segmentation_report",
           "segmentation_scores", "word_boundaries", "word_spans"]


class PrecisionRecall(NamedTuple):
    """Precision, recall and F1 (fractions in [0, 1]) with the counts behind them."""

    precision: float
    recall: float
    f1: float
    matched: int
    predicted: int
    gold: int


class SegmentationScores(NamedTuple):
    """Token, boundary and lexicon scores of a segmentation (module notes)."""

    token: PrecisionRecall
    boundary: PrecisionRecall
    lexicon: PrecisionRecall
    utterances: int

    def as_dict(self) -> dict:
        """``{"token": {"precision": ..., ...}, "boundary": ..., "lexicon": ..., "utterances": n}``."""
        out = {name: getattr(self, name)._asdict() for name in ("token", "boundary", "lexicon")}
        out["utterances"] = self.utterances
        return out


def precision_recall_f1(matched: int, predicted: int, gold: int) -> PrecisionRecall:
    """Precision matched/predicted, recall matched/gold and their harmonic mean (module notes for 0/0).

    Raises
    ------
    ValueError
        If a count is negative or ``matched`` exceeds ``predicted`` or ``gold``.
    """
    matched, predicted, gold = int(matched), int(predicted), int(gold)
    if min(matched, predicted, gold) < 0 or matched > min(predicted, gold):
        raise ValueError(f"inconsistent counts: {matched} matched of {predicted} predicted and {gold} gold")
    if predicted:
        precision = matched / predicted
    else:
        precision = 1.0 if gold == 0 else 0.0
    recall = matched / gold if gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PrecisionRecall(precision, recall, f1, matched, predicted, gold)


def word_spans(words: Sequence[Sequence[str]]) -> list[tuple[int, int]]:
    """The (start, end) symbol positions of each word of an utterance, end exclusive.

    >>> word_spans([("y", "u"), ("w", "a", "n", "t")])
    [(0, 2), (2, 6)]
    """
    spans, start = [], 0
    for word in words:
        spans.append((start, start + len(word)))
        start += len(word)
    return spans


def word_boundaries(words: Sequence[Sequence[str]]) -> set[int]:
    """The utterance-internal boundaries of a segmented utterance: the positions 1 .. n-1 at which a word
    starts (the number of symbols before it).

    >>> sorted(word_boundaries([("y", "u"), ("w", "a", "n", "t"), ("t", "u")]))
    [2, 6]
    """
    return {start for start, _ in word_spans(words)[1:]}


def _utterances(segmentation, what: str) -> list[list[tuple[str, ...]]]:
    if isinstance(segmentation, str):
        raise TypeError(f"{what}: expected a list of utterances (each a list of words), not a string")
    out = []
    for index, words in enumerate(segmentation):
        if isinstance(words, str):
            raise TypeError(f"{what}, utterance {index}: expected a list of words, not a string")
        utterance = []
        for word in words:
            word = tuple(word)  # a str word is its characters
            if not word:
                raise ValueError(f"{what}, utterance {index}: an empty word")
            utterance.append(word)
        out.append(utterance)
    return out


def segmentation_scores(predicted: Iterable[Sequence[Sequence[str]]],
                        gold: Iterable[Sequence[Sequence[str]]]) -> SegmentationScores:
    """Token, boundary and lexicon precision, recall and F1 of a segmentation (Goldwater, Griffiths and
    Johnson 2009; conventions in the module notes).

    Parameters
    ----------
    predicted, gold : list of list of sequence of str
        For each utterance its words, each word a tuple of symbols (a ``str`` word is taken as its
        characters).  The two must have as many utterances, with the same symbols in each.

    Returns
    -------
    SegmentationScores

    Raises
    ------
    ValueError
        Different numbers of utterances, an utterance whose symbols differ (named by its 0-based index),
        or an empty word.

    Examples
    --------
    >>> gold = [[("y", "u"), ("w", "a", "n", "t"), ("t", "u")]]
    >>> found = [[("y", "u", "w", "a", "n", "t"), ("t", "u")]]
    >>> s = segmentation_scores(found, gold)
    >>> s.token.precision, s.token.recall, s.boundary.precision, s.boundary.recall
    (0.5, 0.3333333333333333, 1.0, 0.5)
    """
    predicted = _utterances(predicted, "predicted")
    gold = _utterances(gold, "gold")
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted utterances against {len(gold)} gold utterances")
    tokens = [0, 0, 0]
    boundaries = [0, 0, 0]
    for index, (found, truth) in enumerate(zip(predicted, gold)):
        found_symbols = tuple(s for word in found for s in word)
        gold_symbols = tuple(s for word in truth for s in word)
        if found_symbols != gold_symbols:
            raise ValueError(f"utterance {index}: the predicted symbols {' '.join(found_symbols)!r} differ from "
                             f"the gold symbols {' '.join(gold_symbols)!r}")
        found_spans, gold_spans = set(word_spans(found)), set(word_spans(truth))
        tokens[0] += len(found_spans & gold_spans)
        tokens[1] += len(found)
        tokens[2] += len(truth)
        found_cuts, gold_cuts = word_boundaries(found), word_boundaries(truth)
        boundaries[0] += len(found_cuts & gold_cuts)
        boundaries[1] += len(found_cuts)
        boundaries[2] += len(gold_cuts)
    found_types = {word for words in predicted for word in words}
    gold_types = {word for words in gold for word in words}
    return SegmentationScores(precision_recall_f1(*tokens), precision_recall_f1(*boundaries),
                              precision_recall_f1(len(found_types & gold_types), len(found_types), len(gold_types)),
                              len(gold))


def segmentation_report(scores: SegmentationScores, digits: int = 1) -> list[str]:
    """A small text table of the scores in percent, one line per measure."""
    lines = [f"{'':<10}{'P':>8}{'R':>8}{'F1':>8}"]
    for name in ("token", "boundary", "lexicon"):
        score = getattr(scores, name)
        lines.append(f"{name:<10}" + "".join(f"{100 * v:>8.{digits}f}" for v in score[:3]))
    return lines

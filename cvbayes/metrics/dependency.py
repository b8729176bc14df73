"""Attachment accuracy of dependency trees, and the baselines of grammar induction.

Heads follow CoNLL-U's HEAD column: one flat integer array over all tokens,
1-based within each sentence, 0 for the root; ``offsets`` (I + 1,) marks the
sentences.  Scores are corpus-level token counts (every token counts once,
however long its sentence), as in Klein and Manning (2004) and the grammar
induction work that follows them.

* directed accuracy: the fraction of tokens whose predicted head is the gold
  head;
* undirected accuracy: the fraction of tokens whose predicted edge to its
  head is a gold edge in either direction (the predicted head is the gold
  head, or the token is the predicted head's gold head); an edge to ROOT
  counts only as itself.

Baselines (one head array over the corpus, as predicted heads):

* attach-left: every word's head is the word on its left, the first word is
  the root (a left-headed chain);
* attach-right: every word's head is the word on its right, the last word is
  the root (a right-headed chain);
* random: a projective single-root tree drawn uniformly for each sentence
  (seeded), by sampling the DMV chart with every weight 1, under which every
  tree has one derivation and the same weight.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..trees.dmv import check_sentences, dmv_sample

__all__ = [
    "AttachmentScores",
    "attach_left_heads",
    "attach_right_heads",
    "attachment_scores",
    "directed_accuracy",
    "random_projective_heads",
    "undirected_accuracy",
]


class AttachmentScores(NamedTuple):
    """Directed and undirected attachment accuracy over ``n_tokens`` tokens."""

    directed: float
    undirected: float
    n_tokens: int


def _offsets(offsets: Any, n_tokens: int) -> np.ndarray:
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size == 0 or offsets.dtype.kind not in "iu":
        raise ValueError("offsets must be a non-empty 1-D integer array")
    if offsets[0] != 0 or offsets[-1] != n_tokens or np.any(offsets[1:] < offsets[:-1]):
        raise ValueError(f"offsets must rise from 0 to the number of tokens ({n_tokens})")
    return offsets.astype(np.int64)


def _check(pred: Any, gold: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate heads; return (pred, gold, 1-based position of each token, its sentence's start)."""
    pred = np.asarray(pred)
    gold = np.asarray(gold)
    for name, heads in (("pred", pred), ("gold", gold)):
        if heads.ndim != 1 or (heads.size and heads.dtype.kind not in "iu"):
            raise ValueError(f"{name} must be a 1-D integer array of heads, got shape {heads.shape}")
    if pred.shape != gold.shape:
        raise ValueError(f"pred has {pred.size} heads but gold has {gold.size}")
    if pred.size == 0:
        raise ValueError("cannot evaluate empty head arrays")
    offsets = _offsets(offsets, pred.size)
    lengths = np.diff(offsets)
    start = np.repeat(offsets[:-1], lengths)
    length = np.repeat(lengths, lengths)
    position = np.arange(pred.size, dtype=np.int64) - start + 1
    for name, heads in (("pred", pred), ("gold", gold)):
        bad = np.flatnonzero((heads < 0) | (heads > length) | (heads == position))
        if bad.size:
            t = bad[0]
            raise ValueError(f"{name}[{t}] = {heads[t]} is not a head of word {position[t]} "
                             f"in a sentence of {length[t]} words")
    return pred.astype(np.int64), gold.astype(np.int64), position, start


def directed_accuracy(pred: Any, gold: Any, offsets: Any) -> float:
    """Fraction of tokens whose predicted head is the gold head (Klein and Manning 2004).

    Parameters
    ----------
    pred, gold : array_like of int, shape (N,)
        Heads, 1-based within each sentence, 0 for the root.
    offsets : array_like of int, shape (I + 1,)

    Returns
    -------
    float
    """
    pred, gold, _, _ = _check(pred, gold, offsets)
    return float(np.mean(pred == gold))


def undirected_accuracy(pred: Any, gold: Any, offsets: Any) -> float:
    """Fraction of tokens whose predicted head edge is a gold edge in either direction.

    Parameters and returns as `directed_accuracy`; an edge to ROOT matches only
    a gold edge to ROOT.
    """
    return attachment_scores(pred, gold, offsets).undirected


def attachment_scores(pred: Any, gold: Any, offsets: Any) -> AttachmentScores:
    """Directed and undirected accuracy at once (module notes).

    Raises
    ------
    ValueError
        If the arrays are empty, differ in length, disagree with ``offsets``,
        or hold a head outside 0..n (or a word heading itself).
    """
    pred, gold, position, start = _check(pred, gold, offsets)
    directed = pred == gold
    # the gold head of each token's predicted head (0 where the prediction is ROOT)
    head_index = np.where(pred > 0, start + pred - 1, 0)
    reversed_edge = (pred > 0) & (gold[head_index] == position)
    return AttachmentScores(float(np.mean(directed)), float(np.mean(directed | reversed_edge)), int(pred.size))


def attach_left_heads(offsets: Any) -> np.ndarray:
    """Attach-left baseline: each word headed by its left neighbour, the first word the root.

    Returns
    -------
    numpy.ndarray of int32, shape (N,)
    """
    offsets = _offsets(offsets, int(np.asarray(offsets)[-1]))
    n_tokens = int(offsets[-1])
    position = np.arange(n_tokens, dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets)) + 1
    return (position - 1).astype(np.int32)


def attach_right_heads(offsets: Any) -> np.ndarray:
    """Attach-right baseline: each word headed by its right neighbour, the last word the root.

    Returns
    -------
    numpy.ndarray of int32, shape (N,)
    """
    offsets = _offsets(offsets, int(np.asarray(offsets)[-1]))
    lengths = np.diff(offsets)
    n_tokens = int(offsets[-1])
    position = np.arange(n_tokens, dtype=np.int64) - np.repeat(offsets[:-1], lengths) + 1
    return np.where(position == np.repeat(lengths, lengths), 0, position + 1).astype(np.int32)


def random_projective_heads(offsets: Any, seed: int) -> np.ndarray:
    """Random baseline: a uniformly drawn projective single-root tree per sentence.

    Parameters
    ----------
    offsets : array_like of int, shape (I + 1,)
    seed : int
        The same seed gives the same trees.

    Returns
    -------
    numpy.ndarray of int32, shape (N,)
    """
    offsets = _offsets(offsets, int(np.asarray(offsets)[-1]))
    tags, offsets = check_sentences(np.zeros(int(offsets[-1]), dtype=np.int32), offsets)
    # one type and every log weight 0: each tree weighs 1, so the posterior is uniform
    heads, _, _ = dmv_sample(tags, offsets, np.zeros(1), np.zeros((1, 2, 2, 2)), np.zeros((1, 2, 1)), seed)
    return heads

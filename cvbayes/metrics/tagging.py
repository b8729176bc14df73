"""Evaluation of predicted labels (states, clusters, tags) against gold tags."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["accuracy", "contingency", "many_to_one"]


def _check(pred: Any, gold: Any) -> tuple[np.ndarray, np.ndarray]:
    pred = np.asarray(pred)
    gold = np.asarray(gold)
    for name, labels in (("pred", pred), ("gold", gold)):
        if labels.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {labels.shape}")
        if labels.size and labels.dtype.kind not in "iu":
            raise ValueError(f"{name} must be integer labels, got dtype {labels.dtype}")
    if pred.shape != gold.shape:
        raise ValueError(f"pred has {pred.size} labels but gold has {gold.size}")
    if pred.size == 0:
        raise ValueError("cannot evaluate empty label arrays")
    return pred, gold


def accuracy(pred: Any, gold: Any) -> float:
    """Fraction of tokens whose predicted label equals the gold label.

    Parameters
    ----------
    pred, gold : array_like of int, shape (N,)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the arrays are empty, not 1-D integers, or differ in length.
    """
    pred, gold = _check(pred, gold)
    return float(np.count_nonzero(pred == gold)) / pred.size


def contingency(pred: Any, gold: Any) -> np.ndarray:
    """Count how often each predicted label co-occurs with each gold label.

    Parameters
    ----------
    pred, gold : array_like of non-negative int, shape (N,)

    Returns
    -------
    numpy.ndarray of int64, shape (pred.max() + 1, gold.max() + 1)
        Entry ``[p, g]`` is the number of tokens predicted ``p`` with gold ``g``.

    Raises
    ------
    ValueError
        As `accuracy`, or if a label is negative.
    """
    pred, gold = _check(pred, gold)
    if pred.min() < 0 or gold.min() < 0:
        raise ValueError("labels must be non-negative")
    n_pred = int(pred.max()) + 1
    n_gold = int(gold.max()) + 1
    # One bincount over the flattened (pred, gold) cell index.
    cells = pred.astype(np.int64) * n_gold + gold.astype(np.int64)
    return np.bincount(cells, minlength=n_pred * n_gold).reshape(n_pred, n_gold)


def many_to_one(pred: Any, gold: Any) -> float:
    """Accuracy after mapping each predicted label to its most frequent gold label.

    The usual score for unsupervised part-of-speech induction; several
    predicted labels may map to the same gold label.

    Parameters
    ----------
    pred, gold : array_like of non-negative int, shape (N,)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As `contingency`.

    Examples
    --------
    >>> many_to_one([0, 0, 1, 1, 2], [5, 5, 5, 6, 6])
    0.8
    """
    counts = contingency(pred, gold)
    return float(counts.max(axis=1).sum() / counts.sum())

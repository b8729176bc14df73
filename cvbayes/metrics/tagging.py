"""Evaluation of predicted labels (states, clusters, tags) against gold tags.

The unsupervised scores are those used for part-of-speech induction in P. Wang,
*Collapsed Variational Inference for Computational Linguistics* (Oxford 2016),
§3.8.2: many-to-one accuracy (plain and cross-validated), greedy one-to-one
accuracy, variation of information and V-measure (eq. 3.105).

Every function takes two equal-length 1-D arrays of integer labels, ``pred``
and ``gold`` (array_like, shape (N,)), predicted first and gold second, and
raises ValueError if they are empty, not 1-D integers or differ in length, or
(all but `accuracy`) if a label is negative. The predicted labels ("states")
and gold labels ("tags") need not share a vocabulary, and unused label values
(gaps) change nothing. Entropies are in bits.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from scipy.special import xlogy

__all__ = [
    "VMeasure",
    "accuracy",
    "contingency",
    "many_to_one",
    "one_to_one",
    "tagging_report",
    "v_measure",
    "variation_of_information",
]


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


def _check_nonnegative(pred: Any, gold: Any) -> tuple[np.ndarray, np.ndarray]:
    """`_check`, then reject negative labels; returns int64 copies."""
    pred, gold = _check(pred, gold)
    if pred.min() < 0 or gold.min() < 0:
        raise ValueError("labels must be non-negative")
    return pred.astype(np.int64), gold.astype(np.int64)


def _table(pred: np.ndarray, gold: np.ndarray, n_pred: int, n_gold: int) -> np.ndarray:
    """Contingency table of checked int64 labels, shape (n_pred, n_gold)."""
    # One bincount over the flattened (pred, gold) cell index.
    cells = pred * n_gold + gold
    return np.bincount(cells, minlength=n_pred * n_gold).reshape(n_pred, n_gold)


def accuracy(pred: Any, gold: Any) -> float:
    """Fraction of tokens whose predicted label equals the gold label (labels may be negative)."""
    pred, gold = _check(pred, gold)
    return float(np.count_nonzero(pred == gold)) / pred.size


def contingency(pred: Any, gold: Any) -> np.ndarray:
    """Count how often each predicted label co-occurs with each gold label.

    Returns
    -------
    numpy.ndarray of int64, shape (pred.max() + 1, gold.max() + 1)
        Entry ``[p, g]`` is the number of tokens predicted ``p`` with gold ``g``.
    """
    pred, gold = _check_nonnegative(pred, gold)
    return _table(pred, gold, int(pred.max()) + 1, int(gold.max()) + 1)


# --------------------------------------------------------------------------- #
# Many-to-one and one-to-one accuracy
# --------------------------------------------------------------------------- #


def _mapped_correct(fit: np.ndarray, score: np.ndarray) -> int:
    """Tokens of `score` right under the state -> tag map learned from `fit`.

    Both are contingency tables of the same shape. Each state maps to its most
    frequent tag in `fit` (lowest tag index on ties); a state with no tokens in
    `fit` maps to `fit`'s most frequent tag overall (lowest index on ties).
    """
    mapping = fit.argmax(axis=1)
    mapping[fit.sum(axis=1) == 0] = fit.sum(axis=0).argmax()
    return int(score[np.arange(score.shape[0]), mapping].sum())


def many_to_one(pred: Any, gold: Any, cv: bool = False, seed: Any = None) -> float:
    """Accuracy after mapping each predicted label to its most frequent gold label.

    The usual score for unsupervised part-of-speech induction; several
    predicted labels may map to the same gold label (Wang 2016, §3.8.2).

    With ``cv=True`` the score is cross-validated as in the thesis: "identify a
    mapping in one half of the dataset and compute accuracy in the second
    half". The tokens are split into two halves, the state -> tag map is
    learned on one half and scored on the other, and then the other way round.
    Every token is thus scored exactly once, by the map learned on the half
    it is not in, and the result is the fraction of tokens scored right: the
    mean of the two half accuracies weighted by the halves' sizes (a plain
    mean when N is even). Within the mapping half a state maps to its most
    frequent gold tag (lowest tag index on ties); a state that does not occur
    in the mapping half maps to that half's most frequent gold tag (lowest
    index on ties).

    Parameters
    ----------
    cv : bool, default False
        Cross-validate the mapping as described above; needs N >= 2.
    seed : None, int or numpy.random.Generator, default None
        How ``cv=True`` splits the tokens. ``None`` (the default) is
        deterministic: the first half is token positions ``[0, N // 2)`` and
        the second half ``[N // 2, N)``. Anything else seeds
        `numpy.random.default_rng`, whose random permutation of the positions
        is split the same way. Ignored when ``cv=False``.

    Raises
    ------
    ValueError
        As every function here (module notes), or if ``cv=True`` and N < 2.

    Examples
    --------
    >>> many_to_one([0, 0, 1, 1, 2], [5, 5, 5, 6, 6])
    0.8
    >>> many_to_one([0, 0, 1, 0, 0, 1], [0, 0, 1, 0, 1, 1], cv=True)
    0.8333333333333334
    """
    if not cv:
        counts = contingency(pred, gold)
        return float(counts.max(axis=1).sum() / counts.sum())
    pred, gold = _check_nonnegative(pred, gold)
    n = pred.size
    if n < 2:
        raise ValueError("cross-validated many-to-one needs at least 2 tokens")
    if seed is None:
        halves: tuple[Any, Any] = (slice(0, n // 2), slice(n // 2, n))
    else:
        order = np.random.default_rng(seed).permutation(n)
        halves = (order[: n // 2], order[n // 2 :])
    n_pred, n_gold = int(pred.max()) + 1, int(gold.max()) + 1
    first, second = (_table(pred[h], gold[h], n_pred, n_gold) for h in halves)
    correct = _mapped_correct(first, second) + _mapped_correct(second, first)
    return correct / n


def _greedy_one_to_one(counts: np.ndarray) -> int:
    """Tokens right under the greedy one-to-one map of a contingency table."""
    flat = counts.ravel()
    # Cells by count, largest first; the stable sort keeps row-major order
    # (lowest state, then lowest tag) among equal counts.
    order = np.argsort(-flat, kind="stable")
    n_tags = counts.shape[1]
    used_state = np.zeros(counts.shape[0], dtype=bool)
    used_tag = np.zeros(n_tags, dtype=bool)
    correct = 0
    n_pairs = min(counts.shape)
    # Loops over cells (at most states x tags), never over tokens; cells with a
    # zero count add nothing, so stop at the first one.
    for cell in order:
        if n_pairs == 0 or flat[cell] == 0:
            break
        state, tag = divmod(int(cell), n_tags)
        if used_state[state] or used_tag[tag]:
            continue
        used_state[state] = used_tag[tag] = True
        correct += int(flat[cell])
        n_pairs -= 1
    return correct


def one_to_one(pred: Any, gold: Any) -> float:
    """Accuracy under a greedy one-to-one map from predicted to gold labels.

    As described in Wang (2016, §3.8.2), after Haghighi & Klein (2006): take
    the largest cell ``(state, tag)`` of the contingency table whose state and
    tag are both still unused, map the state to the tag, and repeat until the
    states or the tags run out. Tokens of unmapped states count as wrong.
    Among equal counts the cell with the lowest state index, then the lowest
    tag index, is taken first, so the result is deterministic. Being greedy,
    the map can score below the best one-to-one assignment.

    References
    ----------
    A. Haghighi and D. Klein, "Prototype-driven learning for sequence models",
    NAACL 2006.

    Examples
    --------
    >>> one_to_one([0, 0, 1, 1, 2], [5, 5, 5, 6, 6])
    0.6
    """
    counts = contingency(pred, gold)
    return _greedy_one_to_one(counts) / int(counts.sum())


# --------------------------------------------------------------------------- #
# Information-theoretic scores
# --------------------------------------------------------------------------- #


class _Entropies(NamedTuple):
    """Entropies in bits of predicted labels S and gold labels G."""

    pred: float  # H(S)
    gold: float  # H(G)
    gold_given_pred: float  # H(G|S)
    pred_given_gold: float  # H(S|G)


def _entropies(counts: np.ndarray) -> _Entropies:
    """H(S), H(G), H(G|S), H(S|G) in bits from a contingency table of S x G.

    With ``T(x) = sum n_x log n_x`` over counts (``0 log 0 = 0`` via
    `scipy.special.xlogy`), ``N H(X) = N log N - T(X)`` and
    ``N H(X|Y) = T(Y) - T(X, Y)``. Working on the counts keeps the degenerate
    cases exact: a single cluster gives H(S) = 0 and a perfect clustering
    H(G|S) = 0 with no rounding, since the same terms are summed in the same
    order.
    """
    counts = counts.astype(np.float64)
    n = counts.sum()
    t_joint = xlogy(counts, counts).sum()
    t_pred = xlogy(rows := counts.sum(axis=1), rows).sum()
    t_gold = xlogy(cols := counts.sum(axis=0), cols).sum()
    t_all = xlogy(n, n)
    scale = n * math.log(2.0)
    # Clip rounding below zero (the true values are non-negative).
    return _Entropies(
        pred=max(0.0, float((t_all - t_pred) / scale)),
        gold=max(0.0, float((t_all - t_gold) / scale)),
        gold_given_pred=max(0.0, float((t_pred - t_joint) / scale)),
        pred_given_gold=max(0.0, float((t_gold - t_joint) / scale)),
    )


def variation_of_information(pred: Any, gold: Any) -> float:
    """Variation of information between predicted and gold labels, in bits.

    ``VI = H(G|S) + H(S|G)`` (Meilă 2003), with S the predicted and G the gold
    labels and logarithms base 2. It is 0 exactly when the two labelings are
    equal up to renaming, is symmetric in its arguments, and lower is better
    (Wang 2016, §3.8.2).

    Returns
    -------
    float
        Non-negative, at most ``log2 N``.

    References
    ----------
    M. Meilă, "Comparing clusterings by the variation of information",
    COLT 2003.

    Examples
    --------
    >>> variation_of_information([0, 0, 0, 0], [0, 1, 1, 2])
    1.5
    """
    h = _entropies(contingency(pred, gold))
    return h.gold_given_pred + h.pred_given_gold


class VMeasure(NamedTuple):
    """V-measure with its homogeneity and completeness (see `v_measure`)."""

    v_measure: float
    homogeneity: float
    completeness: float


def _v_measure(h: _Entropies, beta: float) -> VMeasure:
    homogeneity = 1.0 if h.gold == 0.0 else 1.0 - h.gold_given_pred / h.gold
    completeness = 1.0 if h.pred == 0.0 else 1.0 - h.pred_given_gold / h.pred
    # Conditioning never raises entropy; clip the rounding into [0, 1].
    homogeneity = min(1.0, max(0.0, homogeneity))
    completeness = min(1.0, max(0.0, completeness))
    denominator = beta * homogeneity + completeness
    v = 0.0 if denominator == 0.0 else (1.0 + beta) * homogeneity * completeness / denominator
    return VMeasure(v, homogeneity, completeness)


def v_measure(pred: Any, gold: Any, beta: float = 1.0) -> VMeasure:
    """V-measure, homogeneity and completeness of predicted against gold labels.

    Wang (2016) eq. 3.105, after Rosenberg & Hirschberg (2007), with S the
    predicted and G the gold labels::

        h = 1 - H(G|S) / H(G)          (homogeneity)
        c = 1 - H(S|G) / H(S)          (completeness)
        V = (1 + beta) h c / (beta h + c)

    Degenerate cases, as Rosenberg & Hirschberg (and scikit-learn): a single
    gold tag (H(G) = 0) gives h = 1; a single predicted label (H(S) = 0) gives
    c = 1; h = c = 0 gives V = 0. Higher is better; beta > 1 weighs
    completeness more, beta < 1 homogeneity.

    Parameters
    ----------
    beta : float, default 1.0
        Positive and finite.

    Returns
    -------
    VMeasure
        Named tuple ``(v_measure, homogeneity, completeness)`` of floats in
        [0, 1].

    Raises
    ------
    ValueError
        As every function here (module notes), or if `beta` is not positive and finite.

    References
    ----------
    A. Rosenberg and J. Hirschberg, "V-measure: a conditional entropy-based
    external cluster evaluation measure", EMNLP-CoNLL 2007.

    Examples
    --------
    >>> v_measure([0, 0, 1, 1], [1, 1, 0, 0])
    VMeasure(v_measure=1.0, homogeneity=1.0, completeness=1.0)
    >>> v_measure([0, 0, 1, 1], [0, 0, 0, 0])  # H(G) = 0: h = 1
    VMeasure(v_measure=0.0, homogeneity=1.0, completeness=0.0)
    >>> v_measure([0, 0, 0, 0], [0, 0, 1, 1])  # H(S) = 0: c = 1
    VMeasure(v_measure=0.0, homogeneity=0.0, completeness=1.0)
    """
    beta = float(beta)
    if not (beta > 0.0 and math.isfinite(beta)):
        raise ValueError(f"beta must be positive and finite, got {beta}")
    return _v_measure(_entropies(contingency(pred, gold)), beta)


def tagging_report(pred: Any, gold: Any) -> dict[str, float]:
    """All the unsupervised tagging scores of Wang (2016, §3.8.2) at once.

    Returns
    -------
    dict of str to float
        Plain Python floats under the keys ``many_to_one``,
        ``many_to_one_cv`` (`many_to_one` with ``cv=True`` and the default
        deterministic split; NaN when N < 2), ``one_to_one``,
        ``variation_of_information`` (bits), ``v_measure`` (beta = 1),
        ``homogeneity`` and ``completeness``.
    """
    counts = contingency(pred, gold)
    n = int(counts.sum())
    h = _entropies(counts)
    v = _v_measure(h, 1.0)
    return {
        "many_to_one": float(counts.max(axis=1).sum() / n),
        "many_to_one_cv": float(many_to_one(pred, gold, cv=True)) if n >= 2 else math.nan,
        "one_to_one": float(_greedy_one_to_one(counts) / n),
        "variation_of_information": float(h.gold_given_pred + h.pred_given_gold),
        "v_measure": float(v.v_measure),
        "homogeneity": float(v.homogeneity),
        "completeness": float(v.completeness),
    }

"""Alignment quality: precision, recall and alignment error rate (Och and Ney 2003, §6)."""
from __future__ import annotations

__all__ = ["score_alignment"]


def score_alignment(predicted, sure, possible=None) -> dict:
    """Score predicted links against sure (S) and possible (P) gold links.

    With A the predicted links, summed over all sentence pairs:

        precision = |A ∩ P| / |A|,   recall = |A ∩ S| / |S|,
        AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|).

    Parameters
    ----------
    predicted, sure : list of set of (source_i, target_j)
    possible : list of set, optional
        Possible links; None means every gold link is sure (P = S).  S ⊆ P
        is enforced by taking P ∪ S.

    Returns
    -------
    dict with precision, recall, aer (floats; precision 0 when nothing is
    predicted, recall 0 when S is empty) and n_predicted, n_sure, n_possible.
    """
    if possible is None:
        possible = sure
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(f"{len(predicted)} predicted, {len(sure)} sure and {len(possible)} possible "
                         "alignments: one per sentence pair each")
    n_predicted = n_sure = n_possible = hit_sure = hit_possible = 0
    for a, s, p in zip(predicted, sure, possible):
        a, s = set(a), set(s)
        p = set(p) | s
        n_predicted += len(a)
        n_sure += len(s)
        n_possible += len(p)
        hit_sure += len(a & s)
        hit_possible += len(a & p)
    denominator = n_predicted + n_sure
    return {
        "precision": hit_possible / n_predicted if n_predicted else 0.0,
        "recall": hit_sure / n_sure if n_sure else 0.0,
        "aer": 1.0 - (hit_sure + hit_possible) / denominator if denominator else 0.0,
        "n_predicted": n_predicted,
        "n_sure": n_sure,
        "n_possible": n_possible,
    }

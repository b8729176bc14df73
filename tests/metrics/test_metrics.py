"""Tests for cvbayes.metrics."""

import math
from collections import Counter

import numpy as np
import pytest

from cvbayes.metrics import (
    VMeasure,
    accuracy,
    contingency,
    many_to_one,
    one_to_one,
    tagging_report,
    v_measure,
    variation_of_information,
)


def test_accuracy():
    assert accuracy([0, 1, 2, 3], [0, 1, 0, 0]) == pytest.approx(2 / 4)
    assert accuracy(np.array([3, 3], dtype=np.int32), np.array([3, 3], dtype=np.int64)) == 1.0


def test_contingency():
    counts = contingency([0, 0, 1, 1, 2], [2, 2, 2, 0, 0])
    expected = [
        [0, 0, 2],
        [1, 0, 1],
        [1, 0, 0],
    ]
    np.testing.assert_array_equal(counts, expected)
    assert counts.sum() == 5


def test_contingency_mixed_unsigned_dtypes():
    counts = contingency(np.array([1, 0], dtype=np.uint8), np.array([0, 1], dtype=np.int64))
    np.testing.assert_array_equal(counts, [[0, 1], [1, 0]])


def test_many_to_one():
    # Cluster 0 -> 5 (2 right), 1 -> 5 or 6 (1 right), 2 -> 6 (1 right).
    assert many_to_one([0, 0, 1, 1, 2], [5, 5, 5, 6, 6]) == pytest.approx(4 / 5)
    # One cluster for everything scores the majority-tag baseline.
    assert many_to_one([0, 0, 0, 0], [1, 2, 1, 1]) == pytest.approx(3 / 4)
    # Relabelling clusters does not change the score.
    assert many_to_one([7, 7, 3, 3], [0, 0, 1, 1]) == 1.0
    assert accuracy([7, 7, 3, 3], [0, 0, 1, 1]) == 0.0


@pytest.mark.parametrize("metric", [accuracy, many_to_one, contingency])
def test_length_mismatch_and_empty(metric):
    with pytest.raises(ValueError, match="pred has 3 labels but gold has 2"):
        metric([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        metric([], [])
    with pytest.raises(ValueError, match="integer"):
        metric([0.5, 1.0], [0, 1])


def test_negative_labels_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        many_to_one([0, -1], [0, 1])


# --------------------------------------------------------------------------- #
# Unsupervised tagging scores (thesis §3.8.2, eq. 3.105)
# --------------------------------------------------------------------------- #

# The 6-token example used below. Contingency table (rows: states S, columns: tags G):
#
#             g0  g1  g2 | n_s
#        s0    2   1   0 |  3
#        s1    0   1   1 |  2
#        s2    0   0   1 |  1
#       -----------------+----
#        n_g   2   2   2 |  6
PRED6 = [0, 0, 0, 1, 1, 2]
GOLD6 = [0, 0, 1, 1, 2, 2]
LOG2_3 = math.log2(3)


def _random_labelings(seed):
    """A random (pred, gold) pair: sizes, label counts and label gaps vary with the seed."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    states = rng.choice(20, size=int(rng.integers(1, 12)), replace=False)  # gaps in labels
    tags = rng.choice(15, size=int(rng.integers(1, 8)), replace=False)
    return rng.choice(states, size=n), rng.choice(tags, size=n)


def _entropy_bits(*columns):
    """Reference joint entropy in bits, by counting tuples in plain Python."""
    counts = Counter(zip(*columns))
    n = sum(counts.values())
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def test_many_to_one_six_tokens():
    # s0 -> g0 (2 right), s1 -> g1 (tie 1 vs 1; 1 right), s2 -> g2 (1 right): 4/6.
    assert many_to_one(PRED6, GOLD6) == pytest.approx(2 / 3)


def test_many_to_one_cv_hand_example():
    # First half (positions 0-4) and second half (5-9):
    #   pred  0 0 1 1 2 | 0 1 3 3 2
    #   gold  0 0 1 1 1 | 0 1 0 0 1
    # Map from the first half: s0->g0, s1->g1, s2->g1; s3 does not occur there, so it
    # maps to the first half's most frequent tag, g1 (3 of 5). Second half scored:
    #   s0 g0 right, s1 g1 right, s3 g0 wrong, s3 g0 wrong, s2 g1 right -> 3/5.
    # Map from the second half: s0->g0, s1->g1, s3->g0, s2->g1. First half scored:
    #   all five right -> 5/5.
    # Each token scored once: (3 + 5) / 10 = 4/5, while plain many-to-one is 10/10.
    pred = [0, 0, 1, 1, 2, 0, 1, 3, 3, 2]
    gold = [0, 0, 1, 1, 1, 0, 1, 0, 0, 1]
    assert many_to_one(pred, gold, cv=True) == pytest.approx(4 / 5)
    assert many_to_one(pred, gold) == 1.0


def test_many_to_one_cv_odd_length_and_ties():
    # N = 3: first half is position 0, second half positions 1-2.
    #   pred 0 | 0 0
    #   gold 1 | 1 0
    # Map from the first half: s0->g1; second half scored: 1 of 2 right.
    # Map from the second half: s0 ties g0 vs g1 -> lowest index g0; first half: 0 of 1.
    # Each token counts once: 1/3 (not the unweighted mean (1/2 + 0) / 2).
    assert many_to_one([0, 0, 0], [1, 1, 0], cv=True) == pytest.approx(1 / 3)
    # Unseen states on both sides fall back to the other half's majority tag:
    #   pred 0 | 1 1, gold 0 | 1 1: s1 -> g0 (0/2 right), s0 -> g1 (0/1 right).
    assert many_to_one([0, 1, 1], [0, 1, 1], cv=True) == 0.0
    # The six-token example: halves s0 s0 s0 / s1 s1 s2 share no state, so every state
    # falls back to the other half's majority tag (g0, then g2) and all are wrong.
    assert many_to_one(PRED6, GOLD6, cv=True) == 0.0


def test_many_to_one_cv_perfect_and_single_cluster():
    gold = np.array([3, 1, 1, 0, 3, 0, 1, 3])
    assert many_to_one((gold + 2) % 5, gold, cv=True) == 1.0
    # One cluster: maps to the mapping half's majority tag.
    #   first half gold 3 1 1 0 -> g1; second half 3 0 1 3 -> g3.
    #   second half under g1: 1/4; first half under g3: 1/4 -> 2/8.
    assert many_to_one(np.zeros(8, dtype=int), gold, cv=True) == pytest.approx(2 / 8)


def _many_to_one_cv_reference(pred, gold, halves):
    """Token-by-token reference for the cross-validated many-to-one score."""
    correct = 0
    for fit, score in (halves, halves[::-1]):
        by_state = {}
        for i in fit:
            by_state.setdefault(int(pred[i]), Counter())[int(gold[i])] += 1
        overall = Counter(int(gold[i]) for i in fit)

        def best(counter):
            top = max(counter.values())
            return min(tag for tag, c in counter.items() if c == top)

        fallback = best(overall)
        for i in score:
            state = int(pred[i])
            tag = best(by_state[state]) if state in by_state else fallback
            correct += tag == int(gold[i])
    return correct / len(pred)


@pytest.mark.parametrize("seed", range(20))
def test_many_to_one_cv_matches_reference(seed):
    pred, gold = _random_labelings(seed)
    if pred.size < 2:
        pred, gold = np.append(pred, 0), np.append(gold, 0)
    n = pred.size
    contiguous = (list(range(n // 2)), list(range(n // 2, n)))
    assert many_to_one(pred, gold, cv=True) == pytest.approx(
        _many_to_one_cv_reference(pred, gold, contiguous))
    order = np.random.default_rng(seed + 100).permutation(n)
    shuffled = (list(order[: n // 2]), list(order[n // 2:]))
    expected = _many_to_one_cv_reference(pred, gold, shuffled)
    assert many_to_one(pred, gold, cv=True, seed=seed + 100) == pytest.approx(expected)
    assert many_to_one(pred, gold, cv=True, seed=np.random.default_rng(seed + 100)) == pytest.approx(
        expected)
    # The learned map can only do worse on held-out tokens than on its own.
    assert many_to_one(pred, gold, cv=True) <= many_to_one(pred, gold) + 1e-12


def test_many_to_one_seed_ignored_without_cv():
    assert many_to_one(PRED6, GOLD6, seed=3) == many_to_one(PRED6, GOLD6)


def test_many_to_one_cv_errors():
    with pytest.raises(ValueError, match="at least 2"):
        many_to_one([0], [0], cv=True)
    with pytest.raises(ValueError, match="non-negative"):
        many_to_one([0, -1], [0, 1], cv=True)
    with pytest.raises(ValueError, match="pred has 3 labels but gold has 2"):
        many_to_one([0, 1, 2], [0, 1], cv=True)


def test_one_to_one_six_tokens():
    # Largest cell (s0, g0) = 2: map s0 -> g0. Left: (s1, g1) = (s1, g2) = (s2, g2) = 1;
    # the lowest index wins the tie, s1 -> g1, then s2 -> g2. Right: 2 + 1 + 1 = 4 of 6.
    # (Breaking the tie towards (s1, g2) would leave s2 only g1, with 0: 3 of 6.)
    assert one_to_one(PRED6, GOLD6) == pytest.approx(4 / 6)


def test_one_to_one_greedy_ties_and_unmapped_states():
    # Table [[1, 1], [1, 0]]: three cells tie at 1; (s0, g0) comes first, which leaves
    # only (s1, g1) = 0. Greedy scores 1/3 although s0 -> g1, s1 -> g0 would score 2/3.
    assert one_to_one([0, 0, 1], [0, 1, 0]) == pytest.approx(1 / 3)
    # More states than tags: s0 -> g0, then s2 -> g1; s1 and s3 stay unmapped (wrong).
    assert one_to_one([0, 1, 2, 3], [0, 0, 1, 1]) == pytest.approx(2 / 4)
    # More tags than states: the one state takes its largest tag, g1 (2 of 4).
    assert one_to_one([0, 0, 0, 0], [0, 1, 1, 2]) == pytest.approx(2 / 4)
    # Table [[3, 0], [2, 1]]: s0 -> g0 (3), then s1 may only take g1 (1): 4/6, while
    # many-to-one maps both states to g0: 5/6.
    assert one_to_one([0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 1]) == pytest.approx(4 / 6)
    assert many_to_one([0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 1]) == pytest.approx(5 / 6)
    # Table [[2, 1], [2, 0]]: (s0, g0) and (s1, g0) tie at 2 and s0 wins (lowest index);
    # s1 is left g1 with 0, so 2/5, although s0 -> g1, s1 -> g0 would score 3/5.
    assert one_to_one([0, 0, 0, 1, 1], [0, 0, 1, 0, 0]) == pytest.approx(2 / 5)
    # Same table with the states renamed: now (s0, g0) is the all-g0 cluster: 3/5.
    assert one_to_one([1, 1, 1, 0, 0], [0, 0, 1, 0, 0]) == pytest.approx(3 / 5)


def test_one_to_one_permuted_labels():
    gold = np.array([2, 0, 1, 1, 2, 0, 3])
    perm = np.array([5, 9, 0, 4])  # gold tag g -> state perm[g], with label gaps
    assert one_to_one(perm[gold], gold) == 1.0
    assert one_to_one(gold, gold) == 1.0


def _greedy_reference(pred, gold):
    """Masked-argmax reference: argmax returns the first (row-major) of equal maxima."""
    table = contingency(pred, gold).astype(float)
    correct = 0.0
    for _ in range(min(table.shape)):
        state, tag = np.unravel_index(np.argmax(table), table.shape)
        correct += max(table[state, tag], 0.0)
        table[state, :] = -1.0
        table[:, tag] = -1.0
    return correct / len(pred)


@pytest.mark.parametrize("seed", range(20))
def test_one_to_one_matches_reference(seed):
    pred, gold = _random_labelings(seed)
    assert one_to_one(pred, gold) == pytest.approx(_greedy_reference(pred, gold))
    assert one_to_one(pred, gold) <= many_to_one(pred, gold) + 1e-12


def test_variation_of_information_six_tokens():
    # H(G|S) = sum_s p(s) H(G|S=s) = 1/2 H(2/3, 1/3) + 1/3 H(1/2, 1/2) + 1/6 * 0
    #        = 1/2 (log2 3 - 2/3) + 1/3 = (log2 3) / 2.
    # H(S|G) = sum_g p(g) H(S|G=g) = 1/3 * 0 + 1/3 * 1 + 1/3 * 1 = 2/3.
    assert variation_of_information(PRED6, GOLD6) == pytest.approx(LOG2_3 / 2 + 2 / 3)
    assert variation_of_information(GOLD6, PRED6) == pytest.approx(LOG2_3 / 2 + 2 / 3)


def test_variation_of_information_degenerate():
    gold = np.array([0, 1, 1, 2])
    # One cluster: H(S|G) = 0 and H(G|S) = H(G) = H(1/4, 1/2, 1/4) = 1.5 bits.
    assert variation_of_information([0, 0, 0, 0], gold) == 1.5
    assert variation_of_information(gold, [7, 7, 7, 7]) == 1.5
    # Equal up to renaming: 0 exactly.
    assert variation_of_information(gold, gold) == 0.0
    assert variation_of_information(np.array([4, 0, 2, 9])[gold], gold) == 0.0
    # Both constant.
    assert variation_of_information([3, 3], [1, 1]) == 0.0
    # All tokens in their own cluster against one tag: H(S) = log2 N.
    assert variation_of_information(np.arange(8), np.zeros(8, dtype=int)) == pytest.approx(3.0)


@pytest.mark.parametrize("seed", range(20))
def test_variation_of_information_reference(seed):
    pred, gold = _random_labelings(seed)
    joint = _entropy_bits(pred, gold)
    expected = 2 * joint - _entropy_bits(pred) - _entropy_bits(gold)
    assert variation_of_information(pred, gold) == pytest.approx(expected, abs=1e-10)


def test_v_measure_six_tokens():
    # H(G) = log2 3, H(S) = H(1/2, 1/3, 1/6) = 2/3 + (log2 3) / 2, with H(G|S) and H(S|G)
    # as in the VI test. Write L = log2 3:
    #   h = 1 - (L/2) / L = 1/2
    #   c = 1 - (2/3) / (2/3 + L/2) = (L/2) / (2/3 + L/2) = 3L / (4 + 3L)
    #   V (beta = 1) = 2hc / (h + c) = 2c / (1 + 2c) = 6L / (4 + 9L)
    #   V (beta = 2) = 3hc / (2h + c) = 1.5c / (1 + c) = 9L / (8 + 12L)
    L = LOG2_3
    result = v_measure(PRED6, GOLD6)
    assert isinstance(result, VMeasure)
    assert result.homogeneity == pytest.approx(1 / 2)
    assert result.completeness == pytest.approx(3 * L / (4 + 3 * L))
    assert result.v_measure == pytest.approx(6 * L / (4 + 9 * L))
    v, h, c = v_measure(PRED6, GOLD6, beta=2.0)
    assert (h, c) == pytest.approx((result.homogeneity, result.completeness))
    assert v == pytest.approx(9 * L / (8 + 12 * L))
    # beta weighs completeness more as it grows: V tends to c.
    assert v_measure(PRED6, GOLD6, beta=1e9).v_measure == pytest.approx(result.completeness)


def test_v_measure_degenerate():
    gold = [0, 1, 1, 2]
    # Perfect clustering up to renaming.
    assert v_measure([5, 2, 2, 0], gold) == (1.0, 1.0, 1.0)
    # One cluster: H(S) = 0 -> c = 1; H(G|S) = H(G) -> h = 0; V = 0.
    assert v_measure([0, 0, 0, 0], gold) == (0.0, 0.0, 1.0)
    # One gold tag: H(G) = 0 -> h = 1; H(S|G) = H(S) -> c = 0; V = 0.
    assert v_measure(gold, [0, 0, 0, 0]) == (0.0, 1.0, 0.0)
    # Both constant: h = c = 1.
    assert v_measure([0, 0, 0], [4, 4, 4]) == (1.0, 1.0, 1.0)
    # Every token its own cluster: homogeneous (h = 1), c = 1 - H(S|G)/H(S) = 1 - 2/3.
    v, h, c = v_measure([0, 1, 2, 3, 4, 5, 6, 7], [0, 0, 0, 0, 1, 1, 1, 1])
    assert h == 1.0 and c == pytest.approx(1 / 3) and v == pytest.approx(2 * c / (1 + c))
    # A single token.
    assert v_measure([3], [2]) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("beta", [0.0, -1.0, math.inf, math.nan])
def test_v_measure_rejects_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        v_measure(PRED6, GOLD6, beta=beta)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_v_measure_matches_sklearn(seed, beta):
    sk = pytest.importorskip("sklearn.metrics")
    pred, gold = _random_labelings(seed)
    h, c, v = sk.homogeneity_completeness_v_measure(gold, pred, beta=beta)
    ours = v_measure(pred, gold, beta=beta)
    assert ours.homogeneity == pytest.approx(h, rel=1e-9, abs=1e-12)
    assert ours.completeness == pytest.approx(c, rel=1e-9, abs=1e-12)
    assert ours.v_measure == pytest.approx(v, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("pred, gold", [
    ([0, 0, 0, 0], [0, 1, 1, 2]),
    ([0, 1, 1, 2], [0, 0, 0, 0]),
    ([0, 0], [1, 1]),
    ([2, 0, 0, 1], [0, 1, 1, 3]),
])
def test_v_measure_degenerate_matches_sklearn(pred, gold):
    sk = pytest.importorskip("sklearn.metrics")
    h, c, v = sk.homogeneity_completeness_v_measure(gold, pred)
    assert tuple(v_measure(pred, gold)) == pytest.approx((v, h, c), abs=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_variation_of_information_matches_sklearn(seed):
    sk = pytest.importorskip("sklearn.metrics")
    pred, gold = _random_labelings(seed)
    # VI = H(S) + H(G) - 2 I(S; G), with H(X) = I(X; X); scikit-learn works in nats.
    nats = (sk.mutual_info_score(pred, pred) + sk.mutual_info_score(gold, gold)
            - 2 * sk.mutual_info_score(gold, pred))
    assert variation_of_information(pred, gold) == pytest.approx(nats / math.log(2), abs=1e-9)


def test_tagging_report():
    report = tagging_report(PRED6, GOLD6)
    assert list(report) == ["many_to_one", "many_to_one_cv", "one_to_one",
                            "variation_of_information", "v_measure", "homogeneity",
                            "completeness"]
    assert all(type(value) is float for value in report.values())
    vm = v_measure(PRED6, GOLD6)
    assert report == pytest.approx({
        "many_to_one": many_to_one(PRED6, GOLD6),
        "many_to_one_cv": many_to_one(PRED6, GOLD6, cv=True),
        "one_to_one": one_to_one(PRED6, GOLD6),
        "variation_of_information": variation_of_information(PRED6, GOLD6),
        "v_measure": vm.v_measure,
        "homogeneity": vm.homogeneity,
        "completeness": vm.completeness,
    })
    assert report["many_to_one"] == pytest.approx(2 / 3)
    assert report["homogeneity"] == pytest.approx(1 / 2)


def test_tagging_report_single_token():
    report = tagging_report([0], [4])
    assert math.isnan(report.pop("many_to_one_cv"))
    assert report == {"many_to_one": 1.0, "one_to_one": 1.0, "variation_of_information": 0.0,
                      "v_measure": 1.0, "homogeneity": 1.0, "completeness": 1.0}


@pytest.mark.parametrize("metric", [one_to_one, variation_of_information, v_measure,
                                    tagging_report])
def test_new_metrics_reject_bad_input(metric):
    with pytest.raises(ValueError, match="pred has 3 labels but gold has 2"):
        metric([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        metric([], [])
    with pytest.raises(ValueError, match="integer"):
        metric([0.5, 1.0], [0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        metric([0, 1], [0, -1])
    with pytest.raises(ValueError, match="1-D"):
        metric([[0, 1]], [[0, 1]])


def test_metrics_exported():
    import cvbayes.metrics as metrics

    for name in ["VMeasure", "accuracy", "contingency", "many_to_one", "one_to_one",
                 "tagging_report", "v_measure", "variation_of_information"]:
        assert name in metrics.__all__
        assert getattr(metrics, name) is not None

"""Speech metrics: boundary P/R/F1 (one-to-one matching at 20 ms), frame labels, purity and NMI, on tiny
cases worked by hand, and NMI against scikit-learn."""

import itertools
import math

import numpy as np
import pytest

from cvbayes.metrics import (boundary_scores, frame_boundaries, frame_labels, normalized_mutual_info,
                             phone_boundaries, unit_purity, units_report)


def test_phone_boundaries_are_the_internal_edges_of_the_intervals():
    phones = [(0.0, 0.2, "SIL"), (0.2, 0.31, "k"), (0.31, 0.5, "ae"), (0.55, 0.9, "t")]
    np.testing.assert_allclose(phone_boundaries(phones), [0.2, 0.31, 0.5, 0.55])


def test_boundaries_by_hand():
    gold = [np.array([0.10, 0.30, 0.50])]
    # 0.115 hits 0.10 (15 ms), 0.33 misses 0.30 (30 ms), 0.49 hits 0.50: 2 hits of 3 predicted, 3 gold
    scores = boundary_scores([np.array([0.115, 0.33, 0.49])], gold)
    assert (scores.matched, scores.predicted, scores.gold) == (2, 3, 3)
    assert scores.precision == pytest.approx(2 / 3) and scores.recall == pytest.approx(2 / 3)
    assert scores.f1 == pytest.approx(2 / 3)
    # R-value: HR = 2/3, OS = 0: r1 = 1/3, r2 = (2/3 - 1) / sqrt 2
    assert scores.r_value == pytest.approx(1 - (1 / 3 + (1 / 3) / math.sqrt(2)) / 2)
    # exactly at the tolerance counts
    assert boundary_scores([[0.12]], [[0.10]]).matched == 1


def test_each_gold_boundary_is_matched_at_most_once():
    # two predictions within 20 ms of one gold boundary: one hit, not two (precision 1/2, not 1)
    scores = boundary_scores([[0.095, 0.105]], [[0.10]])
    assert (scores.matched, scores.precision, scores.recall) == (1, 0.5, 1.0)
    # and each prediction at most once: one prediction between two gold boundaries
    assert boundary_scores([[0.10]], [[0.09, 0.11]]).matched == 1


def test_the_sweep_finds_a_maximum_matching():
    # a greedy that matched 0.11 to the nearest gold (0.12) would leave 0.13 without a partner
    rng = np.random.default_rng(0)
    for _ in range(200):
        p, g = np.sort(rng.uniform(0, 0.2, rng.integers(0, 6))), np.sort(rng.uniform(0, 0.2, rng.integers(0, 6)))
        best = 0  # brute force over all one-to-one assignments
        for k in range(min(p.size, g.size), 0, -1):
            for ps in itertools.combinations(range(p.size), k):
                for gs in itertools.permutations(range(g.size), k):
                    if all(abs(p[i] - g[j]) <= 0.02 for i, j in zip(ps, gs)):
                        best = k
                        break
                if best:
                    break
            if best:
                break
        assert boundary_scores([p], [g]).matched == best


def test_scores_sum_over_utterances_and_nothing_predicted_is_zero_precision():
    scores = boundary_scores([[0.1], [], [0.5, 0.9]], [[0.1], [0.3], [0.5]])
    assert (scores.matched, scores.predicted, scores.gold) == (2, 3, 3)
    assert boundary_scores([[]], [[0.2]]).precision == 0.0
    with pytest.raises(ValueError, match="2 predicted utterances but 1 gold"):
        boundary_scores([[], []], [[]])


def test_frame_boundaries_and_labels_use_frame_centres():
    # frames start every 10 ms and last 25 ms: frame t's centre is at 0.01 t + 0.0125
    np.testing.assert_allclose(frame_boundaries([4, 4, 7, 7, 7, 2]), [0.0275, 0.0575])
    np.testing.assert_allclose(frame_boundaries([1, 2], first_frame=10), [0.1175])
    phones = [(0.0, 0.03, "SIL"), (0.03, 0.05, "a"), (0.07, 0.2, "b")]
    # centres 0.0125, 0.0225, 0.0325, 0.0425, 0.0525, 0.0625, 0.0725
    assert list(frame_labels(phones, 7)) == ["SIL", "SIL", "a", "a", None, None, "b"]
    assert list(frame_labels(phones, 2, first_frame=3)) == ["a", None]


def test_purity_and_nmi_by_hand():
    units = [0, 0, 1, 1, 2]
    phones = ["a", "a", "a", "b", "b"]
    assert unit_purity(units, phones) == pytest.approx(4 / 5)
    assert normalized_mutual_info([0, 0, 1, 1], ["x", "x", "y", "y"]) == pytest.approx(1.0)
    assert normalized_mutual_info([0, 1, 0, 1], ["x", "x", "y", "y"]) == pytest.approx(0.0, abs=1e-12)
    # H(U) = 1 bit, H(P) = 1.5 bits, I = 1 bit: arithmetic 1 / 1.25, min 1 / 1, max 1 / 1.5
    units, phones = [0, 0, 1, 1], ["x", "y", "z", "z"]
    assert normalized_mutual_info(units, phones) == pytest.approx(0.8)
    assert normalized_mutual_info(units, phones, "min") == pytest.approx(1.0)
    assert normalized_mutual_info(units, phones, "max") == pytest.approx(2 / 3)
    assert normalized_mutual_info(units, phones, "geometric") == pytest.approx(1 / math.sqrt(1.5))


def test_frames_without_a_phone_are_left_out_and_lists_of_utterances_are_joined():
    units = [np.array([0, 0, 1]), np.array([1, 2])]
    phones = [np.array(["a", "a", None], dtype=object), np.array(["b", "b"], dtype=object)]
    assert unit_purity(units, phones) == pytest.approx(1.0)  # unit 1's only phone frame is "b"


@pytest.mark.parametrize("method", ["arithmetic", "geometric", "min", "max"])
def test_nmi_matches_scikit_learn(method):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    for _ in range(20):
        units, phones = rng.integers(0, 7, 300), rng.integers(0, 5, 300)
        phones[:150] = units[:150] % 5  # some dependence
        expected = sklearn_metrics.normalized_mutual_info_score(phones, units, average_method=method)
        assert normalized_mutual_info(units, phones.astype(str), method) == pytest.approx(expected, abs=1e-10)


def test_units_report_on_a_perfect_and_a_shifted_labelling():
    phones = [[(0.0, 0.1375, "SIL"), (0.1375, 0.3075, "a"), (0.3075, 0.6, "b")]]
    # the frame boundary between frames t-1 and t sits at 0.01 t + 0.0075: t = 13 -> 0.1375, t = 30 -> 0.3075
    units = [np.array([5] * 13 + [3] * 17 + [8] * 20)]
    report = units_report(units, phones)
    assert report["boundary_f1"] == 1.0 and report["purity"] == 1.0 and report["nmi"] == pytest.approx(1.0)
    assert report["units_used"] == 3
    shifted = units_report([np.array([5] * 16 + [3] * 17 + [8] * 17)], phones)  # 30 ms late: misses
    assert shifted["boundary_f1"] == 0.0 and shifted["purity"] < 1.0

"""Tests for cvbayes.metrics."""

import numpy as np
import pytest

from cvbayes.metrics import accuracy, contingency, many_to_one


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

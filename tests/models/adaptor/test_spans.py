"""The unigram grammar's span-score chart (models/adaptor/spans.py) against enumerating every segmentation."""
import itertools

import numpy as np
import pytest

from cvbayes.models.adaptor.spans import best_words, word_chart


def segmentations(m):
    """Every segmentation of m symbols as its list of spans (a, b)."""
    for cuts in itertools.product([False, True], repeat=m - 1):
        ends = [i + 1 for i, cut in enumerate(cuts) if cut] + [m]
        yield list(zip([0] + ends[:-1], ends))


@pytest.mark.parametrize("m", [1, 2, 4, 6])
def test_chart_matches_enumeration(m):
    rng = np.random.default_rng(m)
    scores = np.triu(rng.random((m + 1, m + 1)) * 1e-3, 1)
    scores[0, m] = 0.0 if m > 1 else scores[0, m]     # a span no word fits
    go_on, end = 0.7, 0.2
    z, marginals, best, best_spans = 0.0, np.zeros((m + 1, m + 1)), -1.0, None
    for spans in segmentations(m):
        weight = go_on ** (len(spans) - 1) * end * np.prod([scores[a, b] for a, b in spans])
        z += weight
        for a, b in spans:
            marginals[a, b] += weight
        if weight > best:
            best, best_spans = weight, spans
    outside = np.full((m + 1, m + 1), -1.0)
    log_z = word_chart(scores, m, go_on, end, outside)
    assert log_z == pytest.approx(np.log(z), rel=1e-12)
    np.testing.assert_allclose(outside * scores, marginals / z, atol=1e-12)
    bounds = np.empty(m, dtype=np.int64)
    count = best_words(scores, m, go_on, end, bounds)
    assert list(bounds[:count]) == [b for _, b in best_spans]


def test_no_segmentation():
    scores = np.zeros((4, 4))
    outside = np.ones((4, 4))
    assert word_chart(scores, 3, 0.5, 0.5, outside) == -np.inf
    assert not outside.any()
    assert best_words(scores, 3, 0.5, 0.5, np.empty(3, dtype=np.int64)) == 0

"""The spectral-change pre-segmentation (cvbayes.speech.landmarks) against a direct computation, and on
signals whose changes are known."""
import numpy as np
import pytest

from cvbayes.speech import spectral_change, spectral_change_starts


def direct_change(x, window, n_dims):
    """The change at every frame t > 0 from its definition, window by window."""
    out = np.zeros(len(x))
    for t in range(1, len(x)):
        before = x[max(t - window, 0):t, :n_dims].mean(axis=0)
        after = x[t:t + window, :n_dims].mean(axis=0)
        out[t] = np.linalg.norm(before - after)
    return out


@pytest.mark.parametrize("window,n_dims", [(1, 2), (2, 13), (3, 5)])
def test_change_is_the_distance_of_the_window_means(window, n_dims):
    x = np.random.default_rng(window).normal(size=(23, 8))
    np.testing.assert_allclose(spectral_change(x, window, n_dims), direct_change(x, window, n_dims), atol=1e-12)


def test_candidates_are_the_changes_of_a_piecewise_constant_signal():
    """Steps at frames 6, 15 and 19 in the first dimensions are the candidates; a later dimension changing
    elsewhere is ignored.  With noise, every step stays a candidate and no other frame within the spacing
    of a step is one (noise elsewhere makes local maxima of its own: the candidates over-generate)."""
    levels = np.repeat([[0.0, 0.0], [3.0, 1.0], [0.0, 4.0], [5.0, 5.0]], [6, 9, 4, 8], axis=0)
    ignored = np.where(np.arange(27) < 11, 0.0, 9.0)[:, None]
    starts = spectral_change_starts(np.hstack([levels, ignored]), window=2, n_dims=2, spacing=3)
    assert set(np.flatnonzero(starts)) == {0, 6, 15, 19}
    noise = 0.01 * np.random.default_rng(0).normal(size=levels.shape)
    noisy = np.flatnonzero(spectral_change_starts(np.hstack([levels + noise, ignored]), window=2, n_dims=2,
                                                  spacing=3))
    for step in (6, 15, 19):
        assert step in noisy and not any(0 < abs(t - step) <= 3 for t in noisy)


def test_every_frame_may_be_a_start_of_an_utterance_too_short_to_compare():
    assert spectral_change_starts(np.ones((1, 13))).tolist() == [True]
    assert spectral_change_starts(np.zeros((0, 13))).tolist() == []
    # a constant utterance has no change anywhere: one unit from the first frame
    assert spectral_change_starts(np.ones((9, 13))).tolist() == [True] + [False] * 8

"""Attachment accuracy and the grammar-induction baselines on hand-made examples."""
import numpy as np
import pytest
from scipy import stats

from tests.brute_dmv import projective_trees
from cvbayes.metrics.dependency import (AttachmentScores, attach_left_heads, attach_right_heads,
                                        attachment_scores, directed_accuracy, random_projective_heads,
                                        undirected_accuracy)

# two sentences: "the cat sat" (the <- cat <- sat = root) and "dogs bark" (dogs <- bark = root)
OFFSETS = np.array([0, 3, 5])
GOLD = np.array([2, 3, 0, 2, 0])


def test_scores_by_hand():
    # sentence 1: 'the' right; 'cat' headed by 'the' (reversed gold edge); 'sat' root
    # sentence 2: 'dogs' is root, 'bark' headed by 'dogs' (reversed edge, but
    # 'dogs' -> ROOT is not the gold edge 'bark' -> ROOT)
    pred = np.array([2, 1, 0, 0, 1])
    scores = attachment_scores(pred, GOLD, OFFSETS)
    assert scores == AttachmentScores(directed=2 / 5, undirected=4 / 5, n_tokens=5)
    assert directed_accuracy(pred, GOLD, OFFSETS) == pytest.approx(2 / 5)
    assert undirected_accuracy(pred, GOLD, OFFSETS) == pytest.approx(4 / 5)
    assert attachment_scores(GOLD, GOLD, OFFSETS) == AttachmentScores(1.0, 1.0, 5)


def test_undirected_edges_stay_within_their_sentence():
    # sentence 2's word 2 is predicted to hang from its own word 1, whose gold
    # head it is: a reversed gold edge (read off sentence 1's word 1, it would not be)
    offsets = np.array([0, 2, 4])
    gold = np.array([0, 1, 2, 0])
    pred = np.array([0, 1, 0, 1])
    assert attachment_scores(pred, gold, offsets) == AttachmentScores(0.5, 0.75, 4)


def test_baselines_by_hand():
    np.testing.assert_array_equal(attach_left_heads(OFFSETS), [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(attach_right_heads(OFFSETS), [2, 3, 0, 2, 0])
    assert attachment_scores(attach_right_heads(OFFSETS), GOLD, OFFSETS).directed == 1.0
    left = attachment_scores(attach_left_heads(OFFSETS), GOLD, OFFSETS)
    assert left == AttachmentScores(0.0, 3 / 5, 5)
    # one-word sentences are their own root
    np.testing.assert_array_equal(attach_right_heads([0, 1, 2]), [0, 0])


def test_random_baseline_is_seeded_and_uniform_over_projective_trees():
    n_words, n_draws = 4, 6000
    offsets = np.arange(0, n_words * n_draws + 1, n_words)
    heads = random_projective_heads(offsets, seed=3)
    np.testing.assert_array_equal(heads, random_projective_heads(offsets, seed=3))
    assert np.any(heads != random_projective_heads(offsets, seed=4))
    trees = projective_trees(n_words)
    index = {t: k for k, t in enumerate(trees)}
    freq = np.bincount([index[tuple(row)] for row in heads.reshape(n_draws, n_words).tolist()],
                       minlength=len(trees))
    assert stats.chisquare(freq).pvalue > 1e-3
    # a one-word sentence is its own root
    assert random_projective_heads([0, 1, 3], seed=0)[0] == 0


def test_bad_heads_are_rejected():
    with pytest.raises(ValueError, match="pred has 4 heads"):
        attachment_scores(GOLD[:4], GOLD, OFFSETS)
    with pytest.raises(ValueError, match="offsets"):
        attachment_scores(GOLD, GOLD, [0, 3, 4])
    with pytest.raises(ValueError, match="not a head of word 1"):
        attachment_scores(np.array([4, 3, 0, 2, 0]), GOLD, OFFSETS)
    with pytest.raises(ValueError, match="not a head of word 2"):
        attachment_scores(np.array([2, 2, 0, 2, 0]), GOLD, OFFSETS)
    with pytest.raises(ValueError, match="empty"):
        attachment_scores([], [], [0])

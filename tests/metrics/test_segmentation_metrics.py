"""Word segmentation scores (cvbayes.metrics.segmentation) against hand-computed examples."""
import numpy as np
import pytest

from cvbayes.metrics import precision_recall_f1, segmentation_scores, word_boundaries, word_spans


def words(text):
    """'D6 bUk' -> [("D", "6"), ("b", "U", "k")]: one character a symbol, words split at spaces."""
    return [tuple(word) for word in text.split()]


def corpus(*lines):
    return [words(line) for line in lines]


def test_undersegmented_utterance():
    # gold "yu want tu", found "yuwant tu": tokens 1/2 and 1/3; boundaries {6} against {2, 6}
    scores = segmentation_scores(corpus("yuwant tu"), corpus("yu want tu"))
    assert scores.token[:3] == pytest.approx((1 / 2, 1 / 3, 0.4))
    assert scores.boundary[:3] == pytest.approx((1.0, 1 / 2, 2 / 3))
    assert scores.lexicon[:3] == pytest.approx((1 / 2, 1 / 3, 0.4))
    assert scores.token[3:] == (1, 2, 3)
    assert scores.utterances == 1


def test_two_utterances_counts_are_summed_and_types_counted_once():
    gold = corpus("D6 bUk", "lUk D6 bUk")
    found = corpus("D6bUk", "lUk D 6 bUk")
    scores = segmentation_scores(found, gold)
    # tokens: utterance 0 none of 1 (gold 2); utterance 1: lUk, bUk of 4 (gold 3)
    assert scores.token[3:] == (2, 5, 5)
    assert scores.token.f1 == pytest.approx(0.4)
    # internal boundaries: {} vs {2}; {3, 4, 5} vs {3, 5}
    assert scores.boundary[3:] == (2, 3, 3)
    assert scores.boundary.precision == pytest.approx(2 / 3)
    # types: {D6bUk, lUk, D, 6, bUk} against {D6, bUk, lUk}
    assert scores.lexicon[3:] == (2, 5, 3)
    assert scores.lexicon[:3] == pytest.approx((0.4, 2 / 3, 0.5))


def test_token_needs_no_gold_boundary_inside():
    # "ab" has both edges at gold boundaries (0 and 2) but the gold boundary 1 falls inside it
    scores = segmentation_scores(corpus("ab c"), corpus("a b c"))
    assert scores.token[3:] == (1, 2, 3)
    assert scores.boundary[3:] == (1, 1, 2)


def test_utterance_edges_are_not_boundaries():
    # single-word utterances left whole: no internal boundary anywhere, every token right
    scores = segmentation_scores(corpus("yu", "si"), corpus("yu", "si"))
    assert scores.boundary[:3] == (1.0, 1.0, 1.0)
    assert scores.boundary[3:] == (0, 0, 0)
    assert scores.token.f1 == 1.0
    # an utterance left whole where gold has two words: no boundary predicted, precision taken as 0
    scores = segmentation_scores(corpus("yuwant"), corpus("yu want"))
    assert scores.boundary[:] == (0.0, 0.0, 0.0, 0, 0, 1)
    assert scores.token[:] == (0.0, 0.0, 0.0, 0, 1, 2)


def test_perfect_and_string_words():
    gold = corpus("yu want tu", "si D6 bUk")
    scores = segmentation_scores([["yu", "want", "tu"], ["si", "D6", "bUk"]], gold)
    for score in scores[:3]:
        assert score[:3] == (1.0, 1.0, 1.0)
    assert scores.as_dict()["lexicon"]["gold"] == 6


def test_token_definition_against_boundaries_on_random_segmentations():
    """A span match is the same as 'both edges are boundaries (or utterance edges) and none inside'."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        symbols = [str(s) for s in rng.integers(0, 3, n)]

        def cut(rate):
            cuts = [i for i in range(1, n) if rng.random() < rate]
            edges = [0, *cuts, n]
            return [tuple(symbols[a:b]) for a, b in zip(edges, edges[1:])], set(cuts)

        found, _ = cut(float(rng.random()))
        truth, gold_cuts = cut(float(rng.random()))
        edges = gold_cuts | {0, n}
        expected = sum(1 for start, end in word_spans(found)
                       if start in edges and end in edges and not any(start < c < end for c in gold_cuts))
        assert segmentation_scores([found], [truth]).token.matched == expected


def test_word_boundaries_and_spans():
    assert word_spans(words("yu want tu")) == [(0, 2), (2, 6), (6, 8)]
    assert word_boundaries(words("yu want tu")) == {2, 6}
    assert word_boundaries(words("yuwanttu")) == set()


def test_mismatched_input_names_the_utterance():
    with pytest.raises(ValueError, match="utterance 1: the predicted symbols 'b U x' differ"):
        segmentation_scores(corpus("yu", "bUx"), corpus("yu", "bUk"))
    with pytest.raises(ValueError, match="2 predicted utterances against 1 gold"):
        segmentation_scores(corpus("yu", "si"), corpus("yu"))
    with pytest.raises(ValueError, match="gold, utterance 0: an empty word"):
        segmentation_scores(corpus("yu"), [[("y", "u"), ()]])
    with pytest.raises(TypeError, match="not a string"):
        segmentation_scores(["yu"], ["yu"])


def test_precision_recall_f1_edges():
    assert precision_recall_f1(0, 0, 0)[:3] == (1.0, 1.0, 1.0)
    assert precision_recall_f1(0, 0, 4)[:3] == (0.0, 0.0, 0.0)
    assert precision_recall_f1(0, 3, 0)[:3] == (0.0, 1.0, 0.0)
    assert precision_recall_f1(2, 4, 8).f1 == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    with pytest.raises(ValueError, match="inconsistent counts"):
        precision_recall_f1(3, 2, 5)

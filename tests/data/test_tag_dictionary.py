"""Complete and incomplete tag dictionaries (thesis §3.8.1) on a hand-made corpus."""

import numpy as np
import pytest

from cvbayes.data import (
    Corpus,
    Vocabulary,
    ambiguity,
    complete_tag_dictionary,
    incomplete_tag_dictionary,
    load_embedded_brown,
)

WORDS = Vocabulary(["the", "dog", "runs", "fast", "cat"])  # ids 1..5; 0 is <unk>
TAGS = Vocabulary(["DET", "NOUN", "VERB", "ADV"], unknown=False)  # ids 0..3


def tagged(sentences, vocabulary=WORDS):
    words = [[vocabulary.index(w) for w, _ in s] for s in sentences]
    tags = [[TAGS.index(t) for _, t in s] for s in sentences]
    return Corpus.from_sequences(words, vocabulary, tags, TAGS)


# the: 3 tokens (DET); dog: 3 (NOUN, VERB); runs: 2 (VERB, NOUN); fast: 1 (ADV); cat: 0
CORPUS = tagged(
    [
        [("the", "DET"), ("dog", "NOUN"), ("runs", "VERB")],
        [("the", "DET"), ("dog", "NOUN"), ("runs", "NOUN"), ("fast", "ADV")],
        [("dog", "VERB"), ("the", "DET")],
    ]
)

ALL = [1, 1, 1, 1]
COMPLETE = np.array(
    [
        ALL,  # <unk>
        [1, 0, 0, 0],  # the
        [0, 1, 1, 0],  # dog
        [0, 1, 1, 0],  # runs
        [0, 0, 0, 1],  # fast
        ALL,  # cat: never seen
    ],
    dtype=bool,
)


def test_complete_dictionary():
    dictionary = complete_tag_dictionary(CORPUS)
    assert dictionary.dtype == bool
    np.testing.assert_array_equal(dictionary, COMPLETE)


def test_incomplete_d1_is_complete():
    np.testing.assert_array_equal(incomplete_tag_dictionary(CORPUS, 1), COMPLETE)


def test_incomplete_d2_and_d3():
    expected = COMPLETE.copy()
    expected[4] = True  # fast: 1 token < 2
    np.testing.assert_array_equal(incomplete_tag_dictionary(CORPUS, 2), expected)
    expected[3] = True  # runs: 2 tokens < 3
    np.testing.assert_array_equal(incomplete_tag_dictionary(CORPUS, 3), expected)
    np.testing.assert_array_equal(incomplete_tag_dictionary(CORPUS, 4), np.ones((6, 4), bool))


def test_ambiguity_by_hand():
    # Allowed tags per token: the 1 x3, dog 2 x3, runs 2 x2, fast 1 -> 14 / 9.
    stats = ambiguity(CORPUS, complete_tag_dictionary(CORPUS))
    assert stats == {
        "tags_per_token": pytest.approx(14 / 9),
        "ambiguous_token_fraction": pytest.approx(5 / 9),
        "n_types": 4,
        "n_tokens": 9,
    }
    # d = 2 opens "fast" to all 4 tags: 17 / 9 tags per token, 6 ambiguous.
    stats = ambiguity(CORPUS, incomplete_tag_dictionary(CORPUS, 2))
    assert stats["tags_per_token"] == pytest.approx(17 / 9)
    assert stats["ambiguous_token_fraction"] == pytest.approx(6 / 9)


def test_unknown_word_allows_every_tag():
    corpus = tagged([[("the", "DET"), ("<unk>", "NOUN")]])
    assert complete_tag_dictionary(corpus)[0].all()


def test_reference_corpus_supplies_the_tags():
    # Only the first sentence is trained on; tags come from the whole corpus.
    subset = CORPUS[:1]
    np.testing.assert_array_equal(complete_tag_dictionary(subset, reference=CORPUS), COMPLETE)
    own = complete_tag_dictionary(subset)
    assert own[2].tolist() == [False, True, False, False]  # dog: NOUN only
    # Counts come from the subset: every word there has 1 token, so d = 2
    # frees the, dog and runs; fast is absent from it and keeps its row.
    expected = COMPLETE.copy()
    expected[1:4] = True
    np.testing.assert_array_equal(incomplete_tag_dictionary(subset, 2, CORPUS), expected)


def test_reference_must_share_ids():
    other = tagged([[("the", "DET")]], Vocabulary(["the"]))
    with pytest.raises(ValueError, match="same vocabulary"):
        complete_tag_dictionary(CORPUS, reference=other)


def test_errors():
    with pytest.raises(ValueError, match="d must be"):
        incomplete_tag_dictionary(CORPUS, 0)
    untagged = Corpus([1, 2], [0, 2], WORDS)
    with pytest.raises(ValueError, match="gold"):
        complete_tag_dictionary(untagged)
    with pytest.raises(ValueError, match="no row"):
        ambiguity(CORPUS, np.ones((3, 4), bool))


def test_embedded_brown_dictionary():
    corpus = load_embedded_brown()
    dictionary = complete_tag_dictionary(corpus)
    assert dictionary.shape == (len(corpus.vocabulary), len(corpus.tagset))
    assert dictionary[corpus.observations, corpus.gold].all()
    stats = ambiguity(corpus, dictionary)
    assert 1 < stats["tags_per_token"] < 3
    assert stats["n_tokens"] == corpus.n_tokens

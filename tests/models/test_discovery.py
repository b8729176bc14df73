"""LexiconDiscovery (models/discovery.py): the word tokens tile every utterance's frames, their types make the
lexicon, the joint rounds' reading rewrites only units the channel substituted, a model saved and loaded discovers
the same, and word classes carry the frame-boundary times."""
import numpy as np
import pytest

from cvbayes import AcousticUnits
from cvbayes.metrics.speech import boundary_time
from cvbayes.models.discovery import LexiconDiscovery, Token, pause_units, spoken, type_counts, word_classes
from cvbayes.synthetic import sample_acoustic_units


@pytest.fixture(scope="module")
def features():
    frames, _, _ = sample_acoustic_units(24, n_units=4, n_states=2, n_dims=3, mean_frames=40, seed=3)
    return frames


@pytest.fixture(scope="module", params=[(True, "unigram", "cvi"), (False, "unigram", "cvi"), (True, "colloc", "vb"),
                                        (True, "colloc", "cvi")],
                ids=["channel", "no channel", "colloc channel", "colloc channel cvi"])
def fitted(request, features):
    channel, grammar, algorithm = request.param
    model = LexiconDiscovery(grammar=grammar, channel=channel, algorithm=algorithm,
                             n_units=8, unit_iter=4, n_iter=2, unit_params={"n_states": 2, "n_components": 1},
                             word_params={"init_iter": 2} if channel else {}, random_state=1)
    return model.fit(features)


def test_tokens_tile_the_frames_and_make_the_lexicon(fitted, features):
    tokens = fitted.discover(features)
    segments = fitted.units_.decode(features)
    assert len(tokens) == len(features)
    for utterance, (first, string), decoded in zip(tokens, spoken(segments, fitted.pause_units_), segments):
        if not string:
            assert utterance == []
            continue
        assert utterance[0].start == decoded.starts[first]
        assert utterance[-1].stop == decoded.ends[first + len(string) - 1]
        assert all(a.stop == b.start for a, b in zip(utterance, utterance[1:]))
        assert [u for token in utterance for u in token.units] == string
        for token in utterance:
            # a word's units begin and end where units do
            assert token.start in decoded.starts and token.stop in decoded.ends
            if not fitted.channel:
                assert token.word == token.units
    assert fitted.lexicon_ == type_counts(tokens)
    assert list(fitted.lexicon_.values()) == sorted(fitted.lexicon_.values(), reverse=True)


def test_the_lexical_reading_rewrites_units_as_the_underlying_words(fitted, features):
    """Joint rounds, step 1: the reading keeps every occurrence's frames, and a unit it rewrites lies inside a
    word token whose underlying word has that unit (the channel's substitution, read back)."""
    if not fitted.channel:
        with pytest.raises(ValueError, match="channel"):
            LexiconDiscovery(channel=False, joint_rounds=1)
        return
    segments = fitted.units_.decode(features)
    tokens = fitted.discover(features)
    rewritten = 0
    for decoded, read, utterance in zip(segments, fitted._lexical_reading(segments), tokens):
        np.testing.assert_array_equal(read.starts, decoded.starts)
        np.testing.assert_array_equal(read.ends, decoded.ends)
        for p in np.flatnonzero(read.units != decoded.units):
            token, = [t for t in utterance if t.start <= decoded.starts[p] < t.stop]
            assert str(read.units[p]) in token.word and token.word != token.units
            rewritten += 1
    assert rewritten > 0


def test_joint_rounds_leave_a_given_unit_layer_alone(features):
    """The rounds re-estimate a copy of the unit layer passed in; without rounds it is the model's own."""
    units = AcousticUnits(n_units=8, n_states=2, n_components=1, n_iter=4, random_state=1).fit(features)
    before = [block.copy() for block in units.counts_]

    def discovery(rounds):
        return LexiconDiscovery(joint_rounds=rounds, n_iter=2, word_params={"init_iter": 2}, random_state=1)

    joint = discovery(1).fit(features, units=units)
    for block, kept in zip(units.counts_, before):
        np.testing.assert_array_equal(block, kept)
    assert joint.units_ is not units and not np.array_equal(joint.units_.counts_.stats, before[2])
    assert discovery(0).fit(features, units=units).units_ is units
    assert joint.checkpoint_parts() == ["units", "words", "words1"]


def test_pauses_are_the_units_heard_mostly_at_utterance_edges():
    class Decoded:
        def __init__(self, units):
            self.units = np.array(units)

    # 0 and 9 at the edges only; 3 and 5 mostly inside; 6 begins a single utterance
    segments = [Decoded(u) for u in ([0, 3, 4, 9], [0, 5, 3, 9], [0, 0], [6, 3, 9], [9, 3, 5, 5])]
    assert pause_units(segments) == [0, 9]
    assert spoken(segments, [0, 9]) == [(1, ["3", "4"]), (1, ["5", "3"]), (2, []), (0, ["6", "3"]),
                                        (1, ["3", "5", "5"])]
    assert pause_units(segments, least=0.9) == []           # neither is at the edges of 90 % of the utterances
    assert pause_units([Decoded([1, 2]), Decoded([3, 4])]) == []


def test_save_and_load_discover_the_same(fitted, features, tmp_path):
    path = tmp_path / "words.npz"
    fitted.save(path)
    loaded = LexiconDiscovery.load(path)
    assert loaded.get_params() == fitted.get_params()
    assert loaded.lexicon_ == fitted.lexicon_
    assert loaded.discover(features) == fitted.discover(features)


def test_word_classes_number_types_by_the_lexicon_and_time_tokens_at_frame_boundaries():
    lexicon = {("1", "2"): 2, ("3",): 1}
    tokens = [[Token(("1", "2"), 0, 7, ("1", "2")), Token(("3",), 7, 9, ("3",))],
              [Token(("4",), 0, 3, ("4",)), Token(("1", "2"), 3, 8, ("1", "5"))]]
    classes = word_classes(lexicon, ["a", "b"], tokens, first_frames=[0, 10])
    assert list(classes) == [1, 2, 3]
    assert classes[1] == [("a", pytest.approx(boundary_time(0)), pytest.approx(boundary_time(7))),
                          ("b", pytest.approx(boundary_time(13)), pytest.approx(boundary_time(18)))]
    assert [name for name, _, _ in classes[3]] == ["b"]     # a type the lexicon lacks comes after it


@pytest.mark.parametrize("settings,message", [
    ({"grammar": "colloc", "joint": "nbest", "joint_rounds": 1}, "unigram grammar.s q only"),
    ({"grammar": "colloc", "algorithm": "vb", "joint": "nbest", "joint_rounds": 1}, "unigram grammar.s q only"),
    ({"grammar": "trigram"}, "unknown grammar"),
    ({"algorithm": "gibbs"}, "unknown algorithm"), ({"joint_rounds": -1}, "joint_rounds must be"),
    ({"joint_rounds": 1.5}, "joint_rounds must be"),
])
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        LexiconDiscovery(**settings)


def test_unfitted_model_says_so():
    with pytest.raises(RuntimeError, match="not fitted"):
        LexiconDiscovery().discover([np.zeros((5, 3))])


@pytest.mark.parametrize("channel", [True, False], ids=["channel", "no channel"])
def test_vb_on_dask_shards_discovers_as_one_process(features, channel):
    """The unit layer's E-steps and the word layer's (NoisyWords' or the channel-free grammar's) on shards give
    the same model."""
    distributed = pytest.importorskip("distributed")

    def model():
        return LexiconDiscovery(channel=channel, algorithm="vb", n_units=8, unit_iter=3, n_iter=2,
                                unit_params={"n_states": 2, "n_components": 1},
                                word_params={"init_iter": 2} if channel else {}, random_state=1)

    reference = model().fit(features)
    with distributed.Client(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as client:
        sharded = model().fit(features, client=client, n_shards=3)
    np.testing.assert_allclose([r.objective for r in sharded.units_.history_],
                               [r.objective for r in reference.units_.history_], rtol=1e-10)
    np.testing.assert_allclose([r.objective for r in sharded.words_.history_],
                               [r.objective for r in reference.words_.history_], rtol=1e-10)
    assert len(sharded.words_.shard_timings_) == 2
    assert sharded.lexicon_ == reference.lexicon_


def test_shards_take_vb_only(features):
    with pytest.raises(ValueError, match="client= takes vb"):
        LexiconDiscovery(algorithm="cvi").fit(features, client=object())


def test_hard_joint_rounds_take_the_colloc_grammar_by_cvi(features):
    joint = LexiconDiscovery(grammar="colloc", algorithm="cvi", joint_rounds=1, n_units=8, unit_iter=4, n_iter=2,
                             unit_params={"n_states": 2, "n_components": 1}, word_params={"init_iter": 2},
                             random_state=1).fit(features)
    assert joint.checkpoint_parts() == ["units", "words", "words1"]
    assert joint.words_.collocations_ and len(joint.discover(features)) == len(features)

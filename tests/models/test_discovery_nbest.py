"""The joint fit over candidate readings (models/discovery_nbest.py): its ELBO (eq. J1) never decreases over the
rounds while a variant that updates q(theta) from other weights than q(k | u) does, its statistics with one
candidate (or all the weight on the Viterbi reading) are the single reading's, q(k | u) sums to one,
LexiconDiscovery's ``joint="nbest"`` reads every training utterance by its most probable candidate, and its rounds
stopped and run again with a checkpoint resume after the last saved round and end as an uninterrupted fit."""
import copy

import numpy as np
import pytest

from cvbayes.checkpoints import CheckpointError, checkpoint_passes
from cvbayes.core.rules import MEAN, VB
from cvbayes.models.discovery import LexiconDiscovery, spoken, type_counts
from cvbayes.models.discovery_nbest import NbestJoint, candidate_readings, reading_key, reading_posterior
from cvbayes.synthetic import sample_acoustic_units

SETTINGS = {"algorithm": "vb", "n_units": 8, "unit_iter": 4, "n_iter": 2, "random_state": 1,
            "unit_params": {"n_states": 2, "n_components": 1}, "word_params": {"init_iter": 2}}


def tiny_features():
    """24 utterances of 4 planted units (the tiny discovery fixture; the collapsed joint's tests take it too)."""
    frames, _, _ = sample_acoustic_units(24, n_units=4, n_states=2, n_dims=3, mean_frames=40, seed=3)
    return frames


features = pytest.fixture(scope="module", name="features")(tiny_features)


@pytest.fixture(scope="module")
def pipeline(features):
    return LexiconDiscovery(**SETTINGS).fit(features)


def joint_of(pipeline, features, n_best):
    """An `NbestJoint` on copies of the pipeline's layers."""
    units, words = copy.deepcopy(pipeline.units_), copy.deepcopy(pipeline.words_)
    candidates = candidate_readings(units, features, n_best, 20, random_state=0)
    return NbestJoint(units, words, features, candidates,
                      lambda reading: spoken([reading], pipeline.pause_units_)[0][1])


def test_candidates_are_the_viterbi_reading_and_distinct_draws(pipeline, features):
    viterbi = pipeline.units_.decode(features)
    candidates = candidate_readings(pipeline.units_, features, 4, 20, random_state=0)
    assert [len(c) for c in candidate_readings(pipeline.units_, features, 1, 20)] == [1] * len(features)
    for best, readings in zip(viterbi, candidates):
        assert 1 <= len(readings) <= 4 and reading_key(readings[0]) == reading_key(best)
        assert len({reading_key(r) for r in readings}) == len(readings)
    assert max(len(c) for c in candidates) == 4


def test_the_joint_elbo_never_decreases(pipeline, features):
    joint = joint_of(pipeline, features, 5).fit(5)
    steps = np.diff(joint.objective)
    assert np.all(steps >= -1e-9 * abs(joint.objective[0])), joint.objective
    assert steps.max() > 1e-3          # it moves


def test_updating_from_other_weights_than_q_can_lower_the_elbo(pipeline, features):
    """The test above can fail: after a few rounds, q(theta) from the Viterbi readings alone (J1 still scoring
    every candidate) lowers J1."""
    joint = joint_of(pipeline, features, 5).fit(6)
    joint.step_parameters(joint.viterbi_weights())
    joint.step_posterior()
    assert joint.objective[-1] < joint.objective[-2] - 1.0, joint.objective


def test_the_acoustic_scores_are_each_candidates_log_z(pipeline, features):
    """Step (a)'s A_uk (forward passes only) are the log Z of the candidates' E-step, which sums over the paths of
    one reading: under the posterior-mean tables, less than the utterance's log Z over every path."""
    joint = joint_of(pipeline, features, 5)
    acoustic, _ = joint.scores()
    _, log_z = joint.units.reading_expectations(joint.features, joint.readings, VB)
    assert len(set(joint.owner)) < len(joint.readings)
    np.testing.assert_allclose(acoustic, log_z, rtol=0, atol=1e-9)
    restricted = joint.units.reading_log_evidence(joint.features, joint.readings, MEAN)
    assert np.all(restricted < joint.units.score_samples(joint.features) - 1e-6)


def test_one_candidate_is_the_single_reading(pipeline, features):
    """With n_best=1, and with n_best=5 and all the weight on the Viterbi reading, a step's unit statistics are
    those of the Viterbi reading's E-step, and the word layer's q the VB update from the Viterbi strings."""
    viterbi = pipeline.units_.decode(features)
    expected, log_z = pipeline.units_.reading_expectations(features, viterbi, VB)
    strings = [tuple(s) for _, s in spoken(viterbi, pipeline.pause_units_) if s]
    one = joint_of(pipeline, features, 1)
    np.testing.assert_array_equal(one.step_posterior(), 1.0)
    np.testing.assert_allclose(one.scores()[0], log_z)
    many = joint_of(pipeline, features, 5)
    many.step_posterior()
    for joint, weights in ((one, one.posterior), (many, many.viterbi_weights())):
        types = sorted(set(strings))
        reference = joint.learner.moved_to([list(s) for s in types], [strings.count(s) for s in types])
        reference.refresh = False
        reference.expectations(reference.tables())
        joint.step_parameters(weights)
        for block, want in zip(joint.units.counts_, expected):
            np.testing.assert_allclose(block, want, rtol=1e-10, atol=1e-10)
        for name in ("edit_counts", "rule_counts", "first", "second"):
            np.testing.assert_allclose(getattr(joint.learner, name), getattr(reference, name), rtol=1e-10,
                                       atol=1e-12)


def test_the_posterior_sums_to_one_and_gives_the_evidence():
    scores = np.array([-1.0, -2.0, -40.0, 3.0, 0.5, 0.5])
    owner = np.array([0, 0, 0, 1, 2, 2])
    posterior, evidence = reading_posterior(scores, owner)
    np.testing.assert_allclose(np.bincount(owner, weights=posterior), 1.0)
    np.testing.assert_allclose(posterior[4:], 0.5)
    first = np.log(np.exp(-1.0) + np.exp(-2.0) + np.exp(-40.0))
    assert evidence == pytest.approx(first + 3.0 + np.log(2 * np.exp(0.5)))


def test_moving_the_word_layer_to_its_own_strings_keeps_its_tables(pipeline):
    learner = pipeline.words_.learner_
    moved = pipeline.words_.learner_over(learner.corpus.utterances, learner.corpus.copies)
    for mine, theirs in zip(moved.tables(), learner.tables()):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


def test_lexicon_discovery_reads_by_the_most_probable_candidate(pipeline, features):
    model = LexiconDiscovery(**SETTINGS, joint="nbest", joint_rounds=3, n_best=4).fit(features)
    assert len(model.joint_objective_) == 4 and np.all(np.diff(model.joint_objective_) > -1e-6)
    assert model.checkpoint_parts() == ["units", "words", "nbest"]
    for posterior in model.reading_posterior_:
        assert posterior.sum() == pytest.approx(1.0)
    assert any(posterior.shape[0] > 1 for posterior in model.reading_posterior_)
    assert model.lexicon_ == type_counts(model._tokens(model.readings_))
    assert model.units_ is not pipeline.units_
    with pytest.raises(ValueError, match="unknown joint"):
        LexiconDiscovery(joint="lattice")


class Interrupted(Exception):
    pass


def counting_rounds(monkeypatch, stop_at=None, joint=NbestJoint, name="step_parameters"):
    """Count the calls of a round's step (vb: (b)-(c), `NbestJoint.step_parameters`); raise `Interrupted` at call
    ``stop_at``."""
    calls = []
    step = getattr(joint, name)

    def counted(self, *args):
        calls.append(len(calls))
        if len(calls) == stop_at:
            raise Interrupted
        return step(self, *args)

    monkeypatch.setattr(joint, name, counted)
    return calls


VB_WORD_STATE = ("edit_counts", "rule_counts", "first", "second", "log_pi", "log_base")


def assert_same_fit(resumed, reference, word_state=VB_WORD_STATE):
    """The resumed n-best fit equals the reference bit for bit: J1, readings, q(k | u), the units' counts and the
    word learner's ``word_state`` arrays, copies and edit counts, the lexicon and the tokens."""
    assert resumed.joint_objective_ == reference.joint_objective_
    assert [reading_key(r) for r in resumed.readings_] == [reading_key(r) for r in reference.readings_]
    for mine, theirs in zip(resumed.reading_posterior_, reference.reading_posterior_):
        np.testing.assert_array_equal(mine, theirs)
    for mine, theirs in zip(resumed.units_.counts_, reference.units_.counts_):
        np.testing.assert_array_equal(mine, theirs)
    mine, theirs = resumed.words_.learner_.state(), reference.words_.learner_.state()
    for name in word_state:
        np.testing.assert_array_equal(mine[name], theirs[name])
    np.testing.assert_array_equal(resumed.words_.learner_.corpus.copies, reference.words_.learner_.corpus.copies)
    np.testing.assert_array_equal(resumed.words_.edit_counts_, reference.words_.edit_counts_)
    assert resumed.words_.lexicon_ == reference.words_.lexicon_
    assert resumed.tokens_ == reference.tokens_ and resumed.lexicon_ == reference.lexicon_


NBEST = {**SETTINGS, "joint": "nbest", "joint_rounds": 4, "n_best": 4}


@pytest.fixture(scope="module")
def nbest(features):
    return LexiconDiscovery(**NBEST).fit(features)


@pytest.mark.parametrize("every,stop_at,saved", [(1, 3, 2), (3, 4, 3), (3, 2, 0)])
def test_stopped_nbest_rounds_resume_from_the_checkpoint_and_end_as_an_uninterrupted_fit(
        features, nbest, tmp_path, monkeypatch, every, stop_at, saved):
    """Four rounds, stopped in round ``stop_at``: run again, the same call runs only the rounds after the last
    saved one (every ``every`` rounds) and ends bit for bit as a fit without a checkpoint; once complete, it runs
    none."""
    settings, path, reference = NBEST, tmp_path / "run.ckpt", nbest
    counting_rounds(monkeypatch, stop_at)
    with pytest.raises(Interrupted):
        LexiconDiscovery(**settings).fit(features, checkpoint=path, checkpoint_every=every)
    assert checkpoint_passes(f"{path}.nbest") == ((saved, False) if saved else None)
    calls = counting_rounds(monkeypatch)
    resumed = LexiconDiscovery(**settings).fit(features, checkpoint=path, checkpoint_every=every)
    assert len(calls) == 4 - saved
    assert checkpoint_passes(f"{path}.nbest") == (4, True)
    assert_same_fit(resumed, reference)
    calls = counting_rounds(monkeypatch)
    again = LexiconDiscovery(**settings).fit(features, checkpoint=path, checkpoint_every=every)
    assert calls == []
    assert_same_fit(again, reference)


def test_the_checkpoint_of_other_nbest_rounds_is_refused(features, tmp_path):
    """Other settings of the rounds alone, or another start of the rounds (the unit layer given), are another
    run's: the layers' own checkpoints resume, the rounds' one is refused by name."""
    path = tmp_path / "run.ckpt"
    settings = {**SETTINGS, "joint": "nbest", "joint_rounds": 1}
    LexiconDiscovery(**settings).fit(features, checkpoint=path)
    with pytest.raises(CheckpointError, match=r"run\.ckpt\.nbest: the checkpoint of another run \(params"):
        LexiconDiscovery(**settings, n_draws=10).fit(features, checkpoint=path)
    other_units = LexiconDiscovery(**{**SETTINGS, "random_state": 2}).fit(features).units_
    (tmp_path / "run.ckpt.words").unlink()
    with pytest.raises(CheckpointError, match=r"run\.ckpt\.nbest: the checkpoint of another run \(start"):
        LexiconDiscovery(**settings).fit(features, units=other_units, checkpoint=path)

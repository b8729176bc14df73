"""The joint fit over candidate readings (models/discovery_nbest.py): its ELBO (eq. J1) never decreases over the
rounds while a variant that updates q(theta) from other weights than q(k | u) does, its statistics with one
candidate (or all the weight on the Viterbi reading) are the single reading's, q(k | u) sums to one, and
LexiconDiscovery's ``joint="nbest"`` reads every training utterance by its most probable candidate."""
import copy

import numpy as np
import pytest

from cvbayes.core.rules import MEAN, VB
from cvbayes.models.discovery import LexiconDiscovery, spoken, type_counts
from cvbayes.models.discovery_nbest import NbestJoint, candidate_readings, reading_key, reading_posterior
from cvbayes.synthetic import sample_acoustic_units

SETTINGS = {"algorithm": "vb", "n_units": 8, "unit_iter": 4, "n_iter": 2, "random_state": 1,
            "unit_params": {"n_states": 2, "n_components": 1}, "word_params": {"init_iter": 2}}


@pytest.fixture(scope="module")
def features():
    frames, _, _ = sample_acoustic_units(24, n_units=4, n_states=2, n_dims=3, mean_frames=40, seed=3)
    return frames


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
    assert model.checkpoint_parts() == ["units", "words"]
    for posterior in model.reading_posterior_:
        assert posterior.sum() == pytest.approx(1.0)
    assert any(posterior.shape[0] > 1 for posterior in model.reading_posterior_)
    assert model.lexicon_ == type_counts(model._tokens(model.readings_))
    assert model.units_ is not pipeline.units_
    with pytest.raises(ValueError, match="vb' only"):
        LexiconDiscovery(algorithm="cvi", joint="nbest", joint_rounds=1)
    with pytest.raises(ValueError, match="unknown joint"):
        LexiconDiscovery(joint="lattice")

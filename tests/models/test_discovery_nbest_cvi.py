"""The collapsed n-best joint (models/discovery_nbest_cvi.py): with one candidate an utterance a round is each
layer's CVI pass over the Viterbi readings, q(k | u) is exp(A^-u + W^-u) normalised with both leave-one-out log Z
computed from the other utterances' statistics summed afresh, LexiconDiscovery's ``joint="nbest"`` with cvi reads
every utterance by its most probable candidate, and its rounds stopped and run again with a checkpoint resume
after the last saved round and end as an uninterrupted fit."""
import copy

import numpy as np
import pytest

from cvbayes.checkpoints import NO_CHECKPOINT, checkpoint_passes
from cvbayes.core.rules import MEAN
from cvbayes.models.discovery import LexiconDiscovery, spoken, type_counts
from cvbayes.models.discovery_nbest import candidate_readings, reading_key
from cvbayes.models.discovery_nbest_cvi import CollapsedNbestJoint
from cvbayes.models.units_structures import UnitCounts
from tests.models.test_discovery_nbest import (SETTINGS, Interrupted, assert_same_fit, counting_rounds,
                                               tiny_features)

CVI = {**SETTINGS, "algorithm": "cvi"}
features = pytest.fixture(scope="module", name="features")(tiny_features)


@pytest.fixture(scope="module")
def pipeline(features):
    return LexiconDiscovery(**CVI).fit(features)


def joint_of(pipeline, features, n_best, random_state=0):
    """A `CollapsedNbestJoint` on copies of the pipeline's layers."""
    units, words = copy.deepcopy(pipeline.units_), copy.deepcopy(pipeline.words_)
    candidates = candidate_readings(units, features, n_best, 20, random_state=0)
    return CollapsedNbestJoint(units, words, features, candidates,
                               lambda reading: spoken([reading], pipeline.pause_units_)[0][1], random_state)


def test_one_candidate_a_round_is_each_layers_cvi_pass(pipeline, features):
    """n_best=1: a round is, for the unit layer, the leave-one-utterance-out E-step of every Viterbi reading in
    turn under the MEAN tables of the others' statistics (written out here from `reading_expectations`), and for
    the word layer `CollapsedNoisyWords.update` of every Viterbi string in the same order (its cvi pass, one unit
    an utterance); its objective the sum of both layers' leave-one-out log Z."""
    joint = joint_of(pipeline, features, 1, random_state=4)
    units, said = pipeline.units_, joint.word_unit >= 0
    assert len(joint.readings) == len(features)
    local = [units.reading_expectations([x], [r], MEAN)[0] for x, r in zip(features, joint.readings)]
    total = UnitCounts(*(sum(counts[b] for counts in local) for b in range(3)))
    words = copy.deepcopy(pipeline.words_).collapsed_over([list(joint.strings[c]) for c in np.flatnonzero(said)],
                                                          np.ones(said.sum()), np.random.default_rng(0), NO_CHECKPOINT)
    objective = 0.0
    for u in np.random.default_rng(4).permutation(len(features)):
        others = UnitCounts(*(t - mine for t, mine in zip(total, local[u])))
        local[u], log_z = units.reading_expectations([features[u]], [joint.readings[u]], MEAN, counts=others)
        total = UnitCounts(*(t + mine for t, mine in zip(others, local[u])))
        objective += log_z[0] + (words.update(joint.word_unit[u]) if said[u] else 0.0)
    words.after_pass(0)
    joint.fit(1)
    np.testing.assert_array_equal(joint.posterior, 1.0)
    assert joint.objective[0] == pytest.approx(objective, rel=1e-9)
    for mine, want in zip(joint.acoustic.counts, total):
        np.testing.assert_allclose(mine, want, rtol=1e-9, atol=1e-8)
    mine, want = joint.learner.state(), words.state()
    for name in ("edits", "customers", "log_empty", "tables", "rules", "local_customers", "local_edits"):
        np.testing.assert_allclose(mine[name], want[name], rtol=1e-9, atol=1e-10)


def summed_word_counts(learner, left_out):
    """The word layer's collapsed counts summed afresh from every unit's local statistics but ``left_out``'s."""
    fresh = copy.deepcopy(learner)
    fresh.customers[:], fresh.log_empty[:], fresh.edits[:], fresh.rules[:] = 0.0, 0.0, 0.0, 0.0
    fresh.words_total = 0.0
    for i in range(len(fresh.local_words)):
        if i not in left_out:
            fresh._move(i, 1.0)
    return fresh


def test_the_posterior_is_the_normalised_leave_one_out_evidence(pipeline, features):
    """After a round, each utterance's update gives q(k | u) ∝ exp(A^-u + W^-u) with A^-u the log Z of its readings
    under the MEAN tables of the other utterances' unit statistics summed afresh, and W^-u the chart log Z of their
    spoken strings under eq. C1 of the other utterances' word statistics summed afresh."""
    joint = joint_of(pipeline, features, 4).fit(1)
    many = [u for u in range(len(features)) if joint.bounds[u + 1] - joint.bounds[u] > 1]
    assert len(many) >= 3
    for u in many[:4]:
        a, b = joint.bounds[u], joint.bounds[u + 1]
        dense = []
        for v, (units, trans, columns, stats) in enumerate(joint.acoustic.local):
            if v != u:
                full = np.zeros_like(joint.acoustic.counts.stats)
                full[:, columns] = stats
                dense.append((units, trans, full))
        others = UnitCounts(*(sum(parts[block] for parts in dense) for block in range(3)))
        acoustic = joint.units.reading_log_evidence(joint.features[a:b], joint.readings[a:b], MEAN, counts=others)
        word_units = joint.word_unit[a:b]
        fresh = summed_word_counts(joint.learner, set(word_units.tolist()))
        assert np.all(word_units >= 0)
        lexical = fresh.unit_log_evidence(word_units, fresh.predictive())
        scores = acoustic + lexical
        want = np.exp(scores - scores.max())
        joint.update(u)
        np.testing.assert_allclose(joint.posterior[a:b], want / want.sum(), rtol=1e-7, atol=1e-12)
    assert min(joint.posterior[joint.bounds[u]:joint.bounds[u + 1]].max() for u in many[:4]) < 0.99     # not one-hot


def test_lexicon_discovery_reads_by_the_most_probable_candidate(pipeline, features):
    model = LexiconDiscovery(**CVI, joint="nbest", joint_rounds=3, n_best=4).fit(features)
    assert len(model.joint_objective_) == 3 and all(np.isfinite(model.joint_objective_))
    for posterior in model.reading_posterior_:
        assert posterior.sum() == pytest.approx(1.0)
    assert any(np.sort(posterior)[-2:-1].sum() > 1e-3 for posterior in model.reading_posterior_ if len(posterior) > 1)
    best = [readings[int(np.argmax(q))] for readings, q in zip(model.candidates_, model.reading_posterior_)]
    assert [reading_key(r) for r in model.readings_] == [reading_key(r) for r in best]
    assert model.lexicon_ == type_counts(model._tokens(model.readings_))
    assert model.units_ is not pipeline.units_
    assert not np.array_equal(model.units_.counts_.stats, pipeline.units_.counts_.stats)
    assert model.words_.learner_ is not pipeline.words_.learner_ and model.words_.lexicon_


NBEST = {**CVI, "joint": "nbest", "joint_rounds": 4, "n_best": 4}


@pytest.fixture(scope="module")
def nbest(features):
    return LexiconDiscovery(**NBEST).fit(features)


# the collapsed word learner's state (`CollapsedNoisyWords.state`)
CVI_WORD_STATE = ("edits", "customers", "log_empty", "tables", "rules", "local_customers", "local_edits")


@pytest.mark.parametrize("every,stop_at,saved", [(1, 3, 2), (3, 2, 0)])
def test_stopped_collapsed_rounds_resume_from_the_checkpoint_and_end_as_an_uninterrupted_fit(
        features, nbest, tmp_path, monkeypatch, every, stop_at, saved):
    """Four rounds, stopped in round ``stop_at``: run again, the same call runs only the rounds after the last
    saved one and ends bit for bit as a fit without a checkpoint; once complete, it runs none."""
    path = tmp_path / "run.ckpt"
    counting_rounds(monkeypatch, stop_at, CollapsedNbestJoint, "sweep")
    with pytest.raises(Interrupted):
        LexiconDiscovery(**NBEST).fit(features, checkpoint=path, checkpoint_every=every)
    assert checkpoint_passes(f"{path}.nbest") == ((saved, False) if saved else None)
    calls = counting_rounds(monkeypatch, None, CollapsedNbestJoint, "sweep")
    resumed = LexiconDiscovery(**NBEST).fit(features, checkpoint=path, checkpoint_every=every)
    assert len(calls) == 4 - saved
    assert checkpoint_passes(f"{path}.nbest") == (4, True)
    assert_same_fit(resumed, nbest, CVI_WORD_STATE)
    calls = counting_rounds(monkeypatch, None, CollapsedNbestJoint, "sweep")
    again = LexiconDiscovery(**NBEST).fit(features, checkpoint=path, checkpoint_every=every)
    assert calls == []
    assert_same_fit(again, nbest, CVI_WORD_STATE)

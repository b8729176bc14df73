"""The n-best joint rounds with their E-steps on Dask shards (models/discovery_nbest_shards.py): the same J1, q(k | u)
and layers as the rounds in one process, through `LexiconDiscovery.fit(client=)` too, and a sharded fit stopped and
run again with a checkpoint ends as an uninterrupted one."""
import copy

import numpy as np
import pytest

from cvbayes.checkpoints import checkpoint_passes
from cvbayes.models.discovery import LexiconDiscovery, spoken
from cvbayes.models.discovery_nbest import candidate_readings
from cvbayes.models.discovery_nbest_shards import ShardedNbestJoint
from tests.models import test_discovery_nbest as nbest_tests
from tests.models.test_discovery_nbest import NBEST, Interrupted, assert_same_fit, joint_of

# the n-best tests' fixtures: their data and the pipeline fitted to it
features, pipeline = nbest_tests.features, nbest_tests.pipeline


def joints(pipeline, features, client, n_shards):
    """An `NbestJoint` and a `ShardedNbestJoint` on copies of the pipeline's layers, over the same candidates."""
    local = joint_of(pipeline, features, 5)
    units, words = copy.deepcopy(pipeline.units_), copy.deepcopy(pipeline.words_)
    candidates = candidate_readings(units, features, 5, 20, random_state=0)
    sharded = ShardedNbestJoint(units, words, features, candidates,
                                lambda reading: spoken([reading], pipeline.pause_units_)[0][1], client=client,
                                n_shards=n_shards)
    return local, sharded


def assert_close_rounds(sharded, local):
    np.testing.assert_allclose(sharded.objective, local.objective, rtol=1e-9)
    np.testing.assert_allclose(sharded.posterior, local.posterior, rtol=1e-9, atol=1e-12)
    for mine, theirs in zip(sharded.units.counts_, local.units.counts_):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-9)
    for name in ("edit_counts", "rule_counts", "first", "second", "log_pi"):
        np.testing.assert_allclose(getattr(sharded.learner, name), getattr(local.learner, name), rtol=1e-9,
                                   atol=1e-12)


def test_sharded_rounds_are_the_rounds_in_one_process(pipeline, features, client):
    """Three rounds on three shards of utterances (every candidate of one in the same shard) and of strings."""
    local, sharded = joints(pipeline, features, client, 3)
    assert sharded.unit_shards.n_shards == 3 and sharded.type_shards.n_shards == 3
    owners = [set(sharded.owner[a:b]) for a, b in zip(sharded.candidate_bounds[:-1], sharded.candidate_bounds[1:])]
    assert all(not (a & b) for a, b in zip(owners, owners[1:]))
    local.fit(3)
    sharded.fit(3)
    assert_close_rounds(sharded, local)
    assert len(sharded.unit_shards.passes) == len(sharded.type_shards.passes) == 3 + 4


def test_lexicon_discovery_runs_the_rounds_on_the_client(features, client):
    reference = LexiconDiscovery(**NBEST).fit(features)
    sharded = LexiconDiscovery(**NBEST).fit(features, client=client, n_shards=3)
    np.testing.assert_allclose(sharded.joint_objective_, reference.joint_objective_, rtol=1e-9)
    for mine, theirs in zip(sharded.reading_posterior_, reference.reading_posterior_):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12)
    assert sharded.lexicon_ == reference.lexicon_


def test_stopped_sharded_rounds_resume_from_the_checkpoint(features, client, tmp_path, monkeypatch):
    """Stopped in round 3 of 4 (rounds saved every round), run again: only rounds 3-4 run, on the shards, and the
    fit ends as an uninterrupted sharded one."""
    path = tmp_path / "run.ckpt"
    reference = LexiconDiscovery(**NBEST).fit(features, client=client, n_shards=2)
    step, calls = ShardedNbestJoint.step_parameters, []

    def counted(joint, weights, stop_at=None):
        calls.append(len(calls))
        if len(calls) == stop_at:
            raise Interrupted
        return step(joint, weights)

    monkeypatch.setattr(ShardedNbestJoint, "step_parameters", lambda joint, weights: counted(joint, weights, 3))
    with pytest.raises(Interrupted):
        LexiconDiscovery(**NBEST).fit(features, client=client, n_shards=2, checkpoint=path)
    assert checkpoint_passes(f"{path}.nbest") == (2, False)
    calls.clear()
    monkeypatch.setattr(ShardedNbestJoint, "step_parameters", counted)
    resumed = LexiconDiscovery(**NBEST).fit(features, client=client, n_shards=2, checkpoint=path)
    assert len(calls) == 2
    assert_same_fit(resumed, reference)

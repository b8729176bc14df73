"""NoisyWords' VB on shards of its utterance types (cvbayes.models.noisy_words_shards, issue 31): a Dask
LocalCluster of two worker processes against one process with 1 and 3 shards, a shard folder kept for the same
utterances and refused for others, and the learners and options that do not run on shards refused."""
import numpy as np
import pytest

from cvbayes.models.noisy_words import NoisyWords, ServedWords
from cvbayes.models.shards import ShardMismatchError
from tests.models.dask_cluster import assert_shard_refusals, fitted_twice_on, objectives
from tests.models.test_noisy_words import noisy_corpus

pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")

# the sums differ from one process's only in their order (measured 3e-14 relative, 3 shards)
RELATIVE = 1e-10
OPTIONS = dict(algorithm="vb", n_iter=3, init_iter=2, truncation=12, random_state=1)


@pytest.fixture(scope="module")
def utterances():
    utterances, _ = noisy_corpus(40)
    return utterances


@pytest.fixture(scope="module")
def single(utterances):
    return NoisyWords(**OPTIONS).fit(utterances)


@pytest.mark.parametrize("n_shards", [1, 3])
def test_vb_equals_one_process(client, utterances, single, n_shards):
    """The ELBOs, expected edit counts, q(v) and the refreshed grammaton with its customers to 1e-10; a pass's
    timing names every shard."""
    sharded = NoisyWords(**OPTIONS).fit(utterances, client=client, n_shards=n_shards)
    np.testing.assert_allclose(objectives(sharded), objectives(single), rtol=RELATIVE, atol=0)
    np.testing.assert_allclose(sharded.edit_counts_, single.edit_counts_, rtol=RELATIVE,
                               atol=RELATIVE * single.edit_counts_.max())
    for name in ("first", "second", "log_pi", "rule_counts"):
        np.testing.assert_allclose(getattr(sharded.learner_, name), getattr(single.learner_, name), rtol=RELATIVE)
    assert list(sharded.lexicon_) == list(single.lexicon_)
    np.testing.assert_allclose(list(sharded.lexicon_.values()), list(single.lexicon_.values()), rtol=RELATIVE)
    assert sharded.segment(utterances) == single.segment(utterances)
    timing = sharded.shard_timings_
    assert len(timing) == OPTIONS["n_iter"] and len(timing[0]["compute"]) == n_shards
    assert all(seconds > 0 for seconds in timing[0]["compute"])


def test_served_words_add_up_by_string_in_order_of_first_appearance():
    first, second = ServedWords({(0,): 1.0, (1, 2): 0.5}), ServedWords({(2,): 0.25, (1, 2): 0.25})
    total = first + second
    assert isinstance(total, ServedWords) and list(total.items()) == [((0,), 1.0), ((1, 2), 0.75), ((2,), 0.25)]
    assert first == {(0,): 1.0, (1, 2): 0.5}


def test_a_shard_folder_serves_the_same_utterances_only(client, utterances, tmp_path):
    folder = tmp_path / "shards"
    options = dict(OPTIONS, n_iter=1)
    first, again = fitted_twice_on(folder, lambda shard_folder: NoisyWords(**options).fit(
        utterances, client=client, n_shards=2, shard_folder=shard_folder))
    np.testing.assert_array_equal(objectives(again), objectives(first))
    with pytest.raises(ShardMismatchError, match="holds the shards of another corpus"):
        NoisyWords(**options).fit(utterances[1:], client=client, n_shards=2, shard_folder=folder)


def test_refusals(client, utterances):
    assert_shard_refusals(NoisyWords, utterances, client)

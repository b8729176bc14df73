"""Learning on shards (cvbayes.models.hmm_shards, issue 21): EM, VB, SVI and SCVI on a real Dask
LocalCluster of two worker processes against one process, the sharded CVI-2, and a pass that loses
a worker in its middle."""

import numpy as np
import pytest

from cvbayes import HMM
from cvbayes.models.shards import Shards, shard_bounds, tree_sum
from cvbayes.metrics.tagging import many_to_one
from cvbayes.synthetic import sample_categorical_hmm
from tests.models.dask_cluster import assert_one_worker_replaced, kill_a_worker_during, objectives

pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")

K, W = 4, 30
RELATIVE = 1e-9


def _truth():
    """A planted HMM with sticky states, each emitting mostly its own block of words."""
    trans = np.full((K, K), 0.1 / (K - 1)) + np.eye(K) * (0.9 - 0.1 / (K - 1))
    emit = np.zeros((K, W))
    for k in range(K):
        emit[k, k * (W // K):(k + 1) * (W // K)] = 1.0
    emit = 0.9 * emit / emit.sum(axis=1, keepdims=True) + 0.1 / W
    return np.full(K, 1.0 / K), trans, emit


def _planted(n_sequences=400, seed=0):
    rng = np.random.default_rng(seed)
    return sample_categorical_hmm(*_truth(), rng.integers(5, 30, size=n_sequences), seed)


@pytest.fixture(scope="module")
def corpus():
    return _planted()


def _assert_same_run(single, sharded):
    a, b = objectives(single), objectives(sharded)
    np.testing.assert_allclose(b, a, rtol=RELATIVE, atol=0)
    for x, y in zip(single.counts_, sharded.counts_):
        np.testing.assert_allclose(y, x, rtol=RELATIVE, atol=1e-9 * np.abs(x).max())


@pytest.mark.parametrize("algorithm", ["em", "vb"])
@pytest.mark.parametrize("init", ["params", "local"])
def test_batch_equals_one_process(client, corpus, algorithm, init):
    """EM and VB on 3 shards over 2 workers: the single-process objective trajectory to 1e-9."""
    single = HMM(K, algorithm=algorithm, n_iter=6, random_state=2, init=init).fit(corpus)
    sharded = HMM(K, algorithm=algorithm, n_iter=6, random_state=2, init=init).fit(corpus, client=client, n_shards=3)
    _assert_same_run(single, sharded)
    assert np.all(np.diff(objectives(sharded)) >= -1e-9 * np.abs(objectives(sharded)[1:]))


@pytest.mark.parametrize("algorithm", ["svi", "scvi"])
def test_stochastic_equals_one_process(client, corpus, algorithm):
    """SVI and SCVI draw their minibatches here with the same generator: the same run to 1e-9."""
    options = dict(algorithm=algorithm, n_iter=2, random_state=4, batch_size=60)
    single = HMM(K, **options).fit(corpus)
    sharded = HMM(K, **options).fit(corpus, client=client, n_shards=3)
    _assert_same_run(single, sharded)


def test_buffered_svi_subchains_equal_one_process(client, corpus):
    """SVI on subchains with buffers reads neighbouring tokens, always within the unit's shard."""
    options = dict(algorithm="svi", n_iter=1, random_state=1, batch_size=80, subchain_length=4, buffer=2)
    _assert_same_run(HMM(K, **options).fit(corpus), HMM(K, **options).fit(corpus, client=client))


def test_one_shard_is_cvi2(corpus):
    """With one shard nothing is stale: the sharded CVI-2 is CVI-2 to the bit."""
    cvi2 = HMM(K, algorithm="cvi2", n_iter=3, random_state=5).fit(corpus)
    one = HMM(K, algorithm="cvi2-sharded", n_iter=3, random_state=5).fit(corpus, n_shards=1)
    np.testing.assert_array_equal(objectives(one), objectives(cvi2))
    np.testing.assert_array_equal(one.counts_.emissions, cvi2.counts_.emissions)


def test_sharded_cvi2_learns_and_runs_the_same_on_workers(client, corpus):
    """Three shards: the planted states are found as well as by CVI-2, and the workers' run equals the
    threads' run to the bit (the same shards, the same sum tree)."""
    # a start only a fifth of the way from random emission rows to the planted ones, uniform transitions
    # (from fully random starts CVI-2 itself often merges two of the four states)
    _, _, emit = _truth()
    noise = np.random.default_rng(0).dirichlet(np.ones(W), size=K)
    init = {"startprob": np.full(K, 1.0 / K), "transmat": np.full((K, K), 1.0 / K),
            "emissionprob": 0.2 * emit + 0.8 * noise}
    cvi2 = HMM(K, algorithm="cvi2", n_iter=15, init=init).fit(corpus)
    threads = HMM(K, algorithm="cvi2-sharded", n_iter=15, init=init).fit(corpus, n_shards=3)
    workers = HMM(K, algorithm="cvi2-sharded", n_iter=15, init=init).fit(corpus, n_shards=3, client=client)
    np.testing.assert_array_equal(objectives(workers), objectives(threads))
    np.testing.assert_array_equal(workers.counts_.trans, threads.counts_.trans)
    gold = corpus.gold
    assert many_to_one(threads.predict(corpus), gold) > 0.9
    assert many_to_one(threads.predict(corpus), gold) > many_to_one(cvi2.predict(corpus), gold) - 0.02
    assert objectives(threads)[-1] > objectives(threads)[0] + 0.1 * abs(objectives(threads)[0])
    # the shards' counts stay those of their stored local statistics: nothing negative, the token total kept
    assert threads.counts_.emissions.min() > -1e-6
    assert threads.counts_.emissions[-1].sum() == pytest.approx(corpus.n_tokens, rel=1e-6)
    assert np.all(np.diff(objectives(threads)[3:]) > -5.0)  # settles (not a bound: no monotonicity)


def test_pass_survives_a_killed_worker(client, corpus):
    """A worker process dies in the middle of the third pass (os._exit inside a shard's task):
    Dask reruns its shards on the other worker, which opens them again, and the fit ends as it would
    have without the failure."""
    expected = HMM(K, algorithm="vb", n_iter=5, random_state=7).fit(corpus, client=client, n_shards=4)
    # 4 shards on 2 workers: the 3rd pass's first call dies
    pids_before = kill_a_worker_during(client, "cvbayes.models.hmm_shards", "_batch_shard", 4)
    survived = HMM(K, algorithm="vb", n_iter=5, random_state=7).fit(corpus, client=client, n_shards=4)
    assert_one_worker_replaced(client, pids_before)
    np.testing.assert_array_equal(objectives(survived), objectives(expected))
    np.testing.assert_array_equal(survived.counts_.emissions, expected.counts_.emissions)


def test_shard_files_are_removed(client, corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("CVBAYES_SHARED_DIR", str(tmp_path))
    HMM(K, algorithm="em", n_iter=1).fit(corpus, client=client)
    assert list(tmp_path.iterdir()) == []


def test_refusals(client, corpus):
    with pytest.raises(ValueError, match="does not run on shards"):
        HMM(K, algorithm="cvi1", n_iter=1).fit(corpus, client=client)
    with pytest.raises(ValueError, match="does not run on shards"):
        HMM(K, algorithm="em", n_iter=1).fit(corpus, n_shards=2)
    with pytest.raises(NotImplementedError, match="guarded subchains"):
        HMM(K, algorithm="scvi", n_iter=1, subchain_length=5).fit(corpus, client=client)
    with pytest.raises(ValueError, match="n_shards"):
        HMM(K, algorithm="cvi2-sharded", n_iter=1).fit(corpus, n_shards=0)


def test_shard_bounds_and_tree_sum():
    offsets = np.array([0, 5, 5, 6, 20, 21, 30])
    assert shard_bounds(offsets, 3).tolist() == [0, 4, 6]   # cuts at 10 and 20 tokens fall in one sequence
    assert shard_bounds(offsets, 100).tolist() == [0, 1, 4, 6]   # never more shards than sequences
    assert shard_bounds(np.array([0, 4]), 5).tolist() == [0, 1]
    assert tree_sum([1, 2, 3, 4, 5], lambda a, b: f"({a}+{b})") == "(((1+2)+(3+4))+5)"
    assert tree_sum([(np.ones(2), 1.0), (np.ones(2), 2.0)])[1] == 3.0
    assert 1 < Shards(_planted(10), n_shards=20).n_shards <= 10   # never more shards than sequences


def test_a_shard_folder_is_kept_for_its_corpus_and_refused_for_another(client, corpus, tmp_path):
    from cvbayes.models.shards import ShardMismatchError

    folder = tmp_path / "shards"
    first = HMM(K, algorithm="em", n_iter=2).fit(corpus, client=client, n_shards=2, shard_folder=folder)
    again = HMM(K, algorithm="em", n_iter=2).fit(corpus, client=client, n_shards=2, shard_folder=folder)
    np.testing.assert_array_equal(again.counts_.emissions, first.counts_.emissions)
    assert sorted(path.name for path in folder.iterdir()) == ["shard-00000.npz", "shard-00001.npz", "shards.json"]
    with pytest.raises(ShardMismatchError, match="holds the shards of another corpus"):
        HMM(K, algorithm="em", n_iter=1).fit(_planted(50, seed=3), client=client, n_shards=2, shard_folder=folder)

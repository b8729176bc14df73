"""LDA on shards (cvbayes.models.lda_shards, issue 32): batch VB, online VB and SCVB0 on a Dask
LocalCluster of two worker processes against one process, the sharded CVB0, a worker killed in the
middle of a pass, an unreachable scheduler, and a shard folder from another corpus."""
import socket
import time

import numpy as np
import pytest

from cvbayes import LDA
from cvbayes.cli import main
from cvbayes.models.shards import ShardMismatchError
from tests.models.dask_cluster import assert_one_worker_replaced, fitted_twice_on, kill_a_worker_during, objectives

pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")

K, W = 4, 40
RELATIVE = 1e-12


def _planted(n_documents=150, seed=0):
    """Documents of 20 to 60 tokens from K topics, each mostly on its own block of words."""
    rng = np.random.default_rng(seed)
    topics = np.full((K, W), 0.02 / W)
    for k in range(K):
        topics[k, k * (W // K):(k + 1) * (W // K)] += 0.98 / (W // K)
    X = np.zeros((n_documents, W), dtype=np.int64)
    for d in range(n_documents):
        mixture = rng.dirichlet(np.full(K, 0.2)) @ topics
        np.add.at(X[d], rng.choice(W, size=rng.integers(20, 60), p=mixture / mixture.sum()), 1)
    return X


@pytest.fixture(scope="module")
def documents():
    return _planted()


def _assert_same_run(single, sharded):
    np.testing.assert_allclose(objectives(sharded), objectives(single), rtol=RELATIVE, atol=0)
    np.testing.assert_allclose(sharded.components_, single.components_, rtol=RELATIVE, atol=0)


@pytest.mark.parametrize("n_shards", [1, 3])
def test_vb_equals_one_process(client, documents, n_shards):
    """Batch VB on one worker (one shard) and on both (three shards): the in-process topic-word
    statistics, bound trajectory and document proportions to 1e-12; the bound never decreases."""
    options = dict(algorithm="vb", n_iter=5, random_state=3)
    single = LDA(K, **options).fit(documents)
    sharded = LDA(K, **options).fit(documents, client=client, n_shards=n_shards)
    _assert_same_run(single, sharded)
    np.testing.assert_allclose(sharded.doc_topic_, single.doc_topic_, rtol=RELATIVE, atol=1e-15)
    assert np.all(np.diff(objectives(sharded)) >= -1e-9 * np.abs(objectives(sharded)[1:]))
    timing = sharded.shard_timings_
    assert len(timing) == 5 and len(timing[0]["compute"]) == n_shards
    assert all(seconds > 0 for seconds in timing[0]["compute"])
    assert all(0 < cpu <= seconds * 1.05 + 1e-3 for cpu, seconds in zip(timing[0]["compute_cpu"], timing[0]["compute"]))
    assert timing[0]["bytes_sent"] >= 2 * W * K * 8 and timing[0]["bytes_returned"] >= n_shards * W * K * 8


@pytest.mark.parametrize("algorithm", ["online-vb", "scvb0"])
def test_stochastic_equals_one_process(client, documents, algorithm):
    """The minibatches are drawn here with the schedule's own generator: the same run to 1e-12."""
    options = dict(algorithm=algorithm, n_iter=2, random_state=4, batch_size=40)
    _assert_same_run(LDA(K, **options).fit(documents), LDA(K, **options).fit(documents, client=client, n_shards=3))


def test_one_shard_is_cvb0(documents):
    """With one shard nothing is stale: the sharded CVB0's objectives are CVB0's to the bit."""
    cvb0 = LDA(K, algorithm="cvb0", n_iter=4, random_state=5).fit(documents)
    one = LDA(K, algorithm="cvb0-sharded", n_iter=4, random_state=5).fit(documents, n_shards=1)
    np.testing.assert_array_equal(objectives(one), objectives(cvb0))
    np.testing.assert_allclose(one.components_, cvb0.components_, rtol=RELATIVE)


def test_sharded_cvb0_learns_and_runs_the_same_on_workers(client, documents):
    """Three shards: the workers' run equals the threads' to the bit (the same shards and sum tree), and
    its held-out perplexity is within 5 % of CVB0's."""
    heldout = _planted(60, seed=1)
    options = dict(algorithm="cvb0-sharded", n_iter=30, random_state=6)
    threads = LDA(K, **options).fit(documents, n_shards=3)
    workers = LDA(K, **options).fit(documents, n_shards=3, client=client)
    np.testing.assert_array_equal(objectives(workers), objectives(threads))
    np.testing.assert_array_equal(workers.doc_topic_, threads.doc_topic_)
    cvb0 = LDA(K, algorithm="cvb0", n_iter=30, random_state=6).fit(documents)
    assert threads.perplexity(heldout) < 1.05 * cvb0.perplexity(heldout)
    assert threads.components_.sum() == pytest.approx(documents.sum() + K * W * threads.eta, rel=1e-9)


@pytest.mark.slow
def test_vb_survives_a_killed_worker(client, documents):
    """A worker process dies in the middle of the third pass: Dask reruns its shards on the other worker,
    which reads their last gamma from the shard folder, and the fit ends as it would have without it."""
    options = dict(algorithm="vb", n_iter=5, random_state=7)
    expected = LDA(K, **options).fit(documents, client=client, n_shards=4)
    # 4 shards on 2 workers: the 3rd pass's first call dies
    pids_before = kill_a_worker_during(client, "cvbayes.models.lda_shards", "_vb_shard", 4)
    survived = LDA(K, **options).fit(documents, client=client, n_shards=4)
    assert_one_worker_replaced(client, pids_before)
    np.testing.assert_array_equal(objectives(survived), objectives(expected))
    np.testing.assert_array_equal(survived.components_, expected.components_)
    np.testing.assert_array_equal(survived.doc_topic_, expected.doc_topic_)


def test_a_shard_folder_of_another_corpus_is_refused(client, documents, tmp_path):
    """A named shard folder is used again by a fit of the same corpus and refused, naming it, by one of
    another; a shard file swapped for another corpus's is refused by the worker that opens it."""
    folder = tmp_path / "shards"
    options = dict(algorithm="vb", n_iter=2, random_state=8)
    first, again = fitted_twice_on(folder, lambda shard_folder: LDA(K, **options).fit(
        documents, client=client, n_shards=2, shard_folder=shard_folder))
    np.testing.assert_array_equal(again.components_, first.components_)
    other = _planted(80, seed=2)
    with pytest.raises(ShardMismatchError, match=f"shard folder {folder} holds the shards of another corpus"):
        LDA(K, **options).fit(other, client=client, n_shards=2, shard_folder=folder)
    with pytest.raises(ShardMismatchError, match="cut into 2 shards, not 3"):
        LDA(K, **options).fit(documents, client=client, n_shards=3, shard_folder=folder)
    elsewhere = tmp_path / "other"
    LDA(K, **options).fit(other, client=client, n_shards=2, shard_folder=elsewhere)
    (elsewhere / "shard-00000.npz").replace(folder / "shard-00000.npz")
    with pytest.raises(ShardMismatchError, match="not the shard this fit saved"):
        LDA(K, **options).fit(documents, client=client, n_shards=2, shard_folder=folder)


def test_refusals(client, documents):
    with pytest.raises(ValueError, match="does not run on shards"):
        LDA(K, algorithm="cgs", n_iter=1).fit(documents, client=client)
    with pytest.raises(ValueError, match="does not run on shards"):
        LDA(K, algorithm="vb", n_iter=1).fit(documents, n_shards=2)
    with pytest.raises(ValueError, match="learn_alpha"):
        LDA(K, algorithm="vb", n_iter=1, learn_alpha=True).fit(documents, client=client)
    with pytest.raises(ValueError, match="checkpoint"):
        LDA(K, algorithm="vb", n_iter=1).fit(documents, client=client, checkpoint="x.ckpt")
    with pytest.raises(ValueError, match="checkpoint"):
        LDA(K, algorithm="cvb0-sharded", n_iter=1).fit(documents, n_shards=2, checkpoint="x.ckpt")


def test_lda_fit_names_an_unreachable_scheduler_within_a_timeout(tmp_path, monkeypatch):
    import cvbayes.commands.options

    monkeypatch.setattr(cvbayes.commands.options, "CONNECT_TIMEOUT", 2)
    lines = tmp_path / "docs.txt"
    lines.write_text("apple banana cherry apple\nbanana cherry date banana\n")
    with socket.socket() as free:                   # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{free.getsockname()[1]}"
    started = time.perf_counter()
    with pytest.raises(SystemExit, match=f"cvbayes lda fit: --scheduler {address}: no Dask scheduler answered "
                                         f"within 2 s"):
        main(["lda", "fit", str(lines), "--topics", "2", "--algorithm", "vb", "--min-count", "1", "--max-df", "1",
              "--scheduler", address, "--quiet"])
    assert time.perf_counter() - started < 30
    with pytest.raises(SystemExit, match="--scheduler and --workers take --algorithm"):
        main(["lda", "fit", str(lines), "--topics", "2", "--algorithm", "cgs", "--workers", "1", "--quiet"])

"""The DMV and the PCFG on shards (cvbayes.models.tree_shards, issue 32): EM and VB on a Dask LocalCluster
of two worker processes against one process, the DMV's sharded CVI, a worker killed in the middle of a
pass, a shard folder from another corpus, and the command line's --workers."""
import json

import numpy as np
import pytest

from cvbayes import DMV
from cvbayes.cli import main
from cvbayes.models.pcfg import PCFG
from cvbayes.models.shards import ShardMismatchError
from tests.models.dask_cluster import assert_one_worker_replaced, kill_a_worker_during, objectives

pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")

# the sums differ from one process's only in their order (measured about 1e-15 relative)
RELATIVE = 1e-12


def _tag_sentences(n_sentences=120, seed=0):
    """Sentences of 1 to 8 tags over 5 types, a verb-like tag 0 preferred first."""
    rng = np.random.default_rng(seed)
    return [rng.choice(5, size=rng.integers(1, 9), p=[0.3, 0.25, 0.2, 0.15, 0.1]).tolist()
            for _ in range(n_sentences)]


@pytest.fixture(scope="module")
def tags():
    return _tag_sentences()


@pytest.fixture(scope="module")
def words(tags):
    return [[f"w{t}" for t in sentence] for sentence in tags]


def _assert_same_run(single, sharded, blocks):
    np.testing.assert_allclose(objectives(sharded), objectives(single), rtol=RELATIVE, atol=0)
    for ours, theirs in zip(blocks(sharded), blocks(single)):
        np.testing.assert_allclose(ours, theirs, rtol=RELATIVE, atol=RELATIVE * np.abs(theirs).max())


@pytest.mark.parametrize("algorithm", ["em", "vb"])
@pytest.mark.parametrize("n_shards", [1, 2])
def test_dmv_equals_one_process(client, tags, algorithm, n_shards):
    """The DMV's EM and VB on one shard and on two (each its own worker): the in-process objectives and
    counts to 1e-12; the objective never decreases; a pass's timing names every shard."""
    options = dict(algorithm=algorithm, n_iter=4)
    single = DMV(**options).fit(tags)
    sharded = DMV(**options).fit(tags, client=client, n_shards=n_shards)
    _assert_same_run(single, sharded, lambda model: model.counts_)
    assert np.all(np.diff(objectives(sharded)) >= -1e-9 * np.abs(objectives(sharded)[1:]))
    timing = sharded.shard_timings_
    assert len(timing) == 4 and len(timing[0]["compute"]) == n_shards
    assert all(seconds > 0 for seconds in timing[0]["compute"])
    assert timing[0]["bytes_returned"] >= n_shards * sum(block.nbytes for block in single.counts_)


@pytest.mark.parametrize("algorithm", ["em", "vb"])
@pytest.mark.parametrize("n_shards", [1, 2])
def test_pcfg_equals_one_process(client, words, algorithm, n_shards):
    """The PCFG's EM and VB (grammar induction over 3 nonterminals) on one shard and two: the same run to
    1e-12; the start's E-step is timed apart from the passes."""
    options = dict(n_nonterminals=3, algorithm=algorithm, n_iter=4, random_state=2)
    single = PCFG(**options).fit(words)
    sharded = PCFG(**options).fit(words, client=client, n_shards=n_shards)
    _assert_same_run(single, sharded, lambda model: [model.counts_])
    assert np.all(np.diff(objectives(sharded)) >= -1e-9 * np.abs(objectives(sharded)[1:]))
    assert len(sharded.shard_timings_) == 4 and len(sharded.shard_timings_[0]["compute"]) == n_shards


def test_pcfg_any_grammar_equals_one_process(client):
    """A hand-written grammar with <any> rules: every worker builds its sentences' span ids from their
    token ids and the grammar it was sent, as one process does."""
    grammar = 'Word -> Stem Suffix\nWord -> <any>\nStem -> <any>\nSuffix -> <any>'
    sentences = [list(word) for word in ("walking", "walked", "walks", "talking", "talked", "talks", "jumped",
                                         "jumping", "runs", "sings", "singing")]
    options = dict(grammar=grammar, algorithm="vb", n_iter=3, max_substring=5)
    single = PCFG(**options).fit(sentences)
    sharded = PCFG(**options).fit(sentences, client=client, n_shards=2)
    _assert_same_run(single, sharded, lambda model: [model.counts_])


def test_one_shard_is_cvi(tags):
    """With one shard nothing is stale and the orders are CVI's: the objectives are CVI's to the bit."""
    cvi = DMV(algorithm="cvi", n_iter=4, random_state=5).fit(tags)
    one = DMV(algorithm="cvi-sharded", n_iter=4, random_state=5).fit(tags, n_shards=1)
    np.testing.assert_array_equal(objectives(one), objectives(cvi))
    for ours, theirs in zip(one.counts_, cvi.counts_):
        np.testing.assert_allclose(ours, theirs, rtol=RELATIVE, atol=RELATIVE * theirs.max())


def test_sharded_cvi_runs_the_same_on_workers_and_learns(client, tags):
    """Three shards: the workers' run equals the threads' to the bit (the same shards, orders and sum
    tree); the counts keep their totals (one root a sentence, one attachment a word besides the root; the
    local posteriors are float32), and the training likelihood is within 3 % of CVI's (1.3 % below it
    measured: shards of 40 sentences see the others' counts one pass stale)."""
    options = dict(algorithm="cvi-sharded", n_iter=10, random_state=6)
    threads = DMV(**options).fit(tags, n_shards=3)
    workers = DMV(**options).fit(tags, n_shards=3, client=client)
    np.testing.assert_array_equal(objectives(workers), objectives(threads))
    for ours, theirs in zip(workers.counts_, threads.counts_):
        np.testing.assert_array_equal(ours, theirs)
    n_tokens = sum(map(len, tags))
    assert threads.counts_.root.sum() == pytest.approx(len(tags), rel=1e-5)
    assert threads.counts_.attach.sum() == pytest.approx(n_tokens - len(tags), rel=1e-5)
    cvi = DMV(algorithm="cvi", n_iter=10, random_state=6).fit(tags)
    assert threads.score(tags) > cvi.score(tags) - 0.03 * abs(cvi.score(tags))


@pytest.mark.slow
def test_sharded_cvi_stops_clearly_when_its_worker_dies(client, tags):
    """The sharded CVI's local posteriors live on the workers: a worker that dies in the middle of a pass
    stops the fit with an error saying so (its tasks are pinned to it, so they are not rerun elsewhere)."""
    pids_before = kill_a_worker_during(client, "cvbayes.models.shards", "_sweep_call", 1)
    with pytest.raises(RuntimeError, match="the sharded CVI state of the shards lives on their workers between "
                                           "passes, and the worker .* left the cluster; fit again"):
        DMV(algorithm="cvi-sharded", n_iter=4).fit(tags, client=client, n_shards=2)
    assert_one_worker_replaced(client, pids_before)


@pytest.mark.slow
def test_dmv_survives_a_killed_worker(client, tags):
    """A worker process dies in the middle of the third pass: Dask reruns its shards on the other worker,
    and the fit ends as it would have without it (a shard keeps no state between passes)."""
    options = dict(algorithm="vb", n_iter=5)
    expected = DMV(**options).fit(tags, client=client, n_shards=4)
    # 4 shards on 2 workers: the 3rd pass's first call dies
    pids_before = kill_a_worker_during(client, "cvbayes.models.tree_shards", "_dmv_shard", 4)
    survived = DMV(**options).fit(tags, client=client, n_shards=4)
    assert_one_worker_replaced(client, pids_before)
    np.testing.assert_array_equal(objectives(survived), objectives(expected))
    for ours, theirs in zip(survived.counts_, expected.counts_):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.slow
def test_pcfg_survives_a_killed_worker(client, words):
    options = dict(n_nonterminals=3, algorithm="em", n_iter=4, random_state=3)
    expected = PCFG(**options).fit(words, client=client, n_shards=4)
    # the start's E-step and 2 passes of 4 shards on 2 workers: the 3rd E-step's first call dies
    pids_before = kill_a_worker_during(client, "cvbayes.models.tree_shards", "_pcfg_shard", 4)
    survived = PCFG(**options).fit(words, client=client, n_shards=4)
    assert_one_worker_replaced(client, pids_before)
    np.testing.assert_array_equal(objectives(survived), objectives(expected))
    np.testing.assert_array_equal(survived.counts_, expected.counts_)


def test_a_shard_folder_of_another_corpus_is_refused(client, tags, words, tmp_path):
    """A named shard folder serves a later fit of the same sentences (unwritten) and is refused for
    other sentences, or for the same tokens under another grammar."""
    folder = tmp_path / "shards"
    first = DMV(algorithm="em", n_iter=2).fit(tags, client=client, n_shards=2, shard_folder=folder)
    saved = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    again = DMV(algorithm="em", n_iter=2).fit(tags, client=client, n_shards=2, shard_folder=folder)
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == saved
    np.testing.assert_array_equal(objectives(again), objectives(first))
    with pytest.raises(ShardMismatchError, match=f"shard folder {folder} holds the shards of another corpus"):
        DMV(algorithm="em", n_iter=2).fit(_tag_sentences(seed=1), client=client, n_shards=2, shard_folder=folder)
    grammar = tmp_path / "grammar"
    PCFG(n_nonterminals=2, algorithm="em", n_iter=1).fit(words, client=client, n_shards=2, shard_folder=grammar)
    with pytest.raises(ShardMismatchError, match="holds the shards of another corpus"):
        PCFG(n_nonterminals=3, algorithm="em", n_iter=1).fit(words, client=client, n_shards=2, shard_folder=grammar)


def test_refusals_and_errors_name_the_sentence(client, tags):
    with pytest.raises(ValueError, match="does not run on shards; client= takes em, vb, cvi-sharded"):
        DMV(algorithm="cvi", n_iter=1).fit(tags, client=client)
    with pytest.raises(ValueError, match="checkpoint"):
        DMV(algorithm="cvi-sharded", n_iter=1).fit(tags, n_shards=2, checkpoint="x.ckpt")
    with pytest.raises(ValueError, match="does not run on shards"):
        PCFG(n_nonterminals=2, algorithm="vb", n_iter=1).fit([["a"]], n_shards=2)
    with pytest.raises(ValueError, match="shard_folder="):
        DMV(algorithm="em", n_iter=1).fit(tags, shard_folder="x")
    # "b" has no rule of its own: sentence 3, the second of the second shard, has no tree
    grammar = 'S -> "a"\nS -> S S\nS -> "b" "c"'
    with pytest.raises(ValueError, match=r"in the shard starting at sentence 2: sentence 1 \('b'\) has no tree"):
        PCFG(grammar=grammar, algorithm="em", n_iter=1).fit([["a"], ["a", "a"], ["b", "c"], ["b"]],
                                                            client=client, n_shards=2)


def test_induce_and_pcfg_fit_take_workers(tmp_path, capsys):
    """``cvbayes induce --workers 1`` and ``cvbayes pcfg fit --workers 1``: the in-process objective; a
    learner that does not run on shards is refused before any work."""
    conllu = tmp_path / "train.conllu"
    conllu.write_text("".join(
        "".join(f"{i}\tw\tw\t{tag}\t_\t_\t0\troot\t_\t_\n" for i, tag in enumerate(sentence, 1)) + "\n"
        for sentence in (["NOUN", "VERB"], ["DET", "NOUN", "VERB"], ["PRON", "VERB", "NOUN"], ["VERB"])))
    lines = tmp_path / "sentences.txt"
    lines.write_text("a b\nb a a\na\n")
    commands = (["induce", str(conllu), "-o", str(tmp_path / "dmv.npz"), "--algorithm", "vb", "--iterations", "3"],
                ["pcfg", "fit", str(lines), "--nonterminals", "2", "--algorithm", "em", "--iterations", "3", "-o",
                 str(tmp_path / "pcfg.npz")])
    for command in commands:
        found = []
        for extra in ([], ["--workers", "1"]):
            main([*command, "--json", "--quiet", *extra])
            found.append(json.loads(capsys.readouterr().out)["objective"])
        assert found[1] == pytest.approx(found[0], rel=RELATIVE)
    with pytest.raises(SystemExit, match="--scheduler and --workers take --algorithm em, vb, cvi-sharded"):
        main([*commands[0][:-4], "--algorithm", "cvi", "--workers", "1", "--quiet"])

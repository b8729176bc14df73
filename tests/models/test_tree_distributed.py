"""The DMV, the PCFG and PCFG-LA on shards (cvbayes.models.tree_shards, issue 32): EM and VB on a Dask
LocalCluster of two worker processes against one process, the DMV's and the PCFG's sharded CVI, a worker
killed in the middle of a pass, a shard folder from another corpus, and the command line's --workers."""
import json

import numpy as np
import pytest

from cvbayes import DMV, PCFGLA
from cvbayes.cli import main
from cvbayes.data.trees import format_tree
from cvbayes.models.pcfg import PCFG
from cvbayes.models.shards import ShardMismatchError
from tests.brute_latent import random_tree
from tests.models.dask_cluster import assert_one_worker_replaced, fitted_twice_on, kill_a_worker_during, objectives

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


def _treebank(n_trees=60, seed=0):
    """Random Penn trees of 1 to 7 words (flat, unary and branching phrases mixed)."""
    rng = np.random.default_rng(seed)
    return [random_tree(rng, int(rng.integers(1, 8))) for _ in range(n_trees)]


@pytest.fixture(scope="module")
def treebank():
    return _treebank()


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


@pytest.mark.parametrize("algorithm", ["em", "vb"])
def test_pcfg_la_equals_one_process(client, treebank, algorithm):
    """PCFG-LA's EM and VB (H = 2) on 1, 2 and 4 shards of whole trees: the in-process objectives and
    annotated counts to 1e-13 (about 1e-15 measured: the sums differ only in their order); the objective
    never decreases; the start's E-step (VB's) is timed apart from the passes."""
    options = dict(n_subtypes=2, alpha=0.5, min_count=1, algorithm=algorithm, n_iter=4, random_state=3)
    single = PCFGLA(**options).fit(treebank)
    for n_shards in (1, 2, 4):
        sharded = PCFGLA(**options).fit(treebank, client=client, n_shards=n_shards)
        np.testing.assert_allclose(objectives(sharded), objectives(single), rtol=1e-13, atol=0)
        for ours, theirs in zip(sharded.counts_, single.counts_):
            np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-13 * np.abs(theirs).max())
        assert np.all(np.diff(objectives(sharded)) >= -1e-9 * np.abs(objectives(sharded)[1:]))
        timing = sharded.shard_timings_
        assert len(timing) == 4 and len(timing[0]["compute"]) == n_shards
        assert all(seconds > 0 for seconds in timing[0]["compute"])


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


def test_pcfg_one_shard_is_cvi(words):
    """The PCFG's cvi-sharded with one shard sweeps CVI's order against nothing stale: CVI to the bit."""
    options = dict(n_nonterminals=3, n_iter=4, random_state=2)
    cvi = PCFG(algorithm="cvi", **options).fit(words)
    one = PCFG(algorithm="cvi-sharded", **options).fit(words, n_shards=1)
    np.testing.assert_array_equal(objectives(one), objectives(cvi))
    np.testing.assert_allclose(one.counts_, cvi.counts_, rtol=RELATIVE, atol=RELATIVE * cvi.counts_.max())


def test_pcfg_sharded_cvi_runs_the_same_on_workers_and_learns(client, words):
    """Three shards: the workers (each reading its sentences from its memory-mapped shard) equal the threads
    to the bit; the counts keep their total (2n - 1 rules a sentence of n words; float32 local counts); the
    training likelihood is within 3 % of CVI's and the objective rises (shards of 40 sentences see the
    others' counts one pass stale)."""
    options = dict(n_nonterminals=3, algorithm="cvi-sharded", n_iter=8, random_state=4)
    threads = PCFG(**options).fit(words, n_shards=3)
    workers = PCFG(**options).fit(words, n_shards=3, client=client)
    np.testing.assert_array_equal(objectives(workers), objectives(threads))
    np.testing.assert_array_equal(workers.counts_, threads.counts_)
    assert len(workers.shard_timings_) == 8 and len(workers.shard_timings_[0]["compute"]) == 3
    assert threads.counts_.sum() == pytest.approx(sum(2 * len(s) - 1 for s in words), rel=1e-5)
    assert objectives(threads)[-1] > objectives(threads)[0]
    cvi = PCFG(**{**options, "algorithm": "cvi"}).fit(words)
    assert threads.score(words) > cvi.score(words) - 0.03 * abs(cvi.score(words))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["dmv", "pcfg"])
def test_sharded_cvi_stops_clearly_when_its_worker_dies(fresh_client, tags, words, model):
    """The sharded CVI's local statistics live on the workers: a worker that dies in the middle of a pass
    stops the fit with an error saying so (its tasks are pinned to it, so they are not rerun elsewhere)."""
    pids_before = kill_a_worker_during(fresh_client, "cvbayes.models.shards", "_sweep_call", 1)
    with pytest.raises(RuntimeError, match="the sharded CVI state of the shards lives on their workers between "
                                           "passes, and the worker .* left the cluster; fit again"):
        if model == "dmv":
            DMV(algorithm="cvi-sharded", n_iter=4).fit(tags, client=fresh_client, n_shards=2)
        else:
            PCFG(n_nonterminals=3, algorithm="cvi-sharded", n_iter=4).fit(words, client=fresh_client, n_shards=2)
    assert_one_worker_replaced(fresh_client, pids_before)


# a model on 4 shards of 2 workers whose E-step survives a killed worker, and the task that dies
KILLED = {"dmv": (lambda: DMV(algorithm="vb", n_iter=5), "_dmv_shard"),
          "pcfg": (lambda: PCFG(n_nonterminals=3, algorithm="em", n_iter=4, random_state=3), "_pcfg_shard"),
          "pcfg-la": (lambda: PCFGLA(n_subtypes=2, alpha=0.5, min_count=1, algorithm="vb", n_iter=4, random_state=1),
                      "_pcfg_la_shard")}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(KILLED))
def test_an_e_step_survives_a_killed_worker(fresh_client, tags, words, treebank, name):
    """A worker process dies on its fifth shard task (4 shards on 2 workers: in the third E-step): Dask
    reruns its shards on the other worker, and the fit ends as it would have without it (a shard keeps no
    state between passes)."""
    make, task = KILLED[name]
    data = {"dmv": tags, "pcfg": words, "pcfg-la": treebank}[name]
    expected = make().fit(data, client=fresh_client, n_shards=4)
    pids_before = kill_a_worker_during(fresh_client, "cvbayes.models.tree_shards", task, 4)
    survived = make().fit(data, client=fresh_client, n_shards=4)
    assert_one_worker_replaced(fresh_client, pids_before)
    np.testing.assert_array_equal(objectives(survived), objectives(expected))
    blocks = (lambda model: model.counts_) if name != "pcfg" else (lambda model: [model.counts_])
    for ours, theirs in zip(blocks(survived), blocks(expected)):
        np.testing.assert_array_equal(ours, theirs)


def test_a_shard_folder_of_another_corpus_is_refused(client, tags, words, tmp_path):
    """A named shard folder serves a later fit of the same sentences (unwritten) and is refused for
    other sentences, or for the same tokens under another grammar."""
    folder = tmp_path / "shards"
    first, again = fitted_twice_on(folder, lambda shard_folder: DMV(algorithm="em", n_iter=2).fit(
        tags, client=client, n_shards=2, shard_folder=shard_folder))
    np.testing.assert_array_equal(objectives(again), objectives(first))
    with pytest.raises(ShardMismatchError, match=f"shard folder {folder} holds the shards of another corpus"):
        DMV(algorithm="em", n_iter=2).fit(_tag_sentences(seed=1), client=client, n_shards=2, shard_folder=folder)
    grammar = tmp_path / "grammar"
    PCFG(n_nonterminals=2, algorithm="em", n_iter=1).fit(words, client=client, n_shards=2, shard_folder=grammar)
    with pytest.raises(ShardMismatchError, match="holds the shards of another corpus"):
        PCFG(n_nonterminals=3, algorithm="em", n_iter=1).fit(words, client=client, n_shards=2, shard_folder=grammar)
    trees = tmp_path / "trees"
    PCFGLA(min_count=1, algorithm="em", n_iter=1).fit(_treebank(), client=client, n_shards=2, shard_folder=trees)
    PCFGLA(n_subtypes=3, min_count=1, algorithm="vb", n_iter=1).fit(_treebank(), client=client, n_shards=2,
                                                                     shard_folder=trees)
    with pytest.raises(ShardMismatchError, match="holds the shards of another corpus"):
        PCFGLA(min_count=1, algorithm="em", n_iter=1).fit(_treebank(seed=1), client=client, n_shards=2,
                                                          shard_folder=trees)


def test_refusals_and_errors_name_the_sentence(client, tags):
    with pytest.raises(ValueError, match="does not run on shards; client= takes em, vb, cvi-sharded"):
        DMV(algorithm="cvi", n_iter=1).fit(tags, client=client)
    with pytest.raises(ValueError, match="checkpoint"):
        DMV(algorithm="cvi-sharded", n_iter=1).fit(tags, n_shards=2, checkpoint="x.ckpt")
    with pytest.raises(ValueError, match="does not run on shards"):
        PCFG(n_nonterminals=2, algorithm="vb", n_iter=1).fit([["a"]], n_shards=2)
    with pytest.raises(ValueError, match="checkpoint"):
        PCFG(n_nonterminals=2, algorithm="cvi-sharded", n_iter=1).fit([["a"]], n_shards=2, checkpoint="x.ckpt")
    with pytest.raises(ValueError, match="does not run on shards; client= takes em, vb$"):
        PCFGLA(algorithm="cvi", n_iter=1).fit(_treebank(), client=client)
    with pytest.raises(ValueError, match="shard_folder="):
        DMV(algorithm="em", n_iter=1).fit(tags, shard_folder="x")
    # "b" has no rule of its own: sentence 3, the second of the second shard, has no tree
    grammar = 'S -> "a"\nS -> S S\nS -> "b" "c"'
    with pytest.raises(ValueError, match=r"in the shard starting at sentence 2: sentence 1 \('b'\) has no tree"):
        PCFG(grammar=grammar, algorithm="em", n_iter=1).fit([["a"], ["a", "a"], ["b", "c"], ["b"]],
                                                            client=client, n_shards=2)


def test_induce_and_pcfg_fit_take_workers(tmp_path, capsys):
    """``cvbayes induce --workers 1``, ``cvbayes pcfg fit --workers 1`` and ``cvbayes pcfg-la fit --workers
    1``: the in-process objective; ``pcfg fit --algorithm cvi-sharded --workers 1`` (one shard) is cvi's; a
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
    treebank = tmp_path / "trees.mrg"
    treebank.write_text("".join(format_tree(tree) + "\n" for tree in _treebank(12)))
    commands += (["pcfg-la", "fit", str(treebank), "-o", str(tmp_path / "la.npz"), "--algorithm", "vb", "--iterations",
                  "3", "--min-count", "1"],)

    def objective(command):
        main([*command, "--json", "--quiet"])
        return json.loads(capsys.readouterr().out)["objective"]

    for command in commands:
        assert objective([*command, "--workers", "1"]) == pytest.approx(objective(command), rel=RELATIVE)
    cvi = commands[1][:6] + ["cvi", *commands[1][7:]]
    assert objective([*commands[1][:6], "cvi-sharded", *commands[1][7:], "--workers", "1"]) == objective(cvi)
    with pytest.raises(SystemExit, match="--scheduler and --workers take --algorithm em, vb, cvi-sharded"):
        main([*commands[0][:-4], "--algorithm", "cvi", "--workers", "1", "--quiet"])

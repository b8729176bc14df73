"""The adaptor grammar's VB on shards of its utterance types (cvbayes.models.adaptor.sharded, issue 32): a
Dask LocalCluster of two worker processes against one process with 1, 2 and 4 shards, a worker killed in
the middle of a pass, a shard folder from another corpus, and ``cvbayes segment --workers``."""
import json

import numpy as np
import pytest

from cvbayes.cli import main
from cvbayes.models.adaptor import AdaptorGrammar
from cvbayes.models.adaptor.layout import utterance_types
from cvbayes.models.shards import ShardMismatchError
from tests.models.dask_cluster import (assert_one_worker_replaced, assert_shard_refusals, fitted_twice_on,
                                      kill_a_worker_during, objectives)

pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")

# the sums differ from one process's only in their order (measured below 1e-15 relative)
RELATIVE = 1e-12


def _utterances(n_utterances=80, seed=0):
    """Utterances of 1 to 3 words over a lexicon of 6, so that many repeat (types of 1 to 10+ copies)."""
    rng = np.random.default_rng(seed)
    lexicon = ["ab", "ba", "abb", "c", "ca", "bca"]
    return [list("".join(rng.choice(lexicon, size=rng.integers(1, 4)))) for _ in range(n_utterances)]


@pytest.fixture(scope="module")
def utterances():
    return _utterances()


def _statistics(model):
    """VB's expected base rule counts, expected customers, and the learned a and b."""
    learner = model.learner_
    return [learner.counts, learner.served, model.discount, model.concentration]


def _assert_same_run(single, sharded):
    np.testing.assert_allclose(objectives(sharded), objectives(single), rtol=RELATIVE, atol=0)
    for ours, theirs in zip(_statistics(sharded), _statistics(single)):
        np.testing.assert_allclose(ours, theirs, rtol=RELATIVE, atol=RELATIVE * np.abs(theirs).max())
    assert sharded.lexicon_.keys() == single.lexicon_.keys()


def test_the_utterances_repeat(utterances):
    """The data exercise the grouping by copies: several types, and several numbers of copies."""
    _, copies = utterance_types(utterances)
    assert len(copies) < len(utterances) and len(set(copies.tolist())) >= 3


@pytest.mark.parametrize("n_shards", [1, 2, 4])
def test_vb_equals_one_process(client, utterances, n_shards):
    """The unigram grammar's VB on 1, 2 and 4 shards of the utterance types over two workers: the
    in-process ELBOs, expected counts and customers to 1e-12; a pass's timing names every shard."""
    options = dict(grammar="unigram", a=0.1, truncation=30, algorithm="vb", n_iter=4, random_state=1)
    single = AdaptorGrammar(**options).fit(utterances)
    sharded = AdaptorGrammar(**options).fit(utterances, client=client, n_shards=n_shards)
    _assert_same_run(single, sharded)
    assert sharded.segment(utterances) == single.segment(utterances)
    timing = sharded.shard_timings_
    assert len(timing) == 4 and len(timing[0]["compute"]) == n_shards
    assert all(seconds > 0 for seconds in timing[0]["compute"])
    assert timing[0]["bytes_returned"] >= n_shards * 2 * single.learner_.served.nbytes


def test_nested_grammar_equals_one_process_and_learned_hyperparameters_nearly(client, utterances):
    """The colloc grammar (Word under Colloc): the in-process run to 1e-12 (measured 5e-16).  Learning a
    and b after every pass, q and a, b are updated where the fit runs from the shards' summed statistics,
    but L-BFGS-B (`hyperparameters.maximise`, finite-difference gradients) stops at a point that moves with
    the last bits of its input: measured b 1e-7, a 8e-9 and the ELBO 5e-10 apart with 2 to 4 shards."""
    options = dict(grammar="colloc", a=0.2, truncation=30, algorithm="vb", n_iter=3)
    _assert_same_run(AdaptorGrammar(**options).fit(utterances),
                     AdaptorGrammar(**options).fit(utterances, client=client, n_shards=3))
    options["estimate_hyperparameters"] = True
    single = AdaptorGrammar(**options).fit(utterances)
    sharded = AdaptorGrammar(**options).fit(utterances, client=client, n_shards=3)
    np.testing.assert_allclose(objectives(sharded), objectives(single), rtol=1e-8, atol=0)
    np.testing.assert_allclose(sharded.concentration, single.concentration, rtol=1e-5)
    np.testing.assert_allclose(sharded.discount, single.discount, atol=1e-6)
    assert not np.array_equal(sharded.concentration, AdaptorGrammar(**options).concentration)


@pytest.mark.slow
def test_vb_survives_a_killed_worker(client, utterances):
    """A worker process dies in the middle of the third pass: Dask reruns its shards on the other worker,
    and the fit ends as it would have without it (a shard keeps no state between passes)."""
    options = dict(grammar="unigram", truncation=30, algorithm="vb", n_iter=4, random_state=2)
    expected = AdaptorGrammar(**options).fit(utterances, client=client, n_shards=4)
    # 4 shards on 2 workers, no E-step before the passes: the 3rd pass's first call dies
    pids_before = kill_a_worker_during(client, "cvbayes.models.adaptor.sharded", "_types_shard", 4)
    survived = AdaptorGrammar(**options).fit(utterances, client=client, n_shards=4)
    assert_one_worker_replaced(client, pids_before)
    np.testing.assert_array_equal(objectives(survived), objectives(expected))
    for ours, theirs in zip(_statistics(survived), _statistics(expected)):
        np.testing.assert_array_equal(ours, theirs)


def test_a_shard_folder_of_another_corpus_is_refused(client, utterances, tmp_path):
    """A named shard folder serves a later fit of the same utterances and grammar (unwritten) and is
    refused for other utterances, or for the same utterances under another grammar."""
    folder = tmp_path / "shards"
    options = dict(truncation=30, algorithm="vb", n_iter=2)
    first, again = fitted_twice_on(folder, lambda shard_folder: AdaptorGrammar(**options).fit(
        utterances, client=client, n_shards=2, shard_folder=shard_folder))
    np.testing.assert_array_equal(objectives(again), objectives(first))
    with pytest.raises(ShardMismatchError, match=f"shard folder {folder} holds the shards of another corpus"):
        AdaptorGrammar(**options).fit(_utterances(seed=1), client=client, n_shards=2, shard_folder=folder)
    with pytest.raises(ShardMismatchError, match="holds the shards of another corpus"):
        AdaptorGrammar("colloc", **options).fit(utterances, client=client, n_shards=2, shard_folder=folder)


def test_refusals(client, utterances):
    assert_shard_refusals(AdaptorGrammar, utterances, client)


def test_segment_takes_workers(tmp_path, capsys, utterances):
    """``cvbayes segment --workers 1``: the in-process objective; cvi and mcmc, and a saved --model (nothing
    to train), are refused before any work."""
    text = tmp_path / "utterances.txt"
    text.write_text("".join(" ".join(u) + "\n" for u in utterances[:30]))
    command = ["segment", str(text), "--algorithm", "vb", "--iterations", "2", "--restarts", "1", "-o",
               str(tmp_path / "out.txt"), "--json", "--quiet"]
    found = []
    for extra in ([], ["--workers", "1"]):
        main([*command, *extra])
        found.append(json.loads(capsys.readouterr().out)["objective"])
    assert found[1] == pytest.approx(found[0], rel=RELATIVE)
    with pytest.raises(SystemExit, match="cvbayes segment: --scheduler and --workers take --algorithm vb"):
        main(["segment", str(text), "--algorithm", "cvi", "--workers", "1", "--quiet"])
    with pytest.raises(SystemExit, match="--model segments without training"):
        main(["segment", str(text), "--model", "x.npz", "--workers", "1", "--quiet"])

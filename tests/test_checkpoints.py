"""Checkpoints (cvbayes.checkpoints): a fit stopped after some passes and started again with the same call
ends bit for bit as an uninterrupted one (fitted arrays and history objectives), for every algorithm of the
HMM, LDA, the PCFG, the DMV and the adaptor grammar (every model's, on less: models/test_contract.py);
other runs' and damaged checkpoints are refused by name; and `cvbayes fit --checkpoint` killed with SIGKILL
at random moments, inside saves too, resumes to the uninterrupted model."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse

from cvbayes import HMM
from cvbayes.checkpoints import CheckpointError, checkpoint_passes, read_checkpoint
from cvbayes.families import Gaussian
from cvbayes.files import TEMPORARY_SUFFIX, WRITE_DELAY_VARIABLE
from cvbayes.models.lda import ALGORITHMS as LDA_ALGORITHMS, LDA
from cvbayes.models.pcfg import ALGORITHMS as PCFG_ALGORITHMS, PCFG
from cvbayes.synthetic import random_hmm, sample_categorical_hmm

N_ITER = 6
STOP_AFTER = 3


class Interrupted(Exception):
    """What the test's callback raises to stop a fit after a pass (as a KeyboardInterrupt would)."""


def stopping_after(passes):
    """A callback that stops the fit in the pass after ``passes`` (its checkpoint not yet written)."""
    def callback(model, iteration):
        if iteration == passes:
            raise Interrupted
    return callback


def hmm_corpus():
    params = random_hmm(3, 8, np.random.default_rng(0))
    return sample_categorical_hmm(*params, np.full(30, 12), seed=1)


def stopped_then_resumed(fit, fitted, path, every=1, stop_after=STOP_AFTER):
    """Fit uninterrupted; fit with a checkpoint, stopped after ``stop_after`` passes; fit again with the same
    call.  Asserts the resumed run's fitted arrays and objectives equal the uninterrupted run's."""
    reference = fit(checkpoint=None)
    with pytest.raises(Interrupted):
        fit(checkpoint=path, checkpoint_every=every, callback=stopping_after(stop_after))
    saved = stop_after - stop_after % every
    assert checkpoint_passes(path) == ((saved, False) if saved else None)
    resumed = fit(checkpoint=path, checkpoint_every=every)
    assert resumed.resumed_from_ == saved
    for name, expected in fitted(reference).items():
        assert np.array_equal(fitted(resumed)[name], expected), name
    assert [r.objective for r in resumed.history_] == [r.objective for r in reference.history_]
    assert [r.iteration for r in resumed.history_] == list(range(N_ITER))
    assert checkpoint_passes(path) == (N_ITER, True)
    return reference, resumed


def hmm_fitted(model):
    arrays = dict(zip(("start", "trans", "emissions"), model.counts_))
    if hasattr(model, "states_"):
        arrays["states"] = model.states_
    return arrays


# the eight of thesis ch. 3 (cvi2-sharded's shards do not save their local statistics yet)
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi1", "cvi2", "cvi3", "cgs", "svi", "scvi"])
def test_every_hmm_algorithm_resumes_bit_for_bit(tmp_path, algorithm):
    corpus = hmm_corpus()
    options = {"batch_size": 7} if algorithm in ("svi", "scvi") else {}

    def fit(**checkpointing):
        return HMM(3, algorithm=algorithm, n_iter=N_ITER, random_state=3, **options).fit(corpus, **checkpointing)

    stopped_then_resumed(fit, hmm_fitted, tmp_path / "run.ckpt")


@pytest.mark.parametrize("algorithm", ["cgs", "svi", "cvi2"])
def test_hmm_resumes_with_checkpoints_every_other_pass(tmp_path, algorithm):
    corpus = hmm_corpus()

    def fit(**checkpointing):
        return HMM(3, algorithm=algorithm, n_iter=N_ITER, random_state=5, init="local",
                   batch_size=9).fit(corpus, **checkpointing)

    stopped_then_resumed(fit, hmm_fitted, tmp_path / "run.ckpt", every=2)


def test_gaussian_hmm_resumes_bit_for_bit(tmp_path):
    rng = np.random.default_rng(4)
    sequences = [rng.normal(size=(15, 2)) + 3 * (np.arange(15) % 2)[:, None] for _ in range(10)]

    def fit(**checkpointing):
        return HMM(2, emission=Gaussian(shape=1.0), algorithm="cvi2", n_iter=N_ITER,
                   random_state=1).fit(sequences, **checkpointing)

    stopped_then_resumed(fit, hmm_fitted, tmp_path / "run.ckpt")


def test_a_complete_checkpoint_restores_the_fit_without_training(tmp_path):
    corpus = hmm_corpus()
    path = tmp_path / "run.ckpt"
    first = HMM(3, algorithm="cgs", n_iter=N_ITER).fit(corpus, checkpoint=path)
    calls = []
    again = HMM(3, algorithm="cgs", n_iter=N_ITER).fit(corpus, checkpoint=path,
                       callback=lambda model, iteration: calls.append(iteration))
    assert calls == [] and again.resumed_from_ == N_ITER
    assert all(np.array_equal(a, b) for a, b in zip(first.counts_, again.counts_))
    assert [r.objective for r in again.history_] == [r.objective for r in first.history_]


def test_another_runs_checkpoint_is_refused_by_name(tmp_path):
    corpus = hmm_corpus()
    path = tmp_path / "run.ckpt"
    HMM(3, algorithm="cvi2", n_iter=2, random_state=0).fit(corpus, checkpoint=path)
    with pytest.raises(CheckpointError, match=f"{path}: the checkpoint of another run \\(seed: saved 0, now 1\\)"):
        HMM(3, algorithm="cvi2", n_iter=2, random_state=1).fit(corpus, checkpoint=path)
    with pytest.raises(CheckpointError, match="n_iter: saved 2, now 3"):
        HMM(3, algorithm="cvi2", n_iter=3, random_state=0).fit(corpus, checkpoint=path)
    with pytest.raises(CheckpointError, match="algorithm: saved \"cvi2\", now \"cgs\""):
        HMM(3, algorithm="cgs", n_iter=2, random_state=0).fit(corpus, checkpoint=path)
    with pytest.raises(CheckpointError, match="other data"):
        HMM(3, algorithm="cvi2", n_iter=2, random_state=0).fit(corpus[:20], checkpoint=path)
    with pytest.raises(CheckpointError, match="params"):
        HMM(3, alpha=0.5, algorithm="cvi2", n_iter=2, random_state=0).fit(corpus, checkpoint=path)
    with pytest.raises(ValueError, match="n_init=1"):
        HMM(3, algorithm="cvi2", n_iter=2, n_init=2).fit(corpus, checkpoint=path)


def test_a_damaged_checkpoint_is_refused_by_name(tmp_path):
    corpus = hmm_corpus()
    path = tmp_path / "run.ckpt"
    HMM(3, algorithm="cvi2", n_iter=2).fit(corpus, checkpoint=path)
    meta, arrays = read_checkpoint(path)
    data = bytearray(path.read_bytes())
    # flip one byte of the last array's payload (checkpoints are stored uncompressed)
    payload = np.ascontiguousarray(arrays[sorted(arrays)[-1]]).tobytes()
    at = bytes(data).rindex(payload[:16]) + 3
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{path}: .*damaged"):
        HMM(3, algorithm="cvi2", n_iter=2).fit(corpus, checkpoint=path)
    path.write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match=f"{path}: not a cvbayes checkpoint"):
        HMM(3, algorithm="cvi2", n_iter=2).fit(corpus, checkpoint=path)


def lda_documents():
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(25, 0.1), 3)
    rows = [np.bincount(rng.choice(25, 40, p=topics[rng.integers(3)]), minlength=25) for _ in range(40)]
    return scipy.sparse.csr_matrix(np.array(rows))


def lda_fitted(model):
    arrays = {"components": model.components_, "alpha": model.alpha_}
    for name in ("doc_topic_", "assignments_"):
        if getattr(model, name, None) is not None:
            arrays[name] = getattr(model, name)
    return arrays


# cvb0-sharded refuses checkpoints (its shards keep their counts on the workers), as cvi2-sharded does
@pytest.mark.parametrize("algorithm, options", [(name, {}) for name in LDA_ALGORITHMS if name != "cvb0-sharded"]
                         + [("cvb0", {"learn_alpha": True}), ("cvb0", {"frozen_counts": True}),
                            ("vb", {"learn_alpha": True}), ("cgs", {"n_jobs": 2, "learn_alpha": True})])
def test_every_lda_algorithm_resumes_bit_for_bit(tmp_path, algorithm, options):
    X = lda_documents()

    def fit(callback=None, **checkpointing):
        model = LDA(3, algorithm=algorithm, n_iter=N_ITER, random_state=2, batch_size=8, max_doc_iter=20, **options)
        return model.fit(X, callback=callback, **checkpointing)

    stopped_then_resumed(fit, lda_fitted, tmp_path / "run.ckpt")


def pcfg_fitted(model):
    arrays = {"counts": model.counts_}
    if hasattr(model, "acceptance_rates_"):
        arrays["rates"] = model.acceptance_rates_
    return arrays


# cvi-sharded refuses checkpoints (its shards' local statistics are not saved), as the DMV's does
@pytest.mark.parametrize("algorithm", [name for name in PCFG_ALGORITHMS if name != "cvi-sharded"])
def test_every_pcfg_algorithm_resumes_bit_for_bit(tmp_path, algorithm):
    rng = np.random.default_rng(1)
    sentences = [["abc"[i] for i in rng.integers(0, 3, size=rng.integers(1, 6))] for _ in range(20)]

    def fit(**checkpointing):
        return PCFG(n_nonterminals=3, algorithm=algorithm, n_iter=N_ITER, random_state=4, batch_size=6,
                    anneal=algorithm == "mh").fit(sentences, **checkpointing)

    stopped_then_resumed(fit, pcfg_fitted, tmp_path / "run.ckpt")


# -- cvbayes fit killed with SIGKILL -----------------------------------------------------------------------

KILL_ITERATIONS = 150
SAVE_DELAY = 0.04   # seconds each save sleeps between writing and renaming (the test hook), so kills land in saves


def write_text_corpus(path):
    params = random_hmm(4, 30, np.random.default_rng(0))
    corpus = sample_categorical_hmm(*params, np.full(150, 12), seed=1)
    path.write_text("".join(" ".join(f"w{t}" for t in sentence) + "\n" for sentence in corpus))


def temporaries(folder):
    return {p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(TEMPORARY_SUFFIX)}


def wait_for(condition, process, timeout=300.0):
    """Poll ``condition()`` until true (True), or until ``process`` ends (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.003)
    raise AssertionError("the fit neither trained nor ended in time")


@pytest.mark.slow
def test_cvbayes_fit_killed_at_random_moments_resumes_to_the_uninterrupted_model(tmp_path, capsys):
    from cvbayes.cli import main

    corpus = tmp_path / "corpus.txt"
    write_text_corpus(corpus)
    arguments = ["fit", str(corpus), "--format", "text", "--states", "4", "--algorithm", "cgs", "--iterations",
                 str(KILL_ITERATIONS), "--seed", "3", "--quiet"]
    main(arguments + ["-o", str(tmp_path / "reference.npz")])
    reference = HMM.load(tmp_path / "reference.npz")

    folder = tmp_path / "run"
    folder.mkdir()
    checkpoint, model = folder / "run.ckpt", folder / "model.npz"
    command = [sys.executable, "-m", "cvbayes", *arguments, "-o", str(model), "--checkpoint", str(checkpoint)]
    slow_saves = {**os.environ, WRITE_DELAY_VARIABLE: str(SAVE_DELAY)}
    rng = np.random.default_rng(21)

    def saved():
        return (checkpoint_passes(checkpoint) or (0, False))[0]

    def identity():
        """The checkpoint file's inode: every save replaces it with a new file."""
        return checkpoint.stat().st_ino if checkpoint.exists() else None

    # kills: after a random delay once training runs, inside a checkpoint's save (its temporary file
    # written, not yet renamed), and inside the model file's save after the last pass
    plan = ["random", "save", "random", "save", "random", "model save"]
    kills = resumes = kills_in_saves = left_by_kills = 0
    for how in plan:
        before, first, stale = saved(), identity(), temporaries(folder)
        resumes += before > 0

        def new_temporaries():
            return temporaries(folder) - stale

        # random kills save every 5 passes (checkpoint_every is not part of a run's identity), so that much
        # of their time is training; the others every pass.  Slow saves keep a run from ending before its
        # kill on a fast machine: 0.3 s is at most 8 saves, 40 passes (3 x 40 + 2 < KILL_ITERATIONS)
        process = subprocess.Popen(command + (["--checkpoint-every", "5"] if how == "random" else []),
                                   env=slow_saves, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if how == "random":
                trained = wait_for(lambda: identity() != first or new_temporaries(), process)
                if trained:
                    time.sleep(rng.uniform(0.0, 0.3))
            elif how == "save":
                trained = wait_for(lambda: any(name.startswith(".run.ckpt.") for name in new_temporaries()), process)
            else:
                trained = wait_for(lambda: any(name.startswith(".model.npz.") for name in new_temporaries()), process)
            if not trained:
                break
            process.send_signal(signal.SIGKILL)
            process.wait()
            left = new_temporaries()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        kills += 1
        kills_in_saves += bool(left)    # killed while writing a temporary file or before renaming it
        assert not stale & temporaries(folder)    # the earlier kills' temporaries are gone
        left_by_kills += len(left)
        # whatever the moment: the checkpoint is whole (checksum verified), the model file absent or whole
        assert saved() >= before
        assert not model.exists() or HMM.load(model)
    assert kills == len(plan) and kills_in_saves >= 3    # the two "save" kills and the "model save" one
    assert saved() == KILL_ITERATIONS and not model.exists()   # the last kill hit the model's save
    resumes += 1
    finished = subprocess.run(command, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    resumed = HMM.load(model)
    for name, expected in hmm_fitted(reference).items():
        assert np.array_equal(hmm_fitted(resumed)[name], expected), name
    assert [r.objective for r in resumed.history_] == [r.objective for r in reference.history_]
    # the checkpoint is removed once the model is written; the killed writers' temporaries were cleaned up
    assert sorted(p.name for p in folder.iterdir()) == ["model.npz"]
    with capsys.disabled():
        print(f"\n{kills} kills ({kills - kills_in_saves} while training, {kills_in_saves} inside a save), "
              f"{resumes} resumes, "
              f"{left_by_kills} temporary files left by kills, each removed by the next run; no broken file")


@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi", "scvi"])
def test_every_dmv_algorithm_resumes_bit_for_bit(tmp_path, algorithm):
    from cvbayes.models.dmv import DMV

    rng = np.random.default_rng(2)
    sentences = [list(rng.integers(0, 4, size=rng.integers(1, 6))) for _ in range(25)]

    def fit(callback=None, **checkpointing):
        return DMV(algorithm=algorithm, init="random", n_iter=N_ITER, random_state=1,
                   batch_size=6).fit(sentences, callback=callback, **checkpointing)

    stopped_then_resumed(fit, lambda model: dict(zip(("root", "stop", "attach"), model.counts_)),
                         tmp_path / "run.ckpt")


@pytest.mark.parametrize("algorithm, options", [("vb", {}), ("cvi", {"init": "empty"}), ("cvi", {"init": "sample"}),
                                                ("mcmc", {"anneal": (3.0, 4)})])
@pytest.mark.parametrize("stop_after", [1, STOP_AFTER])
def test_every_adaptor_grammar_algorithm_resumes_bit_for_bit(tmp_path, algorithm, options, stop_after):
    """The colloc grammar (nested restaurants) with learned a and b; stopped after the first pass too (cvi's
    start ends there)."""
    from cvbayes import AdaptorGrammar

    rng = np.random.default_rng(4)
    utterances = [list("".join(rng.choice(["ab", "cd", "abc", "da"], size=rng.integers(1, 4)))) for _ in range(20)]

    def fit(callback=None, **checkpointing):
        return AdaptorGrammar("colloc", a=0.3, b=2.0, estimate_hyperparameters=True, algorithm=algorithm,
                              n_iter=N_ITER, random_state=1, **options).fit(utterances, callback=callback,
                                                                            **checkpointing)

    def fitted(model):
        return {"weights": model.rule_weights_, "discount": model.discount, "concentration": model.concentration,
                "lexicon": np.array(sorted(model.lexicon_.items()), dtype=object)}

    stopped_then_resumed(fit, fitted, tmp_path / "run.ckpt", stop_after=stop_after)


def test_lda_fit_command_resumes_from_its_checkpoint_and_removes_it_once_the_model_is_written(tmp_path, capsys):
    from cvbayes.cli import main

    X = lda_documents().toarray()
    text = tmp_path / "docs.txt"
    words = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(X.shape[1])]   # letters only
    text.write_text("\n".join(" ".join(np.repeat(words, row)) for row in X) + "\n")
    checkpoint = tmp_path / "run.ckpt"
    fit = ["lda", "fit", str(text), "--topics", "3", "--iterations", "5", "--min-count", "1", "--max-df", "1.0",
           "--algorithm", "cgs", "--json"]
    main(fit + ["--checkpoint", str(checkpoint)])                 # no -o: the complete checkpoint stays
    assert checkpoint_passes(checkpoint) == (5, True)
    with pytest.raises(SystemExit, match=f"cvbayes lda fit: {checkpoint}: the checkpoint of another run "
                                         f"\\(seed: saved 0, now 1\\)"):
        main(fit + ["--checkpoint", str(checkpoint), "--seed", "1"])
    capsys.readouterr()
    main(fit[:-1] + ["-o", str(tmp_path / "resumed.npz"), "--checkpoint", str(checkpoint)])
    assert f"resuming from {checkpoint} after pass 5 of 5" in capsys.readouterr().err
    assert not checkpoint.exists()
    main(fit + ["-o", str(tmp_path / "reference.npz")])
    assert np.array_equal(LDA.load(tmp_path / "resumed.npz").components_,
                          LDA.load(tmp_path / "reference.npz").components_)

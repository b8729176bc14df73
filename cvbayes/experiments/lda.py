"""LDA side by side: our six learners against scikit-learn, gensim, tomotopy and lda (issue 19).

Every system learns topics from the same training documents with the same priors (alpha, eta); every
system's topic-word matrix is then scored by our code alike (`cvbayes.metrics.topics`): held-out
document-completion perplexity (checkpoints during training give perplexity against wall time) and the
NPMI coherence of the top 10 words against the training documents.  Each run is a fresh process, so
that its peak memory is its own; numba's compiled kernels are loaded (and the peers imported) before
the clock starts.  Wall time excludes the checkpoints' evaluation.

Corpora: ``news`` (the 3,824 news articles of `cvbayes.data.news`, ``cvbayes data fetch news``) and
``brown`` (the 500 Brown files as documents, ``cvbayes data fetch brown``); stop words dropped, words
seen fewer than 5 times or in more than half the documents dropped; 10 % of the documents held out.

Peers (the ``bench`` extra): scikit-learn's LatentDirichletAllocation (batch and online; its fit loop,
``_init_latent_vars`` and ``_em_step``, driven pass by pass), gensim's LdaModel (online, its defaults;
checkpoints through its callbacks) and LdaMulticore (no callbacks: its final point only), tomotopy's
LDAModel (collapsed Gibbs, alpha optimisation off) and lda's LDA (collapsed Gibbs in Cython; its fit
loop, ``_initialize`` and ``_sample_topics``, driven sweep by sweep).  A peer that is not installed is
skipped with a note.
"""
from __future__ import annotations

import datetime
import json
import math
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import scipy.sparse

from ..data.corpus import Corpus
from ..data.documents import document_term_matrix, documents_from_texts, documents_from_tokens, read_tagged_documents
from ..files import atomic_write, save_figure, write_json, write_text
from ..metrics.topics import document_completion, npmi_coherence
from ..models.lda import LDA
from .results import plain_json

OURS = ("vb", "online-vb", "cvb0", "cvb0-frozen", "cvb", "scvb0", "cgs")
PEERS = ("sklearn-batch", "sklearn-online", "gensim", "gensim-multicore", "tomotopy", "lda")
SYSTEMS = OURS + PEERS
# passes (sweeps for the samplers) of the default run; --full doubles them
PASSES = {"vb": 20, "online-vb": 5, "cvb0": 30, "cvb0-frozen": 30, "cvb": 15, "scvb0": 5, "cgs": 150,
          "sklearn-batch": 10, "sklearn-online": 5, "gensim": 5, "gensim-multicore": 3, "tomotopy": 150,
          "lda": 100}
CORPORA = ("news", "brown")
DEFAULT_TOPICS = (50,)
FULL_TOPICS = (20, 50, 100)
ALPHA, ETA = 0.1, 0.01
BATCH_SIZE = 128  # documents a minibatch: scikit-learn's default, used by our stochastic learners too
HELDOUT = 0.1


# -- data ------------------------------------------------------------------------------------------


CUT_OFFS = dict(min_count=5, max_df=0.5)


def load_corpus(name):
    """The documents of ``name`` ("news" or "brown") with the stop words dropped and every other word
    kept (the frequency cut-offs come in `split`, from the training documents alone)."""
    if name == "news":
        from ..data.news import load_news

        return documents_from_texts([article.document for article in load_news()], source="news")
    if name == "brown":
        from ..data.cache import corpus_folder

        folder = corpus_folder(None, "brown") / "package"
        if not folder.is_dir():
            raise FileNotFoundError(f"the Brown corpus is not in {folder}; run `cvbayes data fetch brown`")
        return read_tagged_documents(folder, pattern="c[a-r][0-9][0-9]")
    raise ValueError(f"unknown corpus {name!r}; choose one of {', '.join(CORPORA)}")


def split(corpus, fraction=HELDOUT, seed=0):
    """(training documents as CSR, held-out documents as a Corpus, the vocabulary): documents held out
    with ``seed``; the vocabulary and its cut-offs (`CUT_OFFS`) from the training documents alone,
    held-out words outside it dropped; empty training documents and held-out ones shorter than 2
    tokens dropped."""
    order = np.random.default_rng(seed).permutation(corpus.n_sequences)
    n_heldout = int(round(fraction * corpus.n_sequences))
    documents = [corpus.vocabulary.decode(document) for document in corpus]
    train = documents_from_tokens([documents[i] for i in np.sort(order[n_heldout:])], stop_words=None, **CUT_OFFS)
    heldout = documents_from_tokens([documents[i] for i in np.sort(order[:n_heldout])], stop_words=None,
                                    vocabulary=train.vocabulary)
    train = train[np.flatnonzero(train.lengths > 0)]
    heldout = heldout[np.flatnonzero(heldout.lengths > 1)]
    return document_term_matrix(train), heldout, train.vocabulary


def _save_data(path, train, heldout, words):
    with atomic_write(path, "wb") as stream:
        np.savez(stream, indptr=train.indptr, indices=train.indices, data=train.data, shape=np.array(train.shape),
                 heldout_observations=heldout.observations, heldout_offsets=heldout.offsets,
                 words=np.array(json.dumps(words)))


def _load_data(path):
    with np.load(path) as archive:
        train = scipy.sparse.csr_matrix((archive["data"], archive["indices"], archive["indptr"]),
                                        shape=tuple(archive["shape"]))
        heldout = Corpus(archive["heldout_observations"], archive["heldout_offsets"])
        words = json.loads(archive["words"].item())
    return train, heldout, words


# -- one run in a fresh process ---------------------------------------------------------------------


def _memory_mib(field):
    """VmRSS (resident now) or VmHWM (its peak) of this process, in MiB (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return math.nan


def _reset_peak():
    """Make VmHWM restart from the current resident size (Linux >= 4.0), so the peak is the fit's own."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass


class _Clock:
    """Wall time of a fit without its checkpoints, and the checkpoints' perplexities."""

    def __init__(self, heldout, alpha, passes):
        self.heldout = heldout
        self.alpha = alpha
        self.passes = passes
        self.points = []
        self.excluded = 0.0
        self.started = time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.started - self.excluded

    def checkpoint(self, done, topic_word, force=False):
        """Score ``topic_word`` after ``done`` passes, at checkpoints 1, 2, 3, 5, 8, ... and the last."""
        if not (force or done in _checkpoints(self.passes)):
            return
        seconds = self.elapsed()
        started = time.perf_counter()
        perplexity = document_completion(topic_word, self.heldout, self.alpha).perplexity
        self.points.append((float(done), seconds, perplexity))
        self.excluded += time.perf_counter() - started


def _checkpoints(passes):
    marks = {passes}
    mark = 1.0
    while mark < passes:
        marks.add(int(round(mark)))
        mark *= 1.5
    return marks


def _warm_up(system, n_jobs=1):
    """Load our numba kernels from the cache (or compile them) before the clock starts."""
    tiny = scipy.sparse.csr_matrix(np.array([[2, 1, 0], [0, 1, 3], [1, 0, 2]]))
    algorithm = "cvb0" if system == "cvb0-frozen" else system
    LDA(2, algorithm=algorithm, n_iter=2, batch_size=2, frozen_counts=system == "cvb0-frozen", n_jobs=n_jobs).fit(tiny)
    corpus = Corpus(np.array([0, 1, 2, 2], dtype=np.int32), np.array([0, 4]))
    document_completion(np.ones((2, 3)), corpus, 0.1)


def _fit_ours(system, train, clock, n_topics, passes, seed, words):
    algorithm = "cvb0" if system == "cvb0-frozen" else system
    model = LDA(n_topics, alpha=clock.alpha, eta=ETA, algorithm=algorithm, n_iter=passes, random_state=seed,
                batch_size=BATCH_SIZE, frozen_counts=system == "cvb0-frozen")
    model.fit(train, callback=lambda fitted, iteration: clock.checkpoint(iteration + 1, fitted.components_))
    return model.components_


def _fit_sklearn(system, train, clock, n_topics, passes, seed, words):
    from sklearn.decomposition import LatentDirichletAllocation
    from sklearn.utils import gen_batches
    from sklearn.utils.parallel import Parallel

    online = system == "sklearn-online"
    model = LatentDirichletAllocation(n_components=n_topics, doc_topic_prior=clock.alpha, topic_word_prior=ETA,
                                      learning_method="online" if online else "batch", max_iter=passes,
                                      batch_size=BATCH_SIZE, random_state=seed)
    X = train.astype(np.float64)
    n_samples = X.shape[0]
    model._init_latent_vars(X.shape[1], dtype=X.dtype)  # fit's own loop, pass by pass
    with Parallel(n_jobs=1) as parallel:
        for done in range(1, passes + 1):
            if online:
                for batch in gen_batches(n_samples, BATCH_SIZE):
                    model._em_step(X[batch, :], total_samples=n_samples, batch_update=False, parallel=parallel)
            else:
                model._em_step(X, total_samples=n_samples, batch_update=True, parallel=parallel)
            clock.checkpoint(done, model.components_)
    return model.components_


def _bag_of_words(train):
    return [list(zip(row.indices.tolist(), row.data.astype(int).tolist())) for row in train]


def _fit_gensim(system, train, clock, n_topics, passes, seed, words):
    import logging

    from gensim.models import LdaModel, LdaMulticore
    from gensim.models.callbacks import Metric

    logging.getLogger("gensim").setLevel(logging.ERROR)
    corpus = _bag_of_words(train)
    alpha = np.full(n_topics, clock.alpha)
    if system == "gensim-multicore":  # no callbacks in LdaMulticore: the final point only
        model = LdaMulticore(corpus, num_topics=n_topics, id2word=dict(enumerate(words)), alpha=alpha, eta=ETA,
                             passes=passes, eval_every=None, random_state=seed)
        clock.checkpoint(passes, model.get_topics(), force=True)
        return model.get_topics()

    class Checkpoint(Metric):
        logger = None
        title = "checkpoint"

        def __init__(self):
            self.done = 0

        def get_value(self, **kwargs):
            self.done += 1
            clock.checkpoint(self.done, kwargs["model"].get_topics())
            return 0.0

    model = LdaModel(corpus, num_topics=n_topics, id2word=dict(enumerate(words)), alpha=alpha, eta=ETA,
                     passes=passes, eval_every=None, random_state=seed, callbacks=[Checkpoint()])
    return model.get_topics()


def _tomotopy_model(train, words, n_topics, alpha, seed):
    """tomotopy's LDAModel with our priors (alpha optimisation off, as every other system) and the
    training documents added."""
    import tomotopy

    model = tomotopy.LDAModel(k=n_topics, alpha=alpha, eta=ETA, seed=seed)
    model.optim_interval = 0
    for row in train:
        model.add_doc(np.repeat(np.array(words, dtype=object)[row.indices], row.data.astype(int)).tolist())
    return model


def _tomotopy_topic_word(model, words):
    """tomotopy's topic-word distributions (K, W) over our vocabulary's columns."""
    position = {word: i for i, word in enumerate(words)}
    index = np.array([position[word] for word in model.used_vocabs], dtype=np.int64)
    table = np.zeros((model.k, len(words)))
    table[:, index] = np.array([model.get_topic_word_dist(k) for k in range(model.k)])
    return table


def _fit_tomotopy(system, train, clock, n_topics, passes, seed, words):
    model = _tomotopy_model(train, words, n_topics, clock.alpha, seed)
    done = 0
    for mark in sorted(_checkpoints(passes)):
        model.train(mark - done, workers=0)
        done = mark
        clock.checkpoint(done, _tomotopy_topic_word(model, words))
    return _tomotopy_topic_word(model, words)


def _fit_lda(system, train, clock, n_topics, passes, seed, words):
    import logging

    import lda
    import lda.utils

    logging.getLogger("lda").setLevel(logging.WARNING)

    model = lda.LDA(n_topics=n_topics, n_iter=passes, alpha=clock.alpha, eta=ETA, random_state=seed,
                    refresh=10 ** 9)
    X = train.astype(np.int64)
    random_state = lda.utils.check_random_state(seed)  # lda's own _fit loop, sweep by sweep
    rands = model._rands.copy()
    model._initialize(X)
    for done in range(1, passes + 1):
        random_state.shuffle(rands)
        model._sample_topics(rands)
        clock.checkpoint(done, model.nzw_ + ETA)
    return (model.nzw_ + ETA).astype(float)


_FITTERS = {**{name: _fit_ours for name in OURS}, "sklearn-batch": _fit_sklearn, "sklearn-online": _fit_sklearn,
            "gensim": _fit_gensim, "gensim-multicore": _fit_gensim, "tomotopy": _fit_tomotopy, "lda": _fit_lda}
_MODULES = {"sklearn-batch": "sklearn", "sklearn-online": "sklearn", "gensim": "gensim",
            "gensim-multicore": "gensim", "tomotopy": "tomotopy", "lda": "lda"}


def run_system(system, data_path, n_topics, passes, seed=0, alpha=ALPHA):
    """Fit ``system`` on the saved data and score it (run inside a fresh process)."""
    train, heldout, words = _load_data(data_path)
    if system in OURS:
        _warm_up(system)
    else:
        __import__(_MODULES[system])
    n_tokens = int(train.sum())
    baseline = _memory_mib("VmRSS")
    _reset_peak()
    clock = _Clock(heldout, alpha, passes)
    topic_word = _FITTERS[system](system, train, clock, n_topics, passes, seed, words)
    seconds = clock.elapsed()
    peak = _memory_mib("VmHWM")
    final = document_completion(topic_word, heldout, alpha)
    return {"system": system, "date": datetime.date.today().isoformat(), "load_average": os.getloadavg()[0],
            "topics": n_topics, "passes": passes, "seconds": seconds,
            "seconds_per_pass": seconds / passes, "tokens_per_second": n_tokens * passes / seconds,
            "perplexity": final.perplexity, "npmi": float(npmi_coherence(topic_word, train).mean()),
            "curve": clock.points, "peak_rss_mib": peak, "baseline_rss_mib": baseline,
            "peak_above_baseline_mib": peak - baseline}


def _child(connection, function, args):
    try:
        connection.send(("ok", function(*args)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which goes on with the next run
        connection.send(("error", traceback.format_exc()))
    finally:
        connection.close()


def in_fresh_process(function, *args):
    """``function(*args)`` in a new (spawned) process: its memory and numba threads are its own."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args))
    process.start()
    sender.close()
    try:
        status, value = receiver.recv()
    except EOFError:
        status, value = "error", f"the process died (exit code {process.join() or process.exitcode})"
    process.join()
    if status != "ok":
        raise RuntimeError(value)
    return value


def available(system):
    if system in OURS:
        return True
    try:
        __import__(_MODULES[system])
    except ImportError:
        return False
    return True


# -- the experiment -----------------------------------------------------------------------------------


def _prepare(corpus_name, folder, seed):
    """Split ``corpus_name`` (`split`) and save it under ``folder`` for the runs' processes: (its path,
    its sizes)."""
    train, heldout, vocabulary = split(load_corpus(corpus_name), seed=seed)
    data_path = Path(folder) / f"{corpus_name}.npz"
    _save_data(data_path, train, heldout, vocabulary.symbols)
    return str(data_path), {"train_documents": train.shape[0], "train_tokens": int(train.sum()),
                            "words": train.shape[1], "heldout_documents": heldout.n_sequences,
                            "heldout_tokens": heldout.n_tokens}


def run(out="docs/results/lda", corpora=CORPORA, topics=DEFAULT_TOPICS, systems=SYSTEMS, scale=1.0, seed=0,
        quiet=False):
    """Run every system on every corpus and K; write results.json, table.md and PNGs under ``out``.

    The runs of an earlier results.json there with the same settings are kept, except those (corpus,
    K, system) that this call runs again: a run of some systems updates their rows only."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    missing = [system for system in systems if not available(system)]
    systems = [system for system in systems if system not in missing]
    results = {"alpha": ALPHA, "eta": ETA, "batch_size": BATCH_SIZE, "heldout_fraction": HELDOUT, "seed": seed,
               "skipped": missing, "corpora": {}, "runs": []}
    rerun = {(corpus_name, n_topics, system) for corpus_name in corpora for n_topics in topics for system in systems}
    earlier = _read_json(out / "results.json")
    if earlier and all(earlier.get(key) == results[key] for key in ("alpha", "eta", "batch_size",
                                                                      "heldout_fraction", "seed")):
        results["corpora"] = earlier["corpora"]
        results["runs"] = [r for r in earlier["runs"] if (r["corpus"], r["topics"], r["system"]) not in rerun]
    with tempfile.TemporaryDirectory(prefix="cvbayes-lda-") as folder:
        for corpus_name in corpora:
            data_path, results["corpora"][corpus_name] = _prepare(corpus_name, folder, seed)
            for n_topics in topics:
                for system in systems:
                    passes = max(1, int(round(PASSES[system] * scale)))
                    try:
                        run_result = in_fresh_process(run_system, system, data_path, n_topics, passes, seed)
                    except RuntimeError as error:
                        run_result = {"system": system, "topics": n_topics, "passes": passes, "error": str(error)}
                    run_result["corpus"] = corpus_name
                    results["runs"].append(run_result)
                    if not quiet:
                        print(_run_line(run_result), file=sys.stderr, flush=True)
                    write_json(out / "results.json", plain_json(results), indent=1)
    results["runs"].sort(key=lambda r: (list(results["corpora"]).index(r["corpus"]), r["topics"],
                                        SYSTEMS.index(r["system"])))
    results["targets"] = targets(results["runs"])
    write_json(out / "results.json", plain_json(results), indent=1)
    write_text(out / "table.md", table(results, _read_json(out / GIBBS_RESULTS)))
    plot_curves(out, results["runs"])
    return results


def _read_json(path):
    """The JSON at ``path``, or None when there is none."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def _run_line(run_result):
    if "error" in run_result:
        return f"{run_result['corpus']} K={run_result['topics']} {run_result['system']}: FAILED\n{run_result['error']}"
    return (f"{run_result['corpus']} K={run_result['topics']} {run_result['system']:16s} "
            f"perplexity {run_result['perplexity']:8.1f}  npmi {run_result['npmi']:6.3f}  "
            f"{run_result['seconds']:7.1f} s  {run_result['seconds_per_pass']:7.3f} s/pass  "
            f"{run_result['tokens_per_second'] / 1e6:6.2f} M tokens/s  peak +{run_result['peak_above_baseline_mib']:.0f} MiB")


def _time_to_reach(curve, target):
    """The wall time of the first checkpoint at or below ``target`` perplexity, or None."""
    for _, seconds, perplexity in curve:
        if perplexity <= target:
            return seconds
    return None


def targets(runs):
    """The issue's targets, per corpus and K, from the runs."""
    found = {}
    for run_result in runs:
        if "error" not in run_result:
            found[(run_result["corpus"], run_result["topics"], run_result["system"])] = run_result
    rows = []
    for corpus_name, n_topics in sorted({(corpus, k) for corpus, k, _ in found}):
        def get(system):
            return found.get((corpus_name, n_topics, system))

        row = {"corpus": corpus_name, "topics": n_topics}
        vb_peers = [system for system in ("sklearn-batch", "sklearn-online", "gensim", "gensim-multicore") if get(system)]
        best_peer = min((get(system)["perplexity"] for system in vb_peers), default=None)
        for ours in ("cvb0", "scvb0"):
            if get(ours) and best_peer is not None:
                row[f"{ours}_perplexity"] = get(ours)["perplexity"]
                row[f"{ours}_beats_every_vb_peer"] = get(ours)["perplexity"] < best_peer
        row["best_vb_peer_perplexity"] = best_peer
        if get("scvb0") and get("sklearn-online"):
            goal = get("sklearn-online")["perplexity"]
            reached = _time_to_reach(get("scvb0")["curve"], goal)
            row["scvb0_seconds_to_sklearn_online_final"] = reached
            row["sklearn_online_seconds"] = get("sklearn-online")["seconds"]
            row["scvb0_time_fraction"] = None if reached is None else reached / get("sklearn-online")["seconds"]
        if get("cgs") and get("tomotopy"):
            row["cgs_tokens_per_second"] = get("cgs")["tokens_per_second"]
            row["tomotopy_tokens_per_second"] = get("tomotopy")["tokens_per_second"]
            row["tomotopy_over_cgs"] = get("tomotopy")["tokens_per_second"] / get("cgs")["tokens_per_second"]
        rows.append(row)
    return rows


def table(results, gibbs=None):
    """The results as Markdown: one table per corpus and K, the targets, then (given the results of
    `run_gibbs_against_tomotopy`) collapsed Gibbs against tomotopy."""
    lines = ["# LDA: ours against scikit-learn, gensim, tomotopy and lda\n",
             f"alpha = {results['alpha']}, eta = {results['eta']}, minibatches of {results['batch_size']} documents; "
             f"held-out document-completion perplexity on {results['heldout_fraction']:.0%} of the documents "
             "(fold in on the first half, score the second), NPMI of the top 10 words against the training "
             "documents; wall time without the checkpoints; peak resident memory of the run's process (the "
             "peers' and numba's code included) and, in brackets, its rise during the fit.\n"]
    if results["skipped"]:
        lines.append(f"Not installed, skipped: {', '.join(results['skipped'])}.\n")
    dates = {}
    for r in results["runs"]:
        dates.setdefault(r.get("date", "undated (before runs were dated)"), []).append(r["system"])
    if len(dates) > 1:
        lines.append("The rows come from runs of different days: " + "; ".join(
            f"{date}: {', '.join(dict.fromkeys(systems))}" for date, systems in sorted(dates.items())) + ".\n")
    loads = [r["load_average"] for r in results["runs"] if "load_average" in r]
    if loads:
        lines.append(f"The machine's 1-minute load average at the end of the runs: {min(loads):.1f} to {max(loads):.1f} "
                     f"(on {os.cpu_count()} cores; above {os.cpu_count()}, other jobs shared them).\n")
    for corpus_name, info in results["corpora"].items():
        lines.append(f"\n## {corpus_name}: {info['train_documents']} training documents, {info['train_tokens']:,} "
                     f"tokens, {info['words']:,} words; {info['heldout_documents']} held out\n")
        for n_topics in sorted({r["topics"] for r in results["runs"] if r["corpus"] == corpus_name}):
            lines += [f"\n### K = {n_topics}\n",
                      "| system | passes | perplexity | NPMI | seconds | s / pass | M tokens / s | peak MiB (+ fit) |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for r in results["runs"]:
                if r["corpus"] != corpus_name or r["topics"] != n_topics:
                    continue
                if "error" in r:
                    lines.append(f"| {r['system']} | {r['passes']} | failed | | | | | |")
                    continue
                lines.append(f"| {r['system']} | {r['passes']} | {r['perplexity']:.1f} | {r['npmi']:.3f} | "
                             f"{r['seconds']:.1f} | {r['seconds_per_pass']:.3f} | {r['tokens_per_second'] / 1e6:.2f} | "
                             f"{r['peak_rss_mib']:.0f} (+{r['peak_above_baseline_mib']:.0f}) |")
    lines.append("\n## Targets\n")
    for row in results.get("targets", []):
        lines.append(f"- {row['corpus']}, K = {row['topics']}: " + "; ".join(
            f"{key} = {_format(value)}" for key, value in row.items() if key not in ("corpus", "topics")))
    text = "\n".join(lines) + "\n"
    return text if gibbs is None else text + "\n" + gibbs_table(gibbs)


def _format(value):
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


# -- collapsed Gibbs against tomotopy, thread for thread ------------------------------------------------

GIBBS_SYSTEMS = ("cgs", "tomotopy")
GIBBS_CELLS = (("brown", 20), ("brown", 50), ("brown", 100), ("news", 50))
GIBBS_SWEEPS = 150
GIBBS_RESULTS = "gibbs_against_tomotopy.json"


def run_sampler(system, data_path, n_topics, sweeps, threads, seed, alpha=ALPHA):
    """``sweeps`` sweeps of our collapsed Gibbs sampler ("cgs", ``n_jobs`` = threads) or tomotopy's
    ("tomotopy", ``workers`` = threads) from ``seed``, in this (fresh) process with numba's threads set
    to ``threads``.  Returns the sweeps' wall seconds (ours: the passes' own times, each pass's log
    joint included; tomotopy's: its train call), the whole fit's wall and CPU seconds (every thread's)
    once the documents are loaded, and the held-out perplexity of the final topics by
    `document_completion`, as for every system."""
    import warnings

    import numba

    numba.set_num_threads(threads)
    train, heldout, words = _load_data(data_path)
    load_before = os.getloadavg()[0]
    if system == "cgs":
        _warm_up("cgs", n_jobs=threads)
        cpu, started = time.process_time(), time.perf_counter()
        model = LDA(n_topics, alpha=alpha, eta=ETA, algorithm="cgs", n_iter=sweeps, random_state=seed,
                    n_jobs=threads).fit(train)
        sweep_seconds = sum(record.seconds for record in model.history_)
        topic_word = model.components_
    elif system == "tomotopy":
        model = _tomotopy_model(train, words, n_topics, alpha, seed)
        with warnings.catch_warnings():  # that workers > 1 runs differ with one seed is known
            warnings.simplefilter("ignore", RuntimeWarning)
            cpu, started = time.process_time(), time.perf_counter()
            model.train(0, workers=threads)  # tomotopy draws its first topics here
            sweeps_started = time.perf_counter()
            model.train(sweeps, workers=threads)
            sweep_seconds = time.perf_counter() - sweeps_started
        topic_word = _tomotopy_topic_word(model, words)
    else:
        raise ValueError(f"unknown sampler {system!r}; choose one of {', '.join(GIBBS_SYSTEMS)}")
    fit_seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {"system": system, "threads": threads, "seed": seed, "topics": n_topics, "sweeps": sweeps,
            "sweep_seconds": sweep_seconds, "ns_per_token": 1e9 * sweep_seconds / (int(train.sum()) * sweeps),
            "fit_seconds": fit_seconds, "cpu_seconds": cpu_seconds,
            "perplexity": document_completion(topic_word, heldout, alpha).perplexity,
            "load_average": [load_before, os.getloadavg()[0]]}


def run_gibbs_against_tomotopy(out="docs/results/lda", cells=GIBBS_CELLS, threads=(1, 2), repeats=5,
                               sweeps=GIBBS_SWEEPS, seed=0, copy_to=None, quiet=False):
    """Our collapsed Gibbs sampler against tomotopy's on each (corpus, K) of ``cells`` and each number
    of threads: ``repeats`` runs of each (chain seeds 0, 1, ...; the two take turns to go first, so that
    neither always meets the machine's load first), each in a fresh process (`run_sampler`).  Writes
    GIBBS_RESULTS under ``out`` (and to ``copy_to``), and table.md with it if results.json is there."""
    import platform

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"date": datetime.date.today().isoformat(), "cpus": os.cpu_count(), "platform": platform.platform(),
               "alpha": ALPHA, "eta": ETA, "sweeps": sweeps, "repeats": repeats, "split_seed": seed,
               "corpora": {}, "runs": []}
    with tempfile.TemporaryDirectory(prefix="cvbayes-lda-") as folder:
        paths = {}
        for corpus_name in dict.fromkeys(corpus_name for corpus_name, _ in cells):
            paths[corpus_name], results["corpora"][corpus_name] = _prepare(corpus_name, folder, seed)
        for corpus_name, n_topics in cells:
            for n_threads in threads:
                for repeat in range(repeats):
                    for system in GIBBS_SYSTEMS[::1 if repeat % 2 == 0 else -1]:
                        run_result = in_fresh_process(run_sampler, system, paths[corpus_name], n_topics, sweeps,
                                                      n_threads, repeat)
                        run_result["corpus"] = corpus_name
                        results["runs"].append(run_result)
                        if not quiet:
                            print(f"{corpus_name} K={n_topics} threads={n_threads} seed={repeat} {system:8s} "
                                  f"{run_result['ns_per_token']:7.1f} ns/token  perplexity "
                                  f"{run_result['perplexity']:7.1f}  load {run_result['load_average'][1]:.1f}",
                                  file=sys.stderr, flush=True)
                        write_json(out / GIBBS_RESULTS, plain_json(results), indent=1)
    results["summary"] = gibbs_summary(results["runs"])
    for path in [out / GIBBS_RESULTS] + ([Path(copy_to)] if copy_to else []):
        write_json(path, plain_json(results), indent=1)
    main = _read_json(out / "results.json")
    if main is not None:
        write_text(out / "table.md", table(main, results))
    return results


def gibbs_summary(runs):
    """Per corpus, K and threads: each sampler's median nanoseconds a token over the repeats (medians:
    the machine's load comes in bursts), ours over tomotopy's, and each one's mean perplexity and its
    standard deviation over the seeds.  Ours counts as no worse when its mean perplexity is at most
    tomotopy's plus twice the standard error of the difference of the two means."""
    rows = []
    for corpus_name, n_topics, threads in dict.fromkeys((r["corpus"], r["topics"], r["threads"]) for r in runs):
        picked = {system: [r for r in runs if (r["corpus"], r["topics"], r["threads"], r["system"])
                           == (corpus_name, n_topics, threads, system)] for system in GIBBS_SYSTEMS}
        if not all(picked.values()):
            continue
        row = {"corpus": corpus_name, "topics": n_topics, "threads": threads}
        for system, chosen in picked.items():
            perplexities = np.array([r["perplexity"] for r in chosen])
            row[f"{system}_ns_per_token"] = float(np.median([r["ns_per_token"] for r in chosen]))
            row[f"{system}_cpu_seconds"] = float(np.median([r["cpu_seconds"] for r in chosen]))
            row[f"{system}_perplexity"] = float(perplexities.mean())
            row[f"{system}_perplexity_sd"] = float(perplexities.std(ddof=1)) if len(chosen) > 1 else 0.0
            row[f"{system}_runs"] = len(chosen)
        row["time_ratio"] = row["cgs_ns_per_token"] / row["tomotopy_ns_per_token"]
        standard_error = math.sqrt(sum(row[f"{system}_perplexity_sd"] ** 2 / row[f"{system}_runs"]
                                       for system in GIBBS_SYSTEMS))
        row["perplexity_difference"] = row["cgs_perplexity"] - row["tomotopy_perplexity"]
        row["perplexity_no_worse"] = row["perplexity_difference"] <= 2 * standard_error
        loads = [value for chosen in picked.values() for r in chosen for value in r["load_average"]]
        row["load_average"] = [min(loads), max(loads)]
        rows.append(row)
    return rows


def gibbs_table(results):
    """`run_gibbs_against_tomotopy`'s summary as a Markdown section."""
    lines = ["## Collapsed Gibbs against tomotopy, thread for thread\n",
             f"`python benchmarks/bench_lda.py --gibbs` on {results['date']}: {results['sweeps']} sweeps of our `cgs` "
             f"(`n_jobs` = threads) and of tomotopy's LDAModel (`workers` = threads; alpha optimisation off), "
             f"{results['repeats']} runs of each with chain seeds 0 to {results['repeats'] - 1}, each in a fresh "
             "process; alpha = "
             f"{results['alpha']}, eta = {results['eta']}, the corpora and held-out documents as above.  "
             "Time a token: the sweeps' wall time over tokens times sweeps (ours: the passes' own times, each "
             "pass's log p(w, z) included; tomotopy: its `train` call), median over the runs; fit CPU: the "
             "whole fit's CPU seconds, every thread, median.  Perplexity: document completion on the held-out "
             "documents from each system's final topic-word matrix by the same code, mean ± standard "
             "deviation over the seeds; \"no worse\" when ours is at most tomotopy's plus twice the standard "
             "error of the difference.  One thread is the exact sampler for both; two threads are both the "
             "partitioned sampler of Yan, Xu and Qi (2009), stale topic totals within a step.  The machine was "
             "shared with other jobs (the load average column, on "
             f"{results['cpus']} cores): every run had less than its threads' cores, and two threads gain "
             "little over one.\n",
             "| corpus | K | threads | ours ns / token | tomotopy ns / token | ours / tomotopy | ours perplexity "
             "| tomotopy perplexity | no worse | fit CPU s (ours, tomotopy) | load average |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for row in results["summary"]:
        lines.append(f"| {row['corpus']} | {row['topics']} | {row['threads']} | {row['cgs_ns_per_token']:.1f} | "
                     f"{row['tomotopy_ns_per_token']:.1f} | {row['time_ratio']:.2f} | "
                     f"{row['cgs_perplexity']:.1f} ± {row['cgs_perplexity_sd']:.1f} | "
                     f"{row['tomotopy_perplexity']:.1f} ± {row['tomotopy_perplexity_sd']:.1f} | "
                     f"{'yes' if row['perplexity_no_worse'] else 'no'} | "
                     f"{row['cgs_cpu_seconds']:.1f}, {row['tomotopy_cpu_seconds']:.1f} | "
                     f"{row['load_average'][0]:.1f} to {row['load_average'][1]:.1f} |")
    return "\n".join(lines) + "\n"


# -- plots ----------------------------------------------------------------------------------------------


def plot_curves(out, runs):
    """Perplexity against wall time, one PNG per corpus and K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for corpus_name, n_topics in sorted({(r["corpus"], r["topics"]) for r in runs}):
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for r in runs:
            if r["corpus"] != corpus_name or r["topics"] != n_topics or "error" in r or not r["curve"]:
                continue
            curve = np.array(r["curve"])
            style = "-" if r["system"] in OURS else "--"
            color = plt.cm.tab20(SYSTEMS.index(r["system"]) / len(SYSTEMS))
            ax.plot(np.maximum(curve[:, 1], 1e-2), curve[:, 2], style, color=color, marker="o", markersize=3,
                    label=r["system"])
        ax.set_xscale("log")
        ax.set_xlabel("wall time (s, log scale; evaluation excluded)")
        ax.set_ylabel("held-out document-completion perplexity")
        ax.set_title(f"LDA on {corpus_name}, K = {n_topics} (ours solid, peers dashed)")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        path = Path(out) / f"perplexity_{corpus_name}_K{n_topics}.png"
        save_figure(fig, path, dpi=110)
        plt.close(fig)
        paths.append(str(path))
    return paths


def plot_topics(model, path, n_words=10, max_topics=20):
    """The top words of (up to ``max_topics``) topics as bar charts of their probabilities, to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    topic_word = model.topic_word_
    n_topics = min(topic_word.shape[0], max_topics)
    columns = min(5, n_topics)
    rows = math.ceil(n_topics / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 0.32 * n_words * rows + 0.6), squeeze=False)
    words = model.top_words(n_words)
    for k, ax in enumerate(axes.flat):
        if k >= n_topics:
            ax.axis("off")
            continue
        ids = np.argsort(-topic_word[k])[:n_words]
        ax.barh(range(len(ids))[::-1], topic_word[k, ids], color="tab:blue")
        ax.set_yticks(range(len(ids))[::-1], [str(word) for word in words[k]], fontsize=7)
        ax.set_title(f"topic {k}", fontsize=8)
        ax.tick_params(axis="x", labelsize=6)
    fig.suptitle(f"LDA ({model.algorithm_}, K = {topic_word.shape[0]}): top {n_words} words", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return str(path)


def run_from_command_line(args):
    """``cvbayes experiment lda``: --k-values (default 50; 20 50 100 for the full grid), --passes scales the
    default passes (e.g. 2), --out (default docs/results/lda)."""
    if args.out == "docs/results":
        args.out = "docs/results/lda"
    run(out=args.out, topics=tuple(args.k_values or DEFAULT_TOPICS), scale=float(args.passes or 1), seed=args.seed,
        quiet=args.quiet)


EXPERIMENTS = {"lda": run_from_command_line}

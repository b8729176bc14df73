"""Benchmark of cvbayes's stochastic learners (SCVI, SVI) and of CVI-3 against CVI-2.

Three measurements on synthetic corpora drawn from a random HMM (45 true
states, W = 10,000 word types with Zipf-like emission rows, sentences of 5 to
40 tokens, mean about 21 like the Penn Treebank).  Every corpus is written to
a temporary folder with ``Corpus.save`` and read back memory-mapped
(``Corpus.load(path, mmap=True)``).

1. throughput: SCVI and SVI tokens per second of training at K = 45 on 1M
   tokens, for minibatches of 100 and 1000 sentences, with hmmlearn's
   ``CategoricalHMM`` EM timed on the same tokens in the same run.
2. memory: SCVI's peak anonymous memory on memory-mapped corpora of 1M, 3M
   and 10M tokens, each fitted in a fresh subprocess; it should not grow
   with the corpus.
3. cvi: seconds per iteration of CVI-3 on the tokens of 300k tokens of
   sentences laid end to end as one sequence (subchains of 21 and 50 tokens)
   against CVI-2 on the sentences themselves.

Run ``python benchmarks/bench_stochastic.py --help`` for the options;
``--quick`` shrinks every size 10x for a smoke test.
"""
import argparse
import datetime
import gc
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import bench_hmm  # benchmarks/ is on sys.path when this runs as a script

import cvbayes
from cvbayes.data import Corpus
from cvbayes.experiments.memory import reset_peak

# ------------------------------------------------------------ settings
TRUE_STATES = 45            # states of the HMM that draws the data
VOCAB = 10_000              # W
STATES = 45                 # K of the fitted models
ALPHA = 0.1
BETA = 0.1
MIN_LENGTH, MAX_LENGTH = 5, 40
MEAN_LENGTH = 21            # lengths 5 + BetaBinomial(35, a, b) with a / (a + b) = 16/35: mean 21,
LENGTH_SPREAD = 4.0         # a + b; spread over 5..40 (standard deviation about 8), like PTB's sentences
TRANSITION_CONCENTRATION = 0.1
EMISSION_CONCENTRATION = 0.05   # per word type on average; see planted_hmm

THROUGHPUT_TOKENS = 1_000_000
MEMORY_TOKENS = (1_000_000, 3_000_000, 10_000_000)
CVI_TOKENS = 300_000
PEER_FALLBACK_TOKENS = 200_000  # hmmlearn runs here instead when 1M would take too long
PEER_LIMIT_S = 60.0             # ... namely longer than this (estimated from the fallback run)
PEER_CHECK_TOKENS = 10_000      # both hmmlearn implementations are timed on this slice
QUICK_FACTOR = 10

BATCH_SIZES = (100, 1000)
STOCHASTIC = ("scvi", "svi")
SUBCHAINS = (21, 50)
MEMORY_BATCH_SIZE = 1000
WARMUP_TOKENS = 2_000

TARGET_SCVI_TOKENS_PER_S = 1_000_000
TARGET_CVI3_OVER_CVI2 = 1.5
FLAT_RELATIVE = 0.10        # memory is "flat" when the extra peaks differ by at most
FLAT_MIB = 5.0              # 10% of the smallest, or 5 MiB, whichever is larger
SAMPLE_EVERY_S = 0.02
MIB = 2.0 ** 20
RESULTS_DIR = Path(__file__).resolve().parent / "results"


# ---------------------------------------------------------------- data
def planted_hmm(seed):
    """Draw the HMM that generates the synthetic corpora.

    Start probabilities are Dirichlet(1), transition rows Dirichlet(0.1)
    (sparse, like part-of-speech bigrams).  Emission row k is Dirichlet with
    parameter ``EMISSION_CONCENTRATION * W * z`` where ``z`` is Zipf(1) over
    the word ids: every row is a sparse, power-law-like distribution whose
    frequent words are mostly the globally frequent ones, so the corpus's
    unigram distribution is Zipf-like too.  Drawn as normalised Gamma
    variables; the rarest types get zero probability in most rows.

    Returns
    -------
    startprob (K,), transmat (K, K), emissionprob (K, W)
    """
    rng = np.random.default_rng(seed)
    startprob = rng.dirichlet(np.ones(TRUE_STATES))
    transmat = rng.dirichlet(np.full(TRUE_STATES, TRANSITION_CONCENTRATION), size=TRUE_STATES)
    zipf = 1.0 / np.arange(1, VOCAB + 1)
    zipf /= zipf.sum()
    emissionprob = rng.gamma(EMISSION_CONCENTRATION * VOCAB * zipf, size=(TRUE_STATES, VOCAB))
    emissionprob[emissionprob.sum(axis=1) == 0, 0] = 1.0
    emissionprob /= emissionprob.sum(axis=1, keepdims=True)
    return startprob, transmat, emissionprob


def stacked_cdf(probs):
    """Cumulative rows shifted by their row number and laid end to end.

    Row k of `probs` becomes an increasing run from k to exactly k + 1, so one
    ``searchsorted`` over the flat array draws from many different rows at once.
    """
    cumulative = np.cumsum(probs, axis=1)
    cumulative /= cumulative[:, -1:]
    cumulative[:, -1] = 1.0
    cumulative += np.arange(probs.shape[0])[:, None]
    return cumulative.ravel()


def draw_rows(stacked, width, rows, rng):
    """One categorical draw from each of the rows `rows` (inverse CDF)."""
    rows = rows.astype(np.int64, copy=False)
    found = np.searchsorted(stacked, rows + rng.random(rows.shape[0]), side="right")
    return found - rows * width


def synthetic_corpus(n_tokens, seed):
    """Draw whole sentences from `planted_hmm` until `n_tokens` tokens, vectorised.

    The sentences are sorted longest first, so that the ones still running at
    step t are a prefix; each step draws the next state of all of them at
    once, and the emissions are drawn for all tokens in one go.  10M tokens
    take a few seconds.

    Returns
    -------
    observations : ndarray of int32
        The tokens of the whole sentences that fit in `n_tokens` (a few
        tokens fewer than `n_tokens`, at most one sentence's worth).
    offsets : ndarray of int64
        Sentence boundaries.
    """
    startprob, transmat, emissionprob = planted_hmm(seed)
    rng = np.random.default_rng(seed + 1)
    n_sentences = int(n_tokens / MEAN_LENGTH * 1.05) + 10
    mean_fraction = (MEAN_LENGTH - MIN_LENGTH) / (MAX_LENGTH - MIN_LENGTH)
    fractions = rng.beta(LENGTH_SPREAD * mean_fraction, LENGTH_SPREAD * (1 - mean_fraction), size=n_sentences)
    lengths = MIN_LENGTH + rng.binomial(MAX_LENGTH - MIN_LENGTH, fractions)
    offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_sentences = max(1, int(np.searchsorted(offsets, n_tokens, side="right")) - 1)
    lengths = lengths[:n_sentences]
    offsets = offsets[:n_sentences + 1]

    order = np.argsort(-lengths, kind="stable")
    sorted_lengths = lengths[order]
    paths = np.zeros((n_sentences, MAX_LENGTH), dtype=np.int16)
    state = draw_rows(stacked_cdf(startprob[None]), TRUE_STATES, np.zeros(n_sentences, np.int64), rng)
    paths[:, 0] = state
    transitions = stacked_cdf(transmat)
    for t in range(1, MAX_LENGTH):
        alive = int(np.count_nonzero(sorted_lengths > t))
        state = draw_rows(transitions, TRUE_STATES, state[:alive], rng)
        paths[:alive, t] = state
    paths[order] = paths.copy()  # back to the drawn order of the lengths
    states = paths[np.arange(MAX_LENGTH)[None, :] < lengths[:, None]]
    observations = draw_rows(stacked_cdf(emissionprob), VOCAB, states, rng).astype(np.int32)
    return observations, offsets


def sentence_prefix(observations, offsets, n_tokens):
    """The whole sentences in the first `n_tokens` tokens (views, not copies)."""
    n_sentences = max(1, int(np.searchsorted(offsets, n_tokens, side="right")) - 1)
    end = int(offsets[n_sentences])
    return observations[:end], offsets[:n_sentences + 1]


def saved_and_mapped(observations, offsets, folder, name):
    """Save a corpus under `folder` and load it back memory-mapped; return (corpus, path)."""
    path = Path(folder) / f"{name}.npz"
    Corpus(observations, offsets).save(path)
    return Corpus.load(path, mmap=True), path


def new_model():
    """An unfitted HMM with K = STATES and the vocabulary fixed to W."""
    emission = cvbayes.Categorical(beta=BETA, n_symbols=VOCAB)
    return cvbayes.HMM(n_states=STATES, alpha=ALPHA, beta=BETA, emission=emission)


def warm_up(algorithms, seed):
    """Fit every algorithm on a tiny memory-mapped corpus so that numba's compilation is not timed.

    The corpus is memory-mapped like the measured ones: numba compiles its
    kernels separately for read-only arrays.
    """
    observations, offsets = synthetic_corpus(WARMUP_TOKENS, seed)
    with tempfile.TemporaryDirectory(prefix="bench_stochastic_warmup_") as folder:
        sentences, _ = saved_and_mapped(observations, offsets, folder, "sentences")
        one, _ = saved_and_mapped(observations, np.array([0, observations.shape[0]], dtype=np.int64),
                                  folder, "one")
        for algorithm in algorithms:
            if algorithm == "cvi3":
                new_model().set_params(algorithm="cvi3", n_iter=1, random_state=seed,
                                       subchain_length=SUBCHAINS[0]).fit(one)
            else:
                new_model().set_params(algorithm=algorithm, n_iter=1, random_state=seed, batch_size=10).fit(sentences)
        del sentences, one  # release the maps before the folder goes


# ------------------------------------------------------ 1. throughput
def time_stochastic(corpus, algorithm, batch_size, runs, passes, seed):
    """Tokens per second of training, over `runs` fits of `passes` passes each."""
    rates, pass_seconds = [], []
    for run in range(runs):
        model = new_model()
        model.set_params(algorithm=algorithm, n_iter=passes, random_state=seed + run, batch_size=batch_size)
        model.fit(corpus)
        seconds = sum(record.seconds for record in model.history_)
        rates.append(corpus.n_tokens * passes / seconds)
        pass_seconds.extend(record.seconds for record in model.history_)
    return {
        "algorithm": algorithm,
        "batch_size": batch_size,
        "tokens_per_s": statistics.median(rates),
        "runs_tokens_per_s": rates,
        "pass_seconds": pass_seconds,
        "median_pass_s": statistics.median(pass_seconds),
        "steps_per_pass": model.steps_ // passes,
        "global_memory_bytes": int(model.global_memory_bytes_),
    }


def hmmlearn_seconds(observations, offsets, implementation, seed):
    """Wall time of one hmmlearn EM iteration (random start, "ste") on the given sentences."""
    from hmmlearn.hmm import CategoricalHMM

    # hmmlearn warns that K * W parameters are many for the data; that is the point here.
    logging.getLogger("hmmlearn.base").setLevel(logging.ERROR)
    model = CategoricalHMM(n_components=STATES, n_iter=1, init_params="ste", random_state=seed,
                           implementation=implementation)
    X = np.asarray(observations, dtype=np.int64).reshape(-1, 1)
    lengths = np.diff(np.asarray(offsets))
    started = time.perf_counter()
    model.fit(X, lengths=lengths)
    return time.perf_counter() - started


def time_hmmlearn(observations, offsets, config):
    """hmmlearn's tokens per second, on the full corpus unless that would take too long.

    Both forward-backward implementations are timed on a small slice and the
    faster is used.  It then runs on the fallback prefix; if that rate puts
    the full corpus under the limit it also runs on the full corpus, whose
    rate is reported, else the prefix's rate is.
    """
    check = {}
    check_obs, check_off = sentence_prefix(observations, offsets, config["peer_check_tokens"])
    for implementation in ("scaling", "log"):
        check[implementation] = (check_obs.shape[0]
                                 / hmmlearn_seconds(check_obs, check_off, implementation, config["seed"]))
    implementation = max(check, key=check.get)
    obs, off = sentence_prefix(observations, offsets, config["peer_fallback_tokens"])
    seconds = hmmlearn_seconds(obs, off, implementation, config["seed"])
    result = {"implementation": implementation, "check_tokens": int(check_obs.shape[0]),
              "check_tokens_per_s": check, "fallback_tokens": int(obs.shape[0]),
              "fallback_seconds": seconds, "limit_s": config["peer_limit_s"]}
    estimate = seconds * observations.shape[0] / obs.shape[0]
    result["full_estimate_s"] = estimate
    if obs.shape[0] < observations.shape[0] and estimate <= config["peer_limit_s"]:
        seconds = hmmlearn_seconds(observations, offsets, implementation, config["seed"])
        obs = observations
    result.update({"tokens": int(obs.shape[0]), "seconds": seconds,
                   "tokens_per_s": obs.shape[0] / seconds,
                   "on_prefix": obs.shape[0] < observations.shape[0]})
    return result


def measure_throughput(observations, offsets, folder, config):
    obs, off = sentence_prefix(observations, offsets, config["throughput_tokens"])
    corpus, _ = saved_and_mapped(obs, off, folder, "throughput")
    rows = []
    for algorithm in STOCHASTIC:
        for batch_size in config["batch_sizes"]:
            print(f"  {algorithm} batch_size={batch_size} ...", flush=True)
            rows.append(time_stochastic(corpus, algorithm, batch_size, config["runs"],
                                        config["passes"], config["seed"]))
    result = {"tokens": corpus.n_tokens, "sentences": corpus.n_sequences, "rows": rows}
    if config["peer"]:
        print("  hmmlearn ...", flush=True)
        peer = time_hmmlearn(obs, off, config)
        result["hmmlearn"] = peer
        for row in rows:
            row["ours_over_hmmlearn"] = row["tokens_per_s"] / peer["tokens_per_s"]
    for row in rows:
        row["target_tokens_per_s"] = TARGET_SCVI_TOKENS_PER_S if row["algorithm"] == "scvi" else None
        row["pass"] = (None if row["target_tokens_per_s"] is None
                       else row["tokens_per_s"] >= row["target_tokens_per_s"])
    return result


# ---------------------------------------------------------- 2. memory
def proc_status():
    """Memory fields of /proc/self/status in KiB (RssAnon, RssFile, RssShmem, VmRSS, VmHWM)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile", "RssShmem", "VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
    return fields


class AnonSampler(threading.Thread):
    """Reads RssAnon every `every` seconds in the background and keeps the largest.

    numba's kernels hold the GIL, so samples land between kernel calls (each
    minibatch step returns to Python); a transient inside one call shows in
    VmHWM only.
    """

    def __init__(self, every):
        super().__init__(daemon=True)
        self.every = every
        self.peak_kib = proc_status()["RssAnon"]
        self.samples = 1
        self.halt = threading.Event()

    def run(self):
        while not self.halt.wait(self.every):
            self.peak_kib = max(self.peak_kib, proc_status()["RssAnon"])
            self.samples += 1

    def stop(self):
        self.halt.set()
        self.join()
        self.peak_kib = max(self.peak_kib, proc_status()["RssAnon"])


def memory_child(path, config):
    """In a fresh process: warm up, then fit SCVI on the memory-mapped corpus at `path`.

    The baseline is RssAnon after the imports and a warm-up fit on a tiny
    in-memory corpus; the sampler runs from just before the corpus is loaded
    until the fit ends.  Prints one JSON line.
    """
    warm_up(["scvi"], config["seed"])
    gc.collect()
    peak_reset = reset_peak()
    baseline = proc_status()
    sampler = AnonSampler(SAMPLE_EVERY_S)
    sampler.start()
    started = time.perf_counter()
    corpus = Corpus.load(path, mmap=True)
    after_load = proc_status()
    model = new_model()
    model.set_params(algorithm="scvi", n_iter=config["memory_passes"], random_state=config["seed"],
                     batch_size=config["memory_batch_size"])
    model.fit(corpus)
    wall = time.perf_counter() - started
    sampler.stop()
    end = proc_status()
    print(json.dumps({
        "tokens": corpus.n_tokens,
        "sentences": corpus.n_sequences,
        "file_mib": os.path.getsize(path) / MIB,
        "is_memmap": isinstance(corpus.observations, np.memmap) or isinstance(
            getattr(corpus.observations, "base", None), np.memmap),
        "baseline_anon_mib": baseline["RssAnon"] / 1024,
        "after_load_anon_mib": after_load["RssAnon"] / 1024,
        "peak_anon_mib": sampler.peak_kib / 1024,
        "extra_anon_mib": (sampler.peak_kib - baseline["RssAnon"]) / 1024,
        "end_anon_mib": end["RssAnon"] / 1024,
        "end_file_mib": end["RssFile"] / 1024,
        "baseline_file_mib": baseline["RssFile"] / 1024,
        "vm_hwm_mib": end["VmHWM"] / 1024,
        "baseline_rss_mib": baseline["VmRSS"] / 1024,
        "vm_hwm_reset": peak_reset,
        "samples": sampler.samples,
        "wall_s": wall,
        "train_s": sum(record.seconds for record in model.history_),
        "steps": int(model.steps_),
        "global_memory_bytes": int(model.global_memory_bytes_),
    }))


def measure_memory(observations, offsets, folder, config):
    runs = []
    child_config = {key: config[key] for key in ("seed", "memory_passes", "memory_batch_size")}
    for n_tokens in config["memory_tokens"]:
        obs, off = sentence_prefix(observations, offsets, n_tokens)
        path = Path(folder) / f"memory_{n_tokens}.npz"
        Corpus(obs, off).save(path)
        print(f"  scvi on {obs.shape[0]:,} memory-mapped tokens in a fresh process ...", flush=True)
        done = subprocess.run([sys.executable, __file__, "--memory-child", str(path),
                               "--child-config", json.dumps(child_config)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"memory child failed:\n{done.stderr}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        path.unlink()
    extras = [run["extra_anon_mib"] for run in runs]
    tolerance = max(FLAT_RELATIVE * min(extras), FLAT_MIB)
    spread = max(extras) - min(extras)
    return {"runs": runs, "spread_mib": spread, "tolerance_mib": tolerance, "pass": spread <= tolerance}


# ------------------------------------------------------------- 3. cvi
def time_cvi(corpus, algorithm, iters, seed, subchain_length=None):
    model = new_model()
    model.set_params(algorithm=algorithm, n_iter=iters, random_state=seed, subchain_length=subchain_length)
    model.fit(corpus)
    seconds = [record.seconds for record in model.history_]
    return {"algorithm": algorithm, "subchain_length": subchain_length,
            "median_s": statistics.median(seconds), "iteration_seconds": seconds,
            "local_memory_bytes": int(model.local_memory_bytes_)}


def measure_cvi(observations, offsets, folder, config):
    obs, off = sentence_prefix(observations, offsets, config["cvi_tokens"])
    sentences, _ = saved_and_mapped(obs, off, folder, "cvi_sentences")
    one, _ = saved_and_mapped(obs, np.array([0, obs.shape[0]], dtype=np.int64), folder, "cvi_one")
    print("  cvi2 on the sentences ...", flush=True)
    rows = [time_cvi(sentences, "cvi2", config["cvi_iters"], config["seed"])]
    for length in config["subchains"]:
        print(f"  cvi3 on one sequence, subchains of {length} ...", flush=True)
        rows.append(time_cvi(one, "cvi3", config["cvi_iters"], config["seed"], length))
    for row in rows[1:]:
        row["over_cvi2"] = row["median_s"] / rows[0]["median_s"]
        row["pass"] = row["over_cvi2"] <= TARGET_CVI3_OVER_CVI2
    return {"tokens": sentences.n_tokens, "sentences": sentences.n_sequences, "rows": rows}


# ------------------------------------------------------------ report
def machine_info():
    """The machine and the software versions (bench_hmm's), plus the load at the start."""
    return {**bench_hmm.machine_info(),
            "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None}


def verdict(passed):
    return "-" if passed is None else ("PASS" if passed else "MISS")


def print_throughput(result, config):
    print(f"\n1. Throughput: K = {STATES}, {result['tokens']:,} tokens in {result['sentences']:,} "
          f"sentences, memory-mapped; median of {config['runs']} runs of {config['passes']} passes; "
          "tokens/s = tokens x passes / training seconds")
    peer = result.get("hmmlearn")
    header = (f"{'algorithm':<10}{'batch':>7}{'steps/pass':>12}{'s/pass':>9}{'tokens/s':>13}"
              f"{'vs hmmlearn':>13}{'target':>12}{'':>6}")
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        ratio = f"{row['ours_over_hmmlearn']:.1f}x" if "ours_over_hmmlearn" in row else "-"
        target = row["target_tokens_per_s"]
        print(f"{row['algorithm']:<10}{row['batch_size']:>7}{row['steps_per_pass']:>12}"
              f"{row['median_pass_s']:>9.3f}{row['tokens_per_s']:>13,.0f}{ratio:>13}"
              f"{'-' if target is None else f'>= {target / 1e6:g}M':>12}{verdict(row['pass']):>6}")
    state = result["rows"][0]["global_memory_bytes"] / MIB
    print(f"SCVI/SVI global state (global_memory_bytes_): {state:.1f} MiB")
    if peer:
        rates = ", ".join(f"{name} {rate:,.0f}" for name, rate in peer["check_tokens_per_s"].items())
        where = (f"on a {peer['tokens']:,}-token prefix (whole sentences), because the full "
                 f"{result['tokens']:,} tokens would take about {peer['full_estimate_s']:.0f} s > "
                 f"{peer['limit_s']:.0f} s" if peer["on_prefix"]
                 else f"on the same {peer['tokens']:,} tokens")
        print(f"peer: hmmlearn CategoricalHMM(n_components={STATES}, n_iter=1, init_params='ste', "
              f"implementation={peer['implementation']!r}), one EM iteration {where}: "
              f"{peer['seconds']:.2f} s, {peer['tokens_per_s']:,.0f} tokens/s")
        print(f"      (implementation = the faster on a {peer['check_tokens']:,}-token slice, "
              f"tokens/s: {rates}); "
              "'vs hmmlearn' = our tokens/s over hmmlearn's (one SCVI/SVI pass vs one EM iteration)")


def print_memory(result, config):
    runs = result["runs"]
    print(f"\n2. Memory: scvi, K = {STATES}, batch_size {config['memory_batch_size']}, "
          f"{config['memory_passes']} pass(es), each corpus memory-mapped in a fresh process")
    header = (f"{'tokens':>12}{'file MiB':>10}{'steps':>7}{'train s':>9}{'base anon':>11}{'peak anon':>11}"
              f"{'extra anon':>12}{'RssFile end':>13}{'VmHWM':>9}{'samples':>9}")
    print(header)
    print("-" * len(header))
    for run in runs:
        print(f"{run['tokens']:>12,}{run['file_mib']:>10.1f}{run['steps']:>7}{run['train_s']:>9.2f}"
              f"{run['baseline_anon_mib']:>11.1f}{run['peak_anon_mib']:>11.1f}{run['extra_anon_mib']:>12.1f}"
              f"{run['end_file_mib']:>13.1f}{run['vm_hwm_mib']:>9.1f}{run['samples']:>9}")
    print(f"extra anon (peak - baseline) spread {result['spread_mib']:.1f} MiB across "
          f"{runs[0]['tokens']:,} .. {runs[-1]['tokens']:,} tokens; target: flat, spread <= "
          f"{result['tolerance_mib']:.1f} MiB (max of {FLAT_RELATIVE:.0%} of the smallest and "
          f"{FLAT_MIB:g} MiB): {verdict(result['pass'])}")
    print(f"global_memory_bytes_ = {runs[0]['global_memory_bytes'] / MIB:.2f} MiB "
          f"(start counts, transitions, emission statistics; O(K^2 + K W), the same for every size)")
    print("All in MiB. RssAnon counts the process's anonymous memory (heap, numpy arrays) only. The "
          "pages of the memory-mapped corpus are file-backed (RssFile): the OS can drop them and "
          "read them back from the file, so they are excluded from RssAnon; they do count in VmRSS "
          "and so in VmHWM, the peak RSS (reset after the warm-up where the kernel allows it"
          f"{'' if all(run['vm_hwm_reset'] for run in runs) else ', which it did NOT here'}), which "
          "therefore grows with the file. Baseline = RssAnon after the imports and a warm-up fit on a "
          f"tiny corpus; peak = largest RssAnon sampled every {SAMPLE_EVERY_S * 1000:.0f} ms from the "
          "load to the end of the fit (samples land between numba calls, which hold the GIL).")


def print_cvi(result, config):
    print(f"\n3. CVI-3 vs CVI-2: K = {STATES}, the same {result['tokens']:,} tokens: CVI-2 on "
          f"{result['sentences']:,} sentences, CVI-3 on them laid end to end as ONE sequence; "
          f"median s/iteration of {config['cvi_iters']} iterations after a warm-up fit")
    header = (f"{'algorithm':<10}{'subchain':>9}{'median s/it':>13}{'min':>8}{'max':>8}"
              f"{'local MiB':>11}{'/ cvi2':>8}{'target':>9}{'':>6}")
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        seconds = row["iteration_seconds"]
        ratio = f"{row['over_cvi2']:.2f}" if "over_cvi2" in row else "-"
        target = f"<= {TARGET_CVI3_OVER_CVI2}" if "over_cvi2" in row else "-"
        print(f"{row['algorithm']:<10}{row['subchain_length'] or '-':>9}{row['median_s']:>13.3f}"
              f"{min(seconds):>8.3f}{max(seconds):>8.3f}{row['local_memory_bytes'] / MIB:>11.1f}"
              f"{ratio:>8}{target:>9}{verdict(row.get('pass')):>6}")
    print("local MiB = local_memory_bytes_ (the stored per-token marginals and pair statistics)")


# ---------------------------------------------------------------- main
def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--throughput", action="store_true", help="run measurement 1 (SCVI/SVI tokens/s)")
    parser.add_argument("--memory", action="store_true",
                        help="run measurement 2 (peak memory vs corpus size)")
    parser.add_argument("--cvi", action="store_true", help="run measurement 3 (CVI-3 vs CVI-2)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: every corpus size {QUICK_FACTOR}x smaller (about a minute)")
    parser.add_argument("--runs", type=int, default=3, help="throughput: fits per configuration (median)")
    parser.add_argument("--passes", type=int, default=2, help="throughput: passes per fit")
    parser.add_argument("--batch-sizes", default=",".join(map(str, BATCH_SIZES)),
                        help="throughput: comma-separated minibatch sizes (sentences)")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="throughput: skip hmmlearn")
    parser.add_argument("--memory-passes", type=int, default=1, help="memory: scvi passes per corpus")
    parser.add_argument("--memory-batch-size", type=int, default=MEMORY_BATCH_SIZE)
    parser.add_argument("--cvi-iters", type=int, default=3, help="cvi: timed iterations (median)")
    parser.add_argument("--subchains", default=",".join(map(str, SUBCHAINS)),
                        help="cvi: comma-separated CVI-3 subchain lengths")
    parser.add_argument("--threads", type=int, default=None,
                        help="numba threads, here and in the memory subprocesses (default: numba's, "
                             "the number of cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tmpdir", type=Path, default=None,
                        help="folder for the temporary .npz corpora (default: the system's)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON report (default: benchmarks/results/stochastic.json, "
                             "stochastic_quick.json with --quick)")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-config", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child is not None:
        return args
    if not (args.throughput or args.memory or args.cvi):
        args.throughput = args.memory = args.cvi = True
    args.batch_sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]
    args.subchains = [int(size) for size in args.subchains.split(",") if size.strip()]
    if min([args.runs, args.passes, args.memory_passes, args.memory_batch_size, args.cvi_iters,
            *args.batch_sizes, *args.subchains]) < 1:
        parser.error("runs, passes, batch sizes, iterations and subchain lengths must be positive")
    if args.out is None:
        args.out = RESULTS_DIR / ("stochastic_quick.json" if args.quick else "stochastic.json")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    if args.memory_child is not None:
        memory_child(args.memory_child, json.loads(args.child_config))
        return
    if args.threads is not None:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)  # inherited by the memory subprocesses
        import numba

        numba.set_num_threads(args.threads)
    shrink = QUICK_FACTOR if args.quick else 1
    config = {
        "quick": args.quick, "seed": args.seed, "runs": args.runs, "passes": args.passes,
        "batch_sizes": args.batch_sizes, "peer": args.peer,
        "throughput_tokens": THROUGHPUT_TOKENS // shrink,
        "peer_fallback_tokens": PEER_FALLBACK_TOKENS // shrink,
        "peer_check_tokens": PEER_CHECK_TOKENS // shrink,
        "peer_limit_s": PEER_LIMIT_S / shrink,
        "memory_tokens": [n // shrink for n in MEMORY_TOKENS],
        "memory_passes": args.memory_passes, "memory_batch_size": args.memory_batch_size,
        "cvi_tokens": CVI_TOKENS // shrink, "cvi_iters": args.cvi_iters, "subchains": args.subchains,
        "states": STATES, "alpha": ALPHA, "beta": BETA,
        "data": {"true_states": TRUE_STATES, "vocab": VOCAB, "lengths": [MIN_LENGTH, MAX_LENGTH],
                 "mean_length": MEAN_LENGTH, "transition_concentration": TRANSITION_CONCENTRATION,
                 "emission_concentration": EMISSION_CONCENTRATION},
    }
    report = {"config": config, "machine": machine_info(),
              "started": datetime.datetime.now().isoformat(timespec="seconds"),
              "targets": {"scvi_tokens_per_s": TARGET_SCVI_TOKENS_PER_S,
                          "cvi3_over_cvi2": TARGET_CVI3_OVER_CVI2,
                          "memory_flat": {"relative": FLAT_RELATIVE, "mib": FLAT_MIB}}}
    needed = max([config["throughput_tokens"] if args.throughput else 0,
                  max(config["memory_tokens"]) if args.memory else 0,
                  config["cvi_tokens"] if args.cvi else 0])
    started = time.perf_counter()
    observations, offsets = synthetic_corpus(needed, args.seed)
    report["data"] = {"tokens": int(observations.shape[0]), "sentences": int(offsets.shape[0] - 1),
                      "types_seen": int(np.unique(observations).size),
                      "mean_length": float(observations.shape[0] / (offsets.shape[0] - 1)),
                      "seconds_to_draw": time.perf_counter() - started}
    machine = report["machine"]
    load = machine["load_average_at_start"]
    quick = "; QUICK: sizes 10x smaller, targets indicative only" if args.quick else ""
    print(f"machine: {machine['cpu_model']}, {machine['nproc']} cores, {machine['numba_threads']} numba "
          f"threads; git {machine['git']}{quick}")
    if load is not None and load[0] > 0.5:
        print(f"WARNING: load average {load[0]:.2f} at the start: other processes share the cores, and "
              "numba's parallel kernels slow down badly when a core is taken (most for small minibatches)")
    print(f"data: {report['data']['tokens']:,} tokens in {report['data']['sentences']:,} sentences "
          f"(mean {report['data']['mean_length']:.1f}) from a random HMM with {TRUE_STATES} states, "
          f"{report['data']['types_seen']:,} of {VOCAB:,} types seen; drawn in "
          f"{report['data']['seconds_to_draw']:.1f} s")

    algorithms = ([*STOCHASTIC] if args.throughput else []) + (["cvi2", "cvi3"] if args.cvi else [])
    if algorithms:
        warm_up(algorithms, args.seed)
        import numba

        machine["threading_layer"] = numba.threading_layer()
    with tempfile.TemporaryDirectory(prefix="bench_stochastic_", dir=args.tmpdir) as folder:
        if args.throughput:
            print("1. throughput ...", flush=True)
            report["throughput"] = measure_throughput(observations, offsets, folder, config)
        if args.memory:
            print("2. memory ...", flush=True)
            report["memory"] = measure_memory(observations, offsets, folder, config)
        if args.cvi:
            print("3. cvi3 vs cvi2 ...", flush=True)
            report["cvi"] = measure_cvi(observations, offsets, folder, config)
    report["seconds"] = time.perf_counter() - started

    if "threading_layer" in machine:
        print(f"\nnumba threading layer: {machine['threading_layer']}, {machine['numba_threads']} threads")
    if args.throughput:
        print_throughput(report["throughput"], config)
    if args.memory:
        print_memory(report["memory"], config)
    if args.cvi:
        print_cvi(report["cvi"], config)
    bench_hmm.write_json(report, args.out)
    print(f"\nwrote {args.out} ({report['seconds']:.0f} s in all)")


if __name__ == "__main__":
    main()

"""Speed and memory benchmark of cvbayes's HMM learners, with hmmlearn for comparison.

A synthetic Zipfian corpus (1M tokens in sentences of about 22 tokens by
default) is fitted with K = 45 states and W = 50k word types by each of
cvbayes's algorithms, and by hmmlearn's ``CategoricalHMM`` EM on the same
data.  Every fit runs in a freshly spawned process so that its peak resident
memory is its own; the processes run one after another so that they do not
compete for the cores.

Run ``python benchmarks/bench_hmm.py --help`` for the options and
``benchmarks/README.md`` for what is measured.
"""
import argparse
import datetime
import importlib.metadata
import json
import logging
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

import cvbayes
from cvbayes.data import Corpus

ALGORITHMS = ("em", "vb", "cvi1", "cvi2", "cgs")
TARGET_SECONDS = {"em": 0.5, "vb": 0.5, "cvi2": 1.0}
TARGET_RATIO = 100.0
ALPHA = 0.1
BETA = 0.1
MEAN_LENGTH = 22
WARMUP_TOKENS = 200
QUICK_TOKENS = 100_000
QUICK_ITERS = 2
IMPLEMENTATION_CHECK_TOKENS = 10_000
MIB = 2.0 ** 20
RESULTS_DIR = Path(__file__).resolve().parent / "results"


# --------------------------------------------------------------- data
def zipf_corpus(n_tokens, n_types, seed):
    """Draw a synthetic corpus with a Zipfian unigram distribution.

    Parameters
    ----------
    n_tokens : int
        Exact number of tokens.
    n_types : int
        Vocabulary size W; type ``w`` has probability proportional to
        ``1 / (w + 1)`` (Zipf's law with exponent 1, id 0 the most frequent).
    seed : int
        Seed of the NumPy generator.

    Returns
    -------
    observations : ndarray of int32, shape (n_tokens,)
    offsets : ndarray of int64, shape (n_sentences + 1,)
        Sentence boundaries.  Lengths are ``1 + Poisson(MEAN_LENGTH - 1)``;
        the last sentence is cut so that the corpus has exactly `n_tokens`.
    """
    rng = np.random.default_rng(seed)
    lengths = np.empty(0, dtype=np.int64)
    while lengths.sum() < n_tokens:
        more = 1 + rng.poisson(MEAN_LENGTH - 1, size=n_tokens // MEAN_LENGTH + 1)
        lengths = np.concatenate([lengths, more])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    last = int(np.searchsorted(offsets, n_tokens))
    offsets = offsets[:last + 1]
    offsets[-1] = n_tokens
    probabilities = 1.0 / np.arange(1, n_types + 1)
    probabilities /= probabilities.sum()
    observations = rng.choice(n_types, size=n_tokens, p=probabilities).astype(np.int32)
    return observations, offsets


def dirichlet_parameters(n_states, n_types, seed):
    """Draw HMM parameters with every row from a flat Dirichlet.

    Parameters
    ----------
    n_states, n_types : int
        K and W.
    seed : int
        Seed of the NumPy generator.

    Returns
    -------
    dict
        ``startprob`` (K,), ``transmat`` (K, K) and ``emissionprob`` (K, W),
        the form that both ``HMM(init=...)`` and hmmlearn accept.
    """
    rng = np.random.default_rng(seed)
    return {
        "startprob": rng.dirichlet(np.ones(n_states)),
        "transmat": rng.dirichlet(np.ones(n_states), size=n_states),
        "emissionprob": rng.dirichlet(np.ones(n_types), size=n_states),
    }


def sentence_prefix(offsets, n_tokens):
    """Return how many whole sentences fit in the first `n_tokens` tokens (at least one)."""
    return max(1, int(np.searchsorted(offsets, n_tokens, side="right")) - 1)


# ----------------------------------------------------- child processes
def peak_rss_mib():
    """Return this process's peak resident set size in MiB.

    On Linux this is ``VmHWM`` from ``/proc/self/status``, which
    `reset_peak_rss` can lower; ``getrusage``'s ``ru_maxrss`` cannot be reset
    and, in a spawned child, starts from the parent's peak.  Elsewhere
    ``ru_maxrss`` is used (bytes on macOS, KiB on other systems).
    """
    if os.path.exists("/proc/self/status"):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MIB if sys.platform == "darwin" else peak / 1024.0


def reset_peak_rss():
    """Lower the peak resident set size to the current one (Linux 4.0 and later).

    Returns
    -------
    bool
        Whether the peak could be reset.
    """
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


def new_model(config):
    """Return an unfitted ``cvbayes.HMM`` with the vocabulary fixed to W."""
    emission = cvbayes.Categorical(beta=BETA, n_symbols=config["vocab"])
    return cvbayes.HMM(n_states=config["states"], alpha=ALPHA, beta=BETA, emission=emission)


def fit_arguments(algorithm, config):
    """Return the ``HMM`` parameters of `algorithm` (for ``set_params``).

    EM starts from the same Dirichlet parameters as hmmlearn so that the two
    run the same computation; the other learners use their own random start.
    """
    arguments = {"algorithm": algorithm, "random_state": config["seed"]}
    if algorithm == "em":
        arguments["init"] = dirichlet_parameters(config["states"], config["vocab"], config["seed"])
    return arguments


def warm_up(config):
    """Fit every algorithm on a tiny corpus so that numba compilation is not timed."""
    observations, offsets = zipf_corpus(WARMUP_TOKENS, config["vocab"], config["seed"])
    corpus = Corpus(observations, offsets)
    for algorithm in ALGORITHMS:
        new_model(config).set_params(n_iter=2, **fit_arguments(algorithm, config)).fit(corpus)


def child_task(task, config):
    """Run one measurement in a fresh process and return its results.

    For a cvbayes algorithm the corpus is built and every algorithm warmed
    up first; the resident memory at that point is the baseline, and the peak
    is reset to it so that the transient memory of compiling and warming up
    does not hide the fit's own.

    Parameters
    ----------
    task : str
        One of `ALGORITHMS`, or ``"hmmlearn"``.
    config : dict
        The parsed command-line options.

    Returns
    -------
    dict
        Timings, memory in MiB and task-specific details.
    """
    observations, offsets = zipf_corpus(config["tokens"], config["vocab"], config["seed"])
    if task == "hmmlearn":
        return hmmlearn_task(observations, offsets, config)
    corpus = Corpus(observations, offsets)
    warm_up(config)
    peak_reset = reset_peak_rss()
    baseline = peak_rss_mib()
    model = new_model(config)
    model.set_params(n_iter=config["iters"] + 1, **fit_arguments(task, config)).fit(corpus)
    timed = [record.seconds for record in model.history_[1:]]
    peak = peak_rss_mib()
    result = {
        "iteration_seconds": [record.seconds for record in model.history_],
        "median_s": statistics.median(timed),
        "min_s": min(timed),
        "max_s": max(timed),
        "final_objective": model.history_[-1].objective,
        "baseline_rss_mib": baseline,
        "peak_rss_mib": peak,
        "extra_rss_mib": peak - baseline,
        "peak_reset": peak_reset,
    }
    if task == "cvi2":
        result["local_memory_bytes"] = int(model.local_memory_bytes_)
    return result


def hmmlearn_model(config, implementation, n_iter):
    """Return a hmmlearn ``CategoricalHMM`` that starts from the shared parameters and never stops early."""
    from hmmlearn.hmm import CategoricalHMM

    # hmmlearn warns that K * W parameters are many for the data; that is the point here.
    logging.getLogger("hmmlearn.base").setLevel(logging.ERROR)
    model = CategoricalHMM(n_components=config["states"], n_features=config["vocab"],
                           n_iter=n_iter, tol=-np.inf, init_params="", params="ste",
                           implementation=implementation)
    parameters = dirichlet_parameters(config["states"], config["vocab"], config["seed"])
    model.startprob_ = parameters["startprob"]
    model.transmat_ = parameters["transmat"]
    model.emissionprob_ = parameters["emissionprob"]
    return model


def timed_hmmlearn_fit(observations, offsets, n_sentences, config, implementation, n_iter):
    """Fit hmmlearn on the first `n_sentences` sentences; return seconds per iteration."""
    n_tokens = int(offsets[n_sentences])
    model = hmmlearn_model(config, implementation, n_iter)
    started = time.perf_counter()
    model.fit(observations[:n_tokens].reshape(-1, 1), lengths=np.diff(offsets[:n_sentences + 1]))
    return (time.perf_counter() - started) / model.monitor_.iter


def hmmlearn_task(observations, offsets, config):
    """Time hmmlearn's EM with the faster of its two forward-backward implementations.

    Both implementations are timed for one iteration on a small slice; the
    faster one, or the one that ``hmmlearn_implementation`` names, is then run
    for ``hmmlearn_iters`` iterations on the prefix of ``hmmlearn_tokens``
    tokens (whole sentences), and its time per iteration is scaled linearly
    per token to the full corpus.
    """
    check_sentences = sentence_prefix(offsets, IMPLEMENTATION_CHECK_TOKENS)
    check = {implementation: timed_hmmlearn_fit(observations, offsets, check_sentences, config,
                                                implementation, 1)
             for implementation in ("scaling", "log")}
    implementation = config["hmmlearn_implementation"]
    if implementation == "auto":
        implementation = min(check, key=check.get)
    n_sentences = sentence_prefix(offsets, config["hmmlearn_tokens"])
    prefix_tokens = int(offsets[n_sentences])
    measured = timed_hmmlearn_fit(observations, offsets, n_sentences, config, implementation,
                                  config["hmmlearn_iters"])
    return {
        "implementation": implementation,
        "implementation_check_tokens": int(offsets[check_sentences]),
        "implementation_check_seconds": check,
        "prefix_tokens": prefix_tokens,
        "iterations": config["hmmlearn_iters"],
        "measured_seconds_per_iter": measured,
        "seconds_per_iter": measured * config["tokens"] / prefix_tokens,
        "scaled": prefix_tokens != config["tokens"],
        "peak_rss_mib": peak_rss_mib(),
    }


def run_in_child(task, config):
    """Run `child_task` in a newly spawned process and return its result."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(child_task, task, config).result()


# ------------------------------------------------------------- report
def machine_info():
    """Describe the machine and the software versions."""
    import numba

    cpu_model = "unknown"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as cpuinfo:
            cpu_model = next((line.split(":", 1)[1].strip() for line in cpuinfo
                              if line.startswith("model name")), cpu_model)
    try:
        hmmlearn_version = importlib.metadata.version("hmmlearn")
    except importlib.metadata.PackageNotFoundError:
        hmmlearn_version = None
    git = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parent)
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "hmmlearn": hmmlearn_version,
        "cvbayes": cvbayes.__version__,
        "git": git.stdout.strip() if git.returncode == 0 else None,
    }


def met(value, target, at_most=True):
    """Return ``"yes"``/``"no"`` for a target, or ``"-"`` when there is none."""
    if target is None:
        return "-"
    return "yes" if (value <= target if at_most else value >= target) else "no"


def print_report(report):
    """Print the results as a table."""
    config, machine, corpus = report["config"], report["machine"], report["corpus"]
    print(f"\nmachine: {machine['cpu_model']}, {machine['nproc']} cores, "
          f"{machine['numba_threads']} numba threads; git {machine['git']}")
    print(f"corpus: {config['tokens']:,} tokens, {corpus['n_sentences']:,} sentences, "
          f"{corpus['n_types_seen']:,} of {config['vocab']:,} types seen; K = {config['states']}; "
          f"median of {config['iters']} timed iterations (first iteration dropped)")
    print(f"corpus arrays: {corpus['mib']:.1f} MiB; baseline = resident memory after building the "
          "corpus and warming up, in each algorithm's own process; extra = peak during the fit - baseline\n")
    header = (f"{'algorithm':<10}{'median s/it':>12}{'min':>9}{'max':>9}{'base MiB':>10}{'peak MiB':>10}"
              f"{'extra MiB':>11}{'target s':>10}{'met?':>6}")
    print(header)
    print("-" * len(header))
    for name, result in report["algorithms"].items():
        target = TARGET_SECONDS.get(name)
        print(f"{name:<10}{result['median_s']:>12.3f}{result['min_s']:>9.3f}{result['max_s']:>9.3f}"
              f"{result['baseline_rss_mib']:>10.0f}{result['peak_rss_mib']:>10.0f}"
              f"{result['extra_rss_mib']:>11.0f}"
              f"{'-' if target is None else f'<= {target}':>10}{met(result['median_s'], target):>6}")
    if not all(result["peak_reset"] for result in report["algorithms"].values()):
        print("note: the peak RSS could not be reset after the warm-up; 'extra' may be understated")
    if "cvi2" in report["algorithms"]:
        local = report["algorithms"]["cvi2"]["local_memory_bytes"]
        print(f"\ncvi2 local statistics (local_memory_bytes_): {local / MIB:.0f} MiB")
    hmm = report.get("hmmlearn")
    if hmm is None:
        return
    checks = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in
                       hmm["implementation_check_seconds"].items())
    chosen = ("the faster" if config["hmmlearn_implementation"] == "auto"
              else "set by --hmmlearn-implementation")
    print(f"\nhmmlearn CategoricalHMM EM, implementation={hmm['implementation']!r} ({chosen}; "
          f"one iteration on a {hmm['implementation_check_tokens']:,}-token slice: {checks})")
    if hmm["scaled"]:
        print(f"  measured {hmm['measured_seconds_per_iter']:.2f} s/iter on a "
              f"{hmm['prefix_tokens']:,}-token prefix over {hmm['iterations']} iterations; "
              f"SCALED linearly per token to {config['tokens']:,} tokens: "
              f"{hmm['seconds_per_iter']:.1f} s/iter (estimate)")
    else:
        print(f"  {hmm['seconds_per_iter']:.2f} s/iter on the full corpus over "
              f"{hmm['iterations']} iterations")
    print(f"  peak RSS {hmm['peak_rss_mib']:.0f} MiB" + (" (on the prefix)" if hmm["scaled"] else ""))
    for name, ratio in report["ratios"].items():
        target = TARGET_RATIO if name == "em" else None
        verdict = ("" if target is None
                   else f"  (target >= {target:.0f}x: {met(ratio, target, at_most=False)})")
        print(f"  hmmlearn / cvbayes {name}: {ratio:.0f}x{verdict}")


def write_json(report, path):
    """Write the report to `path` atomically, through a ``.tmp`` file beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(temporary, path)


# --------------------------------------------------------------- main
def parse_arguments(argv=None):
    """Parse and check the command line; ``--quick`` overrides the size options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1_000_000, help="corpus size in tokens")
    parser.add_argument("--states", type=int, default=45, help="number of hidden states K")
    parser.add_argument("--vocab", type=int, default=50_000, help="vocabulary size W")
    parser.add_argument("--iters", type=int, default=5,
                        help="timed iterations per algorithm (one more is run and dropped)")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS),
                        help="comma-separated subset of " + ",".join(ALGORITHMS))
    parser.add_argument("--hmmlearn-iters", type=int, default=2,
                        help="hmmlearn EM iterations; 0 skips hmmlearn")
    parser.add_argument("--hmmlearn-tokens", type=int, default=None,
                        help="run hmmlearn on a prefix of this many tokens (whole sentences) and "
                             "scale its time per token to the full corpus (default: full corpus)")
    parser.add_argument("--hmmlearn-implementation", choices=("auto", "scaling", "log"),
                        default="auto", help="hmmlearn's forward-backward (default: the faster "
                                             "of the two on a small slice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None,
                        help="output file (default: benchmarks/results/hmm_<date>.json)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: {QUICK_TOKENS:,} tokens and {QUICK_ITERS} timed iterations")
    args = parser.parse_args(argv)
    if args.quick:
        args.tokens, args.iters = QUICK_TOKENS, QUICK_ITERS
    args.algorithms = [name.strip() for name in args.algorithms.split(",") if name.strip()]
    unknown = sorted(set(args.algorithms) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithms {', '.join(unknown)}; choose from {', '.join(ALGORITHMS)}")
    if args.tokens < 1 or args.iters < 1 or args.hmmlearn_iters < 0:
        parser.error("--tokens and --iters must be positive and --hmmlearn-iters non-negative")
    args.hmmlearn_tokens = min(args.hmmlearn_tokens or args.tokens, args.tokens)
    if args.json is None:
        suffix = "_quick" if args.quick else ""
        args.json = RESULTS_DIR / f"hmm_{datetime.date.today().isoformat()}{suffix}.json"
    return args


def main(argv=None):
    """Run every measurement, print the table and write the JSON report."""
    args = parse_arguments(argv)
    config = {key: value for key, value in vars(args).items() if key not in ("json", "algorithms")}
    report = {"config": {**config, "algorithms": args.algorithms, "alpha": ALPHA, "beta": BETA},
              "machine": machine_info(),
              "started": datetime.datetime.now().isoformat(timespec="seconds")}

    observations, offsets = zipf_corpus(args.tokens, args.vocab, args.seed)
    report["corpus"] = {"n_sentences": len(offsets) - 1,
                        "n_types_seen": int(np.unique(observations).size),
                        "mib": (observations.nbytes + offsets.nbytes) / MIB}
    report["algorithms"] = {}
    for algorithm in args.algorithms:
        print(f"{algorithm} ...", flush=True)
        report["algorithms"][algorithm] = run_in_child(algorithm, config)
    if args.hmmlearn_iters:
        print(f"hmmlearn on {args.hmmlearn_tokens:,} tokens ...", flush=True)
        report["hmmlearn"] = run_in_child("hmmlearn", config)
        report["ratios"] = {name: report["hmmlearn"]["seconds_per_iter"] / result["median_s"]
                            for name, result in report["algorithms"].items() if name in ("em", "vb")}
    report["targets"] = {"seconds_per_iter": TARGET_SECONDS, "hmmlearn_over_em": TARGET_RATIO}
    print_report(report)
    write_json(report, args.json)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()

"""Benchmark of learning on shards (cvbayes.models.hmm_shards, issue 21).

Four measurements, each a subcommand (results appended to benchmarks/results/distributed.json):

1. ``equality``: EM and VB on a synthetic corpus (default 1M tokens, K = 20, W = 5,000 Zipf-like
   words, sentences of 5 to 40 tokens) in one process and on a Dask LocalCluster of 1, 2 and 4
   worker processes (one shard each): the largest relative difference of the objective trajectories,
   and the seconds per pass (median over the passes after the first), i.e. the throughput and the
   overhead of Dask against the in-process pass;
2. ``memory``: the peak resident memory (ru_maxrss) of one worker process holding one shard of
   1M to 20M tokens, after an EM pass (a fresh cluster per size, so each peak is its own);
3. ``cvi2``: the sharded CVI-2 against sequential CVI-2 on the full Brown corpus (unsupervised,
   K = 45 states scored against its 87-odd tags, the thesis's alpha = beta = 0.1 and footnote 5's random local start): many-to-one
   accuracy and seconds per pass, shards on threads of one process and on 2 Dask workers.

The machine this ran on has 2 cores shared with other jobs: quote medians, expect noise.
``python benchmarks/bench_distributed.py equality --tokens 100000`` is a quick smoke test.
"""
import argparse
import datetime
import json
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np

from cvbayes import HMM
from cvbayes.data import Corpus
from cvbayes.metrics.tagging import many_to_one

RESULTS = Path(__file__).parent / "results" / "distributed.json"


def synthetic(n_tokens, n_words=5000, seed=0):
    """Random sentences of 5 to 40 Zipf-distributed word ids (speed and memory need no planted model)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 41, size=n_tokens // 20 + 1)
    lengths = lengths[:np.searchsorted(np.cumsum(lengths), n_tokens) + 1]
    lengths[-1] -= lengths.sum() - n_tokens
    lengths = lengths[lengths > 0]
    ranks = 1.0 / np.arange(1, n_words + 1)
    words = rng.choice(n_words, size=n_tokens, p=ranks / ranks.sum()).astype(np.int32)
    words[:n_words] = np.arange(n_words)  # every word type occurs
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Corpus(words, offsets)


def cluster(n_workers, threads):
    from distributed import Client, LocalCluster
    local = LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True, dashboard_address=":0")
    return local, Client(local)


def per_pass(model):
    seconds = [record.seconds for record in model.history_][1:]
    return statistics.median(seconds)


def objectives(model):
    return np.array([record.objective for record in model.history_])


def run_equality(args):
    corpus = synthetic(args.tokens)
    rows = []
    for algorithm in ("em", "vb"):
        fit = dict(algorithm=algorithm, n_iter=args.iterations, seed=0)
        single = HMM(args.states).fit(corpus, **fit)
        rows.append({"algorithm": algorithm, "workers": 0, "seconds_per_pass": per_pass(single), "max_rel_diff": 0.0})
        print(rows[-1], flush=True)
        for n_workers in args.workers:
            local, client = cluster(n_workers, max(1, (os.cpu_count() or 1) // n_workers))
            try:
                HMM(args.states).fit(corpus, client=client, **{**fit, "n_iter": 1})  # warm the workers' numba
                sharded = HMM(args.states).fit(corpus, client=client, **fit)
            finally:
                client.close()
                local.close()
            diff = np.max(np.abs(objectives(sharded) - objectives(single)) / np.abs(objectives(single)))
            rows.append({"algorithm": algorithm, "workers": n_workers, "seconds_per_pass": per_pass(sharded),
                         "max_rel_diff": float(diff)})
            print(rows[-1], flush=True)
    return {"tokens": corpus.n_tokens, "states": args.states, "iterations": args.iterations, "rows": rows}


def _peak_rss_mib():
    """This process's peak resident memory since its exec (VmHWM; ru_maxrss would keep the peak of the
    process the worker was forked from)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_memory(args):
    rows = []
    for millions in args.millions:
        corpus = synthetic(int(millions * 1_000_000))
        local, client = cluster(1, 1)
        try:
            before = list(client.run(_peak_rss_mib).values())[0]
            started = time.perf_counter()
            HMM(args.states, algorithm="em", n_iter=1).fit(corpus, client=client)
            seconds = time.perf_counter() - started
            after = list(client.run(_peak_rss_mib).values())[0]
        finally:
            client.close()
            local.close()
        rows.append({"tokens": corpus.n_tokens, "worker_peak_mib_before": before, "worker_peak_mib_after": after,
                     "shard_file_mib": corpus.n_tokens * 4 / 2**20, "fit_seconds": seconds})
        print(rows[-1], flush=True)
        del corpus
    return {"states": args.states, "rows": rows}


def run_cvi2(args):
    from cvbayes.tagging import load_corpus
    corpus = load_corpus("brown", n_sentences=args.sentences)
    k = args.states
    fit = dict(n_iter=args.iterations, random_state=0, init="local")
    rows = []

    def score(name, model):
        rows.append({"run": name, "seconds_per_pass": per_pass(model),
                     "many_to_one": many_to_one(model.predict(corpus), corpus.gold),
                     "objective": float(objectives(model)[-1])})
        print(rows[-1], flush=True)

    score("cvi2", HMM(k, algorithm="cvi2", **fit).fit(corpus))
    score("cvi2-sharded, 2 threads", HMM(k, algorithm="cvi2-sharded", **fit).fit(corpus, n_shards=2))
    if not args.no_dask:
        local, client = cluster(2, 1)
        try:
            score("cvi2-sharded, 2 Dask workers", HMM(k, algorithm="cvi2-sharded", **fit).fit(corpus, client=client))
        finally:
            client.close()
            local.close()
    return {"tokens": corpus.n_tokens, "states": k, "iterations": args.iterations, "rows": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    equality = sub.add_parser("equality")
    equality.add_argument("--tokens", type=int, default=1_000_000)
    equality.add_argument("--states", type=int, default=20)
    equality.add_argument("--iterations", type=int, default=5)
    equality.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    memory = sub.add_parser("memory")
    memory.add_argument("--millions", type=float, nargs="+", default=[1, 5, 20])
    memory.add_argument("--states", type=int, default=20)
    cvi2 = sub.add_parser("cvi2")
    cvi2.add_argument("--sentences", type=int, default=None)
    cvi2.add_argument("--iterations", type=int, default=8)
    cvi2.add_argument("--states", type=int, default=45)
    cvi2.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    result = {"equality": run_equality, "memory": run_memory, "cvi2": run_cvi2}[args.what](args)
    result.update(what=args.what, date=datetime.datetime.now().isoformat(timespec="seconds"),
                  load_average=os.getloadavg(), cpus=os.cpu_count())
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps(history + [result], indent=1))


if __name__ == "__main__":
    main()

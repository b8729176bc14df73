"""Speed of the DMV chart (cvbayes.trees.dmv): seconds per inside-outside pass over a corpus.

The corpus is random: 4,661 sentences (the number of EWT training sentences of at most 10 words)
with lengths drawn uniformly from 1 to 10 and tags uniformly from V types, V = 17 (UPOS) and V = 45
(XPOS, the PTB tags).  The tables are random Dirichlet(1) rows.  Timed, for each V:

* ``expectations``: one E-step, `dmv_batch_expectations` (inside, outside, counts), with all
  threads and with one thread;
* ``log_evidence``: the inside pass only, all threads;
* ``viterbi``: `dmv_batch_decode`, all threads.

Each is run once to compile (numba caches, so later runs only load), then ``--repeats`` times;
the median, min and max wall-clock seconds, the tokens per second at the median, and the median
process CPU seconds (all threads) are reported.  On a shared machine the one-thread CPU time is
the steadiest figure of the work a pass costs.  The report
is printed and written as JSON to ``benchmarks/results/dmv_<date>.json``.

    python benchmarks/bench_dmv.py                 # about a minute with a cold numba cache
    python benchmarks/bench_dmv.py --repeats 5 --json /tmp/dmv.json
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numba
import numpy as np

from cvbayes.trees.dmv import (dmv_batch_decode, dmv_batch_expectations, dmv_batch_log_evidence,
                               head_block_offsets, work_chunks)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SENTENCES = 4_661
MAX_LENGTH = 10
TYPES = (17, 45)


def random_corpus(rng, n_sentences, max_length, n_types):
    lengths = rng.integers(1, max_length + 1, n_sentences)
    offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return rng.integers(0, n_types, offsets[-1]).astype(np.int32), offsets


def random_log_tables(rng, n_types):
    return (np.log(rng.dirichlet(np.ones(n_types))),
            np.log(rng.dirichlet(np.ones(2), size=(n_types, 2, 2))),
            np.log(rng.dirichlet(np.ones(n_types), size=(n_types, 2))))


def timed(run, repeats):
    """Wall-clock and process CPU seconds of ``repeats`` runs, after one untimed run."""
    run()  # compile or load from numba's cache
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def summary(times, n_tokens):
    wall, cpu = times
    median = statistics.median(wall)
    return {"median_s": median, "min_s": min(wall), "max_s": max(wall), "tokens_per_s": n_tokens / median,
            "median_cpu_s": statistics.median(cpu), "runs_s": wall, "runs_cpu_s": cpu}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=SENTENCES, help="number of sentences (default 4661)")
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH, help="longest sentence (default 10)")
    parser.add_argument("--repeats", type=int, default=20, help="timed passes per measurement (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the report (default benchmarks/results/dmv_<date>.json)")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    threads = numba.get_num_threads()
    report = {
        "date": datetime.date.today().isoformat(),
        "load_average_1min_before": os.getloadavg()[0],
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "numba_threads": threads, "numba": numba.__version__},
        "corpus": {"sentences": args.sentences, "lengths": f"uniform 1..{args.max_length}"},
        "results": {},
    }
    for n_types in TYPES:
        tags, offsets = random_corpus(rng, args.sentences, args.max_length, n_types)
        tables = random_log_tables(rng, n_types)
        chunks = work_chunks(offsets)
        no_local = (np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros((0, 2)))
        heads = np.zeros(tags.size, dtype=np.int32)
        log_best = np.zeros(offsets.size - 1)

        def expectations(chunk_bounds):
            return lambda: dmv_batch_expectations(tags, offsets, chunk_bounds, *tables, *no_local)

        one_chunk = np.array([0, offsets.size - 1], dtype=np.int64)
        numba.set_num_threads(1)
        single = timed(expectations(one_chunk), args.repeats)
        numba.set_num_threads(threads)
        result = {
            "tokens": int(tags.size),
            "expectations": summary(timed(expectations(chunks), args.repeats), tags.size),
            "expectations_one_thread": summary(single, tags.size),
            "log_evidence": summary(timed(lambda: dmv_batch_log_evidence(tags, offsets, chunks, *tables),
                                          args.repeats), tags.size),
            "viterbi": summary(timed(lambda: dmv_batch_decode(tags, offsets, chunks, *tables, heads, log_best),
                                     args.repeats), tags.size),
            "local_posteriors_bytes_float32": int(4 * (head_block_offsets(offsets)[-1] + 2 * tags.size)),
        }
        report["results"][f"V={n_types}"] = result
        print(f"V = {n_types}: {args.sentences} sentences, {tags.size} tokens")
        for name in ("expectations", "expectations_one_thread", "log_evidence", "viterbi"):
            r = result[name]
            print(f"  {name:<24} {1000 * r['median_s']:7.1f} ms per pass (min {1000 * r['min_s']:.1f}, "
                  f"max {1000 * r['max_s']:.1f}; CPU {1000 * r['median_cpu_s']:.1f})  "
                  f"{r['tokens_per_s']:,.0f} tokens/s")

    path = args.json or RESULTS_DIR / f"dmv_{report['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()

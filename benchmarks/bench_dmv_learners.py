"""Seconds a pass of the DMV's learners (cvbayes.DMV) on UD English EWT train, and tokens per second.

The corpus is EWT train's sentences of at most 10 words after punctuation removal, UPOS tags (5,386
sentences, 27,958 tokens; `cvbayes data fetch ewt`), the training set of `cvbayes experiment fig4.1-dmv`.
Each learner (em, vb, cvi, scvi) runs ``--passes`` passes from the harmonic start with alpha 0.1 and one
numba thread, then with every thread; a pass's time is the schedule's own record (`DMV.history_`, the
callback-free wall time of the pass), the first pass excluded (it may load numba's cache).  Reported: the
median, min and max seconds a pass, and tokens a second at the median.  CVI is sequential by definition
(each sentence sees the counts as the previous update left them), so its two rows differ only by noise;
EM's and VB's E-step and SCVI's minibatch E-step run over sentences in parallel.

    python benchmarks/bench_dmv_learners.py                 # about a minute
    python benchmarks/bench_dmv_learners.py --passes 20 --json /tmp/dmv_learners.json
"""
import argparse
import datetime
import json
import os
import platform
import statistics
from pathlib import Path

import numba

from cvbayes import DMV
from cvbayes.data.dependencies import read_dependencies, upos_tagset
from cvbayes.data.treebanks import treebank_file

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ALGORITHMS = ("em", "vb", "cvi", "scvi")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=11, help="passes a learner, the first untimed (default 11)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the report (default benchmarks/results/dmv_learners_<date>.json)")
    args = parser.parse_args(argv)
    train = read_dependencies(treebank_file("ewt", "train"), tagset=upos_tagset(True), remove_punctuation=True,
                              max_length=10)
    threads = numba.get_num_threads()
    report = {"date": datetime.date.today().isoformat(), "load_average_1min_before": os.getloadavg()[0],
              "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "numba": numba.__version__},
              "corpus": {"sentences": train.n_sentences, "tokens": train.n_tokens}, "results": {}}
    print(f"EWT train <= 10 words, no punctuation: {train.n_sentences} sentences, {train.n_tokens} tokens")
    for n_threads in sorted({1, threads}):
        numba.set_num_threads(n_threads)
        for algorithm in ALGORITHMS:
            model = DMV(alpha=0.1, algorithm=algorithm, n_iter=args.passes).fit(train)
            seconds = [record.seconds for record in model.history_[1:]]
            median = statistics.median(seconds)
            report["results"][f"{algorithm}, {n_threads} thread{'s' if n_threads > 1 else ''}"] = {
                "median_s": median, "min_s": min(seconds), "max_s": max(seconds),
                "tokens_per_s": train.n_tokens / median, "runs_s": seconds}
            print(f"  {algorithm:<5} {n_threads} thread(s): {median:.3f} s a pass (min {min(seconds):.3f}, "
                  f"max {max(seconds):.3f})  {train.n_tokens / median:,.0f} tokens/s")
    numba.set_num_threads(threads)
    path = args.json or RESULTS_DIR / f"dmv_learners_{report['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()

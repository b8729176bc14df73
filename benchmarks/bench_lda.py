"""Benchmark of cvbayes's LDA learners against scikit-learn, gensim, tomotopy and lda (issue 19), and of our
collapsed Gibbs sampler against tomotopy's, thread for thread (issue 32).

Every system fits the same training documents with the same priors in a fresh process and is scored by
the same code: held-out document-completion perplexity against wall time, seconds a pass, tokens a
second, peak memory and NPMI (see `cvbayes.experiments.lda`, which ``cvbayes experiment lda`` runs too).
A run of some systems (--systems) replaces their rows of an earlier results.json and keeps the others.

    pip install -e ".[bench]"                  # scikit-learn, gensim, tomotopy, lda
    cvbayes data fetch news && cvbayes data fetch brown
    python benchmarks/bench_lda.py             # news and Brown at K = 50 (about 20 minutes on 2 cores)
    python benchmarks/bench_lda.py --full      # K = 20, 50, 100 with twice the passes
    python benchmarks/bench_lda.py --corpora brown --topics 20 --systems cvb0 scvb0 cgs tomotopy --scale 0.2

    python benchmarks/bench_lda.py --gibbs     # cgs against tomotopy: Brown K = 20, 50, 100 and news K = 50,
                                               # one and two threads, 5 runs each (about an hour on 2 cores)
    python benchmarks/bench_lda.py --gibbs --corpora brown --topics 50 --threads 1 --repeats 3

Writes results.json, table.md and perplexity_<corpus>_K<k>.png under --out (docs/results/lda); --gibbs
writes gibbs_against_tomotopy.json there and in benchmarks/results/lda_gibbs_<date>.json, and its section
of table.md: each sampler's median nanoseconds a token, ours over tomotopy's, and the mean held-out
perplexity over the seeds.
"""
import argparse
import datetime
import itertools
import sys
from pathlib import Path

from cvbayes.experiments import lda


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", nargs="+", choices=lda.CORPORA, default=list(lda.CORPORA))
    parser.add_argument("--topics", type=int, nargs="+", default=None,
                        help=f"K values (default {' '.join(map(str, lda.DEFAULT_TOPICS))}; "
                             f"--full: {' '.join(map(str, lda.FULL_TOPICS))}; --gibbs: "
                             f"{', '.join(f'{corpus} {k}' for corpus, k in lda.GIBBS_CELLS)})")
    parser.add_argument("--systems", nargs="+", choices=lda.SYSTEMS, default=list(lda.SYSTEMS))
    parser.add_argument("--scale", type=float, default=None,
                        help="multiply every system's default passes (default 1; --full: 2)")
    parser.add_argument("--full", action="store_true", help="the full grid: K = 20, 50, 100, twice the passes")
    parser.add_argument("--gibbs", action="store_true", help="our collapsed Gibbs sampler against tomotopy's")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="--gibbs: threads (default 1 2)")
    parser.add_argument("--repeats", type=int, default=5, help="--gibbs: runs of each sampler a cell (default 5)")
    parser.add_argument("--sweeps", type=int, default=lda.GIBBS_SWEEPS,
                        help=f"--gibbs: sweeps a run (default {lda.GIBBS_SWEEPS})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="docs/results/lda")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.gibbs:
        cells = (list(itertools.product(args.corpora, args.topics)) if args.topics
                 else [cell for cell in lda.GIBBS_CELLS if cell[0] in args.corpora])
        copy = Path(__file__).resolve().parent / "results" / f"lda_gibbs_{datetime.date.today().isoformat()}.json"
        results = lda.run_gibbs_against_tomotopy(out=args.out, cells=cells, threads=tuple(args.threads),
                                                 repeats=args.repeats, sweeps=args.sweeps, seed=args.seed,
                                                 copy_to=copy, quiet=args.quiet)
        print(lda.gibbs_table(results))
        return 0
    topics = args.topics or (lda.FULL_TOPICS if args.full else lda.DEFAULT_TOPICS)
    scale = args.scale or (2.0 if args.full else 1.0)
    results = lda.run(out=args.out, corpora=args.corpora, topics=tuple(topics), systems=args.systems, scale=scale,
                      seed=args.seed, quiet=args.quiet)
    print(lda.table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(argv=None))

"""Benchmark of cvbayes's LDA learners against scikit-learn, gensim, tomotopy and lda (issue 19).

Every system fits the same training documents with the same priors in a fresh process and is scored by
the same code: held-out document-completion perplexity against wall time, seconds a pass, tokens a
second, peak memory and NPMI (see `cvbayes.experiments.lda`, which ``cvbayes experiment lda`` runs too).

    pip install -e ".[bench]"                  # scikit-learn, gensim, tomotopy, lda
    cvbayes data fetch news && cvbayes data fetch brown
    python benchmarks/bench_lda.py             # news and Brown at K = 50 (about 20 minutes on 2 cores)
    python benchmarks/bench_lda.py --full      # K = 20, 50, 100 with twice the passes
    python benchmarks/bench_lda.py --corpora brown --topics 20 --systems cvb0 scvb0 cgs tomotopy --scale 0.2

Writes results.json, table.md and perplexity_<corpus>_K<k>.png under --out (docs/results/lda).
"""
import argparse
import sys

from cvbayes.experiments import lda


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", nargs="+", choices=lda.CORPORA, default=list(lda.CORPORA))
    parser.add_argument("--topics", type=int, nargs="+", default=None,
                        help=f"K values (default {' '.join(map(str, lda.DEFAULT_TOPICS))}; "
                             f"--full: {' '.join(map(str, lda.FULL_TOPICS))})")
    parser.add_argument("--systems", nargs="+", choices=lda.SYSTEMS, default=list(lda.SYSTEMS))
    parser.add_argument("--scale", type=float, default=None,
                        help="multiply every system's default passes (default 1; --full: 2)")
    parser.add_argument("--full", action="store_true", help="the full grid: K = 20, 50, 100, twice the passes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="docs/results/lda")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    topics = args.topics or (lda.FULL_TOPICS if args.full else lda.DEFAULT_TOPICS)
    scale = args.scale or (2.0 if args.full else 1.0)
    results = lda.run(out=args.out, corpora=args.corpora, topics=tuple(topics), systems=args.systems, scale=scale,
                      seed=args.seed, quiet=args.quiet)
    print(lda.table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

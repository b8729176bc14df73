"""Benchmark: HDP-HMM CVI against the finite HMM's CVI-2 per pass, at equal K.

The issue's target: HDP-HMM CVI (heuristic q(C > 0), eq. 5.67) costs no more
than 1.5x finite CVI-2 per iteration at the same K.  Both run on the same
Zipfian corpus as bench_hmm.py (sentences of 5 to 40 tokens), in the same
process, alternating so that machine noise hits both; the report gives the
median seconds per pass of each and their ratio.  The peer here is our own
finite CVI-2, the algorithm the HDP-HMM extends (peers have no collapsed VI
for HDP-HMMs; the beam sampler's cost per iteration is in docs/results/fig5_7).

Run ``python benchmarks/bench_hdp.py --help`` for the options.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hmm import RESULTS_DIR, machine_info, write_json, zipf_corpus  # noqa: E402

from cvbayes import HDPHMM, HMM, Corpus  # noqa: E402


def seconds_per_pass(model, corpus, n_iter, seed):
    model.set_params(algorithm="cvi" if isinstance(model, HDPHMM) else "cvi2", n_iter=n_iter, random_state=seed)
    model.fit(corpus)
    return [record.seconds for record in model.history_]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1_000_000, help="corpus size in tokens")
    parser.add_argument("--states", type=int, default=45, help="K, the truncation level of the HDP-HMM")
    parser.add_argument("--vocab", type=int, default=50_000, help="vocabulary size W")
    parser.add_argument("--iters", type=int, default=5, help="passes per fit; the median is reported")
    parser.add_argument("--rounds", type=int, default=3, help="alternating fits of each model")
    parser.add_argument("--occupancy", default="heuristic", help="the HDP-HMM's q(C = 0) method")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "hdp.json")
    args = parser.parse_args(argv)

    corpus = Corpus(*zipf_corpus(args.tokens, args.vocab, seed=0))
    # compile both paths first
    small = corpus[: min(50, corpus.n_sequences)]
    HMM(args.states, algorithm="cvi2", n_iter=1).fit(small)
    HDPHMM(args.states, occupancy=args.occupancy, algorithm="cvi", n_iter=1).fit(small)
    times = {"cvi2": [], "hdp_cvi": []}
    started = time.perf_counter()
    for round_ in range(args.rounds):
        times["cvi2"] += seconds_per_pass(HMM(args.states, alpha=0.1, beta=0.1), corpus, args.iters, round_)
        times["hdp_cvi"] += seconds_per_pass(HDPHMM(args.states, gamma=10, sigma=5, beta=0.1 * args.vocab,
                                                    occupancy=args.occupancy), corpus, args.iters, round_)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["hdp_cvi"] / medians["cvi2"]
    report = {"machine": machine_info(), "tokens": corpus.n_tokens, "sentences": corpus.n_sequences,
              "states": args.states, "vocab": args.vocab, "occupancy": args.occupancy,
              "seconds_per_pass": times, "median": medians, "ratio_hdp_over_cvi2": ratio,
              "target": "ratio <= 1.5", "met": ratio <= 1.5, "wall_seconds": time.perf_counter() - started}
    write_json(report, args.json)
    print(f"{corpus.n_tokens:,} tokens, K = {args.states}: finite CVI-2 {medians['cvi2']:.3f} s/pass, "
          f"HDP-HMM CVI ({args.occupancy}) {medians['hdp_cvi']:.3f} s/pass, ratio {ratio:.2f} "
          f"(target <= 1.5: {'met' if ratio <= 1.5 else 'NOT met'})")


if __name__ == "__main__":
    main()

"""Seconds a pass of every HMM learner with full-covariance Gaussian emissions against the diagonal ones on
the same data (and Poisson emissions on counts of the same size):

    NUMBA_NUM_THREADS=1 python docs/examples/family_pass_times.py --dims 2 13 --out docs/results/family_pass_times

Data: 200 sequences of 50 tokens (10,000) from a 10-state HMM, D-dimensional Gaussians (counts: Poisson
rates 1..10).  Each learner runs 6 passes after a warm-up fit (numba's compilation); the figure is the
median of passes 2-6 (``history_[i].seconds``).  Writes results.json and table.md into --out.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

import cvbayes
from cvbayes.data import Corpus
from cvbayes.files import write_json, write_text
from cvbayes.models.hmm import ALGORITHMS
from cvbayes.synthetic import sample_states

N_STATES, N_SEQUENCES, LENGTH, N_PASSES = 10, 200, 50, 6
OPTIONS = {"svi": {"batch_size": 20}, "scvi": {"batch_size": 20}, "cvi3": {"subchain_length": 10}}


def corpora(n_dims, seed=0):
    rng = np.random.default_rng(seed)
    transmat = rng.dirichlet(np.full(N_STATES, 0.3), size=N_STATES)
    states, offsets = sample_states(np.full(N_STATES, 1 / N_STATES), transmat, np.full(N_SEQUENCES, LENGTH), rng)
    means = rng.normal(0.0, 3.0, size=(N_STATES, n_dims))
    vectors = Corpus(means[states] + rng.standard_normal((states.shape[0], n_dims)), offsets, gold=states)
    rates = rng.uniform(1.0, 10.0, size=(N_STATES, n_dims))
    counts = Corpus(rng.poisson(rates[states]).astype(float), offsets, gold=states)
    return {"gaussian": vectors, "gaussian-full": vectors, "poisson": counts}


def pass_seconds(emission, algorithm, corpus):
    make = lambda n_iter: cvbayes.HMM(N_STATES, alpha=0.5, emission=emission, algorithm=algorithm, n_iter=n_iter,
                                      random_state=0, **OPTIONS.get(algorithm, {}))
    make(1).fit(corpus)
    history = make(N_PASSES).fit(corpus).history_
    return float(np.median([record.seconds for record in history[1:]]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 13])
    parser.add_argument("--out", default="docs/results/family_pass_times")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    rows = []
    for n_dims in args.dims:
        data = corpora(n_dims)
        for algorithm in ALGORITHMS:
            times = {emission: pass_seconds(emission, algorithm, corpus) for emission, corpus in data.items()}
            rows.append({"dims": n_dims, "algorithm": algorithm, **times,
                         "full_over_diagonal": times["gaussian-full"] / times["gaussian"]})
            print(rows[-1], flush=True)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "results.json", {"command": " ".join(["python", "docs/examples/family_pass_times.py", *argv]),
                                         "states": N_STATES, "tokens": N_SEQUENCES * LENGTH, "rows": rows}, indent=1)
    lines = ["# Seconds a pass: full-covariance against diagonal Gaussian emissions (and Poisson)", "",
             f"`python docs/examples/family_pass_times.py {' '.join(argv)}`: K = {N_STATES}, "
             f"{N_SEQUENCES * LENGTH:,} tokens in {N_SEQUENCES} sequences, median of passes 2-{N_PASSES}.", "",
             "| D | learner | diagonal (s) | full (s) | full / diagonal | poisson (s) |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['dims']} | {r['algorithm']} | {r['gaussian']:.4f} | {r['gaussian-full']:.4f} | "
              f"{r['full_over_diagonal']:.2f} | {r['poisson']:.4f} |" for r in rows]
    write_text(folder / "table.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""``cvbayes demo``: every HMM learner on data drawn from a planted HMM."""
import json
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from ..families import Categorical
from ..metrics import many_to_one
from ..models.hmm import ALGORITHMS, HMM, OBJECTIVES, TAGGING_ALGORITHMS
from ..synthetic import random_hmm, sample_categorical_hmm
from .options import positive_int

DEMO_ITERATIONS = {"em": 200, "vb": 200, "cvi1": 200, "cvi2": 100, "cgs": 300}


def run_demo(args):
    """Fit every algorithm on data drawn from a planted HMM and compare them.

    Each algorithm gets ``--restarts`` seeded runs from HMM.fit's default
    start (random parameters, ``init="params"``); the run with the best held-out
    predictive log-likelihood (eq. 3.108) is kept, as one would in practice.
    """
    rng = np.random.default_rng(args.seed)
    params = random_hmm(args.states, args.symbols, rng)
    corpus = sample_categorical_hmm(*params, np.full(args.sequences, args.length), seed=args.seed + 1)
    n_train = int(0.9 * corpus.n_sequences)
    train, held_out = corpus[:n_train], corpus[n_train:]
    def model(alpha, beta, **learner):
        # W is the planted vocabulary, not just the symbols a small sample happens to show
        return HMM(args.states, alpha=alpha, emission=Categorical(beta=beta, n_symbols=args.symbols), **learner)

    oracle = model(1.0, 1.0, algorithm="em", n_iter=1,
                   init=dict(startprob=params[0], transmat=params[1], emissionprob=params[2])).fit(held_out)
    rows = []
    algorithms = args.algorithms.split(",")
    bar = tqdm(total=len(algorithms) * args.restarts, desc="fitting", disable=args.quiet or args.json)
    for algorithm in algorithms:
        if algorithm not in ALGORITHMS:
            raise SystemExit(f"cvbayes demo: unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
        best = None
        for restart in range(args.restarts):
            started = time.perf_counter()
            fitted = model(args.alpha, args.beta, algorithm=algorithm,
                           n_iter=args.iterations or DEMO_ITERATIONS[algorithm], random_state=args.seed + restart).fit(train)
            seconds = time.perf_counter() - started
            held = fitted.score_per_token(held_out)
            if best is None or held > best["heldout_loglik_per_token"]:
                best = {"algorithm": algorithm, "seed": args.seed + restart,
                        "iterations": len(fitted.history_), "seconds": seconds,
                        "seconds_per_iteration": float(np.median([h.seconds for h in fitted.history_])),
                        "many_to_one": many_to_one(fitted.decode(train), train.gold),
                        "heldout_loglik_per_token": held,
                        "objective": fitted.history_[-1].objective, "objective_is": OBJECTIVES[algorithm]}
            bar.update()
        rows.append(best)
    bar.close()
    report = {"data": {"states": args.states, "symbols": args.symbols, "sequences": args.sequences,
                       "length": args.length, "train_tokens": train.n_tokens,
                       "heldout_tokens": held_out.n_tokens, "seed": args.seed},
              "prior": {"alpha": args.alpha, "beta": args.beta}, "restarts": args.restarts,
              "true_parameters_heldout_loglik_per_token": oracle.history_[0].objective / held_out.n_tokens,
              "results": rows}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    print(f"Planted HMM: K = {args.states}, W = {args.symbols}, {args.sequences} sequences of "
          f"{args.length} tokens ({train.n_tokens} train, {held_out.n_tokens} held out), seed {args.seed}; "
          f"alpha = {args.alpha}, beta = {args.beta}; best of {args.restarts} restarts by held-out likelihood\n")
    print(f"{'algorithm':<10}{'iters':>6}{'s/iter':>9}{'total s':>9}{'many-to-1':>11}{'held-out ll/token':>19}")
    for row in rows:
        print(f"{row['algorithm']:<10}{row['iterations']:>6}{row['seconds_per_iteration']:>9.4f}"
              f"{row['seconds']:>9.2f}{row['many_to_one']:>11.3f}{row['heldout_loglik_per_token']:>19.4f}")
    print(f"{'truth':<10}{'':>6}{'':>9}{'':>9}{'':>11}"
          f"{report['true_parameters_heldout_loglik_per_token']:>19.4f}")
    print("\nmany-to-1: training tokens, each state mapped to its most frequent true state;"
          "\nheld-out ll/token: eq. 3.108 with posterior-mean parameters (MAP for EM).")



def register(commands):
    demo = commands.add_parser(
        "demo", help="compare EM, VB, CVI-1, CVI-2 and CGS on a planted HMM",
        description="Draw sequences from a random planted HMM, fit every algorithm, and print "
                    "many-to-one accuracy against the true states and held-out predictive "
                    "log-likelihood per token (thesis eq. 3.108), next to the true parameters' figure.")
    demo.add_argument("--states", type=positive_int, default=5, help="number of hidden states K (default 5)")
    demo.add_argument("--symbols", type=int, default=50, help="vocabulary size W (default 50)")
    demo.add_argument("--sequences", type=int, default=2000, help="number of sequences (default 2000)")
    demo.add_argument("--length", type=int, default=20, help="tokens per sequence (default 20)")
    demo.add_argument("--alpha", type=float, default=0.5, help="Dirichlet prior on transitions (default 0.5)")
    demo.add_argument("--beta", type=float, default=0.1, help="Dirichlet prior on emissions (default 0.1)")
    demo.add_argument("--algorithms", default=",".join(TAGGING_ALGORITHMS),
                      help="comma-separated algorithms to run (default: em,vb,cvi1,cvi2,cgs)")
    demo.add_argument("--iterations", type=int, default=0,
                      help="passes per run; 0 (default) uses 200 for em/vb/cvi1, 100 for cvi2, 300 for cgs")
    demo.add_argument("--restarts", type=int, default=3,
                      help="seeded runs per algorithm; the best held-out likelihood is kept (default 3)")
    demo.add_argument("--seed", type=int, default=0, help="seed for the data and the first run (default 0)")
    demo.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(handler=run_demo)

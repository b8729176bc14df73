"""The adaptor grammar learners' trajectories on a tiny corpus, recorded and compared (issue 28's baseline).

``python benchmarks/baseline_adaptor.py --record FILE`` fits every configuration below (vb, cvi and mcmc
on the unigram, colloc and colloc-syllable grammars, fixed and learned Pitman-Yor parameters, both
starts) for a few passes on the first 40 Brent utterances and writes each run's objective per pass and
its final rule weights.  ``--compare FILE`` refits them with the current code and prints the worst
relative difference of the objectives and of the weights against the recording: a refactoring that
leaves the maths alone must keep it at rounding (<= 1e-9).

Configurations name their options explicitly (no defaults), so a change of the model's defaults does not
show as a change of trajectory.  numba runs on one thread: VB's E-step sums its chunks in the order the
threads finish, and a rounding difference can reorder ties in the grammaton.
"""
import argparse
import json
import os
import sys
import warnings

os.environ["NUMBA_NUM_THREADS"] = "1"

import numpy as np

N_UTTERANCES = 40
CONFIGURATIONS = [
    # (grammar, algorithm, options, passes)
    (grammar, algorithm, options, passes)
    for grammar in ("unigram", "colloc", "colloc-syllable")
    for algorithm, passes in (("vb", 4), ("cvi", 3), ("mcmc", 6))
    for options in ({"a": 0.0, "b": 1.0, "estimate_hyperparameters": False, "init": "sample"},
                    {"a": 0.3, "b": 2.0, "estimate_hyperparameters": True, "init": "sample"},
                    {"a": 0.0, "b": 1.0, "estimate_hyperparameters": False, "init": "empty"})
    if not (algorithm == "mcmc" and options["init"] == "empty")
]


def utterances():
    from cvbayes.data import load_brent

    corpus = load_brent()
    return [list(symbols) for symbols in corpus.symbols[:N_UTTERANCES]]


def run(grammar, algorithm, options, passes, data):
    """(objectives per pass, final rule weights) of one fit (seed 1)."""
    from cvbayes.models.adaptor import AdaptorGrammar

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # the old fit(algorithm=...) call form
        model = AdaptorGrammar(grammar, alpha=1.0, truncation=200, **options)
        model.fit(data, algorithm=algorithm, n_iter=passes, seed=1)
    return [r.objective for r in model.history_], np.asarray(model.rule_weights_, dtype=float)


def key(grammar, algorithm, options):
    return f"{grammar}/{algorithm}/" + ",".join(f"{k}={v}" for k, v in sorted(options.items()))


def relative(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return np.inf
    scale = np.maximum(np.abs(a), np.abs(b))
    diff = np.abs(a - b)
    return float(np.max(np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), 0.0), initial=0.0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--record", metavar="FILE")
    action.add_argument("--compare", metavar="FILE")
    parser.add_argument("--only", default=None, help="run the configurations whose key contains this text")
    args = parser.parse_args(argv)
    data = utterances()
    chosen = [c for c in CONFIGURATIONS if args.only is None or args.only in key(*c[:3])]
    if args.record:
        out = {}
        for grammar, algorithm, options, passes in chosen:
            objectives, weights = run(grammar, algorithm, options, passes, data)
            out[key(grammar, algorithm, options)] = {"objectives": objectives, "weights": weights.tolist()}
            print(key(grammar, algorithm, options), objectives, flush=True)
        with open(args.record, "w") as handle:
            json.dump(out, handle)
        return 0
    with open(args.compare) as handle:
        recorded = json.load(handle)
    worst = 0.0
    for grammar, algorithm, options, passes in chosen:
        name = key(grammar, algorithm, options)
        objectives, weights = run(grammar, algorithm, options, passes, data)
        d_objective = relative(objectives, recorded[name]["objectives"])
        d_weights = relative(weights, recorded[name]["weights"])
        worst = max(worst, d_objective, d_weights)
        print(f"{name}: objectives {d_objective:.2e}, weights {d_weights:.2e}", flush=True)
    print(f"worst relative difference: {worst:.2e}")
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())

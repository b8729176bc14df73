"""Finding the number of states (thesis §5.5.1, Fig. 5.7): CVI for the HDP-HMM
against beam sampling, on fresh synthetic datasets.

* ``theta_pos`` / ``theta_neg``: 100 sequences of 100 from the diagonally
  dominant and the cycled 4-state HMMs of eq. 5.69 with the shared emissions of
  eq. 5.70 (its second row, printed with five entries of 1/3, is normalised),
  truncation K = 10 (Zhang et al. 2016);
* ``grammar``: 100 sequences of 100 from Beal et al.'s (2002) regular grammar,
  substrings of (abc)*, (acb)* or (a*b*)* with a, b equally likely, K = 12.

gamma = sigma = beta = 1 throughout, held fixed, as the thesis does.  CVI starts
from random local posteriors q(z_t | z_{t-1}) ∝ U[0, 1], beam sampling from
uniform random states in {1..K}.  Effective states: the fewest covering 99 % of
the tokens (footnote 4).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..data import Corpus
from ..models.beam import beam_sample
from ..models.hdp_hmm import HDPHMM
from ..synthetic import sample_categorical_hmm

THETA_POS = np.array([[.99, .01, 0, 0], [0, .99, .01, 0], [0, 0, .99, .01], [.01, 0, 0, .99]])
THETA_NEG = np.array([[.01, .99, 0, 0], [0, .01, .99, 0], [0, 0, .01, .99], [.99, 0, 0, .01]])
PHI = np.array([[1, 0, 0, 0, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0, 1, 1], [0, 0, 1, 1, 1, 0, 0, 0],
                [0, 0, 0, 0, 1, 1, 1, 0]], dtype=float)
PHI /= PHI.sum(axis=1, keepdims=True)

SCENARIOS = {  # name: (truncation K, true number of states)
    "theta_pos": (10, 4),
    "theta_neg": (10, 4),
    "grammar": (12, 7),
}

THESIS = {
    "theta_pos/neg": "CVI: exactly 4 states after about 300 iterations (~27 s); beam sampling: over 2,500 "
                     "iterations (~180 s) to stabilise close to 4",
    "grammar": "CVI: 6.6 states on average, converging much faster; beam sampling: a little more than 7 "
               "after about 3,000 samples",
}


def grammar_corpus(n_sequences, length, rng):
    """Beal et al.'s regular grammar: each sequence a substring of (abc)*, (acb)* or
    (a*b*)*, with a and b equally likely in the last; symbols a, b, c = 0, 1, 2."""
    sequences = []
    for kind in rng.integers(0, 3, size=n_sequences):
        if kind == 2:
            sequences.append(rng.integers(0, 2, size=length))
        else:
            cycle = np.array([0, 1, 2] if kind == 0 else [0, 2, 1])
            sequences.append(cycle[(rng.integers(0, 3) + np.arange(length)) % 3])
    tokens = np.concatenate(sequences).astype(np.int32)
    return Corpus(tokens, np.arange(n_sequences + 1, dtype=np.int64) * length)


def make_dataset(scenario, seed, n_sequences=100, length=100):
    if scenario == "grammar":
        return grammar_corpus(n_sequences, length, np.random.default_rng(seed))
    theta = THETA_POS if scenario == "theta_pos" else THETA_NEG
    return sample_categorical_hmm(np.full(4, 0.25), theta, PHI, [length] * n_sequences, seed=seed)


def run_cvi(corpus, n_states, n_iter, seed):
    """Effective states and cumulative seconds after every CVI pass."""
    model = HDPHMM(n_states, gamma=1.0, sigma=1.0, beta=1.0, learn_concentrations=False)
    model.fit(corpus, algorithm="cvi", n_iter=n_iter, seed=seed)
    return ([record["effective_states"] for record in model.hyper_history_],
            np.cumsum([record.seconds for record in model.history_]).tolist())


def run_beam(corpus, n_states, n_iter, seed):
    """Effective states and cumulative seconds after every beam-sampling iteration."""
    n_symbols = int(corpus.observations.max()) + 1
    result = beam_sample(corpus.observations, np.asarray(corpus.offsets, dtype=np.int64), n_symbols, n_iter,
                         gamma=1.0, sigma=1.0, beta=1.0, n_init_states=n_states, seed=seed)
    return ([row["n_effective"] for row in result.history],
            np.cumsum([row["seconds"] for row in result.history]).tolist())


def _first_stable(effective, target):
    """The first iteration from which the count stays at ``target`` to the end (None if never)."""
    effective = np.asarray(effective)
    off = np.flatnonzero(effective != target)
    if off.size == 0:
        return 0
    return int(off[-1] + 1) if off[-1] + 1 < effective.size else None


def run_fig_5_7(args):
    out = Path(args.out) / "fig5_7"
    out.mkdir(parents=True, exist_ok=True)
    # compile the kernels first so that no run's seconds include it
    warm = make_dataset("grammar", 0, 2, 5)
    run_cvi(warm, 3, 1, 0)
    run_beam(warm, 3, 1, 0)
    runs = []
    for scenario, (n_states, truth) in SCENARIOS.items():
        for dataset in range(args.seeds):
            corpus = make_dataset(scenario, 1000 + dataset, args.sequences, args.length)
            for algorithm, runner, n_iter in (("cvi", run_cvi, args.cvi_iterations),
                                              ("beam", run_beam, args.beam_iterations)):
                started = time.perf_counter()
                effective, seconds = runner(corpus, n_states, n_iter, dataset)
                stable = _first_stable(effective, truth)
                runs.append({"scenario": scenario, "dataset": dataset, "algorithm": algorithm,
                             "truncation": n_states, "truth": truth, "effective": effective, "seconds": seconds,
                             "final": effective[-1], "stable_from": stable,
                             "stable_seconds": None if stable is None else seconds[stable],
                             "wall": time.perf_counter() - started})
                print(f"{scenario} dataset {dataset} {algorithm}: {effective[-1]} states "
                      f"(stable at the truth from iteration {stable})", flush=True)
    summary = _summarise(runs, args.seeds)
    (out / "results.json").write_text(json.dumps({"settings": _settings(args), "summary": summary,
                                                  "thesis": THESIS, "runs": runs},
                                                 separators=(",", ":")))
    (out / "table.md").write_text(_table(summary, args))
    _plot(out / "fig5_7.png", runs)
    print(_table(summary, args))


def _settings(args):
    return {"datasets": args.seeds, "sequences": args.sequences, "length": args.length,
            "cvi_iterations": args.cvi_iterations, "beam_iterations": args.beam_iterations,
            "gamma": 1.0, "sigma": 1.0, "beta": 1.0}


def _summarise(runs, n_datasets):
    summary = []
    for scenario, (_, truth) in SCENARIOS.items():
        for algorithm in ("cvi", "beam"):
            rows = [r for r in runs if r["scenario"] == scenario and r["algorithm"] == algorithm]
            stable = [r for r in rows if r["stable_from"] is not None]
            summary.append({
                "scenario": scenario, "algorithm": algorithm, "truth": truth,
                "mean_final": float(np.mean([r["final"] for r in rows])),
                "exact_runs": sum(r["final"] == truth for r in rows), "runs": len(rows),
                "median_stable_iteration": float(np.median([r["stable_from"] for r in stable])) if stable else None,
                "median_stable_seconds": float(np.median([r["stable_seconds"] for r in stable])) if stable else None,
                "seconds_per_iteration": float(np.median([r["seconds"][-1] / len(r["seconds"]) for r in rows])),
            })
    return summary


def _table(summary, args):
    lines = ["# Fig. 5.7: finding the number of states (CVI for the HDP-HMM against beam sampling)", "",
             f"{args.seeds} fresh datasets a scenario, {args.sequences} sequences of {args.length}; "
             f"CVI {args.cvi_iterations} passes, beam sampling {args.beam_iterations} iterations; "
             "gamma = sigma = beta = 1 fixed. 'stable from': the first iteration after which the count stays "
             "at the true number (median over the runs that get there).", "",
             "| data | algorithm | true states | final effective states (mean) | runs ending at the truth "
             "| stable from (iteration) | stable from (s) | s / iteration |",
             "|---|---|---|---|---|---|---|---|"]
    for row in summary:
        def fmt(value, spec):
            return "never" if value is None else format(value, spec)
        lines.append(f"| {row['scenario']} | {row['algorithm']} | {row['truth']} | {row['mean_final']:.1f} "
                     f"| {row['exact_runs']} / {row['runs']} | {fmt(row['median_stable_iteration'], '.0f')} "
                     f"| {fmt(row['median_stable_seconds'], '.1f')} | {row['seconds_per_iteration'] * 1e3:.2f} ms |")
    lines += ["", "Thesis (Fig. 5.7):", ""] + [f"- {name}: {text}" for name, text in THESIS.items()]
    return "\n".join(lines) + "\n"


def _plot(path, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    panels = (("theta_pos", "theta_neg"), ("grammar",))
    colours = {"cvi": "tab:blue", "beam": "tab:orange"}
    for axis, scenarios in zip(axes, panels):
        for scenario in scenarios:
            for algorithm in ("cvi", "beam"):
                rows = [r for r in runs if r["scenario"] == scenario and r["algorithm"] == algorithm]
                mean = np.mean([r["effective"] for r in rows], axis=0)
                axis.plot(np.arange(1, mean.size + 1), mean, color=colours[algorithm],
                          linestyle="-" if scenario != "theta_neg" else "--", label=f"{algorithm} ({scenario})")
        axis.axhline(SCENARIOS[scenarios[0]][1], color="grey", linewidth=0.8)
        axis.set_xscale("log")
        axis.set_xlabel("iteration")
        axis.set_ylabel("effective states (mean over datasets)")
        axis.legend()
    axes[0].set_title("eq. 5.69-5.70 HMMs, K = 10")
    axes[1].set_title("Beal's grammar, K = 12")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


EXPERIMENTS = {"fig5.7": run_fig_5_7}

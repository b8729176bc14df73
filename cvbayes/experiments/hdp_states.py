"""Finding the number of states (thesis §5.5.1, Fig. 5.7): CVI for the HDP-HMM
against beam sampling, on fresh synthetic datasets.

* ``theta_pos`` / ``theta_neg``: 100 sequences of 100 from the diagonally
  dominant and the cycled 4-state HMMs of eq. 5.69 with the shared emissions of
  eq. 5.70 (its second row, printed with five entries of 1/3, is normalised),
  truncation K = 10 (Zhang et al. 2016);
* ``grammar``: 100 sequences of 100 from Beal et al.'s (2002) regular grammar,
  substrings of (abc)*, (acb)* or (a*b*)* with a, b equally likely, K = 12.

gamma = sigma = beta = 1 throughout, held fixed, as the thesis does.  CVI runs
twice on every dataset: "cvi" from the HDP-HMM's default start (init="perturbed":
nearly equal states whose emission rows differ by a small spread shared by all
of a word's tokens, issue 15), "cvi-local" from the thesis's start (footnote
5: random local posteriors q(z_t | z_{t-1}) ∝ U[0, 1]) and "cvi-merge" from the
default start with merge and delete moves (merge="auto", issue 33); beam sampling starts
from uniform random states in {1..K}.  Effective states: the fewest covering
99 % of the tokens (footnote 4), counted on the expected tokens after every
pass ("effective") and on the states decoding gives them ("decoded": the
pass's q(z_t) argmax; at the end, ``n_effective_states_``, the decoded
training data).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..data import Corpus
from ..files import save_figure, write_json, write_text
from ..models.beam import beam_sample
from ..models.hdp_hmm import HDPHMM
from ..synthetic import sample_categorical_hmm

THETA_POS = np.array([[.99, .01, 0, 0], [0, .99, .01, 0], [0, 0, .99, .01], [.01, 0, 0, .99]])
THETA_NEG = np.array([[.01, .99, 0, 0], [0, .01, .99, 0], [0, 0, .01, .99], [.99, 0, 0, .01]])
PHI = np.array([[1, 0, 0, 0, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0, 1, 1], [0, 0, 1, 1, 1, 0, 0, 0],
                [0, 0, 0, 0, 1, 1, 1, 0]], dtype=float)
PHI /= PHI.sum(axis=1, keepdims=True)

# the thesis's CVI reaches the truth "after about 300 iterations"; every run is also read there
MARK = 300

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


def run_cvi(corpus, n_states, n_iter, seed, init=None, merge=None):
    """After every CVI pass the effective states (expected tokens), the decoded ones and the
    cumulative seconds; and ``n_effective_states_`` at the end.  ``init`` None is the
    HDP-HMM's default start, "local" the thesis's; ``merge`` the HDP-HMM's merge moves."""
    model = HDPHMM(n_states, gamma=1.0, sigma=1.0, beta=1.0, learn_concentrations=False, merge=merge)
    model.set_params(algorithm="cvi", n_iter=n_iter, random_state=seed, init=init).fit(corpus)
    return ([record["effective_states"] for record in model.hyper_history_],
            [record["decoded_states"] for record in model.hyper_history_],
            np.cumsum([record.seconds for record in model.history_]).tolist(), model.n_effective_states_)


def run_cvi_local(corpus, n_states, n_iter, seed):
    """`run_cvi` from the thesis's start (footnote 5)."""
    return run_cvi(corpus, n_states, n_iter, seed, init="local")


def run_cvi_merge(corpus, n_states, n_iter, seed):
    """`run_cvi` with merge and delete moves (merge="auto")."""
    return run_cvi(corpus, n_states, n_iter, seed, merge="auto")


def run_beam(corpus, n_states, n_iter, seed):
    """Effective states after every beam-sampling iteration (its sample's states: counted and
    decoded alike), cumulative seconds, and the last count."""
    n_symbols = int(corpus.observations.max()) + 1
    result = beam_sample(corpus.observations, np.asarray(corpus.offsets, dtype=np.int64), n_symbols, n_iter,
                         gamma=1.0, sigma=1.0, beta=1.0, n_init_states=n_states, seed=seed)
    effective = [row["n_effective"] for row in result.history]
    return effective, effective, np.cumsum([row["seconds"] for row in result.history]).tolist(), effective[-1]


RUNNERS = {"cvi": run_cvi, "cvi-local": run_cvi_local, "cvi-merge": run_cvi_merge, "beam": run_beam}


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
    algorithms = getattr(args, "algorithms", None) or list(RUNNERS)
    # compile the kernels first so that no run's seconds include it
    warm = make_dataset("grammar", 0, 2, 5)
    for algorithm in algorithms:
        RUNNERS[algorithm](warm, 3, 1, 0)
    scenarios = getattr(args, "scenarios", None) or list(SCENARIOS)
    runs = _kept_runs(out / "results.json", _settings(args), algorithms)
    for scenario in scenarios:
        n_states, truth = SCENARIOS[scenario]
        for dataset in range(args.seed, args.seed + args.seeds):
            corpus = make_dataset(scenario, 1000 + dataset, args.sequences, args.length)
            for algorithm in algorithms:
                runner = RUNNERS[algorithm]
                n_iter = args.beam_iterations if algorithm == "beam" else args.cvi_iterations
                started = time.perf_counter()
                effective, decoded, seconds, last_decoded = runner(corpus, n_states, n_iter, dataset)
                mark = min(MARK, len(effective)) - 1
                run = {"scenario": scenario, "dataset": dataset, "algorithm": algorithm, "truncation": n_states,
                       "truth": truth, "effective": effective, "decoded": decoded, "seconds": seconds,
                       "final": effective[-1], "final_decoded": int(last_decoded), "at_mark": effective[mark],
                       "decoded_at_mark": decoded[mark], "wall": time.perf_counter() - started}
                for key, counts in (("stable", effective), ("decoded_stable", decoded)):
                    stable = _first_stable(counts, truth)
                    run[f"{key}_from"] = stable
                    run[f"{key}_seconds"] = None if stable is None else seconds[stable]
                runs.append(run)
                print(f"{scenario} dataset {dataset} {algorithm}: {effective[mark]} states after {mark + 1} "
                      f"iterations (decoded {decoded[mark]}), {effective[-1]} at the end (decoded "
                      f"{last_decoded}); at the truth from iteration {run['stable_from']} (decoded "
                      f"{run['decoded_stable_from']})", flush=True)
    order = {name: index for index, name in enumerate(RUNNERS)}
    runs.sort(key=lambda run: (scenarios.index(run["scenario"]), run["dataset"], order[run["algorithm"]]))
    summary = _summarise(runs, scenarios)
    write_json(out / "results.json", {"settings": _settings(args), "summary": summary, "thesis": THESIS, "runs": runs},
               separators=(",", ":"))
    write_text(out / "table.md", _table(summary, args) + _settle_table(runs, scenarios))
    _plot(out / "fig5_7.png", runs)
    print(_table(summary, args) + _settle_table(runs, scenarios))


def _kept_runs(path, settings, algorithms):
    """With ``--algorithms`` a subset: the other algorithms' runs of an earlier results.json whose settings
    are these (datasets, passes, scenarios), so that one algorithm can be re-run beside the others."""
    if set(algorithms) == set(RUNNERS) or not path.exists():
        return []
    earlier = json.loads(path.read_text())
    if earlier.get("settings") != settings:
        return []
    return [run for run in earlier["runs"] if run["algorithm"] not in algorithms]


def _settings(args):
    return {"datasets": args.seeds, "seed": args.seed, "sequences": args.sequences, "length": args.length,
            "cvi_iterations": args.cvi_iterations, "beam_iterations": args.beam_iterations,
            "gamma": 1.0, "sigma": 1.0, "beta": 1.0, "mark": MARK,
            "scenarios": getattr(args, "scenarios", None) or list(SCENARIOS)}


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _summarise(runs, scenarios):
    summary = []
    for scenario in scenarios:
        truth = SCENARIOS[scenario][1]
        for algorithm in RUNNERS:
            rows = [r for r in runs if r["scenario"] == scenario and r["algorithm"] == algorithm]
            if not rows:   # an algorithm left out (--algorithms)
                continue
            summary.append({
                "scenario": scenario, "algorithm": algorithm, "truth": truth, "runs": len(rows),
                "mean_final": float(np.mean([r["final"] for r in rows])),
                "exact_runs": sum(r["final"] == truth for r in rows),
                "exact_runs_decoded": sum(r["final_decoded"] == truth for r in rows),
                "exact_at_mark": sum(r["at_mark"] == truth for r in rows),
                "exact_at_mark_decoded": sum(r["decoded_at_mark"] == truth for r in rows),
                "median_stable_iteration": _median([r["stable_from"] for r in rows]),
                "median_stable_iteration_decoded": _median([r["decoded_stable_from"] for r in rows]),
                "median_stable_seconds": _median([r["stable_seconds"] for r in rows]),
                "seconds_per_iteration": float(np.median([r["seconds"][-1] / len(r["seconds"]) for r in rows])),
            })
    return summary


def _table(summary, args):
    lines = ["# Fig. 5.7: finding the number of states (CVI for the HDP-HMM against beam sampling)", "",
             f"{args.seeds} fresh datasets a scenario (seeds {1000 + args.seed}..{1000 + args.seed + args.seeds - 1}), "
             f"{args.sequences} sequences of {args.length}; "
             f"CVI {args.cvi_iterations} passes, beam sampling {args.beam_iterations} iterations; "
             "gamma = sigma = beta = 1 fixed. cvi: the HDP-HMM's default start (init='perturbed'); cvi-local: "
             "the thesis's start (footnote 5); cvi-merge: the default start with merge and delete moves "
             "(merge='auto'). Every cell 'a / b': a counts states on the expected tokens "
             "(footnote 4, as before issue 15), b on the decoded states (`n_effective_states_`; after every "
             "CVI pass the argmax of its q(z_t); beam sampling's sample is both). 'stable from': the first "
             "iteration after which the count stays at the true number (median over the runs that get there).",
             "",
             f"| data | algorithm | true states | at the truth after {MARK} | stable from (iteration) "
             "| runs ending at the truth | final effective states (mean) | stable from (s) | s / iteration |",
             "|---|---|---|---|---|---|---|---|---|"]

    def fmt(value, spec):
        return "never" if value is None else format(value, spec)

    for row in summary:
        lines.append(f"| {row['scenario']} | {row['algorithm']} | {row['truth']} "
                     f"| {row['exact_at_mark']} / {row['exact_at_mark_decoded']} of {row['runs']} "
                     f"| {fmt(row['median_stable_iteration'], '.0f')} / "
                     f"{fmt(row['median_stable_iteration_decoded'], '.0f')} "
                     f"| {row['exact_runs']} / {row['exact_runs_decoded']} of {row['runs']} | {row['mean_final']:.1f} "
                     f"| {fmt(row['median_stable_seconds'], '.1f')} | {row['seconds_per_iteration'] * 1e3:.2f} ms |")
    lines += ["", "Thesis (Fig. 5.7):", ""] + [f"- {name}: {text}" for name, text in THESIS.items()]
    return "\n".join(lines) + "\n"


def _settle_table(runs, scenarios):
    """Run by run: the pass from which each algorithm's count (on the expected tokens) stays at the truth."""
    lines = []
    algorithms = [name for name in RUNNERS if any(run["algorithm"] == name for run in runs)]
    for scenario in scenarios:
        rows = {(run["dataset"], run["algorithm"]): run for run in runs if run["scenario"] == scenario}
        datasets = sorted({dataset for dataset, _ in rows})
        lines += ["", f"**{scenario}**, run by run: the pass from which the effective states (expected tokens) "
                      f"stay at {SCENARIOS[scenario][1]} to the end ('never': not at the end); "
                      f"**bold** when later than {MARK}", "",
                  "| dataset | " + " | ".join(algorithms) + " |", "|---" * (len(algorithms) + 1) + "|"]
        for dataset in datasets:
            cells = []
            for algorithm in algorithms:
                run = rows.get((dataset, algorithm))
                settle = None if run is None or run["stable_from"] is None else run["stable_from"] + 1
                cells.append("-" if run is None else "never" if settle is None
                             else f"**{settle}**" if settle > MARK else str(settle))
            lines.append(f"| {1000 + dataset} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _plot(path, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    panels = (("theta_pos", "theta_neg"), ("grammar",))
    colours = {"cvi": "tab:blue", "cvi-local": "tab:green", "cvi-merge": "tab:red", "beam": "tab:orange"}
    for axis, scenarios in zip(axes, panels):
        for scenario in scenarios:
            for algorithm in RUNNERS:
                rows = [r for r in runs if r["scenario"] == scenario and r["algorithm"] == algorithm]
                if not rows:  # a scenario left out (--scenarios)
                    continue
                mean = np.mean([r["effective"] for r in rows], axis=0)
                axis.plot(np.arange(1, mean.size + 1), mean, color=colours[algorithm],
                          linestyle="-" if scenario != "theta_neg" else "--", label=f"{algorithm} ({scenario})")
        axis.axhline(SCENARIOS[scenarios[0]][1], color="grey", linewidth=0.8)
        axis.set_xscale("log")
        axis.set_xlabel("iteration")
        axis.set_ylabel("effective states (mean over datasets)")
        if axis.lines[1:]:
            axis.legend()
    axes[0].set_title("eq. 5.69-5.70 HMMs, K = 10")
    axes[1].set_title("Beal's grammar, K = 12")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


EXPERIMENTS = {"fig5.7": run_fig_5_7}

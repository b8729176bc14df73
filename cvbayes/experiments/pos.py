"""The thesis's part-of-speech experiments (§3.8.1-3.8.2, Fig. 3.10-3.13), re-run on Brown.

The thesis used the WSJ treebank (49,208 sentences, 45 tags); we have the
Brown corpus (57,340 sentences; 104 base tags, or the 12 universal tags).
Every experiment writes ``results.json``, ``table.md`` (ours beside the
thesis's WSJ figures) and PNG plots into its own folder, and records the exact
command that produced them.

Hyperparameters come from the thesis's grid (alpha, beta in {0.003, 0.01,
0.03, 0.1, 0.3, 1.0}), chosen on a development set: 1,007 sentences spread
over the genres (every 47th sentence from sentence 10,000 on), disjoint from
the 1K-10K training sets.  ``grid-semi`` and ``grid-unsup`` run that search
and the other experiments read their choice.
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data import ambiguity, load_brown
from ..files import write_json, write_text
from ..models.hmm import ALGORITHMS
from ..tagging import compact, fit_tagger, random_baseline, tag_dictionary
from . import plots
from .results import seed_range

GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
# the thesis's protocol (footnote 5): every run starts from random local posteriors (CGS: random states),
# not from HMM.fit's default of random parameters
THESIS_START = "local"
DETERMINISTIC = ("em", "vb", "cvi1", "cvi2")
SIZES = (1000, 2000, 3000, 5000, 10000, None)  # None: the whole corpus
D_VALUES = (1, 2, 3, 5, 10)
UNSUPERVISED_METRICS = ("one_to_one", "many_to_one_cv", "variation_of_information", "v_measure")
METRIC_LABELS = {"one_to_one": "1-1", "many_to_one_cv": "M-1", "variation_of_information": "V-I",
                 "v_measure": "V-M", "accuracy": "accuracy"}
FALLBACK = {"alpha": 0.1, "beta": 0.1}

# Thesis numbers on WSJ (mean, std over 10 runs), for the tables.
THESIS_FIG_3_10 = {  # size -> (random, {algorithm: (mean, std)})
    "1K": (65.1, {"em": (81.0, 1.2), "vb": (79.2, 1.3), "cvi1": (82.9, 0.2), "cvi2": (84.2, 0.2), "cgs": (85.3, 0.5)}),
    "2K": (65.2, {"em": (81.1, 0.9), "vb": (80.5, 1.1), "cvi1": (83.1, 0.3), "cvi2": (85.5, 0.3), "cgs": (85.0, 0.3)}),
    "3K": (65.1, {"em": (81.1, 0.8), "vb": (80.5, 1.0), "cvi1": (83.1, 0.2), "cvi2": (85.8, 0.3), "cgs": (85.0, 0.2)}),
    "5K": (64.9, {"em": (81.0, 1.5), "vb": (80.4, 1.5), "cvi1": (83.0, 0.2), "cvi2": (85.6, 0.1), "cgs": (85.2, 0.2)}),
    "10K": (64.7, {"em": (81.4, 1.7), "vb": (80.7, 1.2), "cvi1": (83.4, 0.2), "cvi2": (85.6, 0.1), "cgs": (85.0, 0.2)}),
    "All": (64.8, {"em": (81.4, 0.9), "vb": (81.4, 1.1), "cvi1": (83.7, 0.1), "cvi2": (85.7, 0.1), "cgs": (84.6, 0.1)}),
}
THESIS_FIG_3_12 = {  # d -> (tags/token, % ambiguous, {algorithm: (mean, std)})
    1: (2.3, 54, {"em": (81.0, 1.2), "vb": (79.2, 1.3), "cvi1": (82.9, 0.2), "cvi2": (84.2, 0.2), "cgs": (85.3, 0.5)}),
    2: (7.8, 63, {"em": (69.6, 1.5), "vb": (69.6, 1.6), "cvi1": (73.8, 0.4), "cvi2": (77.9, 0.4), "cgs": (79.0, 0.4)}),
    3: (10.8, 66, {"em": (64.7, 1.7), "vb": (61.1, 1.6), "cvi1": (65.1, 0.4), "cvi2": (74.1, 0.3), "cgs": (72.5, 0.7)}),
    5: (14.9, 71, {"em": (54.7, 2.9), "vb": (54.3, 2.0), "cvi1": (64.7, 0.4), "cvi2": (65.0, 0.5), "cgs": (64.2, 0.9)}),
    10: (20.8, 77, {"em": (43.5, 2.4), "vb": (43.6, 2.1), "cvi1": (51.2, 0.7), "cvi2": (53.3, 0.5), "cgs": (55.7, 0.6)}),
}
THESIS_FIG_3_13 = {  # size -> metric -> algorithm -> (mean, std); V-I in bits, others in %
    "1K": {
        "one_to_one": {"em": (26.3, 2.4), "vb": (24.9, 2.8), "cvi1": (30.4, 2.7), "cvi2": (32.5, 2.8), "cgs": (30.3, 2.0)},
        "many_to_one_cv": {"em": (38.9, 2.2), "vb": (33.6, 1.9), "cvi1": (48.1, 2.6), "cvi2": (50.5, 2.2), "cgs": (51.4, 1.5)},
        "variation_of_information": {"em": (6.55, .09), "vb": (6.86, .06), "cvi1": (5.46, .08), "cvi2": (5.32, .08), "cgs": (5.16, .06)},
        "v_measure": {"em": (31.0, 1.0), "vb": (27.9, 0.6), "cvi1": (42.8, 0.9), "cvi2": (44.4, 0.8), "cgs": (45.4, 0.5)},
    },
    "All": {
        "one_to_one": {"em": (37.6, 2.1), "vb": (42.0, 1.9), "cvi1": (39.5, 2.0), "cvi2": (46.2, 2.6), "cgs": (41.3, 1.9)},
        "many_to_one_cv": {"em": (59.7, 2.2), "vb": (56.4, 1.9), "cvi1": (59.2, 0.8), "cvi2": (63.5, 1.2), "cgs": (63.7, 0.7)},
        "variation_of_information": {"em": (4.65, .08), "vb": (4.82, .07), "cvi1": (4.31, .04), "cvi2": (4.10, .06), "cgs": (4.19, .07)},
        "v_measure": {"em": (51.4, 0.8), "vb": (49.5, 0.9), "cvi1": (53.3, 0.3), "cvi2": (56.7, 0.6), "cgs": (56.4, 0.6)},
        "minutes": {"em": (95, None), "vb": (98, None), "cvi1": (86, None), "cvi2": (101, None), "cgs": (565, None)},
    },
}
DATA_NOTE = ("Data: the Brown corpus (57,340 sentences, 1.16M tokens), not the thesis's WSJ treebank "
             "(49,208 sentences, 45 tags); thesis numbers are WSJ and are shown for reference only.")


def size_label(size):
    return "All" if size is None else f"{size / 1000:g}K"


def development_indices(n_sentences):
    """Every 47th sentence from 10,000 on: spread over the genres, disjoint from 1K-10K.
    (A corpus shorter than 20,000 sentences starts at its middle instead.)"""
    return np.arange(min(10_000, n_sentences // 2), n_sentences, 47)


class Experiment:
    """Shared set-up: the corpus, the output folder, the hyperparameters, the runs.

    ``settings`` holds the command-line options: seeds, iterations,
    cgs_iterations, out (folder), corpus (``brown`` or a Brown folder/file).
    """

    def __init__(self, name, settings, tagset="brown"):
        self.name = name
        self.settings = settings
        self.tagset = tagset
        self.out = Path(settings.out) / name.replace(".", "_").replace("-", "_")
        self.out.mkdir(parents=True, exist_ok=True)
        source = None if settings.corpus == "brown" else settings.corpus
        self.full = load_brown(tagset=tagset, path=source)
        self._chosen = {}
        self.command = "cvbayes " + " ".join(sys.argv[1:]) if sys.argv[0].endswith("cvbayes") else \
            "cvbayes experiment " + name

    def iterations(self, algorithm, deterministic_iterations):
        return self.settings.cgs_iterations if algorithm == "cgs" else deterministic_iterations

    def hyperparameters(self, setting, algorithm):
        """The grid search's choice for this algorithm, or the fallback when no grid ran."""
        if setting not in self._chosen:
            path = Path(self.settings.out) / f"grid_{setting}_{self.tagset}" / "results.json"
            self._chosen[setting] = json.loads(path.read_text())["chosen"] if path.exists() else {}
        return self._chosen[setting].get(algorithm, FALLBACK)

    def semi_supervised(self, n_sentences, d=1):
        """A training corpus of the first n sentences with the dictionary of §3.8.1:
        tags collected from all of Brown, frequency (for d > 1) from the corpus."""
        corpus = self.full if n_sentences is None else self.full[:n_sentences]
        kind = "complete" if d == 1 else "incomplete"
        dictionary = tag_dictionary(corpus, kind, d, reference=self.full)
        corpus, dictionary = compact(corpus, dictionary)
        return corpus, dictionary

    def unsupervised(self, n_sentences):
        corpus = self.full if n_sentences is None else self.full[:n_sentences]
        return compact(corpus)[0]

    def write(self, results, table, figures=()):
        results = {"experiment": self.name, "command": self.command, "data_note": DATA_NOTE,
                   "settings": {k: v for k, v in vars(self.settings).items() if k != "handler"},
                   **results}
        write_json(self.out / "results.json", results, indent=1)
        md = f"# {self.name}\n\nCommand: `{self.command}`\n\n{DATA_NOTE}\n\n{table}\n"
        if figures:
            md += "\n" + "\n".join(f"![{f}]({f})" for f in figures) + "\n"
        write_text(self.out / "table.md", md)
        return results


def summarise(runs, key):
    values = np.array([run[key] for run in runs], dtype=float)
    return float(values.mean()), float(values.std())


def _pct(mean_std, scale=100.0, digits=1):
    mean, std = mean_std
    if std is None:
        return f"{mean:.0f}"
    return f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


def _runs(experiment, jobs, desc):
    """Run (corpus, dictionary, algorithm, seed, n_iter, checkpoints, extra) jobs with one progress bar."""
    results = []
    for corpus, dictionary, algorithm, seed, n_iter, checkpoints, extra in tqdm(jobs, desc=desc, leave=False):
        hyper = experiment.hyperparameters("semi" if dictionary is not None else "unsup", algorithm)
        _, states, result = fit_tagger(corpus, algorithm, hyper["alpha"], hyper["beta"], n_iter, seed,
                                       dictionary=dictionary, n_states=len(experiment.full.tagset),
                                       checkpoints=checkpoints, init=THESIS_START)
        result.update(extra)
        result["tokens"] = corpus.n_tokens
        results.append((result, states))
    return results


def checkpoints_for(n_iter):
    """About a dozen iterations, denser at the start, always the last one."""
    points = np.unique(np.round(np.geomspace(1, n_iter, 12)).astype(int))
    return tuple(int(p) for p in points)


# --------------------------------------------------------------------- grid search
def run_grid(settings, setting):
    """Choose alpha, beta per algorithm on the development set (thesis §3.8.1).

    Semi-supervised: accuracy with the complete dictionary.  Unsupervised:
    cross-validated many-to-one, skipping settings that use fewer than five
    states (the thesis excludes such degenerate taggers).
    """
    tagset = settings.tagset if setting == "unsup" else "brown"
    experiment = Experiment(f"grid_{setting}_{tagset}", settings, tagset)
    supervised = setting == "semi"
    dev_corpus = experiment.full[development_indices(experiment.full.n_sequences)]
    if supervised:
        dictionary = tag_dictionary(dev_corpus, "complete", reference=experiment.full)
        corpus, dictionary = compact(dev_corpus, dictionary)
    else:
        corpus, dictionary = compact(dev_corpus)[0], None
    grid = [float(v) for v in settings.grid]
    algorithms = settings.algorithms
    n_iter = settings.iterations or (50 if supervised else 200)
    jobs = list(itertools.product(algorithms, grid, grid))
    scores = []
    key = "accuracy" if supervised else "many_to_one_cv"
    for algorithm, alpha, beta in tqdm(jobs, desc=f"grid {setting}"):
        _, states, result = fit_tagger(corpus, algorithm, alpha, beta, experiment.iterations(algorithm, n_iter),
                                       settings.seed, dictionary=dictionary,
                                       n_states=len(experiment.full.tagset), init=THESIS_START)
        result["states_used"] = int(np.unique(states).size)
        scores.append(result)
    chosen = {}
    for algorithm in algorithms:
        eligible = [r for r in scores if r["algorithm"] == algorithm and (supervised or r["states_used"] >= 5)]
        best = max(eligible, key=lambda r: r[key])
        chosen[algorithm] = {"alpha": best["alpha"], "beta": best["beta"], key: best[key]}
    header = f"| algorithm ({tagset} tags) | alpha | beta | dev " + METRIC_LABELS[key] + " |\n|---|---|---|---|\n"
    rows = "".join(f"| {name} | {c['alpha']} | {c['beta']} | {c[key] * 100:.1f} |\n" for name, c in chosen.items())
    table = (f"Development set: {corpus.n_sequences} sentences, {corpus.n_tokens} tokens; "
             f"grid {grid} x {grid}; {n_iter} iterations (CGS {settings.cgs_iterations}); seed {settings.seed}.\n\n"
             + header + rows)
    return experiment.write({"setting": setting, "tagset": tagset, "scores": scores, "chosen": chosen},
                            table)


# ------------------------------------------------------------------ Fig. 3.10/3.11
def run_fig_3_10(settings):
    """Semi-supervised accuracy against corpus size, complete dictionary (Fig. 3.10),
    with accuracy-against-iteration curves for Fig. 3.11."""
    experiment = Experiment("fig3.10", settings)
    sizes = [None if s == "all" else int(s) for s in settings.sizes]
    rows = []
    confusion = None
    for size in sizes:
        corpus, dictionary = experiment.semi_supervised(size)
        seeds = settings.seeds_all if size is None and settings.seeds_all else settings.seeds
        jobs = [(corpus, dictionary, algorithm, seed, experiment.iterations(algorithm, settings.iterations),
                 checkpoints_for(experiment.iterations(algorithm, settings.iterations)), {"size": size_label(size)})
                for algorithm in settings.algorithms for seed in seed_range(settings, seeds)]
        done = _runs(experiment, jobs, f"Fig 3.10 {size_label(size)}")
        rows.append({"size": size_label(size), "sentences": corpus.n_sequences, "tokens": corpus.n_tokens,
                     "random": random_baseline(corpus, dictionary), **ambiguity(corpus, dictionary),
                     "runs": [r for r, _ in done]})
        best = [(r, s) for r, s in done if r["algorithm"] == "cvi2"] or done
        confusion = (corpus, best[0][1], size_label(size))
    header = ("| size | tokens | tags/token | % ambig. | random | " + " | ".join(settings.algorithms)
              + " |\n|---|---|---|---|---|" + "---|" * len(settings.algorithms) + "\n")
    body = ""
    for row in rows:
        thesis_random, thesis = THESIS_FIG_3_10.get(row["size"], (None, {}))
        ours = [_pct(summarise([r for r in row["runs"] if r["algorithm"] == a], "accuracy"))
                for a in settings.algorithms]
        body += (f"| {row['size']} (Brown) | {row['tokens']} | {row['tags_per_token']:.2f} | "
                 f"{row['ambiguous_token_fraction'] * 100:.0f} | {row['random'] * 100:.1f} | " + " | ".join(ours) + " |\n")
        if thesis:
            body += (f"| {row['size']} (thesis, WSJ) | | ≈2.3 | ≈55 | {thesis_random} | "
                     + " | ".join(_pct(thesis[a], 1) for a in settings.algorithms) + " |\n")
    table = _settings_text(experiment, settings) + "\nAccuracy (%), mean ± std over seeds.\n\n" + header + body
    figures = [plots.accuracy_by_size(experiment.out / "accuracy_by_size.png", rows, settings.algorithms),
               plots.confusion(experiment.out / "confusion_cvi2.png", *confusion)]
    largest = rows[-1]
    figures += plots.curves(experiment.out, largest["runs"], settings.algorithms, "accuracy",
                            f"Brown {largest['size']}, complete dictionary")
    return experiment.write({"rows": rows}, table, [Path(f).name for f in figures])


def run_fig_3_11(settings):
    """Fig. 3.11 from the runs of Fig. 3.10 on the largest size: accuracy
    against iterations and against training time, and the time per iteration."""
    source = Path(settings.out) / "fig3_10" / "results.json"
    if not source.exists():
        raise SystemExit(f"cvbayes experiment fig3.11: run fig3.10 first ({source} is missing)")
    fig_3_10 = json.loads(source.read_text())
    experiment = Experiment("fig3.11", settings)
    largest = fig_3_10["rows"][-1]
    algorithms = fig_3_10["settings"]["algorithms"]
    body = "| algorithm | iterations | s/iteration | total s | final accuracy |\n|---|---|---|---|---|\n"
    cvi2_seconds = None
    per_algorithm = {}
    for algorithm in algorithms:
        runs = [r for r in largest["runs"] if r["algorithm"] == algorithm]
        seconds = float(np.median([r["train_seconds"] for r in runs]))
        per_algorithm[algorithm] = seconds
        if algorithm == "cvi2":
            cvi2_seconds = seconds
        body += (f"| {algorithm} | {runs[0]['iterations']} | {seconds / runs[0]['iterations']:.3f} | "
                 f"{seconds:.1f} | {_pct(summarise(runs, 'accuracy'))} |\n")
    if cvi2_seconds and "cgs" in per_algorithm:
        body += (f"\nCGS takes {per_algorithm['cgs'] / cvi2_seconds:.1f}x the training time of CVI-2 "
                 f"in this run.\n")
    figures = plots.curves(experiment.out, largest["runs"], algorithms, "accuracy",
                           f"Brown {largest['size']} ({largest['tokens']} tokens), complete dictionary")
    table = (f"From `{fig_3_10['command']}` ({largest['size']}, {largest['tokens']} tokens); "
             "times are training only, median over seeds, on this machine.\n\n" + body)
    return experiment.write({"source": str(source), "seconds": per_algorithm}, table,
                            [Path(f).name for f in figures])


# ----------------------------------------------------------------------- Fig. 3.12
def run_fig_3_12(settings):
    """Semi-supervised accuracy on 1K sentences with incomplete dictionaries (Fig. 3.12)."""
    experiment = Experiment("fig3.12", settings)
    rows = []
    for d in settings.d_values:
        corpus, dictionary = experiment.semi_supervised(settings.size, d)
        jobs = [(corpus, dictionary, algorithm, seed, experiment.iterations(algorithm, settings.iterations),
                 (), {"d": d}) for algorithm in settings.algorithms for seed in seed_range(settings)]
        done = _runs(experiment, jobs, f"Fig 3.12 d={d}")
        rows.append({"d": d, **ambiguity(corpus, dictionary), "random": random_baseline(corpus, dictionary),
                     "runs": [r for r, _ in done]})
    header = ("| d | tags/token | % ambig. | " + " | ".join(settings.algorithms) + " |\n|---|---|---|"
              + "---|" * len(settings.algorithms) + "\n")
    body = ""
    for row in rows:
        ours = [_pct(summarise([r for r in row["runs"] if r["algorithm"] == a], "accuracy"))
                for a in settings.algorithms]
        body += (f"| {row['d']} (Brown) | {row['tags_per_token']:.1f} | {row['ambiguous_token_fraction'] * 100:.0f} | "
                 + " | ".join(ours) + " |\n")
        if row["d"] in THESIS_FIG_3_12:
            tags, ambig, thesis = THESIS_FIG_3_12[row["d"]]
            body += f"| {row['d']} (thesis, WSJ) | {tags} | {ambig} | " + " | ".join(
                _pct(thesis[a], 1) for a in settings.algorithms) + " |\n"
    table = (_settings_text(experiment, settings) + f"\n{settings.size} sentences; accuracy (%), mean ± std "
             "over seeds. Brown has 104 tags against WSJ's 45, so a fully open word has 104 tags here.\n\n"
             + header + body)
    figure = plots.accuracy_by_d(experiment.out / "accuracy_by_d.png", rows, settings.algorithms)
    return experiment.write({"rows": rows}, table, [Path(figure).name])


# ----------------------------------------------------------------------- Fig. 3.13
def run_fig_3_13(settings):
    """Unsupervised induction, K = number of gold tags, four metrics and time (Fig. 3.13)."""
    experiment = Experiment(f"fig3.13-{settings.tagset}", settings, settings.tagset)
    sizes = [None if s == "all" else int(s) for s in settings.sizes]
    rows = []
    figures = []
    for size in sizes:
        corpus = experiment.unsupervised(size)
        seeds = settings.seeds_all if size is None and settings.seeds_all else settings.seeds
        jobs = [(corpus, None, algorithm, seed, experiment.iterations(algorithm, settings.iterations),
                 checkpoints_for(experiment.iterations(algorithm, settings.iterations)), {"size": size_label(size)})
                for algorithm in settings.algorithms for seed in seed_range(settings, seeds)]
        done = _runs(experiment, jobs, f"Fig 3.13 {size_label(size)}")
        rows.append({"size": size_label(size), "tokens": corpus.n_tokens, "runs": [r for r, _ in done]})
        cvi2 = [(r, s) for r, s in done if r["algorithm"] == "cvi2"] or done
        label = f"{size_label(size)}_{settings.tagset}"
        figures.append(plots.confusion(experiment.out / f"confusion_cvi2_{label}.png", corpus, cvi2[0][1],
                                       f"{size_label(size)}, {settings.tagset} tags", unsupervised=True))
        figures += plots.curves(experiment.out, rows[-1]["runs"], settings.algorithms, "many_to_one_cv",
                                f"Brown {size_label(size)}, {settings.tagset} tags, unsupervised", suffix=label)
    header = "| size | metric | " + " | ".join(settings.algorithms) + " |\n|---|---|" + "---|" * len(settings.algorithms) + "\n"
    body = ""
    for row in rows:
        thesis = THESIS_FIG_3_13.get(row["size"], {})
        for metric in (*UNSUPERVISED_METRICS, "minutes"):
            ours = []
            for algorithm in settings.algorithms:
                runs = [r for r in row["runs"] if r["algorithm"] == algorithm]
                if metric == "minutes":
                    ours.append(f"{np.median([r['train_seconds'] for r in runs]) / 60:.2f}")
                elif metric == "variation_of_information":
                    ours.append(_pct(summarise(runs, metric), 1.0, 2))
                else:
                    ours.append(_pct(summarise(runs, metric)))
            label = METRIC_LABELS.get(metric, "time (min)")
            body += f"| {row['size']} (Brown) | {label} | " + " | ".join(ours) + " |\n"
            if metric in thesis:
                body += f"| {row['size']} (thesis, WSJ) | {label} | " + " | ".join(
                    _pct(thesis[metric][a], 1, 2 if metric == "variation_of_information" else 1)
                    for a in settings.algorithms) + " |\n"
    table = (_settings_text(experiment, settings)
             + f"\nUnsupervised, K = {len(experiment.full.tagset)} ({settings.tagset} tags); mean ± std over "
             "seeds; M-1 is cross-validated many-to-one, V-I in bits (lower is better); time is the median "
             "training time per run on this 2-core machine (the thesis's times are per run on WSJ).\n\n"
             + header + body)
    return experiment.write({"tagset": settings.tagset, "rows": rows}, table, [Path(f).name for f in figures])


def _settings_text(experiment, settings):
    hyper = {a: experiment.hyperparameters("unsup" if experiment.name.startswith("fig3.13") else "semi", a)
             for a in settings.algorithms}
    chosen = ", ".join(f"{a}: α={h['alpha']}, β={h['beta']}" for a, h in hyper.items())
    return (f"Seeds: {settings.seeds}" + (f" ({settings.seeds_all} on All)" if settings.seeds_all else "")
            + f"; {settings.iterations} iterations for em/vb/cvi1/cvi2; CGS {settings.cgs_iterations} sweeps, "
            f"annealed from temperature 2.0 to 0.08. Hyperparameters ({chosen}). Decoding: maximum posterior "
            "marginals under the posterior-mean parameters (MAP for EM).\n")


EXPERIMENTS = {
    "grid-semi": lambda s: run_grid(s, "semi"),
    "grid-unsup": lambda s: run_grid(s, "unsup"),
    "fig3.10": run_fig_3_10,
    "fig3.11": run_fig_3_11,
    "fig3.12": run_fig_3_12,
    "fig3.13": run_fig_3_13,
}
__all__ = ["EXPERIMENTS", "ALGORITHMS"]

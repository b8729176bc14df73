"""Each HMM learner's default alpha and beta, chosen on development data (issue 33 item 3).

``cvbayes experiment defaults`` fits the unsupervised part-of-speech HMM with K = 45 states on two
development corpora of different genres, at every point of a small alpha x beta grid and for every
learner, and scores the decoded states by cross-validated many-to-one (M-1) and one-to-one (1-1)
accuracy (thesis §3.8.2), with the number of states decoding uses:

- UD English EWT's dev split (web text: 2,001 sentences, 25,149 tokens; its PTB tags as gold);
- Brown's development sentences (every 47th from sentence 10,000 on, spread over the genres, as
  `pos.development_indices`: 1,008 sentences, 20,146 tokens; its 104 base tags as gold).

Rule: a grid point's rank (1 = best, ties shared) is taken on each corpus by each of M-1 and 1-1
(averaged over seeds); the default is the point of lowest mean rank over those four, ties going to
the higher mean M-1 and then to the point nearest the old default. Each run has `PASSES` passes,
HMM's default ``n_iter`` (what ``cvbayes fit`` runs), from HMM.fit's default start. The chosen values
are `cvbayes.models.hmm.DEFAULT_PRIORS`.

``--check`` fits every learner at the old default (alpha = beta = 0.1) and at `DEFAULT_PRIORS` on
text the grid never saw: EWT's test split, Brown's first 4,500 sentences (press reportage, 97,715
tokens, disjoint from the development sentences), and, beyond English, UD Hebrew-HTB's test split
(716 sentences, 17,428 tokens, its UPOS tags as gold).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.stats import rankdata
from tqdm.auto import tqdm

from ..data import load_brown, read_conllu
from ..data.treebanks import treebank_file
from ..files import write_json, write_text
from ..tagging import compact, fit_tagger
from .ewt_pos import load_split
from .pos import development_indices

N_STATES = 45
PASSES = 50
ALPHAS = (0.01, 0.1, 1.0, 10.0)
BETAS = (0.001, 0.01, 0.03, 0.1)
LEARNERS = ("em", "vb", "cvi1", "cvi2", "cgs", "svi", "scvi")
METRICS = ("many_to_one_cv", "one_to_one")
OLD_DEFAULT = (0.1, 0.1)
BROWN_HELD_OUT = 4500   # Brown's first sentences (press), before the development sentences start


def development_corpora():
    brown = load_brown(tagset="brown")
    return {"ewt-dev": load_split("dev"), "brown-dev": compact(brown[development_indices(brown.n_sequences)])[0]}


def held_out_corpora():
    return {"ewt-test": load_split("test"), "brown-press": compact(load_brown(tagset="brown")[:BROWN_HELD_OUT])[0],
            "htb-test": read_conllu(treebank_file("htb", "test"), tag="upos")}


def fit_and_score(corpus_name, corpus, algorithm, alpha, beta, seed, passes):
    """One fit from the default start (alpha, beta None: the package's defaults); its scores and states used."""
    _, states, result = fit_tagger(corpus, algorithm, alpha, beta, passes, seed, n_states=N_STATES)
    result.pop("curve")
    return {**result, "corpus": corpus_name, "tokens": corpus.n_tokens, "states_used": int(np.unique(states).size)}


def mean_scores(runs, algorithm, corpus):
    """{(alpha, beta): {metric: mean over seeds}} of one learner on one corpus."""
    points = {}
    for run in runs:
        if run["algorithm"] == algorithm and run["corpus"] == corpus:
            points.setdefault((run["alpha"], run["beta"]), []).append(run)
    return {point: {key: float(np.mean([r[key] for r in group])) for key in (*METRICS, "states_used")}
            for point, group in points.items()}


def _distance_to_old(point):
    """How far (alpha, beta) lies from the old default, in orders of magnitude."""
    return sum(abs(np.log10(value / old)) for value, old in zip(point, OLD_DEFAULT))


def choose(runs, corpora):
    """Each learner's grid point of lowest mean rank over (corpus, metric), ties to the higher mean M-1 and
    then to the point nearest the old default (EM's MAP ignores every beta <= 1); with each point's mean
    rank and scores."""
    chosen = {}
    for algorithm in dict.fromkeys(r["algorithm"] for r in runs):
        scores = {corpus: mean_scores(runs, algorithm, corpus) for corpus in corpora}
        points = sorted(scores[corpora[0]])
        ranks = [rankdata([-scores[c][p][m] for p in points]) for c in corpora for m in METRICS]
        mean_rank = np.mean(ranks, axis=0)
        m1 = [np.mean([scores[c][p]["many_to_one_cv"] for c in corpora]) for p in points]
        best = min(range(len(points)), key=lambda i: (mean_rank[i], -m1[i], _distance_to_old(points[i])))
        chosen[algorithm] = {"alpha": points[best][0], "beta": points[best][1], "mean_rank": float(mean_rank[best]),
                             "grid": [{"alpha": p[0], "beta": p[1], "mean_rank": float(r),
                                       **{c: scores[c][p] for c in corpora}} for p, r in zip(points, mean_rank)]}
    return chosen


def _cell(scores):
    return (f"{scores['many_to_one_cv'] * 100:.1f} / {scores['one_to_one'] * 100:.1f} / "
            f"{scores['states_used']:.0f}")


def grid_table(chosen, corpora):
    """Markdown: each learner's chosen point and the old default, M-1 / 1-1 / states on each corpus."""
    lines = ["| learner | alpha | beta | mean rank | " + " | ".join(f"{c} M-1 / 1-1 / states" for c in corpora)
             + " | at 0.1, 0.1: mean rank | " + " | ".join(corpora) + " |",
             "|---" * (5 + 2 * len(corpora)) + "|"]
    for algorithm, pick in chosen.items():
        by_point = {(g["alpha"], g["beta"]): g for g in pick["grid"]}
        best, old = by_point[pick["alpha"], pick["beta"]], by_point[OLD_DEFAULT]
        lines.append(f"| {algorithm} | {pick['alpha']:g} | {pick['beta']:g} | {pick['mean_rank']:.2f} | "
                     + " | ".join(_cell(best[c]) for c in corpora) + f" | {old['mean_rank']:.2f} | "
                     + " | ".join(_cell(old[c]) for c in corpora) + " |")
    return "\n".join(lines)


def check_table(runs, corpora):
    """Markdown: old against new defaults on each held-out corpus, M-1 / 1-1 / states (mean over seeds)."""
    lines = ["| learner | defaults | alpha | beta | " + " | ".join(f"{c} M-1 / 1-1 / states" for c in corpora) + " |",
             "|---" * (4 + len(corpora)) + "|"]
    for algorithm in dict.fromkeys(r["algorithm"] for r in runs):
        for which in ("old", "new"):
            mine = [r for r in runs if r["algorithm"] == algorithm and r["defaults"] == which]
            cells = []
            for corpus in corpora:
                group = [r for r in mine if r["corpus"] == corpus]
                cells.append(_cell({k: np.mean([r[k] for r in group]) for k in (*METRICS, "states_used")}))
            lines.append(f"| {algorithm} | {which} | {mine[0]['alpha']:g} | {mine[0]['beta']:g} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_grid(path, chosen, corpora):
    """One heat map of M-1 over alpha x beta per learner and corpus, 1-1 written in each cell, the chosen
    point boxed."""
    from .plots import plt, save_figure

    fig, axes = plt.subplots(len(chosen), len(corpora), figsize=(4.2 * len(corpora), 2.3 * len(chosen)),
                             squeeze=False)
    for row, (algorithm, pick) in enumerate(chosen.items()):
        by_point = {(g["alpha"], g["beta"]): g for g in pick["grid"]}
        for col, corpus in enumerate(corpora):
            ax = axes[row, col]
            m1 = np.array([[by_point[a, b][corpus]["many_to_one_cv"] * 100 for b in BETAS] for a in ALPHAS])
            ax.imshow(m1, cmap="YlGn", aspect="auto")
            for i, a in enumerate(ALPHAS):
                for j, b in enumerate(BETAS):
                    ax.text(j, i, f"{m1[i, j]:.1f}\n{by_point[a, b][corpus]['one_to_one'] * 100:.1f}",
                            ha="center", va="center", fontsize=7)
            i, j = ALPHAS.index(pick["alpha"]), BETAS.index(pick["beta"])
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
            ax.set_xticks(range(len(BETAS)), [f"{b:g}" for b in BETAS])
            ax.set_yticks(range(len(ALPHAS)), [f"{a:g}" for a in ALPHAS])
            ax.set_title(f"{algorithm} on {corpus}: M-1 over 1-1 (%)", fontsize=9)
            if row == len(chosen) - 1:
                ax.set_xlabel("beta")
            if col == 0:
                ax.set_ylabel("alpha")
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def plot_check(path, runs, corpora):
    """Bars of M-1 and 1-1 at the old and new defaults, per learner and held-out corpus."""
    from .plots import plt, save_figure

    algorithms = list(dict.fromkeys(r["algorithm"] for r in runs))
    fig, axes = plt.subplots(1, 2 * len(corpora), figsize=(5 * len(corpora), 3.4), squeeze=False)
    x = np.arange(len(algorithms))
    for col, (corpus, metric) in enumerate((c, m) for c in corpora for m in METRICS):
        ax = axes[0, col]
        for offset, which in ((-0.2, "old"), (0.2, "new")):
            values = [np.mean([r[metric] * 100 for r in runs if r["algorithm"] == a and r["corpus"] == corpus
                               and r["defaults"] == which]) for a in algorithms]
            ax.bar(x + offset, values, 0.4, label=f"{which} defaults")
        ax.set_xticks(x, algorithms, fontsize=8)
        ax.set_title(f"{corpus}: {'M-1' if metric == 'many_to_one_cv' else '1-1'} (%)", fontsize=9)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run_from_command_line(args):
    """``cvbayes experiment defaults``: the grid on the development corpora and the chosen table; with
    ``--check``, old against new defaults on held-out text."""
    algorithms = list(args.algorithms or LEARNERS)
    seeds = range(args.seed, args.seed + args.seeds)
    passes = args.passes or PASSES
    corpora = held_out_corpora() if args.check else development_corpora()
    if args.check:
        settings = [("old", *OLD_DEFAULT), ("new", None, None)]
    else:
        settings = [("grid", a, b) for a in ALPHAS for b in BETAS]
    jobs = [(c, a, s, which, alpha, beta) for c in corpora for a in algorithms for s in seeds
            for which, alpha, beta in settings]
    runs = [{**fit_and_score(c, corpora[c], a, alpha, beta, s, passes), "defaults": which}
            for c, a, s, which, alpha, beta in tqdm(jobs, desc="defaults", disable=args.quiet)]
    names = list(corpora)
    command = "cvbayes " + " ".join(sys.argv[1:])
    folder = Path(args.out) / ("defaults_check" if args.check else "defaults")
    folder.mkdir(parents=True, exist_ok=True)
    sizes = ", ".join(f"{c} {corpora[c].n_sequences} sentences / {corpora[c].n_tokens} tokens" for c in names)
    note = (f"K = {N_STATES}, {passes} passes a run (CGS: annealed sweeps) from HMM.fit's default start, "
            f"seeds {list(seeds)}; {sizes}. Cells: cross-validated M-1 / 1-1 (%) / states decoding uses, "
            f"mean over seeds.")
    results = {"experiment": "defaults", "command": command, "note": note, "passes": passes, "seeds": list(seeds),
               "corpora": {c: {"sentences": corpora[c].n_sequences, "tokens": corpora[c].n_tokens} for c in names},
               "runs": runs}
    if args.check:
        text = check_table(runs, names)
        plot_check(folder / "defaults_check.png", runs, names)
    else:
        chosen = choose(runs, names)
        results.update(alphas=ALPHAS, betas=BETAS, chosen=chosen,
                       rule="lowest mean rank over (corpus, M-1 / 1-1), ties to the higher mean M-1, "
                            "then to the point nearest 0.1, 0.1")
        text = grid_table(chosen, names)
        plot_grid(folder / "defaults_grid.png", chosen, names)
    write_json(folder / "results.json", results)
    title = "old against new defaults on held-out text" if args.check else "the defaults' grid on development data"
    write_text(folder / "table.md", f"# HMM defaults: {title}\n\nCommand: `{command}`\n\n{note}\n\n{text}\n")
    print(f"{note}\n\n{text}")


EXPERIMENTS = {"defaults": run_from_command_line}

"""Thesis Fig. 4.1 (right) on Universal Dependencies: the DMV with EM, VB, CVI and SCVI (thesis §4.5.2).

The thesis trains the Dirichlet-multinomial DMV on WSJ sections 2-21 from Klein and Manning's harmonic
initialiser and reports directed accuracy on section 23 for VB and CVI with alpha in {0.1, 1} beside the
MLE.  WSJ is not reachable here; this experiment runs the same protocol on three UD treebanks (UPOS tags,
punctuation removed, as WSJ10 removes it):

* English EWT: train on train sentences of at most 10 words; choose on dev (at most 10 words); report
  test at most 10 words and test at all lengths;
* Hebrew HTB: the same with its train/dev/test split;
* Czech PUD (1,000 sentences, no split): the unsupervised setting allows training on the sentences one
  then parses, so we train on PUD's sentences of at most 10 words and report on those (the "test <= 10"
  column) and on all 1,000 sentences (the "all lengths" column); nothing is chosen on PUD: its alpha is the
  one EWT's dev chose for each algorithm.

Every learner runs ``n_iter`` passes from the harmonic start (variant chosen on EWT dev, see
`develop`), for every alpha of the grid {0.01, 0.1, 1}; CVI and SCVI with ``seeds`` seeds (the seed sets
CVI's sentence order and SCVI's minibatches), EM and VB once: from the harmonic start they are
deterministic, so their standard deviation over seeds is 0.  EM's MAP with alpha <= 1 is the MLE, so EM
runs once for the whole grid.  The tagset is UD's 17 UPOS tags less PUNCT, fixed, so a tag seen only at
test time is still a known type.  Accuracy on test (<= 10 words) is recorded after every pass for the
curves; the final scores are taken after the last pass.  Runs use one numba thread (CVI is sequential by
definition; EM's parallel E-step is timed separately in benchmarks/bench_dmv_learners.py).
"""
import json
import time
from pathlib import Path

import numba
import numpy as np

from ..data.dependencies import read_dependencies, upos_tagset
from ..data.treebanks import treebank_file
from ..files import save_figure, write_text
from ..metrics.dependency import (attach_left_heads, attach_right_heads, attachment_scores,
                                  random_projective_heads)
from ..models.dmv import DMV
from .results import plain_json

TREEBANKS = ("ewt", "htb", "pud")
NAMES = {"ewt": "English EWT", "htb": "Hebrew HTB", "pud": "Czech PUD"}
ALGORITHMS = ("em", "vb", "cvi", "scvi")
GRID = (0.01, 0.1, 1.0)
THESIS_ALPHAS = (0.1, 1.0)
DETERMINISTIC = ("em", "vb")
VARIANTS = ("completion", "tree")
DEFAULT_SEEDS = 5
DEFAULT_ITERATIONS = 100
# SCVI's minibatch: 256 sentences, or a tenth of a smaller training set (at least 16) so that a pass
# still takes about ten steps (HTB <= 10 has 727 sentences, PUD <= 10 209); kappa 0.5, tau0 1 (§3.8.4)
BATCH_SIZE = 256


def batch_size(n_sentences):
    """SCVI's minibatch size for a training set of ``n_sentences`` (see `BATCH_SIZE`)."""
    return int(min(BATCH_SIZE, max(16, n_sentences // 10)))

# published WSJ10 directed accuracies (sections 2-21, sentences of at most 10 words without punctuation,
# PTB tags), as issue 17 quotes them; other data than ours
PUBLISHED = [
    ("DMV, EM from the harmonic start", 45.8, "Spitkovsky, Alshawi and Jurafsky 2010"),
    ("DMV, EM from the harmonic start", 43.2, "Klein and Manning 2004"),
    ("attach-right baseline", 38.4, "as quoted with the above"),
]


class Split:
    """One evaluation set: a `DependencyCorpus` with gold heads, or None."""

    def __init__(self, corpus):
        self.corpus = corpus

    def scores(self, heads):
        s = attachment_scores(heads, self.corpus.heads, self.corpus.offsets)
        return {"directed": s.directed, "undirected": s.undirected, "words": s.n_tokens}


def load_treebank(name, max_length=10):
    """(train, dev or None, test <= max_length, test at all lengths) of a treebank (module notes)."""
    tagset = upos_tagset(remove_punctuation=True)

    def read(path, longest):
        return read_dependencies(path, tagset=tagset, remove_punctuation=True, max_length=longest)

    if name == "pud":
        path = treebank_file("pud")
        train = read(path, max_length)
        return train, None, train, read(path, None)
    return (read(treebank_file(name, "train"), max_length), read(treebank_file(name, "dev"), max_length),
            read(treebank_file(name, "test"), max_length), read(treebank_file(name, "test"), None))


def run_one(data, algorithm, alpha, seed, n_iter, variant):
    """One training run: the per-pass test (<= 10) directed accuracy, seconds, and the final scores."""
    train, dev, short, full = data
    model = DMV(alpha=alpha, harmonic_variant=variant)
    curve = []

    def score_pass(fitted, iteration):
        heads, _ = fitted.parse_heads(short)
        curve.append(attachment_scores(heads, short.heads, short.offsets).directed)

    model.set_params(algorithm=algorithm, n_iter=n_iter, random_state=seed, batch_size=batch_size(train.n_sentences))
    model.fit(train, callback=score_pass)
    result = {"algorithm": algorithm, "alpha": alpha, "seed": seed, "variant": variant, "iterations": n_iter,
              "curve": curve, "seconds": [record.seconds for record in model.history_],
              "objective": model.history_[-1].objective}
    for key, corpus in (("test10", short), ("test_all", full), ("dev10", dev)):
        if corpus is not None:
            result[key] = Split(corpus).scores(model.parse_heads(corpus)[0])
    return result


def baselines(corpus, seeds):
    """Attach-left, attach-right and random projective trees (mean and std over ``seeds`` draws)."""
    split = Split(corpus)
    out = {"attach-left": split.scores(attach_left_heads(corpus.offsets)),
           "attach-right": split.scores(attach_right_heads(corpus.offsets))}
    draws = [split.scores(random_projective_heads(corpus.offsets, seed)) for seed in range(seeds)]
    out["random"] = {key: float(np.mean([d[key] for d in draws])) for key in ("directed", "undirected")}
    out["random"]["directed_std"] = float(np.std([d["directed"] for d in draws]))
    out["random"]["words"] = draws[0]["words"]
    return out


def develop(data, n_iter, say):
    """Choose the harmonic variant on EWT dev: every algorithm, seed 0, alpha in {0.1, 1} (EM: the MLE),
    from each variant; the variant with the higher mean dev (<= 10) directed accuracy wins."""
    runs = []
    for variant in VARIANTS:
        for algorithm in ALGORITHMS:
            for alpha in ((1.0,) if algorithm == "em" else THESIS_ALPHAS):
                run = run_one(data, algorithm, alpha, 0, n_iter, variant)
                runs.append({key: run[key] for key in ("algorithm", "alpha", "variant", "dev10", "test10")})
                say(f"develop {variant:<10} {algorithm:<4} alpha {alpha:<4}: dev directed "
                    f"{100 * run['dev10']['directed']:.1f}")
    means = {v: float(np.mean([r["dev10"]["directed"] for r in runs if r["variant"] == v])) for v in VARIANTS}
    return {"runs": runs, "mean_dev_directed": means, "chosen": max(VARIANTS, key=means.get)}


def _summary(runs, key, measure="directed"):
    values = [r[key][measure] for r in runs]
    return float(np.mean(values)), float(np.std(values))


def choose_alpha(runs, algorithm):
    """The grid's alpha with the best mean dev (<= 10) directed accuracy for ``algorithm``."""
    candidates = {r["alpha"] for r in runs if r["algorithm"] == algorithm}
    return max(sorted(candidates), key=lambda a: _summary(
        [r for r in runs if r["algorithm"] == algorithm and r["alpha"] == a], "dev10")[0])


def run(out="docs/results/fig4_1_dmv", seeds=DEFAULT_SEEDS, n_iter=DEFAULT_ITERATIONS, treebanks=TREEBANKS,
        grid=GRID, max_length=10, threads=1, quiet=False):
    """Run the experiment (module notes) and write results.json, table.md and one PNG a treebank."""
    if "pud" in treebanks and "ewt" not in treebanks:
        raise ValueError("PUD takes the alphas EWT's dev chose: run ewt with pud")
    treebanks = sorted(treebanks, key=TREEBANKS.index)
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    numba.set_num_threads(threads)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = {"protocol": {"seeds": seeds, "iterations": n_iter, "grid": list(grid), "max_length": max_length,
                            "threads": threads, "tau0": 1.0, "kappa": 0.5,
                            "scvi_batch_size": f"min({BATCH_SIZE}, max(16, training sentences // 10))",
                            "tags": "UPOS without PUNCT", "punctuation": "removed"},
               "treebanks": {}}
    ewt = load_treebank("ewt", max_length)
    results["development"] = develop(ewt, n_iter, say)
    variant = results["development"]["chosen"]
    ewt_choice = {}
    for name in treebanks:
        data = ewt if name == "ewt" else load_treebank(name, max_length)
        train, dev, short, full = data
        runs = []
        for algorithm in ALGORITHMS:
            for alpha in ((1.0,) if algorithm == "em" else grid):
                for seed in range(1 if algorithm in DETERMINISTIC else seeds):
                    runs.append(run_one(data, algorithm, alpha, seed, n_iter, variant))
                    r = runs[-1]
                    say(f"{name} {algorithm:<4} alpha {alpha:<4} seed {seed}: test<=10 directed "
                        f"{100 * r['test10']['directed']:.1f}, all {100 * r['test_all']['directed']:.1f} "
                        f"({sum(r['seconds']):.1f} s)")
        if dev is not None:
            chosen = {algorithm: choose_alpha(runs, algorithm) for algorithm in ALGORITHMS}
        else:
            chosen = dict(ewt_choice)
        if name == "ewt":
            ewt_choice = chosen
        results["treebanks"][name] = {
            "name": NAMES[name], "sizes": {key: {"sentences": c.n_sentences, "words": c.n_tokens}
                                           for key, c in (("train", train), ("dev10", dev), ("test10", short),
                                                          ("test_all", full)) if c is not None},
            "scvi_batch_size": batch_size(train.n_sentences), "chosen_alpha": chosen,
            "chosen_on": "dev" if dev is not None else "EWT dev",
            "baselines": {"test10": baselines(short, seeds), "test_all": baselines(full, seeds)},
            "runs": runs,
        }
        accuracy_curves(folder / f"{name}.png", NAMES[name], runs, results["treebanks"][name]["baselines"])
    results["seconds"] = time.perf_counter() - started
    write_text(folder / "results.json", json.dumps(plain_json(results), indent=1) + "\n")
    write_text(folder / "table.md", table(results))
    say(f"written to {folder} in {results['seconds'] / 60:.1f} min")
    return results


COLOURS = {"em": "tab:blue", "vb": "tab:orange", "cvi": "tab:red", "scvi": "tab:green"}


def accuracy_curves(path, title, runs, baseline):
    """Test (<= 10) directed accuracy against passes and against training seconds, one row for each
    thesis alpha; each line the mean over seeds (EM, the MLE, in both rows), attach-right dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(THESIS_ALPHAS), 2, figsize=(10, 3.6 * len(THESIS_ALPHAS)), squeeze=False)
    for row, alpha in zip(axes, THESIS_ALPHAS):
        for algorithm in ALGORITHMS:
            group = [r for r in runs if r["algorithm"] == algorithm and (algorithm == "em" or r["alpha"] == alpha)]
            if not group:
                continue
            accuracy = 100 * np.mean([r["curve"] for r in group], axis=0)
            seconds = np.mean([np.cumsum(r["seconds"]) for r in group], axis=0)
            label = f"{algorithm.upper()} ({len(group)} run{'s' if len(group) > 1 else ''})"
            row[0].plot(np.arange(1, accuracy.size + 1), accuracy, color=COLOURS[algorithm], label=label)
            row[1].plot(seconds, accuracy, color=COLOURS[algorithm], label=label)
        for ax, xlabel in zip(row, ("pass", "training seconds (one thread)")):
            ax.axhline(100 * baseline["test10"]["attach-right"]["directed"], color="grey", linestyle="--",
                       label="attach-right")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("directed accuracy, test ≤ 10 (%)")
            ax.set_title(f"{title}, α = {alpha:g}")
            ax.grid(alpha=0.3)
        row[1].set_xscale("log")
        row[0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _cell(runs, key, measure="directed"):
    mean, std = _summary(runs, key, measure)
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


def _per_iteration(runs):
    return float(np.median([s for r in runs for s in r["seconds"][1:]]))


def verdicts(treebank):
    """Whether CVI beats EM and VB on test (<= 10) directed accuracy, at each thesis alpha and at the
    alphas chosen on dev: (setting, CVI mean, EM mean, VB mean, CVI std) rows."""
    runs = treebank["runs"]

    def mean_at(algorithm, alpha):
        chosen = [r for r in runs if r["algorithm"] == algorithm and (algorithm == "em" or r["alpha"] == alpha)]
        return _summary(chosen, "test10")

    rows = []
    choice = treebank["chosen_alpha"]
    for setting, alphas in [(f"alpha = {a:g}", {"cvi": a, "vb": a}) for a in THESIS_ALPHAS] + [
            ("alpha chosen on " + treebank["chosen_on"], {"cvi": choice["cvi"], "vb": choice["vb"]})]:
        cvi, cvi_std = mean_at("cvi", alphas["cvi"])
        rows.append((setting, cvi, mean_at("em", None)[0], mean_at("vb", alphas["vb"])[0], cvi_std))
    return rows


def table(results):
    """table.md: the development choice, one table a treebank with the baselines, the published WSJ10
    numbers, and the verdicts."""
    protocol = results["protocol"]
    lines = ["# Fig. 4.1 (right): the DMV with EM, VB, CVI and SCVI on UD treebanks", "",
             f"Directed (and undirected) attachment accuracy in %, mean ± std over seeds; CVI and SCVI "
             f"{protocol['seeds']} seeds, EM and VB one run (deterministic from the harmonic start, std 0). "
             f"{protocol['iterations']} passes; UPOS without PUNCT; trained on sentences of at most "
             f"{protocol['max_length']} words. s/pass: median seconds a pass on one thread (first pass "
             "excluded). Written by `cvbayes experiment fig4.1-dmv`.", "",
             "## Choosing the harmonic variant (EWT dev, sentences of at most 10 words, seed 0)", "",
             "| variant | " + " | ".join(f"{r['algorithm']} α={r['alpha']:g}" for r in results["development"]["runs"]
                                         if r["variant"] == VARIANTS[0]) + " | mean |",
             "|---|" + "---|" * (1 + sum(r["variant"] == VARIANTS[0] for r in results["development"]["runs"]))]
    for variant in VARIANTS:
        cells = [f"{100 * r['dev10']['directed']:.1f}" for r in results["development"]["runs"]
                 if r["variant"] == variant]
        lines.append(f"| {variant} | " + " | ".join(cells)
                     + f" | {100 * results['development']['mean_dev_directed'][variant]:.1f} |")
    lines += ["", f"Chosen: **{results['development']['chosen']}** (every run below starts from it).", ""]
    for treebank in results["treebanks"].values():
        sizes = treebank["sizes"]
        lines += [f"## {treebank['name']}", "",
                  "Sizes: " + ", ".join(f"{key} {s['sentences']} sentences / {s['words']} words"
                                        for key, s in sizes.items()) + ".", "",
                  "| method | α | test ≤ 10 directed | undirected | test all lengths directed | undirected "
                  "| dev ≤ 10 directed | s/pass |", "|---|---|---|---|---|---|---|---|"]
        runs = treebank["runs"]
        has_dev = "dev10" in runs[0]
        for algorithm in ALGORITHMS:
            for alpha in sorted({r["alpha"] for r in runs if r["algorithm"] == algorithm}):
                group = [r for r in runs if r["algorithm"] == algorithm and r["alpha"] == alpha]
                mark = " (chosen)" if treebank["chosen_alpha"][algorithm] == alpha and algorithm != "em" else ""
                label = "MLE (any α ≤ 1)" if algorithm == "em" else f"{alpha:g}{mark}"
                lines.append(f"| {algorithm.upper()} | {label} | {_cell(group, 'test10')} | "
                             f"{_cell(group, 'test10', 'undirected')} | {_cell(group, 'test_all')} | "
                             f"{_cell(group, 'test_all', 'undirected')} | "
                             f"{_cell(group, 'dev10') if has_dev else '–'} | {_per_iteration(group):.3f} |")
        for name in ("attach-left", "attach-right", "random"):
            short, full = treebank["baselines"]["test10"][name], treebank["baselines"]["test_all"][name]
            spread = (f" ± {100 * short['directed_std']:.1f}", f" ± {100 * full['directed_std']:.1f}") \
                if name == "random" else ("", "")
            lines.append(f"| {name} | | {100 * short['directed']:.1f}{spread[0]} | {100 * short['undirected']:.1f} | "
                         f"{100 * full['directed']:.1f}{spread[1]} | {100 * full['undirected']:.1f} | | |")
        lines += ["", "Does CVI beat EM and VB (test ≤ 10, directed)?", "",
                  "| setting | CVI | EM | VB | CVI − EM | CVI − VB | CVI std |", "|---|---|---|---|---|---|---|"]
        for setting, cvi, em, vb, std in verdicts(treebank):
            lines.append(f"| {setting} | {100 * cvi:.1f} | {100 * em:.1f} | {100 * vb:.1f} | "
                         f"{100 * (cvi - em):+.1f} | {100 * (cvi - vb):+.1f} | {100 * std:.1f} |")
        lines.append("")
    lines += ["## Published WSJ10 numbers (other data: WSJ, PTB tags, sentences of at most 10 words)", "",
              "| method | directed | source |", "|---|---|---|"]
    lines += [f"| {method} | {value:.1f} | {source} |" for method, value, source in PUBLISHED]
    lines += ["", f"Total time: {results['seconds'] / 60:.1f} min.", ""]
    return "\n".join(lines)


def run_from_command_line(args):
    """``cvbayes experiment fig4.1-dmv``: --seeds (default 5), --passes (default 100), --max-length
    (training sentences, default 10), --quiet; writes under --out/fig4_1_dmv."""
    run(out=Path(args.out) / "fig4_1_dmv", seeds=args.seeds or DEFAULT_SEEDS, n_iter=args.passes or DEFAULT_ITERATIONS,
        max_length=args.max_length or 10, quiet=args.quiet)


EXPERIMENTS = {"fig4.1-dmv": run_from_command_line}

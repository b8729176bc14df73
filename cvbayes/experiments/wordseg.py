"""Word segmentation with adaptor grammars: ``cvbayes experiment wordseg`` (issue 20).

The Brent corpus (Bernstein-Ratner's child-directed English in Brent's phonemes, 9,790 utterances,
`cvbayes.data.load_brent`) segmented by the Pitman-Yor adaptor grammars of Johnson and Goldwater (2009)
(unigram words; collocations of words; collocations with syllable structure, on Brent only, whose
phonemes are its terminals), each learned by VB, collapsed VI and MCMC, from several seeds.  Scores are
the token, boundary (utterance-internal) and lexicon F1 of Goldwater, Griffiths and Johnson (2009)
(`cvbayes.metrics.segmentation`), taken on the Viterbi segmentation of the training utterances after
each evaluated pass: the published systems learn from and are scored on the same utterances (there is
no held-out set in this task), and so are ours.  Nothing was tuned on the scores: the model's default
hyperparameters are used throughout.

A second language checks that nothing was tuned to Brent: HKCanCor (Cantonese conversation, symbols
are Jyutping syllables, `cvbayes.data.load_hkcancor`; ``cvbayes data fetch hkcancor``), or the mother's
utterances of Brown's Eve (letters, `cvbayes.data.load_eve`).  By default the first 9,790 HKCanCor
utterances, Brent's size.

Published figure beside ours: Johnson and Goldwater (2009, NAACL, MCMC with hyperparameter sampling)
token F1 on Brent, about 0.56 (unigram), 0.76 (colloc) and 0.87 (colloc-syllable), as issue 20 quotes
them (not re-checked against the paper here).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ..files import write_json, write_text
from ..metrics.segmentation import segmentation_scores
from .plots import _save, curves, plt
from .results import plain_json

GRAMMARS = ("unigram", "colloc", "colloc-syllable")
ALGORITHMS = ("vb", "cvi", "mcmc")
CORPORA = ("brent", "hkcancor", "eve")
DEFAULT_CORPORA = ("brent", "hkcancor")
PUBLISHED_TOKEN_F1 = {"unigram": 0.56, "colloc": 0.76, "colloc-syllable": 0.87}
PUBLISHED = ("Johnson and Goldwater (2009), MCMC with sampled PY hyperparameters, Brent (9,790 utterances), "
             "token F1 as quoted in issue 20 (approximate); their colloc-syllable grammar also has word-initial "
             "and word-final syllables, onsets and codas, which ours (`syllable_grammar`) does not")
QUICK = {"utterances": 200, "iterations": 2, "mcmc_iterations": 4, "seeds": 1}
SCORES = ("token", "boundary", "lexicon")
EVALUATIONS = 12   # log-spaced scoring points along a run
# VB keeps the best of 5 starts by its ELBO (it depends on its start: token F1 0.30-0.58 across seeds on
# Brent, and the ELBO ranks them); CVI and MCMC run once (their passes cost 10-100 times more)
RESTARTS = {"vb": 5}


def evaluation_points(n_iter, count=EVALUATIONS):
    """1-based passes to score at: log-spaced from 1 to ``n_iter`` (the last always)."""
    points = np.unique(np.round(np.geomspace(1, n_iter, min(count, n_iter))).astype(int))
    return set(int(p) for p in points) | {n_iter}


def load_corpus(name, n=None):
    """A word segmentation corpus by name, its first ``n`` utterances (all when None)."""
    from .. import data

    loaded = {"brent": data.load_brent, "hkcancor": data.load_hkcancor, "eve": data.load_eve}[name]()
    if n is not None and n < len(loaded):
        loaded = loaded.subset(range(n))
    return loaded


def run_one(corpus, grammar, algorithm, seed, n_iter, restarts=1, options=None):
    """One fit (the best of ``restarts`` by final objective): the scores after the last pass and at
    log-spaced passes of the kept run, and the training seconds of all restarts (the wall time of ``fit``,
    the start included, scoring excluded).  ``options``: keyword arguments of the model."""
    from ..models.adaptor import AdaptorGrammar

    utterances = [list(symbols) for symbols in corpus.symbols]
    points = evaluation_points(n_iter)
    curves, scoring = {}, []

    def evaluate(model, iteration):
        curve = curves.setdefault(id(model), [])    # one curve per restart, in the order they run
        if iteration + 1 in points:
            started = time.perf_counter()
            scores = segmentation_scores(model.segment(utterances), corpus.segments)
            scoring.append(time.perf_counter() - started)
            curve.append({"iteration": iteration + 1, "seconds": sum(r.seconds for r in model.history_),
                          **{f"{name}_f1": getattr(scores, name).f1 for name in SCORES}})

    model = AdaptorGrammar(grammar, **(options or {}))
    started = time.perf_counter()
    # seed k restarts from seeds k R, ..., k R + R - 1: the seeds' runs share no start
    model.fit(utterances, algorithm=algorithm, n_iter=n_iter, seed=seed * restarts, callback=evaluate,
              n_init=restarts)
    seconds = time.perf_counter() - started - sum(scoring)
    scores = segmentation_scores(model.segment(utterances), corpus.segments)
    kept = int(np.argmax(model.restart_objectives_))
    return {"grammar": grammar, "algorithm": algorithm, "seed": seed, "iterations": len(model.history_),
            "restarts": restarts, "seconds": seconds, "objective": model.history_[-1].objective,
            "restart_objectives": model.restart_objectives_, "scores": scores.as_dict(),
            "lexicon_size": len(model.lexicon_), "curve": list(curves.values())[kept] if curves else [],
            "model": model.settings()}


def _label(run):
    """The run's algorithm with the model options it ran with, when they are not the defaults."""
    model = run["model"]
    notes = ([f"a = {model['a']:g}"] if model["a"] else []) + (["a, b learned"] if model.get("estimate_hyperparameters")
                                                                else [])
    if model.get("anneal"):
        notes.append(f"annealed from T = {model['anneal'][0]:g} over {model['anneal'][1]} sweeps")
    return run["algorithm"] + (f" ({'; '.join(notes)})" if notes else "")


def _labels(runs, algorithms):
    """The distinct labels of `runs`, in the order of `algorithms`."""
    return list(dict.fromkeys(_label(r) for a in algorithms for r in runs if r["algorithm"] == a))


def _mean_std(values, scale=100.0, digits=1):
    values = np.asarray(values, dtype=float) * scale
    if values.size == 0:
        return "–"
    if values.size == 1:
        return f"{values[0]:.{digits}f}"
    return f"{values.mean():.{digits}f} ± {values.std():.{digits}f}"


def table(results, config):
    """The Markdown table: each corpus, grammar and algorithm, F1 (mean ± std over seeds) and time."""
    lines = ["# Word segmentation with Pitman-Yor adaptor grammars", "",
             f"Command: `{config['command']}`.", "",
             "Scores (%): token, boundary (utterance-internal boundaries only) and lexicon F1 (Goldwater, "
             "Griffiths and Johnson 2009) of the Viterbi segmentation of the **training utterances**: the "
             "published systems learn from and are scored on the same utterances, and so are we (no "
             "held-out set; no hyperparameter was tuned on these scores: the model's defaults, a = 0, b = 1, "
             "unless the algorithm column says otherwise). "
             "Mean ± std over the seeds. Seconds: training (the wall time of fit, the start "
             "and every restart included, scoring excluded). vb keeps the best of its restarts by the ELBO "
             "(passes: 'best of R').", "",
             f"Published: {PUBLISHED}.", ""]
    for corpus, block in results.items():
        lines += [f"## {corpus}: {block['data']['description']}", "",
                  f"{block['data']['utterances']} utterances, {block['data']['words']} gold words, "
                  f"{block['data']['symbols']} symbols.", ""]
        lines += [f"Not run: {note}." for note in block.get("skipped", [])] + ([""] if block.get("skipped") else [])
        lines += [
                  "| grammar | algorithm | seeds | passes | seconds | token F1 | boundary F1 | lexicon F1 | "
                  "published token F1 |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for grammar in config["grammars"]:
            of_grammar = [r for r in block["runs"] if r["grammar"] == grammar]
            for algorithm in _labels(of_grammar, config["algorithms"]):
                runs = [r for r in of_grammar if _label(r) == algorithm]
                published = PUBLISHED_TOKEN_F1.get(grammar) if corpus == "brent" else None
                seconds = _mean_std([r["seconds"] for r in runs], 1, 1)
                lines.append(
                    f"| {grammar} | {algorithm} | {len(runs)} | {runs[0]['iterations']}"
                    + (f" (best of {runs[0]['restarts']})" if runs[0].get("restarts", 1) > 1 else "")
                    + f" | {seconds} | "
                    + " | ".join(_mean_std([r["scores"][name]["f1"] for r in runs]) for name in SCORES)
                    + f" | {'–' if published is None else f'{100 * published:.0f}'} |")
        lines += [""] + [f"![{corpus} {g} F1 against passes and time](token_f1_by_{axis}_{corpus}_{g}.png)"
                         for g in config["grammars"] for axis in ("iteration", "seconds")
                         if any(r["grammar"] == g for r in block["runs"])] + [""]
    return "\n".join(lines)


def plot_summary(path, results, config):
    """Final token F1 of every run against its training seconds, one panel a corpus."""
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 6), squeeze=False)
    # a colour for each algorithm (with its options), a marker for each grammar: a dozen series stay apart
    labels = _labels([r for block in results.values() for r in block["runs"]], config["algorithms"])
    colours = {label: plt.cm.tab10(i % 10) for i, label in enumerate(labels)}
    markers = dict(zip(config["grammars"], "os^Dvp"))
    for ax, (corpus, block) in zip(axes[0], results.items()):
        for grammar in config["grammars"]:
            of_grammar = [r for r in block["runs"] if r["grammar"] == grammar]
            for algorithm in _labels(of_grammar, config["algorithms"]):
                runs = [r for r in of_grammar if _label(r) == algorithm]
                if runs:
                    ax.scatter([r["seconds"] for r in runs], [100 * r["scores"]["token"]["f1"] for r in runs],
                               color=colours[algorithm], marker=markers.get(grammar, "o"),
                               label=f"{grammar} {algorithm}")
            if corpus == "brent" and grammar in PUBLISHED_TOKEN_F1:
                ax.axhline(100 * PUBLISHED_TOKEN_F1[grammar], linestyle=":", color="gray")
        ax.set_xscale("log")
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("token F1 (%)")
        ax.set_title(f"{corpus} (dotted: published MCMC)" if corpus == "brent" else corpus)
        if block["runs"]:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15))
        else:
            ax.text(0.5, 0.5, "no runs", transform=ax.transAxes, ha="center")
    return _save(fig, path)


def _write(folder, config, results, plots=True):
    """results.json and table.md (after every run, so that a long run shows its progress) and the plots."""
    write_json(folder / "results.json", plain_json({"config": config, "results": results}), indent=1)
    text = table(results, config)
    write_text(folder / "table.md", text)
    if not plots:
        return text
    for corpus, block in results.items():
        for grammar in config["grammars"]:
            of_grammar = [r for r in block["runs"] if r["grammar"] == grammar]
            if of_grammar:
                curves(folder, [{**r, "algorithm": _label(r)} for r in of_grammar],
                       _labels(of_grammar, config["algorithms"]), "token_f1",
                       f"{corpus}, {grammar} grammar: token F1", suffix=f"{corpus}_{grammar}")
    if results:
        plot_summary(folder / "token_f1_by_time.png", results, config)
    return text


def run_from_command_line(args):
    """``cvbayes experiment wordseg`` (module notes): ``--grammars``, ``--algorithms``, ``--seeds`` (default 3),
    ``--iterations`` (vb, cvi; default 50), ``--cgs-iterations`` (mcmc sweeps), ``--corpora``, ``--utterances``,
    ``--quick``, ``--out`` (results under OUT/wordseg), ``--seed`` (the first seed: seeds SEED..SEED+N-1)."""
    from ..models.adaptor import AdaptorGrammar
    from ..models.adaptor_mcmc import parse_anneal

    quick = getattr(args, "quick", False)
    grammars = (args.grammars.split(",") if getattr(args, "grammars", None) else list(GRAMMARS))
    algorithms = list(args.algorithms or ALGORITHMS)
    for name in grammars:
        if name not in GRAMMARS:
            raise ValueError(f"wordseg: unknown grammar {name!r}; choose from {', '.join(GRAMMARS)}")
    for name in algorithms:
        if name not in ALGORITHMS:
            raise ValueError(f"wordseg: unknown algorithm {name!r}; choose from {', '.join(ALGORITHMS)}")
    corpora = args.corpora.split(",") if getattr(args, "corpora", None) else list(DEFAULT_CORPORA)
    for name in corpora:
        if name not in CORPORA:
            raise ValueError(f"wordseg: unknown corpus {name!r}; choose from {', '.join(CORPORA)}")
    first = getattr(args, "seed", 0) or 0
    seeds = list(range(first, first + (QUICK["seeds"] if quick else (args.seeds or 3))))
    iterations = {a: (QUICK["mcmc_iterations"] if quick else args.cgs_iterations) if a == "mcmc"
                  else (QUICK["iterations"] if quick else args.iterations) for a in algorithms}
    limit = QUICK["utterances"] if quick else getattr(args, "utterances", None)
    options = {"estimate_hyperparameters": getattr(args, "estimate_hyperparameters", False)}
    if getattr(args, "discount", None) is not None:
        options["a"] = args.discount
    anneal = None if getattr(args, "anneal", None) is None else parse_anneal(args.anneal)
    AdaptorGrammar("unigram", anneal=anneal, **options)      # checks the values before any run
    folder = Path("docs/results" if args.out is None else args.out) / "wordseg"
    folder.mkdir(parents=True, exist_ok=True)
    command = ("cvbayes " + " ".join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith("cvbayes")
               else "cvbayes experiment wordseg")
    config = {"command": command, "grammars": grammars, "algorithms": algorithms, "seeds": seeds,
              "iterations": iterations, "corpora": corpora, "utterances": limit,
              "model_options": {**options, "anneal (mcmc)": anneal},
              "published": {"source": PUBLISHED, "token_f1": PUBLISHED_TOKEN_F1},
              "evaluation": "training utterances (as the published systems)"}
    results = {}
    size = None
    for corpus_name in corpora:
        corpus = load_corpus(corpus_name, limit if limit is not None else size)
        size = size or len(corpus)   # the second language: as many utterances as Brent
        results[corpus_name] = {"data": {"description": corpus.description, "utterances": len(corpus),
                                         "words": corpus.n_segments, "symbols": corpus.n_symbols}, "runs": []}
        for grammar in grammars:
            unknown = AdaptorGrammar(grammar).underivable_symbol(corpus.symbols)
            if unknown is not None:     # colloc-syllable's terminals are Brent's phonemes
                note = (f"{grammar} (its terminals do not include this corpus's symbol {unknown[1]!r}, e.g. "
                        f"utterance {unknown[0] + 1})")
                results[corpus_name].setdefault("skipped", []).append(note)
                if not args.quiet:
                    print(f"wordseg: {corpus_name}: not run: {note}", file=sys.stderr)
                continue
            for seed in seeds:
                for algorithm in algorithms:
                    run = run_one(corpus, grammar, algorithm, seed, iterations[algorithm],
                                  1 if quick else RESTARTS.get(algorithm, 1),
                                  {**options, "anneal": anneal if algorithm == "mcmc" else None})
                    results[corpus_name]["runs"].append(run)
                    if not args.quiet:
                        s = run["scores"]
                        print(f"{corpus_name} {grammar} {algorithm} seed {seed}: token F1 "
                              f"{100 * s['token']['f1']:.1f}, boundary {100 * s['boundary']['f1']:.1f}, lexicon "
                              f"{100 * s['lexicon']['f1']:.1f}; {run['seconds']:.1f} s", file=sys.stderr)
                    _write(folder, config, results, plots=False)
    text = _write(folder, config, results)
    if not args.quiet and not getattr(args, "json", False):
        print(text)
    return results


EXPERIMENTS = {"wordseg": run_from_command_line}

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
utterances, Brent's size.  Buckeye (``--corpora buckeye``; ``cvbayes data fetch buckeye``) is
conversational English in the surface phones that were said (`cvbayes.data.load_buckeye`), with utterances
about twice as long as Brent's; colloc-syllable runs on it over its own vowels (`BUCKEYE_VOWELS`).

Every corpus gets the trivial segmentations beside the learners (one word per utterance, one word per
symbol) and, where its vowels are known (Brent, Buckeye), a boundary after every vowel; and every run's
token F1 and words per gold word by utterance length (``by_length``), to show how a learner behaves as
utterances grow.

The reference: the runs of Johnson's C++ adaptor grammar sampler and Goldwater's dpseg that
``benchmarks/bench_wordseg.py`` makes on Brent (JSON in ``benchmarks/results/wordseg_reference/``) are put
beside ours in table.md (their token F1, CPU and wall time, memory, and the time each took to reach the
published F1) and in ``token_f1_against_reference_<grammar>.png`` (F1 against seconds, theirs in CPU
seconds).

Published figure beside ours: Johnson and Goldwater (2009, NAACL, MCMC with hyperparameter sampling)
token F1 on Brent, about 0.56 (unigram), 0.76 (colloc) and 0.87 (colloc-syllable), as issue 20 quotes
them (not re-checked against the paper here).
"""
from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import numpy as np

from ..files import write_json, write_text
from ..metrics.segmentation import segmentation_scores
from .memory import peak_mib, reset_peak
from .plots import _save, curves, plt
from .results import mean_curve, plain_json

GRAMMARS = ("unigram", "colloc", "colloc-syllable")
ALGORITHMS = ("vb", "cvi", "mcmc")
CORPORA = ("brent", "hkcancor", "eve", "buckeye")
DEFAULT_CORPORA = ("brent", "hkcancor")
PUBLISHED_TOKEN_F1 = {"unigram": 0.56, "colloc": 0.76, "colloc-syllable": 0.87}
PUBLISHED = ("Johnson and Goldwater (2009), MCMC with sampled PY hyperparameters, Brent (9,790 utterances), "
             "token F1 as quoted in issue 20 (approximate); colloc-syllable is their grammar with word-initial and "
             "word-final syllables (`syllable_grammar`, with its concentrations: Colloc 100, Word 0.1, syllable "
             "parts 1000); the rows 'colloc-syllable-b1' are the same grammar at b = 1 everywhere (before "
             "syllable_settings.md), the rows 'colloc-syllable-no-edges' cvbayes's earlier grammar without "
             "word-edge syllables")
QUICK = {"utterances": 200, "iterations": 2, "mcmc_iterations": 4, "seeds": 1}
SCORES = ("token", "boundary", "lexicon")
EVALUATIONS = 12   # log-spaced scoring points along a run
LENGTH_BINS = (1, 11, 21, 41, 81)    # utterance lengths in symbols: 1-10, 11-20, 21-40, 41-80, 81 and more
REFERENCE_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "wordseg_reference"
# VB keeps the medoid of 5 starts (`AdaptorGrammar`'s n_init: it depends on its start, token F1 0.30-0.58
# across seeds on Brent); CVI and MCMC run once (their passes cost 10-100 times more)
RESTARTS = {"vb": 5}


def evaluation_points(n_iter, count=EVALUATIONS):
    """1-based passes to score at: log-spaced from 1 to ``n_iter`` (the last always)."""
    points = np.unique(np.round(np.geomspace(1, n_iter, min(count, n_iter))).astype(int))
    return set(int(p) for p in points) | {n_iter}


def load_corpus(name, n=None):
    """A word segmentation corpus by name, its first ``n`` utterances (all when None)."""
    from .. import data

    loaded = {"brent": data.load_brent, "hkcancor": data.load_hkcancor, "eve": data.load_eve,
              "buckeye": data.load_buckeye}[name]()
    if n is not None and n < len(loaded):
        loaded = loaded.subset(range(n))
    return loaded


def corpus_vowels(name):
    """The symbols that can be a syllable's nucleus in a corpus, or None when not known."""
    from ..data.segmentation import BUCKEYE_VOWELS
    from ..models.adaptor import BRENT_VOWELS

    return {"brent": BRENT_VOWELS, "buckeye": BUCKEYE_VOWELS}.get(name)


def grammar_for(name, grammar, corpus):
    """The grammar a run on corpus `name` learns: the built-in, except colloc-syllable on a corpus (not Brent,
    whose phonemes are the built-in's) whose vowels are known, built over its own vowels and consonants."""
    from ..models.adaptor import syllable_grammar

    vowels = corpus_vowels(name)
    if grammar != "colloc-syllable" or name == "brent" or vowels is None:
        return grammar
    symbols = dict.fromkeys(symbol for utterance in corpus.symbols for symbol in utterance)
    return syllable_grammar(vowels, [symbol for symbol in symbols if symbol not in vowels])


def baselines(corpus, vowels=None):
    """Token, boundary and lexicon scores of the trivial segmentations (each utterance one word; each symbol
    one word) and, given the vowels, of a boundary after every vowel (but the utterance's last symbol)."""
    found = {"one word per utterance": [[tuple(symbols)] for symbols in corpus.symbols],
             "one word per symbol": [[(symbol,) for symbol in symbols] for symbols in corpus.symbols]}
    if vowels is not None:
        vowels = set(vowels)
        after_vowels = []
        for symbols in corpus.symbols:
            words, word = [], []
            for symbol in symbols:
                word.append(symbol)
                if symbol in vowels:
                    words.append(tuple(word))
                    word = []
            if word:     # the symbols after the last vowel join the last word
                words = words[:-1] + [words[-1] + tuple(word)] if words else [tuple(word)]
            after_vowels.append(words)
        found["a boundary after every vowel"] = after_vowels
    return {name: segmentation_scores(words, corpus.segments).as_dict() for name, words in found.items()}


def length_bin(length):
    """The label of the LENGTH_BINS bin of an utterance of `length` symbols."""
    index = int(np.searchsorted(LENGTH_BINS, length, side="right")) - 1
    low = LENGTH_BINS[index]
    return f"{low}-{LENGTH_BINS[index + 1] - 1}" if index + 1 < len(LENGTH_BINS) else f"{low}+"


def scores_by_length(predicted, gold):
    """Token F1 and words found per gold word of the utterances of each length bin (`LENGTH_BINS`)."""
    bins = {}
    for found, truth in zip(predicted, gold):
        found_in, truth_in = bins.setdefault(length_bin(sum(map(len, truth))), ([], []))
        found_in.append(found)
        truth_in.append(truth)
    out = {}
    for label in sorted(bins, key=lambda b: int(b.split("-")[0].rstrip("+"))):
        found, truth = bins[label]
        scores = segmentation_scores(found, truth)
        out[label] = {"utterances": len(truth), "token_f1": scores.token.f1,
                      "words_per_gold_word": scores.token.predicted / scores.token.gold}
    return out


def run_one(corpus, grammar, algorithm, seed, n_iter, restarts=1, options=None, text=None):
    """One fit (the best of ``restarts`` by final objective): the scores after the last pass and at
    log-spaced passes of the kept run, the final scores by utterance length, and the training seconds of all
    restarts (the wall time of ``fit``, the start included, scoring excluded).  ``options``: keyword
    arguments of the model; ``text``: the grammar to learn when it is not the built-in `grammar`."""
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

    # seed k restarts from seeds k R, ..., k R + R - 1: the seeds' runs share no start
    model = AdaptorGrammar(text or grammar, algorithm=algorithm, n_iter=n_iter, random_state=seed * restarts,
                           n_init=restarts, **(options or {}))
    reset_peak()
    started = time.perf_counter()
    model.fit(utterances, callback=evaluate)
    seconds = time.perf_counter() - started - sum(scoring)
    peak = peak_mib()
    segmented = model.segment(utterances)
    scores = segmentation_scores(segmented, corpus.segments)
    return {"grammar": grammar, "algorithm": algorithm, "seed": seed, "iterations": len(model.history_),
            "restarts": restarts, "seconds": seconds, "peak_mib": peak, "objective": model.history_[-1].objective,
            "restart_objectives": model.restart_objectives_, "scores": scores.as_dict(),
            "lexicon_size": len(model.lexicon_), "curve": list(curves.values())[model.best_restart_] if curves else [],
            "by_length": scores_by_length(segmented, corpus.segments), "model": model.settings()}


@functools.cache
def _grammar_sets_b(name):
    """Whether built-in grammar ``name`` gives every adapted nonterminal its b (colloc-syllable's
    `syllable_grammar`), so that the model's b is not the run's; False for a name that is not a built-in."""
    from ..models.adaptor import BUILT_IN_GRAMMARS
    from ..models.adaptor.grammar import as_spec

    return name in BUILT_IN_GRAMMARS and all(b is not None for _, b in as_spec(name).adapted.values())


def _label(run):
    """The run's algorithm with the model options it ran with, when they are not the defaults."""
    from ..models.adaptor import AdaptorGrammar

    model = run["model"]
    notes = [f"a = {model['a']:g}"] if model["a"] else []
    if _grammar_sets_b(run["grammar"]):
        notes.append("b from the grammar")
    elif model.get("b", 1) != 1:
        notes.append(f"b = {model['b']:g}")
    notes += ["a, b learned"] if model.get("estimate_hyperparameters") else []
    if model.get("anneal"):
        notes.append(f"annealed from T = {model['anneal'][0]:g} over {model['anneal'][1]} sweeps")
    if model.get("resample_tables"):
        notes.append("tables resampled")
    if model.get("init") and model["init"] != AdaptorGrammar.DEFAULT_INIT[run["algorithm"]]:
        notes.append(f"{model['init']} start")
    # runs saved before cvi had a choice of predictive ran the first-order one
    if run["algorithm"] == "cvi" and model.get("predictive", "first-order") != "zero-exact":
        notes.append(f"{model.get('predictive', 'first-order')} predictive")
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
             "and every restart included, scoring excluded); peak MiB: the largest over the seeds of the fit's "
             "peak resident memory (VmHWM reset before it). 'the medoid of R starts': the restart whose "
             "segmentation agrees most with the other R - 1 (the model's n_init rule).", "",
             f"Published: {PUBLISHED}.", ""]
    for corpus, block in results.items():
        lines += [f"## {corpus}: {block['data']['description']}", "",
                  f"{block['data']['utterances']} utterances, {block['data']['words']} gold words, "
                  f"{block['data']['symbols']} symbols.", ""]
        lines += [f"Not run: {note}." for note in block.get("skipped", [])] + ([""] if block.get("skipped") else [])
        lines += [
                  "| grammar | algorithm | seeds | passes | seconds | peak MiB | token F1 | boundary F1 | lexicon F1 | "
                  "published token F1 |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for grammar in config["grammars"]:
            of_grammar = [r for r in block["runs"] if r["grammar"] == grammar]
            for algorithm in _labels(of_grammar, config["algorithms"]):
                runs = [r for r in of_grammar if _label(r) == algorithm]
                published = PUBLISHED_TOKEN_F1.get(grammar) if corpus == "brent" else None
                seconds = _mean_std([r["seconds"] for r in runs], 1, 1)
                peaks = [r["peak_mib"] for r in runs if r.get("peak_mib") is not None]
                peak = f"{max(peaks):,.0f}" if peaks else "–"
                lines.append(
                    f"| {grammar} | {algorithm} | {len(runs)} | {runs[0]['iterations']}"
                    + (f" (the medoid of {runs[0]['restarts']} starts)" if runs[0].get("restarts", 1) > 1 else "")
                    + f" | {seconds} | {peak} | "
                    + " | ".join(_mean_std([r["scores"][name]["f1"] for r in runs]) for name in SCORES)
                    + f" | {'–' if published is None else f'{100 * published:.0f}'} |")
        lines += [""] + [f"![{corpus} {g} F1 against passes and time](token_f1_by_{axis}_{corpus}_{g}.png)"
                         for g in config["grammars"] for axis in ("iteration", "seconds")
                         if any(r["grammar"] == g for r in block["runs"])] + [""]
        lines += _baseline_table(block) + _length_table(block, config)
        if corpus == "brent":
            lines += _reference_table(reference_runs(), config)
    return "\n".join(lines)


def _baseline_table(block):
    if not block.get("baselines"):
        return []
    lines = ["Trivial segmentations and a heuristic (no learning):", "",
             "| segmentation | token F1 | boundary F1 | lexicon F1 |", "|---|---:|---:|---:|"]
    for name, scores in block["baselines"].items():
        lines.append(f"| {name} | " + " | ".join(f"{100 * scores[s]['f1']:.1f}" for s in SCORES) + " |")
    return lines + [""]


def _length_table(block, config):
    """Token F1 (words found per gold word) of each learner by utterance length, over its seeds."""
    runs = [r for r in block["runs"] if r.get("by_length")]
    if not runs:
        return []
    bins = sorted({b for r in runs for b in r["by_length"]}, key=lambda b: int(b.split("-")[0].rstrip("+")))
    counts = {b: next(r["by_length"][b]["utterances"] for r in runs if b in r["by_length"]) for b in bins}
    lines = ["By utterance length (symbols): token F1 %, and in brackets the words found per gold word (1: as "
             "many as the gold; below 1: utterances left in too few pieces).", "",
             "| grammar | algorithm | " + " | ".join(f"{b} ({counts[b]} utt.)" for b in bins) + " |",
             "|---|---|" + "---:|" * len(bins)]
    for grammar in config["grammars"]:
        of_grammar = [r for r in runs if r["grammar"] == grammar]
        for label in _labels(of_grammar, config["algorithms"]):
            chosen = [r for r in of_grammar if _label(r) == label]
            cells = []
            for b in bins:
                values = [r["by_length"][b] for r in chosen if b in r["by_length"]]
                cells.append(f"{100 * np.mean([v['token_f1'] for v in values]):.1f} "
                             f"({np.mean([v['words_per_gold_word'] for v in values]):.2f})" if values else "–")
            lines.append(f"| {grammar} | {label} | " + " | ".join(cells) + " |")
    return lines + [""]


def reference_runs(folder=REFERENCE_DIR):
    """The reference systems' runs on Brent that benchmarks/bench_wordseg.py wrote (empty when none)."""
    import json

    folder = Path(folder)
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def _when(reached):
    return "not reached" if reached["sweep"] is None else f"{reached['sweep']} ({reached['seconds']:.0f} s)"


def _wordseg_token(run):
    """wordseg's own token F-score of the run's final segmentation (the cross-check), or a dash."""
    evaluated = run.get("wordseg_evaluate") or {}
    return f"{100 * evaluated['token_fscore']:.1f}" if "token_fscore" in evaluated else "–"


def _reference_table(runs, config):
    if not runs:
        return []
    lines = ["### The reference, run here (benchmarks/bench_wordseg.py)", "",
             "Johnson's adaptor grammar sampler (py-cfg, as bootphon/wordseg ships it: `wordseg-ag` settings, PY a "
             "and b sampled, no annealing, one chain, its sampled parse of the training utterances every 10 sweeps) "
             "and Goldwater's dpseg, on the same Brent input, on the same (shared, loaded) machine. Seconds: CPU "
             "time of the process (the sampler's own trace; wall time beside it, which includes waiting for the "
             "CPU). wordseg's token F: its own evaluate of the same segmentation (a cross-check of our scorer). "
             "'To published F1' and 'to final - 1': the first printed sweep (CPU seconds) at which its token "
             "F1 reached the published figure, and its own final F1 less one point. A run 'stopped' was ended before "
             "its planned sweeps (the machine's time ran out): its last printed parse is scored, with the CPU "
             "seconds to it; its wall time is until it was stopped.", "",
             "| grammar | system | seed | sweeps | CPU s | wall s | peak MiB | token F1 | boundary F1 | lexicon F1 | "
             "wordseg's token F | to published F1 | to final - 1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    order = {g: i for i, g in enumerate(config["grammars"])}
    for run in sorted(runs, key=lambda r: (order.get(r["grammar"], len(order)), r["system"], r["iterations"])):
        final = run["final"]
        published = run.get("time_to_published")
        sweeps = (f"{run['iterations']} (stopped; of {run['planned_iterations']})" if run.get("stopped_early")
                  else f"{run['iterations']}")
        wall, peak = (("–" if run[key] is None else f"{run[key]:.0f}") for key in ("wall_seconds", "peak_rss_mib"))
        lines.append(f"| {run['grammar']} | {run['system']} | {run['seed']} | {sweeps} | "
                     f"{run['cpu_seconds']:.0f} | {wall} | {peak} | "
                     + " | ".join(f"{100 * final[f'{s}_f1']:.1f}" for s in SCORES)
                     + f" | {_wordseg_token(run)} | {_when(published) if published else '–'} | "
                     + (_when(run['time_to_final_less_one_point']) if run.get('time_to_final_less_one_point')
                        else "–") + " |")
    grammars = [g for g in config["grammars"] if any(r["grammar"] == g for r in runs)]
    return lines + [""] + [f"![{g}: ours against the reference](token_f1_against_reference_{g}.png)"
                           for g in grammars] + [""]


def plot_against_reference(folder, block, runs, config):
    """Token F1 against seconds of our Brent runs (mean curve over seeds) and of the reference's runs."""
    paths = []
    for grammar in config["grammars"]:
        theirs = [r for r in runs if r["grammar"] == grammar]
        ours = [r for r in block["runs"] if r["grammar"] == grammar and r["curve"]]
        if not theirs:
            continue
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for label in _labels(ours, config["algorithms"]):
            chosen = [r["curve"] for r in ours if _label(r) == label]
            ax.plot(mean_curve(chosen, "seconds"), 100 * mean_curve(chosen, "token_f1"), marker=".", label=label)
        for run in theirs:
            ax.plot([p["cpu_seconds"] for p in run["curve"]], [100 * p["token_f1"] for p in run["curve"]],
                    linestyle="--", label=f"{run['system']} (CPU s)")
        if grammar in PUBLISHED_TOKEN_F1:
            ax.axhline(100 * PUBLISHED_TOKEN_F1[grammar], linestyle=":", color="gray")
        ax.set_xscale("log")
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("token F1 (%)")
        ax.set_title(f"Brent, {grammar}: ours and the reference (dotted: published)")
        ax.legend(fontsize=6)
        paths.append(_save(fig, folder / f"token_f1_against_reference_{grammar}.png"))
    return paths


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


def _write(folder, config, results, plots=True, previous=None):
    """results.json and table.md (after every run, so that a long run shows its progress) and the plots;
    `previous`: an earlier results.json (parsed) whose runs are kept (``--append``)."""
    if previous is not None:
        config, results = _appended(previous, config, results)
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
    if "brent" in results:
        plot_against_reference(folder, results["brent"], reference_runs(), config)
    return text


def _appended(old, config, results):
    """The runs of an earlier results.json (`old`, its parsed JSON) with this command's added (its runs replace
    the old ones of the same corpus, grammar, algorithm label and seed) and the commands joined."""
    import copy

    merged = copy.deepcopy(old["results"])
    for corpus, block in results.items():
        kept = merged.setdefault(corpus, {"runs": []})
        new = {(r["grammar"], _label(r), r["seed"]) for r in block["runs"]}
        runs = [r for r in kept["runs"] if (r["grammar"], _label(r), r["seed"]) not in new] + block["runs"]
        kept.update({key: value for key, value in block.items() if key != "runs"})
        kept["runs"] = runs
    joined = dict(config)
    joined["command"] = old["config"]["command"] + "; " + config["command"]
    for key in ("grammars", "algorithms", "corpora"):
        joined[key] = list(dict.fromkeys(old["config"].get(key, []) + config[key]))
    return joined, merged


def run_from_command_line(args):
    """``cvbayes experiment wordseg`` (module notes): ``--grammars``, ``--algorithms``, ``--seeds`` (default 3),
    ``--iterations`` (vb, cvi; default 50), ``--cgs-iterations`` (mcmc sweeps), ``--corpora``, ``--utterances``,
    ``--quick``, ``--out`` (results under OUT/wordseg), ``--seed`` (the first seed: seeds SEED..SEED+N-1)."""
    from ..models.adaptor import AdaptorGrammar
    from ..models.adaptor import parse_anneal

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
    if getattr(args, "concentration", None) is not None:
        options["b"] = args.concentration
    anneal = None if getattr(args, "anneal", None) is None else parse_anneal(args.anneal)
    resample_tables = getattr(args, "resample_tables", False)
    init = getattr(args, "init", None)
    AdaptorGrammar("unigram", anneal=anneal, **options)      # checks the values before any run
    folder = Path("docs/results" if args.out is None else args.out) / "wordseg"
    folder.mkdir(parents=True, exist_ok=True)
    command = ("cvbayes " + " ".join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith("cvbayes")
               else "cvbayes experiment wordseg")
    config = {"command": command, "grammars": grammars, "algorithms": algorithms, "seeds": seeds,
              "iterations": iterations, "corpora": corpora, "utterances": limit,
              "model_options": {**options, "anneal (mcmc)": anneal, "resample_tables (mcmc)": resample_tables,
                                "init (vb, cvi)": init},
              "published": {"source": PUBLISHED, "token_f1": PUBLISHED_TOKEN_F1},
              "evaluation": "training utterances (as the published systems)"}
    previous = None
    if getattr(args, "append", False) and (folder / "results.json").is_file():
        import json

        previous = json.loads((folder / "results.json").read_text())
    results = {}
    size = None
    for corpus_name in corpora:
        corpus = load_corpus(corpus_name, limit if limit is not None else size)
        size = size or len(corpus)   # the second language: as many utterances as Brent
        results[corpus_name] = {"data": {"description": corpus.description, "utterances": len(corpus),
                                         "words": corpus.n_segments, "symbols": corpus.n_symbols},
                                "baselines": baselines(corpus, corpus_vowels(corpus_name)), "runs": []}
        for grammar in grammars:
            text = grammar_for(corpus_name, grammar, corpus)
            unknown = AdaptorGrammar(text).underivable_symbol(corpus.symbols)
            if unknown is not None:     # colloc-syllable's terminals are Brent's phonemes
                note = (f"{grammar} (its terminals do not include this corpus's symbol {unknown[1]!r}, e.g. "
                        f"utterance {unknown[0] + 1})")
                results[corpus_name].setdefault("skipped", []).append(note)
                if not args.quiet:
                    print(f"wordseg: {corpus_name}: not run: {note}", file=sys.stderr)
                continue
            for seed in seeds:
                for algorithm in algorithms:
                    # vb from the empty start draws nothing: its restarts would be one run repeated
                    restarts = 1 if quick or init == "empty" else RESTARTS.get(algorithm, 1)
                    run = run_one(corpus, grammar, algorithm, seed, iterations[algorithm], restarts,
                                  {**options, "anneal": anneal if algorithm == "mcmc" else None,
                                   "resample_tables": resample_tables and algorithm == "mcmc",
                                   "init": init if algorithm != "mcmc" else None},
                                  None if text == grammar else text)
                    results[corpus_name]["runs"].append(run)
                    if not args.quiet:
                        s = run["scores"]
                        print(f"{corpus_name} {grammar} {algorithm} seed {seed}: token F1 "
                              f"{100 * s['token']['f1']:.1f}, boundary {100 * s['boundary']['f1']:.1f}, lexicon "
                              f"{100 * s['lexicon']['f1']:.1f}; {run['seconds']:.1f} s", file=sys.stderr)
                    _write(folder, config, results, plots=False, previous=previous)
    text = _write(folder, config, results, previous=previous)
    if not args.quiet and not getattr(args, "json", False):
        print(text)
    return results


EXPERIMENTS = {"wordseg": run_from_command_line}

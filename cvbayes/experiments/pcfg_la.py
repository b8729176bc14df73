"""Fig. 4.2: EM, VB and CVI for PCFGs with latent annotations, scored by bracket F1 (thesis §4.5.3).

**The trees are converted, not the Penn Treebank.** No Penn constituency treebank is reachable here, so
the experiment trains on UD English EWT's dependency trees turned into phrase-structure trees by
`cvbayes.data.ud_to_penn` (12,544 training, 2,001 dev, 2,077 test sentences), and its F1 is not
comparable with the thesis's WSJ §23 numbers, which the table shows beside ours only as a reference for
the ordering of the algorithms.

Protocol (thesis §4.5.3, after Petrov et al. 2006): right binarisation with the X-bar labels of
Petrov et al. (horizontal markovisation 0, no parent annotation), words seen once replaced by
signatures, EM from the treebank grammar split into H subtypes with 1 % noise, VB and CVI from the
expected counts of that start; the same number of passes for every algorithm.  For each H:

* alpha from ``alphas`` (default {1, 0.1, 0.01, 0.001}) is chosen for VB and CVI by labelled F1 on the
  development set with the first seed; EM, whose MAP tables are the MLE for every alpha <= 1, has no
  alpha to choose;
* ``runs`` seeds (the thesis: 5; seeds ``seed`` .. ``seed + runs - 1``) are then run at that alpha and one
  is kept: with ``select="dev"`` the best on the development set (the thesis: "the best grammar tested on
  the development set from 5 random runs"), with ``select="objective"`` the best last training objective
  (as ``n_init`` does; only the alpha grid is then parsed); at H = 1 the annotations are observed, every
  seed gives the same grammar, and one run is made;
* the kept grammar of each algorithm parses the whole test set; labelled precision, recall, F1 and exact
  match are scored with evalb's conventions (`cvbayes.metrics.parsing`; punctuation deleted by the gold
  tags, which also replace the predicted preterminals, as tags are not scored).

The defaults are the thesis's protocol (`FULL_PROTOCOL`) on the whole dev split; ``dev_sentences``
takes every k-th dev sentence instead, and what a run cuts is written into its table.  The test set is
never used to choose anything.  Parsing is coarse-to-fine (`cvbayes.trees.latent_parse`): the coarse
pass with the treebank grammar runs once per sentence set and serves every H and algorithm; its share
of kept chart items and time are reported, as are the fine pass's sentences per second at every H
(``speed_subtypes``, default the run's: an H not in the run gets a 10-pass EM grammar of its own,
enough to time its parser).  The results are written after every H, so a run stopped early keeps the
H it finished.
"""
from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data import treebank_file
from ..data.trees import Tree
from ..data.ud_to_penn import convert_conllu
from ..files import write_json, write_text
from ..metrics.parsing import bracket_scores
from ..models.pcfg_la import PCFGLA
from ..trees.latent_parser import prune_charts
from ..trees.treebank import ROOT, prepare_treebank
from .results import plain_json

ALGORITHMS = ("em", "vb", "cvi")
SPEED_EM_PASSES = 10
EXACT_SENTENCES = 50

# Fig. 4.2 (WSJ §23): labelled P, R, F1 and exact match at H = 2; F1 at H = 4, 8, 16.
THESIS = {
    "em": {2: {"precision": 75.84, "recall": 72.92, "f1": 74.35, "exact": 11.13}, 4: {"f1": 82.59},
           8: {"f1": 85.48}, 16: {"f1": 87.42}},
    "vb": {2: {"precision": 76.98, "recall": 73.32, "f1": 75.11, "exact": 11.49}, 4: {"f1": 82.62},
           8: {"f1": 85.46}, 16: {"f1": 87.33}},
    "cvi": {2: {"precision": 78.85, "recall": 76.98, "f1": 77.90, "exact": 12.56}, 4: {"f1": 83.36},
            8: {"f1": 86.55}, 16: {"f1": 88.06}},
}
# The protocol: what a smaller run leaves out is written into its table (`cuts`).
FULL_PROTOCOL = {"subtypes": (1, 2, 4, 8), "alphas": (1.0, 0.1, 0.01, 0.001), "runs": 5, "iterations": 50}
SELECTIONS = ("dev", "objective")
SELECTED_BY = {"dev": "by dev F1 (the thesis)", "objective": "by the last training objective"}
CONVERTED_NOTE = ("Trees: UD English EWT converted to phrase structure (cvbayes.data.ud_to_penn), NOT the Penn "
                  "Treebank; the thesis's numbers are WSJ §23 and only a reference for the ordering.")


def strip_root(tree: Tree) -> Tree:
    """The converted tree under ROOT, as evalb scores it."""
    return tree.children[0] if tree.label == ROOT and len(tree.children) == 1 else tree


def with_gold_tags(predicted: Tree | None, gold: Tree) -> Tree:
    """The predicted tree with the gold preterminal labels (tags are not scored, and punctuation is deleted
    by the gold tags); a flat ``(X (tag word) ...)`` for a sentence without a parse."""
    tags = [node.label for node in gold.subtrees() if node.is_preterminal]
    if predicted is None:
        return Tree("X", [Tree(tag, [word]) for tag, word in zip(tags, gold.leaves())])
    labels = iter(tags)

    def rebuild(node):
        if node.is_preterminal:
            return Tree(next(labels), list(node.children))
        return Tree(node.label, [rebuild(child) for child in node.children])

    return rebuild(predicted)


def _untrained(subtypes) -> list[str]:
    missing = [h for h in FULL_PROTOCOL["subtypes"] if h not in subtypes]
    return [f"H = {', '.join(map(str, missing))} not trained (the issue asks H = 1, 2, 4, 8)"] if missing else []


def cuts(settings, n_dev) -> list[str]:
    """How a run's settings fall short of `FULL_PROTOCOL` and of the whole dev set (empty: nothing cut)."""
    found = _untrained(settings["subtypes"])
    left_out = [a for a in FULL_PROTOCOL["alphas"] if a not in settings["alphas"]]
    if left_out:
        found.append(f"alpha {', '.join(f'{a:g}' for a in left_out)} not tried")
    if settings["runs"] < FULL_PROTOCOL["runs"]:
        found.append(f"best of {settings['runs']} runs, not {FULL_PROTOCOL['runs']}")
    if settings["iterations"] < FULL_PROTOCOL["iterations"]:
        found.append(f"{settings['iterations']} passes, not {FULL_PROTOCOL['iterations']}")
    if settings["dev_sentences"] < n_dev:
        found.append(f"alpha and the run chosen on {settings['dev_sentences']} of the {n_dev} dev sentences")
    if settings.get("select", "dev") != "dev":
        found.append("the run kept by its training objective, not by dev F1")
    return found


def score(trees, gold) -> dict:
    """Labelled P, R, F1 and exact match (percent) and the sentences without a parse."""
    scores = bracket_scores([with_gold_tags(tree, reference) for tree, reference in zip(trees, gold)], gold)
    return {"precision": 100 * scores.precision, "recall": 100 * scores.recall, "f1": 100 * scores.f1,
            "exact": 100 * scores.exact_match, "no_parse": sum(tree is None for tree in trees),
            "sentences": len(gold)}


def load_converted(split: str) -> list[Tree]:
    """Converted EWT trees of a split (ROOT on top)."""
    return [sentence.tree for sentence in convert_conllu(treebank_file("ewt", split))]


class _Evaluator:
    """Parses a fixed set of sentences with one shared coarse pass and scores the trees."""

    def __init__(self, grammar, gold, threshold, decoder):
        self.gold = gold
        self.sentences = [tree.leaves() for tree in gold]
        self.decoder = decoder
        self.pruning = prune_charts(grammar, self.sentences, threshold)

    def pruning_of(self, n):
        """The pruning of the first n sentences."""
        pruning = self.pruning
        return pruning._replace(lengths=pruning.lengths[:n], mask_offsets=pruning.mask_offsets[:n + 1])

    def __call__(self, model):
        batch = model.parser(self.decoder).parse(self.sentences, self.pruning)
        result = score(batch.trees, self.gold)
        result.update(parse_seconds=batch.seconds, sentences_per_second=len(self.gold) / batch.seconds,
                      retried=batch.retried, as_unknown=batch.as_unknown)
        return result


def run(out="docs/results/fig4_2", subtypes=FULL_PROTOCOL["subtypes"], alphas=FULL_PROTOCOL["alphas"],
        runs=FULL_PROTOCOL["runs"], iterations=FULL_PROTOCOL["iterations"], dev_sentences=None, seed=0,
        select="dev", threshold=1e-4, decoder="max-rule", speed_subtypes=None, quiet=False):
    """Run the experiment and write results.json, table.md and fig4_2.png under ``out`` (``dev_sentences``
    None: the whole dev split)."""
    if select not in SELECTIONS:
        raise ValueError(f"select must be one of {SELECTIONS}, got {select!r}")
    started = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda *args: None) if quiet else print
    say(CONVERTED_NOTE)
    train, dev, test = (load_converted(split) for split in ("train", "dev", "test"))
    prepared = prepare_treebank(train)
    dev_sentences = dev_sentences or len(dev)
    step = max(1, len(dev) // dev_sentences)
    dev_gold = [strip_root(tree) for tree in dev[::step][:dev_sentences]]
    test_gold = [strip_root(tree) for tree in test]
    grammar = prepared.grammar
    prune_charts(grammar, [dev_gold[0].leaves()], threshold)  # compiles the coarse pass outside its timings
    development = _Evaluator(grammar, dev_gold, threshold, decoder)
    evaluation = _Evaluator(grammar, test_gold, threshold, decoder)
    say(f"data: {len(train)} training trees, {grammar.n_symbols} symbols, {len(grammar.binary_rules)} binary rules; "
        f"dev subset {len(dev_gold)} of {len(dev)} sentences (every {step}th); test {len(test_gold)}; coarse pass "
        f"keeps {100 * evaluation.pruning.kept_share:.2f} % of the test chart ({evaluation.pruning.seconds:.0f} s)")
    results = {"note": CONVERTED_NOTE, "settings": {
        "subtypes": list(subtypes), "alphas": list(alphas), "runs": runs, "iterations": iterations, "seed": seed,
        "select": select, "dev_sentences": len(dev_gold), "dev_step": step, "dev_split": len(dev),
        "test_sentences": len(test_gold), "threshold": threshold,
        "decoder": decoder, "horizontal": 0, "vertical": 1, "min_count": 2},
        "grammar": {"symbols": grammar.n_symbols, "binary": len(grammar.binary_rules),
                    "unary": len(grammar.unary_rules), "lexical": len(grammar.lexical_rules),
                    "words": grammar.n_words},
        "pruning": {name: {"kept_share": e.pruning.kept_share, "seconds": e.pruning.seconds,
                           "sentences": len(e.gold)} for name, e in (("dev", development), ("test", evaluation))},
        "rows": [], "runs": [], "speed": []}
    planned = cuts(results["settings"], len(dev))
    if planned:
        say("cut from the full protocol: " + "; ".join(planned))
    selected = {}
    seeds = {h: list(range(seed, seed + (1 if h == 1 else runs))) for h in subtypes}
    fits = sum(len(seeds[h]) + 2 * (len(alphas) + len(seeds[h]) - 1) for h in subtypes)
    bar = tqdm(total=fits, desc="fig4.2 fits", disable=quiet)

    def fit(h, algorithm, alpha, run_seed, parse_dev=True):
        model = PCFGLA(n_subtypes=h, alpha=alpha, algorithm=algorithm, n_iter=iterations,
                       random_state=run_seed).fit(prepared)
        record = {"subtypes": h, "algorithm": algorithm, "alpha": alpha, "seed": run_seed,
                  "train_seconds": model.train_seconds,
                  "seconds_per_pass": float(np.median([r.seconds for r in model.history_])),
                  "objective": model.history_[-1].objective, "dev": development(model) if parse_dev else None,
                  "peak_rss_mb": _peak_rss_mb()}
        results["runs"].append(record)
        bar.update()
        return model, record

    def kept(candidates):
        """The run `select` keeps (dev-parsed if it was not) and the seed of the best objective."""
        def key(pair):
            return pair[1]["objective"] if select == "objective" else pair[1]["dev"]["f1"]

        model, record = max(candidates, key=key)
        if record["dev"] is None:
            record["dev"] = development(model)
        return model, record, max(candidates, key=lambda pair: pair[1]["objective"])[1]["seed"]

    for h in subtypes:
        first, *rest = seeds[h]
        for algorithm in ALGORITHMS:
            if algorithm == "em":
                alpha, candidates = 1.0, [fit(h, algorithm, 1.0, first, parse_dev=select == "dev")]
            else:
                grid = [fit(h, algorithm, alpha, first) for alpha in alphas]
                alpha = max(grid, key=lambda pair: pair[1]["dev"]["f1"])[1]["alpha"]
                candidates = [pair for pair in grid if pair[1]["alpha"] == alpha]
            candidates += [fit(h, algorithm, alpha, s, parse_dev=select == "dev") for s in rest]
            model, record, objective_seed = kept(candidates)
            test_scores = evaluation(model)
            selected[h, algorithm] = model, record
            row = {"subtypes": h, "algorithm": algorithm, "alpha": record["alpha"], "seed": record["seed"],
                   "objective_seed": objective_seed, "dev_f1": record["dev"]["f1"],
                   "train_seconds": record["train_seconds"], "seconds_per_pass": record["seconds_per_pass"],
                   "peak_rss_mb": _peak_rss_mb(), **test_scores}
            results["rows"].append(row)
            say(f"H={h} {algorithm:>3}: alpha {record['alpha']:g} seed {record['seed']}  dev F1 "
                f"{record['dev']['f1']:.2f}  test P {row['precision']:.2f} R {row['recall']:.2f} F1 {row['f1']:.2f} "
                f"EX {row['exact']:.2f}  train {row['train_seconds']:.0f} s ({row['seconds_per_pass']:.2f} s a pass)"
                f"  parse {row['parse_seconds']:.0f} s  peak {row['peak_rss_mb']:.0f} MB")
        _write(out, results, started)
    bar.close()
    results["speed"] = _speed(prepared, selected, development, decoder, speed_subtypes or subtypes, say)
    _write(out, results, started)
    say(table(results))
    return results


def _write(out, results, started):
    """results.json, table.md and the plot of the H finished so far (the cuts name the others)."""
    settings = results["settings"]
    results["cuts"] = _untrained({row["subtypes"] for row in results["rows"]}) + cuts(
        {**settings, "subtypes": FULL_PROTOCOL["subtypes"]}, settings["dev_split"])
    results["leads"] = _leads(results["rows"])
    results["seconds"] = time.perf_counter() - started
    write_json(out / "results.json", plain_json(results), indent=1)
    write_text(out / "table.md", table(results))
    plot(out / "fig4_2.png", results)


def _peak_rss_mb():
    """The process's peak resident memory so far (MB; H runs in increasing order, so a row's value is its
    H's peak or an earlier larger H's)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def combine(parts, out):
    """One results.json, table and plot from runs of the same settings on different H (say two processes
    side by side, ``--la-subtypes 1 2`` and ``--la-subtypes 4``), rows in increasing H."""
    loaded = [json.loads((Path(part) / "results.json").read_text()) for part in parts]
    first = loaded[0]

    def but_h(settings):
        return {key: value for key, value in settings.items() if key != "subtypes"}

    if any(but_h(part["settings"]) != but_h(first["settings"]) for part in loaded):
        raise ValueError(f"{', '.join(map(str, parts))}: run with different settings (other than H)")
    def finished(part):
        return sorted({row["subtypes"] for row in part["rows"]})

    subtypes = sorted(h for part in loaded for h in finished(part))
    combined = {**first, "settings": {**first["settings"], "subtypes": subtypes}}
    for key in ("rows", "runs", "speed"):
        combined[key] = sorted((item for part in loaded for item in part[key]), key=lambda item: item["subtypes"])
    combined["parts"] = [{"subtypes": finished(part), "minutes": part["seconds"] / 60} for part in loaded]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write(out, combined, time.perf_counter() - max(part["seconds"] for part in loaded))
    return combined


def _speed(prepared, selected, development, decoder, speed_subtypes, say):
    """Sentences per second of the fine pass on the development subset at each H (the coarse pass, shared
    by all, apart), and of the exact parser (no pruning) on its first `EXACT_SENTENCES` sentences, with
    the F1 of both there."""
    speed = []
    sentences = development.sentences[:EXACT_SENTENCES]
    gold = development.gold[:EXACT_SENTENCES]
    for h in speed_subtypes:
        if (h, "cvi") in selected:
            model, record = selected[h, "cvi"]
            source, scores = "the selected CVI grammar", record["dev"]
        else:
            model = PCFGLA(n_subtypes=h, algorithm="em", n_iter=SPEED_EM_PASSES).fit(prepared)
            source, scores = f"an EM grammar after {SPEED_EM_PASSES} passes", development(model)
        parser = model.parser(decoder)
        exact = parser.parse(sentences, None)
        pruned = parser.parse(sentences, development.pruning_of(len(sentences)))
        speed.append({"subtypes": h, "grammar": source, "decoder": decoder,
                      "exact_per_second": len(sentences) / exact.seconds, "exact_sentences": len(sentences),
                      "exact_f1": score(exact.trees, gold)["f1"], "pruned_f1": score(pruned.trees, gold)["f1"],
                      "sentences": scores["sentences"], "fine_seconds": scores["parse_seconds"],
                      "sentences_per_second": scores["sentences_per_second"],
                      "with_coarse_per_second": scores["sentences"] / (scores["parse_seconds"]
                                                                       + development.pruning.seconds),
                      "kept_share": development.pruning.kept_share, "dev_f1": scores["f1"]})
        say(f"speed H={h}: {speed[-1]['sentences_per_second']:.1f} sentences/s (fine pass), "
            f"{speed[-1]['with_coarse_per_second']:.1f} with the coarse pass, "
            f"{speed[-1]['exact_per_second']:.1f} without pruning ({source})")
    return speed


def _leads(rows):
    """At each H: whether CVI's test F1 is above both EM's and VB's, and whether CVI >= VB >= EM (the
    thesis's order at H = 2; at H = 8 and 16 its VB falls below EM)."""
    by_h = {}
    for row in rows:
        by_h.setdefault(row["subtypes"], {})[row["algorithm"]] = row["f1"]
    return {h: {"cvi_leads": all(f1["cvi"] > f1[other] for other in ("em", "vb")),
                "cvi_vb_em": f1["cvi"] >= f1["vb"] >= f1["em"], "f1": f1}
            for h, f1 in by_h.items() if set(f1) == set(ALGORITHMS)}


def table(results) -> str:
    """The Markdown table: our test scores on converted EWT beside the thesis's WSJ §23 numbers."""
    settings = results["settings"]
    lines = [
        "# Fig. 4.2: PCFG-LA with EM, VB and CVI (thesis §4.5.3)", "",
        f"**{results['note']}**", "",
        f"Protocol: {settings['iterations']} passes for every algorithm; alpha from {settings['alphas']} chosen for "
        f"VB and CVI on {settings['dev_sentences']} dev sentences (every {settings['dev_step']}th) with seed "
        f"{settings['seed']}; then the best of {settings['runs']} seeds ({settings['seed']}.."
        f"{settings['seed'] + settings['runs'] - 1}) {SELECTED_BY[settings['select']]} (H = 1: "
        f"one run, the annotations being observed); the kept grammar parses all {settings['test_sentences']} "
        f"test sentences ({settings['decoder']} decoding, coarse-to-fine pruning at posterior "
        f"{settings['threshold']:g}). Labelled scores, evalb conventions.", "",
        "Cut from the full protocol (H = 1, 2, 4, 8; alpha in {1, 0.1, 0.01, 0.001}; best of 5 runs; 50 passes; "
        "the whole dev set) to fit the time budget: " + ("; ".join(results.get("cuts", [])) or "nothing") + ".", "",
        "Seed: the kept run's; 'best obj.' the seed of the best training objective among the runs at that alpha. "
        "s/pass: the median pass of the kept run; peak MB: the process's peak resident memory after that row.", "",
        "| H | algorithm | alpha | seed | best obj. | dev F1 | test LP | LR | F1 | EX | no parse | train s | s/pass "
        "| peak MB | parse s | thesis LP | LR | F1 | EX |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in results["rows"]:
        thesis = THESIS[row["algorithm"]].get(row["subtypes"], {})
        reference = " | ".join(f"{thesis[key]:.2f}" if key in thesis else "" for key in
                               ("precision", "recall", "f1", "exact"))
        lines.append(f"| {row['subtypes']} | {row['algorithm']} | {row['alpha']:g} | {row['seed']} | "
                     f"{row['objective_seed']} | {row['dev_f1']:.2f} | {row['precision']:.2f} | {row['recall']:.2f} | "
                     f"{row['f1']:.2f} | {row['exact']:.2f} | {row['no_parse']} | {row['train_seconds']:.0f} | "
                     f"{row['seconds_per_pass']:.2f} | {row['peak_rss_mb']:.0f} | {row['parse_seconds']:.0f} | "
                     f"{reference} |")
    lines += ["", "Test F1 order at each H: does CVI lead both, and does CVI >= VB >= EM hold?", ""]
    for h, lead in results["leads"].items():
        f1 = lead["f1"]
        lines.append(f"- H = {h}: CVI leads {'yes' if lead['cvi_leads'] else 'no'}; CVI >= VB >= EM "
                     f"{'yes' if lead['cvi_vb_em'] else 'no'} (EM {f1['em']:.2f}, VB {f1['vb']:.2f}, "
                     f"CVI {f1['cvi']:.2f})")
    pruning = results["pruning"]
    lines += ["", "Parsing speed (fine pass on the development subset; the coarse pass with the treebank grammar "
              f"runs once per sentence set: {pruning['dev']['seconds']:.0f} s for the {pruning['dev']['sentences']} "
              f"dev sentences, keeping {100 * pruning['dev']['kept_share']:.2f} % of the chart items; "
              f"{pruning['test']['seconds']:.0f} s for the test set, keeping "
              f"{100 * pruning['test']['kept_share']:.2f} %):", "",
              "| H | grammar | sentences/s (fine pass) | sentences/s (with coarse pass) | dev F1 "
              f"| sentences/s without pruning ({EXACT_SENTENCES} sentences) | F1 there, exact | F1 there, pruned |",
              "|---|---|---|---|---|---|---|---|"]
    for row in results["speed"]:
        lines.append(f"| {row['subtypes']} | {row['grammar']} | {row['sentences_per_second']:.1f} | "
                     f"{row['with_coarse_per_second']:.1f} | {row['dev_f1']:.2f} | {row['exact_per_second']:.1f} | "
                     f"{row['exact_f1']:.2f} | {row['pruned_f1']:.2f} |")
    lines += ["", f"Total wall time {results['seconds'] / 60:.1f} min on the shared 2-core machine"
              + ("; parts run side by side: " + ", ".join(f"H = {', '.join(map(str, part['subtypes']))} "
                                                      f"{part['minutes']:.1f} min" for part in results["parts"])
                 if "parts" in results else "") + ".", ""]
    return "\n".join(lines)


def plot(path, results):
    """Test F1 against H for each algorithm (solid), the thesis's WSJ numbers dashed."""
    from .plots import _save, plt  # matplotlib only when plotting: the command line imports this module

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for algorithm, colour in zip(ALGORITHMS, ("tab:blue", "tab:orange", "tab:green")):
        rows = [row for row in results["rows"] if row["algorithm"] == algorithm]
        ax.plot([row["subtypes"] for row in rows], [row["f1"] for row in rows], marker="o", color=colour,
                label=f"{algorithm} (converted EWT test)")
        thesis = sorted(THESIS[algorithm].items())
        ax.plot([h for h, _ in thesis], [values["f1"] for _, values in thesis], linestyle="--", marker="x",
                color=colour, alpha=0.6, label=f"{algorithm} (thesis, WSJ §23)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("subtypes H")
    ax.set_ylabel("labelled F1 (%)")
    ax.set_title("PCFG-LA: EM, VB, CVI (converted EWT trees, not the PTB)")
    ax.legend(fontsize=7)
    return _save(fig, path)


def run_from_command_line(args):
    """``cvbayes experiment fig4.2``: options --la-subtypes, --la-alphas, --seeds (runs, default 5), --seed,
    --la-iterations, --la-dev-sentences, --la-select, --la-threshold, --la-decoder, --out (default
    docs/results/fig4_2); the defaults are `FULL_PROTOCOL` on the whole dev split.  --la-combine FOLDER...
    writes one table under --out from runs on different H instead (`combine`)."""
    out = args.out if args.out != "docs/results" else "docs/results/fig4_2"
    if args.la_combine:
        combine(args.la_combine, out)
        return
    run(out=out, subtypes=tuple(args.la_subtypes or FULL_PROTOCOL["subtypes"]),
        alphas=tuple(args.la_alphas or FULL_PROTOCOL["alphas"]), runs=args.seeds or FULL_PROTOCOL["runs"],
        iterations=args.la_iterations, dev_sentences=args.la_dev_sentences, seed=args.seed, select=args.la_select,
        threshold=args.la_threshold, decoder=args.la_decoder, quiet=args.quiet)


EXPERIMENTS = {"fig4.2": run_from_command_line}

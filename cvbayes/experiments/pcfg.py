"""PCFG experiments (thesis ch. 4): Fig. 4.1 (left) on morphology, and a planted grammar.

``fig4.1-morphology`` re-runs the Sesotho verb experiment of thesis §4.5.1 (Johnson, Griffiths and
Goldwater 2007) on the data reachable here.  The Sesotho corpus (1,671 verb types from CHILDES) is
not; Hebrew word types with gold prefix|stem|suffix segmentation (SPMRL) and English derived words
(MorphyNet) are (`cvbayes.data.load_morphology`).  A verb-type list holds the inflected forms of its
verbs, so its stems recur; a uniform sample of ~1,700 types from 24k Hebrew or 213k English types
hardly repeats a stem, and there the learners segment far worse (CVI's train F1 28.7 on Hebrew, one
probe).  So the sample is drawn by **stem families**: the types sharing their longest gold morph, families of
two types or more drawn at random (seed 0) until ~1,700 types.  The gold segmentation chooses the
sample; the learners never see it.  A grammar in the spirit of eq. 4.25-4.29 (`MORPHOLOGY_GRAMMAR`),
prior 1e-5, a 90/10 split, five random starts.  Test perplexity per word type is taken under the
posterior mean of each run's counts (for EM: its expected counts smoothed by alpha, since its MLE
gives unseen substrings probability zero), against iterations and training seconds (scoring
excluded); segmentation F1 is over the morph boundaries of the Viterbi parses.

``pcfg-planted`` draws sentences from a known CNF grammar (`PLANTED_GRAMMAR`) and fits a full CNF
grammar over as many nonterminals with every algorithm: held-out per-word log-likelihood beside the
true grammar's.
"""
from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..data import load_morphology
from ..files import write_json, write_text
from ..models.pcfg import PCFG
from ..trees import compile_grammar, make_tables, parse_grammar
from ..trees.inside_outside import batch_log_z, chart_chunks
from .plots import _save, plt
from .results import plain_json, seed_range

# A word is optional prefixes, a stem and optional suffixes; every nonterminal rewrites to any
# substring (thesis eq. 4.25-4.29: Word -> V | V M | SM V M | SM T V M | SM T OM V M).
MORPHOLOGY_GRAMMAR = """\
Word -> Stem
Word -> Prefix Stem
Word -> Stem Suffix
Word -> Prefix Stem Suffix
Word -> Prefix Prefix Stem
Word -> Stem Suffix Suffix
Prefix -> <any>
Stem -> <any>
Suffix -> <any>
"""
PRIOR = 1e-5                 # Johnson et al. (2007), thesis §4.5.1
MORPHOLOGY_TYPES = 1700      # the thesis: 1,671 Sesotho verb types
TEST_SHARE = 0.1
LANGUAGES = ("hebrew", "english")
MORPHOLOGY_ALGORITHMS = ("em", "vb", "cvi", "mh")
EVALUATIONS = 25             # log-spaced perplexity points along a run (every iteration of short ones)

THESIS = {
    "data": "1,671 unsegmented Sesotho verb types (CHILDES), 90/10 split, prior 1e-5, 5 random starts",
    "cvi": {"iterations": 10, "minutes": 1.5, "f1": 29.8},
    "mh": {"iterations": 1000, "minutes": 20.0, "f1": 31.3},
    "finding": ("MH (no annealing) takes roughly 1,000 iterations to converge, CVI 10, in a fraction of the "
                "time (1.5 against 20 minutes); final perplexities differ little; segmentation F1 29.8 (CVI) "
                "against 31.3 (MH)."),
}


def _command(name):
    if sys.argv and sys.argv[0].endswith("cvbayes"):
        return "cvbayes " + " ".join(sys.argv[1:])
    return f"cvbayes experiment {name}"


# ------------------------------------------------------------------ morphology data
def stem_families(data, n_types=MORPHOLOGY_TYPES, seed=0):
    """Types sharing their longest gold morph ("stem"), whole families of two types or more drawn
    uniformly (``default_rng(seed)``) until at least `n_types` types; returns (subset, families drawn,
    families available)."""
    families = defaultdict(list)
    for i, parts in enumerate(data.segments):
        families["".join(max(parts, key=len))].append(i)
    keys = sorted(key for key, members in families.items() if len(members) >= 2)
    chosen, drawn = [], 0
    for j in np.random.default_rng(seed).permutation(len(keys)):
        if len(chosen) >= n_types:
            break
        chosen.extend(families[keys[j]])
        drawn += 1
    subset = data.subset(sorted(chosen))
    subset.description = (f"{data.description}; {drawn} stem families (types sharing their longest gold morph, "
                          f"of the {len(keys)} with two types or more) drawn with seed {seed}")
    return subset, drawn, len(keys)


def split(n, seed=0, test_share=TEST_SHARE):
    """(train, test) indices: a random `test_share` held out (``default_rng(seed)``)."""
    order = np.random.default_rng(seed).permutation(n)
    n_test = max(1, int(round(test_share * n)))
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def tree_boundaries(tree):
    """Morph boundaries of a parse: the token positions where one lexical node ends and the next
    begins (`Tree` nodes whose children are all tokens are the morphs)."""
    cuts, position = [], 0
    for node in tree.subtrees():
        if node.is_lexical:
            position += len(node.children)
            cuts.append(position)
    return set(cuts[:-1])


def boundary_scores(trees, gold):
    """Precision, recall and F1 of morph boundaries, micro-averaged over words (a word without a parse
    predicts no boundary)."""
    hits = predicted = wanted = 0
    for tree, boundaries in zip(trees, gold):
        found = set() if tree is None else tree_boundaries(tree)
        hits += len(found & set(boundaries))
        predicted += len(found)
        wanted += len(boundaries)
    precision = hits / predicted if predicted else 0.0
    recall = hits / wanted if wanted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def morphology_data(language, n_types=MORPHOLOGY_TYPES, sample="families"):
    """The sample of one language ("families": `stem_families`; "uniform": `n_types` types drawn
    uniformly, the control), split 90/10, as character lists and gold boundaries."""
    if sample == "families":
        data, drawn, available = stem_families(load_morphology(language), n_types)
    elif sample == "uniform":
        data, drawn, available = load_morphology(language, sample=n_types, seed=0), None, None
    else:
        raise ValueError(f"sample must be 'families' or 'uniform', got {sample!r}")
    words = [list(symbols) for symbols in data.symbols]
    gold = data.boundaries()
    train, test = split(len(words))
    info = {"description": data.description, "types": len(words), "train": len(train), "test": len(test),
            "families": drawn, "families_available": available,
            "mean_characters": float(np.mean([len(w) for w in words])),
            "morphs_per_type": data.n_segments / len(words),
            "types_with_one_morph": int(sum(len(b) == 0 for b in gold))}
    pick = lambda ids: [words[i] for i in ids]  # noqa: E731
    return info, (pick(train), [gold[i] for i in train]), (pick(test), [gold[i] for i in test])


def run_morphology(train, test, algorithm, seed, n_iter, evaluations=EVALUATIONS):
    """One run: its test-perplexity curve (at log-spaced iterations) and final perplexity and boundary
    scores."""
    (train_words, train_gold), (test_words, test_gold) = train, test
    checkpoints = set(np.unique(np.geomspace(1, n_iter, evaluations).round().astype(int)).tolist()) | {n_iter}
    curve = []

    def evaluate(model, iteration):
        if iteration + 1 in checkpoints:
            log_lik = model.score(test_words, estimate="mean")
            curve.append({"iteration": iteration + 1, "seconds": model.train_seconds_,
                          "perplexity": math.exp(-log_lik / len(test_words))})

    model = PCFG(grammar=MORPHOLOGY_GRAMMAR, alpha=PRIOR, algorithm=algorithm, n_iter=n_iter, random_state=seed)
    model.fit(train_words, terminals_from=test_words, callback=evaluate)
    result = {"algorithm": algorithm, "seed": seed, "iterations": n_iter,
              "seconds": sum(r.seconds for r in model.history_), "perplexity": curve[-1]["perplexity"],
              "train": boundary_scores(model.parse(train_words, estimate="mean"), train_gold),
              "test": boundary_scores(model.parse(test_words, estimate="mean"), test_gold), "curve": curve}
    if algorithm == "mh":
        result["acceptance_rate"] = float(model.acceptance_rate_)
        result["move_rate"] = float(model.move_rate_)
    return result


def _mean_std(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std())


def _mean_curve(runs):
    """Mean over seeds of (iteration, seconds, log10 perplexity) at the checkpoints all runs share."""
    by_iteration = defaultdict(list)
    for run in runs:
        for point in run["curve"]:
            by_iteration[point["iteration"]].append(point)
    points = [(it, np.mean([p["seconds"] for p in ps]), np.mean([math.log10(p["perplexity"]) for p in ps]))
              for it, ps in sorted(by_iteration.items()) if len(ps) == len(runs)]
    return np.array(points)


def ordering(language_runs):
    """Where CVI reaches MH's final perplexity, in iterations and seconds (mean curves over seeds)."""
    def runs(algorithm):
        return [r for r in language_runs if r["algorithm"] == algorithm]

    if not runs("cvi") or not runs("mh"):
        return None
    mh_final = _mean_std([math.log10(r["perplexity"]) for r in runs("mh")])[0]
    cvi = _mean_curve(runs("cvi"))
    mh = _mean_curve(runs("mh"))
    reached = np.flatnonzero(cvi[:, 2] <= mh_final)
    mh_reached = np.flatnonzero(mh[:, 2] <= mh_final + 0.01 * abs(mh_final))
    return {"mh_final_log10_perplexity": mh_final,
            "cvi_final_log10_perplexity": float(cvi[-1, 2]),
            "cvi_iterations_to_mh_final": None if not reached.size else int(cvi[reached[0], 0]),
            "cvi_seconds_to_mh_final": None if not reached.size else float(cvi[reached[0], 1]),
            "mh_iterations_to_within_1pct_of_its_final": int(mh[mh_reached[0], 0]),
            "mh_seconds_to_within_1pct_of_its_final": float(mh[mh_reached[0], 1]),
            "mh_seconds": float(mh[-1, 1]), "cvi_seconds": float(cvi[-1, 1])}


def plot_morphology(path, results):
    fig, axes = plt.subplots(len(results), 2, figsize=(10, 3.6 * len(results)), squeeze=False)
    for row, (language, block) in enumerate(results.items()):
        algorithms = dict.fromkeys(r["algorithm"] for r in block["runs"])
        for algorithm in algorithms:
            curve = _mean_curve([r for r in block["runs"] if r["algorithm"] == algorithm])
            axes[row, 0].plot(curve[:, 0], curve[:, 2], marker=".", label=algorithm)
            axes[row, 1].plot(curve[:, 1], curve[:, 2], marker=".", label=algorithm)
        for column, label in enumerate(("iterations", "training seconds")):
            ax = axes[row, column]
            ax.set_xscale("log")
            ax.set_xlabel(label)
            ax.set_ylabel("log10 test perplexity per type")
            ax.set_title(f"{language}: {block['data']['types']} types, prior {PRIOR:g}")
            ax.legend()
    return _save(fig, path)


def _cell(values, digits=1, scale=1.0):
    mean, std = _mean_std(np.asarray(values) * scale)
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


SAMPLES = {
    "families": ("each a sample of stem families (types sharing their longest gold morph, whole families of two "
                 "or more drawn at random until ~1,700 types): a verb-type list repeats its stems, a uniform "
                 "sample of types hardly does, and segments far worse (one probe, CVI, 15 iterations, 1,700 "
                 "uniformly drawn Hebrew types: train F1 28.7, perplexity 2.4e7; see docs/results/README.md)."),
    "uniform": ("each a uniform sample of 1,700 types (seed 0): the control of README.md, whose stems hardly "
                "repeat."),
}


READING_NOTES = [
    "**EM** with alpha = 1e-5 < 1: the Dirichlet has no mode (its density is unbounded at the simplex's "
    "edge), so EM's M-step adds no pseudo-counts and EM is the MLE.  For an `<any>` grammar the MLE memorises: "
    "every training type is its own stem (likelihood (1/I)^I, the most any distribution over I distinct types "
    "can give; EM's objective ends at -I ln I from every start).  So it predicts no boundary (train F1 0) and, "
    "smoothed by alpha, gives every test type the weight of an unseen stem, alpha / (I + |R_Stem| alpha): "
    "perplexity I / alpha.  A true property of maximum likelihood here, as Johnson et al. (2007) note.",
    "**VB** from these starts stays at the same memorising table: a random table puts most of every word's "
    "expected count on its one-stem tree (each rule costs a factor ~1/|R_A|), and exp psi(C + alpha) of an "
    "unused substring is ~exp(-1/alpha) = 0.  It is a local optimum of the start, not VB's best: from the "
    "uniform-tree start of MH, one probe (Hebrew, seed 0, 30 iterations) reached a higher ELBO (-26,531 "
    "against -27,301) and train F1 51.",
    "**MH** accepts almost every proposal: theta^H (eq. 4.16) is the exact conditional of eq. 4.14 for any "
    "tree that uses each rule row at most once, and only Prefix Prefix Stem and Stem Suffix Suffix use one "
    "twice.  'trees changed' is the share of proposals accepted *and* different from the current tree (a "
    "proposal equal to it is always accepted).  MH starts from one tree a word drawn uniformly; from a tree "
    "drawn from a random table (almost always the one-stem tree) the chain stays in the memorising state, "
    "since every proposal is then the current tree.",
    "MH's perplexity is taken under the posterior mean of its last sample's hard counts, not averaged over "
    "samples; CVI's soft counts spread some mass over every plausible piece, which held-out types use, so "
    "CVI's perplexity ends lower than MH's while its F1 is close.",
    "**CVI** is deterministic given its start; the seeds' random tables differ (so do the first iterations' "
    "perplexities) but reach the same fixed point, hence a spread near 0.",
    "F1 and perplexity are both taken under the posterior mean of the counts (for EM: the MLE's expected "
    "counts smoothed by alpha).  Under the MLE itself held-out types have no one-stem tree (probability 0), "
    "so their Viterbi parses are forced into seen pieces: that gave EM a test F1 of 83 in an earlier run, "
    "beside a train F1 of 0.",
]


def morphology_table(results, config):
    lines = ["# Fig. 4.1 (left): PCFG morphology, CVI against MH (and EM, VB)", "",
             f"Command: `{config['command']}`", "",
             f"Thesis: {THESIS['data']}. {THESIS['finding']}", "",
             "Here: the Sesotho verbs are not reachable; Hebrew SPMRL word types and English MorphyNet derived "
             "words instead, " + SAMPLES[config["sample"]] + " Grammar (6 rules, each nonterminal any substring):",
             "", "```", MORPHOLOGY_GRAMMAR.rstrip(), "```", "",
             f"Prior {PRIOR:g}, 90/10 split (seed 0), seeds {config['seeds']}; iterations: "
             + ", ".join(f"{a} {n}" for a, n in config["iterations"].items())
             + (" (the thesis ran MH for ~1,000)." if config["iterations"].get("mh", 1000) < 1000 else "."),
             "Perplexity: exp(-log-likelihood per test type) under the posterior mean of the run's counts (EM's "
             "expected counts smoothed by the prior). F1: morph boundaries of the Viterbi parses against gold, "
             "micro-averaged (train = the 90 % the learners saw, unsegmented). Mean ± sd over seeds.", ""]
    for language, block in results.items():
        info = block["data"]
        lines += [f"## {language}", "",
                  f"{info['description']}. {info['types']} types ({info['train']} train, {info['test']} test), "
                  f"{info['mean_characters']:.1f} characters and {info['morphs_per_type']:.2f} gold morphs a type, "
                  f"{info['types_with_one_morph']} types of one morph.", "",
                  "| algorithm | iterations | seconds | test perplexity | F1 train | P train | R train | F1 test |",
                  "|---|---|---|---|---|---|---|---|"]
        for algorithm in dict.fromkeys(r["algorithm"] for r in block["runs"]):
            runs = [r for r in block["runs"] if r["algorithm"] == algorithm]
            perplexities = [r["perplexity"] for r in runs]
            extra = ""
            if algorithm == "mh":
                extra = (f" (acceptance {np.mean([r['acceptance_rate'] for r in runs]):.4f}, trees changed "
                         f"{np.mean([r['move_rate'] for r in runs]):.4f})")
            lines.append(
                f"| {algorithm}{extra} | {runs[0]['iterations']} | {_cell([r['seconds'] for r in runs])} | "
                f"{np.mean(perplexities):.4g} ± {np.std(perplexities):.2g} | "
                f"{_cell([r['train']['f1'] for r in runs], scale=100)} | "
                f"{_cell([r['train']['precision'] for r in runs], scale=100)} | "
                f"{_cell([r['train']['recall'] for r in runs], scale=100)} | "
                f"{_cell([r['test']['f1'] for r in runs], scale=100)} |")
        for algorithm in ("cvi", "mh"):
            thesis = THESIS[algorithm]
            lines.append(f"| thesis {algorithm} (Sesotho) | {'~' if algorithm == 'mh' else ''}{thesis['iterations']} | "
                         f"{thesis['minutes'] * 60:.0f} | – | {thesis['f1']} | | | |")
        lines.append("")
        check = block.get("ordering")
        if check:
            if check["cvi_iterations_to_mh_final"] is None:
                reach = (f"CVI never reaches MH's final perplexity (log10 {check['mh_final_log10_perplexity']:.3f}; "
                         f"CVI ends at {check['cvi_final_log10_perplexity']:.3f})")
            else:
                reach = (f"CVI reaches MH's final perplexity (log10 {check['mh_final_log10_perplexity']:.3f}) after "
                         f"{check['cvi_iterations_to_mh_final']} iterations, {check['cvi_seconds_to_mh_final']:.1f} s")
            f1 = {a: _cell([r["train"]["f1"] for r in block["runs"] if r["algorithm"] == a], scale=100)
                  for a in ("cvi", "mh")}
            lines += [f"Ordering: {reach}; MH itself comes within 1 % of its final log perplexity after "
                      f"{check['mh_iterations_to_within_1pct_of_its_final']} iterations "
                      f"({check['mh_seconds_to_within_1pct_of_its_final']:.1f} s of {check['mh_seconds']:.1f} s). "
                      f"Final log10 perplexity: CVI {check['cvi_final_log10_perplexity']:.3f}, MH "
                      f"{check['mh_final_log10_perplexity']:.3f}. Train F1: CVI {f1['cvi']}, MH {f1['mh']}. "
                      f"CVI's whole run takes {100 * check['cvi_seconds'] / check['mh_seconds']:.0f} % of MH's "
                      "training time.", ""]
    lines += ["Reading the table:", ""] + [f"- {note}" for note in READING_NOTES] + [""]
    lines += ["![perplexity against iterations and time](fig4_1_morphology.png)", ""]
    return "\n".join(lines)


def fig4_1_morphology(args):
    """`cvbayes experiment fig4.1-morphology`: see the module notes.

    ``args``: ``out``, ``seeds`` (default 5), ``iterations`` (em, vb, cvi), ``cgs_iterations`` (mh),
    ``quiet``; from Python also ``pcfg_algorithms``, ``languages`` and ``morphology_sample``
    ("uniform": the control of uniformly drawn types, written to fig4_1_morphology/uniform_sample).
    """
    seeds = list(seed_range(args, args.seeds or 5))
    iterations = {algorithm: (args.cgs_iterations if algorithm == "mh" else args.iterations)
                  for algorithm in (getattr(args, "pcfg_algorithms", None) or MORPHOLOGY_ALGORITHMS)}
    languages = getattr(args, "languages", None) or LANGUAGES
    sample = getattr(args, "morphology_sample", "families")
    folder = Path(args.out) / "fig4_1_morphology"
    if sample != "families":
        folder = folder / f"{sample}_sample"
    folder.mkdir(parents=True, exist_ok=True)
    config = {"command": _command("fig4.1-morphology"), "seeds": seeds, "iterations": iterations,
              "prior": PRIOR, "grammar": MORPHOLOGY_GRAMMAR, "types": MORPHOLOGY_TYPES, "sample": sample,
              "thesis": THESIS}
    results = {}
    for language in languages:
        info, train, test = morphology_data(language, sample=sample)
        runs = []
        for seed in seeds:
            for algorithm, n_iter in iterations.items():
                started = time.perf_counter()
                run = run_morphology(train, test, algorithm, seed, n_iter)
                runs.append(run)
                if not args.quiet:
                    print(f"{language} {algorithm} seed {seed}: perplexity {run['perplexity']:.4g}, "
                          f"F1 {100 * run['train']['f1']:.1f}, {run['seconds']:.1f} s training "
                          f"({time.perf_counter() - started:.0f} s with scoring)", file=sys.stderr)
        results[language] = {"data": info, "runs": runs}
        results[language]["ordering"] = ordering(runs)
        _write(folder, "fig4_1_morphology", config, results, morphology_table(results, config),
               lambda path: plot_morphology(path, results))


def _write(folder, name, config, results, table, plot):
    write_json(folder / "results.json", plain_json({"config": config, "results": results}), indent=1)
    write_text(folder / "table.md", table)
    plot(folder / f"{name}.png")


# ------------------------------------------------------------------ planted grammar
PLANTED_GRAMMAR = """\
1.0 S -> NP VP
0.5 NP -> D N
0.15 NP -> NP PP
0.2 NP -> "she"
0.15 NP -> "he"
0.5 VP -> V NP
0.15 VP -> VP PP
0.2 VP -> "sleeps"
0.15 VP -> "runs"
1.0 PP -> P NP
0.6 D -> "the"
0.4 D -> "a"
0.3 N -> "dog"
0.3 N -> "cat"
0.2 N -> "park"
0.2 N -> "hill"
0.5 V -> "sees"
0.5 V -> "likes"
0.5 P -> "in"
0.5 P -> "on"
"""
PLANTED_ALGORITHMS = ("em", "vb", "cvi", "scvi", "mh")
PLANTED_SENTENCES = (1000, 200)
PLANTED_MAX_LENGTH = 15
PLANTED_PRIOR = 0.1


def sample_sentences(grammar, n, rng, max_length=PLANTED_MAX_LENGTH):
    """`n` sentences drawn top-down from a weighted `Grammar` (each row's weights normalised),
    sentences longer than `max_length` redrawn (so the draws follow p(x | |x| <= max_length))."""
    rows = defaultdict(list)
    for rule in grammar.rules:
        rows[rule.lhs].append(rule)
    choices = {lhs: (rules, np.array([r.weight for r in rules]) / sum(r.weight for r in rules))
               for lhs, rules in rows.items()}
    sentences = []
    while len(sentences) < n:
        words, pending = [], [grammar.start]
        while pending and len(words) <= max_length:
            symbol = pending.pop()
            if not isinstance(symbol, str):
                words.append(symbol.text)
                continue
            rules, probs = choices[symbol]
            pending.extend(reversed(rules[rng.choice(len(rules), p=probs)].rhs))
        if not pending and len(words) <= max_length:
            sentences.append(words)
    return sentences


def pcfg_planted(args):
    """`cvbayes experiment pcfg-planted`: every algorithm against the true grammar's held-out likelihood."""
    seeds = list(seed_range(args, args.seeds or 3))
    iterations = {a: (args.cgs_iterations if a == "mh" else args.iterations) for a in PLANTED_ALGORITHMS}
    folder = Path(args.out) / "pcfg_planted"
    folder.mkdir(parents=True, exist_ok=True)
    truth = parse_grammar(PLANTED_GRAMMAR)
    rng = np.random.default_rng(0)
    train, test = (sample_sentences(truth, n, rng) for n in PLANTED_SENTENCES)
    n_test_words = sum(len(s) for s in test)
    compiled = compile_grammar(truth, train + test)
    prepared = compiled.prepare(test)
    true_log_lik = float(batch_log_z(compiled.kernel, make_tables(compiled, compiled.rule_weights()),
                                     prepared.tokens, prepared.offsets, prepared.span_ids, prepared.span_offsets,
                                     chart_chunks(compiled.kernel, prepared.offsets)).sum())
    n_nonterminals = len(truth.nonterminals)
    config = {"command": _command("pcfg-planted"), "grammar": PLANTED_GRAMMAR, "seeds": seeds,
              "iterations": iterations, "prior": PLANTED_PRIOR, "n_nonterminals": n_nonterminals,
              "train_sentences": len(train), "test_sentences": len(test),
              "train_words": sum(len(s) for s in train), "test_words": n_test_words,
              "max_length": PLANTED_MAX_LENGTH, "true_per_word": true_log_lik / n_test_words}
    runs = []
    for algorithm, n_iter in iterations.items():
        for seed in seeds:
            model = PCFG(n_nonterminals=n_nonterminals, alpha=PLANTED_PRIOR)
            model.set_params(algorithm=algorithm, n_iter=n_iter, random_state=seed).fit(train)
            run = {"algorithm": algorithm, "seed": seed, "iterations": n_iter,
                   "seconds": sum(r.seconds for r in model.history_),
                   "per_word": model.score(test) / n_test_words,
                   "per_word_mean": model.score(test, estimate="mean") / n_test_words,
                   "objective": model.history_[-1].objective}
            if algorithm == "mh":
                run["acceptance_rate"] = float(model.acceptance_rate_)
                run["move_rate"] = float(model.move_rate_)
            runs.append(run)
            if not args.quiet:
                print(f"{algorithm} seed {seed}: {run['per_word']:.4f} a word (true {config['true_per_word']:.4f}), "
                      f"{run['seconds']:.1f} s", file=sys.stderr)
    _write(folder, "pcfg_planted", config, {"runs": runs}, planted_table(config, runs),
           lambda path: plot_planted(path, config, runs))


def planted_table(config, runs):
    lines = ["# Planted grammar: held-out per-word log-likelihood", "", f"Command: `{config['command']}`", "",
             f"Sentences drawn from the grammar below (redrawn above {config['max_length']} words): "
             f"{config['train_sentences']} to train ({config['train_words']} words), {config['test_sentences']} "
             f"held out ({config['test_words']} words). Every learner fits a full CNF grammar over "
             f"{config['n_nonterminals']} nonterminals and the training words (every A -> B C, every A -> w), "
             f"alpha = {config['prior']:g}, from a random table (seeds {config['seeds']}). Scores: the fitted "
             "estimate (EM: its MLE, since alpha < 1; others: the posterior mean); 'mean' scores EM's expected "
             "counts smoothed by alpha.", "", "```", config["grammar"].rstrip(), "```", "",
             "| algorithm | iterations | seconds | per-word log-lik (mean ± sd) | best seed | gap to truth (best) |",
             "|---|---|---|---|---|---|"]
    truth = config["true_per_word"]
    for algorithm in dict.fromkeys(r["algorithm"] for r in runs):
        mine = [r for r in runs if r["algorithm"] == algorithm]
        scores = [r["per_word"] for r in mine]
        name = algorithm + (f" (acceptance {np.mean([r['acceptance_rate'] for r in mine]):.3f}, trees changed "
                            f"{np.mean([r['move_rate'] for r in mine]):.3f})" if algorithm == "mh" else "")
        lines.append(f"| {name} | {mine[0]['iterations']} | {_cell([r['seconds'] for r in mine])} | "
                     f"{np.mean(scores):.4f} ± {np.std(scores):.4f} | {max(scores):.4f} | "
                     f"{max(scores) - truth:+.4f} |")
        if algorithm == "em":
            smoothed = [r["per_word_mean"] for r in mine]
            lines.append(f"| em, mean | | | {np.mean(smoothed):.4f} ± {np.std(smoothed):.4f} | {max(smoothed):.4f} | "
                         f"{max(smoothed) - truth:+.4f} |")
    lines += [f"| true grammar | | | {truth:.4f} | | |", "", "![per-word log-likelihood](pcfg_planted.png)", ""]
    return "\n".join(lines)


def plot_planted(path, config, runs):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    algorithms = list(dict.fromkeys(r["algorithm"] for r in runs))
    for x, algorithm in enumerate(algorithms):
        scores = [r["per_word"] for r in runs if r["algorithm"] == algorithm]
        ax.scatter(np.full(len(scores), x), scores, label=algorithm)
    ax.axhline(config["true_per_word"], color="k", linestyle="--", label="true grammar")
    ax.set_xticks(range(len(algorithms)), algorithms)
    ax.set_ylabel("held-out log-likelihood per word")
    ax.set_title(f"Planted CNF grammar, {config['n_nonterminals']} nonterminals")
    ax.legend(fontsize=8)
    return _save(fig, path)


EXPERIMENTS = {"fig4.1-morphology": fig4_1_morphology, "pcfg-planted": pcfg_planted}

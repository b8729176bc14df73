"""Fig. 4.2 beyond H = 8: grammars split from a coarser one and trained with pruning (Petrov et al. 2006).

At H = 16 CVI's per-tree counts of the converted EWT training trees alone would take 3.2 GB (float32,
H^3 a binary node), so H = 16 is trained as Petrov et al. (2006) train: from the learner's H = 8
grammar, every subtype split in two with 1 % noise, every E-step skipping the subtypes whose coarse
subtype has posterior below ``pruning`` under that H = 8 grammar (`cvbayes.trees.latent_pruned`), and
CVI storing its per-tree counts for the kept subtypes only.

For each learner one run, the learners one after another: the first H of ``subtypes`` trained from the
split treebank grammar as in `cvbayes.experiments.pcfg_la` (at the alpha and seed of the learner's row
for that H in the full run's results.json: alpha is not chosen again), then each further H from the one
before, pruned; the learners ``unpruned`` names also fit the last H from the same coarse grammar without
pruning, to show what pruning costs.  Every grammar parses the test set (coarse-to-fine, as in fig4.2).
Results go to ``out/<algorithms>_h<subtypes>.json`` after every fit; `table` writes table.md from every
such file in ``out``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..files import write_json, write_text
from ..models.pcfg_la import PCFGLA
from ..trees.latent import parent_totals
from ..trees.treebank import prepare_treebank
from .pcfg_la import CONVERTED_NOTE, _Evaluator, _peak_rss_mb, load_converted, strip_root

BASE = "docs/results/fig4_2/results.json"


def run(out="docs/results/fig4_2/split", algorithms=("em", "vb", "cvi"), subtypes=(8, 16), pruning=1e-4,
        unpruned=(), iterations=50, test_sentences=None, base=BASE, threshold=1e-4, decoder="max-rule",
        quiet=False):
    """Train and parse the chain ``subtypes`` for each learner; write its json and table.md under ``out``."""
    started = time.perf_counter()
    say = (lambda *args: None) if quiet else (lambda *args: print(*args, flush=True))
    if not Path(base).is_file():
        raise FileNotFoundError(f"{base}: no fig4.2 results to take each learner's alpha and seed from (run "
                                f"'cvbayes experiment fig4.2' first, from the folder holding docs/results)")
    rows_of_base = json.loads(Path(base).read_text())["rows"]
    train = load_converted("train")
    test_gold = [strip_root(tree) for tree in load_converted("test")][:test_sentences]
    prepared = prepare_treebank(train)
    evaluation = _Evaluator(prepared.grammar, test_gold, threshold, decoder)
    say(f"coarse pass over {len(test_gold)} test sentences: {evaluation.pruning.seconds:.0f} s")
    records = []
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def write():
        """The results so far (after every fit, so a run stopped early keeps what it finished)."""
        results = {"note": CONVERTED_NOTE, "settings": {
            "algorithms": list(algorithms), "subtypes": list(subtypes), "pruning": pruning,
            "unpruned": list(unpruned), "iterations": iterations, "base": str(base), "test_split": 2077,
            "test_sentences": len(test_gold), "threshold": threshold, "decoder": decoder,
            "wall_seconds": time.perf_counter() - started}, "rows": records}
        write_json(out / f"{'-'.join(algorithms)}_h{'-'.join(map(str, subtypes))}.json", results)
        write_text(out / "table.md", table(out))
        return results

    for algorithm in algorithms:
        first = next(row for row in rows_of_base if row["subtypes"] == subtypes[0] and row["algorithm"] == algorithm)
        alpha, seed = first["alpha"], first["seed"]
        coarse = None
        for h in subtypes:
            fits = [pruning if coarse is not None else None]
            if algorithm in unpruned and coarse is not None and h == subtypes[-1]:
                fits.append(None)
            for k, threshold_h in enumerate(fits):
                before = _peak_rss_mb()
                model = PCFGLA(n_subtypes=h, alpha=alpha, algorithm=algorithm, n_iter=iterations, random_state=seed,
                               pruning=threshold_h).fit(prepared, coarse=coarse)
                record = {"algorithm": algorithm, "subtypes": h, "from": coarse.n_subtypes if coarse else None,
                          "pruning": threshold_h, "alpha": alpha, "seed": seed, "kept_share": model.kept_share_,
                          "train_seconds": model.train_seconds,
                          "seconds_per_pass": float(np.median([r.seconds for r in model.history_])),
                          "objective": model.history_[-1].objective,
                          "objectives": [r.objective for r in model.history_],
                          "subtypes_used": subtypes_used(model), "peak_rss_mb_training": _peak_rss_mb(),
                          "peak_rss_mb_before": before, **evaluation(model), "peak_rss_mb": _peak_rss_mb()}
                records.append(record)
                write()
                say(f"{algorithm} H={h} from {record['from']} pruning {threshold_h}: kept "
                    f"{100 * record['kept_share']:.1f} %, {record['seconds_per_pass']:.2f} s a pass, test F1 "
                    f"{record['f1']:.2f}, peak {record['peak_rss_mb_training']:.0f} MB training")
                if k == 0:
                    chained = model  # the next H splits the pruned fit
            coarse = chained
    return write()


def subtypes_used(model) -> float:
    """The subtypes a symbol uses: the perplexity exp(entropy) of its subtypes' share of its expected
    count, averaged over the symbols weighted by their counts (H when every subtype is used alike, 1
    when one takes all)."""
    totals = parent_totals(model.grammar_, model.counts_)
    mass = totals.sum(axis=1)
    used = mass > 0
    shares = totals[used] / mass[used, None]
    entropy = -np.sum(shares * np.log(np.where(shares > 0, shares, 1.0)), axis=1)
    return float(np.exp(entropy) @ mass[used] / mass[used].sum())


def table(out) -> str:
    """The rows of every result file under ``out``, one line a fitted grammar."""
    parts = [json.loads(path.read_text()) for path in sorted(Path(out).glob("*.json"))]
    lines = ["| H | from H | algorithm | alpha | seed | training pruning | kept (node, subtype) | test LP | LR | F1 "
             "| EX | no parse | subtypes used | train s | s/pass | peak MB training | peak MB with parsing | parse s |",
             "|" + "---|" * 18]
    for part in parts:
        for row in part["rows"]:
            lines.append(
                f"| {row['subtypes']} | {row['from'] or 'treebank'} | {row['algorithm']} | {row['alpha']:g} | "
                f"{row['seed']} | {'none' if row['pruning'] is None else format(row['pruning'], 'g')} | "
                f"{100 * row['kept_share']:.1f} % | {row['precision']:.2f} | {row['recall']:.2f} | {row['f1']:.2f} | "
                f"{row['exact']:.2f} | {row['no_parse']} | {format(row['subtypes_used'], '.2f') if 'subtypes_used' in row else ''} | "
                f"{row['train_seconds']:.0f} | "
                f"{row['seconds_per_pass']:.2f} | {row['peak_rss_mb_training']:.0f} | {row['peak_rss_mb']:.0f} | "
                f"{row['parse_seconds']:.0f} |")
    settings = parts[0]["settings"] if parts else {}
    return (f"# Fig. 4.2 by splitting: H from the H before it, pruned training\n\n**{CONVERTED_NOTE}**\n\n"
            f"Each learner's first H trained from the split treebank grammar at the alpha and seed of its row "
            f"in {settings.get('base', BASE)}; each next H from it (every subtype split in two, 1 % noise), the "
            f"E-steps skipping subtypes whose coarse posterior is below the training pruning threshold. "
            f"{settings.get('iterations', '')} passes a grammar; the first {settings.get('test_sentences', '')} of "
            f"the {settings.get('test_split', '')} test sentences parsed coarse-to-fine at "
            f"{settings.get('threshold', '')}. Subtypes used: a symbol's exp(entropy) of its subtypes' shares of its "
            f"expected count, averaged over the symbols by count (H when all are used alike). Peak MB: the process's peak resident memory so far, after "
            f"training and after parsing that grammar (learners run one after another; in one process a row's "
            f"value is its own peak or an earlier row's).\n\n" + "\n".join(lines) + "\n")


def run_from_command_line(args):
    """``cvbayes experiment fig4.2-split``: --algorithms, --la-subtypes, --la-pruning, --la-unpruned,
    --la-iterations, --la-test-sentences, --la-threshold, --la-decoder, --out (default
    docs/results/fig4_2/split)."""
    out = args.out if args.out != "docs/results" else "docs/results/fig4_2/split"
    run(out=out, algorithms=tuple(args.algorithms), subtypes=tuple(args.la_subtypes), pruning=args.la_pruning,
        unpruned=tuple(args.la_unpruned or ()), iterations=args.la_iterations,
        test_sentences=args.la_test_sentences, threshold=args.la_threshold,
        decoder=args.la_decoder, quiet=args.quiet)


EXPERIMENTS = {"fig4.2-split": run_from_command_line}

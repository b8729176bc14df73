"""Speed of the PCFG-LA parser (`cvbayes.trees.latent_parse`): an old tree against a new one, in one run.

A PCFG-LA with ``--subtypes`` H is fitted by EM for a few passes on the first ``--train`` converted EWT
training trees (`cvbayes.data.ud_to_penn`; ``cvbayes data fetch ewt``) and saved once.  Each round then
parses the first ``--sentences`` dev sentences of at most ``--max-length`` words in a fresh process on
the old tree and then on the new one (``PYTHONPATH``, one numba thread), with the pruning of
``cvbayes pcfg-la parse`` (threshold 1e-4): the coarse pass (`prune_charts`, the kernels' `prune_many`)
and the fine pass of each decoder (`LatentParser.parse` with that `Pruning`, the kernels'
`parse_many`), each run once to compile and then ``--repeats`` times.  It prints each pass's median
over the rounds of wall and process CPU seconds and the fastest wall time of all runs (``min``: on a
loaded machine noise only adds, so the least disturbed run), each with the ratio new / old, and
checks that both trees return the same trees and log scores (relative difference at most 1e-9).

    python benchmarks/bench_latent_parse.py OLD_TREE NEW_TREE              # a few minutes
    python benchmarks/bench_latent_parse.py /work/main . --rounds 5 --json out.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DECODERS = ("max-rule", "viterbi")
THRESHOLD = 1e-4


def fit(path, n_train, n_subtypes):
    """Fit the model on the first training trees and save it; the dev sentences to parse."""
    import cvbayes
    from cvbayes.data.treebanks import fetch_ewt
    from cvbayes.data.ud_to_penn import convert_conllu

    folder = fetch_ewt(progress=False)
    train = [s.tree for s in convert_conllu(folder / "en_ewt-ud-train.conllu")[:n_train]]
    model = cvbayes.PCFGLA(n_subtypes=n_subtypes, alpha=0.1, min_count=2, algorithm="em", n_iter=5,
                           random_state=0).fit(train)
    model.save(path)
    return [s.tree.leaves() for s in convert_conllu(folder / "en_ewt-ud-dev.conllu")]


def child(model_path, sentences_path, output, repeats):
    """On the tree of PYTHONPATH: the seconds of each pass, and the trees and scores it returns."""
    import cvbayes
    from cvbayes.trees.latent_parser import prune_charts

    model = cvbayes.PCFGLA.load(model_path)
    sentences = json.loads(Path(sentences_path).read_text())

    def timed(name, run):
        run()  # compile, or load from numba's cache
        wall, cpu = [], []
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = run()
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        report[name], report[f"{name} cpu"], report[f"{name} min"] = (statistics.median(wall),
                                                                     statistics.median(cpu), min(wall))
        return result

    report = {"cvbayes": cvbayes.__file__}
    pruning = timed("coarse", lambda: prune_charts(model.grammar_, sentences, THRESHOLD))
    for decoder in DECODERS:
        parser = model.parser(decoder)
        batch = timed(decoder, lambda: parser.parse(sentences, pruning))
        report[f"{decoder} trees"] = [str(tree) for tree in batch.trees]
        report[f"{decoder} scores"] = [float(score) for score in batch.log_scores]
    Path(output).write_text(json.dumps(report))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old_tree")
    parser.add_argument("new_tree")
    parser.add_argument("--train", type=int, default=2000, help="training trees (default 2000)")
    parser.add_argument("--subtypes", type=int, default=2, help="H (default 2)")
    parser.add_argument("--sentences", type=int, default=200, help="dev sentences parsed (default 200)")
    parser.add_argument("--max-length", type=int, default=25, help="longest sentence parsed (default 25)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", help="write the table here")
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "SENTENCES", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child, args.repeats)
        return 0
    runs = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as scratch:
        model_path = Path(scratch) / "la.npz"
        dev = fit(model_path, args.train, args.subtypes)
        sentences = [words for words in dev if len(words) <= args.max_length][:args.sentences]
        sentences_path = Path(scratch) / "sentences.json"
        sentences_path.write_text(json.dumps(sentences))
        print(f"H = {args.subtypes}, {args.train} training trees, {len(sentences)} sentences of "
              f"{sum(map(len, sentences))} words", flush=True)
        for round_number in range(args.rounds):
            for label, tree in (("old", args.old_tree), ("new", args.new_tree)):
                output = Path(scratch) / f"{label}{round_number}.json"
                environment = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "NUMBA_NUM_THREADS": "1"}
                subprocess.run([sys.executable, __file__, args.old_tree, args.new_tree, "--repeats",
                                str(args.repeats), "--child", str(model_path), str(sentences_path), str(output)],
                               env=environment, check=True)
                runs[label].append(json.loads(output.read_text()))
                cpu = ", ".join(f"{name} {runs[label][-1][f'{name} cpu']:.3f}" for name in ("coarse", *DECODERS))
                print(f"round {round_number + 1} {label}: {runs[label][-1]['cvbayes']}, CPU s {cpu}, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
    old, new = runs["old"][0], runs["new"][0]
    same = True
    for decoder in DECODERS:
        trees = old[f"{decoder} trees"] == new[f"{decoder} trees"]
        a, b = np.array(old[f"{decoder} scores"]), np.array(new[f"{decoder} scores"])
        finite = np.isfinite(a)
        worst = float(np.max(np.abs(a[finite] - b[finite]) / np.maximum(np.abs(a[finite]), 1e-300), initial=0.0))
        scores = bool(np.array_equal(finite, np.isfinite(b))) and worst <= 1e-9
        same = same and trees and scores
        print(f"{decoder}: trees {'identical' if trees else 'DIFFER'}, worst relative score difference {worst:.1e}")
    table = {}
    print(f"{'pass':14s} {'old s':>8s} {'new s':>8s} {'new/old':>8s}")
    for name in [f"{name}{clock}" for clock in ("", " cpu", " min") for name in ("coarse", *DECODERS)]:
        pick = min if name.endswith(" min") else statistics.median  # the fastest run: the least disturbed
        old_seconds = pick(r[name] for r in runs["old"])
        new_seconds = pick(r[name] for r in runs["new"])
        table[name] = {"old": old_seconds, "new": new_seconds, "ratio": new_seconds / old_seconds}
        print(f"{name:14s} {old_seconds:8.3f} {new_seconds:8.3f} {new_seconds / old_seconds:8.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"old": args.old_tree, "new": args.new_tree, "rounds": args.rounds,
                                               "repeats": args.repeats, "subtypes": args.subtypes,
                                               "same_parses": same, "passes": table}, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""Every learner's trajectory on tiny data, recorded before a refactoring and compared after it.

    python benchmarks/baseline.py record before.json            # on the old tree
    python benchmarks/baseline.py record after.json             # on the new tree
    python benchmarks/baseline.py compare before.json after.json
    python benchmarks/baseline.py speed OLD_TREE NEW_TREE      # CPU seconds per case, trees alternated

A case is one model and one algorithm, fitted from a fixed seed for a few passes on data small enough
for the whole record to take a few minutes; it keeps the objective after every pass (``history_``)
and what the fitted model says about its training data (a score or a decoding).  `compare` prints the
worst relative difference of each case and exits 1 if any exceeds ``--tolerance`` (1e-9: the
arithmetic may be reordered, nothing more).  ``--only hmm,pcfg`` records the cases whose name starts
with one of the prefixes.

`speed` times the same cases on two checkouts in one run: each round runs `time` (every case once to
compile and warm, then ``--repeats`` timed runs, the median kept) in a fresh process on the old tree
and then on the new one (``PYTHONPATH``, one numba thread), for ``--rounds`` rounds, and prints each
case's median seconds over the rounds and the ratio new / old, flagging ratios above ``--limit``.  The
seconds are the process's CPU seconds (``time.process_time``), not wall time: on a shared machine another
process's work lengthens the wall time of a run but not its CPU time, so the ratios stay meaningful.

Call forms: the cases use the fit signatures of the tree they run on; where a model moved its options
from ``fit`` to its constructor, `_fit` tries the new form first.
"""
import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import cvbayes
from cvbayes.data import load_embedded_brown

# ../shared beside the checkout (CI's layout); a worktree elsewhere finds it further up
BRENT = next((folder / "shared" / "data" / "brent" / "br-phonemes.txt" for folder in Path(__file__).resolve().parents
              if (folder / "shared" / "data" / "brent").is_dir()), None)


def _fit(model, X, algorithm, n_iter, seed, **options):
    """model.fit in whichever form the tree has: algorithm, n_iter, the seed and the other options the
    constructor takes in the constructor (scikit-learn's convention), or all of them in fit."""
    constructor = inspect.signature(type(model).__init__).parameters
    if "algorithm" in constructor and hasattr(model, "set_params"):
        seed_name = "random_state" if "random_state" in constructor else "seed"
        params = {name: value for name, value in options.items() if name in constructor}
        model.set_params(algorithm=algorithm, n_iter=n_iter, **{seed_name: seed}, **params)
        return model.fit(X, **{name: value for name, value in options.items() if name not in params})
    return model.fit(X, algorithm=algorithm, n_iter=n_iter, seed=seed, **options)


def _seed(model_class, seed):
    """The seed as the constructor names it: random_state, or seed in the trees before the protocol."""
    return {"random_state" if "random_state" in inspect.signature(model_class.__init__).parameters else "seed": seed}


def _objectives(model):
    return [float(record.objective) for record in model.history_]


# `speed --scale N` (BASELINE_SCALE=N for `time`) multiplies the data of the HMM, HDP-HMM, LDA, DMV, aligners and
# adaptor grammar N times, so that the passes outweigh a fit's fixed cost; records for `compare` keep the scale of 1
SCALE = int(os.environ.get("BASELINE_SCALE", "1"))


def _brown(n_sentences):
    return load_embedded_brown(n_sentences=n_sentences * SCALE)


def hmm_case(algorithm, n_iter=4, **options):
    def run():
        corpus = _brown(150)
        # the priors pinned, so that a change of HMM's defaults is not taken for a change of arithmetic
        model = _fit(cvbayes.HMM(n_states=8, alpha=0.1, beta=0.1), corpus, algorithm, n_iter, 3, **options)
        return {"objectives": _objectives(model), "score": [float(model.score(corpus))],
                "states": np.asarray(model.predict(corpus.observations, corpus.lengths)).tolist()}
    return run


def gaussian_hmm_case(algorithm, n_iter=4):
    def run():
        rng = np.random.default_rng(7)
        means = np.array([[-2.0, 0.0], [0.0, 2.0], [2.0, -1.0]])
        states = rng.integers(0, 3, size=600 * SCALE)
        X = means[states] + rng.normal(size=(600 * SCALE, 2))
        lengths = np.full(20 * SCALE, 30)
        model = _fit(cvbayes.HMM(n_states=3, alpha=0.1, emission="gaussian"), X, algorithm, n_iter, 5, lengths=lengths)
        return {"objectives": _objectives(model), "score": [float(model.score(X, lengths))]}
    return run


def hdp_case(algorithm, n_iter=4):
    def run():
        corpus = _brown(150)
        model = _fit(cvbayes.HDPHMM(n_states=10, burn_in=2), corpus, algorithm, n_iter, 3)
        return {"objectives": _objectives(model), "score": [float(model.score(corpus))]}
    return run


def _count_matrix():
    rng = np.random.default_rng(11)
    topics = rng.dirichlet(np.full(40, 0.1), size=4)
    rows = []
    for _ in range(60 * SCALE):
        theta = rng.dirichlet(np.full(4, 0.3))
        rows.append(rng.multinomial(50, theta @ topics))
    return np.array(rows)


def lda_case(algorithm, n_iter=5):
    def run():
        X = _count_matrix()
        model = cvbayes.LDA(4, alpha=0.2, eta=0.05, algorithm=algorithm, n_iter=n_iter, **_seed(cvbayes.LDA, 2),
                            **({"batch_size": 16} if algorithm in ("online-vb", "scvb0") else {}))
        model.fit(X)
        return {"objectives": _objectives(model), "components": np.asarray(model.components_).ravel().tolist()}
    return run


def _cnf_sentences():
    rng = np.random.default_rng(5)
    words = ["the", "dog", "cat", "saw", "a", "ran"]
    return [list(rng.choice(words, size=rng.integers(2, 6))) for _ in range(30)]


def pcfg_case(algorithm, n_iter=3, **options):
    def run():
        sentences = _cnf_sentences()
        model = _fit(cvbayes.PCFG(n_nonterminals=3, alpha=0.5), sentences, algorithm, n_iter, 1, **options)
        return {"objectives": _objectives(model), "score": [float(model.score(sentences))]}
    return run


def dmv_case(algorithm, n_iter=3, **options):
    def run():
        corpus = _brown(120)
        tagset = corpus.tagset
        sentences = [[tagset.symbols[t] for t in corpus.gold[start:end]]
                     for start, end in zip(corpus.offsets[:-1], corpus.offsets[1:]) if end - start <= 10]
        model = _fit(cvbayes.DMV(alpha=0.5), sentences, algorithm, n_iter, 4, **options)
        return {"objectives": _objectives(model), "score": [float(model.score(sentences))]}
    return run


def _la_trees():
    from cvbayes.data.trees import parse_trees
    return parse_trees("""
(S (NP (D a) (N b)) (V c))
(S (NP (N b)) (V c) (NP (D a) (N b)))
(NP (D a) (N b))
(S (NP (N c)) (V a))
(S (NP (D a) (N c)) (V b) (NP (N a)))
""")


def pcfg_la_case(algorithm, n_iter=3):
    def run():
        model = _fit(cvbayes.PCFGLA(n_subtypes=2, alpha=0.5, min_count=1), _la_trees(), algorithm, n_iter, 6)
        return {"objectives": _objectives(model)}
    return run


def pcfg_la_parse_case(decoder):
    """The parser's trees and scores, pruned (as `cvbayes pcfg-la parse`) and on the whole chart; a score
    as a probability (max-rule's log scores are near 0, where relative differences say nothing)."""
    def run():
        model = _fit(cvbayes.PCFGLA(n_subtypes=3, alpha=0.5, min_count=1), _la_trees(), "em", 5, 6)
        sentences = [tree.leaves() for tree in _la_trees()] + [["a", "b", "c", "a", "b"], ["b", "c", "a", "c"]]
        result = {}
        for pruning in (1e-4, None):
            batch = model.parser(decoder).parse(sentences, pruning)
            result[f"trees {pruning}"] = [str(tree) for tree in batch.trees]
            result[f"probabilities {pruning}"] = np.exp(batch.log_scores).tolist()
        return result
    return run


def aligner_case(model_name, algorithm):
    def run():
        from cvbayes.models.alignment import Aligner, ParallelCorpus
        rng = np.random.default_rng(9)
        lexicon = {f"s{i}": f"t{i}" for i in range(12)}
        source, target = [], []
        for _ in range(80 * SCALE):
            words = list(rng.choice(list(lexicon), size=rng.integers(2, 7)))
            source.append(words)
            target.append([lexicon[w] for w in words[::-1]] + (["the"] if rng.random() < 0.5 else []))
        corpus = ParallelCorpus.from_tokens(source, target)
        aligner = Aligner(model_name, algorithm, n_iter=(3, 3) if model_name == "hmm" else 3,
                          **_seed(Aligner, 0)).fit(corpus)
        return {"objectives": _objectives(aligner),
                "links": [sorted(map(list, links)) for links in aligner.links()]}
    return run


def adaptor_case(grammar, algorithm, n_iter=3):
    def run():
        lines = BRENT.read_text().splitlines()[:60 * SCALE]
        utterances = [line.split() for line in lines]
        model = _fit(cvbayes.AdaptorGrammar(grammar), utterances, algorithm, n_iter, 1)
        return {"objectives": _objectives(model),
                "segmentation": [[list(word) for word in u] for u in model.segment(utterances)]}
    return run


def units_case(algorithm, n_iter=4):
    def run():
        from cvbayes.synthetic import sample_acoustic_units
        features, _, _ = sample_acoustic_units(12, n_units=4, n_states=2, n_dims=3, mean_frames=40, seed=3)
        model = cvbayes.AcousticUnits(n_units=6, n_states=2, n_components=2, algorithm=algorithm, n_iter=n_iter,
                                      batch_size=4, random_state=1).fit(features)
        return {"objectives": _objectives(model), "score": model.score_samples(features).tolist(),
                "units": np.concatenate(model.predict(features)).tolist()}
    return run


CASES = {
    **{f"hmm/{a}": hmm_case(a) for a in ("em", "vb", "cvi1", "cvi2", "cgs")},
    "hmm/cvi3": hmm_case("cvi3", subchain_length=5),
    "hmm/svi": hmm_case("svi", batch_size=40),
    "hmm/scvi": hmm_case("scvi", batch_size=40),
    **{f"hmm-gaussian/{a}": gaussian_hmm_case(a) for a in ("em", "vb", "cvi2", "scvi")},
    **{f"hdp-hmm/{a}": hdp_case(a) for a in ("cvi", "scvi", "svi-p")},
    **{f"lda/{a}": lda_case(a) for a in ("vb", "online-vb", "cvb0", "cvb", "scvb0", "cgs")},
    **{f"pcfg/{a}": pcfg_case(a) for a in ("em", "vb", "cvi", "mh")},
    "pcfg/scvi": pcfg_case("scvi", batch_size=10),
    **{f"dmv/{a}": dmv_case(a) for a in ("em", "vb", "cvi")},
    "dmv/scvi": dmv_case("scvi", batch_size=16),
    **{f"pcfg-la/{a}": pcfg_la_case(a) for a in ("em", "vb", "cvi")},
    **{f"pcfg-la/parse-{d}": pcfg_la_parse_case(d) for d in ("max-rule", "viterbi")},
    **{f"align-{m}/{a}": aligner_case(m, a) for m in ("ibm1", "hmm") for a in ("em", "vb", "cvi2", "cgs", "scvi")},
    **{f"adaptor-{g}/{a}": adaptor_case(g, a) for g in ("unigram", "colloc") for a in ("vb", "cvi", "mcmc")},
    **{f"units/{a}": units_case(a) for a in ("vb", "cvi", "gibbs", "svi", "scvi")},
}


def _selected(only):
    return {name: run for name, run in CASES.items() if not only or any(name.startswith(p) for p in only)}


def record(path, only):
    results = {}
    for name, run in _selected(only).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                results[name] = run()
            except Exception as error:  # a case the tree cannot run is recorded as such, not fatal
                results[name] = {"error": f"{type(error).__name__}: {error}"}
        print(f"{name:28s} {'error: ' + results[name]['error'] if 'error' in results[name] else 'ok'}",
              flush=True)
    Path(path).write_text(json.dumps(results))


def _worst(old, new):
    """The worst relative difference between two records of one case (inf where shapes differ)."""
    worst = 0.0
    for key in old.keys() | new.keys():
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            return np.inf
        try:
            a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        except ValueError:  # ragged: decodings and segmentations compare exactly
            if a != b:
                return np.inf
            continue
        if a.shape != b.shape:
            return np.inf
        both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
        difference = np.where(both_inf, 0.0, np.abs(a - b) / np.maximum(np.abs(a), 1e-300))
        worst = max(worst, float(np.max(difference, initial=0.0)))
    return worst


def compare(old_path, new_path, tolerance):
    old, new = json.loads(Path(old_path).read_text()), json.loads(Path(new_path).read_text())
    failed = False
    for name in old:
        if name not in new:
            print(f"{name:28s} missing from {new_path}")
            failed = True
            continue
        if "error" in old[name] or "error" in new[name]:
            print(f"{name:28s} {old[name].get('error', 'ok')} -> {new[name].get('error', 'ok')}")
            failed = failed or "error" in new[name]
            continue
        worst = _worst(old[name], new[name])
        flag = "" if worst <= tolerance else "  <-- differs"
        failed = failed or worst > tolerance
        print(f"{name:28s} worst relative difference {worst:.3g}{flag}")
    return 1 if failed else 0


def time_cases(path, only, repeats):
    """Median CPU seconds of this process (one numba thread) for each case over ``repeats`` runs after one
    warm-up run (compiling)."""
    seconds = {"cvbayes": cvbayes.__file__}
    for name, run in _selected(only).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                run()
            except Exception:  # a case this tree cannot run is left out of the comparison
                continue
            times = []
            for _ in range(repeats):
                start = time.process_time()
                run()
                times.append(time.process_time() - start)
        seconds[name] = statistics.median(times)
    Path(path).write_text(json.dumps(seconds))


def speed(old_tree, new_tree, only, rounds, repeats, limit, output, scale=1):
    """Both trees' `time_cases`, alternated ``rounds`` times; the table of medians and ratios."""
    runs = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(rounds):
            for label, tree in (("old", old_tree), ("new", new_tree)):
                path = Path(scratch) / f"{label}{round_number}.json"
                environment = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "NUMBA_NUM_THREADS": "1",
                               "BASELINE_SCALE": str(scale)}
                subprocess.run([sys.executable, __file__, "time", str(path), "--only", ",".join(only),
                                "--repeats", str(repeats)], env=environment, check=True)
                runs[label].append(json.loads(path.read_text()))
                print(f"round {round_number + 1} {label}: {runs[label][-1]['cvbayes']}, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
    table, slower = {}, 0
    print(f"{'case':28s} {'old cpu s':>9s} {'new cpu s':>9s} {'new/old':>8s}")
    for name in runs["new"][0]:
        if name == "cvbayes" or not all(name in r for r in runs["old"] + runs["new"]):
            continue
        old = statistics.median(r[name] for r in runs["old"])
        new = statistics.median(r[name] for r in runs["new"])
        table[name] = {"old": old, "new": new, "ratio": new / old}
        flag = f"  <-- above {limit}" if new / old > limit else ""
        slower += bool(flag)
        print(f"{name:28s} {old:9.3f} {new:9.3f} {new / old:8.2f}{flag}")
    if output:
        Path(output).write_text(json.dumps({"old": str(old_tree), "new": str(new_tree), "rounds": rounds,
                                            "repeats": repeats, "scale": scale, "cases": table}, indent=1))
    return 1 if slower else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    recorder = commands.add_parser("record", help="run every case and write their trajectories")
    recorder.add_argument("output")
    recorder.add_argument("--only", default="", help="comma-separated name prefixes (hmm,pcfg,...)")
    timer = commands.add_parser("time", help="median CPU seconds of every case on this tree")
    timer.add_argument("output")
    timer.add_argument("--only", default="")
    timer.add_argument("--repeats", type=int, default=3)
    racer = commands.add_parser("speed", help="time two trees' cases, alternated, and print the ratios")
    racer.add_argument("old_tree")
    racer.add_argument("new_tree")
    racer.add_argument("--only", default="")
    racer.add_argument("--rounds", type=int, default=3)
    racer.add_argument("--repeats", type=int, default=5)
    racer.add_argument("--limit", type=float, default=1.10, help="ratio new / old flagged (default 1.10)")
    racer.add_argument("--json", help="write the table here")
    racer.add_argument("--scale", type=int, default=1,
                       help="the data of the HMM, HDP-HMM, LDA, DMV, aligners and adaptor grammar this many times larger "
                            "(default 1)")
    comparer = commands.add_parser("compare", help="worst relative difference per case")
    comparer.add_argument("old")
    comparer.add_argument("new")
    comparer.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args(argv)
    only = [p for p in getattr(args, "only", "").split(",") if p]
    if args.command == "record":
        record(args.output, only)
        return 0
    if args.command == "time":
        time_cases(args.output, only, args.repeats)
        return 0
    if args.command == "speed":
        return speed(args.old_tree, args.new_tree, only, args.rounds, args.repeats, args.limit, args.json,
                     args.scale)
    return compare(args.old, args.new, args.tolerance)


if __name__ == "__main__":
    sys.exit(main())

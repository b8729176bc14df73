"""Every learner's time per token with one and two numba threads, on the shared machine as it is and
under extra load, for each source tree given (before and after a change); and what one parallel
region costs against its work (issue 34, finding 2).

    git archive main | tar -x -C /tmp/cvbayes-main               # the tree to compare with
    python benchmarks/bench_threads.py --tree main=/tmp/cvbayes-main --tree branch=.
    python benchmarks/bench_threads.py --quick                     # smaller data, one round

Learners: HMM em, vb, cvi1, cvi2, cgs, svi, scvi (K = 45, 100k tokens, SVI and SCVI at the default
minibatch of 100 sentences); LDA vb, online-vb, scvb0 (K = 20); PCFG em, scvi (5 nonterminals);
DMV em, scvi (Brown's tags); the HMM aligner em, scvi; the acoustic units vb, scvi (U = 50, S = 3,
M = 2, 13 dimensions, 30k frames).  ``--size`` scales every data set (0.1: small work, where a
minibatch or a whole E-step is a few ms).  Each tree runs in its own child processes
(``PYTHONPATH``); a child fits every learner with one thread, then with two (``numba.set_num_threads``
in one process started with two), after a warm-up that compiles or loads every kernel.  A round
runs every tree with the machine as it is, then (``--load`` N > 0) with N busy-loop processes started
by this script; rounds alternate the trees' order, and the table shows medians over rounds.  Each record
keeps the 1-minute load average and the running-task count around it, and, for every parallel
kernel, its calls, chunks and seconds (the work per region).

The region part times the HMM's E-step kernel on 10 to 3,000 sentences with one thread, two threads
over two chunks, and two threads over one chunk with the raw ``prange`` (numba wakes both threads),
in each tree (with its own ``OMP_WAIT_POLICY``: libgomp's default spins before it sleeps; cvbayes now
asks for passive waiting), with a few ms of NumPy between regions as a learner's M-step would leave.
It gives `cvbayes.core.units.MIN_WORK_PER_THREAD`.

The machine is shared: loads of 20 and more from other jobs are common, and only ratios within one
round mean much.  JSON goes to benchmarks/results/threads_<date>.json.
"""
import argparse
import contextlib
import datetime
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
STATES = 45


# ------------------------------------------------------------------ the machine
def load_now():
    """(1-minute load average, tasks running now) from /proc/loadavg."""
    fields = Path("/proc/loadavg").read_text().split()
    return float(fields[0]), int(fields[3].split("/")[0])


@contextlib.contextmanager
def busy_loops(n):
    """``n`` processes that spin, the extra load (stopped by their ids)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        if loops:
            time.sleep(2.0)
        yield
    finally:
        for loop in loops:
            loop.terminate()
            loop.wait()


# ------------------------------------------------------------------ data (child side)
def hmm_corpus(n_sentences, seed=0):
    from cvbayes.synthetic import sample_categorical_hmm
    rng = np.random.default_rng(seed)
    k, w = 20, 2000
    return sample_categorical_hmm(rng.dirichlet(np.ones(k)), rng.dirichlet(np.full(k, 0.1), k),
                                  rng.dirichlet(np.full(w, 0.05), k), 1 + rng.poisson(19, n_sentences), seed=seed)


def lda_counts(n_documents, seed=0):
    import scipy.sparse
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(5000, 0.02), size=20)
    rows = [rng.multinomial(100, rng.dirichlet(np.full(20, 0.2)) @ topics) for _ in range(n_documents)]
    return scipy.sparse.csr_matrix(np.array(rows))


def pcfg_sentences(n_sentences, seed=0):
    from cvbayes.experiments.pcfg import PLANTED_GRAMMAR, sample_sentences
    from cvbayes.trees.grammar import parse_grammar
    return sample_sentences(parse_grammar(PLANTED_GRAMMAR), n_sentences, np.random.default_rng(seed))


def brown_tags(max_length=15):
    from cvbayes.data import load_embedded_brown
    corpus = load_embedded_brown()
    symbols = corpus.tagset.symbols
    return [[symbols[t] for t in corpus.gold[a:b]] for a, b in zip(corpus.offsets[:-1], corpus.offsets[1:])
            if 0 < b - a <= max_length]


def parallel_pairs(n_pairs, seed=0):
    from cvbayes.models.alignment import ParallelCorpus
    rng = np.random.default_rng(seed)
    lexicon = {f"s{i}": f"t{i}" for i in range(500)}
    words = list(lexicon)
    source, target = [], []
    for _ in range(n_pairs):
        sentence = list(rng.choice(words, size=rng.integers(5, 21)))
        source.append(sentence)
        target.append([lexicon[w] for w in sentence[::-1]] + (["the"] if rng.random() < 0.5 else []))
    return ParallelCorpus.from_tokens(source, target)


def acoustic_frames(n_utterances, seed=0):
    from cvbayes.synthetic import sample_acoustic_units
    return sample_acoustic_units(n_utterances, n_units=20, n_states=3, n_dims=13, mean_frames=300, seed=seed)[0]


def learners(size):
    """name -> (fit(data) on a fresh model, data, tokens a pass, passes); ``size`` scales the data."""
    import cvbayes
    from cvbayes.models.alignment import Aligner
    sys.path.insert(0, str(HERE))
    from baseline import _fit

    passes = 3
    corpus = hmm_corpus(int(5000 * size))
    audio = acoustic_frames(max(2, int(100 * size)))
    documents = lda_counts(int(2000 * size))
    sentences = pcfg_sentences(int(1000 * size))
    tags = brown_tags()[:int(2000 * size)]
    pairs = parallel_pairs(int(5000 * size))

    def hmm(algorithm):
        options = {"batch_size": 100} if algorithm in ("svi", "scvi") else {}
        return lambda X: _fit(cvbayes.HMM(n_states=STATES), X, algorithm, passes, 1, **options)

    def lda(algorithm):
        return lambda X: _fit(cvbayes.LDA(20), X, algorithm, passes, 1)

    def pcfg(algorithm):
        options = {"batch_size": 100} if algorithm == "scvi" else {}
        return lambda X: _fit(cvbayes.PCFG(n_nonterminals=5), X, algorithm, passes, 1, **options)

    def dmv(algorithm):
        options = {"batch_size": 256} if algorithm == "scvi" else {}
        return lambda X: _fit(cvbayes.DMV(alpha=0.1), X, algorithm, passes, 1, **options)

    def align(algorithm):
        return lambda X: Aligner("hmm", algorithm, n_iter=(1, passes), random_state=1).fit(X)

    def units(algorithm):
        return lambda X: cvbayes.AcousticUnits(n_units=50, algorithm=algorithm, n_iter=passes, random_state=1,
                                               batch_size=8).fit(X)

    n_words = sum(len(s) for s in sentences)
    n_tags = sum(len(s) for s in tags)
    n_target = sum(len(t) for t in pairs.target)
    table = {f"hmm/{a}": (hmm(a), corpus, corpus.n_tokens, passes)
             for a in ("em", "vb", "cvi1", "cvi2", "cgs", "svi", "scvi")}
    table.update({f"lda/{a}": (lda(a), documents, int(documents.sum()), passes) for a in ("vb", "online-vb", "scvb0")})
    table.update({f"pcfg/{a}": (pcfg(a), sentences, n_words, passes) for a in ("em", "scvi")})
    table.update({f"dmv/{a}": (dmv(a), tags, n_tags, passes) for a in ("em", "scvi")})
    table.update({f"align-hmm/{a}": (align(a), pairs, n_target, passes + 1) for a in ("em", "scvi")})
    n_frames = sum(len(x) for x in audio)
    table.update({f"units/{a}": (units(a), audio, n_frames, passes) for a in ("vb", "scvi")})
    return table


# ------------------------------------------------------------------ the parallel kernels' calls
class Regions:
    """Every parallel kernel of the loaded cvbayes modules (a function with a ``prange``, compiled by
    numba or wrapped by the tree's thread rule), replaced where any module refers to it by a recorder
    of its calls: chunks, numba's thread count, seconds, and, in a tree whose chunks are costed
    (`equal_token_chunks(offsets, cost)`), the estimated steps of the region."""

    def __init__(self):
        import numba
        from cvbayes.core import units
        self.numba = numba
        self.calls = []
        self.steps = {}  # id of a chunk array -> (the array, kept alive; its region's estimated steps)
        wrapped = {}
        chunker = units.equal_token_chunks
        if "cost" in inspect.signature(chunker).parameters:
            def costed(offsets, cost=1.0, n_chunks=None):
                chunks = chunker(offsets, cost, n_chunks)
                self.steps[id(chunks)] = (chunks, float(offsets[-1]) * cost)
                return chunks
            wrapped[id(chunker)] = costed
        for name, module in list(sys.modules.items()):
            if not name.startswith("cvbayes") or module is None:
                continue
            for attribute, value in list(vars(module).items()):
                if id(value) not in wrapped:
                    recorder = self._recorder(value)
                    if recorder is None:
                        continue
                    wrapped[id(value)] = recorder
                setattr(module, attribute, wrapped[id(value)])

    def _recorder(self, kernel):
        function = getattr(kernel, "py_func", None) or getattr(kernel, "__wrapped__", None)
        if function is None or not callable(kernel):
            return None
        try:
            if "prange(" not in inspect.getsource(function):
                return None
        except (OSError, TypeError):
            return None
        names = list(inspect.signature(function).parameters)
        position = next((names.index(n) for n in ("chunk_bounds", "chunks") if n in names), None)
        if position is None:
            return None

        def record(*args, **kwargs):
            threads = self.numba.get_num_threads()
            started = time.perf_counter()
            result = kernel(*args, **kwargs)
            chunks = args[position]
            steps = self.steps.get(id(chunks), (None, None))[1]
            self.calls.append((function.__name__, int(chunks.shape[0] - 1), threads, time.perf_counter() - started,
                               steps))
            return result
        return record

    def take(self):
        """The calls since the last take, summed per kernel."""
        calls, self.calls = self.calls, []
        summary = {}
        for name, chunks, threads, seconds, steps in calls:
            entry = summary.setdefault(name, {"calls": 0, "chunks": {}, "seconds": 0.0, "call_seconds": [],
                                              "call_steps": []})
            entry["calls"] += 1
            entry["chunks"][str(chunks)] = entry["chunks"].get(str(chunks), 0) + 1
            entry["seconds"] += seconds
            entry["call_seconds"].append(seconds)
            if steps is not None:
                entry["call_steps"].append(steps)
        for entry in summary.values():
            entry["median_call_s"] = statistics.median(entry.pop("call_seconds"))
            steps = entry.pop("call_steps")
            entry["median_call_steps"] = statistics.median(steps) if steps else None
        return summary


def learners_child(args):
    import numba
    warnings.simplefilter("ignore")
    table = learners(args.size)
    tiny = learners(0.02)
    threads = numba.get_num_threads()
    for name, (fit, data, _, _) in tiny.items():  # compile, or load numba's cache, untimed
        if not args.only or name.startswith(tuple(args.only)):
            fit(data)
    regions = Regions()
    out = {"threads_available": threads, "records": {}}
    for name, (fit, data, tokens, passes) in table.items():
        if args.only and not name.startswith(tuple(args.only)):
            continue
        for n_threads in (1, threads):
            numba.set_num_threads(n_threads)
            before = load_now()
            started = time.perf_counter()
            fit(data)
            seconds = time.perf_counter() - started
            out["records"][f"{name}@{n_threads}"] = {
                "seconds": seconds, "us_per_token": 1e6 * seconds / (tokens * passes), "tokens": tokens,
                "passes": passes, "load_before": before, "load_after": load_now(), "regions": regions.take()}
            print(f"{name:16s} {n_threads} thread(s) {seconds:7.2f} s  load {before[0]:.1f}", file=sys.stderr,
                  flush=True)
        numba.set_num_threads(threads)
    print(json.dumps(out))


# ------------------------------------------------------------------ one region against its work
def regions_child(args):
    import numba
    import cvbayes
    from cvbayes.models import hmm_kernels
    from cvbayes.models.hmm_structures import ChainData
    warnings.simplefilter("ignore")
    corpus = hmm_corpus(3000)
    model = cvbayes.HMM(n_states=STATES, algorithm="em", n_iter=1, random_state=0).fit(corpus)
    data = ChainData(model._parts(), corpus)
    start, trans, table, offset = model.tables_from_params(model._fitted_params(), corpus)
    kernel = hmm_kernels.batch_expectations
    raw = kernel if hasattr(kernel, "py_func") else numba.njit(parallel=True)(kernel.__wrapped__)
    threads = numba.get_num_threads()
    gap = np.random.default_rng(0).random((300, 300))

    def once(call, n_sentences, n_chunks, n_threads):
        offsets = data.offsets[:n_sentences + 1]
        bounds = np.linspace(0, n_sentences, n_chunks + 1).astype(np.int64)
        numba.set_num_threads(n_threads)
        started = time.perf_counter()
        call(data.emissions(), start, trans, table, offset, offsets, bounds, data.n_stats)
        seconds = time.perf_counter() - started
        numba.set_num_threads(threads)
        for _ in range(3):  # an M-step's worth of NumPy: the threads go idle
            gap @ gap
        return seconds

    variants = {"1 thread": (kernel, 1, 1), "2 threads, 2 chunks": (kernel, 2, threads),
                "2 threads, 1 chunk (raw prange)": (raw, 1, threads)}
    for call, n_chunks, n_threads in variants.values():
        once(call, 10, n_chunks, n_threads)  # compile
    out = {"wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (libgomp spins, then sleeps)"),
           "threads_available": threads, "sizes": []}
    for n_sentences in args.sentences:
        reps = max(5, min(40, int(3000 / n_sentences)))
        times = {name: [] for name in variants}
        before = load_now()
        for _ in range(reps):  # the variants interleaved, so that they share the load
            for name, (call, n_chunks, n_threads) in variants.items():
                times[name].append(once(call, n_sentences, n_chunks, n_threads))
        tokens = int(data.offsets[n_sentences])
        row = {"sentences": n_sentences, "tokens": tokens, "steps": tokens * STATES ** 2, "reps": reps,
               "load_before": before, "load_after": load_now(),
               "median_s": {name: statistics.median(t) for name, t in times.items()}}
        out["sizes"].append(row)
        print(f"{n_sentences:5d} sentences {row['steps']:.1e} steps " + "  ".join(
            f"{name} {1e3 * s:8.2f} ms" for name, s in row["median_s"].items()), file=sys.stderr, flush=True)
    print(json.dumps(out))


# ------------------------------------------------------------------ the driver
def child(mode, path, args):
    command = [sys.executable, __file__, "--child", mode, "--size", str(args.size),
               "--sentences", ",".join(map(str, args.sentences))]
    if args.only:
        command += ["--only", ",".join(args.only)]
    environment = {**os.environ, "PYTHONPATH": str(Path(path).resolve())}
    for name in ("NUMBA_NUM_THREADS", "OMP_WAIT_POLICY"):  # each tree's own defaults
        environment.pop(name, None)
    result = subprocess.run(command, env=environment, stdout=subprocess.PIPE, check=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def medians(rounds):
    """{tree: {load: {record: median us_per_token}}} and the paired ratios 2 threads / 1 thread."""
    table = {}
    for tree, by_load in rounds.items():
        for load, runs in by_load.items():
            names = runs[0]["records"].keys()
            table.setdefault(tree, {})[load] = {
                name: statistics.median(run["records"][name]["us_per_token"] for run in runs) for name in names}
    return table


def print_table(rounds, threads):
    table = medians(rounds)
    trees = list(table)
    loads = list(next(iter(table.values())))
    learners_seen = sorted({name.split("@")[0] for t in table.values() for v in t.values() for name in v},
                           key=lambda n: list(learners_order()).index(n) if n in learners_order() else 99)
    print("\nmicroseconds per token (median over rounds), 1 and 2 threads, and the paired ratio 2/1")
    header = "| learner |" + "".join(f" {tree}, {load}: 1 / 2 thr (ratio) |" for tree in trees for load in loads)
    print(header)
    print("|---|" + "---|" * (len(trees) * len(loads)))
    for name in learners_seen:
        cells = []
        for tree in trees:
            for load in loads:
                runs = rounds[tree][load]
                one = table[tree][load][f"{name}@1"]
                two = table[tree][load][f"{name}@{threads}"]
                ratio = statistics.median(r["records"][f"{name}@{threads}"]["seconds"]
                                          / r["records"][f"{name}@1"]["seconds"] for r in runs)
                cells.append(f" {one:.2f} / {two:.2f} ({ratio:.2f}) |")
        print(f"| {name} |" + "".join(cells))


def learners_order():
    return ("hmm/em", "hmm/vb", "hmm/cvi1", "hmm/cvi2", "hmm/cgs", "hmm/svi", "hmm/scvi", "lda/vb", "lda/online-vb",
            "lda/scvb0", "pcfg/em", "pcfg/scvi", "dmv/em", "dmv/scvi", "align-hmm/em", "align-hmm/scvi", "units/vb",
            "units/scvi")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH of a source tree to time (repeat; default: this tree)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every tree and load (default 3)")
    parser.add_argument("--load", type=int, default=0,
                        help="busy-loop processes of extra loaded runs (default 0: the machine as it is only)")
    parser.add_argument("--size", type=float, default=1.0, help="scale of every data set (default 1)")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None,
                        help="comma-separated learner prefixes (hmm,lda/vb,...)")
    parser.add_argument("--no-regions", action="store_true", help="skip the region sweep")
    parser.add_argument("--quick", action="store_true", help="one round, a tenth of the data")
    parser.add_argument("--json", type=Path, default=None, help="default benchmarks/results/threads_<date>.json")
    parser.add_argument("--child", choices=("learners", "regions"), help=argparse.SUPPRESS)
    parser.add_argument("--sentences", type=lambda s: [int(x) for x in s.split(",")],
                        default=[10, 30, 100, 300, 1000, 3000], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "learners":
        return learners_child(args)
    if args.child == "regions":
        return regions_child(args)
    if args.quick:
        args.rounds, args.size = 1, 0.1
        args.sentences = [10, 100, 1000]
    trees = dict(t.split("=", 1) for t in args.tree) or {"this tree": str(HERE.parent)}
    loads = {"as is": 0, **({f"+{args.load} busy loops": args.load} if args.load else {})}
    report = {"date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(), "trees": trees,
              "size": args.size, "rounds": {tree: {load: [] for load in loads} for tree in trees},
              "regions": {load: [] for load in loads}}
    order = list(trees)
    for number in range(args.rounds):
        for load, n_loops in loads.items():
            with busy_loops(n_loops):
                for tree in order:
                    print(f"round {number + 1}, {load}, {tree}: load {load_now()[0]:.1f}", file=sys.stderr, flush=True)
                    report["rounds"][tree][load].append(child("learners", trees[tree], args))
                for tree in order if not args.no_regions else ():
                    print(f"round {number + 1}, {load}, regions, {tree}", file=sys.stderr, flush=True)
                    report["regions"][load].append({"tree": tree, **child("regions", trees[tree], args)})
        order.reverse()
    threads = next(iter(next(iter(report["rounds"].values())).values()))[0]["threads_available"]
    print_table(report["rounds"], threads)
    path = args.json or RESULTS_DIR / f"threads_{report['date']}{'_quick' if args.quick else ''}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    sys.exit(main())

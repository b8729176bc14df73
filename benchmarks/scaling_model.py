"""A scaling model of the sharded learners, measured here and projected to a cluster (issue 32, item 2).

Two subcommands:

``measure``
    Fits HMM-vb and HMM-cvi2-sharded on Brown's text (the first N sentences, unsupervised), and LDA-vb
    and LDA-cvb0-sharded on the news articles (the first N documents), the DMV's vb and cvi-sharded on
    EWT's UPOS sentences of at most 10 words and PCFG-LA's vb on EWT's converted trees (`load_data`: their
    compute is modelled on chart work, n^3 a sentence or a node, not on tokens), at three corpus sizes
    spanning 10x, in four ways: in this process on one core (no Dask: the reference compute per token, its CPU
    seconds measured too), on a LocalCluster of 1 and of 2 worker processes (one thread each), and of 2
    workers as threads of one process.  Every fit's ``shard_timings_`` (compute per shard measured in
    the worker, bytes sent and returned, broadcast, reduction, overhead) is kept per pass, with the
    shards' token counts, the workers' peak resident memory (VmHWM, reset before each fit through
    /proc/self/clear_refs) and their CPU seconds.  Raw records go to benchmarks/results/scaling.json.

``model``
    Fits the cost model (docs/scaling.md) to those records by least squares, checks it on runs held out
    of the fit (2 workers from 1; threads from processes; the largest size from the two smaller), and
    projects the pass time to 8-512 cores and 1e7-1e10 tokens under stated cluster assumptions.  Writes
    docs/results/scaling/model.json and projection.png and prints the markdown tables of docs/scaling.md.

    nice -n 10 python benchmarks/scaling_model.py measure
    python benchmarks/scaling_model.py model
    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/scaling_model.py measure \
        --learners dmv-vb dmv-cvi-sharded pcfgla-vb --la-trees 1250 4000 12543 --iterations 6 --repeats 3
    python benchmarks/scaling_model.py model --runs -1 --output trees

The machine it was measured on has 2 cores shared with other engineers' jobs: the load average is
recorded with every record, and the model's per-token compute for the projection is taken from CPU
seconds (what one dedicated core would take), not from the contended wall time.
"""
import argparse
import datetime
import functools
import json
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "scaling.json"
OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "scaling"

LEARNERS = {   # name: (family, algorithm, statistics gathered on the driver rather than reduced on workers)
    "hmm-vb": ("hmm", "vb", False),
    "hmm-cvi2-sharded": ("hmm", "cvi2-sharded", True),
    "lda-vb": ("lda", "vb", False),
    "lda-cvb0-sharded": ("lda", "cvb0-sharded", True),
    "dmv-vb": ("dmv", "vb", False),
    "dmv-cvi-sharded": ("dmv", "cvi-sharded", True),
    "pcfgla-vb": ("pcfgla", "vb", False),
}
MODES = {   # name: (workers, processes); None: in this process without Dask
    "in process": None,
    "1 process": (1, True),
    "2 processes": (2, True),
    "2 threads": (2, False),
}


# ------------------------------------------------------------------ measuring

def load_data(family, size):
    """The corpus of ``size`` units: the first Brown sentences (HMM), news documents (LDA), EWT training
    sentences of 1-10 words after punctuation is removed (their UPOS tags, the DMV) or EWT training trees
    converted to phrase structure (PCFG-LA); with the offsets the shards are cut on (words; PCFG-LA: the
    trees' nodes), each unit's words and each unit's work, the size measure the compute is modelled on:
    words for the HMM and LDA (a pass is linear in them), n^3 for a DMV sentence of n words (its chart,
    Eisner's O(n^3)), nodes for a PCFG-LA tree (its tree is given: an inside-outside step a node)."""
    if family == "hmm":
        from cvbayes.tagging import load_corpus
        corpus = load_corpus("brown", n_sentences=size)
    elif family == "lda":
        corpus = news()
        corpus = corpus[np.arange(min(size, corpus.n_sequences))]
    elif family == "dmv":
        corpus = ewt_tags()
        corpus = corpus[np.arange(min(size, corpus.n_sequences))]
        lengths = np.diff(corpus.offsets).astype(float)
        return corpus, np.asarray(corpus.offsets), lengths, lengths ** 3
    else:
        from cvbayes.trees.grammar import LEXICAL
        from cvbayes.trees.treebank import prepare_treebank
        prepared = prepare_treebank(ewt_trees()[:size])
        nodes = prepared.nodes
        tree_of = np.repeat(np.arange(nodes.n_trees), np.diff(nodes.tree_offsets))
        words = np.bincount(tree_of[nodes.kind == LEXICAL], minlength=nodes.n_trees).astype(float)
        return prepared, np.asarray(nodes.tree_offsets), words, np.diff(nodes.tree_offsets).astype(float)
    lengths = np.diff(corpus.offsets).astype(float)
    return corpus, np.asarray(corpus.offsets), lengths, lengths


@functools.cache
def news():
    from cvbayes.commands.lda import load_documents
    return load_documents("news", min_count=5, max_df=0.5, stop_words="english")


@functools.cache
def ewt_tags():
    from cvbayes.data.dependencies import read_dependencies, upos_tagset
    from cvbayes.data.treebanks import treebank_file
    return read_dependencies(treebank_file("ewt", "train"), tag="upos", tagset=upos_tagset(True),
                             remove_punctuation=True, max_length=10).as_corpus()


@functools.cache
def ewt_trees():
    from cvbayes.data import treebank_file
    from cvbayes.data.ud_to_penn import convert_conllu
    return [sentence.tree for sentence in convert_conllu(treebank_file("ewt", "train"))]


def model_for(family, algorithm, n_iter, size_k):
    """The learner; ``size_k`` its states (HMM), topics (LDA) or subtypes (PCFG-LA); unused by the DMV."""
    if family == "hmm":
        from cvbayes import HMM
        return HMM(size_k, algorithm=algorithm, n_iter=n_iter, random_state=0)
    if family == "dmv":
        from cvbayes import DMV
        return DMV(algorithm=algorithm, n_iter=n_iter, random_state=0)
    if family == "pcfgla":
        from cvbayes import PCFGLA
        return PCFGLA(n_subtypes=size_k, algorithm=algorithm, n_iter=n_iter, random_state=0)
    from cvbayes import LDA
    return LDA(size_k, algorithm=algorithm, n_iter=n_iter, random_state=0)


def _worker_reset_peak():
    """Reset this process's VmHWM to its current RSS (Linux: writing 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as stream:
        stream.write("5")


def _worker_memory_and_cpu():
    """(VmHWM MiB, VmRSS MiB, user + system CPU seconds) of this process."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("VmHWM:", "VmRSS:")):
                found[line[:5]] = int(line.split()[1]) / 1024
    times = os.times()
    return found["VmHWM"], found["VmRSS"], times.user + times.system


def table_cells(model, family, data, k):
    """Cells of the tables the driver updates a pass: K x V (HMM, LDA), the fitted counts' (trees)."""
    if family in ("hmm", "lda"):
        return k * len(data.vocabulary)
    return int(sum(np.size(table) for table in model.counts_))


def fit_once(learner, data, offsets, unit_words, unit_work, mode, client, n_iter, k):
    """One fit: its per-pass records (passes after the first) and the workers' memory and CPU."""
    from cvbayes.models.shards import shard_bounds
    family, algorithm, gathered = LEARNERS[learner]
    model = model_for(family, algorithm, n_iter, k)
    options = {}
    if client is not None:
        options["client"] = client
        n_shards = len(client.scheduler_info()["workers"])
        client.run(_worker_reset_peak)
        before = client.run(_worker_memory_and_cpu)
    elif algorithm.endswith("-sharded"):
        options["n_shards"] = n_shards = 1
    else:
        n_shards = 1
    cpu_started, started = time.process_time(), time.perf_counter()
    model.fit(data, **options)
    fit_wall, fit_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    units = shard_bounds(offsets, n_shards)
    words_before, work_before = (np.concatenate([[0.0], np.cumsum(x)]) for x in (unit_words, unit_work))
    record = {"learner": learner, "mode": mode, "tokens": int(words_before[-1]), "units": int(offsets.shape[0] - 1),
              "work": float(work_before[-1]), "cells": table_cells(model, family, data, k),
              "shard_tokens": np.diff(words_before[units]).tolist(), "shard_work": np.diff(work_before[units]).tolist(),
              "n_shards": int(units.shape[0] - 1),
              "gathered": gathered, "fit_wall": fit_wall, "load_average": os.getloadavg(),
              "pass_seconds": [r.seconds for r in model.history_][1:]}
    timings = getattr(model, "shard_timings_", None)
    if timings:
        record["passes"] = [dict(p) for p in timings[1:]]
    if client is not None:
        after = client.run(_worker_memory_and_cpu)
        record["workers"] = [{"peak_mib": after[w][0], "rss_mib": after[w][1], "rss_before_mib": before[w][1],
                              "cpu_seconds": after[w][2] - before[w][2]} for w in sorted(after)]
    else:
        record["driver_cpu_seconds"] = fit_cpu
    return record


def run_measure(args):
    import numba
    from distributed import Client, LocalCluster
    numba.set_num_threads(1)   # the in-process reference runs on one core
    records = []
    data = {}
    for learner in args.learners:
        family = LEARNERS[learner][0]
        for size in args.sizes[family]:
            if (family, size) not in data:
                data[(family, size)] = load_data(family, size)
    print("corpora:", {f"{f} {s}": int(w.sum()) for (f, s), (_, _, w, _) in data.items()}, flush=True)
    k = {"hmm": args.states, "lda": args.topics, "dmv": 0, "pcfgla": args.subtypes}
    for mode in args.modes:
        setting = MODES[mode]
        local = client = None
        if setting is not None:
            n_workers, processes = setting
            local = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=processes,
                                 dashboard_address=":0")
            client = Client(local)
            client.wait_for_workers(n_workers)
        try:
            for learner in args.learners:
                family = LEARNERS[learner][0]
                small = data[(family, args.sizes[family][0])]
                fit_once(learner, *small, mode, client, 1, k[family])   # compile the workers' numba
                for size in args.sizes[family]:
                    for repeat in range(args.repeats):
                        record = fit_once(learner, *data[(family, size)], mode, client, args.iterations, k[family])
                        record.update(size=size, repeat=repeat, k=k[family])
                        records.append(record)
                        summary = {name: round(statistics.median([p[name] for p in record["passes"]]), 4)
                                   for name in ("wall", "broadcast", "reduce_path", "overhead")} \
                            if "passes" in record else {}
                        print(mode, learner, record["tokens"], "s/pass",
                              round(statistics.median(record["pass_seconds"]), 3), summary,
                              [round(w["peak_mib"]) for w in record.get("workers", [])],
                              "load", record["load_average"][0], flush=True)
        finally:
            if client is not None:
                client.close()
                local.close()
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cpus": os.cpu_count(),
              "load_average_end": os.getloadavg(), "iterations": args.iterations, "records": records}
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps(history + [result], indent=1))


# ------------------------------------------------------------------ the cost model

# What a cluster is assumed to be (docs/scaling.md states each): a 10 Gb/s network, Dask's own figure of
# about 1 ms of scheduler overhead per task, 4 GiB of memory per core, a vocabulary of 1e5 words after a
# frequency cut at every corpus size, and shards 5 % uneven (whole documents and sentences are small
# beside shards of 2e4+ tokens).
CLUSTER = {"bandwidth": 10e9 / 8, "task_overhead": 1e-3, "memory_per_core_mib": 4096, "words": 100_000,
           "imbalance": 1.05}
CORES = [8, 16, 32, 64, 128, 256, 512]
TOKENS = [1e7, 1e8, 1e9, 1e10]
TERMS = ("compute", "broadcast", "scheduler", "results", "reduce", "driver")


def rows_of(records):
    """One row per setting (learner, mode, size) run with Dask: the medians over its passes (after the
    first) of the breakdown, the median over repeated runs, and the model's features (tasks a pass,
    reduction steps, bytes of one shard's result, table cells K x V)."""
    settings = {}
    for r in records:
        if r["mode"] != "in process":
            settings.setdefault((r["learner"], r["mode"], r["size"]), []).append(_row(r))
    return [{key: _median_of([row[key] for row in repeats]) for key in repeats[0]} for repeats in settings.values()]


def _median_of(values):
    """The median of repeated runs' floats (elementwise for lists of floats); other values the first run's."""
    if isinstance(values[0], float):
        return float(np.median(values))
    if isinstance(values[0], list) and values[0] and isinstance(values[0][0], float):
        return np.median(np.array(values), axis=0).tolist()
    return values[0]


def _row(r):
    passes, s = r["passes"], r["n_shards"]
    median = lambda name: float(statistics.median(p[name] for p in passes))
    return {
        "learner": r["learner"], "mode": r["mode"], "size": r["size"], "tokens": r["tokens"], "shards": s,
        "gathered": r["gathered"], "shard_tokens": r["shard_tokens"],
        "shard_work": r.get("shard_work", r["shard_tokens"]), "work": r.get("work", r["tokens"]),
        "cells": r["cells"] if "cells" in r else r["k"] * words(r),
        "pass": float(statistics.median(r["pass_seconds"])), "wall": median("wall"),
        "compute": [float(statistics.median(c)) for c in zip(*[p["compute"] for p in passes])],
        "compute_cpu": [float(statistics.median(c)) for c in zip(*[p["compute_cpu"] for p in passes])],
        # the share of a core the shards' tasks had: their CPU seconds over their wall seconds
        "share": float(statistics.median(sum(p["compute_cpu"]) / sum(p["compute"]) for p in passes)),
        "broadcast": median("broadcast"), "sent": median("bytes_sent"), "returned": median("bytes_returned"),
        "reduce_path": median("reduce_path"), "overhead": median("overhead"),
        # a reduction on the workers: 2S - 1 tasks, log2 S levels; gathered here: S tasks, S additions
        "tasks": s if r["gathered"] else 2 * s - 1,
        "steps": s if r["gathered"] else math.ceil(math.log2(s)),
        "result_bytes": median("bytes_returned") / s,
        "peak_mib": [w["peak_mib"] for w in r["workers"]] if r["mode"] != "2 threads" else None,
        "load": float(r["load_average"][0])}


def words(record):
    """The vocabulary size of a record's corpus (loaded again for records measured before it was kept)."""
    if "words" not in record:
        record["words"] = len(load_data(LEARNERS[record["learner"]][0], record["size"])[0].vocabulary)
    return record["words"]


def _nnls(columns, target):
    from scipy.optimize import nnls
    return nnls(np.column_stack(columns).astype(float), np.asarray(target, float))[0]


def fit_model(rows):
    """Least squares (non-negative) of each term on its own measured part:
    CPU seconds per shard = c_L x shard work (per learner, through the origin; work: `load_data`), the share of a core
    the tasks had (median of the runs) kept to turn CPU seconds into wall seconds;
    broadcast = b0 + bytes sent / beta;  overhead = o x tasks + bytes returned / rho;
    reduction path = m x steps x bytes of one result;  pass - rounds' wall (the driver) = d_L x K x V."""
    coef = {"compute": {}, "driver": {}}
    for learner in LEARNERS:
        mine = [r for r in rows if r["learner"] == learner]
        if not mine:
            continue
        work = np.concatenate([r["shard_work"] for r in mine])
        seconds = np.concatenate([r["compute_cpu"] for r in mine])
        coef["compute"][learner] = float(work @ seconds / (work @ work))
        coef["driver"][learner] = float(_nnls([[r["cells"] for r in mine]], [r["pass"] - r["wall"] for r in mine])[0])
    b0, per_byte = _nnls([np.ones(len(rows)), [r["sent"] for r in rows]], [r["broadcast"] for r in rows])
    per_task, per_returned = _nnls([[r["tasks"] for r in rows], [r["returned"] for r in rows]],
                                   [r["overhead"] for r in rows])
    merge, = _nnls([[r["steps"] * r["result_bytes"] for r in rows]], [r["reduce_path"] for r in rows])
    coef.update(share=float(np.median([r["share"] for r in rows])), broadcast_fixed=float(b0),
                broadcast_per_byte=float(per_byte), per_task=float(per_task),
                returned_per_byte=float(per_returned), merge_per_byte=float(merge))
    return coef


def predict(coef, row, share=None):
    """The model's pass time for a measured row's setting, by term: the compute at the share of a core
    ``share`` (by default the fitted runs' median)."""
    return {"compute": coef["compute"][row["learner"]] * max(row["shard_work"]) / (share or coef["share"]),
            "broadcast": coef["broadcast_fixed"] + coef["broadcast_per_byte"] * row["sent"],
            "overhead": coef["per_task"] * row["tasks"] + coef["returned_per_byte"] * row["returned"],
            "reduce": coef["merge_per_byte"] * row["steps"] * row["result_bytes"],
            "driver": coef["driver"][row["learner"]] * row["cells"]}


def check(rows, fit_on, held_out, name):
    """Fit on the rows ``fit_on`` accepts, predict the ``held_out`` ones: their relative errors."""
    coef = fit_model([r for r in rows if fit_on(r)])
    results = []
    for r in rows:
        if held_out(r):
            predicted = sum(predict(coef, r).values())
            known_share = sum(predict(coef, r, r["share"]).values())
            results.append({"learner": r["learner"], "mode": r["mode"], "tokens": r["tokens"], "measured": r["pass"],
                            "predicted": predicted, "error": (predicted - r["pass"]) / r["pass"],
                            "share": r["share"], "predicted_at_share": known_share,
                            "error_at_share": (known_share - r["pass"]) / r["pass"]})
    errors = [abs(x["error"]) for x in results]
    at_share = [abs(x["error_at_share"]) for x in results]
    return {"check": name, "n": len(results), "median_abs_error": float(np.median(errors)),
            "max_abs_error": float(np.max(errors)), "median_abs_error_at_share": float(np.median(at_share)),
            "max_abs_error_at_share": float(np.max(at_share)), "runs": results}


def in_process(records):
    """The runs without Dask (one numba thread): CPU seconds a unit of work per learner (a token for the
    HMM and LDA; `load_data`) (a pass's seconds per unit times the share of a core the process had over its fit, CPU seconds / wall seconds: a cross-check
    of the workers' CPU seconds a unit), and the median of that share (the driver's, on this machine)."""
    found, shares = {}, []
    for r in records:
        if r["mode"] == "in process":
            share = r["driver_cpu_seconds"] / r["fit_wall"]
            shares.append(share)
            found.setdefault(r["learner"], []).append(statistics.median(r["pass_seconds"]) / r.get("work", r["tokens"]) * share)
    return {learner: float(statistics.median(values)) for learner, values in found.items()}, float(np.median(shares))


def memory_fit(rows):
    """Peak resident MiB of a worker process = a + b x its shard's tokens, per learner (process runs)."""
    fits = {}
    for learner in LEARNERS:
        points = [(t, m) for r in rows if r["learner"] == learner and r["peak_mib"]
                  for t, m in zip(r["shard_tokens"], r["peak_mib"])]
        if points:
            tokens, mib = np.array(points, float).T
            a, b = _nnls([np.ones(len(tokens)), tokens], mib)
            fits[learner] = {"base_mib": float(a), "mib_per_million_tokens": float(b * 1e6)}
    return fits


def scales(records):
    """Per learner, (cells of the driver's tables, work a token) on the cluster: K x the assumed vocabulary
    for the HMM and LDA (work: tokens); the trees' as measured on the largest corpus (their tag sets and
    grammars do not grow with the corpus as a vocabulary does; PCFG-LA's grammar grows slowly, taken as fixed)."""
    found = {}
    for r in sorted(records, key=lambda r: r["tokens"]):
        family = LEARNERS[r["learner"]][0]
        if family in ("hmm", "lda"):
            found[r["learner"]] = (r["k"] * CLUSTER["words"], 1.0)
        else:
            found[r["learner"]] = (r["cells"], r["work"] / r["tokens"])
    return found


def project(coef, driver_share, memory, scale):
    """Pass time on P cores (one worker each) for N tokens, by term, on the assumed cluster (CLUSTER);
    ``scale``: `scales`.
    The CPU-bound costs measured here at a share of a core (serialising a byte, a broadcast's fixed cost,
    the driver's tables) are taken at a whole core: times the driver's share measured in process."""
    net = 1.0 / CLUSTER["bandwidth"]
    table = {}
    for learner, (_, _, gathered) in LEARNERS.items():
        if learner not in coef["compute"]:
            continue
        cells, work_per_token = scale[learner]
        table_bytes = 8.0 * cells
        hop = table_bytes * (net + coef["broadcast_per_byte"] * driver_share)   # one copy of a table, sent
        add = table_bytes * coef["merge_per_byte"] * driver_share               # one addition of two
        for p in CORES:
            # scatter(broadcast=True): client -> scheduler -> a worker, then Dask's replicate, a tree in
            # which each holder copies to 2 more a round (branching factor 2): ceil(log3 P) rounds of 2 sends
            broadcast = coef["broadcast_fixed"] * driver_share + hop * (2 + 2 * math.ceil(math.log(p, 3) - 1e-9))
            if gathered:   # every shard's change comes to the driver and is added there
                tasks, results, reduce = p, p * hop, p * add
            else:          # pairwise on the workers (a copy and an addition a level), one result to the driver
                tasks, results, reduce = 2 * p - 1, hop, math.ceil(math.log2(p)) * (hop + add)
            for n in TOKENS:
                shard = n / p
                terms = {"compute": coef["compute"][learner] * shard * work_per_token * CLUSTER["imbalance"], "broadcast": broadcast,
                         "scheduler": tasks * CLUSTER["task_overhead"], "results": results, "reduce": reduce,
                         "driver": coef["driver"][learner] * cells * driver_share}
                worker_mib = memory[learner]["base_mib"] + memory[learner]["mib_per_million_tokens"] * shard / 1e6 \
                    + 3 * table_bytes / 2**20
                table[(learner, p, n)] = {**terms, "total": sum(terms.values()), "worker_mib": worker_mib,
                                          "driver_mib": (p if gathered else 2) * table_bytes / 2**20}
    return table


def run_model(args):
    runs = json.loads(RESULTS.read_text())
    chosen = [runs[i] for i in args.runs]
    records = [r for run in chosen for r in run["records"]]
    rows = rows_of(records)
    coef = fit_model(rows)
    checks = [
        check(rows, lambda r: r["mode"] == "1 process", lambda r: r["mode"] == "2 processes",
              "fit on 1 worker process, predict 2"),
        check(rows, lambda r: r["mode"] != "2 threads", lambda r: r["mode"] == "2 threads",
              "fit on processes, predict 2 threads"),
        check(rows, lambda r: r["tokens"] < max(x["tokens"] for x in rows if x["learner"] == r["learner"]),
              lambda r: r["tokens"] == max(x["tokens"] for x in rows if x["learner"] == r["learner"]),
              "fit on the two smaller sizes, predict the largest"),
        check(rows, lambda r: True, lambda r: True, "in sample (all runs)"),
    ]
    per_token, driver_share = in_process(records)
    memory = memory_fit(rows)
    projection = project(coef, driver_share, memory, scales(records))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / f"{args.output}.json").write_text(json.dumps({
        "measured": [run["date"] for run in chosen],
        "load_average": [r["load_average"][0] for r in records], "cluster": CLUSTER, "coefficients": coef,
        "in_process_cpu_seconds_per_token": per_token,
        "driver_share": driver_share, "memory": memory, "checks": checks, "rows": rows,
        "projection": [{"learner": key[0], "cores": key[1], "tokens": key[2], **value}
                       for key, value in projection.items()]}, indent=1))
    plot(projection, OUTPUT / ("projection.png" if args.output == "model" else f"{args.output}_projection.png"))
    print_tables(rows, coef, per_token, driver_share, memory, checks, projection)


def plot(projection, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    learners = sorted({key[0] for key in projection}, key=list(LEARNERS).index)
    figure, axes = plt.subplots(1, len(learners), figsize=(4 * len(learners), 3.6), sharey=True)
    for axis, learner in zip(np.atleast_1d(axes), learners):
        for n in TOKENS:
            points = [projection[(learner, p, n)] for p in CORES]
            line, = axis.plot(CORES, [x["total"] for x in points], marker="o", label=f"{n:.0e} tokens")
            over = [(p, x["total"]) for p, x in zip(CORES, points) if x["worker_mib"] > CLUSTER["memory_per_core_mib"]]
            if over:
                axis.plot(*zip(*over), "x", color="black", markersize=9)
            comm = [x["broadcast"] + x["scheduler"] + x["results"] + x["reduce"] for x in points]
            axis.plot(CORES, comm, ":", color="grey")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_title(learner)
        axis.set_xlabel("cores (one worker each)")
    np.atleast_1d(axes)[0].set_ylabel("projected seconds a pass")
    np.atleast_1d(axes)[0].legend(fontsize=7, title="x: over 4 GiB a worker\ndotted: communication", title_fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def print_tables(rows, coef, per_token, driver_share, memory, checks, projection):
    print("\n## measured (medians over the passes after the first)\n")
    print("| learner | mode | tokens | s/pass | rounds' wall | compute per shard (CPU) | share of a core | broadcast | "
          "overhead | reduction path | driver | MB sent / returned | worker peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        peak = ", ".join(f"{m:.0f}" for m in r["peak_mib"]) if r["peak_mib"] else "(driver's process)"
        print(f"| {r['learner']} | {r['mode']} | {r['tokens']:,} | {r['pass']:.3f} | {r['wall']:.3f} | "
              f"{', '.join(f'{c:.2f} ({u:.2f})' for c, u in zip(r['compute'], r['compute_cpu']))} | {r['share']:.2f} | "
              f"{r['broadcast']:.3f} | {r['overhead']:.3f} | "
              f"{r['reduce_path']:.4f} | {r['pass'] - r['wall']:.3f} | {r['sent'] / 1e6:.1f} / "
              f"{r['returned'] / 1e6:.1f} | {peak} |")
    print("\n## coefficients\n")
    print(json.dumps({"coefficients": coef, "in_process_cpu_seconds_per_token": per_token,
                      "driver_share": driver_share, "memory": memory},
                     indent=1))
    print("\n## checks\n")
    print("| check | runs | median / max abs. error | the same, at each run's measured share of a core |")
    print("|---|---|---|---|")
    for c in checks:
        print(f"| {c['check']} | {c['n']} | {c['median_abs_error']:.0%} / {c['max_abs_error']:.0%} | "
              f"{c['median_abs_error_at_share']:.0%} / {c['max_abs_error_at_share']:.0%} |")
    for c in checks[:3]:
        print(f"\n{c['check']}:\n")
        print("| learner | mode | tokens | measured s | predicted s | error | share of a core | predicted at it "
              "| error |")
        print("|---|---|---|---|---|---|---|---|---|")
        for x in c["runs"]:
            print(f"| {x['learner']} | {x['mode']} | {x['tokens']:,} | {x['measured']:.3f} | {x['predicted']:.3f} | "
                  f"{x['error']:+.0%} | {x['share']:.2f} | {x['predicted_at_share']:.3f} | "
                  f"{x['error_at_share']:+.0%} |")
    print("\n## projection (seconds a pass; * over 4 GiB a worker; dominant term)\n")
    for learner in LEARNERS:
        if not any(key[0] == learner for key in projection):
            continue
        print(f"\n{learner}:\n")
        print("| cores | " + " | ".join(f"{n:.0e} tokens" for n in TOKENS) + " |")
        print("|---|" + "---|" * len(TOKENS))
        for p in CORES:
            cells = []
            for n in TOKENS:
                x = projection[(learner, p, n)]
                top = max(TERMS, key=lambda t: x[t])
                star = "*" if x["worker_mib"] > CLUSTER["memory_per_core_mib"] else ""
                cells.append(f"{x['total']:.3g}{star} ({top})")
            print(f"| {p} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    measure = sub.add_parser("measure")
    measure.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=list(LEARNERS))
    measure.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    measure.add_argument("--hmm-sentences", type=int, nargs="+", default=[3000, 10000, 30000])
    measure.add_argument("--lda-documents", type=int, nargs="+", default=[380, 1200, 3800])
    measure.add_argument("--dmv-sentences", type=int, nargs="+", default=[540, 1700, 5386])
    measure.add_argument("--la-trees", type=int, nargs="+", default=[400, 1260, 4000])
    measure.add_argument("--subtypes", type=int, default=4, help="PCFG-LA's H")
    measure.add_argument("--states", type=int, default=45)
    measure.add_argument("--topics", type=int, default=50)
    measure.add_argument("--iterations", type=int, default=4)
    measure.add_argument("--repeats", type=int, default=1)
    model = sub.add_parser("model")
    model.add_argument("--runs", type=int, nargs="+", default=[-1],
                       help="which measure runs of results/scaling.json (indices; repeats give medians)")
    model.add_argument("--output", default="model",
                       help="docs/results/scaling/OUTPUT.json (and OUTPUT_projection.png unless model)")
    args = parser.parse_args()
    if args.what == "measure":
        args.sizes = {"hmm": args.hmm_sentences, "lda": args.lda_documents, "dmv": args.dmv_sentences,
                      "pcfgla": args.la_trees}
        run_measure(args)
    else:
        run_model(args)


if __name__ == "__main__":
    main()

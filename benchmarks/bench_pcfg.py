"""Inside-outside with expected counts: cvbayes's numba kernel against torch-struct's CPU CKY.

For each grammar size N a random full CNF grammar (every A -> B C and every
A -> w, rows drawn from a flat Dirichlet) and batches of random sentences of
one length T are built from a fixed seed.  Both sides compute log Z and the
expected count of every rule over the batch:

* cvbayes: `cvbayes.trees.expected_counts` (parallel over sentences);
* torch-struct: ``CKY(LogSemiring).marginals`` (log-space inside, autograd
  for the marginals), then the rule and term marginals summed over the batch
  into the same N^3 binary and N x W lexical counts.  Without the CUDA-only
  ``genbmm`` package its log-space matmul broadcasts and stores (..., N^2, N)
  tensors, which is what makes it slow and large on a CPU;
* torch-struct-std-inside: the inside pass alone on probabilities with
  ``StdSemiring`` (BLAS matmuls, no gradients, no protection from
  underflow): a lower bound on what a BLAS-backed torch-struct would need for
  marginals, whose backward costs at least as much again.  Its marginals
  cannot be timed: ``marginals`` with ``StdSemiring`` fails under torch 2.13
  with an autograd in-place error inside torch-struct.

torch-struct separates nonterminals from preterminals, so the same grammar
is given to it as NT = N nonterminals and T = N preterminal copies: rules
(N, 2N, 2N) with W tiled over the four child blocks, terms the log lexical
weights of each token, roots 0 for the start symbol.  The two are checked to
agree (log Z and counts) before timing.  torch-struct's log tensors are built
outside the timed region.

Each setting is run up to ``--repeats`` times, stopping early once its runs
took ``--budget`` seconds (at least one run); the median is reported.
Every (library, N) runs in its own spawned process, one after another, with
the same number of threads; its peak resident memory above the baseline
after warm-up is measured per length (Linux ``/proc/self/clear_refs``).
Run ``python benchmarks/bench_pcfg.py --help`` for the options.
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# torch-struct's log-space CKY keeps up to about this many MiB per sentence x T^2 x N^3 for
# its backward pass (measured with 8 sentences: 1.9 GiB at N = 20, T = 20; 6.0 GiB at N = 20,
# T = 40; 5.4 GiB at N = 30, T = 20); settings above --max-torch-gib are skipped rather than
# risk the memory of a shared machine.
TORCH_LOG_MIB_PER_UNIT = 7.5e-5


# ------------------------------------------------------------------ shared setup
def make_problem(n, vocab, lengths, batch, seed):
    """The grammar's rule weights (R,) and one batch of token-id sentences per length."""
    from cvbayes.trees import full_cnf_grammar

    grammar = full_cnf_grammar(n, vocab)
    rng = np.random.default_rng(seed + 1000 * n)
    weights = grammar.normalize(rng.gamma(1.0, size=grammar.n_rules))
    sentences = {length: rng.integers(0, vocab, size=(batch, length)).astype(np.int32) for length in lengths}
    return grammar, weights, sentences


def split_weights(grammar, weights):
    """(N, N, N) binary and (N, W) lexical probabilities of the full CNF layout."""
    n = grammar.n_nonterminals
    rows = weights.reshape(n, -1)
    return rows[:, : n * n].reshape(n, n, n), rows[:, n * n:]


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as file:
        file.write("5")


def _memory_kib(field):
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


# ------------------------------------------------------------------ workers (each in its own process)
def run_cvbayes(n, vocab, lengths, batch, repeats, seed, threads, budget, max_gib):
    import numba

    from cvbayes.trees import expected_counts, make_tables

    numba.set_num_threads(threads)
    grammar, weights, sentences = make_problem(n, vocab, lengths, batch, seed)
    tables = make_tables(grammar, weights)
    expected_counts(grammar, tables, grammar.prepare(sentences[lengths[0]][:2, :3]))   # compile / load cache
    baseline = _memory_kib("VmRSS")
    out = {}
    for length in lengths:
        prepared = grammar.prepare(list(sentences[length]))
        counts, log_z = expected_counts(grammar, tables, prepared)
        _reset_peak()
        times = []
        while len(times) < repeats and (not times or sum(times) < budget):
            start = time.perf_counter()
            counts, log_z = expected_counts(grammar, tables, prepared)
            times.append(time.perf_counter() - start)
        binary = counts.reshape(n, -1)[:, : n * n]
        out[length] = dict(seconds=times, peak_mib=(_memory_kib("VmHWM") - baseline) / 1024,
                           log_z=log_z.tolist(), binary_counts=binary.sum(axis=0).tolist(),
                           binary_total=float(binary.sum()))
    return out


def run_torch_struct(n, vocab, lengths, batch, repeats, seed, threads, budget, max_gib, semiring="log"):
    """torch-struct's CKY: ``semiring="log"`` is its log-space path (``LogSemiring``), timed for
    log Z and marginals; ``"std"`` runs on probabilities (``StdSemiring``, BLAS matmuls, no
    underflow protection) and is timed for the inside pass only, without gradients: its
    marginals fail under torch 2.13 (an autograd in-place error inside torch-struct)."""
    import torch
    from torch_struct import CKY, LogSemiring, StdSemiring

    torch.set_num_threads(threads)
    grammar, weights, sentences = make_problem(n, vocab, lengths, batch, seed)
    binary, lexical = split_weights(grammar, weights)
    log_space = semiring == "log"
    lift = np.log if log_space else np.asarray
    rules_full = torch.from_numpy(lift(np.tile(binary, (1, 2, 2))))              # (N, 2N, 2N)
    lexical_full = torch.from_numpy(lift(lexical.T.copy()))                      # (W, N)
    roots = torch.full((batch, n), -1e9 if log_space else 0.0, dtype=torch.float64)
    roots[:, grammar.start] = 0.0 if log_space else 1.0
    cky = CKY(LogSemiring if log_space else StdSemiring)

    def tensors(ids):
        terms = lexical_full[torch.from_numpy(ids).long()]                      # (batch, T, N)
        rules = rules_full.unsqueeze(0).expand(ids.shape[0], -1, -1, -1)
        return terms, rules, roots[: ids.shape[0]]

    def partition(terms, rules, roots_):
        value = cky.logpartition((terms, rules, roots_))[0].detach().reshape(-1)
        return value if log_space else torch.log(value)

    def counts_of(ids, terms, rules, roots_):
        if not log_space:
            with torch.no_grad():
                return partition(terms, rules, roots_), None
        term_marg, rule_marg, _, _ = cky.marginals((terms, rules, roots_))
        folded = rule_marg.sum(0).reshape(n, 2, n, 2, n).sum((1, 3))              # (N, N, N)
        lexical_counts = torch.zeros(n, vocab, dtype=torch.float64)
        lexical_counts.index_add_(1, torch.from_numpy(ids.ravel()).long(), term_marg.reshape(-1, n).T)
        return folded, lexical_counts

    warm = sentences[lengths[0]][:2, :3]
    counts_of(warm, *tensors(warm))
    baseline = _memory_kib("VmRSS")
    out = {}
    for length in lengths:
        if log_space and TORCH_LOG_MIB_PER_UNIT * batch * length ** 2 * n ** 3 > max_gib * 1024:
            out[length] = None
            continue
        ids = sentences[length]
        terms, rules, roots_ = tensors(ids)
        log_z = partition(terms, rules, roots_)
        _reset_peak()
        times = []
        while len(times) < repeats and (not times or sum(times) < budget):
            start = time.perf_counter()
            folded, _ = counts_of(ids, terms, rules, roots_)
            times.append(time.perf_counter() - start)
        peak = (_memory_kib("VmHWM") - baseline) / 1024
        out[length] = dict(seconds=times, peak_mib=peak, log_z=log_z.tolist())
        if log_space:
            folded = folded.detach().numpy().reshape(n, n * n)
            out[length].update(binary_counts=folded.sum(axis=0).tolist(), binary_total=float(folded.sum()))
    return out


def run_torch_struct_std(*args):
    return run_torch_struct(*args, semiring="std")


WORKERS = {"cvbayes": run_cvbayes, "torch-struct": run_torch_struct, "torch-struct-std-inside": run_torch_struct_std}


# ------------------------------------------------------------------ driver
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,20,30", help="grammar sizes N (default 10,20,30)")
    parser.add_argument("--lengths", default="10,20,30,40", help="sentence lengths T (default 10,20,30,40)")
    parser.add_argument("--batch", type=int, default=8, help="sentences per length, one batch (default 8)")
    parser.add_argument("--vocab", type=int, default=1000, help="vocabulary size W (default 1000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per setting; the median is kept")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="stop repeating a setting once its runs took this many seconds (default 20)")
    parser.add_argument("--max-torch-gib", type=float, default=8.0,
                        help="skip torch-struct log-space settings estimated to need more memory (default 8)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both libraries (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="N = 20, T = 20 only, 3 repeats (the target setting)")
    parser.add_argument("--json", type=Path, help="output file (default benchmarks/results/pcfg_<date>.json)")
    args = parser.parse_args(argv)
    sizes = [int(v) for v in args.sizes.split(",")]
    lengths = [int(v) for v in args.lengths.split(",")]
    repeats = args.repeats
    if args.quick:
        sizes, lengths, repeats = [20], [20], 3
    context = get_context("spawn")
    results = {}
    for n in sizes:
        for name, worker in WORKERS.items():
            with context.Pool(1) as pool:
                results[(name, n)] = pool.apply(worker, (n, args.vocab, lengths, args.batch, repeats, args.seed,
                                                         args.threads, args.budget, args.max_torch_gib))
    rows = []
    print(f"{'N':>3} {'T':>3} {'cvbayes s':>10} {'t-s log s':>10} {'ratio':>7} {'t-s std in s':>12} {'ratio':>6} "
          f"{'cvbayes MiB':>11} {'t-s log MiB':>11} {'t-s std in MiB':>14} {'max|dlogZ|':>10} {'max rel dC':>10}")
    for n in sizes:
        for length in lengths:
            ours = results[("cvbayes", n)][length]
            row = dict(n=n, length=length, batch=args.batch)
            for name in WORKERS:
                measured = results[(name, n)][length]
                if measured is None:
                    row[f"{name}_skipped"] = "estimated memory above --max-torch-gib"
                    continue
                row[f"{name}_seconds"] = statistics.median(measured["seconds"])
                row[f"{name}_seconds_all"] = measured["seconds"]
                row[f"{name}_peak_mib"] = measured["peak_mib"]
                if name != "cvbayes":
                    row[f"{name}_ratio"] = row[f"{name}_seconds"] / row["cvbayes_seconds"]
                    d_log_z = float(np.max(np.abs(np.subtract(ours["log_z"], measured["log_z"]))))
                    row[f"{name}_max_abs_log_z_difference"] = d_log_z
                    if "binary_counts" in measured:
                        a, b = np.asarray(ours["binary_counts"]), np.asarray(measured["binary_counts"])
                        row[f"{name}_max_relative_count_difference"] = float(np.max(np.abs(a - b)) / np.max(b))
            rows.append(row)

            def cell(key, width, form):
                return f"{row[key]:>{width}{form}}" if key in row else f"{'-':>{width}}"

            d_log_z = max(row.get(f"{name}_max_abs_log_z_difference", 0.0) for name in WORKERS if name != "cvbayes")
            print(f"{n:>3} {length:>3} {cell('cvbayes_seconds', 10, '.4f')} {cell('torch-struct_seconds', 10, '.4f')} "
                  f"{cell('torch-struct_ratio', 7, '.1f')} {cell('torch-struct-std-inside_seconds', 12, '.4f')} "
                  f"{cell('torch-struct-std-inside_ratio', 6, '.2f')} {cell('cvbayes_peak_mib', 11, '.1f')} "
                  f"{cell('torch-struct_peak_mib', 11, '.1f')} {cell('torch-struct-std-inside_peak_mib', 14, '.1f')} "
                  f"{d_log_z:>10.1e} {cell('torch-struct_max_relative_count_difference', 10, '.1e')}")
    target = [row for row in rows if row["n"] == 20 and row["length"] == 20]
    if target:
        for name in ("torch-struct", "torch-struct-std-inside"):
            if f"{name}_ratio" not in target[0]:
                continue
            ratio = target[0][f"{name}_ratio"]
            print(f"target (N = 20, T = 20: cvbayes at least as fast as {name}): "
                  f"{'met' if ratio >= 1.0 else 'NOT met'}, ratio {ratio:.2f}")
    report = dict(
        benchmark="pcfg inside-outside with expected counts",
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        machine=dict(platform=platform.platform(), processor=platform.processor(), cpus=os.cpu_count(),
                     python=sys.version.split()[0]),
        versions={name: importlib.metadata.version(name) for name in ("numpy", "numba", "torch", "torch-struct")},
        settings=dict(sizes=sizes, lengths=lengths, batch=args.batch, vocab=args.vocab, repeats=repeats,
                      threads=args.threads, seed=args.seed, budget=args.budget,
                      max_torch_gib=args.max_torch_gib),
        seconds_are="median wall time of one batch: log Z and expected counts of every rule",
        ratio_is="torch-struct seconds / cvbayes seconds (> 1: cvbayes faster)",
        rows=rows)
    path = args.json or RESULTS_DIR / f"pcfg_{datetime.date.today().isoformat()}{'_quick' if args.quick else ''}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

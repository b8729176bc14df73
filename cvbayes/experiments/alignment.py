"""Word alignment (thesis §3.8.3, Fig. 3.14) on the Greek NT with hand-made gold, and on the Bible.

The thesis trained IBM Model 1 then the HMM aligner with EM (GIZA++), VB, CVI-1 and CGS on
Chinese-English FBIS, and reported AER and BLEU (Fig. 3.14). No FBIS here, so:

* ``align-nt``: Greek NT (SBLGNT, source) -> English (BSB, target), 7,936 verses, scored
  against the manual alignments of ``bible-alignments`` (all links sure), see
  `cvbayes.data.bible`. Settings (iterations, prior) are chosen on the Gospels (books 40-43)
  with ``--develop``; the reported run trains on all 27 books and scores all of them, the
  Gospels, and the held-out books 44-66 apart, plus AER per book.
* ``align-bible``: English KJV (source) -> Spanish RV1909 (target), 31,084 verses, scored
  against *silver* links between words that share a Strong's number; and the scaling of wall
  time and peak memory with the number of verses.

Every run aligns both directions with the same algorithm and combines them with
grow-diag-final-and (`cvbayes.models.alignment.align` does the same). It runs in a fresh Python
process of its own (``python -m cvbayes.experiments.alignment worker JOB``) that reads the
corpus from plain text files (one verse a line), so its peak resident memory
(``getrusage().ru_maxrss``) belongs to that run alone; the process first compiles the numba
kernels on 50 verses, outside the timed region. eflomal (``pip install eflomal``; not a
dependency of cvbayes) runs on the same files through its Python API with its default
settings (IBM1 + HMM + fertility, 3 samplers, iterations from the corpus size), and its two
directions are symmetrised by the same code; its row is skipped, with a message, when it is
not installed.

Times: ``seconds`` is the wall time of training both directions, decoding and
symmetrising; ``cpu_seconds`` the CPU time of the process (all threads; for eflomal, of its
binary); tokens per second = (source + target tokens) / ``seconds``.
"""
from __future__ import annotations

import gc
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data import load_bible, load_nt_alignments
from ..data.bible import GOSPELS, ParallelVerses
from ..files import atomic_write, save_figure, write_json, write_text
from .memory import reset_peak, status_mib
from .results import seed_range

ALIGN_ALGORITHMS = ("em", "vb", "cvi1", "cvi2", "cgs", "svi", "scvi")
ALIGN_MODELS = ("hmm", "ibm1")
SYMMETRIZATION = "grow-diag-final-and"
WARMUP_PAIRS = 50

# Chosen on the Gospels with `cvbayes experiment align-nt --develop` (docs/results/align_nt/
# development.md): per algorithm, (IBM1 iterations, HMM iterations) and the Dirichlet prior.
# The fallback when no development.json is under --out.  (EM's prior does not matter: its MAP tables
# are the MLE for every prior <= 1; at priors <= 0.001 VB's exp E[log t] underflows until some verse
# has no alignment of positive probability, and the run stops.)
NT_SETTINGS = {
    "em": {"n_iter": (5, 5), "prior": 0.1},
    "vb": {"n_iter": (20, 20), "prior": 0.1},
    "cvi1": {"n_iter": (3, 3), "prior": 0.001},
    "cvi2": {"n_iter": (2, 2), "prior": 0.001},
    "cgs": {"n_iter": (100, 100), "prior": 0.001},
    # svi, scvi (500 pairs a minibatch, kappa 0.7): from a smaller grid on the Gospels, not yet in
    # development.md; svi fails at prior 0.001 as vb does
    "svi": {"n_iter": (5, 5), "prior": 0.01},
    "scvi": {"n_iter": (2, 2), "prior": 0.001},
}

# The development grid: iterations (the same for IBM1 and the HMM) and priors tried on the Gospels.
DEV_ITERATIONS = {"em": (1, 2, 3, 5, 10), "vb": (1, 2, 3, 5, 10, 20, 50), "cvi1": (1, 2, 3, 5, 10),
                  "cvi2": (1, 2, 3, 5, 10), "cgs": (10, 25, 50, 100), "svi": (1, 2, 3, 5, 10),
                  "scvi": (1, 2, 3, 5, 10)}
DEV_PRIORS = (0.0001, 0.001, 0.01, 0.1, 1.0)
DEV_TOLERANCE = 0.002  # the fewest iterations within 0.2 AER points of the best are chosen (wall times are noisy)

THESIS_AER = {"em": 36.4, "vb": 36.8, "cvi1": 35.7, "cgs": 34.6, "ibm4": 34.5}
THESIS_NOTE = ("Thesis Fig. 3.14 (Chinese-English FBIS, MT03, mean of 5 runs): AER EM (GIZA++) 36.4, "
               "VI 36.8, CVI-1 35.7, CGS (HPYP models of Gal and Blunsom 2013) 34.6, IBM Model 4 34.5. "
               "Different data (here Greek-English or English-Spanish Bible verses), different gold (here "
               "every link is sure, so AER = 1 - F1), and different CGS model: the numbers are a reference "
               "for orderings, not targets.")

NT_BOOK_NAMES = {
    40: "Matthew", 41: "Mark", 42: "Luke", 43: "John", 44: "Acts", 45: "Romans", 46: "1 Corinthians",
    47: "2 Corinthians", 48: "Galatians", 49: "Ephesians", 50: "Philippians", 51: "Colossians",
    52: "1 Thessalonians", 53: "2 Thessalonians", 54: "1 Timothy", 55: "2 Timothy", 56: "Titus",
    57: "Philemon", 58: "Hebrews", 59: "James", 60: "1 Peter", 61: "2 Peter", 62: "1 John", 63: "2 John",
    64: "3 John", 65: "Jude", 66: "Revelation",
}

# 1000 4000 16000 all took 19-21 min on the shared 2-core machine (CGS alone 9-10 min); the default
# leaves out 16000 to stay near a quarter of an hour.
DEFAULT_VERSE_COUNTS = ("1000", "4000", "all")


# --- settings -----------------------------------------------------------------------------------


def _command(name):
    if sys.argv and sys.argv[0].endswith("cvbayes"):
        return "cvbayes " + " ".join(sys.argv[1:])
    return f"cvbayes experiment {name}"


def _algorithms(settings):
    algorithms = list(getattr(settings, "algorithms", None) or ALIGN_ALGORITHMS)
    unknown = [a for a in algorithms if a not in ALIGN_ALGORITHMS]
    if unknown:
        raise SystemExit(f"cvbayes experiment: word alignment has no algorithm {', '.join(unknown)}; "
                         f"choose from {', '.join(ALIGN_ALGORITHMS)}")
    return algorithms


def _models(settings, default):
    text = getattr(settings, "models", None)
    models = text.split(",") if text else list(default)
    unknown = [m for m in models if m not in ALIGN_MODELS]
    if unknown:
        raise SystemExit(f"cvbayes experiment: unknown alignment model {', '.join(unknown)}; "
                         f"choose from {', '.join(ALIGN_MODELS)}")
    return models


def parse_iterations(text):
    """``"em=5+5,cgs=50"`` -> ``{"em": (5, 5), "cgs": (50, 50)}`` (IBM1 + HMM iterations)."""
    out = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, _, value = item.partition("=")
        try:
            numbers = tuple(int(v) for v in value.split("+"))
        except ValueError:
            numbers = ()
        if name not in ALIGN_ALGORITHMS or len(numbers) not in (1, 2) or min(numbers) < 1:
            raise SystemExit(f"cvbayes experiment: --align-iterations item {item!r} is not ALGORITHM=N or "
                             f"ALGORITHM=N+M with ALGORITHM in {', '.join(ALIGN_ALGORITHMS)}")
        out[name] = numbers * 2 if len(numbers) == 1 else numbers
    return out


def development_choice(out):
    """The settings that ``align-nt --develop`` chose, from ``<out>/align_nt/development.json``, or None."""
    path = Path(out) / "align_nt" / "development.json"
    if not path.is_file():
        return None
    chosen = json.loads(path.read_text()).get("chosen", {})
    return {a: {"n_iter": tuple(v["n_iter"]), "prior": float(v["prior"])} for a, v in chosen.items()}


def _settings_for(settings, algorithms):
    """Per algorithm n_iter and prior, and where they came from: the choice of ``align-nt --develop``
    when its results are under --out, else `NT_SETTINGS`; --align-iterations / --prior override."""
    developed = development_choice(settings.out) or {}
    chosen = {a: dict(developed.get(a) or NT_SETTINGS[a]) for a in algorithms}
    source = {a: "development.json" if a in developed else "built-in (NT_SETTINGS)" for a in algorithms}
    for algorithm, n_iter in parse_iterations(getattr(settings, "align_iterations", None)).items():
        if algorithm in chosen:
            chosen[algorithm]["n_iter"] = n_iter
            source[algorithm] = "--align-iterations"
    prior = getattr(settings, "prior", None)
    if prior is not None:
        if not prior > 0:
            raise SystemExit("cvbayes experiment: --prior must be positive")
        for algorithm, values in chosen.items():
            values["prior"] = prior
            source[algorithm] += ", --prior"
    return chosen, source


def eflomal_missing():
    """None when eflomal can be imported, else the message that explains its skipped row."""
    if importlib.util.find_spec("eflomal") is None:
        return ("eflomal is not installed, so its reference row is skipped; `pip install eflomal` (it is not "
                "a dependency of cvbayes) and run again to get it")
    return None


# --- one run, in a process of its own ---------------------------------------------------------------


def write_corpus(data: ParallelVerses, folder: Path) -> tuple[Path, Path]:
    """Write the verses as two text files, one verse a line, tokens separated by spaces."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "source.txt", folder / "target.txt"
    for path, side in zip(paths, (data.source, data.target)):
        with atomic_write(path, "w", encoding="utf-8") as out:
            for words in side:
                out.write(" ".join(words) + "\n")
    return paths


def _rss_mib(who=resource.RUSAGE_SELF):
    """Peak resident memory of this process (or of its finished children) in MiB (ru_maxrss is KiB)."""
    return resource.getrusage(who).ru_maxrss / 1024.0


def _peak_since(reset):
    return status_mib("VmHWM") if reset else _rss_mib()


def _cpu(who=resource.RUSAGE_SELF):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _worker_cvbayes(job):
    from ..models.alignment import Aligner, read_parallel, symmetrize, write_pharaoh

    corpus = read_parallel(job["source"], job["target"])
    for direction in (corpus[:WARMUP_PAIRS], corpus[:WARMUP_PAIRS].reversed()):  # numba compilation
        Aligner(job["model"], job["algorithm"], 1, job["prior"], job["seed"]).fit(direction)
    gc.collect()
    reset = reset_peak()
    rss_before = status_mib("VmRSS") if reset else _rss_mib()
    cpu_started = _cpu()
    started = time.perf_counter()
    forward_model = Aligner(job["model"], job["algorithm"], job["n_iter"], job["prior"], job["seed"]).fit(corpus)
    forward = forward_model.links()
    reverse_model = Aligner(job["model"], job["algorithm"], job["n_iter"], job["prior"], job["seed"])
    reverse_model.fit(corpus.reversed())
    reverse = [{(i, j) for j, i in pair} for pair in reverse_model.links()]
    links = symmetrize(forward, reverse, SYMMETRIZATION)
    seconds = time.perf_counter() - started
    cpu_seconds = _cpu() - cpu_started
    for suffix, value in (("fwd", forward), ("rev", reverse), ("sym", links)):
        write_pharaoh(value, f"{job['links']}.{suffix}")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds,
            "forward_seconds": forward_model.seconds_, "reverse_seconds": reverse_model.seconds_,
            "objective_forward": [r.objective for r in forward_model.history_],
            "objective_reverse": [r.objective for r in reverse_model.history_],
            "peak_rss_mib": _peak_since(reset), "rss_before_fit_mib": rss_before,
            "peak_is": "VmHWM after a reset" if reset else "ru_maxrss (includes compilation)"}


def _worker_eflomal(job):
    import eflomal

    from ..models.alignment import read_pharaoh, symmetrize, write_pharaoh

    forward_path, reverse_path = f"{job['links']}.fwd", f"{job['links']}.rev"
    rss_before = status_mib("VmRSS") or _rss_mib()
    cpu_started = _cpu() + _cpu(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(job["source"], encoding="utf-8") as source, open(job["target"], encoding="utf-8") as target:
        eflomal.Aligner().align(source, target, links_filename_fwd=forward_path,
                                links_filename_rev=reverse_path)
    links = symmetrize(read_pharaoh(forward_path), read_pharaoh(reverse_path), SYMMETRIZATION)
    seconds = time.perf_counter() - started
    cpu_seconds = _cpu() + _cpu(resource.RUSAGE_CHILDREN) - cpu_started
    write_pharaoh(links, f"{job['links']}.sym")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_mib": _rss_mib(resource.RUSAGE_CHILDREN),
            "peak_is": "ru_maxrss of the eflomal binary",
            "python_peak_rss_mib": _rss_mib(), "rss_before_fit_mib": rss_before,
            "eflomal_version": getattr(eflomal, "__version__", None) or _version("eflomal")}


def _version(package):
    try:
        from importlib.metadata import version
        return version(package)
    except Exception:  # noqa: BLE001 - informative only
        return None


def worker_main(argv):
    """``python -m cvbayes.experiments.alignment worker JOB_JSON``: one run, result as JSON on stdout."""
    job = json.loads(argv[0])
    result = _worker_eflomal(job) if job["algorithm"] == "eflomal" else _worker_cvbayes(job)
    print(json.dumps(result))


ISOLATE = True  # each run in a process of its own (False: in this process, for tests; memory is then shared)


def run_job(job, timeout=None):
    """Run one job in a fresh Python process; its JSON result, with the job's fields."""
    if not ISOLATE:
        worker = _worker_eflomal if job["algorithm"] == "eflomal" else _worker_cvbayes
        return {**job, **json.loads(json.dumps(worker(job)))}
    command = [sys.executable, "-m", "cvbayes.experiments.alignment", "worker", json.dumps(job)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"alignment run {job['algorithm']} ({job.get('model')}) failed with code "
                           f"{result.returncode}:\n{result.stderr.strip()[-3000:]}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"alignment run {job['algorithm']} printed no result:\n{result.stdout[-2000:]}")
    return {**job, **json.loads(lines[-1])}


# --- scoring ------------------------------------------------------------------------------------------


def _restrict(links, source_marked, target_marked):
    return [{(i, j) for i, j in pair if src[i] and tgt[j]}
            for pair, src, tgt in zip(links, source_marked, target_marked)]


def score_run(run, data: ParallelVerses, book_subsets=None):
    """Add scores to a finished run: precision, recall, AER of the symmetrised links (and of each
    direction); for silver data also the scores restricted to links between tagged words; and
    per named subset of verses (e.g. books)."""
    from ..models.alignment import read_pharaoh, score_alignment

    links = read_pharaoh(run["links"] + ".sym")
    if len(links) != len(data):
        raise RuntimeError(f"{run['links']}.sym has {len(links)} lines for {len(data)} verses")
    scores = score_alignment(links, data.links)
    run.update(precision=scores["precision"], recall=scores["recall"], aer=scores["aer"],
               n_predicted=scores["n_predicted"], n_reference=scores["n_sure"])
    for suffix in ("fwd", "rev"):
        path = Path(f"{run['links']}.{suffix}")
        if path.is_file():
            run[f"aer_{suffix}"] = score_alignment(read_pharaoh(path), data.links)["aer"]
    if data.source_marked is not None:
        marked = score_alignment(_restrict(links, data.source_marked, data.target_marked), data.links)
        run.update(precision_tagged=marked["precision"], aer_tagged=marked["aer"],
                   n_predicted_tagged=marked["n_predicted"])
    tokens = data.n_source_tokens + data.n_target_tokens
    run["tokens"] = tokens
    # (source word, target word) cells of one direction: the aligners' per-cell statistics scale with it
    run["cells"] = sum(len(s) * len(t) for s, t in zip(data.source, data.target))
    run["tokens_per_second"] = tokens / run["seconds"] if run["seconds"] > 0 else float("nan")
    if book_subsets:
        run["subsets"] = {}
        for name, indices in book_subsets.items():
            part = score_alignment([links[k] for k in indices], [data.links[k] for k in indices])
            run["subsets"][name] = {k: part[k] for k in ("precision", "recall", "aer")}
    return run


# --- tables and plots -------------------------------------------------------------------------------------


def _label(run):
    if run["algorithm"] == "eflomal":
        return "eflomal"
    return f"{run['model']} {run['algorithm']}"


def _group(runs):
    """Finished runs by label (failed runs are listed apart, by `_failures`)."""
    groups = {}
    for run in runs:
        if "failed" not in run:
            groups.setdefault(_label(run), []).append(run)
    return groups


def _failures(runs):
    failed = [r for r in runs if "failed" in r]
    if not failed:
        return ""
    lines = ["Failed runs (left out of the tables):", ""]
    for run in failed:
        where = f", {run['verses']:,} verses" if "verses" in run else ""
        lines.append(f"- {_label(run)}, iterations {run['n_iter']}, prior {run['prior']}, seed {run['seed']}"
                     f"{where}: {run['failed']}")
    return "\n".join(lines) + "\n"


def _mean(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return (float(np.mean(values)), float(np.std(values)), len(values)) if values else (float("nan"), 0.0, 0)


def _pct(stats):
    mean, std, n = stats
    return f"{100 * mean:.1f}" + (f" ± {100 * std:.1f}" if n > 1 else "")


def _num(stats, digits=0):
    mean, std, n = stats
    return f"{mean:,.{digits}f}" + (f" ± {std:,.{digits}f}" if n > 1 else "")


def _iterations_cell(run):
    if run["algorithm"] == "eflomal":
        return "default"
    n_iter = run["n_iter"]
    return f"{n_iter[0]}" if run["model"] == "ibm1" else f"{n_iter[0]} + {n_iter[1]}"


def results_table(runs, silver=False):
    """Markdown table: one row per model and algorithm (mean ± std over seeds)."""
    head = ["model / algorithm", "iterations (IBM1 + HMM)", "prior", "runs", "AER %", "precision %", "recall %"]
    if silver:
        head += ["AER % (tagged)", "precision % (tagged)"]
    head += ["wall s", "CPU s", "tokens / s", "peak RSS MiB (before fit)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, group in _group(runs).items():
        first = group[0]
        cells = [label, _iterations_cell(first), "—" if first["algorithm"] == "eflomal" else f"{first['prior']}",
                 str(len(group)), _pct(_mean(group, "aer")), _pct(_mean(group, "precision")),
                 _pct(_mean(group, "recall"))]
        if silver:
            cells += [_pct(_mean(group, "aer_tagged")), _pct(_mean(group, "precision_tagged"))]
        cells += [_num(_mean(group, "seconds"), 1), _num(_mean(group, "cpu_seconds"), 1),
                  _num(_mean(group, "tokens_per_second")), _memory_cell(group)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _memory_cell(group):
    peak = _mean(group, "peak_rss_mib")[0]
    if group[0]["algorithm"] == "eflomal":
        return f"{peak:,.0f} (binary)"
    return f"{peak:,.0f} ({_mean(group, 'rss_before_fit_mib')[0]:,.0f})"


def thesis_table(runs):
    """Our HMM AER beside the thesis's Fig. 3.14 row."""
    groups = _group(runs)
    columns = [("EM", "em"), ("VB (thesis: VI)", "vb"), ("CVI-1", "cvi1"), ("CVI-2", "cvi2"), ("CGS", "cgs")]
    lines = ["| AER % | " + " | ".join(name for name, _ in columns) + " | IBM Model 4 / eflomal |",
             "|" + "---|" * (len(columns) + 2)]
    thesis = [f"{THESIS_AER[key]:.1f}" if key in THESIS_AER else "—" for _, key in columns]
    lines.append("| thesis, FBIS zh-en (Fig. 3.14) | " + " | ".join(thesis) + f" | {THESIS_AER['ibm4']:.1f} (IBM4) |")
    ours = [_pct(_mean(groups[f"hmm {key}"], "aer")) if f"hmm {key}" in groups else "—" for _, key in columns]
    reference = _pct(_mean(groups["eflomal"], "aer")) + " (eflomal)" if "eflomal" in groups else "— (not run)"
    lines.append("| ours, HMM, this data | " + " | ".join(ours) + f" | {reference} |")
    return "\n".join(lines)


def _pyplot():
    from .plots import plt  # matplotlib with the Agg backend; imported here, not in the worker processes

    return plt


def _save(fig, path):
    plt = _pyplot()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_aer_and_time(path, runs, title, key="aer"):
    """Two panels: AER per model/algorithm (and eflomal), and wall time (log scale)."""
    groups = _group(runs)
    labels = list(groups)
    if not labels:
        return None
    aer = np.array([_mean(groups[label], key)[:2] for label in labels]) * 100
    seconds = np.array([_mean(groups[label], "seconds")[:2] for label in labels])
    colours = ["tab:grey" if label == "eflomal" else ("tab:blue" if label.startswith("hmm") else "tab:orange")
               for label in labels]
    fig, (left, right) = _pyplot().subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(labels))
    left.bar(x, aer[:, 0], yerr=aer[:, 1], color=colours, capsize=3)
    left.set_ylim(max(0.0, aer[:, 0].min() - 10), min(100.0, aer[:, 0].max() + 5))
    left.set_ylabel("AER (%)" + (", tagged words" if key == "aer_tagged" else ""))
    right.bar(x, seconds[:, 0], yerr=seconds[:, 1], color=colours, capsize=3)
    right.set_yscale("log")
    right.set_ylabel("wall time, both directions (s)")
    for ax in (left, right):
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def plot_scaling(path, runs, title):
    """Wall time and peak memory against the number of verses, one line per algorithm."""
    if not _group(runs):
        return None
    fig, (left, right) = _pyplot().subplots(1, 2, figsize=(11, 4))
    for label, group in _group(runs).items():
        sizes = sorted({r["verses"] for r in group})
        seconds = [_mean([r for r in group if r["verses"] == n], "seconds")[0] for n in sizes]
        memory = [_mean([r for r in group if r["verses"] == n], "peak_rss_mib")[0] for n in sizes]
        style = dict(marker="o", linestyle="--" if label == "eflomal" else "-", label=label)
        left.plot(sizes, seconds, **style)
        right.plot(sizes, memory, **style)
    for ax, ylabel in ((left, "wall time, both directions (s)"), (right, "peak resident memory (MiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("verses")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


# --- the experiments ---------------------------------------------------------------------------------------


def _jobs(folder, source, target, models, algorithms, chosen, seeds, with_eflomal, tag=""):
    """Run specs: deterministic algorithms once (seed 0), CGS and eflomal once a seed of ``seeds``."""
    jobs = []
    for model in models:
        for algorithm in algorithms:
            for seed in (seeds if algorithm == "cgs" else [0]):
                n_iter = list(chosen[algorithm]["n_iter"])
                jobs.append({"model": model, "algorithm": algorithm, "n_iter": n_iter,
                             "prior": chosen[algorithm]["prior"], "seed": seed,
                             "source": str(source), "target": str(target),
                             "links": str(folder / f"{tag}{model}_{algorithm}_{seed}")})
    if with_eflomal:
        for seed in seeds:
            jobs.append({"model": None, "algorithm": "eflomal", "n_iter": None, "prior": None, "seed": seed,
                         "source": str(source), "target": str(target),
                         "links": str(folder / f"{tag}eflomal_{seed}")})
    return jobs


def _failure(error):
    """The last line of a failed run's error (e.g. the ValueError of an aligner whose prior is too small)."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(error).__name__


def _run_all(jobs, data, desc, quiet, book_subsets=None, extra=None):
    """Run and score every job; a run that fails is kept with its error under ``failed``, not fatal."""
    runs = []
    for job in tqdm(jobs, desc=desc, disable=quiet, leave=False):
        try:
            run = score_run(run_job(job), data, book_subsets)
        except (RuntimeError, ValueError) as error:
            run = {**job, "failed": _failure(error)}
        run.update(extra or {})
        for key in ("source", "target", "links"):
            run.pop(key)
        runs.append(run)
        if "failed" in run:
            if not quiet:
                tqdm.write(f"  {_label(run):<12} FAILED: {run['failed']}")
            continue
        if not quiet:
            tqdm.write(f"  {_label(run):<12} AER {100 * run['aer']:5.1f}  P {100 * run['precision']:5.1f}  "
                       f"R {100 * run['recall']:5.1f}  {run['seconds']:8.1f} s")
    return runs


def _write(folder, name, report, markdown, quiet=False):
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "results.json", report, indent=1, ensure_ascii=False)
    write_text(folder / "table.md", markdown)
    if not quiet:
        print(markdown)
    return folder


def _fmt_setting(values):
    n1, n2 = values["n_iter"]
    return f"{n1} + {n2} iterations, prior {values['prior']}"


def develop_nt(settings, data, folder, work, algorithms, quiet):
    """The Gospels grid: every (iterations, prior) of `DEV_ITERATIONS` x `DEV_PRIORS`, HMM only."""
    gospels = data.in_books(GOSPELS)
    if len(gospels) == 0:
        raise SystemExit("cvbayes experiment align-nt --develop: the development set is the Gospels (books "
                         "40-43); include them in --books")
    source, target = write_corpus(gospels, work / "dev")
    jobs = []
    for algorithm in algorithms:
        # EM's MAP tables are the MLE for every prior <= 1 (see cvbayes.models.alignment.model): one prior
        priors = (0.1,) if algorithm == "em" else DEV_PRIORS
        for n_iter in DEV_ITERATIONS[algorithm]:
            for prior in priors:
                jobs.append({"model": "hmm", "algorithm": algorithm, "n_iter": [n_iter, n_iter], "prior": prior,
                             "seed": 0, "source": str(source), "target": str(target),
                             "links": str(work / "dev" / f"{algorithm}_{n_iter}_{prior}")})
    if eflomal_missing() is None:
        jobs.append({"model": None, "algorithm": "eflomal", "n_iter": None, "prior": None, "seed": 0,
                     "source": str(source), "target": str(target), "links": str(work / "dev" / "eflomal")})
    runs = _run_all(jobs, gospels, "Gospels grid", quiet)
    # a run for some algorithms only replaces their rows of an earlier development.json
    previous = folder / "development.json"
    commands = [_command("align-nt")]
    if previous.is_file():
        earlier = json.loads(previous.read_text())
        redone = set(algorithms) | ({"eflomal"} if any(r["algorithm"] == "eflomal" for r in runs) else set())
        runs = [r for r in earlier["runs"] if r["algorithm"] not in redone] + runs
        commands = earlier.get("commands", [earlier.get("command")]) + commands
    order = {name: k for k, name in enumerate((*ALIGN_ALGORITHMS, "eflomal"))}
    runs.sort(key=lambda r: (order[r["algorithm"]], r["n_iter"] or [0], r["prior"] or 0))
    chosen = {}
    for algorithm in [a for a in ALIGN_ALGORITHMS if any(r["algorithm"] == a and "failed" not in r for r in runs)]:
        mine = [r for r in runs if r["algorithm"] == algorithm and "failed" not in r]
        lowest = min(r["aer"] for r in mine)
        best = min((r for r in mine if r["aer"] <= lowest + DEV_TOLERANCE), key=lambda r: (r["n_iter"], r["aer"]))
        chosen[algorithm] = {"n_iter": tuple(best["n_iter"]), "prior": best["prior"]}
    lines = ["# align-nt development on the Gospels\n", "Commands: " + "; ".join(f"`{c}`" for c in commands) + "\n",
             f"Data: {gospels.description}; {len(gospels):,} verses, {gospels.n_source_tokens:,} Greek and "
             f"{gospels.n_target_tokens:,} English tokens, {gospels.n_links:,} gold links. HMM (after as many "
             "IBM1 iterations), both directions, grow-diag-final-and; one run each (CGS seed 0). The choice per "
             f"algorithm is the setting with the fewest iterations within {100 * DEV_TOLERANCE:.1f} AER points of "
             "its lowest AER (then the lower AER); iterations, not the noisy wall times, measure cost.\n",
             "| algorithm | iterations (IBM1 = HMM) | prior | AER % | precision % | recall % | wall s |",
             "|---|---|---|---|---|---|---|"]
    for run in runs:
        if "failed" in run:
            lines.append(f"| {run['algorithm']} | {run['n_iter'][0]} | {run['prior']} | failed: {run['failed']} "
                         "| | | |")
            continue
        lines.append(f"| {run['algorithm']} | {run['n_iter'][0] if run['n_iter'] else 'default'} | "
                     f"{run['prior'] if run['prior'] is not None else '—'} | {100 * run['aer']:.1f} | "
                     f"{100 * run['precision']:.1f} | {100 * run['recall']:.1f} | {run['seconds']:.1f} |")
    lines += ["", "Chosen:", ""]
    lines += [f"- {algorithm}: {_fmt_setting(values)}" for algorithm, values in chosen.items()]
    report = {"experiment": "align-nt --develop", "commands": commands, "data": gospels.summary(),
              "description": gospels.description, "grid": {"iterations": DEV_ITERATIONS, "priors": DEV_PRIORS},
              "runs": runs, "chosen": chosen}
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "development.json", report, indent=1, ensure_ascii=False)
    write_text(folder / "development.md", "\n".join(lines) + "\n")
    if not quiet:
        print("\n".join(lines))
    return chosen


def run_align_nt(settings):
    """Greek NT -> English with gold links: develop on the Gospels (``--develop``), report on all books."""
    quiet = getattr(settings, "quiet", False)
    algorithms = _algorithms(settings)
    models = _models(settings, ("hmm", "ibm1"))
    books = getattr(settings, "books", None)
    data = load_nt_alignments(books=books)
    folder = Path(settings.out) / "align_nt"
    missing = eflomal_missing()
    if missing and not quiet:
        print(missing, file=sys.stderr)
    if getattr(settings, "develop", False):
        with tempfile.TemporaryDirectory(prefix="cvbayes-align-") as work:
            develop_nt(settings, data, folder, Path(work), algorithms, quiet)
        return None
    chosen, origin = _settings_for(settings, algorithms)
    with tempfile.TemporaryDirectory(prefix="cvbayes-align-") as work:
        work = Path(work)
        source, target = write_corpus(data, work / "all")
        subsets = {"gospels (development)": [k for k, b in enumerate(data.books) if b in GOSPELS],
                   "books 44-66 (held out)": [k for k, b in enumerate(data.books) if b not in GOSPELS]}
        subsets.update({f"book {b}": [k for k, x in enumerate(data.books) if x == b] for b in sorted(set(data.books))})
        subsets = {name: indices for name, indices in subsets.items() if indices}
        jobs = _jobs(work / "all", source, target, models, algorithms, chosen, seed_range(settings), missing is None)
        runs = _run_all(jobs, data, "align-nt", quiet, subsets)
    folder.mkdir(parents=True, exist_ok=True)
    figure = plot_aer_and_time(folder / "align_nt.png", runs,
                               f"Greek NT -> English (BSB), {len(data):,} verses, gold links: "
                               "AER and wall time (both directions + grow-diag-final-and)")
    report = {"experiment": "align-nt", "command": _command("align-nt"), "data": data.summary(),
              "description": data.description, "thesis": THESIS_NOTE, "thesis_aer": THESIS_AER,
              "symmetrization": SYMMETRIZATION, "settings": {a: {**v, "n_iter": list(v["n_iter"])}
                                                             for a, v in chosen.items()},
              "settings_from": origin,
              "eflomal": missing or "eflomal defaults (model 3, 3 samplers)", "runs": runs}
    markdown = _nt_markdown(data, runs, chosen, origin, missing, settings, figure)
    _write(folder, "align-nt", report, markdown, quiet)
    return report


def _book_table(runs, data):
    groups = {label: group for label, group in _group(runs).items() if label.startswith("hmm") or label == "eflomal"}
    books = sorted(set(data.books))
    counts = {b: data.books.count(b) for b in books}
    lines = ["| book | verses | " + " | ".join(groups) + " |", "|" + "---|" * (len(groups) + 2)]
    for name in ["gospels (development)", "books 44-66 (held out)"] + [f"book {b}" for b in books]:
        if not all(name in run.get("subsets", {}) for group in groups.values() for run in group):
            continue
        shown = (f"{NT_BOOK_NAMES.get(int(name[5:]), name)} ({name[5:]})" if name.startswith("book ")
                 else name)
        n_verses = counts[int(name[5:])] if name.startswith("book ") else (
            sum(counts[b] for b in books if b in GOSPELS) if name.startswith("gospels")
            else sum(counts[b] for b in books if b not in GOSPELS))
        cells = []
        for group in groups.values():
            values = [r["subsets"][name]["aer"] for r in group]
            cells.append(_pct((float(np.mean(values)), float(np.std(values)), len(values))))
        lines.append(f"| {shown} | {n_verses:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _origin_note(origin):
    where = sorted(set(origin.values()))
    return "settings from " + "; ".join(f"{w}: {', '.join(a for a in origin if origin[a] == w)}" for w in where)


def _nt_markdown(data, runs, chosen, origin, missing, settings, figure):
    notes = data.notes
    parts = [
        f"# align-nt: Greek NT -> English with manual gold alignments\n\nCommand: `{_command('align-nt')}`\n",
        f"Data: {data.description}. {len(data):,} verses, {data.n_source_tokens:,} Greek and "
        f"{data.n_target_tokens:,} English tokens, {data.n_links:,} gold links (all sure); dropped: "
        f"{notes['links_across_verses']} links whose tokens lie in different verses, "
        f"{notes['links_to_excluded_tokens']} links to punctuation, {notes['one_sided_verses_dropped']} verses "
        "with text on one side only.\n",
        THESIS_NOTE + "\n",
        "Settings (chosen on the Gospels, see development.md): "
        + "; ".join(f"{a} {_fmt_setting(v)}" for a, v in chosen.items())
        + f" ({_origin_note(origin)}). Both directions, {SYMMETRIZATION}. CGS and eflomal: {settings.seeds} seed(s) "
        "(mean ± std); the other algorithms are deterministic. Trained on all verses, scored on all.\n",
        "## All books\n", results_table(runs), "",
        "Wall s: training both directions + decoding + symmetrising (numba compiled beforehand); CPU s: all "
        "threads of the run's process (eflomal: its binary, which runs both directions and its samplers in "
        "parallel); tokens / s = (Greek + English tokens) / wall s; peak RSS: the highest resident memory of "
        "the run's process while it aligns (its peak is reset after numba's compilation), with its resident "
        "memory just before in brackets (Python, NumPy, numba and the corpus); eflomal: the peak of its "
        "binary. The machine has 2 cores shared with other work, so wall times are noisy.\n",
        "## Beside the thesis (Fig. 3.14)\n", thesis_table(runs), "",
        "## AER % by book (the same runs, scored on each subset)\n", _book_table(runs, data), "",
    ]
    if missing:
        parts.append(f"eflomal: {missing}\n")
    parts.append(_failures(runs))
    if figure:
        parts.append(f"![{Path(figure).name}]({Path(figure).name})\n")
    return "\n".join(parts)


def _verse_counts(settings, n_total):
    counts = []
    for item in getattr(settings, "verse_counts", None) or DEFAULT_VERSE_COUNTS:
        n = n_total if str(item) == "all" else int(item)
        if n < 1:
            raise SystemExit("cvbayes experiment: --verse-counts must be positive or 'all'")
        counts.append(min(n, n_total))
    return sorted(set(counts))


def run_align_bible(settings):
    """KJV English -> RV1909 Spanish with Strong's-number silver links: quality and scaling."""
    quiet = getattr(settings, "quiet", False)
    algorithms = _algorithms(settings)
    models = _models(settings, ("hmm",))
    data = load_bible(max_verses=getattr(settings, "max_verses", None), books=getattr(settings, "books", None))
    chosen, origin = _settings_for(settings, algorithms)
    folder = Path(settings.out) / "align_bible"
    folder.mkdir(parents=True, exist_ok=True)
    missing = eflomal_missing()
    if missing and not quiet:
        print(missing, file=sys.stderr)
    counts = _verse_counts(settings, len(data))
    runs = []
    with tempfile.TemporaryDirectory(prefix="cvbayes-align-") as work:
        work = Path(work)
        for n in counts:
            part = data.head(n)
            source, target = write_corpus(part, work / str(n))
            # the quality table uses the largest size; smaller sizes run the HMM and eflomal once each
            seeds = seed_range(settings, settings.seeds if n == counts[-1] else 1)
            jobs = _jobs(work / str(n), source, target, models if n == counts[-1] else ["hmm"], algorithms,
                         chosen, seeds, missing is None, tag=f"{n}_")
            runs += _run_all(jobs, part, f"align-bible {n:,} verses", quiet, extra={"verses": n})
    full = [r for r in runs if r["verses"] == counts[-1]]
    scaling = [r for r in runs if r["model"] in ("hmm", None)]
    figures = [
        plot_aer_and_time(folder / "align_bible.png", full,
                          f"KJV English -> RV1909 Spanish, {counts[-1]:,} verses, Strong's silver links: AER between "
                          "tagged words and wall time", key="aer_tagged"),
        plot_scaling(folder / "scaling.png", scaling,
                     "KJV -> RV1909: wall time and peak memory against verses (HMM, both directions)"),
    ]
    report = {"experiment": "align-bible", "command": _command("align-bible"), "data": data.summary(),
              "description": data.description, "thesis": THESIS_NOTE, "symmetrization": SYMMETRIZATION,
              "settings": {a: {**v, "n_iter": list(v["n_iter"])} for a, v in chosen.items()},
              "settings_from": origin, "verse_counts": counts, "eflomal": missing or "eflomal defaults (model 3, 3 samplers)",
              "runs": runs}
    markdown = _bible_markdown(data, full, scaling, chosen, origin, counts, missing, settings, figures)
    _write(folder, "align-bible", report, markdown, quiet)
    return report


def _scaling_table(runs, counts):
    groups = _group(runs)
    head = ["verses"] + [f"{label} s" for label in groups] + [f"{label} MiB" for label in groups]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in counts:
        cells = [f"{n:,}"]
        for key, digits in (("seconds", 1), ("peak_rss_mib", 0)):
            for group in groups.values():
                stats = _mean([r for r in group if r["verses"] == n], key)
                cells.append("—" if stats[2] == 0 else _num(stats, digits))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _memory_note(runs):
    """How the peak memory grows: bytes above the pre-fit resident memory per (source x target) cell."""
    finished = [run for group in _group(runs).values() for run in group]
    ours = [r for r in finished if r["algorithm"] != "eflomal" and r.get("cells") and r.get("rss_before_fit_mib")]
    theirs = [r["peak_rss_mib"] for r in finished if r["algorithm"] == "eflomal"]
    if not ours:
        return ""
    per_cell = [(r["peak_rss_mib"] - r["rss_before_fit_mib"]) * 2**20 / r["cells"] for r in ours]
    note = (f"Memory: a run's peak rises above its resident memory before the fit by {min(per_cell):.0f}-"
            f"{max(per_cell):.0f} bytes per cell (a source word x target word pair of a verse; "
            f"{max(r['cells'] for r in ours):,} cells a direction at the largest size), the same for every "
            "algorithm, so it is linear in the sum over verses of I x J: bounded by the corpus, with no dense "
            "vocabulary x vocabulary table, but not constant.")
    if theirs:
        note += f" eflomal's binary stays at {min(theirs):,.0f}-{max(theirs):,.0f} MiB."
    return note


def _bible_markdown(data, full, scaling, chosen, origin, counts, missing, settings, figures):
    notes = data.notes
    parts = [
        f"# align-bible: English KJV -> Spanish RV1909 with Strong's-number silver links\n\n"
        f"Command: `{_command('align-bible')}`\n",
        f"Data: {data.description}. {len(data):,} verses ({notes['verses_empty_on_a_side_dropped']} dropped as "
        f"empty on a side), {data.n_source_tokens:,} English and {data.n_target_tokens:,} Spanish tokens; "
        f"{data.n_links:,} silver links; {100 * notes['source_marked_share']:.0f} % of the English and "
        f"{100 * notes['target_marked_share']:.0f} % of the Spanish words carry a Strong's number.\n",
        "**What the scores mean.** A silver link joins two words of a verse that share a Strong's number; "
        "every tagged Spanish word of a phrase gets the phrase's number, and a number repeated in a verse links "
        "every copy on one side to every copy on the other, so no one-to-one aligner can reach 100 % recall. "
        "Recall is against all silver links. Precision against them is a *lower bound*: a predicted link that "
        "touches an untagged word (54 % of English words: articles, auxiliaries, the KJV's supplied words) can "
        "never be confirmed. So we also report AER and precision **restricted to predicted links between two "
        "tagged words** (\"tagged\"); AER (all) treats the silver links as complete gold.\n",
        "Settings: those chosen on the Greek NT Gospels (no tuning on this data): "
        + "; ".join(f"{a} {_fmt_setting(v)}" for a, v in chosen.items())
        + f" ({_origin_note(origin)}). Both directions, {SYMMETRIZATION}. CGS and eflomal: {settings.seeds} "
        "seed(s) at the largest size, "
        "one elsewhere.\n",
        THESIS_NOTE + "\n",
        f"## Quality and speed, {counts[-1]:,} verses\n", results_table(full, silver=True), "",
        "Wall s / CPU s / tokens / s / peak RSS as in align-nt: both directions + symmetrising, numba compiled "
        "beforehand, the run's own process (eflomal: its binary); 2 shared cores, so wall times are noisy.\n",
        "## Scaling: wall time and peak resident memory against the number of verses\n",
        "The first N verses in canonical order (so the small sizes are all Genesis to Numbers); HMM only, "
        "one run each below the largest size.\n",
        _scaling_table(scaling, counts), "",
        _memory_note(scaling), "",
    ]
    if missing:
        parts.append(f"eflomal: {missing}\n")
    parts.append(_failures(full + [r for r in scaling if r["verses"] != counts[-1]]))
    parts += [f"![{Path(f).name}]({Path(f).name})\n" for f in figures if f]
    return "\n".join(parts)


EXPERIMENTS = {"align-nt": run_align_nt, "align-bible": run_align_bible}


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "worker":
        worker_main(sys.argv[2:])
    else:
        raise SystemExit("usage: python -m cvbayes.experiments.alignment worker JOB_JSON "
                         "(run the experiments with `cvbayes experiment align-nt` or `align-bible`)")

"""How well the approximations of q(C_jk > 0) do (thesis §5.4.4, Fig. 5.2-5.3).

``approximation_errors`` runs the exact message passing of eq. 5.53-5.56 and any
of the approximations (mean field eq. 5.57-5.64, sampling eq. 5.65 with S
samples, the heuristic eq. 5.67) over the chain posteriors of a corpus, one
sequence at a time, accumulates the logs of q(C^i_jk = 0) (eq. 5.46) and
returns the average error of eq. 5.68 for each approximation.  The simulation
study of Fig. 5.2 and the required-length study of Fig. 5.3 are built on it;
the same function serves for chain posteriors taken from a fitted HDP-HMM.

Simulated chain posteriors follow the thesis: q(z_1) and every row of every
q(z_t | z_{t-1}) are proportional to independent U[0, 1] draws; a total length
I x T <= 100 is one sequence, a larger one sequences of 100.
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from ..chains.occupancy import (chain_marginals, combine, exact_zero, heuristic_zero, mean_field_zero, occupied,
                                sampled_zero)
from ..files import save_figure, write_json, write_text
from .results import plain_json, seed_range

DEFAULT_METHODS = ("mean_field", "sampling-100", "sampling-1000", "sampling-10000", "heuristic")
LABELS = {"exact": "exact", "mean_field": "mean field", "heuristic": "heuristic"}
SEQUENCE_LENGTH = 100  # I x T > 100 is cut into sequences of this length (§5.4.4)
THRESHOLD = 0.999      # Fig. 5.3: every q(C_jk > 0) above this

FIG_5_2_LENGTHS = tuple(10 ** e for e in range(7))
FIG_5_2_STATES = (10, 50)
FIG_5_3_STATES = (10, 20, 40, 80, 160, 320)

THESIS_FINDINGS = {
    "fig5.2": ("Thesis (Fig. 5.2, simulated chains, K = 10 and 50, 5 runs): the sampling method's errors "
               "decrease with more samples; the heuristic 'performs surprisingly well, and even better than "
               "drawing 10,000 samples'; for all methods the errors first grow with I x T ('since errors "
               "accumulate') and then diminish once I x T is large enough, because q(C_jk > 0) approaches 1; "
               "the deterministic methods (mean field, heuristic) have smaller errors at larger K, while "
               "sampling is less sensitive to K.  All errors are small in simulation; mean field is accurate "
               "here (it fails only on real data, Fig. 5.4-5.6)."),
    "fig5.3": ("Thesis (Fig. 5.3, simulated chains, 5 runs): the required I x T for all q(C_jk > 0) > 0.999 "
               "grows with K, and given enough data every q(C_jk > 0) gets very close to 1.  'The exact "
               "method does not scale for K >= 160 and the heuristic one is used' there."),
}


# ---------------------------------------------------------------------------
# the reusable comparison


class Comparison(dict):
    """method -> error of eq. 5.68, with the rest of the comparison as attributes.

    ``log10_errors``: the same errors as log10, computed from the accumulated
    logs so that they stay finite when q(C_jk > 0) is 1 to double precision;
    ``occupied``: method -> the (K, K) matrix q(C_jk > 0), "exact" included;
    ``log_zero``: method -> (K, K) log prod_i q(C^i_jk = 0);
    ``seconds``: method -> seconds spent in that method; ``n_sequences``,
    ``n_tokens``.
    """

    def __init__(self, errors, log10_errors, log_zero, seconds, n_sequences, n_tokens):
        super().__init__(errors)
        self.log10_errors = log10_errors
        self.log_zero = log_zero
        self.occupied = {method: occupied(logs) for method, logs in log_zero.items()}
        self.seconds = seconds
        self.n_sequences = n_sequences
        self.n_tokens = n_tokens

    @property
    def exact(self):
        """The exact q(C_jk > 0) (K, K), e.g. for heat maps (Fig. 5.5)."""
        return self.occupied["exact"]

    def as_dict(self):
        return {"errors": dict(self), "log10_errors": dict(self.log10_errors), "seconds": dict(self.seconds),
                "n_sequences": self.n_sequences, "n_tokens": self.n_tokens}


def parse_method(name):
    """'exact' | 'mean_field' | 'heuristic' | 'sampling' | 'sampling-S' -> (kind, S or None)."""
    if name in ("exact", "mean_field", "heuristic"):
        return name, None
    if name == "sampling":
        return "sampling", 1000
    if name.startswith("sampling-"):
        try:
            n_samples = int(name.split("-", 1)[1])
        except ValueError:
            n_samples = 0
        if n_samples > 0:
            return "sampling", n_samples
    raise ValueError(f"unknown method {name!r}: use exact, mean_field, heuristic, sampling or sampling-S")


def label(method):
    kind, n_samples = parse_method(method)
    return LABELS.get(method) or f"sampling, S = {n_samples}"


def _sample_seed(seed, sequence, n_samples):
    """An independent 32-bit seed for each sequence's samples (numba's np.random.seed)."""
    return int(np.random.SeedSequence([seed, sequence, n_samples]).generate_state(1)[0])


def _zero(kind, n_samples, first, conditionals, seed):
    if kind == "exact":
        return exact_zero(first, conditionals)
    if kind == "mean_field":
        return mean_field_zero(chain_marginals(first, conditionals))
    if kind == "heuristic":
        return heuristic_zero(first, conditionals)
    return sampled_zero(first, conditionals, n_samples, seed)


def log10_error(log_a, log_b):
    """log10 of eq. 5.68, mean over (j, k) of |q_a(C > 0) - q_b(C > 0)|, from the two logs of q(C = 0).

    |q_a(C > 0) - q_b(C > 0)| = |exp(log_a) - exp(log_b)|, computed as
    exp(hi) (1 - exp(lo - hi)) in log space: no cancellation against 1 and no
    underflow however close to 1 both are.
    """
    hi = np.maximum(log_a, log_b)
    lo = np.minimum(log_a, log_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(np.isneginf(hi) | (hi == lo), -np.inf, hi + np.log1p(-np.exp(lo - hi)))
    top = terms.max()
    if np.isneginf(top):
        return -np.inf
    log_mean = top + np.log(np.exp(terms - top).sum()) - np.log(terms.size)
    return float(log_mean / np.log(10.0))


def approximation_errors(chains, methods=DEFAULT_METHODS, seed=0):
    """Eq. 5.68 for each approximate method against the exact algorithm, over a corpus of chain posteriors.

    chains: an iterable of (first (K,), conditionals (T-1, K, K)), the Markov
    chain posterior q(z^i) of each sequence (eq. 5.48); consumed one at a time,
    so a generator keeps memory flat.  methods: "mean_field", "heuristic",
    "sampling-S" (S ancestral samples a sequence; "sampling" is S = 1000) or
    "exact".  The corpus-level q(C_jk > 0) = 1 - prod_i q(C^i_jk = 0) (eq. 5.46)
    is accumulated in logs for every method; the error of a method is the mean
    over the K x K pairs (j, k >= 1) of |q(C_jk > 0) - q_approx(C_jk > 0)|.

    Returns a ``Comparison``: a dict method -> error, with the exact matrix
    (``.exact``), every method's matrix (``.occupied``), ``.log10_errors`` and
    per-method ``.seconds``.
    """
    methods = list(dict.fromkeys(methods))
    parsed = {method: parse_method(method) for method in ["exact", *methods]}
    seconds = dict.fromkeys(parsed, 0.0)
    log_zero = {}
    n_sequences = n_tokens = 0
    for first, conditionals in chains:
        first = np.ascontiguousarray(first, dtype=np.float64)
        n_states = first.shape[0]
        conditionals = np.ascontiguousarray(conditionals, dtype=np.float64).reshape(-1, n_states, n_states)
        if not log_zero:
            log_zero = {method: np.zeros((n_states, n_states)) for method in parsed}
        elif n_states != next(iter(log_zero.values())).shape[0]:
            raise ValueError("every chain posterior must have the same number of states")
        for method, (kind, n_samples) in parsed.items():
            sample_seed = _sample_seed(seed, n_sequences, n_samples) if kind == "sampling" else 0
            started = time.perf_counter()
            zero = _zero(kind, n_samples, first, conditionals, sample_seed)
            combine(log_zero[method], zero)
            seconds[method] += time.perf_counter() - started
        n_sequences += 1
        n_tokens += conditionals.shape[0] + 1
    if not log_zero:
        raise ValueError("no chain posteriors given")
    exact = occupied(log_zero["exact"])
    errors, log10_errors = {}, {}
    for method in methods:
        errors[method] = float(np.mean(np.abs(exact - occupied(log_zero[method]))))
        log10_errors[method] = log10_error(log_zero["exact"], log_zero[method])
        if log10_errors[method] > -300:  # the log form keeps the digits lost to 1 - q
            errors[method] = float(10.0 ** log10_errors[method])
    return Comparison(errors, log10_errors, log_zero, seconds, n_sequences, n_tokens)


# ---------------------------------------------------------------------------
# simulated chain posteriors


def simulate_chain(n_states, length, rng):
    """One simulated chain posterior: q(z_1) and each row of q(z_t | z_{t-1}) proportional to U[0, 1]."""
    first = rng.random(n_states)
    first /= first.sum()
    conditionals = rng.random((length - 1, n_states, n_states))
    conditionals /= conditionals.sum(axis=2, keepdims=True)
    return first, conditionals


def _simulated_corpus(n_states, total_length, rng):
    """Yield the chains of a simulated corpus of ``total_length`` tokens (§5.4.4's layout).

    The conditionals' array is reused from one sequence to the next (it is
    consumed before the next one is drawn), which saves the page faults of a
    fresh 80 MB array a sequence at K = 320.
    """
    lengths = ([total_length] if total_length <= SEQUENCE_LENGTH else
               [SEQUENCE_LENGTH] * (total_length // SEQUENCE_LENGTH)
               + ([total_length % SEQUENCE_LENGTH] if total_length % SEQUENCE_LENGTH else []))
    buffer = np.empty((max(lengths) - 1, n_states, n_states))
    for length in lengths:
        first = rng.random(n_states)
        first /= first.sum()
        conditionals = buffer[:length - 1]
        rng.random(out=conditionals)
        conditionals /= conditionals.sum(axis=2, keepdims=True)
        yield first, conditionals


def _endless_corpus(n_states, rng):
    """Sequences of 100 tokens, for as long as they are asked for (Fig. 5.3)."""
    buffer = np.empty((SEQUENCE_LENGTH - 1, n_states, n_states))
    while True:
        first = rng.random(n_states)
        first /= first.sum()
        rng.random(out=buffer)
        buffer /= buffer.sum(axis=2, keepdims=True)
        yield first, buffer


def _warm_up(methods):
    """Compile (or load from numba's cache) every kernel before anything is timed."""
    approximation_errors([simulate_chain(3, 4, np.random.default_rng(0))], methods)


# ---------------------------------------------------------------------------
# Fig. 5.2


def _rng(*keys):
    return np.random.default_rng([int(k) for k in keys])


def run_fig_5_2(settings):
    """Errors of each approximation against the exact method on simulated chains (Fig. 5.2)."""
    states = settings.k_values or FIG_5_2_STATES
    max_length = settings.max_length or FIG_5_2_LENGTHS[-1]
    lengths = [length for length in FIG_5_2_LENGTHS if length <= max_length]
    budget = settings.budget
    methods = list(DEFAULT_METHODS)
    _warm_up(methods)
    panels = []
    for n_states in states:
        # the cost of one 100-token sequence (or the longest length asked for), every method
        probe_length = min(SEQUENCE_LENGTH, max_length)
        started = time.perf_counter()
        probe_chain = simulate_chain(n_states, probe_length, _rng(10 ** 6, n_states))
        generate = time.perf_counter() - started
        probe = approximation_errors([probe_chain], methods)
        per_token = {m: s / probe_length for m, s in probe.seconds.items()}
        per_token["generate"] = generate / probe_length
        panel = {"n_states": n_states, "probe": {"tokens": probe_length, "seconds": {
            m: s * probe_length for m, s in per_token.items()}}, "rows": [], "stopped": None}
        spent = 0.0
        for length in lengths:
            estimate = {m: settings.seeds * length * s for m, s in per_token.items()}
            if budget and spent + sum(estimate.values()) > budget:
                worst = max((m for m in estimate if m != "generate"), key=estimate.get)
                panel["stopped"] = {
                    "length": length, "spent_seconds": spent, "budget_seconds": budget,
                    "estimated_seconds": sum(estimate.values()), "estimated_seconds_by_method": estimate,
                    "reason": (f"I x T = {length:,} would take about {sum(estimate.values()):,.0f} s for "
                               f"{settings.seeds} runs (exact {estimate['exact']:,.0f} s, "
                               f"{label(worst)} the largest share) on top of the {spent:,.0f} s spent; "
                               f"the budget is {budget:,.0f} s for this K")}
                break
            runs = []
            for run in seed_range(settings):
                started = time.perf_counter()
                result = approximation_errors(_simulated_corpus(n_states, length, _rng(run, n_states, length)),
                                              methods, seed=run)
                wall = time.perf_counter() - started
                spent += wall
                runs.append({"run": run, **result.as_dict(), "wall_seconds": wall,
                             "min_exact_occupied": float(result.exact.min()),
                             "mean_exact_occupied": float(result.exact.mean())})
            row = {"length": length, "n_sequences": runs[0]["n_sequences"],
                   "sequence_length": min(length, SEQUENCE_LENGTH), "runs": runs,
                   "mean": {}, "std": {}, "log10_mean": {}}
            for method in methods:
                logs = np.array([r["log10_errors"][method] for r in runs]) * np.log(10.0)
                errors = np.array([r["errors"][method] for r in runs])
                row["log10_mean"][method] = (float((logs.max() + np.log(np.exp(logs - logs.max()).mean()))
                                                   / np.log(10.0)) if np.isfinite(logs.max()) else -math.inf)
                row["mean"][method] = float(errors.mean())
                row["std"][method] = float(errors.std())
            row["exact_seconds_per_run"] = float(np.mean([r["seconds"]["exact"] for r in runs]))
            row["wall_seconds_per_run"] = float(np.mean([r["wall_seconds"] for r in runs]))
            panel["rows"].append(row)
            print(f"fig5.2 K = {n_states} I x T = {length}: {row['wall_seconds_per_run']:.2f} s a run; "
                  + ", ".join(f"{m} {_number(row['mean'][m], row['log10_mean'][m])}" for m in methods),
                  file=sys.stderr, flush=True)
        panels.append(panel)
    results = {"methods": methods, "seeds": settings.seeds, "budget_seconds_per_k": budget,
               "max_length": max_length, "panels": panels}
    _write(Path(settings.out) / "fig5_2", "fig5.2", results)


def _render_fig_5_2(folder, results):
    figure = _plot_fig_5_2(folder / "fig5_2.png", results["panels"], results["methods"], results["seeds"])
    return _table_fig_5_2(results["panels"], results["methods"], results["seeds"]), [figure]


def _number(value, log10_value=None):
    """A compact error: 1.2e-03, 0, or 10^-412.3 below double precision."""
    if value > 0 or log10_value is None or not np.isfinite(log10_value):
        return "0" if value == 0 else f"{value:.1e}"
    return f"10^{log10_value:.1f}"


def _table_fig_5_2(panels, methods, seeds):
    lines = [f"Error of eq. 5.68 (mean over the K x K pairs of |q(C_jk > 0) - q_approx(C_jk > 0)|), mean ± std "
             f"over {seeds} runs; simulated chains, every q(z_t | z_t-1) row and q(z_1) proportional to U[0, 1]; "
             f"I x T <= 100 is one sequence, larger totals are sequences of 100.  Sampling draws S ancestral "
             f"samples a sequence.  Errors below double precision (q(C > 0) = 1 to 16 digits for both) are "
             f"computed from the logs of q(C = 0) and written 10^x.  At I x T = 1 there is no transition and "
             f"every method gives q(C > 0) = 0; what shows there is the rounding of sum q(z_1) in the exact "
             f"method (about 1e-16), and the plot starts at 10.", ""]
    for panel in panels:
        k = panel["n_states"]
        lines += [f"## K = {k}", "",
                  "| I x T | I | " + " | ".join(label(m) for m in methods) + " | min exact q(C>0) | exact s/run |",
                  "|---|---|" + "---|" * (len(methods) + 2)]
        for row in panel["rows"]:
            cells = []
            for m in methods:
                cell = _number(row["mean"][m], row["log10_mean"][m])
                if row["mean"][m] > 0 and seeds > 1:
                    cell += f" ± {row['std'][m]:.1e}"
                cells.append(cell)
            min_occ = min(r["min_exact_occupied"] for r in row["runs"])
            lines.append(f"| {row['length']:,} | {row['n_sequences']:,} | " + " | ".join(cells)
                         + f" | {max(min_occ, 0.0) + 0.0:.6f} | {row['exact_seconds_per_run']:.3g} |")
        probe = panel["probe"]
        lines += ["", f"Measured on one {probe['tokens']}-token chain at K = {k}: "
                  + ", ".join(f"{label(m) if m != 'generate' else 'drawing the chain'} {s:.2g} s"
                              for m, s in probe["seconds"].items()) + "."]
        if panel["stopped"]:
            lines.append(f"Stopped before I x T = {panel['stopped']['length']:,}: {panel['stopped']['reason']}.")
        else:
            lines.append("Every length asked for was run.")
        lines += ["", *_verdicts_fig_5_2(panel, methods), ""]
    return "\n".join(lines)


def _verdicts_fig_5_2(panel, methods):
    rows = [r for r in panel["rows"] if r["length"] > 1]
    if not rows:
        return []
    log_mean = {m: np.array([_log10(r["log10_mean"][m]) for r in rows]) for m in methods}
    lengths = [r["length"] for r in rows]
    out = ["Against the thesis's findings:"]
    samplings = [m for m in methods if m.startswith("sampling")]
    if len(samplings) > 1:
        ordered = all(np.all(log_mean[a] >= log_mean[b] - 1e-12) for a, b in zip(samplings, samplings[1:]))
        out.append(f"- more samples, smaller errors at every length: {'yes' if ordered else '**no**'}")
    if "heuristic" in methods and "sampling-10000" in methods:
        better = int(np.sum(log_mean["heuristic"] < log_mean["sampling-10000"]))
        out.append(f"- heuristic below sampling with S = 10,000: at {better} of {len(rows)} lengths")
    if "mean_field" in methods and "heuristic" in methods:
        better = int(np.sum(log_mean["heuristic"] < log_mean["mean_field"]))
        out.append(f"- heuristic below mean field: at {better} of {len(rows)} lengths")
    peaks = {m: int(np.argmax(log_mean[m])) for m in methods}
    out.append("- the largest error is at I x T = " + ", ".join(f"{lengths[peaks[m]]:,} ({label(m)})"
                                                               for m in methods))
    falling = [m for m in methods if peaks[m] < len(lengths) - 1]
    if falling:
        out.append("- past its peak the error falls, as q(C > 0) approaches 1, for: "
                   + ", ".join(label(m) for m in falling))
    if len(falling) < len(methods):
        out.append("- still growing at the largest I x T run for: "
                   + ", ".join(label(m) for m in methods if m not in falling))
    return out


def _plot_fig_5_2(path, panels, methods, seeds, floor=1e-12):
    """Error against I x T, log-log, one panel per K; errors below ``floor`` (or at rounding level
    where there is no transition, I x T = 1) are drawn as triangles on the floor."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        below_any = False
        for index, method in enumerate(methods):
            color = f"C{index}"
            rows = [r for r in panel["rows"] if r["length"] > 1]
            if not rows:
                continue
            x = np.array([r["length"] for r in rows], dtype=float)
            y = 10.0 ** np.array([_log10(r["log10_mean"][method]) for r in rows])
            s = np.array([r["std"][method] for r in rows])
            above = y >= floor
            ax.plot(x, np.maximum(y, floor), color=color, linewidth=1.2, label=label(method))
            ax.errorbar(x[above], y[above], yerr=[np.minimum(s, 0.9 * y)[above], s[above]], fmt="o",
                        color=color, capsize=3)
            if (~above).any():
                below_any = True
                ax.plot(x[~above], np.full((~above).sum(), floor), "v", color=color, markersize=7)
        if below_any:
            ax.text(0.02, 0.02, f"\u25bc: below {floor:.0e} (see table.md)", transform=ax.transAxes, fontsize=7,
                    color="grey")
        if panel["stopped"]:
            ax.axvline(panel["stopped"]["length"], color="grey", linestyle=":", linewidth=1)
            ax.text(panel["stopped"]["length"], 0.5, " not run:\n too slow", transform=ax.get_xaxis_transform(),
                    fontsize=8, color="grey", va="center")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, 1.0)
        ax.set_xlim(5, 2 * max(FIG_5_2_LENGTHS))
        ax.set_xlabel("I x T (total length of the chains)")
        ax.set_ylabel("average approximation error (eq. 5.68)")
        ax.set_title(f"K = {panel['n_states']} (mean ± std, {seeds} runs)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return str(path)


def _log10(value):
    """log10 errors as stored: None in results.json for an error of exactly 0."""
    return -math.inf if value is None else value


# ---------------------------------------------------------------------------
# Fig. 5.3


def required_length(n_states, method, rng, max_length, threshold=THRESHOLD):
    """The fewest 100-token sequences after which every q(C_jk > 0) > threshold, by ``method``.

    Sequences are added one at a time and q(C > 0) only grows with each
    (eq. 5.46), so checking after every addition (K^2 operations, against T K^2
    or more for the sequence itself) finds the smallest such I x T exactly and
    computes each sequence once -- what doubling and bisection would find, with
    less work.  Returns (tokens or None if ``max_length`` was reached first,
    sequences used, seconds in the method, seconds in all).
    """
    kind, n_samples = parse_method(method)
    limit = math.log1p(-threshold)  # q(C > 0) > threshold  <=>  log q(C = 0) < log(1 - threshold)
    log_zero = np.zeros((n_states, n_states))
    in_method = 0.0
    started = time.perf_counter()
    for i, (first, conditionals) in enumerate(_endless_corpus(n_states, rng)):
        if i * SEQUENCE_LENGTH >= max_length:
            return None, i, in_method, time.perf_counter() - started
        tick = time.perf_counter()
        combine(log_zero, _zero(kind, n_samples, first, conditionals, _sample_seed(0, i, n_samples or 0)))
        in_method += time.perf_counter() - tick
        if log_zero.max() < limit and occupied(log_zero).min() > threshold:
            return (i + 1) * SEQUENCE_LENGTH, i + 1, in_method, time.perf_counter() - started


def _exact_seconds_per_sequence(n_states, measured):
    """Seconds of exact message passing for one 100-token sequence: measured up to K = 40, then K^4 scaling."""
    probe_states = min(n_states, 40)
    if probe_states not in measured:
        first, conditionals = simulate_chain(probe_states, SEQUENCE_LENGTH, _rng(10 ** 6, probe_states))
        started = time.perf_counter()
        exact_zero(first, conditionals)
        measured[probe_states] = time.perf_counter() - started
    return measured[probe_states] * (n_states / probe_states) ** 4, probe_states


def _required_runs(n_states, method, seeds, max_length):
    """Fig. 5.3's required length by ``method``, once a run of ``seeds`` (the same chains for every method)."""
    runs = []
    for run in seeds:
        tokens, sequences, in_method, wall = required_length(n_states, method, _rng(run, n_states, 53), max_length)
        runs.append({"run": run, "tokens": tokens, "sequences": sequences, "method_seconds": in_method,
                     "wall_seconds": wall})
        print(f"fig5.3 K = {n_states} run {run} {method}: {tokens} tokens, {wall:.1f} s", file=sys.stderr, flush=True)
    return runs


def run_fig_5_3(settings):
    """The I x T at which every q(C_jk > 0) > 0.999, against K (Fig. 5.3)."""
    states = settings.k_values or FIG_5_3_STATES
    max_length = settings.max_length or 10 ** 7
    budget = settings.budget
    _warm_up(["heuristic"])
    measured = {}
    rows = []
    for n_states in states:
        heuristic = _required_runs(n_states, "heuristic", seed_range(settings), max_length)
        row = {"n_states": n_states, "heuristic": heuristic,
               "exact": None, "exact_skipped": None}
        per_sequence, probe_states = _exact_seconds_per_sequence(n_states, measured)
        sequences = sum(r["sequences"] for r in row["heuristic"])
        estimate = per_sequence * sequences
        row["exact_seconds_per_sequence"] = per_sequence
        row["exact_seconds_measured_at_k"] = probe_states
        row["exact_estimated_seconds"] = estimate
        if budget and estimate > budget:
            row["exact_skipped"] = (f"exact not run: about {per_sequence:.3g} s a 100-token sequence "
                                    f"({'measured' if probe_states == n_states else f'measured at K = {probe_states}, scaled by K^4'}) "
                                    f"x {sequences:,} sequences (the heuristic's count over {settings.seeds} runs) "
                                    f"= {estimate:,.0f} s, over the {budget:,.0f} s budget")
        else:
            row["exact"] = _required_runs(n_states, "exact", seed_range(settings), max_length)
        row["method"] = "exact" if row["exact"] is not None else "heuristic"
        for method in ("heuristic", "exact"):
            if row[method] is not None:
                values = [r["tokens"] for r in row[method]]
                reached = [v for v in values if v is not None]
                row[f"{method}_mean"] = float(np.mean(reached)) if len(reached) == len(values) else None
                row[f"{method}_std"] = float(np.std(reached)) if len(reached) == len(values) else None
        row["required_mean"] = row[f"{row['method']}_mean"]
        row["required_std"] = row[f"{row['method']}_std"]
        rows.append(row)
    results = {"threshold": THRESHOLD, "sequence_length": SEQUENCE_LENGTH, "seeds": settings.seeds,
               "max_length": max_length, "budget_seconds_per_k": budget, "power_law": _power_law(rows),
               "rows": rows}
    _write(Path(settings.out) / "fig5_3", "fig5.3", results)


def _render_fig_5_3(folder, results):
    rows, seeds, fit = results["rows"], results["seeds"], results["power_law"]
    figure = _plot_fig_5_3(folder / "fig5_3.png", rows, seeds, fit)
    return _table_fig_5_3(rows, seeds, results["max_length"], fit), [figure]


def _power_law(rows):
    """Least-squares fit of log required length = log c + slope log K over the K reached."""
    points = [(r["n_states"], r["required_mean"]) for r in rows if r["required_mean"]]
    if len(points) < 2:
        return None
    k, n = map(np.log, map(np.array, zip(*points)))
    slope, intercept = np.polyfit(k, n, 1)
    return {"slope": float(slope), "coefficient": float(np.exp(intercept)),
            "required_over_k_squared": [float(np.exp(b) / np.exp(a) ** 2) for a, b in zip(k, n)]}


def _cell(mean, std, runs):
    if mean is None:
        missing = sum(r["tokens"] is None for r in runs)
        return f"not reached in {missing} of {len(runs)} runs"
    return f"{mean:,.0f} ± {std:,.0f}"


def _table_fig_5_3(rows, seeds, max_length, fit):
    lines = [f"Smallest I x T (sequences of {SEQUENCE_LENGTH}, added one at a time) at which every "
             f"q(C_jk > 0) > {THRESHOLD}, mean ± std over {seeds} runs; simulated chains as in Fig. 5.2; "
             f"searched up to {max_length:,} tokens.  'used' is exact where it ran within the time budget, "
             f"else the heuristic, as the thesis did; the heuristic ran for every K.", "",
             "| K | used | required I x T (used) | heuristic | exact | required / K^2 | exact s a sequence |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        exact = (_cell(row["exact_mean"], row["exact_std"], row["exact"]) if row["exact"] is not None
                 else "not run")
        ratio = f"{row['required_mean'] / row['n_states'] ** 2:.2f}" if row["required_mean"] else "-"
        scaled = "" if row["exact_seconds_measured_at_k"] == row["n_states"] else " (scaled)"
        lines.append(f"| {row['n_states']} | {row['method']} | "
                     f"{_cell(row['required_mean'], row['required_std'], row[row['method']])} | "
                     f"{_cell(row['heuristic_mean'], row['heuristic_std'], row['heuristic'])} | {exact} | {ratio} | "
                     f"{row['exact_seconds_per_sequence']:.3g}{scaled} |")
    lines.append("")
    for row in rows:
        if row["exact_skipped"]:
            lines.append(f"- K = {row['n_states']}: {row['exact_skipped']}.")
    for row in rows:
        if row["exact"] is not None:
            same = sum(a["tokens"] == b["tokens"] for a, b in zip(row["exact"], row["heuristic"]))
            lines.append(f"- K = {row['n_states']}: the heuristic finds the same I x T as exact in {same} of "
                         f"{len(row['exact'])} runs.")
    if fit:
        lines.append(f"- log-log fit over the K above: required I x T ~ {fit['coefficient']:.2f} "
                     f"K^{fit['slope']:.2f}.  For comparison: the K^2 pair probabilities of a token sum to 1, "
                     f"so a pair occurs about I x T / K^2 times; were its occurrences Poisson, "
                     f"q(C_jk = 0) = exp(-I x T / K^2) and 0.999 needs I x T = -ln(1 - {THRESHOLD}) K^2 = "
                     f"{-math.log1p(-THRESHOLD):.2f} K^2, before the spread across pairs and the rounding up "
                     f"to whole sequences of {SEQUENCE_LENGTH}.")
    return "\n".join(lines)


def _plot_fig_5_3(path, rows, seeds, fit):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for method, style in (("required", "o-"), ("heuristic", "x--")):
        points = [(r["n_states"], r[f"{method}_mean"], r[f"{method}_std"]) for r in rows if r[f"{method}_mean"]]
        if points:
            k, mean, std = map(np.array, zip(*points))
            text = "exact (heuristic where exact is too slow)" if method == "required" else "heuristic, every K"
            ax.errorbar(k, mean, yerr=std, fmt=style, capsize=3, label=text, alpha=1.0 if method == "required" else 0.6)
    for r in rows:
        if r["method"] == "heuristic" and r["required_mean"]:
            ax.annotate("heuristic", (r["n_states"], r["required_mean"]), textcoords="offset points",
                        xytext=(-20, 8), fontsize=7)
    if fit:
        k = np.array([r["n_states"] for r in rows], dtype=float)
        ax.plot(k, fit["coefficient"] * k ** fit["slope"], color="grey", linewidth=0.8,
                label=f"{fit['coefficient']:.2f} K^{fit['slope']:.2f}")
    # Explicit limits with room on both sides: with every point at one value (a small run), log-scale
    # autoscaling would see identical low and high limits.
    values = [r[f"{m}_mean"] for r in rows for m in ("required", "heuristic") if r[f"{m}_mean"]]
    if values:
        ax.set_ylim(min(values) / 2, max(values) * 2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([r["n_states"] for r in rows], [str(r["n_states"]) for r in rows])
    ax.set_xlabel("K")
    ax.set_ylabel(f"required I x T for all q(C_jk > 0) > {THRESHOLD}")
    ax.set_title(f"Simulated chains, mean ± std of {seeds} runs")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return str(path)


# ---------------------------------------------------------------------------


def _command(name):
    if sys.argv and sys.argv[0].endswith("cvbayes"):
        return "cvbayes " + " ".join(sys.argv[1:])
    return f"cvbayes experiment {name}"


def _write(folder, name, results):
    """results.json, then table.md and the PNG drawn from what results.json holds."""
    folder.mkdir(parents=True, exist_ok=True)
    results = plain_json({"experiment": name, "command": _command(name), "thesis": THESIS_FINDINGS[name],
                       **results})
    write_json(folder / "results.json", results, indent=1, allow_nan=False)
    render(folder)
    return folder


def render(folder):
    """(Re)write table.md and the PNG of a fig5.2 or fig5.3 folder from its results.json."""
    folder = Path(folder)
    results = json.loads((folder / "results.json").read_text())
    name = results["experiment"]
    table, figures = {"fig5.2": _render_fig_5_2, "fig5.3": _render_fig_5_3}[name](folder, results)
    md = (f"# {name}\n\nCommand: `{results['command']}`\n\n{results['thesis']}\n\n{table}\n\n"
          + "\n".join(f"![{Path(f).name}]({Path(f).name})" for f in figures) + "\n")
    write_text(folder / "table.md", md)
    print(md)


EXPERIMENTS = {"fig5.2": run_fig_5_2, "fig5.3": run_fig_5_3}

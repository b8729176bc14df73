"""A Poisson HMM on the British coal-mining disasters, 1851-1961: ``emission="poisson"`` on a count series.

    python docs/examples/coal_mining.py --seed 0 --out docs/results/coal_mining

The series: the number of explosions in British coal mines that killed ten or more people, a year from
1851 to 1961 (111 years, 191 disasters), from the dates Jarrett (1979, "A note on the intervals between
coal-mining disasters", Biometrika 66(1), 191-193) lists, in the annual form of the change-point
literature (Carlin, Gelfand and Smith 1992) and PyMC's tutorial.  No package cvbayes depends on ships it
(scikit-learn's and SciPy's data sets hold no count series), so its 111 numbers are written out below.

A two-state HMM with Poisson emissions (Gamma(1, 1 / mean) prior on the rates, alpha = 1 on the
transitions) is fitted by EM, VB, CVI-3 (the series is one sequence, which CVI-2 cannot leave out; CVI-3
cuts it into subchains of 10 years) and collapsed Gibbs sampling.  The reference is the classic single
change-point Poisson model, fitted here by maximum likelihood over every change year: an HMM is free to
switch back and forth, and on these data it finds the same regime change.  Writes results.json,
table.md and coal_mining.png into --out.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

import cvbayes
from cvbayes.files import save_figure, write_json, write_text

FIRST_YEAR = 1851
DISASTERS = np.array([
    4, 5, 4, 0, 1, 4, 3, 4, 0, 6, 3, 3, 4, 0, 2, 6, 3, 3, 5, 4, 5, 3, 1, 4, 4, 1, 5, 5, 3, 4, 2, 5, 2, 2, 3, 4, 2,
    1, 3, 2, 2, 1, 1, 1, 1, 3, 0, 0, 1, 0, 1, 1, 0, 0, 3, 1, 0, 3, 2, 2, 0, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 2, 1, 0,
    0, 0, 1, 1, 0, 2, 3, 3, 1, 1, 2, 1, 1, 1, 1, 2, 4, 2, 0, 0, 1, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1])
YEARS = FIRST_YEAR + np.arange(DISASTERS.shape[0])
ALGORITHMS = {"em": 100, "vb": 100, "cvi3": 100, "cgs": 500}
SUBCHAIN = 10


def change_point_mle(counts):
    """The single change-point Poisson model by maximum likelihood: (first year of the second regime,
    rate before, rate after), over every split of the series into two non-empty parts."""
    best = None
    for split in range(1, counts.shape[0]):
        before, after = counts[:split].mean(), counts[split:].mean()
        log_lik = sum(part.sum() * np.log(rate) - rate * part.shape[0] if rate > 0 else 0.0
                      for part, rate in ((counts[:split], before), (counts[split:], after)))
        if best is None or log_lik > best[0]:
            best = (log_lik, split, before, after)
    _, split, before, after = best
    return int(YEARS[split]), float(before), float(after)


def fit(algorithm, seed):
    """A fitted two-state Poisson HMM, its states in time order (state 0 the first year's) and summary."""
    start = time.perf_counter()
    model = cvbayes.HMM(2, alpha=1.0, emission="poisson", algorithm=algorithm, n_iter=ALGORITHMS[algorithm],
                        random_state=seed, subchain_length=SUBCHAIN if algorithm == "cvi3" else None)
    model.fit(DISASTERS)
    seconds = time.perf_counter() - start
    states = model.decode(DISASTERS)
    rates = model.lambdas_[:, 0]
    high = int(np.argmax(rates))
    low_years = YEARS[states != high]
    # the regime change: the first year after the last year of the high-rate state
    change = int(YEARS[np.flatnonzero(states == high).max() + 1]) if (states == high).any() else None
    return {"algorithm": algorithm, "seed": seed, "iterations": ALGORITHMS[algorithm], "seconds": round(seconds, 3),
            "rates": {"high": float(rates[high]), "low": float(rates[1 - high])},
            "change_year": change, "years_in_low_state_before_change": int((low_years < (change or 0)).sum()),
            "switches": int(np.count_nonzero(np.diff(states))), "objective_name": model.objective_name_,
            "objective": float(model.history_[-1].objective), "score": float(model.score(DISASTERS)),
            "states": states.tolist(), "high_state": high}


def plot(runs, reference, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(9, 3.6))
    axis.bar(YEARS, DISASTERS, color="0.8", label="disasters a year")
    for run, style in zip(runs, ("-", "--", "-.", ":")):
        high, low = run["rates"]["high"], run["rates"]["low"]
        rate = np.where(np.array(run["states"]) == run["high_state"], high, low)
        axis.step(YEARS, rate, where="mid", linestyle=style, linewidth=1.6, label=f"{run['algorithm']}: state's rate")
    year, before, after = reference
    axis.axvline(year - 0.5, color="k", linewidth=0.8, label=f"change-point MLE ({year})")
    axis.set_xlabel("year")
    axis.set_ylabel("disasters")
    axis.set_title("British coal-mining disasters: two-state Poisson HMM, decoded rates")
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    save_figure(figure, path, dpi=120)
    plt.close(figure)


def table(runs, reference):
    year, before, after = reference
    lines = ["# Coal-mining disasters, 1851-1961: a two-state Poisson HMM", "",
             f"Command: `python docs/examples/coal_mining.py --seed {runs[0]['seed']} --out docs/results/coal_mining`",
             "", "111 annual counts (191 disasters; Jarrett 1979). Gamma(1, 1 / mean count) prior on the rates, "
             "alpha = 1; CVI-3 on subchains of 10 years. The reference is the single change-point Poisson "
             "model by maximum likelihood (not an HMM; an HMM may switch back and forth).", "",
             "| learner | passes | seconds | rate, high state | rate, low state | change year | low years before it "
             "| switches | objective |", "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        lines.append(f"| {run['algorithm']} | {run['iterations']} | {run['seconds']:.2f} | {run['rates']['high']:.2f} "
                     f"| {run['rates']['low']:.2f} | {run['change_year']} | {run['years_in_low_state_before_change']} "
                     f"| {run['switches']} | {run['objective']:.2f} |")
    lines += [f"| change-point MLE | | | {before:.2f} | {after:.2f} | {year} | | 1 | |", "",
              "![decoded rates](coal_mining.png)", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="docs/results/coal_mining")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    reference = change_point_mle(DISASTERS)
    runs = [fit(algorithm, args.seed) for algorithm in ALGORITHMS]
    write_json(folder / "results.json", {"command": " ".join(["python", "docs/examples/coal_mining.py", *argv]),
                                         "first_year": FIRST_YEAR, "counts": DISASTERS.tolist(),
                                         "change_point_mle": dict(zip(("year", "rate_before", "rate_after"), reference)),
                                         "runs": runs}, indent=1)
    text = table(runs, reference)
    write_text(folder / "table.md", text)
    plot(runs, reference, folder / "coal_mining.png")
    print(text)
    return runs, reference


if __name__ == "__main__":
    main()

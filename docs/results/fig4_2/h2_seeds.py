"""H = 2 of Fig. 4.2, every seed on test: is VB < EM in the main table the learners or the run kept?

The main table keeps, for each learner, the run of the best training objective among seeds 0-4 and
parses test with it alone.  Here each seed's run parses test, at alpha = 1 for all three learners
(the alpha EM has and VB chose on dev; CVI chose 0.1 there), one process a seed:

    cvbayes experiment fig4.2 --la-subtypes 2 --la-alphas 1 --seeds 1 --seed S --la-select objective \
        --la-dev-sentences 20 --out RUNS/sS          (S = 0..4)
    python docs/results/fig4_2/h2_seeds.py RUNS docs/results/fig4_2/h2_seeds

writes results.json and table.md under the second folder.
"""
import json
import statistics
import sys
from pathlib import Path

LEARNERS = ("em", "vb", "cvi")


def main(runs, out):
    rows = []
    for path in sorted(Path(runs).glob("s*/results.json")):
        rows += [row for row in json.loads(path.read_text())["rows"] if row["subtypes"] == 2]
    f1 = {(row["algorithm"], row["seed"]): row["f1"] for row in rows}
    seeds = sorted({seed for _, seed in f1})
    lines = ["# Fig. 4.2 at H = 2: every seed's run on all 2,077 test sentences", "",
             "UD English EWT converted to phrase structure, not the Penn Treebank. alpha = 1 for every learner, "
             "50 passes; the main table keeps one of these runs a learner (the best training objective: seed 4 "
             "for EM and VB) and so compares single runs. Made by h2_seeds.py (its docstring has the commands).", "",
             "| seed | " + " | ".join(LEARNERS) + " | VB - EM |", "|---" * (len(LEARNERS) + 2) + "|"]
    for seed in seeds:
        lines.append(f"| {seed} | " + " | ".join(f"{f1[a, seed]:.2f}" for a in LEARNERS)
                     + f" | {f1['vb', seed] - f1['em', seed]:+.2f} |")
    summary = {}
    for learner in LEARNERS:
        values = [f1[learner, seed] for seed in seeds]
        summary[learner] = {"mean": statistics.mean(values), "sd": statistics.stdev(values)}
    gaps = [f1["vb", seed] - f1["em", seed] for seed in seeds]
    lines.append("| mean ± sd | " + " | ".join(f"{summary[a]['mean']:.2f} ± {summary[a]['sd']:.2f}" for a in LEARNERS)
                 + f" | {statistics.mean(gaps):+.2f} |")
    lines += ["", f"VB above EM in {sum(gap > 0 for gap in gaps)} of {len(gaps)} seeds (paired: the same seed starts "
              "both from the same split of the treebank grammar)."]
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "results.json").write_text(json.dumps({"rows": rows, "summary": summary, "vb_minus_em": gaps},
                                                       indent=1) + "\n")
    (Path(out) / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""Writes slices.md: token and boundary F1 of the channel pipeline, the hard joint rounds and the n-best joint (vb
only) on every slice of the training voices, learner and seed, from the results.json of `cvbayes experiment uld`
runs.

    python slices.py OUT.md RESULTS_FOLDER [RESULTS_FOLDER ...]
"""
import json
import sys
from pathlib import Path

import numpy as np

from cvbayes.experiments.uld import JOINT, NBEST, WITH_CHANNEL

INTRO = ("`cvbayes experiment uld --algorithms vb|cvi --first N --utterances 500` on other 500-utterance slices of the "
         "synthetic Brent training voices (utterances N+1 to N+500; the held-out voices' first 500 as always), "
         "beside the experiment's own slice (1-500). Token and boundary F1 (percent, zerospeech-tde) of the "
         "channel pipeline, the hard joint rounds (3) and the n-best joint (3 rounds of eq. J1, "
         "`cvbayes.models.discovery_nbest`; at most 5 candidates an utterance from 20 draws); J1 before the first "
         "round and after each; the n-best joint's candidate readings an utterance and distinct spoken strings an "
         "utterance with q(k | u) > 0.01 (means). All the systems of a row share one unit layer. cvi has no n-best "
         "joint (J1 is VB's objective).")
SYSTEMS = ((WITH_CHANNEL, "pipeline"), (JOINT, "hard joint"), (NBEST, "n-best joint"))
LEARNERS = ("vb", "cvi")


def main(out, *folders):
    rows = []
    for folder in folders:
        part = json.loads((Path(folder) / "results.json").read_text())
        first, count = part["settings"].get("first", 0), part["settings"]["utterances"]
        for row in part["runs"]:
            if row["algorithm"] in LEARNERS:
                rows.append({**row, "slice": (first + 1, first + count)})
    lines = ["# Lexicon discovery on slices of the training voices", "", INTRO, ""]
    header = " | ".join(f"{name} token F1 | {name} boundary F1" for _, name in SYSTEMS)
    lines += [f"| utterances | learner | seed | {header} | J1 by round (n-best) | candidates | strings heard |",
              "|---|---|---|" + "---|" * (2 * len(SYSTEMS) + 3)]
    order = {learner: i for i, learner in enumerate(LEARNERS)}
    for piece, learner, seed in sorted({(r["slice"], r["algorithm"], r["seed"]) for r in rows},
                                       key=lambda key: (key[0], order[key[1]], key[2])):
        mine = {r["system"]: r for r in rows if (r["slice"], r["algorithm"], r["seed"]) == (piece, learner, seed)}
        cells = [f"{100 * mine[system][key]:.1f}" if system in mine else ""
                 for system, _ in SYSTEMS for key in ("token_fscore", "boundary_fscore")]
        nbest = mine.get(NBEST, {})
        cells += [" → ".join(f"{value:,.0f}" for value in nbest.get("joint_objective", [])),
                  f"{nbest['candidates_per_utterance']:.2f}" if nbest else "",
                  f"{nbest['heard_strings_per_utterance']:.2f}" if nbest else ""]
        lines.append(f"| {piece[0]}-{piece[1]} | {learner} | {seed} | " + " | ".join(cells) + " |")
    lines += ["", "Means over the seeds of a slice and learner:", "", f"| utterances | learner | seeds | {header} |",
              "|---|---|---|" + "---|" * (2 * len(SYSTEMS))]
    for piece, learner in sorted({(r["slice"], r["algorithm"]) for r in rows}, key=lambda key: (key[0], order[key[1]])):
        mine = [r for r in rows if (r["slice"], r["algorithm"]) == (piece, learner)]
        cells = [f"{100 * np.mean(values):.1f}" if (values := [r[key] for r in mine if r["system"] == system]) else ""
                 for system, _ in SYSTEMS for key in ("token_fscore", "boundary_fscore")]
        lines.append(f"| {piece[0]}-{piece[1]} | {learner} | {len({r['seed'] for r in mine})} | "
                     + " | ".join(cells) + " |")
    Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])

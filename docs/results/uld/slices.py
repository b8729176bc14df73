"""Writes slices.md: token and boundary F1 of the channel pipeline, the hard joint rounds and the n-best joint (vb)
on every slice of the training voices and seed, from the results.json of `cvbayes experiment uld` runs.

    python slices.py OUT.md RESULTS_FOLDER [RESULTS_FOLDER ...]
"""
import json
import sys
from pathlib import Path

from cvbayes.experiments.uld import JOINT, NBEST, WITH_CHANNEL

SYSTEMS = ((WITH_CHANNEL, "pipeline"), (JOINT, "hard joint"), (NBEST, "n-best joint"))


def main(out, *folders):
    rows = []
    for folder in folders:
        part = json.loads((Path(folder) / "results.json").read_text())
        first, count = part["settings"].get("first", 0), part["settings"]["utterances"]
        for row in part["runs"]:
            if row["algorithm"] == "vb":
                rows.append({**row, "slice": (first + 1, first + count)})
    header = " | ".join(f"{name} token F1 | {name} boundary F1" for _, name in SYSTEMS)
    lines = [f"| utterances | seed | {header} | J1 by round (n-best) | candidates | strings heard |",
             "|---|---|" + "---|" * (2 * len(SYSTEMS) + 3)]
    for piece, seed in sorted({(r["slice"], r["seed"]) for r in rows}):
        mine = {r["system"]: r for r in rows if r["slice"] == piece and r["seed"] == seed}
        cells = [f"{100 * mine[system][key]:.1f}" if system in mine else ""
                 for system, _ in SYSTEMS for key in ("token_fscore", "boundary_fscore")]
        nbest = mine.get(NBEST, {})
        cells += [" → ".join(f"{value:,.0f}" for value in nbest.get("joint_objective", [])),
                  f"{nbest['candidates_per_utterance']:.2f}" if nbest else "",
                  f"{nbest['heard_strings_per_utterance']:.2f}" if nbest else ""]
        lines.append(f"| {piece[0]}-{piece[1]} | {seed} | " + " | ".join(cells) + " |")
    Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Joins the results.json of `cvbayes experiment uld` runs made in parallel, each with its own --out,
into OUT: its results.json, table.md and uld.png, as one run over all the seeds (and learners) would have
written them.

    python merge_runs.py OUT RUN_FOLDER [RUN_FOLDER ...]
"""
import json
import sys
from pathlib import Path

from cvbayes.experiments.results import publish
from cvbayes.experiments.uld import PUBLISHED, plot, table_text


def main(out, *folders):
    parts = [json.loads((Path(folder) / "results.json").read_text()) for folder in folders]
    settings = dict(parts[0]["settings"])
    settings["seeds"] = sorted({seed for part in parts for seed in part["settings"]["seeds"]})
    settings["seconds"] = sum(part["settings"]["seconds"] for part in parts)
    rows = sorted((row for part in parts for row in part["runs"]), key=lambda r: (r["seed"], r["algorithm"]))
    Path(out).mkdir(parents=True, exist_ok=True)
    publish(out, {"settings": settings, "runs": rows, "published": PUBLISHED},
            table_text(rows, settings), "uld.png", lambda path: plot(path, rows, settings), quiet=False)


if __name__ == "__main__":
    main(*sys.argv[1:])

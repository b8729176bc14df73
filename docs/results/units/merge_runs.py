"""Joins the results.json of `cvbayes experiment units` runs made in parallel, each with its own --out
(processes that --append to one folder at once could overwrite each other's runs), into OUT: its
results.json, table.md and units.png, as one command with --append would have written them.

    python merge_runs.py OUT RUN_FOLDER [RUN_FOLDER ...] [--logs LOG ...]

A process stopped before its last learner wrote no results.json; the runs it finished are the JSON lines it
printed (its stderr, a LOG): they are taken with the first folder's settings, rounded to 4 digits as
printed and without their objective curves.
"""
import json
import sys
from pathlib import Path

from cvbayes.experiments.results import plain_json
from cvbayes.experiments.units import ALGORITHMS, DIFFERENCE, PUBLISHED, appended, plots, summary, table
from cvbayes.files import write_json, write_text


def logged(path, settings):
    """The runs a process printed (one JSON object a line) as a results.json would hold them."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.startswith("{")]
    return {"settings": {**settings, "seeds": sorted({r["seed"] for r in rows}),
                         "algorithms": list(dict.fromkeys(r["algorithm"] for r in rows))},
            "runs": [{**r, "objective_curve": []} for r in rows]}


def main(out, *arguments):
    folders = arguments[:arguments.index("--logs")] if "--logs" in arguments else arguments
    logs = arguments[len(folders) + 1:]
    parts = [json.loads((Path(folder) / "results.json").read_text()) for folder in folders]
    parts += [logged(log, parts[0]["settings"]) for log in logs]
    settings, rows = parts[0]["settings"], parts[0]["runs"]
    for part in parts[1:]:
        settings, rows = appended({"settings": settings, "runs": rows}, part["settings"], part["runs"])
    rows.sort(key=lambda r: (r["corpus"], list(ALGORITHMS).index(r["algorithm"]), r["seed"]))
    summaries = summary(rows)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", plain_json({"settings": settings, "runs": rows, "summary": summaries,
                                                 "published": PUBLISHED, "data_difference": DIFFERENCE}), indent=1)
    write_text(out / "table.md", table(summaries, settings))
    plots(out, [r for r in rows if r["seed"] == settings["seeds"][0]], summaries, None)


if __name__ == "__main__":
    main(*sys.argv[1:])

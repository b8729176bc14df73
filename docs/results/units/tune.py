"""Tuning AcousticUnits on a dev slice of synthetic Brent's train split (utterances FIRST..FIRST+N of the
train split, outside the slice the final runs use), one setting a process; prints one JSON line.

    python tune.py '{"algorithm": "cvi", "n_iter": 10, "trim": true, "save": "/tmp/cvi_trim.npz"}'
"""
import csv, json, sys, time
from pathlib import Path
import numpy as np
from cvbayes import AcousticUnits
from cvbayes.speech import load_corpus, read_alignments
from cvbayes.metrics.speech import units_report

FOLDER = Path.home() / ".cache/cvbayes/synthetic-brent"

def dev(first, n, trim=False):
    """Features, gold phone intervals and first frames (the frames a trim dropped) of the tuning utterances."""
    cache = Path(f"/tmp/cvbayes-units-dev_{first}_{n}{'_trim' if trim else ''}.npz")
    rows = [r for r in csv.DictReader((l for l in open(FOLDER / "manifest.tsv") if not l.startswith("#")),
                                      delimiter="\t") if r["split"] == "train"][first:first + n]
    phones = read_alignments(FOLDER / "synthetic-brent.phn")
    if not cache.exists():
        corpus = load_corpus([FOLDER / "wav" / f"{r['file']}.wav" for r in rows], normalise="speaker",
                             speakers={r["file"]: r["synthesizer"] + r["voice"] for r in rows}, trim=trim,
                             progress=False)
        np.savez(cache, lengths=[len(f) for f in corpus.features], X=np.concatenate(corpus.features),
                 first_frames=corpus.first_frames)
    z = np.load(cache)
    feats = np.split(z["X"], np.cumsum(z["lengths"])[:-1])
    gold = [[(i.start, i.end, i.label) for i in phones[r["file"]]] for r in rows]
    return feats, gold, list(z["first_frames"]) if "first_frames" in z else None

if __name__ == "__main__":
    settings = json.loads(sys.argv[1])
    first, n = settings.pop("first", 6000), settings.pop("n", 300)
    trim = settings.pop("trim", False)
    save = settings.pop("save", None)  # a path: the fitted model, for oversegmentation.py and tried.py
    feats, gold, first_frames = dev(first, n, trim)
    t = time.perf_counter()
    model = AcousticUnits(**settings).fit(feats, progress=False)
    seconds = time.perf_counter() - t
    if save:
        model.save(save)
    report = units_report(model.predict(feats), gold, first_frames)
    out = {**settings, "first": first, "n": n, **({"trim": True} if trim else {}), "seconds": round(seconds, 1),
           **{k: round(report[k], 4) for k in ("boundary_precision", "boundary_recall", "boundary_f1", "purity",
                                               "nmi")},
           "units_used": int(model.n_units_used_)}
    print(json.dumps(out), flush=True)

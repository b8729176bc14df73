"""Seconds of each term discovery measure (cvbayes.metrics.term_discovery_scores, i.e. zerospeech-tde).

Gold: Buckeye's phones and words as shipped in zerospeech-tde (``tde/share/buckeye.{phn,wrd}``), cut
into utterances at pauses of at least 250 ms between words (as `cvbayes.data.segmentation.load_buckeye`);
``--utterances`` of them drawn at random (seed 0), each with the phones inside its span.  Discovered
classes, for each size:

* ``gold``: the gold words themselves, a class a word type (scores about 1);
* ``shuffled``: the same tokens with their class labels permuted (same class sizes, wrong classes).

Timed, the least of ``--repeats`` wall-clock runs: ``read`` (writing the files and tde's Gold and Disc
readers, ``measures=()``), then each measure alone, reported as its call's seconds less ``read``.

    python benchmarks/bench_tde.py                          # 500 and 2000 utterances
    python benchmarks/bench_tde.py --utterances 500 5000 --json /tmp/tde.json
"""
import argparse
import datetime
import json
import random
import time
from importlib.resources import files
from pathlib import Path

from cvbayes.metrics import TDE_MEASURES, term_discovery_scores
from cvbayes.speech.alignments import read_alignments

PAUSE = 0.25


def buckeye_utterances():
    """[(name, phones, words)] of Buckeye's utterances, in recording order."""
    share = files("tde") / "share"
    phones, words = (read_alignments(share / f"buckeye.{kind}") for kind in ("phn", "wrd"))
    utterances = []
    for recording, recording_words in words.items():
        groups = [[recording_words[0]]]
        for word in recording_words[1:]:
            if word.start - groups[-1][-1].end >= PAUSE:
                groups.append([])
            groups[-1].append(word)
        for number, group in enumerate(groups):
            start, end = group[0].start - 5e-4, group[-1].end + 5e-4
            inside = [p for p in phones[recording] if p.start >= start and p.end <= end]
            utterances.append((f"{recording}_{number:04d}", inside, group))
    return utterances


def timed(classes, phones, words, measures, repeats):
    """Least seconds of `repeats` calls, and the scores."""
    seconds = []
    for _ in range(repeats):
        begin = time.perf_counter()
        scores = term_discovery_scores(classes, phones, words, measures=measures)
        seconds.append(time.perf_counter() - begin)
    return min(seconds), scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--utterances", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    everything = buckeye_utterances()
    report = []
    for size in args.utterances:
        chosen = random.Random(0).sample(everything, min(size, len(everything)))
        phones = {name: p for name, p, _ in chosen}
        words = {name: w for name, _, w in chosen}
        tokens = [(name, w.start, w.end, w.label) for name, _, ws in chosen for w in ws]
        labels = [label for *_, label in tokens]
        random.Random(1).shuffle(labels)
        for kind, classes_of in (("gold", [t[3] for t in tokens]), ("shuffled", labels)):
            classes = {}
            for (name, start, end, _), label in zip(tokens, classes_of):
                classes.setdefault(label, []).append((name, start, end))
            read, _ = timed(classes, phones, words, (), args.repeats)
            row = {"utterances": len(chosen), "tokens": len(tokens), "classes": len(classes),
                   "largest_class": max(map(len, classes.values())), "discovered": kind, "seconds_read": round(read, 3)}
            for measure in TDE_MEASURES:
                seconds, scores = timed(classes, phones, words, (measure,), args.repeats)
                row[f"seconds_{measure}"] = round(seconds - read, 3)
                row.update({k: v for k, v in scores.items() if not k.startswith("n_")})
            report.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"date": datetime.date.today().isoformat(), "rows": report}, indent=1))


if __name__ == "__main__":
    main()

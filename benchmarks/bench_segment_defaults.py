"""``cvbayes segment`` at its defaults off Brent: the letters of ordinary English sentences.

The check of issue 29 ("Off Brent, with the defaults"): a user's first run is ``cvbayes segment --chars`` on
unsegmented text, with no option tuned. The corpus is one nothing was developed on: the first ``--sentences``
sentences of UD English EWT's training file (``cvbayes data fetch ewt``) of 2 to ``--max-words`` words,
each word's letters lowercased (punctuation, digits and symbols dropped: EWT's ``don't`` is the two words
``do`` and ``nt``), the spaces removed for the input and kept for the gold. Each learner runs as the
command a user types, ``cvbayes segment --chars INPUT --gold GOLD --algorithm A --json``, under
``/usr/bin/time -v`` (its peak resident memory and CPU seconds), beside the trivial segmentations (one word
per utterance, one word per letter). ``--options`` adds options to every learner's command (a candidate
default measured beside the current one: its row names them). Writes ``segment_defaults.json`` and ``segment_defaults.md`` under
``--out`` (default docs/results/wordseg); a run of some learners keeps the others' earlier rows.

    NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --algorithms vb,cvi
    NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --algorithms cvi \
        --options="--discount 0.5 --estimate-hyperparameters"
"""
import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from cvbayes.commands.segment import read_gold, read_utterances
from cvbayes.files import write_json, write_text
from cvbayes.metrics.segmentation import segmentation_scores

EWT = Path.home() / ".cache" / "cvbayes" / "ewt" / "en_ewt-ud-train.conllu"


def ewt_sentences(path, count, max_words):
    """The first `count` sentences of 2 to `max_words` words of a CoNLL-U file, each a list of its words'
    lowercased ASCII letters (words with none dropped; multiword-token and empty-node lines skipped)."""
    sentences, words = [], []
    for line in path.read_text(encoding="utf-8").split("\n") + [""]:
        if not line.strip():
            if 2 <= len(words) <= max_words:
                sentences.append(words)
            words = []
            if len(sentences) == count:
                break
            continue
        fields = line.split("\t")
        if line.startswith("#") or not re.fullmatch(r"\d+", fields[0]):
            continue
        letters = "".join(c for c in fields[1].lower() if c.isascii() and c.isalpha())
        if letters:
            words.append(letters)
    return sentences


def measured(command):
    """Run `command` under /usr/bin/time -v: (its standard error, peak resident MiB, CPU seconds, wall s)."""
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    field = lambda name: re.search(rf"{name}: ([\d.:]+)", done.stderr).group(1)   # noqa: E731
    wall = sum(float(part) * 60 ** i for i, part in enumerate(reversed(field(r"Elapsed \(wall clock\) time "
                                                                              r"\(h:mm:ss or m:ss\)").split(":"))))
    return (done.stdout, int(field(r"Maximum resident set size \(kbytes\)")) / 1024,
            float(field(r"User time \(seconds\)")) + float(field(r"System time \(seconds\)")), wall)


def table(results):
    """The Markdown table of the learners' runs and the trivial segmentations."""
    data = results["data"]
    lines = ["# `cvbayes segment` at its defaults, off Brent: English letters", "",
             f"Command: `{results['command']}` (benchmarks/bench_segment_defaults.py; a row naming options: "
             "the same with `--algorithms A --options='OPTIONS'`).", "",
             f"Corpus: {data['description']}; {data['utterances']} utterances, {data['words']} gold words, "
             f"{data['symbols']} letters (nothing in cvbayes was developed or tuned on it). Each learner: "
             "`cvbayes segment --chars INPUT --gold GOLD --algorithm A --json` and the options its row names, "
             "no other: the unigram grammar unless the row says otherwise and segment's defaults for each learner "
             "(mcmc: py-cfg's start, a = 1e-4 and b = 1e4 both sampled, tables resampled, 200 sweeps; vb and cvi: "
             "a = 0, b = 1, 20 passes, vb the medoid of 5 starts). Each row was run by the code of its day: vb's and "
             "mcmc's on 2026-11-28 (after vb's grammaton atoms were drawn from their base), cvi's before, except cvi "
             "with a learned, rerun after its estimate of a and b was corrected (2026-11-28). "
             "Scores (%) of the segmentation the "
             "command writes, trained and scored on the same utterances. Peak MiB and CPU s: /usr/bin/time -v "
             "of the whole command (reading, training, segmenting, scoring); training s: the command's own "
             "training time (wall, on a 2-core machine shared with other engineers' runs).", "",
             "| segmentation | peak MiB | CPU s | training s | token F1 | boundary F1 | lexicon F1 | words per gold word |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [(f"cvbayes segment --algorithm {name}", f"{run['peak_mib']:.0f}", f"{run['cpu_seconds']:.0f}",
             f"{run['report']['training_seconds']:.0f}", run["report"]["scores"], run["report"]["words"])
            for name, run in results["runs"].items()]
    rows += [(name, "–", "–", "–", scores, found) for name, (scores, found) in results["baselines"].items()]
    for name, memory, cpu, seconds, scores, found in rows:
        lines.append(f"| {name} | {memory} | {cpu} | {seconds} | " + " | ".join(
            f"{100 * scores[key]['f1']:.1f}" for key in ("token", "boundary", "lexicon"))
            + f" | {found / data['words']:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithms", default="vb,cvi", help="comma-separated learners (default vb,cvi)")
    parser.add_argument("--sentences", type=int, default=2000, help="utterances (default 2000)")
    parser.add_argument("--max-words", type=int, default=10, help="the longest sentence kept, in words (default 10)")
    parser.add_argument("--conllu", type=Path, default=EWT, help=f"the treebank (default {EWT})")
    parser.add_argument("--options", default="",
                        help="more options for every learner's command, e.g. '--discount 0.5' (default none)")
    parser.add_argument("--out", type=Path, default=Path("docs/results/wordseg"))
    args = parser.parse_args()
    sentences = ewt_sentences(args.conllu, args.sentences, args.max_words)
    out_json = args.out / "segment_defaults.json"
    results = json.loads(out_json.read_text()) if out_json.is_file() else {"runs": {}}
    with tempfile.TemporaryDirectory() as work:
        text, gold_path = Path(work) / "input.txt", Path(work) / "gold.txt"
        text.write_text("".join("".join(words) + "\n" for words in sentences))
        gold_path.write_text("".join(" ".join(words) + "\n" for words in sentences))
        utterances = read_utterances(str(text), chars=True)
        gold = read_gold(str(gold_path), utterances)
        trivial = {"one word per utterance": [[tuple(u)] for u in utterances],
                   "one word per letter": [[(s,) for s in u] for u in utterances]}
        results["baselines"] = {name: (segmentation_scores(words, gold).as_dict(), sum(map(len, words)))
                                for name, words in trivial.items()}
        results["data"] = {"description": f"the first {len(sentences)} sentences of 2 to {args.max_words} words of "
                                          f"UD English EWT train ({args.conllu.name}), lowercased letters",
                           "utterances": len(utterances), "words": sum(map(len, gold)),
                           "symbols": sum(map(len, utterances))}
        options = shlex.split(args.options)
        for algorithm in args.algorithms.split(","):
            name = " ".join([algorithm, *options])
            command = [sys.executable, "-m", "cvbayes.cli", "segment", "--chars", str(text), "--gold",
                       str(gold_path), "--algorithm", algorithm, *options, "--json",
                       "-o", str(Path(work) / f"{algorithm}.seg")]
            stdout, peak, cpu, wall = measured(command)
            report = json.loads(stdout.strip().split("\n")[-1])
            results["runs"][name] = {"report": report, "peak_mib": peak, "cpu_seconds": cpu, "wall_seconds": wall}
            s = report["scores"]
            print(f"{name}: token F1 {100 * s['token']['f1']:.1f}, boundary {100 * s['boundary']['f1']:.1f}; "
                  f"{peak:.0f} MiB, {cpu:.0f} CPU s", file=sys.stderr)
            write(args, results)     # after each learner: a slow one does not lose the others' rows


def write(args, results):
    """segment_defaults.json and .md under ``--out``."""
    results["command"] = (f"NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences "
                          f"{args.sentences} --max-words {args.max_words}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "segment_defaults.json", results, indent=1)
    write_text(args.out / "segment_defaults.md", table(results))


if __name__ == "__main__":
    main()

"""The reference word segmenters beside cvbayes: Johnson's adaptor-grammar sampler and Goldwater's dpseg.

What is run
-----------
The public ``bootphon/wordseg`` repository (Bernard et al. 2020) packages Mark Johnson's C++ adaptor
grammar sampler (py-cfg, as ``wordseg-ag``; Johnson, Griffiths and Goldwater 2007, Johnson and Goldwater
2009) and Sharon Goldwater's C++ Dirichlet-process segmenter (dpseg; Goldwater, Griffiths and Johnson
2009).  This script builds both *outside* this repository (their code is never committed here) and runs
the binaries on the Brent corpus (``../shared/data/brent``, the unsegmented phonemes, as
`cvbayes.data.load_brent` reads them), scoring with `cvbayes.metrics.segmentation_scores` and, as a
cross-check, with wordseg's own ``evaluate`` (imported from the fetched source; it needs scikit-learn):
their token, boundary (without the utterance edges) and type F-scores are our token, boundary and lexicon
F1 (they agree to every digit on the runs here).

Build (the commands ``build`` runs, printed as it runs them)::

    git clone https://github.com/bootphon/wordseg.git /work/peers/wordseg
    git -C /work/peers/wordseg checkout 322a5cc02a7917fcdade8c61a65e8649b5d6f7ad
    apt-get install cmake g++ libboost-program-options-dev       # dpseg needs boost's program_options
    cmake -S /work/peers/wordseg/wordseg/algos/ag -B /work/peers/wordseg/build/ag -DCMAKE_BUILD_TYPE=Release
    cmake --build /work/peers/wordseg/build/ag
    cmake -S /work/peers/wordseg/wordseg/algos/dpseg -B /work/peers/wordseg/build/dpseg -DCMAKE_BUILD_TYPE=Release
    cmake --build /work/peers/wordseg/build/dpseg

(``-DCMAKE_BUILD_TYPE=Release`` is what wordseg's setup.py passes.)  When the folder already holds the
source (e.g. a copy made without network), ``build`` only runs cmake.

The adaptor grammar runs (``ag``)
---------------------------------
Settings: wordseg's shipped defaults for the sampler (``wordseg.algos.ag.DEFAULT_ARGS``)::

    -E -d 0 -a 0.0001 -b 10000 -e 1 -f 1 -g 100 -h 0.01 -R -1 -P -x 10

i.e. a Dirichlet prior on the base rules (-E), every adapted nonterminal's PY a and b *sampled* under
a ~ Beta(1, 1) and b ~ Gamma(shape 0.01, scale 100) (py-cfg's density is ``lgammadist(b, h, g)``) starting
from a = 1e-4, b = 1e4, table labels resampled every
sweep (-R -1), Earley filtering (-P), and every 10 sweeps (-x 10) each utterance of ``-u`` (the training
input) parsed afresh, a sample given all the current training parses, which is printed: how F1 against
sweeps is measured here (on 2,000 utterances it scored within 0.3 of the training sample itself,
docs/results/wordseg/reference_settings.md).  The C++ default of 2,000 sweeps
is ``--iterations``; wordseg ships no annealing (start and stop temperature 1), so none is used.  Not
done here: wordseg runs 8 chains and takes each utterance's most frequent parse over chains and sweeps
(Johnson and Goldwater's 2009 "minimum Bayes risk" decoding); one chain's parse at each printed sweep
is scored instead (``--seed`` chooses the chain).

Grammars, in Johnson's format (``[theta [a [b]]] Parent --> Children``; a rule written with ``1 1`` has
a = 1, i.e. its parent is not adapted; the others take the defaults, so are adapted), the word level
``Word`` (``-c Word``):

* unigram: ``Sentence --> Words``, ``Words --> Word | Word Words``, ``Word --> Phonemes`` (adapted),
  ``Phonemes --> Phoneme | Phoneme Phonemes``, ``Phoneme --> x`` for every symbol of the input
  (wordseg's generated "Colloc0" grammar with the adapted level named Word);
* colloc: collocations of words above it, ``Colloc --> Words`` adapted;
* colloc-syllable: wordseg's ``data/ag/Coll3syllfnc_*.lt`` (Johnson and Goldwater 2009) with one
  collocation level and no function words: ``Word --> SyllableIF | SyllableI SyllableF | SyllableI
  Syllable SyllableF | SyllableI Syllable Syllable SyllableF``, the word-initial and word-final
  syllables with their own onsets (``OnsetI``) and codas (``CodaF``); adapted: Colloc, Word, Onset,
  OnsetI, Nucleus, Coda, CodaF; vowels and consonants are cvbayes's Brent split (`BRENT_VOWELS`,
  `BRENT_CONSONANTS`), the same as cvbayes's colloc-syllable grammar (`syllable_grammar`).

Measured: the wall time and peak resident memory of the process (GNU ``time``), its CPU time (the
sampler's own trace, ``-F``: seconds of CPU at every printed sweep), and token/boundary/lexicon F1 of
every printed parse; "time to accuracy" is the first printed sweep at or above a token F1 (the published
one and the run's own final F1 less one point).  CPU time is the fair clock on a shared machine (wall
time includes waiting for the CPU); both are written.

dpseg (``dpseg``)
-----------------
Goldwater's Gibbs sampler (estimator F, batch mode) with wordseg's Python defaults ``--ngram 1 --a1 0
--b1 1`` (or ``--ngram 2``: its bigram model at the binary's defaults), the binary's 2,000 sweeps
(``--iterations``) with its hyperparameter sampling (``--hypersamp-ratio 0.1``) and no annealing, on the
whole corpus (wordseg's wrapper cuts the text into 5 folds; not done here).  Its input is one character
a symbol (Brent's phonemes are).  It prints no intermediate segmentation, so each run is one point.

Results: one JSON file a run under ``benchmarks/results/wordseg_reference/``, which
``cvbayes experiment wordseg`` puts beside its own rows (docs/results/wordseg/table.md).

Usage::

    python benchmarks/bench_wordseg.py build
    nice -n 10 python benchmarks/bench_wordseg.py ag --grammar unigram --iterations 2000 --seed 1
    python benchmarks/bench_wordseg.py ag --grammar unigram --iterations 2000 --seed 1 --score-only  # so far
    python benchmarks/bench_wordseg.py dpseg --ngram 1 --seed 1
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "wordseg_reference"
REPOSITORY = "https://github.com/bootphon/wordseg.git"
COMMIT = "322a5cc02a7917fcdade8c61a65e8649b5d6f7ad"
AG_ARGS = "-E -d 0 -a 0.0001 -b 10000 -e 1 -f 1 -g 100 -h 0.01 -R -1 -P -x 10".split()
DPSEG_ARGS = {1: ["--ngram", "1", "--a1", "0", "--b1", "1"], 2: ["--ngram", "2"]}
PUBLISHED_TOKEN_F1 = {"unigram": 0.56, "colloc": 0.76, "colloc-syllable": 0.87}


def peers_folder(path=None) -> Path:
    return Path(path or os.environ.get("CVBAYES_PEERS", "/work/peers")) / "wordseg"


def run_logged(command, **kwargs):
    print("$ " + " ".join(str(c) for c in command), file=sys.stderr)
    subprocess.run([str(c) for c in command], check=True, **kwargs)


def build(folder: Path):
    """Fetch wordseg at COMMIT (unless the folder holds it) and build ag and dpseg with CMake."""
    if not (folder / "wordseg" / "algos" / "ag" / "CMakeLists.txt").is_file():
        run_logged(["git", "clone", REPOSITORY, folder])
        run_logged(["git", "-C", folder, "checkout", COMMIT])
    for program in ("ag", "dpseg"):
        target = folder / "build" / program
        run_logged(["cmake", "-S", folder / "wordseg" / "algos" / program, "-B", target,
                    "-DCMAKE_BUILD_TYPE=Release"], stdout=subprocess.DEVNULL)
        run_logged(["cmake", "--build", target], stdout=subprocess.DEVNULL)
        print(f"built {target / program}", file=sys.stderr)


def binary(folder: Path, program: str) -> Path:
    path = folder / "build" / program / program
    if not path.is_file():
        sys.exit(f"{path} is missing: run 'python {sys.argv[0]} build' first")
    return path


# --- grammars in Johnson's format --------------------------------------------------------------

def unescaped(text: str) -> str:
    """The text of py-cfg's output with its escapes removed (it writes a backslash before ``\\ ' % ( )``,
    sym.cc; it reads the grammar's and the input's terminals as written)."""
    return re.sub(r"\\(.)", r"\1", text)


def _plus(name, item):
    return [f"1 1 {name} --> {item}", f"1 1 {name} --> {item} {name}"]


def johnson_grammar(name: str, symbols) -> str:
    """The reference's grammar text (module notes): unigram, colloc or colloc-syllable over `symbols`."""
    from cvbayes.models.adaptor import BRENT_CONSONANTS, BRENT_VOWELS

    if name == "colloc-syllable":
        unknown = set(symbols) - set(BRENT_VOWELS) - set(BRENT_CONSONANTS)
        if unknown:
            raise ValueError(f"colloc-syllable is over Brent's phonemes; the input has {' '.join(sorted(unknown))}")
        rules = ["1 1 Sentence --> Collocs", *_plus("Collocs", "Colloc"), "Colloc --> Words", *_plus("Words", "Word"),
                 "Word --> SyllableIF", "Word --> SyllableI SyllableF", "Word --> SyllableI Syllable SyllableF",
                 "Word --> SyllableI Syllable Syllable SyllableF"]
        for syllable, onset, rhyme in (("Syllable", "Onset", "Rhyme"), ("SyllableI", "OnsetI", "Rhyme"),
                                       ("SyllableF", "Onset", "RhymeF"), ("SyllableIF", "OnsetI", "RhymeF")):
            rules += [f"1 1 {syllable} --> {onset} {rhyme}", f"1 1 {syllable} --> {rhyme}"]
        rules += ["1 1 Rhyme --> Nucleus Coda", "1 1 Rhyme --> Nucleus", "1 1 RhymeF --> Nucleus CodaF",
                  "1 1 RhymeF --> Nucleus"]
        rules += [f"{part} --> Consonants" for part in ("Onset", "Coda", "OnsetI", "CodaF")] + ["Nucleus --> Vowels"]
        rules += _plus("Consonants", "Consonant") + _plus("Vowels", "Vowel")
        rules += [f"1 1 Consonant --> {c}" for c in BRENT_CONSONANTS]
        rules += [f"1 1 Vowel --> {v}" for v in BRENT_VOWELS]
        return "\n".join(rules) + "\n"
    top = {"unigram": ["1 1 Sentence --> Words"],
           "colloc": ["1 1 Sentence --> Collocs", *_plus("Collocs", "Colloc"), "Colloc --> Words"]}[name]
    rules = top + _plus("Words", "Word") + ["Word --> Phonemes"] + _plus("Phonemes", "Phoneme")
    rules += [f"1 1 Phoneme --> {s}" for s in sorted(set(symbols))]
    return "\n".join(rules) + "\n"


# --- reading the outputs -----------------------------------------------------------------------

def words_of(line: str, symbols) -> list[tuple[str, ...]]:
    """An output line (words separated by spaces, each the concatenation of its symbols) as words of
    the utterance's `symbols`: the symbols are consumed in order, each word taking as many as its text
    spans (so multi-character symbols survive the concatenation)."""
    words, position = [], 0
    for text in unescaped(line).split():
        word = []
        while text:
            if position >= len(symbols) or not text.startswith(symbols[position]):
                raise ValueError(f"output {line!r} does not spell the input {' '.join(symbols)!r}")
            text = text[len(symbols[position]):]
            word.append(symbols[position])
            position += 1
        words.append(tuple(word))
    if position != len(symbols):
        raise ValueError(f"output {line!r} does not spell the input {' '.join(symbols)!r}")
    return words


def output_blocks(path: Path):
    """The parses the sampler printed: blocks of lines, each closed by an empty line (an unclosed last block,
    of a run still going or stopped, is left out)."""
    block = []
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                block.append(line.strip())
            elif block:
                yield block
                block = []


def trace_rows(path: Path) -> list[dict]:
    """The sampler's trace (-F): sweep, temperature, CPU seconds, -log P, per printed sweep."""
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        rows.append({"sweep": int(fields[0]), "temperature": float(fields[1]), "cpu_seconds": float(fields[2]),
                     "neg_log_p": float(fields[3]), "tables": float(fields[6])})
    return rows


def scores_of(predicted, corpus) -> dict:
    from cvbayes.metrics.segmentation import segmentation_scores

    scores = segmentation_scores(predicted, corpus.segments)
    return {f"{name}_f1": getattr(scores, name).f1 for name in ("token", "boundary", "lexicon")}


def wordseg_evaluation(folder: Path, predicted, corpus):
    """wordseg's own ``evaluate`` (from the fetched source; it needs scikit-learn) of a segmentation: its token,
    type and boundary F-scores, or the reason it could not run."""
    sys.path.insert(0, str(folder))
    try:
        from wordseg.evaluate import evaluate
    except Exception as error:     # any import failure: the cross-check is optional
        return {"error": f"wordseg's Python package did not import: {error}"}
    text = [" ".join("".join(w) for w in words) for words in predicted]
    gold = [" ".join("".join(w) for w in words) for words in corpus.segments]
    return {k: float(v) for k, v in evaluate(text, gold).items()}


def time_to(curve, target, clock="cpu_seconds"):
    """The first printed point whose token F1 reaches `target`: its sweep and seconds (None: never)."""
    for point in curve:
        if point["token_f1"] >= target:
            return {"target": target, "sweep": point["sweep"], "seconds": point[clock]}
    return {"target": target, "sweep": None, "seconds": None}


def machine() -> dict:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_average": os.getloadavg(), "date": datetime.datetime.now().isoformat(timespec="seconds")}


def timed(command, stdin, stdout, work: Path):
    """Run `command` under GNU time; (wall seconds, CPU seconds, peak resident MiB) of the process.  (Not
    os.wait4: a child forked from this Python process would count its parent's pages in its peak.)"""
    print("$ " + " ".join(str(c) for c in command) + f" < {stdin.name} > {stdout.name}", file=sys.stderr)
    measured = work / "time.txt"
    process = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(measured), *map(str, command)], stdin=stdin,
                             stdout=stdout)
    if process.returncode:
        sys.exit(f"{command[0]} failed with exit code {process.returncode}")
    return measured_by_time(work)


def measured_by_time(work: Path):
    """(wall seconds, CPU seconds, peak resident MiB) that GNU time wrote for a run when it ended (also when
    it was stopped by a signal), all None while it runs."""
    path = work / "time.txt"
    lines = path.read_text().strip().splitlines() if path.is_file() else []
    if not lines or len(lines[-1].split()) != 4:
        return None, None, None
    wall, user, system, peak_kib = lines[-1].split()
    return float(wall), float(user) + float(system), int(peak_kib) / 1024


def run_ag(folder: Path, args):
    from cvbayes.data import load_brent

    corpus = load_brent()
    symbols = corpus.symbols
    work = folder / "runs" / f"ag-{args.grammar}-seed{args.seed}-n{args.iterations}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "input.txt").write_text("".join(" ".join(s) + "\n" for s in symbols), encoding="utf-8")
    (work / "grammar.lt").write_text(johnson_grammar(args.grammar, {x for s in symbols for x in s}), encoding="utf-8")
    command = [binary(folder, "ag"), work / "grammar.lt", *AG_ARGS, "-n", args.iterations, "-r", args.seed,
               "-u", work / "input.txt", "-c", "Word", "-F", work / "trace.txt"]
    if args.score_only:     # a run made before, finished or not: its printed parses so far
        wall, cpu, peak = measured_by_time(work)
    else:
        with open(work / "input.txt") as stdin, open(work / "parses.txt", "w") as stdout:
            wall, cpu, peak = timed(command, stdin, stdout, work)
    trace = trace_rows(work / "trace.txt")
    blocks = list(output_blocks(work / "parses.txt"))
    # a trace row and a parse every 10 sweeps and after the last; a stopped run may lack its last parse
    if len(blocks) not in (len(trace), len(trace) - 1):
        sys.exit(f"{len(blocks)} printed parses against {len(trace)} trace rows")
    curve = []
    for row, block in zip(trace, blocks):
        predicted = [words_of(line, s) for line, s in zip(block, symbols)]
        curve.append({**row, **scores_of(predicted, corpus)})
    final = curve[-1]
    # a run stopped before its sweeps: its time is the trace's CPU time at its last scored parse, and its
    # wall time (until stopped) and peak memory are GNU time's, when it wrote them
    partial = final["sweep"] < args.iterations
    report = {"system": "wordseg-ag (Johnson's py-cfg)", "grammar": args.grammar, "seed": args.seed,
              "iterations": final["sweep"], "planned_iterations": args.iterations, "stopped_early": partial,
              "command": " ".join(str(c) for c in command), "arguments": " ".join(AG_ARGS), "wordseg_commit": COMMIT,
              "wall_seconds": wall, "cpu_seconds": final["cpu_seconds"] if partial or cpu is None else cpu,
              "peak_rss_mib": peak,
              "final": final, "curve": curve,
              "time_to_published": time_to(curve, PUBLISHED_TOKEN_F1[args.grammar]),
              "time_to_final_less_one_point": time_to(curve, final["token_f1"] - 0.01),
              "wordseg_evaluate": wordseg_evaluation(folder, predicted, corpus),
              "utterances": len(corpus), "machine": machine()}
    return report, f"ag_{args.grammar}_seed{args.seed}.json"


def run_dpseg(folder: Path, args):
    from cvbayes.data import load_brent

    corpus = load_brent()
    symbols = corpus.symbols
    if any(len(x) != 1 for s in symbols for x in s):
        sys.exit("dpseg reads one character a symbol")
    work = folder / "runs" / f"dpseg-ngram{args.ngram}-seed{args.seed}-n{args.iterations}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "input.txt").write_text("".join("".join(s) + "\n" for s in symbols), encoding="utf-8")
    command = [binary(folder, "dpseg"), "--output-file", work / "segmented.txt", *DPSEG_ARGS[args.ngram],
               "--burnin-iterations", args.iterations, "--randseed", args.seed, "--data-file", work / "input.txt"]
    if args.score_only:
        wall, cpu, peak = measured_by_time(work)
    else:
        with open(os.devnull) as stdin, open(work / "stdout.txt", "w") as stdout:
            wall, cpu, peak = timed(command, stdin, stdout, work)
    lines = [line for line in (work / "segmented.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    predicted = [words_of(line, s) for line, s in zip(lines, symbols)]
    if len(predicted) != len(symbols):
        sys.exit(f"dpseg wrote {len(predicted)} utterances of {len(symbols)}")
    final = {"sweep": args.iterations, "cpu_seconds": cpu, **scores_of(predicted, corpus)}
    report = {"system": f"dpseg ({'unigram' if args.ngram == 1 else 'bigram'}, Goldwater's sampler)",
              "grammar": "unigram" if args.ngram == 1 else "bigram", "seed": args.seed,
              "iterations": args.iterations, "command": " ".join(str(c) for c in command), "wordseg_commit": COMMIT,
              "wall_seconds": wall, "cpu_seconds": cpu, "peak_rss_mib": peak, "final": final, "curve": [final],
              "wordseg_evaluate": wordseg_evaluation(folder, predicted, corpus),
              "utterances": len(corpus), "machine": machine()}
    return report, f"dpseg_ngram{args.ngram}_seed{args.seed}_n{args.iterations}.json"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default=None, help="where wordseg is fetched and built: PEERS/wordseg "
                        "(default $CVBAYES_PEERS or /work/peers)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="fetch bootphon/wordseg at the pinned commit and build ag and dpseg")
    ag = commands.add_parser("ag", help="run Johnson's adaptor grammar sampler on Brent")
    ag.add_argument("--grammar", choices=sorted(PUBLISHED_TOKEN_F1), default="unigram")
    ag.add_argument("--iterations", type=int, default=2000, help="sweeps (the C++ default 2000)")
    dpseg = commands.add_parser("dpseg", help="run Goldwater's dpseg on Brent")
    dpseg.add_argument("--ngram", type=int, choices=(1, 2), default=1)
    dpseg.add_argument("--iterations", type=int, default=2000, help="sweeps (the binary's default 2000)")
    for sub in (ag, dpseg):
        sub.add_argument("--seed", type=int, default=1, help="the sampler's random seed (-r / --randseed)")
        sub.add_argument("--score-only", action="store_true",
                         help="score the run of these settings made before, as far as it got (an ag run stopped "
                              "early is marked so; its CPU seconds are the trace's at its last printed parse)")
    args = parser.parse_args(argv)
    folder = peers_folder(args.peers)
    if args.command == "build":
        if shutil.which("cmake") is None:
            sys.exit("cmake is missing (apt-get install cmake g++ libboost-program-options-dev)")
        build(folder)
        return
    report, name = (run_ag if args.command == "ag" else run_dpseg)(folder, args)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / name).write_text(json.dumps(report, indent=1) + "\n")
    final = report["final"]
    print(f"{report['system']} {report['grammar']} seed {args.seed}, {report['iterations']} sweeps: token F1 "
          f"{100 * final['token_f1']:.1f}, boundary {100 * final['boundary_f1']:.1f}, lexicon "
          f"{100 * final['lexicon_f1']:.1f}; {report['cpu_seconds']:.0f} s CPU, {report['wall_seconds']} s wall, "
          f"{report['peak_rss_mib']} MiB peak; written to {RESULTS_DIR / name}")


if __name__ == "__main__":
    main()

"""Acoustic unit discovery (issue 30, the bottom layer of lexicon discovery from speech): every learner of
`cvbayes.AcousticUnits` on a corpus of feature arrays, 3 seeds, with what can be checked of the units found.

Corpora (``--corpus``):

* ``tidigits``: the 31 TIDIGITS test utterances of CMU Sphinx (real speech, 13 cepstra a 10 ms frame;
  `cvbayes.data.load_tidigits`).  Its phone alignments are not available, so
  the checks are at the level of the words of its transcripts (features: the cepstra with deltas, 39
  dimensions, as the speech front end reads ``.mfc`` files): (1) segments against phones: every
  utterance's decoded units against the number of phones of its words in Sphinx's TIDIGITS dictionary
  (`PHONES`), their ratio and correlation over utterances; (2) word detection: for every digit word, the
  unit whose presence in an utterance best predicts the word's (F1 over utterances), averaged over the
  eleven words, against the same with the utterances' unit sets shuffled among them (chance).
* ``planted``: utterances drawn from a known chain-of-units model (`cvbayes.synthetic.sample_acoustic_units`:
  30 units of 3 states, 39 dimensions, 5 minutes; not speech), scored against the planted units;
* ``synthetic-brent`` and ``synthetic-brent-test`` (``cvbayes data fetch synthetic-brent``): synthetic
  speech with exact phone alignments, its train split (9 voices; the models fitted on it also decode the
  3 held-out voices of the test split, the ``heldout_`` scores) and the test split alone, scored against
  the phones.  Any list of feature arrays with per-utterance gold intervals goes the same way through
  `run` (a folder of features with a ZeroSpeech ``.phn`` file, read by `cvbayes.speech.read_alignments`).

Gold intervals are scored by `cvbayes.metrics.speech.units_report`: boundary precision, recall and F1
at 20 ms, frame purity and NMI.

Every run records the seconds a pass and the real-time factor (seconds a pass over seconds of audio),
the units used (the fewest holding 99 % of the frames, and the distinct units decoded), and writes
results.json, table.md and PNG plots under ``--out/units``.

Published figures, on TIMIT (other data: read English, 61 phones folded to 39, hours of training speech):
Lee and Glass (2012), Gibbs sampling of the DP-HMM: boundary F1 76.2 (recall 75.9, precision 76.5, at
20 ms), 123 units; Ondel, Burget and Černocký (2016), VB of the same model: NMI 35.9 (Gibbs 35.1 in their
re-run), boundary F1 at 20 ms 62.0 (Gibbs 59.4), 100 units a truncation.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..files import save_figure, write_json, write_text  # noqa: E402
from ..metrics.speech import WINDOW, units_report  # noqa: E402
from ..models.units import ALGORITHMS, DEFAULT_UNITS, AcousticUnits  # noqa: E402
from ..synthetic import sample_acoustic_units  # noqa: E402
from .memory import peak_mib, reset_peak, status_mib  # noqa: E402
from .results import plain_json  # noqa: E402

NAME = "units"
FRAME_SECONDS = 0.01
SEEDS = 3
DEFAULT_PASSES = 30
GIBBS_SWEEPS_PER_PASS = 5
# the model settings of the options added after results.json was first written, at the values runs had before
LATER_SETTINGS = {"n_states": 3, "n_components": 2, "gamma": 1.0, "presegment": False}
PLANTED_MINUTES = 5.0  # the sampler's sweeps are cheaper than a variational pass and need more of them
# phones of every TIDIGITS word in Sphinx's test dictionary (tidigits/lm/tidigits.dic)
PHONES = {"oh": 1, "two": 2, "eight": 2, "one": 3, "three": 3, "four": 3, "five": 3, "nine": 3, "six": 4,
          "zero": 4, "seven": 5}
PUBLISHED = [
    {"system": "Lee and Glass 2012 (Gibbs, DP-HMM)", "data": "TIMIT", "boundary_f1": 0.762, "nmi": None,
     "units": 123},
    {"system": "Ondel et al. 2016 (VB)", "data": "TIMIT", "boundary_f1": 0.620, "nmi": 0.359, "units": 100},
    {"system": "Ondel et al. 2016 (Gibbs re-run)", "data": "TIMIT", "boundary_f1": 0.594, "nmi": 0.351,
     "units": 100},
]
DIFFERENCE = ("Published figures are on TIMIT (read English by 630 speakers, hours of speech, 61 phones folded to "
              "39). The synthetic Brent corpus is SYNTHETIC speech: Brent's child-directed utterances spoken by "
              "espeak-ng and flite voices, phones from the synthesizers (40 ARPAbet phones and silence), scored "
              "on the training utterances and, with the same models, on 3 held-out voices ('-trimmed': each "
              "file's 200 ms of leading and trailing silence cut to 5 frames by voice activity, --trim). TIDIGITS "
              "here is 31 utterances (68 s) of two speakers saying digits (13 cepstra with deltas) and has no "
              "phone alignments: only word-level checks are possible. The planted corpus is data drawn from the "
              "model itself (not speech).")


@dataclass
class UnitCorpus:
    """Feature arrays of one corpus with what can be scored: per-utterance gold intervals (start, end,
    label) in seconds (with the first frame of each, for trimmed utterances), or transcripts."""

    name: str
    features: list
    names: list
    phones: list | None = None
    transcripts: list | None = None
    first_frames: list | None = None
    heldout: UnitCorpus | None = None   # decoded by the model fitted on this corpus, and scored

    @property
    def seconds(self):
        return sum(f.shape[0] for f in self.features) * FRAME_SECONDS


def tidigits_corpus():
    """Sphinx's 13 cepstra with deltas and delta-deltas, normalised over each utterance (the speech front
    end's treatment of ``.mfc`` files, `cvbayes.speech.features`)."""
    from .. import speech
    from ..data import load_tidigits

    data = load_tidigits()
    features = [speech.cmvn(speech.add_deltas(frames)) for frames in data.corpus]
    return UnitCorpus("tidigits", features, data.utterance_ids, transcripts=data.transcripts)


def planted_intervals(labels, starts):
    """Gold intervals (start, end, unit) in seconds of planted frame labels: frames a..b-1 of a unit span
    the times between the frame boundaries of `cvbayes.metrics.speech.frame_boundaries`, so that every
    frame's centre falls in its own unit's interval."""
    shift = WINDOW / 2 - FRAME_SECONDS / 2
    out = []
    for label, first in zip(labels, starts):
        cuts = np.append(np.flatnonzero(first), label.shape[0])
        out.append([(a * FRAME_SECONDS + shift, b * FRAME_SECONDS + shift, int(label[a]))
                    for a, b in zip(cuts[:-1], cuts[1:])])
    return out


def planted_corpus(minutes=PLANTED_MINUTES):
    n_utterances = int(minutes * 60 / 3)
    features, labels, starts = sample_acoustic_units(n_utterances, n_units=30, n_states=3, n_dims=39,
                                                     mean_frames=300, seed=1000)
    return UnitCorpus("planted", features, [f"utt{i:04d}" for i in range(n_utterances)],
                      phones=planted_intervals(labels, starts))


def synthetic_brent_corpus(split="train", limit=None, heldout=None, trim=False):
    """The synthetic Brent corpus's ``split`` (the first ``limit`` utterances, with ``trim`` their leading and
    trailing silence cut to 5 frames), with the held-out voices' split as its ``heldout`` corpus when
    ``heldout`` names it."""
    from .. import speech  # the speech front end (issue 30, items 1-2)

    data = speech.load_synthetic_brent(split, limit=limit, progress=False, trim=trim)
    names = list(data.corpus.names)
    return UnitCorpus(f"synthetic-brent-{split}{'-trimmed' if trim else ''}", list(data.corpus.features), names,
                      phones=[[(i.start, i.end, i.label) for i in data.phones[n]] for n in names],
                      first_frames=list(data.corpus.first_frames),
                      heldout=None if heldout is None else synthetic_brent_corpus(heldout, limit, trim=trim))


# -- scores ------------------------------------------------------------------------------------------------

def interval_scores(units, corpus):
    """Boundary F1 at 20 ms, purity and NMI of the frames' units against gold intervals
    (`cvbayes.metrics.speech.units_report`)."""
    report = units_report(units, corpus.phones, corpus.first_frames)
    return {key: report[key] for key in ("boundary_precision", "boundary_recall", "boundary_f1", "purity", "nmi")}


def word_detection(sets, transcripts, rng, shuffles=20):
    """The mean over TIDIGITS's words of the best single label's F1 at telling the utterances with the word,
    a label present in an utterance when it is in its set of ``sets``; and the same with the sets shuffled
    among the utterances (chance), averaged over ``shuffles`` shuffles."""
    def detection(sets):
        f1s = []
        for word in PHONES:
            has = np.array([word in text.split() for text in transcripts])
            if not has.any():
                continue
            best = 0.0
            for label in set().union(*sets):
                present = np.array([label in s for s in sets])
                hits = (present & has).sum()
                if hits:
                    precision, recall = hits / present.sum(), hits / has.sum()
                    best = max(best, 2 * precision * recall / (precision + recall))
            f1s.append(best)
        return float(np.mean(f1s))

    shuffled = [detection([sets[i] for i in rng.permutation(len(sets))]) for _ in range(shuffles)]
    return detection(sets), float(np.mean(shuffled))


def word_scores(segments, transcripts, rng):
    """TIDIGITS's word-level checks (module notes): segments against dictionary phones, and the mean over
    words of the best single unit's F1 at telling the utterances with the word, against shuffled units."""
    n_segments = np.array([len(s.units) for s in segments])
    n_phones = np.array([sum(PHONES[w] for w in text.split()) for text in transcripts])
    found, shuffled = word_detection([set(s.units.tolist()) for s in segments], transcripts, rng)
    return {"segments_per_phone": float(n_segments.sum() / n_phones.sum()),
            "segments_phones_correlation": float(np.corrcoef(n_segments, n_phones)[0, 1]),
            "word_detection_f1": found, "word_detection_f1_shuffled": shuffled}


# -- runs ------------------------------------------------------------------------------------------------

def fit_one(corpus, algorithm, seed, n_units, passes, n_states=3, n_components=2, gamma=1.0, presegment=False):
    n_iter = passes * (GIBBS_SWEEPS_PER_PASS if algorithm == "gibbs" else 1)
    model = AcousticUnits(n_units=n_units, n_states=n_states, n_components=n_components, gamma=gamma,
                          algorithm=algorithm, n_iter=n_iter, presegment=presegment, random_state=seed)
    before = status_mib("VmRSS") if reset_peak() else None
    started = time.perf_counter()
    model.fit(corpus.features)
    seconds = time.perf_counter() - started
    memory = {} if before is None else {"rss_before_fit_mib": before, "peak_rss_mib": peak_mib()}
    per_pass = float(np.median([r.seconds for r in model.history_]))
    units = model.predict(corpus.features)
    row = {"corpus": corpus.name, "algorithm": algorithm, "seed": seed, "passes": n_iter, "seconds": seconds,
           "seconds_per_pass": per_pass, "real_time_factor": per_pass / corpus.seconds,
           "units_used": int(model.n_units_used_),
           "units_decoded": int(np.unique(np.concatenate(units)).size), **memory,
           "learner_local_mib": model.local_memory_bytes_ / 2 ** 20,
           "objective": model.history_[-1].objective, "objective_curve": [r.objective for r in model.history_]}
    if corpus.phones is not None:
        row.update(interval_scores(units, corpus))
    if corpus.heldout is not None:
        scores = interval_scores(model.predict(corpus.heldout.features), corpus.heldout)
        row.update({f"heldout_{key}": value for key, value in scores.items()})
    if corpus.transcripts is not None:
        row.update(word_scores(model.decode(corpus.features), corpus.transcripts, np.random.default_rng(seed)))
    return row, model


SCORES = ("boundary_f1", "purity", "nmi", "heldout_boundary_f1", "heldout_purity", "heldout_nmi",
          "segments_per_phone", "segments_phones_correlation", "word_detection_f1", "word_detection_f1_shuffled",
          "units_used", "units_decoded", "seconds_per_pass", "real_time_factor", "peak_rss_mib")


def summary(rows):
    """Mean and standard deviation over seeds of every score, by corpus and algorithm."""
    out = []
    for key in dict.fromkeys((r["corpus"], r["algorithm"]) for r in rows):
        group = [r for r in rows if (r["corpus"], r["algorithm"]) == key]
        entry = {"corpus": key[0], "algorithm": key[1], "seeds": len(group)}
        for score in SCORES:
            values = [r[score] for r in group if score in r]
            if values:
                entry[score] = float(np.mean(values))
                entry[score + "_std"] = float(np.std(values))
        out.append(entry)
    return out


def table(summaries, settings):
    """table.md: every corpus's learners (mean ± std over seeds) beside the published figures."""
    lines = ["# Acoustic unit discovery (issue 30)", "", DIFFERENCE, "",
             f"Units (truncation) {settings['n_units']}, {settings.get('n_states', 3)} states a unit, "
             f"{settings.get('n_components', 2)} Gaussians a state, gamma {settings.get('gamma', 1.0):g}, "
             + ("unit starts at spectral-change candidates only (--presegment), " if settings.get("presegment") else "")
             + f"{settings['passes']} passes (gibbs: "
             f"{GIBBS_SWEEPS_PER_PASS} sweeps a pass, and its seconds_per_pass and real_time_factor are a "
             f"sweep's), seeds {', '.join(map(str, settings['seeds']))}. peak_rss_mib: the process's peak "
             "resident memory during the fit (data included).", ""]
    for name, size in settings["corpora"].items():
        rows = [s for s in summaries if s["corpus"] == name]
        scores = [k for k in SCORES if k in rows[0]]
        lines += [f"## {name} ({size['utterances']} utterances, {size['seconds']:.0f} s"
                  f"{', real speech' if name == 'tidigits' else ', synthetic'}; mean ± std over seeds)", "",
                  "| algorithm | " + " | ".join(scores) + " |", "|---|" + "---:|" * len(scores)]
        for row in rows:
            cells = []
            for k in scores:
                value, spread = row[k], row.get(k + "_std", 0.0)
                cells.append(f"{value:.3g} ± {spread:.2g}" if spread else f"{value:.3g}")
            lines.append(f"| {row['algorithm']} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Published (TIMIT)", "", "| system | boundary F1 | NMI | units |", "|---|---:|---:|---:|"]
    for p in PUBLISHED:
        lines.append(f"| {p['system']} | {p['boundary_f1']:.3f} | {p['nmi'] if p['nmi'] is not None else '-'} | "
                     f"{p['units']} |")
    return "\n".join(lines) + "\n"


def plots(folder, rows, summaries, example):
    """The objective curves of ``rows`` (one seed's runs), the units used and an example decoding."""
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for row in rows:
        axes[0].plot(row["objective_curve"], label=f"{row['corpus']} {row['algorithm']}")
    axes[0].set_xlabel("pass (gibbs: sweep)")
    axes[0].set_ylabel("objective (each learner's own)")
    axes[0].set_yscale("symlog")
    axes[0].legend(fontsize=6)
    names = [f"{s['corpus']}\n{s['algorithm']}" for s in summaries]
    axes[1].bar(range(len(summaries)), [s["units_used"] for s in summaries],
                yerr=[s.get("units_used_std", 0) for s in summaries])
    axes[1].set_xticks(range(len(summaries)), names, fontsize=6, rotation=90)
    axes[1].set_ylabel("units holding 99% of the frames")
    figure.tight_layout()
    save_figure(figure, folder / "units.png")
    plt.close(figure)
    if example is not None:
        name, frames, segments = example
        figure, axis = plt.subplots(figsize=(11, 3))
        axis.imshow(frames.T, aspect="auto", origin="lower", cmap="viridis")
        for unit, start, end in zip(segments.units, segments.starts, segments.ends):
            axis.axvline(start - 0.5, color="white", linewidth=0.8)
            axis.text((start + end) / 2, frames.shape[1] - 1, str(unit), color="white", ha="center", fontsize=7)
        axis.set_title(f"{name}: decoded units (numbers) on its features")
        axis.set_xlabel("frame (10 ms)")
        figure.tight_layout()
        save_figure(figure, folder / "decoded_utterance.png")
        plt.close(figure)


def appended(old, settings, rows):
    """The runs of an earlier results.json (``old``, parsed) with this command's added: a new run replaces
    an old one of the same corpus, algorithm and seed; the settings must agree but for seeds and corpora."""
    for key in ("n_units", "passes", *LATER_SETTINGS):
        before = old["settings"].get(key, LATER_SETTINGS.get(key))
        if before != settings[key]:
            raise ValueError(f"--append: the runs in results.json have {key} {before}, these {settings[key]}")
    new = {(r["corpus"], r["algorithm"], r["seed"]) for r in rows}
    rows = [r for r in old["runs"] if (r["corpus"], r["algorithm"], r["seed"]) not in new] + rows
    joined = {**settings, "seeds": sorted({r["seed"] for r in rows}),
              "algorithms": list(dict.fromkeys(old["settings"]["algorithms"] + settings["algorithms"])),
              "corpora": {**old["settings"]["corpora"], **settings["corpora"]}}
    return joined, rows


def run(corpora, out, algorithms=tuple(ALGORITHMS), seeds=SEEDS, n_units=DEFAULT_UNITS, passes=DEFAULT_PASSES,
        n_states=3, quiet=False, first_seed=0, append=False, n_components=2, gamma=1.0, presegment=False):
    """Fit every learner with seeds ``first_seed`` .. ``first_seed + seeds - 1`` on every corpus
    (`UnitCorpus`), score, and write the results (with ``append``, added to those of ``out``'s
    results.json, read when this run's are written)."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    rows, example = [], None
    seed_list = list(range(first_seed, first_seed + seeds))
    for corpus in corpora:
        for algorithm in algorithms:
            for seed in seed_list:
                row, model = fit_one(corpus, algorithm, seed, n_units, passes, n_states, n_components, gamma,
                                     presegment)
                rows.append(row)
                if not quiet:
                    shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()
                             if k != "objective_curve"}
                    print(json.dumps(shown), file=sys.stderr, flush=True)
                if example is None and corpus.name == "tidigits" and algorithm == "vb":
                    example = (corpus.names[0], corpus.features[0], model.decode(corpus.features[:1])[0])
    settings = {"seeds": seed_list, "n_units": n_units, "n_states": n_states, "n_components": n_components,
                "gamma": gamma, "presegment": presegment, "passes": passes, "algorithms": list(algorithms),
                "corpora": {c.name: {"utterances": len(c.features), "seconds": c.seconds} for c in corpora}}
    if append and (folder / "results.json").exists():
        settings, rows = appended(json.loads((folder / "results.json").read_text()), settings, rows)
    summaries = summary(rows)
    write_json(folder / "results.json", plain_json({"settings": settings, "runs": rows, "summary": summaries,
                                                    "published": PUBLISHED, "data_difference": DIFFERENCE}), indent=1)
    write_text(folder / "table.md", table(summaries, settings))
    plots(folder, [r for r in rows if r["seed"] == settings["seeds"][0]], summaries, example)
    return summaries


def run_from_command_line(args):
    """``cvbayes experiment units`` (options in `cvbayes.commands.experiment`)."""
    out = Path(args.out) / NAME if args.out == "docs/results" else Path(args.out)
    trim = args.trim
    builders = {"tidigits": tidigits_corpus, "planted": planted_corpus,
                "synthetic-brent": lambda: synthetic_brent_corpus("train", args.utterances, heldout="test", trim=trim),
                "synthetic-brent-test": lambda: synthetic_brent_corpus("test", args.utterances, trim=trim)}
    unknown = [name for name in args.corpus if name not in builders]
    if unknown:
        raise ValueError(f"unknown corpus {unknown[0]!r} for the units experiment; choose from {', '.join(builders)}")
    algorithms = args.algorithms or list(ALGORITHMS)
    wrong = [a for a in algorithms if a not in ALGORITHMS]
    if wrong:
        raise ValueError(f"unknown algorithm {wrong[0]!r}; choose from {', '.join(ALGORITHMS)}")
    run([builders[name]() for name in args.corpus], out, algorithms, args.seeds, args.units or DEFAULT_UNITS,
        args.passes or DEFAULT_PASSES, args.states, quiet=args.quiet, first_seed=args.seed, append=args.append,
        n_components=args.components, gamma=args.gamma, presegment=args.presegment)


EXPERIMENTS = {NAME: run_from_command_line}

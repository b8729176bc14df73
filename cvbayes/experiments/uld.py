"""``cvbayes experiment uld``: lexicon discovery from speech (issue 31) on the synthetic Brent corpus, scored by
the ZeroSpeech term-discovery evaluator.

Systems, for each learner (vb, cvi) and seed, on the first ``--utterances`` trimmed utterances of the training
voices after the first ``--first`` (0; another slice of the same voices to measure robustness on)
(`cvbayes.models.discovery.LexiconDiscovery`, one unit layer shared by the word layers of a seed and learner):

* **joint rounds with the channel**: the pipeline with the channel, then ``--joint-rounds`` (3; 0 leaves this
  system out) rounds in which the words' reading of the units re-estimates the unit layer and the words are
  fitted again (`cvbayes.models.discovery`, Joint rounds);
* **joint ELBO over n-best readings with the channel**: the pipeline with the channel, then as many rounds of
  the n-best joint over the candidate readings of every utterance (``joint="nbest"``, ``n_best`` 5, ``n_draws``
  20): vb's coordinate ascent on the VB ELBO of both layers (eq. J1 of `cvbayes.models.discovery_nbest`), cvi's
  collapsed counterpart (`cvbayes.models.discovery_nbest_cvi`, whose objective is a leave-one-utterance-out
  predictive log-likelihood, not a bound).  Its rows also keep the objective (vb: J1 before every round and after
  the last; cvi: every round's) and, per utterance, the candidates and the distinct spoken strings with q(k | u) >
  0.01;
* **pipeline with the channel**: 1-best units into the unigram adaptor grammar through a learned edit channel
  (`cvbayes.NoisyWords`); a token's class is its underlying word;
* **pipeline without the channel**: 1-best units into the unigram adaptor grammar (`cvbayes.AdaptorGrammar`);
  a token's class is its unit string;
* **utterances whole** (a trivial system): every utterance one token, its class its unit string.

Every system leaves the pause units at utterance edges out of its tokens (`cvbayes.models.discovery.pause_units`).

``--grammars`` (default unigram): the word grammars of the systems but the whole utterances, each on the same unit
layer; "colloc" is Johnson's collocation grammar (with the channel: `cvbayes.models.noisy_colloc`).  A system that
`LexiconDiscovery` does not take for a grammar and learner (it raises ValueError when built: today the colloc
grammar over the channel by cvi, and the n-best joint of the colloc grammar) is left out, and the table says so.

The joint rounds are a hard-reading (Viterbi-style) form of Lee, O'Donnell and Glass (2015)'s joint learning,
not their joint model over a unit lattice (`cvbayes.models.discovery`).  The same fitted models also read the
held-out voices' first ``--utterances`` utterances (``heldout_`` scores).

Scores: `cvbayes.metrics.tde.term_discovery_scores` (the ``zerospeech-tde`` package): boundary, token and
type F1, NED, coverage and grouping F1, against the synthesizers' own word and phone alignments.  Beside them:
the ZeroSpeech 2017 track-2 English baseline (ZRTools) and topline (Goldwater et al.'s word segmentation on gold
phones) from
the challenge's leaderboard archive.  ``--corpus tidigits``: TIDIGITS's 31 utterances of real speech, which have
transcripts but no time alignments, so tde cannot score them; instead the word detection of the units
experiment (`cvbayes.experiments.units.word_detection`) with the discovered word types as the labels.

Seconds: each layer's median seconds a pass and the seconds a pass over
one hour of audio they add up to.
"""
from __future__ import annotations

import textwrap
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..files import save_figure  # noqa: E402
from ..metrics.tde import TDE_MEASURES, term_discovery_scores  # noqa: E402
from ..models.discovery import (  # noqa: E402
    GRAMMARS, LexiconDiscovery, Token, pause_units, spoken, type_counts, word_classes)
from ..models.noisy_words import NoisyWords  # noqa: E402
from ..models.units import AcousticUnits  # noqa: E402
from .results import publish, seed_range  # noqa: E402
from .units import word_detection  # noqa: E402

NAME = "uld"
UTTERANCES = 500
UNIT_PASSES = 30
WORD_PASSES = 10
JOINT_ROUNDS = 3
LEARNERS = ("vb", "cvi")
UNIGRAM = "unigram"
JOINT, NBEST, WITH_CHANNEL, WITHOUT_CHANNEL, WHOLE = (
    "joint rounds with channel", "joint ELBO over n-best readings with channel", "pipeline with channel",
    "pipeline without channel", "utterances whole")
SYSTEMS = (JOINT, NBEST, WITH_CHANNEL, WITHOUT_CHANNEL, WHOLE)
HEARD = 0.01        # q(k | u) above which a candidate's spoken string counts as heard
FRAME_SECONDS = 0.01
BRENT_COLUMNS = [(key, header, 100, 1) for key, header in (
    ("token_fscore", "token F1"), ("type_fscore", "type F1"), ("boundary_fscore", "boundary F1"), ("ned", "NED"),
    ("coverage", "coverage"), ("grouping_fscore", "grouping F1"), ("heldout_token_fscore", "held-out token F1"),
    ("heldout_boundary_fscore", "held-out boundary F1"))]
TIDIGITS_COLUMNS = [("word_detection_f1", "word detection F1", 100, 1),
                    ("word_detection_f1_shuffled", "shuffled (chance)", 100, 1),
                    ("tokens_per_word", "tokens a transcript word", 1, 2), ("word_types", "word types", 1, 0)]
# ZeroSpeech 2017 track 2, English (percent), github.com/zerospeech/leaderboard-archive at 26189a4,
# data/challenges/zr2017/entries/track2/{0,1}.yaml
PUBLISHED = [
    {"system": "ZeroSpeech 2017 baseline (ZRTools, Jansen and Van Durme)", "ned": 32.42, "coverage": 7.93,
     "grouping_fscore": 32.22, "type_fscore": 3.91, "token_fscore": 0.72, "boundary_fscore": 6.68},
    {"system": "ZeroSpeech 2017 topline (Goldwater et al.'s word segmentation on gold phones)", "ned": 0.0,
     "coverage": 100.0, "grouping_fscore": 100.0, "type_fscore": 51.1, "token_fscore": 64.7, "boundary_fscore": 88.9},
]
DIFFERENCE = ("The data differ: ZeroSpeech 2017's English is 45 hours of read audiobooks by 69 speakers; ours is "
              "SYNTHETIC speech (Brent's child-directed utterances spoken by espeak-ng and flite voices), as "
              "much as the heading says, with the synthesizers' own alignments as gold. Lee et al. (2015) report "
              "on MIT lectures; their figures are not reproduced here (we did not find their table's text to "
              "quote). Percent, mean ± sd over seeds; zerospeech-tde's measures on the training utterances "
              "(held-out voices: the same models on the test split's first utterances). Lower NED is better.")
TIDIGITS_NOTE = ("TIDIGITS here is 31 utterances (70 s) of two speakers saying digits, with transcripts but no time "
                 "alignments, so zerospeech-tde cannot score it. Word detection: for every digit word, the discovered "
                 "word type whose presence in an utterance best tells the utterances holding the word (F1 over "
                 "utterances, percent), averaged over the eleven words, against the same with the utterances' type "
                 "sets shuffled among them.")


def brent_corpus(split, limit, skip=0):
    """``limit`` trimmed utterances of the synthetic Brent corpus's ``split`` after its first ``skip``, scored by
    tde."""
    from .. import speech

    data = speech.load_synthetic_brent(split, limit=limit, progress=False, trim=True, skip=skip)
    names = list(data.corpus.names)
    phones, words = {n: data.phones[n] for n in names}, {n: data.words[n] for n in names}

    def score(lexicon, tokens):
        classes = word_classes(lexicon, names, tokens, data.corpus.first_frames)
        return term_discovery_scores(classes, phones, words, TDE_MEASURES)

    return {"features": list(data.corpus.features), "score": score,
            "seconds": sum(f.shape[0] for f in data.corpus.features) * FRAME_SECONDS}


def tidigits_corpus(seed):
    """TIDIGITS's 31 utterances (no time alignments: word-level checks against the transcripts)."""
    from .units import tidigits_corpus as features_of_tidigits

    data = features_of_tidigits()
    n_words = sum(len(text.split()) for text in data.transcripts)

    def score(lexicon, tokens):
        sets = [{token.word for token in utterance} for utterance in tokens]
        found, chance = word_detection(sets, data.transcripts, np.random.default_rng(seed))
        return {"word_detection_f1": found, "word_detection_f1_shuffled": chance,
                "tokens_per_word": sum(len(u) for u in tokens) / n_words}

    return {"features": data.features, "score": score, "seconds": data.seconds}


def whole_utterances(segments, pauses):
    """Every utterance (its decoded units, ``segments``) one token between the pauses at its edges (as
    `LexiconDiscovery` leaves them out), its class its unit string."""
    tokens = []
    for decoded, (first, string) in zip(segments, spoken(segments, pauses)):
        string = tuple(string)
        tokens.append([Token(string, int(decoded.starts[first]), int(decoded.ends[first + len(string) - 1]), string)]
                      if string else [])
    return tokens


def pass_seconds(model):
    return float(np.median([record.seconds for record in model.history_]))


def scored(corpus, heldout, lexicon, discover):
    """``corpus``'s scores of the tokens ``discover(features)`` finds, and ``heldout``'s prefixed ``heldout_``."""
    row = corpus["score"](lexicon, discover(corpus["features"]))
    if heldout is not None:
        found = heldout["score"](lexicon, discover(heldout["features"]))
        row.update({f"heldout_{key}": value for key, value in found.items()})
    return row


def candidate_statistics(model):
    """An n-best joint's (`LexiconDiscovery` ``joint="nbest"``) mean candidates an utterance, mean distinct
    spoken strings an utterance among its candidates with q(k | u) > ``HEARD``, and J1 after every round."""
    heard = [len({tuple(spoken([reading], model.pause_units_)[0][1])
                  for reading, q in zip(readings, posterior) if q > HEARD})
             for readings, posterior in zip(model.candidates_, model.reading_posterior_)]
    return {"candidates_per_utterance": float(np.mean([len(r) for r in model.candidates_])),
            "heard_strings_per_utterance": float(np.mean(heard)), "joint_objective": list(model.joint_objective_)}


def run_seed(train, heldout, algorithm, seed, unit_passes, word_passes, joint_rounds, quiet, grammars=(UNIGRAM,)):
    """The systems of one learner and seed, for every grammar, on one unit layer; a system `LexiconDiscovery`
    does not take for a grammar and learner is a row with its reason under ``skipped``."""
    started = time.perf_counter()
    units = AcousticUnits(algorithm=algorithm, n_iter=unit_passes, presegment=True, random_state=seed)
    units.fit(train["features"])
    unit_seconds = time.perf_counter() - started
    hour = 3600.0 / train["seconds"]
    segments = units.decode(train["features"])
    pauses = pause_units(segments)
    base = {"algorithm": algorithm, "seed": seed, "unit_seconds": unit_seconds,
            "unit_pass_seconds": pass_seconds(units), "units_used": int(units.n_units_used_), "pause_units": pauses}
    whole = type_counts(whole_utterances(segments, pauses))
    # the whole utterances have no grammar
    rows = [{**base, "system": WHOLE, "grammar": None,
             **scored(train, heldout, whole, lambda features: whole_utterances(units.decode(features), pauses))}]
    systems = ((JOINT, "hard", joint_rounds), (NBEST, "nbest", joint_rounds)) if joint_rounds else ()
    for grammar in grammars:
        for system, joint, rounds in systems + ((WITH_CHANNEL, "hard", 0), (WITHOUT_CHANNEL, "hard", 0)):
            try:
                model = LexiconDiscovery(grammar=grammar, channel=system != WITHOUT_CHANNEL, algorithm=algorithm,
                                         joint_rounds=rounds, joint=joint, n_iter=word_passes, random_state=seed)
            except ValueError as reason:
                rows.append({**base, "system": system, "grammar": grammar, "skipped": str(reason)})
                continue
            started = time.perf_counter()
            model.fit(train["features"], units=units)
            seconds = time.perf_counter() - started
            row = {**base, "system": system, "grammar": grammar, "word_seconds": seconds,
                   "word_pass_seconds": pass_seconds(model.words_), "word_types": len(model.lexicon_),
                   **scored(train, heldout, model.lexicon_, model.discover)}
            if system == NBEST:
                row.update(candidate_statistics(model))
            row["hour_pass_seconds"] = (row["unit_pass_seconds"] + row["word_pass_seconds"]) * hour
            rows.append(row)
            if not quiet:
                shown = ", ".join(f"{key} {row[key]:.3f}" for key in ("token_fscore", "word_detection_f1")
                                  if key in row)
                print(f"{algorithm} seed {seed} {system} ({grammar}): {shown} ({seconds:.0f} s)", flush=True)
    return rows


def cell(rows, key, scale=100.0, digits=1):
    values = [r[key] * scale for r in rows if r.get(key) is not None and r[key] == r[key]]
    if not values:
        return ""
    return f"{np.mean(values):.{digits}f}" + (f" ± {np.std(values):.{digits}f}" if len(values) > 1 else "")


def slice_text(settings):
    """Which utterances of the training voices a run took."""
    first = settings.get("first", 0)
    after = f" after the first {first}" if first else ""
    return f"{settings['utterances']} utterances of the training voices{after}"


def grammar_of(row):
    """A row's grammar: None for the whole utterances, the unigram for rows written before ``--grammars``."""
    return row.get("grammar", UNIGRAM)


def systems_of(rows):
    """The (system, learner, grammar) triples ``rows`` hold, in the table's order."""
    return sorted({(r["system"], r["algorithm"], grammar_of(r)) for r in rows},
                  key=lambda k: (SYSTEMS.index(k[0]), LEARNERS.index(k[1]),
                                 -1 if k[2] is None else GRAMMARS.index(k[2])))


def rows_of(rows, system, algorithm, grammar=UNIGRAM):
    return [r for r in rows if r["system"] == system and r["algorithm"] == algorithm and grammar_of(r) == grammar]


def several_grammars(rows):
    """Whether ``rows`` hold more than one grammar: only then do the tables name the grammar."""
    return len({grammar_of(r) for r in rows} - {None}) > 1


def nbest_lines(rows, several):
    """The n-best joint's objective by round and its candidates, by learner (grammar) and seed (empty without its
    rows)."""
    mine = [r for r in rows if r["system"] == NBEST]
    if not mine:
        return []
    grammar_header = "grammar | " if several else ""
    lines = ["", f"{NBEST}: the objective by round (vb: J1, the VB ELBO of both layers, before the first round and "
             "after every round, `cvbayes.models.discovery_nbest`; cvi: every round's sum of leave-one-utterance-out "
             "log predictives, not a bound, `cvbayes.models.discovery_nbest_cvi`), the candidate readings an "
             f"utterance and the distinct spoken strings an utterance with q(k | u) > {HEARD} (means over the "
             "utterances).", "",
             f"| learner | {grammar_header}seed | objective by round | candidates an utterance | strings heard an "
             "utterance |", "|---|---|---|---|---|" + "---|" * several]
    for r in sorted(mine, key=lambda r: (LEARNERS.index(r["algorithm"]), GRAMMARS.index(grammar_of(r)), r["seed"])):
        objective = " → ".join(f"{value:,.0f}" for value in r["joint_objective"])
        grammar = f"{grammar_of(r)} | " if several else ""
        lines.append(f"| {r['algorithm']} | {grammar}{r['seed']} | {objective} | "
                     f"{r['candidates_per_utterance']:.2f} | {r['heard_strings_per_utterance']:.2f} |")
    return lines


def skipped_lines(skipped):
    """One line for every system, learner and grammar left out, with `LexiconDiscovery`'s reason."""
    reasons = {(r["system"], r["algorithm"], r["grammar"]): r["skipped"] for r in skipped}
    lines = [f"Not run: {system}, {algorithm}, {grammar} grammar ({reason})."
             for (system, algorithm, grammar), reason in reasons.items()]
    return [""] + lines if lines else []


def table_text(rows, settings, skipped=()):
    seeds = ", ".join(map(str, settings["seeds"]))
    brent = settings["corpus"] != "tidigits"
    columns = BRENT_COLUMNS if brent else TIDIGITS_COLUMNS
    what = slice_text(settings) if brent else f"{settings['utterances']} utterances"
    several = several_grammars(rows)
    grammar_header = "grammar | " if several else ""
    lines = [f"# Lexicon discovery from {'synthetic speech' if brent else 'TIDIGITS'} ({what}, "
             f"{settings['audio_seconds']:.0f} s of audio; seeds {seeds})", "", DIFFERENCE if brent else TIDIGITS_NOTE,
             "",
             f"| system | learner | {grammar_header}" + " | ".join(header for _, header, _, _ in columns) + " |",
             "|---|---|" + "---|" * (len(columns) + several)]
    for system, algorithm, grammar in systems_of(rows):
        cells = [cell(rows_of(rows, system, algorithm, grammar), key, scale, digits)
                 for key, _, scale, digits in columns]
        lines.append(f"| {system} | {algorithm} | " + (f"{grammar or ''} | " if several else "") + " | ".join(cells)
                     + " |")
    if brent:
        for published in PUBLISHED:
            lines.append(f"| {published['system']} | | {'| ' * several}" + " | ".join(
                f"{published[key]:.1f}" if key in published else "" for key, _, _, _ in columns) + " |")
    lines += skipped_lines(skipped)
    lines += nbest_lines(rows, several)
    lines += ["", f"| learner | {grammar_header}unit layer s a pass | word layer s a pass (channel) | a pass over one "
              "hour of audio, s | word layers, pipeline, s | word layers with "
              f"{settings['joint_rounds']} joint rounds, s | the same, n-best joint, s |", "|---" * (7 + several) + "|"]
    for algorithm in LEARNERS:
        for grammar in GRAMMARS:
            mine, joint, nbest = (rows_of(rows, system, algorithm, grammar) for system in (WITH_CHANNEL, JOINT, NBEST))
            if mine:
                lines.append(f"| {algorithm} | " + (f"{grammar} | " if several else "")
                             + f"{cell(mine, 'unit_pass_seconds', 1)} | {cell(mine, 'word_pass_seconds', 1)} "
                             f"| {cell(mine, 'hour_pass_seconds', 1)} | {cell(mine, 'word_seconds', 1, 0)} | "
                             f"{cell(joint, 'word_seconds', 1, 0)} | {cell(nbest, 'word_seconds', 1, 0)} |")
    lines += ["", f"Units: {settings['unit_passes']} passes of `AcousticUnits` (presegmented, 3 states, 2 Gaussians); "
              f"words: {settings['word_passes']} passes (NoisyWords starts from {NoisyWords().init_iter} passes of the "
              "channel-free grammar). Seconds on a shared 2-core machine; the hour figure scales the median pass of "
              "each layer by one hour over the audio's length."]
    return "\n".join(lines) + "\n"


def plot(path, rows, settings):
    keys = (("token_fscore", "token F1"), ("type_fscore", "type F1"), ("ned", "NED (lower is better)")) \
        if settings["corpus"] != "tidigits" else (("word_detection_f1", "word detection F1"),
                                                  ("tokens_per_word", "tokens a transcript word"))
    systems, several = systems_of(rows), several_grammars(rows)
    fig, axes = plt.subplots(1, len(keys), figsize=(6.5 * len(keys), 4.5))
    for axis, (key, label) in zip(axes, keys):
        for i, (system, algorithm, grammar) in enumerate(systems):
            values = [r[key] for r in rows_of(rows, system, algorithm, grammar)
                      if r.get(key) is not None and r[key] == r[key]]
            axis.scatter([i] * len(values), values, color=f"C{LEARNERS.index(algorithm)}")
            if values:
                axis.hlines(np.mean(values), i - 0.3, i + 0.3, color=f"C{LEARNERS.index(algorithm)}")
        axis.set_xticks(range(len(systems)), [f"{textwrap.fill(s, 11)}\n({a}{f', {g}' if several and g else ''})"
                                              for s, a, g in systems], fontsize=6)
        axis.set_ylabel(label)
    axes[0].set_title(f"Lexicon discovery, {settings['corpus']}")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run(out, seeds, corpus="synthetic-brent", n_utterances=UTTERANCES, unit_passes=UNIT_PASSES,
        word_passes=WORD_PASSES, learners=LEARNERS, joint_rounds=JOINT_ROUNDS, quiet=False, first=0,
        grammars=(UNIGRAM,)):
    """Every system, learner, grammar and seed on ``n_utterances`` of the training voices after their first
    ``first``; writes results.json (the systems left out under "skipped"), table.md and uld.png under ``out``;
    returns the rows of the systems run."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    started = time.perf_counter()
    for seed in seeds:
        if corpus == "tidigits":
            train, heldout = tidigits_corpus(seed), None
        else:
            # the held-out voices' utterances stay the same whichever slice trains
            train, heldout = brent_corpus("train", n_utterances, first), brent_corpus("test", n_utterances)
        for algorithm in learners:
            rows += run_seed(train, heldout, algorithm, seed, unit_passes, word_passes, joint_rounds, quiet, grammars)
    skipped = [r for r in rows if "skipped" in r]
    rows = [r for r in rows if "skipped" not in r]
    settings = {"seeds": list(seeds), "corpus": corpus, "utterances": len(train["features"]), "first": first,
                "audio_seconds": train["seconds"], "heldout_audio_seconds": heldout and heldout["seconds"],
                "unit_passes": unit_passes, "word_passes": word_passes, "joint_rounds": joint_rounds,
                "grammars": list(grammars), "synthetic_speech": corpus != "tidigits",
                "seconds": time.perf_counter() - started}
    publish(out, {"settings": settings, "runs": rows, "skipped": skipped,
                  "published": PUBLISHED if corpus != "tidigits" else []},
            table_text(rows, settings, skipped), "uld.png", lambda path: plot(path, rows, settings), quiet)
    return rows


def run_from_command_line(args):
    """``cvbayes experiment uld`` (options in `cvbayes.commands.experiment`)."""
    default = args.out == "docs/results"
    out = Path(args.out) / "uld" if default else Path(args.out)
    if args.corpus == "tidigits" and default:
        out = out / "tidigits"
    elif args.first and default:
        out = out / f"first_{args.first}"
    for what, chosen, known in (("learners", args.algorithms, LEARNERS), ("grammars", args.grammars, GRAMMARS)):
        unknown = sorted(set(chosen or known) - set(known))
        if unknown:
            raise ValueError(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(known)}")
    run(out, seed_range(args), args.corpus, args.utterances, args.unit_passes, args.passes or WORD_PASSES,
        tuple(args.algorithms or LEARNERS), args.joint_rounds, quiet=args.quiet, first=args.first,
        grammars=tuple(args.grammars or (UNIGRAM,)))


EXPERIMENTS = {NAME: run_from_command_line}

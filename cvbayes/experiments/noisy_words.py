"""``cvbayes experiment noisy-words``: word segmentation of Brent's phonemes passed through a known random edit
channel, by the unigram grammar with the channel (`cvbayes.models.noisy_words.NoisyWords`) and without it
(`cvbayes.AdaptorGrammar`, what ``cvbayes segment`` runs) -- issue 31's symbolic stage, where the truth is
known.

The noise is synthetic: every word token of the first ``--utterances`` Brent utterances goes through one
channel drawn from the seed by `cvbayes.experiments.channel.draw_channel` (deletions 2-8 %, substitutions
5-20 % within phoneme classes, insertions 1-5 % a gap, mostly epenthetic phonemes; ``--noise`` scales the
three), word by word, so the gold words map onto the surface string exactly (a word deleted whole leaves
no gold word).  Scores: token F1 of the surface words against those gold words, and the total variation
between the learned channel rows and the true ones (`cvbayes.experiments.channel.scores`), beside the TV
of the learners' start table and of the table counted from the true edit sequences (what seeing the
alignments would give).  Lee, O'Donnell and Glass (2015) report no symbolic stage, so there is no paper
figure to set beside these; their data is speech.
"""
from __future__ import annotations

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.rules import MEAN  # noqa: E402
from ..data.segmentation import load_brent  # noqa: E402
from ..files import save_figure  # noqa: E402
from ..metrics.segmentation import segmentation_scores  # noqa: E402
from ..models.adaptor import AdaptorGrammar  # noqa: E402
from ..models.channel import channel_tables  # noqa: E402
from ..models.noisy_words import NoisyWords, first_channel  # noqa: E402
from .channel import MAX_INSERTIONS, MAX_NOISE, PRIOR, draw_channel, noisy_words, phoneme_ids, scores  # noqa: E402
from .results import publish, seed_range  # noqa: E402

NAME = "noisy-words"
UTTERANCES = 1500
PASSES = 10
START_PASSES = 10       # the channel-free grammar's passes that start NoisyWords


def noisy_corpus(rng, true, utterances, ids):
    """(surface utterances, gold surface words, true edit counts): each word token of ``utterances`` through
    ``true``; utterances left empty are dropped."""
    symbol = {i: p for p, i in ids.items()}
    pairs, counts = noisy_words(rng, true, [word for utterance in utterances for word in utterance], ids)
    surface, gold, token = [], [], 0
    for utterance in utterances:
        words = [tuple(symbol[i] for i in pairs[token + w][1]) for w in range(len(utterance))]
        token += len(utterance)
        words = [word for word in words if word]
        if words:
            gold.append(words)
            surface.append([s for word in words for s in word])
    return surface, gold, counts


def in_phoneme_order(model, ids):
    """The model's posterior-mean channel table in `phoneme_ids`' order (2U + 1, U + 1); a phoneme absent from
    the model's alphabet keeps the identity row (it has no tokens, so no weight in the TV)."""
    n = len(ids)
    table = np.zeros((2 * n + 1, n + 1))
    table[np.arange(n), 1 + np.arange(n)] = 1.0
    table[n:, 0] = 1.0
    learned = np.vstack([model.emission_, model.insertion_])
    mine = np.array([ids[s] for s in model.symbols_])
    k = len(mine)
    columns = np.concatenate([[0], 1 + mine])
    rows = np.concatenate([mine, n + mine, [2 * n]])
    table[np.ix_(rows, columns)] = learned[np.concatenate([np.arange(k), k + np.arange(k), [2 * k]])]
    return table


def run_seed(brent, seed, n_utterances, passes, noise, quiet):
    ids = phoneme_ids()
    n = len(ids)
    rng = np.random.default_rng(seed)
    true = draw_channel(rng, ids, noise)
    surface, gold, true_counts = noisy_corpus(rng, true, brent.segments[:n_utterances], ids)
    clean = [[s for word in utterance for s in word] for utterance in brent.segments[:n_utterances]]
    frequency = true_counts.sum(axis=1)
    rows = []

    def add(system, words, seconds, table=None, objective=None, history=None):
        row = {"seed": seed, "system": system, "token_f1": segmentation_scores(words, gold).token.f1,
               "boundary_f1": segmentation_scores(words, gold).boundary.f1, "seconds": seconds}
        if history is not None:
            row["pass_seconds"] = float(np.median([record.seconds for record in history]))
        if table is not None:
            row.update(scores(table, true, frequency, n))
        if objective is not None:
            row["objective"] = objective
        rows.append(row)
        if not quiet:
            tv = f", emission TV {row['emission_tv']:.4f}" if table is not None else ""
            print(f"seed {seed} {system}: token F1 {row['token_f1']:.3f}{tv} ({seconds:.0f} s)", flush=True)

    curves = {}
    for algorithm in ("vb", "cvi"):
        started = time.perf_counter()
        joint = NoisyWords(algorithm=algorithm, n_iter=passes, init_iter=START_PASSES, max_insertions=MAX_INSERTIONS,
                           channel_alpha=PRIOR, channel_beta=PRIOR, random_state=seed).fit(surface)
        add(f"grammar with channel (NoisyWords {algorithm})", joint.segment(surface), time.perf_counter() - started,
            in_phoneme_order(joint, ids), joint.history_[-1].objective, joint.history_)
        curves[algorithm] = [record.objective for record in joint.history_]
        if algorithm == "cvi":
            rows[-1]["dropped_mass"] = joint.dropped_mass_
    for algorithm in ("cvi", "vb"):
        started = time.perf_counter()
        plain = AdaptorGrammar("unigram", algorithm=algorithm, n_iter=START_PASSES + passes,
                               random_state=seed).fit(surface)
        add(f"grammar without channel ({algorithm})", plain.segment(surface), time.perf_counter() - started,
            history=plain.history_)
    started = time.perf_counter()
    plain = AdaptorGrammar("unigram", n_iter=START_PASSES + passes, random_state=seed).fit(clean)
    clean_words = plain.segment(clean)
    rows.append({"seed": seed, "system": "grammar on the clean strings (cvi; against clean gold)",
                 "token_f1": segmentation_scores(clean_words, brent.segments[:n_utterances]).token.f1,
                 "boundary_f1": segmentation_scores(clean_words, brent.segments[:n_utterances]).boundary.f1,
                 "seconds": time.perf_counter() - started})
    references = {"start table": first_channel(n, joint.start_noise),
                  "true alignments seen (posterior mean)": channel_tables(true_counts, MEAN, PRIOR, PRIOR)}
    for name, table in references.items():
        rows.append({"seed": seed, "system": f"channel reference: {name}", **scores(table, true, frequency, n)})
    noise_rates = {"deletion": float(np.average(true[:n, 0], weights=frequency[:n])),
                   "substitution": float(np.average(1.0 - true[:n, 0] - true[np.arange(n), 1 + np.arange(n)],
                                                    weights=frequency[:n])),
                   "insertion": float(np.average(1.0 - true[n:, 0], weights=np.maximum(frequency[n:], 1e-12)))}
    return rows, curves, noise_rates, len(surface)


def table_text(rows, settings):
    lines = [f"# Word segmentation of noisy Brent phonemes ({settings['utterances']} utterances, seeds "
             f"{', '.join(map(str, settings['seeds']))})", "",
             "The noise is synthetic: Brent's word tokens passed through an edit channel drawn from the seed "
             f"(token-weighted rates, mean over seeds: deletion {settings['rates']['deletion']:.3f}, substitution "
             f"{settings['rates']['substitution']:.3f}, insertion {settings['rates']['insertion']:.3f} a gap). Token "
             "and boundary F1 of the surface words against the gold words mapped onto the surface string; emission "
             "and insertion TV between learned and true channel rows (token- and gap-weighted). Lee et al. (2015) "
             "have no symbolic stage to compare with.", "",
             "| system | token F1 | boundary F1 | emission TV | insertion TV | seconds | seconds a pass |",
             "|---|---|---|---|---|---|---|"]

    def cell(mine, key, digits=3):
        values = [r[key] for r in mine if key in r]
        if not values:
            return ""
        return f"{np.mean(values):.{digits}f}" + (f" ± {np.std(values):.{digits}f}" if len(values) > 1 else "")

    for system in dict.fromkeys(row["system"] for row in rows):
        mine = [row for row in rows if row["system"] == system]
        lines.append(f"| {system} | {cell(mine, 'token_f1')} | {cell(mine, 'boundary_f1')} | "
                     f"{cell(mine, 'emission_tv', 4)} | {cell(mine, 'insertion_tv', 4)} | {cell(mine, 'seconds', 0)} | "
                     f"{cell(mine, 'pass_seconds', 1)} |")
    lines += ["", f"NoisyWords: {START_PASSES} cvi passes of the channel-free grammar (its start, included in its "
              f"seconds), then {settings['passes']} vb or cvi passes (cvi after one start E-step, in its seconds); "
              "the grammars without the channel: "
              f"{START_PASSES + settings['passes']} passes. Seconds on a shared 2-core machine."]
    dropped = [row["dropped_mass"] for row in rows if "dropped_mass" in row]
    if dropped:
        lines += ["", "NoisyWords cvi's chart is offered only the words with more than min_customers="
                  f"{NoisyWords().min_customers:g} expected tokens; the cache mass it leaves out a word token is at "
                  f"most {max(dropped):.1e} (eq. C2 of `cvbayes.models.noisy_words`, the largest over seeds)."]
    return "\n".join(lines) + "\n"


def plot(path, rows, curves):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    systems = [s for s in dict.fromkeys(row["system"] for row in rows) if not s.startswith("channel reference")]
    means = [np.mean([r["token_f1"] for r in rows if r["system"] == s]) for s in systems]
    left.barh(range(len(systems)), means, color="C0")
    left.set_yticks(range(len(systems)), [s.replace(" (", "\n(") for s in systems], fontsize=7)
    left.set_xlabel("token F1")
    left.set_title("Noisy Brent (synthetic noise)")
    for seed, by_algorithm in curves.items():
        for algorithm, style in (("vb", "-"), ("cvi", "--")):
            curve = by_algorithm[algorithm]
            right.plot(np.arange(1, len(curve) + 1), curve, style, color=f"C{seed % 10}", label=f"{algorithm}, seed {seed}")
    right.set_xlabel("pass")
    right.set_ylabel("objective (vb: ELBO; cvi: leave-one-out log Z)")
    right.set_title("NoisyWords")
    right.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run(out, seeds, n_utterances=UTTERANCES, passes=PASSES, noise=1.0, quiet=False):
    """Every system on each seed's noisy corpus; writes results.json, table.md and noisy_words.png under ``out``."""
    if not 0.0 < noise <= MAX_NOISE:
        raise ValueError(f"noise must lie in (0, {MAX_NOISE}], got {noise}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    brent = load_brent()
    rows, curves, rates, sizes = [], {}, [], []
    started = time.perf_counter()
    for seed in seeds:
        seed_rows, curves[seed], seed_rates, size = run_seed(brent, seed, n_utterances, passes, noise, quiet)
        rows += seed_rows
        rates.append(seed_rates)
        sizes.append(size)
    settings = {"seeds": list(seeds), "utterances": n_utterances, "non_empty_utterances": sizes, "passes": passes,
                "noise": noise, "prior": PRIOR, "max_insertions": MAX_INSERTIONS, "start_passes": START_PASSES,
                "rates": {k: float(np.mean([r[k] for r in rates])) for k in rates[0]}, "synthetic_noise": True,
                "seconds": time.perf_counter() - started}
    publish(out, {"settings": settings, "runs": rows, "elbo": curves}, table_text(rows, settings), "noisy_words.png",
            lambda path: plot(path, rows, curves), quiet)
    return rows


def run_from_command_line(args):
    """``cvbayes experiment noisy-words`` (options in `cvbayes.commands.experiment`)."""
    out = Path(args.out) / "noisy_words" if args.out == "docs/results" else Path(args.out)
    run(out, seed_range(args), args.utterances, args.passes or PASSES, args.noise, quiet=args.quiet)


EXPERIMENTS = {NAME: run_from_command_line}

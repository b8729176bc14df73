"""``cvbayes experiment channel``: recover a known edit channel from Brent's words (issue 31, its symbolic
stage as far as the channel goes).

Every word token of Brent's phonemic transcription (33,377 tokens over 50 phonemes) is passed through an
edit channel drawn from the seed (`draw_channel`): each phoneme is kept, replaced by one of up to three
phonemes of its class (stops, fricatives and affricates, nasals, liquids and glides, vowels, diphthongs
and r-coloured vowels), or deleted, and after a kept phoneme one phoneme may be inserted, mostly from a
few epenthetic ones (schwa, t, d, n, r, h).  `cvbayes.EditChannel` then learns the channel from the
(clean word, noisy word) pairs with the alignments latent, by EM, VB and CVI, and we compare the learned
rows with the true ones by total variation (TV).  References bound the figures: the table estimated
from the true edit sequences (what a learner that saw the alignments would reach on this sample: the
posterior mean under the same prior, VB's and CVI's estimate, and the MLE, EM's with alpha <= 1), and
the identity channel (no noise).

Lee, O'Donnell and Glass (2015) publish no channel-recovery figures (their channel is learned jointly
from speech, with no true table to compare to), so the table stands alone; the words themselves, and
the grammar over the noisy strings that would recover them, are later layers of issue 31.
"""
from __future__ import annotations

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..chains.edits import DELETE, INSERT, sample_surface  # noqa: E402
from ..core.rules import MAP, MEAN  # noqa: E402
from ..data.segmentation import load_brent  # noqa: E402
from ..files import save_figure  # noqa: E402
from ..models.channel import EditChannel, channel_tables  # noqa: E402
from .results import publish, seed_range  # noqa: E402

NAME = "channel"
LEARNERS = ("em", "vb", "cvi")
PASSES = 20
PRIOR = 0.1          # alpha = beta: the symmetric Dirichlet of every row
MAX_INSERTIONS = 1   # the true channel's and the learners': at most one insertion after a kept phoneme
FREQUENT = 100       # the unweighted TV averages the phonemes of at least this many tokens

# Brent's phonemes (Bernstein-Ratner's one-character code) by class: a phoneme is replaced within its class
CLASSES = {
    "stops": "ptkbdg",
    "fricatives and affricates": "fvTDszSZhcG",
    "nasals": "mnN~M",
    "liquids and glides": "lrywWL",
    "vowels": "IE&AaOU6ieuo3R",
    "diphthongs and r-coloured vowels": "9Q7#%*()",
}
EPENTHETIC = "6tdnrh"

# the ranges each phoneme's probabilities are drawn from
DELETION = (0.02, 0.08)
SUBSTITUTION = (0.05, 0.20)
INSERTION = (0.01, 0.05)
MAX_NOISE = 1.0 / (DELETION[1] + SUBSTITUTION[1])  # beyond it a phoneme could lose its identity mass


def phoneme_ids():
    """Every phoneme of `CLASSES` -> its id, in class order."""
    return {phoneme: i for i, phoneme in enumerate("".join(CLASSES.values()))}


def draw_channel(rng, ids, noise=1.0):
    """A true (2U + 1, B + 1) channel table (`EditChannel.counts_`'s layout, U = B = the phonemes): each
    phoneme deleted with a probability from `DELETION`, replaced with one from `SUBSTITUTION` spread over up
    to three others of its class, kept otherwise; each gap inserts with a probability from `INSERTION`,
    the inserted phoneme 80% from `EPENTHETIC` and 20% from the rest.  ``noise`` scales the three ranges."""
    n = len(ids)
    table = np.zeros((2 * n + 1, n + 1))
    for members in CLASSES.values():
        for phoneme in members:
            u = ids[phoneme]
            others = [ids[p] for p in members if p != phoneme]
            deleted = noise * rng.uniform(*DELETION)
            replaced = noise * rng.uniform(*SUBSTITUTION)
            targets = rng.choice(others, size=min(3, len(others)), replace=False)
            table[u, 0] = deleted
            table[u, 1 + targets] = replaced * rng.dirichlet(np.ones(targets.shape[0]))
            table[u, 1 + u] = 1.0 - deleted - replaced
    epenthetic = np.array([ids[p] for p in EPENTHETIC])
    inserted = np.full(n, 0.2 / (n - epenthetic.shape[0]))
    inserted[epenthetic] = 0.8 * rng.dirichlet(np.ones(epenthetic.shape[0]))
    for row in range(n, 2 * n + 1):
        rate = noise * rng.uniform(*INSERTION)
        table[row, 0] = 1.0 - rate
        table[row, 1:] = rate * inserted
    return table


def noisy_words(rng, table, words, ids):
    """(pairs, the true edit counts): each word (a tuple of phonemes) with its draw through ``table``."""
    n = len(ids)
    counts = np.zeros_like(table)
    pairs = []
    for word in words:
        x = np.array([ids[p] for p in word], dtype=np.int64)
        y, rows = sample_surface(rng, table, x, MAX_INSERTIONS)
        pairs.append((x, y))
        _true_counts(x, y, rows, n, counts)
    return pairs, counts


def _true_counts(x, y, rows, n, counts):
    """Add one pair's edits (`sample_surface`'s rows, in the generative order) to ``counts``: its emissions,
    insertions, and the stop of every gap it opened (gap 0, and one after each kept phoneme) that did not
    reach `MAX_INSERTIONS`."""
    owner, inserted, is_open = 2 * n, 0, True

    def close():
        if is_open and inserted < MAX_INSERTIONS:
            counts[owner, 0] += 1

    for i, j in rows:
        if i == INSERT:
            counts[owner, 1 + y[j]] += 1
            inserted += 1
            continue
        close()
        is_open = j != DELETE
        counts[x[i], 0 if j == DELETE else 1 + y[j]] += 1
        owner, inserted = n + x[i], 0
    close()


def total_variation(learned, true):
    """Per row, 0.5 sum |learned - true|."""
    return 0.5 * np.abs(learned - true).sum(axis=1)


def scores(table, true, frequency, n):
    """TV of the emission rows (weighted by each phoneme's tokens; unweighted over the phonemes of at least
    `FREQUENT` tokens, NaN when there are none) and of the insertion rows (weighted by the gaps drawn from)."""
    tv = total_variation(table, true)
    frequent = frequency[:n] >= FREQUENT
    return {"emission_tv": float(np.average(tv[:n], weights=frequency[:n])),
            "emission_tv_frequent": float(tv[:n][frequent].mean()) if frequent.any() else float("nan"),
            "emission_tv_max_frequent": float(tv[:n][frequent].max()) if frequent.any() else float("nan"),
            "insertion_tv": float(np.average(tv[n:], weights=np.maximum(frequency[n:], 1e-12)))}


def run_seed(words, seed, learners, passes, quiet, noise=1.0):
    ids = phoneme_ids()
    n = len(ids)
    rng = np.random.default_rng(seed)
    true = draw_channel(rng, ids, noise)
    pairs, true_counts = noisy_words(rng, true, words, ids)
    frequency = true_counts.sum(axis=1)
    rows = [{"seed": seed, "learner": "alignments seen (posterior mean)", "passes": 0, "seconds": 0.0,
             **scores(channel_tables(true_counts, MEAN, PRIOR, PRIOR), true, frequency, n)},
            {"seed": seed, "learner": "alignments seen (MLE)", "passes": 0, "seconds": 0.0,
             **scores(channel_tables(true_counts, MAP, PRIOR, PRIOR), true, frequency, n)},
            {"seed": seed, "learner": "identity channel", "passes": 0, "seconds": 0.0,
             **scores(_identity(n), true, frequency, n)}]
    curves = {}
    for learner in learners:
        curve = []
        model = EditChannel(learner, n_iter=passes, alpha=PRIOR, beta=PRIOR, max_insertions=MAX_INSERTIONS,
                            n_underlying=n, n_surface=n)
        model.fit(pairs, callback=lambda m, i: curve.append(
            scores(np.vstack([m.emission_, m.insertion_]), true, frequency, n)["emission_tv"]))
        seconds = [record.seconds for record in model.history_]
        rows.append({"seed": seed, "learner": learner, "passes": passes, "seconds": float(np.sum(seconds)),
                     "seconds_a_pass": float(np.median(seconds)), "objective": model.history_[-1].objective,
                     **scores(np.vstack([model.emission_, model.insertion_]), true, frequency, n)})
        curves[learner] = curve
        if not quiet:
            print(f"seed {seed} {learner}: emission TV {rows[-1]['emission_tv']:.4f}, insertion TV "
                  f"{rows[-1]['insertion_tv']:.4f} ({rows[-1]['seconds']:.1f} s)")
    return rows, curves


def _identity(n):
    table = np.zeros((2 * n + 1, n + 1))
    table[np.arange(n), 1 + np.arange(n)] = 1.0
    table[n:, 0] = 1.0
    return table


def table_text(rows, settings):
    keys = ("emission_tv", "emission_tv_frequent", "emission_tv_max_frequent", "insertion_tv")
    lines = [f"# Edit channel recovered from Brent's words ({settings['pairs']} pairs, noise x{settings['noise']:g}, "
             f"seeds {', '.join(map(str, settings['seeds']))})", "",
             "Total variation between learned and true rows (mean ± sd over seeds): emission rows weighted by "
             f"tokens, unweighted over phonemes of >= {FREQUENT} tokens and their worst, insertion rows weighted "
             "by gaps. Lee et al. (2015) publish no channel-recovery figure to set beside these.", "",
             "| learner | emission TV | emission TV (frequent) | worst frequent | insertion TV | s a pass |",
             "|---|---|---|---|---|---|"]
    for learner in dict.fromkeys(row["learner"] for row in rows):
        mine = [row for row in rows if row["learner"] == learner]
        cells = [f"{np.mean([r[k] for r in mine]):.4f} ± {np.std([r[k] for r in mine]):.4f}" for k in keys]
        per_pass = [r["seconds_a_pass"] for r in mine if "seconds_a_pass" in r]
        cells.append(f"{np.median(per_pass):.2f}" if per_pass else "")
        lines.append(f"| {learner} | " + " | ".join(cells) + " |")
    lines += ["", "Seconds a pass: medians on a shared 2-core machine (noisy); em and vb's first pass includes "
              "numba's compilation when the cache is cold."]
    return "\n".join(lines) + "\n"


def plot(path, curves_by_seed, rows):
    fig, ax = plt.subplots(figsize=(6, 4))
    for index, (learner, colour) in enumerate(zip(LEARNERS, ("C0", "C1", "C2"))):
        for seed, curves in curves_by_seed.items():
            if learner in curves:
                ax.plot(np.arange(1, len(curves[learner]) + 1), curves[learner], color=colour, alpha=0.7,
                        label=learner if seed == min(curves_by_seed) else None)
    floor = np.mean([row["emission_tv"] for row in rows if row["learner"] == "alignments seen (posterior mean)"])
    ax.axhline(floor, color="k", linestyle="--", label="alignments seen (posterior mean)")
    ax.set_xlabel("pass")
    ax.set_ylabel("emission TV (token-weighted)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("Edit channel recovery on Brent's words")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run(out, seeds, learners=LEARNERS, passes=PASSES, quiet=False, noise=1.0):
    """Every learner on each seed's channel; writes results.json, table.md and recovery.png under ``out``."""
    if not 0.0 < noise <= MAX_NOISE:
        raise ValueError(f"noise must lie in (0, {MAX_NOISE}], got {noise}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    words = [word for utterance in load_brent().segments for word in utterance]
    rows, curves = [], {}
    started = time.perf_counter()
    for seed in seeds:
        seed_rows, curves[seed] = run_seed(words, seed, learners, passes, quiet, noise)
        rows += seed_rows
    settings = {"seeds": list(seeds), "learners": list(learners), "passes": passes, "prior": PRIOR, "noise": noise,
                "max_insertions": MAX_INSERTIONS, "pairs": len(words), "deletion": DELETION,
                "substitution": SUBSTITUTION, "insertion": INSERTION, "classes": CLASSES,
                "epenthetic": EPENTHETIC, "seconds": time.perf_counter() - started}
    publish(out, {"settings": settings, "runs": rows, "curves": curves}, table_text(rows, settings), "recovery.png",
            lambda path: plot(path, curves, rows), quiet)
    return rows


def run_from_command_line(args):
    """``cvbayes experiment channel`` (options in `cvbayes.commands.experiment`)."""
    out = Path(args.out) / NAME if args.out == "docs/results" else Path(args.out)
    learners = args.algorithms or list(LEARNERS)
    wrong = [name for name in learners if name not in LEARNERS]
    if wrong:
        raise ValueError(f"unknown algorithm {wrong[0]!r}; choose from {', '.join(LEARNERS)}")
    run(out, seed_range(args), learners, args.passes or PASSES, quiet=args.quiet, noise=args.noise)


EXPERIMENTS = {NAME: run_from_command_line}

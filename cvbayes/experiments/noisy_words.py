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

``--corpus buckeye``: the same systems on the first ``--utterances`` of Buckeye's surface phones
(`cvbayes.data.load_buckeye`), the noise real (reductions of conversational speech) and its channel unknown, so
the scores are token, boundary and type F1 against Buckeye's word alignment beside the trivial segmentations
(`cvbayes.experiments.wordseg.baselines`), and in place of TV the learned channel itself: its rates, the
non-identity edits it used most and its probabilities of known reductions (`learned_edits`, `top_edits`,
`REDUCTIONS`).  Every setting is Brent's.
"""
from __future__ import annotations

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.rules import MEAN  # noqa: E402
from ..data.segmentation import BUCKEYE_VOWELS, SegmentationData, load_brent, load_buckeye  # noqa: E402
from ..files import save_figure  # noqa: E402
from ..metrics.segmentation import segmentation_scores  # noqa: E402
from ..models.adaptor import AdaptorGrammar  # noqa: E402
from ..models.channel import channel_tables  # noqa: E402
from ..models.noisy_words import NoisyWords, first_channel  # noqa: E402
from .channel import MAX_INSERTIONS, MAX_NOISE, PRIOR, draw_channel, noisy_words, phoneme_ids, scores  # noqa: E402
from .results import publish, seed_range  # noqa: E402
from .wordseg import baselines  # noqa: E402

NAME = "noisy-words"
UTTERANCES = 1500
PASSES = 10
START_PASSES = 10       # the channel-free grammar's passes that start NoisyWords
LEAST_TOKENS = 50       # Buckeye: edits of a phone read fewer times than this (expected) are not listed
TOP_EDITS = 15          # Buckeye: the learned edits the table lists
# Buckeye: reductions of conversational English the channel might learn (t/d deletion, vowels toward schwa, ih or
# a lax vowel, -ing said -in, dh stopped or dropped, final devoicing); listed whatever their probability
REDUCTIONS = (("t", ""), ("d", ""), ("dh", ""), ("v", ""), ("ae", "ah"), ("eh", "ah"), ("ih", "ah"), ("uw", "ah"),
              ("ow", "ah"), ("iy", "ih"), ("ey", "eh"), ("ng", "n"), ("dh", "d"), ("th", "t"), ("z", "s"))


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


def segmentation_row(seed, system, words, gold, seconds, history=None):
    """Token, boundary and type (lexicon) F1 of ``words`` against ``gold``, with the run's seconds and, given its
    history, the median seconds of a pass."""
    found = segmentation_scores(words, gold)
    row = {"seed": seed, "system": system, "token_f1": found.token.f1, "boundary_f1": found.boundary.f1,
           "type_f1": found.lexicon.f1, "seconds": seconds}
    if history is not None:
        row["pass_seconds"] = float(np.median([record.seconds for record in history]))
    return row


def learners(surface, gold, seed, passes, quiet, grammar="unigram"):
    """NoisyWords vb and cvi (colloc: `noisy_colloc` and `noisy_colloc_cvi`), then the channel-free grammar
    (cvi and vb, as many passes as NoisyWords' start and its own together) on the same surface strings: (rows,
    the fitted NoisyWords by learner)."""
    rows, joints = [], {}
    named = "" if grammar == "unigram" else f" {grammar}"
    for algorithm in ("vb", "cvi"):
        started = time.perf_counter()
        joint = NoisyWords(grammar=grammar, algorithm=algorithm, n_iter=passes, init_iter=START_PASSES,
                           max_insertions=MAX_INSERTIONS, channel_alpha=PRIOR, channel_beta=PRIOR,
                           random_state=seed).fit(surface)
        rows.append(segmentation_row(seed, f"grammar{named} with channel (NoisyWords {algorithm})",
                                     joint.segment(surface), gold, time.perf_counter() - started, joint.history_))
        rows[-1]["objective"] = joint.history_[-1].objective
        if algorithm == "cvi":
            rows[-1]["dropped_mass"] = joint.dropped_mass_
        joints[algorithm] = joint
        report(rows[-1], quiet)
    for algorithm in ("cvi", "vb"):
        started = time.perf_counter()
        plain = AdaptorGrammar(grammar, algorithm=algorithm, n_iter=START_PASSES + passes,
                               random_state=seed).fit(surface)
        rows.append(segmentation_row(seed, f"grammar{named} without channel ({algorithm})", plain.segment(surface),
                                     gold, time.perf_counter() - started, plain.history_))
        report(rows[-1], quiet)
    return rows, joints


def objective_curves(joints):
    """Each fitted NoisyWords' objective by pass."""
    return {algorithm: [record.objective for record in joint.history_] for algorithm, joint in joints.items()}


def report(row, quiet):
    if not quiet:
        print(f"seed {row['seed']} {row['system']}: token F1 {row['token_f1']:.3f} ({row['seconds']:.0f} s)",
              flush=True)


def run_seed(brent, seed, n_utterances, passes, noise, quiet, grammar="unigram"):
    ids = phoneme_ids()
    n = len(ids)
    rng = np.random.default_rng(seed)
    true = draw_channel(rng, ids, noise)
    surface, gold, true_counts = noisy_corpus(rng, true, brent.segments[:n_utterances], ids)
    clean = [[s for word in utterance for s in word] for utterance in brent.segments[:n_utterances]]
    frequency = true_counts.sum(axis=1)
    rows, joints = learners(surface, gold, seed, passes, quiet, grammar)
    for row, joint in zip(rows, joints.values()):
        row.update(scores(in_phoneme_order(joint, ids), true, frequency, n))
        if not quiet:
            print(f"seed {seed} {row['system']}: emission TV {row['emission_tv']:.4f}", flush=True)
    curves = objective_curves(joints)
    started = time.perf_counter()
    plain = AdaptorGrammar("unigram", n_iter=START_PASSES + passes, random_state=seed).fit(clean)
    rows.append(segmentation_row(seed, "grammar on the clean strings (cvi; against clean gold)", plain.segment(clean),
                                 brent.segments[:n_utterances], time.perf_counter() - started))
    references = {"start table": first_channel(n, joints["vb"].start_noise),
                  "true alignments seen (posterior mean)": channel_tables(true_counts, MEAN, PRIOR, PRIOR)}
    for name, table in references.items():
        rows.append({"seed": seed, "system": f"channel reference: {name}", **scores(table, true, frequency, n)})
    noise_rates = {"deletion": float(np.average(true[:n, 0], weights=frequency[:n])),
                   "substitution": float(np.average(1.0 - true[:n, 0] - true[np.arange(n), 1 + np.arange(n)],
                                                    weights=frequency[:n])),
                   "insertion": float(np.average(1.0 - true[n:, 0], weights=np.maximum(frequency[n:], 1e-12)))}
    return rows, curves, noise_rates, len(surface)


def cell(mine, key, digits=3):
    """The mean (± sd over seeds) of ``key`` over the rows that have it; empty if none."""
    values = [r[key] for r in mine if key in r]
    if not values:
        return ""
    return f"{np.mean(values):.{digits}f}" + (f" ± {np.std(values):.{digits}f}" if len(values) > 1 else "")


def table_text(rows, settings):
    grammar = "" if settings.get("grammar", "unigram") == "unigram" else f", the {settings['grammar']} grammar"
    lines = [f"# Word segmentation of noisy Brent phonemes ({settings['utterances']} utterances{grammar}, seeds "
             f"{', '.join(map(str, settings['seeds']))})", "",
             "The noise is synthetic: Brent's word tokens passed through an edit channel drawn from the seed "
             f"(token-weighted rates, mean over seeds: deletion {settings['rates']['deletion']:.3f}, substitution "
             f"{settings['rates']['substitution']:.3f}, insertion {settings['rates']['insertion']:.3f} a gap). Token "
             "and boundary F1 of the surface words against the gold words mapped onto the surface string; emission "
             "and insertion TV between learned and true channel rows (token- and gap-weighted). Lee et al. (2015) "
             "have no symbolic stage to compare with.", "",
             "| system | token F1 | boundary F1 | emission TV | insertion TV | seconds | seconds a pass |",
             "|---|---|---|---|---|---|---|"]

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
        lines += ["", "NoisyWords cvi's chart is offered only the words (colloc: collocations) with more than "
                  f"min_customers={NoisyWords().min_customers:g} expected tokens; the cache mass it leaves out a word "
                  "token (collocation) is at "
                  f"most {max(dropped):.1e} (eq. C2 of `cvbayes.models.noisy_words`, the largest over seeds)."]
    return "\n".join(lines) + "\n"


def plot(path, rows, curves, title, edits=None):
    """Token F1 of every system, NoisyWords' objective by pass and, given ``edits`` (`top_edits`), the learned
    channel's most probable edits."""
    fig, axes = plt.subplots(1, 3 if edits else 2, figsize=(15 if edits else 10, 4))
    left, right = axes[0], axes[1]
    systems = [s for s in dict.fromkeys(row["system"] for row in rows) if not s.startswith("channel reference")]
    means = [np.mean([r["token_f1"] for r in rows if r["system"] == s]) for s in systems]
    left.barh(range(len(systems)), means, color="C0")
    left.set_yticks(range(len(systems)), [s.replace(" (", "\n(") for s in systems], fontsize=7)
    left.set_xlabel("token F1")
    left.set_title(title)
    for seed, by_algorithm in curves.items():
        for algorithm, style in (("vb", "-"), ("cvi", "--")):
            curve = by_algorithm[algorithm]
            right.plot(np.arange(1, len(curve) + 1), curve, style, color=f"C{seed % 10}",
                       label=f"{algorithm}, seed {seed}")
    right.set_xlabel("pass")
    right.set_ylabel("objective (vb: ELBO; cvi: leave-one-out log Z)")
    right.set_title("NoisyWords")
    right.legend(fontsize=7)
    if edits:
        listed = np.arange(len(edits))
        for i, algorithm in enumerate(("vb", "cvi")):
            axes[2].barh(listed + 0.4 * i, [edit[algorithm] for edit in edits], 0.4, color=f"C{i}", label=algorithm)
        axes[2].set_yticks(listed + 0.2, [edit_name(edit) for edit in edits], fontsize=7)
        axes[2].invert_yaxis()
        axes[2].set_xlabel("posterior mean probability (mean over seeds)")
        axes[2].set_title("the edits the learned channel used most")
        axes[2].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def learned_edits(model):
    """The learned channel's non-identity emissions of every phone read at least LEAST_TOKENS times (expected):
    {(underlying phone, surface phone or "" for a deletion): (posterior mean probability, expected count)}, and
    the learned rates of deletion, substitution and insertion (weighted by the expected tokens and gaps)."""
    n = len(model.symbols_)
    emission, insertion = model.emission_, model.insertion_
    tokens = model.edit_counts_.sum(axis=1)
    edits = {}
    for u in np.flatnonzero(tokens[:n] >= LEAST_TOKENS):
        for column in np.flatnonzero(np.arange(n + 1) != u + 1):
            edits[(model.symbols_[u], model.symbols_[column - 1] if column else "")] = (
                float(emission[u, column]), float(model.edit_counts_[u, column]))
    kept = emission[np.arange(n), 1 + np.arange(n)]
    rates = {"learned_deletion": float(np.average(emission[:, 0], weights=tokens[:n])),
             "learned_substitution": float(np.average(1.0 - emission[:, 0] - kept, weights=tokens[:n])),
             "learned_insertion": float(np.average(1.0 - insertion[:, 0], weights=tokens[n:]))}
    return edits, rates


def mean_edits(edits, keys):
    """Each learner's mean over seeds of the probability and the expected count of each edit of ``keys`` (an
    edit missing from a seed, its phone under LEAST_TOKENS there, counts 0), and of its phone's mean
    non-identity edit probability (``_level``: what an edit the channel did not single out would have)."""
    def level(seed, phone):
        mine = [value[0] for (a, _), value in seed.items() if a == phone]
        return float(np.mean(mine)) if mine else 0.0

    return [{"from": a, "to": b,
             **{f"{algorithm}{part}": float(np.mean([seed.get((a, b), (0.0, 0.0))[i] for seed in by_seed]))
                for algorithm, by_seed in edits.items() for i, part in enumerate(("", "_count"))},
             **{f"{algorithm}_level": float(np.mean([level(seed, a) for seed in by_seed]))
                for algorithm, by_seed in edits.items()}}
            for a, b in keys]


def top_edits(edits, count=TOP_EDITS):
    """The ``count`` edits the learned channels used most (expected count, summed over learners, mean over
    seeds), by `mean_edits`; ``edits`` maps each learner to its seeds' `learned_edits`."""
    keys = set().union(*(seed for by_seed in edits.values() for seed in by_seed))
    listed = mean_edits(edits, sorted(keys))
    return sorted(listed, key=lambda edit: -sum(edit[f"{algorithm}_count"] for algorithm in edits))[:count]


def edit_name(edit):
    return f"{edit['from']} -> {edit['to'] or '(deleted)'}"


def run_buckeye(out, seeds, n_utterances, passes, max_length=None, quiet=False):
    """Every system on the first ``n_utterances`` of Buckeye's surface phones (of at most ``max_length`` phones,
    if given; no true channel: the learned edits instead of TV) and the trivial segmentations; writes
    results.json, table.md and noisy_words.png."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kept = [words for words in load_buckeye().segments
            if max_length is None or sum(len(word) for word in words) <= max_length]
    corpus = SegmentationData(kept[:n_utterances])
    surface, gold = corpus.symbols, corpus.segments
    rows, curves, edits = [], {}, {"vb": [], "cvi": []}
    trivial = [{"system": name, "token_f1": found["token"]["f1"], "boundary_f1": found["boundary"]["f1"],
                "type_f1": found["lexicon"]["f1"]} for name, found in baselines(corpus, BUCKEYE_VOWELS).items()]
    started = time.perf_counter()
    for done, seed in enumerate(seeds, 1):
        seed_rows, joints = learners(surface, gold, seed, passes, quiet)
        for row, (algorithm, joint) in zip(seed_rows, joints.items()):
            seed_edits, rates = learned_edits(joint)
            row.update(rates)
            edits[algorithm].append(seed_edits)
        rows += seed_rows
        curves[seed] = objective_curves(joints)
        listed = top_edits(edits)
        reductions = mean_edits(edits, REDUCTIONS)
        # written after every seed, so a long run's finished seeds are kept
        settings = {"corpus": "buckeye", "seeds": list(seeds)[:done], "utterances": len(surface),
                    "max_length": max_length, "passes": passes,
                    "phones": sum(map(len, surface)), "prior": PRIOR, "max_insertions": MAX_INSERTIONS,
                    "start_passes": START_PASSES, "least_tokens": LEAST_TOKENS,
                    "seconds": time.perf_counter() - started}
        publish(out, {"settings": settings, "runs": rows + trivial, "elbo": curves, "top_edits": listed,
                      "reductions": reductions,
                      "learned_edits": {algorithm: [[[a, b, *value] for (a, b), value in seed.items()]
                                                    for seed in by_seed] for algorithm, by_seed in edits.items()}},
                buckeye_table(rows + trivial, settings, listed, reductions), "noisy_words.png",
                lambda path: plot(path, rows + trivial, curves, "Buckeye's surface phones", listed),
                quiet or done < len(seeds))
    return rows + trivial
    return rows


def edit_row(edit):
    return (f"| {edit_name(edit)} | {edit['vb']:.3f} ({edit['vb_count']:.0f}) | {edit['cvi']:.3f} "
            f"({edit['cvi_count']:.0f}) |")


def buckeye_table(rows, settings, listed, reductions):
    longest = f" of at most {settings['max_length']} phones" if settings["max_length"] else ""
    lines = [f"# Word segmentation of Buckeye's surface phones ({settings['utterances']} utterances{longest}, "
             f"{settings['phones']} phones, seeds {', '.join(map(str, settings['seeds']))})", "",
             f"Buckeye's first utterances{longest} in the phones that were said (`cvbayes.data.load_buckeye`), "
             "scored against its word alignment: token, boundary and type F1. There is no true channel: what the "
             "channel learned is its rates (weighted by its expected tokens and gaps) and its edits below. Every "
             "setting is Brent's; nothing was tuned on Buckeye."
             + (" The length cap (set before any result) keeps the run's time near Brent's: Buckeye's utterances "
                "run to 101 phones, and the channel-free grammar that starts NoisyWords is slow on long ones."
                if longest else ""), "",
             "| system | token F1 | boundary F1 | type F1 | learned deletion | learned substitution | "
             "learned insertion | seconds | seconds a pass |", "|---|---|---|---|---|---|---|---|---|"]
    for system in dict.fromkeys(row["system"] for row in rows):
        mine = [row for row in rows if row["system"] == system]
        keys = ("token_f1", "boundary_f1", "type_f1", "learned_deletion", "learned_substitution", "learned_insertion")
        lines.append("| " + " | ".join([system] + [cell(mine, key) for key in keys]
                                      + [cell(mine, "seconds", 0), cell(mine, "pass_seconds", 1)]) + " |")
    lines += ["", f"NoisyWords: {START_PASSES} cvi passes of the channel-free grammar (its start, in its seconds), "
              f"then {settings['passes']} vb or cvi passes; the grammars without the channel: "
              f"{START_PASSES + settings['passes']} passes. Seconds on a shared 2-core machine.", "",
              f"## The edits the learned channel used most (phones read at least {LEAST_TOKENS} times; mean over "
              "seeds)", "", "Posterior mean probability and, in brackets, expected count over the corpus.", "",
              "| edit | vb | cvi |", "|---|---|---|"]
    lines += [edit_row(edit) for edit in listed]
    lines += ["", "## Reductions of conversational English (chosen from phonetics, not from these results)", "",
              "Beside each, its phone's mean probability of one non-identity edit (the phone's deletion and "
              "substitution mass over its ways to leave it): the level an edit the channel did not single out has.",
              "", "| edit | vb | cvi | the phone's mean non-identity edit (vb, cvi) |", "|---|---|---|---|"]
    lines += [edit_row(edit) + f" {edit['vb_level']:.3f}, {edit['cvi_level']:.3f} |" for edit in reductions]
    return "\n".join(lines) + "\n"


def run(out, seeds, n_utterances=UTTERANCES, passes=PASSES, noise=1.0, quiet=False, grammar="unigram"):
    """Every system on each seed's noisy corpus, the word layers of ``grammar`` ("unigram" or "colloc"); writes
    results.json, table.md and noisy_words.png under ``out``."""
    if not 0.0 < noise <= MAX_NOISE:
        raise ValueError(f"noise must lie in (0, {MAX_NOISE}], got {noise}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    brent = load_brent()
    rows, curves, rates, sizes = [], {}, [], []
    started = time.perf_counter()
    for seed in seeds:
        seed_rows, curves[seed], seed_rates, size = run_seed(brent, seed, n_utterances, passes, noise, quiet,
                                                             grammar)
        rows += seed_rows
        rates.append(seed_rates)
        sizes.append(size)
    settings = {"seeds": list(seeds), "utterances": n_utterances, "grammar": grammar, "non_empty_utterances": sizes,
                "passes": passes,
                "noise": noise, "prior": PRIOR, "max_insertions": MAX_INSERTIONS, "start_passes": START_PASSES,
                "rates": {k: float(np.mean([r[k] for r in rates])) for k in rates[0]}, "synthetic_noise": True,
                "seconds": time.perf_counter() - started}
    publish(out, {"settings": settings, "runs": rows, "elbo": curves}, table_text(rows, settings), "noisy_words.png",
            lambda path: plot(path, rows, curves, "Noisy Brent (synthetic noise)"), quiet)
    return rows


def run_from_command_line(args):
    """``cvbayes experiment noisy-words`` (options in `cvbayes.commands.experiment`)."""
    default = args.out == "docs/results"
    out = Path(args.out) / "noisy_words" if default else Path(args.out)
    if args.corpus == "buckeye":
        if args.grammar != "unigram":
            raise ValueError("--grammar colloc runs on --corpus brent")
        if args.noise is not None:
            raise ValueError("--noise scales the synthetic channel of --corpus brent; Buckeye's noise is its own")
        run_buckeye(out / "buckeye" if default else out, seed_range(args), args.utterances, args.passes or PASSES,
                    args.max_length, quiet=args.quiet)
    else:
        if args.max_length is not None:
            raise ValueError("--max-length applies to --corpus buckeye")
        noise = 1.0 if args.noise is None else args.noise
        run(out, seed_range(args), args.utterances, args.passes or PASSES, noise, quiet=args.quiet,
            grammar=args.grammar)


EXPERIMENTS = {NAME: run_from_command_line}

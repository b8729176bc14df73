"""A DP-HMM over speech: the HDP-HMM with Gaussian emissions on TIDIGITS MFCCs.

Stengel-Eskin's Variational Bayesian Inference for Unsupervised Lexicon
Discovery (2017) builds its lexicon discovery on a Dirichlet-process HMM over
acoustic frames (Lee and Glass 2012), whose states are phone-like units. The
thesis's HDP-HMM (chapter 5) with the Normal-Gamma emissions of §3.7 is that
model; its batch CVI learns it here from the 31 TIDIGITS test utterances of
CMU Sphinx (13 MFCCs a 10 ms frame, 6,761 frames).

The features are standardised per cepstrum first (mean 0, variance 1 over the
training frames; held-out frames use the training mean and scale), so the
Normal-Gamma prior, centred on the data's mean with an expected precision of
the data's inverse variance, is equally weak in every dimension and c0's
large scale does not dominate. Every run starts from random local posteriors
(thesis footnote 5) with gamma = sigma = 1 (§5.5.1) and learns gamma and sigma
(eq. 5.17, 5.20) only after `burn_in` passes, once the states have separated.

Each seed fits, on all 31 utterances, the HDP-HMM (truncation K) and the
finite HMM with CVI-2 at the same K (Dir(0.1) transitions, as §5.5.3), and, on
27 utterances, both again to score the other 4 (every eighth from the fourth:
two a speaker) by the per-frame predictive log-likelihood of eq. 3.108. Three
single-seed checks follow: the HDP-HMM at K / 2 and 2K (is the number of
states the data's, or the truncation's?) and at K with no burn-in.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

from ..data import Corpus, load_tidigits  # noqa: E402
from ..families.gaussian import Gaussian  # noqa: E402
from ..files import save_figure, write_json, write_text  # noqa: E402
from ..models.hdp import effective_states, gem_mean  # noqa: E402
from ..models.hdp_hmm import HDPHMM  # noqa: E402
from ..models.hmm import HMM  # noqa: E402
from .results import plain_json, seed_range  # noqa: E402

NAME = "dp-hmm-tidigits"
FOLDER = "dp_hmm_tidigits"
DEFAULT_STATES = 60
GAMMA0 = SIGMA0 = 1.0   # starting concentrations, as thesis §5.5.1
HMM_ALPHA = 0.1         # the finite HMM's Dir(0.1) transitions, as thesis §5.5.3
KAPPA, SHAPE = 0.01, 1.0  # Normal-Gamma prior: kappa0 and a0; mu0 = data mean, b0 = a0 x data variance
HELD_OUT_FIRST, HELD_OUT_EVERY = 3, 8
PLOT_UTTERANCE = "man.ah.2934za"  # "two nine three four zero"
FRAME_MS = 10

LEXICON_DISCOVERY = ("Stengel-Eskin's Variational Bayesian Inference for Unsupervised Lexicon Discovery (2017) "
                     "describes the DP-HMM of Lee and Glass (2012) as the bottom layer of unsupervised lexicon "
                     "discovery (it segments the audio into phone-like units, PLUs), but its section on the DP-HMM "
                     "(§2.2) is empty and it reports no experiment: no number of acoustic states or PLUs to compare "
                     "with. The thesis has no speech experiment either; its §5.5.1 finds the number of states of "
                     "synthetic HMMs with gamma = sigma = 1 fixed, and footnote 6 reads gamma in [5.9, 12.5] as "
                     "'30 to 60 states' and sigma in [2.6, 5.9] as '15 to 30 states' in each transition row.")


def _command():
    if sys.argv and sys.argv[0].endswith("cvbayes"):
        return "cvbayes " + " ".join(sys.argv[1:])
    return f"cvbayes experiment {NAME}"


def standardise(corpus, mean=None, scale=None):
    """(corpus with every feature at mean 0 and variance 1, mean, scale); given `mean` and
    `scale` (from training data) are used as they are."""
    x = corpus.observations
    if mean is None:
        mean = x.mean(axis=0)
        scale = x.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
    return Corpus((x - mean) / scale, corpus.offsets, source=corpus.source), mean, scale


def held_out_split(n_utterances):
    """(training, held-out) utterance indices: every eighth from the fourth is held out."""
    if n_utterances < 2:
        raise ValueError("the held-out comparison needs at least two utterances")
    held = list(range(HELD_OUT_FIRST, n_utterances, HELD_OUT_EVERY)) or [n_utterances - 1]
    return [i for i in range(n_utterances) if i not in held], held


def make_hdp(n_states, burn_in):
    return HDPHMM(n_states, gamma=GAMMA0, sigma=SIGMA0, emission=Gaussian(kappa=KAPPA, shape=SHAPE),
                  burn_in=burn_in)


def make_hmm(n_states):
    return HMM(n_states, alpha=HMM_ALPHA, emission=Gaussian(kappa=KAPPA, shape=SHAPE))


def _segments(states, offsets):
    """Number of constant-state runs of the decoded frames, utterance by utterance."""
    runs = 0
    for start, stop in zip(offsets[:-1], offsets[1:]):
        part = states[start:stop]
        runs += int(part.size > 0) + int(np.count_nonzero(part[1:] != part[:-1]))
    return runs


def _describe(model, corpus, hdp):
    """What a fitted model found on `corpus`: states, concentrations, objective history, time."""
    states = model.decode(corpus)
    marginals = model.predict_proba(corpus).sum(axis=0)
    segments = _segments(states, corpus.offsets)
    seconds = float(sum(record.seconds for record in model.history_))
    row = {
        "decoded_states": int(np.unique(states).size),
        "effective_states_posterior": effective_states(marginals),
        "mean_segment_frames": corpus.n_tokens / segments,
        "train_seconds": seconds,
        "seconds_per_pass": seconds / len(model.history_),
        "objective": model.history_[-1].objective,
        "objective_per_frame": model.history_[-1].objective / corpus.n_tokens,
        "objective_history": [record.objective for record in model.history_],
    }
    if hdp:
        row = {"effective_states": int(model.n_effective_states_), "gamma": float(model.gamma_),
               "sigma": float(model.sigma_), **row,
               "gamma_history": [h["gamma"] for h in model.hyper_history_],
               "sigma_history": [h["sigma"] for h in model.hyper_history_],
               "effective_states_history": [int(h["effective_states"]) for h in model.hyper_history_]}
    return row


def _fit(model, corpus, algorithm, n_iter, seed):
    # the random local posteriors of thesis footnote 5, as the module says (not fit's default start)
    return model.set_params(algorithm=algorithm, n_iter=n_iter, random_state=seed, init="local").fit(corpus)


def run_seed(full, train, held, n_states, n_iter, burn_in, seed):
    """One seed: both models on all utterances, and on the training split scored on the held-out one."""
    hdp_full = _fit(make_hdp(n_states, burn_in), full, "cvi", n_iter, seed)
    hmm_full = _fit(make_hmm(n_states), full, "cvi2", n_iter, seed)
    hdp_train = _fit(make_hdp(n_states, burn_in), train, "cvi", n_iter, seed)
    hmm_train = _fit(make_hmm(n_states), train, "cvi2", n_iter, seed)
    row = {"seed": seed,
           "hdp_hmm": _describe(hdp_full, full, hdp=True),
           "hmm_cvi2": _describe(hmm_full, full, hdp=False),
           "heldout": {"hdp_hmm": hdp_train.score_per_token(held), "hmm_cvi2": hmm_train.score_per_token(held),
                       "hdp_hmm_effective_states": int(hdp_train.n_effective_states_),
                       "hdp_hmm_gamma": float(hdp_train.gamma_), "hdp_hmm_sigma": float(hdp_train.sigma_)}}
    return row, hdp_full


def _stats(values):
    values = np.asarray(values, dtype=float)
    return {"mean": float(values.mean()), "std": float(values.std()), "min": float(values.min()),
            "max": float(values.max()), "n": int(values.size)}


def summarise(runs):
    get = {
        "hdp_effective_states": lambda r: r["hdp_hmm"]["effective_states"],
        "hdp_effective_states_posterior": lambda r: r["hdp_hmm"]["effective_states_posterior"],
        "hdp_decoded_states": lambda r: r["hdp_hmm"]["decoded_states"],
        "hdp_gamma": lambda r: r["hdp_hmm"]["gamma"],
        "hdp_sigma": lambda r: r["hdp_hmm"]["sigma"],
        "hdp_mean_segment_frames": lambda r: r["hdp_hmm"]["mean_segment_frames"],
        "hdp_objective_per_frame": lambda r: r["hdp_hmm"]["objective_per_frame"],
        "hdp_train_seconds": lambda r: r["hdp_hmm"]["train_seconds"],
        "hmm_effective_states_posterior": lambda r: r["hmm_cvi2"]["effective_states_posterior"],
        "hmm_decoded_states": lambda r: r["hmm_cvi2"]["decoded_states"],
        "hmm_mean_segment_frames": lambda r: r["hmm_cvi2"]["mean_segment_frames"],
        "hmm_objective_per_frame": lambda r: r["hmm_cvi2"]["objective_per_frame"],
        "hmm_train_seconds": lambda r: r["hmm_cvi2"]["train_seconds"],
        "heldout_hdp": lambda r: r["heldout"]["hdp_hmm"],
        "heldout_hmm": lambda r: r["heldout"]["hmm_cvi2"],
        "heldout_hdp_minus_hmm": lambda r: r["heldout"]["hdp_hmm"] - r["heldout"]["hmm_cvi2"],
    }
    return {key: _stats([fn(run) for run in runs]) for key, fn in get.items()}


def _check(label, model, corpus, n_states, burn_in):
    row = _describe(model, corpus, hdp=True)
    row.pop("objective_history")
    return {"check": label, "states": n_states, "burn_in": burn_in, "seed": 0, **row}


# ---------------------------------------------------------------------------
# plots


def _state_colours(n_states):
    cmaps = [plt.get_cmap(name) for name in ("tab20", "tab20b", "tab20c")]
    colours = [cmap(i) for cmap in cmaps for i in range(20)]
    return ListedColormap([colours[i % len(colours)] for i in range(n_states)])


def plot_utterance(path, features, states, ranks, utterance, transcript, n_states, n_effective):
    """The standardised cepstrogram (13 x frames) with the decoded states as a colour strip under it.

    `ranks` maps a state to its rank by decoded frames over the whole corpus
    (0 = most used); colours and labels follow the rank.
    """
    ranked = ranks[states]
    n_frames = features.shape[0]
    fig, (top, strip) = plt.subplots(2, 1, figsize=(10, 4.6), sharex=True,
                                     gridspec_kw={"height_ratios": [13, 1.6]})
    image = top.imshow(features.T, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest",
                       extent=(-0.5, n_frames - 0.5, -0.5, features.shape[1] - 0.5))
    top.set_yticks(range(features.shape[1]), [f"c{d}" for d in range(features.shape[1])], fontsize=7)
    top.set_ylabel("cepstrum")
    fig.colorbar(image, ax=[top, strip], fraction=0.025, pad=0.01, label="standardised value")
    strip.imshow(ranked[None], aspect="auto", cmap=_state_colours(n_states), vmin=-0.5, vmax=n_states - 0.5,
                 interpolation="nearest", extent=(-0.5, n_frames - 0.5, 0, 1))
    change = np.flatnonzero(np.diff(ranked)) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [n_frames]])
    for start, stop in zip(starts, stops):
        if stop - start >= 6:
            strip.text((start + stop - 1) / 2, 0.5, str(ranked[start]), ha="center", va="center", fontsize=6)
    strip.set_yticks([])
    strip.set_ylabel("state", rotation=0, ha="right", va="center")
    strip.set_xlabel(f"frame ({FRAME_MS} ms)")
    top.set_title(f"{utterance}: \u201c{transcript}\u201d \u2014 {n_frames} frames, {len(starts)} segments, "
                  f"{np.unique(states).size} states\n(HDP-HMM CVI, K = {n_states}, {n_effective} effective "
                  "states; states numbered by frames over all utterances)", fontsize=9)
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def plot_history(path, runs, n_frames, burn_in):
    """Objective per frame (both models), gamma and sigma, and effective states against passes."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for i, run in enumerate(runs):
        hdp, hmm = run["hdp_hmm"], run["hmm_cvi2"]
        passes = np.arange(1, len(hdp["objective_history"]) + 1)
        axes[0].plot(passes, np.array(hdp["objective_history"]) / n_frames, color="C0", alpha=0.7,
                     label="HDP-HMM CVI" if i == 0 else None)
        axes[0].plot(passes, np.array(hmm["objective_history"]) / n_frames, color="C1", alpha=0.7,
                     label="HMM CVI-2" if i == 0 else None)
        axes[1].plot(passes, hdp["gamma_history"], color="C2", alpha=0.7, label="gamma" if i == 0 else None)
        axes[1].plot(passes, hdp["sigma_history"], color="C3", alpha=0.7, label="sigma" if i == 0 else None)
        axes[2].plot(passes, hdp["effective_states_history"], color="C0", alpha=0.7)
    low = np.percentile([v / n_frames for run in runs for model in ("hdp_hmm", "hmm_cvi2")
                         for v in run[model]["objective_history"]], 5)
    top = max(max(run[model]["objective_history"]) / n_frames for run in runs for model in ("hdp_hmm", "hmm_cvi2"))
    axes[0].set_ylim(low, top + 0.05 * (top - low) + 1e-9)
    axes[0].set_ylabel("CVI objective per frame")
    axes[1].set_ylabel("concentration")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("effective states (99 % of frames)")
    axes[2].yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes:
        ax.set_xlabel("pass")
        if burn_in:
            ax.axvline(burn_in + 0.5, color="grey", lw=0.8, ls="--")
    axes[0].legend(loc="lower right")
    axes[1].legend(loc="center right")
    axes[0].set_title("objective (leave-one-utterance-out)", fontsize=9)
    axes[1].set_title(f"HDP-HMM gamma, sigma (learned after pass {burn_in})", fontsize=9)
    axes[2].set_title("HDP-HMM effective states", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return str(path)


# ---------------------------------------------------------------------------
# table


def _pm(stats, digits):
    text = f"{stats['mean']:.{digits}f}"
    if stats["n"] > 1:
        text += f" ± {stats['std']:.{digits}f}"
    return text


def _range(stats, digits=0):
    if stats["n"] > 1 and stats["min"] != stats["max"]:
        return f"{_pm(stats, 1)} ({stats['min']:.{digits}f}-{stats['max']:.{digits}f})"
    return f"{stats['mean']:.{digits}f}"


def render_table(results):
    s, settings, data = results["summary"], results["settings"], results["data"]
    k = settings["states"]
    lines = [
        f"# {NAME}: a DP-HMM (HDP-HMM, Gaussian emissions) on TIDIGITS MFCCs",
        "",
        f"Command: `{results['command']}`",
        "",
        f"Data: {data['utterances']} TIDIGITS test utterances of CMU Sphinx ({data['speakers']}), "
        f"{data['frames']:,} frames of 13 MFCCs, {FRAME_MS} ms each. Every cepstrum is standardised to mean 0 "
        "and variance 1 (over the training frames). The held-out comparison trains on "
        f"{data['train_utterances']} utterances ({data['train_frames']:,} frames) and scores "
        f"{len(data['heldout_ids'])} ({data['heldout_frames']:,} frames): {', '.join(data['heldout_ids'])}.",
        "",
        f"Model: HDP-HMM truncated at K = {k}, batch CVI (CVI-2 sweep on sigma G[pi], heuristic q(C > 0)), "
        f"{settings['iterations']} passes, gamma and sigma starting at {GAMMA0:g} and learned from pass "
        f"{settings['burn_in'] + 1}; diagonal Gaussian emissions with a Normal-Gamma prior (kappa0 = {KAPPA:g}, "
        f"a0 = {SHAPE:g}, mu0 = data mean, b0 = a0 x data variance). Reference: the finite HMM, CVI-2, same K, "
        f"Dir({HMM_ALPHA:g}) transitions, same emission prior. {settings['seeds']} seed(s) of random local "
        "posteriors.",
        "",
        "| | HDP-HMM CVI | HMM CVI-2 |",
        "|---|---|---|",
        f"| effective states, 99 % of frames (`n_effective_states_`) | {_range(s['hdp_effective_states'])} | |",
        f"| effective states, 99 % of posterior marginals | {_range(s['hdp_effective_states_posterior'])} "
        f"| {_range(s['hmm_effective_states_posterior'])} |",
        f"| states used by the decoded frames | {_range(s['hdp_decoded_states'])} "
        f"| {_range(s['hmm_decoded_states'])} |",
        f"| learned gamma | {_pm(s['hdp_gamma'], 2)} | |",
        f"| learned sigma | {_pm(s['hdp_sigma'], 3)} | |",
        f"| mean decoded segment (frames) | {_pm(s['hdp_mean_segment_frames'], 2)} "
        f"| {_pm(s['hmm_mean_segment_frames'], 2)} |",
        f"| final CVI objective per frame (all {data['utterances']} utterances) "
        f"| {_pm(s['hdp_objective_per_frame'], 3)} | {_pm(s['hmm_objective_per_frame'], 3)} |",
        f"| held-out log-likelihood per frame (eq. 3.108, standardised features) | {_pm(s['heldout_hdp'], 3)} "
        f"| {_pm(s['heldout_hmm'], 3)} |",
        f"| training seconds a run ({settings['iterations']} passes) | {_pm(s['hdp_train_seconds'], 1)} "
        f"| {_pm(s['hmm_train_seconds'], 1)} |",
        "",
        f"Held-out difference HDP-HMM minus HMM, per frame: {_pm(s['heldout_hdp_minus_hmm'], 3)} "
        f"(range {s['heldout_hdp_minus_hmm']['min']:.3f} to {s['heldout_hdp_minus_hmm']['max']:.3f}). "
        f"Training seconds exclude scoring; the whole experiment took {results['wall_seconds']:.0f} s of wall "
        "clock.",
        "",
        "Checks (seed 0, all utterances):",
        "",
        "| run | effective states | decoded states | gamma | sigma | objective per frame | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for check in results["checks"]:
        lines.append(f"| {check['check']} (K = {check['states']}, burn-in {check['burn_in']}) "
                     f"| {check['effective_states']} | {check['decoded_states']} | {check['gamma']:.2f} "
                     f"| {check['sigma']:.3f} | {check['objective_per_frame']:.3f} | {check['train_seconds']:.1f} |")
    lines += ["", "## Against Stengel-Eskin (2017) and the thesis", "", LEXICON_DISCOVERY, ""]
    if results.get("findings"):
        lines += ["## Findings", "", *[f"- {finding}" for finding in results["findings"]], ""]
    lines += [f"![{name}]({name})" for name in results["figures"]]
    return "\n".join(lines) + "\n"


def _settled(history, bound):
    """The first pass (1-based) from which `history` stays below `bound`, or None."""
    above = np.flatnonzero(np.asarray(history) >= bound)
    if above.size == 0:
        return 1
    return int(above[-1]) + 2 if above[-1] + 1 < len(history) else None


def _findings(results):
    """Plain statements read off the numbers (no claims the numbers do not carry)."""
    s, k = results["summary"], results["settings"]["states"]
    found = []
    eff = s["hdp_effective_states"]
    found.append(f"The HDP-HMM keeps {_range(eff)} effective states of K = {k} "
                 f"({'below' if eff['max'] < k else 'at'} the truncation).")
    for check in results["checks"]:
        if check["check"] == "truncation":
            bound = check["effective_states"] >= 0.9 * check["states"]
            found.append(f"At K = {check['states']} (seed 0) it keeps {check['effective_states']}: "
                         + ("near the truncation, so there K, not the data, sets the number." if bound
                            else "well below the truncation."))
        if check["check"] == "no burn-in":
            first = results["runs"][0]["hdp_hmm"]
            peak = max(check["sigma_history"])
            found.append(f"Learning gamma and sigma from the first pass (no burn-in, seed 0) ends at sigma = "
                         f"{check['sigma']:.3f}, gamma = {check['gamma']:.2f} and {check['effective_states']} "
                         f"effective states, against {first['sigma']:.3f}, {first['gamma']:.2f} and "
                         f"{first['effective_states']} with the burn-in. On the way sigma peaks at {peak:.1f} "
                         f"(pass {int(np.argmax(check['sigma_history'])) + 1}: from the random start every "
                         "transition row looks alike)"
                         + (f" and is back below {2 * check['sigma']:.1f} by pass {settle}, so here it does not "
                            "run away." if (settle := _settled(check["sigma_history"], 2 * check["sigma"]))
                            else " and has not settled."))
    diff = s["heldout_hdp_minus_hmm"]
    if diff["n"] > 1 and abs(diff["mean"]) <= diff["std"]:
        found.append(f"Held out, the two models are level: HDP-HMM minus HMM is {diff['mean']:+.3f} ± "
                     f"{diff['std']:.3f} nats a frame (seeds: {diff['min']:+.3f} to {diff['max']:+.3f}), "
                     "within the spread over seeds.")
    else:
        better = "HDP-HMM" if diff["mean"] > 0 else "finite HMM"
        found.append(f"Held out, the {better} scores higher by {abs(diff['mean']):.3f} nats a frame on average "
                     f"(seeds: {diff['min']:+.3f} to {diff['max']:+.3f}).")
    found[-1] += (" Both are log densities of standardised features (add -sum(log scale) = "
                  f"{-float(np.log(results['settings']['feature_scale']).sum()):.3f} a frame for raw cepstra), "
                  "so only their difference carries meaning.")
    hmm_eff = s["hmm_effective_states_posterior"]
    found.append(f"The finite HMM with CVI-2 and Dir({results['settings']['hmm_alpha']:g}) transitions also leaves "
                 f"states empty: {_range(hmm_eff)} of its {k} states cover 99 % of the posterior marginals "
                 f"(the HDP-HMM: {_range(s['hdp_effective_states_posterior'])}).")
    gamma = s["hdp_gamma"]["mean"]
    implied = effective_states(gem_mean(100_000, gamma))
    found.append(f"Under the learned gamma = {gamma:.2f}, E[pi] puts 99 % of its mass on {implied} sticks "
                 "(footnote 6's reading of gamma); the learned sigma of about "
                 f"{s['hdp_sigma']['mean']:.2f} is far below footnote 6's 2.6-5.9, i.e. sparse transition rows.")
    found.append(f"Decoded segments average {s['hdp_mean_segment_frames']['mean']:.1f} frames "
                 f"({s['hdp_mean_segment_frames']['mean'] * FRAME_MS:.0f} ms) for the HDP-HMM and "
                 f"{s['hmm_mean_segment_frames']['mean']:.1f} for the HMM.")
    return found


# ---------------------------------------------------------------------------


def run_dp_hmm_tidigits(settings):
    n_states = settings.states or DEFAULT_STATES
    n_iter = settings.iterations
    burn_in = getattr(settings, "burn_in", None)
    burn_in = n_iter // 3 if burn_in is None else burn_in
    seeds = list(seed_range(settings))
    quiet = getattr(settings, "quiet", False)
    folder = Path(settings.out) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)

    raw, ids, transcripts = load_tidigits()
    full, mean, scale = standardise(raw)
    train_idx, held_idx = held_out_split(raw.n_sequences)
    train, train_mean, train_scale = standardise(raw[np.array(train_idx)])
    held, _, _ = standardise(raw[np.array(held_idx)], train_mean, train_scale)

    # numba compiles on first use; keep that out of the timings
    make_hdp(2, 0).set_params(algorithm="cvi", n_iter=1).fit(full[:2])
    make_hmm(2).set_params(algorithm="cvi2", n_iter=1).fit(full[:2])

    started = time.perf_counter()
    runs, models = [], []
    for seed in tqdm(seeds, desc=NAME, disable=quiet):
        row, model = run_seed(full, train, held, n_states, n_iter, burn_in, seed)
        runs.append(row)
        models.append(model)
        if not quiet:
            hdp = row["hdp_hmm"]
            tqdm.write(f"seed {seed}: {hdp['effective_states']} effective states, gamma {hdp['gamma']:.3f}, "
                       f"sigma {hdp['sigma']:.3f}; held out HDP {row['heldout']['hdp_hmm']:.4f}, "
                       f"HMM {row['heldout']['hmm_cvi2']:.4f}")
    checks = [
        _check("truncation", _fit(make_hdp(max(2, n_states // 2), burn_in), full, "cvi", n_iter, 0), full,
               max(2, n_states // 2), burn_in),
        _check("truncation", _fit(make_hdp(2 * n_states, burn_in), full, "cvi", n_iter, 0), full,
               2 * n_states, burn_in),
        _check("no burn-in", _fit(make_hdp(n_states, 0), full, "cvi", n_iter, 0), full, n_states, 0),
    ]
    wall = time.perf_counter() - started

    speakers = sorted({".".join(utterance.split(".")[:2]) for utterance in ids})
    results = {
        "experiment": NAME,
        "command": _command(),
        "settings": {"states": n_states, "iterations": n_iter, "burn_in": burn_in, "seeds": len(seeds),
                     "gamma0": GAMMA0, "sigma0": SIGMA0, "hmm_alpha": HMM_ALPHA, "kappa0": KAPPA, "a0": SHAPE,
                     "occupancy": "heuristic", "standardised": True,
                     "feature_mean": mean.tolist(), "feature_scale": scale.tolist()},
        "data": {"source": raw.source, "utterances": raw.n_sequences, "frames": raw.n_tokens,
                 "speakers": f"{len(speakers)} speaker(s): {', '.join(speakers)}",
                 "train_utterances": len(train_idx), "train_frames": train.n_tokens,
                 "heldout_ids": [ids[i] for i in held_idx], "heldout_frames": held.n_tokens},
        "wall_seconds": wall,
        "summary": summarise(runs),
        "runs": runs,
        "checks": checks,
        "against_lexicon_discovery": LEXICON_DISCOVERY,
    }

    best = int(np.argmax([run["hdp_hmm"]["objective"] for run in runs]))
    model = models[best]
    states = model.decode(full)
    ranks = np.empty(n_states, dtype=np.int64)
    ranks[np.argsort(-np.bincount(states, minlength=n_states), kind="stable")] = np.arange(n_states)
    index = ids.index(PLOT_UTTERANCE) if PLOT_UTTERANCE in ids else int(np.argmax(raw.lengths))
    begin, end = full.offsets[index], full.offsets[index + 1]
    plot_utterance(folder / "cepstrogram_states.png", full.observations[begin:end], states[begin:end], ranks,
                   ids[index], transcripts[index], n_states, int(model.n_effective_states_))
    results["plotted"] = {"utterance": ids[index], "transcript": transcripts[index], "seed": seeds[best],
                          "decoded_states": int(np.unique(states[begin:end]).size)}
    write_json(folder / "results.json", plain_json(results), indent=1, allow_nan=False)
    render(folder, quiet)
    return folder


def render(folder, quiet=True):
    """(Re)draw history.png and write the findings and table.md from a folder's results.json."""
    folder = Path(folder)
    results = json.loads((folder / "results.json").read_text())
    plot_history(folder / "history.png", results["runs"], results["data"]["frames"], results["settings"]["burn_in"])
    results["figures"] = ["cepstrogram_states.png", "history.png"]
    results["findings"] = _findings(results)
    write_json(folder / "results.json", plain_json(results), indent=1, allow_nan=False)
    table = render_table(results)
    write_text(folder / "table.md", table)
    if not quiet:
        print(table)


EXPERIMENTS = {NAME: run_dp_hmm_tidigits}

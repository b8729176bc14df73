"""PNG plots for the experiments (matplotlib, no display needed)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from ..files import save_figure  # noqa: E402
from ..metrics import contingency  # noqa: E402
from .results import mean_curve  # noqa: E402

MOST_FREQUENT_TAGS = 30  # a readable heat map; Brown has 104 tags


def _save(fig, path):
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return str(path)


def _mean_std(runs, algorithm, key):
    values = np.array([r[key] for r in runs if r["algorithm"] == algorithm], dtype=float)
    return values.mean() * 100, values.std() * 100


def accuracy_by_size(path, rows, algorithms):
    """Fig. 3.10: accuracy (mean ± std over seeds) against corpus size."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = np.arange(len(rows))
    for offset, algorithm in enumerate(algorithms):
        stats = np.array([_mean_std(row["runs"], algorithm, "accuracy") for row in rows])
        ax.errorbar(x + 0.06 * (offset - 2), stats[:, 0], yerr=stats[:, 1], marker="o", capsize=3, label=algorithm)
    ax.set_xticks(x, [row["size"] for row in rows])
    ax.set_xlabel("training sentences")
    ax.set_ylabel("tagging accuracy (%)")
    ax.set_title("Semi-supervised PoS induction on Brown, complete dictionary")
    ax.legend()
    return _save(fig, path)


def accuracy_by_d(path, rows, algorithms):
    """Fig. 3.12: accuracy against the dictionary threshold d."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ds = [row["d"] for row in rows]
    for algorithm in algorithms:
        stats = np.array([_mean_std(row["runs"], algorithm, "accuracy") for row in rows])
        ax.errorbar(ds, stats[:, 0], yerr=stats[:, 1], marker="o", capsize=3, label=algorithm)
    ax.set_xscale("log")
    ax.set_xticks(ds, [str(d) for d in ds])
    ax.set_xlabel("d (word types seen fewer than d times may take any tag)")
    ax.set_ylabel("tagging accuracy (%)")
    ax.set_title("Incomplete tag dictionaries, 1K Brown sentences")
    ax.legend()
    return _save(fig, path)


def curves(folder, runs, algorithms, key, title, suffix=""):
    """Fig. 3.11: a score against iterations and against training seconds, mean over seeds."""
    paths = []
    for axis, label in (("iteration", "iteration"), ("seconds", "training time (s)")):
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for algorithm in algorithms:
            curves_ = [r["curve"] for r in runs if r["algorithm"] == algorithm and r["curve"]]
            if not curves_:
                continue
            ax.plot(mean_curve(curves_, axis), mean_curve(curves_, key) * 100, marker=".", label=algorithm)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(f"{key.replace('_', ' ')} (%)")
        ax.set_title(title)
        ax.legend()
        name = f"{key}_by_{axis}{'_' + suffix if suffix else ''}.png"
        paths.append(_save(fig, folder / name))
    return paths


def confusion(path, corpus, states, title, unsupervised=False):
    """Heat map of states against gold tags, each gold column normalised.

    Shows the most frequent gold tags; for unsupervised runs the states are
    ordered by the gold tag they map to under many-to-one.
    """
    counts = contingency(states, corpus.gold).astype(float)
    n_gold = len(corpus.tagset)
    counts = np.pad(counts, ((0, 0), (0, n_gold - counts.shape[1])))
    tags = np.argsort(-counts.sum(axis=0))[:MOST_FREQUENT_TAGS]
    if unsupervised:
        used = np.flatnonzero(counts.sum(axis=1))
        mapped = counts[used].argmax(axis=1)
        rank = {tag: i for i, tag in enumerate(tags)}
        order = sorted(range(used.size), key=lambda i: (rank.get(mapped[i], len(tags)), -counts[used[i]].sum()))
        rows = used[order]
        row_labels = [str(s) for s in rows]
    else:
        rows = tags
        row_labels = corpus.tagset.decode(rows)
    block = counts[np.ix_(rows, tags)]
    block = block / np.maximum(block.sum(axis=0, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(9, 7))
    image = ax.imshow(block, aspect="auto", cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(tags)), corpus.tagset.decode(tags), rotation=90, fontsize=7)
    ax.set_yticks(range(len(rows)), row_labels, fontsize=6)
    ax.set_xlabel("gold tag (most frequent first)")
    ax.set_ylabel("hidden state" + (" (ordered by mapped tag)" if unsupervised else " (its tag)"))
    ax.set_title(f"CVI-2 states against gold tags, {title}")
    fig.colorbar(image, ax=ax, label="share of the gold tag's tokens")
    return _save(fig, path)


def loglik_panels(path, runs, panels, label, x):
    """Held-out log-likelihood per word against training seconds or steps, one panel per
    setting (Fig. 3.15-3.17).  A run joins a panel when it matches every key the run
    has (batch references, which have no minibatch keys, join every panel); seeds
    with the same label are averaged."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4), squeeze=False)
    for ax, (title, match) in zip(axes[0], panels):
        groups = {}
        for run in runs:
            if all(run.get(key, value) == value for key, value in match.items()):
                groups.setdefault(label(run), []).append(run["curve"])
        for name, curves_ in groups.items():
            ax.plot(mean_curve(curves_, x), mean_curve(curves_, "loglik"), marker=".", markersize=3, label=name,
                    linestyle="--" if "batch" in name else "-")
        ax.set_xscale("log")
        ax.set_xlabel("training time (s)" if x == "seconds" else "minibatch steps")
        ax.set_ylabel("held-out log-likelihood per word")
        ax.set_title(title)
        ax.legend(fontsize=7)
    return [_save(fig, path)]

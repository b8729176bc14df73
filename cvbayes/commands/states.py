"""``cvbayes states MODEL``: what a saved HMM learned, as hmmlearn users print it: each state's most
probable words, the transition matrix, and the training curve."""
import json
import sys

import numpy as np

from ..files import save_figure
from ..models.hmm import HMM
from ..metrics.topics import top_words
from .options import add_common, positive_int


def state_names(model):
    """The states' names: tag names for a model trained with a tag dictionary, else their numbers."""
    if model.tag_dictionary is not None and model.tagset_ is not None:
        return model.tagset_.decode(np.arange(model.n_states))
    return [str(k) for k in range(model.n_states)]


def plot_curve(model, path, title):
    """The objective of every pass against the pass and against the training seconds, to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    objective = [record.objective for record in model.history_]
    seconds = np.cumsum([record.seconds for record in model.history_])
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for ax, x, label in ((axes[0], np.arange(1, len(objective) + 1), "pass"), (axes[1], seconds, "seconds")):
        ax.plot(x, objective, marker=".", color="tab:blue")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("objective")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run_states(args):
    model = HMM.load(args.model)
    names = state_names(model)
    report = {"model": args.model, "states": model.n_states, "algorithm": model.algorithm_,
              "start": np.round(model.startprob_, 6).tolist()}
    lines = []
    if model.family.discrete:
        emissions = model.emissionprob_
        ids = top_words(emissions, args.words)
        words = [model.vocabulary_.decode(row) if model.vocabulary_ is not None else row.tolist() for row in ids]
        weights = np.take_along_axis(emissions, ids, axis=1)
        report["top_words"] = words
        report["weights"] = weights.round(6).tolist()
        width = max(len(name) for name in names)
        lines += [f"state {name:>{width}}: " + " ".join(f"{word} {weight:.3f}" for word, weight in zip(row, values))
                  for name, row, values in zip(names, words, weights)]
    else:  # a state's location: the means (Gaussians) or the rates (Poisson), as the family names them
        location = model.family.param_names[0]
        values = np.asarray(getattr(model, f"{location}_")).reshape(model.n_states, -1)
        report[location] = values.round(6).tolist()
        lines += [f"state {name}: {location} " + " ".join(f"{m:.3g}" for m in row) for name, row in zip(names, values)]
    if args.transitions:
        report["transitions"] = model.transmat_.round(6).tolist()
        width = max(6, max(len(name) for name in names) + 1)
        lines += ["", "transitions (row: from, column: to)", " " * width + "".join(f"{n:>{width}}" for n in names)]
        lines += [f"{name:>{width}}" + "".join(f"{p:>{width}.3f}" for p in row)
                  for name, row in zip(names, model.transmat_)]
    if args.curve:
        if not model.history_:
            raise ValueError(f"{args.model} holds no training history to plot")
        plot_curve(model, args.curve, f"{model.algorithm_}, K = {model.n_states}: the objective of every pass")
        report["curve"] = args.curve
        print(f"training curve written to {args.curve}", file=sys.stderr)
    if args.json:
        print(json.dumps(report))
    else:
        print("\n".join(lines))


def register(commands):
    states = commands.add_parser(
        "states", help="print what a saved HMM learned: top words per state, transitions, training curve",
        description="Each state's most probable words with p(word | state) (its mean for Gaussian emissions), "
                    "and with --transitions the transition matrix; --curve draws the objective of every pass "
                    "against passes and seconds. States are tag names for a model trained with a tag "
                    "dictionary, else numbers (as 'cvbayes tag' writes them).")
    states.add_argument("model", help="model file written by 'cvbayes fit'")
    states.add_argument("--words", type=positive_int, default=10, help="top words a state (default 10)")
    states.add_argument("--transitions", action="store_true", help="also print the transition matrix")
    states.add_argument("--curve", metavar="PNG", default=None, help="draw the training curve to this PNG")
    add_common(states, seed=False)
    states.set_defaults(handler=run_states)

"""Draw sequences from a known HMM: planted data for tests, demos and benchmarks."""
import numpy as np

from .data import Corpus


def _draw_rows(rng, probs):
    """One categorical draw per row of ``probs`` (vectorised inverse CDF)."""
    cumulative = np.cumsum(probs, axis=1)
    u = rng.random(len(probs)) * cumulative[:, -1]
    return np.minimum((cumulative < u[:, None]).sum(axis=1), probs.shape[1] - 1)


def sample_states(startprob, transmat, lengths, rng):
    """State paths for sequences sorted longest first, concatenated (int32).

    With that order the sequences still running at step t are a prefix, so
    one vectorised draw per step serves them all.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    states = np.empty(offsets[-1], dtype=np.int32)
    longest = int(lengths.max()) if len(lengths) else 0
    current = None
    for t in range(longest):
        alive = np.flatnonzero(lengths > t)
        if t == 0:
            current = _draw_rows(rng, np.broadcast_to(startprob, (len(alive), len(startprob))))
        else:
            current = _draw_rows(rng, transmat[current[: len(alive)]])
        states[offsets[alive] + t] = current
    return states, offsets


def sample_categorical_hmm(startprob, transmat, emissionprob, lengths, seed=0):
    """A discrete Corpus drawn from the HMM, with the true states as ``gold``."""
    rng = np.random.default_rng(seed)
    order = np.argsort(-np.asarray(lengths), kind="stable")
    states, offsets = sample_states(startprob, transmat, np.asarray(lengths)[order], rng)
    tokens = _draw_rows(rng, emissionprob[states]).astype(np.int32)
    return _restore_order(Corpus(tokens, offsets, gold=states), order)


def sample_gaussian_hmm(startprob, transmat, means, covars, lengths, seed=0):
    """A continuous Corpus (diagonal Gaussians) with the true states as ``gold``."""
    rng = np.random.default_rng(seed)
    order = np.argsort(-np.asarray(lengths), kind="stable")
    states, offsets = sample_states(startprob, transmat, np.asarray(lengths)[order], rng)
    features = means[states] + np.sqrt(covars[states]) * rng.standard_normal(means[states].shape)
    return _restore_order(Corpus(features, offsets, gold=states), order)


def _restore_order(corpus, order):
    """Sequences were drawn longest first (so survivors stay a prefix); undo that."""
    return corpus[np.argsort(order, kind="stable")]


def random_hmm(n_states, n_symbols, rng, concentration=0.1):
    """A random sparse HMM: Dirichlet(concentration) rows for start, transitions, emissions."""
    startprob = rng.dirichlet(np.ones(n_states))
    transmat = rng.dirichlet(np.full(n_states, concentration), size=n_states)
    emissionprob = rng.dirichlet(np.full(n_symbols, concentration), size=n_states)
    return startprob, transmat, emissionprob



def sample_acoustic_units(n_utterances, n_units=10, n_states=3, n_dims=13, mean_frames=300, stay=0.6,
                          separation=3.0, seed=0):
    """Utterances drawn from a known chain-of-units model (`cvbayes.AcousticUnits`): every unit a
    left-to-right HMM of ``n_states`` states with one unit-variance Gaussian a state, state means drawn
    N(0, separation^2 I), units drawn with Zipfian weights 1/(rank), each state staying with ``stay``.

    Returns (list of (T_i, n_dims) float arrays, list of per-frame unit labels, list of per-frame
    booleans marking a unit's first frame).  Each utterance holds whole units; its length is about
    ``mean_frames`` (Poisson number of units, at least one).
    """
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, separation, size=(n_units, n_states, n_dims))
    weights = 1.0 / np.arange(1, n_units + 1)
    weights /= weights.sum()
    frames_per_unit = n_states / (1.0 - stay)
    features, labels, starts = [], [], []
    for _ in range(n_utterances):
        n_occurrences = max(1, rng.poisson(mean_frames / frames_per_unit))
        units = rng.choice(n_units, size=n_occurrences, p=weights)
        durations = rng.geometric(1.0 - stay, size=(n_occurrences, n_states))
        state_means = np.repeat(means[units].reshape(-1, n_dims), durations.ravel(), axis=0)
        features.append(state_means + rng.standard_normal(state_means.shape))
        unit_lengths = durations.sum(axis=1)
        labels.append(np.repeat(units, unit_lengths).astype(np.int32))
        first = np.zeros(unit_lengths.sum(), dtype=bool)
        first[np.concatenate([[0], np.cumsum(unit_lengths)[:-1]])] = True
        starts.append(first)
    return features, labels, starts

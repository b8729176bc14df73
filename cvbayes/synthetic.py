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


"""What the families with one emission-table row a token share (all but the categorical one)."""
import numpy as np


class TokenRows:
    """A family whose kernels read token t's own features (``index`` the token positions): its
    minibatches carry their tokens' features and every statistics row, and row 0 of its statistics
    counts a state's tokens.  Subclasses give ``features(corpus, positions=None)`` and ``n_stats()``."""

    discrete = False

    def index(self, corpus):
        return np.arange(corpus.n_tokens, dtype=np.int32)

    def minibatch_layout(self, corpus, positions):
        """Kernel inputs for the tokens at ``positions`` (models/hmm_structures.py): one table row a token."""
        return (np.arange(positions.shape[0], dtype=np.int32), self.features(corpus, positions),
                np.arange(self.n_stats()))

    def state_totals(self, stats):
        """E[C_.k]: the expected tokens of every state."""
        return np.maximum(stats[0], 0.0)


class RealVectors(TokenRows):
    """The Gaussian families' data: (N, D) real features."""

    def features(self, corpus, positions=None):
        x = corpus.observations if positions is None else corpus.observations[positions]
        return np.ascontiguousarray(x, dtype=float)

    def check(self, corpus):
        if corpus.is_discrete or corpus.observations.shape[1] != self.n_dims:
            raise ValueError(f"this model expects real-valued features with {self.n_dims} dimensions")


def feature_variances(x):
    """Every dimension's variance of the training features, 1 where it is zero or undefined (the data-scaled
    defaults of the Gaussian priors)."""
    var = x.var(axis=0) if x.shape[0] > 1 else np.ones(x.shape[1])
    return np.where(var > 0, var, 1.0)

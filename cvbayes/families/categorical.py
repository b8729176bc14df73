"""Categorical emissions with a symmetric Dirichlet(beta) prior (eq. 3.3-3.4)."""
import numpy as np
from scipy import sparse

from ..core import rules
from ..core.rules import check_prior
from ..core.sampling import log_dirichlet_draws
from ..synthetic import sample_categorical_hmm
from .kmeans import weighted_kmeans
from .ops import CATEGORICAL


class Categorical:
    """Categorical-Dirichlet emission family.

    Parameters
    ----------
    beta : float
        Symmetric Dirichlet concentration on each state's emission row (eq. 3.3).
    n_symbols : int, optional
        Vocabulary size W; taken from the training data when None.
    """

    code = CATEGORICAL
    discrete = True
    param_names = ("emissionprob",)

    def __init__(self, beta=0.1, n_symbols=None):
        self.beta = check_prior("beta", beta)
        self.n_symbols = n_symbols
        self._fixed_symbols = n_symbols is not None
        # tau: the HDP-HMM's global emission distribution (§5.5.3); the prior
        # of word w is then beta tau_w instead of the symmetric beta
        self.tau = None

    def set_prior(self, beta, tau=None):
        """Dir(beta tau) emission rows (thesis §5.5.3); tau None is the symmetric Dir(beta)."""
        self.beta = float(beta)
        self.tau = None if tau is None else np.asarray(tau, dtype=float)

    def _pseudo_counts(self, rows=None):
        """(per-word prior (n, 1) or scalar, row total) for the statistics rows ``rows``
        (words, then the totals row, as `minibatch_layout` gives them; None: all W words)."""
        if self.tau is None:
            return self.beta, self.n_symbols * self.beta
        tau = self.tau if rows is None else self.tau[rows[:-1]]
        return self.beta * tau[:, None], self.beta

    def config(self):
        """Constructor arguments, as JSON-ready values (model files)."""
        return {"name": "categorical", "beta": self.beta, "n_symbols": self.n_symbols}

    # -- set-up -----------------------------------------------------------
    def prepare(self, corpus, n_states):
        """Fix W from the training corpus and check it."""
        if not corpus.is_discrete:
            raise ValueError("categorical emissions need integer token ids; "
                             "use emission='gaussian' for real-valued features")
        seen = int(corpus.observations.max()) + 1 if corpus.n_tokens else 1
        if not self._fixed_symbols:  # a refit on new data takes its W afresh
            vocab = corpus.vocabulary
            self.n_symbols = max(len(vocab) if vocab is not None else 0, seen)
        self.check(corpus)

    def check(self, corpus):
        if not corpus.is_discrete:
            raise ValueError("this model has categorical emissions; the data are real-valued")
        obs = corpus.observations
        if obs.size and (obs.min() < 0 or obs.max() >= self.n_symbols):
            bad = int(np.flatnonzero((obs < 0) | (obs >= self.n_symbols))[0])
            raise ValueError(
                f"token id {int(obs[bad])} at position {bad} is outside the vocabulary "
                f"of {self.n_symbols} symbols; map unseen words to the vocabulary's "
                "unknown id (Vocabulary.encode does this)")

    def prior_array(self):
        """[[beta]], or with tau the column beta tau_w, w < W, then the total beta
        (families/ops.predictive_rows reads either)."""
        if self.tau is None:
            return np.array([[self.beta]])
        return np.append(self.beta * self.tau, self.beta)[:, None]

    def n_stats(self):
        return self.n_symbols + 1

    def index(self, corpus):
        return corpus.observations

    def features(self, corpus):
        return np.empty((corpus.n_tokens, 0))

    # -- parameter rules ----------------------------------------------------
    def _counts(self, stats):
        """(K, W) expected emission counts from the (W + 1, K) statistics table."""
        return stats[:-1].T

    def map_params(self, stats):
        """EM's M-step for the emissions (eq. 3.19 with pseudo-counts)."""
        return {"emissionprob": rules.dirichlet_table(rules.MAP, self._counts(stats), self.beta)}

    def table_from_params(self, params, corpus):
        """(W, K) emission table for the kernels, with zero log offsets."""
        probs = np.asarray(params["emissionprob"], dtype=float)
        if probs.ndim != 2 or probs.shape[1] != self.n_symbols:
            raise ValueError(f"emissionprob must have shape (K, {self.n_symbols}); got {probs.shape}")
        return np.ascontiguousarray(probs.T), np.zeros(self.n_symbols)

    def table(self, stats, rule, corpus):
        """(W, K) emission table under ``rule``: VB (exp E[log phi], eq. 3.22) or MEAN (the
        posterior mean, which is the posterior predictive, eq. 3.50 and 3.109)."""
        return self.compact_table(stats, rule, None)

    def compact_table(self, stats, rule, features, rows=None):
        """The table rows of the words whose statistics are ``stats[:-1]``; the last
        row holds the totals E[C_{.,k}] over the whole vocabulary.  ``rows``: the
        statistics rows ``stats`` holds (`minibatch_layout`), None for all of them.
        VB's rows are scaled by their peak, whose log comes back as the row's offset
        (exp(psi(beta)) underflows for beta near 1e-6); MEAN's offsets are zero."""
        pseudo, pseudo_total = self._pseudo_counts(rows)
        if rule == rules.MEAN:
            return rules.mean_table(stats[:-1], pseudo, stats[-1], pseudo_total), np.zeros(stats.shape[0] - 1)
        log_table = rules.log_dirichlet_table(rule, stats[:-1], pseudo, stats[-1], pseudo_total)
        peak = log_table.max(axis=1)
        return np.exp(log_table - peak[:, None]), peak

    # -- stochastic inference (models/hmm_structures.py) ------------------------
    def minibatch_layout(self, corpus, positions):
        """Kernel inputs for the tokens at ``positions``: ids into the compact
        rows, (n, 0) features, and the statistics rows they touch (their words,
        then the totals row)."""
        words, index = np.unique(corpus.observations[positions], return_inverse=True)
        rows = np.append(words, self.n_symbols)
        return index.astype(np.int32), np.empty((positions.shape[0], 0)), rows

    def random_stats(self, rng, corpus, n_states):
        """Emission counts N_kw ~ Exponential(mean IT / (K W)) (eq. 3.107)."""
        counts = rng.exponential(corpus.n_tokens / (n_states * self.n_symbols), size=(self.n_symbols, n_states))
        return np.vstack([counts, counts.sum(axis=0)])

    def draw_start(self, rng, corpus, n_states, noise=0.1):
        """Emission rows for ``HMM(init="params")``: word types clustered by their neighbours,
        the categorical counterpart of the Gaussian family's k-means means.

        Every word type is embedded by its left and right neighbours' distribution (square roots of
        the frequencies, so squared distances are Hellinger's); k-means++ seeding (Arthur and
        Vassilvitskii 2007), with types weighted by their token counts, picks K centres spread over
        the types, and k-means steps refine them: a distributional clustering of
        types, the classic start of unsupervised tagging (Schuetze 1995; Clark 2003).  State k emits
        the words of cluster k in proportion to their counts, mixed with weight ``noise`` with a
        row drawn from the flat Dirichlet(1) (the random parameters of thesis footnote 5), so that
        every word has some probability under every state and the seed moves the start.
        """
        n_words = self.n_symbols
        words = np.asarray(corpus.observations, dtype=np.int64)
        offsets = np.asarray(corpus.offsets, dtype=np.int64)
        follows = np.ones(words.shape[0], dtype=bool)
        follows[offsets[:-1][np.diff(offsets) > 0]] = False  # a sequence's first token has no left neighbour
        right = np.flatnonzero(follows)
        left = right - 1
        ones = np.ones(right.shape[0])
        neighbours = sparse.hstack([sparse.csr_matrix((ones, (words[left], words[right])), shape=(n_words, n_words)),
                                    sparse.csr_matrix((ones, (words[right], words[left])), shape=(n_words, n_words))])
        neighbours = neighbours.tocsr()
        totals = np.asarray(neighbours.sum(axis=1)).ravel()
        embedding = (sparse.diags(1.0 / np.maximum(totals, 1.0)) @ neighbours).tocsr()
        embedding.data = np.sqrt(embedding.data)
        frequency = np.bincount(words, minlength=n_words).astype(float)
        _, cluster, size = weighted_kmeans(embedding, frequency, n_states, rng)
        counts = sparse.csr_matrix((frequency, (cluster, np.arange(n_words))), shape=(n_states, n_words)).toarray()
        # a cluster left empty by the k-means steps emits the corpus's unigram distribution
        counts[size == 0] = frequency
        clustered = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
        return {"emissionprob": (1.0 - noise) * clustered + noise * rng.dirichlet(np.ones(n_words), size=n_states)}

    def kl(self, stats):
        return rules.dirichlet_kl(self._counts(stats), self.beta)

    def log_prior(self, params):
        return rules.dirichlet_log_prior(params["emissionprob"], self.beta)

    def fitted(self, stats, rule):
        if rule == rules.MAP:
            return {"emissionprob_": self.map_params(stats)["emissionprob"]}
        pseudo, pseudo_total = self._pseudo_counts()
        return {"emissionprob_": rules.dirichlet_table(rules.MEAN, self._counts(stats), np.ravel(pseudo),
                                                       pseudo_total)}

    def log_marginal(self, stats):
        """log p(x | z) with the emission rows integrated out (eq. 3.24), under Dir(beta) or Dir(beta tau).

        Words a state never emits add nothing, so the symmetric prior sums over the stored counts only.
        """
        if self.tau is not None:
            return rules.dirichlet_log_marginal(self._counts(stats), self.beta * self.tau)
        words, states = np.nonzero(stats[:-1])
        return rules.slot_log_marginal(stats[words, states], states, self.state_totals(stats), self.beta,
                                       self.n_symbols)

    # -- the samplers' draws (models/beam.py) --------------------------------------
    def draw_parameters(self, rng, stats):
        """log phi of every state drawn from its Dirichlet posterior Dir(C_k + beta) (the prior where
        a state has no counts)."""
        pseudo, _ = self._pseudo_counts()
        return {"log_emissionprob": log_dirichlet_draws(rng, self._counts(stats) + np.ravel(pseudo))}

    def log_table(self, params, corpus):
        """(W, K) log phi: token t reads row ``index(corpus)[t]``."""
        return np.ascontiguousarray(params["log_emissionprob"].T)

    def state_totals(self, stats):
        """E[C_.k]: the expected tokens of every state."""
        return np.maximum(stats[-1], 0.0)

    def sample_hmm(self, startprob, transmat, fitted, lengths, seed):
        """A discrete Corpus drawn from the HMM with the fitted ``emissionprob_``."""
        return sample_categorical_hmm(startprob, transmat, fitted["emissionprob_"], lengths, seed)

"""Latent Dirichlet allocation (Blei, Ng and Jordan 2003) as one more model on the engine.

Document d has topic proportions theta_d ~ Dir(alpha), topic k a word distribution beta_k ~ Dir(eta),
and each token a topic z ~ theta_d and a word w ~ beta_z.  As for the HMM (thesis §3.3-3.7), every
learner is a schedule of `cvbayes.schedules` paired with a rule of `cvbayes.core.rules`; LDA supplies
only its structure (a document's bag of words) and the numba kernels of `lda_kernels`:

=============  ===============================  =====  ==========================================
algorithm      schedule (unit)                  rule   paper
=============  ===============================  =====  ==========================================
``vb``         batch (document)                 VB     Blei et al. 2003 (mean-field VB)
``online-vb``  stochastic (minibatch of docs)   VB     Hoffman, Blei and Bach 2010
``cvb0``       leave-one-out (token)            MEAN   Asuncion, Welling, Smyth and Teh 2009
``cvb``        leave-one-out (token)            MEAN   Teh, Newman and Welling 2006 (2nd order)
``scvb0``      stochastic (minibatch of docs)   MEAN   Foulds, Boyles, DuBois, Smyth, Welling 2013
``cgs``        gibbs (token, by document)       MEAN   Griffiths and Steyvers 2004
=============  ===============================  =====  ==========================================

* ``vb``: the batch schedule's E-step is the per-document fixed point for gamma (in parallel over
  documents), from a fresh start every pass, each document keeping the better of the new gamma and
  the last pass's by its ELBO, so the ELBO never decreases; its tables are VB's exp(E[log beta]); its
  penalty -KL(q(beta) || p(beta)).
* ``online-vb``: the stochastic schedule with the same E-step on a minibatch and the VB table of the
  global counts N (lambda = eta + N); a step is lambda <- (1 - rho) lambda + rho (eta + D/|B| E[C^B]).
* ``cvb0``: the leave-one-out schedule over the entries (document, word) of the document-term matrix.
  The c tokens of an entry share one q(z); each leaves out its own q(z) only (exactly the token-level
  update of Asuncion et al.), and the c copies move together.  ``frozen_counts=True`` is the named
  parallel approximation: documents in parallel with the topic-word counts frozen for a pass.
* ``cvb``: as ``cvb0``, with Teh et al.'s Gaussian correction from the variances of the counts.
* ``scvb0``: the stochastic schedule with rule MEAN.  Foulds et al.'s two levels map onto it as
  follows: the per-token document updates (N_theta moved by the document's own Robbins-Monro steps,
  after ``burn_in`` passes over the document) are the minibatch kernel's local work, run in parallel
  over the minibatch's documents like any model's minibatch E-step; the per-minibatch topic-word update
  N_phi <- (1 - rho) N_phi + rho (C/|M|) sum_M gamma is the schedule's own step, with C/|M| the corpus's
  tokens over the minibatch's as the scale.  Only N_phi and N_z are kept: O(KW) whatever the corpus.
* ``cgs``: the Gibbs schedule over documents, each token of a document redrawn in turn from its full
  conditional with SparseLDA's three buckets (Yao, Mimno and McCallum 2009), so that a token costs its
  word's few nonzero topics rather than K.  ``n_jobs`` > 1 samples partitions of the documents and the
  vocabulary in parallel (Yan, Xu and Qi 2009), each thread with its own copy of the topic totals
  during a step: the one approximation, named so.

``learn_alpha=True`` learns an asymmetric alpha by Minka's fixed point (Minka 2000, eq. 55; Wallach 2008)
from the documents' (expected) topic counts after every pass, for the algorithms that keep them (vb,
cvb0, cvb, cgs), as the thesis learns beta tau (§5.5.3).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse

from ..core import rules
from ..core.rules import MEAN, VB, check_prior
from ..core.statistics import DecayingCounts
from ..checkpoints import NO_CHECKPOINT
from ..core.units import equal_token_chunks
from ..data.corpus import Corpus
from ..data.documents import document_term_matrix
from ..data.vocabulary import Vocabulary
from ..files import checksum
from ..metrics.topics import document_completion, document_topics, top_words
from ..schedules import Algorithm, Minibatch, Progress, batch, gibbs, leave_one_out, stochastic
from ..schedules.driver import check_positive_int
from . import lda_kernels as kernels
from .base import BayesModel
from .lda_shards import ShardedBatchVB, ShardedCVB0, ShardedStochasticLDA, lda_shards
from .shards import Sharding

_TINY = np.finfo(float).tiny


SHARDED = "token, shards of documents"
ALGORITHMS = {
    "vb": Algorithm(batch, VB, "document", "Blei, Ng and Jordan 2003", 100),
    "online-vb": Algorithm(stochastic, VB, "minibatch of documents", "Hoffman, Blei and Bach 2010", 20),
    "cvb0": Algorithm(leave_one_out, MEAN, "token", "Asuncion, Welling, Smyth and Teh 2009", 100),
    "cvb": Algorithm(leave_one_out, MEAN, "token", "Teh, Newman and Welling 2006", 100),
    # CVB0 on shards, counts one pass stale (AD-LDA style, cvbayes.models.lda_shards)
    "cvb0-sharded": Algorithm(leave_one_out, MEAN, SHARDED, "Asuncion et al. 2009; Newman et al. 2009", 100),
    "scvb0": Algorithm(stochastic, MEAN, "minibatch of documents", "Foulds et al. 2013", 20),
    "cgs": Algorithm(gibbs, MEAN, "token (a document a call)", "Griffiths and Steyvers 2004", 1000),
}
# the default step sizes (kappa, tau0) of the stochastic algorithms: scikit-learn's learning_decay and
# learning_offset for online-vb, the thesis's SCVI values (§3.8.4) for scvb0
DEFAULT_STEPS = {"online-vb": (0.7, 10.0), "scvb0": (0.5, 1.0)}

OBJECTIVES = {
    "vb": "evidence lower bound (Blei et al. 2003, eq. 15)",
    "online-vb": "per-token ELBO of the pass's minibatch documents under the current topics (no topic KL)",
    "cvb0": "sum over tokens of log of the update's normaliser: a leave-one-token-out predictive",
    "cvb": "sum over tokens of log of the update's normaliser (second order)",
    "cvb0-sharded": "sum over tokens of log of the update's normaliser under the topic-word counts frozen at the start "
                    "of the pass plus the own shard's changes (cvbayes.models.lda_shards)",
    "scvb0": "per-token log normaliser of the pass's minibatch tokens",
    "cgs": "log p(w, z | alpha, eta) of the current sample (Griffiths and Steyvers 2004, eq. 2-3)",
}


# -- documents ------------------------------------------------------------------------------------


class Documents:
    """A document-term matrix as the kernels' CSR arrays.

    Attributes: ``doc_start`` (D + 1,) int64, ``entry_word`` (nnz,) int32, ``entry_count`` (nnz,)
    float64 (whole numbers), ``entry_doc`` (nnz,) int32, ``doc_length`` (D,) float64, ``n_words`` W.
    """

    def __init__(self, matrix):
        matrix = scipy.sparse.csr_matrix(matrix)
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        data = np.asarray(matrix.data, dtype=np.float64)
        if data.size and (data.min() < 0 or not np.all(np.isfinite(data)) or np.any(data != np.round(data))):
            raise ValueError("a document-term matrix must hold non-negative whole counts")
        self.matrix = matrix
        self.doc_start = np.ascontiguousarray(matrix.indptr, dtype=np.int64)
        self.entry_word = np.ascontiguousarray(matrix.indices, dtype=np.int32)
        self.entry_count = np.ascontiguousarray(data)
        self.n_documents, self.n_words = matrix.shape
        self.entry_doc = np.repeat(np.arange(self.n_documents, dtype=np.int32), np.diff(self.doc_start))
        self.doc_length = np.asarray(matrix.sum(axis=1), dtype=np.float64).ravel()
        self.n_tokens = int(self.entry_count.sum())

    def chunks(self, cost):
        """Thread chunks of documents cut at equal entry counts, for a kernel of ``cost`` steps an entry."""
        return equal_token_chunks(self.doc_start, cost)

    @classmethod
    def from_input(cls, X, n_words=None):
        """From a Corpus of documents, a scipy.sparse or dense (D, W) count matrix."""
        if isinstance(X, Documents):
            return X
        if isinstance(X, Corpus):
            X = document_term_matrix(X, n_words)
        elif not scipy.sparse.issparse(X):
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be a (documents, words) count matrix or a Corpus, got shape {X.shape}")
        documents = cls(X)
        if n_words is not None and documents.n_words != n_words:
            raise ValueError(f"X has {documents.n_words} words (columns); the model has {n_words}")
        return documents

    def gather(self, ids):
        """The documents ``ids`` (repeats allowed) as their own CSR arrays, their words renumbered:
        (rows, doc_start, local_word, entry_count) with ``rows`` the global ids of the local words."""
        starts, stops = self.doc_start[ids], self.doc_start[ids + 1]
        lengths = stops - starts
        doc_start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        entries = np.repeat(starts - doc_start[:-1], lengths) + np.arange(doc_start[-1])
        rows, local_word = np.unique(self.entry_word[entries], return_inverse=True)
        return rows, doc_start, local_word.astype(np.int32), self.entry_count[entries]

    def tokens(self):
        """Every token's word and document, document by document: (token_word, token_doc) int32."""
        counts = self.entry_count.astype(np.int64)
        return np.repeat(self.entry_word, counts), np.repeat(self.entry_doc, counts)


# -- hyperparameters ------------------------------------------------------------------------------


def minka_alpha(doc_topic, doc_length, alpha, n_steps=50, tol=1e-7):
    """Minka's fixed point for an asymmetric Dirichlet from per-document topic counts (Minka 2000,
    eq. 55; Wallach 2008, §2.3): alpha_k <- alpha_k sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
    / sum_d [psi(n_d + alpha_.) - psi(alpha_.)].  Each step raises the Dirichlet-multinomial evidence
    `core.rules.dirichlet_log_marginal(doc_topic, alpha)`."""
    alpha = np.asarray(alpha, dtype=float).copy()
    doc_topic = np.maximum(doc_topic, 0.0)
    for _ in range(n_steps):
        total = alpha.sum()
        # psi(n + a) - psi(a): VB's log cell of a count n in a row with nothing else (core.rules)
        denominator = rules.log_dirichlet_table(VB, doc_length, total, 0.0, total).sum()
        if not denominator > 0.0:
            break
        gain = rules.log_dirichlet_table(VB, doc_topic, alpha, 0.0, alpha).sum(axis=0)
        new = np.maximum(alpha * gain / denominator, 1e-10)
        change = np.max(np.abs(new - alpha) / alpha)
        alpha = new
        if change < tol:
            break
    return alpha


# -- structures the schedules run -----------------------------------------------------------------


class BatchVB:
    """LDA's structure for `schedules.batch` with rule VB.

    Each pass runs every document's fixed point from Blei et al.'s fresh start gamma = alpha + N_d / K
    (as scikit-learn and Hoffman et al. do; a start from the last pass's gamma sticks near it and ends
    in worse optima) and keeps, document by document, the better of that and the last pass's gamma by
    the document's ELBO under the new topics: so the ELBO never decreases (module notes).
    """

    def __init__(self, documents, n_topics, alpha, eta, max_doc_iter, doc_tol, learn_alpha=False):
        self.documents = documents
        self.alpha = alpha
        self.eta = eta
        self.max_doc_iter = max_doc_iter
        self.doc_tol = doc_tol
        self.learn_alpha = learn_alpha
        self.n_topics = n_topics
        self.gamma = self.fresh_gamma()

    def fresh_gamma(self):
        return self.alpha + self.documents.doc_length[:, None] / self.n_topics

    def tables(self, statistics, rule):
        """exp(E[log beta]) (W, K): VB's rule down each topic's column of word counts."""
        log_table = rules.log_dirichlet_table(rule, statistics, self.eta, statistics.sum(axis=0),
                                              statistics.shape[0] * self.eta)
        return np.maximum(np.exp(log_table), _TINY)

    def _estep(self, table, gamma, max_iter):
        """(expected topic-word counts, each document's ELBO) with gamma run ``max_iter`` fixed-point steps
        in place (0: the statistics of the gamma given)."""
        docs = self.documents
        chunks = docs.chunks(self.n_topics * max(max_iter, 1))  # at most max_iter steps of K an entry
        sstats = np.zeros((chunks.shape[0] - 1, docs.n_words, self.n_topics))
        bound = np.empty(docs.n_documents)
        kernels.vb_estep(docs.doc_start, docs.entry_word, docs.entry_count, table, self.alpha, gamma, max_iter,
                         self.doc_tol, chunks, sstats, bound, np.empty(docs.n_documents, dtype=np.int64))
        return sstats, bound

    def expectations(self, table):
        docs = self.documents
        gamma = self.fresh_gamma()
        sstats, bound = self._estep(table, gamma, self.max_doc_iter)
        if self.gamma is not None:
            _, last_bound = self._estep(table, self.gamma, 0)
            keep_last = last_bound > bound
            if keep_last.any():
                gamma[keep_last] = self.gamma[keep_last]
                sstats, bound = self._estep(table, gamma, 0)
        self.gamma = gamma
        if self.learn_alpha:
            counts = self.gamma - self.alpha
            self.alpha[:] = minka_alpha(counts, docs.doc_length, self.alpha)
            self.gamma = self.alpha + counts
        return sstats.sum(axis=0), bound.sum()

    def penalty(self, rule, statistics, tables):
        return -rules.dirichlet_kl(statistics.T, self.eta)

    def attributes(self):
        return {"doc_topic_": self.gamma / self.gamma.sum(axis=1, keepdims=True)}


class StochasticLDA:
    """LDA's structure for `schedules.stochastic`: online VB (rule VB) or SCVB0 (rule MEAN).

    ``counts`` holds the global blocks "topic_word" (W, K) and "topic" (K,) as DecayingCounts.
    ``corpus_documents`` and ``corpus_tokens`` give the scale from a minibatch to the corpus.
    """

    def __init__(self, documents, rule, n_topics, alpha, eta, counts, corpus_documents, corpus_tokens,
                 max_doc_iter=100, doc_tol=1e-3, burn_in=1, local_kappa=0.9, local_tau0=10.0):
        self.documents = documents
        self.rule = rule
        self.n_topics = n_topics
        self.alpha = alpha
        self.eta = eta
        self.counts = counts
        self.corpus_documents = corpus_documents
        self.corpus_tokens = corpus_tokens
        self.max_doc_iter = max_doc_iter
        self.doc_tol = doc_tol
        self.burn_in = burn_in
        self.local_kappa = local_kappa
        self.local_tau0 = local_tau0
        self.log_keep = np.zeros(1)
        self.n_units = documents.n_documents

    def minibatch(self, ids):
        rows, doc_start, local_word, entry_count = self.documents.gather(ids)
        values, total_log_z = self.statistics(doc_start, local_word, entry_count, self.table(rows))
        return self.step(ids, rows, values, total_log_z, int(entry_count.sum()))

    def table(self, rows):
        """The rule's table of the current global counts at the words ``rows`` (eq. 3.98-3.100)."""
        topic_word = self.counts["topic_word"]
        log_table = rules.log_dirichlet_table(self.rule, topic_word.rows(rows), self.eta,
                                              self.counts["topic"].values(), topic_word.stored.shape[0] * self.eta)
        return np.maximum(np.exp(log_table), _TINY)

    def statistics(self, doc_start, local_word, entry_count, table):
        """The minibatch's expected topic-word counts at its words (rows of ``table``) and its summed
        log normalisers: VB's E-step (online VB) or SCVB0's per-document work."""
        n_documents = doc_start.shape[0] - 1
        sweeps = self.max_doc_iter if self.rule == VB else self.burn_in + 1
        chunks = equal_token_chunks(doc_start, self.n_topics * sweeps)
        sstats = np.zeros((chunks.shape[0] - 1, table.shape[0], self.n_topics))
        log_z = np.empty(n_documents)
        if self.rule == VB:
            cumulative = np.concatenate([[0.0], np.cumsum(entry_count)])
            lengths = cumulative[doc_start[1:]] - cumulative[doc_start[:-1]]
            gamma = self.alpha + lengths[:, None] / self.n_topics
            kernels.vb_estep(doc_start, local_word, entry_count, table, self.alpha, gamma, self.max_doc_iter,
                             self.doc_tol, chunks, sstats, log_z, np.empty(n_documents, dtype=np.int64))
        else:
            longest = int(np.max(np.diff(np.concatenate([[0.0], np.cumsum(entry_count)])[doc_start]), initial=0))
            if self.log_keep.shape[0] <= (self.burn_in + 1) * longest:
                self.log_keep = kernels.local_log_keep(2 * (self.burn_in + 1) * longest, self.local_kappa,
                                                       self.local_tau0)
            kernels.scvb0_minibatch(doc_start, local_word, entry_count, table, self.alpha, self.burn_in,
                                    self.log_keep, chunks, sstats, log_z)
        return sstats.sum(axis=0), log_z.sum()

    def step(self, ids, rows, values, total_log_z, n_tokens):
        """The `Minibatch` of the statistics ``values`` (at the words ``rows``) of the documents ``ids``,
        scaled to the corpus (eq. 3.103-3.104)."""
        if self.rule == VB:
            scale = self.corpus_documents / ids.shape[0]
        else:
            scale = self.corpus_tokens / max(n_tokens, 1)
        return Minibatch([("topic_word", rows, values, scale), ("topic", slice(None), values.sum(axis=0), scale)],
                         float(total_log_z), n_tokens)

    def current(self):
        return self.counts["topic_word"].values()


class _Passes:
    """What the collapsed learners and the sampler share: Minka's alpha after each pass (with
    ``learn_alpha``), the topic-word counts, and the documents' topic proportions."""

    def after_pass(self, iteration):
        if self.learn_alpha:
            self.alpha[:] = minka_alpha(self.doc_counts(), self.documents.doc_length, self.alpha)

    def current(self):
        return self.word_topic

    def attributes(self):
        return {"doc_topic_": rules.dirichlet_table(MEAN, self.doc_counts(), self.alpha)}


class CollapsedLDA(_Passes):
    """LDA's state for `schedules.leave_one_out` (CVB0, CVB) or the frozen-count parallel pass."""

    def __init__(self, documents, n_topics, alpha, eta, rng, second_order=False, frozen_counts=False,
                 learn_alpha=False):
        self.documents = documents
        self.second_order = second_order
        self.frozen_counts = frozen_counts
        self.learn_alpha = learn_alpha
        docs = documents
        # random local posteriors, the same for every collapsed algorithm given a seed (thesis footnote 5)
        self.gamma = rng.random((docs.entry_word.shape[0], n_topics))
        self.gamma /= self.gamma.sum(axis=1, keepdims=True)
        self.doc_topic, self.word_topic = self._totals(variance=False)
        self.topic = self.word_topic.sum(axis=0)
        self.alpha = alpha
        self.eta = eta
        eta_total = docs.n_words * eta
        self.order = np.arange(docs.entry_word.shape[0], dtype=np.int64)
        self.state = (docs.entry_doc, docs.entry_word, docs.entry_count, docs.doc_length, self.gamma, self.doc_topic,
                      self.word_topic, self.topic, self.alpha, float(eta), float(eta_total), np.empty(n_topics))
        if second_order:
            doc_var, word_var = self._totals(variance=True)
            self.state += (doc_var, word_var, word_var.sum(axis=0))

    def _totals(self, variance):
        """The document-topic and word-topic sums of the entries' c q(z) (or c q(z) (1 - q(z)))."""
        docs = self.documents
        doc_out = np.zeros((docs.n_documents, self.gamma.shape[1]))
        word_out = np.zeros((docs.n_words, self.gamma.shape[1]))
        kernels.entry_totals(docs.entry_doc, docs.entry_word, docs.entry_count, self.gamma, variance, doc_out,
                             word_out)
        return doc_out, word_out

    def sweep(self, iteration):
        docs = self.documents
        if self.frozen_counts:
            chunks = docs.chunks(self.word_topic.shape[1])
            new_word_topic = np.zeros((chunks.shape[0] - 1,) + self.word_topic.shape)
            objective, bad = kernels.cvb0_frozen_pass(
                docs.doc_start, docs.entry_word, docs.entry_count, docs.doc_length, self.gamma, self.doc_topic,
                self.word_topic, self.topic, self.alpha, float(self.eta), float(docs.n_words * self.eta),
                chunks, new_word_topic)
            self.word_topic[:] = new_word_topic.sum(axis=0)
            self.topic[:] = self.word_topic.sum(axis=0)
        elif self.second_order:
            objective, bad = kernels.cvb_pass(self.state, self.order)
        else:
            objective, bad = kernels.cvb0_pass(self.state, self.order)
        if bad >= 0:
            raise ValueError(f"the tokens of document {docs.entry_doc[bad]} have no topic of positive probability")
        return objective

    def doc_counts(self):
        return self.doc_topic


class GibbsLDA(_Passes):
    """LDA's state for the collapsed Gibbs sampler `lda_kernels.gibbs_sweep` (the sweep of
    `schedules.gibbs`): one topic a token, integer counts, each word's nonzero topics as a list of
    (topic, count) pairs (SparseLDA's), and the partitions of the documents and the vocabulary that
    ``n_jobs`` threads sample in parallel (one partition: the exact sampler)."""

    def __init__(self, documents, n_topics, alpha, eta, rng, n_jobs=1, learn_alpha=False):
        self.documents = documents
        self.learn_alpha = learn_alpha
        self.token_word, token_doc = documents.tokens()
        self.assignment = rng.integers(0, n_topics, size=self.token_word.shape[0]).astype(np.int32)
        self.seed = rng.integers(0, 2 ** 63, size=1).astype(np.uint64)  # the sweeps' generators (gibbs_sweep)
        self.doc_topic = np.zeros((documents.n_documents, n_topics), dtype=np.int32)
        np.add.at(self.doc_topic, (token_doc, self.assignment), 1)
        self.topic = np.bincount(self.assignment, minlength=n_topics).astype(np.int64)
        self.pairs, self.list_start, self.list_length = kernels.word_lists(self.token_word, self.assignment,
                                                                           documents.n_words, n_topics)
        self.alpha = alpha
        self.eta = float(eta)
        self.eta_total = float(documents.n_words * eta)
        self.normaliser = np.array([kernels.topic_normaliser(float(count), self.eta_total) for count in self.topic])
        frequency = np.bincount(self.token_word, minlength=documents.n_words)
        self.eta_terms = kernels.log_gamma_ratios(self.eta, int(frequency.max(initial=0)))
        self.token_start = np.concatenate([[0], np.cumsum(documents.doc_length)]).astype(np.int64)
        self.doc_parts = equal_token_chunks(self.token_start, n_chunks=n_jobs)
        self.word_bounds = equal_token_chunks(np.concatenate([[0], np.cumsum(frequency)]), n_chunks=n_jobs)
        self.word_offsets = kernels.partition_offsets(self.token_word, self.token_start, self.word_bounds)

    def checkpointed(self):
        """The arrays a sweep changes (the lists' order too: the draws depend on it), and the seed."""
        return {"assignment": self.assignment, "doc_topic": self.doc_topic, "topic": self.topic,
                "normaliser": self.normaliser, "pairs": self.pairs, "list_length": self.list_length,
                "alpha": self.alpha, "seed": self.seed}

    def sweep(self, iteration):
        shared = (self.doc_topic, self.topic, self.normaliser, self.pairs, self.list_start, self.list_length, self.alpha,
                  self.eta, self.eta_total)
        if self.doc_parts.shape[0] == 2:
            kernels.gibbs_sweep(self.token_word, self.assignment, self.token_start, *shared, self.seed[0], iteration)
        else:
            kernels.partitioned_gibbs_sweep(self.token_word, self.assignment, *shared, self.doc_parts, self.word_bounds,
                                            self.word_offsets, self.seed[0], iteration)
        return self.log_joint()

    def log_joint(self):
        """log p(w, z | alpha, eta) (Griffiths and Steyvers 2004, eq. 2-3)."""
        return kernels.gibbs_log_joint(self.doc_topic, self.documents.doc_length, self.topic, self.pairs,
                                       self.list_start, self.list_length, self.alpha, self.eta,
                                       self.documents.n_words, self.eta_terms)

    @property
    def word_topic(self):
        """The (W, K) topic-word counts."""
        return kernels.word_topic_counts(self.pairs, self.list_start, self.list_length, self.topic.shape[0])

    def doc_counts(self):
        return self.doc_topic

    def attributes(self):
        return {**super().attributes(), "assignments_": self.assignment}


# -- the estimator --------------------------------------------------------------------------------

# what fit(client=...) runs (cvbayes.models.lda_shards)
SHARDED_ALGORITHMS = ("vb", "online-vb", "scvb0", "cvb0-sharded")


class Training(NamedTuple):
    """What `LDA._prepare` makes of fit's input: the documents, and on shards the Dask client, the
    number of shards and the folder they are saved in (None: a temporary one)."""

    documents: Any
    client: Any
    n_shards: int | None
    shard_folder: Any


class LDA(BayesModel):
    """Latent Dirichlet allocation in scikit-learn's shape, learnt by any algorithm of `ALGORITHMS`.

    Parameters
    ----------
    n_topics : int
        Number of topics K.
    alpha : float or array (K,), default 0.1
        Dirichlet prior on each document's topic proportions (scikit-learn's ``doc_topic_prior``).
    eta : float, default 0.01
        Symmetric Dirichlet prior on each topic's words (scikit-learn's ``topic_word_prior``).
    algorithm : str, default "cvb0"
        One of `ALGORITHMS`.
    n_iter : int, optional
        Passes over the data (Gibbs sweeps for cgs); the algorithm's default when None.
    random_state : int, default 0
        Seeds the start, the minibatches and the samples (``seed`` before, deprecated).
    batch_size : int, default 128
        Documents a minibatch (online-vb, scvb0).
    kappa, tau0 : float, optional
        Step sizes rho_t = (tau0 + t)^-kappa of the stochastic algorithms; by default scikit-learn's
        ``learning_decay`` 0.7 and ``learning_offset`` 10 for online-vb, and the thesis's SCVI values
        0.5 and 1 (§3.8.4) for scvb0.
    total_samples : int, default 1e6
        The documents of the stream that ``partial_fit`` sees in minibatches (scikit-learn's).
    max_doc_iter, doc_tol : int and float, default 100 and 1e-3
        VB's per-document fixed point: at most ``max_doc_iter`` steps, until the mean change of gamma is
        below ``doc_tol`` (scikit-learn's ``max_doc_update_iter`` and ``mean_change_tol``).
    burn_in : int, default 1
        SCVB0's passes over a document before its statistics are collected.
    local_kappa, local_tau0 : float, default 0.9 and 10.0
        SCVB0's per-document step sizes (Foulds et al. 2013).
    frozen_counts : bool, default False
        cvb0 only: documents in parallel with the topic-word counts frozen for each pass (an
        approximation, named so).
    learn_alpha : bool, default False
        Learn an asymmetric alpha by Minka's fixed point after every pass (vb, cvb0, cvb, cgs).
    n_jobs : int, default 1
        cgs only: sample n_jobs partitions of the documents and the vocabulary in parallel, one a
        thread (Yan, Xu and Qi 2009); each thread sees the others' changes to the topic totals only
        after each of the sweep's n_jobs steps: an approximation, named so.  1 is the exact sampler.
        The chain depends on n_jobs and the seed, not on the threads numba runs.  cgs always draws
        with SparseLDA's buckets, which are exact (the former ``sparse_gibbs`` switch is gone).
    n_init : int, default 1
        Restarts from seeds random_state, random_state + 1, ...; the run with the highest last objective
        is kept.

    ``fit(X)`` takes a scipy.sparse (D, W) count matrix (scikit-learn's layout), a dense one, or a
    `Corpus` of documents (`cvbayes.data.documents`), `BayesModel.fit`'s arguments, and:

    client : dask.distributed.Client, optional
        vb, online-vb, scvb0, cvb0-sharded: run the passes on the client's workers, each on its shard of
        whole documents, memory-mapped from a file saved once (`cvbayes.models.lda_shards`, which says what
        is exact and what is not).  Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in (`cvbayes.models.shards.Sharding`); n_shards
        without a client runs cvb0-sharded on that many threads of this process.

    Attributes
    ----------
    components_ : (K, W) topic-word pseudo-counts eta + E[N_kw] (for VB, scikit-learn's lambda)
    alpha_ : (K,) the document-topic prior (learnt with ``learn_alpha``)
    history_ : list of `schedules.IterationRecord` (objective of `OBJECTIVES`, seconds a pass)
    n_iter_, n_batch_iter_ : passes run, and stochastic steps run
    doc_topic_ : (D, K) the training documents' topic proportions (not for online-vb and scvb0); kept by `save`
    vocabulary_ : the `Vocabulary` of a Corpus fitted, else None
    shard_timings_ : on shards, a `cvbayes.models.shards.PassTiming` a pass (compute seconds per shard,
        bytes sent and returned, broadcast, reduction and scheduler overhead)
    """

    MODEL_NAME = "lda"
    FIT_OPTIONS = ("client", "n_shards", "shard_folder")
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FITTED = "components_"

    def __init__(self, n_topics=10, alpha=0.1, eta=0.01, algorithm="cvb0", n_iter=None, random_state=0,
                 batch_size=128, kappa=None, tau0=None, total_samples=1_000_000, max_doc_iter=100, doc_tol=1e-3,
                 burn_in=1, local_kappa=0.9, local_tau0=10.0, frozen_counts=False, learn_alpha=False,
                 n_jobs=1, n_init=1, *, seed=None):
        self._keep_params(locals())
        self._check_learner("n_topics", "n_init", "batch_size", "n_jobs")
        if n_iter is not None:
            check_positive_int("n_iter", n_iter)
        check_prior("eta", eta)
        if np.any(np.asarray(alpha, dtype=float) <= 0):
            raise ValueError("alpha must be positive")
        if learn_alpha and ALGORITHMS[algorithm].schedule is stochastic:
            raise ValueError(f"learn_alpha needs the documents' topic counts, which {algorithm} does not keep")
        if frozen_counts and algorithm != "cvb0":
            raise ValueError("frozen_counts applies to cvb0 only")
        if n_jobs != 1 and algorithm != "cgs":
            raise ValueError("n_jobs applies to cgs only")

    # -- fit's hooks ----------------------------------------------------------------------------------
    def _n_passes(self):
        return self.n_iter or ALGORITHMS[self.algorithm].default_iterations

    def _step_sizes(self):
        return (self.batch_size, *self._kappa_tau0(self.algorithm))

    def _kappa_tau0(self, algorithm):
        """(kappa, tau0) of a stochastic algorithm: the constructor's, or the algorithm's defaults."""
        default_kappa, default_tau0 = DEFAULT_STEPS[algorithm]
        return (default_kappa if self.kappa is None else self.kappa,
                default_tau0 if self.tau0 is None else self.tau0)

    def _prepare(self, X, y=None, client=None, n_shards=None, shard_folder=None):
        """The documents of X, and the prior alpha_ every run starts from (y: ignored, scikit-learn's);
        with ``client``, the shards the learner runs on."""
        Sharding.checked(self.algorithm, client, n_shards, shard_folder, SHARDED_ALGORITHMS, ("cvb0-sharded",))
        if self.learn_alpha and (client is not None or self.algorithm == "cvb0-sharded"):
            raise ValueError("learn_alpha needs every document's topic counts in one place, which a fit on shards "
                             "does not gather; fit without client= (or learn alpha in one process first)")
        documents = Documents.from_input(X)
        self.vocabulary_ = X.vocabulary if isinstance(X, Corpus) else None
        self.alpha_ = np.broadcast_to(np.asarray(self.alpha, dtype=float), (self.n_topics,)).copy()
        self.steps_ = 0
        self.doc_topic_ = None
        self.n_iter_ = self._n_passes()
        return Training(documents, client, n_shards, shard_folder)

    def _fingerprint(self, training):
        documents = training.documents
        return documents.doc_start, documents.entry_word, documents.entry_count

    def _shards(self, training, run):
        """The documents cut into shards for the client's workers (or, without one, for threads)."""
        if training.client is not None and run.checkpoint is not NO_CHECKPOINT and run.how.schedule is not stochastic:
            raise ValueError(f"algorithm {run.algorithm!r} on shards does not take checkpoints yet (its documents' "
                             f"state lives on the workers); fit it without checkpoint=")
        identity = None
        if training.shard_folder is not None:
            identity = checksum(dict(zip(("doc_start", "entry_word", "entry_count"), self._fingerprint(training))))
        return lda_shards(training.documents, training.client, training.n_shards, training.shard_folder, identity)

    def _batch(self, training, run):
        """Mean-field VB: the per-document fixed point under exp(E[log beta]) (Blei et al. 2003), from
        Gamma(100, 1/100) topic-word counts; on a client's shards with one."""
        documents = training.documents
        structure = BatchVB(documents, self.n_topics, self.alpha_, self.eta, self.max_doc_iter, self.doc_tol,
                            self.learn_alpha)
        start = _initial_counts(run.rng, documents.n_words, self.n_topics)["topic_word"].values()
        if training.client is not None:
            return ShardedBatchVB(structure, self._shards(training, run)), start, None
        run.checkpoint.track_arrays("alpha", {"alpha": structure.alpha})
        run.checkpoint.track("gamma", lambda: structure.gamma, lambda gamma: setattr(structure, "gamma", gamma))
        return structure, start, None

    def _stochastic(self, training, run):
        """Online VB and SCVB0 on minibatches of documents, from Gamma(100, 1/100) topic-word counts; each
        minibatch's documents worked on by the client's shards that hold them with one."""
        documents = training.documents
        counts = _initial_counts(run.rng, documents.n_words, self.n_topics)
        structure = self._stochastic_structure(documents, run.how.rule, counts, documents.n_documents,
                                               documents.n_tokens)
        if training.client is not None:
            return ShardedStochasticLDA(structure, self._shards(training, run))
        return structure

    def _collapsed(self, training, run):
        """CVB0 and CVB over the entries of the document-term matrix, from random local posteriors;
        cvb0-sharded on shards of documents (threads of this process, or a client's workers)."""
        state = CollapsedLDA(training.documents, self.n_topics, self.alpha_, self.eta, run.rng,
                             second_order=run.algorithm == "cvb", frozen_counts=self.frozen_counts,
                             learn_alpha=self.learn_alpha)
        if run.algorithm == "cvb0-sharded":
            if run.checkpoint is not NO_CHECKPOINT:
                raise ValueError("algorithm 'cvb0-sharded' does not take checkpoints yet (its shards' local "
                                 "statistics are not saved); fit it without checkpoint=")
            return ShardedCVB0(state, self._shards(training, run))
        # every array of the kernels' state after the documents' own four: gamma, the counts, their variances
        run.checkpoint.track_arrays("collapsed", state.state[4:])
        return state

    def _sampler(self, training, run):
        """Collapsed Gibbs sampling with SparseLDA's buckets from uniform random topics; ``n_jobs``
        partitions sampled on as many threads."""
        state = GibbsLDA(training.documents, self.n_topics, self.alpha_, self.eta, run.rng, n_jobs=self.n_jobs,
                         learn_alpha=self.learn_alpha)
        run.checkpoint.track_arrays("gibbs", state.checkpointed())
        return state

    def _set_fitted(self, statistics, rule, documents=None):
        """components_ = eta + the expected (or sampled) topic-word counts."""
        self.components_ = self.eta + np.asarray(statistics, dtype=np.float64).T

    @property
    def n_batch_iter_(self):
        """Stochastic steps run (scikit-learn's name for ``steps_``)."""
        return getattr(self, "steps_", 0)

    def partial_fit(self, X, y=None):
        """One stochastic step on the minibatch X (online-vb, or scvb0 if that is the algorithm).

        The step size continues rho_t = (tau0 + t)^-kappa over calls; ``total_samples`` is the size of the
        whole stream of documents.
        """
        stochastic_algorithms = [name for name, spec in ALGORITHMS.items() if spec.schedule is stochastic]
        algorithm = self.algorithm if self.algorithm in stochastic_algorithms else "online-vb"
        if not hasattr(self, "_partial_counts"):
            documents = Documents.from_input(X)
            self.alpha_ = np.broadcast_to(np.asarray(self.alpha, dtype=float), (self.n_topics,)).copy()
            self.vocabulary_ = X.vocabulary if isinstance(X, Corpus) else None
            self._partial_counts = _initial_counts(np.random.default_rng(self.random_state), documents.n_words,
                                                   self.n_topics)
            self.steps_ = 0
            self.history_ = []
            self.algorithm_ = algorithm
            self.objective_name_ = OBJECTIVES[algorithm]
            self.doc_topic_ = None
        documents = Documents.from_input(X, self._partial_counts["topic_word"].stored.shape[0])
        mean_length = documents.n_tokens / max(documents.n_documents, 1)
        structure = self._stochastic_structure(documents, ALGORITHMS[algorithm].rule, self._partial_counts,
                                               self.total_samples, self.total_samples * mean_length)
        with Progress(1, "", False) as bar:
            kappa, tau0 = self._kappa_tau0(algorithm)
            stochastic(structure, self._partial_counts, 1, documents.n_documents, kappa, tau0 + self.steps_,
                       np.random.default_rng(self.random_state), bar.record)
            self.history_ += [dataclasses.replace(record, iteration=len(self.history_)) for record in bar.history]
        self.steps_ += 1
        self.n_iter_ = self.steps_
        self.components_ = self.eta + self._partial_counts["topic_word"].values().T
        return self

    def _stochastic_structure(self, documents, rule, counts, corpus_documents, corpus_tokens):
        return StochasticLDA(documents, rule, self.n_topics, self.alpha_, self.eta, counts, corpus_documents,
                             corpus_tokens, self.max_doc_iter, self.doc_tol, self.burn_in, self.local_kappa,
                             self.local_tau0)

    # -- using a fitted model --------------------------------------------------------------------------

    def _matrix(self, X):
        self._check_fitted()
        return Documents.from_input(self._in_model_words(X), self.components_.shape[1]).matrix

    def _in_model_words(self, X):
        """X, and a Corpus read with another vocabulary in the model's word ids (words the model never
        saw dropped, as they have no topic-word counts)."""
        if not isinstance(X, Corpus) or X.vocabulary is None or self.vocabulary_ in (None, X.vocabulary):
            return X
        types, inverse = np.unique(X.observations, return_inverse=True)
        words = X.vocabulary.decode(types)
        known = np.array([word in self.vocabulary_ for word in words], dtype=bool)
        renumber = np.full(types.size, -1, dtype=np.int32)
        renumber[known] = self.vocabulary_.encode([word for word, keep in zip(words, known) if keep])
        observations = renumber[inverse.ravel()]
        kept = observations >= 0
        document = np.repeat(np.arange(X.n_sequences), np.diff(X.offsets))
        offsets = np.concatenate([[0], np.cumsum(np.bincount(document[kept], minlength=X.n_sequences))])
        return Corpus(observations[kept], offsets, vocabulary=self.vocabulary_, source=X.source)

    def transform(self, X):
        """Topic proportions (D, K) of the documents X, folded in on the fitted topics
        (`cvbayes.metrics.topics.document_topics`)."""
        return document_topics(self.components_, self._matrix(X), self.alpha_)

    def fit_transform(self, X, y=None, **fit_params):
        """``fit`` then the training documents' topic proportions."""
        self.fit(X, **fit_params)
        return self.doc_topic_ if self.doc_topic_ is not None else self.transform(X)

    def score(self, X, y=None):
        """Held-out document-completion log-likelihood of X (`cvbayes.metrics.topics.document_completion`:
        fold in on each document's first half, score its second half; a count matrix's tokens are cut
        into halves at random with seed 0, whatever the model's seed).  Not scikit-learn's bound."""
        self._check_fitted()
        documents = self._in_model_words(X) if isinstance(X, Corpus) else self._matrix(X)
        return document_completion(self.components_, documents, self.alpha_).log_likelihood

    def perplexity(self, X):
        """exp(-score / tokens scored): the held-out document-completion perplexity of X."""
        self._check_fitted()
        documents = self._in_model_words(X) if isinstance(X, Corpus) else self._matrix(X)
        return document_completion(self.components_, documents, self.alpha_).perplexity

    @property
    def topic_word_(self):
        """Each topic's word distribution (K, W): the posterior mean, MEAN of the components' counts."""
        self._check_fitted()
        return rules.dirichlet_table(MEAN, self.components_ - self.eta, self.eta)

    def top_words(self, n=10):
        """Each topic's ``n`` most probable words: lists of words with a vocabulary, else of ids."""
        ids = top_words(self.components_, n)
        if self.vocabulary_ is None:
            return ids.tolist()
        return [self.vocabulary_.decode(row) for row in ids]

    # -- files ----------------------------------------------------------------------------------------

    def _saved(self):
        meta = {"params": {name: (value.tolist() if isinstance(value, np.ndarray) else value)
                           for name, value in self.get_params().items()},
                "n_iter": int(getattr(self, "n_iter_", 0)), "n_batch_iter": int(self.n_batch_iter_),
                "vocabulary": None if self.vocabulary_ is None else self.vocabulary_.to_json()}
        arrays = {"components": self.components_, "alpha": self.alpha_}
        if getattr(self, "doc_topic_", None) is not None:
            arrays["doc_topic"] = self.doc_topic_
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        params = dict(meta["params"])
        if "seed" in params:  # files from before random_state
            params["random_state"] = params.pop("seed")
        params.pop("sparse_gibbs", None)  # files from before cgs always drew with SparseLDA's buckets
        model = cls(**params)
        model.components_ = arrays["components"]
        model.alpha_ = arrays["alpha"]
        model.n_iter_ = meta["n_iter"]
        model.steps_ = meta["n_batch_iter"]
        model.vocabulary_ = None if meta["vocabulary"] is None else Vocabulary.from_json(meta["vocabulary"])
        model.doc_topic_ = arrays.get("doc_topic")
        return model


def _initial_counts(rng, n_words, n_topics):
    """Global topic-word counts to start VB and the stochastic learners from: Gamma(100, 1/100) draws
    (Hoffman et al. 2010's start for lambda - eta), as DecayingCounts blocks."""
    topic_word = rng.gamma(100.0, 0.01, size=(n_words, n_topics))
    return {"topic_word": DecayingCounts(topic_word), "topic": DecayingCounts(topic_word.sum(axis=0))}

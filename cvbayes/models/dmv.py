"""The Dependency Model with Valence (Klein and Manning 2004) with Dirichlet priors, and its four learners.

The DMV's parameters are Dirichlet-multinomial rows (thesis §4.5.2): the root row (V,), the stop rows
(V, 2, 2) over (STOP, CONTINUE) and the attach rows (V, 2) over the V dependent types, each with a
symmetric Dirichlet(alpha) prior.  Every learner runs the same split-head inside-outside chart
(`cvbayes.trees.dmv`); they differ only in the rule that turns expected counts into the table the
chart runs on (`cvbayes.core.rules`) and in the schedule that refreshes the counts
(`cvbayes.schedules`), as for PCFGs in thesis §4.3-4.4:

=========  =====================================  =====  ==============================================
algorithm  schedule (unit)                        rule   thesis
=========  =====================================  =====  ==============================================
``em``     batch                                  MAP    eq. 4.5-4.10 (alpha <= 1 gives the MLE)
``vb``     batch                                  VB     eq. 4.12 (Kurihara and Sato 2006)
``cvi``    leave-one-out (a sentence)             MEAN   eq. 4.17-4.24
``scvi``   stochastic (a minibatch of sentences)  MEAN   eq. 3.98-3.104, with trees as the units
=========  =====================================  =====  ==============================================

``cvi-sharded`` is CVI on shards of sentences, each seeing the others' counts one pass stale (an
approximation, named so; `cvbayes.models.tree_shards`).

CVI keeps every sentence's local posteriors (its head marginals and no-dependent marginals, float32,
`cvbayes.trees.dmv.LocalPosteriors`); updating sentence i takes their expected counts out of the global
counts, gathers the MEAN weights of the sentence's own cells from what is left (O(n^2),
`cvbayes.trees.dmv.mean_sentence_weights`), runs inside-outside on them, and puts the new posteriors'
counts back: the surrogate parameters theta_bar of eq. 4.24.  The row totals of the root and attach rows
are kept beside the counts, so no update touches a whole row.  SCVI keeps only the global counts,
moved towards each minibatch's counts scaled to the corpus with steps (tau0 + m)^-kappa.

Every learner starts from the same counts: Klein and Manning's harmonic initialiser
(`cvbayes.trees.dmv_init`, variant `HARMONIC_VARIANT`) or random tree posteriors.  Parsing and scoring
use point tables: MAP for EM, the posterior mean (MEAN) of the counts for the others.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..checkpoints import NO_CHECKPOINT
from ..core import rules
from ..core.rules import MAP, MEAN, VB, check_prior
from ..core.statistics import DecayingCounts
from ..core.units import max_length
from ..data.corpus import Corpus
from ..data.dependencies import DependencyCorpus
from ..data.vocabulary import Vocabulary
from ..schedules import Algorithm, Minibatch, batch, leave_one_out, stochastic
from ..trees.dmv import (DMVCounts, LocalPosteriors, add_posterior_counts, add_row_totals, check_sentences,
                         dmv_batch_decode, dmv_batch_expectations, dmv_batch_log_evidence, dmv_batch_sample,
                         dmv_buffers, dmv_inside_outside, mean_sentence_weights, work_chunks)
from ..trees.dmv_init import dmv_harmonic_counts, dmv_random_counts
from .base import BayesModel
from .shards import Sharding

ALGORITHMS = {
    "em": Algorithm(batch, MAP, "sentence", "thesis eq. 4.5-4.10 (Klein and Manning 2004)"),
    "vb": Algorithm(batch, VB, "sentence", "thesis eq. 4.12"),
    "cvi": Algorithm(leave_one_out, MEAN, "sentence", "thesis eq. 4.17-4.24"),
    "scvi": Algorithm(stochastic, MEAN, "minibatch of sentences", "thesis eq. 3.98-3.104 with trees as units"),
    # CVI on shards, counts one pass stale (AD-LDA style, cvbayes.models.tree_shards)
    "cvi-sharded": Algorithm(leave_one_out, MEAN, "sentence, on shards", "thesis eq. 4.17-4.24; Newman et al. 2009"),
}

OBJECTIVES = {
    "em": "log p(x | theta) + log p(theta) (the log-likelihood when alpha <= 1)",
    "vb": "evidence lower bound: sum_i log Z_i under exp E[log theta] - KL(q(theta) || p(theta))",
    "cvi": "sum over sentences of log Z_i under theta_bar (eq. 4.24): a leave-one-sentence-out predictive",
    "scvi": "per-token log Z of the pass's minibatch sentences under the MEAN tables of the global counts",
    "cvi-sharded": "sum over sentences of log Z_i under theta_bar of the counts frozen at the start of the pass plus "
                   "the own shard's changes (cvbayes.models.tree_shards)",
}

# what fit(client=...) runs (cvbayes.models.tree_shards)
SHARDED_ALGORITHMS = ("em", "vb", "cvi-sharded")

INITS = ("harmonic", "random")
# Chosen on EWT dev (sentences of at most 10 words, UPOS, no punctuation): see
# docs/results/fig4_1_dmv/README.md, "Choosing the harmonic variant".
HARMONIC_VARIANT = "tree"
BLOCKS = ("root", "stop", "attach")
# the log weight given to an impossible event when a sentence has no tree otherwise (see DMV.parse)
LOG_FLOOR = float(np.log(np.finfo(float).tiny))
_NO_LOCAL = (np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros((0, 2)))


class Sentences(NamedTuple):
    """The training sentences: every token's type id (int32) and the sentences' offsets (int64); fit's
    shard options (`cvbayes.models.shards.Sharding`)."""

    tags: np.ndarray
    offsets: np.ndarray
    sharding: Sharding = Sharding()


def log_tables(rule, counts, alpha):
    """The log tables (root, stop, attach) of ``rule`` from DMV counts, every row along the last axis
    (`cvbayes.core.rules`: MAP eq. 4.10, VB eq. 4.12, MEAN eq. 4.24); -inf where MAP gives 0."""
    if rule == MAP:
        with np.errstate(divide="ignore"):
            return tuple(np.log(rules.dirichlet_table(MAP, block, alpha)) for block in counts)
    return tuple(rules.log_dirichlet_table(rule, block, alpha, np.maximum(block, 0.0).sum(axis=-1, keepdims=True),
                                           block.shape[-1] * alpha) for block in counts)


def gather_sentences(tags, offsets, ids):
    """The sentences ``ids`` (repeats allowed) laid end to end: (tags, offsets)."""
    ids = np.asarray(ids, dtype=np.int64)
    lengths = offsets[ids + 1] - offsets[ids]
    new_offsets = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    index = np.repeat(offsets[ids] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return np.ascontiguousarray(tags[index]), new_offsets


def raise_if_bad(bad):
    if bad >= 0:
        raise ValueError(f"sentence {bad} has no tree of positive probability under the current tables")


# -- the structures the schedules run ---------------------------------------------------------------


class BatchTrees:
    """The DMV's structure for `schedules.batch`: EM (rule MAP) and VB (rule VB) over all sentences."""

    def __init__(self, tags, offsets, alpha):
        self.tags = tags
        self.offsets = offsets
        self.alpha = alpha
        self.chunks = work_chunks(offsets)

    def tables(self, statistics, rule):
        return log_tables(rule, statistics, self.alpha)

    def expectations(self, tables):
        """The E-step (eq. 4.7-4.9), in parallel over sentences: (DMVCounts, sum_i log Z_i)."""
        root, stop, attach, log_z, bad = dmv_batch_expectations(self.tags, self.offsets, self.chunks, *tables,
                                                                *_NO_LOCAL)
        raise_if_bad(bad)
        return DMVCounts(root, stop, attach), log_z

    def penalty(self, rule, statistics, tables):
        """MAP: log p(theta) up to a constant; VB: -KL(Dir(C + alpha) || Dir(alpha)) of every row (eq. 3.11)."""
        if rule == MAP:
            return sum(rules.dirichlet_log_prior(np.exp(table), self.alpha) for table in tables)
        return -sum(rules.dirichlet_kl(block, self.alpha) for block in statistics)


@njit(cache=True)
def update_sentence(state, i):
    """CVI on sentence i (thesis eq. 4.19-4.24); returns log Z_i under theta_bar.

    Take the sentence's expected counts (from its stored local posteriors) out of the global counts and
    row totals (E[C^{\\i}]), gather the MEAN weights of its own cells from what is left
    (`mean_sentence_weights`), run inside-outside, store the new local posteriors in float32 and add the
    counts of the stored values back, so the next update of this sentence removes exactly what went in.
    """
    (tags, offsets, alpha, root, root_total, stop, attach, attach_totals, head_offsets, head_store, none_store,
     w_root, w_stop, w_attach, chart, posterior, terms, head_marginals, none_marginals) = state
    begin = offsets[i]
    n = offsets[i + 1] - begin
    if n == 0:
        return 0.0
    block = head_store[head_offsets[i]:head_offsets[i + 1]].reshape((n, n + 1))
    none = none_store[begin:begin + n]
    add_posterior_counts(tags, begin, n, block, none, -1.0, root, stop, attach)
    add_row_totals(tags, begin, n, block, -1.0, root_total, attach_totals)
    mean_sentence_weights(tags, begin, n, alpha, root, root_total, stop, attach, attach_totals,
                          w_root, w_stop, w_attach)
    log_z = dmv_inside_outside(w_root, w_stop, w_attach, n, chart, posterior, terms, head_marginals, none_marginals)
    if log_z > -np.inf:
        for m in range(n):
            for h in range(n + 1):
                block[m, h] = head_marginals[m, h]
            none[m, 0] = none_marginals[m, 0]
            none[m, 1] = none_marginals[m, 1]
    # the new statistics, or the old ones back when the pass must stop
    add_posterior_counts(tags, begin, n, block, none, 1.0, root, stop, attach)
    add_row_totals(tags, begin, n, block, 1.0, root_total, attach_totals)
    return log_z


@njit(cache=True, nogil=True)
def cvi_pass(state, order):
    """One CVI pass over the sentences in ``order``: (objective, first bad sentence or -1).  Without the
    GIL, so that the shards of one process (`tree_shards`) run it on threads at once."""
    return leave_one_out(update_sentence, state, order)


class CollapsedTrees:
    """The DMV's state for `schedules.leave_one_out` (CVI): the global counts with their root and attach
    row totals, every sentence's float32 local posteriors, and the chart's work arrays.

    Memory: 4 (sum_i n_i (n_i + 1) + 2N) bytes of local posteriors (`LocalPosteriors`).
    """

    def __init__(self, tags, offsets, alpha, counts, local, rng=None, checkpoint=NO_CHECKPOINT):
        self.counts = DMVCounts(*(np.array(block, dtype=np.float64) for block in counts))
        self.root_total = np.zeros(1)
        self.attach_totals = np.zeros(self.counts.attach.shape[:2])
        self.refresh_totals()
        self.local = local
        self.rng = rng
        self.n_sentences = offsets.shape[0] - 1
        buffers = dmv_buffers(max_length(offsets))[:8]
        self.state = (tags, offsets, float(alpha), self.counts.root, self.root_total, self.counts.stop,
                      self.counts.attach, self.attach_totals, *local, *buffers)
        checkpoint.track_arrays("cvi", {"root": self.counts.root, "stop": self.counts.stop, "attach": self.counts.attach,
                                        "root_total": self.root_total, "attach_totals": self.attach_totals,
                                        "heads": local.heads, "none": local.none})
        checkpoint.track_generator("order", rng)

    def refresh_totals(self):
        """Recompute the kept row totals from the counts (clears the rounding a pass accumulates)."""
        self.root_total[0] = self.counts.root.sum()
        self.attach_totals[:] = self.counts.attach.sum(axis=-1)

    def visit(self, order):
        """One pass over the sentences in ``order``; returns the objective."""
        objective, bad = cvi_pass(self.state, order)
        raise_if_bad(bad)
        self.refresh_totals()
        return objective

    def sweep(self, iteration):
        """One pass over the sentences in a new random order of ``rng``."""
        return self.visit(self.rng.permutation(self.n_sentences))

    def current(self):
        return self.counts

    def attributes(self):
        return {"local_memory_bytes_": self.local.heads.nbytes + self.local.none.nbytes}


class MinibatchTrees:
    """The DMV's structure for `schedules.stochastic` (SCVI): the global blocks root, stop and attach as
    `DecayingCounts`; each minibatch's E-step runs on their MEAN tables (eq. 3.98-3.100)."""

    def __init__(self, tags, offsets, alpha, counts):
        self.tags = tags
        self.offsets = offsets
        self.alpha = alpha
        self.counts = counts
        self.n_units = offsets.shape[0] - 1

    def current(self):
        return DMVCounts(*(self.counts[name].values() for name in BLOCKS))

    def minibatch(self, ids):
        tags, offsets = gather_sentences(self.tags, self.offsets, ids)
        tables = log_tables(MEAN, self.current(), self.alpha)
        root, stop, attach, log_z, bad = dmv_batch_expectations(tags, offsets, work_chunks(offsets), *tables,
                                                                *_NO_LOCAL)
        raise_if_bad(bad)
        scale = self.n_units / ids.shape[0]
        updates = [(name, slice(None), values, scale) for name, values in zip(BLOCKS, (root, stop, attach))]
        return Minibatch(updates, float(log_z), int(offsets[-1]))


# -- the estimator -----------------------------------------------------------------------------------


class DMV(BayesModel):
    """Dependency Model with Valence with symmetric Dirichlet(alpha) priors on every row (thesis §4.5.2).

    Parameters
    ----------
    alpha : float, default 1.0
        The pseudo-count of every root, stop and attach row (the thesis's alpha in {0.1, 1}).
    harmonic_variant : {"completion", "tree"}, default `HARMONIC_VARIANT`
        Which reading of Klein and Manning's harmonic initialiser ``init="harmonic"`` uses
        (`cvbayes.trees.dmv_init`).
    harmonic_constant : float, default 0
        c in the harmonic attachment weights 1 / (c + distance).
    algorithm : one of `ALGORITHMS`, default "cvi"
    n_iter : int, default 100
        Passes over the sentences.
    n_init : int, default 1
        Runs with seeds random_state, random_state + 1, ...; the one whose point tables give the training
        sentences the highest log-likelihood (`score`) is kept.  With the harmonic start EM and VB are
        deterministic, so only CVI, SCVI or init="random" gain from it.
    random_state : int, default 0
        Random posteriors (init="random"), CVI's sentence order (a new permutation every pass), SCVI's
        minibatches.
    init : {"harmonic", "random"}, default "harmonic"
        Klein and Manning's harmonic counts, or random tree posteriors (seeded).
    batch_size, kappa, tau0 : SCVI's minibatch size (sentences) and step sizes (tau0 + m)^-kappa.

    ``fit(X)`` takes a list of tag (or word) sequences (strings or integer ids), a `Corpus`, or a
    `DependencyCorpus` (`cvbayes.data.read_dependencies`; its gold heads are not used), and besides
    `BayesModel.fit`'s arguments:

    client : dask.distributed.Client, optional
        em, vb and cvi-sharded on the client's workers, each on its shard of whole sentences (saved once,
        memory-mapped): em's and vb's E-steps are those of one process up to the order of the sums;
        cvi-sharded is CVI with the other shards' counts one pass stale (`cvbayes.models.tree_shards`).
        Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in (`cvbayes.models.shards.Sharding`); n_shards
        without a client runs cvi-sharded on that many threads of this process.

    Attributes
    ----------
    counts_ : `cvbayes.trees.DMVCounts`, the expected counts of the fitted posterior (the last E-step's
        for EM and VB).
    algorithm_ : str; ``history_`` : list of `IterationRecord`, whose objective `OBJECTIVES` names.
    tagset_ : `Vocabulary` of the types, or None when fitted on integer ids; ``n_types_`` V.
    tag_column_ : "upos" or "xpos" when fitted on a `DependencyCorpus`, else None.
    punctuation_removed_ : bool, the training `DependencyCorpus` had punctuation removed.
    local_memory_bytes_ : CVI's local posteriors (0 for the others).
    shard_timings_ : on shards, a `cvbayes.models.shards.PassTiming` a pass (compute seconds per shard,
        bytes sent and returned, broadcast, reduction and scheduler overhead).
    """

    MODEL_NAME = "dmv"
    FIT_OPTIONS = ("client", "n_shards", "shard_folder")
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES

    def __init__(self, alpha=1.0, harmonic_variant=HARMONIC_VARIANT, harmonic_constant=0.0, *, algorithm="cvi",
                 n_iter=100, n_init=1, random_state=0, init="harmonic", batch_size=256, kappa=0.5, tau0=1.0):
        self._keep_params(locals())
        check_prior("alpha", alpha)
        if harmonic_variant not in ("completion", "tree"):
            raise ValueError(f"harmonic_variant must be 'completion' or 'tree', got {harmonic_variant!r}")
        if not harmonic_constant >= 0:
            raise ValueError(f"harmonic_constant must be >= 0, got {harmonic_constant}")
        self._check_learner("n_iter", "n_init", "batch_size")
        if init not in INITS:
            raise ValueError(f"unknown init {init!r}; choose one of {', '.join(INITS)}")
        if not kappa > 0 or not tau0 > 0:
            raise ValueError("kappa and tau0 must be positive")
        self.alpha = float(alpha)
        self.harmonic_constant = float(harmonic_constant)

    # -- input ------------------------------------------------------------------------------------------

    def _sentences(self, X, fitting=False):
        """(tags int32, offsets int64) of X, in the model's type ids; at fit, learn the tag set."""
        tagset = None
        if isinstance(X, DependencyCorpus):
            tags, offsets, tagset = X.tags, X.offsets, X.tagset
        elif isinstance(X, Corpus):
            if not X.is_discrete:
                raise ValueError("the DMV reads discrete sequences (tags or words), not feature vectors")
            tags, offsets, tagset = X.observations, X.offsets, X.vocabulary
        elif isinstance(X, (list, tuple)):
            sequences = [list(s) if not isinstance(s, np.ndarray) else s for s in X]
            lengths = np.array([len(s) for s in sequences], dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            flat = [symbol for s in sequences for symbol in (s.tolist() if isinstance(s, np.ndarray) else s)]
            if any(isinstance(symbol, str) for symbol in flat):
                if not all(isinstance(symbol, str) for symbol in flat):
                    raise ValueError("sentences must hold all strings (tags or words) or all integer ids")
                known = Vocabulary.from_counts(flat, unknown=False) if fitting else self.tagset_
                if known is None:
                    raise ValueError("this DMV was fitted on integer ids; pass integer ids")
                try:
                    return known.encode(flat), offsets, known
                except KeyError as error:
                    raise ValueError(f"{error.args[0]}: the model knows only {', '.join(known.symbols)}") from None
            tags = np.array(flat, dtype=np.int64) if flat else np.zeros(0, dtype=np.int32)
        else:
            raise TypeError(f"X must be a list of tag sequences, a Corpus or a DependencyCorpus, "
                            f"not {type(X).__name__}")
        tags = np.asarray(tags)
        if not fitting and self.tagset_ is not None and tagset is not None and tagset != self.tagset_:
            try:
                tags = self.tagset_.encode(tagset.decode(tags))
            except KeyError as error:
                raise ValueError(f"{error.args[0]}: the model knows only {', '.join(self.tagset_.symbols)}") from None
        n_types = None if fitting else self.n_types_
        if fitting:
            n_types = len(tagset) if tagset is not None else int(np.max(tags, initial=-1)) + 1
        tags, offsets = check_sentences(tags, offsets, n_types)
        return tags, offsets, tagset

    # -- fit's hooks ------------------------------------------------------------------------------------

    def _prepare(self, X, y=None, client=None, n_shards=None, shard_folder=None):
        """The sentences as (tags, offsets) in the type ids the model learns (the tag set of X), with fit's
        shard options."""
        sharding = Sharding.checked(self.algorithm, client, n_shards, shard_folder, SHARDED_ALGORITHMS,
                                    ("cvi-sharded",))
        tags, offsets, tagset = self._sentences(X, fitting=True)
        self.tagset_ = tagset
        self.n_types_ = len(tagset) if tagset is not None else int(np.max(tags, initial=-1)) + 1
        self.tag_column_ = X.tag_column if isinstance(X, DependencyCorpus) else None
        self.punctuation_removed_ = bool(isinstance(X, DependencyCorpus) and np.any(X.sentence_words != X.lengths))
        self.local_memory_bytes_ = 0
        return Sentences(tags, offsets, sharding)

    def _fingerprint(self, sentences):
        return sentences.tags, sentences.offsets, np.array([self.n_types_])

    def start_counts(self, tags, offsets, init, seed, local=None):
        """The counts every learner starts from (`cvbayes.trees.dmv_init`); ``local`` receives each
        sentence's local posteriors."""
        if init == "harmonic":
            return dmv_harmonic_counts(tags, offsets, self.n_types_, self.harmonic_constant, self.harmonic_variant,
                                       local)
        return dmv_random_counts(tags, offsets, self.n_types_, seed, local)

    def _batch(self, sentences, run):
        """EM (rule MAP) and VB (rule VB) (eq. 4.5-4.12); the E-step on the shards of a client with one
        (`cvbayes.models.tree_shards`), from the start counts made here."""
        tags, offsets = sentences.tags, sentences.offsets
        structure = BatchTrees(tags, offsets, self.alpha)
        if sentences.sharding.client is not None:
            from .tree_shards import dmv_batch
            structure = dmv_batch(structure, sentences.sharding, self._fingerprint(sentences))
        return structure, self.start_counts(tags, offsets, self.init, run.seed), None

    def _collapsed(self, sentences, run):
        """CVI over sentences, each pass in a new random order (eq. 4.17-4.24); cvi-sharded on shards of
        sentences (threads of this process, or a client's workers; `cvbayes.models.tree_shards`)."""
        tags, offsets = sentences.tags, sentences.offsets
        local = LocalPosteriors.empty(offsets)
        counts = self.start_counts(tags, offsets, self.init, run.seed, local)
        if run.algorithm != "cvi-sharded":
            return CollapsedTrees(tags, offsets, self.alpha, counts, local, run.rng, run.checkpoint)
        if run.checkpoint is not NO_CHECKPOINT:
            raise ValueError("algorithm 'cvi-sharded' does not take checkpoints yet (its shards' local posteriors "
                             "are not saved); fit it without checkpoint=")
        from .tree_shards import dmv_cvi
        collapsed = CollapsedTrees(tags, offsets, self.alpha, counts, local, run.rng)
        return dmv_cvi(collapsed, sentences.sharding.shards(Corpus(tags, offsets), None, self._fingerprint(sentences)),
                       run.seed)

    def _stochastic(self, sentences, run):
        """SCVI over minibatches of sentences (eq. 3.98-3.104)."""
        tags, offsets = sentences.tags, sentences.offsets
        counts = {name: DecayingCounts(block)
                  for name, block in zip(BLOCKS, self.start_counts(tags, offsets, self.init, run.seed))}
        return MinibatchTrees(tags, offsets, self.alpha, counts)

    def _set_fitted(self, counts, rule, sentences=None):
        self.counts_ = DMVCounts(*(np.array(block, dtype=np.float64) for block in counts))

    def _restart_objective(self, sentences):
        """Restarts compare the training sentences' log-likelihood under their point tables."""
        return self._log_evidence(sentences.tags, sentences.offsets).sum()

    # -- using a fitted model ---------------------------------------------------------------------------

    def log_tables(self):
        """The point log tables (root, stop, attach) that `parse` and `score` use: MAP for EM (its
        estimate), the posterior mean (MEAN) for VB, CVI and SCVI."""
        self._check_fitted()
        return log_tables(MAP if self.algorithm_ == "em" else MEAN, self.counts_, self.alpha)

    def _log_evidence(self, tags, offsets):
        return dmv_batch_log_evidence(tags, offsets, work_chunks(offsets), *self.log_tables())

    def score(self, X):
        """sum_i log p(x_i) of the sentences X under the point tables (`log_tables`); -inf if one of them
        has no tree of positive probability (possible only for EM)."""
        self._check_fitted()
        tags, offsets, _ = self._sentences(X)
        return float(self._log_evidence(tags, offsets).sum())

    def parse_heads(self, X, method="viterbi", seed=0):
        """`parse` as one flat (N,) int32 array over the tokens of X, with the (I + 1,) offsets."""
        self._check_fitted()
        if method not in ("viterbi", "sample"):
            raise ValueError(f"method must be 'viterbi' or 'sample', got {method!r}")
        tags, offsets, _ = self._sentences(X)
        tables = self.log_tables()
        heads = np.zeros(tags.size, dtype=np.int32)
        chunks = work_chunks(offsets)
        if method == "viterbi":
            log_best = np.zeros(offsets.size - 1)
            dmv_batch_decode(tags, offsets, chunks, *tables, heads, log_best)
            impossible = np.flatnonzero(log_best == -np.inf)
        else:
            impossible = np.flatnonzero(dmv_batch_log_evidence(tags, offsets, chunks, *tables) == -np.inf)
            dmv_batch_sample(int(seed), tags, offsets, chunks, *tables, heads)
        if impossible.size:
            # EM's MLE gives 0 to events the training sentences never showed: a sentence that needs one
            # is parsed with every such event given the smallest positive weight instead
            floored = tuple(np.maximum(table, LOG_FLOOR) for table in tables)
            sub_tags, sub_offsets = gather_sentences(tags, offsets, impossible)
            sub_heads = np.zeros(sub_tags.size, dtype=np.int32)
            sub_chunks = work_chunks(sub_offsets)
            if method == "viterbi":
                dmv_batch_decode(sub_tags, sub_offsets, sub_chunks, *floored, sub_heads, np.zeros(impossible.size))
            else:
                dmv_batch_sample(int(seed), sub_tags, sub_offsets, sub_chunks, *floored, sub_heads)
            index = np.repeat(offsets[impossible] - sub_offsets[:-1], np.diff(sub_offsets)) + np.arange(sub_tags.size)
            heads[index] = sub_heads
        return heads, offsets

    def parse(self, X, method="viterbi", seed=0):
        """Each sentence's dependency tree as its 1-based head array (0 = root), CoNLL-U's HEAD column.

        Parameters
        ----------
        X : as `fit`; a tag outside the fitted tag set is an error.
        method : {"viterbi", "sample"}, default "viterbi"
            The most probable projective tree under the point tables (`log_tables`), or one drawn from
            its posterior (seeded).  A sentence that no tree explains (an event EM's MLE gives
            probability 0) is parsed with such events given the smallest positive weight.
        seed : int, for ``method="sample"``.

        Returns
        -------
        list of numpy.ndarray of int32
        """
        heads, offsets = self.parse_heads(X, method, seed)
        return [heads[offsets[i]:offsets[i + 1]] for i in range(offsets.size - 1)]

    # -- files ------------------------------------------------------------------------------------------

    def _saved(self):
        meta = {"alpha": self.alpha, "harmonic_variant": self.harmonic_variant,
                "harmonic_constant": self.harmonic_constant, "n_types": self.n_types_,
                "tagset": None if self.tagset_ is None else self.tagset_.to_json(), "tag_column": self.tag_column_,
                "punctuation_removed": self.punctuation_removed_}
        return meta, dict(zip(BLOCKS, self.counts_))

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        missing = [name for name in BLOCKS if name not in arrays]
        if missing:
            raise ValueError(f"{path}: not a cvbayes model file (no {', '.join(missing)})")
        model = cls(meta["alpha"], meta["harmonic_variant"], meta["harmonic_constant"])
        model.counts_ = DMVCounts(*(arrays[name] for name in BLOCKS))
        model.n_types_ = meta["n_types"]
        model.tagset_ = None if meta["tagset"] is None else Vocabulary.from_json(meta["tagset"])
        model.tag_column_ = meta["tag_column"]
        model.punctuation_removed_ = meta["punctuation_removed"]
        model.local_memory_bytes_ = 0
        return model

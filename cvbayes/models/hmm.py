"""Finite Bayesian HMM with Dirichlet priors (thesis eq. 3.1-3.4) and its eight learners.

``HMM(n_states, algorithm=...).fit(X)`` runs EM, VB, CVI-1, CVI-2, CVI-3, collapsed Gibbs sampling, or
the stochastic SVI and SCVI.  They share the forward-backward kernel (`cvbayes.chains`) and differ only
in the parameter rule (`cvbayes.core.rules`) and the update schedule (`cvbayes.schedules`), as thesis
§3.3-3.7 and DESIGN.md describe; `ALGORITHMS` says which is which.  The HMM is made of parts: the
transition rows (`cvbayes.families.transitions`), an emission family (`cvbayes.families`) and a tag
dictionary; the structures the schedules drive are in models/hmm_structures.py, their numba bindings
in models/hmm_kernels.py, and calls go that way only.  The fit itself is the one every model shares
(`cvbayes.models.base.BayesModel`).
"""
from __future__ import annotations

import warnings
from typing import Any, NamedTuple

from numpy.typing import ArrayLike

import numpy as np

from ..checkpoints import NO_CHECKPOINT
from ..core.rules import MAP, MEAN, VB, check_prior
from ..chains.batch import MPD, VITERBI, batch_decode, batch_log_evidence
from ..data import Vocabulary, as_corpus
from ..files import checksum
from ..families import family_from_config, make_family
from ..families.transitions import Transitions
from ..schedules import Algorithm, batch, gibbs, leave_one_out, stochastic
from ..schedules.driver import check_positive_int
from .base import BayesModel
from .hmm_shards import ShardedBatch, ShardedMinibatches, ShardedSweep, hmm_shards
from .shards import Sharding
from .hmm_structures import (BatchChains, ChainData, Minibatches, Parts, SubchainSweep, TokenSampler, TokenSweep,
                             Units)

TOKEN, SEQUENCE, SUBCHAIN = "token", "sequence", "subchain"
SHARDED = "sequence, on shards"

ALGORITHMS = {
    "em": Algorithm(batch, MAP, SEQUENCE, "Baum-Welch; thesis eq. 3.13-3.19"),
    "vb": Algorithm(batch, VB, SEQUENCE, "thesis eq. 3.20-3.22"),
    "cvi1": Algorithm(leave_one_out, MEAN, TOKEN, "thesis eq. 3.28-3.39"),
    "cvi2": Algorithm(leave_one_out, MEAN, SEQUENCE, "thesis eq. 3.44-3.50"),
    "cvi3": Algorithm(leave_one_out, MEAN, SUBCHAIN, "thesis eq. 3.56-3.82"),
    "cgs": Algorithm(gibbs, MEAN, TOKEN, "thesis eq. 3.25; Goldwater and Griffiths 2007"),
    "svi": Algorithm(stochastic, VB, SEQUENCE, "Hoffman et al. 2013; Foti et al. 2014 on subchains"),
    "scvi": Algorithm(stochastic, MEAN, SEQUENCE, "thesis eq. 3.98-3.104; SCVI-3 on subchains"),
    # CVI-2 on shards, counts one pass stale (AD-LDA style, cvbayes.models.hmm_shards)
    "cvi2-sharded": Algorithm(leave_one_out, MEAN, SHARDED, "thesis eq. 3.47-3.50; Newman et al. 2009"),
}
# the five the tagging comparisons of thesis §3.8.1-3.8.2 run by default
TAGGING_ALGORITHMS = ("em", "vb", "cvi1", "cvi2", "cgs")

# Each learner's (alpha, beta) when HMM() or `cvbayes fit` is given none, chosen on development data
# (issue 33; until then every learner had 0.1, 0.1): unsupervised PoS induction with K = 45 on UD English
# EWT's dev split (25,149 tokens, PTB tags) and Brown's development sentences (every 47th from 10,000 on:
# 20,146 tokens, 104 tags); grid alpha in {0.01, 0.1, 1, 10} x beta in {0.001, 0.01, 0.03, 0.1}, 50 passes
# from fit's default start, seeds 0 and 1; the point of lowest mean rank by M-1 and 1-1 over the two
# corpora (cvbayes/experiments/defaults.py says the rule). Run on 2026-11-27 by
# `cvbayes experiment defaults --seed 0 --seeds 2` (docs/results/defaults). EM's beta <= 1 gives the MLE.
DEFAULT_PRIORS = {"em": (10.0, 0.1), "vb": (1.0, 0.1), "cvi1": (1.0, 0.001), "cvi2": (10.0, 0.01),
                  "cgs": (10.0, 0.1), "svi": (1.0, 0.1), "scvi": (10.0, 0.01)}
# CVI-3 (CVI-2 on subchains) and CVI-2 on shards optimise CVI-2's objective: they take its values
DEFAULT_PRIORS.update({name: DEFAULT_PRIORS["cvi2"] for name in ("cvi3", "cvi2-sharded")})
# With a tag dictionary (§3.8.1) every learner keeps 0.1, 0.1: the grid ran without one, and its sparse
# betas cost `cvbayes compare` (Brown slice, d = 2) accuracy: CVI-1 0.828 against 0.853, CVI-2 0.841 against 0.854
DICTIONARY_PRIORS = (0.1, 0.1)


def default_priors(algorithm, alpha=None, beta=None, tag_dictionary=False):
    """(alpha, beta): the values given, and for those left None ``algorithm``'s `DEFAULT_PRIORS`, or
    `DICTIONARY_PRIORS` for a model with a tag dictionary."""
    chosen = DICTIONARY_PRIORS if tag_dictionary else DEFAULT_PRIORS.get(algorithm, (None, None))
    return (chosen[0] if alpha is None else alpha), (chosen[1] if beta is None else beta)


OBJECTIVES = {
    "em": "log p(x | theta) + log p(theta) up to a constant (the log-likelihood when alpha = beta = 1)",
    "vb": "evidence lower bound L^VI (eq. 3.11)",
    "cvi1": "sum over tokens of the log normaliser of update (3.33): a leave-one-token-out predictive log-likelihood",
    "cvi2": "sum over sequences of log Z under the surrogate parameters (eq. 3.47-3.48): a leave-one-sequence-out predictive log-likelihood",
    "cvi3": "sum over subchains of log Z of the guarded chain (eq. 3.71): a leave-one-subchain-out predictive log-likelihood",
    "cgs": "log p(x, z | alpha, beta) of the current sample (eq. 3.24)",
    "svi": "per-token log Z of the pass's minibatch chains under the VB tables (not a bound: no KL term)",
    "scvi": "per-token log Z of the pass's minibatch chains under the surrogate parameters (eq. 3.98)",
    "cvi2-sharded": "sum over sequences of log Z under the surrogate parameters of counts frozen at the start of the pass plus the own shard's changes (cvbayes.models.hmm_shards)",
}

# Subchain lengths when a single long sequence must be cut and none is given:
# the thesis's T in {2, 5, 10} for the stochastic learners (§3.8.4); CVI-3
# stores two K x K tables a subchain, so longer ones keep its memory near CVI-2's.
DEFAULT_SUBCHAIN = {"svi": 10, "scvi": 10, "cvi3": 50}

# init="params" draws its parameters from the stream (seed, START_STREAM), apart from the seed's other uses
START_STREAM = 15

# Goldwater and Griffiths (2007) anneal from temperature 2.0 down to 0.08, from uniform random states.
ANNEAL_START = 2.0
ANNEAL_END = 0.08
# From parameters (the default start or a dict) CGS anneals from 1.0: heating above the posterior would
# wash out the start's information, which is what T = 2 is for (leaving a uniform start), issue 15.
ANNEAL_START_FROM_PARAMETERS = 1.0


class NothingToLearnWarning(UserWarning):
    """A fit whose algorithm cannot learn from the data it was given (the command line refuses it)."""


class Counts(NamedTuple):
    """The expected counts of a fitted posterior: the start row (K,), the transitions (K, K), and
    the emission family's statistics (S, K) (families/ops.py: for categorical emissions rows w < W
    hold E[C_kw] and row W the state totals)."""

    start: np.ndarray
    trans: np.ndarray
    emissions: np.ndarray


class Training(NamedTuple):
    """What `HMM._prepare` makes of fit's input: the corpus, the Dask client and shards, and the
    subchain length the algorithm cuts the sequences into (None: whole sequences)."""

    corpus: Any
    client: Any
    n_shards: int | None
    subchain_length: int | None
    shard_folder: Any = None


class HMM(BayesModel):
    """Bayesian HMM with Dirichlet priors on the start, transition and emission rows.

    Parameters
    ----------
    n_states : int
        Number of hidden states K.
    alpha : float, optional
        Symmetric Dirichlet concentration on the start row and each transition
        row (eq. 3.1).  None (the default): the algorithm's value in
        `DEFAULT_PRIORS`, chosen on development data (with a ``tag_dictionary``,
        `DICTIONARY_PRIORS`: 0.1).
    beta : float, optional
        Symmetric Dirichlet concentration on each categorical emission row
        (eq. 3.3); None: as ``alpha``.  Ignored by the other emission families,
        whose priors are set on the family object.
    emission : {"categorical", "gaussian", "gaussian-full", "poisson"} or a family instance
        The conjugate emission family (thesis §3.7, eq. 3.96): words, diagonal or full-covariance
        Gaussians, counts; pass ``cvbayes.families.Gaussian(kappa=..., shape=...)`` (or
        ``FullGaussian``, ``Poisson``) to set its prior.
    tag_dictionary : array of shape (W, K), optional
        Nonzero where word type w may take state k (thesis §3.8.1); every
        algorithm, decoding and scoring respect it.
    algorithm : {"em", "vb", "cvi1", "cvi2", "cvi3", "cgs", "svi", "scvi", "cvi2-sharded"}
        The learner (`ALGORITHMS`); default "cvi2".
    n_iter : int
        Passes over the data (for svi and scvi, n_units / batch_size
        minibatch steps each).
    n_init : int
        Restarts (scikit-learn's name): fit ``n_init`` times from seeds
        ``random_state``, ``random_state + 1``, ... and keep the run whose last
        ``history_`` objective (``objective_name_``) is highest: EM's
        log-posterior, VB's ELBO, CVI's leave-one-out predictive
        log-likelihood, for CGS the log p(x, z) of its last sample, for
        SVI and SCVI the per-token log Z of the last pass's minibatches
        (a noisy estimate).  ``restart_objectives_`` lists every run's.
    random_state : int
        Seeds the random start (and the minibatches and samples).
    init : {"params", "local", "random"} or dict
        How the learner starts; thesis footnote 5 names the two random
        starts.  "params" (the default): random parameters, footnote 5's
        start for EM and VB, used here for every algorithm (`draw_start`):
        start and transition rows drawn from the flat Dirichlet(1), and
        emissions from the family's ``draw_start``, spread over the data by
        k-means (`cvbayes.families.kmeans`; categorical: word types
        clustered by their neighbours, each state emitting one cluster's
        words, mixed with a Dirichlet(1) row; Gaussian: the clusters' means
        and variances).  These parameters act as a given
        dict does: EM and VB run their first E-step under them, the
        collapsed learners (CVI-1/2/3) start from the local posteriors of
        one forward-backward pass under them, CGS from their max-posterior
        states, SVI and SCVI from their expected counts.  Every state
        thus starts different from the others; "local" starts average
        out over many tokens to nearly equal states, which sparse priors
        then merge (issue 15).
        "local" (alias "random", this argument's name for it before):
        footnote 5's start for CVI and CGS, which the thesis used for
        every deterministic algorithm "for absolutely fair comparisons":
        random local posteriors q(z_t | z_{t-1}) ∝ U[0, 1] (the same for
        every deterministic algorithm), uniform random states for CGS,
        and for SVI and SCVI the random global counts of eq. 3.106-3.107.
        The experiments that reproduce the thesis's protocol pass it, and
        it is what "params" means with a ``tag_dictionary``: the dictionary
        already tells the states apart, and clusters of word types would
        be given to states regardless of the tags they allow.
        A dict with ``startprob``, ``transmat`` and ``emissionprob`` (or
        ``means`` and ``covars``, or ``lambdas``) starts from those parameters.
    anneal : bool
        CGS only: temperature from 2.0 (from init="local"; 1.0 from parameters) down to 0.08,
        geometrically over the iterations (Goldwater and Griffiths 2007).
    batch_size : int
        svi, scvi: units (sequences or subchains) per minibatch, sampled
        uniformly with replacement.
    kappa, tau0 : float
        svi, scvi: step sizes rho_m = (tau0 + m)^-kappa, m = 0, 1, ...
        (the thesis: tau0 = 1, kappa in [0.5, 1)).
    subchain_length : int, optional
        svi, scvi, cvi3: cut every sequence into subchains of this many
        tokens (SCVI-3, SVI with buffering, CVI-3).  By default svi and
        scvi use whole sequences, unless the corpus is one long sequence,
        which is cut into subchains of 10 (cvi3: 50).
    buffer : int
        svi on subchains: observations padded on each side (Foti et al.).
    vanilla : bool
        svi, scvi on subchains: start every subchain from the stationary
        distribution, with no buffer and no guards (Fig. 3.17's baselines).

    ``fit(X, lengths=None, ...)`` takes a Corpus, a list of 1-D arrays, or a concatenated array with
    ``lengths`` (hmmlearn's), and besides `BayesModel.fit`'s arguments ``client``, ``n_shards`` and
    ``shard_folder``:

    client : dask.distributed.Client, optional
        em, vb, svi, scvi, cvi2-sharded: run the passes on the client's
        workers, each on its shard of whole sequences, memory-mapped
        from a file saved once (`cvbayes.models.hmm_shards`, which says
        what is exact and what is not).  Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in
        (`cvbayes.models.shards.Sharding`); n_shards without a client
        runs cvi2-sharded on that many threads of this process.

    Attributes
    ----------
    startprob_, transmat_ : fitted start row and transition matrix: the MLE/MAP
        for EM, the posterior mean (eq. 3.109) otherwise.
    emissionprob_ : (K, W) emission matrix (categorical), or ``means_`` and
        ``covars_`` (K, D) (Gaussian; (K, D, D) for gaussian-full), or ``lambdas_`` (K, D) (Poisson).  For EM with ``beta`` <= 1 (the MLE) a word
        type absent from the training data, such as the unknown word ``<unk>`` that
        new text's unseen words map to, has probability zero here; `decode`,
        `predict_proba` and the scores give such words their posterior-mean
        probability beta / (C_k + W beta) instead (eq. 3.109), so new text decodes,
        and text of training words only is decoded and scored as before.
    counts_ : `Counts`, the expected counts the estimates come from (exact for the
        collapsed and stochastic algorithms; the last E-step's for EM and VB).
    history_ : list of IterationRecord; ``objective_name_`` says what the
        objective is for the algorithm that ran.
    """

    MODEL_NAME = "hmm"
    ALGORITHMS = ALGORITHMS
    DEFAULT_SUBCHAIN = DEFAULT_SUBCHAIN
    OBJECTIVES = OBJECTIVES
    FIT_OPTIONS = ("lengths", "client", "n_shards", "shard_folder")

    def __init__(self, n_states: int, alpha: float | None = None, beta: float | None = None,
                 emission: str | object = "categorical", tag_dictionary: ArrayLike | None = None, *,
                 algorithm: str = "cvi2", n_iter: int = 50, n_init: int = 1, random_state: int = 0,
                 init: str | dict = "params", anneal: bool = True, batch_size: int = 100, kappa: float = 0.5,
                 tau0: float = 1.0, subchain_length: int | None = None, buffer: int = 10,
                 vanilla: bool = False) -> None:
        self._keep_params(locals())
        alpha, beta = default_priors(algorithm, alpha, beta, tag_dictionary is not None)
        self._check_chain_params(n_states, beta, emission)
        self.alpha = check_prior("alpha", alpha)
        if not (isinstance(init, dict) or init in ("params", "local", "random")):
            raise ValueError("init must be 'params', 'local' (or its alias 'random') or a dict of parameters")
        self.tag_dictionary = None
        if tag_dictionary is not None:
            mask = np.asarray(tag_dictionary, dtype=float)
            if mask.ndim != 2 or mask.shape[1] != self.n_states:
                raise ValueError(f"tag_dictionary must have shape (W, {self.n_states}); got {mask.shape}")
            if not self.family.discrete:
                raise ValueError("a tag dictionary needs categorical emissions")
            self.tag_dictionary = np.ascontiguousarray((mask != 0).astype(float))

    def _check_chain_params(self, n_states, beta, emission):
        """The checks every HMM's constructor shares: its states, emissions and learner's settings."""
        self._check_learner("n_iter", "n_init", "batch_size")
        if isinstance(n_states, bool) or int(n_states) != n_states or n_states < 1:
            raise ValueError(f"n_states must be a positive integer, got {n_states}")
        self.n_states = int(n_states)
        self.beta = check_prior("beta", beta)
        self.family = make_family(emission, beta)
        if isinstance(self.buffer, bool) or int(self.buffer) != self.buffer or self.buffer < 0:
            raise ValueError(f"buffer must be a non-negative integer, got {self.buffer}")
        if not 0.0 <= self.kappa <= 1.0:
            raise ValueError(f"kappa must lie in [0, 1], got {self.kappa}")
        if not self.tau0 >= 1.0:
            raise ValueError(f"tau0 must be at least 1 so that every step size is at most 1, got {self.tau0}")
        if self.subchain_length is not None:
            check_positive_int("subchain_length", self.subchain_length)

    def _parts(self, run=None):
        """The HMM's parts (models/hmm_structures.py): the finite HMM's are the same in every run."""
        mask = self.tag_dictionary if self.tag_dictionary is not None else np.zeros((0, self.n_states))
        return Parts(self.n_states, Transitions(self.n_states, self.alpha), self.family, mask)

    def transition_prior(self):
        """(a (K,), A): the pseudo-counts a_k of every start and transition row and the total A of
        their denominators (eq. 3.49: a_k = alpha, A = K alpha; the HDP-HMM's eq. 5.38)."""
        return self._parts().transitions.prior()

    # ------------------------------------------------------------ fit's hooks
    def _prepare(self, X, y=None, lengths=None, client=None, n_shards=None, shard_folder=None):
        """The training corpus checked against the model (``y``: the lengths, hmmlearn's second argument)."""
        corpus = as_corpus(X, y if lengths is None else lengths)
        if corpus.n_tokens == 0:
            raise ValueError("cannot fit on a corpus with no tokens")
        self.family.prepare(corpus, self.n_states)
        if self.tag_dictionary is not None and self.tag_dictionary.shape[0] != self.family.n_symbols:
            raise ValueError(f"tag_dictionary has {self.tag_dictionary.shape[0]} rows; "
                             f"the vocabulary has {self.family.n_symbols} symbols")
        if isinstance(self.init, dict):
            self._parts().check_params(self.init)
        how = self.ALGORITHMS[self.algorithm]
        on_shards = [name for name, way in self.ALGORITHMS.items()
                     if way.schedule in (batch, stochastic) or way.unit == SHARDED]
        Sharding.checked(self.algorithm, client, n_shards, shard_folder, on_shards,
                         [name for name in on_shards if self.ALGORITHMS[name].unit == SHARDED])
        subchain_length = self.subchain_length
        if subchain_length is None and self.algorithm in self.DEFAULT_SUBCHAIN and (
                how.unit == SUBCHAIN or corpus.n_sequences == 1):
            subchain_length = self.DEFAULT_SUBCHAIN[self.algorithm]
        if (how.schedule is leave_one_out and how.unit == SEQUENCE and corpus.n_sequences == 1
                and subchain_length is None):
            # leaving the only sequence out leaves no data to learn from; CVI-3 (thesis §3.6) cuts it into subchains
            warnings.warn(f"algorithm {self.algorithm!r} leaves one sequence out at a time, so it cannot learn from a "
                          f"corpus of a single sequence; use 'cvi3' (or 'scvi'), which cut it into subchains",
                          NothingToLearnWarning, stacklevel=4)
        self.vocabulary_ = corpus.vocabulary
        self.tagset_ = corpus.tagset
        return Training(corpus, client, n_shards, subchain_length, shard_folder)

    def _fingerprint(self, training):
        return training.corpus.observations, training.corpus.offsets

    def _shards(self, parts, training):
        """The corpus cut into shards for the client's workers (or, without one, for threads)."""
        identity = None
        if training.shard_folder is not None:
            identity = checksum(dict(zip(("observations", "offsets"), self._fingerprint(training))))
        return hmm_shards(parts, training.corpus, training.client, training.n_shards, training.shard_folder, identity)

    def _start(self, training, seed):
        """The parameters a run starts from (a dict), or None for footnote 5's random local start."""
        return self._start_of(self.init, training, seed)

    def _start_of(self, init, training, seed):
        if isinstance(init, dict):
            return self._parts().check_params(init)
        if init == "params" and self.tag_dictionary is None:
            return self.draw_start(training.corpus, seed)
        return None  # "local", or a tag dictionary, which breaks the symmetry itself (see init)

    def draw_start(self, corpus, seed):
        """The random parameters of ``init="params"`` (thesis footnote 5's random start of EM and VB):
        start and transition rows from the flat Dirichlet(1), emissions from the family's
        ``draw_start`` (k-means++ spread over the data); drawn from their own stream of ``seed``, apart
        from the minibatches and samples."""
        rng = np.random.default_rng([seed, START_STREAM])
        return {**Transitions(self.n_states, self.alpha).draw_start(rng),
                **self.family.draw_start(rng, corpus, self.n_states)}

    def _batch(self, training, run):
        """EM (rule MAP) and VB (rule VB): the E-step over every sequence (eq. 3.13-3.22), on a client's
        shards with one; from the expected counts of the random local start, or from the start's
        parameters (VB: their expected counts)."""
        parts = self._parts(run)
        structure = BatchChains(parts, ChainData(parts, training.corpus))
        if training.client is not None:
            structure = ShardedBatch(structure, self._shards(parts, training))
        start = self._start(training, run.seed)
        if start is None:
            random = structure if training.client is not None else structure.data
            return structure, random.random_counts(run.seed), None
        tables = structure.from_params(start)
        if run.how.rule == MAP:
            return structure, None, tables
        return structure, structure.expectations(tables)[0], None

    def _collapsed(self, training, run):
        """CVI over tokens (CVI-1), sequences (CVI-2), subchains (CVI-3) or shards of sequences
        (cvi2-sharded), from random local posteriors or those under the start's parameters."""
        parts = self._parts(run)
        chains = ChainData(parts, training.corpus)
        start = self._start(training, run.seed)
        tables = None if start is None else parts.tables_from_params(start, training.corpus)
        if run.how.unit == TOKEN:
            return TokenSweep(parts, chains, tables, run.seed, run.checkpoint)
        if run.how.unit == SHARDED:
            if run.checkpoint is not NO_CHECKPOINT:
                raise ValueError(f"algorithm {run.algorithm!r} does not take checkpoints yet (its shards' local "
                                 f"statistics are not saved); fit it without checkpoint=")
            shards = self._shards(parts, training)
            return ShardedSweep(parts, chains, tables, run.seed, shards)
        return SubchainSweep(parts, chains, training.subchain_length, tables, run.seed, run.checkpoint)

    def _sampler(self, training, run):
        """Collapsed Gibbs sampling (eq. 3.25), annealed geometrically down to temperature 0.08 over the
        iterations when ``anneal``: from 2.0 at footnote 5's uniform random states (Goldwater and
        Griffiths 2007), from 1.0 at the max-posterior states of the start's parameters."""
        parts = self._parts(run)
        chains = ChainData(parts, training.corpus)
        start = self._start(training, run.seed)
        if start is None:
            states, hottest = chains.random_states(run.seed), ANNEAL_START
        else:
            states, hottest = self._decode_corpus(training.corpus, "mpd", params=start), ANNEAL_START_FROM_PARAMETERS
        n_iter = run.n_iter
        temperatures = np.geomspace(hottest, ANNEAL_END, n_iter) if self.anneal and n_iter > 1 else np.ones(n_iter)
        return TokenSampler(parts, chains, states, temperatures, run.checkpoint)

    def _stochastic(self, training, run):
        """SVI (rule VB) and SCVI (rule MEAN) on minibatches of sequences or subchains (eq. 3.98-3.104),
        each minibatch's forward-backward on a client's shards with one; from the random global counts
        of eq. 3.106-3.107 or the expected counts under the start's parameters."""
        parts = self._parts(run)
        corpus = training.corpus
        units = Units(np.ascontiguousarray(corpus.offsets, dtype=np.int64), training.subchain_length)
        if training.client is None:
            structure = Minibatches(parts, corpus, run.how.rule, units, self.buffer, self.vanilla)
        else:
            shards = self._shards(parts, training)
            structure = ShardedMinibatches(parts, corpus, run.how.rule, units, self.buffer, self.vanilla, shards)
        structure.track(run.checkpoint)
        start = self._start(training, run.seed)
        if start is None:
            counts = structure.random_counts(run.rng)
        else:
            given = BatchChains(parts, ChainData(parts, corpus))
            if training.client is not None:
                given = ShardedBatch(given, shards)
            counts = given.expectations(given.from_params(start))[0]
        structure.start(*counts)
        return structure

    def _set_fitted(self, counts, rule, training=None):
        """Store the counts and the point estimates of the fitted model: MAP for EM, the
        posterior mean (eq. 3.109) otherwise."""
        self.counts_ = Counts(*counts)
        self._point_rule = MAP if rule == MAP else MEAN
        self.startprob_, self.transmat_ = self._parts().transitions.tables(self.counts_.start, self.counts_.trans,
                                                                           self._point_rule)
        for name, value in self.family.fitted(self.counts_.emissions, self._point_rule).items():
            setattr(self, name, value)

    # ------------------------------------------------------------ save/load
    def _saved(self):
        """The archive keeps the expected counts, so `load` restores the exact posterior, plus the
        priors, the tag dictionary, the vocabulary and tag set of the training corpus."""
        start_counts, trans_counts, stats = self.counts_
        meta = {"n_states": self.n_states, "alpha": self.alpha, "beta": self.beta, "family": self.family.config(),
                "point_rule": "map" if self._point_rule == MAP else "predictive",
                "vocabulary": None if self.vocabulary_ is None else self.vocabulary_.to_json(),
                "tagset": None if self.tagset_ is None else self.tagset_.to_json()}
        arrays = {"start_counts": start_counts, "trans_counts": trans_counts, "stats": stats}
        if self.tag_dictionary is not None:
            arrays["tag_dictionary"] = self.tag_dictionary
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        model = cls._from_config(meta, arrays, family_from_config(meta["family"]))
        model.vocabulary_ = None if meta["vocabulary"] is None else Vocabulary.from_json(meta["vocabulary"])
        model.tagset_ = None if meta["tagset"] is None else Vocabulary.from_json(meta["tagset"])
        rule = MAP if meta["point_rule"] == "map" else MEAN
        model._set_fitted((arrays["start_counts"], arrays["trans_counts"], arrays["stats"]), rule)
        return model

    @classmethod
    def _from_config(cls, meta, arrays, family):
        """The unfitted model a file describes."""
        return cls(meta["n_states"], meta["alpha"], meta["beta"], emission=family,
                   tag_dictionary=arrays.get("tag_dictionary"))

    # ----------------------------------------------------------- parameters
    def _fitted_params(self):
        self._check_fitted()
        start_counts, trans_counts, stats = self.counts_
        startprob, transmat = self._parts().transitions.tables(start_counts, trans_counts, self._point_rule)
        if self._point_rule == MAP:
            params = self.family.map_params(stats)
            if self.family.discrete:
                params["emissionprob"] = self._unseen_words_at_their_mean(params["emissionprob"], stats)
            return {"startprob": startprob, "transmat": transmat, **params}
        return {"startprob": startprob, "transmat": transmat, "stats": stats}

    def _unseen_words_at_their_mean(self, emissionprob, stats):
        """EM's (K, W) emission rows with every word type of zero training count (``<unk>`` and any other
        type of the vocabulary absent from the training data) at its posterior-mean probability
        beta / (C_k + W beta) (eq. 3.109), where the MAP (with beta <= 1 the MLE, eq. 3.19) gives zero and
        decoding new text would fail.  Training words keep their MAP probabilities, so a row sums to
        slightly more than one when some type is unseen."""
        unseen = stats[:-1].sum(axis=1) == 0
        if not unseen.any():
            return emissionprob
        smoothed = emissionprob.copy()
        smoothed[:, unseen] = self.family.fitted(stats, MEAN)["emissionprob_"][:, unseen]
        return smoothed

    def tables_from_params(self, params, corpus):
        """(start, trans, emission table, its row log offsets) for the kernels: given parameters,
        or (with "stats") the posterior mean of the fitted counts."""
        return self._parts().tables_from_params(params, corpus)

    # ------------------------------------------------------ decode and score
    def _prepare_input(self, X, lengths):
        """The input as a Corpus in the model's ids: a Corpus read with another vocabulary is mapped
        through the model's (unseen words to its unknown id); raw ids are checked against W."""
        corpus = as_corpus(X, lengths)
        self._check_fitted()
        if corpus.vocabulary is not None and getattr(self, "vocabulary_", None) is not None:
            corpus = corpus.recoded(self.vocabulary_)
        self.family.check(corpus)
        return corpus

    def _decode_corpus(self, corpus, method, params=None, keep_posteriors=False):
        data = ChainData(self._parts(), corpus)
        start, trans, table, offset = self.tables_from_params(params or self._fitted_params(), corpus)
        states = np.zeros(corpus.n_tokens, dtype=np.int32)
        posteriors = np.zeros((corpus.n_tokens if keep_posteriors else 0, self.n_states))
        code = {"mpd": MPD, "viterbi": VITERBI}[method]
        bad = batch_decode(start, trans, table, offset, data.mask, data.index, data.offsets,
                           data.chunks, code, states, posteriors)
        data.raise_if_bad(bad)
        return (states, posteriors) if keep_posteriors else states

    def decode(self, X: Any, lengths: ArrayLike | None = None, method: str = "mpd",
               algorithm: str | None = None) -> Any:
        """Most likely states: max posterior marginals ("mpd", the default, eq. 3.16) or
        the Viterbi path ("viterbi").

        Returns states in the input's layout: one flat array for a Corpus or a
        concatenated array, a list of arrays for a list of sequences.

        With ``algorithm="viterbi"`` or ``"map"`` (hmmlearn's names and return value) it returns
        ``(log_prob, states)`` instead: for "viterbi" log p(x, z*) of the Viterbi paths under the
        fitted point estimates, for "map" (max posterior marginals) the sum over tokens of
        log max_k q(z_t = k) (hmmlearn sums the marginals themselves).  hmmlearn's ``decode(X)``
        means Viterbi and returns the pair; here ``decode(X)`` without ``algorithm`` returns the
        states alone, as in every earlier release: write ``decode(X, algorithm="viterbi")`` for
        hmmlearn's call.
        """
        if algorithm is not None:
            if algorithm not in ("viterbi", "map"):
                raise ValueError("algorithm must be 'viterbi' or 'map'")
            corpus = self._prepare_input(X, lengths)
            if algorithm == "viterbi":
                states = self._decode_corpus(corpus, "viterbi")
                return self._path_log_prob(corpus, states), _like_input(X, corpus, states)
            states, posteriors = self._decode_corpus(corpus, "mpd", keep_posteriors=True)
            log_prob = float(np.log(posteriors[np.arange(corpus.n_tokens), states]).sum())
            return log_prob, _like_input(X, corpus, states)
        if method not in ("mpd", "viterbi"):
            raise ValueError("method must be 'mpd' or 'viterbi'")
        corpus = self._prepare_input(X, lengths)
        return _like_input(X, corpus, self._decode_corpus(corpus, method))

    def predict(self, X: Any, lengths: ArrayLike | None = None) -> Any:
        """States by max posterior marginals (scikit-learn's name; `decode` with its default method)."""
        return self.decode(X, lengths)

    def _path_log_prob(self, corpus, states):
        """log p(x, z) of given state paths under the fitted point estimates (eq. 3.1-3.4): start,
        transition and emission log-probabilities summed over tokens, in vectorised NumPy."""
        data = ChainData(self._parts(), corpus)
        start, trans, table, log_offset = self.tables_from_params(self._fitted_params(), corpus)
        rows = data.index
        emission = table[rows, states] * (data.mask[rows, states] if data.mask.shape[0] else 1.0)
        firsts = data.offsets[:-1][np.diff(data.offsets) > 0]
        inner = np.ones(corpus.n_tokens, dtype=bool)
        inner[firsts] = False
        following = np.flatnonzero(inner)
        with np.errstate(divide="ignore"):
            return float(np.log(emission).sum() + log_offset[rows].sum() + np.log(start[states[firsts]]).sum()
                         + np.log(trans[states[following - 1], states[following]]).sum())

    def predict_proba(self, X: Any, lengths: ArrayLike | None = None) -> Any:
        """Posterior marginals q(z_t) under the fitted point estimates, (N, K)."""
        corpus = self._prepare_input(X, lengths)
        _, posteriors = self._decode_corpus(corpus, "mpd", keep_posteriors=True)
        return _like_input(X, corpus, posteriors)

    def score_samples(self, X: Any, lengths: ArrayLike | None = None) -> tuple[float, Any]:
        """(`score`, `predict_proba`): hmmlearn's pair of the total log-likelihood and the posteriors."""
        return self.score(X, lengths), self.predict_proba(X, lengths)

    def sample(self, n_samples: int = 1, random_state: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One sequence of ``n_samples`` tokens drawn from the fitted point estimates, and its states
        (hmmlearn's ``(X, Z)``): word ids (categorical), (n_samples, D) features (Gaussian) or counts (Poisson)."""
        if int(n_samples) != n_samples or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples}")
        self._fitted_params()
        seed = np.random.default_rng().integers(2**63) if random_state is None else int(random_state)
        drawn = self.family.sample_hmm(self.startprob_, self.transmat_,
                                       self.family.fitted(self.counts_.emissions, self._point_rule), [n_samples], seed)
        return drawn.observations, drawn.gold

    def score_sequences(self, X: Any, lengths: ArrayLike | None = None) -> np.ndarray:
        """log p(x^i) of every sequence under the fitted predictive parameters (eq. 3.108-3.109)."""
        corpus = self._prepare_input(X, lengths)
        data = ChainData(self._parts(), corpus)
        start, trans, table, offset = self.tables_from_params(self._fitted_params(), corpus)
        return batch_log_evidence(start, trans, table, offset, data.mask, data.index, data.offsets, data.chunks)

    def score(self, X: Any, lengths: ArrayLike | None = None) -> float:
        """Total predictive log-likelihood of held-out sequences (numerator of eq. 3.108).

        Divide by the number of tokens for the thesis's per-word figure;
        ``score_per_token`` does that.
        """
        return float(self.score_sequences(X, lengths).sum())

    def score_per_token(self, X: Any, lengths: ArrayLike | None = None) -> float:
        """Per-word predictive log-likelihood, eq. 3.108."""
        corpus = as_corpus(X, lengths)
        return self.score(corpus) / max(corpus.n_tokens, 1)


def _like_input(X, corpus, values):
    """Return per-token values in the layout the caller gave: list in, list out."""
    if isinstance(X, (list, tuple)):
        return corpus.split_like(values)
    return values

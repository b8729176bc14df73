"""Finite Bayesian HMM with Dirichlet priors (thesis eq. 3.1-3.4) and its eight learners.

``HMM.fit(X, algorithm=...)`` runs EM, VB, CVI-1, CVI-2, CVI-3, collapsed Gibbs sampling, or the
stochastic SVI and SCVI.  They share the forward-backward kernel (`cvbayes.chains`) and differ only
in the parameter rule (`cvbayes.core.rules`) and the update schedule (`cvbayes.schedules`), as
thesis §3.3-3.7 and DESIGN.md describe; `ALGORITHMS` says which is which.  The HMM's part of each
schedule, its numba bindings, is in models/hmm_kernels.py, the structures the schedules drive in
models/hmm_structures.py.
"""
from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from numpy.typing import ArrayLike

import numpy as np

from ..checkpoints import open_checkpoint, run_identity
from ..core import rules
from ..core.rules import MAP, MEAN, VB
from ..core.sampling import seed_numba
from ..chains.batch import MPD, VITERBI, batch_decode, batch_log_evidence
from ..data import Vocabulary, as_corpus
from ..families import family_from_config, make_family
from ..families.ops import state_stats
from ..synthetic import sample_categorical_hmm, sample_gaussian_hmm
from ..schedules import IterationRecord, Progress, batch, gibbs, leave_one_out, passes, stochastic
from .hmm_kernels import (NO_OCCUPANCY, factorised_transitions, no_occupancy, gibbs_pass, hard_transitions, independent_boundaries,
                          subchain_pass, subchain_state, subchain_workspace, token_pass, token_state, token_workspace,
                          unit_totals)
from .files import read_model, write_model
from .hmm_structures import BatchChains, ChainData, Minibatches, Units
from .hmm_shards import ShardedBatch, ShardedMinibatches, ShardedSweep, Shards


class Algorithm(NamedTuple):
    """How an ``algorithm=`` name runs: the schedule of `cvbayes.schedules` that refreshes the
    statistics, the unit it updates, and the rule of `cvbayes.core.rules` its tables follow."""

    schedule: object
    unit: str
    rule: str


TOKEN, SEQUENCE, SUBCHAIN = "token", "sequence", "subchain"

ALGORITHMS = {
    "em": Algorithm(batch, SEQUENCE, MAP),               # Baum-Welch, eq. 3.13-3.19
    "vb": Algorithm(batch, SEQUENCE, VB),                # eq. 3.20-3.22
    "cvi1": Algorithm(leave_one_out, TOKEN, MEAN),       # eq. 3.28-3.39
    "cvi2": Algorithm(leave_one_out, SEQUENCE, MEAN),    # eq. 3.44-3.50
    "cvi3": Algorithm(leave_one_out, SUBCHAIN, MEAN),    # eq. 3.56-3.82
    "cgs": Algorithm(gibbs, TOKEN, MEAN),                # eq. 3.25
    "svi": Algorithm(stochastic, SEQUENCE, VB),          # Hoffman et al. 2013; Foti et al. 2014 on subchains
    "scvi": Algorithm(stochastic, SEQUENCE, MEAN),       # eq. 3.98-3.104; SCVI-3 on subchains
    "cvi2-sharded": Algorithm(ShardedSweep, SEQUENCE, MEAN),  # CVI-2 on shards, counts one pass stale (AD-LDA style)
}
# the five the tagging comparisons of thesis §3.8.1-3.8.2 run by default
TAGGING_ALGORITHMS = ("em", "vb", "cvi1", "cvi2", "cgs")

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

SAVE_FORMAT = "cvbayes-hmm-1"

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


class HMM:
    """Bayesian HMM with Dirichlet priors on the start, transition and emission rows.

    Parameters
    ----------
    n_states : int
        Number of hidden states K.
    alpha : float
        Symmetric Dirichlet concentration on the start row and each transition
        row (eq. 3.1).
    beta : float
        Symmetric Dirichlet concentration on each categorical emission row
        (eq. 3.3).  Ignored for Gaussian emissions, whose Normal-Gamma prior is
        set on the family object.
    emission : {"categorical", "gaussian"} or a family instance
        The conjugate emission family (thesis §3.7); pass
        ``cvbayes.families.Gaussian(kappa=..., shape=...)`` to set its prior.
    tag_dictionary : array of shape (W, K), optional
        Nonzero where word type w may take state k (thesis §3.8.1); every
        algorithm, decoding and scoring respect it.

    Attributes
    ----------
    startprob_, transmat_ : fitted start row and transition matrix: the MLE/MAP
        for EM, the posterior mean (eq. 3.109) otherwise.
    emissionprob_ : (K, W) emission matrix (categorical), or ``means_`` and
        ``covars_`` (K, D) (Gaussian).  For EM with ``beta`` <= 1 (the MLE) a word
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

    def __init__(self, n_states: int, alpha: float = 0.1, beta: float = 0.1,
                 emission: str | object = "categorical", tag_dictionary: ArrayLike | None = None) -> None:
        # the arguments as given, for get_params (sklearn.base.clone checks they come back unchanged)
        self._params = {"n_states": n_states, "alpha": alpha, "beta": beta, "emission": emission,
                        "tag_dictionary": tag_dictionary}
        if int(n_states) != n_states or n_states < 1:
            raise ValueError(f"n_states must be a positive integer, got {n_states}")
        if not alpha > 0 or not beta > 0:
            raise ValueError("alpha and beta must be positive")
        self.n_states = int(n_states)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.family = make_family(emission, beta)
        self.tag_dictionary = None
        if tag_dictionary is not None:
            mask = np.asarray(tag_dictionary, dtype=float)
            if mask.ndim != 2 or mask.shape[1] != self.n_states:
                raise ValueError(f"tag_dictionary must have shape (W, {self.n_states}); got {mask.shape}")
            if not self.family.discrete:
                raise ValueError("a tag dictionary needs categorical emissions")
            self.tag_dictionary = np.ascontiguousarray((mask != 0).astype(float))
        self.history_ = []

    # ------------------------------------------------- scikit-learn's estimator interface
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments as given (scikit-learn's convention, so that
        ``sklearn.base.clone`` works); ``deep`` is accepted for that interface and changes nothing."""
        return dict(self._params)

    def set_params(self, **params: Any) -> HMM:
        """Set constructor arguments (scikit-learn's convention); the model must be fitted again."""
        unknown = set(params) - set(self._params)
        if unknown:
            raise ValueError(f"unknown parameters {', '.join(sorted(unknown))} for {type(self).__name__}; "
                             f"valid: {', '.join(self._params)}")
        self.__init__(**{**self._params, **params})
        return self

    def fit(self, X: Any, lengths: ArrayLike | None = None, algorithm: str = "cvi2", n_iter: int = 50,
            seed: int = 0, init: str | dict = "params", anneal: bool = True, progress: bool = False,
            callback: Callable | None = None, batch_size: int = 100, kappa: float = 0.5, tau0: float = 1.0,
            subchain_length: int | None = None, buffer: int = 10, vanilla: bool = False,
            callback_every: int | None = None, n_init: int = 1,
            checkpoint: str | os.PathLike[str] | None = None, checkpoint_every: int = 1,
            client: Any = None, n_shards: int | None = None) -> HMM:
        """Learn from sequences.

        Parameters
        ----------
        X : Corpus, list of 1-D arrays, or concatenated array with ``lengths``
        algorithm : {"em", "vb", "cvi1", "cvi2", "cvi3", "cgs", "svi", "scvi"}
        n_iter : int
            Passes over the data (for svi and scvi, n_units / batch_size
            minibatch steps each).
        seed : int
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
            ``means`` and ``covars``) starts from those parameters.
        n_init : int
            Restarts (scikit-learn's name): fit ``n_init`` times from seeds
            ``seed``, ``seed + 1``, ..., ``seed + n_init - 1`` (so the first
            restart is the plain fit of ``seed``) and keep the run whose last
            ``history_`` objective (``objective_name_``) is highest: EM's
            log-posterior, VB's ELBO, CVI's leave-one-out predictive
            log-likelihood, for CGS the log p(x, z) of its last sample, for
            SVI and SCVI the per-token log Z of the last pass's minibatches
            (a noisy estimate).  ``restart_objectives_`` lists every run's;
            the callback sees every run.
        anneal : bool
            CGS only: temperature from 2.0 (from init="local"; 1.0 from parameters) down to 0.08, geometrically over
            the iterations (Goldwater and Griffiths 2007).
        progress : bool
            Show a progress bar.
        callback : callable, optional
            ``callback(model, iteration)`` after every iteration, with the
            model's fitted attributes set to the current estimates, so that
            ``decode`` and ``score`` work inside it (accuracy-against-iteration
            curves, Fig. 3.11).  Its time is not counted in ``history_``;
            ``model.train_seconds_`` holds the training time so far.
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
        callback_every : int, optional
            svi, scvi: call ``callback`` every this many minibatch steps
            instead of after every pass.
        checkpoint : path, optional
            Save the run's state to this file every ``checkpoint_every``
            passes (passes over the data for svi and scvi too) and after the
            last; the same call again resumes from it and ends bit for bit as
            an uninterrupted run (`cvbayes.checkpoints`; another run's
            checkpoint is refused).  The finished fit leaves it marked
            complete: the same call then restores the model without training.
            Not with ``n_init`` > 1.
        checkpoint_every : int
            Passes between checkpoints (default 1).
        client : dask.distributed.Client, optional
            em, vb, svi, scvi, cvi2-sharded: run the passes on the client's
            workers, each on its shard of whole sequences, memory-mapped
            from a file saved once (`cvbayes.models.hmm_shards`, which says
            what is exact and what is not).  Needs ``cvbayes[distributed]``.
        n_shards : int, optional
            Shards of the corpus with a client (default one per worker), and
            for cvi2-sharded without one (default numba's thread count; the
            shards then run on threads of this process).
        """
        if algorithm not in self.ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(self.ALGORITHMS)}")
        if int(n_iter) != n_iter or n_iter < 1:
            raise ValueError(f"n_iter must be a positive integer, got {n_iter}")
        if int(n_init) != n_init or n_init < 1:
            raise ValueError(f"n_init must be a positive integer, got {n_init}")
        if n_init > 1 and checkpoint is not None:
            raise ValueError("checkpoint resumes one run: use n_init=1 with it")
        if n_init > 1:
            return self._best_of_restarts(
                as_corpus(X, lengths), int(n_init), algorithm=algorithm, n_iter=n_iter, seed=seed, init=init,
                anneal=anneal, progress=progress, callback=callback, batch_size=batch_size, kappa=kappa, tau0=tau0,
                subchain_length=subchain_length, buffer=buffer, vanilla=vanilla, callback_every=callback_every,
                client=client, n_shards=n_shards)
        corpus = as_corpus(X, lengths)
        if corpus.n_tokens == 0:
            raise ValueError("cannot fit on a corpus with no tokens")
        self.family.prepare(corpus, self.n_states)
        if self.tag_dictionary is not None and self.tag_dictionary.shape[0] != self.family.n_symbols:
            raise ValueError(f"tag_dictionary has {self.tag_dictionary.shape[0]} rows; "
                             f"the vocabulary has {self.family.n_symbols} symbols")
        if isinstance(init, dict):
            self.check_params(init)
        elif init == "params" and self.tag_dictionary is None:
            init = self.draw_start(corpus, int(seed))
        elif init == "params":
            init = "local"  # a tag dictionary breaks the symmetry itself (see the docstring)
        elif init not in ("local", "random"):
            raise ValueError("init must be 'params', 'local' (or its alias 'random') or a dict of parameters")
        options = self._check_options(algorithm, corpus, batch_size, kappa, tau0, subchain_length, buffer,
                                      vanilla, callback_every)
        how = self.ALGORITHMS[algorithm]
        if (how.schedule is leave_one_out and how.unit == SEQUENCE and corpus.n_sequences == 1
                and options["subchain_length"] is None):
            # leaving the only sequence out leaves no data to learn from; CVI-3 (thesis §3.6) cuts it into subchains
            warnings.warn(f"algorithm {algorithm!r} leaves one sequence out at a time, so it cannot learn from a "
                          f"corpus of a single sequence; use 'cvi3' (or 'scvi'), which cut it into subchains",
                          NothingToLearnWarning, stacklevel=2)
        self.algorithm_ = algorithm
        self.objective_name_ = self.OBJECTIVES[algorithm]
        self.history_ = []
        self.vocabulary_ = corpus.vocabulary
        self.tagset_ = corpus.tagset
        self._callback = callback
        if how.schedule not in ((batch, stochastic, ShardedSweep) if client is not None else (ShardedSweep,)) and (
                client is not None or n_shards is not None):
            raise ValueError(f"algorithm {algorithm!r} does not run on shards; client= takes em, vb, svi, scvi or "
                             f"cvi2-sharded, and n_shards= without a client only cvi2-sharded")
        run = {batch: self._run_batch, leave_one_out: self._run_leave_one_out, gibbs: self._run_gibbs,
               stochastic: self._run_stochastic, ShardedSweep: self._run_sharded}[how.schedule]
        self._checkpoint = self._open_checkpoint(checkpoint, checkpoint_every, corpus, algorithm, n_iter, seed,
                                                 init, anneal, options)
        run(ChainData(self, corpus), how, int(n_iter), int(seed), init, progress, anneal=anneal, client=client,
            n_shards=n_shards, **options)
        # the checkpoint's closures hold the run's local statistics: not kept with the fitted model
        self.resumed_from_ = self.__dict__.pop("_checkpoint").resumed_from
        return self

    def draw_start(self, corpus, seed):
        """The random parameters of ``fit(init="params")`` (thesis footnote 5's random start of EM and
        VB): start and transition rows from the flat Dirichlet(1), emissions from the family's
        ``draw_start`` (k-means++ spread over the data); drawn from their own stream of ``seed``, apart
        from the minibatches and samples."""
        rng = np.random.default_rng([seed, START_STREAM])
        k = self.n_states
        return {"startprob": rng.dirichlet(np.ones(k)), "transmat": rng.dirichlet(np.ones(k), size=k),
                **self.family.draw_start(rng, corpus, k)}

    def _best_of_restarts(self, corpus, n_init, seed, **options):
        """``fit(n_init=R)``: R fits of copies of this model from seeds seed, ..., seed + R - 1; this
        model becomes the one whose last objective is highest (the first on ties)."""
        best, best_objective, objectives = None, -np.inf, []
        for restart in range(n_init):
            candidate = copy.deepcopy(self)
            # the subclass's own fit, so that an HDP-HMM resets its sticks for every run
            candidate.fit(corpus, seed=int(seed) + restart, n_init=1, **options)
            objective = float(candidate.history_[-1].objective)
            objectives.append(objective)
            if best is None or np.nan_to_num(objective, nan=-np.inf) > best_objective:
                best, best_objective = candidate, np.nan_to_num(objective, nan=-np.inf)
        self.__dict__.update(best.__dict__)
        self.restart_objectives_ = objectives
        return self

    def _open_checkpoint(self, path, every, corpus, algorithm, n_iter, seed, init, anneal, options):
        """The fit's `checkpoints.Checkpoint` (NO_CHECKPOINT without a path), identified by the model's
        parameters, the fit's arguments and a fingerprint of the corpus."""
        if path is not None and type(self) is not HMM:
            raise ValueError(f"{type(self).__name__} does not take checkpoints yet (its hyperparameter state "
                             f"is not saved); fit without checkpoint=")
        if path is not None and self.ALGORITHMS[algorithm].schedule not in (batch, leave_one_out, gibbs, stochastic):
            raise ValueError(f"algorithm {algorithm!r} does not take checkpoints yet (its shards' local statistics "
                             f"are not saved); fit it without checkpoint=")
        run = run_identity(self.MODEL_NAME, algorithm, n_iter, int(seed), (corpus.observations, corpus.offsets),
                           params={**self._params, "emission": self.family}, init=init, anneal=bool(anneal),
                           options={k: v for k, v in options.items() if k != "callback_every"})
        return open_checkpoint(path, every, run)

    def _check_options(self, algorithm, corpus, batch_size, kappa, tau0, subchain_length, buffer, vanilla,
                       callback_every):
        """Validate the stochastic and subchain options; fill in the subchain default."""
        for name, value in (("batch_size", batch_size), ("buffer", buffer)):
            if int(value) != value or value < (1 if name == "batch_size" else 0):
                raise ValueError(f"{name} must be a {'positive' if name == 'batch_size' else 'non-negative'} "
                                 f"integer, got {value}")
        if not 0.0 <= kappa <= 1.0:
            raise ValueError(f"kappa must lie in [0, 1], got {kappa}")
        if not tau0 >= 1.0:
            raise ValueError(f"tau0 must be at least 1 so that every step size is at most 1, got {tau0}")
        if subchain_length is not None and (int(subchain_length) != subchain_length or subchain_length < 1):
            raise ValueError(f"subchain_length must be a positive integer, got {subchain_length}")
        if callback_every is not None and (int(callback_every) != callback_every or callback_every < 1):
            raise ValueError(f"callback_every must be a positive integer, got {callback_every}")
        if subchain_length is None and algorithm in self.DEFAULT_SUBCHAIN and (
                self.ALGORITHMS[algorithm].unit == SUBCHAIN or corpus.n_sequences == 1):
            subchain_length = self.DEFAULT_SUBCHAIN[algorithm]
        return {"batch_size": int(batch_size), "kappa": float(kappa), "tau0": float(tau0),
                "subchain_length": None if subchain_length is None else int(subchain_length),
                "buffer": int(buffer), "vanilla": bool(vanilla), "callback_every": callback_every}

    # ------------------------------------------------------- the estimates
    def transition_prior(self):
        """(a (K,), A): the pseudo-counts a_k of every start and transition row and
        the total A of their denominators (eq. 3.49: a_k = alpha, A = K alpha)."""
        return np.full(self.n_states, self.alpha), self.n_states * self.alpha

    def transition_tables(self, start_counts, trans_counts, rule, total=None):
        """The start row and transition matrix of ``rule`` (core.rules) from counts; ``total``
        replaces the prior total sum_k a_k of the denominators (the HDP's sigma)."""
        prior_row = self.transition_prior()[0]
        return (rules.dirichlet_table(rule, start_counts[None], prior_row, total)[0],
                rules.dirichlet_table(rule, trans_counts, prior_row, total))

    def _set_fitted(self, counts, rule):
        """Store the counts and the point estimates of the fitted model: MAP for EM, the
        posterior mean (eq. 3.109) otherwise."""
        self.counts_ = Counts(*counts)
        self._point_rule = MAP if rule == MAP else MEAN
        self.startprob_, self.transmat_ = self.transition_tables(self.counts_.start, self.counts_.trans,
                                                                 self._point_rule)
        for name, value in self.family.fitted(self.counts_.emissions, self._point_rule).items():
            setattr(self, name, value)

    def _progress(self, progress, total, unit="it"):
        """The fit's `Progress`, whose history is ``history_``."""
        bar = Progress(total, self.algorithm_, progress, unit=unit)
        self.history_ = bar.history
        return bar

    def _call_back(self, step, counts, train_seconds, rule=MEAN):
        """Hand the estimates of ``counts`` to the user's callback (its time is not training time)."""
        if self._callback is not None:
            self.train_seconds_ = train_seconds
            self._set_fitted(counts, rule)
            self._callback(self, step)

    def _recorder(self, bar, counts_now):
        """record(iteration, objective, seconds) for `schedules.passes`: the history entry, then the
        user's callback with the estimates of ``counts_now()``."""
        def record(iteration, objective, seconds):
            bar.record(iteration, objective, seconds)
            self._call_back(iteration, counts_now(), bar.train_seconds)
        return record

    # ------------------------------------------------------ the schedules
    def _run_batch(self, data, how, n_iter, seed, init, progress, client=None, n_shards=None, **options):
        """EM (rule MAP) and VB (rule VB) on `schedules.batch` (eq. 3.13-3.22)."""
        structure = BatchChains(self, data)
        if client is not None:  # the E-step summed over shards on Dask workers (cvbayes.models.hmm_shards)
            structure = ShardedBatch(structure, Shards(self, data.corpus, client, n_shards))
        statistics = tables = None
        if isinstance(init, dict):
            tables = structure.from_params(self.check_params(init))
            if how.rule != MAP:  # VB's first tables come from the counts under the given parameters
                statistics, tables = structure.expectations(tables)[0], None
        else:
            statistics = (data if client is None else structure).random_counts(seed)
        with self._progress(progress, n_iter) as bar:
            def record(iteration, objective, counts, seconds):
                bar.record(iteration, objective, seconds)
                self._call_back(iteration, counts, bar.train_seconds, how.rule)

            self._checkpoint.track_progress(bar)
            statistics = batch(structure, how.rule, n_iter, record, statistics, tables, checkpoint=self._checkpoint)
        self._set_fitted(statistics, how.rule)

    def _run_leave_one_out(self, data, how, n_iter, seed, init, progress, subchain_length, **options):
        """CVI on `schedules.leave_one_out`: over tokens (CVI-1), sequences (CVI-2) or subchains
        (CVI-3), on MEAN tables of every other unit's counts."""
        if how.unit == TOKEN:
            sweep, counts_now = self._token_sweep(data, init, seed)
        else:
            sweep, counts_now = self._subchain_sweep(data, init, seed, subchain_length)
        with self._progress(progress, n_iter) as bar:
            self._checkpoint.track_progress(bar)
            passes(sweep, n_iter, self._recorder(bar, counts_now), after_pass=self._after_collapsed_pass,
                   checkpoint=self._checkpoint)
        self._set_fitted(counts_now(), MEAN)

    def _subchain_sweep(self, data, init, seed, subchain_length):
        """CVI-2 and CVI-3: the units are the sequences, or the subchains of ``subchain_length``
        tokens each one is cut into, every subchain guarded by its neighbours (eq. 3.56-3.82)."""
        offsets, is_first = Units(data.offsets, subchain_length).layout()
        units = ChainData(self, data.corpus, offsets)
        # each unit starts as its own chain (footnote 5), independent of its neighbours
        marginals, internal = units.local_posteriors(init, seed, keep_pairs=True)
        boundary = np.zeros((0 if is_first.all() else internal.shape[0], *internal.shape[1:]), dtype=np.float32)
        independent_boundaries(offsets, is_first, marginals, boundary)
        start_counts, trans_counts = unit_totals(offsets, is_first, marginals, internal, boundary)
        stats = data.token_stats(marginals)
        order = np.arange(units.n_chains, dtype=np.int64)
        work = subchain_workspace(offsets, self.n_states)
        self.local_memory_bytes_ = marginals.nbytes + internal.nbytes + boundary.nbytes
        self._checkpoint.track_arrays("cvi", {"start": start_counts, "trans": trans_counts, "stats": stats,
                                              "marginals": marginals, "internal": internal, "boundary": boundary})
        # what the after-pass hook sees: the marginals, the global counts and the pass's q(C = 0) products
        self._collapsed = {"marginals": marginals, "n_sequences": data.n_chains}

        def sweep(iteration):
            zero, occupancy = self._occupancy_products()
            state = subchain_state(units.emissions(), *self.transition_prior(), offsets, is_first, start_counts,
                                   trans_counts, stats, marginals, internal, boundary, zero, occupancy,
                                   *self._occupancy_sampling(seed, iteration), work)
            objective, bad = subchain_pass(state, order)
            units.raise_if_bad(bad, "sequence" if subchain_length is None else "subchain")
            self._collapsed.update(counts=(start_counts, trans_counts, stats), zero=zero)
            return objective

        return sweep, lambda: (start_counts, trans_counts, stats)

    def _token_sweep(self, data, init, seed):
        """CVI-1: token-level mean field (eq. 3.28-3.39)."""
        marginals, _ = data.local_posteriors(init, seed, keep_pairs=False)
        sequence_of = data.sequence_of()
        start_counts, trans_counts = factorised_transitions(data.offsets, marginals)
        trans_rows = trans_counts.sum(axis=1)
        stats = data.token_stats(marginals)
        state = token_state(data.emissions(), self.alpha, data.offsets, sequence_of, start_counts, trans_counts,
                            trans_rows, stats, marginals, token_workspace(self.n_states))
        self._checkpoint.track_arrays("cvi", {"start": start_counts, "trans": trans_counts, "rows": trans_rows,
                                              "stats": stats, "marginals": marginals})
        order = np.arange(data.corpus.n_tokens, dtype=np.int64)

        def sweep(iteration):
            objective, bad = token_pass(state, order)
            data.raise_if_bad(sequence_of[bad] if bad >= 0 else -1)
            return objective

        return sweep, lambda: (start_counts, trans_counts, stats)

    def _run_sharded(self, data, how, n_iter, seed, init, progress, client=None, n_shards=None, **options):
        """cvi2-sharded on `schedules.passes`: CVI-2's updates (eq. 3.47-3.50) on every shard against the counts
        frozen at the start of the pass plus its own changes, the shards' changes summed after it
        (`cvbayes.models.hmm_shards.ShardedSweep`); on threads here, or on a Dask client's workers."""
        shards = Shards(self, data.corpus, client, n_shards)
        sweep = ShardedSweep(self, data, init, seed, shards)
        try:
            with self._progress(progress, n_iter) as bar:
                passes(sweep.sweep, n_iter, self._recorder(bar, sweep.counts))
        finally:
            sweep.close()
        self._set_fitted(sweep.counts(), MEAN)

    def _run_gibbs(self, data, how, n_iter, seed, init, progress, anneal=True, **options):
        """Collapsed Gibbs sampling (eq. 3.25) on `schedules.gibbs`, annealed geometrically down to
        temperature 0.08 over the iterations when ``anneal``: from 2.0 at footnote 5's uniform random states
        (Goldwater and Griffiths 2007), from 1.0 at the max-posterior states of given parameters."""
        if isinstance(init, dict):
            states = self._decode_corpus(data.corpus, "mpd", params=self.check_params(init))
            hottest = ANNEAL_START_FROM_PARAMETERS
        else:
            states = data.random_states(seed)
            hottest = ANNEAL_START
        seed_numba(seed)
        sequence_of = data.sequence_of()
        start_counts, trans_counts, trans_rows = hard_transitions(data.offsets, states, self.n_states)
        stats = state_stats(self.family.code, data.index, data.features, states, self.n_states, data.n_stats)
        state = token_state(data.emissions(), self.alpha, data.offsets, sequence_of, start_counts, trans_counts,
                            trans_rows, stats, states, token_workspace(self.n_states))
        order = np.arange(data.corpus.n_tokens, dtype=np.int64)
        temperatures = np.geomspace(hottest, ANNEAL_END, n_iter) if anneal and n_iter > 1 else np.ones(n_iter)

        def sweep(iteration):
            bad = gibbs_pass(state, order, 1.0 / temperatures[iteration])
            data.raise_if_bad(sequence_of[bad] if bad >= 0 else -1)
            return (rules.dirichlet_log_marginal(start_counts[None], self.alpha)
                    + rules.dirichlet_log_marginal(trans_counts, self.alpha) + self.family.log_marginal(stats))

        self._checkpoint.track_arrays("cgs", {"start": start_counts, "trans": trans_counts, "rows": trans_rows,
                                              "stats": stats, "states": states})
        self._checkpoint.track_numba_random()
        with self._progress(progress, n_iter) as bar:
            self._checkpoint.track_progress(bar)
            passes(sweep, n_iter, self._recorder(bar, lambda: (start_counts, trans_counts, stats)),
                   checkpoint=self._checkpoint)
        self.states_ = states
        self._set_fitted((start_counts, trans_counts, stats), MEAN)

    def _run_stochastic(self, data, how, n_iter, seed, init, progress, batch_size, kappa, tau0, subchain_length,
                        buffer, vanilla, callback_every, client=None, n_shards=None, **options):
        """SVI (rule VB) and SCVI (rule MEAN) on `schedules.stochastic` (eq. 3.98-3.104)."""
        if client is None:
            structure = Minibatches(self, data.corpus, how.rule, Units(data.offsets, subchain_length), buffer, vanilla,
                                    self._stochastic_occupancy())
        else:  # each minibatch's forward-backward on the shards that own its units (cvbayes.models.hmm_shards)
            shards = Shards(self, data.corpus, client, n_shards)
            structure = ShardedMinibatches(self, data.corpus, how.rule, Units(data.offsets, subchain_length), buffer,
                                           vanilla, shards)
        rng = np.random.default_rng(seed)
        if isinstance(init, dict):
            given = BatchChains(self, data) if client is None else ShardedBatch(BatchChains(self, data), shards)
            counts = given.expectations(given.from_params(self.check_params(init)))[0]
        else:
            counts = structure.random_counts(rng)
        blocks = structure.start(*counts)
        steps_per_pass = -(-structure.n_units // batch_size)
        with self._progress(progress, n_iter * steps_per_pass, unit="batch") as bar:
            self._checkpoint.track_progress(bar)

            def record(iteration, objective, seconds):
                bar.record(iteration, objective, seconds, advance=False)
                if callback_every is None:
                    self._call_back(iteration, structure.current(), bar.train_seconds)

            def after_step(rho):
                self._after_stochastic_step(structure, rho)
                bar.advance()

            self.steps_ = stochastic(
                structure, blocks, n_iter, batch_size, kappa, tau0, rng, record, after_step=after_step,
                after_pass=lambda: self._after_stochastic_pass(structure),
                callback=lambda step, seconds: self._call_back(step, structure.current(), seconds),
                callback_every=callback_every, checkpoint=self._checkpoint)
        self._set_fitted(structure.current(), MEAN)
        self.global_memory_bytes_ = sum(blocks[name].nbytes for name in ("start", "trans", "stats"))

    # Hooks of the schedules; the HDP-HMM fills them (models/hdp_hmm.py)
    def _occupancy_products(self):
        """The q(C = 0) products a collapsed pass fills, and the method code: none here."""
        return no_occupancy(self.n_states)

    def _occupancy_sampling(self, seed, iteration):
        """(n_samples, seed) of the sampling method of q(C = 0)."""
        return 0, 0

    def _after_collapsed_pass(self, iteration):
        """Work after every pass of CVI (``self._collapsed`` holds its statistics): none here."""

    def _stochastic_occupancy(self):
        """(method code, samples, emissions) of q(C = 0) a stochastic learner tracks: none here."""
        return NO_OCCUPANCY, 0, False

    def _after_stochastic_step(self, structure, rho):
        """Work after every minibatch step of SVI/SCVI: none for the finite HMM."""

    def _after_stochastic_pass(self, structure):
        """Work after every pass of SVI/SCVI over the data: none for the finite HMM."""

    # ------------------------------------------------------------ save/load
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted model to ``path`` (a NumPy ``.npz`` archive, no pickles).

        The archive keeps the expected counts, so `load` restores the exact
        posterior, plus the priors, the tag dictionary, the vocabulary and
        tag set of the training corpus, and the training history.
        """
        if not hasattr(self, "counts_"):
            raise RuntimeError("this HMM is not fitted yet; call fit() first")
        start_counts, trans_counts, stats = self.counts_
        meta = {
            "format": SAVE_FORMAT,
            "model": self.MODEL_NAME,
            "n_states": self.n_states,
            "alpha": self.alpha,
            "beta": self.beta,
            "family": self.family.config(),
            "algorithm": self.algorithm_,
            "point_rule": "map" if self._point_rule == MAP else "predictive",
            "history": [[r.iteration, r.objective, r.seconds] for r in self.history_],
            "vocabulary": None if self.vocabulary_ is None else self.vocabulary_.to_json(),
            "tagset": None if self.tagset_ is None else self.tagset_.to_json(),
        }
        arrays = {"start_counts": start_counts, "trans_counts": trans_counts, "stats": stats}
        extra_meta, extra_arrays = self._saved_extras()
        meta.update(extra_meta)
        arrays.update(extra_arrays)
        if self.tag_dictionary is not None:
            arrays["tag_dictionary"] = self.tag_dictionary
        write_model(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> HMM:
        """Read a model written by `save`; ``HMM.load`` also reads an `HDPHMM`'s file."""
        meta, arrays = read_model(path, SAVE_FORMAT)
        # HMM.load reads any subclass's file (the command line loads either model)
        name = meta.get("model", "hmm")
        matching = [c for c in (cls, *cls.__subclasses__()) if c.MODEL_NAME == name]
        if not matching:
            raise ValueError(f"{path}: holds a {name} model, which {cls.__name__}.load cannot read")
        model_class = matching[0]
        family = family_from_config(meta["family"])
        model = model_class._from_saved(meta, arrays, family)
        model.algorithm_ = meta["algorithm"]
        model.objective_name_ = model_class.OBJECTIVES[model.algorithm_]
        model.history_ = [IterationRecord(int(i), o, t) for i, o, t in meta["history"]]
        model.vocabulary_ = None if meta["vocabulary"] is None else Vocabulary.from_json(meta["vocabulary"])
        model.tagset_ = None if meta["tagset"] is None else Vocabulary.from_json(meta["tagset"])
        rule = MAP if meta["point_rule"] == "map" else MEAN
        model._set_fitted((arrays["start_counts"], arrays["trans_counts"], arrays["stats"]), rule)
        return model

    def _saved_extras(self):
        """(meta, arrays) a subclass adds to the model file."""
        return {}, {}

    @classmethod
    def _from_saved(cls, meta, arrays, family):
        return cls(meta["n_states"], meta["alpha"], meta["beta"], emission=family,
                   tag_dictionary=arrays.get("tag_dictionary"))

    # ----------------------------------------------------------- parameters
    def check_params(self, init):
        """Validate a dict of parameters (``init``); returns it with float start and transition rows."""
        needed = {"startprob", "transmat"} | ({"emissionprob"} if self.family.discrete else {"means", "covars"})
        missing = needed - set(init)
        if missing:
            raise ValueError(f"init dict is missing {', '.join(sorted(missing))}")
        k = self.n_states
        startprob = np.asarray(init["startprob"], dtype=float)
        transmat = np.asarray(init["transmat"], dtype=float)
        if startprob.shape != (k,) or transmat.shape != (k, k):
            raise ValueError(f"startprob must have shape ({k},) and transmat ({k}, {k})")
        for name, rows in (("startprob", startprob[None]), ("transmat", transmat)):
            if np.any(rows < 0) or not np.allclose(rows.sum(axis=1), 1.0):
                raise ValueError(f"init['{name}'] rows must be probabilities that sum to 1")
        return {**init, "startprob": startprob, "transmat": transmat}

    def _fitted_params(self):
        if not hasattr(self, "counts_"):
            raise RuntimeError("this HMM is not fitted yet; call fit() first")
        start_counts, trans_counts, stats = self.counts_
        startprob, transmat = self.transition_tables(start_counts, trans_counts, self._point_rule)
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
        if "stats" in params:
            table, offset = self.family.table(params["stats"], MEAN, corpus)
        else:
            table, offset = self.family.table_from_params(params, corpus)
        return params["startprob"], params["transmat"], table, offset

    # ------------------------------------------------------ decode and score
    def _prepare_input(self, X, lengths):
        """The input as a Corpus in the model's ids: a Corpus read with another vocabulary is mapped
        through the model's (unseen words to its unknown id); raw ids are checked against W."""
        corpus = as_corpus(X, lengths)
        if not hasattr(self, "counts_"):
            raise RuntimeError("this HMM is not fitted yet; call fit() first")
        if corpus.vocabulary is not None and getattr(self, "vocabulary_", None) is not None:
            corpus = corpus.recoded(self.vocabulary_)
        self.family.check(corpus)
        return corpus

    def _decode_corpus(self, corpus, method, params=None, keep_posteriors=False):
        data = ChainData(self, corpus)
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
        data = ChainData(self, corpus)
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
        (hmmlearn's ``(X, Z)``): word ids (categorical) or (n_samples, D) features (Gaussian)."""
        if int(n_samples) != n_samples or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples}")
        self._fitted_params()
        seed = np.random.default_rng().integers(2**63) if random_state is None else int(random_state)
        if self.family.discrete:
            drawn = sample_categorical_hmm(self.startprob_, self.transmat_, self.emissionprob_, [n_samples], seed)
        else:
            drawn = sample_gaussian_hmm(self.startprob_, self.transmat_, self.means_, self.covars_, [n_samples], seed)
        return drawn.observations, drawn.gold

    def score_sequences(self, X: Any, lengths: ArrayLike | None = None) -> np.ndarray:
        """log p(x^i) of every sequence under the fitted predictive parameters (eq. 3.108-3.109)."""
        corpus = self._prepare_input(X, lengths)
        data = ChainData(self, corpus)
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

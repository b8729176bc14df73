"""Finite Bayesian HMM with Dirichlet priors (thesis eq. 3.1-3.4) and five learners.

``HMM.fit(X, algorithm=...)`` runs EM, VB, CVI-1, CVI-2, CVI-3, collapsed Gibbs
sampling, or the stochastic SVI and SCVI.  They share the forward-backward
kernel and differ only in the parameter rule (inference/rules.py) and the
update schedule (inference/sweeps.py, inference/stochastic.py), as thesis
§3.3-3.7 and DESIGN.md describe.
"""
import json
import time
import zipfile
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from ..data import Corpus, Vocabulary, as_corpus
from ..families import family_from_config, make_family
from ..families.ops import log_marginal_likelihood
from ..inference import rules, sweeps
from ..inference.stochastic import StochasticLearner, Units

ALGORITHMS = ("em", "vb", "cvi1", "cvi2", "cvi3", "cgs", "svi", "scvi")
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
}

# Subchain lengths when a single long sequence must be cut and none is given:
# the thesis's T in {2, 5, 10} for the stochastic learners (§3.8.4); CVI-3
# stores two K x K tables a subchain, so longer ones keep its memory near CVI-2's.
DEFAULT_SUBCHAIN = {"svi": 10, "scvi": 10, "cvi3": 50}

SAVE_FORMAT = "cvbayes-hmm-1"

# Goldwater and Griffiths (2007) anneal from temperature 2.0 down to 0.08.
ANNEAL_START = 2.0
ANNEAL_END = 0.08


@dataclass(frozen=True)
class CollapsedStatistics:
    """The global counts and the marginals a CVI-2/CVI-3 run keeps, for the hooks."""

    start: np.ndarray
    trans: np.ndarray
    stats: np.ndarray
    marginals: np.ndarray


@dataclass(frozen=True)
class IterationRecord:
    """One entry of ``HMM.history_``: the objective after an iteration and its wall time."""

    iteration: int
    objective: float
    seconds: float


class ZeroProbabilityError(ValueError):
    """A sequence that no state path can explain."""


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
        ``covars_`` (K, D) (Gaussian).
    history_ : list of IterationRecord; ``objective_name_`` says what the
        objective is for the algorithm that ran.
    """

    MODEL_NAME = "hmm"
    ALGORITHMS = ALGORITHMS
    DEFAULT_SUBCHAIN = DEFAULT_SUBCHAIN
    OBJECTIVES = OBJECTIVES

    def __init__(self, n_states, alpha=0.1, beta=0.1, emission="categorical", tag_dictionary=None):
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

    # ------------------------------------------------------------------ fit
    def fit(self, X, lengths=None, algorithm="cvi2", n_iter=50, seed=0, init="random",
            anneal=True, progress=False, callback=None, batch_size=100, kappa=0.5, tau0=1.0,
            subchain_length=None, buffer=10, vanilla=False, callback_every=None):
        """Learn from sequences.

        Parameters
        ----------
        X : Corpus, list of 1-D arrays, or concatenated array with ``lengths``
        algorithm : {"em", "vb", "cvi1", "cvi2", "cvi3", "cgs", "svi", "scvi"}
        n_iter : int
            Passes over the data (for svi and scvi, n_units / batch_size
            minibatch steps each).
        seed : int
            Seeds the random start (thesis footnote 5): random local posteriors
            q(z_t | z_{t-1}) ∝ U[0, 1] for the deterministic algorithms (the
            same ones for every algorithm), uniform random states for CGS.
        init : "random" or dict
            A dict with ``startprob``, ``transmat`` and ``emissionprob`` (or
            ``means`` and ``covars``) starts from those parameters instead.
        anneal : bool
            CGS only: temperature from 2.0 down to 0.08, geometrically over
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
        """
        if algorithm not in self.ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(self.ALGORITHMS)}")
        if int(n_iter) != n_iter or n_iter < 1:
            raise ValueError(f"n_iter must be a positive integer, got {n_iter}")
        corpus = as_corpus(X, lengths)
        if corpus.n_tokens == 0:
            raise ValueError("cannot fit on a corpus with no tokens")
        self.family.prepare(corpus, self.n_states)
        if self.tag_dictionary is not None and self.tag_dictionary.shape[0] != self.family.n_symbols:
            raise ValueError(f"tag_dictionary has {self.tag_dictionary.shape[0]} rows; "
                             f"the vocabulary has {self.family.n_symbols} symbols")
        if isinstance(init, dict):
            self._check_init(init)
        elif init != "random":
            raise ValueError("init must be 'random' or a dict of parameters")
        self._schedule = self._check_schedule(algorithm, corpus, batch_size, kappa, tau0,
                                              subchain_length, buffer, vanilla, callback_every)
        self.algorithm_ = algorithm
        self.objective_name_ = self.OBJECTIVES[algorithm]
        self.history_ = []
        self.vocabulary_ = corpus.vocabulary
        self.tagset_ = corpus.tagset
        self._callback = callback
        data = _Data(self, corpus)
        learner = getattr(self, "_fit_" + algorithm.replace("-", "_"))
        learner(data, int(n_iter), int(seed), init, anneal, progress)
        return self

    def _check_schedule(self, algorithm, corpus, batch_size, kappa, tau0, subchain_length, buffer,
                        vanilla, callback_every):
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
                algorithm == "cvi3" or corpus.n_sequences == 1):
            subchain_length = self.DEFAULT_SUBCHAIN[algorithm]
        return {"batch_size": int(batch_size), "kappa": float(kappa), "tau0": float(tau0),
                "subchain_length": None if subchain_length is None else int(subchain_length),
                "buffer": int(buffer), "vanilla": bool(vanilla), "callback_every": callback_every}

    def _record(self, iteration, objective, started, bar, counts, rule):
        """Log an iteration; hand the current estimates to the user's callback."""
        self.history_.append(IterationRecord(iteration, float(objective), time.perf_counter() - started))
        bar.set_postfix(objective=f"{objective:.6g}")
        bar.update()
        self._call_back(iteration, counts, rule, sum(record.seconds for record in self.history_))

    def _call_back(self, step, counts, rule, train_seconds):
        if self._callback is not None:
            self.train_seconds_ = train_seconds
            self._set_fitted(*counts, rule)
            self._callback(self, step)

    def _iterations(self, n_iter, progress):
        return tqdm(total=n_iter, desc=self.algorithm_, disable=not progress, leave=False)

    def transition_prior(self):
        """(a (K,), A): the pseudo-counts a_k of every start and transition row and
        the total A of their denominators (eq. 3.49: a_k = alpha, A = K alpha)."""
        return np.full(self.n_states, self.alpha), self.n_states * self.alpha

    # The Dirichlet rows of the start state and the transitions; total=None
    # normalises over the K states
    def _transition_tables(self, start_counts, trans_counts, rule, total=None):
        prior = (self.transition_prior()[0],) if total is None else (self.transition_prior()[0], total)
        return rule(start_counts[None], *prior)[0], rule(trans_counts, *prior)

    def _set_fitted(self, start_counts, trans_counts, stats, rule):
        """Store the counts and the point estimates of the fitted model."""
        self._counts = (start_counts, trans_counts, stats)
        self._point_rule = "map" if rule == "map" else "predictive"
        fn = rules.dirichlet_mode if rule == "map" else rules.dirichlet_mean
        self.startprob_, self.transmat_ = self._transition_tables(start_counts, trans_counts, fn)
        for name, value in self.family.fitted(stats, rule).items():
            setattr(self, name, value)

    def _fit_em(self, data, n_iter, seed, init, anneal, progress):
        """Baum-Welch, MAP with the Dirichlet pseudo-counts (eq. 3.13-3.19)."""
        if isinstance(init, dict):
            params = self._params_from_dict(init)
        else:
            params = self._map_params(*data.random_counts(seed))
        with self._iterations(n_iter, progress) as bar:
            for it in range(n_iter):
                started = time.perf_counter()
                table = self.family.table_from_params(params, data.corpus)
                counts, log_evidence = data.expectations(params["startprob"], params["transmat"], table)
                log_prior = (rules.dirichlet_log_prior_terms(params["startprob"], self.alpha)
                             + rules.dirichlet_log_prior_terms(params["transmat"], self.alpha)
                             + self.family.log_prior(params))
                params = self._map_params(*counts)
                self._record(it, log_evidence + log_prior, started, bar, counts, "map")
        self._set_fitted(*counts, "map")

    def _map_params(self, start_counts, trans_counts, stats):
        startprob, transmat = self._transition_tables(start_counts, trans_counts, rules.dirichlet_mode)
        return {"startprob": startprob, "transmat": transmat, **self.family.map_params(stats)}

    def _fit_vb(self, data, n_iter, seed, init, anneal, progress):
        """Mean-field VB (eq. 3.20-3.22); the objective is the ELBO (eq. 3.11)."""
        if isinstance(init, dict):
            params = self._params_from_dict(init)
            table = self.family.table_from_params(params, data.corpus)
            counts, _ = data.expectations(params["startprob"], params["transmat"], table)
        else:
            counts = data.random_counts(seed)
        with self._iterations(n_iter, progress) as bar:
            for it in range(n_iter):
                started = time.perf_counter()
                start_counts, trans_counts, stats = counts
                startprob, transmat = self._transition_tables(start_counts, trans_counts,
                                                              rules.dirichlet_geometric_mean)
                table = self.family.table(stats, "vb", data.corpus)
                kl = (rules.dirichlet_kl(start_counts, self.alpha) + rules.dirichlet_kl(trans_counts, self.alpha)
                      + self.family.kl(stats))
                counts, log_evidence = data.expectations(startprob, transmat, table)
                self._record(it, log_evidence - kl, started, bar, counts, "predictive")
        self._set_fitted(*counts, "predictive")

    def _fit_cvi2(self, data, n_iter, seed, init, anneal, progress):
        """CVI algorithm 2: sequence-level structured mean field (eq. 3.44-3.50)."""
        marginals, local_pairs = data.local_posteriors(self, init, seed, keep_pairs=True)
        start_counts, trans_counts = sweeps.pair_totals(data.offsets, marginals, local_pairs)
        stats = data.token_stats(marginals)
        order = np.arange(data.corpus.n_sequences, dtype=np.int64)
        statistics = CollapsedStatistics(start_counts, trans_counts, stats, marginals)
        with self._iterations(n_iter, progress) as bar:
            for it in range(n_iter):
                started = time.perf_counter()
                zero, occupancy = self._occupancy_products(data)
                objective, bad = sweeps.cvi2_sweep(
                    data.code, data.prior, *self.transition_prior(), data.mask, data.index, data.features,
                    data.offsets, order, start_counts, trans_counts, stats, marginals, local_pairs,
                    zero, occupancy, *self._occupancy_sampling(seed, it))
                data.raise_if_bad(bad)
                self._after_sweep(data, zero, statistics, data.corpus.n_sequences)
                self._record(it, objective, started, bar, (start_counts, trans_counts, stats), "predictive")
        self._set_fitted(start_counts, trans_counts, stats, "predictive")
        self.local_memory_bytes_ = marginals.nbytes + local_pairs.nbytes

    # Hooks of the collapsed sweeps; the HDP-HMM fills them (models/hdp_hmm.py)
    def _occupancy_products(self, data):
        """The q(C = 0) products a sweep fills, and the method code: none here."""
        return sweeps.no_occupancy()

    def _occupancy_sampling(self, seed, iteration):
        """(n_samples, seed) of the sampling method of q(C = 0)."""
        return 0, 0

    def _after_sweep(self, data, zero, statistics, n_sequences):
        """Work between passes of CVI-2/CVI-3: none for the finite HMM."""

    def _stochastic_occupancy(self):
        """(method code, samples, emissions) of q(C = 0) a stochastic learner tracks: none here."""
        return sweeps.NO_OCCUPANCY, 0, False

    def _after_step(self, learner):
        """Work after every minibatch step of SVI/SCVI: none for the finite HMM."""

    def _after_pass(self, learner):
        """Work after every pass of SVI/SCVI over the data: none for the finite HMM."""

    def _fit_cvi1(self, data, n_iter, seed, init, anneal, progress):
        """CVI algorithm 1: token-level mean field (eq. 3.28-3.39)."""
        marginals, _ = data.local_posteriors(self, init, seed, keep_pairs=False)
        start_counts, trans_counts = sweeps.factorised_transitions(data.offsets, marginals)
        trans_rows = trans_counts.sum(axis=1)
        stats = data.token_stats(marginals)
        with self._iterations(n_iter, progress) as bar:
            for it in range(n_iter):
                started = time.perf_counter()
                objective, bad = sweeps.cvi1_sweep(
                    data.code, data.prior, self.alpha, data.mask, data.index, data.features,
                    data.offsets, start_counts, trans_counts, trans_rows, stats, marginals)
                data.raise_if_bad(bad)
                self._record(it, objective, started, bar, (start_counts, trans_counts, stats), "predictive")
        self._set_fitted(start_counts, trans_counts, stats, "predictive")

    def _fit_cvi3(self, data, n_iter, seed, init, anneal, progress):
        """CVI algorithm 3: subchains of long sequences with guarded message passing (eq. 3.56-3.82)."""
        units = Units(data.offsets, self._schedule["subchain_length"])
        begin, end, seq_begin, _ = units.ranges(np.arange(units.n_units))
        offsets = np.append(begin, data.corpus.n_tokens).astype(np.int64)
        is_first = begin == seq_begin
        # each subchain starts as its own chain (footnote 5), independent of its neighbours
        pieces = _Data(self, Corpus(data.corpus.observations, offsets))
        marginals, internal_pairs = pieces.local_posteriors(self, init, seed, keep_pairs=True)
        _, trans_counts = sweeps.pair_totals(offsets, marginals, internal_pairs)
        start_counts = _sequence_starts(data.offsets, marginals)
        boundary_pairs = np.zeros_like(internal_pairs)
        trans_counts += sweeps.independent_boundaries(offsets, is_first, marginals, boundary_pairs)
        stats = data.token_stats(marginals)
        order = np.arange(units.n_units, dtype=np.int64)
        statistics = CollapsedStatistics(start_counts, trans_counts, stats, marginals)
        with self._iterations(n_iter, progress) as bar:
            for it in range(n_iter):
                started = time.perf_counter()
                zero, occupancy = self._occupancy_products(data)
                objective, bad = sweeps.cvi3_sweep(
                    data.code, data.prior, *self.transition_prior(), data.mask, data.index, data.features, offsets,
                    is_first, order, start_counts, trans_counts, stats, marginals, internal_pairs,
                    boundary_pairs, zero, occupancy, *self._occupancy_sampling(seed, it))
                pieces.raise_if_bad(bad)
                self._after_sweep(data, zero, statistics, data.corpus.n_sequences)
                self._record(it, objective, started, bar, (start_counts, trans_counts, stats), "predictive")
        self._set_fitted(start_counts, trans_counts, stats, "predictive")
        self.local_memory_bytes_ = marginals.nbytes + internal_pairs.nbytes + boundary_pairs.nbytes

    def _fit_svi(self, data, n_iter, seed, init, anneal, progress):
        """Stochastic VB (Hoffman et al. 2013; Foti et al. 2014 on subchains)."""
        self._fit_stochastic(data, n_iter, seed, init, "vb", progress)

    def _fit_scvi(self, data, n_iter, seed, init, anneal, progress):
        """Stochastic CVI: SCVI-2 on sequences, SCVI-3 on subchains (eq. 3.98-3.104)."""
        self._fit_stochastic(data, n_iter, seed, init, "predictive", progress)

    def _fit_stochastic(self, data, n_iter, seed, init, rule, progress):
        schedule = self._schedule
        learner = StochasticLearner(self, data.corpus, rule, schedule["batch_size"], schedule["kappa"],
                                    schedule["tau0"], schedule["subchain_length"], schedule["buffer"],
                                    schedule["vanilla"], self._stochastic_occupancy())
        rng = np.random.default_rng(seed)
        if isinstance(init, dict):
            params = self._params_from_dict(init)
            table = self.family.table_from_params(params, data.corpus)
            counts, _ = data.expectations(params["startprob"], params["transmat"], table)
            learner.set_globals(*counts)
        else:
            learner.random_globals(rng)
        steps_per_pass = -(-learner.units.n_units // schedule["batch_size"])
        every = schedule["callback_every"]
        trained = 0.0
        with tqdm(total=n_iter * steps_per_pass, desc=self.algorithm_, unit="batch",
                  disable=not progress, leave=False) as bar:
            for it in range(n_iter):
                log_z = 0.0
                n_tokens = 0
                seconds = 0.0
                for _ in range(steps_per_pass):
                    started = time.perf_counter()
                    batch_log_z, batch_tokens = learner.update(rng)
                    self._after_step(learner)
                    seconds += time.perf_counter() - started
                    log_z += batch_log_z
                    n_tokens += batch_tokens
                    bar.update()
                    if every is not None and learner.step % every == 0:
                        self._call_back(learner.step, learner.counts(), "predictive", trained + seconds)
                started = time.perf_counter()
                self._after_pass(learner)
                seconds += time.perf_counter() - started
                trained += seconds
                objective = log_z / max(n_tokens, 1)
                self.history_.append(IterationRecord(it, objective, seconds))
                bar.set_postfix(objective=f"{objective:.6g}")
                if every is None:
                    self._call_back(it, learner.counts(), "predictive", trained)
        self._set_fitted(*learner.counts(), "predictive")
        self.steps_ = learner.step
        self.global_memory_bytes_ = (learner.start_counts.nbytes + learner.trans_counts.nbytes
                                     + learner.stats.stored.nbytes)

    def _fit_cgs(self, data, n_iter, seed, init, anneal, progress):
        """Collapsed Gibbs sampling (eq. 3.25), optionally annealed."""
        if isinstance(init, dict):
            states = self._decode_corpus(data.corpus, "mpd", params=self._params_from_dict(init))
        else:
            states = data.random_states(seed)
        sweeps.seed_numba(seed)
        start_counts, trans_counts, trans_rows, stats = sweeps.state_counts(
            data.code, data.index, data.features, data.offsets, states, self.n_states, data.n_stats)
        if anneal and n_iter > 1:
            temperatures = np.geomspace(ANNEAL_START, ANNEAL_END, n_iter)
        else:
            temperatures = np.ones(n_iter)
        with self._iterations(n_iter, progress) as bar:
            for it in range(n_iter):
                started = time.perf_counter()
                bad = sweeps.cgs_sweep(data.code, data.prior, self.alpha, data.mask, data.index,
                                       data.features, data.offsets, states, start_counts, trans_counts,
                                       trans_rows, stats, temperatures[it])
                data.raise_if_bad(bad)
                objective = (rules.dirichlet_log_marginal(start_counts[None], self.alpha)
                             + rules.dirichlet_log_marginal(trans_counts, self.alpha)
                             + log_marginal_likelihood(data.code, stats, data.prior))
                self._record(it, objective, started, bar, (start_counts, trans_counts, stats), "predictive")
        self.states_ = states
        self._set_fitted(start_counts, trans_counts, stats, "predictive")

    # ------------------------------------------------------------ save/load
    def save(self, path):
        """Write the fitted model to ``path`` (a NumPy ``.npz`` archive, no pickles).

        The archive keeps the expected counts, so `load` restores the exact
        posterior, plus the priors, the tag dictionary, the vocabulary and
        tag set of the training corpus, and the training history.
        """
        if not hasattr(self, "_counts"):
            raise RuntimeError("this HMM is not fitted yet; call fit() first")
        start_counts, trans_counts, stats = self._counts
        meta = {
            "format": SAVE_FORMAT,
            "model": self.MODEL_NAME,
            "n_states": self.n_states,
            "alpha": self.alpha,
            "beta": self.beta,
            "family": self.family.config(),
            "algorithm": self.algorithm_,
            "point_rule": self._point_rule,
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
        with open(path, "wb") as handle:
            np.savez_compressed(handle, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by `save`; ``HMM.load`` also reads an `HDPHMM`'s file."""
        try:
            with np.load(path, allow_pickle=False) as archive:
                meta = json.loads(str(archive["meta"]))
                arrays = {name: archive[name] for name in archive.files if name != "meta"}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a cvbayes model file ({error})") from None
        if meta.get("format") != SAVE_FORMAT:
            raise ValueError(f"{path}: not a cvbayes model file (format {meta.get('format')!r})")
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
        rule = "map" if meta["point_rule"] == "map" else "predictive"
        model._set_fitted(arrays["start_counts"], arrays["trans_counts"], arrays["stats"], rule)
        return model

    def _saved_extras(self):
        """(meta, arrays) a subclass adds to the model file."""
        return {}, {}

    @classmethod
    def _from_saved(cls, meta, arrays, family):
        return cls(meta["n_states"], meta["alpha"], meta["beta"], emission=family,
                   tag_dictionary=arrays.get("tag_dictionary"))

    # ----------------------------------------------------------- parameters
    def _check_init(self, init):
        needed = {"startprob", "transmat"} | ({"emissionprob"} if self.family.discrete else {"means", "covars"})
        missing = needed - set(init)
        if missing:
            raise ValueError(f"init dict is missing {', '.join(sorted(missing))}")

    def _params_from_dict(self, init):
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
        if not hasattr(self, "_counts"):
            raise RuntimeError("this HMM is not fitted yet; call fit() first")
        start_counts, trans_counts, stats = self._counts
        if self._point_rule == "map":
            return self._map_params(start_counts, trans_counts, stats)
        startprob, transmat = self._transition_tables(start_counts, trans_counts, rules.dirichlet_mean)
        return {"startprob": startprob, "transmat": transmat, "stats": stats}

    def _tables(self, params, corpus):
        """(start, trans, emission table, log offsets) for the kernels."""
        if "stats" in params:
            table, offset = self.family.table(params["stats"], "predictive", corpus)
        else:
            table, offset = self.family.table_from_params(params, corpus)
        return params["startprob"], params["transmat"], table, offset

    # ------------------------------------------------------ decode and score
    def _prepare_input(self, X, lengths):
        corpus = as_corpus(X, lengths)
        if not hasattr(self, "_counts"):
            raise RuntimeError("this HMM is not fitted yet; call fit() first")
        self.family.check(corpus)
        return corpus

    def _decode_corpus(self, corpus, method, params=None, keep_posteriors=False):
        data = _Data(self, corpus)
        start, trans, table, offset = self._tables(params or self._fitted_params(), corpus)
        states = np.zeros(corpus.n_tokens, dtype=np.int32)
        posteriors = np.zeros((corpus.n_tokens if keep_posteriors else 0, self.n_states))
        code = {"mpd": sweeps.MPD, "viterbi": sweeps.VITERBI}[method]
        bad = sweeps.batch_decode(start, trans, table, offset, data.mask, data.index, data.offsets,
                                  data.chunks, code, states, posteriors)
        data.raise_if_bad(bad)
        return (states, posteriors) if keep_posteriors else states

    def decode(self, X, lengths=None, method="mpd"):
        """Most likely states: max posterior marginals ("mpd", the default, eq. 3.16) or
        the Viterbi path ("viterbi").

        Returns states in the input's layout: one flat array for a Corpus or a
        concatenated array, a list of arrays for a list of sequences.
        """
        if method not in ("mpd", "viterbi"):
            raise ValueError("method must be 'mpd' or 'viterbi'")
        corpus = self._prepare_input(X, lengths)
        return _like_input(X, corpus, self._decode_corpus(corpus, method))

    def predict_proba(self, X, lengths=None):
        """Posterior marginals q(z_t) under the fitted point estimates, (N, K)."""
        corpus = self._prepare_input(X, lengths)
        _, posteriors = self._decode_corpus(corpus, "mpd", keep_posteriors=True)
        return _like_input(X, corpus, posteriors)

    def score_sequences(self, X, lengths=None):
        """log p(x^i) of every sequence under the fitted predictive parameters (eq. 3.108-3.109)."""
        corpus = self._prepare_input(X, lengths)
        data = _Data(self, corpus)
        start, trans, table, offset = self._tables(self._fitted_params(), corpus)
        return sweeps.batch_log_evidence(start, trans, table, offset, data.mask, data.index,
                                         data.offsets, data.chunks)

    def score(self, X, lengths=None):
        """Total predictive log-likelihood of held-out sequences (numerator of eq. 3.108).

        Divide by the number of tokens for the thesis's per-word figure;
        ``score_per_token`` does that.
        """
        return float(self.score_sequences(X, lengths).sum())

    def score_per_token(self, X, lengths=None):
        """Per-word predictive log-likelihood, eq. 3.108."""
        corpus = as_corpus(X, lengths)
        return self.score(corpus) / max(corpus.n_tokens, 1)


class _Data:
    """A corpus laid out for the kernels: family index/features, mask, chunks."""

    def __init__(self, model, corpus):
        family = model.family
        self.model = model
        self.corpus = corpus
        self.code = family.code
        self.prior = family.prior_array()
        self.n_stats = family.n_stats()
        self.index = np.ascontiguousarray(family.index(corpus), dtype=np.int32)
        self.features = family.features(corpus)
        self.offsets = np.ascontiguousarray(corpus.offsets, dtype=np.int64)
        mask = model.tag_dictionary
        self.mask = mask if mask is not None else np.zeros((0, model.n_states))
        self.chunks = sweeps.equal_token_chunks(self.offsets)

    def raise_if_bad(self, bad):
        if bad < 0:
            return
        begin, end = self.offsets[bad], self.offsets[bad + 1]
        why = ("the tag dictionary admits no state for one of its tokens"
               if self.mask.shape[0] else "its emission probabilities are all zero")
        raise ZeroProbabilityError(
            f"sequence {bad} (tokens {begin}..{end - 1}) has zero probability under every "
            f"state path: {why}")

    def expectations(self, startprob, transmat, table_and_offset):
        """E-step: expected counts and sum_i log Z_i under one parameter table."""
        table, offset = table_and_offset
        start_counts, trans_counts, stats, log_evidence, bad = sweeps.batch_expectations(
            self.code, startprob, transmat, table, offset, self.mask, self.index, self.features,
            self.offsets, self.chunks, self.n_stats)
        self.raise_if_bad(bad)
        return (start_counts, trans_counts, stats), log_evidence

    def token_stats(self, marginals):
        return sweeps.token_stats(self.code, self.index, self.features, marginals, self.n_stats)

    def _random_chain(self, seed, keep_pairs):
        k = self.model.n_states
        marginals = np.zeros((self.corpus.n_tokens, k), dtype=np.float32)
        local_pairs = np.zeros((self.corpus.n_sequences if keep_pairs else 0, k, k), dtype=np.float32)
        start_counts, trans_counts = sweeps.random_chain_posteriors(
            seed, self.offsets, k, self.mask, self.index, self.chunks, marginals, local_pairs)
        return marginals, local_pairs, start_counts, trans_counts

    def random_counts(self, seed):
        """Expected counts of the random local posteriors (thesis footnote 5)."""
        marginals, _, start_counts, trans_counts = self._random_chain(seed, keep_pairs=False)
        return start_counts, trans_counts, self.token_stats(marginals)

    def local_posteriors(self, model, init, seed, keep_pairs):
        """Starting local statistics of the collapsed algorithms (float32)."""
        if not isinstance(init, dict):
            marginals, local_pairs, _, _ = self._random_chain(seed, keep_pairs)
            return marginals, local_pairs
        k = model.n_states
        marginals = np.zeros((self.corpus.n_tokens, k), dtype=np.float32)
        local_pairs = np.zeros((self.corpus.n_sequences if keep_pairs else 0, k, k), dtype=np.float32)
        start, trans, table, offset = model._tables(model._params_from_dict(init), self.corpus)
        bad = sweeps.batch_local_posteriors(start, trans, table, offset, self.mask, self.index,
                                            self.offsets, self.chunks, marginals, local_pairs)
        self.raise_if_bad(bad)
        return marginals, local_pairs

    def random_states(self, seed):
        """Uniform random states, within the tag dictionary when there is one (CGS start)."""
        rng = np.random.default_rng(seed)
        k = self.model.n_states
        if not self.mask.shape[0]:
            return rng.integers(0, k, size=self.corpus.n_tokens).astype(np.int32)
        allowed = self.mask[self.index]
        cumulative = np.cumsum(allowed, axis=1)
        draws = rng.random(self.corpus.n_tokens) * cumulative[:, -1]
        return (cumulative <= draws[:, None]).sum(axis=1).astype(np.int32)


def _sequence_starts(offsets, marginals):
    """Start counts: the summed marginals of every sequence's first token."""
    firsts = offsets[:-1][offsets[1:] > offsets[:-1]]
    return marginals[firsts].sum(axis=0, dtype=np.float64)


def _like_input(X, corpus, values):
    """Return per-token values in the layout the caller gave: list in, list out."""
    if isinstance(X, (list, tuple)):
        return corpus.split_like(values)
    return values

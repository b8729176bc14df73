"""Acoustic unit discovery: a Dirichlet process over units, each a left-to-right HMM with Gaussian-mixture
emissions (Lee and Glass 2012; Ondel, Burget and Černocký 2016), the bottom layer of
lexicon discovery from speech (Lee, O'Donnell and Glass 2015; Stengel-Eskin 2017).

The model
---------
An utterance x_1..x_T (feature frames, e.g. MFCC + deltas) is a sequence of unit occurrences; unit
boundaries are latent.  With a truncation of U units, S states a unit and M components a state:

* unit weights pi ~ GEM(gamma) truncated at U (stick-breaking, the last stick 1; thesis eq. 5.3), and
  every occurrence's unit u ~ pi, independently of the one before (Ondel et al.'s phone loop; Lee and
  Glass's DP mixture of HMMs);
* state s of unit u stays with probability a_us or moves on (from the last state: the unit ends),
  (a_us, 1 - a_us) ~ Dir(alpha, alpha);
* with ``presegment``, a unit may begin only at the candidate boundaries of a spectral-change
  pre-segmentation (Lee and Glass 2012 §4, after Glass 2003; `cvbayes.speech.spectral_change_starts`): the
  paths that begin a unit elsewhere get probability zero, in training and decoding alike;
* a frame in state (u, s) comes from a mixture of M diagonal Gaussians, weights ~ Dir(beta) and each
  component's (mu, tau) under the Normal-Gamma prior of `cvbayes.families.Gaussian`
  (`cvbayes.families.gaussian.GaussianMixture`).

The composite chain's dynamic program is `cvbayes.chains.composite` (O(T U S) a pass).  Its expected
statistics, `UnitCounts`, are the unit occurrences E[n_u], each state's stays and leaves (leaves = E[n_u]:
an occurrence leaves each state once) and the components' (1 + 2D, U S M) Gaussian statistics.

The learners
------------
Every learner is a schedule of `cvbayes.schedules` and a rule of `cvbayes.core.rules`, as for the HMM:

==========  ===============================  =====  ===============================================
algorithm   schedule (unit)                  rule   reference
==========  ===============================  =====  ===============================================
``vb``      batch (utterance)                VB     Ondel et al. 2016; Stengel-Eskin 2017 §1.3
``cvi``     leave_one_out (utterance)        MEAN   thesis §3.5 (CVI-2), §3.7.1, ch. 5 (eq. 5.37-5.39)
``gibbs``   gibbs (blocked, uncollapsed)     draws  Lee and Glass 2012
``svi``     stochastic (minibatch of utt.)   VB     Hoffman et al. 2013
``scvi``    stochastic (minibatch of utt.)   MEAN   thesis §3.7.2 (eq. 3.98-3.104)
==========  ===============================  =====  ===============================================

``vb`` runs forward-backward under exp(E[log theta]) of q(theta) = prod of the posteriors of the
counts: G[pi_u] of the stick-breaking posterior Beta(1 + n_u, gamma + n_{>u}), exp E[log a], exp E[log w]
and exp E[log N(x | mu, tau)]; its objective is the ELBO, sum_i log Z_i - KL(q(theta) || p(theta)),
which never decreases.  ``svi`` takes the same tables from running averages of the counts.

``cvi`` keeps q(z) = prod_i q(z^i) over utterances, with the unit weights, transitions, mixture weights
and Gaussians all integrated out, and updates one utterance at a time.  Its update
q(z^i) ∝ exp E[log p(x^i, z^i | x^{-i}, z^{-i})] is approximated as thesis §3.5 and §3.7.1 do:

1. the utterance's joint predictive is replaced by the product of one-draw predictives given everyone
   else (eq. 3.55, 3.89): the counts the utterance itself adds while it unfolds (a unit used twice in
   it, a state's second frame) are left out;
2. expectations over q(z^{-i}) are taken inside (zeroth-order Taylor, eq. 3.49-3.50, 3.91-3.96): the
   predictive is evaluated at the expected counts E[C^{-i}].

The result is forward-backward under MEAN tables of the leave-one-utterance-out counts: the sticks'
posterior means (the exact predictive of the next unit given counts, the one-level analogue of
eq. 5.38), (stays + alpha) / (occupancy + 2 alpha), (n_cm + beta) / (n_c + M beta), and each
component's Student-t predictive (eq. 3.96).  The concentration gamma is fixed; learning it would need
E[psi(gamma + n_{>u})], split at zero with q(n_{>u} > 0) as eq. 5.35-5.36 do for the HDP-HMM (not done).
A third approximation is one of memory: each frame's posterior over the U S M components is stored to
its ``components_per_frame`` largest entries, renormalised (models/units_kernels.py); the unit and
transition statistics are stored whole.  The objective is the sum of the updates' log normalisers, a
leave-one-utterance-out predictive log-likelihood (not a bound, not monotone).

``scvi`` replaces E[C^{-i}] by running averages of minibatch counts scaled to the corpus (eq. 3.98-3.104),
keeping no local statistics: memory O(parameters) whatever the corpus size, as ``svi``.

``gibbs`` is the reference: each sweep draws the parameters from their posterior given the current
segmentation (sticks from their Betas, a from its Beta, mixture weights from their Dirichlets, (mu, tau)
from the Normal-Gamma posterior), then every utterance's units, boundaries, states and components at
once by forward filtering and backward sampling (`chains.composite.unit_sample`), the utterances in
parallel, each with its own generator.  Its objective is log p(x, z) of the sample with every
parameter integrated out.

Data and files
--------------
`fit` takes a list of (T_i, D) feature arrays or one (N, D) array with ``lengths`` (hmmlearn's layout).
No normalisation is done here: the Normal-Gamma prior is centred on the training frames' mean, with an
expected precision of their inverse variance (`Gaussian.prepare`).  `save` writes the expected counts
and priors to an ``.npz`` archive without pickles; checkpoints resume bit for bit (`cvbayes.checkpoints`).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..chains.composite import batch_unit_sample, batch_unit_viterbi
from ..core import rules
from ..core.rules import MEAN, VB, check_prior
from ..core.sampling import log_dirichlet_draws
from ..core.statistics import DecayingCounts
from ..core.units import ZeroProbabilityError
from ..data.corpus import Corpus, as_corpus
from ..families.gaussian import GaussianMixture
from ..schedules import Algorithm, batch, gibbs, leave_one_out, stochastic
from ..schedules.driver import check_positive_int
from .base import BayesModel
from .hdp import effective_states

from .units_structures import (BatchUnits, CollapsedUnits, SampledUnits, Segments, StochasticUnits, UnitCounts,
                               UnitTables, Utterances, chain_chunks, presegmented, reading_frames,
                               unit_expectations, unit_log_evidence)

# the frames k-means sees for the start (a uniform sample of them)
START_FRAMES = 10_000
START_STREAM = 30

START_STAY = 0.5

# The truncation U: at 50 units, 49 were used on synthetic Brent (the truncation bound); at 100, 77-86
# (cvi and vb, 2 seeds, 300 training utterances outside the experiment's, 10 passes) with boundary F1 the
# same (0.64 against 0.65), purity 0.55 -> 0.64 and NMI 0.44 -> 0.49; Ondel et al. 2016 truncate at 100 too
# (docs/results/units/README.md).
DEFAULT_UNITS = 100


ALGORITHMS = {
    "vb": Algorithm(batch, VB, "utterance", "Ondel, Burget and Černocký 2016", 40),
    "cvi": Algorithm(leave_one_out, MEAN, "utterance", "thesis §3.5, §3.7.1, ch. 5", 40),
    "gibbs": Algorithm(gibbs, "draw", "utterance (blocked)", "Lee and Glass 2012", 200),
    "svi": Algorithm(stochastic, VB, "minibatch of utterances", "Hoffman, Blei, Wang and Paisley 2013", 20),
    "scvi": Algorithm(stochastic, MEAN, "minibatch of utterances", "thesis §3.7.2", 20),
}

OBJECTIVES = {
    "vb": "evidence lower bound: sum_i log Z_i - KL(q(theta) || p(theta))",
    "cvi": "sum over utterances of the update's log normaliser: a leave-one-utterance-out predictive log-likelihood",
    "gibbs": "log p(x, z) of the current sample, every parameter integrated out",
    "svi": "per-frame log Z of the pass's minibatch utterances under the VB tables (no KL term)",
    "scvi": "per-frame log Z of the pass's minibatch utterances under the MEAN tables of the running counts",
}


class Training(NamedTuple):
    """What `AcousticUnits._prepare` makes of fit's input: the utterances, and the Dask client and
    number of shards of vb on shards (None without)."""

    data: Utterances
    client: Any
    n_shards: int | None




class AcousticUnits(BayesModel):
    """Acoustic unit discovery (module notes) in scikit-learn's shape.

    Parameters
    ----------
    n_units : int, default 100 (`DEFAULT_UNITS`)
        Truncation U of the Dirichlet process over units.
    n_states : int, default 3
        States S of every unit's left-to-right HMM.
    n_components : int, default 2
        Gaussians M of every state's mixture.
    algorithm : {"vb", "cvi", "gibbs", "svi", "scvi"}, default "vb"
    n_iter : int, optional
        Passes over the data (Gibbs sweeps); the algorithm's default when None (vb, cvi 40; gibbs 200;
        svi, scvi 20).
    gamma : float, default 1.0
        Concentration of the Dirichlet process over units.
    transition_prior : float, default 1.0
        Dirichlet pseudo-count alpha on every state's (stay, leave) probabilities.
    weight_prior : float, default 1.0
        Dirichlet pseudo-count beta on every mixture's weights.
    prior_kappa, prior_shape : float, default 0.1 and 2.0
        The Normal-Gamma prior: mu | tau ~ N(m0, 1 / (prior_kappa tau)) and tau ~ Gamma(prior_shape,
        prior_shape v0), with m0 and v0 the training frames' mean and variance (so E[tau] = 1 / v0).
    batch_size : int, default 32
        svi, scvi: utterances a minibatch, drawn uniformly with replacement.
    kappa, tau0 : float, default 0.6 and 1.0
        svi, scvi: step sizes rho_m = (tau0 + m)^-kappa (thesis §3.8.4's names).
    components_per_frame : int, default 4
        cvi: each frame's posterior over components is stored to this many entries (module notes).
    presegment : bool, default False
        Let a unit begin only at the candidate boundaries of a spectral-change pre-segmentation (Lee and
        Glass 2012, `cvbayes.speech.spectral_change_starts`, on the first 13 dimensions: the static cepstra
        of MFCC + deltas), in training and decoding alike.
    random_state : int, default 0
        Seeds the start (k-means), the minibatches and the samples.
    n_init : int, default 1
        Restarts from seeds random_state, random_state + 1, ...; the run with the highest last objective
        is kept.

    ``fit(X, lengths)`` takes a list of (T_i, D) feature arrays, or one (N, D) array with ``lengths``,
    besides `BayesModel.fit`'s arguments, and ``client`` (a dask.distributed.Client: vb's E-step on the
    client's workers, each on its shard of whole utterances, `cvbayes.models.units_shards`) and
    ``n_shards`` (shards with a client; default one a worker).

    Attributes
    ----------
    counts_ : `UnitCounts`, the expected statistics of the fitted posterior (the last sample's for gibbs)
    weights_ (U,), stay_ (U, S), mixture_weights_ (U, S, M), means_ and covars_ (U, S, M, D):
        the posterior means of the parameters
    n_units_used_ : the fewest units that hold 99 % of the training frames (thesis footnote 4)
    history_ : list of `schedules.IterationRecord`; ``objective_name_`` says what the objective is
    n_iter_ : the passes run (Gibbs sweeps)
    local_memory_bytes_, global_memory_bytes_ : the learner's per-utterance state and its global counts
    sample_ : gibbs only: the current sample, every frame's composite state u S + s ("states"), component
        ("components") and whether a unit starts there ("starts"), updated in place sweep by sweep
    """

    MODEL_NAME = "units"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FIT_OPTIONS = ("lengths", "client", "n_shards")

    def __init__(self, n_units=DEFAULT_UNITS, n_states=3, n_components=2, algorithm="vb", n_iter=None, gamma=1.0,
                 transition_prior=1.0, weight_prior=1.0, prior_kappa=0.1, prior_shape=2.0, batch_size=32,
                 kappa=0.6, tau0=1.0, components_per_frame=4, presegment=False, random_state=0, n_init=1):
        self._keep_params(locals())
        self._check_learner("n_units", "n_states", "n_components", "batch_size", "components_per_frame", "n_init")
        if n_iter is not None:
            check_positive_int("n_iter", n_iter)
        for name in ("gamma", "transition_prior", "weight_prior", "prior_kappa"):
            check_prior(name, getattr(self, name))
        if not float(prior_shape) > 0.5:
            raise ValueError(f"prior_shape must exceed 0.5, got {prior_shape!r}")
        if not 0.0 <= float(kappa) <= 1.0:
            raise ValueError(f"kappa must lie in [0, 1], got {kappa!r}")
        if not float(tau0) >= 1.0:
            raise ValueError(f"tau0 must be at least 1 so that every step size is at most 1, got {tau0!r}")

    # -- the model's parts: data, start, tables, expectations, estimates ------------------------------
    def _data(self, X, lengths, training):
        """How data become units: the utterances, checked (`_corpus`), with the pre-segmentation's candidate
        unit starts."""
        corpus = self._corpus(X, lengths, training)
        return Utterances(corpus, presegmented(corpus, self.presegment))

    def _corpus(self, X, lengths, training):
        """The utterances as a `Corpus`, checked (finite frames, D as fitted, at least S frames an utterance: a
        unit needs one a state)."""
        if not training:
            self._check_fitted()
        corpus = as_corpus(X, lengths)
        if corpus.is_discrete or corpus.observations.ndim != 2:
            raise ValueError("acoustic units need real-valued feature frames: a list of (T, D) float arrays, "
                             "or one (N, D) float array with lengths")
        if corpus.n_sequences == 0 or corpus.n_tokens == 0:
            raise ValueError("no frames to learn from")
        n_dims = corpus.observations.shape[1]
        if not training and n_dims != self.family.n_dims:
            raise ValueError(f"the model was fitted on {self.family.n_dims}-dimensional frames; these have {n_dims}")
        short = np.flatnonzero(corpus.lengths < self.n_states)
        if short.size:
            i = int(short[0])
            raise ValueError(f"utterance {i} has {corpus.lengths[i]} frames, fewer than the {self.n_states} states "
                             f"of a unit (each state takes at least one frame)")
        return corpus

    def _start(self, data, rng):
        """How to start: the point parameters whose E-step every learner begins with: component means
        and variances from k-means on up to START_FRAMES frames (`Gaussian.draw_start`), equal
        mixture weights, stay probabilities 1/2 and equal unit weights."""
        family = self.family
        n_composite = self.n_units * self.n_states
        n_columns = n_composite * family.n_components
        take = np.sort(rng.choice(data.n_frames, size=min(START_FRAMES, data.n_frames), replace=False))
        sample = Corpus(data.features[take], np.array([0, take.shape[0]]))
        start = family.components.draw_start(rng, sample, n_columns)
        weights = np.full((n_composite, family.n_components), 1.0 / family.n_components)
        return UnitTables(np.full(self.n_units, -np.log(self.n_units)), np.full(n_composite, np.log(START_STAY)),
                          np.full(n_composite, np.log(1.0 - START_STAY)),
                          family.table_from_params(start["means"], start["covars"], weights))

    def _tables(self, counts, rule):
        """The tables of ``rule`` (VB or MEAN, `cvbayes.core.rules`) from expected counts."""
        log_trans = np.log(rules.dirichlet_table(rule, counts.trans, self.transition_prior))
        return UnitTables(np.log(rules.stick_table(rule, counts.units, self.gamma)),
                          np.ascontiguousarray(log_trans[:, 0]), np.ascontiguousarray(log_trans[:, 1]),
                          self.family.table(counts.stats, rule))

    def _expectations(self, tables, data):
        """The utterances' expected statistics under a table: (UnitCounts, log Z of every utterance)."""
        return unit_expectations(self.family, self.n_states, tables, data)

    def _kl(self, counts):
        """KL(q(theta) || p(theta)) of the posterior the counts give: VB's penalty."""
        return (rules.stick_kl(counts.units, self.gamma) + rules.dirichlet_kl(counts.trans, self.transition_prior)
                + self.family.kl(counts.stats))

    def _log_joint(self, counts):
        """log p(x, z) of hard counts with every parameter integrated out (the sampler's objective)."""
        return (rules.stick_log_marginal(counts.units, self.gamma)
                + rules.dirichlet_log_marginal(counts.trans, self.transition_prior)
                + self.family.log_marginal(counts.stats))

    def _draw_tables(self, rng, counts):
        """Parameters drawn from the posterior of hard counts, as tables (the Gibbs sampler)."""
        u, v = rules.stick_posterior(counts.units, self.gamma)
        log_sticks = log_dirichlet_draws(rng, np.stack([u, v], axis=1))
        log_entry = np.append(log_sticks[:, 0], 0.0) + np.concatenate([[0.0], np.cumsum(log_sticks[:, 1])])
        log_trans = log_dirichlet_draws(rng, counts.trans + self.transition_prior)
        return UnitTables(log_entry, np.ascontiguousarray(log_trans[:, 0]), np.ascontiguousarray(log_trans[:, 1]),
                          self.family.draw_table(rng, counts.stats))

    def _set_fitted(self, counts, rule=MEAN, data=None):
        """Statistics -> fitted attributes: the posterior means (whatever the learner's rule)."""
        self.counts_ = UnitCounts(*(np.array(block, dtype=float) for block in counts))
        shape = (self.n_units, self.n_states)
        self.weights_ = rules.stick_table(MEAN, self.counts_.units, self.gamma)
        self.stay_ = rules.dirichlet_table(MEAN, self.counts_.trans, self.transition_prior)[:, 0].reshape(shape)
        fitted = self.family.fitted(self.counts_.stats)
        self.means_ = fitted["means"].reshape(*shape, self.n_components, -1)
        self.covars_ = fitted["covars"].reshape(self.means_.shape)
        self.mixture_weights_ = fitted["weights"].reshape(*shape, self.n_components)
        frames = np.maximum(self.counts_.trans.sum(axis=1), 0.0).reshape(shape).sum(axis=1)
        self.n_units_used_ = effective_states(frames)

    @property
    def global_memory_bytes_(self):
        """The global counts' memory (every learner keeps one copy of them)."""
        return sum(block.nbytes for block in self.counts_)

    # -- fit's hooks (`cvbayes.schedules.driver`) ----------------------------------------------------------
    def _n_passes(self):
        return self.n_iter or ALGORITHMS[self.algorithm].default_iterations

    def _step_sizes(self):
        return int(self.batch_size), float(self.kappa), float(self.tau0)

    def _prepare(self, X, y=None, lengths=None, client=None, n_shards=None):
        """The utterances checked (``y``: the lengths, hmmlearn's second argument), and the mixtures'
        prior centred on their frames."""
        if client is not None and self.algorithm != "vb":
            raise ValueError(f"algorithm {self.algorithm!r} does not run on shards; client= takes vb")
        data = self._data(X, y if lengths is None else lengths, training=True)
        self.family = GaussianMixture(self.n_components, self.weight_prior, kappa=float(self.prior_kappa),
                                      shape=float(self.prior_shape))
        self.family.prepare(data.corpus, self.n_units * self.n_states)
        self.n_iter_ = self._n_passes()
        return Training(data, client, n_shards)

    def _fingerprint(self, training):
        return training.data.features, training.data.offsets

    def _start_tables(self, data, run):
        return self._start(data, np.random.default_rng([run.seed, START_STREAM]))

    def _batch(self, training, run):
        """VB on `schedules.batch`, on a client's shards with one; the first statistics from the start's
        E-step."""
        structure = BatchUnits(self, training.data)
        if training.client is not None:
            from .units_shards import ShardedUnits

            structure = ShardedUnits(structure, training.client, training.n_shards)
        try:
            statistics = structure.expectations(self._start_tables(training.data, run))[0]
        except BaseException:
            if training.client is not None:
                structure.close()
            raise
        self.local_memory_bytes_ = 0
        return structure, statistics, None

    def _collapsed(self, training, run):
        """CVI on `schedules.passes` and `schedules.leave_one_out` (models/units_kernels.py)."""
        data = training.data
        state = CollapsedUnits(self, data, self._start_tables(data, run), int(self.components_per_frame))
        run.checkpoint.track_arrays("cvi", state.arrays())
        self.local_memory_bytes_ = state.memory_bytes
        return state

    def _sampler(self, training, run):
        """The blocked Gibbs sampler, from a path drawn under the start; ``sample_`` is its state, which a
        callback sees change sweep by sweep."""
        data = training.data
        state = SampledUnits(self, data, self._start_tables(data, run), run.rng)
        self.sample_ = state.arrays()
        run.checkpoint.track_arrays("gibbs", self.sample_)
        run.checkpoint.track_generator("gibbs.rng", run.rng)
        self.local_memory_bytes_ = sum(array.nbytes for array in self.sample_.values())
        return state

    def _stochastic(self, training, run):
        """SVI (rule VB) and SCVI (rule MEAN) on `schedules.stochastic`, from the start's E-step."""
        data = training.data
        counts, _ = self._expectations(self._start_tables(data, run), data)
        blocks = {name: DecayingCounts(value) for name, value in zip(UnitCounts._fields, counts)}
        self.local_memory_bytes_ = 0
        return StochasticUnits(self, data, run.how.rule, blocks)

    # -- using a fitted model ------------------------------------------------------------------------
    def _fitted_tables(self):
        self._check_fitted()
        return self._tables(self.counts_, MEAN)

    def _viterbi(self, data):
        tables = self._fitted_tables()
        states = np.empty(data.n_frames, dtype=np.int32)
        starts = np.empty(data.n_frames, dtype=np.bool_)
        for a, b in data.blocks():
            begin, end = data.offsets[a], data.offsets[b]
            offsets = data.offsets[a:b + 1] - begin
            scores = np.empty(b - a)
            log_lik, _ = self.family.emission_rows(tables.emission, data.features[begin:end])
            batch_unit_viterbi(*tables[:3], data.log_start[begin:end], log_lik, offsets, self.n_states,
                               chain_chunks(offsets, log_lik), states[begin:end], starts[begin:end], scores)
            bad = np.flatnonzero(~np.isfinite(scores))
            if bad.size:
                raise ZeroProbabilityError(f"utterance {a + int(bad[0])} has probability zero under every path")
        return states, starts

    def decode(self, X: Any, lengths: ArrayLike | None = None) -> list[Segments]:
        """The most probable segmentation of every utterance into units (Viterbi over the chain of units,
        under the posterior-mean tables with Student-t emissions): one `Segments` an utterance."""
        data = self._data(X, lengths, training=False)
        return self._segments(*self._viterbi(data), data.offsets)

    def _segments(self, states, starts, offsets):
        """Every utterance's `Segments` from a path's composite states and unit starts."""
        out = []
        for a, b in zip(offsets[:-1], offsets[1:]):
            first = np.flatnonzero(starts[a:b])
            ends = np.append(first[1:], b - a)
            out.append(Segments(states[a + first] // self.n_states, first, ends))
        return out

    def sample_readings(self, X: Any, n_draws: int, random_state=0,
                        lengths: ArrayLike | None = None) -> list[list[Segments]]:
        """``n_draws`` segmentations of every utterance into units drawn from their posterior under the tables
        `decode` reads (forward filtering, backward sampling: `chains.composite.unit_sample`, as the sampler
        draws its paths): a list of ``n_draws`` `Segments` an utterance."""
        data = self._data(X, lengths, training=False)
        tables = self._fitted_tables()
        seeds = np.random.default_rng(random_state).integers(2 ** 62, size=n_draws)
        states = np.empty((n_draws, data.n_frames), dtype=np.int32)
        starts = np.empty((n_draws, data.n_frames), dtype=np.bool_)
        for a, b in data.blocks():
            begin, end = data.offsets[a], data.offsets[b]
            offsets = data.offsets[a:b + 1] - begin
            log_z = np.empty(b - a)
            log_lik, _ = self.family.emission_rows(tables.emission, data.features[begin:end])
            chunks = chain_chunks(offsets, log_lik)
            for draw, seed in enumerate(seeds):
                batch_unit_sample(*tables[:3], data.log_start[begin:end], log_lik, offsets, self.n_states, chunks,
                                  int(seed), a, states[draw, begin:end], starts[draw, begin:end], log_z)
                bad = np.flatnonzero(~np.isfinite(log_z))
                if bad.size:
                    raise ZeroProbabilityError(f"utterance {a + int(bad[0])} has probability zero under every path")
        draws = [self._segments(states[draw], starts[draw], data.offsets) for draw in range(n_draws)]
        return [list(utterance) for utterance in zip(*draws)]

    def reading_expectations(self, X: Any, readings: list[Segments], rule=VB, weights=None,
                             lengths: ArrayLike | None = None, counts=None) -> tuple[UnitCounts, np.ndarray]:
        """The expected statistics of one E-step given a reading of every utterance (one `Segments` each, as
        `decode` gives: the units and the frames of every occurrence), the states and mixture components within
        each occurrence left latent and every path off the reading given probability zero, under the tables of
        ``rule`` (`cvbayes.core.rules`) of the fitted counts (or of ``counts``, a `UnitCounts`: the collapsed
        n-best joint's leave-one-out counts); ``weights``: each utterance's statistics count that many times
        (`unit_expectations`).  Returns (UnitCounts, log Z of every reading)."""
        data, frame_units = self._reading_data(X, readings, lengths)
        return unit_expectations(self.family, self.n_states, self._reading_tables(counts, rule), data, frame_units,
                                 weights)

    def reading_log_evidence(self, X: Any, readings: list[Segments], rule=VB,
                             lengths: ArrayLike | None = None, counts=None) -> np.ndarray:
        """log Z of every reading (I,): `reading_expectations`' second value from the forward passes alone (of
        eq. 3.16-3.17's forward-backward on the chain of units restricted to the reading,
        `units_structures.unit_log_evidence`); -inf for a reading no path explains (an occurrence shorter than S
        frames), which `reading_expectations` refuses.  ``counts``: as `reading_expectations`."""
        data, frame_units = self._reading_data(X, readings, lengths)
        return unit_log_evidence(self.family, self.n_states, self._reading_tables(counts, rule), data, frame_units)

    def _reading_tables(self, counts, rule):
        """The tables of ``rule`` of ``counts`` (the fitted counts when None)."""
        return self._tables(self.counts_ if counts is None else counts, rule)

    def _reading_data(self, X, readings, lengths):
        """(Utterances, frame_units (N,)) of a reading of every utterance (`reading_frames`): only the reading's
        paths are left."""
        self._check_fitted()
        # the reading's boundaries take the place of the pre-segmentation's candidates
        corpus = self._corpus(X, lengths, training=False)
        starts, frame_units = reading_frames(readings, corpus.offsets, self.n_units)
        return Utterances(corpus, starts), frame_units

    def fit_reading(self, X: Any, readings: list[Segments], lengths: ArrayLike | None = None) -> AcousticUnits:
        """Re-estimate the units from a reading of every utterance (`reading_expectations`): the fitted
        statistics become the expected statistics of one E-step under the posterior-mean tables (an EM step of
        the units given the reading; `LexiconDiscovery`'s joint rounds read the words' underlying units)."""
        self._set_fitted(self.reading_expectations(X, readings, MEAN, lengths=lengths)[0])
        return self

    def elbo_penalty(self) -> float:
        """-KL(q(theta) || p(theta)) of the posterior the fitted counts give (VB's penalty; module notes)."""
        self._check_fitted()
        return -self._kl(self.counts_)

    def predict(self, X: Any, lengths: ArrayLike | None = None) -> list[np.ndarray] | np.ndarray:
        """The unit of every frame on the Viterbi path: a list of arrays for a list, else one array."""
        data = self._data(X, lengths, training=False)
        units = self._viterbi(data)[0] // self.n_states
        if isinstance(X, (list, tuple)):
            return np.split(units, data.offsets[1:-1])
        return units

    def score_samples(self, X: Any, lengths: ArrayLike | None = None) -> np.ndarray:
        """log p(x^i) of every utterance under the posterior-mean tables (the predictive of eq. 3.108-3.109)."""
        data = self._data(X, lengths, training=False)
        return unit_log_evidence(self.family, self.n_states, self._fitted_tables(), data)

    def score(self, X: Any, lengths: ArrayLike | None = None) -> float:
        """Total predictive log-likelihood of the utterances (divide by the frames for a per-frame figure)."""
        return float(self.score_samples(X, lengths).sum())

    # -- files ------------------------------------------------------------------------------------
    def _saved(self):
        prior = self.family.components
        meta = {"params": self.get_params(), "n_iter": int(self.n_iter_)}
        return meta, {**self.counts_._asdict(), "prior_mean": prior.mean, "prior_rate": prior.rate}

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        model = cls(**meta["params"])
        model.family = GaussianMixture(model.n_components, model.weight_prior, mean=arrays["prior_mean"],
                                       kappa=float(model.prior_kappa), shape=float(model.prior_shape),
                                       rate=arrays["prior_rate"])
        model.family.components.n_dims = arrays["prior_mean"].shape[0]
        model.family.n_mixtures = model.n_units * model.n_states
        model.n_iter_ = meta["n_iter"]
        model._set_fitted(UnitCounts(*(arrays[name] for name in UnitCounts._fields)))
        return model

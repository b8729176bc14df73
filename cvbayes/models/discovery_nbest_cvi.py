"""The collapsed joint fit of `LexiconDiscovery` (``joint="nbest"``, cvi): the unit layer and the word layer
(`AcousticUnits`, `NoisyWords`) learned together over a fixed set of unit readings of every utterance, with both
layers' parameters integrated out: the collapsed counterpart of `cvbayes.models.discovery_nbest` (issue 31).

The objective
-------------
The generative story is the vb joint's (`cvbayes.models.discovery_nbest`, The objective): an utterance u chooses
one of its candidate readings k_u (the same candidates, drawn once, `discovery_nbest.candidate_readings`), its
frames come from the unit layer restricted to reading k_u (states and mixture components latent, z^A_u) and the
reading's spoken string from the word layer (segmentation, cached or base words and edits latent, z^W_u).  CVI
integrates out both layers' parameters theta^A, theta^W and keeps q(k, z) = prod_u q(k_u, z_u) with the
utterance as the unit of both layers.  The update of one utterance (thesis eq. 3.44-3.46),

    q(k_u, z_u) ∝ exp E_{q(k_-u, z_-u)}[log p(x_u, k_u, z_u | x_-u, k_-u, z_-u)],

factorises given k_u into the two layers' predictives, since the layers share no parameter: the unit layer's
p(frames_u, z^A_u | k_u, other utterances' z^A) and the word layer's p(spoken(k_u), z^W_u | other utterances'
z^W).  With the two approximations every CVI learner here takes, (1) the utterance's own counts do not see each
other while it unfolds (CVI-2, eq. 3.47, 3.55) and (2) the expectation over q(k_-u, z_-u) taken inside at the
expected counts (zeroth-order, eq. 3.49-3.50), each layer's predictive is its collapsed chart under the tables of
the other utterances' expected counts, so that

    q(k_u = k) ∝ exp(A^-u_uk + W^-u_uk),   q(z_u | k_u = k) = each layer's chart posterior given reading k   (K1)

with A^-u_uk the log Z of reading k under the unit layer's MEAN tables (`cvbayes.models.units`, cvi: the sticks'
posterior means, the stay/leave and mixture-weight means and the Student-t predictive, eq. 3.96) of the counts
C^A - L^A_u (`AcousticUnits.reading_log_evidence` with ``counts``), and W^-u_uk the chart log Z of reading k's
spoken string under eq. C1 of `cvbayes.models.noisy_words` of the counts C^W - L^W_u (0 for an empty string).
Utterance u's local statistics are then the q(k_u)-weighted sums over its readings of each reading's expected
statistics under the same leave-u-out tables:

    L^A_u = sum_k q(k_u = k) E[stats^A of reading k],   L^W_u = sum_k q(k_u = k) E[stats^W of spoken(k)],    (K2)

the unit layer's by one forward-backward of each candidate weighted by q (`AcousticUnits.reading_expectations`'
``weights``), the word layer's by `CollapsedNoisyWords`, whose unit is here one candidate reading with its
q(k_u = k) as its (fractional) copies: its statistics are linear in the copies, so the candidates of u with their
copies sum to eq. K2.  The candidates of one utterance are alternatives, so they are taken out and scored
together and do not see each other.  The objective is sum_u log sum_k exp(A^-u_uk + W^-u_uk), each term under
the counts of its update: a leave-one-utterance-out predictive log-likelihood of both layers (the cvi learners'
objective), not a bound; it need not rise from round to round (``joint_objective_`` keeps it a round).

The schedule (`CollapsedNbestJoint.sweep`): a round visits the utterances in a fresh random order; for each,
(1) its statistics out of both layers' collapsed counts, (2) A^-u and W^-u of its candidates, (3) q(k_u) (eq.
K1), (4) eq. K2 under the same tables, back in.  After the round the word layer's pass-fixed parts are redone
(its expected tables and the offered words, `CollapsedNoisyWords.after_pass`).

Start: all weight on every utterance's Viterbi reading (the pipeline's reading): the unit layer's local
statistics are each Viterbi reading's E-step under the pipeline's fitted MEAN tables; the word layer's, one
E-step of each candidate under the pipeline's cvi counts taken as a VB q and carried to the candidates' alphabet
(`NoisyWords.collapsed_over`; a candidate of weight 0 holds nothing).  The first round then weighs the candidates.

What is approximate, beyond (1)-(2) above and each layer's own cvi approximations (`cvbayes.models.units`,
`cvbayes.models.noisy_words`, CVI): the word layer's q(n_k = 0) of eq. 5.46 takes a candidate's copies as
independent draws, c log(1 - min(E[n_k] / c, 1)), with c = q(k_u = k) fractional (a geometric interpolation
between the utterance holding the word and not); the unit layer stores every utterance's statistics whole (no
``components_per_frame`` truncation, so it is not bit for bit `AcousticUnits`' cvi on one candidate); the
candidates are fixed, drawn from the pipeline's units (q(k_u) is over them, not over every reading).

Cost: a round runs, per utterance, each layer's tables once (the unit layer's MEAN tables of all units, the word
layer's eq. C1), the forward pass and the forward-backward of every candidate, and the word chart of every
candidate's spoken string twice (log Z, then the E-step); the vb joint computes its tables once a round.

Measured (synthetic Brent, the uld experiment's 500 training utterances, cvi, seed 0, one unit layer of 30
passes, ``n_best=5``, ``n_draws=20``, 3 rounds; one thread on a shared 2-core machine): 563 candidates (1.13 an
utterance), q(k | u)'s largest entry 0.985 on average, 3 % of the utterances read by another candidate than the
Viterbi one, 1.06 distinct spoken strings an utterance above 0.01.  The objective rose (-1,679,456 ->
-1,679,184 -> -1,679,010).  Token F1 20.1 % against the cvi pipeline's 19.6 % and the cvi hard rounds' 20.2 %
(boundary F1 56.6, 56.3, 55.7 %; held-out token F1 17.7, 17.1, 17.8 %).  With the machine's two BLAS threads the
unit layer ends elsewhere (`docs/experiments.md`), and over seeds 0-2 (`cvbayes experiment uld --algorithms cvi`,
docs/results/uld) the n-best joint scores 26.2 ± 0.7 % against the pipeline's 25.8 ± 0.1 % and the hard rounds'
28.4 ± 0.3 %.  Drawing the candidates took 15 s, the
start 3.5 s and a round 7.6-8.1 s (the unit layer's forward passes 1.2 s, its weighted forward-backward 2.3 s,
the word layer the rest), about one pass of each layer (4.7 and 2.7 s); the word layers 105 s in all against
the pipeline's 63 s and the hard rounds' 344 s.

Checkpoints: as the vb joint's (``LexiconDiscovery.fit(..., checkpoint=PATH)`` saves the rounds to
``PATH.nbest``, `cvbayes.checkpoints`), with the collapsed state: the unit layer's counts and local statistics,
the word layer's `CollapsedNoisyWords` state, q(k | u) (the word units' copies), the order's generator and the
objective so far.
"""
from __future__ import annotations

import numpy as np

from ..checkpoints import NO_CHECKPOINT
from ..core.rules import MEAN
from .discovery_nbest import CandidateSet, reading_posterior
from .units_structures import UnitCounts


class CollapsedReadings:
    """The unit layer's collapsed counts over the candidates (module notes, eq. K1-K2): every utterance's local
    statistics (its units, stays and leaves whole, its Gaussian statistics on the columns its readings touch) and
    their sum ``counts``.  ``bounds``: utterance u's candidates are ``readings[bounds[u]:bounds[u + 1]]``."""

    def __init__(self, units, features, readings, bounds, weights):
        self.units, self.features, self.readings, self.bounds = units, features, readings, bounds
        self.counts = UnitCounts(*(np.zeros_like(block, dtype=float) for block in units.counts_))
        self.local = []
        for u in range(len(bounds) - 1):
            self.local.append(self._expected(u, weights[bounds[u]:bounds[u + 1]], units.counts_))
            self._move(u, 1.0)

    def _candidates(self, u):
        a, b = self.bounds[u], self.bounds[u + 1]
        return self.features[a:b], self.readings[a:b]

    def _expected(self, u, weights, counts):
        """Eq. K2: utterance u's candidates' statistics weighted by ``weights`` under the MEAN tables of
        ``counts``, kept on the Gaussian columns they touch."""
        found, _ = self.units.reading_expectations(*self._candidates(u), MEAN, weights, counts=counts)
        columns = np.flatnonzero(found.stats.any(axis=0))
        return found.units, found.trans, columns, found.stats[:, columns]

    def _move(self, u, sign):
        units, trans, columns, stats = self.local[u]
        self.counts.units[...] += sign * units
        self.counts.trans[...] += sign * trans
        self.counts.stats[:, columns] += sign * stats

    def take_out(self, u):
        """Utterance u's statistics out; returns A^-u of its candidates (eq. K1)."""
        self._move(u, -1.0)
        return self.units.reading_log_evidence(*self._candidates(u), MEAN, counts=self.counts)

    def put_back(self, u, weights):
        """Utterance u's statistics (eq. K2) under the counts without it, back in."""
        self.local[u] = self._expected(u, weights, self.counts)
        self._move(u, 1.0)

    def state(self):
        return {"counts": tuple(self.counts), "local": [list(parts) for parts in self.local]}

    def restore(self, saved):
        for block, value in zip(self.counts, saved["counts"]):
            block[...] = value
        self.local = [tuple(np.array(part) for part in parts) for parts in saved["local"]]


class CollapsedNbestJoint(CandidateSet):
    """CVI of both layers over the candidates (module notes) on the pipeline's fitted ``units`` (`AcousticUnits`
    fitted by cvi, whose counts are set to the collapsed ones after `fit`) and ``words`` (a `NoisyWords` fitted by
    cvi), over the candidates (`CandidateSet`); ``random_state`` seeds the utterances' order.

    Attributes besides `CandidateSet`'s: ``acoustic`` the unit layer's `CollapsedReadings`, ``learner`` the word
    layer's `CollapsedNoisyWords` (one unit a candidate with a non-empty spoken string, ``word_unit`` (C,) its
    index or -1), ``posterior`` q(k | u) (C,), ``objective`` the leave-one-out objective of every round."""

    def __init__(self, units, words, features, candidates, spoken, random_state=0):
        super().__init__(features, candidates, spoken)
        self.units = units
        self.bounds = np.flatnonzero(np.r_[True, self.owner[1:] != self.owner[:-1], True])
        self.posterior = self.viterbi_weights()
        said = np.flatnonzero(self.type_of >= 0)
        self.word_unit = np.full(len(self.readings), -1, dtype=np.int64)
        self.word_unit[said] = np.arange(said.size)
        self.rng = np.random.default_rng(random_state)
        self.acoustic = CollapsedReadings(units, self.features, self.readings, self.bounds, self.posterior)
        self.learner = words.collapsed_over([list(self.strings[c]) for c in said], self.posterior[said], self.rng,
                                            NO_CHECKPOINT)
        self.objective = []

    def update(self, u):
        """CVI of utterance u (module notes, eq. K1-K2); returns log sum_k exp(A^-u_uk + W^-u_uk)."""
        a, b = self.bounds[u], self.bounds[u + 1]
        units = self.word_unit[a:b]
        said = units >= 0
        acoustic = self.acoustic.take_out(u)
        weights = self.learner.take_out(units[said])
        lexical = np.zeros(b - a)
        lexical[said] = self.learner.unit_log_evidence(units[said], weights)
        posterior, log_predictive = reading_posterior(acoustic + lexical, np.zeros(b - a, dtype=np.int64))
        self.posterior[a:b] = posterior
        self.learner.corpus.copies[units[said]] = posterior[said]
        self.learner.put_back(units[said], weights)
        self.acoustic.put_back(u, posterior)
        return log_predictive

    def sweep(self, iteration):
        """One round over the utterances in a fresh random order: the summed leave-one-out log predictive."""
        objective = float(sum(self.update(u) for u in self.rng.permutation(len(self.candidates))))
        self.learner.after_pass(iteration)
        return objective

    def fit(self, n_rounds, checkpoint=NO_CHECKPOINT):
        """``n_rounds`` rounds (`sweep`); the unit layer's fitted counts become the collapsed ones.
        ``checkpoint``: as `discovery_nbest.NbestJoint.fit`'s."""
        self.track(checkpoint)
        for done in range(checkpoint.resume(), n_rounds):
            self.objective.append(self.sweep(done))
            checkpoint.save_if_due(done, n_rounds)
        self.units._set_fitted(self.acoustic.counts)
        return self

    def track(self, checkpoint):
        """Declare to ``checkpoint`` what the rounds change (module notes, Checkpoints); the candidates are drawn
        again, as the vb joint's."""
        learner, said = self.learner, self.word_unit >= 0

        def restore_posterior(saved):
            self.posterior[...] = saved
            learner.corpus.copies[...] = self.posterior[said]

        def restore_objective(saved):
            self.objective = [float(value) for value in saved]

        checkpoint.track("nbest.units", self.acoustic.state, self.acoustic.restore)
        checkpoint.track("nbest.words", learner.state, learner.restore)
        checkpoint.track("nbest.posterior", lambda: self.posterior.copy(), restore_posterior)
        checkpoint.track_generator("nbest.rng", self.rng)
        checkpoint.track("nbest.objective", lambda: list(self.objective), restore_objective)

    def start(self):
        """The arrays that identify the rounds' start in a checkpoint beside the frames: the candidates and both
        layers' collapsed counts before the first round."""
        words = self.learner.state()
        return [*self.reading_arrays(), *self.acoustic.counts, words["edits"], words["customers"], words["words"]]

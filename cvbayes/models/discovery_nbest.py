"""The variational joint fit of `LexiconDiscovery` (``joint="nbest"``, vb): the unit layer and the word layer
(`AcousticUnits`, `NoisyWords`) learned together within one objective, over a fixed set of unit readings of
every utterance (issue 31: the words over an n-best unit graph, and joint learning within seed 004's ELBO).  Its
collapsed counterpart (cvi) is `cvbayes.models.discovery_nbest_cvi`, on the same candidates (`CandidateSet`).

Candidates
----------
After the pipeline's layers are fitted, every utterance u gets a fixed set of readings k = 1..K_u (a reading:
its units and their frame boundaries, a `Segments`): the Viterbi reading (`AcousticUnits.decode`) and the
distinct readings among ``n_draws`` paths drawn from the unit layer's posterior (`AcousticUnits.sample_readings`,
the sampler's forward filtering, backward sampling), at most ``n_best`` in all: the Viterbi reading, then the
drawn readings most often drawn (ties: the first drawn first).  A reading whose spoken string (the pauses at its
edges trimmed, `discovery.spoken`) is empty is left out unless the Viterbi reading's is, when the utterance keeps
its Viterbi reading alone (an utterance of pauses has no words; a reading of pauses would otherwise escape the word
layer's cost).  The set is fixed for the whole fit, so that the objective below is one function.

The objective
-------------
The generative story is the pipeline's two layers joined at the unit string: an utterance chooses one of its
candidate readings k (uniformly: a constant, left out), its frames come from the unit layer with every path off
reading k given probability zero (its states and mixture components latent), and the reading's spoken unit string
comes from the word layer (its segmentation, cached or base words and edits latent).  With the mean-field
q(k, z^A, z^W) q(theta^A) q(theta^W) over the reading, each layer's latent structure and each layer's parameters
(thesis eq. 3.11-3.12; seed 004 §1.3.1, eq. 3), the ELBO maximised over q(k, z) given q(theta) is

    L = sum_u log sum_k exp(A_uk + W_uk) - KL(q(theta^A) || p) - KL(q(theta^W) || p) + sum_j log P0(x_j)   (J1)

with A_uk the unit layer's log Z of reading k (the forward pass of the chain of units under exp E[log theta^A],
the VB tables of eq. 3.21-3.22, restricted to the reading: `AcousticUnits.reading_log_evidence`, the second
value of `AcousticUnits.reading_expectations`) and W_uk the word layer's chart log Z of the reading's spoken
string (eq. N1 and W1 of `cvbayes.models.noisy_words` under exp E[log theta^W]: `JointVB.type_log_evidence`; 0
for an empty string), and the last term the word layer's atoms x_j, each one draw from its base (NoisyWords' eq.
N2: `JointVB.penalty` holds it with the KL).  The maximising q factorises as

    q(k | u) = exp(A_uk + W_uk) / sum_k' exp(A_uk' + W_uk'),   q(z^A, z^W | k) = each layer's posterior   (J2)

given reading k, so that J1 is the sum of the two layers' VB objectives with each utterance's readings weighted
by q(k | u), plus the entropy of q(k | u).  The coordinate steps, each exact:

(a) q(k | u) and q(z | k) given q(theta) (eq. J2); J1 is evaluated here, before (b)-(c);
(b) the unit layer's q(theta^A) = prior + sum_u sum_k q(k | u) E_{q(z^A | k)}[statistics of reading k] (eq.
    3.20-3.22 with the expected counts weighted: `unit_expectations`' ``weights``; the VB update, with the
    units' KL `AcousticUnits.elbo_penalty`);
(c) the word layer's q(theta^W) from the same weights: NoisyWords' VB E-step over the distinct spoken strings, a
    string's copies the sum of q(k | u) over the readings that speak it (fractional copies), then its update
    (`JointVB.absorb`: channel rows, the ``Word+`` rule and the sticks).

(b) and (c) are one block step (the two layers' parameters share no term of J1 given q(k, z)), so J1 never
decreases from round to round (tested) while NoisyWords' grammaton is fixed (``refresh=False``, the default
here).  With the refresh, the grammaton is re-chosen after each word E-step from the cached words' and the base's
customers (NoisyWords' module notes): J1 can then dip, as NoisyWords' own ELBO can (on three tiny synthetic
problems of the tests' size it still rose over 8 rounds, but nothing guarantees it).

Measured (synthetic Brent, the uld experiment's 500 training utterances, vb, seed 0, one unit layer of 30 passes,
``n_best=5``, ``n_draws=20``): the units' posterior is sharp, 20 draws give 1.25 distinct readings an utterance
(Viterbi included), q(k | u) is nearly one-hot (its largest entry 0.99 on average, 1.03-1.05 distinct spoken
strings an utterance above 0.01), and the most probable candidate is not the Viterbi reading in 7 % of the
utterances.  J1 rose every round (-1,833,956 -> -1,832,592 in 3 rounds, -1,831,956 in 10); token F1 18.2 %
(pipeline with the channel) -> 18.5 % (3 rounds) and 18.9 % (10), boundary F1 58.2 -> 58.3 and 58.3 %.

Cost: a round runs the unit layer's forward pass over every candidate (its log Z for (a)), then its forward-backward
(the weighted statistics for (b)), and the word chart over every distinct spoken string twice (log Z, then the
E-step).  The unit layer computes a candidate frame's emission rows, its component posteriors and their statistics
under the reading's unit alone (`GaussianMixture.emission_rows`' groups, `add_statistics`), not under every unit.
On the uld experiment's 500 utterances (vb, seed 0, 623 candidates, one thread) step (a) took 0.50 s and a round
1.8-1.9 s with the emission rows of the reading's unit alone (0.94-0.99 s and 2.7-2.9 s with every unit's rows, most
of them then set to zero): the unit layer's forward passes 0.12 s (0.57-0.59 s), its weighted forward-backward
0.54-0.58 s (1.04-1.07 s), of which about 0.24 s went to (frames, U S M) component posteriors, zero off the reading,
and their statistics.  With (frames, S M) ones of the reading's unit, in CPU seconds on a machine shared with other
jobs (the range of 3 runs' medians of 5 timings, alternating with runs of the (frames, U S M) ones, in brackets),
the forward passes take 0.10-0.11 s (0.12-0.13 s), the weighted forward-backward 0.33-0.36 s (0.63-0.90 s), a round
1.6-1.7 s (2.0-2.3 s), and the hard rounds' `AcousticUnits.fit_reading` on the Viterbi readings 0.23-0.26 s
(0.41-0.42 s); most of what is left of the forward-backward is the chain kernel over all U S states
(`chains.composite.batch_unit_posteriors`).

Checkpoints: with ``LexiconDiscovery.fit(..., checkpoint=PATH)`` the rounds save their state to ``PATH.nbest``
(`cvbayes.checkpoints`, atomically) every ``checkpoint_every`` rounds and after the last: the unit layer's counts,
the word layer's q and J1 so far (`NbestJoint.track`).  The candidates are drawn again from the pipeline's layers
(restored by their own checkpoints; the draws are seeded, so they are the same readings) and the same call
resumes after the last saved round, ending bit for bit as an uninterrupted fit; a complete checkpoint leaves
only the last step (a) to run.  The checkpoint records the run (the settings, the frames, and a fingerprint of
the candidates and both layers' start, `NbestJoint.start`) and that of another run is refused.

Start: the unit layer's q is the pipeline's fitted one (its counts); the word layer's is the pipeline's fitted
NoisyWords q carried over to the candidates' alphabet (`NoisyWords.learner_over`: a unit the Viterbi strings never
used starts with the prior's channel rows).  After the rounds the units are the last q's, each training
utterance is read by its most probable candidate (``readings_``), and the word layer is the last q.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..checkpoints import NO_CHECKPOINT
from ..core.rules import VB
from .units import Segments


def candidate_readings(units, features, n_best, n_draws, random_state=0) -> list[list[Segments]]:
    """Every utterance's candidate readings (module notes, Candidates; before the pauses): the Viterbi reading
    first, then up to ``n_best`` - 1 distinct drawn readings, most often drawn first."""
    out = []
    drawn = units.sample_readings(features, n_draws, random_state) if n_best > 1 else [[] for _ in features]
    for best, draws in zip(units.decode(features), drawn):
        seen = {reading_key(best): best}
        times = {}
        for reading in draws:
            key = reading_key(reading)
            times[key] = times.get(key, 0) + 1
            seen.setdefault(key, reading)
        others = sorted((key for key in times if key != reading_key(best)), key=lambda key: -times[key])
        out.append([best] + [seen[key] for key in others[:n_best - 1]])
    return out


def reading_key(reading):
    """What tells two readings apart: their units and where each begins."""
    return tuple(reading.units.tolist()), tuple(reading.starts.tolist())


class CandidateSet:
    """The ``candidates`` of every utterance of ``features`` (module notes, Candidates; ``spoken``: a reading's
    spoken string, `discovery.spoken` with the pauses), laid end to end, for both n-best joints (vb's
    `NbestJoint` and cvi's `discovery_nbest_cvi.CollapsedNbestJoint`).

    Attributes: ``owner`` (C,) the utterance of every candidate (an utterance's adjacent), ``readings`` and
    ``features`` each candidate's, ``strings`` their spoken strings, ``types`` the distinct non-empty ones and
    ``type_of`` (C,) each candidate's (-1: empty)."""

    def __init__(self, features, candidates, spoken):
        kept = []
        for readings in candidates:
            said = [r for r in readings if spoken(r)]
            kept.append(said if spoken(readings[0]) else readings[:1])
        self.candidates = kept
        self.owner = np.repeat(np.arange(len(kept)), [len(r) for r in kept])
        self.readings = [r for readings in kept for r in readings]
        self.features = [features[u] for u in self.owner]
        self.strings = [tuple(spoken(r)) for r in self.readings]
        self.types = sorted({s for s in self.strings if s})
        index = {s: t for t, s in enumerate(self.types)}
        self.type_of = np.array([index.get(s, -1) for s in self.strings], dtype=np.int64)

    def viterbi_weights(self):
        """Weight 1 on every utterance's first candidate (its Viterbi reading)."""
        first = np.r_[True, self.owner[1:] != self.owner[:-1]]
        return first.astype(float)

    def reading_arrays(self):
        """The candidates' units and boundaries, for a checkpoint's fingerprint of the rounds' start."""
        return [array for r in self.readings for array in (r.units, r.starts, r.ends)]

    def best_readings(self):
        """Every utterance's most probable candidate under the last q(k | u) (``posterior``)."""
        out, start = [], 0
        for readings in self.candidates:
            out.append(readings[int(np.argmax(self.posterior[start:start + len(readings)]))])
            start += len(readings)
        return out


class NbestJoint(CandidateSet):
    """The joint coordinate ascent of eq. J1 (module notes) on fitted ``units`` (`AcousticUnits`, changed in
    place) and ``words`` (a `NoisyWords` fitted by vb), over the candidates (`CandidateSet`).

    Attributes besides `CandidateSet`'s: ``learner`` the word layer's `JointVB` over the distinct non-empty
    strings, ``objective`` J1 of every step (a), ``posterior`` q(k | u) (C,) of the last step (a)."""

    def __init__(self, units, words, features, candidates, spoken, refresh=False):
        super().__init__(features, candidates, spoken)
        self.units = units
        self.learner = words.learner_over([list(s) for s in self.types], self.type_copies(self.viterbi_weights()))
        self.learner.refresh = refresh
        self.objective = []

    def type_copies(self, weights):
        """Each spoken string's copies: the weights of the candidates that speak it."""
        said = self.type_of >= 0
        return np.bincount(self.type_of[said], weights=weights[said], minlength=len(self.types))

    def scores(self):
        """(A, W) (C,) of every candidate under the current q(theta) (eq. J1); A from forward passes only."""
        acoustic = self.units.reading_log_evidence(self.features, self.readings, VB)
        evidence = self.learner.type_log_evidence(self.learner.tables())
        lexical = np.where(self.type_of >= 0, evidence[np.maximum(self.type_of, 0)], 0.0)
        return acoustic, lexical

    def step_posterior(self):
        """Step (a): q(k | u) (eq. J2) and J1 under the current q(theta), appended to ``objective``."""
        acoustic, lexical = self.scores()
        self.posterior, evidence = reading_posterior(acoustic + lexical, self.owner)
        penalty = self.units.elbo_penalty() + self.learner.penalty(VB, None, None)
        self.objective.append(evidence + penalty)
        return self.posterior

    def step_parameters(self, weights):
        """Steps (b) and (c): both layers' q(theta) from the candidates' statistics weighted by ``weights``."""
        counts, _ = self.units.reading_expectations(self.features, self.readings, VB, weights)
        learner = self.learner
        learner.corpus = learner.corpus._replace(copies=self.type_copies(weights))
        learner.expectations(learner.tables())
        self.units._set_fitted(counts)

    def fit(self, n_rounds, checkpoint=NO_CHECKPOINT):
        """``n_rounds`` rounds of (a), then (b)-(c); a last (a) gives the final q(k | u) and J1.  ``checkpoint``
        (`cvbayes.checkpoints.Checkpoint`): the rounds' state saved every ``checkpoint.every`` rounds and after
        the last; the rounds it holds are not run again (module notes, Checkpoints)."""
        self.track(checkpoint)
        for done in range(checkpoint.resume(), n_rounds):
            self.step_parameters(self.step_posterior())
            checkpoint.save_if_due(done, n_rounds)
        self.step_posterior()
        return self

    def track(self, checkpoint):
        """Declare to ``checkpoint`` what the rounds change: the unit layer's counts, the word layer's q (with
        its strings' copies) and J1 so far.  The candidates are not saved: they are drawn again, the same, from
        the pipeline's layers, whose own checkpoints give them back."""
        units, learner = self.units, self.learner

        def words():
            return {**learner.state(), "copies": learner.corpus.copies}

        def restore_words(saved):
            learner.restore(saved)
            learner.corpus = learner.corpus._replace(copies=np.array(saved["copies"]))

        def restore_objective(saved):
            self.objective = [float(value) for value in saved]

        checkpoint.track("nbest.units", lambda: tuple(units.counts_), units._set_fitted)
        checkpoint.track("nbest.words", words, restore_words)
        checkpoint.track("nbest.objective", lambda: list(self.objective), restore_objective)

    def start(self):
        """The arrays that identify the rounds' start in a checkpoint beside the frames: the candidates (their
        units and boundaries) and both layers' q before the first round."""
        words = self.learner.state()
        return [*self.reading_arrays(), *self.units.counts_,
                *(words[name] for name in ("edit_counts", "first", "second", "log_pi"))]


def reading_posterior(scores, owner):
    """q(k | u) ∝ exp(score) within each utterance (``owner``, candidates of an utterance adjacent) and
    sum_u log sum_k exp(score) (eq. J2, J1)."""
    bounds = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1], True])
    log_totals = np.array([logsumexp(scores[a:b]) for a, b in zip(bounds[:-1], bounds[1:])])
    return np.exp(scores - np.repeat(log_totals, np.diff(bounds))), float(log_totals.sum())

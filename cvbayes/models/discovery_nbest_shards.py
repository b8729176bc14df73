"""The n-best joint rounds of `LexiconDiscovery` (`cvbayes.models.discovery_nbest`) with their E-steps on shards
across Dask workers (issue 31: Dask shards of utterances for the E-steps), as `cvbayes.models.units_shards` and
`cvbayes.models.noisy_words_shards` run the pipeline's layers.

What a round needs of the data is a sum over utterances (the unit layer) and over distinct spoken strings (the word
layer), or one number per candidate reading or string; the rest is small and stays where the fit runs:

* the unit shards hold whole utterances (their frames, saved once as a corpus, `cvbayes.models.shards.Shards`), and
  with them all the candidate readings of those utterances (every worker gets the readings and the unit layer's
  model once, with the shards' payload).  Per round the unit layer's counts (its q(theta^A)) go to every worker
  once and step (a) brings back A_uk of every candidate of the shard (`AcousticUnits.reading_log_evidence`, eq.
  J1), gathered in order; step (b) sends each shard the q(k | u) of its candidates and add up its weighted
  statistics pairwise on the workers (`AcousticUnits.reading_expectations` with ``weights``; `Shards.map_reduce`);
* the word shards hold whole distinct spoken strings (the word layer's utterance types, saved once with the index
  of each, which its errors name).  Per round the chart's weights (`noisy_words.Weights`) go to every worker once;
  step (a) brings back W_uk's log Z of every string of the shard (`noisy_words.chart_log_evidence`), step (c) sends
  each shard its strings' copies (the sums of q(k | u) over the readings that speak them, fractional, so sent per
  round rather than saved with the strings as `noisy_words_shards` does) and adds up NoisyWords' VB E-step
  (`noisy_words.expected_types`) pairwise on the workers.

In the calling process: q(k | u) and J1 from the gathered scores (eq. J2, `discovery_nbest.reading_posterior`),
the KL terms, and both layers' q(theta) updates from the summed statistics (`AcousticUnits._set_fitted`,
`JointVB.absorb`).  So the rounds, their checkpoints (`NbestJoint.track`: the same state, all of it here) and
their results are the unsharded rounds' up to the order of the floating-point sums.  A shard keeps no state
between rounds but its opened files (`shards.opened`).  Every step records its `PassTiming`
(``unit_shards.passes``, ``type_shards.passes``).

Measured (`benchmarks/bench_nbest_shards.py`: the uld experiment's 500 training utterances, vb, seed 0, units of 30
passes, words of 10, ``n_best=5``, ``n_draws=20``: 610 candidates, 556 distinct strings; a LocalCluster of 2
one-thread worker processes, 2 shards a side, on 2 cores shared with other jobs, load 3-7): a round sends 0.77 MB of
unit counts (to both workers) and 0.31 MB of chart weights, and the weighted statistics come back at 0.77 MB and
0.30 MB; J1 equals one process's to 1e-16 relative, q(k | u) to 2e-12.  Medians of 3 rounds in two runs: 1.83-1.95 s
a round on the shards against 1.70-2.22 s in one process (step (a) 0.62-0.70 s against 0.53-0.76 s): level, on a
machine where a shard's task had a third to nine tenths of a core (its CPU over wall seconds).  The unit side and
the word side run one after the other, and the word shards, cut at equal symbol counts, took 0.2 and 0.4 s in step
(a).
"""
from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np

from ..checkpoints import NO_CHECKPOINT
from ..core.rules import VB
from .discovery_nbest import NbestJoint
from .noisy_words import chart_log_evidence, expected_types
from .shards import Shards, headed_corpus, limit_threads, opened, split_heads
from .units_structures import UnitCounts


def _shard_candidates(token, shard, payload, first):
    """The candidates of a unit shard's utterances (``first`` the shard's first utterance): (every candidate's
    frames, its reading), built once per worker from the memory-mapped frames."""

    def build(_, corpus):
        offsets, frames = np.asarray(corpus.offsets), corpus.observations
        features, readings = [], []
        for u, said in enumerate(payload[1][first:first + offsets.shape[0] - 1]):
            features += [np.asarray(frames[offsets[u]:offsets[u + 1]])] * len(said)
            readings += said
        return features, readings

    return opened(token, shard, payload, "nbest units", build)


def _units_under(payload, counts):
    """The payload's unit layer with the round's counts (a copy: the payload may be shared by threads)."""
    units = copy.copy(payload[0])
    units.counts_ = UnitCounts(*counts)
    return units


def _reading_log_evidence(token, shard, payload, counts, first):
    """Step (a) on a unit shard: A_uk of its candidates (eq. J1)."""
    limit_threads()
    features, readings = _shard_candidates(token, shard, payload, first)
    return _units_under(payload, counts).reading_log_evidence(features, readings, VB)


def _reading_expectations(token, shard, payload, counts, first, weights):
    """Step (b) on a unit shard: its candidates' statistics weighted by their q(k | u)."""
    limit_threads()
    features, readings = _shard_candidates(token, shard, payload, first)
    return tuple(_units_under(payload, counts).reading_expectations(features, readings, VB, weights)[0])


class ChartSettings(NamedTuple):
    """What NoisyWords' chart takes of the model besides its weights (`NoisyWords._e_step_settings`): the word
    shards' payload."""

    max_insertions: int
    longest: int
    prune: float


def _shard_types(settings, corpus):
    """A word shard's strings: (symbol ids, offsets, each string's index in the whole list)."""
    heads, ids, offsets = split_heads(corpus, 1)
    return ids, offsets, heads[0]


def _type_log_evidence(token, shard, settings, weights):
    """Step (a) on a word shard: W's log Z of its strings (eq. J1)."""
    limit_threads()
    ids, offsets, _ = opened(token, shard, settings, "nbest types", _shard_types)
    return chart_log_evidence(settings, ids, offsets, weights)


def _type_expectations(token, shard, settings, weights, copies):
    """Step (c) on a word shard: NoisyWords' VB E-step over its strings with their fractional ``copies``."""
    limit_threads()
    ids, offsets, first = opened(token, shard, settings, "nbest types", _shard_types)
    return expected_types(weights, ids, offsets, copies, first, *settings)


class ShardedNbestJoint(NbestJoint):
    """`NbestJoint` with the E-steps of its rounds on the shards of a Dask ``client`` (module notes): ``n_shards``
    shards of whole utterances for the unit layer and as many of whole spoken strings for the word layer (default
    one a worker).  ``fit`` closes the shards at its end."""

    def __init__(self, units, words, features, candidates, spoken, refresh=False, *, client, n_shards=None):
        super().__init__(units, words, features, candidates, spoken, refresh)
        self.unit_shards = Shards(units._corpus(features, None, training=False), (units, self.candidates), client,
                                  n_shards)
        # an utterance's candidates are adjacent (``owner`` ascending): a shard's are one slice
        self.candidate_bounds = np.searchsorted(self.owner, self.unit_shards.bounds)
        corpus = self.learner.corpus
        self.type_shards = Shards(headed_corpus(corpus.first, corpus.ids, corpus.offsets),
                                  ChartSettings(*words._e_step_settings()), client, n_shards)

    def scores(self):
        """(A, W) (C,) of every candidate, each shard's gathered in order (eq. J1)."""
        units, types = self.unit_shards, self.type_shards
        acoustic = units.map_gather(_reading_log_evidence, range(units.n_shards),
                                    [(int(first),) for first in units.bounds[:-1]], tuple(self.units.counts_))
        evidence = types.map_gather(_type_log_evidence, range(types.n_shards), [()] * types.n_shards,
                                    self.learner.tables())
        units.end_pass()
        types.end_pass()
        evidence = np.concatenate(evidence)
        return np.concatenate(acoustic), np.where(self.type_of >= 0, evidence[np.maximum(self.type_of, 0)], 0.0)

    def step_parameters(self, weights):
        """Steps (b) and (c) from the shards' weighted statistics, added up on the workers."""
        units, types, learner = self.unit_shards, self.type_shards, self.learner
        bounds = self.candidate_bounds
        counts = units.map_reduce(_reading_expectations, tuple(self.units.counts_), [
            (int(units.bounds[s]), weights[bounds[s]:bounds[s + 1]]) for s in range(units.n_shards)])
        copies = self.type_copies(weights)
        statistics, _ = types.map_reduce(_type_expectations, learner.tables(), [
            (copies[a:b],) for a, b in zip(types.bounds[:-1], types.bounds[1:])])
        units.end_pass()
        types.end_pass()
        learner.corpus = learner.corpus._replace(copies=copies)
        learner.absorb(statistics)
        self.units._set_fitted(UnitCounts(*counts))

    def fit(self, n_rounds, checkpoint=NO_CHECKPOINT):
        try:
            return super().fit(n_rounds, checkpoint)
        finally:
            self.close()

    def close(self):
        self.unit_shards.close()
        self.type_shards.close()

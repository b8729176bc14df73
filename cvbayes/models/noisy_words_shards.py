"""`NoisyWords`' VB on shards of its utterance types across Dask workers (issue 31), as
`cvbayes.models.adaptor.sharded` does for the channel-free adaptor grammar.

VB needs the utterances only through its E-step, a sum over utterance types of each type's statistics times
its number of copies (`noisy_words.expected_types`): the chart of eq. W1 on the span scores of eq. N1 and its
outside weights (eq. W2) give the expected edit counts, the grammaton's expected customers, the expected words
and the base-served spans read as underlying words, and log Z.  The types are cut into shards of whole types
(about equal symbol counts); every worker runs that E-step on its shard's types and the shards' statistics and
log Z are added up pairwise on the workers (`cvbayes.models.shards.ShardedBatch`; the base-served words string
by string, `noisy_words.ServedWords`).  q(theta), q(rho), q(v) and the grammaton's refresh stay where the fit
runs (`JointVB.absorb`, the ``after`` of the sharded E-step), and each pass sends only the chart's weights
(`noisy_words.Weights`: the grammaton, its stick weights, the channel table).  A shard keeps no state between
passes: a worker that dies has its shards rerun by another, with the same result.  Equal to one process up to
the order of the floating-point sums.

A shard is saved once as a `Corpus` whose unit i is type i's number of copies, the index of its first copy in
the training utterances (which the error of a type without a segmentation names, as in one process) and its
symbol ids; every worker gets the E-step's settings (``max_insertions``, ``longest``, ``prune``) once.
"""
from __future__ import annotations

import numpy as np

from .noisy_words import expected_types
from .shards import ShardedBatch, headed_corpus, limit_threads, opened, split_heads


def _shard_types(settings, corpus):
    """A shard's utterance types from its saved corpus: (symbol ids, offsets, copies, first copies)."""
    heads, ids, offsets = split_heads(corpus, 2)
    return ids, offsets, heads[0].astype(float), heads[1]


def _types_shard(token, shard, settings, weights, first_type):
    """One shard's VB E-step under the chart's ``weights``: (`noisy_words.Statistics`, sum of copies * log Z).
    ``first_type``, where the shard starts in the whole corpus, is not needed: the types' first copies, saved
    with them, name them in errors."""
    limit_threads()
    ids, offsets, copies, first = opened(token, shard, settings, "types", _shard_types)
    return expected_types(weights, ids, offsets, copies, first, *settings)


def vb_batch(vb, sharding, fingerprint):
    """NoisyWords' `JointVB` ``vb`` with its E-step on the shards of ``sharding``; q takes the summed
    statistics in here (``vb.absorb``)."""
    corpus = vb.corpus
    heads = np.stack([corpus.copies.astype(np.int64), corpus.first])
    shards = sharding.shards(headed_corpus(heads, corpus.ids, corpus.offsets), vb.model._e_step_settings(),
                             fingerprint)
    return ShardedBatch(vb, shards, _types_shard, after=vb.absorb)

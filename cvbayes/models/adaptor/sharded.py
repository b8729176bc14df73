"""The adaptor grammar's VB on shards of its utterance types across Dask workers (issue 32), as
`cvbayes.models.tree_shards` does for the PCFG.

VB needs the utterances only through its E-step, a sum over utterance types of each type's expected rule
counts and customers times its number of copies (`vb.TypeExpectations`; Cohen, Blei and Smith 2010, the
inside-outside of thesis eq. 4.12's weights).  The types are cut into shards of whole types (about equal
token counts); every worker runs the same E-step on its shard's types and the shards' statistics and log
Z are added up pairwise on the workers (`cvbayes.models.shards.ShardedBatch`).  q(theta), q(v), the
grammaton's refresh and the hyperparameters are updated where the fit runs (`VariationalBayes.absorb`,
the ``after`` of the sharded E-step), and each pass sends only the kernel tables.  A shard keeps no state
between passes: a worker that dies has its shards rerun by another, with the same result.  Equal to one
process up to the order of the floating-point sums (a shard groups its own types by their copies).

A shard is saved once as a `Corpus` whose unit i is type i's number of copies followed by its token ids
under the compiled grammar; every worker gets the compiled grammar once (its vocabulary and ``<any>``
substrings) and builds its types' span ids from the token ids (`CompiledGrammar.prepare`), the same as
those of the whole corpus.
"""
from __future__ import annotations

import numpy as np

from ..shards import ShardedBatch, headed_corpus, limit_threads, numbered_in_corpus, opened, split_heads
from .vb import TypeExpectations


def types_corpus(types, copies):
    """The utterance types (a `SentenceBatch`) as a Corpus whose unit i is [copies_i, tokens of type i]."""
    return headed_corpus(copies.astype(np.int64), types.tokens, types.offsets)


def _shard_types(payload, corpus):
    """A shard's `TypeExpectations` from its saved corpus (`types_corpus`) and the compiled grammar."""
    compiled, adapted_symbol = payload
    heads, tokens, offsets = split_heads(corpus, 1)
    types = compiled.prepare([tokens[a:b] for a, b in zip(offsets[:-1], offsets[1:])])
    return TypeExpectations(compiled, adapted_symbol, types, heads[0].astype(float))


def _types_shard(token, shard, payload, tables, first_type):
    """One shard's VB E-step under the kernel ``tables``: (((R,) rule counts, (R,) customers), sum of log Z)."""
    limit_threads()
    e_step = opened(token, shard, payload, "types", _shard_types)
    with numbered_in_corpus(first_type, "utterance type"):
        return e_step(tables)


def vb_batch(vb, sharding, fingerprint):
    """The adaptor grammar's `VariationalBayes` ``vb`` with its E-step on the shards of ``sharding``; q
    takes the summed statistics in here (``vb.absorb``)."""
    compiled = vb.training.compiled
    shards = sharding.shards(types_corpus(vb.types, vb.copies), (compiled, vb.training.layout.adapted_symbol),
                             fingerprint)
    return ShardedBatch(vb, shards, _types_shard, after=vb.absorb)

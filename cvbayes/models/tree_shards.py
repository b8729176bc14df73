"""The DMV and the PCFG on shards of their sentences across Dask workers (issue 32), as `hmm_shards`
does for the HMM.

EM and VB need the sentences only through the E-step's sums over sentences (thesis eq. 4.7-4.9 for
the DMV, eq. 4.8-4.9 for the PCFG), so each worker runs the in-process structure's E-step (the DMV's
and the PCFG's ``BatchTrees``) on its shard of whole sentences and the shards' counts and log Z are
added up pairwise on the workers (`cvbayes.models.shards.ShardedBatch`).  The tables are made where the
fit runs and sent to every worker once a pass.  A shard keeps no state between passes: a worker that
dies has its shards rerun by another, with the same result.  Equal to one process up to the order of
the floating-point sums (the kernels sum over chunks of sentences, which differ with the shards).

What a shard holds, saved once as a `Corpus` and memory-mapped by its worker:

* DMV: the sentences' tag (or word) ids, what the chart reads;
* PCFG: the sentences' token ids under the compiled grammar, which every worker gets once (with its
  vocabulary and ``<any>`` substrings); the worker builds its sentences' span ids from them
  (`CompiledGrammar.prepare`), the same as those of the whole corpus.

Shards are cut to about equal token counts, not equal chart work (n^3 a sentence): with sentences of
mixed lengths a shard of long ones is slower than one of short ones.
"""
from __future__ import annotations

from ..data import Corpus
from .shards import ShardedBatch, limit_threads, numbered_in_corpus, opened


def _dmv_sentences(alpha, corpus):
    from .dmv import BatchTrees
    return BatchTrees(corpus.observations, corpus.offsets, alpha)


def _dmv_shard(token, shard, alpha, tables, first_sentence):
    """One shard's DMV E-step under the log ``tables`` (root, stop, attach): (DMVCounts, sum of log Z)."""
    limit_threads()
    structure = opened(token, shard, alpha, "batch", _dmv_sentences)
    with numbered_in_corpus(first_sentence, "sentence"):
        return structure.expectations(tables)


def dmv_batch(local, sharding, fingerprint):
    """The DMV's ``BatchTrees`` ``local`` with its E-step on the shards of ``sharding``."""
    shards = sharding.shards(Corpus(local.tags, local.offsets), local.alpha, fingerprint)
    return ShardedBatch(local, shards, _dmv_shard)


def _pcfg_sentences(grammar, corpus):
    from .pcfg import TreeCorpus
    return TreeCorpus(grammar, list(corpus))


def _pcfg_shard(token, shard, grammar, tables, first_sentence):
    """One shard's PCFG E-step under the kernel ``tables``: ((R,) expected rule counts, sum of log Z)."""
    from .pcfg import BatchTrees
    limit_threads()
    data = opened(token, shard, grammar, "batch", _pcfg_sentences)
    with numbered_in_corpus(first_sentence, "sentence"):
        return BatchTrees(None, data).expectations((None, tables))


def pcfg_batch(local, sharding, fingerprint):
    """The PCFG's ``BatchTrees`` ``local`` with its E-step on the shards of ``sharding``; only the
    kernel tables go to the workers (the rule table stays here for the penalty)."""
    data = local.data
    shards = sharding.shards(Corpus(data.batch.tokens, data.batch.offsets), data.grammar, fingerprint)
    return ShardedBatch(local, shards, _pcfg_shard, lambda tables: tables[1])

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

`ShardedCVI` is the DMV's separately named algorithm ``"cvi-sharded"``, an approximation of CVI in the
manner of AD-LDA (Newman et al. 2009, JMLR 10), as the HMM's ``cvi2-sharded``: each shard runs CVI's
sentence updates (thesis eq. 4.17-4.24) over its own sentences, in its own random order a pass, against
a copy of the counts frozen at the start of the pass plus its own changes; the shards' changes are added
up after the pass.  A sentence sees the other shards' counts one pass stale.  With one shard it is CVI
(the same orders; the counts differ by the rounding of adding a pass's change).  It runs on threads of
this process without a client, or on a client's workers, where the sentences' local posteriors live, so
losing a worker stops the fit with a clear error.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..data import Corpus
from ..trees.dmv import LocalPosteriors
from .dmv import CollapsedTrees, cvi_pass, raise_if_bad
from .shards import ShardedBatch, ShardStates, limit_threads, numbered_in_corpus, opened


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


# ------------------------------------------------------------------------ the DMV's sharded CVI

@njit(cache=True, nogil=True)
def _cvi_shard_pass(state, order):
    """`cvi_pass` without the GIL, so that shards of one process run on threads at once."""
    return cvi_pass(state, order)


class _CVIShard:
    """One shard's CVI state: its sentences, their local posteriors (views of the whole corpus's in this
    process) and its generator of sentence orders; a pass updates a copy of the frozen counts."""

    def __init__(self, tags, offsets, alpha, local, rng):
        self.tags, self.offsets, self.alpha, self.local, self.rng = tags, offsets, alpha, local, rng

    def sweep(self, frozen):
        """One CVI pass over the shard's sentences against a copy of the ``frozen`` DMVCounts: (their
        change, the summed log Z, the first bad sentence or -1)."""
        trees = CollapsedTrees(self.tags, self.offsets, self.alpha, frozen, self.local)
        objective, bad = _cvi_shard_pass(trees.state, self.rng.permutation(self.offsets.shape[0] - 1))
        return tuple(after - before for after, before in zip(trees.counts, frozen)), objective, bad


class ShardedCVI:
    """The DMV's sharded CVI (``algorithm="cvi-sharded"``) for `schedules.passes`, from CVI's start (the
    `CollapsedTrees` ``collapsed`` of the whole corpus, whose counts are the ones frozen each pass);
    shard 0 draws its orders from ``collapsed.rng`` (so one shard is CVI), shard s > 0 from (seed, s)."""

    def __init__(self, collapsed, shards, seed):
        self.collapsed = collapsed
        self.shards = shards
        tags, offsets, alpha = collapsed.state[:3]
        local = collapsed.local
        copy = np.array if shards.client is not None else (lambda array: array)
        states = []
        for s in range(shards.n_shards):
            a, b = int(shards.bounds[s]), int(shards.bounds[s + 1])
            begin, end = int(offsets[a]), int(offsets[b])
            heads_begin, heads_end = int(local.head_offsets[a]), int(local.head_offsets[b])
            part = LocalPosteriors(local.head_offsets[a:b + 1] - heads_begin, copy(local.heads[heads_begin:heads_end]),
                                   copy(local.none[begin:end]))
            rng = collapsed.rng if s == 0 else np.random.default_rng([seed, s])
            states.append(_CVIShard(copy(tags[begin:end]), offsets[a:b + 1] - begin, alpha, part, rng))
        self.states = ShardStates(shards, states, "sharded CVI")

    def sweep(self, iteration):
        frozen = self.collapsed.counts
        results = self.states.sweep(frozen)
        for s, (_, _, bad) in enumerate(results):
            if bad >= 0:
                raise_if_bad(int(self.shards.bounds[s]) + bad)
        return self.states.sum_changes(results, frozen)

    def current(self):
        return self.collapsed.counts

    def attributes(self):
        return {**self.collapsed.attributes(), **self.shards.attributes()}

    def close(self):
        self.states.close()

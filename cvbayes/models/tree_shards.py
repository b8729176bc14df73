"""The DMV, the PCFG and PCFG-LA on shards of their sentences (trees) across Dask workers (issue 32), as
`hmm_shards` does for the HMM.

EM and VB need the sentences only through the E-step's sums over sentences (thesis eq. 4.7-4.9 for
the DMV, eq. 4.8-4.9 for the PCFG and, over the annotations of observed trees, for PCFG-LA), so each
worker runs the in-process structure's E-step (the DMV's and the PCFG's ``BatchTrees``, PCFG-LA's
``LatentTrees``) on its shard of whole sentences and the shards' counts and log Z are added up pairwise
on the workers (`cvbayes.models.shards.ShardedBatch`).  The tables are made where the fit runs and sent
to every worker once a pass.  A shard keeps no state between passes: a worker that dies has its shards
rerun by another, with the same result.  Equal to one process up to the order of the floating-point
sums (the kernels sum over chunks of sentences, which differ with the shards).

What a shard holds, saved once as a `Corpus` and memory-mapped by its worker:

* DMV: the sentences' tag (or word) ids, what the chart reads;
* PCFG: the sentences' token ids under the compiled grammar, which every worker gets once (with its
  vocabulary and ``<any>`` substrings); the worker builds its sentences' span ids from them
  (`CompiledGrammar.prepare`), the same as those of the whole corpus;
* PCFG-LA: the trees' rule occurrences (`TreeNodes`), a row of (kind, rule, left, right, start, end) a
  node with the children numbered within their tree, so that a run of whole trees is a shard as it is.

Shards are cut to about equal token (node) counts, not equal chart work (n^3 a sentence): with
sentences of mixed lengths a shard of long ones is slower than one of short ones.

`ShardedCVI` is the DMV's and the PCFG's separately named algorithm ``"cvi-sharded"``, an approximation
of CVI in the manner of AD-LDA (Newman et al. 2009, JMLR 10), as the HMM's ``cvi2-sharded``: each shard
runs CVI's sentence updates (thesis eq. 4.17-4.24) over its own sentences (the DMV: in its own random
order a pass; the PCFG: in corpus order, as its CVI) against a copy of the counts frozen at the start of
the pass plus its own changes; the shards' changes are added up after the pass.  A sentence sees the
other shards' counts one pass stale.  With one shard it is CVI (the same orders; the counts differ by
the rounding of adding a pass's change).  It runs on threads of this process without a client, or on a
client's workers, where the sentences' local statistics live (a PCFG worker reads its sentences from its
memory-mapped shard; only their local counts are sent), so losing a worker stops the fit with a clear
error.
"""
from __future__ import annotations

import numpy as np

from ..data import Corpus
from ..trees.dmv import LocalPosteriors
from .dmv import CollapsedTrees, cvi_pass, raise_if_bad
from .pcfg_kernels import cvi_pass as pcfg_cvi_pass
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


# ------------------------------------------------------------------------ PCFG-LA's E-step

def _nodes_corpus(nodes):
    """The trees' `TreeNodes` as a `Corpus` a tree a sequence (a shard a run of whole trees): a row a node,
    (kind, rule, left, right, start, end), the children numbered from the tree's first node (-1: none)."""
    first = np.repeat(nodes.tree_offsets[:-1], np.diff(nodes.tree_offsets))
    rows = np.stack([nodes.kind, nodes.rule, np.where(nodes.left >= 0, nodes.left - first, -1),
                     np.where(nodes.right >= 0, nodes.right - first, -1), nodes.start, nodes.end], axis=1)
    return Corpus(rows.astype(np.float64), nodes.tree_offsets)


def _shard_trees(_, corpus):
    """A shard's trees (`_nodes_corpus`) as the `LatentTrees` of PCFG-LA's E-step."""
    from ..trees.treebank import TreeNodes
    from .pcfg_la import LatentTrees
    rows = np.asarray(corpus.observations, dtype=np.int64)
    offsets = np.asarray(corpus.offsets)
    first = np.repeat(offsets[:-1], np.diff(offsets))
    left, right = (np.where(child >= 0, child + first, -1).astype(np.int32) for child in (rows[:, 2], rows[:, 3]))
    nodes = TreeNodes(offsets, rows[:, 0].astype(np.int8), rows[:, 1].astype(np.int32), left, right,
                      rows[:, 4].astype(np.int32), rows[:, 5].astype(np.int32))
    return LatentTrees(nodes, None, None)


def _pcfg_la_shard(token, shard, payload, tables, first_tree):
    """One shard's PCFG-LA E-step under the annotated ``tables``: (AnnotatedTables of expected counts, sum of
    log Z)."""
    limit_threads()
    return opened(token, shard, None, "batch", _shard_trees).expectations(tables)


def pcfg_la_batch(local, sharding, fingerprint):
    """PCFG-LA's ``LatentTrees`` ``local`` with its E-step on the shards of ``sharding``: a shard is a run
    of whole trees (their nodes), cut to about equal node counts."""
    return ShardedBatch(local, sharding.shards(_nodes_corpus(local.nodes), None, fingerprint), _pcfg_la_shard)


# ------------------------------------------------------------------------ sharded CVI

class ShardedCVI:
    """The sharded CVI (``algorithm="cvi-sharded"``) for `schedules.passes`, of the DMV and of the PCFG:
    ``collapsed`` is CVI's in-process state at its start, whose counts ``frozen`` (a tuple of arrays) are
    the ones frozen each pass and changed in place by the shards' summed changes; ``states`` one state a
    shard (`ShardStates`, with ``place``); ``raise_bad(unit)`` names a unit without a tree."""

    def __init__(self, collapsed, frozen, shards, states, raise_bad, place=None):
        self.collapsed = collapsed
        self.frozen = frozen
        self.shards = shards
        self.raise_bad = raise_bad
        self.states = ShardStates(shards, states, "sharded CVI", place)

    def sweep(self, iteration):
        results = self.states.sweep(self.frozen)
        for s, (_, _, bad) in enumerate(results):
            if bad >= 0:
                self.raise_bad(int(self.shards.bounds[s]) + bad)
        return self.states.sum_changes(results, self.frozen)

    def current(self):
        return self.collapsed.current()

    def attributes(self):
        return {**self.collapsed.attributes(), **self.shards.attributes()}

    def close(self):
        self.states.close()


# the DMV's

class _DMVShard:
    """One shard's CVI state: its sentences, their local posteriors (views of the whole corpus's in this
    process) and its generator of sentence orders; a pass updates a copy of the frozen counts."""

    def __init__(self, tags, offsets, alpha, local, rng):
        self.tags, self.offsets, self.alpha, self.local, self.rng = tags, offsets, alpha, local, rng

    def sweep(self, frozen):
        """One CVI pass over the shard's sentences against a copy of the ``frozen`` DMVCounts: (their
        change, the summed log Z, the first bad sentence or -1)."""
        trees = CollapsedTrees(self.tags, self.offsets, self.alpha, frozen, self.local)
        objective, bad = cvi_pass(trees.state, self.rng.permutation(self.offsets.shape[0] - 1))
        return tuple(after - before for after, before in zip(trees.counts, frozen)), objective, bad


def dmv_cvi(collapsed, shards, seed):
    """The DMV's sharded CVI from CVI's start (the `CollapsedTrees` ``collapsed`` of the whole corpus);
    shard 0 draws its orders from ``collapsed.rng`` (so one shard is CVI), shard s > 0 from (seed, s)."""
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
        states.append(_DMVShard(copy(tags[begin:end]), offsets[a:b + 1] - begin, alpha, part, rng))
    return ShardedCVI(collapsed, collapsed.counts, shards, states, raise_if_bad)


# the PCFG's

class _PCFGShard:
    """One shard's PCFG CVI state: its sentences' local cell counts (float32; views of the whole corpus's
    in this process) and, once `bind` gave it its sentences, the kernels' state over its own copy of the
    counts.  Sent to a worker without its sentences, which the worker reads from its shard (`_bind`)."""

    def __init__(self, alpha, local):
        self.alpha, self.local, self.state = alpha, local, None

    def bind(self, data):
        """Take the shard's sentences (a `TreeCorpus`) and make the kernels' state."""
        from .pcfg import RuleRows, cvi_state
        if data.cells()[0][-1] != self.local.shape[0]:
            raise ValueError(f"the shard's sentences have {data.cells()[0][-1]} cells, its local counts "
                             f"{self.local.shape[0]}")
        self.rows = RuleRows(data.grammar, self.alpha)
        self.order = np.arange(data.n_sentences, dtype=np.int64)
        self.state = cvi_state(self.rows, data, np.zeros(data.grammar.n_rules), self.local)
        return self

    def sweep(self, frozen):
        """One CVI pass (eq. 4.17-4.24) over the shard's sentences against the ``frozen`` (counts,) plus
        the shard's own changes: ((their change,), the summed log Z, the first bad sentence or -1)."""
        counts, row_totals = self.state[1][:2]
        counts[:] = frozen[0]
        row_totals[:] = self.rows.totals(counts)
        objective, bad = pcfg_cvi_pass(self.state, self.order)
        return (counts - frozen[0],), objective, bad


def _bind(token, shard, grammar, state):
    return state.bind(opened(token, shard, grammar, "batch", _pcfg_sentences))


def pcfg_cvi(collapsed, alpha, shards):
    """The PCFG's sharded CVI from CVI's start (the PCFG's `CollapsedTrees` ``collapsed`` of the whole
    corpus, prior ``alpha``); every shard sweeps its sentences in order, so one shard is CVI."""
    from .pcfg import TreeCorpus
    data = collapsed.data
    cell_offsets = data.cells()[0]
    states = []
    for s in range(shards.n_shards):
        a, b = int(shards.bounds[s]), int(shards.bounds[s + 1])
        local = collapsed.local[cell_offsets[a]:cell_offsets[b]]
        if shards.client is None:
            states.append(_PCFGShard(alpha, local).bind(TreeCorpus(data.grammar, data.sentences[a:b])))
        else:
            states.append(_PCFGShard(alpha, np.array(local)))
    return ShardedCVI(collapsed, (collapsed.counts,), shards, states, data.raise_bad, _bind)

"""LDA on shards of its documents across Dask workers (issue 32), as `hmm_shards` does for the HMM.

The shards, their files, the reduction and the timing of every pass are `cvbayes.models.shards`'; a shard
is a run of whole documents, saved as a corpus of their tokens (each word repeated by its count) and
read back by a worker as the same document-term rows.

* `ShardedBatchVB` (``vb``): each worker runs `BatchVB`'s pass on its documents, the topic tables sent
  to every worker once a pass and the expected topic-word counts and ELBO terms added up on the workers.
  Each document's gamma is kept between passes (VB keeps the better of a fresh start and the last pass's
  gamma): on the worker, and in a file of the shard folder written after each pass, from which a worker
  that takes over a lost worker's shard reads it; so a pass survives a worker's death with the same
  result.  Equal to one process up to the order of the floating-point sums.
* `ShardedStochasticLDA` (``online-vb``, ``scvb0``): the minibatch is drawn here by the schedule's own
  generator and its table built here at its words; each shard gets its documents' ids and the table,
  and returns their statistics.  Equal to one process up to the order of the sums; no state on workers.
* `ShardedCVB0` (``cvb0-sharded``): an approximation of CVB0 in the manner of AD-LDA (Newman et al. 2009,
  JMLR 10): each shard runs CVB0's token updates (Asuncion et al. 2009) over its own documents against
  the topic-word counts frozen at the start of the pass plus its own changes; the shards' changes are
  added up after the pass.  A document sees the other shards' counts one pass stale.  With one shard it
  is CVB0 exactly.  It runs on threads of this process without a client, or on the client's workers;
  the entries' q(z) live on the workers, so losing a worker stops the fit with a clear error.
"""
from __future__ import annotations

import glob
import os
import time

import numpy as np

from ..data import Corpus
from ..files import atomic_write
from . import lda_kernels as kernels
from .shards import Shards, ShardStates, keep, kept, limit_threads, opened


def documents_corpus(documents):
    """The documents as a Corpus of their tokens, document by document (each entry's word repeated by its
    count): the form a shard is saved in; `Documents.from_input` gives back the same rows."""
    token_word, _ = documents.tokens()
    return Corpus(token_word, np.concatenate([[0], np.cumsum(documents.doc_length)]).astype(np.int64))


def lda_shards(documents, client=None, n_shards=None, folder=None, identity=None):
    """The documents' `Shards` (whole documents); every task gets the number of words W."""
    return Shards(documents_corpus(documents), documents.n_words, client, n_shards, folder, identity)


def _shard_documents(n_words, corpus):
    from .lda import Documents
    return Documents.from_input(corpus, n_words)


def _entry_bounds(documents, shards):
    return documents.doc_start[shards.bounds]


# ------------------------------------------------------------------------ batch VB

def _gamma_path(shard, token, s, iteration):
    return os.path.join(os.path.dirname(shard.path), f"gamma-{token}-{s:05d}-{iteration}.npy")


def _vb_shard(token, shard, n_words, table, s, settings, iteration):
    """Shard ``s``'s VB pass ``iteration`` under ``table``: `BatchVB.expectations` from the gamma of the
    last pass (kept here, else read from its file), whose new gamma is then written for the next."""
    from .lda import BatchVB
    limit_threads()
    n_topics, alpha, eta, max_doc_iter, doc_tol = settings
    vb = kept(token, ("vb", s))
    if vb is None:
        documents = opened(token, shard, n_words, "documents", _shard_documents)
        vb = BatchVB(documents, n_topics, alpha, eta, max_doc_iter, doc_tol)
        keep(token, ("vb", s), vb)
    if getattr(vb, "iteration", -1) != iteration - 1:
        vb.gamma = np.load(_gamma_path(shard, token, s, iteration - 1)) if iteration > 0 else vb.fresh_gamma()
    result = vb.expectations(table)
    vb.iteration = iteration
    with atomic_write(_gamma_path(shard, token, s, iteration), "wb") as stream:
        np.save(stream, vb.gamma)
    if iteration > 1:   # a rerun of this pass reads the last pass's file; older ones are not needed
        _remove(_gamma_path(shard, token, s, iteration - 2))
    return result


def _vb_gamma(token, shard, n_words, s, iteration):
    """Shard ``s``'s gamma after pass ``iteration``."""
    vb = kept(token, ("vb", s))
    if vb is not None and getattr(vb, "iteration", -1) == iteration:
        return vb.gamma
    return np.load(_gamma_path(shard, token, s, iteration))


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class ShardedBatchVB:
    """LDA's `BatchVB` with its pass run on the shards of a Dask client (module notes)."""

    def __init__(self, local, shards):
        self.local = local
        self.shards = shards
        self.settings = (local.n_topics, local.alpha, local.eta, local.max_doc_iter, local.doc_tol)
        self.iteration = -1

    def tables(self, statistics, rule):
        return self.local.tables(statistics, rule)

    def penalty(self, rule, statistics, tables):
        return self.local.penalty(rule, statistics, tables)

    def expectations(self, table):
        shards = self.shards
        self.iteration += 1
        total = shards.map_reduce(_vb_shard, table, [(s, self.settings, self.iteration)
                                                     for s in range(shards.n_shards)])
        shards.end_pass()
        return total

    def attributes(self):
        shards = self.shards
        if self.iteration >= 0:
            parts = shards.map_gather(_vb_gamma, range(shards.n_shards),
                                      [(s, self.iteration) for s in range(shards.n_shards)])
            shards.end_pass(start=True)
            self.local.gamma = np.concatenate(parts)
        return {**self.local.attributes(), **shards.attributes()}

    def close(self):
        if self.shards.folder is not None:
            for path in glob.glob(os.path.join(self.shards.folder, f"gamma-{self.shards.token}-*.npy")):
                _remove(path)
        self.shards.close()


# ------------------------------------------------------------------------ online VB and SCVB0

def _minibatch_shard(token, shard, n_words, settings, ids, rows, table):
    """The statistics of the shard's documents ``ids`` (its own numbering) under ``table`` at the
    minibatch's words ``rows``: (statistics at the shard's words, their positions in ``rows``, summed
    log normalisers, tokens)."""
    from .lda import StochasticLDA
    limit_threads()
    structure = opened(token, shard, n_words, "minibatch",
                       lambda w, corpus: StochasticLDA(_shard_documents(w, corpus), *settings))
    own_rows, doc_start, local_word, entry_count = structure.documents.gather(ids)
    where = np.searchsorted(rows, own_rows)
    values, log_z = structure.statistics(doc_start, local_word, entry_count, table[where])
    return values, where, log_z, int(entry_count.sum())


class ShardedStochasticLDA:
    """LDA's `StochasticLDA` with each minibatch's documents worked on by the shards that hold them:
    the draws, the tables, the scale and the steps stay here (module notes)."""

    def __init__(self, local, shards):
        self.local = local
        self.shards = shards
        self.counts = local.counts
        self.n_units = local.n_units
        self.doc_bounds = shards.bounds
        self.settings = (local.rule, local.n_topics, local.alpha, local.eta, None, local.corpus_documents,
                         local.corpus_tokens, local.max_doc_iter, local.doc_tol, local.burn_in, local.local_kappa,
                         local.local_tau0)

    def minibatch(self, ids):
        local = self.local
        rows = local.documents.gather(ids)[0]
        table = local.table(rows)
        cuts = np.searchsorted(ids, self.doc_bounds)
        shards = self.shards
        owners = [s for s in range(shards.n_shards) if cuts[s + 1] > cuts[s]]
        arguments = [(self.settings, ids[cuts[s]:cuts[s + 1]] - self.doc_bounds[s], rows, table) for s in owners]
        parts = shards.map_gather(_minibatch_shard, owners, arguments)
        started = time.perf_counter()
        values = np.zeros((rows.shape[0], local.n_topics))
        for part_values, where, _, _ in parts:
            values[where] += part_values
        shards.add_reduction(time.perf_counter() - started)
        return local.step(ids, rows, values, sum(part[2] for part in parts), sum(part[3] for part in parts))

    def current(self):
        return self.local.current()

    def after_pass(self):
        self.shards.end_pass()

    def attributes(self):
        return self.shards.attributes()

    def close(self):
        self.shards.close()


# ------------------------------------------------------------------------ the sharded CVB0

class _CVB0Shard:
    """One shard's CVB0 state: its entries, documents' lengths and topic counts, and the entries' q(z)
    (views of the whole corpus's in this process); a pass copies the frozen topic-word counts."""

    def __init__(self, entry_doc, entry_word, entry_count, doc_length, gamma, doc_topic, alpha, eta, eta_total):
        self.arrays = (entry_doc, entry_word, entry_count, doc_length, gamma, doc_topic)
        self.alpha, self.eta, self.eta_total = alpha, eta, eta_total
        self.order = np.arange(entry_doc.shape[0], dtype=np.int64)

    def sweep(self, frozen):
        """One CVB0 pass over the shard's entries against a copy of the ``frozen`` (word_topic, topic):
        (their change, the summed log normalisers, the first bad entry or -1)."""
        word_topic, topic = (np.array(block) for block in frozen)
        state = (*self.arrays, word_topic, topic, self.alpha, self.eta, self.eta_total, np.empty(topic.shape[0]))
        objective, bad = kernels.cvb0_pass(state, self.order)
        return (word_topic - frozen[0], topic - frozen[1]), objective, bad

    def doc_topic(self):
        return self.arrays[5]


class ShardedCVB0:
    """The sharded CVB0 (``algorithm="cvb0-sharded"``) for `schedules.passes`, from the random local
    posteriors CVB0 starts from (`CollapsedLDA`'s, drawn here for the whole corpus), each shard's part
    sent to its worker or kept as views here."""

    def __init__(self, collapsed, shards):
        self.collapsed = collapsed
        self.shards = shards
        docs = collapsed.documents
        entries = _entry_bounds(docs, shards)
        copy = np.array if shards.client is not None else (lambda array: array)
        states = []
        for s in range(shards.n_shards):
            a, b = int(shards.bounds[s]), int(shards.bounds[s + 1])
            e, f = int(entries[s]), int(entries[s + 1])
            states.append(_CVB0Shard(docs.entry_doc[e:f] - a, copy(docs.entry_word[e:f]), copy(docs.entry_count[e:f]),
                                     copy(docs.doc_length[a:b]), copy(collapsed.gamma[e:f]),
                                     copy(collapsed.doc_topic[a:b]), collapsed.alpha, float(collapsed.eta),
                                     float(docs.n_words * collapsed.eta)))
        self.states = ShardStates(shards, states, "sharded CVB0")

    def sweep(self, iteration):
        frozen = (self.collapsed.word_topic, self.collapsed.topic)
        results = self.states.sweep(frozen)
        for s, (_, _, bad) in enumerate(results):
            if bad >= 0:
                first = int(_entry_bounds(self.collapsed.documents, self.shards)[s])
                raise ValueError(f"the tokens of document {self.collapsed.documents.entry_doc[first + bad]} have no "
                                 f"topic of positive probability")
        return self.states.sum_changes(results, frozen)

    def current(self):
        return self.collapsed.word_topic

    def attributes(self):
        if self.shards.client is not None:
            self.collapsed.doc_topic[:] = np.concatenate(self.states.collect("doc_topic"))
        return {**self.collapsed.attributes(), **self.shards.attributes()}

    def close(self):
        self.states.close()

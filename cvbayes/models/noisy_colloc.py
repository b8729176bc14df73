"""The colloc adaptor grammar over the noisy channel: `NoisyWords(grammar="colloc")` learned by VB (issue 31).

Model
-----
``Sentence -> Colloc+``, ``@Colloc -> Word+``, ``@Word -> Phon+`` (Johnson 2008's collocations), both caches
Pitman-Yor with NoisyWords' a and b, the Word base P0 of `cvbayes.models.noisy_words` (its Model notes), and
every *word token* realised through the edit channel.  A collocation served by the Colloc cache is one draw of
an atom c = (x_1, ..., x_n), underlying words; its surface span is read as the channel's rewriting of the atom's
underlying string x_1 ... x_n laid end to end.  The channel works symbol by symbol, so this is the per-word
channel of the base's collocations up to the gaps at the inner word boundaries: per word, x_{i+1} opens its own
gap 0 after x_i's last gap (two gaps there, each up to ``max_insertions``), and a word may be wholly deleted
inside a cached collocation (the chart's base words may not).  The approximation keeps a cached collocation one
pair lattice (`cvbayes.chains.edits`) instead of a chart over its words.

VB
--
Mean field as NoisyWords' VB with a second set of truncated PY sticks (Cohen, Blei and Smith 2010) over a
grammaton of collocations, q(rho) over both ``+`` rule pairs, and q(z) exact given the rest: the two-state
chart of `cvbayes.models.noisy_colloc_chart` (eq. K1) on the word span scores S(a, b) of eq. N1 (Word's sticks
and base) and the collocation scores

    A(a, b) = sum_c pi~^C_c p~(y_ab | x_c1 ... x_cn),   B = pi~^C_0                                  (K3)

The E-step's statistics from the chart's outside (eq. K2): each Colloc atom's customers sum_ab O_A pi~^C_c p~,
the base collocations, the ``Colloc+`` rules (collocations - 1, 1 an utterance) and the ``Word+`` rules of the
base's collocations (later words, and one stop a collocation); with O_S in place of eq. W2's outside, NoisyWords'
word statistics (`noisy_words.word_statistics`: Word atoms' customers, base-served words, their edit counts);
the cached collocations' edit counts by the pair forward-backward over (x_c1 ... x_cn, y_ab).  Each Colloc
atom is one draw from Colloc's base (as `cvbayes.models.adaptor.vb` treats atoms): its n words are n Word
draws, each served by Word's atom x_k = x_ci with weight pi~^W_k or by its base with pi~^W_0 P0(x_ci), and its
``Word+`` rules n - 1 and 1 (exact: the atom is underlying, no channel).  Its log Z

    log L_c = sum_i log(pi~^W_[x_ci] + pi~^W_0 P0(x_ci)) + (n - 1) log c~_W + log e~_W                  (K4)

is its term of the ELBO, eq. N2 extended:

    sum log Z + sum_k log P0(x_k) + sum_c log L_c - KL(q(v^W)) - KL(q(v^C)) - KL(q(theta)) - KL(q(rho)),

every update an exact coordinate step, so it never decreases while both grammatons are fixed (tested).

The refresh after every E-step: the Word grammaton as NoisyWords' (its candidates also the Colloc atoms' words
served by Word's base, credited their base share), the Colloc grammaton likewise from the atoms' customers and
the base's collocations, each read as the identity (its words' surface spans as underlying words).  A base
collocation's words are found by a depth-first walk of the chart from every start, the walk stopping where the
posterior of all the derivations through its prefix (forward times backward, eq. K2) falls below FLOOR: every
collocation reading of posterior above FLOOR is credited exactly, the rest not at all.  Approximate: the
identity reading (as NoisyWords'), FLOOR, and eq. N2's dips where the grammatons change.

Cost and choices
----------------
Both states' recursions run over every span, O(m^2) an utterance as the unigram chart's: a cached collocation
has no length bound but what its string can produce through the channel (n + (n + 1) ``max_insertions``
symbols, `edit_spans.word_span_likelihoods`), and a base collocation's words are bounded by ``longest`` each.
The channel's work dominates: one lattice per Word atom and per Colloc atom from every start (eq. S1).  Both
caches take NoisyWords' a, b and ``truncation`` (the channel-free `AdaptorGrammar` shares a and b likewise),
and the ``Colloc+`` and ``Word+`` rules its alpha.  On the first 1,500 Brent utterances through `cvbayes
experiment noisy-words`' seed-0 channel (its settings: max_insertions 1, channel priors 0.1, 10 start and 10
vb passes; one seed): token F1 0.493 (boundary 0.675), 7-15 s a pass (244 s in all) against the unigram's 0.572
(0.720), 4-10 s a pass (104 s); without the channel (`AdaptorGrammar` vb, 20 passes) colloc 0.443 and unigram
0.400.  The channel helps the colloc grammar less (+0.05 against +0.17); the ELBO rose in every pass.  It
oversegments (5,320 words for the 4,854 gold tokens: precision 0.47, recall 0.52), single phones ('s', 't',
'n') among its most frequent words and one-word collocations; most cached collocations hold one word.

Start (``init="grammar"``): the channel-free colloc `AdaptorGrammar` fitted to the surface strings: its Word
lexicon and its cached collocations (the Colloc yields of at least one customer, cut into words by its own
`segment`) as the grammatons; "empty": neither.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..chains.edit_spans import word_span_work
from ..chains.edits import DELETE, INSERT, best_alignments
from ..core import rules
from ..core.rules import VB
from .adaptor.vb import py_stick_kl, py_sticks
from .noisy_colloc_chart import best_collocs, colloc_chart
from .noisy_words import (JointVB, Statistics, Weights, _longest, _scores, _unsegmentable, _workspace,
                          cached_scores, cached_statistics, lattice_work, likeliest, refreshed, served_words,
                          span_offsets, word_statistics)

# a base collocation reading below this posterior is not credited to the Colloc grammaton (module notes)
FLOOR = 1e-3


class CollocWeights(NamedTuple):
    """What the colloc chart reads: the words' `Weights` (eq. N1, its go_on and end the ``Word+`` rules'), the
    Colloc atoms' underlying strings (flat ids, offsets) and their words' lengths (flat, offsets), log pi~^C,
    log pi~^C_0 and the ``Colloc+`` rules."""

    words: Weights
    colloc_ids: np.ndarray
    colloc_offsets: np.ndarray
    word_lengths: np.ndarray
    length_offsets: np.ndarray
    log_pi: np.ndarray
    log_base: float
    go_on: float
    end: float

    def chart_arguments(self):
        """The chart kernels' weights after the utterances (`colloc_e_step` and its siblings)."""
        w = self.words
        return (w.word_ids, w.word_offsets, np.exp(w.log_pi), float(np.exp(w.log_base)), w.table, w.phones, w.stop,
                w.go_on, w.end, self.colloc_ids, self.colloc_offsets, np.exp(self.log_pi), float(np.exp(self.log_base)),
                self.go_on, self.end)

    def collocations(self):
        """The atoms as tuples of words (tuples of symbol ids)."""
        return unpacked(self.colloc_ids, self.colloc_offsets, self.word_lengths, self.length_offsets)


def packed(collocs):
    """Collocations (tuples of words) as (underlying strings laid end to end, offsets, word lengths, offsets)."""
    strings = [np.array([s for word in c for s in word], dtype=np.int64) for c in collocs]
    lengths = [np.array([len(word) for word in c], dtype=np.int64) for c in collocs]

    def flat(parts):
        return (np.concatenate([np.zeros(0, np.int64)] + parts),
                np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64))
    return (*flat(strings), *flat(lengths))


def unpacked(ids, offsets, lengths, length_offsets):
    out = []
    for k in range(offsets.shape[0] - 1):
        string = ids[offsets[k]:offsets[k + 1]].tolist()
        cuts = np.cumsum(lengths[length_offsets[k]:length_offsets[k + 1]])
        out.append(tuple(tuple(string[a:b]) for a, b in zip(np.concatenate([[0], cuts[:-1]]), cuts)))
    return out


@njit(cache=True)
def _colloc_workspace(colloc_offsets, offsets, max_insertions):
    """The Colloc atoms' buffers: their span likelihoods and lattice work over spans up to the longest type."""
    width = _longest(offsets) + 1
    limit = width - 1          # `word_span_likelihoods` bounds an atom's spans by what it can produce
    return (limit, word_span_work(_longest(colloc_offsets), limit, max_insertions),
            np.zeros((colloc_offsets.shape[0] - 1, width, width)), np.zeros((width, width)),
            np.zeros((width, width)), np.zeros((4, width)))


@njit(cache=True)
def _type_scores(y, word_ids, word_offsets, pi, base, table, phones, stop, colloc_ids, colloc_offsets, colloc_pi,
                 max_insertions, longest, limit, work, colloc_work, buffers, likelihoods, colloc_likelihoods, marginal,
                 scores, cached):
    """One utterance's word scores S (eq. N1) and collocation scores A (eq. K3)."""
    m = y.shape[0]
    _scores(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest, work, buffers,
            likelihoods, marginal, scores)
    cached[:m + 1, :m + 1] = 0.0
    cached_scores(y, colloc_ids, colloc_offsets, colloc_pi, table, phones.shape[0], max_insertions, limit, colloc_work,
                  colloc_likelihoods, cached)


@njit(cache=True)
def colloc_e_step(ids, offsets, copies, word_ids, word_offsets, pi, base, table, phones, stop, go_w, end_w,
                  colloc_ids, colloc_offsets, colloc_pi, colloc_base, go_s, end_s, max_insertions, longest, prune,
                  counts, customers, colloc_customers, base_served, word_scores, base_offsets, paths):
    """VB's E-step (module notes) over the utterance types: the expected edit counts to ``counts``, Word's and
    Colloc's atoms' customers to ``customers`` and ``colloc_customers``, each type's base-served words (times its
    copies) to ``base_served`` and its S to ``word_scores`` at ``base_offsets``, its chart's forward and backward
    logs to the columns offsets[i] + i ... of ``paths`` (4, ...).  Returns (sum of copies * log Z, the expected
    words of base collocations, base collocations, words after a collocation's first, first type without a
    parse or -1)."""
    work, buffers, likelihoods, marginal, scores, outside = _workspace(
        word_offsets, offsets, phones.shape[0], max_insertions, longest)
    limit, colloc_work, colloc_likelihoods, cached, outside_cached, path = _colloc_workspace(
        colloc_offsets, offsets, max_insertions)
    lattice = lattice_work(word_offsets, longest, max_insertions, counts.shape[0])
    colloc_lattice = lattice_work(colloc_offsets, limit, max_insertions, counts.shape[0])
    evidence, words, bases, continued = 0.0, 0.0, 0.0, 0.0
    for i in range(offsets.shape[0] - 1):
        y = ids[offsets[i]:offsets[i + 1]]
        m = y.shape[0]
        _type_scores(y, word_ids, word_offsets, pi, base, table, phones, stop, colloc_ids, colloc_offsets, colloc_pi,
                     max_insertions, longest, limit, work, colloc_work, buffers, likelihoods, colloc_likelihoods,
                     marginal, scores, cached)
        log_z, first, later = colloc_chart(cached, scores, m, colloc_base, go_s, end_s, go_w, end_w, path,
                                           outside_cached, outside)
        if log_z == -np.inf:
            return evidence, words, bases, continued, i
        weight = copies[i]
        evidence += weight * log_z
        bases += weight * first
        continued += weight * later
        paths[:, offsets[i] + i:offsets[i + 1] + i + 1] = path[:, :m + 1]
        word_scores[base_offsets[i]:base_offsets[i + 1]] = scores[:m + 1, :m + 1].copy().ravel()
        for a in range(m + 1):
            for b in range(m + 1):
                outside[a, b] *= weight
                outside_cached[a, b] *= weight
        cached_statistics(y, colloc_ids, colloc_offsets, colloc_pi, colloc_likelihoods, outside_cached, phones.shape[0],
                          table, max_insertions, limit, prune, colloc_lattice, counts, colloc_customers)
        words += word_statistics(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest,
                                 prune, buffers, likelihoods, marginal, scores, outside, lattice, counts, customers,
                                 base_served[base_offsets[i]:base_offsets[i + 1]].reshape((m + 1, m + 1)))
    return evidence, words, bases, continued, -1


@njit(cache=True)
def colloc_log_evidence(ids, offsets, word_ids, word_offsets, pi, base, table, phones, stop, go_w, end_w, colloc_ids,
                        colloc_offsets, colloc_pi, colloc_base, go_s, end_s, max_insertions, longest, out):
    """log Z of every utterance type (eq. K1); -inf for one without a parse."""
    work, buffers, likelihoods, marginal, scores, outside = _workspace(
        word_offsets, offsets, phones.shape[0], max_insertions, longest)
    limit, colloc_work, colloc_likelihoods, cached, outside_cached, path = _colloc_workspace(
        colloc_offsets, offsets, max_insertions)
    for i in range(offsets.shape[0] - 1):
        y = ids[offsets[i]:offsets[i + 1]]
        _type_scores(y, word_ids, word_offsets, pi, base, table, phones, stop, colloc_ids, colloc_offsets, colloc_pi,
                     max_insertions, longest, limit, work, colloc_work, buffers, likelihoods, colloc_likelihoods,
                     marginal, scores, cached)
        out[i] = colloc_chart(cached, scores, y.shape[0], colloc_base, go_s, end_s, go_w, end_w, path,
                              outside_cached, outside)[0]


@njit(cache=True)
def colloc_segment_types(ids, offsets, word_ids, word_offsets, pi, base, table, phones, stop, go_w, end_w, colloc_ids,
                         colloc_offsets, colloc_pi, colloc_base, go_s, end_s, max_insertions, longest, ends, kinds,
                         choices):
    """The best derivation (`best_collocs`) of every utterance: its pieces' ends, kinds and readings from
    ``offsets[i]`` of ``ends``, ``kinds`` and ``choices`` (the Colloc atom of a cached collocation; the Word atom
    of largest term of eq. N1 of a word, -1 where the base's is larger); returns each one's number of pieces."""
    work, buffers, likelihoods, marginal, scores, _ = _workspace(
        word_offsets, offsets, phones.shape[0], max_insertions, longest)
    limit, colloc_work, colloc_likelihoods, cached, _, _ = _colloc_workspace(colloc_offsets, offsets, max_insertions)
    found = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
    for i in range(offsets.shape[0] - 1):
        y = ids[offsets[i]:offsets[i + 1]]
        _type_scores(y, word_ids, word_offsets, pi, base, table, phones, stop, colloc_ids, colloc_offsets, colloc_pi,
                     max_insertions, longest, limit, work, colloc_work, buffers, likelihoods, colloc_likelihoods,
                     marginal, scores, cached)
        first, stop_at = offsets[i], offsets[i + 1]
        found[i] = best_collocs(cached, scores, y.shape[0], colloc_base, go_s, end_s, go_w, end_w,
                                ends[first:stop_at], kinds[first:stop_at])
        a = 0
        for j in range(found[i]):
            b = ends[first + j]
            if kinds[first + j] == 0:
                choices[first + j] = likeliest(colloc_pi, colloc_likelihoods, a, b, 0.0)
            else:
                choices[first + j] = likeliest(pi, likelihoods, a, b, base * marginal[a, b])
            a = b
    return found


class CollocStatistics(NamedTuple):
    """VB's E-step (module notes): the word level's `Statistics` (the Colloc atoms' words included), the rule
    counts (``Word+`` row 0, ``Colloc+`` row 1), the Colloc atoms' customers, the base collocations read as the
    identity (tuple of words -> mass) and their expected number."""

    words: Statistics
    rules: np.ndarray
    colloc_customers: np.ndarray
    served: dict
    bases: float


def base_collocations(ids, offsets, copies, weights, word_scores, base_offsets, paths):
    """The base collocations' readings (module notes: the identity, by a walk of the chart pruned at FLOOR) ->
    their expected number over the utterance types."""
    log_base = weights.log_base
    log_go_w, log_end_w, log_go_s, log_end_s = (math.log(v) for v in (weights.words.go_on, weights.words.end,
                                                                      weights.go_on, weights.end))
    out = {}
    for i in range(offsets.shape[0] - 1):
        y, m = ids[offsets[i]:offsets[i + 1]].tolist(), int(offsets[i + 1] - offsets[i])
        out_f, in_f, out_b, in_b = paths[:, offsets[i] + i:offsets[i + 1] + i + 1]
        scores = word_scores[base_offsets[i]:base_offsets[i + 1]].reshape(m + 1, m + 1)
        log_z = out_f[m]
        with np.errstate(divide="ignore"):
            log_scores = np.log(scores)
        stack = [(a, out_f[a] + log_base, ()) for a in range(m) if out_f[a] > -math.inf]
        while stack:
            a, prefix, words = stack.pop()
            for b in range(a + 1, m + 1):
                reached = prefix + log_scores[a, b]
                if not reached + in_b[b] - log_z > math.log(FLOOR):
                    continue
                read = words + (tuple(y[a:b]),)
                step = log_end_s if b == m else log_go_s
                mass = math.exp(reached + log_end_w + step + out_b[b] - log_z)
                if mass > FLOOR:
                    out[read] = out.get(read, 0.0) + copies[i] * mass
                stack.append((b, reached + log_go_w, read))
    return out


def atom_step(collocs, words, log_pi, log_base, go_on, end, phones, stop):
    """Each Colloc atom one draw from Colloc's base (module notes, eq. K4): (sum_c log L_c, the Word atoms' expected
    customers from them, their words served by Word's base -> mass, their words in all)."""
    index = {tuple(np.asarray(w).tolist()): k for k, w in enumerate(words)}
    customers, served = np.zeros(len(words)), {}
    total, n_words = 0.0, 0
    for colloc in collocs:
        total += (len(colloc) - 1) * math.log(go_on) + math.log(end)
        for word in colloc:
            n_words += 1
            base = math.exp(log_base) * stop * (1 - stop) ** (len(word) - 1) * float(np.prod(phones[list(word)]))
            k = index.get(word)
            cached = math.exp(log_pi[k]) if k is not None else 0.0
            total += math.log(cached + base)
            if k is not None:
                customers[k] += cached / (cached + base)
            served[word] = served.get(word, 0.0) + base / (cached + base)
    return total, customers, served, n_words


class CollocVB(JointVB):
    """VB's q of the colloc grammar over the channel (module notes): `JointVB`'s (channel, Word sticks, rules: row 0
    ``Word+``, row 1 ``Colloc+``) and the Colloc sticks over ``collocs`` (tuples of words)."""

    def __init__(self, model, corpus, grammaton, counts, collocs, colloc_counts):
        super().__init__(model, corpus, grammaton, counts)
        self.rule_counts = np.zeros((2, 2))
        self.collocs = list(collocs)
        self.set_colloc_sticks(np.asarray(colloc_counts, dtype=float), 0.0)

    def set_colloc_sticks(self, counts, base_uses):
        model = self.model
        self.colloc_first, self.colloc_second, self.colloc_log_pi, self.colloc_log_base = py_sticks(
            counts, base_uses, model.a, model.b)

    def state(self):
        ids, offsets, lengths, length_offsets = packed(self.collocs)
        return super().state() | {
            "colloc_first": self.colloc_first, "colloc_second": self.colloc_second, "colloc_log_pi": self.colloc_log_pi,
            "colloc_log_base": np.array(self.colloc_log_base), "colloc_ids": ids, "colloc_offsets": offsets,
            "word_lengths": lengths, "length_offsets": length_offsets}

    def restore(self, saved):
        super().restore(saved)
        for name in ("colloc_first", "colloc_second", "colloc_log_pi"):
            setattr(self, name, np.array(saved[name]))
        self.colloc_log_base = float(saved["colloc_log_base"])
        self.collocs = unpacked(*(np.asarray(saved[name], dtype=np.int64) for name in
                                  ("colloc_ids", "colloc_offsets", "word_lengths", "length_offsets")))

    def tables(self, statistics=None, rule=VB):
        """The chart's weights (`CollocWeights`) under the current q."""
        go_on, end = rules.dirichlet_table(VB, self.rule_counts, self.model.alpha)[1]
        return CollocWeights(super().tables(), *packed(self.collocs), np.asarray(self.colloc_log_pi, float),
                             float(self.colloc_log_base), float(go_on), float(end))

    def penalty(self, rule, statistics, tables):
        """`JointVB.penalty` (both rule pairs' KL) plus sum_c log L_c (eq. K4) minus KL(q(v^C))."""
        model = self.model
        w = tables.words
        atoms = atom_step(self.collocs, self.grammaton, w.log_pi, w.log_base, w.go_on, w.end, w.phones, w.stop)[0]
        return (super().penalty(rule, statistics, w) + atoms
                - py_stick_kl(self.colloc_first, self.colloc_second, model.a, model.b))

    def expectations(self, weights):
        """The E-step (`expected_colloc_types` and the atoms' `atom_step`), then q's update (`absorb`)."""
        corpus = self.corpus
        statistics, evidence = expected_colloc_types(weights, self.collocs, self.grammaton, corpus.ids,
                                                     corpus.offsets, corpus.copies, corpus.first,
                                                     *self.model._e_step_settings())
        self.absorb(statistics)
        return statistics, evidence

    def absorb(self, statistics):
        """q(theta), q(rho), both sticks (each grammaton refreshed first when ``refresh``)."""
        self.edit_counts = statistics.words.edits
        self.first_table = None
        self.rule_counts = statistics.rules
        self.absorb_words(statistics.words)
        customers, total = statistics.colloc_customers, statistics.colloc_customers.sum() + statistics.bases
        if self.refresh:
            self.collocs, customers = refreshed(self.collocs, customers, statistics.served, self.model.truncation)
        self.set_colloc_sticks(customers, max(total - customers.sum(), 0.0))

    def type_log_evidence(self, weights):
        corpus = self.corpus
        out = np.empty(corpus.offsets.shape[0] - 1)
        colloc_log_evidence(corpus.ids, corpus.offsets, *weights.chart_arguments(), self.model.max_insertions,
                            self.model.longest, out)
        return out

    def colloc_counts(self):
        """The Colloc atoms' expected customers (their sticks' counts)."""
        return (self.colloc_first - 1.0 + self.model.a) if self.collocs else np.zeros(0)

    def moved_to(self, utterances, copies):
        raise ValueError("the colloc grammar's q does not move to other utterances (joint='nbest' is unigram only)")


def expected_colloc_types(weights, collocs, words, ids, offsets, copies, first, max_insertions, longest, prune):
    """VB's E-step over the utterance types (`colloc_e_step` and the Colloc atoms' `atom_step` under the same
    ``weights``): (`CollocStatistics`, sum of copies * log Z)."""
    base_offsets = span_offsets(offsets)
    w = weights.words
    edits = np.zeros_like(w.table)
    customers, colloc_customers = np.zeros(w.log_pi.shape[0]), np.zeros(weights.log_pi.shape[0])
    base_served, word_scores = np.zeros(base_offsets[-1]), np.zeros(base_offsets[-1])
    paths = np.zeros((4, offsets[-1] + offsets.shape[0] - 1))
    evidence, chart_words, bases, continued, bad = colloc_e_step(
        ids, offsets, copies, *weights.chart_arguments(), max_insertions, longest, prune, edits, customers,
        colloc_customers, base_served, word_scores, base_offsets, paths)
    if bad >= 0:
        raise _unsegmentable(first[bad], longest)
    _, atom_customers, atom_served, atom_words = atom_step(collocs, words, w.log_pi, w.log_base, w.go_on, w.end,
                                                           w.phones, w.stop)
    served = served_words(ids, offsets, base_served, base_offsets) + atom_served
    word_level = Statistics(edits, customers + atom_customers, served, chart_words + atom_words)
    utterances = float(copies.sum())
    collocations = colloc_customers.sum() + bases
    atom_rules = [sum(len(c) - 1 for c in collocs), len(collocs)]
    rule_counts = np.array([[continued + atom_rules[0], bases + atom_rules[1]],
                            [max(collocations - utterances, 0.0), utterances]])
    return CollocStatistics(word_level, rule_counts, colloc_customers,
                            base_collocations(ids, offsets, copies, weights, word_scores, base_offsets, paths),
                            bases), evidence


def split_cached(colloc, surface, table, n_symbols, max_insertions):
    """A cached collocation's surface span cut at its words: each surface symbol goes with the word of the
    underlying symbol it rewrites under the channel's best alignment (`best_alignments`), an inserted one with the
    word of the symbol before it (the first word at the start).  Returns (word, [start, stop) in the span) for the
    words that kept a symbol."""
    string = np.array([s for word in colloc for s in word], dtype=np.int64)
    owner_of = np.repeat(np.arange(len(colloc)), [len(word) for word in colloc])
    rows = best_alignments(string, np.array([0, len(string)]), np.asarray(surface, np.int64),
                           np.array([0, len(surface)]), n_symbols, table, max_insertions)[0]
    owners, current = np.zeros(len(surface), np.int64), 0
    for i, j in rows:
        if i != INSERT:
            current = owner_of[i]
        if j != DELETE:
            owners[j] = current
    out = []
    for k, word in enumerate(colloc):
        where = np.flatnonzero(owners == k)
        if where.size:
            out.append((word, int(where[0]), int(where[-1]) + 1))
    return out


def start_collocations(grammar, index, truncation):
    """The start's Colloc grammaton (module notes, Start): the fitted channel-free colloc ``grammar``'s cached
    collocations of at least one expected customer, most first, up to ``truncation``, each cut into words by the
    grammar's `segment` and spelt in the symbol ids of ``index``: (collocations, their customers)."""
    compiled, customers = grammar.grammar_, grammar.learner_.customers()
    kernel = compiled.kernel
    family = int(np.flatnonzero(kernel.span_parent == compiled.nonterminals.index("Colloc"))[0])
    first, count = kernel.span_base[family], kernel.span_count[family]
    substrings = compiled.substrings.substrings
    found = sorted(((tuple(compiled.vocabulary.decode(list(substrings[s]))), float(customers[first + s]))
                    for s in np.flatnonzero(customers[first:first + count] >= 1.0)), key=lambda item: -item[1])
    found = found[:truncation]
    segmented = grammar.segment([list(string) for string, _ in found]) if found else []
    collocs = [tuple(tuple(index[s] for s in word) for word in words) for words in segmented]
    return collocs, [c for _, c in found]


def saved_collocations(model, meta, arrays):
    """`NoisyWords._saved`'s colloc part: the Colloc atoms, their sticks' weights and customers, the rules."""
    w = model._weights
    meta.update(colloc_go_on=w.go_on, colloc_end=w.end)
    arrays.update(colloc_ids=w.colloc_ids, colloc_offsets=w.colloc_offsets, word_lengths=w.word_lengths,
                  length_offsets=w.length_offsets, colloc_log_pi=w.log_pi, colloc_log_base=np.array(w.log_base),
                  colloc_customers=np.array(list(model.collocations_.values()), dtype=float))


def load_collocations(model, meta, arrays):
    """`NoisyWords._from_saved`'s colloc part (`saved_collocations`' inverse) on the words' loaded weights."""
    model._weights = CollocWeights(model._weights, *(arrays[name] for name in (
        "colloc_ids", "colloc_offsets", "word_lengths", "length_offsets", "colloc_log_pi")),
        float(arrays["colloc_log_base"]), float(meta["colloc_go_on"]), float(meta["colloc_end"]))
    model.collocations_ = model._collocations(arrays["colloc_customers"])


def decoded_collocs(model, types, ids, offsets):
    """`NoisyWords.decode` under the colloc grammar: every type's best derivation (`colloc_segment_types`); a base
    collocation's words read as the unigram's (the Word atom of largest term of eq. N1, or None), a cached
    collocation's surface cut at its words (`split_cached`), each read as its own underlying word."""
    from .noisy_words import DecodedWord
    w = model._weights
    ends, kinds = np.zeros(offsets[-1], np.int64), np.zeros(offsets[-1], np.int64)
    choices = np.full(offsets[-1], -1, np.int64)
    found = colloc_segment_types(ids, offsets, *model._chart_weights(), ends, kinds, choices)
    symbols, table = model.symbols_, w.words.table
    lexicon = [tuple(symbols[s] for s in w.words.word_ids[a:b])
               for a, b in zip(w.words.word_offsets[:-1], w.words.word_offsets[1:])]
    collocs = w.collocations()
    decoded = {}
    for t, utterance in enumerate(types):
        words, start, y = [], 0, ids[offsets[t]:offsets[t + 1]]
        for j in range(found[t]):
            stop, kind, k = (int(v[offsets[t] + j]) for v in (ends, kinds, choices))
            if kind == 0:
                for word, a, b in split_cached(collocs[k], y[start:stop], table, len(symbols), model.max_insertions):
                    words.append(DecodedWord(tuple(utterance[start + a:start + b]), start + a, start + b,
                                             tuple(symbols[s] for s in word)))
            else:
                words.append(DecodedWord(tuple(utterance[start:stop]), start, stop, None if k < 0 else lexicon[k]))
            start = stop
        decoded[tuple(utterance)] = words or [DecodedWord(tuple(utterance), 0, len(utterance), None)]
    return decoded

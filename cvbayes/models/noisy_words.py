"""`NoisyWords`: word segmentation of noisy symbol strings by the unigram adaptor grammar whose every word
token is realised through an edit channel (seed 004's joint model, Lee, O'Donnell and Glass 2015, §3, on
symbols: the stage of issue 31 where the truth is known).  ``grammar="colloc"``: the colloc grammar over the same
words and channel, by VB (`cvbayes.models.noisy_colloc`, which reuses this module's scores, statistics and q) or
CVI (`cvbayes.models.noisy_colloc_cvi`, a `CollapsedNoisyWords` over collocations).

Model
-----
The unigram adaptor grammar (``Sentence -> Word+``, ``@Word -> Phon+``) draws underlying words x from a
Pitman-Yor cache whose base is P0(x) = s (1 - s)^(n - 1) prod_i phi(x_i), phi uniform over the U symbols and
the stop probability s fixed (``base_stop``; Goldwater's unigram base).  Every word token is rewritten into
a surface span by its own edit sequence of the channel of `cvbayes.chains.edits` (substitutions, deletions,
at most ``max_insertions`` insertions a gap; a Dirichlet row per symbol as in `EditChannel`), and the
utterance is the concatenation of the spans.  Underlying and surface symbols are one alphabet.  A word whose
every symbol is deleted leaves no span; the chart has no empty words, so that mass p(eps | x) is dropped
(the model the chart reads is deficient by it), and no word spans more than ``longest`` surface symbols.

VB
--
Mean field q(v) q(theta) q(rho) q(z): Cohen, Blei and Smith's (2010) truncated PY sticks over a *grammaton*
of ``truncation`` underlying words (`cvbayes.models.adaptor.vb.py_sticks`), Dirichlet rows q(theta) of the
channel (`cvbayes.models.channel.channel_tables`), a Dirichlet q(rho) over the two ``Word+`` rules, and
q(z) over the segmentations, each token's cache or base choice, the underlying word of a base-generated
token and every edit sequence, exact given the others: the chart of `cvbayes.models.adaptor.spans` (eq. W1)
on the span scores

    S(a, b) = sum_k pi~_k p~(y_a..b-1 | x_k) + pi~_0 sum_x P0(x) p~(y_a..b-1 | x)                 (N1)

where pi~_k = exp E[log pi_k], pi~_0 = exp E[log prod_k (1 - v_k)] and p~ is the channel on exp E[log
theta] (`cvbayes.chains.edit_spans` eq. S1 and S2).  With the chart's outside O(a, b) = d log Z / d S(a, b)
(eq. W2) the E-step's statistics are: atom k's expected customers sum_ab O pi~_k p~(y_ab | x_k); the base's,
sum_ab O pi~_0 M(a, b) (M the second sum of N1); the expected edit counts, of the cached words by the pair
forward-backward of (x_k, y_ab) weighted by O pi~_k p~(y_ab | x_k) (`edits.edit_posteriors`), of the base's
words by eq. S3 with tau = O pi~_0; and the expected ``Word+`` rules (words - 1 and 1 an utterance).  Each
atom x_k is one draw from the base (Cohen, Blei and Smith 2010; `cvbayes.models.adaptor.vb`'s notes), so the
ELBO is

    sum log Z + sum_k log P0(x_k) - KL(q(v)) - KL(q(theta)) - KL(q(rho));                          (N2)

q's updates are exact coordinate steps and the atoms' term is a constant while the grammaton is fixed, so
eq. N2 then never decreases (tested).  After every E-step the grammaton is refreshed as the adaptor grammar's
VB does: the ``truncation`` words with most expected customers, in decreasing order, a base-generated token
counting for its surface span read as its underlying word (the identity reading, the channel's mode while it
keeps most symbols), and only those with at least one.  Dropping the last atom x_K, its u_K customers served
by the base with underlying word x_K instead (q(z) otherwise held), takes out the atom's log P0(x_K), gives
each of its tokens log pi~_0 + log P0(x_K) for log pi~_K, and leaves q(v_k) = Beta(1 - a + u_k, b + k a +
sum_{j > k} u_j + u_base) of every k < K as it was (u_K moves from the sum to u_base); with q(v_K) at its
optimum before, eq. N2 changes by

    -(1 - u_K) log P0(x_K) - log [B(1 - a + u_K, b + K a + u_base) / B(1 - a, b + K a)],              (N3)

positive when u_K < 1 (P0 < 1, and B falls in its first argument); dropped in turn from the end, every word
below one customer raises eq. N2 (tested).  Kept, each such stick costs the base's log weight E[log(1 - v_k)] ~
-(1 - a) / (b + k a + sum_{j > k} u_j + u_base), and hundreds of them shut the base path: on the first 1,500
Brent utterances through `cvbayes experiment noisy-words`'s seed-0 channel, with every word above 1e-9
customers kept, log pi~_0 was -896 after the first refresh and -35 to -40 after that, no token was served by
the base in any pass and the grammaton only shrank (1,190 -> 256 words).  Keeping the words of at least one
customer (seeds 0-2, 10 passes): log pi~_0 -8.8 to -9.2 and 211-216 words at b = 1 (3.3 base-served tokens
on seed 0), -4.3 and 366-383 words with 41-45 base-served tokens at b = 100; token F1 0.578 and 0.589 on
average (0.581 before).  What is approximate: a candidate's u is its cached customers plus its surface
string's base-served mass under the identity reading (not the base's posterior over underlying words), and
eq. N2 can dip where the grammaton changes otherwise (a word entering it, the sticks' order).  A cached
word's edit counts at a span are computed where its posterior weight exceeds ``prune`` (the lost mass is
below it a span).

CVI
---
The collapsed counterpart: the sticks v, the channel rows theta and the ``Word+`` weights rho integrated out,
q(z) = prod_u q(z^u) over units u, an utterance *type* (its c_u copies left out and put back together, the
adaptor grammar's ``unit="type"``), and the update q(z^u) ~ exp E_{q(z^-u)}[log p(z^u | z^-u)] (thesis eq.
3.44-3.46), a unit's own word tokens not seeing each other (CVI-2, eq. 3.47).  Its chart is eq. W1 on

    S^-u(a, b) = sum_k pi_k p_bar(y_ab | x_k) + pi_0 sum_x P0(x) p_bar(y_ab | x)                    (C1)

with every weight a predictive of the other units' expected counts: p_bar the channel on the posterior
means theta_bar(o | u) = (E[C^-u_uo] + alpha) / (E[C^-u_u.] + (B + 1) alpha) (eq. 3.49-3.50, `EditChannel`'s
cvi: `channel_tables` under MEAN), rho likewise; pi_0 = (b + a T) / (n + b) and, for the cached word x_k with
n_k customers and t_k tables of the n words and T tables, pi_k = (exp E[log(n_k - a t_k + theta'_k)] -
theta'_k) / (n + b), theta'_k = (b + a T) P0(x_k): the Pitman-Yor predictive p(x_k) = (n_k - a t_k +
theta'_k) / (n + b) split into the cache and the base path, whose theta'_k / (n + b) is already in pi_0's
sum over x.  E[log .] takes the adaptor grammar's zero-exact step (`adaptor.kernels.cache_mass`; its module
notes, eq. 5.30-5.35): n_k = 0 exactly, the first-order value at E_+[.] = E[.] / q(n_k > 0) otherwise, with
log q(n_k = 0) = sum_m c_m log(1 - min(E[n^m_k] / c_m, 1)) over the units m (eq. 5.46, a unit's copies
independent).  E[t_k] = q(n_k > 0) T(E_+[n_k]) (`core.restaurants.py_table_count`, eq. 5.29-5.35) once a
pass, T held meanwhile (no effect at a = 0).  The unit's statistics are VB's E-step (`e_step`) on its type
alone under these weights: its expected edit counts, the expected customers of each word the chart offers,
its base-served spans and its expected words (``Word+`` counts: words - c_u and c_u).  A base-served span
becomes a customer of its surface string read as the underlying word (VB's refresh reads it so), a word the
lexicon gains if new.  Kept per unit, to take out: its words and customers, and its edit counts on the
columns it touches (deletion and its own surface symbols; (2U + 1) x (1 + its distinct symbols) numbers).
The start: one E-step of every unit under VB's start q (the grammar's lexicon as sticks, `first_channel`),
not counted as a pass, as `EditChannel` starts; then passes in a fresh random order of the types.  The
objective is the sum of the units' leave-one-out log Z (times copies), which need not rise monotonically.
What remains approximate: a unit's tokens (and a type's copies) do not see each other; the first-order step
on n_k > 0, on the normaliser n + b and on the channel's and rho's counts (their prior pseudo-counts keep it
safe, as in `EditChannel`); q(n^m_k > 0) = min(E[n^m_k] / c_m, 1); the identity reading of new words; the
chart offers only some words (below); base-served spans below SLIVER are not credited to a word (their mass stays in
n); edit counts below ``prune`` skipped as in VB; the deficient chart (above).

Offered words (cvi)
-------------------
The lexicon gains a word for every base-served span above SLIVER, so it soon holds thousands, most with a
sliver of a customer; every word the chart offers costs a channel lattice on every span (eq. S1).  Once a
pass the chart is offered the ``truncation`` words with most expected customers among those with more than
eps = ``min_customers``; the words left out lose only their cache path, as the base path's second sum in eq.
C1 runs over every x, offered or not.  That path is small: with f_k = n_k - a t_k and q+ = q(n_k > 0), the
zero-exact step is (n + b) pi_k = theta'^(1 - q+) (E_+[f_k] + theta')^q+ - theta' <= (1 - q+) theta' + q+
(E_+[f_k] + theta') - theta' = E[f_k] <= E[n_k] (weighted AM-GM).  So leaving out the words W of at most eps
customers each (and any beyond ``truncation``) takes

    delta = sum_{k in W} pi_k <= D / (n + b),   D = sum_{k in W} E[n_k]  (<= eps |W| with no truncation)   (C2)

from the chart's distribution of a word, each span score of eq. C1 falls by sum_{k in W} pi_k p_bar(y_ab |
x_k) in [0, delta] (p_bar(y | x) <= 1), and the chart's distribution over derivations (segmentation, words and
edits) loses at most delta a word token: in total variation over utterances, at most E[words] delta.  The
lost mass is not renormalised (the chart is deficient by it, as by the empty words'); D / (n + b) of the last
pass is ``dropped_mass_``.  The bookkeeping stays exact: a word left out keeps its customers in n and in its
units' statistics, and a unit whose base-served span reads as it credits it again, so it is offered from the
next pass once its customers exceed eps.  ``min_customers=0`` offers every word above SLIVER (tested equal to
offering the whole lexicon).

Start (``init``): "grammar" (default), the grammaton and its counts from the lexicon of the channel-free
unigram `AdaptorGrammar` (its default learner, ``init_iter`` passes) fitted to the surface strings; "empty",
no cached word (on the first 1,500 Brent utterances through `cvbayes experiment noisy-words`'s seed-0 channel,
10 passes: token F1 0.53 from "empty", 0.57 from "grammar"; 0.46 and 0.57 while VB's refresh kept every word
above 1e-9 customers).  The first E-step's channel is `first_channel` (deletions, substitutions and
insertions at ``start_noise`` each).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..chains.edit_spans import base_buffers, base_span_counts, base_span_marginals, word_span_likelihoods, word_span_work
from ..chains.edits import best_alignments, edit_posteriors, fill_weights, lattice_buffers, scatter_counts
from ..core import rules
from ..core.restaurants import py_table_count
from ..core.rules import MEAN, VB, check_prior
from ..schedules import Algorithm, batch, leave_one_out
from .adaptor.kernels import EMPTY_FLOOR, ZERO_EXACT, cache_mass
from .adaptor.layout import utterance_types
from .adaptor.model import AdaptorGrammar, as_utterances
from .adaptor.spans import best_words, word_chart
from .adaptor.vb import py_stick_kl, py_sticks
from .base import BayesModel
from .channel import channel_tables
from .shards import Sharding

__all__ = ["NoisyWords", "first_channel"]

GRAMMARS = ("unigram", "colloc")
ALGORITHMS = {"vb": Algorithm(batch, VB, "utterance type", "Cohen, Blei and Smith 2010 with the edit channel"),
              "cvi": Algorithm(leave_one_out, MEAN, "utterance type", "thesis eq. 3.44-3.50 and 5.30-5.35 on eq. N1")}
# what fit(client=...) runs (cvbayes.models.noisy_words_shards)
SHARDED_ALGORITHMS = ("vb",)
OBJECTIVES = {"vb": "evidence lower bound (eq. N2): sum log Z of the span chart (eq. N1) plus the atoms' log P0 "
                    "minus KL(q(v)), KL(q(theta)) and KL(q(rho))",
              "cvi": "sum over utterance types (times their copies) of log Z of the span chart under the other "
                     "types' predictive (eq. C1): a leave-one-type-out predictive log-likelihood"}


class Corpus(NamedTuple):
    """Distinct utterances as symbol ids (flat, with offsets), their copies, and the alphabet; fit's shard
    options."""

    utterances: list
    symbols: list
    ids: np.ndarray
    offsets: np.ndarray
    copies: np.ndarray
    first: np.ndarray
    sharding: Sharding = Sharding()


class DecodedWord(NamedTuple):
    """One word token of `NoisyWords.decode`: its surface symbols, their place [start, stop) in the utterance,
    and its underlying word (a key of ``lexicon_``), or None when the base reads it better (a new word)."""

    surface: tuple
    start: int
    stop: int
    underlying: tuple | None


class Weights(NamedTuple):
    """What one chart reads (eq. N1): the grammaton's words (flat ids, offsets), log pi~ (K,), log pi~_0, the
    channel table on exp E[log theta], the base's phones and stop, and the ``Word+`` weights."""

    word_ids: np.ndarray
    word_offsets: np.ndarray
    log_pi: np.ndarray
    log_base: float
    table: np.ndarray
    phones: np.ndarray
    stop: float
    go_on: float
    end: float


@njit(cache=True)
def _scores(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest, work, buffers,
            likelihoods, marginal, scores):
    """Eq. N1 for one utterance: likelihoods[k] = p~(y_ab | x_k), marginal = M, scores = S."""
    m = y.shape[0]
    n_underlying = phones.shape[0]
    base_span_marginals(y, stop, phones, table, max_insertions, longest, buffers, marginal)
    for a in range(m + 1):
        for b in range(m + 1):
            scores[a, b] = base * marginal[a, b]
    cached_scores(y, word_ids, word_offsets, pi, table, n_underlying, max_insertions, longest, work, likelihoods,
                  scores)


@njit(cache=True)
def cached_scores(y, word_ids, word_offsets, pi, table, n_underlying, max_insertions, longest, work, likelihoods,
                  scores):
    """The cache's part of eq. N1: likelihoods[k] = p~(y_ab | x_k) of the underlying strings x_k laid end to end
    at ``word_offsets``, and sum_k pi~_k p~(y_ab | x_k) added to ``scores`` (spans up to ``longest``)."""
    m = y.shape[0]
    for k in range(pi.shape[0]):
        x = word_ids[word_offsets[k]:word_offsets[k + 1]]
        word_span_likelihoods(x, y, n_underlying, table, max_insertions, longest, work, likelihoods[k])
        for a in range(m + 1):
            for b in range(a + 1, m + 1):
                scores[a, b] += pi[k] * likelihoods[k, a, b]


@njit(cache=True)
def cached_statistics(y, word_ids, word_offsets, pi, likelihoods, outside, n_underlying, table, max_insertions,
                      longest, prune, lattice, counts, customers):
    """The cache's statistics of one utterance from its chart's ``outside`` d log Z / d S(a, b): each string's
    expected customers sum_ab O pi~_k p~(y_ab | x_k) added to ``customers`` and, where one span's weight
    exceeds ``prune``, its expected edit counts (`edits.edit_posteriors` on the pair) to ``counts``.
    ``lattice``: (pair weights, posteriors, alpha, beta, exits, scales, totals) for the longest string."""
    pair_w, post, alpha, beta, exits, scales, totals = lattice
    m = y.shape[0]
    for k in range(pi.shape[0]):
        x = word_ids[word_offsets[k]:word_offsets[k + 1]]
        for a in range(m):
            for b in range(a + 1, min(m, a + longest) + 1):
                r = outside[a, b] * pi[k] * likelihoods[k, a, b]
                customers[k] += r
                if r <= prune:          # prune >= 0, so a span x cannot produce is skipped too
                    continue
                span = y[a:b]
                fill_weights(x, span, n_underlying, table, pair_w)
                edit_posteriors(pair_w, x.shape[0], b - a, max_insertions, alpha, beta, exits, scales, post)
                scatter_counts(x, span, n_underlying, post, r, counts, totals)


@njit(cache=True)
def lattice_work(word_offsets, longest, max_insertions, n_rows):
    """`cached_statistics`' ``lattice`` buffers for the strings at ``word_offsets`` and spans up to ``longest``."""
    longest_word = _longest(word_offsets)
    pair_w = np.empty((2 * longest_word + 1, longest + 1))
    alpha, beta, exits, scales = lattice_buffers(longest_word, longest, max_insertions)
    return pair_w, np.empty_like(pair_w), alpha, beta, exits, scales, np.zeros(n_rows)


@njit(cache=True)
def _longest(offsets):
    """The longest of the sequences laid end to end at ``offsets`` (at least 1)."""
    out = 1
    for k in range(offsets.shape[0] - 1):
        out = max(out, offsets[k + 1] - offsets[k])
    return out


@njit(cache=True)
def _workspace(word_offsets, offsets, n_underlying, max_insertions, longest):
    """Buffers of one chart: sized by the longest word of the grammaton and the longest utterance type."""
    n_words = word_offsets.shape[0] - 1
    longest_word = _longest(word_offsets)
    width = _longest(offsets) + 1
    return (word_span_work(longest_word, longest, max_insertions), base_buffers(n_underlying, longest, max_insertions),
            np.zeros((n_words, width, width)), np.zeros((width, width)), np.zeros((width, width)),
            np.zeros((width, width)))


@njit(cache=True)
def e_step(ids, offsets, copies, word_ids, word_offsets, pi, base, table, phones, stop, go_on, end, max_insertions,
           longest, prune, counts, customers, base_served, base_offsets):
    """The E-step of VB (module notes) over the utterance types: adds the expected edit counts to ``counts``
    (2U + 1, B + 1) and each atom's expected customers to ``customers`` (K,), and writes each type's
    base-served words O pi~_0 M (times its copies) to ``base_served`` at ``base_offsets`` ((m + 1)^2 a type).
    Returns (sum of copies * log Z, expected words, first type without a segmentation or -1)."""
    work, buffers, likelihoods, marginal, scores, outside = _workspace(
        word_offsets, offsets, phones.shape[0], max_insertions, longest)
    lattice = lattice_work(word_offsets, longest, max_insertions, counts.shape[0])
    evidence, words = 0.0, 0.0
    for i in range(offsets.shape[0] - 1):
        y = ids[offsets[i]:offsets[i + 1]]
        m = y.shape[0]
        _scores(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest, work, buffers,
                likelihoods, marginal, scores)
        log_z = word_chart(scores, m, go_on, end, outside)
        if log_z == -np.inf:
            return evidence, words, i
        weight = copies[i]
        evidence += weight * log_z
        for a in range(m + 1):
            for b in range(m + 1):
                outside[a, b] *= weight
        words += word_statistics(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest,
                                 prune, buffers, likelihoods, marginal, scores, outside, lattice, counts, customers,
                                 base_served[base_offsets[i]:base_offsets[i + 1]].reshape((m + 1, m + 1)))
    return evidence, words, -1


@njit(cache=True)
def word_statistics(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest, prune,
                    buffers, likelihoods, marginal, scores, outside, lattice, counts, customers, served):
    """One utterance's word statistics (module notes, VB) from ``outside`` = d log Z / d S(a, b) (eq. W2, times
    the copies; overwritten): the cached words' (`cached_statistics`), the base-served words O pi~_0 M written
    to ``served`` and their edit counts (eq. S3) added to ``counts``.  Returns the expected words."""
    m = y.shape[0]
    words = 0.0
    for a in range(m + 1):
        for b in range(m + 1):
            served[a, b] = outside[a, b] * base * marginal[a, b]
            words += outside[a, b] * scores[a, b]
    cached_statistics(y, word_ids, word_offsets, pi, likelihoods, outside, phones.shape[0], table, max_insertions,
                      longest, prune, lattice, counts, customers)
    for a in range(m + 1):
        for b in range(m + 1):
            outside[a, b] *= base
    base_span_counts(y, stop, phones, table, max_insertions, longest, buffers, outside, counts)
    return words


@njit(cache=True)
def segment_types(ids, offsets, word_ids, word_offsets, pi, base, table, phones, stop, go_on, end, max_insertions,
                  longest, ends, underlying):
    """The best segmentation (eq. W1 in max-product on eq. N1) of every utterance: its word ends from
    ``offsets[i]`` of ``ends`` (as long as ``ids``: at most a word a symbol), and at the same places of
    ``underlying`` each word's likeliest reading, the cached word k of largest pi_k p~(y_ab | x_k) or -1 where
    the base's term of eq. N1 is larger; returns the number of words of each (0: none)."""
    n_types = offsets.shape[0] - 1
    work, buffers, likelihoods, marginal, scores, _ = _workspace(
        word_offsets, offsets, phones.shape[0], max_insertions, longest)
    found = np.zeros(n_types, dtype=np.int64)
    for i in range(n_types):
        y = ids[offsets[i]:offsets[i + 1]]
        _scores(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest, work, buffers,
                likelihoods, marginal, scores)
        first = offsets[i]
        found[i] = best_words(scores, y.shape[0], go_on, end, ends[first:offsets[i + 1]])
        a = 0
        for j in range(found[i]):
            b = ends[first + j]
            underlying[first + j] = likeliest(pi, likelihoods, a, b, base * marginal[a, b])
            a = b
    return found


@njit(cache=True)
def likeliest(pi, likelihoods, a, b, floor):
    """The atom k of largest pi[k] likelihoods[k, a, b] above ``floor`` (the base's term), or -1."""
    best, choice = floor, -1
    for k in range(pi.shape[0]):
        if pi[k] * likelihoods[k, a, b] > best:
            best, choice = pi[k] * likelihoods[k, a, b], k
    return choice


@njit(cache=True)
def log_evidence_types(ids, offsets, word_ids, word_offsets, pi, base, table, phones, stop, go_on, end,
                       max_insertions, longest, out):
    """log Z of every utterance type: the chart of eq. W1 on the span scores of eq. N1 summed over its
    segmentations, words and edits; -inf for a type without a segmentation."""
    work, buffers, likelihoods, marginal, scores, outside = _workspace(
        word_offsets, offsets, phones.shape[0], max_insertions, longest)
    for i in range(offsets.shape[0] - 1):
        y = ids[offsets[i]:offsets[i + 1]]
        _scores(y, word_ids, word_offsets, pi, base, table, phones, stop, max_insertions, longest, work, buffers,
                likelihoods, marginal, scores)
        out[i] = word_chart(scores, y.shape[0], go_on, end, outside)


def span_offsets(offsets):
    """Where each utterance type's (m + 1)^2 span table starts in one flat array (the E-step's ``base_offsets``)."""
    return np.concatenate([[0], np.cumsum((np.diff(offsets) + 1) ** 2)]).astype(np.int64)


# a base-served span weighing less than this is not credited to the lexicon (VB's refresh, CVI's units)
SLIVER = 1e-9


class ServedWords(dict):
    """Surface strings (tuples of symbol ids) read as underlying words (module notes: the identity reading) ->
    the base-served mass O pi~_0 M of their spans; ``+`` adds two up string by string (the shards' sums),
    the strings in order of first appearance."""

    def __add__(self, other):
        total = ServedWords(self)
        for word, mass in other.items():
            total[word] = total.get(word, 0.0) + mass
        return total


def served_words(ids, offsets, base_served, base_offsets):
    """The `ServedWords` of the utterance types at ``offsets`` from their base-served spans (``base_served`` as
    `e_step` writes it), those above SLIVER."""
    out = ServedWords()
    for i in range(offsets.shape[0] - 1):
        m = offsets[i + 1] - offsets[i]
        served = base_served[base_offsets[i]:base_offsets[i + 1]].reshape(m + 1, m + 1)
        y = ids[offsets[i]:offsets[i + 1]]
        for a, b in zip(*np.nonzero(served > SLIVER)):
            word = tuple(y[a:b].tolist())
            out[word] = out.get(word, 0.0) + served[a, b]
    return out


class Statistics(NamedTuple):
    """VB's E-step (module notes, VB) summed over utterance types: the expected edit counts (2U + 1, U + 1),
    the grammaton's expected customers (K,), the base-served words (`ServedWords`) and the expected words."""

    edits: np.ndarray
    customers: np.ndarray
    served: ServedWords
    words: float


def expected_types(weights, ids, offsets, copies, first, max_insertions, longest, prune):
    """VB's E-step (`e_step`: eq. W1's chart on the span scores of eq. N1, its outside weights eq. W2) over the
    utterance types at ``offsets`` with their ``copies`` under the chart's ``weights``: (`Statistics`, sum of
    copies * log Z).  ValueError naming the training utterance (``first``: each type's first) of a type
    without a segmentation."""
    base_offsets = span_offsets(offsets)
    edits = np.zeros_like(weights.table)
    customers = np.zeros(weights.log_pi.shape[0])
    base_served = np.zeros(base_offsets[-1])
    evidence, words, bad = e_step(
        ids, offsets, copies, weights.word_ids, weights.word_offsets, np.exp(weights.log_pi),
        float(np.exp(weights.log_base)), weights.table, weights.phones, weights.stop, weights.go_on, weights.end,
        max_insertions, longest, prune, edits, customers, base_served, base_offsets)
    if bad >= 0:
        raise _unsegmentable(first[bad], longest)
    return Statistics(edits, customers, served_words(ids, offsets, base_served, base_offsets), words), evidence


def refreshed(atoms, customers, served, truncation):
    """VB's refresh of a grammaton (module notes): its ``atoms`` (arrays or tuples) with their expected
    ``customers`` and the base-served candidates ``served`` (a dict of tuples to mass) ranked by their summed
    customers, those of at least one, up to ``truncation``: (the atoms as tuples, their customers)."""
    candidates = {tuple(np.asarray(w).tolist()) if isinstance(w, np.ndarray) else w: c
                  for w, c in zip(atoms, customers)}
    for atom, mass in served.items():
        candidates[atom] = candidates.get(atom, 0.0) + mass
    ranked = sorted(candidates.items(), key=lambda item: -item[1])
    # an atom of fewer than one expected customer lowers the ELBO (eq. N3)
    ranked = [(w, c) for w, c in ranked if c >= 1.0][:truncation]
    return [w for w, _ in ranked], np.array([c for _, c in ranked])


def _unsegmentable(utterance, longest):
    return ValueError(f"utterance {utterance}: no segmentation into words of at most longest={longest} surface "
                      "symbols has positive probability")


class JointVB:
    """VB's q (module notes) and the batch schedule's structure (``tables``, ``expectations``, ``penalty``);
    ``refresh`` False keeps the grammaton fixed (the ELBO then never decreases)."""

    def __init__(self, model, corpus, grammaton, counts):
        self.model, self.corpus = model, corpus
        n_symbols = len(corpus.symbols)
        self.phones = np.full(n_symbols, 1.0 / n_symbols)
        self.grammaton = list(grammaton)            # underlying words (int64 arrays) in stick order
        self.edit_counts = np.zeros((2 * n_symbols + 1, n_symbols + 1))
        self.rule_counts = np.zeros((1, 2))        # Word+ -> Word Word+, Word+ -> Word
        self.first_table = first_channel(n_symbols, model.start_noise)
        self.refresh = True
        counts = np.asarray(counts, dtype=float)
        self.set_sticks(counts, 0.0)

    def set_sticks(self, counts, base_uses):
        model = self.model
        self.first, self.second, self.log_pi, self.log_base = py_sticks(counts, base_uses, model.a, model.b)

    def state(self):
        return {"edit_counts": self.edit_counts, "rule_counts": self.rule_counts, "first": self.first,
                "second": self.second, "log_pi": self.log_pi, "log_base": np.array(self.log_base),
                "grammaton": [np.asarray(w) for w in self.grammaton], "started": np.array(self.first_table is None)}

    def restore(self, saved):
        for name in ("edit_counts", "rule_counts", "first", "second", "log_pi"):
            setattr(self, name, np.array(saved[name]))
        self.log_base = float(saved["log_base"])
        self.grammaton = [np.asarray(w, dtype=np.int64) for w in saved["grammaton"]]
        if bool(saved["started"]):
            self.first_table = None

    # the batch schedule's structure
    def tables(self, statistics=None, rule=VB):
        """The chart's weights (`Weights`) under the current q."""
        model = self.model
        if self.first_table is not None:
            table = self.first_table
        else:
            table = channel_tables(self.edit_counts, VB, model.channel_alpha, model.channel_beta)
        go_on, end = rules.dirichlet_table(VB, self.rule_counts, model.alpha)[0]
        return Weights(*laid_out(self.grammaton), np.asarray(self.log_pi, float), float(self.log_base), table,
                       self.phones, model.base_stop, float(go_on), float(end))

    def penalty(self, rule, statistics, tables):
        """sum_k log P0(x_k) - KL(q(v)) - KL(q(theta)) - KL(q(rho)) of the q the E-step uses: eq. N2 without its
        sum log Z (the first E-step's channel is the start table, not a q: its KL is 0)."""
        model, split = self.model, len(self.corpus.symbols)
        kl = py_stick_kl(self.first, self.second, model.a, model.b) + rules.dirichlet_kl(self.rule_counts, model.alpha)
        if self.first_table is None:
            kl += (rules.dirichlet_kl(self.edit_counts[:split], model.channel_alpha)
                   + rules.dirichlet_kl(self.edit_counts[split:], model.channel_beta))
        return self.atoms_log_base() - kl

    def atoms_log_base(self):
        """sum_k log P0(x_k) over the grammaton (eq. N2), each atom one draw from the base P0(x) = s (1 -
        s)^(n - 1) prod_i phi(x_i)."""
        stop = self.model.base_stop
        return float(sum(np.log(stop) + (len(word) - 1) * np.log1p(-stop) + np.log(self.phones[word]).sum()
                         for word in self.grammaton))

    def expectations(self, weights):
        """The E-step (`expected_types`), then q's update from it (`absorb`): (`Statistics`, sum of log Z)."""
        corpus = self.corpus
        statistics, evidence = expected_types(weights, corpus.ids, corpus.offsets, corpus.copies, corpus.first,
                                              *self.model._e_step_settings())
        self.absorb(statistics)
        return statistics, evidence

    def absorb(self, statistics):
        """q(theta), q(rho) and q(v) from an E-step's `Statistics` (over a refreshed grammaton when ``refresh``)."""
        self.edit_counts = statistics.edits
        self.first_table = None
        utterances = float(self.corpus.copies.sum())
        self.rule_counts = np.array([[max(statistics.words - utterances, 0.0), utterances]])
        self.absorb_words(statistics)

    def absorb_words(self, statistics):
        """q(v) of the words from the customers and base-served words of `Statistics`, the grammaton refreshed
        first when ``refresh``."""
        total, customers = statistics.words, statistics.customers
        if not self.refresh:
            self.set_sticks(customers, max(total - customers.sum(), 0.0))
            return
        words, kept = refreshed(self.grammaton, customers, statistics.served, self.model.truncation)
        self.grammaton = [np.array(w, dtype=np.int64) for w in words]
        self.set_sticks(kept, max(total - kept.sum(), 0.0))

    def fitted(self):
        """(edit counts, the grammaton, its expected customers, `Weights` of eq. N1)."""
        counts = (self.first - 1.0 + self.model.a) if len(self.grammaton) else np.zeros(0)
        return self.edit_counts.copy(), list(self.grammaton), counts, self.tables()

    def type_log_evidence(self, weights):
        """log Z of every utterance type of the corpus under the chart's ``weights`` (`log_evidence_types`)."""
        return chart_log_evidence(self.model, self.corpus.ids, self.corpus.offsets, weights)

    def moved_to(self, utterances, copies):
        """This q over other utterance types (distinct symbol sequences, each with its float ``copies``), on the
        union of the two alphabets: the edit counts and the grammaton carried to the new symbols' ids (a symbol
        new to the channel starts with no counts, its rows the prior's)."""
        old = list(self.corpus.symbols)
        symbols = sorted(set(old).union(*map(set, utterances)))
        ids, offsets = self.model._encode(utterances, symbols)
        corpus = Corpus(list(utterances), symbols, ids, offsets, np.asarray(copies, dtype=float),
                        np.arange(len(utterances)))
        moved = JointVB(self.model, corpus, [], [])
        where = np.array([symbols.index(s) for s in old], dtype=np.int64)
        n_new = len(symbols)
        # emission rows u, insertion rows U + u and 2U (gap 0); outcome 0 (delete / stop) and 1 + b
        rows = np.concatenate([where, n_new + where, [2 * n_new]])
        columns = np.concatenate([[0], 1 + where])
        state = self.state()
        edit_counts = np.zeros((2 * n_new + 1, n_new + 1))
        edit_counts[np.ix_(rows, columns)] = state["edit_counts"]
        state.update(edit_counts=edit_counts, grammaton=[where[w] for w in self.grammaton])
        moved.restore(state)
        return moved


def chart_log_evidence(model, ids, offsets, weights):
    """log Z of every utterance (symbol ``ids`` at ``offsets``) under the chart's ``weights`` (eq. W1 on eq. N1 or
    C1; `log_evidence_types`)."""
    out = np.empty(offsets.shape[0] - 1)
    log_evidence_types(ids, offsets, weights.word_ids, weights.word_offsets, np.exp(weights.log_pi),
                       float(np.exp(weights.log_base)), weights.table, weights.phones, weights.stop, weights.go_on,
                       weights.end, model.max_insertions, model.longest, out)
    return out


def base_probability(word, phones, stop):
    """P0(x) = s (1 - s)^(n - 1) prod phi(x_i) (module notes, Model)."""
    return stop * (1.0 - stop) ** (len(word) - 1) * float(np.prod(phones[np.asarray(word, np.int64)]))


def laid_out(atoms):
    """Symbol strings laid end to end: (ids, offsets)."""
    return (np.concatenate([np.zeros(0, np.int64)] + [np.asarray(w, np.int64) for w in atoms]),
            np.concatenate([[0], np.cumsum([len(w) for w in atoms])]).astype(np.int64))


def py_log_weights(customers, log_empty, tables, base_mass, table_total, total, a, b):
    """(log pi_k, log pi_0) of a Pitman-Yor restaurant's leave-one-out predictive (eq. C1) from its atoms'
    expected ``customers``, log q(n_k = 0), expected ``tables`` and base probabilities, its tables and customers
    in all."""
    normaliser = max(total, 0.0) + b
    concentration = b + a * table_total
    pi = np.empty(customers.shape[0])
    cache_weights(np.maximum(customers, 0.0), np.maximum(customers - a * tables, 0.0), log_empty,
                  concentration * np.asarray(base_mass, float), normaliser, pi)
    with np.errstate(divide="ignore"):
        return np.log(pi), float(np.log(concentration / normaliser))


def expected_tables(customers, log_empty, base_mass, table_total, a, b):
    """Each atom's expected tables q(n_k > 0) T(E_+[n_k]) (`py_table_count`, eq. 5.29-5.35) in a restaurant of
    ``table_total`` tables, its base probabilities ``base_mass``."""
    customers = np.maximum(customers, 0.0)
    occupied = -np.expm1(np.minimum(log_empty, 0.0))
    theta = (b + a * table_total) * np.asarray(base_mass, float)
    seated = (b, table_total, float(customers.sum()))     # each atom's customers spread over the restaurant's
    return np.array([occupied[k] * py_table_count(theta[k], customers[k] / occupied[k], a, *seated)
                     if occupied[k] > 0 and customers[k] > 0 else 0.0 for k in range(customers.shape[0])])


@njit(cache=True)
def cache_weights(customers, free, log_empty, theta, normaliser, out):
    """out[k] = the zero-exact cache mass of word k (`adaptor.kernels.cache_mass`, eq. 5.30-5.35 applied to
    eq. 3.49's numerator) over the PY normaliser n + b: pi_k of eq. C1."""
    for k in range(out.shape[0]):
        out[k] = cache_mass(ZERO_EXACT, free[k], log_empty[k], theta[k], customers[k], 0.0) / normaliser


class CollapsedNoisyWords:
    """CVI's state and passes (module notes, CVI): the leave-one-out schedule's structure (``sweep``,
    ``after_pass``, ``current``).

    The collapsed counts are the sums of the units' (utterance types') local statistics, kept sparse: a
    unit's lexicon words with their expected customers, its edit counts on the columns it can touch (deletion
    and its own surface symbols), and its expected words.  ``lexicon`` maps underlying words to rows of
    ``customers`` and ``log_empty`` (log q(n_k = 0)); ``active`` the words the chart offers during a pass.
    ``start``: the `JointVB` q under which every unit's first E-step runs.
    """

    def __init__(self, model, corpus, start, rng, checkpoint):
        self.model, self.corpus, self.rng = model, corpus, rng
        n = len(corpus.symbols)
        self.phones = np.full(n, 1.0 / n)
        self.edits = np.zeros((2 * n + 1, n + 1))
        self.rules = np.zeros((1, 2))
        self.words_total = 0.0
        self.lexicon, self.words = {}, []
        self.customers, self.log_empty, self.tables = np.zeros(0), np.zeros(0), np.zeros(0)
        n_types = len(corpus.first)
        self.local_words = [np.zeros(0, np.int64)] * n_types
        self.local_customers = [np.zeros(0)] * n_types
        self.local_columns = [np.zeros(0, np.int64)] * n_types
        self.local_edits = [np.zeros((2 * n + 1, 0))] * n_types
        self.local_words_total = np.zeros(n_types)
        # the start: one E-step of each unit under VB's start q (the grammar's lexicon, `first_channel`)
        weights = start.tables()
        active = self._seed(start)
        for i in range(n_types):
            self._put(i, *self._chart(i, weights, active))
        self.after_pass(-1)
        checkpoint.track_generator("noisy_words.cvi.rng", rng)
        checkpoint.track("noisy_words.cvi", self.state, self.restore)

    # -- the lexicon and the units' local statistics ----------------------------------------------------
    def _seed(self, start):
        """The start q's cached atoms indexed in the lexicon: the rows its chart's atoms are."""
        for w in start.grammaton:
            self._index(w)
        return np.arange(len(start.grammaton))

    @staticmethod
    def _key(atom):
        """(the lexicon's key of an atom, the atom as ``words`` holds it)"""
        key = tuple(int(s) for s in atom)
        return key, np.array(key, dtype=np.int64)

    def _index(self, word):
        key, atom = self._key(word)
        k = self.lexicon.get(key)
        if k is None:
            k = self.lexicon[key] = len(self.words)
            self.words.append(atom)
            if k == self.customers.shape[0]:
                grown = max(2 * k, 64)
                self.customers, self.log_empty, self.tables = (np.concatenate([v, np.zeros(grown - k)])
                                                               for v in (self.customers, self.log_empty, self.tables))
        return k

    def _move(self, i, sign):
        """Adds (sign 1) or takes out (-1) unit i's local statistics from the collapsed counts."""
        copies = float(self.corpus.copies[i])
        words, customers = self.local_words[i], self.local_customers[i]
        self.customers[words] += sign * customers
        # a unit of no copies (a reading of weight 0 in the collapsed n-best joint) holds no customers
        occupied = np.minimum(customers / copies, 1.0) if copies > 0 else np.zeros_like(customers)
        self.log_empty[words] += sign * copies * np.log(np.maximum(1.0 - occupied, EMPTY_FLOOR))
        self.edits[:, self.local_columns[i]] += sign * self.local_edits[i]
        total = self.local_words_total[i]
        self.words_total += sign * total
        self.rules += sign * np.array([[max(total - copies, 0.0), copies]])

    def _put(self, i, counts, words, customers):
        """Unit i's new local statistics (from `_chart`) stored and added."""
        columns = np.flatnonzero(counts.any(axis=0))
        self.local_columns[i], self.local_edits[i] = columns, counts[:, columns]
        self.local_words[i], self.local_customers[i] = words, customers
        self.local_words_total[i] = self._unit_words
        self._move(i, 1.0)

    def _chart(self, i, weights, active):
        """Unit i's E-step (`expected_types` on its type alone) under ``weights``, whose cached words are the
        lexicon rows ``active``: (edit counts, lexicon rows, their expected customers); a base-served span is
        credited to its surface string read as the underlying word (module notes)."""
        corpus = self.corpus
        lo, hi = corpus.offsets[i], corpus.offsets[i + 1]
        statistics, self._evidence = expected_types(
            weights, corpus.ids[lo:hi], np.array([0, hi - lo], np.int64), corpus.copies[i:i + 1],
            corpus.first[i:i + 1], *self.model._e_step_settings())
        self._unit_words = statistics.words
        return (statistics.edits, *self._credited(statistics.customers, statistics.served, active))

    def _credited(self, customers, served, active):
        """A unit's customers of the offered atoms (rows ``active``) and its base-served readings (atom -> mass)
        as (lexicon rows, their expected customers); a reading new to the lexicon is added to it."""
        credit = {int(active[k]): customers[k] for k in np.flatnonzero(customers > SLIVER)}
        for atom, mass in served.items():
            k = self._index(atom)
            credit[k] = credit.get(k, 0.0) + mass
        rows = np.array(sorted(credit), dtype=np.int64)
        return rows, np.array([credit[k] for k in rows.tolist()])

    # -- the predictive of eq. C1 ------------------------------------------------------------------------
    def _base_probability(self, k):
        """P0(x_k) (module notes, Model)."""
        return base_probability(self.words[k], self.phones, self.model.base_stop)

    def predictive(self):
        """`Weights` of eq. C1 under the current collapsed counts (those of the units not left out)."""
        model = self.model
        go_on, end = rules.dirichlet_table(MEAN, np.maximum(self.rules, 0.0), model.alpha)[0]
        return Weights(self.word_ids, self.word_offsets, *self._cache_log_weights(), self._channel(), self.phones,
                       model.base_stop, float(go_on), float(end))

    def _channel(self):
        """The channel on the posterior means of the collapsed edit counts (eq. 3.49-3.50)."""
        return channel_tables(self.edits, MEAN, self.model.channel_alpha, self.model.channel_beta)

    def _cache_log_weights(self):
        """(log pi_k of the offered atoms, log pi_0) of eq. C1 under the current collapsed counts."""
        active = self.active
        return py_log_weights(self.customers[active], self.log_empty[active], self.tables[active], self.base_mass,
                              self.table_total, self.words_total, self.model.a, self.model.b)

    # -- the leave-one-out schedule's structure ------------------------------------------------------------
    def update(self, i):
        """CVI for unit i (module notes, CVI): out, chart under the others' predictive (eq. C1), back in.
        Returns its log Z times its copies."""
        self.put_back([i], self.take_out([i]))
        return self._evidence

    def take_out(self, units):
        """Takes ``units``' local statistics out of the collapsed counts; returns the predictive of the rest (eq.
        C1)."""
        for i in units:
            self._move(i, -1.0)
        return self.predictive()

    def unit_log_evidence(self, units, weights):
        """log Z of one copy of each of ``units`` under ``weights`` (eq. W1 on eq. C1)."""
        corpus = self.corpus
        pieces = [corpus.ids[corpus.offsets[i]:corpus.offsets[i + 1]] for i in units]
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
        return self._log_evidence(np.concatenate([np.zeros(0, np.int64)] + pieces), offsets, weights)

    def _log_evidence(self, ids, offsets, weights):
        return chart_log_evidence(self.model, ids, offsets, weights)

    def put_back(self, units, weights):
        """Every unit of ``units`` (taken out) charted under ``weights`` with its current copies and put back."""
        for i in units:
            self._put(i, *self._chart(i, weights, self.active))

    def sweep(self, iteration):
        """One pass over the utterance types in a fresh random order: the summed leave-one-out log Z."""
        return float(sum(self.update(i) for i in self.rng.permutation(len(self.corpus.first))))

    def after_pass(self, iteration):
        """The pass's fixed parts: each word's expected tables (`_refresh_tables`) and the chart's lexicon
        (`_choose_active`)."""
        self._refresh_tables()
        self._choose_active()

    def _refresh_tables(self):
        """Each atom's expected tables (eq. 5.29-5.35; T held through the pass)."""
        n_words = len(self.words)
        self.tables[:n_words] = expected_tables(self.customers[:n_words], self.log_empty[:n_words],
                                                [self._base_probability(k) for k in range(n_words)],
                                                float(self.tables.sum()), self.model.a, self.model.b)

    def _choose_active(self):
        """The words the chart offers in the next pass (module notes, Offered words)."""
        self._offer(max(self.model.min_customers, SLIVER))

    def _offer(self, floor):
        """Offers the chart the ``truncation`` words with most customers among those with more than ``floor``
        (SLIVER at least: what taking units out leaves of a word none of the others uses is rounding)."""
        n_words = len(self.words)
        customers = np.maximum(self.customers[:n_words], 0.0)
        ranked = np.argsort(-customers, kind="stable")[:self.model.truncation]
        self.active = np.sort(ranked[customers[ranked] > floor]).astype(np.int64)
        left_out = float(customers.sum() - customers[self.active].sum())
        self.dropped = left_out / (max(self.words_total, 0.0) + self.model.b)     # D / (n + b), eq. C2
        self.base_mass = np.array([self._base_probability(k) for k in self.active])
        self.table_total = float(self.tables.sum())
        self._lay_out([self.words[k] for k in self.active])

    def _lay_out(self, chosen):
        """The offered atoms laid end to end for the chart."""
        self.word_ids, self.word_offsets = laid_out(chosen)

    def current(self):
        return self

    # -- what the model reads ---------------------------------------------------------------------------------
    def fitted(self):
        """(edit counts, the chart's underlying words, their expected customers, `Weights` of eq. C1 with no unit
        left out)."""
        return (self.edits.copy(), [self.words[k] for k in self.active], self.customers[self.active].copy(),
                self.predictive())

    # -- checkpoints ------------------------------------------------------------------------------------------
    def state(self):
        def flat(parts, dtype, axis=0):
            sizes = [p.shape[axis] for p in parts]
            return (np.concatenate([np.zeros((0,) if axis == 0 else (self.edits.shape[0], 0), dtype)]
                                   + [np.asarray(p, dtype) for p in parts], axis=axis),
                    np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
        n_words = len(self.words)
        local_words, local_offsets = flat(self.local_words, np.int64)
        local_customers, _ = flat(self.local_customers, float)
        local_columns, column_offsets = flat(self.local_columns, np.int64)
        local_edits, _ = flat(self.local_edits, float, axis=1)
        return self._flat_atoms() | {"customers": self.customers[:n_words].copy(),
                "log_empty": self.log_empty[:n_words].copy(), "tables": self.tables[:n_words].copy(),
                "edits": self.edits.copy(), "rules": self.rules.copy(), "words_total": self.words_total,
                "local_words": local_words, "local_offsets": local_offsets, "local_customers": local_customers,
                "local_columns": local_columns, "column_offsets": column_offsets, "local_edits": local_edits,
                "local_words_total": self.local_words_total.copy()}

    def _flat_atoms(self):
        words, offsets = laid_out(self.words)
        return {"words": words, "word_offsets": offsets}

    def _split_atoms(self, saved):
        words, offsets = saved["words"], saved["word_offsets"]
        return [words[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]

    def restore(self, saved):
        def split(flat, offsets, axis=0):
            return [np.array(flat[offsets[i]:offsets[i + 1]]) if axis == 0 else np.array(flat[:, offsets[i]:offsets[i + 1]])
                    for i in range(len(offsets) - 1)]
        self.lexicon, self.words = {}, []
        self.customers, self.log_empty, self.tables = np.zeros(0), np.zeros(0), np.zeros(0)
        for w in self._split_atoms(saved):
            self._index(w)
        n_words = len(self.words)
        for name in ("customers", "log_empty", "tables"):
            getattr(self, name)[:n_words] = saved[name]
        self.edits, self.rules = np.array(saved["edits"]), np.array(saved["rules"])
        self.words_total = float(saved["words_total"])
        self.local_words = split(saved["local_words"], saved["local_offsets"])
        self.local_customers = split(saved["local_customers"], saved["local_offsets"])
        self.local_columns = split(saved["local_columns"], saved["column_offsets"])
        self.local_edits = split(saved["local_edits"], saved["column_offsets"], axis=1)
        self.local_words_total = np.array(saved["local_words_total"])
        self._choose_active()


def first_channel(n_symbols, noise):
    """The first E-step's channel over one alphabet of ``n_symbols``: every symbol deleted with probability
    ``noise``, replaced by another with ``noise`` (spread evenly), kept otherwise; every gap inserts with
    ``noise``.  Not `cvbayes.models.channel.start_table`, whose substitutions are uniform over the surface
    symbols: with x unknown, a channel that forgets x's symbols would score every cached word of a length
    alike."""
    table = np.empty((2 * n_symbols + 1, n_symbols + 1))
    table[:n_symbols] = noise / max(n_symbols - 1, 1)
    table[:n_symbols, 0] = noise
    table[np.arange(n_symbols), 1 + np.arange(n_symbols)] = 1.0 - 2.0 * noise if n_symbols > 1 else 1.0 - noise
    table[n_symbols:] = noise / n_symbols
    table[n_symbols:, 0] = 1.0 - noise
    return table


class NoisyWords(BayesModel):
    """Unigram word segmentation of noisy symbol strings through a learned edit channel (module notes).

    Parameters
    ----------
    a, b : float
        The word cache's Pitman-Yor discount and concentration.
    alpha : float
        Dirichlet pseudo-count of the two ``Word+`` rules.
    channel_alpha, channel_beta : float
        The channel's Dirichlet pseudo-counts of its emission and insertion rows (`EditChannel`'s alpha, beta).
    max_insertions : int
        The channel's K: at most this many inserted symbols a gap.
    base_stop : float
        s of the base P0(x) = s (1 - s)^(n - 1) prod phi(x_i), in (0, 1).
    truncation : int
        Underlying words in the grammaton, at most (vb keeps those of at least one expected customer: eq. N3).
    longest : int
        The most surface symbols one word token may span.
    init : {"grammar", "empty"}
        The start (module notes); ``init_iter`` passes of the channel-free grammar for "grammar".
    start_noise : float
        The first E-step's channel (`first_channel`): deletion, substitution and insertion probability, in
        (0, 0.5).
    prune : float
        Posterior weight below which a cached word's edit counts at a span are skipped.
    min_customers : float
        cvi: the chart offers only words with more expected customers than this (module notes, Offered words;
        0 offers every word of the lexicon up to ``truncation``).
    grammar : {"unigram", "colloc"}
        "colloc": ``Sentence -> Colloc+``, ``@Colloc -> Word+`` over the same words and channel, both caches of
        PY(a, b) and ``truncation`` atoms, in one process (vb: `cvbayes.models.noisy_colloc`; cvi:
        `cvbayes.models.noisy_colloc_cvi`).
    algorithm : {"vb", "cvi"}
    n_iter, random_state, n_init : the package's common parameters (``random_state`` seeds the start's grammar).

    ``fit(X)`` takes utterances as sequences of symbols (a str utterance is its characters), and besides the
    package's common fit arguments

    client : dask.distributed.Client, optional
        vb: run every E-step on the client's workers, each on its shard of whole utterance types,
        memory-mapped from a file saved once (`cvbayes.models.noisy_words_shards`); q is updated here.  The
        same run as in one process up to the order of the sums.  Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in (`cvbayes.models.shards.Sharding`).

    Attributes
    ----------
    dropped_mass_ : float, cvi only: D / (n + b) of the last pass, the bound (C2) on the cache mass of the words
        not offered (module notes, Offered words).
    edit_counts_ : (2U + 1, U + 1) expected edit counts in `EditChannel.counts_`'s layout; ``emission_`` and
        ``insertion_`` the channel's posterior-mean tables; ``symbols_`` the alphabet (ids in that order).
    collocations_ : dict, colloc only: the Colloc atoms (tuples of underlying words) and their expected customers.
    lexicon_ : dict of tuple of str to float, the chart's underlying words (vb: the grammaton; cvi: the words
        offered in the last pass) and their expected customers.
    history_ : (iteration, objective, seconds) per pass; `OBJECTIVES` says what the objective is.
    shard_timings_ : list of PassTiming, vb with a client: a `cvbayes.models.shards.PassTiming` a pass.
    """

    MODEL_NAME = "noisy-words"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FITTED = "lexicon_"
    FIT_OPTIONS = ("client", "n_shards", "shard_folder")

    def __init__(self, a=0.0, b=1.0, alpha=1.0, channel_alpha=0.1, channel_beta=0.1, max_insertions=1,
                 base_stop=0.5, truncation=2000, longest=16, init="grammar", init_iter=10, start_noise=0.1,
                 prune=1e-8, min_customers=0.01, grammar="unigram", algorithm="vb", n_iter=10, random_state=0,
                 n_init=1):
        self._keep_params(locals())
        self._check_learner("n_iter", "n_init")
        if not 0.0 <= a < 1.0 or not b > -a:
            raise ValueError(f"need 0 <= a < 1 and b > -a, got a={a}, b={b}")
        for name in ("alpha", "channel_alpha", "channel_beta"):
            setattr(self, name, check_prior(name, getattr(self, name)))
        for name, value, most in (("base_stop", base_stop, 1.0), ("start_noise", start_noise, 0.5)):
            if not 0.0 < value < most:
                raise ValueError(f"{name} must lie in (0, {most:g}), got {value}")
        for name, value, least in (("max_insertions", max_insertions, 0), ("truncation", truncation, 1),
                                   ("longest", longest, 1), ("init_iter", init_iter, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if init not in ("grammar", "empty"):
            raise ValueError(f"unknown init {init!r}; choose grammar or empty")
        if grammar not in GRAMMARS:
            raise ValueError(f"unknown grammar {grammar!r}; choose {' or '.join(GRAMMARS)}")
        for name, value in (("prune", prune), ("min_customers", min_customers)):
            if not value >= 0.0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        self.a, self.b, self.base_stop, self.start_noise, self.prune, self.min_customers = (
            float(v) for v in (a, b, base_stop, start_noise, prune, min_customers))

    # -- fit's hooks -------------------------------------------------------------------------------------
    def _prepare(self, X, y=None, client=None, n_shards=None, shard_folder=None):
        sharding = Sharding.checked(self.algorithm, client, n_shards, shard_folder, SHARDED_ALGORITHMS)
        if client is not None and self.grammar == "colloc":
            raise ValueError("the colloc grammar over the channel runs in one process; client= takes the unigram")
        utterances = as_utterances(X)
        symbols = sorted({s for u in utterances for s in u})
        first, copies = utterance_types(utterances)
        return Corpus(utterances, symbols, *self._encode([utterances[i] for i in first], symbols), copies, first,
                      sharding)

    @staticmethod
    def _encode(utterances, symbols):
        index = {s: i for i, s in enumerate(symbols)}
        ids = []
        for i, utterance in enumerate(utterances):
            try:
                ids.append([index[s] for s in utterance])
            except KeyError as error:
                raise ValueError(f"utterance {i} has the symbol {error.args[0]!r}, unseen in training") from None
        offsets = np.concatenate([[0], np.cumsum([len(u) for u in ids])]).astype(np.int64)
        return np.array([s for u in ids for s in u], dtype=np.int64), offsets

    def _fingerprint(self, data):
        return data.ids, data.offsets, data.copies

    def _start_lexicon(self, data, run):
        """The start's underlying words and their counts, and (colloc) its collocations and theirs (module notes:
        ``init``; `noisy_colloc`'s Start)."""
        if self.init == "empty":
            return [], [], [], []
        start = AdaptorGrammar(self.grammar, a=self.a, b=self.b, n_iter=self.init_iter,
                               random_state=int(run.rng.integers(2 ** 31)))
        start.fit(data.utterances)
        index = {s: i for i, s in enumerate(data.symbols)}
        ranked = sorted(start.lexicon_.items(), key=lambda item: -item[1])[:self.truncation]
        collocs = ([], [])
        if self.grammar == "colloc":
            from .noisy_colloc import start_collocations
            collocs = start_collocations(start, index, self.truncation)
        return ([np.array([index[s] for s in word], dtype=np.int64) for word, _ in ranked], [c for _, c in ranked],
                *collocs)

    def _batch(self, data, run):
        """VB (`JointVB`); the E-step on the shards of a client with one (`cvbayes.models.noisy_words_shards`)."""
        words, counts, collocs, colloc_counts = self._start_lexicon(data, run)
        kept = [i for i, count in enumerate(counts) if count >= 1.0]    # eq. N3, as every refresh keeps them
        words, counts = [words[i] for i in kept], [counts[i] for i in kept]
        if self.grammar == "colloc":
            from .noisy_colloc import CollocVB
            self.learner_ = CollocVB(self, data, words, counts, collocs, colloc_counts)
        else:
            self.learner_ = JointVB(self, data, words, counts)
        self._symbols = list(data.symbols)
        run.checkpoint.track("noisy_words.q", self.learner_.state, self.learner_.restore)
        if data.sharding.client is None:
            return self.learner_, None, None
        from .noisy_words_shards import vb_batch     # here: that module imports this one's E-step
        return vb_batch(self.learner_, data.sharding, self._fingerprint(data)), None, None

    def _e_step_settings(self):
        """What the E-step (`expected_types`) takes of the model besides the chart's weights."""
        return self.max_insertions, self.longest, self.prune

    def _collapsed(self, data, run):
        """CVI (`CollapsedNoisyWords`; colloc: `cvbayes.models.noisy_colloc_cvi`) from VB's start q."""
        self._symbols = list(data.symbols)
        start = self._start_lexicon(data, run)
        if self.grammar == "colloc":
            from .noisy_colloc import CollocVB
            from .noisy_colloc_cvi import CollapsedNoisyColloc
            self.learner_ = CollapsedNoisyColloc(self, data, CollocVB(self, data, *start), run.rng, run.checkpoint)
        else:
            self.learner_ = CollapsedNoisyWords(self, data, JointVB(self, data, *start[:2]), run.rng, run.checkpoint)
        return self.learner_

    def _set_fitted(self, statistics, rule, data=None):
        edit_counts, words, counts, self._weights = self.learner_.fitted()
        self.edit_counts_ = edit_counts
        self.symbols_ = list(self._symbols)
        self.lexicon_ = {tuple(self.symbols_[s] for s in word): float(c) for word, c in zip(words, counts)}
        if isinstance(self.learner_, CollapsedNoisyWords):
            self.dropped_mass_ = self.learner_.dropped
        if self.grammar == "colloc":
            self.collocations_ = self._collocations(self.learner_.colloc_counts())

    def learner_over(self, utterances, copies) -> JointVB:
        """The fitted VB q (`JointVB`) carried over to other utterance types with float ``copies`` and their
        symbols (`JointVB.moved_to`): a word layer whose data change during a joint fit
        (`cvbayes.models.discovery_nbest`)."""
        self._check_fitted()
        if type(getattr(self, "learner_", None)) is not JointVB:
            raise ValueError("learner_over needs a unigram NoisyWords fitted by vb in this process")
        return self.learner_.moved_to(utterances, copies)

    def collapsed_over(self, utterances, copies, rng, checkpoint) -> CollapsedNoisyWords:
        """CVI's state over other units (symbol sequences, repeats allowed, each its own unit, with float
        ``copies``), started by one E-step of every unit under the fitted cvi counts taken as a VB q (the
        edit and ``Word+`` counts, the offered words' customers as the sticks' counts) carried over to their
        symbols (`JointVB.moved_to`): the collapsed n-best joint's word layer (`cvbayes.models.discovery_nbest_cvi`)."""
        self._check_fitted()
        learner = getattr(self, "learner_", None)
        if not isinstance(learner, CollapsedNoisyWords):
            raise ValueError("collapsed_over needs a NoisyWords fitted by cvi in this process")
        if self.grammar != "unigram":
            raise ValueError("collapsed_over carries the unigram grammar's counts only (the n-best joint is "
                             "unigram only)")
        edits, words, customers, _ = learner.fitted()
        start = JointVB(self, learner.corpus, words, np.maximum(customers, 0.0))
        start.edit_counts, start.rule_counts, start.first_table = edits, np.maximum(learner.rules, 0.0), None
        moved = start.moved_to(utterances, copies)
        return CollapsedNoisyWords(self, moved.corpus, moved, rng, checkpoint)

    def adopt(self, learner):
        """Take a `JointVB`'s or a `CollapsedNoisyWords`' q (and its alphabet) as the fitted model."""
        self.learner_ = learner
        self._symbols = list(learner.corpus.symbols)
        self._set_fitted(None, VB)

    # -- files ---------------------------------------------------------------------------------------------
    def _saved(self):
        w = self._weights.words if self.grammar == "colloc" else self._weights
        meta = {"params": self.get_params(), "symbols": self.symbols_, "go_on": w.go_on, "end": w.end}
        arrays = {"word_ids": w.word_ids, "word_offsets": w.word_offsets, "log_pi": w.log_pi,
                  "log_base": np.array(w.log_base), "table": w.table, "edit_counts": self.edit_counts_,
                  "customers": np.array(list(self.lexicon_.values()), dtype=float)}
        if self.grammar == "colloc":
            from .noisy_colloc import saved_collocations
            saved_collocations(self, meta, arrays)
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        model = cls(**meta["params"])
        model.symbols_ = list(meta["symbols"])
        model.edit_counts_ = arrays["edit_counts"]
        model._weights = Weights(arrays["word_ids"], arrays["word_offsets"], arrays["log_pi"],
                                 float(arrays["log_base"]), arrays["table"], np.full(len(model.symbols_),
                                                                                   1.0 / len(model.symbols_)),
                                 model.base_stop, float(meta["go_on"]), float(meta["end"]))
        ids, offsets = arrays["word_ids"], arrays["word_offsets"]
        model.lexicon_ = {tuple(model.symbols_[s] for s in ids[offsets[k]:offsets[k + 1]]): float(c)
                          for k, c in enumerate(arrays["customers"])}
        if model.grammar == "colloc":
            from .noisy_colloc import load_collocations
            load_collocations(model, meta, arrays)
        return model

    def _collocations(self, customers):
        """``collocations_`` from the fitted Colloc atoms and their expected ``customers``."""
        return {tuple(tuple(self.symbols_[s] for s in word) for word in colloc): float(c)
                for colloc, c in zip(self._weights.collocations(), customers)}

    @property
    def emission_(self):
        self._check_fitted()
        return channel_tables(self.edit_counts_, rules.MEAN, self.channel_alpha, self.channel_beta)[:len(self.symbols_)]

    @property
    def insertion_(self):
        self._check_fitted()
        return channel_tables(self.edit_counts_, rules.MEAN, self.channel_alpha, self.channel_beta)[len(self.symbols_):]

    # -- using it --------------------------------------------------------------------------------------------
    def segment(self, utterances) -> list[list[tuple[str, ...]]]:
        """Each utterance's surface words in its best segmentation under the fitted weights (vb: eq. N1 on q;
        cvi: eq. C1 with no unit left out)."""
        return [[word.surface for word in words] for words in self.decode(utterances)]

    def _types(self, utterances):
        """(the distinct utterances, their symbol ids laid end to end, offsets) for the chart kernels."""
        first, _ = utterance_types(utterances)
        types = [utterances[i] for i in first]
        return (types, *self._encode(types, self.symbols_))

    def _chart_weights(self):
        """The fitted weights of eq. N1 (C1; colloc: `CollocWeights.chart_arguments`) as the chart kernels take
        them, after the utterances."""
        w = self._weights
        if self.grammar == "colloc":
            return (*w.chart_arguments(), self.max_insertions, self.longest)
        return (w.word_ids, w.word_offsets, np.exp(w.log_pi), float(np.exp(w.log_base)), w.table, w.phones, w.stop,
                w.go_on, w.end, self.max_insertions, self.longest)

    def score_samples(self, utterances) -> np.ndarray:
        """log p(utterance) of every utterance under the fitted weights (vb: eq. N1 on q; cvi: eq. C1 with no
        unit left out), summed over its segmentations, words and edits; -inf for one holding a symbol never
        seen in training (the base gives it no mass) or without a segmentation."""
        self._check_fitted()
        utterances = as_utterances(utterances)
        known = set(self.symbols_)
        readable = [i for i, u in enumerate(utterances) if known.issuperset(u)]
        out = np.full(len(utterances), -np.inf)
        if not readable:
            return out
        types, ids, offsets = self._types([utterances[i] for i in readable])
        found = np.empty(len(types))
        if self.grammar == "colloc":
            from .noisy_colloc import colloc_log_evidence as log_evidence
        else:
            log_evidence = log_evidence_types
        log_evidence(ids, offsets, *self._chart_weights(), found)
        by_type = dict(zip(map(tuple, types), found))
        out[readable] = [by_type[tuple(utterances[i])] for i in readable]
        return out

    def align(self, pairs) -> list[np.ndarray]:
        """The most probable edit sequence of every (underlying word, surface string) pair under the fitted
        channel (eq. N1's p~, C1's p_bar; `chains.edits.edit_viterbi`), as `EditChannel.align` gives it: per
        pair an (edits, 2) int array of rows (i, j), (i, DELETE) for a deletion of x_i, (INSERT, j) for an
        insertion of y_j."""
        self._check_fitted()
        pairs = list(pairs)
        underlying = self._encode([x for x, _ in pairs], self.symbols_)
        surface = self._encode([y for _, y in pairs], self.symbols_)
        table = (self._weights.words if self.grammar == "colloc" else self._weights).table
        return best_alignments(*underlying, *surface, len(self.symbols_), table, self.max_insertions)

    def decode(self, utterances) -> list[list[DecodedWord]]:
        """Each utterance's words in its best segmentation (as `segment`), each with its symbols' place in the
        utterance and its likeliest underlying word: the cached word of ``lexicon_`` whose term of eq. N1
        (eq. C1 for cvi) is largest at its span, or None where the base's term is larger (a new word).
        Tokens of one underlying word are one word type heard in different ways."""
        self._check_fitted()
        utterances = as_utterances(utterances)
        types, ids, offsets = self._types(utterances)
        if self.grammar == "colloc":
            from .noisy_colloc import decoded_collocs
            decoded = decoded_collocs(self, types, ids, offsets)
            return [list(decoded[tuple(u)]) for u in utterances]
        w = self._weights
        # an utterance of m symbols has at most m words: its word ends fit in its own symbols' place
        ends = np.zeros(offsets[-1], dtype=np.int64)
        underlying = np.full(offsets[-1], -1, dtype=np.int64)
        found = segment_types(ids, offsets, *self._chart_weights(), ends, underlying)
        lexicon = [tuple(self.symbols_[s] for s in w.word_ids[w.word_offsets[k]:w.word_offsets[k + 1]])
                   for k in range(w.word_offsets.shape[0] - 1)]
        decoded = {}
        for t, utterance in enumerate(types):
            words, start = [], 0
            for j in range(found[t]):
                stop, k = int(ends[offsets[t] + j]), int(underlying[offsets[t] + j])
                words.append(DecodedWord(tuple(utterance[start:stop]), start, stop, None if k < 0 else lexicon[k]))
                start = stop
            decoded[tuple(utterance)] = words or [DecodedWord(tuple(utterance), 0, len(utterance), None)]
        return [list(decoded[tuple(u)]) for u in utterances]

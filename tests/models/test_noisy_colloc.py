"""The colloc grammar over the noisy channel (models/noisy_colloc.py): its chart's log Z matches enumerating every
derivation, its statistics are the derivatives of log Z, VB's ELBO never decreases while the grammatons are
fixed, and the fitted model decodes, scores, saves and refuses what it cannot do."""
import copy
import functools
import itertools

import numpy as np
import pytest

from cvbayes.models import noisy_colloc
from cvbayes.models.adaptor.vb import py_sticks
from cvbayes.models.noisy_colloc import (CollocWeights, colloc_e_step, colloc_log_evidence, colloc_segment_types,
                                         expected_colloc_types, packed, split_cached)
from cvbayes.models.noisy_words import NoisyWords, Weights, span_offsets
from tests.chains.test_edit_spans import base_probability, enumerated_likelihood, pair_statistics, random_table
from tests.models.test_noisy_words import assert_fixed_grammaton_elbo_rises, fitted_on_noisy_corpus

WORDS = [(0, 1), (1,)]
COLLOCS = [((0, 1), (1,)), ((1,),)]
UTTERANCES = [[0, 1, 1, 0], [1, 0, 1], [0, 1], [1]]
MAX_INSERTIONS = 1


def tiny_weights(deletion=0.01):
    """Two symbols, two Word atoms and two Colloc atoms on sticks of made-up counts, a random channel."""
    table = random_table(np.random.default_rng(4), 2, 2, deletion=deletion)
    _, _, log_pi, log_base = py_sticks(np.array([3.0, 2.0]), 1.0, 0.0, 1.0)
    words = Weights(np.array([s for w in WORDS for s in w], np.int64), np.array([0, 2, 3], np.int64), log_pi,
                    log_base, table, np.full(2, 0.5), 0.5, 0.4, 0.6)
    _, _, colloc_log_pi, colloc_log_base = py_sticks(np.array([2.0, 1.0]), 1.5, 0.0, 1.0)
    return CollocWeights(words, *packed(COLLOCS), colloc_log_pi, colloc_log_base, 0.3, 0.7)


def compositions(a, b, longest):
    """Every cut of [a, b) into consecutive spans of at most ``longest`` symbols."""
    if a == b:
        yield []
        return
    for c in range(a + 1, min(b, a + longest) + 1):
        for rest in compositions(c, b, longest):
            yield [(a, c)] + rest


def enumerated_log_z(y, weights, longest, best=False):
    """log Z of one utterance summing every cut into collocations, each cached (every Colloc atom, its string's
    every edit sequence) or the base's cut into words of at most ``longest`` symbols, each word cached (every Word
    atom and edit sequence) or the base's (every underlying word of up to 7 symbols); ``best``: the largest
    term over the cuts and the cached-or-base choices of collocations (span scores still summed)."""
    w = weights.words
    combine = max if best else sum
    underlying = [x for n in range(1, 8) for x in itertools.product(range(2), repeat=n)]

    @functools.cache
    def word(span):
        cached = sum(np.exp(log_pi) * enumerated_likelihood(x, span, 2, w.table, MAX_INSERTIONS)
                     for log_pi, x in zip(w.log_pi, WORDS))
        base = sum(base_probability(x, w.stop, w.phones) * pair_statistics(x, span, 2, w.table, MAX_INSERTIONS)[0]
                   for x in underlying)
        return cached + np.exp(w.log_base) * base

    def colloc(span):
        cached = sum(np.exp(log_pi) * enumerated_likelihood([s for x in c for s in x], span, 2, w.table, MAX_INSERTIONS)
                     for log_pi, c in zip(weights.log_pi, COLLOCS))
        base = combine(w.end * w.go_on ** (len(cut) - 1) * np.prod([word(span[a:b]) for a, b in cut])
                       for cut in compositions(0, len(span), longest))
        return combine([cached, np.exp(weights.log_base) * base])

    y = tuple(y)
    return np.log(combine(weights.end * weights.go_on ** (len(cut) - 1) * np.prod([colloc(y[a:b]) for a, b in cut])
                      for cut in compositions(0, len(y), len(y))))


def corpus_arrays(utterances):
    ids = np.array([s for u in utterances for s in u], np.int64)
    return ids, np.concatenate([[0], np.cumsum([len(u) for u in utterances])]).astype(np.int64)


@pytest.mark.parametrize("longest", [2, 4])
def test_log_z_matches_enumeration(longest):
    weights = tiny_weights()
    ids, offsets = corpus_arrays(UTTERANCES)
    out = np.empty(len(UTTERANCES))
    colloc_log_evidence(ids, offsets, *weights.chart_arguments(), MAX_INSERTIONS, longest, out)
    for found, y in zip(out, UTTERANCES):
        assert found == pytest.approx(enumerated_log_z(y, weights, longest), rel=1e-9)


def test_decode_takes_the_best_derivation():
    """The derivation `colloc_segment_types` returns tiles the utterance and weighs (its pieces scored by
    enumeration) as much as the heaviest enumerated derivation."""
    weights = tiny_weights()
    ids, offsets = corpus_arrays(UTTERANCES)
    ends, kinds, choices = (np.zeros(offsets[-1], np.int64) for _ in range(3))
    found = colloc_segment_types(ids, offsets, *weights.chart_arguments(), MAX_INSERTIONS, 4, ends, kinds, choices)
    for i, y in enumerate(UTTERANCES):
        pieces = list(zip(ends[offsets[i]:offsets[i] + found[i]], kinds[offsets[i]:offsets[i] + found[i]]))
        assert pieces[-1][0] == len(y) and pieces[0][1] in (0, 1)
        assert derivation_log_weight(y, pieces, weights) == pytest.approx(enumerated_log_z(y, weights, 4, best=True),
                                                                          rel=1e-9)


def derivation_log_weight(y, pieces, weights):
    """log weight of a derivation given as (end, kind) pieces (kind 0 a cached collocation, 1 a base collocation's
    first word, 2 a later word), its span scores by enumeration as in `enumerated_log_z`."""
    w = weights.words
    underlying = [x for n in range(1, 8) for x in itertools.product(range(2), repeat=n)]

    def word(span):
        return (sum(np.exp(log_pi) * enumerated_likelihood(x, span, 2, w.table, MAX_INSERTIONS)
                    for log_pi, x in zip(w.log_pi, WORDS))
                + np.exp(w.log_base) * sum(base_probability(x, w.stop, w.phones)
                                           * pair_statistics(x, span, 2, w.table, MAX_INSERTIONS)[0]
                                           for x in underlying))

    total, start, collocs = 0.0, 0, 0
    for j, (end, kind) in enumerate(pieces):
        span = tuple(y[start:end])
        closes = j + 1 == len(pieces) or pieces[j + 1][1] != 2
        if kind == 0:
            total += np.log(sum(np.exp(log_pi) * enumerated_likelihood([s for x in c for s in x], span, 2, w.table,
                                                                       MAX_INSERTIONS)
                                for log_pi, c in zip(weights.log_pi, COLLOCS)))
        else:
            total += np.log(word(span)) + (weights.log_base if kind == 1 else np.log(w.go_on))
            total += np.log(w.end) if closes else 0.0
        collocs += closes
        start = end
    return total + np.log(weights.end) + (collocs - 1) * np.log(weights.go_on)


def run(arguments, copies, longest=4):
    """colloc_e_step on the tiny utterances under the chart ``arguments``: (sum log Z, edit counts, Word customers,
    Colloc customers, words of base collocations, base collocations, later words)."""
    ids, offsets = corpus_arrays(UTTERANCES)
    spans = span_offsets(offsets)
    table = arguments[4]
    counts, customers, colloc_customers = np.zeros_like(table), np.zeros(arguments[2].shape[0]), np.zeros(
        arguments[11].shape[0])
    evidence, words, bases, later, bad = colloc_e_step(
        ids, offsets, copies, *arguments, MAX_INSERTIONS, longest, 0.0, counts, customers, colloc_customers,
        np.zeros(spans[-1]), np.zeros(spans[-1]), spans, np.zeros((4, offsets[-1] + len(UTTERANCES))))
    assert bad == -1
    return evidence, counts, customers, colloc_customers, words, bases, later


def test_statistics_are_derivatives_of_log_z():
    """Every expected count is its weight's d log Z / d log weight (central differences): edit counts, both
    atoms' customers, the base collocations (B and e_W), the later words (c_W) and the collocations beyond an
    utterance's first (c_S)."""
    weights = tiny_weights(deletion=0.1)
    copies = np.array([1.0, 2.0, 1.0, 3.0])
    arguments = list(weights.chart_arguments())
    evidence, counts, customers, colloc_customers, words, bases, later = run(arguments, copies)
    step = 1e-5

    def derivative(position, index=None):
        values = []
        for sign in (1, -1):
            changed = list(arguments)
            if index is None:
                changed[position] = arguments[position] * (1 + sign * step)
            else:
                changed[position] = arguments[position].copy()
                changed[position][index] *= 1 + sign * step
            values.append(run(changed, copies)[0])
        return (values[0] - values[1]) / (2 * step)

    for r, c in zip(*np.nonzero(counts > 1e-3)):
        assert counts[r, c] == pytest.approx(derivative(4, (r, c)), rel=1e-5), (r, c)
    for k in range(customers.shape[0]):
        assert customers[k] == pytest.approx(derivative(2, k), rel=1e-5)
    for k in range(colloc_customers.shape[0]):
        assert colloc_customers[k] == pytest.approx(derivative(11, k), rel=1e-5)
    assert bases == pytest.approx(derivative(12), rel=1e-5)        # B
    assert bases == pytest.approx(derivative(8), rel=1e-5)         # e_W: each base collocation stops once
    assert later == pytest.approx(derivative(7), rel=1e-5)         # c_W
    collocations = colloc_customers.sum() + bases
    assert collocations - copies.sum() == pytest.approx(derivative(13), rel=1e-5)     # c_S
    assert words == pytest.approx(bases + later)
    assert bases > 0.1 and later > 0.01 and colloc_customers.sum() > 0.1


def test_split_cached_gives_each_surface_symbol_to_the_word_it_rewrites():
    table = tiny_weights().words.table
    assert split_cached(((0, 1), (1,)), np.array([0, 1, 1]), table, 2, 1) == [((0, 1), 0, 2), ((1,), 2, 3)]
    # one surface symbol for three underlying ones: the words that keep none are left out
    pieces = split_cached(((0,), (1,), (0,)), np.array([1]), table, 2, 1)
    assert [(a, b) for _, a, b in pieces] == [(0, 1)]


@pytest.fixture(scope="module")
def fitted():
    return fitted_on_noisy_corpus(grammar="colloc")


def test_elbo_never_decreases_with_fixed_grammatons(fitted):
    model, _, _ = fitted
    learner = copy.deepcopy(model.learner_)
    assert learner.grammaton and learner.collocs and any(len(c) > 1 for c in learner.collocs)
    assert_fixed_grammaton_elbo_rises(learner)


def test_refresh_credits_the_base_collocations_read_as_the_identity(fitted, monkeypatch):
    """The walk of the chart finds every base collocation reading: with no FLOOR their masses sum to the expected
    base collocations, with it to less, each reading then at least FLOOR; the rule counts hold the atoms'."""
    model, _, _ = fitted
    learner = model.learner_
    corpus = learner.corpus
    weights = learner.tables()

    def statistics():
        return expected_colloc_types(weights, learner.collocs, learner.grammaton, corpus.ids, corpus.offsets,
                                     corpus.copies, corpus.first, *model._e_step_settings())[0]
    pruned = statistics()
    monkeypatch.setattr(noisy_colloc, "FLOOR", 1e-300)
    every = statistics()
    assert sum(every.served.values()) == pytest.approx(every.bases, rel=1e-9)
    assert set(pruned.served) < set(every.served)
    # a reading's occurrences below FLOOR are not credited
    assert all(mass <= every.served[reading] * (1 + 1e-12) for reading, mass in pruned.served.items())
    assert sum(pruned.served.values()) > 0.5 * every.bases
    assert min(pruned.served.values()) >= noisy_colloc.FLOOR
    statistics = pruned
    assert statistics.rules[1].sum() == pytest.approx(statistics.colloc_customers.sum() + statistics.bases)
    # Word+: one stop a collocation, base or atom, and a rule a word (the atoms' words among the Word draws)
    assert statistics.rules[0, 1] == pytest.approx(statistics.bases + len(learner.collocs))
    assert statistics.rules[0].sum() == pytest.approx(statistics.words.words)
    assert statistics.words.words > statistics.bases + sum(len(c) for c in learner.collocs)


def test_decodes_scores_and_saves(fitted, tmp_path):
    model, utterances, _ = fitted
    for utterance, words in zip(utterances, model.decode(utterances)):
        assert [s for w in words for s in w.surface] == list(utterance)
        assert all(a.stop == b.start for a, b in zip(words, words[1:])) and words[0].start == 0
    corpus = model.learner_.corpus
    types = {tuple(u): i for i, u in enumerate(corpus.utterances[j] for j in corpus.first)}
    log_z = model.learner_.type_log_evidence(model.learner_.tables())
    np.testing.assert_allclose(model.score_samples(utterances), [log_z[types[tuple(u)]] for u in utterances])
    assert model.collocations_ and all(isinstance(c[0], tuple) for c in model.collocations_)
    model.save(tmp_path / "colloc.npz")
    loaded = NoisyWords.load(tmp_path / "colloc.npz")
    assert loaded.collocations_ == model.collocations_
    np.testing.assert_allclose(loaded.score_samples(utterances), model.score_samples(utterances))
    assert loaded.decode(utterances) == model.decode(utterances)


def test_bad_settings_are_refused(fitted):
    with pytest.raises(ValueError, match="unknown grammar"):
        NoisyWords(grammar="trigram")
    model, _, _ = fitted
    with pytest.raises(ValueError, match="unigram NoisyWords"):
        model.learner_over([["a"]], [1.0])
    with pytest.raises(ValueError, match="utterance 1 has the symbol 'z'"):
        model.segment([["a"], ["z"]])

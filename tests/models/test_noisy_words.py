"""NoisyWords (models/noisy_words.py): the E-step's statistics are the derivatives of its log Z, VB's ELBO
matches enumeration (the atoms' log P0 in it) and never decreases while the grammaton is fixed, the refresh
keeps the words of at least one customer, and it segments a tiny noisy corpus."""
import copy
import functools
import itertools

import numpy as np
import pytest
from scipy.special import betaln, digamma, gammaln

from cvbayes.chains.edits import fill_weights, sample_surface
from cvbayes.core.rules import VB
from cvbayes.metrics.segmentation import segmentation_scores
from cvbayes.models.adaptor.vb import py_stick_kl, py_sticks
from cvbayes.models.noisy_words import (SLIVER, CollapsedNoisyWords, NoisyWords, ServedWords, Statistics, _scores,
                                        _workspace, e_step, expected_types, span_offsets)
from tests.chains.test_edit_spans import base_probability, enumerated_likelihood, pair_statistics
from tests.chains.test_edits import brute

SYMBOLS = "abc"
WORDS = ["ab", "ba", "abc", "cc"]


def noisy_corpus(n_utterances, seed=0):
    """(surface utterances, gold surface words): words of WORDS through a channel that substitutes the next
    symbol 10 % of the time, deletes 5 % and inserts 5 % a gap."""
    rng = np.random.default_rng(seed)
    n = len(SYMBOLS)
    table = np.zeros((2 * n + 1, n + 1))
    for u in range(n):
        table[u, 0], table[u, 1 + u], table[u, 1 + (u + 1) % n] = 0.05, 0.85, 0.10
    table[n:, 0], table[n:, 1:] = 0.95, 0.05 / n
    utterances, gold = [], []
    while len(utterances) < n_utterances:
        surface, words = [], []
        for w in rng.choice(len(WORDS), size=rng.integers(1, 4)):
            y, _ = sample_surface(rng, table, np.array([SYMBOLS.index(c) for c in WORDS[w]]), 1)
            if len(y):
                words.append(tuple(SYMBOLS[i] for i in y))
                surface += list(words[-1])
        if surface:
            utterances.append(surface)
            gold.append(words)
    return utterances, gold


def fitted_on_noisy_corpus(**settings):
    """(model, utterances, gold): NoisyWords fitted to 40 noisy utterances, 3 passes from a 2-pass start, with
    ``settings``."""
    utterances, gold = noisy_corpus(40)
    model = NoisyWords(**{"n_iter": 3, "init_iter": 2, "prune": 0.0, "truncation": 12, **settings}).fit(utterances)
    return model, utterances, gold


@pytest.fixture(scope="module")
def fitted():
    return fitted_on_noisy_corpus()


def run_e_step(learner, weights, pi=None, table=None):
    corpus, model = learner.corpus, learner.model
    table = weights.table if table is None else table
    pi = np.exp(weights.log_pi) if pi is None else pi
    counts, customers = np.zeros_like(table), np.zeros(pi.shape[0])
    spans = span_offsets(corpus.offsets)
    evidence, words, _ = e_step(corpus.ids, corpus.offsets, corpus.copies, weights.word_ids, weights.word_offsets, pi,
                                float(np.exp(weights.log_base)), table, weights.phones, weights.stop, weights.go_on,
                                weights.end, model.max_insertions, model.longest, 0.0, counts, customers,
                                np.zeros(spans[-1]), spans)
    return evidence, counts, customers


def test_statistics_are_derivatives_of_log_z(fitted):
    """Expected edit counts are theta d log Z / d theta and customers pi d log Z / d pi (central differences)."""
    model, _, _ = fitted
    learner = model.learner_
    weights = learner.tables()
    _, counts, customers = run_e_step(learner, weights)
    step = 1e-5
    rng = np.random.default_rng(0)
    cells = [(r, c) for r, c in zip(*np.nonzero(counts > 1e-3))]
    for r, c in [cells[i] for i in rng.choice(len(cells), size=min(8, len(cells)), replace=False)]:
        up, down = weights.table.copy(), weights.table.copy()
        up[r, c] *= 1 + step
        down[r, c] *= 1 - step
        derivative = (run_e_step(learner, weights, table=up)[0] - run_e_step(learner, weights, table=down)[0]) / (2 * step)
        assert counts[r, c] == pytest.approx(derivative, rel=1e-5), (r, c)
    pi = np.exp(weights.log_pi)
    for k in range(min(4, pi.shape[0])):
        up, down = pi.copy(), pi.copy()
        up[k] *= 1 + step
        down[k] *= 1 - step
        derivative = (run_e_step(learner, weights, pi=up)[0] - run_e_step(learner, weights, pi=down)[0]) / (2 * step)
        assert customers[k] == pytest.approx(derivative, rel=1e-5), k


def assert_fixed_grammaton_elbo_rises(learner, passes=5):
    """``passes`` VB steps with the grammaton held (no refresh): the ELBO (eq. N2) never falls and it moves."""
    learner.refresh = False
    objectives = []
    for _ in range(passes):
        weights = learner.tables()
        penalty = learner.penalty(VB, None, weights)
        _, evidence = learner.expectations(weights)
        objectives.append(evidence + penalty)
    steps = np.diff(objectives)
    assert np.all(steps >= -1e-9 * abs(objectives[0])), objectives
    assert steps.max() > 1e-6       # it moves


def test_elbo_never_decreases_with_a_fixed_grammaton(fitted):
    model, _, _ = fitted
    assert_fixed_grammaton_elbo_rises(model.learner_)


def dirichlet_kl(posterior, prior):
    """KL(Dir(posterior) || Dir(prior)) of one row (a Beta for two entries), from its textbook formula."""
    total = posterior.sum()
    return float(gammaln(total) - gammaln(posterior).sum() - gammaln(prior.sum()) + gammaln(prior).sum()
                 + ((posterior - prior) * (digamma(posterior) - digamma(total))).sum())


def test_vb_elbo_matches_enumeration_with_each_atom_one_draw_from_the_base():
    """Eq. N2 on a tiny corpus: every segmentation of every utterance type enumerated, each word's score eq. N1
    by enumerating edit sequences (cached words) and underlying words (the base), plus the atoms' log P0 and
    the KLs of q(v), q(theta) and q(rho) from their textbook formula."""
    utterances = [list(u) for u in ["ab", "ab", "ba", "abb", "b", "ab", "bab", "ab"]]
    model = NoisyWords(max_insertions=1, longest=3, truncation=3, n_iter=2, init_iter=1, prune=0.0).fit(utterances)
    learner, corpus = model.learner_, model.learner_.corpus
    weights = learner.tables()
    assert len(learner.grammaton) >= 1
    n_symbols, k = len(corpus.symbols), np.arange(1, len(learner.grammaton) + 1)
    atoms = [weights.word_ids[s:e] for s, e in zip(weights.word_offsets[:-1], weights.word_offsets[1:])]
    # the channel's exp E[log theta] beyond 6 underlying symbols is far below the tolerance here (deletions rare)
    underlying = [x for n in range(1, 7) for x in itertools.product(range(n_symbols), repeat=n)]

    @functools.cache
    def score(y):
        cached = sum(np.exp(log_pi) * enumerated_likelihood(x, y, n_symbols, weights.table, model.max_insertions)
                     for log_pi, x in zip(weights.log_pi, atoms))
        base = sum(base_probability(x, weights.stop, weights.phones)
                   * pair_statistics(x, y, n_symbols, weights.table, model.max_insertions)[0] for x in underlying)
        return cached + np.exp(weights.log_base) * base

    log_z = 0.0
    for i, copies in enumerate(corpus.copies):
        y = tuple(corpus.ids[corpus.offsets[i]:corpus.offsets[i + 1]].tolist())
        z = 0.0
        for cuts in itertools.product([False, True], repeat=len(y) - 1):
            ends = [j + 1 for j, cut in enumerate(cuts) if cut] + [len(y)]
            spans = list(zip([0] + ends[:-1], ends))
            if all(b - a <= model.longest for a, b in spans):
                z += weights.end * weights.go_on ** (len(spans) - 1) * np.prod([score(y[a:b]) for a, b in spans])
        log_z += copies * np.log(z)
    kl = sum(dirichlet_kl(np.array([first, second]), np.array([1.0 - model.a, model.b + j * model.a]))
             for j, first, second in zip(k, learner.first, learner.second))
    kl += dirichlet_kl(learner.rule_counts[0] + model.alpha, np.full(2, model.alpha))
    priors = [model.channel_alpha] * n_symbols + [model.channel_beta] * (n_symbols + 1)   # emission, insertion rows
    for row, prior in zip(learner.edit_counts, priors):
        kl += dirichlet_kl(row + prior, np.full(row.shape[0], prior))
    atoms_log_base = sum(np.log(base_probability(x, weights.stop, weights.phones)) for x in atoms)
    _, evidence = expected_types(weights, corpus.ids, corpus.offsets, corpus.copies, corpus.first,
                                 *model._e_step_settings())
    assert evidence == pytest.approx(log_z, rel=1e-10)
    assert evidence + learner.penalty(VB, None, weights) == pytest.approx(log_z + atoms_log_base - kl, rel=1e-10)


def test_refresh_keeps_the_words_of_at_least_one_customer():
    """The grammaton after an E-step: cached and base-served words (identity reading) with at least one expected
    customer in decreasing order, up to ``truncation``; the rest of the words go to the base's count."""
    learner = copy.deepcopy(NoisyWords(n_iter=1, init_iter=1).fit(noisy_corpus(10)[0]).learner_)
    learner.grammaton = [np.array(w) for w in ([0, 1], [1, 0], [2])]
    edits = np.zeros_like(learner.edit_counts)
    served = ServedWords({(0, 1): 0.3, (2, 2): 2.5, (1,): 0.9, (0, 0, 1): 0.99})
    for truncation, kept in ((5, [((0, 1), 5.3), ((2, 2), 2.5), ((2,), 1.0)]), (2, [((0, 1), 5.3), ((2, 2), 2.5)])):
        learner.model.truncation = truncation
        grammaton = list(learner.grammaton)
        learner.absorb(Statistics(edits, np.array([5.0, 0.4, 1.0]), served, 20.0))
        assert [tuple(w.tolist()) for w in learner.grammaton] == [w for w, _ in kept]
        counts = np.array([c for _, c in kept])
        first, second, log_pi, log_base = py_sticks(counts, 20.0 - counts.sum(), learner.model.a, learner.model.b)
        np.testing.assert_allclose(learner.first, first)
        np.testing.assert_allclose(learner.second, second)
        assert learner.log_base == pytest.approx(log_base)
        learner.grammaton = grammaton


@pytest.mark.parametrize("a, b", [(0.0, 1.0), (0.3, 1.5), (0.0, 100.0)])
def test_dropping_the_last_atom_changes_the_elbo_by_eq_n3(a, b):
    """Eq. N2's stick and atom terms (q(z) held: the customers u and u_base, the atoms' log P0) with the last
    atom kept and dropped, its u_K customers then the base's with its log P0 each, differ by eq. N3: up when
    u_K < 1, down when u_K is large."""
    log_base = np.log([0.01, 0.002, 0.03, 1e-4])

    def sticks_and_atoms(u, u_base):
        first, second, log_pi, log_rest = py_sticks(u, u_base, a, b)
        return u @ log_pi + u_base * log_rest - py_stick_kl(first, second, a, b) + log_base[:len(u)].sum()

    for u_last, raises in ((0.0, True), (0.4, True), (0.99, True), (30.0, False)):
        u, u_base = np.array([9.0, 4.0, 2.5, u_last]), 3.0
        moved = u_last * log_base[-1]       # the atom's tokens, now base-served, each draw x_K from P0
        change = sticks_and_atoms(u[:-1], u_base + u_last) + moved - sticks_and_atoms(u, u_base)
        k = len(u)
        eq_n3 = (-(1.0 - u_last) * log_base[-1]
                 - (betaln(1 - a + u_last, b + k * a + u_base) - betaln(1 - a, b + k * a)))
        assert change == pytest.approx(eq_n3, rel=1e-10)
        assert (change > 0) == raises


def test_segments_a_noisy_corpus(fitted):
    model, utterances, gold = fitted
    assert segmentation_scores(model.segment(utterances), gold).token.f1 > 0.6
    assert model.emission_.shape == (3, 4) and np.allclose(model.emission_.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="utterance 1 has the symbol 'z'"):
        model.segment([["a"], ["z"]])


@pytest.fixture(scope="module")
def collapsed():
    return fitted_on_noisy_corpus(algorithm="cvi")


def test_cvi_totals_are_the_sum_of_the_units(collapsed):
    """After a pass of leave-one-out updates, every collapsed count equals the sum of the units' local ones,
    and taking a unit out and putting it back changes nothing."""
    model, _, _ = collapsed
    learner = model.learner_
    corpus = learner.corpus

    def sums():
        edits, customers, log_empty = np.zeros_like(learner.edits), np.zeros(len(learner.words)), np.zeros(len(learner.words))
        for i, copies in enumerate(corpus.copies):
            edits[:, learner.local_columns[i]] += learner.local_edits[i]
            customers[learner.local_words[i]] += learner.local_customers[i]
            occupied = np.minimum(learner.local_customers[i] / copies, 1.0)
            log_empty[learner.local_words[i]] += copies * np.log(np.maximum(1.0 - occupied, 1e-12))
        words = learner.local_words_total.sum()
        return edits, customers, log_empty, words, np.array([[words - corpus.copies.sum(), corpus.copies.sum()]])

    n = len(learner.words)
    edits, customers, log_empty, words, rules = sums()
    assert learner.edits == pytest.approx(edits, abs=1e-9) and edits.sum() > 10
    assert learner.customers[:n] == pytest.approx(customers, abs=1e-9)
    assert learner.log_empty[:n] == pytest.approx(log_empty, abs=1e-9)
    assert learner.words_total == pytest.approx(words) and learner.rules == pytest.approx(rules)
    # every word credited is a word the units found: customers sum to the expected words (no sliver here)
    assert customers.sum() == pytest.approx(words, rel=1e-6)
    before = learner.edits.copy(), learner.customers[:n].copy()
    learner._move(5, -1.0)
    assert not np.allclose(learner.edits, before[0])
    learner._move(5, 1.0)
    assert learner.edits == pytest.approx(before[0], abs=1e-9) and learner.customers[:n] == pytest.approx(before[1])


def test_cvi_weights_are_the_leave_one_out_predictive(collapsed):
    """The chart's weights (eq. C1): the channel rows and the cache plus base mass each a distribution."""
    model, _, _ = collapsed
    weights = model.learner_.predictive()
    assert np.allclose(weights.table.sum(axis=1), 1.0)
    assert weights.go_on + weights.end == pytest.approx(1.0)
    # sum_k pi_k + pi_0 <= 1: the cache's zero-exact mass is at most its first-order mass (n_k - a t_k) / (n + b)
    assert np.exp(weights.log_pi).sum() + np.exp(weights.log_base) <= 1.0 + 1e-9


def test_cvi_segments_a_noisy_corpus(collapsed, fitted):
    """CVI segments the tiny noisy corpus at least as well as the threshold VB's test sets, and its
    leave-one-out objective rises."""
    model, utterances, gold = collapsed
    f1 = segmentation_scores(model.segment(utterances), gold).token.f1
    assert f1 > 0.7
    objectives = [record.objective for record in model.history_]
    assert objectives[-1] > objectives[0]
    assert set(model.lexicon_) >= {("a", "b"), ("b", "a"), ("c", "c")}


def test_cvi_min_customers_zero_offers_the_whole_lexicon(monkeypatch):
    """min_customers=0 gives the fit of a chart offered every word of the lexicon (no floor, no truncation):
    a word with no customers has no cache mass, so offering it changes nothing."""
    utterances, _ = noisy_corpus(30, seed=3)
    settings = dict(algorithm="cvi", n_iter=2, init_iter=2, prune=0.0, truncation=10 ** 6)
    floor = NoisyWords(min_customers=0.0, **settings).fit(utterances)

    def offer_everything(self):
        for symbol in range(len(SYMBOLS)):      # words no span of the corpus reads as: no customers
            self._index(np.full(8, symbol))
        self._offer(-np.inf)

    monkeypatch.setattr(CollapsedNoisyWords, "_choose_active", offer_everything)
    everything = NoisyWords(min_customers=0.0, **settings).fit(utterances)
    learner = everything.learner_
    assert len(learner.active) == len(learner.words) > np.count_nonzero(learner.customers[:len(learner.words)] > SLIVER)
    assert [r.objective for r in floor.history_] == pytest.approx([r.objective for r in everything.history_],
                                                                  rel=1e-9)
    assert floor.edit_counts_ == pytest.approx(everything.edit_counts_, rel=1e-9, abs=1e-9)
    assert floor.dropped_mass_ < 1e-6


def test_cvi_words_left_out_cost_at_most_eq_c2(collapsed):
    """Leaving out the words of at most eps customers lowers every span score of eq. C1 by between 0 and the
    cache mass delta they had, and delta <= D / (n + b) (eq. C2)."""
    model, _, _ = collapsed
    learner = model.learner_
    corpus = learner.corpus

    def offered(floor):
        learner._offer(floor)
        weights = learner.predictive()
        return weights, learner.active.copy(), learner.dropped

    try:
        everything, all_words, _ = offered(SLIVER)
        some, kept, bound = offered(2.0)
    finally:
        learner._choose_active()
    left_out = ~np.isin(all_words, kept)
    assert 0 < left_out.sum() < len(all_words)
    delta = np.exp(everything.log_pi[left_out]).sum()
    assert 0.0 < delta <= bound + 1e-12
    for i in range(len(corpus.first)):
        y = corpus.ids[corpus.offsets[i]:corpus.offsets[i + 1]]
        scores = []
        for w in (everything, some):
            work, buffers, likelihoods, marginal, table, _ = _workspace(
                w.word_offsets, corpus.offsets[i:i + 2], len(corpus.symbols), model.max_insertions, model.longest)
            _scores(y, w.word_ids, w.word_offsets, np.exp(w.log_pi), float(np.exp(w.log_base)), w.table, w.phones,
                    w.stop, model.max_insertions, model.longest, work, buffers, likelihoods, marginal, table)
            scores.append(table)
        assert np.all(scores[0] - scores[1] >= -1e-15) and np.all(scores[0] - scores[1] <= delta + 1e-15)
    assert run_e_step(learner, some)[0] < run_e_step(learner, everything)[0]


def test_decode_reads_each_word_as_its_likeliest_underlying_word(fitted):
    """`decode`'s words tile the utterance as `segment`'s, and each one's underlying word is the term of eq. N1
    largest at its span (a cached word's pi_k p~(y | x_k), or None where the base's sum is larger)."""
    model, utterances, _ = fitted
    w = model._weights
    pi, base = np.exp(w.log_pi), float(np.exp(w.log_base))
    words = [tuple(model.symbols_[s] for s in w.word_ids[w.word_offsets[k]:w.word_offsets[k + 1]])
             for k in range(pi.shape[0])]
    index = {s: i for i, s in enumerate(model.symbols_)}
    decoded = model.decode(utterances)
    assert [[word.surface for word in u] for u in decoded] == model.segment(utterances)
    readings = set()
    for utterance, found in zip(utterances[:15], decoded[:15]):
        y = np.array([index[s] for s in utterance], dtype=np.int64)
        offsets = np.array([0, len(y)], dtype=np.int64)
        work, buffers, likelihoods, marginal, scores, _ = _workspace(w.word_offsets, offsets, w.phones.shape[0],
                                                                     model.max_insertions, model.longest)
        _scores(y, w.word_ids, w.word_offsets, pi, base, w.table, w.phones, w.stop, model.max_insertions,
                model.longest, work, buffers, likelihoods, marginal, scores)
        assert [(word.start, word.stop) for word in found] == list(zip([0] + [x.stop for x in found[:-1]],
                                                                      [x.stop for x in found]))
        for word in found:
            terms = [base * marginal[word.start, word.stop]] + [pi[k] * likelihoods[k, word.start, word.stop]
                                                               for k in range(pi.shape[0])]
            best = int(np.argmax(terms))
            assert word.underlying == (None if best == 0 else words[best - 1])
            assert word.surface == tuple(utterance[word.start:word.stop])
            readings.add(word.underlying is None)
    assert False in readings            # some words are read as cached words


def test_score_samples_are_the_charts_log_z(fitted):
    """Each utterance's log p is its chart's log Z: over the training utterances they add up to the E-step's
    evidence under the same weights; a symbol never seen gives -inf."""
    model, utterances, _ = fitted
    evidence, _, _ = run_e_step(model.learner_, model._weights)    # the learner may have moved on since
    scores = model.score_samples(utterances)
    assert np.all(np.isfinite(scores)) and scores.sum() == pytest.approx(evidence, rel=1e-10)
    assert model.score_samples([["a", "z"], utterances[0]])[0] == -np.inf
    assert model.score_samples([["a", "z"], utterances[0]])[1] == pytest.approx(scores[0], rel=1e-12)


def test_align_is_the_channels_best_edit_sequence(fitted):
    """`align` of (underlying word, surface string) pairs: the best of every edit sequence enumerated under the
    fitted channel table (`tests.chains.test_edits.brute`)."""
    model, _, _ = fitted
    pairs = [(("a", "b"), ("a", "b")), (("a", "b", "c"), ("a", "c")), (("c", "c"), ("c", "a", "c")),
             (("b", "a"), ("c",))]
    index = {s: i for i, s in enumerate(model.symbols_)}
    for (x, y), rows in zip(pairs, model.align(pairs)):
        x_ids, y_ids = (np.array([index[s] for s in side], dtype=np.int64) for side in (x, y))
        w = np.empty((2 * len(x) + 1, len(y) + 1))
        fill_weights(x_ids, y_ids, len(model.symbols_), model._weights.table, w)
        np.testing.assert_array_equal(rows, brute(w, len(x), len(y), model.max_insertions)[3])
    assert model.align([]) == []

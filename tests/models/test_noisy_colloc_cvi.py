"""CVI of the colloc grammar over the noisy channel (models/noisy_colloc_cvi.py): a unit's update is its chart
under the predictive of the counts rebuilt from the other units, the collapsed counts are the sums of the units'
and taking a unit out and back in changes nothing, Word's statistics are the words of Colloc's tables (eq. V3),
the fit decodes, saves and resumes, and it finds the collocations of a corpus made of two."""
import copy

import numpy as np
import pytest

from cvbayes.checkpoints import checkpoint_passes
from cvbayes.metrics import segmentation_scores
from cvbayes.models.noisy_colloc import colloc_log_evidence
from cvbayes.models.noisy_colloc_cvi import CollapsedNoisyColloc
from cvbayes.models.noisy_words import NoisyWords, base_probability
from tests.models.test_noisy_words import noisy_corpus

SETTINGS = dict(grammar="colloc", algorithm="cvi", init_iter=2, prune=0.0, truncation=12, random_state=0)


@pytest.fixture(scope="module")
def collapsed():
    utterances, gold = noisy_corpus(40)
    model = NoisyWords(n_iter=2, **SETTINGS).fit(utterances)
    return model, utterances, gold


def occupancy(customers, copies):
    """A unit's log q(n^u = 0) of each of its atoms (eq. 5.46)."""
    return copies * np.log(np.maximum(1.0 - np.minimum(customers / copies, 1.0), 1e-12))


def rebuilt(learner, left_out=()):
    """The collapsed counts summed afresh from the units' local statistics, those of ``left_out`` skipped:
    (edits, Colloc customers, log q(n = 0), expected collocations, ``Colloc+`` counts)."""
    corpus, n = learner.corpus, len(learner.words)
    edits, customers, log_empty = np.zeros_like(learner.edits), np.zeros(n), np.zeros(n)
    rule_counts, total = np.zeros((1, 2)), 0.0
    for j, copies in enumerate(corpus.copies):
        if j in left_out:
            continue
        edits[:, learner.local_columns[j]] += learner.local_edits[j]
        customers[learner.local_words[j]] += learner.local_customers[j]
        log_empty[learner.local_words[j]] += occupancy(learner.local_customers[j], copies)
        rule_counts += [[max(learner.local_words_total[j] - copies, 0.0), copies]]
        total += learner.local_words_total[j]
    return edits, customers, log_empty, total, rule_counts


def test_a_units_update_is_its_chart_under_the_others_predictive(collapsed):
    """update(i)'s log Z equals the chart's under eq. V1 on counts rebuilt from every other unit."""
    model, _, _ = collapsed
    learner = copy.deepcopy(model.learner_)
    corpus = learner.corpus
    i = int(np.argmax(corpus.copies))
    assert corpus.copies[i] > 1
    others = copy.deepcopy(learner)
    others.edits, customers, log_empty, others.words_total, others.rules = rebuilt(learner, left_out={i})
    n = len(learner.words)
    others.customers[:n], others.log_empty[:n] = customers, log_empty
    lo, hi = corpus.offsets[i], corpus.offsets[i + 1]

    def log_z(weights):
        out = np.empty(1)
        colloc_log_evidence(corpus.ids[lo:hi], np.array([0, hi - lo], np.int64), *weights.chart_arguments(),
                            model.max_insertions, model.longest, out)
        return out[0]
    brute = corpus.copies[i] * log_z(others.predictive())
    assert learner.update(i) == pytest.approx(brute, rel=1e-10)
    # the unit's own counts matter: with them in, its log Z is another
    assert abs(corpus.copies[i] * log_z(model.learner_.predictive()) - brute) > 1e-3


def test_counts_are_the_units_sums_and_survive_take_out_and_put_back(collapsed):
    model, _, _ = collapsed
    learner = copy.deepcopy(model.learner_)
    n = len(learner.words)
    edits, customers, log_empty, total, rule_counts = rebuilt(learner)
    assert learner.edits == pytest.approx(edits, abs=1e-9) and edits.sum() > 10
    assert learner.customers[:n] == pytest.approx(customers, abs=1e-9)
    assert learner.log_empty[:n] == pytest.approx(log_empty, abs=1e-9)
    assert learner.words_total == pytest.approx(total) and learner.rules == pytest.approx(rule_counts)
    before = learner.state()
    i = 5
    weights = learner.take_out([i])
    assert not np.allclose(learner.edits, before["edits"])
    assert np.allclose(weights.words.table.sum(axis=1), 1.0)
    learner._move(i, 1.0)
    after = learner.state()
    for name in ("edits", "customers", "log_empty", "rules", "words_total"):
        assert after[name] == pytest.approx(before[name], abs=1e-9), name


def test_words_are_the_words_of_collocs_tables_and_make_collocs_base(collapsed):
    """Eq. V3: Word's customers are sum_c E[t_c] m_{c,x}, its occupancy the sum of log q(n_c = 0) over the
    collocations holding x, its Word+ rules E[t_c] (n - 1) and E[t_c]; Colloc's base H_C (eq. V2) is the Word+
    rules' and Word's predictive, (cache mass + b P0(x)) / (n + b) a word at a = 0."""
    model, _, _ = collapsed
    learner = model.learner_
    customers, log_empty, rule_counts = {}, {}, np.zeros(2)
    for colloc, tables, empty in zip(learner.words, learner.tables, learner.log_empty):
        for word in colloc:
            customers[word] = customers.get(word, 0.0) + tables
        for word in set(colloc):
            log_empty[word] = log_empty.get(word, 0.0) + (empty if tables > 0 else 0.0)
        rule_counts += [tables * (len(colloc) - 1), tables]
    used = [w for w in customers if customers[w] > 0]
    assert sorted(learner.word_list) == sorted(used)
    assert learner.word_customers == pytest.approx([customers[w] for w in learner.word_list])
    assert learner.word_log_empty == pytest.approx([log_empty[w] for w in learner.word_list])
    assert learner.word_rules[0] == pytest.approx(rule_counts)
    assert any(len(c) > 1 and learner.tables[k] > 0 for k, c in enumerate(learner.words))
    b, n = model.b, sum(customers.values())
    go_on, end = (learner.word_rules[0] + model.alpha) / (learner.word_rules.sum() + 2 * model.alpha)
    offered = {learner.word_list[k] for k in learner.word_offered}
    for k, colloc in enumerate(learner.words[:20]):
        expected = go_on ** (len(colloc) - 1) * end
        for word in colloc:
            theta = b * base_probability(word, learner.phones, model.base_stop)
            occupied = -np.expm1(log_empty[word]) if word in offered else 0.0
            cached = (theta ** (1 - occupied) * (customers[word] / occupied + theta) ** occupied - theta
                      if occupied > 0 else 0.0)
            expected *= (cached + theta) / (n + b)
        assert learner._base_probability(k) == pytest.approx(expected, rel=1e-9)


def test_fits_decodes_saves_and_resumes(collapsed, tmp_path):
    model, utterances, gold = collapsed
    assert isinstance(model.learner_, CollapsedNoisyColloc)
    assert np.all(np.isfinite([r.objective for r in model.history_]))
    for utterance, words in zip(utterances, model.decode(utterances)):
        assert [s for w in words for s in w.surface] == list(utterance)
    assert segmentation_scores(model.segment(utterances), gold).token.f1 > 0.3
    assert model.collocations_ and model.lexicon_ and 0.0 <= model.dropped_mass_ < 1.0
    model.save(tmp_path / "colloc.npz")
    loaded = NoisyWords.load(tmp_path / "colloc.npz")
    np.testing.assert_allclose(loaded.score_samples(utterances), model.score_samples(utterances))
    path = tmp_path / "run.ckpt"
    discounted = {**SETTINGS, "a": 0.3}
    whole = NoisyWords(n_iter=2, **discounted).fit(utterances)

    class Interrupted(Exception):
        pass

    def stop(fitted, iteration):
        if iteration == 1:
            raise Interrupted

    with pytest.raises(Interrupted):
        NoisyWords(n_iter=2, **discounted).fit(utterances, checkpoint=path, callback=stop)
    assert checkpoint_passes(path) == (1, False)
    resumed = NoisyWords(n_iter=2, **discounted).fit(utterances, checkpoint=path)
    assert resumed.resumed_from_ == 1
    assert [r.objective for r in resumed.history_] == [r.objective for r in whole.history_]
    assert resumed.decode(utterances) == whole.decode(utterances)
    with pytest.raises(ValueError, match="unigram only"):
        model.collapsed_over([["a"]], [1.0], np.random.default_rng(0), None)


def two_collocations(n_utterances, seed=0):
    """Utterances of one to three collocations of COLLOCS, clean: (utterances, gold collocations as strings)."""
    rng = np.random.default_rng(seed)
    utterances = []
    for _ in range(n_utterances):
        utterances.append("".join(COLLOCS[c] for c in rng.choice(len(COLLOCS), size=rng.integers(1, 4))))
    return utterances


COLLOCS = ["abcd", "efab"]       # the words ab, cd, ef


def test_finds_the_collocations_of_a_two_collocation_corpus():
    """The two collocations hold most of the Colloc customers, and every utterance is read as them."""
    utterances = two_collocations(30)
    model = NoisyWords(n_iter=3, **SETTINGS).fit(utterances)
    ranked = sorted(model.collocations_.items(), key=lambda item: -item[1])
    top = {"".join(s for word in colloc for s in word) for colloc, _ in ranked[:2]}
    assert top == set(COLLOCS)
    total = sum(model.collocations_.values())
    assert sum(c for _, c in ranked[:2]) > 0.8 * total
    assert model.score_samples(utterances).sum() > NoisyWords(n_iter=3, **{**SETTINGS, "algorithm": "vb"}).fit(
        utterances).score_samples(utterances).sum() - 5.0

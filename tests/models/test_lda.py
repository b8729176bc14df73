"""LDA on the engine: updates against hand computation, objectives, the sampler against the exact
collapsed posterior, the readers, the metrics and the command line."""
import itertools
import json

import numpy as np
import pytest
import scipy.sparse
from scipy.special import digamma, gammaln

from cvbayes.core import rules
from cvbayes.data import Corpus
from cvbayes.data.documents import (
    STOP_WORDS,
    document_term_matrix,
    documents_from_texts,
    read_folder,
    read_lines,
    read_tagged_documents,
    tokenize_document,
)
from cvbayes.data.errors import CorpusFormatError
from cvbayes.commands.lda import register as add_lda_commands
from cvbayes.metrics.topics import document_completion, document_topics, npmi_coherence, split_halves, top_words
from cvbayes.models import lda_kernels as kernels
from cvbayes.models.lda import ALGORITHMS, LDA, BatchVB, CollapsedLDA, Documents, GibbsLDA, minka_alpha

TINY = scipy.sparse.csr_matrix(np.array([[2, 1, 0, 0], [0, 1, 3, 0], [1, 0, 0, 2]]))


def planted(n_docs=120, n_topics=3, n_words=30, seed=0, length=(40, 80)):
    """Documents drawn from LDA with sparse topics, and the topics."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(n_words, 0.1), n_topics)
    rows = []
    for _ in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, 0.3))
        z = rng.choice(n_topics, rng.integers(*length), p=theta)
        words = [rng.choice(n_words, p=topics[k]) for k in z]
        rows.append(np.bincount(words, minlength=n_words))
    return scipy.sparse.csr_matrix(np.array(rows)), topics


# -- updates against hand computation -----------------------------------------------------------


def test_one_vb_step_matches_hand_computation():
    alpha, eta, n_topics = np.array([0.3, 0.7]), 0.2, 2
    documents = Documents(TINY)
    counts = np.array([[1.0, 2.0], [0.5, 0.1], [3.0, 1.0], [0.2, 0.9]])  # (W, K) expected counts
    structure = BatchVB(documents, n_topics, alpha.copy(), eta, max_doc_iter=1, doc_tol=0.0)
    table = structure.tables(counts, rules.VB)
    sstats, local = structure.expectations(table)

    lam = counts + eta
    exp_log_beta = np.exp(digamma(lam) - digamma(lam.sum(axis=0)))
    assert np.allclose(table, exp_log_beta)
    dense = TINY.toarray()
    expected_sstats = np.zeros_like(counts)
    expected_local = 0.0
    for d, row in enumerate(dense):
        gamma = alpha + row.sum() / n_topics  # Blei et al.'s start
        exp_theta = np.exp(digamma(gamma) - digamma(gamma.sum()))
        norm = exp_log_beta @ exp_theta  # (W,)
        gamma = alpha + exp_theta * ((row / norm) @ exp_log_beta)  # one step of the fixed point
        assert np.allclose(structure.gamma[d], gamma)
        exp_theta = np.exp(digamma(gamma) - digamma(gamma.sum()))
        norm = exp_log_beta @ exp_theta
        expected_sstats += (row / norm)[:, None] * exp_log_beta * exp_theta
        kl = (gammaln(gamma.sum()) - gammaln(alpha.sum()) - (gammaln(gamma) - gammaln(alpha)).sum()
              + ((gamma - alpha) * (digamma(gamma) - digamma(gamma.sum()))).sum())
        expected_local += (row * np.log(norm)).sum() - kl
    assert np.allclose(sstats, expected_sstats)
    assert np.isclose(local, expected_local)
    # the kernel's per-document KL is core.rules' for one row
    gamma = np.array([0.7, 3.1])
    assert np.isclose(kernels.document_kl(gamma, alpha), rules.dirichlet_kl(gamma[None] - alpha, alpha))


def test_one_cvb0_update_matches_hand_computation():
    alpha, eta, n_topics = np.array([0.1, 0.4, 0.2]), 0.05, 3
    documents = Documents(TINY)
    state = CollapsedLDA(documents, n_topics, alpha.copy(), eta, np.random.default_rng(3))
    e = 3  # document 1, word 2, seen 3 times
    assert (documents.entry_doc[e], documents.entry_word[e], documents.entry_count[e]) == (1, 2, 3.0)
    g = state.gamma[e].copy()
    doc_topic, word_topic, topic = state.doc_topic.copy(), state.word_topic.copy(), state.topic.copy()
    n_words, doc_length = TINY.shape[1], 4.0

    log_z = kernels.cvb0_entry(state.state, e)

    # every token of the entry leaves out its own q(z) only (Asuncion et al. 2009, eq. 7)
    weights = ((word_topic[2] - g + eta) / (topic - g + n_words * eta)
               * (doc_topic[1] - g + alpha) / (doc_length - 1 + alpha.sum()))
    new = weights / weights.sum()
    assert np.allclose(state.gamma[e], new)
    assert np.isclose(log_z, 3 * np.log(weights.sum()))
    assert np.allclose(state.doc_topic[1], doc_topic[1] + 3 * (new - g))
    assert np.allclose(state.word_topic[2], word_topic[2] + 3 * (new - g))
    assert np.allclose(state.topic, topic + 3 * (new - g))
    # the global counts stay the sums of the entries' q(z)
    expected = np.zeros_like(state.word_topic)
    np.add.at(expected, documents.entry_word, documents.entry_count[:, None] * state.gamma)
    assert np.allclose(state.word_topic, expected)


def test_one_cvb_update_adds_the_gaussian_correction():
    alpha, eta, n_topics = np.array([0.1, 0.4, 0.2]), 0.05, 3
    documents = Documents(TINY)
    state = CollapsedLDA(documents, n_topics, alpha.copy(), eta, np.random.default_rng(3), second_order=True)
    e = 3
    g = state.gamma[e].copy()
    n, v = [array.copy() for array in state.state[5:8]], [array.copy() for array in state.state[12:15]]
    own_var = g * (1 - g)
    mean_dk, mean_wk, mean_k = n[0][1] - g + alpha, n[1][2] - g + eta, n[2] - g + 4 * eta
    var_dk, var_wk, var_k = v[0][1] - own_var, v[1][2] - own_var, v[2] - own_var
    weights = (mean_wk / mean_k * mean_dk / (4.0 - 1 + alpha.sum())
               * np.exp(-var_wk / (2 * mean_wk ** 2) - var_dk / (2 * mean_dk ** 2) + var_k / (2 * mean_k ** 2)))
    log_z = kernels.cvb_entry(state.state, e)
    new = weights / weights.sum()
    assert np.allclose(state.gamma[e], new)
    assert np.isclose(log_z, 3 * np.log(weights.sum()))
    assert np.allclose(state.state[12][1], v[0][1] + 3 * (new * (1 - new) - own_var))


# -- objectives and equivalences --------------------------------------------------------------------


@pytest.mark.parametrize("max_doc_iter", [2, 100])
def test_vb_elbo_never_decreases(max_doc_iter):
    X, _ = planted(n_docs=60, seed=1)
    model = LDA(4, alpha=0.2, eta=0.05, algorithm="vb", n_iter=25, max_doc_iter=max_doc_iter).fit(X)
    elbo = np.array([record.objective for record in model.history_])
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:])), np.diff(elbo).min()
    assert elbo[-1] > elbo[0] + 100


def test_online_vb_with_rho_one_on_the_whole_corpus_is_one_batch_vb_step():
    X, _ = planted(n_docs=40, seed=2)
    batch = LDA(3, alpha=0.2, eta=0.05, algorithm="vb", n_iter=1, random_state=5).fit(X)
    online = LDA(3, alpha=0.2, eta=0.05, algorithm="online-vb", n_iter=1, random_state=5, kappa=0.0,
                 batch_size=X.shape[0]).fit(X)
    assert online.n_batch_iter_ == 1
    assert np.allclose(online.components_, batch.components_, rtol=1e-10, atol=1e-12)
    # two batch steps differ from one, so the comparison can fail
    assert not np.allclose(LDA(3, alpha=0.2, eta=0.05, algorithm="vb", n_iter=2, random_state=5).fit(X).components_,
                           online.components_)
    # partial_fit with rho = 1 and the whole corpus as the stream is the same step
    partial = LDA(3, alpha=0.2, eta=0.05, random_state=5, kappa=0.0, total_samples=X.shape[0]).partial_fit(X)
    assert np.allclose(partial.components_, batch.components_, rtol=1e-10, atol=1e-12)


def test_cvb0_objective_rises_on_planted_data_and_finds_the_topics():
    X, topics = planted(n_docs=150, seed=3)
    train, test = X[:120], X[120:]
    model = LDA(3, alpha=0.3, eta=0.1, algorithm="cvb0", n_iter=40).fit(train)
    objective = np.array([record.objective for record in model.history_])
    assert objective[-1] > objective[0] + 0.05 * abs(objective[0])
    assert np.all(objective[10:] >= objective[9] - 1e-6 * abs(objective[9]))  # it has settled upwards
    truth = document_completion(topics, test, 0.3).perplexity
    assert model.perplexity(test) < 1.05 * truth


@pytest.mark.parametrize("algorithm, options", [("vb", {}), ("online-vb", {"batch_size": 30}), ("cvb", {}),
                                                ("scvb0", {"batch_size": 30}), ("cgs", {"n_iter": 300}),
                                                ("cgs", {"n_iter": 150, "n_jobs": 2}),
                                                ("cvb0", {"frozen_counts": True})])
def test_every_algorithm_learns_planted_topics(algorithm, options):
    X, topics = planted(n_docs=150, seed=4)
    train, test = X[:120], X[120:]
    # VB is the one that stops in local optima on these data: keep the best ELBO of three seeds
    models = [LDA(3, alpha=0.3, eta=0.1, algorithm=algorithm, random_state=seed, **{"n_iter": 40, **options}).fit(train)
              for seed in range(3 if algorithm == "vb" else 1)]
    model = max(models, key=lambda fitted: fitted.history_[-1].objective)
    truth = document_completion(topics, test, 0.3).perplexity
    uniform = document_completion(np.ones_like(topics), test, 0.3).perplexity
    assert model.perplexity(test) < truth + 0.1 * (uniform - truth)
    assert np.all(np.isfinite([record.objective for record in model.history_]))
    assert len(model.history_) == model.n_iter_


TINY_GIBBS = scipy.sparse.csr_matrix(np.array([[2, 1, 0], [0, 1, 2]]))


def exact_collapsed_posterior(documents, n_topics, alpha, eta):
    """p(z | w) of every assignment of the tokens of ``documents``, by enumeration, in the order of
    `itertools.product` (token 0's topic the slowest)."""
    token_word, token_doc = documents.tokens()
    log_p = []
    for z in itertools.product(range(n_topics), repeat=token_word.shape[0]):
        doc_topic = np.zeros((documents.n_documents, n_topics))
        word_topic = np.zeros((documents.n_words, n_topics))
        np.add.at(doc_topic, (token_doc, list(z)), 1)
        np.add.at(word_topic, (token_word, list(z)), 1)
        log_p.append(rules.dirichlet_log_marginal(doc_topic, alpha) + rules.dirichlet_log_marginal(word_topic.T, eta))
    p = np.exp(np.array(log_p) - max(log_p))
    return p / p.sum()


def sampled_posterior(sampler, n_sweeps, burn_in=100):
    """The frequencies of the assignments (coded as in `exact_collapsed_posterior`) over the sweeps."""
    n_topics = sampler.topic.shape[0]
    codes = n_topics ** np.arange(sampler.assignment.shape[0])[::-1]
    hits = np.zeros(n_topics ** sampler.assignment.shape[0])
    for step in range(n_sweeps):
        kernels.gibbs_sweep(sampler.token_word, sampler.assignment, sampler.token_start, sampler.doc_topic,
                            sampler.topic, sampler.normaliser, sampler.pairs, sampler.list_start, sampler.list_length,
                            sampler.alpha, sampler.eta, sampler.eta_total, sampler.seed[0], step)
        if step >= burn_in:
            hits[sampler.assignment @ codes] += 1
    return hits / hits.sum()


def assert_counts_match_assignments(sampler):
    """The document, word (from the lists) and topic counts are those of the assignments, and the
    objective is `core.rules.dirichlet_log_marginal` of both tables."""
    documents = sampler.documents
    token_word, token_doc = documents.tokens()
    n_topics = sampler.topic.shape[0]
    doc_topic = np.zeros((documents.n_documents, n_topics), dtype=int)
    word_topic = np.zeros((documents.n_words, n_topics), dtype=int)
    np.add.at(doc_topic, (token_doc, sampler.assignment), 1)
    np.add.at(word_topic, (token_word, sampler.assignment), 1)
    assert np.array_equal(sampler.doc_topic, doc_topic)
    assert np.array_equal(sampler.word_topic, word_topic)
    assert np.array_equal(sampler.topic, word_topic.sum(axis=0))
    assert np.allclose(sampler.normaliser, 1.0 / (sampler.topic + sampler.eta_total))
    expected = (rules.dirichlet_log_marginal(doc_topic, sampler.alpha)
                + rules.dirichlet_log_marginal(word_topic.T, sampler.eta))
    assert np.isclose(sampler.log_joint(), expected)


def test_collapsed_gibbs_matches_the_exact_collapsed_posterior():
    documents = Documents(TINY_GIBBS)
    alpha, eta, n_topics = np.array([0.5, 0.5]), 0.3, 2
    sampler = GibbsLDA(documents, n_topics, alpha.copy(), eta, np.random.default_rng(0))
    empirical = sampled_posterior(sampler, 60000)
    assert 0.5 * np.abs(empirical - exact_collapsed_posterior(documents, n_topics, alpha, eta)).sum() < 0.02
    assert_counts_match_assignments(sampler)
    # the check can fail: the posterior under priors four times larger is beyond the tolerance
    assert 0.5 * np.abs(empirical - exact_collapsed_posterior(documents, n_topics, 4 * alpha, 4 * eta)).sum() > 0.05


def test_partitioned_gibbs_is_the_sampler_on_one_partition_and_keeps_the_counts_on_two():
    X, _ = planted(n_docs=40, n_topics=4, seed=9)
    documents = Documents(X)
    alpha = np.array([0.2, 0.3, 0.4, 0.5])  # asymmetric: the log joint's other branch

    def run(n_jobs, n_sweeps=5):
        sampler = GibbsLDA(documents, 4, alpha.copy(), 0.1, np.random.default_rng(4), n_jobs=n_jobs)
        for sweep in range(n_sweeps):
            kernels.partitioned_gibbs_sweep(sampler.token_word, sampler.assignment, sampler.doc_topic, sampler.topic,
                                            sampler.normaliser, sampler.pairs, sampler.list_start, sampler.list_length,
                                            sampler.alpha, sampler.eta, sampler.eta_total, sampler.doc_parts,
                                            sampler.word_bounds, sampler.word_offsets, sampler.seed[0], sweep)
        return sampler

    exact = GibbsLDA(documents, 4, alpha.copy(), 0.1, np.random.default_rng(4))
    for sweep in range(5):
        exact.sweep(sweep)
    assert np.array_equal(run(1).assignment, exact.assignment)
    two = run(2)
    assert not np.array_equal(two.assignment, exact.assignment)
    assert_counts_match_assignments(two)
    # the two threads share nothing within a step: the chain is the same, run after run
    for _ in range(3):
        assert np.array_equal(run(2).assignment, two.assignment)


def test_partitioned_gibbs_stays_near_the_exact_posterior():
    """Two partitions approximate: within a step each thread misses the other's changes to n_k.  On
    two documents of three tokens, where one token moves n_k by a sixth, the stationary distribution
    moves by about 0.04 in total variation (0.01 for the exact sampler on as many sweeps)."""
    documents = Documents(TINY_GIBBS)
    alpha, eta, n_topics = np.array([0.5, 0.5]), 0.3, 2
    sampler = GibbsLDA(documents, n_topics, alpha.copy(), eta, np.random.default_rng(0), n_jobs=2)
    codes = n_topics ** np.arange(sampler.assignment.shape[0])[::-1]
    hits = np.zeros(n_topics ** sampler.assignment.shape[0])
    for sweep in range(10000):
        sampler.sweep(sweep)
        hits[sampler.assignment @ codes] += 1
    distance = 0.5 * np.abs(hits / hits.sum() - exact_collapsed_posterior(documents, n_topics, alpha, eta)).sum()
    assert distance < 0.1
    assert_counts_match_assignments(sampler)


def test_gibbs_same_seed_same_chain():
    X, _ = planted(n_docs=30, seed=10)
    fits = [LDA(3, algorithm="cgs", n_iter=5, random_state=seed).fit(X) for seed in (1, 1, 2)]
    assert np.array_equal(fits[0].assignments_, fits[1].assignments_)
    assert [record.objective for record in fits[0].history_] == [record.objective for record in fits[1].history_]
    assert not np.array_equal(fits[0].assignments_, fits[2].assignments_)


def test_minka_alpha_raises_the_evidence_and_learns_an_asymmetric_prior():
    rng = np.random.default_rng(0)
    true_alpha = np.array([2.0, 0.5, 0.1])
    doc_topic = np.array([rng.multinomial(60, rng.dirichlet(true_alpha)) for _ in range(300)]).astype(float)
    alpha = np.full(3, 1.0)
    evidence = [rules.dirichlet_log_marginal(doc_topic, alpha)]
    for _ in range(5):
        alpha = minka_alpha(doc_topic, doc_topic.sum(axis=1), alpha, n_steps=1)
        evidence.append(rules.dirichlet_log_marginal(doc_topic, alpha))
    assert np.all(np.diff(evidence) > 0)
    learnt = minka_alpha(doc_topic, doc_topic.sum(axis=1), np.full(3, 1.0), n_steps=500)
    assert np.allclose(learnt, true_alpha, rtol=0.25)
    X, _ = planted(n_docs=60, seed=5)
    model = LDA(3, alpha=0.3, eta=0.1, algorithm="cvb0", n_iter=10, learn_alpha=True).fit(X)
    assert model.alpha_.shape == (3,) and not np.allclose(model.alpha_, 0.3)


# -- the estimator's interface ------------------------------------------------------------------------


def test_sklearn_shape_and_errors():
    X, _ = planted(n_docs=30, seed=6)
    model = LDA(3, alpha=0.2, algorithm="cvb0", n_iter=5)
    assert model.get_params()["n_topics"] == 3
    assert model.set_params(eta=0.05) is model and model.eta == 0.05
    theta = model.fit_transform(X)
    assert theta.shape == (30, 3) and np.allclose(theta.sum(axis=1), 1.0)
    assert model.transform(X[:4]).shape == (4, 3)
    assert model.components_.shape == (3, X.shape[1])
    assert np.allclose(model.topic_word_.sum(axis=1), 1.0)
    assert np.isclose(model.perplexity(X[:5]), np.exp(-model.score(X[:5]) / split_halves(X[:5])[1].sum()))
    with pytest.raises(ValueError, match="unknown algorithm"):
        LDA(3, algorithm="gibbs").fit(X)
    with pytest.raises(ValueError, match="whole counts"):
        LDA(3).fit(scipy.sparse.csr_matrix(np.array([[0.5, 1.0]])))
    with pytest.raises(ValueError, match="unknown parameters"):
        model.set_params(topics=3)
    with pytest.raises(ValueError, match="learn_alpha"):
        LDA(3, learn_alpha=True, algorithm="scvb0").fit(X)
    with pytest.raises(ValueError, match="n_jobs applies to cgs only"):
        LDA(3, n_jobs=2, algorithm="cvb0")
    for n_jobs in (0, 1.5, True):
        with pytest.raises(ValueError, match="n_jobs must be a positive integer"):
            LDA(3, n_jobs=n_jobs, algorithm="cgs")
    assert set(ALGORITHMS) == {"vb", "online-vb", "cvb0", "cvb", "cvb0-sharded", "scvb0", "cgs"}


def test_save_load_round_trip(tmp_path):
    corpus = documents_from_texts(["apples and pears are fruit", "pears grow on trees", "cars drive on roads",
                                   "roads and cars and trucks", "fruit trees in the orchard"])
    model = LDA(2, alpha=0.5, eta=0.1, algorithm="cgs", n_iter=20, learn_alpha=True).fit(corpus)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = LDA.load(path)
    assert np.array_equal(loaded.components_, model.components_)
    assert np.array_equal(loaded.alpha_, model.alpha_)
    assert loaded.history_ == model.history_
    assert loaded.vocabulary_ == corpus.vocabulary
    assert loaded.top_words(3) == model.top_words(3)
    assert loaded.get_params() == model.get_params()
    assert np.allclose(loaded.transform(corpus), model.transform(corpus))
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a cvbayes model file"):
        LDA.load(tmp_path / "bad.npz")


# -- readers --------------------------------------------------------------------------------------------


def test_readers_drop_stop_words_and_rare_words(tmp_path):
    lines = tmp_path / "docs.txt"
    lines.write_text("The cat sat on the mat.\n\nA cat and a dog!\nDogs chase the cat's tail 42 times\n")
    corpus = read_lines(lines, min_count=2)
    assert corpus.n_sequences == 3 and corpus.vocabulary.symbols == ["cat"]
    assert [len(document) for document in corpus] == [1, 1, 1]
    assert "the" in STOP_WORDS and tokenize_document("Cat's 2 dogs") == ["cat", "dogs"]
    everything = read_lines(lines, stop_words=None)
    assert "the" in everything.vocabulary
    common = read_lines(lines, max_df=2)
    assert "cat" not in common.vocabulary
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text("topic models find topics")
    (folder / "b.txt").write_text("models of topics")
    (folder / ".hidden").write_text("ignored words")
    assert read_folder(folder).n_sequences == 2
    matrix = document_term_matrix(read_folder(folder))
    assert matrix.shape == (2, 4) and matrix.sum() == 6


def test_tagged_documents_keep_tags_and_report_bad_lines(tmp_path):
    folder = tmp_path / "brown"
    folder.mkdir()
    (folder / "ca01").write_text("The/at jury/nn said/vbd ./.\n\nThe/at jury/nn-tl met/vbd\n")
    (folder / "ca02").write_text("Dogs/nns bark/vb loudly/rb\n")
    (folder / "README").write_text("not a corpus file")
    corpus = read_tagged_documents(folder, pattern="c[a-r][0-9][0-9]", keep_tags=("nn", "vb"))
    assert corpus.n_sequences == 2
    assert [corpus.vocabulary.decode(document) for document in corpus] == [["jury", "jury", "met"],
                                                                         ["dogs", "bark"]]
    split = read_tagged_documents(folder / "ca01", sentences_per_document=1, stop_words=None)
    assert split.n_sequences == 2
    (folder / "ca03").write_text("good/jj\nbad-token\n")
    with pytest.raises(CorpusFormatError, match=r"ca03, line 2"):
        read_tagged_documents(folder, pattern="c[a-r][0-9][0-9]")


# -- metrics -------------------------------------------------------------------------------------------


def test_document_completion_matches_a_direct_computation():
    topics = np.array([[0.7, 0.2, 0.1, 0.0], [0.05, 0.05, 0.3, 0.6]])
    corpus = Corpus(np.array([0, 0, 1, 2, 3, 3, 0, 2], dtype=np.int32), np.array([0, 4, 8]))
    first, second = split_halves(corpus)
    assert first.toarray().tolist() == [[2, 0, 0, 0], [0, 0, 0, 2]]
    alpha = 0.5
    completion = document_completion(topics, corpus, alpha)
    thetas = document_topics(topics, first, alpha)
    for d, row in enumerate(first.toarray()):
        theta = np.full(2, 0.5)
        for _ in range(2000):
            expected = ((row / (theta @ topics + 1e-300)) @ topics.T) * theta
            theta = (expected + alpha) / (row.sum() + 2 * alpha)
        assert np.allclose(thetas[d], theta, atol=1e-5)
    direct = sum((second.toarray()[d] * np.log(thetas[d] @ topics + 1e-300)).sum() for d in range(2))
    assert np.isclose(completion.log_likelihood, direct)
    assert completion.n_tokens == 4 and np.isclose(completion.perplexity, np.exp(-direct / 4))


def test_npmi_by_hand():
    reference = scipy.sparse.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]]))
    topic_word = np.array([[0.5, 0.4, 0.1, 0.0], [0.0, 0.1, 0.4, 0.5]])
    assert top_words(topic_word, 2).tolist() == [[0, 1], [3, 2]]
    scores = npmi_coherence(topic_word, reference, n=2)
    p_a, p_b, p_ab = 3 / 4, 2 / 4, 2 / 4
    assert np.isclose(scores[0], np.log(p_ab / (p_a * p_b)) / -np.log(p_ab))
    assert scores[1] == -1.0  # never together


# -- command line ---------------------------------------------------------------------------------------


def _run(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="cvbayes")
    add_lda_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    args.handler(args)


def test_command_line_fit_topics_evaluate(tmp_path, capsys):
    X, topics = planted(n_docs=40, n_words=12, seed=8)
    words = ["apple", "bread", "cheese", "dates", "eggs", "figs", "grapes", "honey", "ice", "jam", "kale", "leek"]
    text = tmp_path / "docs.txt"
    text.write_text("\n".join(" ".join(np.repeat(words, row)) for row in X.toarray()) + "\n")
    model = tmp_path / "m.npz"
    _run(["lda", "fit", str(text), "--topics", "3", "--iterations", "10", "--min-count", "1", "--max-df", "1.0",
          "--heldout", "0.2", "-o", str(model), "--quiet", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["topics"] == 3 and report["perplexity"] > 1 and len(report["top_words"]) == 3
    _run(["lda", "topics", str(model), "--words", "4", "--plot", str(tmp_path / "topics.png")])
    out = capsys.readouterr().out
    assert out.count("topic") == 3 and (tmp_path / "topics.png").stat().st_size > 0
    _run(["lda", "evaluate", str(model), str(text), "--json"])
    assert json.loads(capsys.readouterr().out)["perplexity"] > 1
    _run(["lda", "fit", str(text), "--topics", "3", "--algorithm", "cgs", "--jobs", "2", "--iterations", "5",
          "--min-count", "1", "--max-df", "1.0", "--quiet", "--json"])
    assert json.loads(capsys.readouterr().out)["iterations"] == 5

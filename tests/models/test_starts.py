"""The default start (``init="params"``) and restarts (``n_init``) of HMM.fit (issue 15).

The planted HMMs are those of `cvbayes.experiments.starts`: K = 5, a cyclic transition matrix (0.9 on the
next state), categorical emissions in disjoint blocks or well-separated 1-D Gaussians.  From the thesis's
footnote-5 start (``init="local"``) the deterministic learners end at many-to-one 0.33-0.41 after 50
iterations (issue 15); from the default start every one recovers the planted states.
"""
import numpy as np
import pytest

from cvbayes import HMM
from cvbayes.experiments.starts import N_STATES, planted
from cvbayes.metrics.tagging import many_to_one
from cvbayes.models.hdp_hmm import HDPHMM

CATEGORICAL = planted("categorical", n_sequences=600, seed=5)
GAUSSIAN = planted("gaussian", n_sequences=300, seed=5)
# 50 passes for every algorithm, as the protocol (CGS anneals from 1.0 when it starts from parameters)
ITERATIONS = 50


def _recovered(corpus, algorithm, seed, **options):
    model = HMM(N_STATES, alpha=0.1, beta=0.1, emission="categorical" if corpus.is_discrete else "gaussian")
    model.set_params(algorithm=algorithm, n_iter=ITERATIONS, random_state=seed, **options).fit(corpus)
    return many_to_one(model.decode(corpus), corpus.gold)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi1", "cvi2", "cgs", "svi", "scvi"])
def test_default_start_recovers_the_planted_categorical_hmm(algorithm):
    scores = [_recovered(CATEGORICAL, algorithm, seed) for seed in range(3)]
    assert min(scores) >= 0.9, scores


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi2", "cgs", "scvi"])
def test_default_start_recovers_the_planted_gaussian_hmm(algorithm):
    scores = [_recovered(GAUSSIAN, algorithm, seed) for seed in range(3)]
    assert min(scores) >= 0.9, scores


def test_local_start_is_the_thesis_start_and_random_its_alias():
    """init="local" is footnote 5's start, unchanged: the same fit as the old default name "random"."""
    local = HMM(3, algorithm="cvi2", n_iter=3, random_state=4, init="local").fit(CATEGORICAL[:50])
    alias = HMM(3, algorithm="cvi2", n_iter=3, random_state=4, init="random").fit(CATEGORICAL[:50])
    params = HMM(3, algorithm="cvi2", n_iter=3, random_state=4).fit(CATEGORICAL[:50])
    assert np.array_equal(local.counts_.emissions, alias.counts_.emissions)
    assert not np.allclose(local.counts_.emissions, params.counts_.emissions)


def test_default_start_is_the_given_dict_of_its_drawn_parameters():
    """init="params" is exactly a fit from the dict `draw_start` returns, for every learner."""
    corpus = CATEGORICAL[:80]
    for algorithm in ("em", "vb", "cvi1", "cvi2", "cgs", "scvi"):
        model = HMM(N_STATES)
        default = model.set_params(algorithm=algorithm, n_iter=2, random_state=7).fit(corpus).counts_
        drawn = HMM(N_STATES, algorithm=algorithm, n_iter=2, random_state=7,
                    init=model.draw_start(corpus, 7)).fit(corpus).counts_
        for ours, theirs in zip(default, drawn):
            np.testing.assert_array_equal(ours, theirs)


def test_drawn_parameters_are_distributions_spread_over_the_data():
    model = HMM(N_STATES, emission="gaussian")
    model.family.prepare(GAUSSIAN, N_STATES)
    params = model.draw_start(GAUSSIAN, 0)
    assert np.isclose(params["startprob"].sum(), 1.0) and np.allclose(params["transmat"].sum(axis=1), 1.0)
    # k-means puts one mean at each planted mean (0, 4, ..., 16), with its cluster's variance (about 1)
    np.testing.assert_allclose(np.sort(params["means"][:, 0]), 4.0 * np.arange(N_STATES), atol=0.3)
    assert np.all((params["covars"] > 0.5) & (params["covars"] < 2.0))
    categorical = HMM(N_STATES)
    categorical.family.prepare(CATEGORICAL, N_STATES)
    rows = categorical.draw_start(CATEGORICAL, 0)["emissionprob"]
    assert rows.shape == (N_STATES, 50) and np.allclose(rows.sum(axis=1), 1.0) and np.all(rows > 0)
    # the words of a planted block share their neighbours, so they share a state; each block its own
    favourite = rows.argmax(axis=0).reshape(N_STATES, 10)
    assert np.all(favourite == favourite[:, :1]) and len(set(favourite[:, 0])) == N_STATES
    with pytest.raises(ValueError, match="init must be"):
        HMM(2, init="prior-ish").fit(CATEGORICAL[:5])


@pytest.mark.parametrize("algorithm", ["vb", "cvi2", "cgs", "scvi"])
def test_restarts_keep_the_best_objective_and_the_first_is_the_plain_fit(algorithm):
    corpus = CATEGORICAL[:100]
    runs = [HMM(N_STATES, algorithm=algorithm, n_iter=5, random_state=3 + r, init="local").fit(corpus)
            for r in range(3)]
    objectives = [run.history_[-1].objective for run in runs]
    best = HMM(N_STATES, algorithm=algorithm, n_iter=5, random_state=3, init="local", n_init=3).fit(corpus)
    assert best.restart_objectives_ == pytest.approx(objectives)
    winner = runs[int(np.argmax(objectives))]
    assert best.history_[-1].objective == max(objectives)
    np.testing.assert_array_equal(best.counts_.emissions, winner.counts_.emissions)
    np.testing.assert_array_equal(best.decode(corpus), winner.decode(corpus))


def test_restarts_of_the_default_start_and_of_an_hdp_hmm():
    """The first restart is the plain fit of ``seed``, so the best of R is never worse by the algorithm's
    objective; an HDP-HMM restarts through its own fit (its sticks start afresh every run)."""
    corpus = CATEGORICAL[:200]
    plain = HMM(N_STATES, algorithm="em", n_iter=20, random_state=0).fit(corpus)
    best = HMM(N_STATES, algorithm="em", n_iter=20, random_state=0, n_init=3).fit(corpus)
    assert best.restart_objectives_[0] == plain.history_[-1].objective
    assert best.history_[-1].objective == max(best.restart_objectives_) >= plain.history_[-1].objective
    hdp_runs = [HDPHMM(8, algorithm="cvi", n_iter=3, random_state=seed).fit(corpus) for seed in (5, 6)]
    hdp = HDPHMM(8, algorithm="cvi", n_iter=3, random_state=5, n_init=2).fit(corpus)
    assert hdp.restart_objectives_ == [run.history_[-1].objective for run in hdp_runs]
    winner = hdp_runs[int(np.argmax(hdp.restart_objectives_))]
    assert hdp.sigma_ == winner.sigma_ and np.array_equal(hdp.counts_.trans, winner.counts_.trans)
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="n_init"):
            HMM(2, n_init=bad).fit(corpus)


def test_fit_command_takes_restarts(tmp_path, capsys):
    """``cvbayes fit --restarts R`` is ``n_init=R``: the saved model is the best of the R runs."""
    from cvbayes.cli import main
    from cvbayes.tagging import load_corpus
    model_file = tmp_path / "m.npz"
    options = ["fit", "brown-embedded", "--tagset", "universal", "--sentences", "60", "--algorithm", "vb",
               "--iterations", "3", "--seed", "2", "--json", "-o", str(model_file)]
    main(options + ["--restarts", "2"])
    capsys.readouterr()
    saved = HMM.load(model_file)
    corpus = load_corpus("brown-embedded", tagset="universal", n_sentences=60)
    runs = [HMM(len(corpus.tagset), algorithm="vb", n_iter=3, random_state=seed).fit(corpus) for seed in (2, 3)]
    best = max(run.history_[-1].objective for run in runs)
    assert saved.history_[-1].objective == pytest.approx(best)
    with pytest.raises(SystemExit, match="restarts"):
        main(options + ["--restarts", "2", "--checkpoint", str(tmp_path / "c")])


def test_weighted_kmeans_finds_separated_clusters_from_every_seed_dense_and_sparse():
    """Five 1-D blobs 4 apart (the Gaussian planted HMM's means): greedy k-means++ and Lloyd steps put one
    centre in each from every seed, and a CSR copy of the points gives the same clustering."""
    from scipy import sparse

    from cvbayes.families.kmeans import weighted_kmeans

    points = (4.0 * np.repeat(np.arange(5), 200) + np.random.default_rng(0).standard_normal(1000))[:, None]
    for seed in range(10):
        centres, cluster, size = weighted_kmeans(points, np.ones(1000), 5, np.random.default_rng(seed))
        np.testing.assert_allclose(np.sort(centres[:, 0]), 4.0 * np.arange(5), atol=0.3)
        assert size.sum() == 1000
        _, sparse_cluster, _ = weighted_kmeans(sparse.csr_matrix(points), np.ones(1000), 5,
                                               np.random.default_rng(seed))
        np.testing.assert_array_equal(sparse_cluster, cluster)


def test_with_a_tag_dictionary_the_default_start_is_the_local_start():
    """A tag dictionary tells the states apart itself; word-type clusters would ignore the tags it allows."""
    corpus = CATEGORICAL[:200]
    dictionary = np.ones((50, N_STATES), dtype=bool)
    dictionary[:10, 1:] = False  # the first block's words may only take state 0
    fits = [HMM(N_STATES, tag_dictionary=dictionary, algorithm="cvi2", n_iter=3, random_state=1, init=init).fit(corpus)
            for init in ("params", "local")]
    np.testing.assert_array_equal(fits[0].emissionprob_, fits[1].emissionprob_)
    default, local = (HMM(N_STATES, algorithm="cvi2", n_iter=3, random_state=1, init=init).fit(corpus)
                      for init in ("params", "local"))
    assert not np.array_equal(default.emissionprob_, local.emissionprob_)

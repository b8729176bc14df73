"""The model protocol (cvbayes.models.base.BayesModel), checked on every model and every algorithm.

On tiny data each learner fits to finite objectives; its model saves and loads back to the same
predictions; a fit stopped after a few passes (the callback raises, as a KeyboardInterrupt would) and
run again with the same call resumes from its checkpoint and ends as the uninterrupted fit; bad
arguments are refused before any work; the scikit-learn conventions hold (``get_params``,
``set_params``, ``sklearn.base.clone``, the deprecated call form of before); and the files the models
wrote before the protocol still load.
"""
import json
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import pytest

import cvbayes
from cvbayes import BayesModel
from cvbayes.checkpoints import checkpoint_passes
from cvbayes.synthetic import random_hmm, sample_categorical_hmm

N_ITER = 4
STOP_AFTER = 2


class Interrupted(Exception):
    """What the callback raises to stop a fit after a pass."""


class Spec(NamedTuple):
    """One model of the contract: an unfitted model of given parameters, its training data, what it
    predicts (to compare fits), the options some algorithms need, and the algorithms that do not take
    checkpoints."""

    make: Callable
    data: Callable
    predict: Callable
    options: dict
    no_checkpoint: tuple = ()


def _sequences():
    params = random_hmm(3, 6, np.random.default_rng(0))
    return sample_categorical_hmm(*params, np.full(12, 8), seed=1)


def _counts():
    """12 sequences of 8 two-dimensional counts (Poisson emissions)."""
    rng = np.random.default_rng(7)
    return [rng.poisson(rng.choice([1.0, 6.0], size=(1, 2)), size=(8, 2)).astype(float) for _ in range(12)]


def _vectors():
    """12 sequences of 8 correlated two-dimensional vectors (full-covariance Gaussian emissions)."""
    rng = np.random.default_rng(8)
    return [rng.multivariate_normal(rng.choice([-2.0, 2.0], size=2), [[1.0, 0.5], [0.5, 1.0]], size=8)
            for _ in range(12)]


def _hmm_predictions(model, corpus):
    return model.predict(corpus), model.score_sequences(corpus)


def _documents():
    rng = np.random.default_rng(2)
    topics = rng.dirichlet(np.full(12, 0.2), size=3)
    return np.array([rng.multinomial(20, rng.dirichlet(np.full(3, 0.5)) @ topics) for _ in range(15)])


def _lda_predictions(model, X):
    return model.components_, model.transform(X)


def _sentences():
    rng = np.random.default_rng(5)
    return [list(rng.choice(["the", "dog", "saw", "a", "cat"], size=rng.integers(2, 5))) for _ in range(8)]


def _pcfg_predictions(model, X):
    return model.score_sentences(X), [str(tree) for tree in model.parse(X)]


def _tags():
    rng = np.random.default_rng(3)
    return [list(rng.choice(["DET", "NOUN", "VERB", "ADJ"], size=rng.integers(1, 5))) for _ in range(10)]


def _dmv_predictions(model, X):
    return model.score(X), model.parse(X)


def _treebank():
    from cvbayes.data.trees import parse_trees
    return parse_trees("(S (NP (D a) (N b)) (V c))\n(S (NP (N b)) (V c) (NP (D a) (N b)))\n(NP (D a) (N c))\n"
                       "(S (NP (N c)) (V a))\n")


def _pcfg_la_predictions(model, trees):
    return [str(tree) for tree in model.parse([tree.leaves() for tree in trees], pruning=None)]


def _pairs():
    from cvbayes.models.alignment import ParallelCorpus
    rng = np.random.default_rng(9)
    lexicon = {f"s{i}": f"t{i}" for i in range(5)}
    source = [list(rng.choice(list(lexicon), size=rng.integers(1, 4))) for _ in range(12)]
    return ParallelCorpus.from_tokens(source, [[lexicon[w] for w in words[::-1]] for words in source])


def _aligner_predictions(model, X):
    return [sorted(links) for links in model.links()], model.translation_table(), model.pair_log_likelihoods()


def _frames():
    from cvbayes.synthetic import sample_acoustic_units
    return sample_acoustic_units(6, n_units=3, n_states=2, n_dims=2, mean_frames=20, seed=4)[0]


def _units_predictions(model, X):
    return model.predict(X), model.score_samples(X)


def _utterances():
    rng = np.random.default_rng(6)
    return [list("".join(rng.choice(["ab", "cd", "abc", "d"], size=rng.integers(1, 4)))) for _ in range(10)]


def _adaptor_predictions(model, X):
    return model.segment(X), model.score(X)


def _noisy_words_predictions(model, X):
    return model.segment(X), model.emission_, model.insertion_


def _edit_pairs():
    from cvbayes.chains.edits import sample_surface
    rng = np.random.default_rng(10)
    table = rng.dirichlet(np.ones(4), size=7)
    table[:3, 1:] += 2.0 * np.eye(3)
    table /= table.sum(axis=1, keepdims=True)
    words = [rng.integers(0, 3, size=rng.integers(1, 5)) for _ in range(12)]
    return [(x, sample_surface(rng, table, x, 1)[0]) for x in words]


def _channel_predictions(model, X):
    return model.pair_log_likelihoods(X), model.align(X), model.emission_


SPECS = {
    "hmm": Spec(lambda **p: cvbayes.HMM(3, **p), _sequences, _hmm_predictions,
                {"svi": {"batch_size": 5}, "scvi": {"batch_size": 5}, "cvi3": {"subchain_length": 3}},
                no_checkpoint=("cvi2-sharded",)),
    "hmm-poisson": Spec(lambda **p: cvbayes.HMM(3, emission="poisson", **p), _counts, _hmm_predictions,
                        {"svi": {"batch_size": 5}, "scvi": {"batch_size": 5}, "cvi3": {"subchain_length": 3}},
                        no_checkpoint=("cvi2-sharded",)),
    "hmm-gaussian-full": Spec(lambda **p: cvbayes.HMM(3, emission="gaussian-full", **p), _vectors, _hmm_predictions,
                              {"svi": {"batch_size": 5}, "scvi": {"batch_size": 5}, "cvi3": {"subchain_length": 3}},
                              no_checkpoint=("cvi2-sharded",)),
    "hdp-hmm": Spec(lambda **p: cvbayes.HDPHMM(4, burn_in=1, **p), _sequences, _hmm_predictions,
                    {"scvi": {"batch_size": 5}, "svi-p": {"batch_size": 5}}),
    "lda": Spec(lambda **p: cvbayes.LDA(3, alpha=0.3, eta=0.1, **p), _documents, _lda_predictions,
                {"online-vb": {"batch_size": 4}, "scvb0": {"batch_size": 4}}, no_checkpoint=("cvb0-sharded",)),
    "pcfg": Spec(lambda **p: cvbayes.PCFG(n_nonterminals=2, alpha=0.5, **p), _sentences, _pcfg_predictions,
                 {"scvi": {"batch_size": 3}}, no_checkpoint=("cvi-sharded",)),
    "dmv": Spec(lambda **p: cvbayes.DMV(alpha=0.5, **p), _tags, _dmv_predictions, {"scvi": {"batch_size": 3}},
                no_checkpoint=("cvi-sharded",)),
    "pcfg-la": Spec(lambda **p: cvbayes.PCFGLA(n_subtypes=2, alpha=0.5, min_count=1, **p), _treebank,
                    _pcfg_la_predictions, {}),
    "aligner": Spec(lambda **p: cvbayes.Aligner("hmm", **p), _pairs, _aligner_predictions,
                    {"svi": {"batch_size": 5}, "scvi": {"batch_size": 5}}),
    "adaptor-grammar": Spec(lambda **p: cvbayes.AdaptorGrammar("unigram", **p), _utterances, _adaptor_predictions, {}),
    "units": Spec(lambda **p: cvbayes.AcousticUnits(n_units=4, n_states=2, n_components=1, batch_size=3, **p), _frames,
                  _units_predictions, {}),
    "edit-channel": Spec(lambda **p: cvbayes.EditChannel(n_underlying=3, n_surface=3, **p), _edit_pairs,
                         _channel_predictions, {}),
    "noisy-words": Spec(lambda **p: cvbayes.NoisyWords(init_iter=2, truncation=10, **p), _utterances,
                        _noisy_words_predictions, {}),
}

CASES = [(name, algorithm) for name, spec in SPECS.items() for algorithm in spec.make().ALGORITHMS]


def _model(name, algorithm, **params):
    spec = SPECS[name]
    return spec.make(**{"algorithm": algorithm, "n_iter": N_ITER, "random_state": 1, **spec.options.get(algorithm, {}),
                        **params})


def _same(first, second):
    """Predictions equal to the bit: arrays, numbers, lists and tuples of them."""
    if isinstance(first, (list, tuple)):
        return len(first) == len(second) and all(_same(a, b) for a, b in zip(first, second))
    if isinstance(first, np.ndarray) or np.isscalar(first):
        return np.array_equal(first, second, equal_nan=np.asarray(first).dtype.kind == "f")
    return first == second


@pytest.mark.parametrize("name,algorithm", CASES)
def test_fit_save_load_and_resume(name, algorithm, tmp_path):
    spec = SPECS[name]
    X = spec.data()
    model = _model(name, algorithm).fit(X)
    assert isinstance(model, BayesModel)
    objectives = [record.objective for record in model.history_]
    # N_ITER passes (the aligner's: N_ITER of IBM1, then N_ITER of the HMM)
    assert len(objectives) in (N_ITER, 2 * N_ITER) and np.all(np.isfinite(objectives))
    assert model.algorithm_ == algorithm and model.objective_name_
    predictions = spec.predict(model, X)

    model.save(tmp_path / "model.npz")
    loaded = type(model).load(tmp_path / "model.npz")
    assert type(loaded) is type(model) and loaded.algorithm_ == algorithm
    assert [record.objective for record in loaded.history_] == objectives
    assert _same(spec.predict(loaded, X), predictions)

    path = tmp_path / "run.ckpt"

    def stop(fitted, iteration):
        if iteration == STOP_AFTER:
            raise Interrupted

    if algorithm in spec.no_checkpoint:
        with pytest.raises(ValueError, match="checkpoint"):
            _model(name, algorithm).fit(X, checkpoint=path)
        return
    with pytest.raises(Interrupted):
        _model(name, algorithm).fit(X, checkpoint=path, callback=stop)
    assert checkpoint_passes(path) == (STOP_AFTER, False)
    resumed = _model(name, algorithm).fit(X, checkpoint=path)
    assert resumed.resumed_from_ == STOP_AFTER
    assert [record.objective for record in resumed.history_] == objectives
    assert _same(spec.predict(resumed, X), predictions)
    assert checkpoint_passes(path) == (len(objectives), True)


@pytest.mark.parametrize("name", SPECS)
def test_bad_arguments_are_refused_before_any_work(name, tmp_path):
    spec = SPECS[name]
    X = spec.data()
    algorithm = next(iter(spec.make().ALGORITHMS))
    for params in ({"algorithm": "no-such-learner"}, {"n_iter": 0}, {"n_init": 0}, {"n_iter": 2.5}):
        with pytest.raises(ValueError):
            spec.make(**{"algorithm": algorithm, **params})
    path = tmp_path / "run.ckpt"
    for params, arguments, error in (({"random_state": "seed"}, {}, ValueError),
                                     ({"n_init": 2}, {"checkpoint": path}, ValueError),
                                     ({}, {"checkpoint": path, "checkpoint_every": 0}, ValueError),
                                     ({}, {"callback": "not callable"}, TypeError),
                                     ({}, {"no_such_argument": 1}, TypeError)):
        model = _model(name, algorithm, **params)
        with pytest.raises(error):
            model.fit(X, **arguments)
        assert not hasattr(model, model.FITTED) and not hasattr(model, "history_")
        assert not path.exists()
    with pytest.raises(ValueError, match="unknown parameters"):
        _model(name, algorithm).set_params(no_such_parameter=1)


@pytest.mark.parametrize("name", SPECS)
def test_scikit_learn_conventions(name):
    sklearn_base = pytest.importorskip("sklearn.base")
    spec = SPECS[name]
    X = spec.data()
    algorithm = next(iter(spec.make().ALGORITHMS))
    model = _model(name, algorithm)
    params = model.get_params()
    assert {"algorithm", "n_iter", "n_init", "random_state"} <= set(params)
    twin = sklearn_base.clone(model)
    assert type(twin) is type(model) and twin.get_params().keys() == params.keys()
    assert _same(spec.predict(twin.fit(X), X), spec.predict(model.fit(X), X))
    assert model.set_params(n_iter=2) is model and model.get_params()["n_iter"] == 2
    # the call form of before: the constructor's arguments in fit, the seed as ``seed``
    old = spec.make(**spec.options.get(algorithm, {}))
    with pytest.warns(DeprecationWarning, match="random_state"):
        old.fit(X, algorithm=algorithm, n_iter=N_ITER, seed=1)
    assert _same(spec.predict(old, X), spec.predict(_model(name, algorithm).fit(X), X))


def test_model_files_written_before_the_protocol_load_to_their_predictions():
    """tests/models/data/models_before_the_protocol: files the models of commit 5dc04f4 (before they were
    BayesModels) and the acoustic unit model and the adaptor grammar of 655aace wrote after fitting these
    tiny data, with what they predicted then (expected.json), read by today's ``load``."""
    from cvbayes.data.trees import parse_trees

    folder = Path(__file__).parent / "data" / "models_before_the_protocol"
    expected = json.loads((folder / "expected.json").read_text())
    rng = np.random.default_rng(0)
    sequences = [rng.integers(0, 5, size=6) for _ in range(6)]
    X = rng.integers(0, 4, size=(6, 8))
    hmm = cvbayes.HMM.load(folder / "hmm.npz")
    assert hmm.score(sequences) == pytest.approx(expected["hmm"]["score"], rel=1e-12)
    assert np.concatenate(hmm.predict(sequences)).tolist() == expected["hmm"]["states"]
    hdp = cvbayes.HMM.load(folder / "hdp_hmm.npz")
    assert isinstance(hdp, cvbayes.HDPHMM)
    assert hdp.score(sequences) == pytest.approx(expected["hdp_hmm"]["score"], rel=1e-12)
    np.testing.assert_allclose(cvbayes.LDA.load(folder / "lda.npz").transform(X), expected["lda"]["transform"],
                               rtol=1e-12)
    sentences = [["the", "dog", "ran"], ["a", "cat", "saw", "the", "dog"], ["the", "cat"]]
    assert cvbayes.PCFG.load(folder / "pcfg.npz").score(sentences) == pytest.approx(expected["pcfg"]["score"],
                                                                                   rel=1e-12)
    tags = [["DET", "NOUN", "VERB"], ["NOUN", "VERB"], ["DET", "ADJ", "NOUN"]]
    dmv = cvbayes.DMV.load(folder / "dmv.npz")
    assert dmv.score(tags) == pytest.approx(expected["dmv"]["score"], rel=1e-12)
    assert [heads.tolist() for heads in dmv.parse(tags)] == expected["dmv"]["heads"]
    trees = parse_trees("(S (NP (D a) (N b)) (V c))\n(S (NP (N c)) (V a))\n")
    la = cvbayes.PCFGLA.load(folder / "pcfg_la.npz")
    assert [str(tree) for tree in la.parse([tree.leaves() for tree in trees], pruning=None)] == \
        expected["pcfg_la"]["parses"]
    from cvbayes.synthetic import sample_acoustic_units
    frames = sample_acoustic_units(4, n_units=2, n_states=2, n_dims=2, mean_frames=10, seed=0)[0]
    units = cvbayes.AcousticUnits.load(folder / "units.npz")
    assert units.score(frames) == pytest.approx(expected["units"]["score"], rel=1e-12)
    assert np.concatenate(units.predict(frames)).tolist() == expected["units"]["units"]
    # AdaptorGrammar("unigram", a=0.2, b=1.5, estimate_hyperparameters=True, algorithm="vb", n_iter=3,
    # random_state=2) fitted to ("ab", "cd", "cdab", "abcdab", "ab", "cd", "abab") * 3
    utterances = [list("abcd"), list("cdcdab"), list("ba")]
    grammar = cvbayes.AdaptorGrammar.load(folder / "adaptor_grammar.npz")
    assert [["".join(word) for word in words] for words in grammar.segment(utterances)] == \
        expected["adaptor_grammar"]["segment"]
    assert grammar.score(utterances) == pytest.approx(expected["adaptor_grammar"]["score"], rel=1e-12)

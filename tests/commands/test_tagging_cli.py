"""The PoS pipeline end to end: save/load, the fit/tag/evaluate/compare commands, the experiments."""
import json
from importlib import resources

import numpy as np
import pytest

from cvbayes import HDPHMM, HMM
from cvbayes.cli import main
from cvbayes.data import load_embedded_brown
from cvbayes.families import Gaussian
from cvbayes.models.hmm import DEFAULT_PRIORS
from cvbayes.tagging import compact, fit_tagger, random_baseline, tag_dictionary

SLICE = str(resources.files("cvbayes.data") / "resources" / "brown_slice.txt.gz")


@pytest.fixture(scope="module")
def small_brown():
    return load_embedded_brown(tagset="universal", n_sentences=150)


def test_save_load_round_trip(tmp_path, small_brown):
    dictionary = tag_dictionary(small_brown, "complete")
    model = HMM(len(small_brown.tagset), alpha=0.3, beta=0.2, tag_dictionary=dictionary)
    model.set_params(algorithm="cvi2", n_iter=3, random_state=1).fit(small_brown)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = HMM.load(path)
    np.testing.assert_array_equal(loaded.decode(small_brown), model.decode(small_brown))
    assert loaded.score(small_brown) == pytest.approx(model.score(small_brown), rel=1e-12)
    np.testing.assert_allclose(loaded.transmat_, model.transmat_)
    assert loaded.vocabulary_ == small_brown.vocabulary and loaded.tagset_ == small_brown.tagset
    assert [r.objective for r in loaded.history_] == [r.objective for r in model.history_]


def test_save_load_gaussian_and_em(tmp_path):
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(30, 2)) + (i % 2) * 3 for i in range(6)]
    for algorithm in ("em", "vb"):
        model = HMM(2, emission=Gaussian(kappa=0.1), algorithm=algorithm, n_iter=3).fit(X)
        model.save(tmp_path / "g.npz")
        loaded = HMM.load(tmp_path / "g.npz")
        assert loaded.score(X) == pytest.approx(model.score(X), rel=1e-12)


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a cvbayes model file"):
        HMM.load(bad)


def test_callback_sees_current_model_and_is_not_timed(small_brown):
    seen = []
    model = HMM(len(small_brown.tagset), alpha=0.3, beta=0.2)
    model.set_params(algorithm="vb", n_iter=3)
    model.fit(small_brown, callback=lambda m, it: seen.append((it, m.score(small_brown))))
    assert [it for it, _ in seen] == [0, 1, 2]
    assert seen[-1][1] == pytest.approx(model.score(small_brown))


def test_fit_tagger_curve_and_compact(small_brown):
    full_dictionary = tag_dictionary(small_brown, "complete")
    corpus, dictionary = compact(small_brown[:50], full_dictionary)
    assert len(corpus.vocabulary) == np.unique(small_brown[:50].observations).size
    assert corpus.vocabulary.decode(corpus.observations) == small_brown.vocabulary.decode(
        small_brown[:50].observations)
    _, states, result = fit_tagger(corpus, "cvi1", 0.1, 0.1, 4, 0, dictionary=dictionary,
                                   n_states=len(small_brown.tagset), checkpoints=(1, 4))
    assert [p["iteration"] for p in result["curve"]] == [1, 4]
    assert result["curve"][-1]["accuracy"] == pytest.approx(result["accuracy"])
    assert np.all(dictionary[corpus.observations, states])
    assert 0.0 < random_baseline(corpus, dictionary) <= 1.0


def test_random_baseline_by_hand():
    corpus = load_embedded_brown(n_sentences=1)
    dictionary = np.zeros((len(corpus.vocabulary), len(corpus.tagset)), dtype=bool)
    dictionary[corpus.observations, corpus.gold] = True
    assert random_baseline(corpus, dictionary) == 1.0
    dictionary[corpus.observations[0], :2] = True  # the first word now allows one or two extra tags
    allowed = dictionary[corpus.observations[0]].sum()
    # every token of that word type shares the row
    same = np.count_nonzero(corpus.observations == corpus.observations[0])
    expected = (corpus.n_tokens - same + same / allowed) / corpus.n_tokens
    assert random_baseline(corpus, dictionary) == pytest.approx(expected)


def test_fit_tag_evaluate_commands(tmp_path, capsys):
    model = tmp_path / "m.npz"
    main(["fit", "brown-embedded", "--tagset", "universal", "--sentences", "120", "--dictionary", "complete",
          "--algorithm", "cvi2", "--iterations", "3", "-o", str(model), "--json"])
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["states"] == 12 and 0.5 < fitted["accuracy"] <= 1.0
    out = tmp_path / "tagged.conllu"
    main(["tag", str(model), "brown-embedded", "--output-format", "conllu", "-o", str(out)])
    lines = [line for line in out.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == load_embedded_brown().n_tokens
    assert {line.split("\t")[3] for line in lines} <= set(HMM.load(model).tagset_.symbols)
    main(["evaluate", str(model), "brown-embedded", "--tagset", "universal", "--json"])
    scores = json.loads(capsys.readouterr().out)
    assert 0.5 < scores["accuracy"] <= 1.0
    assert {"many_to_one_cv", "one_to_one", "variation_of_information", "v_measure"} <= set(scores)


def test_fit_command_uses_the_learners_defaults_unless_given(tmp_path, capsys):
    """Without --alpha/--beta the model is HMM's with the learner's DEFAULT_PRIORS; given ones override."""
    common = ["brown-embedded", "--tagset", "universal", "--sentences", "40", "--iterations", "1", "--quiet",
              "--json", "--algorithm", "vb"]
    main(["fit", *common, "-o", str(tmp_path / "default.npz")])
    main(["fit", *common, "--beta", "0.37", "-o", str(tmp_path / "given.npz")])
    capsys.readouterr()
    default, given = HMM.load(tmp_path / "default.npz"), HMM.load(tmp_path / "given.npz")
    assert (default.alpha, default.beta) == DEFAULT_PRIORS["vb"]
    assert (given.alpha, given.beta) == (DEFAULT_PRIORS["vb"][0], 0.37)
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    alpha, beta = DEFAULT_PRIORS["cvi2"]
    assert f"cvi2 {alpha:g}/{beta:g}" in help_text and "cvbayes experiment defaults" in help_text


def test_compare_json(capsys):
    main(["compare", "--sentences", "60", "--iterations", "2", "--cgs-iterations", "2", "--json",
          "--algorithms", "em,cvi2,cgs"])
    report = json.loads(capsys.readouterr().out)
    assert [row["algorithm"] for row in report["results"]] == ["em", "cvi2", "cgs"]
    assert all(0.0 < row["accuracy"] <= 1.0 for row in report["results"])
    assert report["ambiguity"]["tags_per_token"] >= 1.0


def test_malformed_corpus_is_a_clean_error(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("The/at dog/nn\nbarks/vbz loudly\n")
    with pytest.raises(SystemExit, match=r"bad\.txt.*line 2"):
        main(["fit", str(bad), "-o", str(tmp_path / "m.npz"), "--quiet"])


@pytest.mark.parametrize("command", ["compare", "fit", "tag", "evaluate", "experiment", "data"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "usage: cvbayes " + command in capsys.readouterr().out


@pytest.mark.slow
def test_experiments_write_results(tmp_path):
    common = ["--out", str(tmp_path), "--corpus", SLICE, "--iterations", "2", "--cgs-iterations", "2",
              "--seeds", "1", "--algorithms", "em,cvi2,cgs"]
    main(["experiment", "grid-semi", "--grid", "0.1", "1.0", *common])
    chosen = json.loads((tmp_path / "grid_semi_brown" / "results.json").read_text())["chosen"]
    assert set(chosen) == {"em", "cvi2", "cgs"}
    main(["experiment", "fig3.10", "--sizes", "100", "all", *common])
    main(["experiment", "fig3.11", *common])
    main(["experiment", "fig3.12", "--size", "100", "--d-values", "1", "3", *common])
    main(["experiment", "fig3.13", "--tagset", "universal", "--sizes", "100", *common])
    for folder in ("fig3_10", "fig3_11", "fig3_12", "fig3_13_universal"):
        results = json.loads((tmp_path / folder / "results.json").read_text())
        assert results["command"].startswith("cvbayes")
        table = (tmp_path / folder / "table.md").read_text()
        assert "thesis" in table or folder == "fig3_11"
        assert list((tmp_path / folder).glob("*.png"))
    rows = json.loads((tmp_path / "fig3_10" / "results.json").read_text())["rows"]
    assert [row["size"] for row in rows] == ["0.1K", "All"]


@pytest.mark.slow
def test_fit_command_runs_the_stochastic_learners(tmp_path, capsys):
    for algorithm in ("scvi", "svi", "cvi3"):
        main(["fit", "brown-embedded", "--tagset", "universal", "--sentences", "200", "--algorithm", algorithm,
              "--iterations", "2", "--batch-size", "20", "--subchain-length", "8", "-o",
              str(tmp_path / f"{algorithm}.npz"), "--quiet", "--json"])
        report = json.loads(capsys.readouterr().out)
        assert report["algorithm"] == algorithm and 0.0 <= report["many_to_one"] <= 1.0
        assert HMM.load(tmp_path / f"{algorithm}.npz").algorithm_ == algorithm


def test_fit_command_trains_an_hdp_hmm_that_tag_and_evaluate_load(tmp_path, capsys):
    model = tmp_path / "hdp.npz"
    main(["fit", "brown-embedded", "--tagset", "universal", "--sentences", "100", "--model", "hdp-hmm",
          "--states", "15", "--gamma", "5", "--sigma", "3", "--iterations", "3", "-o", str(model), "--quiet", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["algorithm"] == "cvi" and 1 <= report["effective_states"] <= 15
    # learned after the burn-in, half the passes by default (issue 34: not the start values of a longer burn-in)
    assert report["burn_in"] == 1 and report["hyperparameters_learned"] and report["gamma"] != 5.0
    loaded = HMM.load(model)
    assert isinstance(loaded, HDPHMM) and loaded.n_states == 15
    main(["evaluate", str(model), "brown-embedded", "--tagset", "universal", "--json"])
    assert 0.0 < json.loads(capsys.readouterr().out)["many_to_one"] <= 1.0
    with pytest.raises(SystemExit, match="takes --algorithm cvi, scvi, svi-p"):
        main(["fit", "brown-embedded", "--model", "hdp-hmm", "--algorithm", "cvi2", "-o", str(model)])
    with pytest.raises(SystemExit, match="without a tag dictionary"):
        main(["fit", "brown-embedded", "--model", "hdp-hmm", "--dictionary", "complete", "-o", str(model)])


@pytest.mark.slow
def test_text_prediction_experiments_write_results(tmp_path, monkeypatch):
    """fig3.15 and fig3.17 end to end on a tiny PTB-like cache made here (never PTB text)."""
    folder = tmp_path / "cache" / "ptb"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ate", "N", "bones"]
    for split, n in (("train", 60), ("valid", 5), ("test", 10)):
        lines = [" ".join(rng.choice(words, size=rng.integers(3, 9))) for _ in range(n)]
        (folder / f"ptb.{split}.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results"
    main(["experiment", "fig3.17", "--out", str(out), "--steps", "4", "--states", "2"])
    main(["experiment", "fig3.15", "--out", str(out), "--passes", "1", "--iterations", "2", "--states", "2"])
    for name, n_runs in (("fig3_17", 12), ("fig3_15", 10)):
        results = json.loads((out / name / "results.json").read_text())
        assert len(results["runs"]) == n_runs
        assert all(run["curve"] and run["final"] < 0 for run in results["runs"])
        table = (out / name / "table.md").read_text()
        assert "Thesis" in table and "PTB" in table
        assert (out / name / f"{name}.png").exists()
    references = json.loads((out / "fig3_15" / "results.json").read_text())["references"]
    assert [r["algorithm"] for r in references] == ["vb", "cvi2"]

"""The HDP-HMM experiments of thesis §5.4.4 and §5.5.3 (fig5.4, fig5.6, fig5.9, fig5.10) end to end on tiny data."""
import json

import numpy as np
import pytest

from cvbayes import HMM
from cvbayes.cli import main
from cvbayes.data import Corpus, Vocabulary
from cvbayes.experiments import hdp
from cvbayes.experiments.occupancy import label as method_label

WORDS = "the a cat dog sat ran on under mat rug and slowly quickly".split()


def _sentences(rng, n_sentences, low=3, high=8):
    return [[WORDS[i] for i in rng.integers(0, len(WORDS), size=rng.integers(low, high))]
            for _ in range(n_sentences)]


def _corpus(sentences, vocabulary):
    words = [w for s in sentences for w in s]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    return Corpus(vocabulary.encode(words), offsets, vocabulary=vocabulary, source="fake")


@pytest.fixture
def fake_data(monkeypatch):
    rng = np.random.default_rng(0)
    text = "ALICE'S ADVENTURES\n\n  " + " ".join(" ".join(s) + "." for s in _sentences(rng, 200))
    monkeypatch.setattr(hdp, "_alice_text", lambda: text)
    vocabulary = Vocabulary(WORDS)

    def brown(n_sentences):
        return _corpus(_sentences(np.random.default_rng(1), n_sentences), vocabulary)

    monkeypatch.setattr(hdp, "_load_brown", brown)
    train = _corpus(_sentences(np.random.default_rng(2), 60), vocabulary)
    test = _corpus(_sentences(np.random.default_rng(3), 10), vocabulary)
    monkeypatch.setattr(hdp, "_load_ptb", lambda: (train, test))
    return text


def _outputs(folder, pngs):
    assert (folder / "results.json").is_file() and (folder / "table.md").is_file()
    for png in pngs:
        assert (folder / png).stat().st_size > 1000, png
    return json.loads((folder / "results.json").read_text()), (folder / "table.md").read_text()


def test_letters_keep_26_letters_and_single_spaces():
    assert hdp.letters("  Down the Rabbit-Hole\n\nAlice's `sister', 1865!  ") == "down the rabbithole alices sister"


def test_alice_corpus_layout(fake_data):
    corpus, info = hdp.alice_corpus(4, 25)
    assert corpus.n_sequences == 4 and corpus.n_tokens == 100 and len(corpus.vocabulary) == 27
    assert "".join(corpus.vocabulary.decode(corpus.observations)) == hdp.letters(fake_data)[:100]
    with pytest.raises(ValueError, match="letters"):
        hdp.alice_corpus(1000, 1000)


def test_first_pass_matches_the_finite_hmm_then_switches_priors():
    """With the finite HMM's 0.1 pseudo-counts in pass 1 the HDP-HMM's first sweep is CVI-2's exactly;
    afterwards the transition prior is sigma G[pi] and the emission prior the model's own per-word value."""
    rng = np.random.default_rng(5)
    sequences = [rng.integers(0, 6, size=12) for _ in range(15)]
    finite = HMM(4, 0.1, 0.1, algorithm="cvi2", n_iter=1, random_state=3, init="local").fit(sequences)
    seen = {}

    def look(model, iteration):
        seen["prior"] = model.transition_prior()
        seen["word"] = hdp.word_prior(model)

    # Dir(beta tau) with tau uniform over the 6 words: 0.01 a word after the first pass
    model = hdp.HDPHMM(4, gamma=10, sigma=5, beta=0.06, learn_emission_prior=True, burn_in=5,
                       first_alpha=0.1, first_word_prior=0.1)
    model.set_params(algorithm="cvi", n_iter=1, random_state=3, init="local").fit(sequences, callback=look)
    for ours, theirs in zip(model.counts_, finite.counts_):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    assert seen["word"] == pytest.approx((0.01, 0.01, 0.01))
    assert seen["prior"][1] == pytest.approx(5.0)  # sigma, not K x 0.1


def _check_occupancy_outputs(results, table, states, methods):
    assert results["states"] == states and results["methods"] == methods
    for key in map(str, states):
        summary = results["summaries"][key]
        assert f"**K = {key}**" in table
        for m in methods:
            s = summary["methods"][m]
            row = next(line for line in table.splitlines() if line.startswith(f"| {method_label(m)} |")
                       and f"| {hdp._e(s['worst'])} |" in line)
            assert ("| yes |" in row) == (s["worst"] < 1e-3)
        for point in summary["curve"]:
            assert set(point["mean"]) == set(methods)
    for run in results["runs"]:
        iterations = [e["iteration"] for e in run["evaluations"]]
        assert iterations == [1, 2, 4, 5]
        for e in run["evaluations"]:
            assert set(e["errors"]) == set(methods) and 0 <= e["mean_exact"] <= 1


def test_fig_5_4_end_to_end(fake_data, tmp_path):
    main(["experiment", "fig5.4", "--out", str(tmp_path), "--k-values", "3", "4", "--hdp-iterations", "5",
          "--evaluate-every", "2", "--sequences", "6", "--length", "20", "--seeds", "2"])
    results, table = _outputs(tmp_path / "fig5_4", ["fig5_4.png", "fig5_5.png"])
    _check_occupancy_outputs(results, table, [3, 4], list(hdp.METHODS))
    assert len(results["runs"]) == 4 and results["seeds"] == 2
    assert set(results["heatmaps"]) == {"3", "4"}
    assert np.array(results["heatmaps"]["4"]["last"]).shape == (4, 4)
    assert "Fig. 5.5" in table and "less than 0.001" in table and "5 runs" in table
    assert results["runs"][0]["word_prior"] == pytest.approx(1 / 27)


def test_fig_5_6_end_to_end_says_the_data_differ(fake_data, tmp_path):
    main(["experiment", "fig5.6", "--out", str(tmp_path), "--k-values", "3", "--hdp-iterations", "5",
          "--evaluate-every", "2", "--hdp-sentences", "12"])
    results, table = _outputs(tmp_path / "fig5_6", ["fig5_6.png", "fig5_6_heatmaps.png"])
    _check_occupancy_outputs(results, table, [3], list(hdp.METHODS))
    assert results["data"]["sentences"] == 12
    assert "not WSJ" in table and "Brown instead of WSJ" in table


def test_fig_5_9_end_to_end(fake_data, tmp_path):
    main(["experiment", "fig5.9", "--out", str(tmp_path), "--hdp-sizes", "20", "all", "--states", "3",
          "--hdp-iterations", "6", "--evaluate-every", "3", "--burn-in", "2", "--hdp-models", "hmm", "hdp", "hdp-beta", "hmm-beta"])
    results, table = _outputs(tmp_path / "fig5_9", ["fig5_9.png"])
    assert results["sizes"] == ["20", "all"] and results["burn_in"] == 2
    assert len(results["runs"]) == 8
    for run in results["runs"]:
        assert [p["iteration"] for p in run["curve"]] == [1, 3, 6]
        assert run["final"] == run["curve"][-1]["loglik"] < 0
    hdp_runs = [r for r in results["runs"] if r["model"] in ("hdp", "hdp-beta")]
    for run in hdp_runs:
        assert len(run["hyper_history"]) == 6 and run["gamma"] > 0 and run["sigma"] > 0 and run["beta"] > 0
        # gamma and sigma wait for the burn-in
        assert run["hyper_history"][0]["gamma"] == pytest.approx(hdp.PTB_GAMMA)
        assert run["hyper_history"][1]["sigma"] == pytest.approx(hdp.PTB_SIGMA)
    n_words = len(hdp._load_ptb()[0].vocabulary)
    first = {r["model"]: r["curve"][0] for r in hdp_runs}
    assert first["hdp"]["beta"] == pytest.approx(hdp.PTB_BETA)
    assert first["hdp-beta"]["beta"] == pytest.approx(0.1 * n_words)
    for size in ("20", "all"):
        finite = next(r for r in results["runs"] if r["size"] == size and r["model"] == "hmm")
        for kind in ("hmm", "hdp", "hdp-beta", "hmm-beta"):
            run = next(r for r in results["runs"] if r["size"] == size and r["model"] == kind)
            row = next(line for line in table.splitlines()
                       if line.startswith(f"| {size} |") and f"| {hdp.BATCH_MODELS[kind]} |" in line)
            assert f"| {run['final']:.4f} |" in row
            if kind != "hmm":
                assert f"{run['final'] - finite['final']:+.4f}" in row
                assert ("| yes |" in row) == (run["final"] > finite["final"])
            if kind.startswith("hdp"):
                assert f"{run['gamma']:.2f}" in row
    assert "Mikolov" in table and "thesis 200" in table


@pytest.mark.slow
def test_fig_5_10_end_to_end(fake_data, tmp_path):
    main(["experiment", "fig5.10", "--out", str(tmp_path), "--states", "3", "--passes", "1",
          "--hdp-models", "hmm", "hdp", "hdp-beta", "hmm-beta"])
    results, table = _outputs(tmp_path / "fig5_10", ["fig5_10.png"])
    assert len(results["runs"]) == 4 * len(hdp.FIG_5_10_GRID) and results["passes"] == 1
    n_words = len(hdp._load_ptb()[0].vocabulary)
    for run in results["runs"]:
        assert run["curve"] and run["curve"][-1]["steps"] == run["steps"] and run["final"] < 0
        expected = 0.1 if run["model"] in ("hmm", "hdp-beta") else hdp.PTB_BETA / n_words
        assert run["word_prior"] == pytest.approx(expected)
    for kappa, batch_size in hdp.FIG_5_10_GRID:
        base = next(r for r in results["runs"] if (r["kappa"], r["batch_size"], r["model"]) == (kappa, batch_size, "hmm"))
        for run in [r for r in results["runs"] if r["kappa"] == kappa and r["batch_size"] == batch_size]:
            row = next(line for line in table.splitlines() if line.startswith(f"| {kappa} | {batch_size} |")
                       and f"| {hdp.SCVI_LABELS[run['model']]} |" in line)
            assert f"| {run['final']:.4f} |" in row
            if run["model"] != "hmm":
                assert f"{run['final'] - base['final']:+.4f}" in row
            if run["model"].startswith("hdp"):
                assert f"{run['gamma']:.2f}" in row and f"({run['max_sigma']:.1f})" in row
    assert "1 pass(es) over the data a run" in table and "2 hours" in table

"""``cvbayes experiment defaults``: the choice rule, and the grid and the check end to end on small slices."""
import json

import pytest

from cvbayes.cli import main
from cvbayes.data import load_embedded_brown
from cvbayes.experiments import defaults
from cvbayes.models.hmm import DEFAULT_PRIORS


def _run(corpus, alpha, beta, m1, one):
    return {"algorithm": "vb", "corpus": corpus, "alpha": alpha, "beta": beta, "seed": 0,
            "many_to_one_cv": m1, "one_to_one": one, "states_used": 45}


def test_choose_takes_the_lowest_mean_rank_over_corpora_and_metrics():
    # (1, 0.01) is best on three of the four (corpus, metric) pairs; (0.1, 0.1) leads only ewt-dev's M-1
    runs = [_run("ewt-dev", 0.1, 0.1, 0.60, 0.40), _run("ewt-dev", 1.0, 0.01, 0.58, 0.45),
            _run("brown-dev", 0.1, 0.1, 0.50, 0.30), _run("brown-dev", 1.0, 0.01, 0.55, 0.35)]
    chosen = defaults.choose(runs, ["ewt-dev", "brown-dev"])["vb"]
    assert (chosen["alpha"], chosen["beta"], chosen["mean_rank"]) == (1.0, 0.01, 1.25)


def test_choose_breaks_ties_by_mean_m1_then_keeps_the_old_default():
    # equal mean rank (1.5 each): the higher mean M-1 wins
    runs = [_run("ewt-dev", 0.1, 0.1, 0.60, 0.30), _run("ewt-dev", 0.01, 0.001, 0.50, 0.40),
            _run("brown-dev", 0.1, 0.1, 0.40, 0.30), _run("brown-dev", 0.01, 0.001, 0.52, 0.40)]
    assert defaults.choose(runs, ["ewt-dev", "brown-dev"])["vb"]["alpha"] == 0.01
    # every score equal (EM's MLE at every point <= 1): the old default stays
    runs = [_run(c, a, b, 0.5, 0.3) for c in ("ewt-dev", "brown-dev") for a, b in ((0.01, 0.001), (0.1, 0.1))]
    chosen = defaults.choose(runs, ["ewt-dev", "brown-dev"])["vb"]
    assert (chosen["alpha"], chosen["beta"]) == defaults.OLD_DEFAULT


@pytest.mark.slow
def test_grid_and_check_write_results(tmp_path, monkeypatch, capsys):
    brown = load_embedded_brown(tagset="universal", n_sentences=60)
    slices = {"first": brown[:30], "second": brown[30:]}
    monkeypatch.setattr(defaults, "development_corpora", lambda: slices)
    monkeypatch.setattr(defaults, "held_out_corpora", lambda: slices)
    monkeypatch.setattr(defaults, "ALPHAS", (0.1, 1.0))
    monkeypatch.setattr(defaults, "BETAS", (0.01, 0.1))
    common = ["--algorithms", "em,cvi2", "--passes", "1", "--out", str(tmp_path), "--quiet", "--seed", "3",
              "--seeds", "1"]
    main(["experiment", "defaults", *common])
    grid = json.loads((tmp_path / "defaults" / "results.json").read_text())
    assert len(grid["runs"]) == 2 * 2 * 4 and {r["seed"] for r in grid["runs"]} == {3}
    assert set(grid["chosen"]) == {"em", "cvi2"} and (tmp_path / "defaults" / "defaults_grid.png").is_file()
    main(["experiment", "defaults", "--check", *common])
    check = json.loads((tmp_path / "defaults_check" / "results.json").read_text())
    new = [r for r in check["runs"] if r["defaults"] == "new" and r["algorithm"] == "cvi2"]
    assert {(r["alpha"], r["beta"]) for r in new} == {DEFAULT_PRIORS["cvi2"]}
    assert "| cvi2 | new |" in capsys.readouterr().out
    assert (tmp_path / "defaults_check" / "defaults_check.png").is_file()

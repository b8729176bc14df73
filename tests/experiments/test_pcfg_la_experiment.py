"""Fig. 4.2's protocol on a tiny treebank: the seeds it runs, the run each selection keeps, what it writes."""
import json

import pytest

from cvbayes.data.trees import parse_trees
from cvbayes.experiments import pcfg_la

TREES = parse_trees("""
(S (NP (D a) (N b)) (VP (V c) (NP (N b))))
(S (NP (N b)) (VP (V c) (NP (D a) (N b))))
(S (NP (D a) (N c)) (VP (V a)))
(S (NP (N c)) (VP (V b) (NP (D a) (N a))))
""")


@pytest.mark.parametrize("select", pcfg_la.SELECTIONS)
def test_the_protocol_keeps_the_run_its_selection_names(tmp_path, monkeypatch, select):
    monkeypatch.setattr(pcfg_la, "load_converted", lambda split: list(TREES))
    results = pcfg_la.run(out=tmp_path, subtypes=(1, 2), alphas=(1.0, 0.1), runs=2, iterations=2, seed=3,
                          select=select, speed_subtypes=(2,), quiet=True)
    runs = results["runs"]
    assert {r["seed"] for r in runs if r["subtypes"] == 2} == {3, 4}
    assert {r["seed"] for r in runs if r["subtypes"] == 1} == {3}
    for row in results["rows"]:
        candidates = [r for r in runs if (r["subtypes"], r["algorithm"], r["alpha"]) ==
                      (row["subtypes"], row["algorithm"], row["alpha"])]
        assert len(candidates) == (1 if row["subtypes"] == 1 else 2)
        best = max(candidates, key=lambda r: r["objective"] if select == "objective" else r["dev"]["f1"])
        assert row["seed"] == best["seed"] and row["dev_f1"] == best["dev"]["f1"]
        assert row["objective_seed"] == max(candidates, key=lambda r: r["objective"])["seed"]
        assert row["seconds_per_pass"] > 0 and row["peak_rss_mb"] > 0
    # dev F1 is what chooses alpha, so every grid run is parsed; with "objective" the other seeds are not
    # unless kept
    unparsed = [r for r in runs if r["dev"] is None]
    assert (select == "dev") == (not unparsed)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["settings"]["select"] == select and saved["settings"]["seed"] == 3
    assert (select == "objective") == ("the run kept by its training objective, not by dev F1" in saved["cuts"])
    assert "CVI >= VB >= EM" in (tmp_path / "table.md").read_text()
    assert (tmp_path / "fig4_2.png").stat().st_size > 0


def test_runs_on_different_h_combine_into_one_table(tmp_path, monkeypatch):
    monkeypatch.setattr(pcfg_la, "load_converted", lambda split: list(TREES))
    settings = dict(alphas=(1.0,), runs=1, iterations=1, select="objective", quiet=True)
    parts = [pcfg_la.run(out=tmp_path / name, subtypes=h, **settings) for name, h in (("b", (2,)), ("a", (1,)))]
    combined = pcfg_la.combine([tmp_path / "b", tmp_path / "a"], tmp_path / "both")
    assert [row["subtypes"] for row in combined["rows"]] == [1, 1, 1, 2, 2, 2]
    assert combined["settings"]["subtypes"] == [1, 2]
    assert combined["cuts"][0] == "H = 4, 8 not trained (the issue asks H = 1, 2, 4, 8)"
    assert combined["cuts"][1:] == parts[0]["cuts"][1:] == ["alpha 0.1, 0.01, 0.001 not tried", "best of 1 runs, not 5",
                                                           "1 passes, not 50",
                                                           "the run kept by its training objective, not by dev F1"]
    assert "parts run side by side" in (tmp_path / "both" / "table.md").read_text()
    pcfg_la.run(out=tmp_path / "c", subtypes=(2,), **{**settings, "iterations": 2})
    with pytest.raises(ValueError, match="different settings"):
        pcfg_la.combine([tmp_path / "a", tmp_path / "c"], tmp_path / "bad")


def test_the_split_experiment_chains_each_h_from_the_one_before(tmp_path, monkeypatch):
    from cvbayes.experiments import pcfg_la_split
    monkeypatch.setattr(pcfg_la_split, "load_converted", lambda split: list(TREES))
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"rows": [{"subtypes": 2, "algorithm": a, "alpha": alpha, "seed": seed}
                                         for a, alpha, seed in (("em", 1.0, 1), ("cvi", 0.1, 2))]}))
    results = pcfg_la_split.run(out=tmp_path / "split", algorithms=("em", "cvi"), subtypes=(2, 4), pruning=0.01,
                                unpruned=("em",), iterations=2, base=base, quiet=True)
    assert [(r["algorithm"], r["subtypes"], r["from"], r["pruning"]) for r in results["rows"]] == [
        ("em", 2, None, None), ("em", 4, 2, 0.01), ("em", 4, 2, None), ("cvi", 2, None, None), ("cvi", 4, 2, 0.01)]
    assert [(r["alpha"], r["seed"]) for r in results["rows"]][-1] == (0.1, 2)
    for row in results["rows"]:
        assert 0 < row["kept_share"] <= 1 and row["seconds_per_pass"] > 0 and row["peak_rss_mb"] > 0
        assert row["kept_share"] == 1 or row["pruning"] == 0.01
        assert 1 <= row["subtypes_used"] <= row["subtypes"] + 1e-9 and len(row["objectives"]) == 2
        assert row["objectives"][-1] == row["objective"]
    saved = json.loads((tmp_path / "split" / "em-cvi_h2-4.json").read_text())
    assert saved["rows"] == json.loads(json.dumps(results["rows"]))
    table = (tmp_path / "split" / "table.md").read_text()
    assert table.count("\n| 4 | 2 |") == 3 and "| 2 | treebank | cvi | 0.1 | 2 | none |" in table


def test_the_split_experiment_names_a_missing_base_before_any_work(tmp_path):
    from cvbayes.experiments import pcfg_la_split
    with pytest.raises(FileNotFoundError, match="nowhere.json: no fig4.2 results"):
        pcfg_la_split.run(out=tmp_path / "split", base=tmp_path / "nowhere.json", quiet=True)
    assert not (tmp_path / "split").exists()

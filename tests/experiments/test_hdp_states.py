"""Fig. 5.7's driver end to end on tiny data, and its data generators."""
import json

import numpy as np

from cvbayes.cli import main
from cvbayes.experiments.hdp_states import _first_stable, grammar_corpus, make_dataset


def test_grammar_sequences_follow_the_three_rules():
    corpus = grammar_corpus(30, 12, np.random.default_rng(0))
    for sequence in np.split(corpus.observations, corpus.offsets[1:-1]):
        nexts = {(a, b) for a, b in zip(sequence[:-1], sequence[1:])}
        assert (nexts <= {(0, 1), (1, 2), (2, 0)} or nexts <= {(0, 2), (2, 1), (1, 0)}
                or set(sequence) <= {0, 1})


def test_theta_datasets_use_eq_5_69_and_5_70():
    corpus = make_dataset("theta_pos", 0, 20, 50)
    assert corpus.n_sequences == 20 and corpus.observations.max() < 8
    stays = np.mean(corpus.gold[1:] == corpus.gold[:-1])
    assert stays > 0.95  # theta_pos stays put with probability 0.99


def test_first_stable():
    assert _first_stable([10, 6, 4, 5, 4, 4], 4) == 4
    assert _first_stable([4, 4], 4) == 0
    assert _first_stable([4, 5], 4) is None


def test_fig_5_7_end_to_end(tmp_path):
    main(["experiment", "fig5.7", "--seeds", "1", "--seed", "2", "--sequences", "6", "--length", "15",
          "--cvi-iterations", "10",
          "--beam-iterations", "5", "--scenarios", "theta_pos", "grammar", "--out", str(tmp_path)])
    folder = tmp_path / "fig5_7"
    results = json.loads((folder / "results.json").read_text())
    assert {row["algorithm"] for row in results["summary"]} == {"cvi", "cvi-local", "cvi-merge", "beam"}
    assert {run["scenario"] for run in results["runs"]} == {"theta_pos", "grammar"}
    assert {run["dataset"] for run in results["runs"]} == {2} and results["settings"]["seed"] == 2
    assert all(len(run["effective"]) == len(run["decoded"]) == (10 if run["algorithm"] != "beam" else 5)
               for run in results["runs"])
    # after the last pass the per-pass decoded count and the model's decoded count are both recorded
    assert all(run["final_decoded"] >= 1 and run["decoded_at_mark"] == run["decoded"][-1] for run in results["runs"])
    assert "Thesis" in (folder / "table.md").read_text()
    assert (folder / "fig5_7.png").stat().st_size > 0


def test_fig_5_7_reruns_one_algorithm_beside_the_others_runs(tmp_path):
    """--algorithms re-runs the learners named and keeps the others' runs of the same settings; the table
    gives every run's settle pass."""
    common = ["experiment", "fig5.7", "--seeds", "2", "--sequences", "5", "--length", "12", "--cvi-iterations", "6",
              "--beam-iterations", "4", "--scenarios", "theta_neg", "--out", str(tmp_path)]
    main(common)
    path = tmp_path / "fig5_7" / "results.json"
    before = json.loads(path.read_text())["runs"]
    main(common + ["--algorithms", "cvi-merge"])
    after = json.loads(path.read_text())["runs"]
    assert len(after) == len(before) == 8
    assert [run for run in after if run["algorithm"] != "cvi-merge"] == [
        run for run in before if run["algorithm"] != "cvi-merge"]
    assert [run["effective"] for run in after if run["algorithm"] == "cvi-merge"] == [
        run["effective"] for run in before if run["algorithm"] == "cvi-merge"]
    table = (tmp_path / "fig5_7" / "table.md").read_text()
    assert "| dataset | cvi | cvi-local | cvi-merge | beam |" in table and "| 1001 |" in table
    # other settings: nothing kept
    passes = common.index("--cvi-iterations") + 1
    main([*common[:passes], "7", *common[passes + 1:], "--algorithms", "cvi"])
    assert {run["algorithm"] for run in json.loads(path.read_text())["runs"]} == {"cvi"}

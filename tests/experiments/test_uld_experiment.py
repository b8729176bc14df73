"""The `cvbayes experiment uld` driver on a tiny planted corpus: every system of a learner and seed (the joint
rounds included) starts from one unit layer, is scored on the training and held-out utterances, and the table and
plot are written."""
import json

import pytest

from cvbayes.experiments import uld
from cvbayes.synthetic import sample_acoustic_units


def corpus(seed):
    features, _, _ = sample_acoustic_units(10, n_units=3, n_states=3, n_dims=3, mean_frames=40, seed=seed)

    def score(lexicon, tokens):
        return {"token_fscore": sum(len(u) for u in tokens) / 100.0, "word_types_seen": len(lexicon)}

    return {"features": features, "score": score, "seconds": sum(f.shape[0] for f in features) * 0.01}


@pytest.mark.filterwarnings("ignore::UserWarning")    # held-out units the word layer never saw: one word
def test_driver_scores_every_system_and_writes_results(tmp_path, monkeypatch):
    monkeypatch.setattr(uld, "brent_corpus", lambda split, limit, skip=0: corpus(1 if split == "train" else 2))
    rows = uld.run(tmp_path, [0], n_utterances=10, unit_passes=2, word_passes=2, learners=("vb", "cvi"),
                   joint_rounds=1, quiet=True)
    assert [(row["algorithm"], row["system"]) for row in rows] == [
        ("vb", uld.WHOLE), ("vb", uld.JOINT), ("vb", uld.NBEST), ("vb", uld.WITH_CHANNEL), ("vb", uld.WITHOUT_CHANNEL),
        ("cvi", uld.WHOLE), ("cvi", uld.JOINT), ("cvi", uld.NBEST), ("cvi", uld.WITH_CHANNEL),
        ("cvi", uld.WITHOUT_CHANNEL)]
    for learner in ("vb", "cvi"):       # one unit layer for the systems of a learner
        assert len({row["unit_pass_seconds"] for row in rows if row["algorithm"] == learner}) == 1
    for row in rows:
        assert row["token_fscore"] > 0 and "heldout_token_fscore" in row
    assert all(row["hour_pass_seconds"] > 0 for row in rows if row["system"] != uld.WHOLE)
    nbest = rows[2]
    assert len(nbest["joint_objective"]) == 2 and nbest["joint_objective"][1] >= nbest["joint_objective"][0]
    assert 1 <= nbest["heard_strings_per_utterance"] <= nbest["candidates_per_utterance"] <= 5
    collapsed = rows[7]         # cvi: one leave-one-out objective a round
    assert len(collapsed["joint_objective"]) == 1 and 1 <= collapsed["candidates_per_utterance"] <= 5
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["settings"]["seeds"] == [0] and saved["settings"]["joint_rounds"] == 1 and len(saved["runs"]) == 10
    table = (tmp_path / "table.md").read_text()
    assert "ZeroSpeech 2017 topline" in table and "| pipeline with channel | cvi |" in table
    assert "| joint rounds with channel | cvi |" in table and f"| {uld.NBEST} | vb |" in table
    assert f"| {uld.NBEST} | cvi |" in table and "objective by round" in table and "| cvi | 0 |" in table
    assert (tmp_path / "uld.png").stat().st_size > 0
    assert 0 < rows[0]["token_fscore"] <= 10 / 100.0       # the whole utterances: one token each at most


def test_slice_names_the_utterances_skipped(tmp_path, monkeypatch):
    taken = []
    monkeypatch.setattr(uld, "brent_corpus", lambda split, limit, skip=0: taken.append((split, skip)) or corpus(1))
    monkeypatch.setattr(uld, "run_seed", lambda *args: [])
    uld.run(tmp_path, [0], n_utterances=10, learners=("vb",), quiet=True, first=500)
    assert taken == [("train", 500), ("test", 0)]
    assert "10 utterances of the training voices after the first 500" in (tmp_path / "table.md").read_text()

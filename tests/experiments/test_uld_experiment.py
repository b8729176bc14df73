"""The `cvbayes experiment uld` driver on a tiny planted corpus: every system of a learner and seed (the joint
rounds included) starts from one unit layer, is scored on the training and held-out utterances, and the table and
plot are written; with several grammars every grammar's systems share the unit layer and a system
`LexiconDiscovery` does not take is noted, not run."""
import argparse
import json

import pytest

from cvbayes.experiments import uld
from cvbayes.models.discovery import LexiconDiscovery
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
    assert {row["grammar"] for row in rows} == {None, "unigram"}
    nbest = rows[2]
    assert len(nbest["joint_objective"]) == 2 and nbest["joint_objective"][1] >= nbest["joint_objective"][0]
    assert 1 <= nbest["heard_strings_per_utterance"] <= nbest["candidates_per_utterance"] <= 5
    collapsed = rows[7]         # cvi: one leave-one-out objective a round
    assert len(collapsed["joint_objective"]) == 1 and 1 <= collapsed["candidates_per_utterance"] <= 5
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["settings"]["seeds"] == [0] and saved["settings"]["joint_rounds"] == 1 and len(saved["runs"]) == 10
    table = (tmp_path / "table.md").read_text()
    assert "ZeroSpeech 2017 topline" in table and "| pipeline with channel | cvi |" in table
    assert "| grammar |" not in table and "Not run" not in table       # one grammar: the table as before
    assert "| joint rounds with channel | cvi |" in table and f"| {uld.NBEST} | vb |" in table
    assert f"| {uld.NBEST} | cvi |" in table and "objective by round" in table and "| cvi | 0 |" in table
    assert (tmp_path / "uld.png").stat().st_size > 0
    assert 0 < rows[0]["token_fscore"] <= 10 / 100.0       # the whole utterances: one token each at most


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_grammars_share_the_unit_layer_and_systems_not_taken_are_noted(tmp_path, monkeypatch):
    def discovery(grammar, channel, **settings):     # stands in for a combination LexiconDiscovery refuses
        if grammar == "colloc" and channel:
            raise ValueError("not taken")
        return LexiconDiscovery(grammar=grammar, channel=channel, **settings)

    monkeypatch.setattr(uld, "brent_corpus", lambda split, limit, skip=0: corpus(1 if split == "train" else 2))
    monkeypatch.setattr(uld, "LexiconDiscovery", discovery)
    rows = uld.run(tmp_path, [0], n_utterances=10, unit_passes=2, word_passes=2, learners=("vb",), joint_rounds=0,
                   quiet=True, grammars=("unigram", "colloc"))
    assert [(row["system"], row["grammar"]) for row in rows] == [
        (uld.WHOLE, None), (uld.WITH_CHANNEL, "unigram"), (uld.WITHOUT_CHANNEL, "unigram"),
        (uld.WITHOUT_CHANNEL, "colloc")]
    assert len({row["unit_pass_seconds"] for row in rows}) == 1
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["settings"]["grammars"] == ["unigram", "colloc"]
    assert [(row["system"], row["grammar"], row["skipped"]) for row in saved["skipped"]] == [
        (uld.WITH_CHANNEL, "colloc", "not taken")]
    table = (tmp_path / "table.md").read_text()
    assert "| system | learner | grammar |" in table and f"| {uld.WITHOUT_CHANNEL} | vb | colloc |" in table
    assert f"| {uld.WHOLE} | vb |  |" in table
    assert f"Not run: {uld.WITH_CHANNEL}, vb, colloc grammar (not taken)." in table


def test_slice_names_the_utterances_skipped(tmp_path, monkeypatch):
    taken = []
    monkeypatch.setattr(uld, "brent_corpus", lambda split, limit, skip=0: taken.append((split, skip)) or corpus(1))
    monkeypatch.setattr(uld, "run_seed", lambda *args: [])
    uld.run(tmp_path, [0], n_utterances=10, learners=("vb",), quiet=True, first=500)
    assert taken == [("train", 500), ("test", 0)]
    assert "10 utterances of the training voices after the first 500" in (tmp_path / "table.md").read_text()


def test_command_line_takes_grammars(tmp_path, monkeypatch):
    taken = {}
    monkeypatch.setattr(uld, "run", lambda *args, **settings: taken.update(settings))
    args = argparse.Namespace(out=str(tmp_path), corpus="synthetic-brent", first=0, algorithms=["vb"], seed=0, seeds=1,
                              utterances=10, unit_passes=2, passes=2, joint_rounds=0, quiet=True, grammars=None)
    uld.run_from_command_line(args)
    assert taken["grammars"] == ("unigram",)
    uld.run_from_command_line(argparse.Namespace(**{**vars(args), "grammars": ["unigram", "colloc"]}))
    assert taken["grammars"] == ("unigram", "colloc")
    with pytest.raises(ValueError, match="unknown grammars bigram"):
        uld.run_from_command_line(argparse.Namespace(**{**vars(args), "grammars": ["bigram"]}))

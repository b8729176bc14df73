"""``cvbayes discover``: feature files in; a model, the word tokens in the ZeroSpeech class format and the
lexicon out; bad inputs and settings refused with nothing written."""
import json

import numpy as np
import pytest

from cvbayes.cli import main
from cvbayes.metrics.tde import read_classes
from cvbayes.models.discovery import LexiconDiscovery
from cvbayes.synthetic import sample_acoustic_units

SMALL = ["--units", "6", "--unit-iterations", "3", "--iterations", "2", "--quiet", "--json"]


@pytest.fixture
def feature_folder(tmp_path):
    features, _, _ = sample_acoustic_units(12, n_units=3, n_states=3, n_dims=3, mean_frames=40, seed=5)
    folder = tmp_path / "features"
    folder.mkdir()
    for i, frames in enumerate(features):
        np.save(folder / f"utt{i:02d}.npy", frames)
    return folder


@pytest.mark.parametrize("channel", [[], ["--no-channel"], ["--grammar", "colloc", "--algorithm", "cvi"]],
                         ids=["channel", "no channel", "colloc cvi"])
def test_discover_writes_model_classes_and_lexicon(tmp_path, feature_folder, capsys, channel):
    output = tmp_path / "words.npz"
    main(["discover", str(feature_folder), "-o", str(output), *SMALL, *channel])
    report = json.loads(capsys.readouterr().out)
    assert report["utterances"] == 12 and report["channel"] is ("--no-channel" not in channel)
    model = LexiconDiscovery.load(output)
    classes = read_classes(tmp_path / "words.classes")
    lexicon = [line.split("\t") for line in (tmp_path / "words.lexicon.tsv").read_text().splitlines()]
    assert len(lexicon) == report["word_types"] == len(model.lexicon_)
    assert sum(int(count) for _, count, _ in lexicon) == report["word_tokens"]
    # class k holds the tokens of the lexicon's k-th type, times within the utterance
    assert [len(classes[number]) for number, _, _ in lexicon] == [int(count) for _, count, _ in lexicon]
    lengths = {f"utt{i:02d}": np.load(feature_folder / f"utt{i:02d}.npy").shape[0] * 0.01 for i in range(12)}
    for tokens in classes.values():
        for utterance, start, end in tokens:
            assert 0.0 <= start < end <= lengths[utterance] + 0.01


def test_discover_with_the_nbest_joint_writes_the_tokens_of_its_readings(tmp_path, feature_folder, capsys):
    output = tmp_path / "words.npz"
    main(["discover", str(feature_folder), "-o", str(output), *SMALL, "--algorithm", "vb", "--joint", "nbest",
          "--joint-rounds", "2", "--n-best", "3", "--draws", "10", "--checkpoint", str(tmp_path / "run.ckpt")])
    report = json.loads(capsys.readouterr().out)
    assert report["joint"] == "nbest" and report["joint_rounds"] == 2
    assert not any(tmp_path.glob("run.ckpt*"))      # the rounds' checkpoint (run.ckpt.nbest) too
    model = LexiconDiscovery.load(output)
    assert (model.joint, model.n_best, model.n_draws) == ("nbest", 3, 10)
    lexicon = [line.split("\t") for line in (tmp_path / "words.lexicon.tsv").read_text().splitlines()]
    assert sum(int(count) for _, count, _ in lexicon) == report["word_tokens"]


@pytest.mark.parametrize("arguments,message", [
    (["--grammar", "colloc", "--joint", "nbest", "--joint-rounds", "1"], "unigram grammar's q only"),
    (["--units", "0"], "must be at least 1"),
    (["--classes", "/no/such/folder/w.classes"], "does not exist"),
])
def test_bad_settings_are_refused_and_nothing_is_written(tmp_path, feature_folder, capsys, arguments, message):
    output = tmp_path / "words.npz"
    with pytest.raises(SystemExit) as stop:
        main(["discover", str(feature_folder), "-o", str(output), "--quiet", *arguments])
    assert message in str(stop.value) + capsys.readouterr().err
    assert not output.exists() and not (tmp_path / "words.classes").exists()


def test_a_broken_input_is_named(tmp_path, feature_folder):
    np.save(feature_folder / "bad.npy", np.arange(10))
    with pytest.raises(SystemExit, match="bad.npy"):
        main(["discover", str(feature_folder), "-o", str(tmp_path / "w.npz"), "--quiet"])
    assert not (tmp_path / "w.npz").exists()


def test_checkpoints_resume_each_layer_and_are_removed(tmp_path, feature_folder, capsys):
    """A run stopped after the unit layer resumes from its checkpoint and ends as an uninterrupted run; every
    layer's checkpoint (a joint round's words included) goes once the model is written."""
    checkpoint = tmp_path / "run.ckpt"
    model = LexiconDiscovery(n_units=6, unit_iter=3, n_iter=2, joint_rounds=1)
    features = [np.load(path) for path in sorted(feature_folder.glob("*.npy"))]
    model.fit(features, checkpoint=str(checkpoint))
    assert sorted(path.name for path in tmp_path.glob("run.ckpt*")) == ["run.ckpt.units", "run.ckpt.words",
                                                                         "run.ckpt.words1"]
    for part in ("words", "words1"):             # as if stopped before the word layers' first checkpoints
        (tmp_path / f"run.ckpt.{part}").unlink()
    output = tmp_path / "words.npz"
    main(["discover", str(feature_folder), "-o", str(output), *SMALL, "--joint-rounds", "1",
          "--checkpoint", str(checkpoint)])
    assert json.loads(capsys.readouterr().out)["joint_rounds"] == 1
    assert LexiconDiscovery.load(output).lexicon_ == model.lexicon_
    assert not any(tmp_path.glob("run.ckpt*"))


def test_workers_take_vb_only(tmp_path, feature_folder):
    with pytest.raises(SystemExit, match="--scheduler and --workers take --algorithm vb"):
        main(["discover", str(feature_folder), "-o", str(tmp_path / "w.npz"), "--workers", "2", "--quiet"])
    assert not (tmp_path / "w.npz").exists()

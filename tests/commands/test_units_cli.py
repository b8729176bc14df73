"""``cvbayes units`` and ``cvbayes units decode``: feature files in, a model and unit sequences with times
out; bad inputs refused with the file named and nothing written."""
import json

import numpy as np
import pytest

from cvbayes import AcousticUnits
from cvbayes.cli import main
from cvbayes.commands.units import route
from cvbayes.synthetic import sample_acoustic_units


@pytest.fixture
def feature_folder(tmp_path):
    features, _, _ = sample_acoustic_units(8, n_units=3, n_states=2, n_dims=3, mean_frames=30, seed=5)
    folder = tmp_path / "features"
    (folder / "speaker").mkdir(parents=True)
    for i, frames in enumerate(features):
        np.save(folder / ("speaker" if i % 2 else "") / f"utt{i}.npy", frames)
    return folder


def fit(args, capsys):
    main(["units", *args, "--quiet", "--json"])
    return json.loads(capsys.readouterr().out)


def test_fit_then_decode(tmp_path, feature_folder, capsys):
    model_path = tmp_path / "units.npz"
    report = fit([str(feature_folder), "-o", str(model_path), "--units", "6", "--states", "2", "--components", "1",
                  "--iterations", "4", "--presegment"], capsys)
    assert report["utterances"] == 8 and report["iterations"] == 4 and report["dimensions"] == 3
    loaded = AcousticUnits.load(model_path)
    assert loaded.n_units == 6 and loaded.presegment is True and report["presegment"] is True
    main(["units", "decode", str(model_path), str(feature_folder), "--quiet"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    name, *groups = lines[0].split("\t")
    times = [group.split() for group in groups]
    assert float(times[0][1]) == 0.0
    assert all(float(a[2]) == float(b[1]) for a, b in zip(times, times[1:]))
    main(["units", "decode", str(model_path), str(feature_folder), "--json", "--quiet"])
    decoded = json.loads(capsys.readouterr().out)
    assert [d["utterance"] for d in decoded] == [line.split("\t")[0] for line in lines]
    frames = np.load(sorted(feature_folder.rglob("*.npy"))[0]).shape[0]
    assert decoded[0]["ends"][-1] == pytest.approx(frames * 0.01)


def test_list_file_and_checkpoint(tmp_path, feature_folder, capsys):
    listing = tmp_path / "train.lst"
    files = sorted(feature_folder.rglob("*.npy"))
    listing.write_text("# training utterances\n" + "\n".join(str(f.relative_to(tmp_path)) for f in files) + "\n")
    checkpoint = tmp_path / "run.ckpt"
    report = fit([str(listing), "-o", str(tmp_path / "m.npz"), "--units", "5", "--states", "2", "--iterations", "3",
                  "--algorithm", "scvi", "--batch-size", "3", "--checkpoint", str(checkpoint)], capsys)
    assert report["utterances"] == len(files) and report["algorithm"] == "scvi"
    assert not checkpoint.exists()  # removed once the model is written


def test_decode_rewrites_only_the_units_command():
    assert route(["units", "decode", "m.npz", "a.npy"]) == ["units-decode", "m.npz", "a.npy"]
    assert route(["units", "decode"]) == ["units-decode"]
    assert route(["segment", "decode"]) == ["segment", "decode"]


@pytest.mark.parametrize("case,message", [
    ("empty folder", "no .npy"), ("bad array", "float array"), ("dimensions", "dimensions a frame"),
    ("short", "fewer frames"), ("missing", "does not exist"), ("audio", "a.wav"),
])
def test_bad_inputs_are_refused_and_nothing_is_written(tmp_path, feature_folder, case, message):
    folder = tmp_path / case.replace(" ", "_")
    folder.mkdir()
    np.save(folder / "good.npy", np.random.default_rng(0).normal(size=(20, 3)))
    if case == "empty folder":
        (folder / "good.npy").unlink()
    elif case == "bad array":
        np.save(folder / "bad.npy", np.arange(10))
    elif case == "dimensions":
        np.save(folder / "wide.npy", np.zeros((20, 4)))
    elif case == "short":
        np.save(folder / "short.npy", np.zeros((2, 3)))
    elif case == "missing":
        folder = tmp_path / "nowhere"
    elif case == "audio":  # the speech front end reads audio, and refuses a broken file by name
        (folder / "a.wav").write_bytes(b"RIFF")
    output = tmp_path / "units.npz"
    with pytest.raises(SystemExit, match=message):
        main(["units", str(folder), "-o", str(output), "--states", "3", "--quiet"])
    assert not output.exists()


def test_experiment_driver_writes_results(tmp_path):
    """The `cvbayes experiment units` driver on a tiny planted corpus and a tiny transcribed one."""
    from cvbayes.experiments import units as experiment

    features, labels, starts = sample_acoustic_units(6, n_units=3, n_states=3, n_dims=3, mean_frames=40, seed=2)
    planted = experiment.UnitCorpus("planted", features, [f"u{i}" for i in range(6)],
                                    phones=experiment.planted_intervals(labels, starts))
    spoken = experiment.UnitCorpus("tidigits", features, [f"u{i}" for i in range(6)],
                                   transcripts=["one two", "two", "oh one", "nine", "one", "two two"])
    summaries = experiment.run([planted, spoken], tmp_path, ["vb", "gibbs"], seeds=1, n_units=6, passes=2, quiet=True)
    assert {(s["corpus"], s["algorithm"]) for s in summaries} == {(c, a) for c in ("planted", "tidigits")
                                                                    for a in ("vb", "gibbs")}
    row = summaries[0]
    assert 0 <= row["boundary_f1"] <= 1 and 0 <= row["nmi"] <= 1 and row["purity"] > 0.5
    assert "word_detection_f1" in summaries[2] and "boundary_f1" not in summaries[2]
    assert {p.name for p in tmp_path.iterdir()} >= {"results.json", "table.md", "units.png"}


def test_experiment_seed_is_honoured(tmp_path, monkeypatch):
    """``--seed S --seeds N`` runs seeds S..S+N-1, each fitted with its own random_state, and writes them."""
    from cvbayes.experiments import units as experiment

    features, labels, starts = sample_acoustic_units(6, n_units=3, n_states=3, n_dims=3, mean_frames=40, seed=2)
    planted = experiment.UnitCorpus("planted", features, [f"u{i}" for i in range(6)],
                                    phones=experiment.planted_intervals(labels, starts))
    monkeypatch.setattr(experiment, "planted_corpus", lambda: planted)
    main(["experiment", "units", "--corpus", "planted", "--algorithms", "vb", "--seed", "3", "--seeds", "2",
          "--units", "6", "--passes", "2", "--out", str(tmp_path), "--quiet"])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["settings"]["seeds"] == [3, 4]
    assert [r["seed"] for r in results["runs"]] == [3, 4]
    for row in results["runs"]:
        model = AcousticUnits(n_units=6, n_iter=2, random_state=row["seed"]).fit(features)
        assert row["objective"] == pytest.approx(model.history_[-1].objective, rel=1e-9)
    assert results["runs"][0]["objective"] != results["runs"][1]["objective"]
    assert all(r["peak_rss_mib"] >= r["rss_before_fit_mib"] > 0 for r in results["runs"])
    # --append keeps those runs and adds (or replaces) this command's
    main(["experiment", "units", "--corpus", "planted", "--algorithms", "vb", "--seed", "4", "--seeds", "2",
          "--units", "6", "--passes", "2", "--out", str(tmp_path), "--quiet", "--append"])
    appended = json.loads((tmp_path / "results.json").read_text())
    assert appended["settings"]["seeds"] == [3, 4, 5]
    assert [r["seed"] for r in appended["runs"]] == [3, 4, 5]
    assert appended["runs"][0] == results["runs"][0]
    assert "seeds 3, 4, 5" in (tmp_path / "table.md").read_text()


def test_experiment_trim_reaches_the_synthetic_corpus(tmp_path, monkeypatch):
    """``--trim`` loads both splits of synthetic Brent trimmed, and names the corpus so (its runs and table
    stay apart from the untrimmed ones in an appended results.json); ``--states``, ``--components``,
    ``--gamma`` and ``--presegment`` reach the model."""
    from types import SimpleNamespace

    from cvbayes import speech
    from cvbayes.experiments import units as experiment

    features, labels, starts = sample_acoustic_units(4, n_units=3, n_states=3, n_dims=3, mean_frames=40, seed=2)
    names = [f"u{i}" for i in range(4)]
    intervals = experiment.planted_intervals(labels, starts)
    calls = []

    def load(split, limit=None, progress=True, trim=False):
        calls.append((split, trim))
        corpus = SimpleNamespace(features=features, names=names, first_frames=[0] * 4)
        return SimpleNamespace(corpus=corpus, phones={n: [SimpleNamespace(start=a, end=b, label=c) for a, b, c in p]
                                                      for n, p in zip(names, intervals)})

    monkeypatch.setattr(speech, "load_synthetic_brent", load)
    main(["experiment", "units", "--corpus", "synthetic-brent", "--trim", "--algorithms", "vb", "--seeds", "1",
          "--units", "6", "--states", "4", "--components", "1", "--gamma", "0.5", "--passes", "2", "--presegment",
          "--out", str(tmp_path), "--quiet"])
    assert calls == [("train", True), ("test", True)]
    results = json.loads((tmp_path / "results.json").read_text())
    assert [r["corpus"] for r in results["runs"]] == ["synthetic-brent-train-trimmed"]
    assert "heldout_boundary_f1" in results["runs"][0] and results["settings"]["n_states"] == 4
    assert (results["settings"]["n_components"], results["settings"]["gamma"]) == (1, 0.5)
    assert results["settings"]["presegment"] is True
    model = AcousticUnits(n_units=6, n_states=4, n_components=1, gamma=0.5, n_iter=2, presegment=True,
                          random_state=0).fit(features)
    assert results["runs"][0]["objective"] == pytest.approx(model.history_[-1].objective, rel=1e-9)
    assert ("4 states a unit, 1 Gaussians a state, gamma 0.5, unit starts at spectral-change candidates only"
            in (tmp_path / "table.md").read_text())
    # runs of another number of states are not appended to these
    with pytest.raises(SystemExit, match="n_states 4"):
        main(["experiment", "units", "--corpus", "synthetic-brent", "--trim", "--algorithms", "vb", "--seeds", "1",
              "--units", "6", "--passes", "2", "--out", str(tmp_path), "--quiet", "--append"])
    with pytest.raises(SystemExit, match="gamma 0.5"):  # nor of another concentration
        main(["experiment", "units", "--corpus", "synthetic-brent", "--trim", "--algorithms", "vb", "--seeds", "1",
              "--units", "6", "--states", "4", "--components", "1", "--passes", "2", "--out", str(tmp_path),
              "--quiet", "--append"])

"""TIDIGITS: the Sphinx MFC and transcript readers, fetching, and the dp-hmm-tidigits experiment end to end."""
import json
import struct

import numpy as np
import pytest

from cvbayes.cli import build_parser, main
from cvbayes.data import CorpusFormatError, fetch_tidigits, load_tidigits, read_lsn, read_mfc
from cvbayes.data import tidigits as tidigits_data
from cvbayes.experiments.tidigits import held_out_split, standardise


def write_mfc(path, frames, order=">"):
    """A Sphinx feature file: int32 count of float32 values, then the values."""
    values = np.asarray(frames, dtype=np.float32).ravel()
    path.write_bytes(struct.pack(f"{order}i", values.size) + values.astype(f"{order}f4").tobytes())
    return path


def fake_dataset(folder, n_utterances=6, seed=0):
    """Utterances that walk through three well-separated 13-D clusters, and their transcripts."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    centres = rng.normal(0.0, 5.0, size=(3, 13))
    lines = []
    for i in range(n_utterances):
        speaker = "man.aa" if i % 2 == 0 else "woman.bb"
        utterance = f"{speaker}.{i}{'z' * (i % 3)}a"
        states = np.repeat(rng.permutation(3), rng.integers(8, 15, size=3))
        write_mfc(folder / f"{utterance}.mfc", centres[states] + rng.normal(0.0, 0.5, size=(states.size, 13)))
        lines.append(f"{' '.join(['one', 'two', 'oh'][: 1 + i % 3])} ({utterance})")
    (folder / "tidigits.lsn").write_text("\n".join(lines) + "\n")
    return folder


# ---------------------------------------------------------------- MFC reader


def test_read_mfc_big_endian(tmp_path):
    frames = np.arange(3 * 13, dtype=np.float32).reshape(3, 13) / 7.0 - 2.0
    path = write_mfc(tmp_path / "a.mfc", frames)
    assert path.read_bytes()[:4] == struct.pack(">i", 39)
    read = read_mfc(path)
    assert read.dtype == np.float64 and read.shape == (3, 13)
    np.testing.assert_array_equal(read, frames.astype(np.float64))


def test_read_mfc_little_endian_is_recognised(tmp_path):
    # Sphinx writes either byte order and tells them apart by the count (goforward.mfc is little-endian)
    frames = np.linspace(-1, 1, 26, dtype=np.float32).reshape(2, 13)
    np.testing.assert_array_equal(read_mfc(write_mfc(tmp_path / "b.mfc", frames, order="<")), frames)


@pytest.mark.parametrize("content, message", [
    (struct.pack(">i", 40) + np.zeros(39, ">f4").tobytes(), "header says 40"),   # count off by one
    (struct.pack(">i", 39) + np.zeros(39, ">f4").tobytes()[:-2], "header says 39"),  # truncated
    (struct.pack(">i", 12) + np.zeros(12, ">f4").tobytes(), "not a whole number of 13"),
    (struct.pack(">i", 0), "no frames"),
    (b"\x00\x01", "too short"),
])
def test_read_mfc_malformed_names_the_file(tmp_path, content, message):
    path = tmp_path / "broken.utt.mfc"
    path.write_bytes(content)
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_mfc(path)
    assert error.value.path == str(path)
    assert "broken.utt.mfc" in str(error.value)


def test_read_mfc_rejects_non_finite(tmp_path):
    frames = np.zeros((2, 13), dtype=np.float32)
    frames[1, 4] = np.nan
    with pytest.raises(CorpusFormatError, match="frame 1"):
        read_mfc(write_mfc(tmp_path / "nan.mfc", frames))


# ---------------------------------------------------------- transcript reader


def test_read_lsn(tmp_path):
    path = tmp_path / "t.lsn"
    path.write_text("one one one (man.ah.111a)\n\n  Two  nine (man.ah.29a)  \noh (woman.ak.oa)\n")
    assert read_lsn(path) == {"man.ah.111a": "one one one", "man.ah.29a": "two nine", "woman.ak.oa": "oh"}


@pytest.mark.parametrize("text, message, line", [
    ("one (a)\ntwo three\n", "expected 'words", 2),
    ("one (a)\ntwo (a)\n", "transcribed twice", 2),
])
def test_read_lsn_malformed(tmp_path, text, message, line):
    path = tmp_path / "t.lsn"
    path.write_text(text)
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_lsn(path)
    assert error.value.line == line and error.value.path == str(path)


# ------------------------------------------------------------ load and fetch


def test_load_tidigits(tmp_path):
    folder = fake_dataset(tmp_path / "tidigits", n_utterances=4)
    corpus, ids, transcripts = load_tidigits(folder)
    assert ids == sorted(ids) and len(ids) == 4
    assert corpus.n_sequences == 4 and not corpus.is_discrete and corpus.observations.shape[1] == 13
    for i, utterance in enumerate(ids):
        np.testing.assert_array_equal(corpus[i], read_mfc(folder / f"{utterance}.mfc"))
    assert dict(zip(ids, transcripts)) == read_lsn(folder / "tidigits.lsn")


def test_load_tidigits_errors(tmp_path, monkeypatch):
    folder = fake_dataset(tmp_path / "tidigits", n_utterances=3)
    write_mfc(folder / "man.aa.extra.mfc", np.zeros((2, 13)))
    with pytest.raises(CorpusFormatError, match="no transcript.*man.aa.extra"):
        load_tidigits(folder)
    with (folder / "tidigits.lsn").open("a") as lsn:
        lsn.write("zero (man.aa.extra)\n")
    data = load_tidigits(folder)
    assert dict(zip(data.utterance_ids, data.transcripts))["man.aa.extra"] == "zero"
    (folder / "man.aa.extra.mfc").write_bytes(struct.pack(">i", 99))
    with pytest.raises(CorpusFormatError, match="man.aa.extra.mfc"):
        load_tidigits(folder)
    monkeypatch.setattr(tidigits_data, "SYSTEM_FOLDER", tmp_path / "nowhere")
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch tidigits"):
        load_tidigits()


def test_fetch_tidigits_copies_to_the_cache(tmp_path, monkeypatch):
    system = fake_dataset(tmp_path / "system", n_utterances=3)
    monkeypatch.setattr(tidigits_data, "SYSTEM_FOLDER", system)
    folder = fetch_tidigits(tmp_path / "cache", progress=False)
    assert folder == tmp_path / "cache" / "tidigits"
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in system.iterdir())
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "cache"))
    assert load_tidigits().utterance_ids == load_tidigits(system).utterance_ids


def test_fetch_tidigits_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setattr(tidigits_data, "SYSTEM_FOLDER", tmp_path / "nowhere")
    monkeypatch.setattr(tidigits_data.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install -y pocketsphinx-testdata"):
        fetch_tidigits(tmp_path / "cache", progress=False)


def test_cli_knows_tidigits():
    parser = build_parser()
    assert parser.parse_args(["data", "fetch", "tidigits"]).name == "tidigits"
    args = parser.parse_args(["experiment", "dp-hmm-tidigits", "--burn-in", "3"])
    assert args.name == "dp-hmm-tidigits" and args.burn_in == 3


# ---------------------------------------------------------------- experiment


def test_standardise_and_split(tmp_path):
    corpus, _, _ = load_tidigits(fake_dataset(tmp_path / "t", n_utterances=5))
    z, mean, scale = standardise(corpus)
    np.testing.assert_allclose(z.observations.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(z.observations.std(axis=0), 1.0)
    again, _, _ = standardise(corpus, mean, scale)
    np.testing.assert_array_equal(again.observations, z.observations)
    assert held_out_split(31) == ([i for i in range(31) if i not in (3, 11, 19, 27)], [3, 11, 19, 27])
    assert held_out_split(3) == ([0, 1], [2])


def test_experiment_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(tidigits_data, "SYSTEM_FOLDER", fake_dataset(tmp_path / "system", n_utterances=6))
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results"
    main(["experiment", "dp-hmm-tidigits", "--out", str(out), "--states", "4", "--iterations", "6",
          "--burn-in", "2", "--seeds", "2", "--quiet"])
    folder = out / "dp_hmm_tidigits"
    results = json.loads((folder / "results.json").read_text())
    assert results["settings"]["states"] == 4 and results["settings"]["burn_in"] == 2
    assert results["data"]["utterances"] == 6 and results["data"]["heldout_ids"] == ["woman.bb.1za"]
    assert len(results["runs"]) == 2
    for run in results["runs"]:
        hdp = run["hdp_hmm"]
        assert 1 <= hdp["effective_states"] <= 4 and hdp["gamma"] > 0 and hdp["sigma"] > 0
        assert len(hdp["objective_history"]) == 6 and len(hdp["sigma_history"]) == 6
        # nothing is learned during the burn-in
        assert hdp["gamma_history"][:2] == [1.0, 1.0] and hdp["sigma_history"][:2] == [1.0, 1.0]
        assert np.isfinite(run["heldout"]["hdp_hmm"]) and np.isfinite(run["heldout"]["hmm_cvi2"])
    assert [check["states"] for check in results["checks"]] == [2, 8, 4]
    table = (folder / "table.md").read_text()
    assert "effective states" in table and "Stengel-Eskin" in table
    for figure in results["figures"]:
        assert (folder / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cepstrogram_states.png" in results["figures"]

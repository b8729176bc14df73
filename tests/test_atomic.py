"""Atomic writes and checked reads (cvbayes.files): a failed or killed write leaves the old file whole and
no temporary file for good; model files, checkpoints and saved corpora refuse damaged contents and other
format versions by name; files from before checksums are still read."""
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from cvbayes import HMM
from cvbayes.data import Corpus, CorpusFormatError
from cvbayes.files import (TEMPORARY_SUFFIX, atomic_write, read_archive, remove_stale_temporaries, save_figure,
                           write_archive, write_json, write_text)
from cvbayes.models.files import read_model, write_model
from cvbayes.synthetic import random_hmm, sample_categorical_hmm


def temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(TEMPORARY_SUFFIX))


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    write_text(path, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_write(path, "w") as stream:
            stream.write("half of the new")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and temporaries(tmp_path) == []
    write_json(path, {"a": [1, 2]})
    assert json.loads(path.read_text()) == {"a": [1, 2]} and temporaries(tmp_path) == []


def test_the_file_gets_the_usual_permissions_and_a_link_is_kept(tmp_path):
    target = tmp_path / "target.txt"
    write_text(target, "one")
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text(link, "two")
    assert link.is_symlink() and target.read_text() == "two"


def test_a_killed_writers_temporary_is_removed_by_the_next_write_but_a_live_ones_is_not(tmp_path):
    path = tmp_path / "model.npz"
    # a writer that is gone: a process that has ended
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f".model.npz.{int(ended.stdout)}.abc{TEMPORARY_SUFFIX}"
    live = tmp_path / f".model.npz.{os.getppid()}.def{TEMPORARY_SUFFIX}"
    other = tmp_path / f".other.npz.{int(ended.stdout)}.ghi{TEMPORARY_SUFFIX}"
    for stray in (dead, live, other):
        stray.write_bytes(b"partial")
    write_text(path, "new")
    assert not dead.exists() and live.exists() and other.exists()
    assert remove_stale_temporaries(tmp_path / "other.npz") == [other]


def test_write_to_a_device_is_written_in_place():
    write_text(os.devnull, "nothing")  # not replaced by a regular file
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)


def test_a_figure_is_saved_whole(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    axes.plot([0, 1], [1, 0])
    save_figure(figure, tmp_path / "plot.png", dpi=50)
    plt.close(figure)
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and temporaries(tmp_path) == []


def flip_byte_of(path, payload):
    """Flip a byte inside ``payload``'s copy in the (uncompressed) file at ``path``."""
    data = bytearray(path.read_bytes())
    at = bytes(data).index(payload) + len(payload) // 2
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_an_archive_with_damaged_contents_is_refused_by_name(tmp_path):
    path = tmp_path / "a.npz"
    values = np.arange(1000, 1100, dtype=np.int64)
    write_archive(path, {"format": "cvbayes-test-1"}, {"values": values}, compressed=False)
    meta, arrays = read_archive(path)
    assert np.array_equal(arrays["values"], values) and len(meta["sha256"]) == 64
    flip_byte_of(path, values.tobytes())
    with pytest.raises(ValueError, match=f"{path}: "):
        read_archive(path)


def test_the_checksum_catches_what_the_zip_crc_does_not(tmp_path):
    """A member rewritten whole (its CRC recomputed) is still refused: the checksum covers the contents."""
    path = tmp_path / "a.npz"
    write_archive(path, {"format": "cvbayes-test-1"}, {"values": np.arange(5.0)})
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    forged = tmp_path / "forged.npy"
    np.save(forged, np.arange(5.0) + 1)
    members["values.npy"] = forged.read_bytes()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match=f"{path}: damaged cvbayes file: its contents do not match the checksum"):
        read_archive(path)


def fitted_hmm():
    params = random_hmm(2, 5, np.random.default_rng(0))
    corpus = sample_categorical_hmm(*params, np.full(10, 8), seed=1)
    return HMM(2, algorithm="em", n_iter=3).fit(corpus)


def test_model_files_refuse_damage_and_other_versions_and_read_files_from_before_checksums(tmp_path):
    model = fitted_hmm()
    path = tmp_path / "model.npz"
    model.save(path)
    assert np.array_equal(HMM.load(path).transmat_, model.transmat_)
    meta, arrays = read_model(path, "cvbayes-hmm-1")
    # a file written before checksums: no sha256 entry, read unchecked
    old = tmp_path / "old.npz"
    np.savez_compressed(old, meta=np.array(json.dumps({k: v for k, v in meta.items() if k != "sha256"})), **arrays)
    assert np.array_equal(HMM.load(old).transmat_, model.transmat_)
    # the same meta with another checksum: damaged
    np.savez_compressed(old, meta=np.array(json.dumps({**meta, "sha256": "0" * 64})), **arrays)
    with pytest.raises(ValueError, match=f"{old}: damaged cvbayes model file"):
        HMM.load(old)
    # a later format version of the same model
    newer = tmp_path / "newer.npz"
    write_model(newer, {**meta, "format": "cvbayes-hmm-2"}, arrays)
    with pytest.raises(ValueError, match=f"{newer}: a cvbayes model file of format version 2, which this version "
                                         f"of cvbayes cannot read \\(it reads version 1\\)"):
        HMM.load(newer)
    assert temporaries(tmp_path) == []


def test_a_saved_corpus_is_checked_when_loaded_also_memory_mapped(tmp_path):
    params = random_hmm(2, 5, np.random.default_rng(0))
    corpus = sample_categorical_hmm(*params, np.full(50, 20), seed=1)
    path = tmp_path / "corpus.npz"
    corpus.save(path)
    for mmap in (False, True):
        loaded = Corpus.load(path, mmap=mmap)
        assert np.array_equal(loaded.observations, corpus.observations)
    flip_byte_of(path, corpus.observations.tobytes()[8:40])
    for mmap in (False, True):
        with pytest.raises(CorpusFormatError, match="damaged saved corpus") as error:
            Corpus.load(path, mmap=mmap)
        assert str(path) in str(error.value)

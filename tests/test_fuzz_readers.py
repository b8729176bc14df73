"""Malformed and fuzzed input: readers must fail with the file and line, never a traceback."""

import gzip
import random

import numpy as np
import pytest

import cvbayes
from cvbayes.data import CorpusFormatError, load_brown, read_conllu, read_tagged, read_text
from cvbayes.families import Categorical


def load_brown_file(path):
    return load_brown(path=path)


READERS = [read_tagged, read_conllu, read_text, load_brown_file]
TAGGED_READERS = [read_tagged, load_brown_file]


def write(tmp_path, data, name="corpus.txt"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def expect_error(reader, path, line):
    with pytest.raises(CorpusFormatError) as info:
        reader(path)
    assert str(path) in str(info.value)
    assert info.value.line == line
    if line is not None:
        assert f"line {line}" in str(info.value)
    return info.value


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("reader", READERS)
def test_random_bytes(tmp_path, reader, seed):
    # Mostly ASCII text and newlines, with a few arbitrary bytes.
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, 400, dtype=np.uint8)
    text = rng.random(400) < 0.97
    data[text] = rng.choice(np.frombuffer(b"ab/ \t\n\n", np.uint8), text.sum())
    data = data.tobytes()
    error = expect_error(reader, write(tmp_path, data), error_line(data))
    assert "invalid utf-8" in error.message


def error_line(data):
    """The line of the first byte sequence that is not UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return data.count(b"\n", 0, error.start) + 1
    raise AssertionError("random bytes decoded as UTF-8")


@pytest.mark.parametrize("reader", READERS)
def test_invalid_utf8(tmp_path, reader):
    path = write(tmp_path, b"a/at b/nn\n\nc/nn \xe9t\xe9/nn\n")
    assert "invalid utf-8" in expect_error(reader, path, 3).message


@pytest.mark.parametrize("reader", READERS)
def test_empty_file(tmp_path, reader):
    assert "empty" in expect_error(reader, write(tmp_path, b""), None).message


@pytest.mark.parametrize("reader", READERS)
def test_blank_file(tmp_path, reader):
    assert "no tokens" in expect_error(reader, write(tmp_path, "\n \n\t\n"), None).message


@pytest.mark.parametrize("reader", TAGGED_READERS)
@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("The/at dog/nn\nruns/vbz fast/\n", 2),  # empty tag
        ("The/at /nn\n", 1),  # empty word
        ("The/at dog/nn\n\nThe/at do", 3),  # line cut mid-token
        ("The/at dog/nn ./.\nThe dog/nn\n", 2),  # tag missing
    ],
)
def test_truncated_tokens(tmp_path, reader, text, line):
    expect_error(reader, write(tmp_path, text), line)


def test_conllu_too_few_columns(tmp_path):
    text = "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tdog\tdog\tNOUN\n\n"
    assert "10 tab-separated" in expect_error(read_conllu, write(tmp_path, text), 2).message


def test_brown_truncated_gzip(tmp_path):
    data = gzip.compress(b"The/at dog/nn\n" * 50)
    path = write(tmp_path, data[: len(data) // 2], "slice.txt.gz")
    assert "gzip" in expect_error(load_brown_file, path, None).message


ALPHABET = ["a", "B", "1", "/", "/", "_", "-", ".", "#", " ", " ", "\t", "\t", "\n", "\n", "é"]


@pytest.mark.parametrize("seed", range(40))
def test_random_text_parses_or_raises_format_error(tmp_path, seed):
    rng = random.Random(seed)
    lines = ["".join(rng.choices(ALPHABET, k=rng.randint(0, 30))) for _ in range(rng.randint(1, 6))]
    path = write(tmp_path, "\n".join(lines))
    for reader in READERS:
        try:
            corpus = reader(path)
        except CorpusFormatError as error:
            assert error.path == str(path)
        else:
            assert corpus.n_tokens > 0


@pytest.fixture(scope="module")
def tiny_hmm():
    corpus = cvbayes.Corpus.from_sequences([np.array([1, 2, 1, 2]), np.array([2, 1])])
    return cvbayes.HMM(n_states=2, n_iter=1).fit(corpus), corpus


def test_decode_rejects_word_ids_outside_the_model_vocabulary(tmp_path, tiny_hmm):
    model, _ = tiny_hmm
    corpus = read_text(write(tmp_path, "a b c d e\n"))  # ids up to 5; the model knows 3
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.decode(corpus)


def test_fit_rejects_word_ids_outside_a_fixed_vocabulary(tmp_path, tiny_hmm):
    _, small = tiny_hmm
    corpus = read_text(write(tmp_path, "a b c d e\n"))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        cvbayes.HMM(n_states=2, emission=Categorical(n_symbols=3), n_iter=1).fit(corpus)
    with pytest.raises(ValueError, match="tag_dictionary has 3 rows"):
        cvbayes.HMM(n_states=2, tag_dictionary=np.ones((3, 2)), n_iter=1).fit(corpus)
    # The same fixed-size model accepts ids inside its vocabulary.
    cvbayes.HMM(n_states=2, emission=Categorical(n_symbols=3), n_iter=1).fit(small)

"""Tests for cvbayes.data: vocabularies, corpora and readers."""

import pickle

import numpy as np
import pytest

from cvbayes.data import (
    Corpus,
    CorpusFormatError,
    Vocabulary,
    as_corpus,
    read_conllu,
    read_tagged,
    read_text,
)


def write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def assert_error_at(excinfo, path, line):
    error = excinfo.value
    assert path.name in str(error)
    assert f"line {line}:" in str(error)
    assert error.line == line


# --- CorpusFormatError -------------------------------------------------------


def test_error_message_format():
    error = CorpusFormatError("token 'foo' has no '/TAG' part", "corpus.txt", 12)
    assert str(error) == "corpus.txt, line 12: token 'foo' has no '/TAG' part"
    assert (error.path, error.line) == ("corpus.txt", 12)
    assert isinstance(error, ValueError)
    assert str(CorpusFormatError("bad")) == "bad"
    assert str(CorpusFormatError("bad", "x.txt")) == "x.txt: bad"


def test_error_pickles_with_attributes():
    error = pickle.loads(pickle.dumps(CorpusFormatError("bad", "x.txt", 3)))
    assert (str(error), error.path, error.line) == ("x.txt, line 3: bad", "x.txt", 3)


# --- Vocabulary --------------------------------------------------------------


def test_vocabulary_basics():
    v = Vocabulary(["the", "cat"])
    assert len(v) == 3
    assert v.symbols == ["<unk>", "the", "cat"]
    assert v.unknown_id == 0
    assert v.index("cat") == 2
    assert v.index("dog") == 0
    assert v.symbol(1) == "the"
    assert "the" in v and "dog" not in v
    assert v.encode(["cat", "dog", "the"]).tolist() == [2, 0, 1]
    assert v.encode(["cat"]).dtype == np.int32
    assert v.decode(np.array([1, 2, 0])) == ["the", "cat", "<unk>"]
    with pytest.raises(IndexError):
        v.symbol(3)
    with pytest.raises(IndexError):
        v.decode([3])


def test_closed_vocabulary_raises_naming_symbol():
    tags = Vocabulary(["NN", "VB"], unknown=False)
    assert tags.unknown_id is None
    assert tags.index("NN") == 0
    with pytest.raises(KeyError, match="'JJ'"):
        tags.index("JJ")
    with pytest.raises(KeyError, match="'JJ'"):
        tags.encode(["NN", "JJ"])


def test_vocabulary_rejects_duplicates_and_reserved_symbol():
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="reserved"):
        Vocabulary(["<unk>"])
    assert Vocabulary(["<unk>"], unknown=False).symbols == ["<unk>"]


def test_from_counts_order_min_count_and_max_size():
    tokens = ["b", "a", "c", "a", "b", "d", "a", "e"]
    v = Vocabulary.from_counts(tokens)
    # a:3, then b:2, then the singletons alphabetically.
    assert v.symbols == ["<unk>", "a", "b", "c", "d", "e"]
    v = Vocabulary.from_counts(tokens, min_count=2)
    assert v.symbols == ["<unk>", "a", "b"]
    assert v.encode(["c", "a"]).tolist() == [0, 1]
    assert Vocabulary.from_counts(tokens, max_size=3).symbols == ["<unk>", "a", "b"]
    assert Vocabulary.from_counts(tokens, unknown=False, max_size=1).symbols == ["a"]
    assert Vocabulary.from_counts(["<unk>", "x"]).symbols == ["<unk>", "x"]


def test_vocabulary_json_round_trip():
    for v in (Vocabulary(["x", "y"]), Vocabulary(["NN", "VB"], unknown=False)):
        assert Vocabulary.from_json(v.to_json()) == v
    with pytest.raises(ValueError):
        Vocabulary.from_json({"symbols": ["x"]})


# --- Corpus ------------------------------------------------------------------


def test_from_sequences_discrete_with_empty_sequence():
    corpus = Corpus.from_sequences([np.array([1, 2, 3]), np.array([], dtype=int), [4, 5]])
    assert corpus.is_discrete
    assert corpus.observations.dtype == np.int32
    assert corpus.offsets.dtype == np.int64
    assert corpus.offsets.tolist() == [0, 3, 3, 5]
    assert corpus.lengths.tolist() == [3, 0, 2]
    assert (len(corpus), corpus.n_sequences, corpus.n_tokens) == (3, 3, 5)
    assert corpus[1].size == 0
    assert corpus[-1].tolist() == [4, 5]
    assert corpus[np.int64(0)].tolist() == [1, 2, 3]
    assert [seq.tolist() for seq in corpus] == [[1, 2, 3], [], [4, 5]]
    # Sequences are views, not copies.
    assert np.shares_memory(corpus[0], corpus.observations)
    with pytest.raises(IndexError):
        corpus[3]


def test_from_sequences_continuous():
    seqs = [np.zeros((2, 3)), np.ones((4, 3), dtype=np.float32)]
    corpus = Corpus.from_sequences(seqs)
    assert not corpus.is_discrete
    assert corpus.observations.shape == (6, 3)
    assert corpus.observations.dtype == np.float64
    assert corpus[1].shape == (4, 3)
    with pytest.raises(ValueError, match="mix"):
        Corpus.from_sequences([np.zeros((2, 3)), np.zeros((2, 2))])
    with pytest.raises(ValueError, match="mix"):
        Corpus.from_sequences([np.zeros((2, 3)), np.array([1, 2])])
    with pytest.raises(ValueError, match="sequence 0"):
        Corpus.from_sequences([np.zeros(3)])


def test_from_sequences_with_gold():
    corpus = Corpus.from_sequences([[0, 1], [2]], gold=[[1, 1], [0]])
    assert corpus.gold.tolist() == [1, 1, 0]
    assert corpus.gold.dtype == np.int32
    with pytest.raises(ValueError, match="gold sequence 1"):
        Corpus.from_sequences([[0, 1], [2]], gold=[[1, 1], [0, 0]])


def test_from_concatenated_hmmlearn_layout():
    X = np.array([[0], [1], [2], [1], [0]])
    corpus = Corpus.from_concatenated(X, lengths=[2, 3])
    assert corpus.is_discrete
    assert corpus.observations.tolist() == [0, 1, 2, 1, 0]
    assert corpus.offsets.tolist() == [0, 2, 5]
    single = Corpus.from_concatenated(np.arange(4))
    assert single.offsets.tolist() == [0, 4]
    continuous = Corpus.from_concatenated(np.ones((5, 2)), lengths=np.array([1, 0, 4]))
    assert continuous.lengths.tolist() == [1, 0, 4]


def test_from_concatenated_lengths_must_sum():
    with pytest.raises(ValueError, match="lengths sum to 4 but X has 5 rows"):
        Corpus.from_concatenated(np.arange(5), lengths=[2, 2])
    with pytest.raises(ValueError, match="non-negative"):
        Corpus.from_concatenated(np.arange(5), lengths=[6, -1])
    with pytest.raises(ValueError, match="shape"):
        Corpus.from_concatenated(np.ones(5))


def test_constructor_validation():
    with pytest.raises(ValueError, match="offsets must start at 0"):
        Corpus(np.arange(3), [0, 2])
    with pytest.raises(ValueError, match="non-decreasing"):
        Corpus(np.arange(3), [0, 2, 1, 3])
    with pytest.raises(ValueError, match="non-negative"):
        Corpus(np.array([0, -1]), [0, 2])
    with pytest.raises(ValueError, match="int32"):
        Corpus(np.array([0, 2**40]), [0, 2])
    with pytest.raises(ValueError, match="vocabulary has only 2"):
        Corpus(np.array([0, 2]), [0, 2], vocabulary=Vocabulary(["a"]))
    with pytest.raises(ValueError, match="gold has 1 labels"):
        Corpus(np.array([0, 1]), [0, 2], gold=[0])
    with pytest.raises(ValueError, match="NaN"):
        Corpus(np.array([[0.0], [np.nan]]), [0, 2])
    with pytest.raises(ValueError, match="dtype"):
        Corpus(np.array([True, False]), [0, 2])
    corpus = Corpus(np.array([0, 1], dtype=np.int64), np.array([0, 2], dtype=np.int32))
    assert corpus.observations.dtype == np.int32
    assert corpus.offsets.dtype == np.int64


def test_subsetting_carries_gold():
    corpus = Corpus.from_sequences([[1, 2], [3], [], [4, 5, 6]], gold=[[0, 1], [2], [], [3, 4, 5]])
    sub = corpus[[3, 0]]
    assert isinstance(sub, Corpus)
    assert [seq.tolist() for seq in sub] == [[4, 5, 6], [1, 2]]
    assert sub.gold.tolist() == [3, 4, 5, 0, 1]
    assert [seq.tolist() for seq in corpus[1:3]] == [[3], []]
    assert [seq.tolist() for seq in corpus[::-2]] == [[4, 5, 6], [3]]
    mask = np.array([True, False, False, True])
    assert corpus[mask].n_tokens == 5
    assert corpus[5:].n_sequences == 0


def test_split_like():
    corpus = Corpus.from_concatenated(np.arange(6), lengths=[2, 0, 4])
    parts = corpus.split_like(np.arange(6) * 10)
    assert [p.tolist() for p in parts] == [[0, 10], [], [20, 30, 40, 50]]
    with pytest.raises(ValueError, match="expected 6 values"):
        corpus.split_like(np.arange(5))


def test_as_corpus():
    corpus = Corpus.from_sequences([[0, 1]])
    assert as_corpus(corpus) is corpus
    with pytest.raises(ValueError, match="lengths"):
        as_corpus(corpus, lengths=[2])
    assert as_corpus([np.array([0, 1]), np.array([2])]).lengths.tolist() == [2, 1]
    assert as_corpus((np.zeros((2, 2)),)).n_tokens == 2
    assert as_corpus(np.array([0, 1, 2]), lengths=[1, 2]).lengths.tolist() == [1, 2]
    with pytest.raises(ValueError, match="lengths"):
        as_corpus([np.array([0, 1])], lengths=[2])
    with pytest.raises(ValueError, match="lengths sum"):
        as_corpus(np.array([0, 1, 2]), lengths=[1, 1])


def test_save_load_round_trip(tmp_path):
    vocab = Vocabulary(["a", "b"])
    tags = Vocabulary(["N", "V"], unknown=False)
    corpus = Corpus(
        np.array([1, 2, 0]),
        [0, 1, 1, 3],
        vocabulary=vocab,
        gold=[0, 1, 1],
        tagset=tags,
        source="x.txt",
    )
    path = tmp_path / "corpus.bin"
    corpus.save(path)
    assert path.exists()
    loaded = Corpus.load(path)
    np.testing.assert_array_equal(loaded.observations, corpus.observations)
    np.testing.assert_array_equal(loaded.offsets, corpus.offsets)
    np.testing.assert_array_equal(loaded.gold, corpus.gold)
    assert loaded.observations.dtype == np.int32
    assert loaded.vocabulary == vocab
    assert loaded.tagset == tags
    assert loaded.source == "x.txt"

    plain = Corpus.from_sequences([np.ones((2, 3))])
    plain.save(tmp_path / "plain.npz")
    loaded = Corpus.load(tmp_path / "plain.npz")
    np.testing.assert_array_equal(loaded.observations, plain.observations)
    assert loaded.vocabulary is None and loaded.gold is None
    assert loaded.source.endswith("plain.npz")


def test_load_rejects_other_files(tmp_path):
    path = write(tmp_path, "notes.txt", "hello\n")
    with pytest.raises(CorpusFormatError, match=r"notes\.txt"):
        Corpus.load(path)
    other = tmp_path / "other.npz"
    np.savez(other, x=np.arange(3))
    with pytest.raises(CorpusFormatError, match=r"other\.npz"):
        Corpus.load(other)


# --- read_text ---------------------------------------------------------------


def test_read_text(tmp_path):
    path = write(tmp_path, "text.txt", "the cat sat\n\n  \nThe dog\tsat  \n")
    corpus = read_text(path)
    assert corpus.lengths.tolist() == [3, 3]
    words = corpus.vocabulary.decode(corpus.observations)
    assert words == ["the", "cat", "sat", "The", "dog", "sat"]
    assert corpus.observations.dtype == np.int32
    assert corpus.gold is None
    assert corpus.source == str(path)
    lower = read_text(path, lowercase=True)
    assert lower.vocabulary.decode(lower[1]) == ["the", "dog", "sat"]


def test_read_text_min_count_and_fixed_vocabulary(tmp_path):
    path = write(tmp_path, "text.txt", "a b a\nc a b\n")
    corpus = read_text(path, min_count=2)
    assert corpus.vocabulary.symbols == ["<unk>", "a", "b"]
    assert corpus.observations.tolist() == [1, 2, 1, 0, 1, 2]
    fixed = read_text(path, vocabulary=Vocabulary(["c"]))
    assert fixed.observations.tolist() == [0, 0, 0, 1, 0, 0]


def test_read_text_crlf(tmp_path):
    path = write(tmp_path, "crlf.txt", b"a b\r\n\r\nc\r\n")
    corpus = read_text(path)
    assert corpus.vocabulary.decode(corpus.observations) == ["a", "b", "c"]


@pytest.mark.parametrize("content", ["", "\n  \n\t\n"])
def test_read_text_without_tokens(tmp_path, content):
    path = write(tmp_path, "empty.txt", content)
    with pytest.raises(CorpusFormatError, match=r"empty\.txt") as excinfo:
        read_text(path)
    assert excinfo.value.path == str(path)


def test_read_text_bad_utf8_reports_line(tmp_path):
    path = write(tmp_path, "bad.txt", b"ok line\nfine too\nbroken \xff here\nlast\n")
    with pytest.raises(CorpusFormatError, match="utf-8") as excinfo:
        read_text(path)
    assert_error_at(excinfo, path, 3)


def test_read_text_other_encoding(tmp_path):
    path = write(tmp_path, "latin.txt", "café noir\n".encode("latin-1"))
    corpus = read_text(path, encoding="latin-1")
    assert corpus.vocabulary.decode(corpus.observations) == ["café", "noir"]


def test_read_text_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "nope.txt")


# --- read_tagged -------------------------------------------------------------


def test_read_tagged(tmp_path):
    content = "The/AT cat/NN sat/VBD\n\n1/2/CD of/IN The/AT cake/NN\n"
    path = write(tmp_path, "brown.txt", content)
    corpus = read_tagged(path, lowercase=True)
    assert corpus.lengths.tolist() == [3, 4]
    words = corpus.vocabulary.decode(corpus.observations)
    assert words == ["the", "cat", "sat", "1/2", "of", "the", "cake"]
    tags = corpus.tagset.decode(corpus.gold)
    assert tags == ["AT", "NN", "VBD", "CD", "IN", "AT", "NN"]
    assert corpus.tagset.unknown_id is None
    # The tag set is ordered by frequency, then alphabetically.
    assert corpus.tagset.symbols == ["AT", "NN", "CD", "IN", "VBD"]


def test_read_tagged_other_separator(tmp_path):
    path = write(tmp_path, "tagged.txt", "a_b_X c_Y\n")
    corpus = read_tagged(path, sep="_")
    assert corpus.vocabulary.decode(corpus.observations) == ["a_b", "c"]
    assert corpus.tagset.decode(corpus.gold) == ["X", "Y"]


@pytest.mark.parametrize(
    "token, message",
    [("foo", "token 'foo' has no '/TAG' part"), ("/NN", "empty word"), ("foo/", "empty tag")],
)
def test_read_tagged_malformed_token(tmp_path, token, message):
    path = write(tmp_path, "brown.txt", f"a/DT b/NN\n\nc/DT {token} d/NN\n")
    with pytest.raises(CorpusFormatError, match=message) as excinfo:
        read_tagged(path)
    assert_error_at(excinfo, path, 3)
    assert repr(token) in str(excinfo.value)


def test_read_tagged_fixed_tagset(tmp_path):
    path = write(tmp_path, "brown.txt", "a/DT b/NN\nc/DT d/JJ\n")
    tagset = Vocabulary(["DT", "NN", "JJ"], unknown=False)
    corpus = read_tagged(path, tagset=tagset)
    assert corpus.tagset is tagset
    assert corpus.gold.tolist() == [0, 1, 0, 2]
    with pytest.raises(CorpusFormatError, match="tag 'JJ'") as excinfo:
        read_tagged(path, tagset=Vocabulary(["DT", "NN"], unknown=False))
    assert_error_at(excinfo, path, 2)


def test_read_tagged_empty_and_bad_bytes(tmp_path):
    with pytest.raises(CorpusFormatError, match="empty"):
        read_tagged(write(tmp_path, "empty.txt", ""))
    path = write(tmp_path, "bad.txt", b"a/DT\nb/NN\nc\xc3/NN\n")
    with pytest.raises(CorpusFormatError) as excinfo:
        read_tagged(path)
    assert_error_at(excinfo, path, 3)


# --- read_conllu -------------------------------------------------------------

CONLLU = """\
# sent_id = 1
# text = Vámonos al mar.
1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_
1\tVamos\tir\tVERB\tVMM\t_\t0\troot\t_\t_
2\tnos\tnosotros\tPRON\tPP\t_\t1\tobj\t_\t_
3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_
3\ta\ta\tADP\tSP\t_\t5\tcase\t_\t_
4\tel\tel\tDET\tDA\t_\t5\tdet\t_\t_
5\tmar\tmar\tNOUN\tNC\t_\t1\tobl\t_\tSpaceAfter=No
6\t.\t.\tPUNCT\tFP\t_\t1\tpunct\t_\t_

# sent_id = 2
1\tSí\tsí\tINTJ\tI\t_\t0\troot\t_\t_
1.1\tva\tir\tVERB\tVMM\t_\t_\t_\t0:root\t_
"""


def test_read_conllu(tmp_path):
    path = write(tmp_path, "es.conllu", CONLLU)
    corpus = read_conllu(path)
    assert corpus.lengths.tolist() == [6, 1]
    words = corpus.vocabulary.decode(corpus.observations)
    assert words == ["Vamos", "nos", "a", "el", "mar", ".", "Sí"]
    tags = corpus.tagset.decode(corpus.gold)
    assert tags == ["VERB", "PRON", "ADP", "DET", "NOUN", "PUNCT", "INTJ"]
    xpos = read_conllu(path, tag="xpos", lowercase=True)
    assert xpos.tagset.decode(xpos.gold)[:2] == ["VMM", "PP"]
    assert xpos.vocabulary.decode(xpos[1]) == ["sí"]
    words_only = read_conllu(path, tag=None)
    assert words_only.gold is None and words_only.n_tokens == 7
    with pytest.raises(ValueError, match="tag"):
        read_conllu(path, tag="lemma")


def test_read_conllu_malformed_line(tmp_path):
    lines = CONLLU.splitlines()
    lines[5] = "3\ta\tADP"
    path = write(tmp_path, "broken.conllu", "\n".join(lines) + "\n")
    with pytest.raises(CorpusFormatError, match="10 tab-separated fields, found 3") as excinfo:
        read_conllu(path)
    assert_error_at(excinfo, path, 6)


def test_read_conllu_bad_id_and_missing_tag(tmp_path):
    path = write(tmp_path, "id.conllu", CONLLU.replace("\n2\tnos", "\nx\tnos"))
    with pytest.raises(CorpusFormatError, match="invalid word id 'x'") as excinfo:
        read_conllu(path)
    assert_error_at(excinfo, path, 5)
    path = write(tmp_path, "range.conllu", CONLLU.replace("3-4\tal", "4-3\tal"))
    with pytest.raises(CorpusFormatError, match="invalid word id '4-3'") as excinfo:
        read_conllu(path)
    assert_error_at(excinfo, path, 6)
    path = write(tmp_path, "spaces.conllu", CONLLU.replace("\tmar\tmar", "\tmar  x\tmar"))
    with pytest.raises(CorpusFormatError, match="two consecutive spaces") as excinfo:
        read_conllu(path)
    assert_error_at(excinfo, path, 9)
    path = write(tmp_path, "tag.conllu", CONLLU.replace("\tPRON\tPP", "\tPRON\t_"))
    with pytest.raises(CorpusFormatError, match="no XPOS tag") as excinfo:
        read_conllu(path, tag="xpos")
    assert_error_at(excinfo, path, 5)


def test_read_conllu_unknown_tag_reports_token_line(tmp_path):
    path = write(tmp_path, "es.conllu", CONLLU)
    tagset = Vocabulary(["VERB", "PRON", "ADP", "DET", "NOUN", "PUNCT"], unknown=False)
    with pytest.raises(CorpusFormatError, match="tag 'INTJ'") as excinfo:
        read_conllu(path, tagset=tagset)
    assert_error_at(excinfo, path, 13)


def test_read_conllu_empty_and_bad_bytes(tmp_path):
    with pytest.raises(CorpusFormatError, match="no tokens"):
        read_conllu(write(tmp_path, "comments.conllu", "# just a comment\n\n"))
    data = CONLLU.encode("utf-8").replace(b"Vamos", b"Va\xffos")
    path = write(tmp_path, "bad.conllu", data)
    with pytest.raises(CorpusFormatError, match="utf-8") as excinfo:
        read_conllu(path)
    assert_error_at(excinfo, path, 4)

"""Reading tag sequences with gold heads from CoNLL-U (punctuation removal, ranges, length cut)."""
import numpy as np
import pytest

from cvbayes.data import CorpusFormatError, Vocabulary
from cvbayes.data.dependencies import read_dependencies


def row(word_id, form, upos, xpos, head):
    return "\t".join([str(word_id), form, form.lower(), upos, xpos, "_", str(head), "dep", "_", "_"])


TREEBANK = "\n".join([
    "# sent_id = a",
    "# text = Don't go, now.",
    "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_",
    row(1, "Do", "AUX", "VBP", 3),
    row(2, "n't", "PART", "RB", 3),
    row(3, "go", "VERB", "VB", 0),
    row(4, ",", "PUNCT", ",", 5),
    row(5, "now", "ADV", "RB", 3),
    "5.1\tx\tx\tNOUN\tNN\t_\t_\t_\t_\t_",
    row(6, ".", "PUNCT", ".", 3),
    "",
    "# sent_id = b",
    row(1, '"', "PUNCT", "``", 2),
    row(2, "Hi", "INTJ", "UH", 0),
    "",
    "# sent_id = c: 'a' hangs from the hyphen, which hangs from 'c'",
    row(1, "a", "DET", "DT", 2),
    row(2, "-", "PUNCT", "HYPH", 4),
    row(3, "b", "NOUN", "NN", 4),
    row(4, "c", "VERB", "VB", 0),
    "",
    "# sent_id = d: five words",
    row(1, "x", "NOUN", "NN", 2),
    row(2, "y", "VERB", "VB", 0),
    row(3, "z", "NOUN", "NN", 2),
    row(4, "w", "ADV", "RB", 2),
    row(5, "v", "ADV", "RB", 2),
    "",
    "# sent_id = e: punctuation only",
    row(1, "!", "PUNCT", ".", 0),
    "",
])


@pytest.fixture
def treebank(tmp_path):
    path = tmp_path / "tiny.conllu"
    path.write_text(TREEBANK, encoding="utf-8")
    return path


def test_reads_words_skipping_ranges_and_empty_nodes(treebank):
    corpus = read_dependencies(treebank)
    assert corpus.n_sentences == 5 and corpus.n_tokens == 6 + 2 + 4 + 5 + 1
    np.testing.assert_array_equal(corpus.lengths, [6, 2, 4, 5, 1])
    np.testing.assert_array_equal(corpus.heads[:6], [3, 3, 0, 5, 3, 3])
    assert corpus.tagset.decode(corpus.tags[:6]) == ["AUX", "PART", "VERB", "PUNCT", "ADV", "PUNCT"]
    np.testing.assert_array_equal(corpus.sentence_ids, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(corpus.word_ids[:6], [1, 2, 3, 4, 5, 6])
    assert corpus.tagset.unknown_id is None and corpus.tag_column == "upos"
    as_corpus = corpus.as_corpus()
    np.testing.assert_array_equal(as_corpus.observations, corpus.tags)
    assert as_corpus.vocabulary == corpus.tagset


def test_punctuation_removal_reattaches_and_length_cut_counts_after_it(treebank):
    corpus = read_dependencies(treebank, remove_punctuation=True, max_length=4)
    # a keeps Do n't go now; b keeps Hi; c keeps a b c; d (5 words) and e (none left) go
    np.testing.assert_array_equal(corpus.offsets, [0, 4, 5, 8])
    assert corpus.tagset.decode(corpus.tags) == ["AUX", "PART", "VERB", "ADV", "INTJ", "DET", "NOUN", "VERB"]
    # 'now' kept its head; 'a' hung from the removed hyphen and moves to its head 'c'
    np.testing.assert_array_equal(corpus.heads, [3, 3, 0, 3, 0, 3, 3, 0])
    np.testing.assert_array_equal(corpus.word_ids, [1, 2, 3, 5, 2, 1, 3, 4])
    np.testing.assert_array_equal(corpus.sentence_ids, [0, 1, 2])
    np.testing.assert_array_equal(corpus.sentence_words, [6, 2, 4])
    assert "PUNCT" not in corpus.tagset
    assert read_dependencies(treebank, remove_punctuation=True).n_sentences == 4
    assert read_dependencies(treebank, max_length=4).n_sentences == 3


def test_xpos_column_and_a_fixed_tagset(treebank, tmp_path):
    corpus = read_dependencies(treebank, tag="xpos", remove_punctuation=True)
    assert corpus.tagset.decode(corpus.tags[:4]) == ["VBP", "RB", "VB", "RB"]
    again = read_dependencies(treebank, tag="xpos", tagset=corpus.tagset, remove_punctuation=True)
    np.testing.assert_array_equal(again.tags, corpus.tags)
    with pytest.raises(CorpusFormatError, match=r"tiny.conllu, line 4: tag 'VBP' is not in the given tag set"):
        read_dependencies(treebank, tag="xpos", tagset=Vocabulary(["RB"], unknown=False))


def test_heads_go_back_to_the_file_words(treebank):
    corpus = read_dependencies(treebank, remove_punctuation=True, max_length=4)
    predicted = np.array([2, 3, 0, 3, 0, 2, 0, 2])
    full = corpus.file_heads(predicted)
    # removed words (',' and '.') hang from the predicted root word 'go' (ID 3)
    np.testing.assert_array_equal(full[0], [2, 3, 0, 3, 3, 3])
    np.testing.assert_array_equal(full[1], [2, 0])
    np.testing.assert_array_equal(full[2], [3, 3, 0, 3])
    with pytest.raises(ValueError, match="one per kept word"):
        corpus.file_heads(predicted[:3])


@pytest.mark.parametrize("lines,message,line", [
    ([row(1, "a", "X", "X", 3), row(2, "b", "X", "X", 0)], "HEAD 3 is not a word of this sentence", 1),
    ([row(1, "a", "X", "X", 0), row(2, "b", "X", "X", "_")], "HEAD '_' is not a word number", 2),
    ([row(1, "a", "X", "X", 0), row(3, "b", "X", "X", 1)], "word ID 3 out of sequence, expected 2", 2),
    ([row(1, "a", "X", "_", 0)], "word has no XPOS tag", 1),
    ([row(1, "a", "X", "X", 2), row(2, ",", "PUNCT", ",", 3), row(3, ";", "PUNCT", ":", 2)],
     "cycle through removed words", 1),
    (["1\ta\tb"], "expected 10 tab-separated fields", 1),
])
def test_errors_name_the_file_and_line(tmp_path, lines, message, line):
    path = tmp_path / "bad.conllu"
    path.write_text("# a comment\n" + "\n".join(lines) + "\n\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_dependencies(path, tag="xpos", remove_punctuation=True)
    assert error.value.path == str(path) and error.value.line == line + 1


def test_nothing_left_is_an_error(treebank, tmp_path):
    with pytest.raises(ValueError, match="max_length must be at least 1"):
        read_dependencies(treebank, max_length=0)
    punctuation = tmp_path / "punct.conllu"
    punctuation.write_text(row(1, "!", "PUNCT", ".", 0) + "\n\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="punct.conllu: no sentence left to read"):
        read_dependencies(punctuation, remove_punctuation=True)
    long = tmp_path / "long.conllu"
    long.write_text("\n".join(row(i, "w", "NOUN", "NN", 0 if i == 1 else 1) for i in range(1, 5)) + "\n\n",
                    encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="long.conllu: no sentence of at most 3 words left"):
        read_dependencies(long, max_length=3)

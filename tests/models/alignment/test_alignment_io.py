"""Parallel corpora, Pharaoh files, symmetrisation and AER on hand-made examples."""
import io

import numpy as np
import pytest

from cvbayes.models.alignment import (ParallelCorpus, read_fast_align, read_gold_alignments, read_parallel, read_pharaoh,
                               score_alignment, symmetrize, write_pharaoh)
from cvbayes.data import CorpusFormatError, Vocabulary


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def expect_error(call, path, line):
    with pytest.raises(CorpusFormatError) as info:
        call()
    assert info.value.path == str(path) and info.value.line == line
    assert f"{path}, line {line}" in str(info.value)
    return info.value


# -- corpora ---------------------------------------------------------------------------------

def test_read_parallel_keeps_pairs_and_empty_lines(tmp_path):
    src = write(tmp_path, "c.src", "Das Haus\n\nein Buch\n")
    tgt = write(tmp_path, "c.tgt", "the house\r\nnothing here\na book")
    corpus = read_parallel(src, tgt)
    assert len(corpus) == 3 and corpus.n_source_tokens == 4 and corpus.n_target_tokens == 6
    assert corpus.source_vocabulary.decode(corpus.source[0]) == ["Das", "Haus"]
    assert corpus.source[1].size == 0 and corpus.source[1].dtype == np.int32
    assert corpus.target_vocabulary.decode(corpus.target[2]) == ["a", "book"]
    lower = read_parallel(src, tgt, lowercase=True)
    assert lower.source_vocabulary.decode(lower.source[0]) == ["das", "haus"]


def test_read_parallel_names_the_short_file_and_its_missing_line(tmp_path):
    src = write(tmp_path, "c.src", "a\nb\nc\n")
    tgt = write(tmp_path, "c.tgt", "x\ny\n")
    error = expect_error(lambda: read_parallel(src, tgt), tgt, 3)
    assert "2 lines" in error.message and str(src) in error.message
    expect_error(lambda: read_parallel(tgt, src), tgt, 3)


def test_read_parallel_reports_bad_utf8_by_line(tmp_path):
    src = write(tmp_path, "c.src", b"a\nb \xff\n")
    tgt = write(tmp_path, "c.tgt", "x\ny\n")
    assert "utf-8" in expect_error(lambda: read_parallel(src, tgt), src, 2).message


def test_read_fast_align(tmp_path):
    path = write(tmp_path, "c.txt", "das Haus ||| the house\n ||| nothing\nBuch |||\n")
    corpus = read_fast_align(path, lowercase=True)
    assert [corpus.source_vocabulary.decode(s) for s in corpus.source] == [["das", "haus"], [], ["buch"]]
    assert [corpus.target_vocabulary.decode(t) for t in corpus.target] == [["the", "house"], ["nothing"], []]
    for bad in ("a b\n", "a ||| b ||| c\n"):
        path = write(tmp_path, "bad.txt", "x ||| y\n" + bad)
        assert "|||" in expect_error(lambda: read_fast_align(path), path, 2).message


def test_parallel_corpus_reversed_and_sliced():
    corpus = ParallelCorpus.from_tokens([["a", "b"], ["b"]], [["x"], ["y", "x", "x"]])
    assert corpus.source_vocabulary.symbols == ["b", "a"]  # by frequency, then alphabetically
    flipped = corpus.reversed()
    assert flipped.source_vocabulary is corpus.target_vocabulary
    assert [s.tolist() for s in flipped.source] == [t.tolist() for t in corpus.target]
    assert flipped.n_source_tokens == corpus.n_target_tokens == 4
    assert len(corpus[1:]) == 1 and corpus[1:].target[0].tolist() == corpus.target[1].tolist()
    with pytest.raises(ValueError, match="word ids"):
        ParallelCorpus([np.array([0, 5])], [np.array([0])], Vocabulary(["a"], unknown=False),
                       Vocabulary(["x"], unknown=False))
    with pytest.raises(ValueError, match="2 source sentences but 1"):
        ParallelCorpus.from_tokens([["a"], ["b"]], [["x"]])


# -- Pharaoh files -----------------------------------------------------------------------------

def test_pharaoh_round_trip(tmp_path):
    links = [{(2, 0), (0, 1), (0, 0), (10, 12)}, set(), {(1, 1)}]
    handle = io.StringIO()
    write_pharaoh(links, handle)
    assert handle.getvalue() == "0-0 0-1 2-0 10-12\n\n1-1\n"
    path = tmp_path / "a.align"
    write_pharaoh(links, path)
    assert read_pharaoh(path) == links


@pytest.mark.parametrize("item", ["1-x", "1--2", "-1-2", "1-2-3", "1:2", "1?2"])
def test_read_pharaoh_names_file_and_line_of_a_bad_item(tmp_path, item):
    path = write(tmp_path, "a.align", f"0-0 1-1\n\n2-2 {item}\n")
    assert repr(item) in expect_error(lambda: read_pharaoh(path), path, 3).message


def test_gold_alignments_with_possible_links(tmp_path):
    path = write(tmp_path, "gold.align", "0-0 1?1 2-1\n3?0\n")
    sure, possible = read_gold_alignments(path)
    assert sure == [{(0, 0), (2, 1)}, set()]
    assert possible == [{(0, 0), (1, 1), (2, 1)}, {(3, 0)}]
    bad = write(tmp_path, "bad.align", "0-0\n1!1\n")
    expect_error(lambda: read_gold_alignments(bad), bad, 2)


# -- symmetrisation ---------------------------------------------------------------------------

# worked by hand from Koehn's description (see cvbayes/models/alignment/symmetrize.py)
FORWARD = [{(0, 0), (1, 1), (2, 3), (3, 2)}, {(0, 0), (3, 1)}, {(0, 0), (3, 1)}]
REVERSE = [{(0, 0), (1, 2), (2, 3), (3, 3)}, {(0, 0), (2, 3)}, {(0, 0), (3, 2)}]


def test_intersection_union_and_one_direction():
    assert symmetrize(FORWARD, REVERSE, "intersection")[0] == {(0, 0), (2, 3)}
    assert symmetrize(FORWARD, REVERSE, "union")[0] == {(0, 0), (1, 1), (2, 3), (3, 2), (1, 2), (3, 3)}
    assert symmetrize(FORWARD, REVERSE, "forward") == FORWARD
    assert symmetrize(FORWARD, REVERSE, "reverse") == REVERSE
    with pytest.raises(ValueError, match="unknown symmetrization"):
        symmetrize(FORWARD, REVERSE, "grow-diag-final")


def test_grow_diag_final_and_by_hand():
    result = symmetrize(FORWARD, REVERSE, "grow-diag-final-and")
    # pair 0: the intersection {0-0, 2-3} grows diagonally 0-0 -> 1-1, then 1-1 -> 1-2
    # (target 2 unaligned), and 2-3 -> 3-3 (source 3 unaligned); 3-2 is in the union
    # but by then source 3 and target 2 are both aligned, so it stays out
    assert result[0] == {(0, 0), (1, 1), (1, 2), (2, 3), (3, 3)}
    # pair 1: nothing neighbours 0-0; FINAL-AND adds 3-1 (forward) and 2-3 (reverse),
    # each joining two unaligned words
    assert result[1] == {(0, 0), (3, 1), (2, 3)}
    # pair 2: after 3-1, the reverse link 3-2 would reuse source 3: "and" refuses it
    assert result[2] == {(0, 0), (3, 1)}


def test_grow_diag_follows_a_diagonal_through_the_union():
    # a diagonal chain in the union grows all the way from its first point
    chain = {(k, k) for k in range(6)}
    assert symmetrize([chain], [{(0, 0)}], "grow-diag-final-and") == [chain]
    assert symmetrize([{(0, 0)}], [chain], "grow-diag-final-and") == [chain]


# -- AER ----------------------------------------------------------------------------------------

def test_aer_with_sure_links_only():
    scores = score_alignment([{(0, 0), (1, 1), (2, 2)}], [{(0, 0), (1, 2)}])
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["aer"] == pytest.approx(1 - 2 / 5)
    assert (scores["n_predicted"], scores["n_sure"], scores["n_possible"]) == (3, 2, 2)


def test_aer_with_sure_and_possible_links():
    predicted = [{(0, 0), (1, 1), (2, 2)}, {(0, 1)}]
    sure = [{(0, 0), (1, 2)}, set()]
    # possible links need not repeat the sure ones: P is taken as P ∪ S
    possible = [{(1, 1)}, {(0, 1)}]
    scores = score_alignment(predicted, sure, possible)
    # |A| = 4, |S| = 2, |A ∩ S| = 1, |A ∩ P| = 3
    assert scores["precision"] == pytest.approx(3 / 4)
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["aer"] == pytest.approx(1 - 4 / 6)
    assert scores["n_possible"] == 4


def test_aer_edge_cases():
    perfect = score_alignment([{(0, 0)}], [{(0, 0)}])
    assert perfect["aer"] == 0.0 and perfect["precision"] == perfect["recall"] == 1.0
    empty = score_alignment([set()], [set()])
    assert empty["aer"] == 0.0 and empty["precision"] == 0.0
    with pytest.raises(ValueError, match="one per sentence pair"):
        score_alignment([set()], [set(), set()])

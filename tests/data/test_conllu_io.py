"""Lossless CoNLL-U: every byte not replaced comes back unchanged."""
import difflib

import conllu
import numpy as np
import pytest

from cvbayes.data import CorpusFormatError, read_conllu
from cvbayes.data.conllu_io import (
    ConlluDocument,
    parse_conllu_text,
    read_conllu_document,
    write_conllu_document,
)
from cvbayes.data.treebanks import treebank_file

# A made-up treebank in the shape of UD English EWT: document and paragraph comments, a
# comment without "=", a multiword token, an empty node with enhanced dependencies,
# "_" in every column somewhere, and a comment-only block.
SAMPLE = (
    "# newdoc id = weblog-0001\n"
    "# sent_id = weblog-0001-0001\n"
    "# newpar id = weblog-0001-p0001\n"
    "# text = I don't know, you know.\n"
    "1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing|Person=1|PronType=Prs\t4\tnsubj\t4:nsubj\t_\n"
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tdo\tdo\tAUX\tVBP\tMood=Ind|Tense=Pres|VerbForm=Fin\t4\taux\t4:aux\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_\n"
    "4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t0:root\tSpaceAfter=No\n"
    "5\t,\t,\tPUNCT\t,\t_\t7\tpunct\t7:punct\t_\n"
    "6\tyou\tyou\tPRON\tPRP\tCase=Nom|Person=2|PronType=Prs\t7\tnsubj\t7:nsubj\t_\n"
    "7\tknow\tknow\tVERB\tVBP\tMood=Ind|Tense=Pres|VerbForm=Fin\t4\tparataxis\t4:parataxis\tSpaceAfter=No|Gloss=x\n"
    "8\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_\n"
    "\n"
    "# sent_id = weblog-0001-0002\n"
    "# orig_file_sentence test001#2\n"
    "# text = Ellipsis here.\n"
    "1\tEllipsis\tellipsis\tNOUN\tNN\tNumber=Sing\t0\troot\t0:root\t_\n"
    "1.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t0:root\tCopyOf=-1\n"
    "2\there\there\tADV\tRB\tPronType=Dem\t1\tadvmod\t1.1:advmod\tSpaceAfter=No\n"
    "3\t.\t.\tPUNCT\t.\t_\t1\tpunct\t1:punct\t_\n"
    "\n"
    "# newdoc id = comment-only block\n"
    "\n"
    "# sent_id = 3\n"
    "# text =\n"
    "1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t0:root\t_\n"
    "\n"
)


def test_round_trip_is_byte_identical(tmp_path):
    path = tmp_path / "sample.conllu"
    path.write_bytes(SAMPLE.encode())
    document = read_conllu_document(path)
    assert [len(s) for s in document] == [8, 3, 0, 1] and document.n_words == 12
    out = tmp_path / "out.conllu"
    write_conllu_document(document, out)
    assert out.read_bytes() == path.read_bytes()
    # the same word count as the Corpus reader, which also skips ranges and empty nodes
    assert read_conllu(path).n_tokens == document.n_words


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "\n\n" + SAMPLE,
        SAMPLE + "\n\n",
        SAMPLE.rstrip("\n"),
        SAMPLE.rstrip("\n") + "\n",
        SAMPLE.replace("\n\n", "\n\n\n", 1),
        SAMPLE.replace("\n", "\r\n"),
        "\ufeff" + SAMPLE,
    ],
    ids=["empty", "one-newline", "leading-blanks", "trailing-blanks", "no-final-newline",
         "no-closing-blank", "double-blank", "crlf", "bom"],
)
def test_round_trip_keeps_blank_lines_terminators_and_bom(text):
    assert parse_conllu_text(text).to_text() == text


def test_columns_metadata_and_heads():
    document = parse_conllu_text(SAMPLE)
    first, second, block, third = document
    assert first.column("form") == ["I", "do", "n't", "know", ",", "you", "know", "."]
    assert second.column("DEPS") == ["0:root", "1.1:advmod", "1:punct"]
    assert first.metadata["text"] == "I don't know, you know."
    assert first.metadata["newpar id"] == "weblog-0001-p0001"
    assert second.metadata["orig_file_sentence test001#2"] is None
    assert third.metadata["text"] == ""
    assert block.metadata == {"newdoc id": "comment-only block"} and block.n_words == 0
    assert np.array_equal(first.heads(), [4, 4, 4, 0, 7, 7, 4, 4])
    assert first.line_number(1) == 7  # word 2 lies below the range line
    assert document.column("upos")[3] == ["INTJ"]


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    """(old, new) for each changed line; lines are never added or removed here."""
    old, new = before.split("\n"), after.split("\n")
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new) if a != b]


@pytest.mark.parametrize("column,index", [("upos", 3), ("xpos", 4), ("deprel", 7), ("misc", 9)])
def test_replacing_a_column_changes_only_that_field_of_ordinary_words(column, index):
    document = parse_conllu_text(SAMPLE)
    values = [f"T{i}" for i in range(document.n_words)]
    document.replace_column(column, values)
    changed = _changed_lines(SAMPLE, document.to_text())
    assert len(changed) == document.n_words  # every word line changes, nothing else
    for (old, new), value in zip(changed, values):
        old_fields, new_fields = old.split("\t"), new.split("\t")
        assert new_fields[index] == value
        assert old_fields[:index] + old_fields[index + 1:] == new_fields[:index] + new_fields[index + 1:]
    # ranges, empty nodes and comments are untouched
    assert "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_" in document.to_text()
    assert "1.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t0:root\tCopyOf=-1" in document.to_text()


def test_replacing_heads_and_writing_back_through_conllu():
    document = parse_conllu_text(SAMPLE)
    heads = np.array([2, 0, 2, 2, 2, 2, 2, 2, 0, 1, 1, 0])
    document.replace_column("head", heads)
    document.replace_column("deprel", ["dep"] * document.n_words)
    assert np.array_equal(np.concatenate([s.heads() for s in document if s.n_words]), heads)
    parsed = conllu.parse(document.to_text())
    words = [t for sentence in parsed for t in sentence if isinstance(t["id"], int)]
    assert [t["head"] for t in words] == heads.tolist()
    assert [t["form"] for t in words][:4] == ["I", "do", "n't", "know"]


def test_misc_key_is_set_replaced_appended_and_removed():
    document = parse_conllu_text(SAMPLE)
    first = document[0]
    first.set_misc("Gloss", ["a", None, None, "b", None, None, "c", None])
    assert first.column("misc") == [
        "Gloss=a", "_", "_", "SpaceAfter=No|Gloss=b", "_", "_", "SpaceAfter=No|Gloss=c", "_",
    ]
    first.set_misc("Gloss", [None] * 8)
    assert first.column("misc") == ["_", "_", "_", "SpaceAfter=No", "_", "_", "SpaceAfter=No", "_"]
    document.set_misc("State", list(range(document.n_words)))
    assert document[1].column("misc") == ["State=8", "SpaceAfter=No|State=9", "State=10"]
    diff = list(difflib.unified_diff(SAMPLE.split("\n"), document.to_text().split("\n"), lineterm="", n=0))
    assert sum(1 for line in diff if line.startswith("+") and not line.startswith("+++")) == 12


def test_bad_replacements_raise_and_write_nothing():
    document = parse_conllu_text(SAMPLE)
    with pytest.raises(ValueError, match="expected 12 values"):
        document.replace_column("upos", ["X"] * 11)
    with pytest.raises(ValueError, match="HEAD '9' is not a word number"):
        document.replace_column("head", [0] * 11 + [9])
    with pytest.raises(ValueError, match="cannot be written"):
        document.replace_column("upos", ["X"] * 11 + ["a b\tc"])
    with pytest.raises(ValueError, match="cannot be written"):
        document.replace_column("upos", ["X"] * 11 + [""])
    with pytest.raises(ValueError, match="ID column"):
        document.replace_column("id", ["1"] * 12)
    with pytest.raises(ValueError, match="unknown CoNLL-U column"):
        document.replace_column("tag", ["X"] * 12)
    with pytest.raises(ValueError, match="must not contain"):
        document.set_misc("Key", ["a|b"] + ["x"] * 11)
    with pytest.raises(ValueError, match="MISC key"):
        document.set_misc("a=b", ["x"] * 12)
    assert document.to_text() == SAMPLE


WORD = "1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t0:root\t_"


@pytest.mark.parametrize(
    "text,line,message",
    [
        ("# sent_id = 1\n1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\n\n", 2, "9 tab-separated fields"),
        (f"{WORD}\n2\tno\tno\tINTJ\tUH\t_\t1\tdiscourse\t1:discourse\t_\textra\n\n", 2, "11 tab-separated"),
        (f"{WORD}\n3\tno\tno\tINTJ\tUH\t_\t1\tdep\t_\t_\n\n", 2, "word ID 3 where 2"),
        ("2\tno\tno\tINTJ\tUH\t_\t0\troot\t_\t_\n\n", 1, "word ID 2 where 1"),
        (f"{WORD}\n\n0\tno\tno\tINTJ\tUH\t_\t0\troot\t_\t_\n", 3, "bad ID '0'"),
        (f"{WORD}\nx\tno\tno\tINTJ\tUH\t_\t1\tdep\t_\t_\n", 2, "bad ID 'x'"),
        (f"{WORD}\n3-4\tno\t_\t_\t_\t_\t_\t_\t_\t_\n", 2, "multiword range 3-4"),
        (f"{WORD}\n2-2\tno\t_\t_\t_\t_\t_\t_\t_\t_\n", 2, "multiword range 2-2"),
        (f"{WORD}\n2.1\tno\t_\t_\t_\t_\t_\t_\t_\t_\n", 2, "empty node 2.1 must follow word 1"),
        (f"{WORD}\n2\tno\tno\tINTJ\t\t_\t1\tdep\t_\t_\n", 2, "empty XPOS field"),
        (f"# text = a\n{WORD}\n   \n", 3, "only whitespace"),
        (f"{WORD}\r\n\r\n{WORD}\n", 3, "mixed line endings"),
        (f"{WORD}\n\n{WORD}\r\n", 3, "mixed line endings"),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.conllu"
    path.write_bytes(text.encode())
    with pytest.raises(CorpusFormatError, match=message) as info:
        read_conllu_document(path)
    assert info.value.path == str(path) and info.value.line == line


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.conllu"
    path.write_bytes(f"# text = ok\n{WORD}\n\n# text = caf\xe9\n".encode("latin-1"))
    with pytest.raises(CorpusFormatError, match="invalid UTF-8") as info:
        read_conllu_document(path)
    assert (info.value.path, info.value.line) == (str(path), 4)


def test_bad_head_is_reported_with_its_line():
    document = parse_conllu_text(f"# x\n{WORD}\n2\tno\tno\tINTJ\tUH\t_\t7\tdep\t_\t_\n\n", "t.conllu")
    with pytest.raises(CorpusFormatError, match="HEAD '7'") as info:
        document[0].heads()
    assert (info.value.path, info.value.line) == ("t.conllu", 3)


def test_select_writes_a_well_formed_subset():
    # the last sentence has no closing blank line, the first two blank lines after it
    text = "\n" + SAMPLE.replace("\n\n", "\n\n\n", 1).rstrip("\n")
    document = parse_conllu_text(text.replace("\n", "\r\n"))
    subset = document.select([3, 0])
    assert isinstance(subset, ConlluDocument)
    text = subset.to_text()
    assert text.startswith("# sent_id = 3\r\n") and text.endswith("\t_\r\n\r\n")
    assert text.count("\r\n\r\n") == 2 and parse_conllu_text(text).n_words == 9
    subset.replace_column("upos", ["X"] * 9)
    assert document[0].column("upos")[0] == "PRON"  # copies: the original is untouched


def _ewt_train():
    try:
        return treebank_file("ewt", "train")
    except FileNotFoundError:
        return None


@pytest.mark.skipif(_ewt_train() is None, reason="UD English EWT not fetched (cvbayes data fetch ewt)")
def test_real_treebank_round_trip_changes_only_the_tag_column(tmp_path):
    path = treebank_file("ewt", "dev")
    original = path.read_bytes()
    document = read_conllu_document(path)
    assert document.to_text().encode() == original
    was_x = sum(upos == "X" for sentence in document for upos in sentence.column("upos"))
    document.replace_column("upos", ["X"] * document.n_words)
    out = tmp_path / "tagged.conllu"
    document.write(out)
    before, after = original.decode().split("\n"), out.read_text().split("\n")
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after) if old != new]
    assert len(changed) == document.n_words - was_x
    for old, new in changed:
        old_fields, new_fields = old.split("\t"), new.split("\t")
        assert new_fields[3] == "X" and old_fields[:3] + old_fields[4:] == new_fields[:3] + new_fields[4:]

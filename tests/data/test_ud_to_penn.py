"""UD dependency trees to phrase-structure trees (flattest projection, Collins et al. 1999)."""
import pytest

from cvbayes.data.errors import CorpusFormatError
from cvbayes.data.trees import parse_trees
from cvbayes.data.ud_to_penn import convert_conllu, dependencies_to_tree, main


def conllu_text(*sentences):
    """CoNLL-U from rows 'ID FORM UPOS XPOS HEAD DEPREL' (lemma, feats, deps, misc left empty)."""
    blocks = []
    for sentence in sentences:
        lines = []
        for row in sentence:
            if row.startswith("#"):
                lines.append(row)
                continue
            word_id, form, upos, xpos, head, deprel = row.split()
            lines.append("\t".join([word_id, form, "_", upos, xpos, "_", head, deprel, "_", "_"]))
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks) + "\n"


SIMPLE = [
    "# sent_id = simple",
    "1 The DET DT 2 det",
    "2 dog NOUN NN 3 nsubj",
    "3 barked VERB VBD 0 root",
    "4 at ADP IN 6 case",
    "5 the DET DT 6 det",
    "6 cat NOUN NN 3 obl",
    "7 . PUNCT . 3 punct",
]
# "issue" depends on "hearing" across "is scheduled": the arc is not projective.
NON_PROJECTIVE = [
    "# sent_id = hearing",
    "1 A DET DT 2 det",
    "2 hearing NOUN NN 4 nsubj:pass",
    "3 is AUX VBZ 4 aux:pass",
    "4 scheduled VERB VBN 0 root",
    "5 on ADP IN 7 case",
    "6 the DET DT 7 det",
    "7 issue NOUN NN 2 nmod",
    "8 today NOUN NN 4 obl:tmod",
    "9 . PUNCT . 4 punct",
]
# A multiword token, an empty node, a subordinate clause, an infinitive and a possessive.
MULTIWORD = [
    "# sent_id = mwt",
    "1 I PRON PRP 4 nsubj",
    "2-3 don't _ _ _ _",
    "2 do AUX VBP 4 aux",
    "3 n't PART RB 4 advmod",
    "4 know VERB VB 0 root",
    "5 that SCONJ IN 9 mark",
    "6 John PROPN NNP 8 nmod:poss",
    "7 's PART POS 6 case",
    "8 dog NOUN NN 9 nsubj",
    "9 wants VERB VBZ 4 ccomp",
    "10 to PART TO 11 mark",
    "11 eat VERB VB 9 xcomp",
    "11.1 eat VERB VB _ _",
    "12 . PUNCT . 4 punct",
]
COPULA = [
    "1 She PRON PRP 2 nsubj",
    "2 wants VERB VBZ 0 root",
    "3 to PART TO 5 mark",
    "4 be AUX VB 5 cop",
    "5 happy ADJ JJ 2 xcomp",
    "6 . PUNCT . 2 punct",
]
FRAGMENTS = [["1 Thanks NOUN NNS 0 root", "2 ! PUNCT . 1 punct"], ["1 Hello INTJ UH 0 root"]]


@pytest.fixture
def treebank(tmp_path):
    path = tmp_path / "tiny.conllu"
    path.write_text(conllu_text(SIMPLE, NON_PROJECTIVE, MULTIWORD, COPULA, *FRAGMENTS), encoding="utf-8")
    return path


def test_converts_every_sentence_as_documented(treebank):
    converted = convert_conllu(treebank)
    assert [sentence.sent_id for sentence in converted] == ["simple", "hearing", "mwt", None, None, None]
    assert [str(sentence.tree) for sentence in converted] == [
        "(ROOT (S (NP (DT The) (NN dog)) (VBD barked) (PP (IN at) (DT the) (NN cat)) (. .)))",
        # "issue" is lifted to the head of "hearing".
        "(ROOT (S (NP (DT A) (NN hearing)) (VBZ is) (VBN scheduled) (PP (IN on) (DT the) (NN issue))"
        " (NN today) (. .)))",
        # The syntactic words of "don't" are the leaves; the empty node is ignored.
        "(ROOT (S (PRP I) (VBP do) (RB n't) (VB know) (SBAR (IN that) (NP (NP (NNP John) (POS 's))"
        " (NN dog)) (VBZ wants) (VP (TO to) (VB eat))) (. .)))",
        "(ROOT (S (PRP She) (VBZ wants) (VP (TO to) (VB be) (JJ happy)) (. .)))",
        "(ROOT (NP (NNS Thanks) (. !)))",
        "(ROOT (INTJ (UH Hello)))",
    ]
    assert [sentence.n_lifted for sentence in converted] == [0, 1, 0, 0, 0, 0]


def test_upos_preterminals(treebank):
    first = convert_conllu(treebank, tag="upos")[0]
    assert str(first.tree) == (
        "(ROOT (S (NP (DET The) (NOUN dog)) (VERB barked) (PP (ADP at) (DET the) (NOUN cat)) (PUNCT .)))")
    with pytest.raises(ValueError, match="tag"):
        convert_conllu(treebank, tag="deprel")


def test_lifting_repeats_until_projective():
    # Arcs 3->1, 0->2, 2->3, 1->4, 3->5. By hand: 3->1 (over the root 2) and 1->4 are not
    # projective; the shorter, 3->1, is lifted first (1 to 2); then 1->4 (4 to 2); that makes
    # 3->5 cross 2->4, so 5 is lifted to 2 as well: three lifts, every word under 2.
    heads = [3, 0, 2, 1, 3]
    tree, n_lifted = dependencies_to_tree(["a", "b", "c", "d", "e"], ["T"] * 5, ["NOUN"] * 5, heads,
                                          ["dep", "root", "dep", "dep", "dep"])
    assert heads == [3, 0, 2, 1, 3]  # the caller's list is not modified
    assert n_lifted == 3
    assert str(tree) == "(ROOT (NP (T a) (T b) (T c) (T d) (T e)))"
    # A projective tree is left alone: the same words with 4 under 3 and 1 under 2.
    tree, n_lifted = dependencies_to_tree(["a", "b", "c", "d", "e"], ["T"] * 5, ["NOUN"] * 5,
                                          [2, 0, 2, 3, 3], ["dep", "root", "dep", "dep", "dep"])
    assert n_lifted == 0
    assert str(tree) == "(ROOT (NP (T a) (T b) (NP (T c) (T d) (T e))))"


def write(tmp_path, rows):
    path = tmp_path / "bad.conllu"
    path.write_text(conllu_text(rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("rows,message,line", [
    (["1 a NOUN NN 0 root", "2 b NOUN NN 0 root"], "2 words have head 0", 1),
    (["1 a NOUN NN 2 dep", "2 b NOUN NN 1 dep", "3 c VERB VB 0 root"], "cycle", 1),
    (["1 a NOUN _ 0 root"], "has no XPOS tag", 1),
    (["1 a NOUN NN 0 root", "2 b NOUN NN x dep"], "head 'x'", 2),
    (["1 a NOUN NN 0 root", "2 b NOUN NN 5 dep"], "head '5'", 2),
    (["1 a NOUN NN 0 root", "3 b NOUN NN 1 dep"], "word id 3", 2),
])
def test_bad_input_names_file_and_line(tmp_path, rows, message, line):
    path = write(tmp_path, rows)
    with pytest.raises(CorpusFormatError, match=message) as error:
        convert_conllu(path)
    assert error.value.path == str(path)
    assert error.value.line == line


def test_brackets_in_words_are_written_as_the_ptb_does(tmp_path, capsys):
    rows = ["1 ( PUNCT -LRB- 2 punct", "2 yes INTJ UH 0 root", "3 ) PUNCT -RRB- 2 punct",
            "4 :) SYM NFP 2 discourse"]
    path = write(tmp_path, rows)
    tree = convert_conllu(path)[0].tree
    assert str(tree) == "(ROOT (INTJ (-LRB- -LRB-) (UH yes) (-RRB- -RRB-) (NFP :-RRB-)))"
    assert main([str(path)]) == 0
    printed = capsys.readouterr().out
    assert printed == str(tree) + "\n"
    assert parse_trees(printed) == [tree]

"""Penn-bracket trees and the grammar text format: reading, writing, round trips and error messages."""
import numpy as np
import pytest

from cvbayes.data.errors import CorpusFormatError
from cvbayes.data.trees import Tree, format_tree, parse_trees, read_trees, unbinarize, write_trees
from cvbayes.trees import (AnySubstring, Grammar, GrammarError, Rule, Terminal, compile_grammar, format_grammar,
                           parse_grammar, read_grammar, write_grammar)
from cvbayes.trees.grammar import BINARY, LEXICAL, NARY, SPAN, UNARY

PTB = """( (S (NP-SBJ (DT The) (NN dog))
     (VP (VBZ barks))
     (. .)) )
( (S (NP (PRP It)) (VP (VBD ran))))
"""


# ------------------------------------------------------------------ trees
def test_reads_ptb_wrappers_and_several_trees_per_line():
    trees = parse_trees(PTB)
    assert len(trees) == 2
    first = trees[0]
    assert first.label == "S" and first.leaves() == ["The", "dog", "barks", "."]
    assert first.children[0] == Tree("NP-SBJ", [Tree("DT", ["The"]), Tree("NN", ["dog"])])
    assert parse_trees("(A (B x)) (C y)(D (E z))") == [Tree("A", [Tree("B", ["x"])]), Tree("C", ["y"]),
                                                    Tree("D", [Tree("E", ["z"])])]
    wrapped = parse_trees("( (S (X x)) )", strip_wrapper=False)[0]
    assert wrapped.label == "" and wrapped.children[0].label == "S"


def test_span_lexical_nodes_and_spans():
    tree = parse_trees("(Word (SM k e) (V b o n a))")[0]
    verb = tree.children[1]
    assert verb.is_lexical and not verb.is_preterminal and verb.children == ("b", "o", "n", "a")
    assert [(label, start, end) for label, start, end, _ in tree.spans()] == [
        ("Word", 0, 6), ("SM", 0, 2), ("V", 2, 6)]


def test_write_and_read_round_trip(tmp_path):
    trees = parse_trees(PTB) + [Tree("X", [Tree("Y", ["a", "b"]), "c"])]
    path = tmp_path / "trees.mrg"
    write_trees(trees, path)
    assert read_trees(path) == trees
    write_trees(trees, path, wrapper=True)
    assert read_trees(path) == trees
    assert format_tree(trees[1]) == "(S (NP (PRP It)) (VP (VBD ran)))"
    assert str(trees[1]) == format_tree(trees[1]) and eval(repr(trees[1]), {"Tree": lambda s: parse_trees(s)[0]}) == trees[1]


@pytest.mark.parametrize("text, message, line", [
    ("(S (NP x)\n(VP y)", "never closed", 1),
    ("(S (NP x)))", "without a matching", 1),
    ("(S (NP x))\nword (S y)", "outside any tree", 2),
    ("(S\n (NP))", "empty node", 2),
    ("(S ())", "empty node", 1),
])
def test_tree_errors_name_file_and_line(tmp_path, text, message, line):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_trees(path)
    assert error.value.line == line and str(path) in str(error.value)


def test_empty_tree_file_is_an_error(tmp_path):
    path = tmp_path / "empty.mrg"
    path.write_text("\n  \n")
    with pytest.raises(CorpusFormatError, match="no trees"):
        read_trees(path)


def test_tree_type_checks_and_hashing():
    with pytest.raises(TypeError):
        Tree("S", [3])
    with pytest.raises(TypeError):
        Tree(None, [])
    a = Tree("S", [Tree("A", ["x"])])
    assert a == Tree("S", (Tree("A", ("x",)),)) and len({a, Tree("S", [Tree("A", ["x"])])}) == 1
    assert [node.label for node in Tree("S", [Tree("A", [Tree("B", ["x"])]), Tree("C", ["y"])]).subtrees()] == [
        "S", "A", "B", "C"]


def test_unbinarize_splices_internal_symbols():
    binary = Tree("NP", [Tree("D", ["the"]), Tree("@3:1", [Tree("A", ["big"]), Tree("N", ["dog"])])])
    assert unbinarize(binary) == Tree("NP", [Tree("D", ["the"]), Tree("A", ["big"]), Tree("N", ["dog"])])
    mixed = Tree("NP", [Tree("NP", ["x"]), Tree("@5:1", [Tree('@"and"', ["and"]), Tree("NP", ["y"])])])
    assert unbinarize(mixed) == Tree("NP", [Tree("NP", ["x"]), "and", Tree("NP", ["y"])])


# ------------------------------------------------------------------ grammar text format
GRAMMAR = """# Sesotho verbs (thesis eq. 4.25-4.29)
Word -> V          # a bare verb
Word -> V M
Word -> SM T V M
SM -> <any>
T -> <any:1>
V -> <any>
M -> <any:3>
NP -> "the" N "and" 'it''s'
N -> "say \\"hi\\"" N
N -> "\\\\"
"""


def test_grammar_parses_kinds_terminals_and_start():
    grammar = parse_grammar(GRAMMAR.replace("'it''s'", "'its'"))
    assert grammar.start == "Word"
    assert grammar.nonterminals == ("Word", "SM", "T", "V", "M", "NP", "N")
    kinds = [rule.kind for rule in grammar.rules]
    assert kinds == [UNARY, BINARY, NARY, SPAN, SPAN, SPAN, SPAN, NARY, NARY, LEXICAL]
    assert grammar.rules[4].rhs == (AnySubstring(1),)
    assert grammar.rules[7].rhs == (Terminal("the"), "N", Terminal("and"), Terminal("its"))
    assert grammar.rules[8].rhs[0] == Terminal('say "hi"') and grammar.rules[9].rhs[0] == Terminal("\\")
    assert grammar.terminals == ("the", "and", "its", 'say "hi"', "\\")
    assert grammar.rules[1].line == 3 and not grammar.has_weights and grammar.has_span_rules
    assert parse_grammar("A -> B\nB -> \"x\"", start="B").start == "B"


def test_grammar_round_trips_through_text_and_file(tmp_path):
    grammar = parse_grammar(GRAMMAR.replace("'it''s'", "'its'"))
    assert parse_grammar(format_grammar(grammar)) == grammar
    weighted = parse_grammar("0.75 S -> A B\n0.25 S -> A\n1 A -> 'x'\n1e-5 B -> <any:2>\n")
    assert weighted.has_weights and weighted.rules[3].weight == 1e-5
    path = tmp_path / "g.txt"
    write_grammar(weighted, path)
    assert read_grammar(path) == weighted
    write_grammar(weighted, path, weights=[0.1, 0.9, 1.0, 0.3])
    assert [rule.weight for rule in read_grammar(path).rules] == [0.1, 0.9, 1.0, 0.3]
    # rules are grouped by parent (one Dirichlet row each), whatever the file order
    grouped = parse_grammar("S -> A\nA -> 'x'\nS -> A A\n")
    assert [str(rule) for rule in grouped.rules] == ["S -> A", "S -> A A", 'A -> "x"']


@pytest.mark.parametrize("text, message, line", [
    ("S -> A B\nA -> 'x'\n", "'B' has no rules", 1),
    ("S -> A\nA -> 'x'\nS -> A\n", "duplicate rule S -> A \\(first on line 1\\)", 3),
    ("S -> A <any>\nA -> 'x'", "<any> must be the whole", 1),
    ("S -> 'x'\nS -> <any>", "both <any> and single-token", 1),
    ("S -> <any>\nS -> <any:2>", "more than one <any>", 2),
    ("S -> \n", "empty right-hand side", 1),
    ("S A\n", "expected 'LHS -> symbols", 1),
    ("'S' -> A\n", "left-hand side must be a nonterminal", 1),
    ("S -> A -> B\n", "more than one '->'", 1),
    ("S -> <all>\n", "unknown special symbol", 1),
    ("S -> <any:0>\n", "m >= 1", 1),
    ("S -> 'x\n", "unterminated quote", 1),
    ("S -> ''\n", "empty terminal", 1),
    ("S -> @A\n@A -> 'x'", "invalid nonterminal name", 1),
    ("0.5 S -> 'x'\nS -> 'y'\n", "every rule has a weight or none", 2),
    ("-1 S -> 'x'\n", "non-negative", 1),
    ("# nothing\n\n", "no rules", None),
])
def test_grammar_errors_name_file_and_line(tmp_path, text, message, line):
    path = tmp_path / "bad.grammar"
    path.write_text(text)
    with pytest.raises(GrammarError, match=message) as error:
        read_grammar(path)
    assert error.value.line == line and str(path) in str(error.value)
    assert isinstance(error.value, CorpusFormatError)


def test_grammar_objects_are_checked_too():
    with pytest.raises(GrammarError, match="no rules"):
        Grammar([])
    with pytest.raises(GrammarError, match="start symbol 'T'"):
        Grammar([Rule("S", (Terminal("x"),))], start="T")
    with pytest.raises(GrammarError, match="positive integer"):
        AnySubstring(0)


def test_compiled_rows_group_rules_by_parent():
    grammar = parse_grammar("S -> A B C\nS -> A\nA -> 'a'\nA -> 'b'\nB -> <any:2>\nC -> 'c'\n")
    compiled = compile_grammar(grammar, [["a", "b", "c"], ["a", "b", "b"]])
    # S: 2 rules; A: 2; B: substrings of length <= 2 of the inputs; C: 1
    n_substrings = len({("a",), ("b",), ("c",), ("a", "b"), ("b", "c"), ("b", "b")})
    np.testing.assert_array_equal(compiled.row_sizes, [2, 2, n_substrings, 1])
    np.testing.assert_array_equal(compiled.rule_parent, np.repeat(np.arange(4), compiled.row_sizes))
    assert [compiled.describe(r) for r in range(4)] == ["S -> A B C", "S -> A", 'A -> "a"', 'A -> "b"']
    assert compiled.describe(4) == 'B -> "a"' and compiled.describe(4 + n_substrings - 1) == 'B -> "b" "b"'
    # the ternary rule is binarised with one internal symbol whose rule is deterministic
    assert compiled.symbols[4:] == ("@0:1",)
    assert sorted(compiled.kernel.binary_rule.tolist()) == [-1, 0]
    # rule weights as written, <any> families uniform, rows normalised by `normalize`
    weighted = compile_grammar(parse_grammar("0.2 S -> A\n0.6 S -> A A\n1 A -> 'a'\n"))
    np.testing.assert_allclose(weighted.rule_weights(), [0.2, 0.6, 1.0])
    np.testing.assert_allclose(weighted.normalize(weighted.rule_weights()), [0.25, 0.75, 1.0])


def test_compile_errors():
    grammar = parse_grammar("S -> V\nV -> <any>\n")
    with pytest.raises(ValueError, match="needs the training sentences"):
        compile_grammar(grammar)
    from cvbayes.data import Vocabulary
    with pytest.raises(GrammarError, match="not in the vocabulary"):
        compile_grammar(parse_grammar("S -> 'x'"), vocabulary=Vocabulary(["y"]))
    with pytest.raises(ValueError, match="layout"):
        compile_grammar(parse_grammar("S -> 'x'"), layout="packed")

"""Bracket precision, recall, F1 and exact match on hand-made trees with known answers (evalb conventions)."""
import pytest

from cvbayes.data.trees import parse_trees
from cvbayes.metrics.parsing import bracket_scores, brackets, parsing_report


def tree(text):
    return parse_trees(text)[0]


GOLD = tree("(S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .))")
# groups "saw a" wrongly
TEST = tree("(S (NP (DT the) (NN dog)) (VP (VP (VBD saw) (DT a)) (NN cat)) (. .))")


def test_brackets_skip_preterminals_and_punctuation():
    got, length = brackets(GOLD)
    assert length == 6 - 1   # the final "." is deleted
    assert got == {("S", 0, 5): 1, ("NP", 0, 2): 1, ("VP", 2, 5): 1, ("NP", 3, 5): 1}
    unlabelled, _ = brackets(GOLD, labelled=False, root=False)
    assert unlabelled == {(None, 0, 2): 1, (None, 2, 5): 1, (None, 3, 5): 1}


def test_known_precision_recall_and_f1():
    # gold: S(0,5) NP(0,2) VP(2,5) NP(3,5); test: S(0,5) NP(0,2) VP(2,5) VP(2,4)
    scores = bracket_scores([TEST], [GOLD])
    assert (scores.matched, scores.gold, scores.predicted) == (3, 4, 4)
    assert scores.precision == pytest.approx(0.75) and scores.recall == pytest.approx(0.75)
    assert scores.f1 == pytest.approx(0.75) and scores.exact_match == 0.0
    # without the root bracket: 2 of 3 each way
    no_root = bracket_scores([TEST], [GOLD], root=False)
    assert (no_root.matched, no_root.gold, no_root.predicted) == (2, 3, 3)
    assert bracket_scores([GOLD], [GOLD]).exact_match == 1.0


def test_corpus_level_sums_counts_before_dividing():
    small_gold = tree("(S (A x) (B y))")                # one bracket: S(0,2)
    small_test = tree("(X (A x) (B y))")                # labelled miss
    scores = bracket_scores([TEST, small_test], [GOLD, small_gold])
    assert (scores.matched, scores.gold, scores.predicted) == (3, 5, 5)
    assert scores.f1 == pytest.approx(0.6)               # not the mean of 0.75 and 0
    unlabelled = bracket_scores([TEST, small_test], [GOLD, small_gold], labelled=False)
    assert unlabelled.matched == 4 and unlabelled.exact_match == 0.5
    report = parsing_report([TEST, small_test], [GOLD, small_gold])
    assert report["labelled"] == scores and report["unlabelled"] == unlabelled


def test_function_tags_equivalent_labels_and_top_are_normalised():
    gold = tree("(TOP (S (NP-SBJ-1 (PRP I)) (VP (VB look) (PRT (RP up)))))")
    test = tree("(TOP (S (NP (PRP I)) (VP (VB look) (ADVP (RP up)))))")
    scores = bracket_scores([test], [gold])
    assert (scores.matched, scores.gold) == (4, 4) and scores.exact_match == 1.0


def test_traces_are_removed_with_emptied_brackets():
    gold = tree("(S (NP (-NONE- *)) (VP (VB go) (, ,) (ADVP (RB now))))")
    test = tree("(S (VP (VB go) (ADVP (RB now))))")
    got, length = brackets(gold)
    assert length == 2 and got == {("S", 0, 2): 1, ("VP", 0, 2): 1, ("ADVP", 1, 2): 1}
    assert bracket_scores([test], [gold]).f1 == 1.0


def test_unary_chains_are_a_multiset():
    gold = tree("(S (VP (VB go)))")
    test = tree("(S (VB go))")
    scores = bracket_scores([test], [gold], labelled=False)
    assert (scores.matched, scores.gold, scores.predicted) == (1, 2, 1)
    assert scores.recall == 0.5 and scores.precision == 1.0


def test_span_lexical_nodes_are_counted_on_request():
    gold = tree("(Word (SM k e) (V b o n a))")
    test = tree("(Word (SM k) (V e b o n a))")
    assert bracket_scores([test], [gold]).f1 == 1.0      # only the root bracket
    scores = bracket_scores([test], [gold], count_lexical=True)
    assert (scores.matched, scores.gold, scores.predicted) == (1, 3, 3)


def test_mismatched_inputs_are_errors():
    with pytest.raises(ValueError, match="sentence 0: the predicted tree has 1 words but the gold tree has 2"):
        bracket_scores([tree("(S (A x))")], [tree("(S (A x) (B y))")])
    with pytest.raises(ValueError, match="1 predicted trees but 2 gold"):
        bracket_scores([GOLD], [GOLD, GOLD])
    with pytest.raises(ValueError, match="empty"):
        bracket_scores([], [])
    empty = bracket_scores([tree("(A x)")], [tree("(A x)")])
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)

"""Treebank preprocessing (Petrov et al. 2006): binarisation, markovised labels, signatures, grammar arrays."""
import numpy as np
import pytest

from cvbayes.data.trees import Tree
from cvbayes.trees.grammar import BINARY, LEXICAL, UNARY
from cvbayes.trees.treebank import (ROOT, UNKNOWN, add_root, binarise, debinarise, encode_words,
                                    extract_grammar, known_words, prepare_treebank, replace_rare_words,
                                    tree_nodes, word_signature)


def T(label, *children):
    return Tree(label, list(children))


def random_tree(rng, n_words):
    if n_words == 1:
        leaf = T(str(rng.choice(["DT", "NN", "VB", ","])), str(rng.choice(["x", "y"])))
        return leaf if rng.random() < 0.7 else T("NP", leaf)
    n_children = int(rng.integers(2, min(n_words, 6) + 1))
    cuts = np.sort(rng.choice(np.arange(1, n_words), size=n_children - 1, replace=False))
    sizes = np.diff(np.concatenate([[0], cuts, [n_words]]))
    return T(str(rng.choice(["S", "NP", "VP", "PP"])), *(random_tree(rng, int(s)) for s in sizes))


NP4 = T("NP", T("DT", "the"), T("JJ", "big"), T("JJ", "red"), T("NN", "dog"))
SENTENCE = T("S", NP4, T("VP", T("VBD", "barked")), T(".", "."))


@pytest.mark.parametrize("horizontal", [0, 1, 2, None])
@pytest.mark.parametrize("vertical", [1, 2, 3])
def test_binarise_then_debinarise_is_the_identity(horizontal, vertical):
    rng = np.random.default_rng(7 + vertical)
    for _ in range(30):
        tree = random_tree(rng, int(rng.integers(1, 15)))
        binary = binarise(tree, horizontal=horizontal, vertical=vertical)
        assert debinarise(binary) == add_root(tree)
        pending = [binary]
        while pending:
            node = pending.pop()
            if not isinstance(node, str):
                assert 1 <= len(node.children) <= 2
                pending.extend(node.children)


def test_markovised_labels_are_as_documented():
    assert str(binarise(NP4, horizontal=1)) == (
        "(ROOT (NP (DT the) (@NP<DT> (JJ big) (@NP<JJ> (JJ red) (NN dog)))))")
    assert str(binarise(NP4, horizontal=0)) == (
        "(ROOT (NP (DT the) (@NP (JJ big) (@NP (JJ red) (NN dog)))))")
    assert str(binarise(NP4, horizontal=None)) == (
        "(ROOT (NP (DT the) (@NP<DT> (JJ big) (@NP<DT><JJ> (JJ red) (NN dog)))))")
    assert str(binarise(SENTENCE, horizontal=1, vertical=2)) == (
        "(ROOT (S^ROOT (NP^S (DT the) (@NP^S<DT> (JJ big) (@NP^S<JJ> (JJ red) (NN dog))))"
        " (@S^ROOT<NP> (VP^S (VBD barked)) (. .))))")
    assert str(binarise(SENTENCE, horizontal=0, vertical=3)) == (
        "(ROOT (S^ROOT (NP^S^ROOT (DT the) (@NP^S^ROOT (JJ big) (@NP^S^ROOT (JJ red) (NN dog))))"
        " (@S^ROOT (VP^S^ROOT (VBD barked)) (. .))))")


def test_root_is_added_once_and_reserved_labels_are_refused():
    assert str(add_root(T("", SENTENCE))) == str(T(ROOT, SENTENCE))
    assert str(add_root(T(ROOT, SENTENCE))) == str(T(ROOT, SENTENCE))
    assert str(binarise(T(ROOT, T("NN", "x")))) == "(ROOT (NN x))"
    for label in ("@NP", "NP^S"):
        with pytest.raises(ValueError, match="reserves"):
            binarise(T("S", T(label, T("NN", "x")), T("NN", "y")))
    with pytest.raises(ValueError, match="mixes words"):
        binarise(T("S", "x", T("NN", "y")))
    with pytest.raises(ValueError):
        binarise(SENTENCE, horizontal=-1)
    with pytest.raises(ValueError):
        binarise(SENTENCE, vertical=0)


@pytest.mark.parametrize("word,initial,signature", [
    ("Walking", False, "UNK-INITCAP-ing"),
    ("Walking", True, "UNK-FIRSTCAP-ing"),
    ("walked", False, "UNK-ed"),
    ("quickly", False, "UNK-ly"),
    ("1,200.50", False, "UNK-NUM"),
    ("10:30", False, "UNK-NUM"),
    ("3rd", False, "UNK-DIGIT"),
    ("well-deserved", False, "UNK-HYPHEN-ed"),
    ("NASA", False, "UNK-ALLCAPS"),
    ("iPhone", False, "UNK-MIXEDCAP"),
    (":-)", False, "UNK-SYMBOL"),
    ("cats", False, "UNK-s"),
    ("class", False, "UNK"),
    ("Smiths", True, "UNK-FIRSTCAP-s"),
    ("happiness", False, "UNK-ness"),
    ("is", False, "UNK"),
])
def test_word_signatures(word, initial, signature):
    assert word_signature(word, sentence_initial=initial) == signature


def test_rare_words_become_signatures_by_position():
    trees = [T("S", T("NNP", "Walking"), T("NN", "dog")), T("S", T("NN", "dog"), T("NNP", "Walking"))]
    assert known_words(trees, min_count=2) == {"dog", "Walking"}
    known = known_words(trees + [T("S", T("NN", "dog"))], min_count=3)
    assert known == {"dog"}
    assert str(replace_rare_words(trees[0], known)) == "(S (NNP UNK-FIRSTCAP-ing) (NN dog))"
    assert str(replace_rare_words(trees[1], known)) == "(S (NN dog) (NNP UNK-INITCAP-ing))"


def test_grammar_counts_grouped_by_parent():
    trees = [SENTENCE, T("S", T("NP", T("NN", "dog")), T("VP", T("VBD", "barked")))]
    prepared = prepare_treebank(trees, horizontal=0, min_count=1)
    grammar = prepared.grammar
    assert grammar.symbols[0] == ROOT
    names = grammar.symbols

    def table(rules, counts, word_last=False):
        out = {}
        for row, count in zip(rules, counts):
            key = tuple(names[i] for i in row[:-1]) + (
                (grammar.words[row[-1]],) if word_last else (names[row[-1]],))
            out[key] = int(count)
        return out

    assert table(grammar.binary_rules, grammar.binary_counts) == {
        ("S", "NP", "@S"): 1, ("@S", "VP", "."): 1, ("S", "NP", "VP"): 1,
        ("NP", "DT", "@NP"): 1, ("@NP", "JJ", "@NP"): 1, ("@NP", "JJ", "NN"): 1,
    }
    assert table(grammar.unary_rules, grammar.unary_counts) == {
        ("ROOT", "S"): 2, ("VP", "VBD"): 2, ("NP", "NN"): 1}
    assert table(grammar.lexical_rules, grammar.lexical_counts, word_last=True) == {
        ("DT", "the"): 1, ("JJ", "big"): 1, ("JJ", "red"): 1, ("NN", "dog"): 2,
        ("VBD", "barked"): 2, (".", "."): 1}
    for kind, rules in ((BINARY, grammar.binary_rules), (UNARY, grammar.unary_rules),
                        (LEXICAL, grammar.lexical_rules)):
        assert np.all(np.diff(rules[:, 0]) >= 0)
        offsets = grammar.parent_offsets(kind)
        for parent in range(grammar.n_symbols):
            assert np.all(rules[offsets[parent]:offsets[parent + 1], 0] == parent)
        assert offsets[-1] == len(rules)


def test_tree_nodes_are_post_order_with_children_and_spans():
    prepared = prepare_treebank([T("S", T("NP", T("NN", "dog")), T("VP", T("VBD", "barked"))), SENTENCE],
                                horizontal=0, min_count=1)
    nodes, grammar = prepared.nodes, prepared.grammar
    assert nodes.n_trees == 2
    np.testing.assert_array_equal(nodes.tree_offsets, [0, 6, 6 + 13])
    # Tree 0: NN dog, NP, VBD barked, VP, S, ROOT.
    first = slice(0, 6)
    np.testing.assert_array_equal(nodes.kind[first], [LEXICAL, UNARY, LEXICAL, UNARY, BINARY, UNARY])
    np.testing.assert_array_equal(nodes.left[first], [-1, 0, -1, 2, 1, 4])
    np.testing.assert_array_equal(nodes.right[first], [-1, -1, -1, -1, 3, -1])
    np.testing.assert_array_equal(nodes.start[first], [0, 0, 1, 1, 0, 0])
    np.testing.assert_array_equal(nodes.end[first], [1, 1, 2, 2, 2, 2])
    root_rule = grammar.unary_rules[nodes.rule[5]]
    assert [grammar.symbols[i] for i in root_rule] == [ROOT, "S"]
    # Children come before parents and a parent's span joins its children's.
    for n in range(nodes.n_nodes):
        if nodes.kind[n] == BINARY:
            left, right = nodes.left[n], nodes.right[n]
            assert left < n and right < n
            assert nodes.start[n] == nodes.start[left] and nodes.end[left] == nodes.start[right]
            assert nodes.end[right] == nodes.end[n]
    # The lexical nodes of each tree, by span, spell its words.
    for t, words in enumerate([["dog", "barked"], ["the", "big", "red", "dog", "barked", "."]]):
        span = slice(nodes.tree_offsets[t], nodes.tree_offsets[t + 1])
        lexical = nodes.kind[span] == LEXICAL
        ids = grammar.lexical_rules[nodes.rule[span][lexical], 1]
        np.testing.assert_array_equal(nodes.start[span][lexical], np.arange(len(words)))
        assert [grammar.words[i] for i in ids] == words


def test_tree_nodes_reject_unknown_rules_and_unbinarised_trees():
    grammar = extract_grammar([binarise(SENTENCE)])
    with pytest.raises(ValueError, match="tree 1: rule NN -> cat"):
        tree_nodes([binarise(SENTENCE), binarise(T("S", T("NN", "cat")))], grammar)
    with pytest.raises(ValueError, match="tree 0: node 'S' has 3 children; binarise first"):
        tree_nodes([add_root(SENTENCE)], grammar)
    with pytest.raises(ValueError, match="node 'S' has 0 children"):
        extract_grammar([T(ROOT, T("S"))])
    with pytest.raises(ValueError, match="tree 0: node 'S' mixes words"):
        extract_grammar([T(ROOT, T("S", "x", T("NN", "y")))])
    with pytest.raises(ValueError, match="not 'ROOT'"):
        extract_grammar([SENTENCE])
    with pytest.raises(ValueError, match="no trees"):
        extract_grammar([])


def test_encode_words_falls_back_to_signatures():
    trees = [T("S", T("NN", "dog"), T("VBD", "barked")), T("S", T("NN", "dog"), T("VBD", "walked")),
             T("S", T("NN", "dog"), T("VBD", "barked"))]
    prepared = prepare_treebank(trees, min_count=2)
    grammar = prepared.grammar
    assert "walked" not in grammar.words and "UNK-ed" in grammar.words
    ids = encode_words(["dog", "talked", "barked", "Zzz"], grammar)
    assert [grammar.words[i] if i >= 0 else None for i in ids] == ["dog", "UNK-ed", "barked", None]
    with_unknown = prepare_treebank(trees + [T("S", T("NN", "zap"))], min_count=2).grammar
    assert UNKNOWN in with_unknown.words
    assert with_unknown.words[encode_words(["Zzz"], with_unknown)[0]] == UNKNOWN

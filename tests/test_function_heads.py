"""The UD-to-SUD conversion (function words as heads): hand-built sentences with their expected
trees, tree properties on random trees, the byte-for-byte round trip of the other columns, and
the function-head gold of read_dependencies."""
import numpy as np
import pytest

from cvbayes.data import CorpusFormatError
from cvbayes.data.conllu_io import parse_conllu_text, read_conllu_document
from cvbayes.data.dependencies import read_dependencies
from cvbayes.data.function_heads import convert_document, function_heads, is_projective


def convert(words):
    """words: (form, UPOS, UD head, UD relation[, FEATS]) -> (SUD heads, SUD relations)."""
    forms = [w[0] for w in words]
    heads, relations = function_heads([w[2] for w in words], [w[3] for w in words], [w[1] for w in words],
                                      [w[4] if len(w) > 4 else "_" for w in words], forms)
    return heads.tolist(), relations


# Each case: the UD tree (form, UPOS, head, relation[, FEATS]) and the expected SUD heads and
# relations, worked out by hand from the rules (module notes of cvbayes.data.function_heads).
CASES = {
    "auxiliary chain, subject and final punctuation go to the top auxiliary": (
        [("He", "PRON", 4, "nsubj"), ("will", "AUX", 4, "aux"), ("have", "AUX", 4, "aux"),
         ("gone", "VERB", 0, "root", "VerbForm=Part"), (".", "PUNCT", 4, "punct")],
        [2, 0, 2, 3, 2], ["subj", "root", "comp:aux", "comp:aux", "punct"]),
    "case under mark: as -> in -> Paris": (
        [("I", "PRON", 2, "nsubj"), ("live", "VERB", 0, "root"), ("as", "SCONJ", 5, "mark"),
         ("in", "ADP", 5, "case"), ("Paris", "PROPN", 2, "obl")],
        [2, 0, 2, 3, 4], ["subj", "root", "udep", "comp:obj", "comp:obj"]),
    "copula over a prepositional predicate": (
        [("She", "PRON", 5, "nsubj"), ("is", "AUX", 5, "cop"), ("in", "ADP", 5, "case"),
         ("the", "DET", 5, "det"), ("house", "NOUN", 0, "root")],
        [2, 0, 2, 5, 3], ["subj", "root", "comp:pred", "det", "comp:obj"]),
    "subordinator over an auxiliary, the subject stays inside the clause": (
        [("I", "PRON", 2, "nsubj"), ("think", "VERB", 0, "root"), ("that", "SCONJ", 6, "mark"),
         ("he", "PRON", 6, "nsubj"), ("will", "AUX", 6, "aux"), ("go", "VERB", 2, "ccomp"),
         (".", "PUNCT", 2, "punct")],
        [2, 0, 2, 5, 3, 5, 2], ["subj", "root", "comp:obj", "subj", "comp:obj", "comp:aux", "punct"]),
    "a bouquet of conjuncts becomes a chain": (
        [("apples", "NOUN", 0, "root"), (",", "PUNCT", 3, "punct"), ("pears", "NOUN", 1, "conj"),
         ("and", "CCONJ", 5, "cc"), ("plums", "NOUN", 1, "conj")],
        [0, 3, 1, 5, 3], ["root", "punct", "conj", "cc", "conj"]),
    "a prepositional phrase coordinated with one: in -> in": (
        [("in", "ADP", 2, "case"), ("Paris", "PROPN", 0, "root"), ("and", "CCONJ", 5, "cc"),
         ("in", "ADP", 5, "case"), ("London", "PROPN", 2, "conj")],
        [0, 1, 4, 1, 4], ["root", "comp:obj", "cc", "conj", "comp:obj"]),
    "the first conjunct's object after the second moves to it": (
        [("buy", "VERB", 0, "root"), ("and", "CCONJ", 3, "cc"), ("sell", "VERB", 1, "conj"),
         ("books", "NOUN", 1, "obj")],
        [0, 3, 1, 3], ["root", "cc", "conj", "comp:obj"]),
    "an adverb between auxiliary and verb rises, a possessive's 's heads its owner": (
        [("Mary", "PROPN", 3, "nmod:poss"), ("'s", "PART", 1, "case"), ("dog", "NOUN", 6, "nsubj"),
         ("has", "AUX", 6, "aux"), ("often", "ADV", 6, "advmod"), ("barked", "VERB", 0, "root")],
        [2, 3, 4, 0, 4, 4], ["comp:obj", "udep@poss", "subj", "root", "mod", "comp:aux"]),
    "a fronted object over its auxiliary: SUD's crossing arc lifted to keep the tree projective": (
        [("What", "PRON", 4, "obj"), ("did", "AUX", 4, "aux"), ("you", "PRON", 4, "nsubj"),
         ("see", "VERB", 0, "root"), ("?", "PUNCT", 4, "punct")],
        [2, 0, 2, 2, 2], ["comp:obj", "root", "subj", "comp:aux", "punct"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hand_built_sentences(name):
    words, heads, relations = CASES[name]
    assert convert(words) == (heads, relations)


def test_a_non_projective_tree_is_not_lifted():
    # "A hearing is scheduled on the issue today": UD's nmod 'issue' -> 'hearing' crosses 'is scheduled'
    words = [("A", "DET", 2, "det"), ("hearing", "NOUN", 4, "nsubj:pass"), ("is", "AUX", 4, "aux:pass"),
             ("scheduled", "VERB", 0, "root"), ("on", "ADP", 7, "case"), ("the", "DET", 7, "det"),
             ("issue", "NOUN", 2, "nmod"), ("today", "NOUN", 4, "obl:tmod")]
    assert not is_projective([w[2] for w in words])
    heads, relations = convert(words)
    # 'on' heads 'issue' and takes its place under 'hearing'; the crossing arc stays; 'today'
    # (obl -> udep, not a modifier) stays on the verb
    assert heads == [2, 3, 0, 3, 2, 7, 5, 4]
    assert relations[1] == "subj@pass" and relations[3] == "comp:aux@pass"
    assert not is_projective(heads)


RELATIONS = ["nsubj", "obj", "obl", "advmod", "amod", "det", "case", "mark", "aux", "cop", "cc", "conj",
             "punct", "nmod", "acl:relcl", "xcomp", "ccomp", "advcl", "flat", "fixed", "compound",
             "parataxis", "discourse", "nsubj:pass", "aux:pass", "expl", "obl:tmod"]
TAGS = ["NOUN", "VERB", "AUX", "ADP", "SCONJ", "ADJ", "ADV", "DET", "PRON", "PROPN", "CCONJ", "PUNCT", "PART"]


def random_projective_tree(rng, n):
    """A uniformly drawn head for each word among those that keep the tree projective, built
    by splitting spans: a span's root is any of its words, its sides are subtrees."""
    heads = [0] * n

    def build(lo, hi, parent):
        if lo > hi:
            return
        root = int(rng.integers(lo, hi + 1))
        heads[root - 1] = parent
        build(lo, root - 1, root)
        build(root + 1, hi, root)
    build(1, n, 0)
    return heads


def random_tree(rng, n):
    heads = [0] * n
    order = rng.permutation(n) + 1
    for k, word in enumerate(order[1:], start=1):
        heads[word - 1] = int(order[rng.integers(0, k)])
    return heads


def is_tree(heads):
    n = len(heads)
    for d in range(1, n + 1):
        y, steps = d, 0
        while y:
            y, steps = heads[y - 1], steps + 1
            if steps > n:
                return False
    return sum(h == 0 for h in heads) == 1


@pytest.mark.parametrize("projective", [True, False])
def test_random_trees_stay_trees_with_one_root_and_projectivity(projective):
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(1, 13))
        heads = random_projective_tree(rng, n) if projective else random_tree(rng, n)
        relations = ["root" if h == 0 else RELATIONS[rng.integers(len(RELATIONS))] for h in heads]
        tags = [TAGS[rng.integers(len(TAGS))] for _ in heads]
        feats = ["VerbForm=" + ("Fin", "Part", "Inf")[rng.integers(3)] if t in ("VERB", "AUX") else "_"
                 for t in tags]
        new, new_relations = function_heads(heads, relations, tags, feats, ["."] * n)
        new = new.tolist()
        assert is_tree(new), (heads, relations, tags, new)
        assert new_relations.count("root") == 1 and new_relations[new.index(0)] == "root"
        if is_projective(heads):
            assert is_projective(new), (heads, relations, tags, new)


FILE = "\r\n".join([
    "# newdoc id = x",
    "# sent_id = 1",
    "# text = I'm going.",
    "1-2\tI'm\t_\t_\t_\t_\t_\t_\t_\t_",
    "1\tI\tI\tPRON\tPRP\tCase=Nom\t3\tnsubj\t3:nsubj\t_",
    "2\t'm\tbe\tAUX\tVBP\tVerbForm=Fin\t3\taux\t3:aux\t_",
    "3\tgoing\tgo\tVERB\tVBG\tVerbForm=Part\t0\troot\t0:root\tSpaceAfter=No",
    "3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t3:conj\t_",
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t3:punct\t_",
    "",
    "",
    "# sent_id = 2",
    "1\tto\tto\tADP\tIN\t_\t2\tcase\t_\t_",
    "2\tyou\tyou\tPRON\tPRP\t_\t0\troot\t_\t_",
])


def test_only_head_and_deprel_change_byte_for_byte(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_bytes(FILE.encode("utf-8"))
    document = read_conllu_document(path)
    stats = convert_document(document)
    text = document.to_text()
    assert text.count("\r\n") == FILE.count("\r\n") and not text.endswith("\n")
    old, new = FILE.split("\r\n"), text.split("\r\n")
    assert len(old) == len(new)
    for before, after in zip(old, new):
        a, b = before.split("\t"), after.split("\t")
        if len(a) == 10 and a[0].isdigit():
            assert a[:6] + a[8:] == b[:6] + b[8:]
        else:
            assert before == after
    converted = parse_conllu_text(text)
    assert converted.column("head") == [["2", "0", "2", "2"], ["0", "1"]]
    assert converted.column("deprel") == [["subj", "root", "comp:aux", "punct"], ["root", "comp:obj"]]
    assert (stats.sentences, stats.words, stats.changed, stats.lifted) == (2, 6, 6, 0)


def test_read_dependencies_function_gold(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_bytes(FILE.encode("utf-8"))
    content = read_dependencies(path, remove_punctuation=True)
    function = read_dependencies(path, remove_punctuation=True, heads="function")
    assert np.array_equal(content.tags, function.tags) and np.array_equal(content.offsets, function.offsets)
    assert content.heads.tolist() == [3, 3, 0, 2, 0] and content.convention == "content"
    assert function.heads.tolist() == [2, 0, 2, 0, 1] and function.convention == "function"
    with pytest.raises(ValueError, match="heads must be"):
        read_dependencies(path, heads="semantic")


def test_a_cycle_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "cycle.conllu"
    path.write_text("# c\n1\ta\ta\tNOUN\tNN\t_\t2\tdep\t_\t_\n2\tb\tb\tNOUN\tNN\t_\t1\tdep\t_\t_\n\n")
    with pytest.raises(CorpusFormatError, match=r"cycle\.conllu, line 2: .*cycle"):
        read_dependencies(path, heads="function")
    with pytest.raises(CorpusFormatError, match=r"cycle\.conllu, line 1: not a tree"):
        convert_document(read_conllu_document(path))


def test_induce_and_parse_score_against_the_chosen_convention(tmp_path, capsys):
    import json

    from cvbayes import DMV
    from cvbayes.cli import main
    from cvbayes.metrics.dependency import attachment_scores

    path = tmp_path / "x.conllu"
    path.write_bytes((FILE + "\r\n\r\n" + FILE.split("\r\n\r\n\r\n")[0] + "\r\n").encode("utf-8"))
    model_path = tmp_path / "dmv.npz"
    reports = {}
    for heads in ("content", "function"):
        main(["induce", str(path), "-o", str(model_path), "--algorithm", "em", "--iterations", "2",
              "--evaluate", str(path), "--heads", heads, "--json", "--quiet"])
        reports[heads] = json.loads(capsys.readouterr().out)
    model = DMV.load(model_path)
    for heads, report in reports.items():
        gold = read_dependencies(path, tagset=model.tagset_, remove_punctuation=True, heads=heads)
        want = attachment_scores(model.parse_heads(gold)[0], gold.heads, gold.offsets).directed
        assert report["train"]["heads"] == report["evaluate"]["heads"] == heads
        assert report["evaluate"]["directed"] == pytest.approx(want)
    main(["parse", str(model_path), str(path), "-o", str(tmp_path / "out.conllu"), "--heads", "function", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["heads"] == report["gold"]["heads"] == "function"
    assert report["gold"]["directed"] == pytest.approx(reports["function"]["evaluate"]["directed"])

"""Term discovery scores through zerospeech-tde, on a two-utterance gold worked by hand, and the class
file format."""

import math
import random
import sys

import pytest

from cvbayes.data.errors import CorpusFormatError
from cvbayes.metrics import TDE_MEASURES, read_classes, term_discovery_scores, write_classes
from cvbayes.speech.alignments import Interval

pytest.importorskip("tde")


def _utterance(words):
    """Phones of 0.1 s each between 0.1 s of silence at each end, and the words over them."""
    phones, word_intervals, time = [Interval(0.0, 0.1, "SIL")], [], 0.1
    for word in words:
        start = time
        for phone in word.split("-"):
            phones.append(Interval(round(time, 6), round(time + 0.1, 6), phone))
            time += 0.1
        word_intervals.append(Interval(round(start, 6), round(time, 6), word.replace("-", "")))
    phones.append(Interval(round(time, 6), round(time + 0.1, 6), "SIL"))
    return phones, word_intervals


# a: SIL cat(k ae t) dog(d ao g) SIL; b: SIL dog cat SIL; phones 0.1 s each from 0.1 s
GOLD = {"a": _utterance(["k-ae-t", "d-ao-g"]), "b": _utterance(["d-ao-g", "k-ae-t"])}
PHONES = {name: phones for name, (phones, _) in GOLD.items()}
WORDS = {name: words for name, (_, words) in GOLD.items()}
PERFECT = {"cat": [("a", 0.1, 0.4), ("b", 0.4, 0.7)], "dog": [("a", 0.4, 0.7), ("b", 0.1, 0.4)]}


def test_perfect_discovery_scores_one():
    scores = term_discovery_scores(PERFECT, PHONES, WORDS, measures=TDE_MEASURES)
    assert scores["n_classes"] == 2 and scores["n_tokens"] == 4
    for name in ("boundary", "token", "type", "grouping"):
        for part in ("precision", "recall", "fscore"):
            assert scores[f"{name}_{part}"] == pytest.approx(1.0), f"{name}_{part}"
    assert scores["coverage"] == pytest.approx(1.0) and scores["ned"] == 0.0


def test_silence_in_the_gold_words_is_not_a_word():
    words = {name: [Interval(0.0, 0.1, "SIL"), *intervals, Interval(0.7, 0.8, "SPN")]
             for name, intervals in WORDS.items()}
    assert (term_discovery_scores(PERFECT, PHONES, words, measures=TDE_MEASURES)
            == term_discovery_scores(PERFECT, PHONES, WORDS, measures=TDE_MEASURES))


def test_one_token_missing_its_first_phone_by_hand():
    # a's cat found as 0.2-0.4 (ae t): its first boundary 0.1 is missed and 0.2 is a false one
    classes = {"cat": [("a", 0.2, 0.4), ("b", 0.4, 0.7)], "dog": PERFECT["dog"]}
    scores = term_discovery_scores(classes, PHONES, WORDS, measures=TDE_MEASURES)
    # tokens: 3 of 4 found words are right, of 4 gold words
    assert scores["token_precision"] == pytest.approx(3 / 4) and scores["token_recall"] == pytest.approx(3 / 4)
    # types: transcriptions seen {ae-t, k-ae-t, d-ao-g}, 2 of them words, of 2 gold words
    assert scores["type_precision"] == pytest.approx(2 / 3) and scores["type_recall"] == 1.0
    assert scores["type_fscore"] == pytest.approx(0.8)
    # boundaries (an edge that starts one word and ends another counts once): gold a {0.1, 0.4, 0.7} and
    # b {0.1, 0.4, 0.7}; found a {0.2, 0.4, 0.7} and b {0.1, 0.4, 0.7}: 5 of 6 each way
    assert scores["boundary_precision"] == pytest.approx(5 / 6)
    assert scores["boundary_recall"] == pytest.approx(5 / 6)
    # coverage: 11 of the 12 phones (k of a missed; silences not counted)
    assert scores["coverage"] == pytest.approx(11 / 12)
    # NED: cat's pair ae-t / k-ae-t is 1 edit over 3, dog's pair 0
    assert scores["ned"] == pytest.approx(1 / 6)
    # grouping: the one same-transcription pair (the dogs) is found, so recall 1; precision weights each
    # transcription by its share of the 4 found tokens: dog 1/2 with all its pairs right, ae-t and k-ae-t
    # 1/4 each with none
    assert scores["grouping_precision"] == pytest.approx(1 / 2) and scores["grouping_recall"] == 1.0
    assert scores["grouping_fscore"] == pytest.approx(2 / 3)


def test_grouping_is_tdes_own(monkeypatch):
    """Our in-place `get_found_pairs` gives tde's grouping scores (up to the order of a float sum)."""
    from tde.measures.grouping import Grouping

    import cvbayes.metrics.tde as module

    draw = random.Random(0)
    lexicon = ["k-ae-t", "d-ao-g", "t-uw", "k-ae-t-s", "ae-t"]
    gold = {f"u{i}": _utterance(draw.choices(lexicon, k=draw.randint(1, 5))) for i in range(30)}
    phones = {name: p for name, (p, _) in gold.items()}
    words = {name: w for name, (_, w) in gold.items()}
    # tokens: every gold word, some of them a phone too long, in 6 classes at random
    classes = [[] for _ in range(6)]
    for name, (_, intervals) in gold.items():
        for start, end, _ in intervals:
            classes[draw.randrange(6)].append((name, start, end + 0.1 * (draw.random() < 0.3)))
    # and a class of one token, u0 whole, whose transcription makes no pair
    classes.append([("u0", 0.1, words["u0"][-1].end)])
    ours = term_discovery_scores(classes, phones, words, measures=["grouping"])
    original = module._import_tde
    monkeypatch.setattr(module, "_import_tde", lambda: (*original()[:-1], Grouping))
    assert term_discovery_scores(classes, phones, words, measures=["grouping"]) == pytest.approx(ours, rel=1e-12)
    assert 0 < ours["grouping_precision"] < 1 and 0 < ours["grouping_recall"] < 1


def test_tokens_outside_the_gold_phones_are_thrown_away():
    classes = {**PERFECT, "noise": [("a", 0.85, 0.95), ("b", 0.9, 1.0)]}
    scores = term_discovery_scores(classes, PHONES, WORDS, measures=["token_type", "ned"])
    assert scores["n_classes"] == 2 and scores["n_tokens"] == 4
    assert scores["token_precision"] == 1.0 and "coverage" not in scores and "boundary_precision" not in scores
    assert scores["ned"] == 0.0


def test_nothing_right_scores_zero_and_single_token_classes_have_no_ned():
    # each token covers one phone, never a word
    classes = [[("a", 0.1, 0.2)], [("b", 0.5, 0.6)]]
    scores = term_discovery_scores(classes, PHONES, WORDS, measures=["token_type", "ned"])
    assert scores["token_precision"] == 0.0 and scores["token_fscore"] == 0.0
    assert math.isnan(scores["ned"])


@pytest.mark.parametrize("classes", [[], [[]], [[("a", 0.85, 0.95)]]])
def test_nothing_found_scores_zero_recall(classes):
    scores = term_discovery_scores(classes, PHONES, WORDS)
    assert scores["n_tokens"] == 0 and scores["coverage"] == 0.0
    for name in ("boundary", "token", "type"):
        # precision is 0/0 (NaN, tde's value), recall 0, so F1 0
        assert math.isnan(scores[f"{name}_precision"]) and scores[f"{name}_recall"] == 0.0
        assert scores[f"{name}_fscore"] == 0.0


def test_utterances_without_gold_and_unknown_measures_are_refused():
    with pytest.raises(ValueError, match="no gold phones: c"):
        term_discovery_scores([[("c", 0.1, 0.4)]], PHONES, WORDS)
    with pytest.raises(ValueError, match="no gold words: b"):
        term_discovery_scores(PERFECT, PHONES, {"a": WORDS["a"]})
    with pytest.raises(ValueError, match="unknown measures purity"):
        term_discovery_scores(PERFECT, PHONES, WORDS, measures=["ned", "purity"])


def test_without_tde_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tde.readers.gold_reader", None)
    with pytest.raises(ImportError, match=r'pip install "cvbayes\[experiment\]"'):
        term_discovery_scores(PERFECT, PHONES, WORDS)


def test_scoring_prints_nothing_and_leaves_grouping_out_by_default(capsys):
    scores = term_discovery_scores(PERFECT, PHONES, WORDS)
    assert capsys.readouterr().out == ""
    assert "ned" in scores and not any(name.startswith("grouping") for name in scores)


def test_classes_round_trip(tmp_path):
    path = tmp_path / "found.class"
    classes = {"7": [("s01", 0.125, 0.5), ("s02", 1.0, 1.333333)], "x": [], "0": [("s01", 2.0, 2.25)]}
    write_classes(path, classes)
    assert read_classes(path) == classes
    write_classes(path, list(classes.values()))
    assert read_classes(path) == {str(i): tokens for i, tokens in enumerate(classes.values())}


def test_class_file_is_as_tde_reads_it(tmp_path):
    path = tmp_path / "found.class"
    write_classes(path, [[("s01", 0.125, 0.5)], [("s02", 1.0, 1.5), ("s03", 0.0, 0.25)]])
    assert path.read_text() == ("Class 0\ns01 0.125000 0.500000\n\n"
                                "Class 1\ns02 1.000000 1.500000\ns03 0.000000 0.250000\n\n")


@pytest.mark.parametrize("text, line, message", [
    ("Class 1\ns01 0.1 0.2\n\ns01 0.3 0.4\n", 4, "not under a 'Class' line"),
    ("Class 1\ns01 0.1 0.2 0.3\n", 2, "expected 'Class NAME'"),
    ("Class 1\ns01 0.1 x\n", 2, "times must be numbers"),
    ("Class 1\ns01 0.4 0.2\n", 2, "does not end after it starts"),
    ("Class 1\ns01 0.1 0.2\n\nClass 1\n", 4, "class 1 appears twice"),
])
def test_bad_class_files_name_the_line(tmp_path, text, line, message):
    path = tmp_path / "bad.class"
    path.write_text(text)
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_classes(path)
    assert error.value.line == line and error.value.path == str(path)


def test_write_classes_refuses_what_tde_cannot_read(tmp_path):
    with pytest.raises(ValueError, match="white space"):
        write_classes(tmp_path / "x.class", [[("s 01", 0.1, 0.2)]])
    with pytest.raises(ValueError, match="does not end after it starts"):
        write_classes(tmp_path / "x.class", [[("s01", 0.2, 0.2)]])

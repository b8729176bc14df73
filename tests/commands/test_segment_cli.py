"""``cvbayes segment``: end to end on a tiny file, its file formats and its errors."""
import json

import pytest

from cvbayes.cli import main
from cvbayes.commands.segment import TAGGED, degenerate, format_words, read_gold, read_utterances
from cvbayes.data.errors import CorpusFormatError
from cvbayes.metrics import segmentation_scores

# a few child-directed utterances in Brent's phonemes, with repeats so that words can be found
GOLD_WORDS = ["yu want tu si D6 bUk", "lUk D*z 6 b7", "yu want D6 b7", "si D6 bUk", "D6 bUk", "yu si D6 b7",
              "lUk", "want 6 bUk"] * 3


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _spaced(line):
    return " ".join("".join(line.split()))


@pytest.fixture
def files(tmp_path):
    lines = [_spaced(line) for line in GOLD_WORDS]
    return {"input": _write(tmp_path / "in.txt", lines), "gold": _write(tmp_path / "gold.txt", GOLD_WORDS),
            "brent": _write(tmp_path / "gold.brent", [" ".join(" ".join(w) + " ;eword" for w in line.split())
                                                      for line in GOLD_WORDS]),
            "out": str(tmp_path / "out.txt"), "folder": tmp_path}


def test_segment_end_to_end_with_gold_and_json(files, capsys):
    main(["segment", files["input"], "--algorithm", "vb", "--iterations", "2", "--gold", files["gold"],
          "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    with open(files["out"], encoding="utf-8") as stream:
        written = stream.read().split("\n")[:-1]
    with open(files["input"], encoding="utf-8") as stream:
        given = stream.read().split("\n")[:-1]
    assert len(written) == len(given)
    for out, line in zip(written, given):
        assert "".join(out.split()) == "".join(line.split())     # the same symbols, only cut
    assert report["utterances"] == len(GOLD_WORDS) and report["iterations"] == 2
    assert report["algorithm"] == "vb" and report["grammar"] == "unigram"
    found = [[tuple(w) for w in line.split()] for line in written]
    gold = [[tuple(w) for w in line.split()] for line in GOLD_WORDS]
    assert report["scores"] == json.loads(json.dumps(segmentation_scores(found, gold).as_dict()))


def test_a_saved_model_segments_new_text(files, capsys):
    model = str(files["folder"] / "model.npz")
    main(["segment", files["input"], "--algorithm", "cvi", "--iterations", "2", "--save-model", model,
          "-o", files["out"], "--json"])
    trained = json.loads(capsys.readouterr().out)
    assert trained["saved_model"] == model
    with open(files["out"], encoding="utf-8") as stream:
        on_training = stream.read()
    # new text: the training lines in another order, and a line the model never saw but can derive
    new = _write(files["folder"] / "new.txt", [_spaced("D6 bUk yu want"), _spaced(GOLD_WORDS[1]),
                                              _spaced(GOLD_WORDS[0])])
    main(["segment", new, "--model", model, "-o", str(files["folder"] / "new_out.txt"), "--json"])
    loaded = json.loads(capsys.readouterr().out)
    assert loaded["loaded_model"] == model and loaded["algorithm"] == "cvi" and loaded["iterations"] == 2
    assert loaded["training_seconds"] == 0
    with open(files["folder"] / "new_out.txt", encoding="utf-8") as stream:
        written = stream.read().split("\n")[:-1]
    assert len(written) == 3 and "".join(written[0].split()) == "D6bUkyuwant"
    assert written[1:] == on_training.split("\n")[1::-1]     # the model's segmentation of lines it saw


def test_segment_anneals_the_sampler_only(files, capsys):
    main(["segment", files["input"], "--algorithm", "mcmc", "--iterations", "3", "--anneal", "4,2",
          "-o", files["out"], "--json"])
    assert json.loads(capsys.readouterr().out)["model"]["anneal"] == [4.0, 2]
    with pytest.raises(SystemExit, match="--anneal is for --algorithm mcmc"):
        main(["segment", files["input"], "--algorithm", "vb", "--anneal", "4,2"])
    with pytest.raises(SystemExit, match="--anneal takes T0,SWEEPS"):
        main(["segment", files["input"], "--algorithm", "mcmc", "--anneal", "4"])
    with pytest.raises(SystemExit, match="anneal must be"):
        main(["segment", files["input"], "--algorithm", "mcmc", "--anneal", "0.5,2"])


def test_segment_resamples_tables_with_the_sampler_only(files, capsys):
    main(["segment", files["input"], "--algorithm", "mcmc", "--grammar", "colloc", "--iterations", "2",
          "--resample-tables", "-o", files["out"], "--json"])
    assert json.loads(capsys.readouterr().out)["model"]["resample_tables"] is True
    with pytest.raises(SystemExit, match="--resample-tables is for --algorithm mcmc"):
        main(["segment", files["input"], "--algorithm", "cvi", "--resample-tables"])


def test_segment_to_stdout_with_brent_gold_puts_the_summary_on_stderr(files, capsys):
    main(["segment", files["input"], "--iterations", "1", "--gold", files["brent"]])
    captured = capsys.readouterr()
    lines = captured.out.split("\n")[:-1]
    assert len(lines) == len(GOLD_WORDS)
    assert "token" in captured.err and "boundary" in captured.err and "lexicon" in captured.err


def test_chars_input_removes_spaces(files, capsys):
    text = _write(files["folder"] / "text.txt", [" ".join(GOLD_WORDS[:4]).replace(" ", "  ")] + GOLD_WORDS[4:])
    main(["segment", text, "--chars", "--iterations", "1", "--quiet"])
    out = capsys.readouterr().out.split("\n")
    assert "".join(out[0].split()) == "".join(" ".join(GOLD_WORDS[:4]).split())


def test_read_utterances_and_gold_formats(tmp_path):
    source = _write(tmp_path / "in.txt", ["gei1 piu3 hai6", "ngo5 dei6"])
    lines = read_utterances(source)
    assert lines == [["gei1", "piu3", "hai6"], ["ngo5", "dei6"]]
    # multi-character symbols: the gold words' characters are matched against them
    gold = read_gold(_write(tmp_path / "gold.txt", ["gei1piu3 hai6", "ngo5dei6"]), lines)
    assert gold == [[("gei1", "piu3"), ("hai6",)], [("ngo5", "dei6")]]
    # or written apart: tab-separated words, or ';eword' closing each word (wordseg's tagged format)
    assert read_gold(_write(tmp_path / "tab.txt", ["gei1 piu3\thai6", "ngo5 dei6"]), lines) == gold
    assert read_gold(_write(tmp_path / "tag.txt", ["gei1 piu3 ;eword hai6 ;eword", "ngo5 dei6 ;eword"]), lines) == gold
    assert read_utterances(_write(tmp_path / "c.txt", ["a b  c"]), chars=True) == [["a", "b", "c"]]


def test_chars_reads_graphemes_not_code_points(tmp_path):
    # a nasal vowel and an e with a combining acute accent: one symbol each; an emoji family too
    text = "ɑ̃be\u0301 \U0001F468\u200d\U0001F469\u200d\U0001F467a"
    assert read_utterances(_write(tmp_path / "g.txt", [text]), chars=True) == [
        ["ɑ̃", "b", "e\u0301", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "a"]]


@pytest.mark.parametrize("separators, line", [
    ((None, None), "sh ii ;eword a1 ;eword"),                 # symbols of several characters: tagged by default
    ((" ", ";eword"), "sh ii ;eword a1 ;eword"),
    ((" ", "\t"), "sh ii\ta1"),
    (("-", " "), "sh-ii a1"),
])
def test_segment_output_keeps_symbols_apart_and_reads_back_as_gold(tmp_path, capsys, separators, line):
    lines = ["sh ii a1", "a1 sh ii", "sh ii a1 a1"] * 4
    source = _write(tmp_path / "in.txt", lines)
    options = [x for flag, value in zip(("-p", "-w"), separators) if value is not None for x in (flag, value)]
    out = str(tmp_path / "out.txt")
    # the model's a = 0, b = 1 rather than py-cfg's start, which leaves these few lines whole: a file of one-word
    # lines has no tab to tell the tab-separated format apart
    main(["segment", source, "--algorithm", "mcmc", "--iterations", "2", "--discount", "0", "--concentration", "1",
          "--no-estimate-hyperparameters", "-o", out, "--json", *options])
    report = json.loads(capsys.readouterr().out)
    with open(out, encoding="utf-8") as stream:
        written = stream.read().split("\n")[:-1]
    assert len(written) == len(lines)
    # the symbols survive: the output read back as gold (it checks they spell the input) keeps every symbol
    if separators[0] != "-":
        back = read_gold(out, read_utterances(source))
        assert [[s for w in words for s in w] for words in back] == [u.split() for u in lines]
        assert written == [format_words(words, report["phone_separator"], report["word_separator"])
                           for words in back]
    assert format_words([("sh", "ii"), ("a1",)], report["phone_separator"], report["word_separator"]) == line


def test_separators_must_tell_words_apart(files):
    with pytest.raises(SystemExit, match="--word-separator ' ' must be non-empty and tell words apart"):
        main(["segment", files["input"], "-p", " ", "-w", " "])
    assert TAGGED == (" ", ";eword")


def test_bad_input_is_one_line_naming_file_and_line(tmp_path):
    """An empty line, a symbol the grammar cannot derive, a gold file that does not match, an adapted
    nonterminal that rewrites to itself: each stops with the file and line, and no output is written."""
    out = tmp_path / "out.txt"
    good = _write(tmp_path / "good.txt", ["y u w a n t", "s i"])
    cases = [
        (["segment", _write(tmp_path / "empty.txt", ["y u", "", "s i"])], r"empty\.txt, line 2: an empty line"),
        (["segment", _write(tmp_path / "x.txt", ["b I g", "x I g"]), "--grammar", "colloc-syllable"],
         r"x\.txt, line 2: the symbol 'x' is not a terminal"),
        (["segment", good, "--gold", _write(tmp_path / "short.txt", ["yu want"])],
         r"short\.txt, line 1: the gold file ends here, but the input has 2 lines"),
        (["segment", good, "--gold", _write(tmp_path / "long.txt", ["yu want", "si", "yu"])],
         r"long\.txt, line 3: a gold line beyond the input's 2 lines"),
        (["segment", good, "--gold", _write(tmp_path / "gap.txt", ["yu want", ""])], r"gap\.txt, line 2: an empty line"),
        (["segment", good, "--grammar", _write(tmp_path / "self.txt", ["Sentence -> Word+", "@Word -> X",
                                                                       "X -> Word", "@Word -> Phon+", "Phon -> <any:1>"])],
         r"self\.txt, line 2: adapted Word rewrites to itself \(Word -> X -> Word\)"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit, match=message) as error:
            main(argv + ["-o", str(out)])
        assert "\n" not in str(error.value)
        assert not out.exists()


def test_length_caps_stop_before_any_work(tmp_path):
    """Long utterances would take memory growing with the square of their length (issue 34: a 5,776-character
    line ended in a MemoryError): past --max-length (default 200) or --max-substrings the command stops."""
    long = _write(tmp_path / "long.txt", ["a b"] * 3 + [" ".join("ab" * 101)])
    with pytest.raises(SystemExit, match=r"long\.txt, line 4: 202 symbols, more than --max-length 200"):
        main(["segment", long])
    with pytest.raises(SystemExit, match=r"line 2: 3 symbols, more than --max-length 2"):
        main(["segment", _write(tmp_path / "three.txt", ["a b", "a b a"]), "--max-length", "2"])
    with pytest.raises(SystemExit, match=r"9 substrings .* more than --max-substrings 8: .* line 2, has 3 symbols"):
        main(["segment", _write(tmp_path / "sum.txt", ["a b", "a b a"]), "--max-substrings", "8"])


def test_degenerate_segmentations_are_warned_about(tmp_path, capsys):
    utterances = [list("abcdefgh"), list("hgfedcba")]
    assert "almost no word boundaries" in degenerate([[tuple(u)] for u in utterances], utterances)
    assert "between almost every two symbols" in degenerate([[(s,) for s in u] for u in utterances], utterances)
    assert degenerate([[tuple(u[:4]), tuple(u[4:])] for u in utterances], utterances) is None
    # end to end: distinct random strings leave nothing to reuse, and a tiny concentration makes every new word
    # dear, so every utterance stays whole
    rng = __import__("numpy").random.default_rng(0)
    lines = [" ".join(rng.choice(list("abcdefghijklmnop"), 12)) for _ in range(6)]
    main(["segment", _write(tmp_path / "random.txt", lines), "--algorithm", "mcmc", "--concentration", "1e-6",
          "--iterations", "2", "--quiet", "-o", str(tmp_path / "out.txt"), "--json"])
    captured = capsys.readouterr()
    assert "cvbayes segment: warning: almost no word boundaries" in captured.err
    assert json.loads(captured.out)["warnings"][0].startswith("almost no word boundaries")


def test_gold_errors_name_the_file_and_line(tmp_path):
    lines = read_utterances(_write(tmp_path / "in.txt", ["y u w a n t", "s i"]))
    bad = _write(tmp_path / "bad.txt", ["yu want", "sI"])
    with pytest.raises(CorpusFormatError, match=r"bad\.txt, line 2: the gold word 'sI'"):
        read_gold(bad, lines)
    cut_inside = read_utterances(_write(tmp_path / "multi.txt", ["gei1 piu3"]))
    with pytest.raises(CorpusFormatError, match="line 1: the gold word 'gei'"):
        read_gold(_write(tmp_path / "inside.txt", ["gei 1piu3"]), cut_inside)
    with pytest.raises(CorpusFormatError, match="end before the input symbols"):
        read_gold(_write(tmp_path / "short.txt", ["yu", "si"]), lines)
    with pytest.raises(CorpusFormatError, match=r"one\.txt, line 1: the gold file ends here, but the input has 2"):
        read_gold(_write(tmp_path / "one.txt", ["yu want"]), lines)
    brent = _write(tmp_path / "b.txt", ["y u ;eword w a n t ;eword", "s I ;eword"])
    with pytest.raises(CorpusFormatError, match=r"b\.txt, line 2: the gold symbols differ"):
        read_gold(brent, lines)
    with pytest.raises(CorpusFormatError, match=r"t\.txt, line 2: the gold symbols differ"):
        read_gold(_write(tmp_path / "t.txt", ["y u\tw a n t", "s\tI"]), lines)


def test_command_errors(tmp_path):
    marked = _write(tmp_path / "marked.txt", ["y u ;eword"])
    with pytest.raises(SystemExit, match=r"cvbayes segment: .*marked\.txt, line 1: .*';eword'"):
        main(["segment", marked])
    undecodable = tmp_path / "bad.txt"
    undecodable.write_bytes(b"a b\n\xff\n")
    with pytest.raises(SystemExit, match=r"bad\.txt, line 2: invalid utf-8"):
        main(["segment", str(undecodable)])
    with pytest.raises(SystemExit, match="no utterances"):
        main(["segment", _write(tmp_path / "empty.txt", [])])
    with pytest.raises(SystemExit, match="--iterations must be at least 1"):
        main(["segment", marked, "--iterations", "0"])
    with pytest.raises(SystemExit, match="folder .* does not exist"):
        main(["segment", marked, "-o", str(tmp_path / "missing" / "out.txt")])


# ---------------------------------------------------------------- cvbayes experiment wordseg
@pytest.mark.slow
def test_wordseg_experiment_quick(tmp_path, monkeypatch, capsys):
    from cvbayes.data import SegmentationData
    from cvbayes.experiments import wordseg

    tiny = SegmentationData([[tuple(w) for w in line.split()] for line in GOLD_WORDS], description="tiny")
    loaded = []
    monkeypatch.setattr(wordseg, "load_corpus", lambda name, n=None: loaded.append((name, n)) or tiny)
    main(["experiment", "wordseg", "--quick", "--quiet", "--out", str(tmp_path), "--grammars", "unigram",
          "--corpora", "brent,eve"])
    folder = tmp_path / "wordseg"
    results = json.loads((folder / "results.json").read_text())
    assert loaded == [("brent", 200), ("eve", 200)]
    assert results["config"]["evaluation"].startswith("training utterances")
    runs = results["results"]["brent"]["runs"]
    assert {run["algorithm"] for run in runs} == set(results["config"]["algorithms"])
    for run in runs:
        assert 0.0 <= run["scores"]["token"]["f1"] <= 1.0
        assert run["curve"][-1]["iteration"] == run["iterations"]
    table = (folder / "table.md").read_text()
    assert "training utterances" in table and "| unigram |" in table
    assert (folder / "token_f1_by_seconds_brent_unigram.png").exists()
    assert (folder / "token_f1_by_time.png").exists()


def test_wordseg_baselines_lengths_reference_and_append(tmp_path, monkeypatch):
    from cvbayes.data import SegmentationData
    from cvbayes.experiments import wordseg

    gold = SegmentationData([[("b", "a"), ("d", "i")], [("a", "b", "a", "d", "i", "b", "a", "d", "i", "b", "a")]])
    scores = wordseg.baselines(gold, vowels=("a", "i"))
    assert scores["one word per utterance"]["token"]["matched"] == 1     # the second utterance is one word
    assert scores["one word per symbol"]["boundary"]["recall"] == 1.0
    # after every vowel: b a | d i, and a | b a | d i | b a | d i | b a (the last vowel's word ends the utterance)
    assert scores["a boundary after every vowel"]["token"]["matched"] == 2
    assert scores["a boundary after every vowel"]["token"]["predicted"] == 8
    by_length = wordseg.scores_by_length([[("b", "a", "d", "i")], gold.segments[1]], gold.segments)
    assert by_length == {"1-10": {"utterances": 1, "token_f1": 0.0, "words_per_gold_word": 0.5},
                         "11-20": {"utterances": 1, "token_f1": 1.0, "words_per_gold_word": 1.0}}
    # the reference's runs (benchmarks/bench_wordseg.py) come in a table of their own under Brent
    reference = {"system": "wordseg-ag", "grammar": "unigram", "seed": 1, "iterations": 20, "planned_iterations": 40,
                 "stopped_early": True, "cpu_seconds": 30.0, "wall_seconds": None, "peak_rss_mib": None,
                 "final": {"token_f1": 0.6, "boundary_f1": 0.7, "lexicon_f1": 0.5},
                 "curve": [{"sweep": 10, "cpu_seconds": 15.0, "token_f1": 0.5},
                           {"sweep": 20, "cpu_seconds": 30.0, "token_f1": 0.6}],
                 "time_to_published": {"target": 0.56, "sweep": 20, "seconds": 30.0},
                 "time_to_final_less_one_point": {"target": 0.59, "sweep": 20, "seconds": 30.0}}
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "ag_unigram_seed1.json").write_text(json.dumps(reference))
    monkeypatch.setattr(wordseg, "REFERENCE_DIR", tmp_path / "ref")
    monkeypatch.setattr(wordseg.reference_runs, "__defaults__", (tmp_path / "ref",))
    tiny = SegmentationData([[tuple(w) for w in line.split()] for line in GOLD_WORDS], description="tiny")
    monkeypatch.setattr(wordseg, "load_corpus", lambda name, n=None: tiny)
    argv = ["experiment", "wordseg", "--quick", "--quiet", "--out", str(tmp_path), "--grammars", "unigram",
            "--corpora", "brent", "--algorithms"]
    main(argv + ["vb"])
    main(argv + ["mcmc", "--append"])
    # a seed of the same setting run longer: the plots average the passes every run has
    main([a for a in argv if a != "--quick"] + ["vb", "--append", "--seed", "1", "--seeds", "1", "--iterations", "3"])
    folder = tmp_path / "wordseg"
    results = json.loads((folder / "results.json").read_text())
    assert sorted(r["algorithm"] for r in results["results"]["brent"]["runs"]) == ["mcmc", "vb", "vb"]
    assert results["config"]["command"].count(";") == 2
    table = (folder / "table.md").read_text()
    assert "| one word per utterance |" in table and "By utterance length" in table
    assert "| unigram | wordseg-ag | 1 | 20 (stopped; of 40) | 30 | – | – | 60.0 | 70.0 | 50.0 | – | 20 (30 s) |" in table
    assert (folder / "token_f1_against_reference_unigram.png").exists()


def test_wordseg_labels_a_run_by_its_predictive_and_b():
    from cvbayes.experiments.wordseg import _label

    def run(grammar="unigram", **model):
        return {"algorithm": "cvi", "grammar": grammar, "model": {"a": 0.0, **model}}

    assert _label(run(predictive="zero-exact")) == "cvi"
    assert _label(run(predictive="second-order")) == "cvi (second-order predictive)"
    assert _label(run()) == "cvi (first-order predictive)"      # saved before the predictive was a choice
    assert _label({"algorithm": "vb", "grammar": "colloc", "model": {"a": 0.0}}) == "vb"
    assert _label(run(predictive="zero-exact", b=100.0, estimate_hyperparameters=True)) == "cvi (b = 100; a, b learned)"
    assert _label(run(predictive="zero-exact", init="empty")) == "cvi"       # cvi's own start
    assert _label({"algorithm": "vb", "grammar": "unigram", "model": {"a": 0.0, "init": "empty"}}) == "vb (empty start)"
    # colloc-syllable's text sets every b, so the model's is not the run's
    assert (_label(run("colloc-syllable", predictive="zero-exact", b=1e4, estimate_hyperparameters=True))
            == "cvi (b from the grammar; a, b learned)")


def test_wordseg_options_are_checked():
    from cvbayes.experiments.wordseg import evaluation_points

    assert evaluation_points(1) == {1}
    assert evaluation_points(50) >= {1, 50} and len(evaluation_points(50)) <= 12
    with pytest.raises(SystemExit, match="unknown grammar 'bigram'"):
        main(["experiment", "wordseg", "--grammars", "bigram"])
    with pytest.raises(SystemExit):     # neither a word segmentation nor a tagging algorithm
        main(["experiment", "wordseg", "--algorithms", "cvi,foo"])


def test_segment_restarts_and_learned_hyperparameters(files, capsys):
    main(["segment", files["input"], "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    # the default learner: mcmc from py-cfg's start, one start, 200 sweeps, a and b sampled, tables resampled
    assert report["algorithm"] == "mcmc" and report["restarts"] == 1 and report["iterations"] == 200
    model = report["model"]
    settings = (model["a"], model["b"], model["estimate_hyperparameters"], model["resample_tables"])
    assert settings == (1e-4, 1e4, True, True)
    main(["segment", files["input"], "--iterations", "2", "--no-estimate-hyperparameters", "--no-resample-tables",
          "--concentration", "3", "-o", files["out"], "--json"])
    model = json.loads(capsys.readouterr().out)["model"]
    settings = (model["a"], model["b"], model["estimate_hyperparameters"], model["resample_tables"])
    assert settings == (1e-4, 3, False, False)
    main(["segment", files["input"], "--algorithm", "cvi", "--iterations", "1", "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    # vb and cvi keep the model's defaults
    assert (report["model"]["a"], report["model"]["b"], report["model"]["estimate_hyperparameters"]) == (0, 1, False)
    main(["segment", files["input"], "--algorithm", "vb", "--iterations", "2", "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["algorithm"] == "vb" and report["restarts"] == 5 and len(report["restart_objectives"]) == 5
    assert report["objective"] in report["restart_objectives"]     # the kept restart (AdaptorGrammar.n_init)
    main(["segment", files["input"], "--algorithm", "mcmc", "--iterations", "3", "--discount", "0.3",
          "--estimate-hyperparameters", "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["restarts"] == 1 and report["model"]["discount"] != [0.3]
    assert report["model"]["concentration"] != [report["model"]["b"]]
    with pytest.raises(SystemExit):
        main(["segment", files["input"], "--restarts", "0", "-o", files["out"]])


def test_segment_with_syllables_brent_phonemes_or_given_vowels(files, capsys):
    main(["segment", files["input"], "--grammar", "colloc-syllable", "--algorithm", "mcmc", "--iterations", "2",
          "--gold", files["gold"], "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["grammar"] == "colloc-syllable" and report["vowels"] is None
    letters = _write(files["folder"] / "letters.txt", ["the dog", "a dog", "the cat", "a cat", "xylophone"])
    with pytest.raises(SystemExit, match=r"letters\.txt, line 5: the symbol 'x' is not a terminal .* --vowels"):
        main(["segment", letters, "--chars", "--grammar", "colloc-syllable", "--iterations", "1"])
    main(["segment", letters, "--chars", "--grammar", "colloc-syllable", "--vowels", "a e i o u y",
          "--algorithm", "vb", "--iterations", "2", "--restarts", "1", "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["vowels"] == "a e i o u y" and report["words"] >= 5
    with open(files["out"], encoding="utf-8") as stream:
        assert [line.replace(" ", "") for line in stream.read().split("\n")[:-1]] == \
            ["thedog", "adog", "thecat", "acat", "xylophone"]
    with pytest.raises(SystemExit, match="--vowels goes with --grammar colloc-syllable"):
        main(["segment", letters, "--chars", "--vowels", "a e i o u"])


def test_wordseg_runs_the_syllable_grammar_only_where_it_derives_the_symbols(tmp_path, monkeypatch):
    from cvbayes.data import SegmentationData
    from cvbayes.experiments import wordseg

    phonemes = SegmentationData([[tuple(w) for w in line.split()] for line in GOLD_WORDS], description="phonemes")
    letters = SegmentationData([[tuple(w) for w in line.split()] for line in ["the dog", "a box"] * 3],
                               description="letters")
    monkeypatch.setattr(wordseg, "load_corpus", lambda name, n=None: phonemes if name == "brent" else letters)
    main(["experiment", "wordseg", "--quick", "--quiet", "--out", str(tmp_path), "--grammars", "colloc-syllable",
          "--algorithms", "mcmc", "--corpora", "brent,eve"])
    results = json.loads((tmp_path / "wordseg" / "results.json").read_text())
    assert [run["grammar"] for run in results["results"]["brent"]["runs"]] == ["colloc-syllable"]
    assert results["results"]["eve"]["runs"] == []
    assert "'x'" in results["results"]["eve"]["skipped"][0]
    assert "Not run: colloc-syllable" in (tmp_path / "wordseg" / "table.md").read_text()


def test_wordseg_model_options_reach_the_runs_and_the_table(tmp_path, monkeypatch):
    from cvbayes.data import SegmentationData
    from cvbayes.experiments import wordseg

    tiny = SegmentationData([[tuple(w) for w in line.split()] for line in GOLD_WORDS], description="tiny")
    monkeypatch.setattr(wordseg, "load_corpus", lambda name, n=None: tiny)
    main(["experiment", "wordseg", "--quick", "--quiet", "--out", str(tmp_path), "--grammars", "unigram",
          "--algorithms", "vb,mcmc", "--corpora", "brent", "--discount", "0.3", "--estimate-hyperparameters",
          "--anneal", "5,3", "--resample-tables", "--seed", "2"])
    runs = json.loads((tmp_path / "wordseg" / "results.json").read_text())["results"]["brent"]["runs"]
    run = [run for run in runs if run["algorithm"] == "mcmc"][0]
    assert run["model"]["anneal"] == [5.0, 3] and run["model"]["discount"] != [0.3]
    assert run["model"]["resample_tables"] is True
    assert run["seed"] == 2     # --seed is the first seed, so a missing seed can be run on its own
    table = (tmp_path / "wordseg" / "table.md").read_text()
    assert "| mcmc (a = 0.3; a, b learned; annealed from T = 5 over 3 sweeps; tables resampled) |" in table
    assert "| vb (a = 0.3; a, b learned) |" in table      # only the sampler anneals and resamples tables
    with pytest.raises(SystemExit, match="--anneal takes T0,SWEEPS"):
        main(["experiment", "wordseg", "--anneal", "5", "--out", str(tmp_path)])

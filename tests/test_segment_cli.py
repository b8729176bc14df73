"""``cvbayes segment``: end to end on a tiny file, its file formats and its errors."""
import json

import pytest

from cvbayes.cli import main
from cvbayes.commands.segment import read_gold, read_utterances
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
    lines.insert(3, "")   # an empty line stays an empty output line
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
    assert len(written) == len(given) and written[3] == ""
    for out, line in zip(written, given):
        assert "".join(out.split()) == "".join(line.split())     # the same symbols, only cut
    assert report["utterances"] == len(GOLD_WORDS) and report["iterations"] == 2
    assert report["algorithm"] == "vb" and report["grammar"] == "unigram"
    found = [[tuple(w) for w in line.split()] for line in written if line]
    gold = [[tuple(w) for w in line.split()] for line in GOLD_WORDS]
    assert report["scores"] == json.loads(json.dumps(segmentation_scores(found, gold).as_dict()))


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


def test_segment_to_stdout_with_brent_gold_puts_the_summary_on_stderr(files, capsys):
    main(["segment", files["input"], "--iterations", "1", "--gold", files["brent"]])
    captured = capsys.readouterr()
    lines = captured.out.split("\n")[:-1]
    assert len(lines) == len(GOLD_WORDS) + 1
    assert "token" in captured.err and "boundary" in captured.err and "lexicon" in captured.err


def test_chars_input_removes_spaces(files, capsys):
    text = _write(files["folder"] / "text.txt", [" ".join(GOLD_WORDS[:4]).replace(" ", "  ")] + GOLD_WORDS[4:])
    main(["segment", text, "--chars", "--iterations", "1", "--quiet"])
    out = capsys.readouterr().out.split("\n")
    assert "".join(out[0].split()) == "".join(" ".join(GOLD_WORDS[:4]).split())


def test_read_utterances_and_gold_formats(tmp_path):
    source = _write(tmp_path / "in.txt", ["gei1 piu3 hai6", "", "ngo5 dei6"])
    lines = read_utterances(source)
    assert lines == [["gei1", "piu3", "hai6"], None, ["ngo5", "dei6"]]
    # multi-character symbols: the gold words' characters are matched against them
    gold = read_gold(_write(tmp_path / "gold.txt", ["gei1piu3 hai6", "ngo5dei6"]), lines)
    assert gold == [[("gei1", "piu3"), ("hai6",)], [("ngo5", "dei6")]]
    assert read_utterances(_write(tmp_path / "c.txt", ["a b  c"]), chars=True) == [["a", "b", "c"]]


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
    with pytest.raises(CorpusFormatError, match="1 gold utterances .* against 2"):
        read_gold(_write(tmp_path / "one.txt", ["yu want"]), lines)
    brent = _write(tmp_path / "b.txt", ["y u ;eword w a n t ;eword", "s I ;eword"])
    with pytest.raises(CorpusFormatError, match=r"b\.txt, line 2: the gold symbols differ"):
        read_gold(brent, lines)


def test_command_errors(tmp_path):
    marked = _write(tmp_path / "marked.txt", ["y u ;eword"])
    with pytest.raises(SystemExit, match=r"cvbayes segment: .*marked\.txt, line 1: .*';eword'"):
        main(["segment", marked])
    undecodable = tmp_path / "bad.txt"
    undecodable.write_bytes(b"a b\n\xff\n")
    with pytest.raises(SystemExit, match=r"bad\.txt, line 2: invalid utf-8"):
        main(["segment", str(undecodable)])
    with pytest.raises(SystemExit, match="no utterances"):
        main(["segment", _write(tmp_path / "empty.txt", ["", "  "])])
    with pytest.raises(SystemExit, match="--iterations must be at least 1"):
        main(["segment", marked, "--iterations", "0"])
    with pytest.raises(SystemExit, match="folder .* does not exist"):
        main(["segment", marked, "-o", str(tmp_path / "missing" / "out.txt")])


# ---------------------------------------------------------------- cvbayes experiment wordseg
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


def test_wordseg_options_are_checked():
    from cvbayes.experiments.wordseg import evaluation_points

    assert evaluation_points(1) == {1}
    assert evaluation_points(50) >= {1, 50} and len(evaluation_points(50)) <= 12
    with pytest.raises(SystemExit, match="unknown grammar 'bigram'"):
        main(["experiment", "wordseg", "--grammars", "bigram"])
    with pytest.raises(SystemExit):     # neither a word segmentation nor a tagging algorithm
        main(["experiment", "wordseg", "--algorithms", "cvi,foo"])


def test_segment_restarts_and_learned_hyperparameters(files, capsys):
    main(["segment", files["input"], "--iterations", "2", "-o", files["out"], "--json"])
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
    letters = _write(files["folder"] / "letters.txt", ["the dog", "a dog", "the cat", "", "a cat", "xylophone"])
    with pytest.raises(SystemExit, match=r"letters\.txt, line 6: the symbol 'x' is not a terminal .* --vowels"):
        main(["segment", letters, "--chars", "--grammar", "colloc-syllable", "--iterations", "1"])
    main(["segment", letters, "--chars", "--grammar", "colloc-syllable", "--vowels", "a e i o u y",
          "--algorithm", "vb", "--iterations", "2", "--restarts", "1", "-o", files["out"], "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["vowels"] == "a e i o u y" and report["words"] >= 5
    with open(files["out"], encoding="utf-8") as stream:
        assert [line.replace(" ", "") for line in stream.read().split("\n")[:-1]] == \
            ["thedog", "adog", "thecat", "", "acat", "xylophone"]
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
          "--anneal", "5,3", "--seed", "2"])
    runs = json.loads((tmp_path / "wordseg" / "results.json").read_text())["results"]["brent"]["runs"]
    run = [run for run in runs if run["algorithm"] == "mcmc"][0]
    assert run["model"]["anneal"] == [5.0, 3] and run["model"]["discount"] != [0.3]
    assert run["seed"] == 2     # --seed is the first seed, so a missing seed can be run on its own
    table = (tmp_path / "wordseg" / "table.md").read_text()
    assert "| mcmc (a = 0.3; a, b learned; annealed from T = 5 over 3 sweeps) |" in table
    assert "| vb (a = 0.3; a, b learned) |" in table      # only the sampler anneals
    with pytest.raises(SystemExit, match="--anneal takes T0,SWEEPS"):
        main(["experiment", "wordseg", "--anneal", "5", "--out", str(tmp_path)])

"""What a new user hit on data the project never saw (issue 34): no useless model without being told, plain
messages, and the options of the tools users already run."""
import json

import numpy as np
import pytest

from cvbayes.cli import main

TEXT = "the cat sat on the mat\nthe dog ran\na cat ran on a mat\nthe dog sat\n"
CONLLU = ("# sent_id = 1\n1\tCats\tcat\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tsit\tsit\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"
          "# sent_id = 2\n1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tran\trun\tVERB\tVBD\t_\t0\troot\t_\t_\n\n")


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "my.txt"
    path.write_text(TEXT)
    return path


def test_the_default_learner_refuses_a_one_line_corpus(tmp_path, capsys):
    one_line = tmp_path / "one.txt"
    one_line.write_text("the cat sat on the mat and the dog ran to the cat\n")
    model = tmp_path / "m.npz"
    with pytest.raises(SystemExit) as exit_:
        main(["fit", str(one_line), "--states", "3", "-o", str(model), "--quiet"])
    message = str(exit_.value.code)
    assert "one sentence" in message and "would learn nothing" in message and "--algorithm cvi3" in message
    assert not model.exists()
    main(["fit", str(one_line), "--states", "3", "-o", str(model), "--quiet", "--iterations", "2",
          "--algorithm", "cvi3", "--subchain-length", "4"])
    assert model.exists()


def test_hdp_hmm_says_whether_gamma_and_sigma_were_learned(tmp_path, text_file, capsys):
    common = ["fit", str(text_file), "--format", "text", "--model", "hdp-hmm", "--states", "4", "--gamma", "2.5",
              "--sigma", "7", "--iterations", "4", "-o", str(tmp_path / "m.npz"), "--json"]
    main(common)                                    # the default burn-in: half of --iterations
    report = json.loads(capsys.readouterr().out)
    assert report["burn_in"] == 2 and report["hyperparameters_learned"]
    assert (report["gamma"], report["sigma"]) != (2.5, 7.0)
    main(common[:-1] + ["--burn-in", "4"])
    text = capsys.readouterr().out
    assert "gamma 2.5 and sigma 7 were not learned" in text and "learned gamma" not in text
    with pytest.raises(SystemExit, match="--burn-in is for --model hdp-hmm"):
        main(["fit", str(text_file), "--states", "2", "--burn-in", "3", "-o", str(tmp_path / "m.npz")])
    with pytest.raises(SystemExit, match="--merge is for --model hdp-hmm"):
        main(["fit", str(text_file), "--states", "2", "--merge", "auto", "-o", str(tmp_path / "m.npz")])
    main(common[:-1] + ["--merge", "auto", "--iterations", "10", "--quiet"])   # a fit with one merge step


def test_fit_says_how_many_states_decoding_uses_and_where_the_time_went(tmp_path, text_file, capsys):
    main(["fit", str(text_file), "--states", "9", "--iterations", "3", "-o", str(tmp_path / "m.npz"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert 1 <= report["states_used"] <= 9 and report["wall_seconds"] >= report["train_seconds"] > 0
    main(["fit", str(text_file), "--states", "9", "--iterations", "3", "-o", str(tmp_path / "m.npz"), "--quiet"])
    text = capsys.readouterr().out
    assert f"decoding uses {report['states_used']} of the 9 states" in text
    assert "with the start, numba's compilation on first use and decoding" in text


def test_an_unknown_option_prints_the_usage_of_its_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["lda", "topics", "model.npz", "--bogus"])
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and error.startswith("usage: cvbayes lda topics")
    assert "unrecognized arguments: --bogus" in error


def test_progress_bars_in_a_log_are_lines_without_carriage_returns(tmp_path, text_file, capsys):
    main(["fit", str(text_file), "--states", "2", "--iterations", "3", "-o", str(tmp_path / "m.npz")])
    error = capsys.readouterr().err                 # not a terminal, as a redirected log
    assert "\r" not in error and error.startswith("cvi2:   0%|") and error.count("\ncvi2: ") == 1
    assert "\ncvi2: 100%|" in error and "3/3 [" in error     # the bar's end, however fast the passes were
    main(["fit", str(text_file), "--states", "2", "--iterations", "3", "-o", str(tmp_path / "m.npz"), "--quiet"])
    assert capsys.readouterr().err == ""


def test_ctrl_c_says_how_to_resume(tmp_path, text_file, capsys, monkeypatch):
    import cvbayes.commands.fit

    checkpoint = tmp_path / "run.ckpt"

    def interrupted(*args, **kwargs):
        checkpoint.write_bytes(b"a checkpoint")     # passes done before Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(cvbayes.commands.fit, "fit_tagger", interrupted)
    command = ["fit", str(text_file), "--states", "2", "-o", str(tmp_path / "m.npz")]
    with pytest.raises(SystemExit) as exit_:
        main(command + ["--checkpoint", str(checkpoint)])
    error = capsys.readouterr().err
    assert exit_.value.code == 130 and "Traceback" not in error and len(error.strip().splitlines()) == 1
    assert f"the checkpoint {checkpoint}" in error and "run the same command again to resume" in error
    checkpoint.unlink()
    with pytest.raises(SystemExit):
        main(command)
    assert "nothing saved (--checkpoint PATH makes a run resumable)" in capsys.readouterr().err


def test_library_warnings_are_one_line_without_a_source_path(tmp_path, text_file, capsys, monkeypatch):
    import warnings

    import cvbayes.commands.tag

    def decode_with(model, corpus, method):
        warnings.warn("a word of caution", UserWarning)
        return np.zeros(corpus.n_tokens, dtype=int), ["0"] * corpus.n_tokens

    main(["fit", str(text_file), "--states", "2", "--iterations", "2", "-o", str(tmp_path / "m.npz"), "--quiet"])
    monkeypatch.setattr(cvbayes.commands.tag, "decode_with", decode_with)
    with warnings.catch_warnings():
        warnings.simplefilter("default")            # as outside the test suite, where warnings are not errors
        main(["tag", str(tmp_path / "m.npz"), str(text_file), "-o", str(tmp_path / "out.txt")])
    assert capsys.readouterr().err == "cvbayes tag: warning: a word of caution\n"


def test_fit_and_evaluate_read_the_xpos_column(tmp_path, capsys):
    treebank = tmp_path / "tb.conllu"
    treebank.write_text(CONLLU)
    model = tmp_path / "m.npz"
    main(["fit", str(treebank), "--tag", "xpos", "--dictionary", "complete", "--iterations", "2", "-o", str(model),
          "--quiet"])
    from cvbayes import HMM

    assert set(HMM.load(model).tagset_.symbols) >= {"NNS", "VBP", "VBD"}
    capsys.readouterr()
    main(["evaluate", str(model), str(treebank), "--tag", "xpos", "--json"])
    captured = capsys.readouterr()
    assert json.loads(captured.out)["gold_tokens_with_tags_outside_the_model"] == 0.0 and captured.err == ""


def test_evaluate_says_when_the_tag_sets_differ(tmp_path, capsys):
    treebank = tmp_path / "tb.conllu"
    treebank.write_text(CONLLU)
    model = tmp_path / "m.npz"
    main(["fit", str(treebank), "--dictionary", "complete", "--iterations", "2", "-o", str(model), "--quiet"])
    capsys.readouterr()
    main(["evaluate", str(model), str(treebank), "--tag", "xpos", "--json"])     # UPOS model, XPOS gold
    captured = capsys.readouterr()
    assert json.loads(captured.out)["gold_tokens_with_tags_outside_the_model"] == 1.0
    assert "different tag sets" in captured.err and "e.g. NNS" in captured.err


# -- LDA -------------------------------------------------------------------------------------------------

WORDS = "apple bread cheese dates eggs figs grapes honey ice jam kale leek mango nuts olive pear".split()


@pytest.fixture
def documents(tmp_path):
    """Sixty documents of two planted topics (the first and the second eight words)."""
    rng = np.random.default_rng(0)
    path = tmp_path / "docs.txt"
    path.write_text("".join(" ".join(rng.choice(WORDS[:8] if d % 2 == 0 else WORDS[8:], size=30)) + "\n"
                            for d in range(60)))
    return path


LDA_FIT = ["--topics", "2", "--min-count", "1", "--max-df", "1.0", "--quiet"]


@pytest.mark.parametrize("option, value, message", [
    ("--heldout", "1.5", "--heldout: must be at least 0 and below 1"),
    ("--heldout", "-0.5", "--heldout: must be at least 0 and below 1"),
    ("--iterations", "-1", "--iterations: must be at least 1"),
    ("--topics", "0", "--topics: must be at least 1"),
])
def test_lda_fit_refuses_bad_numbers_before_work(documents, tmp_path, capsys, option, value, message):
    with pytest.raises(SystemExit) as exit_:
        main(["lda", "fit", str(documents), *LDA_FIT, option, value, "-o", str(tmp_path / "m.npz")])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m.npz").exists()


def test_lda_fit_keeps_a_document_to_train_on(documents, tmp_path):
    with pytest.raises(SystemExit, match="cvbayes lda fit: --heldout 0.999 of 60 documents leaves none to train on"):
        main(["lda", "fit", str(documents), *LDA_FIT, "--heldout", "0.999", "-o", str(tmp_path / "m.npz")])
    assert not (tmp_path / "m.npz").exists()


def test_lda_topics_words_and_weights(documents, tmp_path, capsys):
    model = tmp_path / "m.npz"
    main(["lda", "fit", str(documents), *LDA_FIT, "-o", str(model)])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["lda", "topics", str(model), "--words", "-3"])
    assert "--words: must be at least 1, got -3" in capsys.readouterr().err
    main(["lda", "topics", str(model), "--words", "3", "--json"])
    report = json.loads(capsys.readouterr().out)
    from cvbayes import LDA

    fitted = LDA.load(model)
    for words, weights in zip(report["top_words"], report["weights"]):
        assert len(words) == len(weights) == 3 and weights == sorted(weights, reverse=True)
    k = 0
    ids = fitted.vocabulary_.encode(report["top_words"][k])
    np.testing.assert_allclose(report["weights"][k], fitted.topic_word_[k, ids], atol=1e-6)
    assert report["alpha"] == [0.1, 0.1]


def test_lda_document_topics_of_training_and_new_documents(documents, tmp_path, capsys):
    model, proportions = tmp_path / "m.npz", tmp_path / "doc-topics.txt"
    main(["lda", "fit", str(documents), *LDA_FIT, "-o", str(model), "--output-doc-topics", str(proportions)])
    lines = proportions.read_text().splitlines()
    assert lines[0].startswith("#doc\tname\ttopic 0\ttopic 1") and len(lines) == 61
    table = np.array([[float(v) for v in line.split("\t")[2:]] for line in lines[1:]])
    np.testing.assert_allclose(table.sum(axis=1), 1.0, atol=1e-5)
    assert [line.split("\t")[:2] for line in lines[1:3]] == [["0", "1"], ["1", "2"]]
    topic = table.argmax(axis=1)
    assert len(set(topic[::2])) == 1 and len(set(topic[1::2])) == 1 and topic[0] != topic[1]
    new = tmp_path / "new.txt"
    new.write_text("apple bread zebra cheese\nmango nuts olive quince\n")     # zebra, quince: never seen
    capsys.readouterr()
    main(["lda", "infer", str(model), str(new)])
    rows = [[float(v) for v in line.split("\t")[2:]] for line in capsys.readouterr().out.splitlines()[1:]]
    assert np.argmax(rows[0]) == topic[0] and np.argmax(rows[1]) == topic[1]


def test_lda_transform_maps_documents_read_with_their_own_vocabulary(documents, tmp_path):
    from cvbayes import LDA
    from cvbayes.data.documents import read_lines

    train = read_lines(documents, min_count=1, max_df=1.0)
    model = LDA(2, n_iter=30).fit(train)
    new = tmp_path / "new.txt"
    new.write_text("zebra apple bread cheese\nmango nuts olive\n")
    own = read_lines(new, min_count=1, max_df=1.0)                 # its own ids; 'zebra' unknown to the model
    shared = read_lines(new, vocabulary=model.vocabulary_)
    np.testing.assert_allclose(model.transform(own), model.transform(shared))
    assert model.perplexity(own) == pytest.approx(model.perplexity(shared))
    raw = own.__class__(own.observations + 100, own.offsets)      # raw ids the model cannot know
    with pytest.raises(ValueError, match="read them with the model's vocabulary"):
        model.transform(raw)


def test_lda_doc_topic_survives_save_and_load(documents, tmp_path):
    from cvbayes import LDA
    from cvbayes.data.documents import read_lines

    model = LDA(2, n_iter=20).fit(read_lines(documents, min_count=1, max_df=1.0))
    model.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(LDA.load(tmp_path / "m.npz").doc_topic_, model.doc_topic_)


def test_an_unreachable_scheduler_is_named_within_a_timeout(tmp_path, text_file, monkeypatch):
    import socket
    import time

    import cvbayes.commands.options

    pytest.importorskip("distributed")
    monkeypatch.setattr(cvbayes.commands.options, "CONNECT_TIMEOUT", 2)
    with socket.socket() as free:                   # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{free.getsockname()[1]}"
    started = time.perf_counter()
    with pytest.raises(SystemExit, match=f"--scheduler {address}: no Dask scheduler answered within 2 s"):
        main(["fit", str(text_file), "--states", "2", "--algorithm", "em", "--scheduler", address,
              "-o", str(tmp_path / "m.npz")])
    assert time.perf_counter() - started < 30
    with pytest.raises(SystemExit, match="--scheduler nonsense: not a scheduler address"):
        main(["fit", str(text_file), "--states", "2", "--algorithm", "em", "--scheduler", "nonsense",
              "-o", str(tmp_path / "m.npz")])


def test_parse_rewrites_a_deps_column_that_would_contradict_head(tmp_path):
    from cvbayes.data.conllu_io import read_conllu_document

    treebank = tmp_path / "enhanced.conllu"
    treebank.write_text(
        "# sent_id = 1\n1\tCats\tcat\tNOUN\tNNS\t_\t2\tnsubj\t2:nsubj\t_\n2\tsit\tsit\tVERB\tVBP\t_\t0\troot\t0:root\t_\n"
        "3\tdown\tdown\tADV\tRB\t_\t2\tadvmod\t2:advmod|3.1:dep\t_\n3.1\tit\t_\t_\t_\t_\t_\t_\t2:nsubj\t_\n\n"
        "# sent_id = 2\n1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tran\trun\tVERB\tVBD\t_\t0\troot\t_\t_\n\n")
    model, parsed = tmp_path / "dmv.npz", tmp_path / "parsed.conllu"
    main(["induce", str(treebank), "-o", str(model), "--iterations", "3", "--quiet"])
    main(["parse", str(model), str(treebank), "-o", str(parsed), "--quiet"])
    document = read_conllu_document(parsed)
    for sentence, had_deps in zip(document, (True, False)):
        heads, relations = sentence.column("head"), sentence.column("deprel")
        expected = [f"{h}:{r}" for h, r in zip(heads, relations)] if had_deps else ["_"] * len(heads)
        assert sentence.column("deps") == expected
    assert "3.1\tit\t_\t_\t_\t_\t_\t_\t2:nsubj\t_\n" in parsed.read_text()       # the empty node as it was


# -- HMM: what a model learned ---------------------------------------------------------------------------

def test_states_prints_top_words_transitions_and_draws_the_curve(tmp_path, capsys):
    from cvbayes import HMM

    model = tmp_path / "m.npz"
    main(["fit", "brown-embedded", "--tagset", "universal", "--dictionary", "complete", "--sentences", "200",
          "--iterations", "3", "-o", str(model), "--quiet"])
    capsys.readouterr()
    main(["states", str(model), "--words", "3", "--transitions", "--curve", str(tmp_path / "curve.png"), "--json"])
    report = json.loads(capsys.readouterr().out)
    fitted = HMM.load(model)
    assert len(report["top_words"]) == 12 and all(len(words) == 3 for words in report["top_words"])
    determiner = fitted.tagset_.index("DET")
    assert report["top_words"][determiner][0] == "the"
    ids = fitted.vocabulary_.encode(report["top_words"][determiner])
    np.testing.assert_allclose(report["weights"][determiner], fitted.emissionprob_[determiner, ids], atol=1e-6)
    np.testing.assert_allclose(report["transitions"], fitted.transmat_, atol=1e-6)
    assert (tmp_path / "curve.png").stat().st_size > 0
    main(["states", str(model), "--words", "2", "--transitions"])
    text = capsys.readouterr().out.splitlines()
    assert any(line.startswith("state  DET: the ") for line in text)
    assert "transitions (row: from, column: to)" in text and len(text) == 12 + 2 + 1 + 12


@pytest.mark.parametrize("emission, location", [("gaussian", "means"), ("poisson", "lambdas")])
def test_states_prints_a_continuous_familys_locations(tmp_path, capsys, emission, location):
    from cvbayes import HMM

    rng = np.random.default_rng(0)
    X = rng.poisson(np.repeat([[1.0], [9.0]], 40, axis=0)).astype(float)
    model = HMM(n_states=2, emission=emission, algorithm="em", n_iter=3, random_state=0).fit(X, lengths=[40, 40])
    model.save(tmp_path / "m.npz")
    main(["states", str(tmp_path / "m.npz"), "--json"])
    report = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(report[location], getattr(model, f"{location}_").reshape(2, -1), atol=1e-6)
    main(["states", str(tmp_path / "m.npz")])
    assert capsys.readouterr().out.count(f": {location} ") == 2


def test_tag_decodes_by_viterbi_on_request(tmp_path, text_file, capsys):
    from cvbayes import HMM
    from cvbayes.data import read_text

    model = tmp_path / "m.npz"
    main(["fit", str(text_file), "--states", "3", "--iterations", "5", "-o", str(model), "--quiet"])
    capsys.readouterr()
    main(["tag", str(model), str(text_file), "--decode", "viterbi"])
    tags = [int(token.rpartition("/")[2]) for token in capsys.readouterr().out.split()]
    fitted = HMM.load(model)
    _, path = fitted.decode(read_text(text_file, vocabulary=fitted.vocabulary_), algorithm="viterbi")
    assert tags == path.tolist()


# -- PCFG and PCFG-LA -------------------------------------------------------------------------------------

def test_pcfg_fit_parse_and_grammar(tmp_path, capsys):
    from cvbayes import PCFG
    from cvbayes.data.trees import format_tree
    from cvbayes.trees import parse_grammar

    sentences = tmp_path / "s.txt"
    sentences.write_text("the dog barks\na cat sleeps\n\nthe cat barks\n")
    model = tmp_path / "pcfg.npz"
    main(["pcfg", "fit", str(sentences), "--nonterminals", "3", "--algorithm", "vb", "--iterations", "4",
          "-o", str(model), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["sentences"] == 3 and report["rules"] == PCFG.load(model).counts_.shape[0]
    main(["pcfg", "parse", str(model), str(sentences), "-o", str(tmp_path / "trees.txt")])
    lines = (tmp_path / "trees.txt").read_text().split("\n")
    fitted = PCFG.load(model)
    reference = fitted.parse([["the", "dog", "barks"], ["a", "cat", "sleeps"], ["the", "cat", "barks"]])
    assert lines[:4] == [format_tree(reference[0]), format_tree(reference[1]), "", format_tree(reference[2])]
    capsys.readouterr()
    main(["pcfg", "grammar", str(model), "--min-prob", "0"])
    text = capsys.readouterr().out
    grammar = parse_grammar(text)                                  # the grammar format, probabilities first
    assert len(grammar.rules) == fitted.counts_.shape[0]
    np.testing.assert_allclose(sorted(rule.weight for rule in grammar.rules), sorted(fitted.rule_probs_), rtol=1e-5)


def test_pcfg_parse_marks_a_sentence_without_a_tree(tmp_path, capsys):
    grammar = tmp_path / "g.txt"
    grammar.write_text('S -> NP V\nNP -> "the" N\nN -> "dog"\nN -> "cat"\nV -> "barks"\n')
    sentences = tmp_path / "s.txt"
    sentences.write_text("the dog barks\nthe cat barks\n")
    model = tmp_path / "m.npz"
    main(["pcfg", "fit", str(sentences), "--grammar", str(grammar), "--iterations", "2", "-o", str(model), "--quiet"])
    new = tmp_path / "new.txt"
    new.write_text("the cat barks\nbarks the dog\n")
    main(["pcfg", "parse", str(model), str(new)])
    assert capsys.readouterr().out.splitlines() == ["(S (NP the (N cat)) (V barks))", "(())"]


def test_pcfg_la_fit_parse_and_grammar(tmp_path, capsys):
    from cvbayes import PCFGLA

    treebank = tmp_path / "tb.mrg"
    treebank.write_text("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))\n"
                        "(S (NP (DT the) (NN cat)) (VP (VBZ barks) (ADVP (RB loudly))))\n")
    model = tmp_path / "la.npz"
    main(["pcfg-la", "fit", str(treebank), "--subtypes", "2", "--iterations", "3", "--min-count", "1",
          "-o", str(model), "--quiet"])
    sentences = tmp_path / "s.txt"
    sentences.write_text("a dog sleeps\n")
    main(["pcfg-la", "parse", str(model), str(sentences)])
    assert capsys.readouterr().out == "(S (NP (DT a) (NN dog)) (VP (VBZ sleeps)))\n"
    main(["pcfg-la", "grammar", str(model), "--min-prob", "0", "--json"])
    report = json.loads(capsys.readouterr().out)
    fitted = PCFGLA.load(model)
    tables = fitted.tables_
    assert len(report["rules"]) == tables.binary.size + tables.unary.size + tables.lexical.size
    assert {"probability": pytest.approx(float(tables.lexical[0, 1])),
            "rule": f'{fitted.grammar_.symbols[fitted.grammar_.lexical_rules[0, 0]]}[1] -> '
                    f'"{fitted.grammar_.words[fitted.grammar_.lexical_rules[0, 1]]}"'} in report["rules"]


# -- alignment: fast_align's -q, -N and -f --------------------------------------------------------------

PAIRS = [("das haus ist klein", "the house is small"), ("das buch ist gross", "the book is big"),
         ("ein haus", "a house"), ("das ist ein buch", "that is a book")] * 3


@pytest.fixture
def parallel(tmp_path):
    path = tmp_path / "train.de-en"
    path.write_text("".join(f"{s} ||| {t}\n" for s, t in PAIRS))
    return path


def test_align_takes_fast_aligns_q_and_n(parallel, tmp_path, capsys):
    main(["align", "-i", str(parallel), "-r", "-q", "0.3", "--json", "--quiet"])
    captured = capsys.readouterr()
    assert json.loads(captured.err)["null_prob"] == 0.3
    main(["align", "-i", str(parallel), "-r", "-N", "--quiet"])
    links = [line.split() for line in capsys.readouterr().out.splitlines()]
    # without NULL every target word (here the source side of the reversed direction) is linked
    assert [len({link.split("-")[0] for link in line}) for line in links] == [len(s.split()) for s, _ in PAIRS]
    with pytest.raises(SystemExit, match="IBM Model 1 here always has its NULL word"):
        main(["align", "-i", str(parallel), "-N", "--model", "ibm1"])


def test_align_force_aligns_with_a_table_as_fast_align_f(parallel, tmp_path, capsys):
    from cvbayes.models.alignment.corpus import read_fast_align
    from cvbayes.models.alignment.force import FLOOR, force_align, read_translation_table

    table = tmp_path / "table"
    table.write_text("das\tthe\t-0.1\nhaus\thouse\t-0.2\nklein\tsmall\t-0.3\nist\tis\t-0.05\n<eps>\tthe\t-3\n"
                     "ist\tthe\t-1\nother\tword\t-0.5\n")
    new = tmp_path / "new.de-en"
    new.write_text("das haus ist klein ||| the house is small\nhaus ||| the house\n ||| \n")
    main(["align", "-i", str(new), "-f", str(table), "--symmetrization", "forward", "-s"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ||| ")[0] for line in lines] == ["0-0 1-1 2-2 3-3", "0-1", ""]
    # the scores by hand: sum over target words of log((sum_i t(e_j | f_i) + t(e_j | NULL)) / (I + 1))
    t = {("das", "the"): np.exp(-0.1), ("haus", "house"): np.exp(-0.2), ("klein", "small"): np.exp(-0.3),
         ("ist", "is"): np.exp(-0.05), (None, "the"): np.exp(-3), ("ist", "the"): np.exp(-1)}
    for line, (source, target) in zip(lines, [("das haus ist klein", "the house is small"), ("haus", "the house")]):
        expected = sum(np.log(sum(t.get((f, e), FLOOR) for f in source.split() + [None]) / (len(source.split()) + 1))
                       for e in target.split())
        assert float(line.split(" ||| ")[1]) == pytest.approx(expected, rel=1e-5)
    assert lines[2] == " ||| nan"
    links, scores = force_align(read_fast_align(new), read_translation_table(table), null=False)
    assert links[1] == {(0, 0), (0, 1)}                 # without NULL, "the" goes to the one source word
    bad = tmp_path / "bad"
    bad.write_text("das the -0.1\n")
    with pytest.raises(SystemExit, match=r"bad, line 1: expected 'source<TAB>target<TAB>log t"):
        main(["align", "-i", str(new), "-f", str(bad), "--symmetrization", "forward"])


def test_align_reads_back_the_tables_it_wrote(parallel, tmp_path, capsys):
    table = tmp_path / "tab"
    main(["align", "-i", str(parallel), "-p", str(table), "--quiet", "--output", str(tmp_path / "trained.pharaoh")])
    assert table.exists() and (tmp_path / "tab.reverse").exists()
    main(["align", "-i", str(parallel), "-f", str(table), "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.err)
    assert report["force_align"] and report["directions"]["reverse"]["table"] == f"{table}.reverse"
    forced = [set(line.split()) for line in captured.out.splitlines()]
    assert forced[0] >= {"0-0", "1-1"}                  # das-the, haus-house


def test_fit_says_how_large_the_checkpoint_was(tmp_path, text_file, capsys):
    checkpoint = tmp_path / "run.ckpt"
    main(["fit", str(text_file), "--states", "2", "--iterations", "2", "-o", str(tmp_path / "m.npz"),
          "--checkpoint", str(checkpoint), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["checkpoint_bytes"] > 0 and not checkpoint.exists()
    main(["fit", str(text_file), "--states", "2", "--iterations", "2", "-o", str(tmp_path / "m.npz"),
          "--checkpoint", str(checkpoint), "--quiet"])
    assert f"checkpoint {checkpoint} (" in capsys.readouterr().out

"""What a new user hits first (issue 14): the plain-text fit, format guessing, and the command line's
common options, checks and refusals."""
import json

import numpy as np
import pytest

from cvbayes import HMM
from cvbayes.cli import main
from cvbayes.models.hdp_hmm import ALGORITHMS as HDP_ALGORITHMS
from cvbayes.models.hmm import ALGORITHMS

TEXT = "the cat sat on the mat\nthe dog ran\na cat ran on a mat\nthe dog sat\n"


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "my.txt"
    path.write_text(TEXT)
    return path


@pytest.mark.parametrize("model, algorithm", [("hmm", a) for a in ALGORITHMS]
                         + [("hdp-hmm", a) for a in HDP_ALGORITHMS])
def test_fit_plain_text_works_for_every_model_and_algorithm(tmp_path, text_file, capsys, model, algorithm):
    output = tmp_path / "m.npz"
    main(["fit", str(text_file), "--format", "text", "--states", "3", "-o", str(output), "--iterations", "2",
          "--model", model, "--algorithm", algorithm, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["tokens"] == 18 and report["algorithm"] == algorithm
    assert "accuracy" not in report and "many_to_one" not in report     # nothing to score against
    assert HMM.load(output).n_states == 3


def test_format_is_guessed_from_the_content(tmp_path, text_file):
    from cvbayes.tagging import guess_format

    tagged = tmp_path / "tagged.txt"
    tagged.write_text("the/DT cat/NN\n1/2/CD sat/VB\n")
    conllu = tmp_path / "tree.txt"
    conllu.write_text("# sent_id = 1\n1\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    slashed_text = tmp_path / "slashed.txt"
    slashed_text.write_text("cats and/or dogs\n")
    assert [guess_format(p) for p in (text_file, tagged, conllu, slashed_text)] == ["text", "tagged", "conllu", "text"]


def test_tag_reads_plain_text_without_format(tmp_path, text_file, capsys):
    model = tmp_path / "m.npz"
    main(["fit", str(text_file), "--format", "text", "--states", "2", "-o", str(model), "--iterations", "2",
          "--quiet"])
    capsys.readouterr()
    main(["tag", str(model), str(text_file)])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[1].split()[0].startswith("the/")


def test_wrong_format_names_the_format_to_use(tmp_path, text_file):
    with pytest.raises(SystemExit, match=r"line 1: token 'the' has no '/TAG' part .*use --format text"):
        main(["fit", str(text_file), "--format", "tagged", "--states", "2", "-o", str(tmp_path / "m.npz")])
    with pytest.raises(SystemExit, match=r"line 1: .*tab-separated .*--format tagged .* or --format text"):
        main(["fit", str(text_file), "--format", "conllu", "--states", "2", "-o", str(tmp_path / "m.npz")])


def test_version(capsys):
    import cvbayes

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"cvbayes {cvbayes.__version__}"


def test_states_below_one_is_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fit", str(tmp_path / "absent.txt"), "--states", "0", "-o", str(tmp_path / "m.npz")])
    assert exit_.value.code == 2 and "--states: must be at least 1, got 0" in capsys.readouterr().err


def test_unwritable_output_is_refused_before_training(tmp_path, text_file, monkeypatch):
    import cvbayes.commands.fit

    monkeypatch.setattr(cvbayes.commands.fit, "fit_tagger", lambda *a, **k: pytest.fail("trained before checking -o"))
    with pytest.raises(SystemExit, match=r"cannot write there, the folder .*missing does not exist"):
        main(["fit", str(text_file), "--states", "2", "-o", str(tmp_path / "missing" / "m.npz")])
    with pytest.raises(SystemExit, match="is a folder"):
        main(["fit", str(text_file), "--states", "2", "-o", str(tmp_path)])


COMMANDS = [["compare"], ["data", "fetch"], ["fit"], ["tag"], ["evaluate"], ["experiment", "fig3.10"], ["demo"], ["align"],
            ["evaluate-alignment"], ["lda", "fit"], ["lda", "topics"], ["lda", "evaluate"], ["induce"], ["parse"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_takes_json_seed_and_quiet(command, capsys):
    with pytest.raises(SystemExit):
        main(command + ["--help"])
    text = capsys.readouterr().out
    for option in ("--json", "--seed SEED", "--quiet"):
        assert option in text
    assert "--json FILE" not in text                    # a flag everywhere, never a file


def test_tag_takes_quiet_seed_and_json(tmp_path, text_file, capsys):
    model = tmp_path / "m.npz"
    main(["fit", str(text_file), "--states", "2", "-o", str(model), "--iterations", "2", "--quiet"])
    capsys.readouterr()
    main(["tag", str(model), str(text_file), "--quiet", "--seed", "3", "--json", "-o", str(tmp_path / "out.txt")])
    assert json.loads(capsys.readouterr().out)["tokens"] == 18
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 4


def test_closed_pipe_ends_quietly(tmp_path):
    import subprocess
    import sys

    predicted = tmp_path / "p.align"
    predicted.write_text("0-0 1-1\n")
    command = [sys.executable, "-m", "cvbayes", "evaluate-alignment", str(predicted), "--gold", str(predicted),
               "--json"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        process.stdout.close()                          # as 'head' does once it has its lines
        error = process.stderr.read().decode()
    assert process.returncode == 1 and error == ""


def test_files_that_are_not_models_are_refused_plainly(tmp_path, text_file):
    import pickle

    pickled = tmp_path / "p.npz"
    pickled.write_bytes(pickle.dumps({"a": 1}))
    no_meta = tmp_path / "x.npz"
    np.savez(no_meta, x=np.arange(3))
    for path, reason in ((text_file, "not an .npz archive"), (pickled, "not an .npz archive"),
                         (no_meta, "an .npz archive without the 'meta' entry")):
        with pytest.raises(SystemExit) as exit_:
            main(["tag", str(path), str(text_file)])
        message = str(exit_.value.code)
        assert f"{path}: not a cvbayes model file ({reason}" in message and "pickle" not in message


def test_leave_one_sequence_out_on_one_sequence_warns():
    tokens = [np.array([0, 1, 2, 0, 1, 2, 0, 1])]
    with pytest.warns(UserWarning, match="single sequence; use 'cvi3' \\(or 'scvi'\\)"):
        HMM(2, algorithm="cvi2", n_iter=1).fit(tokens)
    HMM(2, algorithm="cvi3", n_iter=1, subchain_length=4).fit(tokens)      # no warning (warnings are errors)


def test_a_fitted_model_reads_a_corpus_through_its_own_vocabulary(tmp_path, text_file):
    from cvbayes.data import read_text

    train = read_text(text_file)
    model = HMM(3, algorithm="cvi2", n_iter=5, random_state=1).fit(train)
    held_out = tmp_path / "test.txt"
    held_out.write_text("a zebra ran on the mat\nthe mat sat\n")        # 'zebra' is unseen
    own = read_text(held_out)                                         # its own vocabulary, other ids
    shared = read_text(held_out, vocabulary=model.vocabulary_)        # the model's ids, zebra -> <unk>
    assert shared.observations[1] == model.vocabulary_.unknown_id
    assert not np.array_equal(own.observations, shared.observations)
    np.testing.assert_array_equal(model.decode(own), model.decode(shared))
    np.testing.assert_allclose(model.predict_proba(own), model.predict_proba(shared))
    assert model.score(own) == pytest.approx(model.score(shared), rel=1e-12)


CONLLU = ("# newdoc id = weird-doc\n# sent_id = s-17\n# text = Cats don't sit.\n"
          "1\tCats\tcat\tNOUN\tNNS\tNumber=Plur\t3\tnsubj\t3:nsubj\t_\n"
          "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
          "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_\n"
          "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_\n"
          "3.1\tsit\t_\t_\t_\t_\t_\t_\t0:root\t_\n"
          "4\tsit\tsit\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No\n"
          "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_\n\n"
          "# sent_id = s-18\n1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tsit\tsit\tVERB\tVBP\t_\t0\troot\t_\t_\n\n")


@pytest.fixture
def conllu_model(tmp_path):
    treebank = tmp_path / "tb.conllu"
    treebank.write_text(CONLLU)
    model = tmp_path / "m.npz"
    main(["fit", str(treebank), "--states", "3", "-o", str(model), "--iterations", "2", "--quiet"])
    return treebank, model


def test_tag_writes_the_inputs_own_words(tmp_path, text_file, capsys):
    model = tmp_path / "m.npz"
    main(["fit", str(text_file), "--states", "2", "-o", str(model), "--iterations", "2", "--quiet"])
    new = tmp_path / "new.txt"
    new.write_text("the zebra sat\n")
    capsys.readouterr()
    main(["tag", str(model), str(new)])
    assert [token.rpartition("/")[0] for token in capsys.readouterr().out.split()] == ["the", "zebra", "sat"]


@pytest.mark.parametrize("column", ["upos", "xpos", "misc"])
def test_tag_conllu_changes_only_its_column(conllu_model, tmp_path, column):
    treebank, model = conllu_model
    out = tmp_path / "out.conllu"
    main(["tag", str(model), str(treebank), "--output-format", "conllu", "--column", column, "-o", str(out)])
    index = {"upos": 3, "xpos": 4, "misc": 9}[column]
    written = out.read_text().split("\n")
    original = CONLLU.split("\n")
    assert len(written) == len(original)
    for before, after in zip(original, written):
        fields_before, fields_after = before.split("\t"), after.split("\t")
        if len(fields_before) == 10 and fields_before[0].isdigit():
            assert fields_after[:index] + fields_after[index + 1:] == fields_before[:index] + fields_before[index + 1:]
            assert fields_after[index] != fields_before[index]
            if column == "misc":
                assert "PredTag=" in fields_after[9]
        else:
            assert after == before                  # comments, the range 2-3, the empty node 3.1, blank lines


def test_tag_maps_states_to_gold_tags(conllu_model, tmp_path):
    treebank, model = conllu_model
    out = tmp_path / "out.txt"
    main(["tag", str(model), str(treebank), "--map-to-gold", str(treebank), "-o", str(out)])
    tags = {token.rpartition("/")[2] for token in out.read_text().split()}
    assert tags and tags <= {"NOUN", "AUX", "PART", "VERB", "PUNCT"}


@pytest.fixture(scope="module")
def small_fitted():
    X = [np.array([0, 1, 2, 0, 1, 2, 1]), np.array([2, 1, 0, 0]), np.array([1])]
    return HMM(2, alpha=0.5, beta=0.5, algorithm="em", n_iter=5, random_state=3).fit(X), X


def test_hmm_follows_sklearn_estimator_conventions():
    from sklearn.base import clone

    from cvbayes import HDPHMM

    model = HMM(4, alpha=0.2, tag_dictionary=np.ones((3, 4)))
    copy = clone(model)
    assert copy is not model and copy.get_params()["alpha"] == 0.2 and copy.get_params()["n_states"] == 4
    assert model.set_params(n_states=3, tag_dictionary=None).n_states == 3
    with pytest.raises(ValueError, match="unknown parameters gama"):
        model.set_params(gama=1.0)
    assert clone(HDPHMM(5, gamma=2.0)).get_params()["gamma"] == 2.0


def test_decode_with_algorithm_returns_log_prob_and_states(small_fitted):
    import itertools

    model, X = small_fitted
    log_start, log_trans, log_emit = (np.log(model.startprob_), np.log(model.transmat_),
                                      np.log(model.emissionprob_))
    best_total, best_paths = 0.0, []
    for x in X:                                         # brute force: every path of every sequence
        scores = {path: log_start[path[0]] + sum(log_trans[a, b] for a, b in zip(path, path[1:]))
                  + sum(log_emit[k, w] for k, w in zip(path, x))
                  for path in itertools.product(range(2), repeat=len(x))}
        path = max(scores, key=scores.get)
        best_total += scores[path]
        best_paths.append(list(path))
    log_prob, states = model.decode(X, algorithm="viterbi")
    assert log_prob == pytest.approx(best_total, rel=1e-10)
    assert [s.tolist() for s in states] == best_paths
    log_prob, states = model.decode(X, algorithm="map")
    posteriors = np.concatenate(model.predict_proba(X))
    assert log_prob == pytest.approx(np.log(posteriors.max(axis=1)).sum(), rel=1e-12)
    assert [s.tolist() for s in states] == [s.tolist() for s in model.decode(X)]     # today's call unchanged
    assert [s.tolist() for s in model.predict(X)] == [s.tolist() for s in model.decode(X)]
    total, marginals = model.score_samples(X)
    assert total == model.score(X) and np.allclose(np.concatenate(marginals), posteriors)


def test_sample_draws_from_the_fitted_estimates(small_fitted):
    model, _ = small_fitted
    tokens, states = model.sample(40000, random_state=5)
    assert tokens.shape == states.shape == (40000,)
    for k in range(2):                                  # emission frequencies per state (TV distance)
        frequencies = np.bincount(tokens[states == k], minlength=3) / np.sum(states == k)
        assert 0.5 * np.abs(frequencies - model.emissionprob_[k]).sum() < 0.02
    np.testing.assert_array_equal(model.sample(50, random_state=1)[0], model.sample(50, random_state=1)[0])


def test_package_is_typed():
    from importlib import resources

    assert resources.files("cvbayes").joinpath("py.typed").is_file()
    assert HMM.decode.__annotations__ and HMM.fit.__annotations__["return"] == "Self"   # BayesModel.fit

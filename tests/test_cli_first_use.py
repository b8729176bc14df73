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
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("the/DT cat/NN\nthe dog\n")
    assert [guess_format(p) for p in (text_file, tagged, conllu, mixed)] == ["text", "tagged", "conllu", "text"]


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

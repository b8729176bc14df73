"""``cvbayes align`` and ``cvbayes evaluate-alignment``."""
import json

import pytest

from cvbayes.models.alignment import read_pharaoh, write_pharaoh
from cvbayes.models.alignment.synthetic import sample_parallel_corpus
from cvbayes.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A planted corpus as parallel files, fast_align input and gold links."""
    folder = tmp_path_factory.mktemp("align")
    corpus, gold = sample_parallel_corpus(150, seed=2)
    source = [" ".join(corpus.source_vocabulary.decode(s)) for s in corpus.source]
    target = [" ".join(corpus.target_vocabulary.decode(t)) for t in corpus.target]
    (folder / "c.src").write_text("\n".join(source) + "\n")
    (folder / "c.tgt").write_text("\n".join(target) + "\n")
    (folder / "c.txt").write_text("".join(f"{s} ||| {t}\n" for s, t in zip(source, target)))
    write_pharaoh(gold, folder / "gold.align")
    return folder, gold


def test_align_writes_pharaoh_and_statistics(files, capsys):
    folder, gold = files
    main(["align", "-s", str(folder / "c.src"), "-t", str(folder / "c.tgt"), "--algorithm", "cvi2",
          "--iterations", "2,3", "--json", str(folder / "stats.json")])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(gold)
    (folder / "pred.align").write_text("\n".join(lines) + "\n")
    assert len(read_pharaoh(folder / "pred.align")) == len(gold)
    stats = json.loads((folder / "stats.json").read_text())
    assert stats["algorithm"] == "cvi2" and stats["symmetrization"] == "grow-diag-final-and"
    assert stats["pairs"] == len(gold) and stats["tokens_per_second"] > 0
    assert set(stats["directions"]) == {"forward", "reverse"}
    history = stats["directions"]["forward"]["history"]
    assert [(h["stage"], h["iteration"]) for h in history] == [("ibm1", 0), ("ibm1", 1), ("hmm", 0), ("hmm", 1),
                                                               ("hmm", 2)]
    # and the score of what was written
    main(["evaluate-alignment", str(folder / "pred.align"), "--gold", str(folder / "gold.align"), "--json"])
    scores = json.loads(capsys.readouterr().out)
    assert scores["aer"] < 0.2 and scores["n_sure"] == sum(len(g) for g in gold)


def test_align_with_scvi_minibatches(files, capsys, tmp_path):
    folder, gold = files
    main(["align", "-i", str(folder / "c.txt"), "--algorithm", "scvi", "--iterations", "4", "--batch-size", "30",
          "--kappa", "0.6", "--tau0", "2", "--quiet", "-o", str(tmp_path / "scvi.align"), "--json",
          str(tmp_path / "s.json")])
    stats = json.loads((tmp_path / "s.json").read_text())
    assert (stats["algorithm"], stats["batch_size"], stats["kappa"], stats["tau0"]) == ("scvi", 30, 0.6, 2.0)
    assert len(stats["directions"]["forward"]["history"]) == 8
    main(["evaluate-alignment", str(tmp_path / "scvi.align"), "--gold", str(folder / "gold.align"), "--json"])
    assert json.loads(capsys.readouterr().out)["aer"] < 0.2


def test_align_fast_align_input_one_direction(files, capsys, tmp_path):
    folder, gold = files
    out = tmp_path / "fwd.align"
    main(["align", "-i", str(folder / "c.txt"), "--model", "ibm1", "--algorithm", "em", "--iterations", "4",
          "--symmetrization", "forward", "-o", str(out), "--json", str(tmp_path / "s.json")])
    links = read_pharaoh(out)
    assert len(links) == len(gold)
    # the forward direction links each target word at most once
    assert all(len({j for _, j in pair}) == len(pair) for pair in links)
    assert set(json.loads((tmp_path / "s.json").read_text())["directions"]) == {"forward"}
    main(["align", "-i", str(folder / "c.txt"), "--model", "ibm1", "--algorithm", "em", "--iterations", "4", "-r"])
    reverse = read_pharaoh_text(capsys.readouterr().out, tmp_path)
    assert all(len({i for i, _ in pair}) == len(pair) for pair in reverse)


def read_pharaoh_text(text, tmp_path):
    path = tmp_path / "out.align"
    path.write_text(text)
    return read_pharaoh(path)


def test_evaluate_alignment_reads_possible_links(tmp_path, capsys):
    (tmp_path / "pred.align").write_text("0-0 1-1 2-2\n0-1\n")
    (tmp_path / "gold.align").write_text("0-0 1-2 1?1\n\n")
    (tmp_path / "extra.align").write_text("\n0-1\n")
    main(["evaluate-alignment", str(tmp_path / "pred.align"), "--gold", str(tmp_path / "gold.align"),
          "--possible", str(tmp_path / "extra.align")])
    out = capsys.readouterr().out
    # |A| = 4, |S| = 2, |A ∩ S| = 1, |A ∩ P| = 3
    assert "precision 0.7500" in out and "recall    0.5000" in out and "AER       0.3333" in out


def test_cli_errors_name_the_problem(files, tmp_path):
    folder, _ = files
    short = tmp_path / "short.tgt"
    short.write_text("t1 t2\n")
    with pytest.raises(SystemExit, match=f"{short}, line 2"):
        main(["align", "-s", str(folder / "c.src"), "-t", str(short)])
    with pytest.raises(SystemExit, match="not both"):
        main(["align", "-i", str(folder / "c.txt"), "-s", str(folder / "c.src")])
    with pytest.raises(SystemExit, match="give -s SRC and -t TGT"):
        main(["align", "-s", str(folder / "c.src")])
    with pytest.raises(SystemExit, match="--iterations"):
        main(["align", "-i", str(folder / "c.txt"), "--iterations", "3,x"])
    (tmp_path / "one.align").write_text("0-0\n")
    with pytest.raises(SystemExit, match="1 lines"):
        main(["evaluate-alignment", str(tmp_path / "one.align"), "--gold", str(folder / "gold.align")])


def test_help_explains_options(capsys):
    with pytest.raises(SystemExit):
        main(["align", "--help"])
    out = capsys.readouterr().out
    assert "--symmetrization" in out and "--null-prob" in out and "Pharaoh" in out

"""``cvbayes align`` and ``cvbayes evaluate-alignment``."""
import json

import numpy as np
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
    main(["align", "--source", str(folder / "c.src"), "--target", str(folder / "c.tgt"), "--algorithm", "cvi2",
          "--iterations", "2,3", "--json"])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    (folder / "stats.json").write_text(captured.err.splitlines()[-1])   # the summary takes standard error
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
          "--kappa", "0.6", "--tau0", "2", "--quiet", "--output", str(tmp_path / "scvi.align"), "--json"])
    stats = json.loads(capsys.readouterr().out)
    assert (stats["algorithm"], stats["batch_size"], stats["kappa"], stats["tau0"]) == ("scvi", 30, 0.6, 2.0)
    assert len(stats["directions"]["forward"]["history"]) == 8
    main(["evaluate-alignment", str(tmp_path / "scvi.align"), "--gold", str(folder / "gold.align"), "--json"])
    assert json.loads(capsys.readouterr().out)["aer"] < 0.2


def test_align_fast_align_input_one_direction(files, capsys, tmp_path):
    folder, gold = files
    out = tmp_path / "fwd.align"
    main(["align", "-i", str(folder / "c.txt"), "--model", "ibm1", "--algorithm", "em", "--iterations", "4",
          "--symmetrization", "forward", "--output", str(out), "--json"])
    links = read_pharaoh(out)
    assert len(links) == len(gold)
    # the forward direction links each target word at most once
    assert all(len({j for _, j in pair}) == len(pair) for pair in links)
    assert set(json.loads(capsys.readouterr().out)["directions"]) == {"forward"}
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
        main(["align", "--source", str(folder / "c.src"), "--target", str(short)])
    with pytest.raises(SystemExit, match="not both"):
        main(["align", "-i", str(folder / "c.txt"), "--source", str(folder / "c.src")])
    with pytest.raises(SystemExit, match="give --source SRC and --target TGT"):
        main(["align", "--source", str(folder / "c.src")])
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


def test_align_takes_fast_align_options(files, capsys):
    folder, gold = files
    main(["align", "-i", str(folder / "c.txt"), "-d", "-o", "-v", "-I", "2", "-a", "0.01", "-T", "4", "--json"])
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == len(gold)
    assert "-o and -T (fast_align's diagonal tension) have no analogue here" in captured.err
    stats = json.loads(captured.err.splitlines()[-1])
    assert (stats["model"], stats["algorithm"], stats["prior"], stats["n_iter"]) == ("hmm", "cvi1", 0.01, 2)
    with pytest.raises(SystemExit, match="-v asks for a Dirichlet prior"):
        main(["align", "-i", str(folder / "c.txt"), "-v", "--algorithm", "em"])


def test_align_p_writes_fast_align_parameters_and_s_scores_each_pair(files, capsys, tmp_path):
    folder, gold = files
    args = ["align", "-i", str(folder / "c.txt"), "-I", "2", "--quiet"]
    main(args + ["-r"])
    plain = capsys.readouterr().out.splitlines()
    params = tmp_path / "reverse.params"
    main(args + ["-r", "-p", str(params), "-s"])
    scored = capsys.readouterr().out.splitlines()
    # -s: fast_align's 'links ||| score', the links unchanged, the score a log-probability
    assert [line.split(" ||| ")[0] for line in scored] == plain and all(" ||| " in line for line in scored)
    scores = np.array([float(line.split(" ||| ")[1]) for line in scored])
    assert scores.shape == (len(gold),) and np.all(scores < 0)
    # -p: 'source<TAB>target<TAB>log t(target | source)'; with -r, fast_align's source is the corpus's target
    rows = [line.split("\t") for line in params.read_text().splitlines()]
    lines = (folder / "c.txt").read_text().splitlines()
    english = {w for line in lines for w in line.split(" ||| ")[1].split()}
    foreign = {w for line in lines for w in line.split(" ||| ")[0].split()}
    cooccur = {(e, f) for line in lines for e in line.split(" ||| ")[1].split() + ["<eps>"]
               for f in line.split(" ||| ")[0].split()}
    assert all(len(row) == 3 for row in rows) and {(e, f) for e, f, _ in rows} == cooccur
    assert len(rows) == len(cooccur) and {e for e, _, _ in rows} == english | {"<eps>"} and foreign
    mass = {}
    for e, _, value in rows:
        mass[e] = mass.get(e, 0.0) + np.exp(float(value))
    # posterior-mean rows: the stored entries hold all but the prior's share of unseen words
    assert all(0.9 < total <= 1.0 + 1e-6 for total in mass.values())
    # both directions: FILE holds the forward table, FILE.reverse the reverse one, two scores a line
    both = tmp_path / "both.params"
    main(args + ["-p", str(both), "-s"])
    lines_both = capsys.readouterr().out.splitlines()
    assert all(len(line.split(" ||| ")[1].split()) == 2 for line in lines_both)
    assert (tmp_path / "both.params.reverse").read_text() == params.read_text()
    assert {row.split("\t")[0] for row in both.read_text().splitlines()} == foreign | {"<eps>"}
    # an unwritable -p path is refused before any training
    with pytest.raises(SystemExit, match="does not exist"):
        main(args + ["-p", str(tmp_path / "no" / "such.params")])


@pytest.mark.parametrize("algorithm, prior", [("cvi1", 1e-3), ("cvi2", 1e-3), ("cgs", 1e-3), ("em", 0.1)])
def test_align_default_prior_is_the_best_measured(files, capsys, algorithm, prior):
    folder, _ = files
    main(["align", "-i", str(folder / "c.txt"), "-I", "1", "--algorithm", algorithm, "--quiet", "--json"])
    assert json.loads(capsys.readouterr().err)["prior"] == prior
    with pytest.raises(SystemExit):
        main(["align", "--help"])
    assert "5-6 AER points" in capsys.readouterr().out


def test_align_skips_long_pairs_with_a_warning_and_an_empty_line(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b ||| x y\na b c d e ||| x y\nb a ||| y x\n")
    main(["align", "-i", str(corpus), "--max-length", "4", "-I", "2"])
    captured = capsys.readouterr()
    lines = captured.out.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[0] and lines[2]
    assert "skipped 1 sentence pairs with more than 4 tokens on a side (lines 2)" in captured.err


def test_align_refuses_empty_input(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(SystemExit, match="no sentence pairs to align"):
        main(["align", "-i", str(empty)])


def test_align_writes_priors_and_reads_them_back(files, capsys, tmp_path):
    """--write-priors writes eflomal-makepriors' lines from this run's links; --priors reads them (every
    lexical entry is used, the fertility lines are ignored with a note) and aligns at least as well."""
    folder, _ = files
    common = ["align", "-i", str(folder / "c.txt"), "--algorithm", "cvi2", "--iterations", "2"]
    main(common + ["--write-priors", str(tmp_path / "run.priors"), "--output", str(tmp_path / "first.align")])
    capsys.readouterr()
    kinds = {line.split("\t")[0] for line in (tmp_path / "run.priors").read_text().splitlines()}
    assert kinds == {"LEX", "HMMF", "HMMR", "FERF", "FERR"}
    n_lexical = sum(line.startswith("LEX\t") for line in (tmp_path / "run.priors").read_text().splitlines())
    main(common + ["--priors", str(tmp_path / "run.priors"), "--output", str(tmp_path / "second.align")])
    err = capsys.readouterr().err
    assert f"{n_lexical} of {n_lexical} lexical priors used" in err
    assert err.count("fertility priors (FERF/FERR) ignored") == 1
    scores = []
    for name in ("first", "second"):
        main(["evaluate-alignment", str(tmp_path / f"{name}.align"), "--gold", str(folder / "gold.align"), "--json"])
        scores.append(json.loads(capsys.readouterr().out)["aer"])
    assert scores[1] <= scores[0] + 0.01


def test_align_with_an_empty_priors_file_equals_no_priors(files, capsys, tmp_path):
    folder, _ = files
    (tmp_path / "empty.priors").write_text("")
    outputs = []
    for extra in ([], ["--priors", str(tmp_path / "empty.priors")]):
        main(["align", "-i", str(folder / "c.txt"), "--algorithm", "cvi1", "--iterations", "2", "--quiet"] + extra)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_align_priors_errors_name_the_file_and_line(files, tmp_path):
    folder, _ = files
    bad = tmp_path / "bad.priors"
    bad.write_text("LEX\ta\tb\t1\nHMMF\tfar\t2\n")
    with pytest.raises(SystemExit, match=f"{bad}, line 2"):
        main(["align", "-i", str(folder / "c.txt"), "--priors", str(bad)])
    (tmp_path / "t.table").write_text("a\tb\t-1\n")
    with pytest.raises(SystemExit, match="learns nothing"):
        main(["align", "-i", str(folder / "c.txt"), "-f", str(tmp_path / "t.table"), "--priors", str(bad)])

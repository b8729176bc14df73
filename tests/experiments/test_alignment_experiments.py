"""The word-alignment experiment drivers end to end, on small made-up caches (no network, no real data)."""
import json

import numpy as np
import pytest

from cvbayes.cli import main
from cvbayes.data import load_bible, load_nt_alignments
from cvbayes.experiments import alignment

WORDS = ["logos", "theos", "kosmos", "agape", "zoe", "phos", "hodos", "aletheia"]
GLOSS = {"logos": "word", "theos": "god", "kosmos": "world", "agape": "love", "zoe": "life", "phos": "light",
         "hodos": "way", "aletheia": "truth"}
STRONG = {w: f"G{100 + k}" for k, w in enumerate(WORDS)}


def verses(n, seed=0):
    """n verse pairs: Greek words, English with 'the' before each gloss (the gold links word -> gloss)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        greek = list(rng.choice(WORDS, size=rng.integers(2, 5), replace=False))
        out.append(greek)
    return out


def make_nt(cache, n=60):
    """A bible-alignments-like cache: books 40 (first half) and 44 (second half), 'the' unaligned,
    a comma (excluded) after every verse."""
    folder = cache / "nt"
    folder.mkdir(parents=True)
    sblgnt = ["id\taltId\ttext\tstrongs\tgloss\tgloss2\tlemma\tpos\tmorph"]
    bsb = ["id\tsource_verse\ttext\tskip_space_after\texclude\tid_range_end\tsource_verse_range_end"]
    records = []
    for v, greek in enumerate(verses(n)):
        book, verse = (40, v + 1) if v < n // 2 else (44, v + 1 - n // 2)
        ref = f"{book:02d}001{verse:03d}"
        w = 0
        for i, word in enumerate(greek):
            sblgnt.append(f"n{ref}{i + 1:03d}\t{word}-1\t{word.capitalize() if i == 0 else word}\tG1\tx\tx\t{word}\tnoun\tN")
            bsb.append(f"{ref}{w + 1:03d}\t{ref}\tthe\t\t\t\t")
            bsb.append(f"{ref}{w + 2:03d}\t{ref}\t{GLOSS[word]}\t\t\t\t")
            records.append({"source": [f"n{ref}{i + 1:03d}"], "target": [f"{ref}{w + 2:03d}"],
                            "meta": {"id": f"{ref}.{i:03d}", "process": "manual", "status": "created"}})
            w += 2
        bsb.append(f"{ref}{w + 1:03d}\t{ref}\t,\t\ty\t\t")
    (folder / "SBLGNT.tsv").write_text("\n".join(sblgnt) + "\n", encoding="utf-8")
    (folder / "nt_BSB.tsv").write_text("\n".join(bsb) + "\n", encoding="utf-8")
    (folder / "SBLGNT-BSB-manual.json").write_text(json.dumps({"records": records}), encoding="utf-8")
    (folder / "LICENSE.md").write_text("CC BY 4.0\n")


SPANISH = {"word": "verbo", "god": "dios", "world": "mundo", "love": "amor", "life": "vida", "light": "luz",
           "way": "camino", "truth": "verdad"}


def make_bible(cache, n=80):
    folder = cache / "bible"
    folder.mkdir(parents=True)
    english = ["# cvbayes bible cache v1 module=engKJV2006eb: test"]
    spanish = ["# cvbayes bible cache v1 module=spaRV1909eb: test"]
    for v, greek in enumerate(verses(n, seed=1)):
        ref = f"01{1 + v // 40:03d}{1 + v % 40:03d}"
        en = ["and"] + [f"the {GLOSS[w]}|{STRONG[w]}" for w in greek] + ["."]
        es = ["y"] + [f"el|{STRONG[w]} {SPANISH[GLOSS[w]]}|{STRONG[w]}" for w in greek]
        english.append(f"{ref}\t{' '.join(en)}")
        spanish.append(f"{ref}\t{' '.join(es)}")
    (folder / "engKJV2006eb.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    (folder / "spaRV1909eb.txt").write_text("\n".join(spanish) + "\n", encoding="utf-8")


@pytest.fixture
def caches(tmp_path, monkeypatch):
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "cache"))
    make_nt(tmp_path / "cache")
    make_bible(tmp_path / "cache")
    monkeypatch.setattr(alignment, "ISOLATE", False)  # runs in this process: fast
    return tmp_path


def test_align_nt_end_to_end_without_eflomal(caches, monkeypatch, capsys):
    monkeypatch.setattr(alignment, "eflomal_missing", lambda: "eflomal is not installed (test)")
    out = caches / "results"
    main(["experiment", "align-nt", "--out", str(out), "--algorithms", "em,cvi2,cgs", "--models", "hmm,ibm1",
          "--align-iterations", "em=2,cvi2=2+1,cgs=4", "--prior", "0.05", "--seeds", "2", "--quiet"])
    folder = out / "align_nt"
    report = json.loads((folder / "results.json").read_text())
    labels = [(r["model"], r["algorithm"], r["seed"]) for r in report["runs"]]
    # deterministic algorithms once, CGS once per seed, per model; no eflomal
    assert labels == [("hmm", "em", 0), ("hmm", "cvi2", 0), ("hmm", "cgs", 0), ("hmm", "cgs", 1),
                      ("ibm1", "em", 0), ("ibm1", "cvi2", 0), ("ibm1", "cgs", 0), ("ibm1", "cgs", 1)]
    assert report["eflomal"].startswith("eflomal is not installed")
    assert report["settings"]["cvi2"] == {"n_iter": [2, 1], "prior": 0.05}
    assert report["settings_from"]["cvi2"] == "--align-iterations, --prior"
    data = load_nt_alignments()
    assert report["data"]["verses"] == len(data) == 60
    for run in report["runs"]:
        assert 0.0 <= run["aer"] <= 1.0 and 0.0 <= run["precision"] <= 1.0
        assert run["tokens"] == data.n_source_tokens + data.n_target_tokens
        assert run["seconds"] > 0 and run["tokens_per_second"] > 0
        assert set(run["subsets"]) == {"gospels (development)", "books 44-66 (held out)", "book 40", "book 44"}
    # the planted one-to-one glosses are easy: EM's HMM should find most of them
    em = next(r for r in report["runs"] if r["model"] == "hmm" and r["algorithm"] == "em")
    assert em["recall"] > 0.5
    table = (folder / "table.md").read_text()
    assert "| hmm cvi2 | 2 + 1 | 0.05 | 1 |" in table
    assert "| hmm cgs | 4 + 4 | 0.05 | 2 |" in table
    assert "| thesis, FBIS zh-en (Fig. 3.14) | 36.4 | 36.8 | 35.7 | — | 34.6 | 34.5 (IBM4) |" in table
    assert "— (not run)" in table and "eflomal: eflomal is not installed (test)" in table
    assert "| Matthew (40) | 30 |" in table and "| Acts (44) | 30 |" in table
    assert (folder / "align_nt.png").stat().st_size > 1000
    assert "results written under" in capsys.readouterr().out


def test_align_nt_develop_writes_the_choice_that_later_runs_use(caches, monkeypatch):
    monkeypatch.setattr(alignment, "eflomal_missing", lambda: "missing")
    monkeypatch.setattr(alignment, "DEV_ITERATIONS", {"em": (1, 2), "vb": (1,), "cvi1": (1,), "cvi2": (1,),
                                                      "cgs": (2,)})
    monkeypatch.setattr(alignment, "DEV_PRIORS", (0.1, 1.0))
    out = caches / "results"
    main(["experiment", "align-nt", "--develop", "--out", str(out), "--algorithms", "em,vb", "--quiet"])
    development = json.loads((out / "align_nt" / "development.json").read_text())
    # EM: one prior (MAP = MLE for priors <= 1); VB: both priors
    assert [(r["algorithm"], r["n_iter"][0], r["prior"]) for r in development["runs"]] == [
        ("em", 1, 0.1), ("em", 2, 0.1), ("vb", 1, 0.1), ("vb", 1, 1.0)]
    assert set(development["chosen"]) == {"em", "vb"}
    assert development["data"]["verses"] == 30  # the Gospels only
    assert "Chosen:" in (out / "align_nt" / "development.md").read_text()
    assert not (out / "align_nt" / "results.json").exists()
    choice = alignment.development_choice(out)
    settings = type("S", (), {"out": str(out), "align_iterations": None, "prior": None})()
    chosen, origin = alignment._settings_for(settings, ["em", "vb", "cgs"])
    assert chosen["em"] == choice["em"] and origin["em"] == "development.json"
    assert chosen["cgs"] == alignment.NT_SETTINGS["cgs"] and origin["cgs"].startswith("built-in")
    # a second development run for one algorithm replaces only that algorithm's rows
    monkeypatch.setitem(alignment.DEV_ITERATIONS, "vb", (2,))
    main(["experiment", "align-nt", "--develop", "--out", str(out), "--algorithms", "vb", "--quiet"])
    development = json.loads((out / "align_nt" / "development.json").read_text())
    assert [(r["algorithm"], r["n_iter"][0], r["prior"]) for r in development["runs"]] == [
        ("em", 1, 0.1), ("em", 2, 0.1), ("vb", 2, 0.1), ("vb", 2, 1.0)]
    assert len(development["commands"]) == 2 and set(development["chosen"]) == {"em", "vb"}


def test_align_bible_end_to_end(caches, monkeypatch):
    monkeypatch.setattr(alignment, "eflomal_missing", lambda: "eflomal is not installed (test)")
    out = caches / "results"
    main(["experiment", "align-bible", "--out", str(out), "--algorithms", "em,cvi1", "--align-iterations",
          "em=2,cvi1=1", "--verse-counts", "20", "all", "--seeds", "1", "--quiet"])
    folder = out / "align_bible"
    report = json.loads((folder / "results.json").read_text())
    assert report["verse_counts"] == [20, 80]
    assert [(r["verses"], r["algorithm"]) for r in report["runs"]] == [
        (20, "em"), (20, "cvi1"), (80, "em"), (80, "cvi1")]
    data = load_bible()
    for run in report["runs"]:
        # every predicted link touching an untagged word ('and', 'y') is dropped from the tagged precision
        assert run["n_predicted_tagged"] <= run["n_predicted"]
        assert run["precision_tagged"] >= run["precision"] - 1e-12
        assert run["peak_rss_mib"] > 0
    assert report["runs"][-1]["tokens"] == data.n_source_tokens + data.n_target_tokens
    table = (folder / "table.md").read_text()
    assert "AER % (tagged)" in table and "lower bound" in table
    assert "| 20 |" in table and "| 80 |" in table
    assert "bytes per cell" in table
    assert report["runs"][-1]["cells"] == sum(len(s) * len(t) for s, t in zip(data.source, data.target))
    assert (folder / "align_bible.png").stat().st_size > 1000 and (folder / "scaling.png").stat().st_size > 1000


def test_restricted_precision_counts_only_tagged_pairs():
    links = [{(0, 0), (1, 1), (2, 0)}]
    assert alignment._restrict(links, [[True, False, True]], [[True, True]]) == [{(0, 0), (2, 0)}]


def test_eflomal_row_when_installed(caches, monkeypatch):
    pytest.importorskip("eflomal")
    out = caches / "results"
    main(["experiment", "align-nt", "--out", str(out), "--algorithms", "em", "--models", "hmm",
          "--align-iterations", "em=1", "--seeds", "1", "--quiet"])
    runs = json.loads((out / "align_nt" / "results.json").read_text())["runs"]
    eflomal = runs[-1]
    assert eflomal["algorithm"] == "eflomal" and eflomal["peak_rss_mib"] > 0
    assert 0.0 <= eflomal["aer"] <= 1.0
    assert "(eflomal)" in (out / "align_nt" / "table.md").read_text()


def test_a_run_in_its_own_process(tmp_path, monkeypatch):
    """The isolated path: a subprocess writes the links and reports time and memory."""
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "cache"))
    make_nt(tmp_path / "cache", n=20)
    data = load_nt_alignments()
    source, target = alignment.write_corpus(data, tmp_path / "work")
    job = {"model": "hmm", "algorithm": "scvi", "n_iter": [2, 2], "prior": 0.1, "seed": 0,
           "source": str(source), "target": str(target), "links": str(tmp_path / "work" / "run")}
    run = alignment.score_run(alignment.run_job(job), data)
    assert len(run["objective_forward"]) == 4 and all(np.isfinite(run["objective_forward"]))
    assert run["peak_rss_mib"] >= run["rss_before_fit_mib"] > 10
    assert (tmp_path / "work" / "run.sym").read_text().count("\n") == 20
    assert run["n_reference"] == data.n_links
    bad = dict(job, model="ibm3")
    with pytest.raises(RuntimeError, match="failed with code"):
        alignment.run_job(bad)


def test_bad_options(caches):
    with pytest.raises(SystemExit, match="ALGORITHM=N"):
        alignment.parse_iterations("em=0")
    with pytest.raises(SystemExit, match="ALGORITHM=N"):
        alignment.parse_iterations("cvi3=3")
    assert alignment.parse_iterations("em=5+1, cgs=50") == {"em": (5, 1), "cgs": (50, 50)}
    with pytest.raises(SystemExit, match="no algorithm cvi3"):
        main(["experiment", "align-nt", "--out", str(caches), "--algorithms", "cvi3", "--quiet"])
    with pytest.raises(SystemExit, match="unknown alignment model ibm4"):
        main(["experiment", "align-nt", "--out", str(caches), "--models", "ibm4", "--quiet"])


def test_a_failing_run_is_recorded_not_fatal(caches, monkeypatch):
    monkeypatch.setattr(alignment, "eflomal_missing", lambda: "missing")
    real = alignment._worker_cvbayes

    def worker(job):
        if job["algorithm"] == "vb":
            raise ValueError("sentence pair 2 has no alignment of positive probability; use a larger prior")
        return real(job)

    monkeypatch.setattr(alignment, "_worker_cvbayes", worker)
    out = caches / "results"
    main(["experiment", "align-bible", "--out", str(out), "--algorithms", "em,vb", "--align-iterations",
          "em=1,vb=1", "--verse-counts", "all", "--quiet"])
    report = json.loads((out / "align_bible" / "results.json").read_text())
    assert [("failed" in r) for r in report["runs"]] == [False, True]
    table = (out / "align_bible" / "table.md").read_text()
    assert "Failed runs (left out of the tables)" in table and "use a larger prior" in table
    assert "| hmm vb |" not in table
    monkeypatch.setattr(alignment, "DEV_ITERATIONS", {**alignment.DEV_ITERATIONS, "em": (1,), "vb": (1,)})
    monkeypatch.setattr(alignment, "DEV_PRIORS", (0.1,))
    main(["experiment", "align-nt", "--develop", "--out", str(out), "--algorithms", "em,vb", "--quiet"])
    development = json.loads((out / "align_nt" / "development.json").read_text())
    assert set(development["chosen"]) == {"em"}
    assert "| vb | 1 | 0.1 | failed: sentence pair 2" in (out / "align_nt" / "development.md").read_text()

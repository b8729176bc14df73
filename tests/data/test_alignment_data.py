"""The Bible loaders for word alignment, on tiny made-up files in the exact on-disk formats."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cvbayes.cli import main
from cvbayes.data import (
    CorpusFormatError,
    ParallelVerses,
    fetch_bible,
    fetch_nt_alignments,
    load_bible,
    load_nt_alignments,
    read_bible_cache,
    tokenize_osis,
)
from cvbayes.data import bible
from tests.data.fakes import failing_commands, tar_with

# --- a fake bible-alignments cache: Matthew 1:1-2, Mark 1:1, Romans 16:24 (Greek only),
#     Romans 16:25 (English only), in the files' real column layout ---------------------------

SBLGNT = (
    "id\taltId\ttext\tstrongs\tgloss\tgloss2\tlemma\tpos\tmorph\n"
    "n40001001001\tΒίβλος-1\tΒίβλος\tG0976\t[The] book\tbook\tβίβλος\tnoun\tN-NSF\n"
    "n40001001002\tγενέσεως-1\tγενέσεως\tG1078\tof genealogy\tgenealogy\tγένεσις\tnoun\tN-GSF\n"
    "n40001001003\tἸησοῦ-1\tἸησοῦ\tG2424\tof Jesus\tJesus\tἸησοῦς\tnoun\tN-GSM\n"
    "n40001002001\tἈβραὰμ-1\tἈβραὰμ\tG0011\tAbraham\tAbraham\tἈβραάμ\tnoun\tN-NSM\n"
    "n40001002002\tἐγέννησεν-1\tἐγέννησεν\tG1080\tbegat\tbegat\tγεννάω\tverb\tV-AAI-3S\n"
    "n41001001001\tἈρχὴ-1\tἈρχὴ\tG0746\t[The] beginning\tbeginning\tἀρχή\tnoun\tN-NSF\n"
    "n45016024001\tἩ-1\tἩ\tG3588\tThe\tthe\tὁ\tart\tT-NSF\n"
)
BSB = (
    "id\tsource_verse\ttext\tskip_space_after\texclude\tid_range_end\tsource_verse_range_end\n"
    "40001001001\t40001001\tThe\t\t\t\t\n"
    "40001001002\t40001001\tbook\t\t\t\t\n"
    "40001001003\t40001001\t,\t\ty\t\t\n"
    "40001001004\t40001001\tof\t\t\t\t\n"
    "40001001005\t40001001\tJesus\t\t\t\t\n"
    "40001002001\t40001002\tAbraham\t\t\t\t\n"
    "40001002002\t40001002\twas\t\t\t\t\n"
    "40001002003\t40001002\tthe\t\t\t\t\n"
    # a token of verse 3 that the versification gives to Greek verse 2 (as Acts 19:41)
    "40001003001\t40001002\tfather\t\t\t\t\n"
    "40001003002\t40001002\t.\t\ty\t\t\n"
    "41001001001\t41001001\tThe\t\t\t\t\n"
    "41001001002\t41001001\tbeginning\t\t\t\t\n"
    "45016025001\t45016025\tNow\t\t\t\t\n"
)


def record(source, target, n):
    return {"source": source, "target": target,
            "meta": {"id": f"x.{n:03d}", "process": "manual", "status": "created"}}


RECORDS = [
    record(["n40001001001"], ["40001001001", "40001001002"], 1),  # one Greek -> two English
    record(["n40001001002", "n40001001003"], ["40001001004", "40001001005"], 2),  # 2 x 2
    record(["n40001001003"], ["40001001003"], 3),  # to a comma: dropped and counted
    record(["n40001002001"], ["40001002001"], 4),
    record(["n40001002002"], ["40001002002", "40001003001"], 5),  # English verse 3 in Greek verse 2
    record(["n40001002002"], ["40001001005"], 6),  # across verses: dropped and counted
    record(["n41001001001"], ["41001001001", "41001001002"], 7),
]


def alignment_json(records=RECORDS):
    head = ('{"documents": [{"docid": "SBLGNT", "scheme": "BCVWP"}, {"docid": "BSB", "scheme": "BCVWP"}], '
            '"meta": {"conformsTo": "0.3", "creator": "test"}, "roles": ["source", "target"], '
            '"type": "translation", \n"records": [')
    return head + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "]}\n"


def make_nt(cache: Path, sblgnt=SBLGNT, bsb=BSB, alignments=None) -> Path:
    folder = cache / "nt"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SBLGNT.tsv").write_text(sblgnt, encoding="utf-8")
    (folder / "nt_BSB.tsv").write_text(bsb, encoding="utf-8")
    (folder / "SBLGNT-BSB-manual.json").write_text(alignments or alignment_json(), encoding="utf-8")
    (folder / "LICENSE.md").write_text("CC BY 4.0\n")
    return folder


def test_nt_verses_positions_and_gold_links(tmp_path):
    make_nt(tmp_path)
    nt = load_nt_alignments(cache=tmp_path)
    assert isinstance(nt, ParallelVerses)
    assert nt.verse_ids == ["40001001", "40001002", "41001001"]
    assert nt.source == [["βίβλος", "γενέσεως", "ἰησοῦ"], ["ἀβραὰμ", "ἐγέννησεν"], ["ἀρχὴ"]]
    # punctuation (exclude = y) is gone, the rest is lowercased; "father" (id verse 3) joins verse 2
    assert nt.target == [["the", "book", "of", "jesus"], ["abraham", "was", "the", "father"],
                         ["the", "beginning"]]
    assert nt.links == [
        {(0, 0), (0, 1), (1, 2), (1, 3), (2, 2), (2, 3)},
        {(0, 0), (1, 1), (1, 3)},
        {(0, 0), (0, 1)},
    ]
    assert nt.source_marked is None and nt.target_marked is None
    assert nt.notes["links_in_file"] == 13
    assert nt.notes["links_to_excluded_tokens"] == 1
    assert nt.notes["links_across_verses"] == 1
    assert nt.notes["excluded_english_tokens"] == 2
    assert nt.notes["one_sided_verses_dropped"] == 2  # Rom 16:24 Greek only, 16:25 English only
    assert nt.n_links == 11 and nt.n_source_tokens == 6 and nt.n_target_tokens == 10
    summary = nt.summary()
    assert summary["verses"] == 3 and summary["links"] == 11


def test_nt_books_and_case(tmp_path):
    make_nt(tmp_path)
    gospels = load_nt_alignments(books=[40], cache=tmp_path, lowercase=False)
    assert gospels.verse_ids == ["40001001", "40001002"]
    assert gospels.source[0][0] == "Βίβλος" and gospels.target[0][0] == "The"
    assert gospels.books == [40, 40]
    with pytest.raises(ValueError, match=r"unknown book number\(s\) \[39\]"):
        load_nt_alignments(books=[39], cache=tmp_path)


def test_parallel_verses_selection(tmp_path):
    make_nt(tmp_path)
    nt = load_nt_alignments(cache=tmp_path)
    assert nt.head(2).verse_ids == ["40001001", "40001002"]
    assert nt.in_books([41]).links == [{(0, 0), (0, 1)}]
    assert len(nt.select([2, 0])) == 2 and nt.select([2, 0]).target[1][0] == "the"
    with pytest.raises(ValueError, match="verse ids"):
        ParallelVerses([["a"]], [], ["01001001"], [set()])


def test_missing_nt_says_how_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch nt"):
        load_nt_alignments(cache=tmp_path)


@pytest.mark.parametrize(
    "which, bad, message, line",
    [
        ("sblgnt", SBLGNT.replace("n40001002001", "n4000100200"), "is not \\[n\\]BBCCCVVVWWW", 5),
        ("sblgnt", SBLGNT.replace("\tG0976", ""), "8 tab-separated fields, the header has 9", 2),
        ("sblgnt", SBLGNT.replace("\tἸησοῦ\tG2424", "\t\tG2424"), "not one word", 4),
        ("bsb", BSB.replace("40001002\tAbraham", "4000100\tAbraham"), "source_verse", 7),
        ("bsb", BSB.replace("\t,\t\ty", "\t,\t\tyes"), "exclude is 'yes'", 4),
        ("bsb", BSB.replace("40001002003\t", "40001002002\t"), "occurs twice", 9),
        ("bsb", BSB.replace("source_verse", "verse"), "lacks the column\\(s\\) source_verse", 1),
    ],
)
def test_malformed_nt_files_name_file_and_line(tmp_path, which, bad, message, line):
    files = {"sblgnt": SBLGNT, "bsb": BSB}
    files[which] = bad
    make_nt(tmp_path, files["sblgnt"], files["bsb"])
    with pytest.raises(CorpusFormatError, match=message) as info:
        load_nt_alignments(cache=tmp_path)
    name = {"sblgnt": "SBLGNT.tsv", "bsb": "nt_BSB.tsv"}[which]
    assert info.value.path.endswith(name) and info.value.line == line


def test_malformed_alignment_json(tmp_path):
    make_nt(tmp_path, alignments=alignment_json()[:-4])
    with pytest.raises(CorpusFormatError, match="not valid JSON") as info:
        load_nt_alignments(cache=tmp_path)
    assert info.value.path.endswith("SBLGNT-BSB-manual.json") and info.value.line is not None
    make_nt(tmp_path, alignments=alignment_json([*RECORDS, record(["n40009009009"], ["40001001001"], 8)]))
    with pytest.raises(CorpusFormatError, match="record 7 names the Greek token 'n40009009009'"):
        load_nt_alignments(cache=tmp_path)
    make_nt(tmp_path, alignments=alignment_json([{"source": "n40001001001", "target": []}]))
    with pytest.raises(CorpusFormatError, match="record 0 lacks"):
        load_nt_alignments(cache=tmp_path)


def test_fetch_nt_copies_the_files_out_of_the_sdist(tmp_path, monkeypatch):
    folder = tmp_path / "nt"
    folder.mkdir()
    root = "bible_alignments-0.4.2/"
    tar_with(folder / "bible_alignments-0.4.2.tar.gz", {
        root + "data/sources/SBLGNT.tsv": SBLGNT.encode(),
        root + "data/eng/targets/BSB/nt_BSB.tsv": BSB.encode(),
        root + "data/eng/alignments/BSB/SBLGNT-BSB-manual.json": alignment_json().encode(),
        root + "LICENSE.md": b"CC BY 4.0\n",
    })
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    assert fetch_nt_alignments(tmp_path, progress=False) == folder
    assert load_nt_alignments(cache=tmp_path).n_links == 11


def test_fetch_nt_runs_pip_download(tmp_path, monkeypatch):
    calls = failing_commands(monkeypatch)
    with pytest.raises(RuntimeError, match="bible-alignments==0.4.2.*failed"):
        fetch_nt_alignments(tmp_path, progress=False)
    assert calls[0][:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-binary" in calls[0] and str(tmp_path / "nt") in calls[0]


# --- the KJV / RV1909 cache -----------------------------------------------------------------------

KJV_OSIS = ('<div type="x-milestone" subType="x-preverse" sID="pv1"/>¶ In the <w lemma="strong:H7225">'
            'beginning</w> <w lemma="strong:H0430">God</w> <transChange type="added">was</transChange>, '
            'the <divineName><w lemma="strong:H3068">LORD</w></divineName>&amp;co.<note placement="foot">'
            '<reference type="annotateRef">1.1 </reference>Heb. <w lemma="strong:H1">x</w></note> '
            "<w lemma=\"strong:G2316 strong:G3588\">God's</w> well-being")


def test_tokenize_osis():
    assert tokenize_osis(KJV_OSIS) == [
        ("in", ()), ("the", ()), ("beginning", ("H7225",)), ("god", ("H430",)), ("was", ()),
        (",", ()), ("the", ()), ("lord", ("H3068",)), ("&", ()), ("co", ()), (".", ()),
        ("god's", ("G2316", "G3588")), ("well-being", ()),
    ]
    assert tokenize_osis('<w lemma="strong:H5315 H2416 H05315">hay vida</w>') == [
        ("hay", ("H5315", "H2416")), ("vida", ("H5315", "H2416")),
    ]
    assert tokenize_osis('<w lemma="strong:H7225">EN el principio</w> crió') == [
        ("en", ("H7225",)), ("el", ("H7225",)), ("principio", ("H7225",)), ("crió", ()),
    ]


HEADER = "# cvbayes bible cache v1 module={}: BBCCCVVV<TAB>tokens, form|STRONG+STRONG\n"
KJV = (HEADER.format("engKJV2006eb")
       + "01001001\tin the beginning|H7225 god|H430 created|H1254 the heaven|H8064 .\n"
       + "01001002\tand the earth|H776 was|H1961 void|H922 ; the earth|H776\n"
       + "01001003\t\n"
       + "40001001\tthe book|G976 of the generation|G1078 of jesus|G2424+G3588\n")
RV = (HEADER.format("spaRV1909eb")
      + "01001001\ten|H7225 el|H7225 principio|H7225 crió|H1254 dios|H430 los|H8064 cielos|H8064 .\n"
      + "01001002\ty|H776 la|H776 tierra|H776 estaba|H1961 vacía|H922\n"
      + "01001003\tuna|H1\n"
      + "40001001\tlibro|G976 de|G1078 la|G1078 generación|G1078 de|G2424 jesús|G2424\n")


def make_bible(cache: Path, kjv=KJV, rv=RV) -> Path:
    folder = cache / "bible"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "engKJV2006eb.txt").write_text(kjv, encoding="utf-8")
    (folder / "spaRV1909eb.txt").write_text(rv, encoding="utf-8")
    return folder


def test_load_bible_silver_links(tmp_path):
    make_bible(tmp_path)
    data = load_bible(cache=tmp_path)
    assert data.verse_ids == ["01001001", "01001002", "40001001"]  # 1:3 is empty in English
    assert data.notes["verses_empty_on_a_side_dropped"] == 1
    assert data.source[0] == ["in", "the", "beginning", "god", "created", "the", "heaven"]
    assert data.target[0] == ["en", "el", "principio", "crió", "dios", "los", "cielos"]
    assert data.links[0] == {(2, 0), (2, 1), (2, 2), (3, 4), (4, 3), (6, 5), (6, 6)}
    # the two English "earth" share H776 with three Spanish words each
    assert data.links[1] == {(i, j) for i in (2, 6) for j in (0, 1, 2)} | {(3, 3), (4, 4)}
    assert data.source_marked[0] == [False, False, True, True, True, False, True]
    assert all(data.target_marked[0])
    assert data.links[2] == {(1, 0), (4, 1), (4, 2), (4, 3), (6, 4), (6, 5)}
    assert data.notes["source_marked_share"] == pytest.approx(11 / 21)


def test_load_bible_options(tmp_path):
    make_bible(tmp_path)
    assert load_bible(max_verses=1, cache=tmp_path).verse_ids == ["01001001"]
    assert load_bible(books=[40], cache=tmp_path).verse_ids == ["40001001"]
    with_marks = load_bible(cache=tmp_path, punctuation=True)
    assert with_marks.source[0][-1] == "." and with_marks.source_marked[0][-1] is False
    assert with_marks.links[0] == load_bible(cache=tmp_path).links[0]  # positions before the mark
    with pytest.raises(ValueError, match="max_verses"):
        load_bible(max_verses=0, cache=tmp_path)


@pytest.mark.parametrize(
    "bad, message, line",
    [
        (KJV.replace("01001002\t", "0100102\t"), "expected BBCCCVVV<TAB>tokens", 3),
        (KJV.replace("01001002\t", "01001002 "), "expected BBCCCVVV<TAB>tokens", 3),
        (KJV.replace("void|H922", "void|922"), "malformed token 'void\\|922'", 3),
        (KJV.replace("void|H922", "void|"), "malformed token", 3),
        (KJV.replace("01001003", "01001002"), "verse 01001002 occurs twice", 4),
    ],
)
def test_malformed_bible_cache_names_file_and_line(tmp_path, bad, message, line):
    make_bible(tmp_path, kjv=bad)
    with pytest.raises(CorpusFormatError, match=message) as info:
        load_bible(cache=tmp_path)
    assert info.value.path.endswith("engKJV2006eb.txt") and info.value.line == line


def test_bible_files_must_list_the_same_verses(tmp_path):
    make_bible(tmp_path, rv=RV.replace("40001001", "40001002"))
    with pytest.raises(CorpusFormatError, match="list different verses"):
        load_bible(cache=tmp_path)
    assert read_bible_cache(tmp_path / "bible" / "engKJV2006eb.txt")[2] == ("01001003", [])


def test_missing_bible_says_how_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch bible"):
        load_bible(cache=tmp_path)


class FakeBook:
    def __init__(self, name, chapter_lengths):
        self.name, self.chapter_lengths = name, chapter_lengths


class FakeBible:
    def __init__(self, texts):
        self.texts = texts

    def get_structure(self):
        books = [FakeBook(f"Book{n}", [1] if n != 40 else [2]) for n in range(1, 67)]
        structure = type("S", (), {})()
        structure.get_books = lambda: {"ot": books[:39], "nt": books[39:]}
        return structure

    def get_iter(self, books, chapters, verses, clean):
        assert clean is False
        key = (books[0], chapters[0], verses[0])
        if key in self.texts:
            yield self.texts[key]


class FakeModules:
    def __init__(self, path):
        self.path = path

    def parse_modules(self):
        return {"engKJV2006eb": {}, "spaRV1909eb": {}}

    def get_bible_from_module(self, name):
        if name == "engKJV2006eb":
            return FakeBible({("Book1", 1, 1): KJV_OSIS, ("Book40", 1, 2): "<w lemma=\"strong:G976\">book</w>"})
        return FakeBible({("Book1", 1, 1): '<w lemma="strong:H7225">EN el principio</w>',
                          ("Book40", 1, 2): '<w lemma="strong:G976">libro</w>'})


def test_fetch_bible_reads_the_modules_into_the_cache(tmp_path, monkeypatch):
    sword = tmp_path / "sword"
    (sword / "mods.d").mkdir(parents=True)
    for module in ("engKJV2006eb", "spaRV1909eb"):
        (sword / "mods.d" / f"{module}.conf").write_text(f"[{module}]\n")
    fake = type(sys)("pysword.modules")
    fake.SwordModules = FakeModules
    monkeypatch.setitem(sys.modules, "pysword", type(sys)("pysword"))
    monkeypatch.setitem(sys.modules, "pysword.modules", fake)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("apt-get must not run"))
    folder = fetch_bible(tmp_path / "cache", progress=False, sword_path=sword)
    lines = (folder / "engKJV2006eb.txt").read_text().splitlines()
    assert lines[0].startswith("# cvbayes bible cache v1")
    assert len(lines) == 1 + 65 + 2  # one verse a book, two in book 40
    assert lines[1].startswith("01001001\tin the beginning|H7225 god|H430 was , the lord|H3068")
    assert lines[2] == "02001001\t"
    data = load_bible(cache=tmp_path / "cache")
    assert data.verse_ids == ["01001001", "40001002"]
    assert data.links == [{(2, 0), (2, 1), (2, 2)}, {(0, 0)}]


def test_fetch_bible_without_the_sword_modules_or_pysword(tmp_path, monkeypatch):
    sword = tmp_path / "sword"
    # the package never runs apt-get itself: it names the command
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: pytest.fail("ran a command"))
    with pytest.raises(RuntimeError, match="apt-get install -y sword-text-kjv sword-text-sparv"):
        fetch_bible(tmp_path, progress=False, sword_path=sword)
    (sword / "mods.d").mkdir(parents=True)
    for module in ("engKJV2006eb", "spaRV1909eb"):
        (sword / "mods.d" / f"{module}.conf").write_text("")
    monkeypatch.setitem(sys.modules, "pysword", None)
    monkeypatch.setitem(sys.modules, "pysword.modules", None)
    with pytest.raises(RuntimeError, match=r"cvbayes\[bible\]"):
        fetch_bible(tmp_path, progress=False, sword_path=sword)


def test_cli_fetch_nt_and_bible(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path))
    make_nt(tmp_path)
    make_bible(tmp_path)
    main(["data", "fetch", "nt"])
    assert f"ready in {tmp_path / 'nt'}" in capsys.readouterr().out
    main(["data", "fetch", "bible", "--json", "--quiet"])
    assert json.loads(capsys.readouterr().out) == {"corpus": "bible", "path": str(tmp_path / "bible")}


def test_module_docstring_cites_the_licences():
    assert "CC BY 4.0" in bible.__doc__ and "public domain" in bible.__doc__

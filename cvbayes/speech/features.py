"""MFCC + delta + delta-delta features (39 a frame, 25 ms windows every 10 ms), normalised, of whole corpora.

The recipe is HTK's (S. Young et al., *The HTK Book* 3.4, §5.6 and §5.9), as the acoustic unit discovery
papers use it (Lee and Glass 2012; Ondel, Burget and Černocký 2016):

1. pre-emphasis ``y[n] = x[n] - 0.97 x[n-1]``;
2. frames of 400 samples (25 ms at 16 kHz) every 160 (10 ms), the last partial frame dropped, each
   multiplied by a Hamming window ``0.54 - 0.46 cos(2 pi n / 399)``;
3. the power spectrum ``|FFT_512|^2``;
4. 26 triangular filters equally spaced on the mel scale ``2595 log10(1 + f / 700)`` from 20 Hz to 8 kHz
   (HTK's filters, unnormalised: `librosa.filters.mel` with ``htk=True, norm=None``), natural log of each
   filter's energy (floored at 1e-10);
5. the orthonormal DCT-II of the 26 log energies, cepstra c0 ... c12 kept (c0 included, as Kaldi and
   Sphinx keep it in place of the log energy), liftered by ``1 + 11 sin(pi n / 22)`` (HTK, L = 22);
6. deltas by HTK's regression over +-2 frames, ``d_t = sum_k k (c_{t+k} - c_{t-k}) / 10`` with the edge
   frames repeated (eq. 5.16; `librosa.feature.delta` with ``width=5, mode="nearest"`` is this formula), and
   delta-deltas the same regression over the deltas: 13 + 13 + 13 = 39 dimensions.

Frame t covers samples ``[160 t, 160 t + 400)``: its time is ``0.01 t`` s (start), its centre
``0.01 t + 0.0125`` s.  Features are then mean- and variance-normalised per utterance or per speaker
(CMVN), and optionally trimmed of leading and trailing silence by frame energy.

Library: librosa gives the mel filterbank and the delta regression, numpy/scipy the framing, FFT and DCT;
soxr resamples.  Measured here (2 shared cores, numpy 2.4, medians of 5 runs, 13 MFCC + deltas of 200
utterances of 1-4 s, 491 s of audio): python_speech_features 1.5-2.0 s (240-330x real time; unmaintained
since 2017, quantises its filters to FFT bins), librosa 1.0-1.1 s (430-500x), torchaudio 0.5-0.9 s
(540-950x).  Install weight over ``cvbayes[test]``, which already has numba, scipy and scikit-learn:
librosa +14 MB (soundfile, soxr, audioread, pooch, ...), torchaudio needs torch (0.7 GB CPU-only, 5.7 GB as
PyPI serves it with CUDA).  librosa is maintained, light here and fast enough (features are computed once
per corpus), so it is the one.  Its cost: the first `mfcc` after installing librosa takes about a minute
(57 s here), as ``librosa.filters.mel`` loads ``librosa.core``, whose numba code compiles then and is
cached in the installation for every later run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data.errors import CorpusFormatError
from .audio import AUDIO_SUFFIXES, N_CEPSTRA, SAMPLE_RATE, read_audio, read_mfc, require

__all__ = ["FRAME_SECONDS", "HOP_SECONDS", "N_FEATURES", "SpeechCorpus", "add_deltas", "cmvn", "features",
           "frame_log_energy", "load_corpus", "mfcc", "speaker_cmvn", "voice_activity"]

FRAME_SECONDS = 0.025
HOP_SECONDS = 0.010
N_FEATURES = 3 * N_CEPSTRA
N_FILTERS = 26
N_FFT = 512
PRE_EMPHASIS = 0.97
LIFTER = 22
LOW_HZ = 20.0
LOG_FLOOR = 1e-10


def _frames(signal: np.ndarray, rate: int) -> np.ndarray:
    """Frames (T, window) of `signal`, 25 ms every 10 ms, the last partial frame dropped."""
    window, hop = round(FRAME_SECONDS * rate), round(HOP_SECONDS * rate)
    if signal.size < window:
        raise ValueError(f"{signal.size} samples are shorter than one {window}-sample frame")
    view = np.lib.stride_tricks.sliding_window_view(signal, window)
    return view[::hop]


def frame_log_energy(signal: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
    """Mean-square energy of each 25 ms frame in dB relative to full scale, shape (T,)."""
    power = np.mean(np.square(_frames(np.asarray(signal, dtype=np.float64), rate)), axis=1)
    return 10.0 * np.log10(np.maximum(power, 1e-20))


@lru_cache(maxsize=4)
def _filterbank(rate: int, n_fft: int) -> np.ndarray:
    librosa_filters = require("librosa.filters")
    return librosa_filters.mel(sr=rate, n_fft=n_fft, n_mels=N_FILTERS, fmin=LOW_HZ, fmax=rate / 2, htk=True,
                               norm=None).astype(np.float64)


def mfcc(signal: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
    """13 HTK-style MFCCs (c0 ... c12) of each frame of a mono signal, shape (T, 13) float64 (module notes)."""
    from scipy.fft import dct

    signal = np.asarray(signal, dtype=np.float64)
    emphasised = np.append(signal[:1], signal[1:] - PRE_EMPHASIS * signal[:-1])
    frames = _frames(emphasised, rate)
    n_fft = max(N_FFT, 1 << (frames.shape[1] - 1).bit_length())
    power = np.square(np.abs(np.fft.rfft(frames * np.hamming(frames.shape[1]), n=n_fft, axis=1)))
    log_mel = np.log(np.maximum(power @ _filterbank(rate, n_fft).T, LOG_FLOOR))
    cepstra = dct(log_mel, type=2, norm="ortho", axis=1)[:, :N_CEPSTRA]
    return cepstra * (1.0 + LIFTER / 2 * np.sin(np.pi * np.arange(N_CEPSTRA) / LIFTER))


def add_deltas(cepstra: np.ndarray) -> np.ndarray:
    """Append HTK regression deltas and delta-deltas (+-2 frames, edges repeated): (T, D) -> (T, 3D)."""
    librosa_feature = require("librosa.feature")
    cepstra = np.asarray(cepstra, dtype=np.float64)
    delta = librosa_feature.delta(cepstra, width=5, order=1, axis=0, mode="nearest")
    return np.hstack([cepstra, delta, librosa_feature.delta(delta, width=5, order=1, axis=0, mode="nearest")])


def cmvn(features: np.ndarray, variance: bool = True) -> np.ndarray:
    """Subtract each dimension's mean over the frames and (with `variance`) divide by its standard deviation.

    A dimension that is constant is only centred (its deviation, 0, is not divided by).
    """
    features = np.asarray(features, dtype=np.float64)
    return _normalise(features, features.mean(axis=0), features.std(axis=0) if variance else None)


def _normalise(features: np.ndarray, mean: np.ndarray, std: np.ndarray | None) -> np.ndarray:
    centred = features - mean
    if std is None:
        return centred
    return centred / np.where(std > 1e-10, std, 1.0)


def speaker_cmvn(features: Sequence[np.ndarray], speakers: Sequence[str], variance: bool = True) -> list[np.ndarray]:
    """CMVN with each speaker's mean and deviation pooled over all of that speaker's frames."""
    if len(features) != len(speakers):
        raise ValueError(f"{len(features)} utterances but {len(speakers)} speakers")
    out: list[np.ndarray] = [np.empty(0)] * len(features)
    for speaker in dict.fromkeys(speakers):
        members = [i for i, s in enumerate(speakers) if s == speaker]
        pooled = np.concatenate([features[i] for i in members])
        mean, std = pooled.mean(axis=0), pooled.std(axis=0) if variance else None
        for i in members:
            out[i] = _normalise(np.asarray(features[i], dtype=np.float64), mean, std)
    return out


def voice_activity(log_energy: np.ndarray, top_db: float = 40.0, margin: int = 5) -> slice:
    """The frames from the first to the last whose energy is within `top_db` dB of the loudest, widened by
    `margin` frames each side: a slice that trims leading and trailing silence (pauses inside are kept)."""
    log_energy = np.asarray(log_energy)
    voiced = np.flatnonzero(log_energy >= log_energy.max() - top_db)
    return slice(max(int(voiced[0]) - margin, 0), min(int(voiced[-1]) + 1 + margin, log_energy.size))


def _utterance(path: Path, trim: bool, rate: int, top_db: float) -> tuple[np.ndarray, int]:
    """Unnormalised features (T, 39) of a file and the index of its first kept frame."""
    if path.suffix.lower() == ".mfc":
        return add_deltas(read_mfc(path)), 0  # Sphinx features come endpointed, with no waveform to trim
    signal = read_audio(path, rate=rate)
    try:
        full = add_deltas(mfcc(signal, rate))
    except ValueError as error:
        raise CorpusFormatError(str(error), path) from None
    if not trim:
        return full, 0
    kept = voice_activity(frame_log_energy(signal, rate), top_db)
    return full[kept], kept.start


def features(path: str | os.PathLike[str], normalise: bool = True, trim: bool = False, rate: int = SAMPLE_RATE,
             top_db: float = 40.0) -> np.ndarray:
    """MFCC + delta + delta-delta features of one file, float64 (T, 39).

    Parameters
    ----------
    path : WAV (16-bit PCM; another rate is resampled), ``.raw`` (16-bit, 16 kHz) or Sphinx ``.mfc``
        (its 13 cepstra are read and the deltas added).
    normalise : mean and variance normalisation over the utterance (`cmvn`).
    trim : drop leading and trailing frames more than `top_db` dB below the loudest (`voice_activity`);
        the deltas are computed before trimming.  Ignored for ``.mfc`` files.

    Raises
    ------
    CorpusFormatError
        For a file that cannot be read (as `read_audio`, `read_mfc`) or is shorter than one frame.
    """
    full, _ = _utterance(Path(path), trim, rate, top_db)
    return cmvn(full) if normalise else full


@dataclass(frozen=True)
class SpeechCorpus:
    """Features of a corpus of utterances.  Unpacks as ``names, features = load_corpus(...)``.

    Attributes
    ----------
    names : file names without their suffix, in corpus order.
    features : one float64 array (T_i, 39) per utterance.
    speakers : one speaker label per utterance (the name itself when no speakers were given).
    first_frames : frames trimmed off each utterance's start (0 without trim): frame t of utterance i
        starts at ``(first_frames[i] + t) * 0.01`` seconds into its file.
    paths : the files read.
    """

    names: list[str]
    features: list[np.ndarray]
    speakers: list[str] = field(default_factory=list)
    first_frames: list[int] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)

    def __iter__(self):
        return iter((self.names, self.features))

    def __len__(self) -> int:
        return len(self.names)

    def frame_times(self, index: int) -> np.ndarray:
        """Start time in seconds of each frame of utterance `index` in its file."""
        return (self.first_frames[index] + np.arange(len(self.features[index]))) * HOP_SECONDS

    @property
    def seconds(self) -> float:
        """Total duration of the kept frames (frames x 10 ms)."""
        return sum(len(f) for f in self.features) * HOP_SECONDS


def _corpus_files(source) -> list[Path]:
    if isinstance(source, (str, os.PathLike)):
        source = Path(source)
        if source.is_dir():
            files = sorted(p for p in source.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file())
            if not files:
                raise CorpusFormatError(f"no audio here: no {', '.join('*' + s for s in AUDIO_SUFFIXES)} "
                                        "files in the folder or below it", source)
            return files
        if source.suffix.lower() in AUDIO_SUFFIXES:
            return [source]
        # a list file: one path a line, relative to the list's folder
        lines = [(number, line.strip()) for number, line in
                 enumerate(source.read_text(encoding="utf-8").splitlines(), start=1)]
        files = []
        for number, line in lines:
            if line and not line.startswith("#"):
                file = source.parent / line
                if not file.is_file():
                    raise CorpusFormatError(f"no such file {line!r}", source, number)
                files.append(file)
        if not files:
            raise CorpusFormatError("the list names no files", source)
        return files
    files = [Path(p) for p in source]
    if not files:
        raise ValueError("load_corpus was given an empty list of files")
    return files


def load_corpus(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], normalise: str | None = "utterance",
                speakers: Mapping[str, str] | Callable[[str], str] | None = None, trim: bool = False,
                rate: int = SAMPLE_RATE, top_db: float = 40.0, progress: bool = True) -> SpeechCorpus:
    """Features (T_i, 39) of every utterance of a corpus, with a progress bar.

    Parameters
    ----------
    source : a folder (its ``*.wav``, ``*.raw`` and ``*.mfc`` files, searched recursively, in sorted order),
        a text file listing one path a line (relative to its folder; ``#`` starts a comment), or a list of paths.
    normalise : ``"utterance"`` (CMVN over each utterance), ``"speaker"`` (over each speaker's utterances
        pooled) or None.
    speakers : name -> speaker, as a mapping or a function of the name; needed for ``"speaker"``.
    trim, rate, top_db : as `features`; `first_frames` of the result records the trimmed frames.

    Raises
    ------
    CorpusFormatError
        A folder with no audio, a bad list line, or a bad file: the message names it.
    """
    if normalise not in ("utterance", "speaker", None):
        raise ValueError(f"normalise must be 'utterance', 'speaker' or None, got {normalise!r}")
    files = _corpus_files(source)
    names = [file.stem for file in files]
    if speakers is None:
        if normalise == "speaker":
            raise ValueError("normalise='speaker' needs speakers (a mapping or a function of the file name)")
        who = names
    else:
        lookup = speakers if callable(speakers) else speakers.__getitem__
        try:
            who = [str(lookup(name)) for name in names]
        except KeyError as error:
            raise ValueError(f"no speaker given for utterance {error}") from None
    feats, firsts = [], []
    for file in tqdm(files, desc="features", unit="file", disable=not progress):
        full, first = _utterance(file, trim, rate, top_db)
        feats.append(cmvn(full) if normalise == "utterance" else full)
        firsts.append(first)
    if normalise == "speaker":
        feats = speaker_cmvn(feats, who)
    return SpeechCorpus(names, feats, list(who), firsts, files)

"""Reading and writing speech files: 16-bit PCM WAV, headerless 16-bit ``.raw`` and Sphinx ``.mfc``.

WAV and ``.raw`` files are read with the standard library (`wave`), so reading needs no extra package;
only a file at another sample rate needs ``soxr`` (in the ``[speech]`` extra) to be resampled.  Every
refusal is a `CorpusFormatError` whose message starts with the file's name.

A ``.mfc`` file is in Sphinx feature format: a 4-byte integer holding the number of float32 values that
follow, then the values, 13 cepstra a frame (c0 first).  Sphinx writes them big-endian; as Sphinx itself
does, a file whose big-endian count disagrees with its size is read little-endian when the swapped count
matches, and is malformed otherwise.
"""

from __future__ import annotations

import os
import wave
from pathlib import Path

import numpy as np

from ..data.errors import CorpusFormatError
from ..files import atomic_write

__all__ = ["AUDIO_SUFFIXES", "N_CEPSTRA", "SAMPLE_RATE", "SILENCE_DBFS", "read_audio", "read_mfc",
           "require", "write_wav"]

SAMPLE_RATE = 16000
N_CEPSTRA = 13
AUDIO_SUFFIXES = (".wav", ".raw", ".mfc")
# a file whose peak stays below this level (about 10 steps of 16-bit PCM) holds no speech
SILENCE_DBFS = -70.0
_INSTALL = 'pip install "cvbayes[speech]"'


def require(module: str):
    """Import `module` from the ``[speech]`` extra, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"cvbayes.speech needs {module} for this; install the speech extra: {_INSTALL}") from error


def _resample(samples: np.ndarray, rate: int, target: int, path: Path, resample: bool) -> np.ndarray:
    if rate == target:
        return samples
    if not resample:
        raise CorpusFormatError(f"sampled at {rate} Hz, not {target} Hz (pass resample=True to convert)", path)
    soxr = require("soxr")
    return soxr.resample(samples, rate, target, quality="HQ").astype(np.float32)


def read_audio(path: str | os.PathLike[str], rate: int = SAMPLE_RATE, resample: bool = True,
               raw_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Read a 16-bit PCM WAV (or headerless ``.raw``) file as float32 samples in [-1, 1) at `rate` Hz.

    Several channels are averaged to one.  A file at another rate is resampled with soxr (high quality)
    when `resample` is true, refused otherwise.  A ``.raw`` file is 16-bit little-endian mono at
    `raw_rate` Hz (the Sphinx test data's format).

    Raises
    ------
    CorpusFormatError
        Naming the file: not a WAV file, not 16-bit PCM (8-bit, 24-bit, float, mu-law), another rate with
        ``resample=False``, no samples, or silent (peak below -70 dBFS).
    """
    path = Path(path)
    if path.suffix.lower() == ".raw":
        data = path.read_bytes()
        if len(data) % 2:
            raise CorpusFormatError(f"{len(data)} bytes: not whole 16-bit samples", path)
        samples = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
        file_rate = raw_rate
    else:
        try:
            with wave.open(str(path), "rb") as stream:
                width, channels, file_rate = stream.getsampwidth(), stream.getnchannels(), stream.getframerate()
                data = stream.readframes(stream.getnframes())
        except (wave.Error, EOFError) as error:
            raise CorpusFormatError(f"not a PCM WAV file ({error}); only 16-bit PCM WAV is read", path) from None
        if width != 2:
            raise CorpusFormatError(f"{8 * width}-bit PCM; only 16-bit PCM WAV is read "
                                    f"(convert it: sox {path.name} -b 16 out.wav)", path)
        samples = np.frombuffer(data[: len(data) // (2 * channels) * 2 * channels], dtype="<i2")
        samples = samples.reshape(-1, channels).mean(axis=1, dtype=np.float32) / 32768.0
    if samples.size == 0:
        raise CorpusFormatError("holds no samples", path)
    peak = float(np.abs(samples).max())
    if peak < 10 ** (SILENCE_DBFS / 20):
        raise CorpusFormatError(f"silent: its peak is below {SILENCE_DBFS:g} dBFS", path)
    return _resample(samples.astype(np.float32), file_rate, rate, path, resample)


def write_wav(path: str | os.PathLike[str], samples: np.ndarray, rate: int = SAMPLE_RATE) -> None:
    """Write mono samples (float in [-1, 1], or int16) as a 16-bit PCM WAV file, atomically."""
    samples = np.asarray(samples)
    if samples.dtype != np.int16:
        samples = np.round(np.clip(samples, -1.0, 32767 / 32768) * 32768).astype(np.int16)
    with atomic_write(path, "wb") as stream, wave.open(stream, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.astype("<i2").tobytes())


def read_mfc(path: str | os.PathLike[str], n_cepstra: int = N_CEPSTRA) -> np.ndarray:
    """Read one Sphinx ``.mfc`` feature file as a float64 array (frames, `n_cepstra`).

    Raises
    ------
    CorpusFormatError
        If the header's count disagrees with the file size in both byte orders (a truncated file), is not
        a multiple of `n_cepstra`, is zero, or the values are not finite. The message names the file.
    """
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 4:
        raise CorpusFormatError(f"{len(data)} bytes, too short for the 4-byte header of a Sphinx feature file",
                                path)
    n_values = (len(data) - 4) // 4
    big = int(np.frombuffer(data, dtype=">i4", count=1)[0])
    little = int(np.frombuffer(data, dtype="<i4", count=1)[0])
    if (len(data) - 4) % 4 == 0 and big == n_values:
        order = ">"
    elif (len(data) - 4) % 4 == 0 and little == n_values:
        order = "<"
    else:
        raise CorpusFormatError(
            f"header says {big} float32 values (big-endian; {little} little-endian), but the file's "
            f"{len(data)} bytes hold a 4-byte header and {(len(data) - 4) / 4:g} values: "
            "not a Sphinx feature file, or truncated",
            path,
        )
    if n_values == 0:
        raise CorpusFormatError("holds no frames", path)
    if n_values % n_cepstra:
        raise CorpusFormatError(f"{n_values} values are not a whole number of {n_cepstra}-cepstra frames", path)
    frames = np.frombuffer(data, dtype=f"{order}f4", offset=4).astype(np.float64).reshape(-1, n_cepstra)
    if not np.isfinite(frames).all():
        bad = int(np.flatnonzero(~np.isfinite(frames).all(axis=1))[0])
        raise CorpusFormatError(f"frame {bad} holds NaN or infinite values", path)
    return frames

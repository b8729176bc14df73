"""Speech in: reading audio and Sphinx features, MFCC + delta + delta-delta features, CMVN, voice-activity
trimming, candidate unit boundaries from spectral change (`spectral_change_starts`), ZeroSpeech alignment
files, and the synthetic Brent corpus (`fetch_synthetic_brent`).

The feature functions need the ``[speech]`` extra (librosa, soxr): ``pip install "cvbayes[speech]"``;
this package imports without it and says so when a function needs it.
"""

from .alignments import Interval, read_alignments, write_alignments
from .audio import SAMPLE_RATE, read_audio, read_mfc, write_wav
from .landmarks import spectral_change, spectral_change_starts
from .features import (FRAME_SECONDS, HOP_SECONDS, N_FEATURES, SpeechCorpus, add_deltas, cmvn, features,
                       frame_log_energy, load_corpus, mfcc, speaker_cmvn, voice_activity)
from .synthetic import SyntheticBrent, fetch_synthetic_brent, load_synthetic_brent

__all__ = ["FRAME_SECONDS", "HOP_SECONDS", "N_FEATURES", "SAMPLE_RATE", "Interval", "SpeechCorpus",
           "SyntheticBrent", "add_deltas", "cmvn", "features", "fetch_synthetic_brent", "frame_log_energy",
           "load_corpus", "load_synthetic_brent", "mfcc", "read_alignments", "read_audio", "read_mfc",
           "speaker_cmvn", "spectral_change", "spectral_change_starts", "voice_activity", "write_alignments",
           "write_wav"]

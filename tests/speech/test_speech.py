"""The speech front end: readers, MFCC + deltas against a second implementation, CMVN, VAD, corpora,
alignment files.  Audio is generated in the tests (tones, noise), a few seconds at most."""

import wave
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("librosa", reason="the speech front end needs the [speech] extra (in [test])")

from cvbayes.data import CorpusFormatError  # noqa: E402
from cvbayes.speech import (Interval, add_deltas, cmvn, features, frame_log_energy, load_corpus, mfcc,  # noqa: E402
                            read_alignments, read_audio, read_mfc, speaker_cmvn, voice_activity,
                            write_alignments, write_wav)

RATE = 16000
TIDIGITS = Path("/usr/share/pocketsphinx/test/data/tidigits")


def tone(seconds=1.0, hz=1000.0, amplitude=0.5, rate=RATE):
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def noisy(signal, seed=0, level=1e-3):
    return signal + np.random.default_rng(seed).normal(0, level, signal.size).astype(np.float32)


def write_pcm(path, data: bytes, width=2, rate=RATE, channels=1):
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(data)
    return path


# --------------------------------------------------------------------------- #
# MFCC against a second implementation written from the HTK Book's equations
# --------------------------------------------------------------------------- #


def reference_mfcc(signal, rate=RATE, n_filters=26, n_ceps=13, low=20.0, lifter=22):
    """Plain-numpy HTK MFCC: pre-emphasis, Hamming, |FFT|^2, mel triangles, log, DCT-II, lifter."""
    x = np.asarray(signal, dtype=np.float64)
    y = np.concatenate([x[:1], x[1:] - 0.97 * x[:-1]])
    n_frames = 1 + (y.size - 400) // 160
    frames = np.stack([y[160 * t: 160 * t + 400] for t in range(n_frames)])
    n = np.arange(400)
    window = 0.54 - 0.46 * np.cos(2 * np.pi * n / 399)
    power = np.abs(np.fft.rfft(frames * window, 512)) ** 2
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    edges = hz(np.linspace(mel(low), mel(rate / 2), n_filters + 2))
    bins = np.arange(257) * rate / 512
    bank = np.zeros((n_filters, 257))
    for i in range(n_filters):
        left, centre, right = edges[i: i + 3]
        rising = (bins - left) / (centre - left)
        falling = (right - bins) / (right - centre)
        bank[i] = np.maximum(0, np.minimum(rising, falling))
    log_mel = np.log(np.maximum(power @ bank.T, 1e-10))
    k = np.arange(n_filters)
    dct = np.array([np.sqrt((1 if q == 0 else 2) / n_filters) * np.cos(np.pi * q * (2 * k + 1) / (2 * n_filters))
                    for q in range(n_ceps)])
    cepstra = log_mel @ dct.T
    return cepstra * (1 + lifter / 2 * np.sin(np.pi * np.arange(n_ceps) / lifter))


def test_mfcc_matches_a_second_implementation_on_a_tone():
    signal = noisy(tone(0.5, 440.0) + tone(0.5, 2500.0, 0.2))
    ours, reference = mfcc(signal), reference_mfcc(signal)
    assert ours.shape == (1 + (signal.size - 400) // 160, 13)
    np.testing.assert_allclose(ours, reference, rtol=1e-6, atol=1e-6)


def test_the_loudest_filter_of_a_pure_tone_is_the_one_centred_on_it():
    # physics, not a formula shared with the code: a 1 kHz tone puts its energy in the 1 kHz filter
    from cvbayes.speech.features import _filterbank

    bank = _filterbank(RATE, 512)
    centres = (np.argmax(bank, axis=1)) * RATE / 512
    power = np.abs(np.fft.rfft(tone(0.025, 1000.0)[:400] * np.hamming(400), 512)) ** 2
    assert abs(centres[np.argmax(bank @ power)] - 1000.0) < 100.0


def test_frames_are_25_ms_every_10_ms_and_a_too_short_file_is_refused(tmp_path):
    assert mfcc(np.ones(400)).shape == (1, 13)
    assert mfcc(np.ones(559)).shape == (1, 13) and mfcc(np.ones(560)).shape == (2, 13)
    short = tmp_path / "short.wav"
    write_wav(short, noisy(tone(0.01)))
    with pytest.raises(CorpusFormatError, match="short.wav.*shorter than one"):
        features(short)


# --------------------------------------------------------------------------- #
# Deltas, CMVN, voice activity
# --------------------------------------------------------------------------- #


def test_deltas_of_a_ramp_are_its_slope_and_delta_deltas_vanish_inside():
    t = np.arange(20, dtype=float)
    ramp = np.stack([3 * t + 1, -0.5 * t], axis=1)
    out = add_deltas(ramp)
    assert out.shape == (20, 6)
    np.testing.assert_allclose(out[:, :2], ramp)
    np.testing.assert_allclose(out[2:-2, 2:4], [[3.0, -0.5]] * 16)
    # edges repeated (HTK): at t = 0, (1 (c1 - c0) + 2 (c2 - c0)) / 10 = slope / 2
    np.testing.assert_allclose(out[0, 2:4], [1.5, -0.25])
    np.testing.assert_allclose(out[4:-4, 4:6], 0.0, atol=1e-12)


def test_deltas_follow_the_htk_regression_formula_on_random_cepstra():
    c = np.random.default_rng(1).normal(size=(30, 13))
    padded = np.concatenate([c[:1], c[:1], c, c[-1:], c[-1:]])
    expected = sum(k * (padded[2 + k: 32 + k] - padded[2 - k: 32 - k]) for k in (1, 2)) / 10
    np.testing.assert_allclose(add_deltas(c)[:, 13:26], expected, atol=1e-12)


def test_cmvn_gives_zero_mean_unit_variance_and_leaves_a_constant_dimension_centred():
    x = np.random.default_rng(2).normal(5.0, 3.0, size=(200, 3))
    x[:, 2] = 7.0
    out = cmvn(x)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(out[:, :2].std(axis=0), 1.0)
    assert np.all(out[:, 2] == 0.0)
    np.testing.assert_allclose(cmvn(x, variance=False)[:, :2].std(axis=0), x[:, :2].std(axis=0))


def test_speaker_cmvn_pools_each_speakers_utterances():
    rng = np.random.default_rng(3)
    a1, a2, b = rng.normal(0, 1, (50, 2)), rng.normal(4, 1, (70, 2)), rng.normal(-9, 2, (40, 2))
    out = speaker_cmvn([a1, b, a2], ["a", "b", "a"])
    pooled = np.concatenate([out[0], out[2]])
    np.testing.assert_allclose(pooled.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(pooled.std(axis=0), 1.0)
    raw = np.concatenate([a1, a2])
    np.testing.assert_allclose(out[0], (a1 - raw.mean(axis=0)) / raw.std(axis=0))  # not a1's own statistics
    np.testing.assert_allclose(out[1], cmvn(b))


def test_voice_activity_trims_silence_around_a_tone():
    signal = noisy(np.concatenate([np.zeros(8000), tone(1.0), np.zeros(8000)]).astype(np.float32))
    kept = voice_activity(frame_log_energy(signal), top_db=40, margin=5)
    # the tone starts at 0.5 s (frame 48 is the first whose window reaches it) and ends at 1.5 s (frame 149)
    assert kept.start == pytest.approx(48 - 5, abs=1) and kept.stop == pytest.approx(150 + 5, abs=1)


# --------------------------------------------------------------------------- #
# Readers and their refusals
# --------------------------------------------------------------------------- #


def test_wav_round_trip_and_features_shape(tmp_path):
    path = tmp_path / "a.wav"
    signal = noisy(tone(0.5))
    write_wav(path, signal)
    np.testing.assert_allclose(read_audio(path), signal, atol=1 / 32768)
    out = features(path)
    assert out.shape == (1 + (8000 - 400) // 160, 39)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-9)


def test_stereo_is_averaged_and_another_rate_is_resampled_or_refused(tmp_path):
    left, right = (np.round(noisy(tone(0.5, rate=8000), s) * 32767).astype("<i2") for s in (0, 1))
    stereo = write_pcm(tmp_path / "stereo8k.wav", np.stack([left, right], axis=1).tobytes(), rate=8000, channels=2)
    assert read_audio(stereo, rate=8000) == pytest.approx((left / 32768 + right / 32768) / 2, abs=1e-6)
    assert read_audio(stereo).size == 8000  # 0.5 s at 16 kHz
    with pytest.raises(CorpusFormatError, match=r"stereo8k\.wav: sampled at 8000 Hz, not 16000 Hz"):
        read_audio(stereo, resample=False)


@pytest.mark.parametrize("name, make, message", [
    ("eight.wav", lambda p: write_pcm(p, bytes(range(256)) * 10, width=1), r"eight\.wav: 8-bit PCM"),
    ("empty.wav", lambda p: write_pcm(p, b""), r"empty\.wav: holds no samples"),
    ("silent.wav", lambda p: write_pcm(p, bytes(3200)), r"silent\.wav: silent"),
    ("junk.wav", lambda p: p.write_bytes(b"not a wave file at all"), r"junk\.wav: not a PCM WAV file"),
])
def test_bad_wav_files_are_refused_by_name(tmp_path, name, make, message):
    path = tmp_path / name
    make(path)
    with pytest.raises(CorpusFormatError, match=message):
        read_audio(path)


def write_mfc(path, frames, order=">"):
    values = np.asarray(frames, dtype=f"{order}f4").ravel()
    path.write_bytes(np.array([values.size], dtype=f"{order}i4").tobytes() + values.tobytes())
    return path


def test_mfc_files_are_read_in_either_byte_order_and_get_deltas(tmp_path):
    frames = np.random.default_rng(4).normal(size=(12, 13)).astype(np.float32)
    for order in "<>":
        path = write_mfc(tmp_path / f"x{order == '>'}.mfc", frames, order)
        np.testing.assert_array_equal(read_mfc(path), frames)
        out = features(path, normalise=False)
        assert out.shape == (12, 39)
        np.testing.assert_allclose(out[:, :13], frames)


def test_a_truncated_mfc_file_is_refused_by_name(tmp_path):
    path = write_mfc(tmp_path / "cut.mfc", np.ones((5, 13)))
    path.write_bytes(path.read_bytes()[:-6])
    with pytest.raises(CorpusFormatError, match=r"cut\.mfc: header says 65 float32 values.*truncated"):
        features(path)


# --------------------------------------------------------------------------- #
# Corpora
# --------------------------------------------------------------------------- #


def small_corpus(folder):
    folder.mkdir()
    for i, (speaker, hz) in enumerate([("s1", 300.0), ("s1", 600.0), ("s2", 900.0)]):
        silence = np.zeros(4000, dtype=np.float32)
        write_wav(folder / f"{speaker}_{i}.wav", noisy(np.concatenate([silence, tone(0.3, hz), silence]), i))
    return folder


def test_load_corpus_reads_a_folder_with_speaker_cmvn_and_trimming(tmp_path):
    folder = small_corpus(tmp_path / "corpus")
    corpus = load_corpus(folder, normalise="speaker", speakers=lambda name: name.split("_")[0], trim=True,
                         progress=False)
    names, feats = corpus
    assert names == ["s1_0", "s1_1", "s2_2"] and corpus.speakers == ["s1", "s1", "s2"]
    assert all(f.shape[1] == 39 for f in feats)
    np.testing.assert_allclose(np.concatenate(feats[:2]).mean(axis=0), 0.0, atol=1e-9)
    # 0.25 s of silence, then the tone: trimming starts about 25 frames in (less the 5-frame margin)
    assert corpus.first_frames == [pytest.approx(20, abs=2)] * 3
    assert corpus.frame_times(0)[0] == pytest.approx(corpus.first_frames[0] * 0.01)
    untrimmed = load_corpus(folder, progress=False)
    assert all(len(u) > len(t) for u, t in zip(untrimmed.features, feats)) and untrimmed.first_frames == [0] * 3


def test_load_corpus_takes_a_list_file_and_refuses_empty_folders_and_missing_files(tmp_path):
    folder = small_corpus(tmp_path / "corpus")
    listing = tmp_path / "list.txt"
    listing.write_text("# two of them\ncorpus/s2_2.wav\n\ncorpus/s1_0.wav\n")
    assert load_corpus(listing, progress=False).names == ["s2_2", "s1_0"]
    listing.write_text("corpus/s2_2.wav\ncorpus/nope.wav\n")
    with pytest.raises(CorpusFormatError, match=r"list\.txt, line 2: no such file 'corpus/nope\.wav'"):
        load_corpus(listing, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusFormatError, match=r"empty: no audio here"):
        load_corpus(tmp_path / "empty", progress=False)
    with pytest.raises(ValueError, match="needs speakers"):
        load_corpus(folder, normalise="speaker", progress=False)


@pytest.mark.skipif(not TIDIGITS.is_dir(), reason="TIDIGITS test data not installed "
                    "(apt-get install pocketsphinx-testdata)")
def test_tidigits_is_read_through_the_same_front_end():
    corpus = load_corpus(TIDIGITS, normalise="speaker", speakers=lambda name: ".".join(name.split(".")[:2]),
                         progress=False)
    # 31 utterances as Sphinx cepstra and one (dhd.2934z.raw) as a 16 kHz waveform, through our MFCCs
    assert len(corpus) == 32 and set(corpus.speakers) == {"man.ah", "woman.ak", "dhd.2934z"}
    cepstra = [f for f, p in zip(corpus.features, corpus.paths) if p.suffix == ".mfc"]
    assert len(cepstra) == 31 and sum(len(f) for f in cepstra) == 6761
    assert len(corpus.features[corpus.names.index("dhd.2934z")]) == 1 + (38400 - 400) // 160
    assert all(f.shape[1] == 39 and np.isfinite(f).all() for f in corpus.features)


# --------------------------------------------------------------------------- #
# Alignment files
# --------------------------------------------------------------------------- #


def test_alignment_files_round_trip(tmp_path):
    alignments = {"0001": [Interval(0.0, 0.2, "SIL"), Interval(0.2, 0.2813, "y"), Interval(0.2813, 0.5, "uw")],
                  "0002": [Interval(0.25, 0.75, "look")]}
    path = tmp_path / "gold.phn"
    write_alignments(path, alignments)
    assert path.read_text().splitlines()[1] == "0001 0.200000 0.281300 y"
    assert read_alignments(path) == alignments


@pytest.mark.parametrize("text, message", [
    ("a 0.1 0.2\n", r"line 1: expected 'FILE START END LABEL'"),
    ("a 0.1 x y\n", r"line 1: times must be numbers"),
    ("a 0.3 0.2 y\n", r"line 1: interval 0.3-0.2 ends before it starts"),
    ("a 0 0.3 y\na 0.2 0.4 z\n", r"line 2: interval 0.2-0.4 overlaps"),
])
def test_bad_alignment_lines_are_refused_by_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.wrd"
    path.write_text(text)
    with pytest.raises(CorpusFormatError, match=r"bad\.wrd, " + message):
        read_alignments(path)


@pytest.mark.skipif(not (TIDIGITS.parent / "goforward.raw").is_file(), reason="Sphinx test data not installed "
                    "(apt-get install pocketsphinx-testdata)")
def test_our_mfccs_of_real_speech_follow_sphinxs_own():
    # Sphinx's cepstra of the same recording, from another filterbank (40 filters, 133-6855 Hz): the
    # low-order coefficients must still move together frame by frame
    ours = mfcc(read_audio(TIDIGITS.parent / "goforward.raw"))
    theirs = read_mfc(TIDIGITS.parent / "goforward.mfc")
    n = min(len(ours), len(theirs))
    correlations = [np.corrcoef(ours[:n, k], theirs[:n, k])[0, 1] for k in range(6)]
    assert min(correlations) > 0.8 and correlations[0] > 0.95

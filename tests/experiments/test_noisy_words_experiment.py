"""The noisy-words experiment's parts: the noisy corpus and its gold words, the learned table's reordering, a
tiny run's files."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

from cvbayes.cli import main
from cvbayes.experiments import channel, noisy_words

UTTERANCES = [[tuple("D6"), tuple("dOgi")], [tuple("lUk"), tuple("D6"), tuple("kIti")], [tuple("yu"), tuple("wAt")]]


def test_gold_words_tile_the_surface_and_the_counts_cover_every_phoneme():
    ids = channel.phoneme_ids()
    n = len(ids)
    rng = np.random.default_rng(0)
    true = channel.draw_channel(rng, ids, noise=3.0)
    surface, gold, counts = noisy_words.noisy_corpus(rng, true, UTTERANCES * 30, ids)
    assert len(surface) == len(gold) >= 80
    for symbols, words in zip(surface, gold):
        assert words and all(words) and symbols == [s for word in words for s in word]
    phonemes = sum(len(word) for utterance in UTTERANCES * 30 for word in utterance)
    assert counts[:n].sum() == phonemes       # one emission (kept or deleted) a phoneme
    assert counts[:n, 0].sum() > 0            # some deleted at this noise


def test_learned_table_lands_in_phoneme_order():
    ids = channel.phoneme_ids()
    n = len(ids)
    rng = np.random.default_rng(1)
    model = SimpleNamespace(symbols_=["D", "6"], emission_=rng.random((2, 3)), insertion_=rng.random((3, 3)))
    table = noisy_words.in_phoneme_order(model, ids)
    columns = [0, 1 + ids["D"], 1 + ids["6"]]
    np.testing.assert_array_equal(table[ids["6"], columns], model.emission_[1])
    np.testing.assert_array_equal(table[n + ids["D"], columns], model.insertion_[0])
    np.testing.assert_array_equal(table[2 * n, columns], model.insertion_[2])
    assert table[ids["k"], 1 + ids["k"]] == 1.0 and table[n + ids["k"], 0] == 1.0


def test_a_tiny_run_writes_json_table_and_plot(tmp_path, monkeypatch):
    monkeypatch.setattr(noisy_words, "load_brent", lambda: SimpleNamespace(segments=UTTERANCES * 10))
    rows = noisy_words.run(tmp_path, [0], n_utterances=30, passes=1, quiet=True)
    systems = {row["system"]: row for row in rows}
    for algorithm in ("vb", "cvi"):
        joint = systems[f"grammar with channel (NoisyWords {algorithm})"]
        assert 0.0 <= joint["token_f1"] <= 1.0 and 0.0 <= joint["emission_tv"] <= 1.0 and joint["pass_seconds"] > 0
    assert "grammar without channel (cvi)" in systems
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["settings"]["synthetic_noise"] and len(saved["runs"]) == len(rows)
    assert set(saved["elbo"]["0"]) == {"vb", "cvi"}
    assert "The noise is synthetic" in (tmp_path / "table.md").read_text()
    assert (tmp_path / "noisy_words.png").stat().st_size > 0


def test_a_tiny_colloc_run_fits_noisy_words_colloc_vb_and_cvi_beside_the_channel_free_colloc(tmp_path, monkeypatch):
    monkeypatch.setattr(noisy_words, "load_brent", lambda: SimpleNamespace(segments=UTTERANCES * 10))
    rows = noisy_words.run(tmp_path, [0], n_utterances=30, passes=1, quiet=True, grammar="colloc")
    systems = {row["system"]: row for row in rows}
    for algorithm in ("vb", "cvi"):
        assert 0.0 <= systems[f"grammar colloc with channel (NoisyWords {algorithm})"]["token_f1"] <= 1.0
    assert {"grammar colloc without channel (cvi)", "grammar colloc without channel (vb)"} <= set(systems)
    assert set(json.loads((tmp_path / "results.json").read_text())["elbo"]["0"]) == {"vb", "cvi"}
    assert "the colloc grammar" in (tmp_path / "table.md").read_text()


BUCKEYE = [[("dh", "ah"), ("d", "aa", "g")], [("l", "uh", "k"), ("dh", "ah"), ("k", "ih", "dx", "iy")],
           [("y", "uw"), ("w", "ah", "tq")], [("dh", "ah"), ("d", "aa")]]


def test_a_tiny_buckeye_run_of_short_utterances_lists_the_learned_edits_of_multi_letter_phones(tmp_path, monkeypatch):
    monkeypatch.setattr(noisy_words, "load_buckeye", lambda: SimpleNamespace(segments=BUCKEYE * 15))
    monkeypatch.setattr(noisy_words, "LEAST_TOKENS", 1)
    main(["experiment", "noisy-words", "--corpus", "buckeye", "--utterances", "40", "--max-length", "8", "--passes",
          "1", "--out", str(tmp_path), "--quiet"])
    saved = json.loads((tmp_path / "results.json").read_text())
    systems = {row["system"]: row for row in saved["runs"]}
    for algorithm in ("vb", "cvi"):
        joint = systems[f"grammar with channel (NoisyWords {algorithm})"]
        assert 0.0 <= joint["type_f1"] <= 1.0 and 0.0 <= joint["learned_deletion"] <= 1.0
    assert systems["one word per symbol"]["type_f1"] == 0.0      # no gold word is one phone
    assert saved["settings"]["utterances"] == 40 and saved["settings"]["phones"] == 13 * (5 + 5 + 4) + 5   # no 9
    phones = {phone for utterance in BUCKEYE for word in utterance for phone in word}
    assert saved["top_edits"] and all(edit["from"] in phones and edit["to"] in phones | {""}
                                      for edit in saved["top_edits"])
    table = (tmp_path / "table.md").read_text()
    assert f"| {noisy_words.edit_name(saved['top_edits'][0])} |" in table and "| t -> (deleted) |" in table
    used = [edit["vb_count"] + edit["cvi_count"] for edit in saved["top_edits"]]
    assert used == sorted(used, reverse=True) and used[0] > 0
    assert (tmp_path / "noisy_words.png").stat().st_size > 0


def test_noise_is_refused_for_buckeye_before_anything_is_written(tmp_path):
    with pytest.raises(SystemExit, match="--noise"):
        main(["experiment", "noisy-words", "--corpus", "buckeye", "--noise", "2", "--out", str(tmp_path), "--quiet"])
    assert not any(tmp_path.iterdir())

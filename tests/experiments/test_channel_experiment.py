"""The channel experiment's parts: the true channel, its true edit counts, a seed's run."""
import numpy as np

from cvbayes.chains.edits import sample_surface, scatter_counts
from cvbayes.experiments import channel
from tests.chains.test_edits import edit_sequences


def test_true_channel_and_its_counts():
    ids = channel.phoneme_ids()
    n = len(ids)
    rng = np.random.default_rng(0)
    table = channel.draw_channel(rng, ids)
    assert table.shape == (2 * n + 1, n + 1) and np.all(table >= 0)
    np.testing.assert_allclose(table.sum(axis=1), 1.0)
    table[n:, 0] = 0.6  # insert often, so that the gaps' stops and insertions are both exercised
    table[n:, 1:] *= 0.4 / table[n:, 1:].sum(axis=1, keepdims=True)
    for _ in range(100):
        x = rng.integers(0, n, size=rng.integers(0, 5))
        y, rows = sample_surface(rng, table, x, channel.MAX_INSERTIONS)
        counts = np.zeros_like(table)
        channel._true_counts(x, y, rows, n, counts)
        used = next(used for used, seq in edit_sequences(len(x), len(y), channel.MAX_INSERTIONS)
                    if np.array_equal(np.array(seq, dtype=np.int64).reshape(-1, 2), rows))
        post = np.zeros((2 * len(x) + 1, len(y) + 1))
        for r, c in used:
            post[r, c] += 1
        want = np.zeros_like(table)
        scatter_counts(x, y, n, post, 1.0, want, np.zeros(2 * n + 1))
        np.testing.assert_array_equal(counts, want)


def test_a_seed_recovers_most_of_the_channel():
    words = [tuple("D6"), tuple("dOgi"), tuple("lUk"), tuple("kIti"), tuple("wAt"), tuple("yu")] * 150
    rows, curves = channel.run_seed(words, 0, channel.LEARNERS, 5, quiet=True)
    by_learner = {row["learner"]: row for row in rows}
    identity = by_learner["identity channel"]["emission_tv"]
    for learner in channel.LEARNERS:
        assert by_learner[learner]["emission_tv"] < identity / 2
        assert len(curves[learner]) == 5

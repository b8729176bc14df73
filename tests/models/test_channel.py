"""EditChannel: the edit channel learned by EM, VB and CVI with the alignment latent."""
import numpy as np
import pytest
from sklearn.base import clone

from cvbayes import EditChannel
from cvbayes.chains.edits import DELETE, INSERT, sample_surface, scatter_counts
from cvbayes.core.rules import MEAN
from cvbayes.models.channel import CollapsedChannel, channel_tables
from tests.chains.test_edits import brute

N_SYMBOLS = 5


def true_table(rng, n_symbols=N_SYMBOLS):
    """A channel that keeps each symbol with probability about 0.7, and inserts rarely."""
    table = np.zeros((2 * n_symbols + 1, n_symbols + 1))
    for u in range(n_symbols):
        table[u] = 0.3 * rng.dirichlet(np.full(n_symbols + 1, 0.5))
        table[u, 1 + u] += 0.7
    table[n_symbols:, 0] = 0.9
    table[n_symbols:, 1:] = 0.1 * rng.dirichlet(np.ones(n_symbols), size=n_symbols + 1)
    return table


def noisy_pairs(rng, table, n_pairs, longest=5):
    n_symbols = table.shape[1] - 1
    pairs = []
    for _ in range(n_pairs):
        x = rng.integers(0, n_symbols, size=rng.integers(1, longest + 1))
        pairs.append((x, sample_surface(rng, table, x, 1)[0]))
    return pairs


@pytest.fixture(scope="module")
def channel_data():
    rng = np.random.default_rng(3)
    table = true_table(rng)
    return table, noisy_pairs(rng, table, 800)


@pytest.mark.parametrize("algorithm", ["em", "vb"])
def test_batch_objective_never_decreases(channel_data, algorithm):
    _, pairs = channel_data
    model = EditChannel(algorithm, n_iter=15, n_underlying=N_SYMBOLS, n_surface=N_SYMBOLS).fit(pairs)
    objective = np.array([record.objective for record in model.history_])
    assert np.all(np.diff(objective) >= -1e-8 * np.abs(objective[1:]))
    assert objective[-1] > objective[0] + 1.0


def test_learners_recover_the_channel(channel_data):
    """Total variation between the learned and the true rows below 0.1 for every row (the prior's uniform
    rows are at about 0.7; 800 pairs leave about 0.03-0.06 of sampling error)."""
    table, pairs = channel_data
    for algorithm in ("em", "vb", "cvi"):
        model = EditChannel(algorithm, n_iter=15, n_underlying=N_SYMBOLS, n_surface=N_SYMBOLS).fit(pairs)
        learned = np.vstack([model.emission_, model.insertion_])
        assert learned.shape == table.shape
        np.testing.assert_allclose(learned.sum(axis=1), 1.0)
        assert (0.5 * np.abs(learned - table).sum(axis=1)).max() < 0.1, algorithm


def test_cvi_leaves_the_pair_out(channel_data):
    """After a pass, the last pair's stored expected counts are the exact posteriors (enumerated) under the
    posterior means of everyone else's counts, and the global counts are the sum of the pairs'."""
    _, pairs = channel_data
    pairs = pairs[:60]
    model = EditChannel("cvi", n_underlying=N_SYMBOLS, n_surface=N_SYMBOLS)
    data = model._prepare(pairs)
    structure = CollapsedChannel(data, 1, model.alpha, model.beta, model.start_noise)
    structure.sweep(0)
    x, y = pairs[-1]
    n, m = x.shape[0], y.shape[0]
    mine = structure.local[data.cell_offsets[-2]:].reshape(2 * n + 1, m + 1).astype(float)
    others = structure.counts.copy()
    for r in range(2 * n + 1):
        for c in range(m + 1):
            row = x[r] if r < n else (2 * N_SYMBOLS if r == n else N_SYMBOLS + x[r - n - 1])
            others[row, 0 if c == 0 else 1 + y[c - 1]] -= mine[r, c]
    table = channel_tables(others, MEAN, model.alpha, model.beta)
    w = np.array([[table[x[r] if r < n else (2 * N_SYMBOLS if r == n else N_SYMBOLS + x[r - n - 1]),
                         0 if c == 0 else 1 + y[c - 1]] for c in range(m + 1)] for r in range(2 * n + 1)])
    _, want, _, _ = brute(w, n, m, 1)
    np.testing.assert_allclose(mine, want, atol=1e-6)
    rebuilt, totals = np.zeros_like(structure.counts), np.zeros(structure.counts.shape[0])
    for p, (x, y) in enumerate(pairs):
        local = structure.local[data.cell_offsets[p]:data.cell_offsets[p + 1]].reshape(2 * len(x) + 1, len(y) + 1)
        scatter_counts(np.asarray(x), np.asarray(y), N_SYMBOLS, local, 1.0, rebuilt, totals)
    np.testing.assert_allclose(structure.counts, rebuilt, atol=1e-9)
    np.testing.assert_allclose(structure.totals, totals, atol=1e-9)


def test_align_score_and_files(channel_data, tmp_path):
    table, pairs = channel_data
    model = EditChannel("vb", n_iter=10, n_underlying=N_SYMBOLS, n_surface=N_SYMBOLS).fit(pairs)
    identical = [(np.array([0, 1, 2]), np.array([0, 1, 2]))]
    np.testing.assert_array_equal(model.align(identical)[0], [[0, 0], [1, 1], [2, 2]])
    dropped = model.align([(np.array([0, 1, 2, 3]), np.array([0, 2, 3]))])[0]
    np.testing.assert_array_equal(dropped, [[0, 0], [1, DELETE], [2, 1], [3, 2]])
    added = model.align([(np.array([1]), np.array([1, 1, 4]))])[0]
    assert (added[:, 0] == INSERT).sum() == 2
    scores = model.pair_log_likelihoods(pairs[:20])
    assert np.all(scores < 0) and model.score(pairs[:20]) == pytest.approx(scores.sum())
    path = tmp_path / "channel.npz"
    model.save(path)
    loaded = EditChannel.load(path)
    np.testing.assert_array_equal(loaded.counts_, model.counts_)
    assert loaded.score(pairs[:20]) == pytest.approx(model.score(pairs[:20]))
    assert clone(model).get_params() == model.get_params()


def test_bad_input_is_named():
    model = EditChannel("em", n_iter=2, max_insertions=1)
    with pytest.raises(ValueError, match="pair 1: 4 surface symbols cannot come from 1"):
        model.fit([([0], [0]), ([0], [0, 1, 1, 1])])
    with pytest.raises(ValueError, match="pair 0: y must be a sequence of integer"):
        model.fit([([0], ["a"])])
    with pytest.raises(ValueError, match="pair 0: x has a negative"):
        model.fit([([-1], [0])])
    with pytest.raises(ValueError, match="beyond n_surface=2"):
        EditChannel(n_surface=2).fit([([0], [3])])
    with pytest.raises(ValueError, match="max_insertions"):
        EditChannel(max_insertions=-1)
    with pytest.raises(ValueError, match="unknown algorithm"):
        EditChannel("gibbs")


@pytest.mark.parametrize("algorithm", ["vb", "cvi"])
def test_checkpoint_restores_a_finished_fit(channel_data, tmp_path, algorithm):
    _, pairs = channel_data
    path = tmp_path / "run.ckpt"
    fitted = EditChannel(algorithm, n_iter=3, n_underlying=N_SYMBOLS, n_surface=N_SYMBOLS).fit(pairs[:100],
                                                                                           checkpoint=path)
    again = EditChannel(algorithm, n_iter=3, n_underlying=N_SYMBOLS, n_surface=N_SYMBOLS).fit(pairs[:100],
                                                                                          checkpoint=path)
    np.testing.assert_array_equal(again.counts_, fitted.counts_)

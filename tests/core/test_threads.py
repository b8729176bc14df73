"""Parallel regions get the threads their work is worth (issue 34, finding 2).

A parallel region with little work per chunk made SVI and SCVI 7-35x slower on a loaded 2-core
machine: every minibatch's E-step woke a second thread and waited for it.  The rule is
`cvbayes.core.units.n_threads_for`; `parallel_over_chunks` runs a region on as many threads as it has
chunks.  These tests pretend numba has two threads, whatever NUMBA_NUM_THREADS says, and record the
thread counts the kernels ask for instead of setting them.
"""
import numpy as np
import pytest

import cvbayes
from cvbayes.core import units
from cvbayes.core.units import MIN_WORK_PER_THREAD, cubic_chunks, equal_token_chunks
from cvbayes.metrics.topics import _score
from cvbayes.models import hmm_structures
from cvbayes.models.hmm_kernels import chain_expectations
from cvbayes.synthetic import sample_categorical_hmm


@pytest.fixture
def two_threads(monkeypatch):
    """numba with two threads; the list of the thread counts the kernels set."""
    asked = []
    monkeypatch.setattr(units, "get_num_threads", lambda: 2)
    monkeypatch.setattr(units, "set_num_threads", asked.append, raising=False)
    return asked


def _planted(n_sentences, seed=0):
    rng = np.random.default_rng(seed)
    k, w = 5, 50
    return sample_categorical_hmm(rng.dirichlet(np.ones(k)), rng.dirichlet(np.full(k, 0.3), k),
                                  rng.dirichlet(np.full(w, 0.2), k), 1 + rng.poisson(19, n_sentences), seed=seed)


def _scvi(corpus, monkeypatch):
    """An SCVI pass at K = 45 and the default minibatch of 100 sentences: the objectives and the
    chunk count of every minibatch's E-step."""
    chunks = []

    def spy(*args):
        chunks.append(args[17].shape[0] - 1)
        return chain_expectations(*args)

    monkeypatch.setattr(hmm_structures, "chain_expectations", spy)
    model = cvbayes.HMM(n_states=45, algorithm="scvi", n_iter=1, random_state=3, batch_size=100).fit(corpus)
    return [record.objective for record in model.history_], chunks


def test_scvi_minibatches_run_on_one_thread(two_threads, monkeypatch):
    """100 sentences of about 20 tokens at K = 45 are 4M steps, under the 2 x 10M that a second
    thread needs: one chunk, run with one thread (main split every minibatch in two)."""
    _, chunks = _scvi(_planted(300), monkeypatch)
    assert len(chunks) == 3 and set(chunks) == {1}
    assert two_threads[:2] == [1, 2]  # one thread for the call, numba's two back after it


def test_large_regions_still_use_every_thread(two_threads):
    tokens = np.arange(0, 20 * 1000 + 1, 20)  # 1,000 sentences of 20 tokens
    assert equal_token_chunks(tokens, 45 ** 2).shape[0] - 1 == 2  # 40M steps: the EM E-step
    assert equal_token_chunks(tokens[:101], 45 ** 2).shape[0] - 1 == 1
    assert equal_token_chunks(tokens, 1.0).shape[0] - 1 == 1
    sentences = np.arange(0, 15 * 200 + 1, 15)  # 200 sentences of 15 words: 675k T^3 in all
    assert cubic_chunks(sentences, 10).shape[0] - 1 == 1
    assert cubic_chunks(sentences, 1000).shape[0] - 1 == 2
    # the split is at equal work, and a chunk's work is at least the threshold
    bounds = equal_token_chunks(tokens, 45 ** 2)
    assert bounds.tolist() == [0, 500, 1000]
    assert 500 * 20 * 45 ** 2 >= MIN_WORK_PER_THREAD


def test_a_region_runs_on_as_many_threads_as_chunks(two_threads):
    rng = np.random.default_rng(1)
    doc_start = np.array([0, 3, 6], dtype=np.int64)
    entry_word = rng.integers(0, 4, 6).astype(np.int32)
    entry_count = np.ones(6)
    phi, theta = rng.dirichlet(np.ones(4), 3).T.copy(), rng.dirichlet(np.ones(3), 2)
    one = _score(doc_start, entry_word, entry_count, phi, theta, np.array([0, 2], dtype=np.int64))
    assert two_threads == [1, 2]
    two = _score(doc_start, entry_word, entry_count, phi, theta, np.array([0, 1, 2], dtype=np.int64))
    assert two_threads == [1, 2]  # two chunks: numba's two threads, nothing set
    assert one == pytest.approx(two, rel=1e-12)


def test_the_chunk_count_changes_only_rounding(two_threads, monkeypatch):
    corpus = _planted(200, seed=4)
    serial, serial_chunks = _scvi(corpus, monkeypatch)
    monkeypatch.setattr(units, "MIN_WORK_PER_THREAD", 1)
    split, split_chunks = _scvi(corpus, monkeypatch)
    assert set(serial_chunks) == {1} and set(split_chunks) == {2}
    np.testing.assert_allclose(split, serial, rtol=1e-10)


def test_frame_regions_get_threads_by_the_same_rule(two_threads):
    """A ``prange`` over frames (the acoustic units' emission rows) runs inside `threads_for`: one
    thread below twice the threshold, numba's two from there on, and numba's count back after."""
    with units.threads_for(10_000, 2 * MIN_WORK_PER_THREAD - 1):
        pass
    with units.threads_for(10_000, 2 * MIN_WORK_PER_THREAD):
        pass
    with units.threads_for(1, 10 * MIN_WORK_PER_THREAD):  # one frame cannot be split
        pass
    assert two_threads == [1, 2, 1, 2]

"""The HDP-HMM's merge moves (merge="auto", models/hdp.py `MergingSweep`): the merge of statistics, the
score that ranks pairs, the acceptance rule, and a planted duplicated state."""
import numpy as np
import pytest

from cvbayes.checkpoints import NO_CHECKPOINT
from cvbayes.data import Corpus
from cvbayes.models import hdp
from cvbayes.models.hdp_hmm import HDPHMM
from cvbayes.models.hmm_kernels import unit_totals
from cvbayes.schedules import Run
from cvbayes.synthetic import sample_categorical_hmm

# three sticky states, each emitting two of six words of its own
TRANS = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])
EMIT = np.kron(np.eye(3), np.full((1, 2), 0.5))


def _planted(n_sequences=40, length=50, seed=3):
    return sample_categorical_hmm(np.full(3, 1 / 3), TRANS, EMIT, [length] * n_sequences, seed=seed)


def _duplicated_start():
    """The true HMM with its first state copied: states 0 and 1 alike, each with half of every
    transition into the original."""
    trans = np.zeros((4, 4))
    trans[:, [0, 1]] = TRANS[[0, 0, 1, 2]][:, [0]] / 2
    trans[:, 2:] = TRANS[[0, 0, 1, 2]][:, 1:]
    return {"startprob": np.full(4, 0.25), "transmat": trans, "emissionprob": EMIT[[0, 0, 1, 2]]}


def _sweep(model, corpus, passes):
    """The model's batch CVI sweep after ``passes`` passes."""
    training = model._prepare(corpus)
    run = Run("cvi", model.ALGORITHMS["cvi"], passes, 0, np.random.default_rng(0), NO_CHECKPOINT)
    sweep = model._collapsed(training, run)
    for iteration in range(passes):
        sweep.sweep(iteration)
        sweep.after_pass(iteration)
    return sweep


def test_merging_two_states_keeps_the_counts_the_sums_of_the_local_statistics():
    corpus = _planted(n_sequences=8, length=20)
    sweep = _sweep(HDPHMM(4, learn_concentrations=False, init="local"), corpus, 2)
    start, trans, stats = (array.copy() for array in sweep.current())
    sweep.merge_states(1, 3)
    merged_start, merged_trans, merged_stats = sweep.current()
    # the global counts: state 3's added to state 1's, as source and as target
    expected = trans.copy()
    expected[1] += expected[3]
    expected[:, 1] += expected[:, 3]
    expected[3] = expected[:, 3] = 0.0
    np.testing.assert_allclose(merged_trans, expected, rtol=1e-12)
    np.testing.assert_allclose(merged_start[[0, 1, 2]], [start[0], start[1] + start[3], start[2]], rtol=1e-12)
    np.testing.assert_allclose(merged_stats[:, 1], stats[:, 1] + stats[:, 3], rtol=1e-12)
    assert not merged_stats[:, 3].any() and not sweep.marginals[:, 3].any() and not sweep.internal[:, 3].any()
    # ... and still the sums of the units' local statistics (what leave-one-out takes out and puts back)
    again_start, again_trans = unit_totals(sweep.offsets, sweep.is_first, sweep.marginals, sweep.internal,
                                           sweep.boundary)
    np.testing.assert_allclose(again_start, merged_start, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(again_trans, merged_trans, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(sweep.units.token_stats(sweep.marginals), merged_stats, rtol=1e-5, atol=1e-4)
    assert np.isfinite(sweep.sweep(2))


def _urn_log_probability(draws_by_row, prior, total):
    """log p of the draws of every row by the Polya urn: draw n of a row has probability
    (prior_k + n_k) / (total + n), the Dirichlet-multinomial of eq. 3.24 and 5.10 one draw at a time."""
    log_p = 0.0
    for draws in draws_by_row:
        seen = np.zeros(len(prior))
        for n, k in enumerate(draws):
            log_p += np.log((prior[k] + seen[k]) / (total + n))
            seen[k] += 1
    return log_p


def test_merge_gain_is_the_change_of_the_collapsed_log_probability_of_hard_counts():
    """On one hard state path, `merge_gain` equals log p(x, z') - log p(x, z) by the Polya urn, z' the
    path with state 3 relabelled 1."""
    rng = np.random.default_rng(5)
    n_states, n_words = 4, 3
    model = HDPHMM(n_states, sigma=2.0, beta=0.7, learn_concentrations=False)
    words = rng.integers(0, n_words, 12)
    words[:n_words] = np.arange(n_words)
    path = rng.integers(0, n_states, 12)
    parts = model._parts()
    parts.family.prepare(Corpus(words.astype(np.int32), np.array([0, 12])), n_states)
    prior, total = parts.transitions.prior()

    def counts(states):
        start = np.bincount(states[:1], minlength=n_states).astype(float)
        trans = np.zeros((n_states, n_states))
        np.add.at(trans, (states[:-1], states[1:]), 1.0)
        stats = np.zeros((n_words + 1, n_states))
        np.add.at(stats, (words, states), 1.0)
        stats[-1] = np.bincount(states, minlength=n_states)
        return start, trans, stats

    def urn(states, row_prior):
        rows = [[states[0]]] + [[b for a, b in zip(states[:-1], states[1:]) if a == j] for j in range(n_states)]
        emitted = [[w for w, s in zip(words, states) if s == k] for k in range(n_states)]
        return (_urn_log_probability(rows, row_prior, total)
                + _urn_log_probability(emitted, np.full(n_words, 0.7), 0.7 * n_words))

    merged = np.where(path == 3, 1, path)
    merged_prior = prior.copy()
    merged_prior[1] += merged_prior[3]
    merged_prior[3] = 0.0
    expected = urn(merged, merged_prior) - urn(path, prior)
    assert hdp.merge_gain(parts, counts(path), 1, 3) == pytest.approx(expected, rel=1e-10, abs=1e-10)


def test_the_merge_recovers_a_duplicated_state_and_no_accepted_merge_lowers_the_objective():
    """From the true three-state HMM with one state copied, plain CVI keeps both copies (they stay
    alike), while merge="auto" merges them into the true three states; every kept merge's pass has an
    objective at least the unmerged pass's, and every refused one's pass is the unmerged one."""
    corpus = _planted()
    fitted = {}
    for merge in (None, "auto"):
        model = HDPHMM(4, learn_concentrations=False, init=_duplicated_start(), merge=merge, n_iter=30)
        fitted[merge] = model.fit(corpus)
    assert fitted[None].n_effective_states_ == 4
    model = fitted["auto"]
    assert model.n_effective_states_ == 3
    decoded = model.decode(corpus)
    agreement = np.zeros((3, 4))
    np.add.at(agreement, (corpus.gold, decoded), 1)
    assert agreement.max(axis=1).sum() / corpus.n_tokens > 0.95
    tried = [(model.history_[pass_].objective, record["merges"])
             for pass_, record in enumerate(model.hyper_history_) if "merges" in record]
    assert any(trial["accepted"] for _, trials in tried for trial in trials)
    for objective, trials in tried:
        *refused, last = trials
        assert all(trial["objective"] < trial["objective_without"] and not trial["accepted"] for trial in refused)
        if last["accepted"]:
            assert objective == last["objective"] >= last["objective_without"]
        else:
            assert objective == last["objective_without"] > last["objective"]


def test_merge_is_an_option_of_batch_cvi():
    with pytest.raises(ValueError, match="merge must be"):
        HDPHMM(4, merge="always")
    with pytest.raises(ValueError, match="batch CVI"):
        HDPHMM(4, merge="auto", algorithm="scvi")


class _Stop(Exception):
    pass


def test_a_fit_with_merges_resumes_from_its_checkpoint_as_the_uninterrupted_fit(tmp_path):
    corpus = _planted(n_sequences=20)

    def model():
        return HDPHMM(4, learn_concentrations=False, init=_duplicated_start(), merge="auto", n_iter=25)

    whole = model().fit(corpus)
    assert any(trial["accepted"] for record in whole.hyper_history_ for trial in record.get("merges", []))

    def stop(fitted, iteration):
        if iteration == 14:   # the callback runs before the save: 14 passes saved, between the merge steps
            raise _Stop

    path = tmp_path / "run.ckpt"
    with pytest.raises(_Stop):
        model().fit(corpus, checkpoint=path, callback=stop)
    resumed = model().fit(corpus, checkpoint=path)
    assert resumed.resumed_from_ == 14
    assert [r.objective for r in resumed.history_] == [r.objective for r in whole.history_]
    assert resumed.hyper_history_ == whole.hyper_history_
    np.testing.assert_array_equal(resumed.counts_.trans, whole.counts_.trans)

"""The HDP-HMM's merge and delete moves (merge="auto", models/hdp.py `MovingSweep`): the merge and the
delete of statistics, the score that ranks pairs, the pass after a move (against a brute-force CVI-2
pass), the collapsed bound the moves are judged by (against the Polya urn), the acceptance rule, and a
planted duplicated state."""
import numpy as np
import pytest

from cvbayes.checkpoints import NO_CHECKPOINT
from cvbayes.data import Corpus, as_corpus
from cvbayes.models import hdp
from cvbayes.models.hdp_hmm import HDPHMM
from cvbayes.models.hmm_kernels import unit_totals
from cvbayes.schedules import Run
from cvbayes.synthetic import sample_categorical_hmm
from tests.brute import chain_posterior

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
    # the bound moves are judged by: log p(x, z) itself on a hard path (q's entropy is zero) ...
    hard = np.eye(n_states)[path]
    assert hdp.collapsed_bound(parts, counts(path), hard) == pytest.approx(urn(path, prior), rel=1e-10)
    # ... plus every token's entropy on soft ones
    soft = 0.7 * hard + 0.3 * np.eye(n_states)[(path + 1) % n_states]
    entropy = -12 * (0.7 * np.log(0.7) + 0.3 * np.log(0.3))
    assert hdp.collapsed_bound(parts, counts(path), soft) == pytest.approx(
        hdp.log_joint(parts, counts(path)) + entropy, rel=1e-10)


def test_deleting_a_state_keeps_the_counts_the_sums_of_the_local_statistics():
    corpus = _planted(n_sequences=8, length=20)
    for subchain_length in (None, 7):   # whole sequences (CVI-2), and subchains with boundary pairs (CVI-3)
        model = HDPHMM(4, learn_concentrations=False, init="local", subchain_length=subchain_length)
        sweep = _sweep(model, corpus, 2)
        start, trans, stats = (array.copy() for array in sweep.current())
        marginals = sweep.marginals.copy()
        sweep.delete_state(2)
        deleted_start, deleted_trans, deleted_stats = sweep.current()
        assert not sweep.marginals[:, 2].any() and not deleted_stats[:, 2].any()
        assert not deleted_trans[2].any() and not deleted_trans[:, 2].any() and deleted_start[2] == 0.0
        assert not sweep.internal[:, 2].any() and not sweep.internal[:, :, 2].any()
        assert not sweep.boundary[:, 2].any() and not sweep.boundary[:, :, 2].any()
        # every token keeps its mass; each unit gives state 2's to the others in proportion to the overlap
        # sum_t q(z_t = 2) q(z_t = k)
        np.testing.assert_allclose(sweep.marginals.sum(axis=1), 1.0, rtol=1e-5)
        for begin, end in zip(sweep.offsets[:-1], sweep.offsets[1:]):
            own = marginals[begin:end]
            share = (own * own[:, 2:3]).sum(axis=0)[[0, 1, 3]]
            np.testing.assert_allclose(sweep.marginals[begin:end, [0, 1, 3]],
                                       own[:, [0, 1, 3]] + own[:, 2:3] * share / share.sum(), rtol=1e-4, atol=1e-6)
        assert deleted_trans.sum() == pytest.approx(trans.sum(), rel=1e-5)
        assert deleted_start.sum() == pytest.approx(start.sum(), rel=1e-5)
        np.testing.assert_allclose(deleted_stats.sum(axis=1), stats.sum(axis=1), rtol=1e-5)
        again_start, again_trans = unit_totals(sweep.offsets, sweep.is_first, sweep.marginals, sweep.internal,
                                               sweep.boundary)
        np.testing.assert_allclose(again_start, deleted_start, rtol=1e-12)
        np.testing.assert_allclose(again_trans, deleted_trans, rtol=1e-12)
        assert np.isfinite(sweep.sweep(2))


def test_deleting_a_state_of_hard_paths_relabels_it_in_each_sequence():
    """On hard state paths a delete is a merge into the sequence's other state: a sequence on states 0 and
    2 gets the path with 2 relabelled 0, one on 1 and 2 the path with 2 relabelled 1."""
    sweep = _sweep(HDPHMM(3, learn_concentrations=False, init="local"), as_corpus([[0, 1, 1, 2], [2, 0, 1, 1]]), 1)
    paths = [np.array([0, 2, 2, 0]), np.array([2, 2, 1, 1])]
    relabelled = [np.array([0, 0, 0, 0]), np.array([1, 1, 1, 1])]

    def hard(paths):
        marginals = np.eye(3, dtype=np.float32)[np.concatenate(paths)]
        internal = np.zeros((2, 3, 3), dtype=np.float32)
        for unit, path in enumerate(paths):
            np.add.at(internal[unit], (path[:-1], path[1:]), 1.0)
        return marginals, internal

    sweep.marginals[...], sweep.internal[...] = hard(paths)
    sweep.delete_state(2)
    want_marginals, want_internal = hard(relabelled)
    np.testing.assert_array_equal(sweep.marginals, want_marginals)
    np.testing.assert_array_equal(sweep.internal, want_internal)
    np.testing.assert_array_equal(sweep.trans_counts, want_internal.sum(axis=0))


SEQUENCES = [[0, 1, 1, 2], [2, 2, 0, 1], [1, 0, 0, 2]]
BETA = 0.5


def _enumerated_pass(sweep):
    """One CVI-2 pass over the sequences in order, every q(z^i) and log Z_i by enumerating the paths under
    the leave-one-sequence-out surrogate of eq. 5.38-5.39 (prior sigma G[pi] of the sticks, Dir(BETA)
    emissions): the sum of log Z, the pass's objective, the marginals it leaves and its `collapsed_bound`
    (the sweep's statistics are left as they were)."""
    prior, total = sweep.parts.transitions.prior()
    n_states = prior.shape[0]
    marginals, internal = sweep.marginals.astype(float), sweep.internal.astype(float)
    # the global counts as the sums of the local statistics; the sweep's own must agree
    start = marginals[sweep.offsets[:-1]].sum(axis=0)
    trans = internal.sum(axis=0)
    emit = np.zeros((n_states, sweep.stats.shape[0] - 1))
    np.add.at(emit.T, np.concatenate(SEQUENCES), marginals)
    np.testing.assert_allclose(sweep.start_counts, start, atol=1e-5)
    np.testing.assert_allclose(sweep.trans_counts, trans, atol=1e-5)
    np.testing.assert_allclose(sweep.stats[:-1].T, emit, atol=1e-5)
    objective = 0.0
    for i, words in enumerate(SEQUENCES):
        own = slice(sweep.offsets[i], sweep.offsets[i + 1])
        start -= marginals[own][0]
        trans -= internal[i]
        np.subtract.at(emit.T, words, marginals[own])
        theta_start = (start + prior) / (start.sum() + total)
        theta = (trans + prior) / (trans.sum(axis=1, keepdims=True) + total)
        phi = (emit + BETA) / (emit.sum(axis=1, keepdims=True) + BETA * emit.shape[1])
        log_z, marginals[own], internal[i] = chain_posterior(theta_start, theta, phi[:, words].T)
        objective += log_z
        start += marginals[own][0]
        trans += internal[i]
        np.add.at(emit.T, words, marginals[own])
    assert internal.shape == (len(SEQUENCES), n_states, n_states)
    stats = np.vstack([emit.T, emit.sum(axis=1)])
    return objective, marginals, hdp.collapsed_bound(sweep.parts, (start, trans, stats), marginals)


@pytest.mark.parametrize("move", ["merge", "delete"])
def test_the_pass_after_a_move_is_the_enumerated_cvi_pass_from_the_moved_statistics(move):
    """The objective a move is judged by, the sum of log Z over a pass (eq. 5.37-5.39), computed by the
    kernels from the merged (under the merged prior weight) or deleted statistics, equals enumerating
    every path of every sequence."""
    model = HDPHMM(3, sigma=2.0, beta=BETA, learn_concentrations=False, init="local")
    sweep = _sweep(model, as_corpus(SEQUENCES), 2)
    if move == "merge":
        sweep.merge_states(0, 2)
        sweep.parts.transitions.merged = 0, 2
    else:
        sweep.delete_state(1)
    expected, marginals, _ = _enumerated_pass(sweep)
    assert sweep.sweep(2) == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(sweep.marginals, marginals, atol=1e-5)


def test_a_moving_pass_keeps_the_move_of_the_highest_collapsed_bound():
    """Every pass tries the moves (every = 1, no confirming passes); each trial's objective and collapsed
    bound are those of the enumerated pass from its moved statistics, the pass keeps the trial of the
    highest bound when that is no lower than the plain pass's (else the plain pass) and reports that
    pass's own objective, and the next pass starts from the statistics that pass left."""
    model = HDPHMM(3, sigma=2.0, beta=BETA, learn_concentrations=False, init="local")
    inner = _sweep(model, as_corpus(SEQUENCES), 1)
    moving = hdp.MovingSweep(inner, every=1, merge_tries=3, delete_tries=3, confirm=0)
    kept, tried = set(), set()
    for iteration in range(1, 6):
        before = inner.snapshot()
        plain = _enumerated_pass(inner)
        expected = []
        for kind, keep, gone, _ in moving.proposals():
            inner.restore(before)
            moving.apply(kind, keep, gone)
            expected.append(_enumerated_pass(inner))
            inner.parts.transitions.merged = None
        inner.restore(before)
        objective = moving.sweep(iteration)
        trials = moving.trials
        assert [t["objective"] for t in trials] == pytest.approx([value for value, _, _ in expected], rel=1e-6)
        assert [t["bound"] for t in trials] == pytest.approx([bound for _, _, bound in expected], rel=1e-6)
        assert all(t["objective_without"] == pytest.approx(plain[0], rel=1e-6) for t in trials)
        assert all(t["bound_without"] == pytest.approx(plain[2], rel=1e-6) for t in trials)
        best = max([plain] + expected, key=lambda result: result[2])
        assert objective == pytest.approx(best[0], rel=1e-6) and best[2] >= plain[2]
        np.testing.assert_allclose(inner.marginals, best[1], atol=1e-5)
        accepted = [t for t in trials if t["accepted"]]
        assert len(accepted) == (best is not plain)
        kept.update(t["move"] for t in accepted)
        tried.update(t["move"] for t in trials)
        moving.after_pass(iteration)
    assert tried == {"merge", "delete"} and kept, "no move was kept: the test checks nothing of the acceptance"


def test_the_moves_recover_a_duplicated_state_and_every_kept_move_raises_the_bound():
    """From the true three-state HMM with one state copied, plain CVI keeps both copies (they stay
    alike), while merge="auto" merges or deletes one into the true three states; every kept move has a
    collapsed bound at least the plain pass's, the highest of the pass's trials, and still leads after
    the confirming passes, and its pass reports its own objective; a pass that keeps none is the plain
    pass."""
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
    tried = [(model.history_[pass_].objective, record["moves"])
             for pass_, record in enumerate(model.hyper_history_) if "moves" in record]
    assert any(trial["accepted"] for _, trials in tried for trial in trials)
    for objective, trials in tried:
        kept = [trial for trial in trials if trial["accepted"]]
        assert len(kept) <= 1
        plain, plain_bound = trials[0]["objective_without"], trials[0]["bound_without"]
        best = max(trials, key=lambda trial: trial["bound"])
        if kept:
            assert kept == [best] and objective == best["objective"] and best["bound"] >= plain_bound
            assert best["lead_later"] >= 0.0
        else:   # none led the plain pass, or the best no longer did after the confirming passes
            assert objective == plain and (best["bound"] < plain_bound or best["lead_later"] < 0.0)


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
    assert any(trial["accepted"] for record in whole.hyper_history_ for trial in record.get("moves", []))

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


def test_a_move_that_no_longer_leads_after_the_confirming_passes_is_not_kept(monkeypatch):
    """The best one-pass move is kept only if it leads the plain pass's state after ``confirm`` more
    passes from each; here the later comparison is made to say it does not, and the pass is the plain one."""
    model = HDPHMM(3, sigma=2.0, beta=BETA, learn_concentrations=False, init="local")
    inner = _sweep(model, as_corpus(SEQUENCES), 1)
    leads = []
    for lead in (-1.0, 0.0):
        moving = hdp.MovingSweep(inner, every=1, confirm=2)
        before = inner.snapshot()
        plain = _enumerated_pass(inner)
        monkeypatch.setattr(moving, "lead_later", lambda *args: lead)
        objective = moving.sweep(1)
        best = max(moving.trials, key=lambda trial: trial["objective"])
        assert best["objective"] >= plain[0], "no move led the plain pass: the test checks nothing"
        if lead < 0:
            assert objective == pytest.approx(plain[0], rel=1e-6) and not any(t["accepted"] for t in moving.trials)
            np.testing.assert_allclose(inner.marginals, plain[1], atol=1e-5)
        else:
            assert objective == best["objective"] and best["accepted"]
        leads.append(best.get("lead_later"))
        inner.restore(before)
    assert leads == [-1.0, 0.0]


def test_the_confirming_passes_compare_the_moved_and_the_plain_states_later():
    """`MovingSweep.lead_later` is the moved state's collapsed bound minus the plain one's after the last of
    the confirming passes, each enumerated."""
    model = HDPHMM(3, sigma=2.0, beta=BETA, learn_concentrations=False, init="local")
    inner = _sweep(model, as_corpus(SEQUENCES), 1)
    moving = hdp.MovingSweep(inner, every=1, confirm=2)
    plain_state = inner.snapshot()
    moving.apply("delete", None, 0)
    moved_state = inner.snapshot()
    later = []
    for state in (moved_state, plain_state):
        inner.restore(state)
        inner.sweep(1)
        later.append(_enumerated_pass(inner)[2])   # the bound after the second pass, enumerated
    assert moving.lead_later(plain_state, moved_state, 1) == pytest.approx(later[0] - later[1], rel=1e-6, abs=1e-6)

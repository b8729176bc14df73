"""Single updates of every algorithm against brute-force enumeration on tiny data."""
import itertools

import numpy as np
import pytest

import cvbayes
from tests.brute import chain_posterior, collapsed_log_joint, corpus_expectations, counts_without
from cvbayes.core import rules
from cvbayes.core.sampling import seed_numba
from cvbayes.data import Corpus
from cvbayes.families.ops import state_stats
from cvbayes.models.hmm_kernels import (factorised_transitions, gibbs_pass, hard_transitions,
                                        subchain_pass, subchain_state, subchain_workspace, token_pass, token_state,
                                        token_workspace, unit_totals)
from cvbayes.models.hmm_structures import ChainData


def mode(counts, prior):
    return rules.dirichlet_table(rules.MAP, counts, prior)


def mean(counts, prior):
    return rules.dirichlet_table(rules.MEAN, counts, prior)

SEQUENCES = [np.array([0, 2, 1, 2]), np.array([1, 1]), np.array([2, 0, 0]), np.array([3])]
K, W = 3, 4


def tiny_params(seed=0):
    rng = np.random.default_rng(seed)
    return dict(startprob=rng.dirichlet(np.ones(K)), transmat=rng.dirichlet(np.ones(K), size=K),
                emissionprob=rng.dirichlet(np.ones(W), size=K))


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (2.0, 1.5), (0.5, 0.3)])
def test_one_em_step_matches_enumeration(alpha, beta):
    init = tiny_params()
    model = cvbayes.HMM(K, alpha=alpha, beta=beta, algorithm="em", n_iter=1, init=init).fit(SEQUENCES)
    start_c, trans_c, emit_c, log_lik = corpus_expectations(init["startprob"], init["transmat"],
                                                             init["emissionprob"], SEQUENCES)
    np.testing.assert_allclose(model.startprob_, mode(start_c, alpha))
    np.testing.assert_allclose(model.transmat_, mode(trans_c, alpha))
    np.testing.assert_allclose(model.emissionprob_, mode(emit_c, beta))
    log_prior = sum(max(a - 1, 0) * np.log(p).sum() for a, p in
                    [(alpha, init["startprob"]), (alpha, init["transmat"]), (beta, init["emissionprob"])])
    assert model.history_[0].objective == pytest.approx(log_lik + log_prior)
    if alpha == beta == 1.0:  # MAP under a flat prior is the MLE of eq. 3.18-3.19
        np.testing.assert_allclose(model.transmat_, trans_c / trans_c.sum(1, keepdims=True))


def test_one_vb_step_matches_enumeration():
    init = tiny_params(1)
    alpha, beta = 0.5, 0.2
    model = cvbayes.HMM(K, alpha=alpha, beta=beta, algorithm="vb", n_iter=1, init=init).fit(SEQUENCES)
    # the init dict gives the first counts; one VB iteration then runs on exp E[log theta] (eq. 3.21-3.22)
    start_c, trans_c, emit_c, _ = corpus_expectations(init["startprob"], init["transmat"],
                                                       init["emissionprob"], SEQUENCES)
    tilde = [rules.dirichlet_table(rules.VB, c, a) for c, a in
             [(start_c, alpha), (trans_c, alpha), (emit_c, beta)]]
    start2, trans2, emit2, log_lik = corpus_expectations(*tilde, SEQUENCES)
    np.testing.assert_allclose(model.startprob_, mean(start2, alpha))
    np.testing.assert_allclose(model.transmat_, mean(trans2, alpha))
    np.testing.assert_allclose(model.emissionprob_, mean(emit2, beta))
    kl = (rules.dirichlet_kl(start_c, alpha) + rules.dirichlet_kl(trans_c, alpha)
          + rules.dirichlet_kl(emit_c, beta))
    assert model.history_[0].objective == pytest.approx(log_lik - kl)


def exact_log_evidence(sequences, n_states, n_symbols, alpha, beta):
    """log p(x | alpha, beta) by summing the collapsed joint over every z."""
    n_tokens = sum(len(x) for x in sequences)
    joints = [collapsed_log_joint(np.array(z), sequences, n_states, n_symbols, alpha, beta)
              for z in itertools.product(range(n_states), repeat=n_tokens)]
    return np.logaddexp.reduce(joints), np.array(joints)


def test_vb_elbo_is_a_lower_bound_on_the_exact_evidence():
    sequences = [np.array([0, 1, 1]), np.array([1, 0]), np.array([0, 0, 1])]
    log_evidence, _ = exact_log_evidence(sequences, 2, 2, 0.7, 0.4)
    model = cvbayes.HMM(2, alpha=0.7, beta=0.4, algorithm="vb", n_iter=40, random_state=3).fit(sequences)
    elbo = model.history_[-1].objective
    assert elbo <= log_evidence + 1e-9
    # two exchangeable states cost mean field at least log 2 (it keeps one
    # labelling); more than a few nats on 8 tokens would mean a wrong KL term
    assert elbo > log_evidence - 3.5


def start_state(sequences, seed=0):
    """Random local posteriors of a tiny corpus, laid out for the kernels."""
    corpus = Corpus.from_sequences(sequences)
    model = cvbayes.HMM(K, alpha=0.4, beta=0.3)
    model.family.prepare(corpus, K)
    data = ChainData(model._parts(), corpus)
    marginals, local_pairs = data.local_posteriors(None, seed, keep_pairs=True)
    return model, data, marginals, local_pairs


def sequence_state(model, data, marginals, local_pairs, prior_row, prior_total, occupancy=None):
    """CVI-2's unit state: every unit a whole sequence, with the global counts of the local statistics."""
    is_first = np.ones(data.n_chains, dtype=bool)
    no_boundaries = np.zeros((0, model.n_states, model.n_states), dtype=np.float32)
    start_c, trans_c = unit_totals(data.offsets, is_first, marginals, local_pairs, no_boundaries)
    return subchain_state(data.emissions(), prior_row, prior_total, data.offsets, is_first, start_c, trans_c,
                          data.token_stats(marginals), marginals, local_pairs, no_boundaries,
                          subchain_workspace(data.offsets, model.n_states), occupancy)


def test_one_cvi2_sequence_update_matches_enumeration():
    model, data, marginals, local_pairs = start_state(SEQUENCES)
    alpha, beta = model.alpha, model.beta
    state = sequence_state(model, data, marginals, local_pairs, np.full(K, alpha), K * alpha)
    start_c, trans_c, stats = state[5], state[6], state[7]
    # everyone else's expected counts, then the surrogate parameters of eq. 3.49-3.50
    seq = 0
    begin, end = data.offsets[seq], data.offsets[seq + 1]
    own = marginals[begin:end].astype(float)
    other_start, other_trans, other_emit = counts_without(SEQUENCES[seq], own, local_pairs[seq], start_c, trans_c,
                                                          stats)
    theta_start = mean(other_start, alpha)
    theta = mean(other_trans, alpha)
    phi = mean(other_emit, beta)
    log_z, want_marg, want_pairs = chain_posterior(theta_start, theta, phi[:, SEQUENCES[seq]].T)

    objective, bad = subchain_pass(state, np.array([seq]))
    assert bad == -1
    assert objective == pytest.approx(log_z, rel=1e-9)
    np.testing.assert_allclose(marginals[begin:end], want_marg, atol=1e-6)
    np.testing.assert_allclose(local_pairs[seq], want_pairs, atol=1e-6)
    # the new local counts were added back into the global ones
    np.testing.assert_allclose(trans_c, other_trans + local_pairs[seq], atol=1e-12)
    np.testing.assert_allclose(start_c, other_start + marginals[begin], atol=1e-12)


def brute_cvi1_sweep(sequences, q, alpha, beta, n_states, n_symbols):
    """CVI-1 (eq. 3.33) with every expectation taken by enumerating z^{-t} under prod q.

    This is the definition the technique of eq. 3.35-3.39 must reproduce.
    """
    flat = np.concatenate(sequences)
    first = np.concatenate([[True] + [False] * (len(x) - 1) for x in sequences])
    last = np.concatenate([[False] * (len(x) - 1) + [True] for x in sequences])
    n = len(flat)
    q = q.copy()
    for t in range(n):
        others = [u for u in range(n) if u != t]
        f1 = np.zeros(n_states)
        f2_num = np.zeros(n_states)
        f2_den = np.zeros(n_states)
        emit_num = np.zeros(n_states)
        emit_den = np.zeros(n_states)
        for assignment in itertools.product(range(n_states), repeat=n - 1):
            z = np.empty(n, dtype=int)
            z[others] = assignment
            weight = np.prod(q[others, assignment])
            for k in range(n_states):
                z[t] = k
                # counts without the transitions into and out of t (eq. 3.9-3.10)
                start_c = np.zeros(n_states)
                trans_c = np.zeros((n_states, n_states))
                for u in range(n):
                    if first[u]:
                        if u != t:
                            start_c[z[u]] += 1
                    elif u != t and u - 1 != t:
                        trans_c[z[u - 1], z[u]] += 1
                f1[k] += weight * (start_c[k] if first[t] else trans_c[z[t - 1], k])
                if not last[t]:
                    prev_same = (not first[t]) and z[t - 1] == k
                    f2_num[k] += weight * (trans_c[k, z[t + 1]] + (prev_same and z[t + 1] == k))
                    f2_den[k] += weight * (trans_c[k].sum() + prev_same)
                emit_num[k] += weight * sum(1 for u in others if z[u] == k and flat[u] == flat[t])
                emit_den[k] += weight * sum(1 for u in others if z[u] == k)
        new = (f1 + alpha) * (emit_num + beta) / (emit_den + n_symbols * beta)
        if not last[t]:
            new *= (f2_num + alpha) / (f2_den + n_states * alpha)
        q[t] = new / new.sum()
    return q


def test_cvi1_sweep_matches_enumerated_expectations():
    sequences = [np.array([0, 1, 1, 0]), np.array([1]), np.array([1, 0, 1])]
    corpus = Corpus.from_sequences(sequences)
    model = cvbayes.HMM(2, alpha=0.6, beta=0.4)
    model.family.prepare(corpus, 2)
    data = ChainData(model._parts(), corpus)
    marginals, _ = data.local_posteriors(None, 11, keep_pairs=False)
    want = brute_cvi1_sweep(sequences, marginals.astype(float), 0.6, 0.4, 2, 2)
    start_c, trans_c = factorised_transitions(data.offsets, marginals)
    state = token_state(data.emissions(), 0.6, data.offsets, data.sequence_of(), start_c, trans_c, trans_c.sum(1),
                        data.token_stats(marginals), marginals, token_workspace(2))
    _, bad = token_pass(state, np.arange(corpus.n_tokens))
    assert bad == -1
    np.testing.assert_allclose(marginals, want, atol=1e-6)
    # bookkeeping: the running global counts equal those recomputed from scratch
    fresh_start, fresh_trans = factorised_transitions(data.offsets, marginals)
    np.testing.assert_allclose(start_c, fresh_start, atol=1e-9)
    np.testing.assert_allclose(trans_c, fresh_trans, atol=1e-9)


def test_cgs_matches_exact_collapsed_posterior():
    sequences = [np.array([0, 1, 1]), np.array([1, 0])]
    alpha, beta, n_states = 0.8, 0.5, 2
    log_evidence, joints = exact_log_evidence(sequences, n_states, 2, alpha, beta)
    exact = np.exp(joints - log_evidence)
    corpus = Corpus.from_sequences(sequences)
    model = cvbayes.HMM(n_states, alpha=alpha, beta=beta)
    model.family.prepare(corpus, n_states)
    data = ChainData(model._parts(), corpus)
    states = data.random_states(0)
    seed_numba(0)

    def counts():
        return (*hard_transitions(data.offsets, states, n_states),
                state_stats(model.family.code, data.index, data.features, states, n_states, data.n_stats))

    running = counts()
    state = token_state(data.emissions(), alpha, data.offsets, data.sequence_of(), *running, states,
                        token_workspace(n_states))
    n_sweeps = 40_000
    visits = np.zeros(len(exact))
    codes = n_states ** np.arange(len(states))[::-1]
    order = np.arange(len(states))
    for _ in range(n_sweeps):
        assert gibbs_pass(state, order, 1.0) == -1
        visits[int(states @ codes)] += 1
    total_variation = 0.5 * np.abs(visits / n_sweeps - exact).sum()
    assert total_variation < 0.02
    # the running counts still describe the current sample
    for value, recomputed in zip(running, counts()):
        np.testing.assert_allclose(value, recomputed)

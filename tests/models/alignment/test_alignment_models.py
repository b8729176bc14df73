"""The aligners against brute-force enumeration, closed forms and planted data."""
import itertools

import numpy as np
import pytest
from scipy.special import gammaln

from cvbayes.chains.alignment import alignment_buffers, alignment_posteriors, hmm_expectations, ibm1_expectations
from cvbayes.chains.jumps import add_bucket_counts, bucket_sizes, jump_matrix
from cvbayes.core.sampling import seed_numba
from cvbayes.models.alignment import ALGORITHMS, MODELS, Aligner, ParallelCorpus, align, score_alignment
from cvbayes.models.alignment.model import default_prior
from cvbayes.models.alignment.collapsed import (hmm_cvi1_init, hmm_pair_pass, hmm_pair_state, hmm_token_pass,
                                                hmm_token_state, ibm1_state, ibm1_token_pass, ibm1_token_update,
                                                state_offsets)
from cvbayes.models.alignment.gibbs import (hmm_cgs_init, hmm_gibbs_pass, hmm_gibbs_state, ibm1_gibbs_pass,
                                            ibm1_gibbs_state, sample_cells)
from cvbayes.models.alignment.index import build_index
from cvbayes.models.alignment.priors import Pseudocounts
from cvbayes.models.alignment.synthetic import sample_parallel_corpus


# -- brute force: the model written out path by path -----------------------------------

def jump_weight(d, src, dst, n_src, max_jump):
    """w(d; src, dst): bucket d spreads its mass over its positions; an empty bucket over all."""
    positions = [i for i in range(n_src) if min(max(i - src, -max_jump), max_jump) == d]
    if not positions:
        return 1.0 / n_src
    return 1.0 / len(positions) if dst in positions else 0.0


def enumerate_pair(lik, theta, p0, max_jump):
    """Every (alignment, buckets) of one pair: yields (probability, states, jumps, buckets).

    lik (J, I + 1), column I = NULL.  states are the 2I-state indices, jumps
    the (src, dst) of every jump into a real position, buckets their widths.
    """
    n_tgt, n_src = lik.shape[0], lik.shape[1] - 1
    for a in itertools.product(range(n_src + 1), repeat=n_tgt):
        memory, states, steps = -1, [], []
        for j, x in enumerate(a):
            if x == n_src:
                memory = max(memory, 0)
                states.append(n_src + memory)
                steps.append((p0 * lik[j, n_src], None))
            else:
                states.append(x)
                steps.append(((1 - p0) * lik[j, x], (memory, x)))
                memory = x
        jumps = [step[1] for step in steps if step[1] is not None]
        base = np.prod([step[0] for step in steps])
        for buckets in itertools.product(range(-max_jump, max_jump + 1), repeat=len(jumps)):
            p = base
            for (src, dst), d in zip(jumps, buckets):
                p *= theta[d + max_jump] * jump_weight(d, src, dst, n_src, max_jump)
            if p > 0:
                yield p, states, jumps, buckets


def brute_chain(lik, theta, p0, max_jump):
    """log Z, state marginals (J, 2I), jump pairs (I + 1, I) and bucket counts by enumeration."""
    n_tgt, n_src = lik.shape[0], lik.shape[1] - 1
    z = 0.0
    gamma = np.zeros((n_tgt, 2 * n_src))
    pairs = np.zeros((n_src + 1, n_src))
    buckets_expected = np.zeros(2 * max_jump + 1)
    for p, states, jumps, buckets in enumerate_pair(lik, theta, p0, max_jump):
        z += p
        gamma[np.arange(n_tgt), states] += p
        for (src, dst), d in zip(jumps, buckets):
            pairs[src + 1, dst] += p
            buckets_expected[d + max_jump] += p
    return np.log(z), gamma / z, pairs / z, buckets_expected / z


def run_chain(lik, theta, p0, max_jump):
    n_tgt, n_src = lik.shape[0], lik.shape[1] - 1
    buffers = alignment_buffers(n_src + 2, n_tgt + 1)  # larger than needed, as in the drivers
    work_lik, table, alpha, back, weights, gamma, pairs, scale, acc = buffers
    work_lik[:n_tgt, :n_src + 1] = lik
    sizes = np.empty((n_src + 1, theta.size))
    bucket_sizes(n_src, max_jump, sizes)
    jump_matrix(theta, n_src, max_jump, sizes, table)
    log_z = alignment_posteriors(work_lik, table, p0, n_src, n_tgt, alpha, back, weights, gamma, pairs, scale, acc)
    buckets = np.zeros(theta.shape[0])
    add_bucket_counts(pairs, table, theta, n_src, max_jump, sizes, 1.0, buckets)
    return log_z, gamma[:n_tgt, :2 * n_src].copy(), pairs[:n_src + 1, :n_src].copy(), buckets


@pytest.mark.parametrize("n_src,n_tgt,max_jump", [(1, 1, 1), (1, 3, 2), (2, 2, 1), (3, 2, 1), (2, 3, 2), (3, 3, 2)])
def test_hmm_posteriors_equal_enumeration(n_src, n_tgt, max_jump):
    rng = np.random.default_rng(n_src * 10 + n_tgt)
    for p0 in (0.2, 0.6):
        lik = rng.random((n_tgt, n_src + 1))
        theta = rng.dirichlet(np.ones(2 * max_jump + 1))
        expected = brute_chain(lik, theta, p0, max_jump)
        got = run_chain(lik, theta, p0, max_jump)
        for name, e, g in zip(("log Z", "state marginals", "jump pairs", "bucket counts"), expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=name)


def test_jump_rows_are_distributions():
    rng = np.random.default_rng(3)
    for n_src in (1, 2, 5, 9, 20):
        theta = rng.dirichlet(np.ones(15))
        table = np.empty((n_src + 1, n_src))
        sizes = np.empty((n_src + 1, 15))
        bucket_sizes(n_src, 7, sizes)
        jump_matrix(theta, n_src, 7, sizes, table)
        np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-12)
        for src in range(-1, n_src):
            for dst in range(n_src):
                expected = sum(theta[d + 7] * jump_weight(d, src, dst, n_src, 7) for d in range(-7, 8))
                assert table[src + 1, dst] == pytest.approx(expected, rel=1e-12)


# -- small corpora -----------------------------------------------------------------------

def tiny_corpus():
    return ParallelCorpus.from_tokens(
        [["a", "b", "c"], ["b", "a"], ["c"], ["a", "c", "a"]],
        [["x", "y"], ["y", "x", "z"], ["z", "x"], ["x", "z", "x"]])


def dense_table(corpus, data, rng):
    """A random t(e | f) (NULL = row V_f) and the same values laid out per slot."""
    dense = rng.random((len(corpus.source_vocabulary) + 1, len(corpus.target_vocabulary))) + 0.05
    per_slot = np.empty(data.n_slots)
    for s, (f, e) in enumerate(zip(corpus.source, corpus.target)):
        sources = np.append(f, data.n_source_types)
        for j, word in enumerate(e):
            for i, source in enumerate(sources):
                per_slot[data.cell_slot[data.cell_offsets[s] + j * sources.size + i]] = dense[source, word]
    return dense, per_slot


def test_ibm1_posteriors_equal_closed_form():
    corpus = tiny_corpus()
    data = build_index(corpus)
    dense, per_slot = dense_table(corpus, data, np.random.default_rng(0))
    cells = np.empty(data.cell_slot.size, dtype=np.float32)
    log_z, bad = ibm1_expectations(per_slot, data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                   data.cell_slot, data.chunk_bounds, cells)
    assert bad == -1
    expected_log_z = 0.0
    for s, (f, e) in enumerate(zip(corpus.source, corpus.target)):
        sources = np.append(f, data.n_source_types)
        t = dense[sources][:, e].T  # (J, I + 1)
        expected_log_z += np.log(t.mean(axis=1)).sum()
        got = cells[data.cell_offsets[s]:data.cell_offsets[s + 1]].reshape(t.shape)
        np.testing.assert_allclose(got, t / t.sum(axis=1, keepdims=True), rtol=1e-6)
    assert log_z.sum() == pytest.approx(expected_log_z, rel=1e-12)


def test_hmm_batch_e_step_equals_enumeration():
    corpus = tiny_corpus()
    data = build_index(corpus)
    rng = np.random.default_rng(1)
    dense, per_slot = dense_table(corpus, data, rng)
    theta = rng.dirichlet(np.ones(5))
    cells = np.empty(data.cell_slot.size, dtype=np.float32)
    buckets, log_z, bad = hmm_expectations(per_slot, theta, 0.3, 2, data.src_offsets, data.tgt_offsets,
                                           data.cell_offsets, data.cell_slot, data.chunk_bounds, cells)
    assert bad == -1
    expected_log_z, expected_buckets = 0.0, np.zeros(5)
    for s, (f, e) in enumerate(zip(corpus.source, corpus.target)):
        lik = dense[np.append(f, data.n_source_types)][:, e].T
        pair_log_z, gamma, _, pair_buckets = brute_chain(lik, theta, 0.3, 2)
        expected_log_z += pair_log_z
        expected_buckets += pair_buckets
        n_src = f.size
        cell_marginals = np.column_stack([gamma[:, :n_src], gamma[:, n_src:].sum(axis=1)])
        got = cells[data.cell_offsets[s]:data.cell_offsets[s + 1]].reshape(cell_marginals.shape)
        np.testing.assert_allclose(got, cell_marginals, rtol=1e-5, atol=1e-7)
    assert log_z.sum() == pytest.approx(expected_log_z, rel=1e-12)
    np.testing.assert_allclose(buckets, expected_buckets, rtol=1e-10)


# -- objectives --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def planted():
    return sample_parallel_corpus(300, seed=1)


@pytest.mark.parametrize("algorithm", ["em", "vb"])
@pytest.mark.parametrize("prior", [0.1, 2.0])
def test_em_and_vb_objectives_never_decrease(planted, algorithm, prior):
    corpus, _ = planted
    aligner = Aligner("hmm", algorithm, n_iter=(12, 12), prior=prior, max_jump=3).fit(corpus[:120])
    for model in ("ibm1", "hmm"):
        objective = np.array([h.objective for h in aligner.history_ if h.stage == model])
        assert objective.size == 12 and np.all(np.isfinite(objective))
        assert np.all(np.diff(objective) >= -1e-9 * np.abs(objective[1:])), (model, objective)
        assert objective[-1] > objective[0]


def test_em_and_vb_objective_values_match_their_definitions():
    """IBM1, three iterations written densely: EM's log p(e | t) + log p(t) and VB's ELBO
    E_q[log p(e, a | t)] + E[log p(t)] - E[log q(a)] - E[log q(t)] with q(t) = Dir(C + beta)."""
    from scipy.special import digamma
    corpus = tiny_corpus()
    n_rows, v = len(corpus.source_vocabulary) + 1, len(corpus.target_vocabulary)
    rows = [np.append(f, n_rows - 1) for f in corpus.source]
    for algorithm, prior in (("em", 2.0), ("vb", 0.3)):
        counts = np.zeros((n_rows, v))
        for _ in range(3):
            if algorithm == "em":
                table = (counts + prior - 1) / (counts + prior - 1).sum(axis=1, keepdims=True)
            else:
                table = np.exp(digamma(counts + prior) - digamma(counts.sum(axis=1, keepdims=True) + v * prior))
            objective, new_counts = 0.0, np.zeros_like(counts)
            for f, e in zip(rows, corpus.target):
                t = table[f][:, e].T  # (J, I + 1)
                q = t / t.sum(axis=1, keepdims=True)
                if algorithm == "em":
                    objective += np.log(t.mean(axis=1)).sum()
                else:
                    objective += (q * (np.log(t) - np.log(f.size) - np.log(q))).sum()
                for j, word in enumerate(e):
                    np.add.at(new_counts, (f, word), q[j])
            if algorithm == "em":
                objective += (prior - 1) * np.log(table).sum()
            else:
                post = counts + prior
                kl = (gammaln(post.sum(axis=1)) - gammaln(v * prior) - (gammaln(post) - gammaln(prior)).sum(axis=1)
                      + ((post - prior) * (digamma(post) - digamma(post.sum(axis=1, keepdims=True)))).sum(axis=1))
                objective -= kl.sum()
            counts = new_counts
        aligner = Aligner("ibm1", algorithm, n_iter=3, prior=prior).fit(corpus)
        assert aligner.history_[-1].objective == pytest.approx(objective, rel=1e-9), algorithm


# -- collapsed updates -------------------------------------------------------------------

def counts_without(corpus, data, cells, s, j):
    """By hand: the dense (V_f + 1, V_e) expected counts of the per-cell posteriors ``cells`` of every token
    but target word j of pair s."""
    dense = np.zeros((data.n_rows, data.n_target_types))
    for k, (fk, ek) in enumerate(zip(corpus.source, corpus.target)):
        sk = np.append(fk, data.n_source_types)
        q = cells[data.cell_offsets[k]:data.cell_offsets[k + 1]].reshape(ek.size, sk.size)
        for jj in range(ek.size):
            for i in range(sk.size):
                if (k, jj) != (s, j):
                    dense[sk[i], ek[jj]] += q[jj, i]
    return dense


def test_cvi1_ibm1_token_update_is_the_leave_one_out_predictive():
    corpus = tiny_corpus()
    data = build_index(corpus)
    rng = np.random.default_rng(4)
    prior, n_cand = 0.3, np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    cells = np.concatenate([rng.dirichlet(np.ones(n)) for n in n_cand]).astype(np.float32)
    counts = data.slot_totals(cells)
    totals = data.row_totals(counts)
    # by hand: a dense (V_f + 1, V_e) table of expected counts from every other token
    s, j = 3, 2  # pair 3 ("a c a" / "x z x"), target word 2: "a" occurs twice among its candidates
    e = corpus.target[s]
    sources = np.append(corpus.source[s], data.n_source_types)
    first = data.cell_offsets[s] + j * sources.size
    dense = counts_without(corpus, data, cells, s, j)
    v = data.n_target_types
    predictive = (dense[sources, e[j]] + prior) / (dense[sources].sum(axis=1) + v * prior)
    state = ibm1_state(data, Pseudocounts(data, prior, 1), counts, totals, cells)
    log_norm = ibm1_token_update(state, data.tgt_offsets[s] + j)
    np.testing.assert_allclose(cells[first:first + sources.size], predictive / predictive.sum(), rtol=1e-6)
    assert log_norm == pytest.approx(np.log(predictive.mean()), rel=1e-12)
    # the counts now hold the new posterior in place of the old one
    np.testing.assert_allclose(counts, data.slot_totals(cells), atol=1e-12)
    np.testing.assert_allclose(totals, data.row_totals(counts), atol=1e-12)


def test_collapsed_sweeps_keep_global_counts_equal_to_local_statistics(planted):
    corpus, _ = planted
    data = build_index(corpus[:60])
    prior, max_jump = 0.1, 3
    n_src, n_tgt = np.diff(data.src_offsets), np.diff(data.tgt_offsets)
    cells = np.repeat(1.0 / (n_src + 1), (n_src + 1) * n_tgt).astype(np.float32)
    counts = data.slot_totals(cells)
    totals = data.row_totals(counts)
    state = ibm1_state(data, Pseudocounts(data, prior, 1), counts, totals, cells)
    assert ibm1_token_pass(state, np.arange(data.n_target_tokens))[1] == -1
    np.testing.assert_allclose(counts, data.slot_totals(cells), atol=1e-9)
    # CVI-2 on the HMM: jump counts = sum of the stored per-pair bucket counts
    counts2, totals2, cells2 = counts.copy(), totals.copy(), cells.copy()
    jumps = np.zeros(2 * max_jump + 1)
    local = np.zeros((data.n_pairs, jumps.size), dtype=np.float32)
    pseudo = Pseudocounts(data, prior, max_jump)
    state = hmm_pair_state(data, pseudo, 0.2, max_jump, counts2, totals2, cells2, jumps, local)
    for _ in range(2):
        assert hmm_pair_pass(state, np.arange(data.n_pairs))[1] == -1
    np.testing.assert_allclose(counts2, data.slot_totals(cells2), atol=1e-9)
    np.testing.assert_allclose(jumps, local.astype(np.float64).sum(axis=0), rtol=1e-12)
    # every jump into a real position is counted once: the bucket mass equals the real-alignment mass
    null_cells = np.cumsum(np.repeat(n_src + 1, n_tgt)) - 1
    assert jumps.sum() == pytest.approx(cells2.sum(dtype=np.float64) - cells2[null_cells].sum(dtype=np.float64),
                                        rel=1e-6)
    # CVI-1 on the HMM: jump counts = sum of the stored incoming-jump bucket counts
    offsets = state_offsets(data)
    states = np.empty(offsets[-1], dtype=np.float32)
    into = np.empty((data.n_target_tokens, jumps.size), dtype=np.float32)
    counts3, totals3 = np.zeros(data.n_slots), np.zeros(data.n_rows)
    jumps3 = hmm_cvi1_init(max_jump, data.src_offsets, data.tgt_offsets, data.cell_offsets, offsets,
                           data.cell_slot, data.slot_row, cells, states, into, counts3, totals3)
    state = hmm_token_state(data, pseudo, 0.2, max_jump, counts3, totals3, offsets, states, jumps3, into)
    for _ in range(2):
        assert hmm_token_pass(state, np.arange(data.n_target_tokens))[1] == -1
    np.testing.assert_allclose(counts3, data.slot_totals(np.concatenate(
        [np.column_stack([q[:, :n], q[:, n:].sum(axis=1)]).ravel() for q, n in zip(
            (states[offsets[s]:offsets[s + 1]].reshape(n_tgt[s], 2 * n_src[s]) for s in range(data.n_pairs)),
            n_src)])), atol=1e-6)
    np.testing.assert_allclose(jumps3, into.astype(np.float64).sum(axis=0), rtol=1e-10)
    real_mass = sum(states[offsets[s]:offsets[s + 1]].reshape(n_tgt[s], 2 * n_src[s])[:, :n_src[s]].sum()
                    for s in range(data.n_pairs))
    assert jumps3.sum() == pytest.approx(real_mass, rel=1e-6)


def dense_transition(theta, n_src, p0, max_jump):
    """The 2I x 2I transition of chains/alignment.py and the start row, built from the model's definition."""
    def jump(src, dst):
        return sum(theta[d + max_jump] * jump_weight(d, src, dst, n_src, max_jump)
                   for d in range(-max_jump, max_jump + 1))
    trans = np.zeros((2 * n_src, 2 * n_src))
    for state in range(2 * n_src):
        memory = state % n_src
        for i in range(n_src):
            trans[state, i] = (1 - p0) * jump(memory, i)
        trans[state, n_src + memory] = p0
    start = np.array([(1 - p0) * jump(-1, i) for i in range(n_src)] + [p0] + [0.0] * (n_src - 1))
    return start, trans


def factorised_buckets(left, right, theta, n_src, max_jump):
    """Expected bucket counts of the jump into a token under q(a_{j-1}) q(a_j); left None = the start."""
    memory_mass = {-1: 1.0} if left is None else {m: left[m] + left[n_src + m] for m in range(n_src)}
    out = np.zeros(theta.size)
    for src, mass in memory_mass.items():
        for i in range(n_src):
            weights = np.array([theta[d + max_jump] * jump_weight(d, src, i, n_src, max_jump)
                                for d in range(-max_jump, max_jump + 1)])
            out += mass * right[i] * weights / weights.sum()
    return out


def test_cvi1_hmm_sweep_equals_a_dense_reimplementation():
    corpus = tiny_corpus()
    data = build_index(corpus)
    prior, p0, max_jump = 0.3, 0.25, 2
    v = data.n_target_types
    n_src, n_tgt = np.diff(data.src_offsets), np.diff(data.tgt_offsets)
    rng = np.random.default_rng(5)
    cells = np.concatenate([rng.dirichlet(np.ones(n)) for n in np.repeat(n_src + 1, n_tgt)]).astype(np.float32)
    offsets = state_offsets(data)
    states = np.empty(offsets[-1], dtype=np.float32)
    into = np.empty((data.n_target_tokens, 2 * max_jump + 1), dtype=np.float32)
    counts, totals = np.zeros(data.n_slots), np.zeros(data.n_rows)
    jumps = hmm_cvi1_init(max_jump, data.src_offsets, data.tgt_offsets, data.cell_offsets, offsets,
                          data.cell_slot, data.slot_row, cells, states, into, counts, totals)
    # the reference: dense translation counts and per-token state vectors, updated token by token
    q = [states[offsets[s]:offsets[s + 1]].reshape(n_tgt[s], 2 * n_src[s]).astype(float)
         for s in range(data.n_pairs)]
    ref_into = into.astype(float)
    ref_jumps = ref_into.sum(axis=0)
    trans_counts = np.zeros((data.n_rows, v))

    def move(s, j, sign):
        f, e = corpus.source[s], corpus.target[s]
        np.add.at(trans_counts, (f, e[j]), sign * q[s][j, :f.size])  # f may repeat a word
        trans_counts[data.n_source_types, e[j]] += sign * q[s][j, f.size:].sum()

    for s in range(data.n_pairs):
        for j in range(n_tgt[s]):
            move(s, j, 1.0)
    objective = 0.0
    for s in range(data.n_pairs):
        f, e, n = corpus.source[s], corpus.target[s], n_src[s]
        for j in range(n_tgt[s]):
            t = data.tgt_offsets[s] + j
            last = j == n_tgt[s] - 1
            move(s, j, -1.0)
            ref_jumps -= ref_into[t] + (0.0 if last else ref_into[t + 1])
            theta = (ref_jumps + prior) / (ref_jumps.sum() + ref_jumps.size * prior)
            start, trans = dense_transition(theta, n, p0, max_jump)
            rows = np.append(f, data.n_source_types)
            t_bar = (trans_counts[rows, e[j]] + prior) / (trans_counts[rows].sum(axis=1) + v * prior)
            emission = np.concatenate([t_bar[:n], np.full(n, t_bar[n])])
            f1 = start if j == 0 else q[s][j - 1] @ trans
            f2 = np.ones(2 * n) if last else trans @ q[s][j + 1]
            update = f1 * f2 * emission
            objective += np.log(update.sum())
            q[s][j] = update / update.sum()
            move(s, j, 1.0)
            ref_into[t] = factorised_buckets(None if j == 0 else q[s][j - 1], q[s][j], theta, n, max_jump)
            ref_jumps += ref_into[t]
            if not last:
                ref_into[t + 1] = factorised_buckets(q[s][j], q[s][j + 1], theta, n, max_jump)
                ref_jumps += ref_into[t + 1]
    pseudo = Pseudocounts(data, prior, max_jump)
    state = hmm_token_state(data, pseudo, p0, max_jump, counts, totals, offsets, states, jumps, into)
    got, bad = hmm_token_pass(state, np.arange(data.n_target_tokens))
    assert bad == -1
    assert got == pytest.approx(objective, rel=1e-6)
    np.testing.assert_allclose(states, np.concatenate([x.ravel() for x in q]), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(into, ref_into, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jumps, ref_jumps, rtol=1e-6)


# -- collapsed Gibbs sampling against the exact collapsed posterior ------------------------

def collapsed_log_joint(corpus, alignments, buckets, prior, model, p0, max_jump):
    """log p(e, a[, b] | f) with t and theta integrated out (thesis eq. 3.24), written out directly."""
    n_rows, v = len(corpus.source_vocabulary) + 1, len(corpus.target_vocabulary)
    trans = np.zeros((n_rows, v))
    log_p = 0.0
    jump_counts = np.zeros(2 * max_jump + 1)
    for f, e, a, b in zip(corpus.source, corpus.target, alignments, buckets):
        n_src = f.size
        memory = -1
        for j, x in enumerate(a):
            trans[f[x] if x < n_src else n_rows - 1, e[j]] += 1
            if model == "ibm1":
                log_p -= np.log(n_src + 1)
            elif x == n_src:
                log_p += np.log(p0)
                memory = max(memory, 0)
            else:
                log_p += np.log(1 - p0) + np.log(jump_weight(b[j], memory, x, n_src, max_jump))
                jump_counts[b[j] + max_jump] += 1
                memory = x
    log_p += (gammaln(v * prior) - gammaln(trans.sum(axis=1) + v * prior)).sum()
    log_p += (gammaln(trans + prior) - gammaln(prior)).sum()
    if model == "hmm":
        k = jump_counts.size
        log_p += gammaln(k * prior) - gammaln(jump_counts.sum() + k * prior)
        log_p += (gammaln(jump_counts + prior) - gammaln(prior)).sum()
    return log_p


def exact_collapsed_posterior(corpus, prior, model, p0, max_jump):
    """p(a | e, f) over every joint alignment of the corpus (buckets summed out)."""
    per_pair = [list(itertools.product(range(f.size + 1), repeat=e.size)) for f, e in zip(corpus.source, corpus.target)]
    posterior = {}
    for alignments in itertools.product(*per_pair):
        if model == "ibm1":
            bucket_choices = [[()] for _ in alignments]
        else:
            bucket_choices = []
            for f, a in zip(corpus.source, alignments):
                options = [range(-max_jump, max_jump + 1) if x < f.size else [None] for x in a]
                bucket_choices.append(list(itertools.product(*options)))
        total = 0.0
        for buckets in itertools.product(*bucket_choices):
            if model == "hmm" and not _valid(corpus, alignments, buckets, max_jump):
                continue
            total += np.exp(collapsed_log_joint(corpus, alignments, buckets, prior, model, p0, max_jump))
        posterior[alignments] = total
    z = sum(posterior.values())
    return {a: p / z for a, p in posterior.items()}


def _valid(corpus, alignments, buckets, max_jump):
    for f, a, b in zip(corpus.source, alignments, buckets):
        memory = -1
        for x, d in zip(a, b):
            if x < f.size:
                if jump_weight(d, memory, x, f.size, max_jump) == 0:
                    return False
                memory = x
            else:
                memory = max(memory, 0)
    return True


# (model, corpus, max jump, sweeps, bound on the chi-square statistic).  The bounds
# come from runs of this test: an exact sampler gave 75-109 (IBM1, 81 joint
# alignments, seeds 0-5) and 19-39 (HMM, 27, seeds 0-7); samplers with a planted
# bug gave 720-890 (IBM1 without leave-one-out counts), 105-185 (HMM without
# the delta terms of eq. 3.25) and 660 (HMM ignoring the jump out of a_j).
GIBBS_CASES = {
    "ibm1": ([["a", "b"], ["b", "a"]], [["x", "y"], ["x", "x"]], 1, 50000, 200.0),
    "hmm": ([["a", "b"]], [["x", "y", "x"]], 2, 200000, 70.0),
}


@pytest.mark.parametrize("model", ["ibm1", "hmm"])
def test_gibbs_sampler_draws_from_the_exact_collapsed_posterior(model):
    source, target, max_jump, n_sweeps, bound = GIBBS_CASES[model]
    corpus = ParallelCorpus.from_tokens(source, target)
    prior, p0 = 0.1, 0.3
    exact = exact_collapsed_posterior(corpus, prior, model, p0, max_jump)
    data = build_index(corpus)
    align_ = np.zeros(data.n_target_tokens, dtype=np.int32)
    cells = np.empty(data.cell_slot.size, dtype=np.float32)
    sample_cells(data.cell_offsets, data.src_offsets, data.tgt_offsets, align_, cells)
    counts = data.slot_totals(cells)
    totals = data.row_totals(counts)
    bucket = np.empty(data.n_target_tokens, dtype=np.int32)
    jumps = np.zeros(2 * max_jump + 1)
    hmm_cgs_init(max_jump, data.src_offsets, data.tgt_offsets, align_, bucket, jumps)
    rb = np.zeros(data.cell_slot.size, dtype=np.float32)
    accumulate = np.zeros(1, dtype=np.bool_)
    pseudo = Pseudocounts(data, prior, max_jump)
    if model == "ibm1":
        state, one_pass = ibm1_gibbs_state(data, pseudo, counts, totals, align_, rb, accumulate), ibm1_gibbs_pass
    else:
        state = hmm_gibbs_state(data, pseudo, p0, max_jump, counts, totals, align_, rb, accumulate, jumps, bucket)
        one_pass = hmm_gibbs_pass
    seed_numba(7)
    keys = {a: k for k, a in enumerate(exact)}
    splits = np.cumsum([e.size for e in corpus.target])[:-1]
    hits = np.zeros(len(keys))
    order = np.arange(data.n_pairs)
    for _ in range(n_sweeps):
        assert one_pass(state, order, 1.0) == -1
        hits[keys[tuple(tuple(a.tolist()) for a in np.split(align_, splits))]] += 1
    probabilities = np.array(list(exact.values()))
    # chi-square of the visit counts against the exact posterior: about (cells - 1)
    # times the autocorrelation time for an exact sampler, growing with the
    # number of sweeps for a biased one
    chi2 = n_sweeps * ((hits / n_sweeps - probabilities) ** 2 / probabilities).sum()
    assert chi2 < bound
    # the counts the sampler keeps are those of its state
    sample_cells(data.cell_offsets, data.src_offsets, data.tgt_offsets, align_, cells)
    np.testing.assert_array_equal(counts, data.slot_totals(cells))
    if model == "hmm":
        np.testing.assert_array_equal(jumps, np.bincount(bucket[bucket >= 0], minlength=jumps.size))


# -- the aligner end to end ----------------------------------------------------------------

THRESHOLDS = {"ibm1": 0.30, "hmm": 0.12}


@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi1", "cvi2", "cgs"])  # svi, scvi: test_alignment_stochastic
@pytest.mark.parametrize("model", ["ibm1", "hmm"])
def test_planted_alignments_are_recovered(planted, model, algorithm):
    corpus, gold = planted
    aligner = Aligner(model, algorithm, random_state=0).fit(corpus)
    score = score_alignment(aligner.links(), gold)
    threshold = THRESHOLDS[model] + (0.1 if (model, algorithm) == ("hmm", "vb") else 0.0)
    assert score["aer"] < threshold, score


def test_history_and_links_follow_the_contract(planted):
    corpus, _ = planted
    aligner = Aligner("hmm", "cvi2", n_iter=(2, 3)).fit(corpus[:50])
    assert [(h.stage, h.iteration) for h in aligner.history_] == [
        ("ibm1", 0), ("ibm1", 1), ("hmm", 0), ("hmm", 1), ("hmm", 2)]
    assert all(h.seconds >= 0 and np.isfinite(h.objective) for h in aligner.history_)
    assert aligner.seconds_ >= sum(h.seconds for h in aligner.history_)
    links = aligner.links()
    assert len(links) == 50
    for pair_links, f, e in zip(links, corpus.source[:50], corpus.target[:50]):
        assert all(0 <= i < f.size and 0 <= j < e.size for i, j in pair_links)
        # one source position per target word at most
        assert len({j for _, j in pair_links}) == len(pair_links)


def test_empty_sentences_get_no_links():
    corpus = ParallelCorpus.from_tokens([["a", "b"], [], ["b"], ["a"]], [["x", "y"], ["y"], [], ["x"]])
    for algorithm in ("em", "cvi1", "cgs", "scvi"):
        links = Aligner("hmm", algorithm, n_iter=2).fit(corpus).links()
        assert len(links) == 4 and links[1] == set() and links[2] == set()
        assert links[3] <= {(0, 0)}
    nothing = ParallelCorpus.from_tokens([[], ["a"]], [["x"], []])
    assert Aligner().fit(nothing).links() == [set(), set()]


def test_align_trains_both_directions_in_source_target_orientation():
    # a -> x, b -> y, c -> z; pair 0 has three source words and two target words,
    # so a link written as (target, source) would be out of range or wrong
    source = [["a", "b", "c"], ["a", "c"], ["b", "c"], ["a", "b"]] * 5
    target = [["x", "z"], ["x", "z"], ["y", "z"], ["x", "y"]] * 5
    corpus = ParallelCorpus.from_tokens(source, target)
    for method in ("forward", "reverse", "intersection", "union", "grow-diag-final-and"):
        links = align(corpus, model="ibm1", algorithm="em", n_iter=10, symmetrization=method)
        assert {(0, 0), (2, 1)} <= links[0], method
        assert all(i < len(f) and j < len(e) for pair, f, e in zip(links, source, target) for i, j in pair)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="unknown algorithm"):
        Aligner(algorithm="gibbs")
    with pytest.raises(ValueError, match="unknown model"):
        Aligner(model="ibm4")
    with pytest.raises(ValueError, match="null_prob"):
        Aligner(null_prob=1.0)
    with pytest.raises(ValueError, match="iterations"):
        Aligner(n_iter=(3, 0))
    with pytest.raises(ValueError, match="batch_size"):
        Aligner(algorithm="svi", batch_size=0)
    with pytest.raises(ValueError, match="ibm1_iters, hmm_iters"):
        Aligner(n_iter=[1, 2, 3])
    assert Aligner("ibm1", n_iter=[4, 0]).stages == (("ibm1", 4),)
    with pytest.raises(ValueError, match="symmetrization"):
        align(tiny_corpus(), symmetrization="grow")
    with pytest.raises(RuntimeError, match="fit"):
        Aligner().links()


# -- what a fitted aligner exposes: the final tables, per-pair scores, the default prior ----------

def ibm1_by_hand(corpus, n_iter, weights):
    """IBM1 written densely (NULL = row V_f): ``n_iter`` E-steps from uniform posteriors, each on
    ``weights(counts)`` of the previous counts; returns the last expected counts."""
    n_rows, width = len(corpus.source_vocabulary) + 1, len(corpus.target_vocabulary)
    table = np.ones((n_rows, width))
    for _ in range(n_iter):
        counts = np.zeros((n_rows, width))
        for f, e in zip(corpus.source, corpus.target):
            rows = np.append(f, n_rows - 1)
            lik = table[rows][:, e]
            np.add.at(counts, (rows[:, None], e[None, :]), lik / lik.sum(axis=0))
        table = weights(counts)
    return counts


def test_translation_table_is_the_final_m_step_of_em_and_the_posterior_mean_of_vb():
    from scipy.special import digamma
    corpus, prior = tiny_corpus(), 0.3
    width = len(corpus.target_vocabulary)
    expected = {
        "em": lambda c: c / c.sum(axis=1, keepdims=True),   # MAP with prior <= 1: the MLE
        "vb": lambda c: (c + prior) / (c.sum(axis=1, keepdims=True) + width * prior)}
    vb_weights = lambda c: np.exp(digamma(c + prior) - digamma(c.sum(axis=1, keepdims=True) + width * prior))
    for algorithm, e_step_weights in (("em", expected["em"]), ("vb", vb_weights)):
        source, target, log_prob = Aligner("ibm1", algorithm, n_iter=4, prior=prior).fit(corpus).translation_table()
        pairs = {(f, e) for s, t in zip(corpus.source, corpus.target) for f in [*s.tolist(), -1] for e in t.tolist()}
        assert list(zip(source.tolist(), target.tolist())) == sorted(pairs, key=lambda p: (p[0] < 0, p))
        table = expected[algorithm](ibm1_by_hand(corpus, 4, e_step_weights))
        np.testing.assert_allclose(np.exp(log_prob), table[source, target], rtol=1e-5, err_msg=algorithm)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.parametrize("model", MODELS)
def test_pair_log_likelihoods_equal_enumeration_under_the_final_tables(algorithm, model):
    corpus = tiny_corpus()
    aligner = Aligner(model, algorithm, n_iter=3, max_jump=2, batch_size=2).fit(corpus)
    source, target, log_prob = aligner.translation_table()
    null = len(corpus.source_vocabulary)
    dense = np.zeros((null + 1, len(corpus.target_vocabulary)))
    dense[np.where(source < 0, null, source), target] = np.exp(log_prob)
    theta = aligner._final_model(np.zeros(0, np.float32))[1].jumps
    scores = aligner.pair_log_likelihoods()
    assert scores.shape == (len(corpus),)
    for score, f, e in zip(scores, corpus.source, corpus.target):
        lik = dense[np.append(f, null)][:, e].T
        expected = (np.log(lik.mean(axis=1)).sum() if model == "ibm1"
                    else brute_chain(lik, theta, aligner.null_prob, aligner.max_jump)[0])
        assert score == pytest.approx(expected, rel=1e-9)
    # links, and so the fit, are untouched by the scoring E-step
    assert aligner.links() == Aligner(model, algorithm, n_iter=3, max_jump=2, batch_size=2).fit(corpus).links()


def test_pairs_left_out_score_nan_and_unfitted_aligners_refuse():
    corpus = ParallelCorpus.from_tokens([["a", "b"], [], ["b"]], [["x", "y"], ["y"], ["y"]])
    scores = Aligner("hmm", "cvi2", n_iter=2).fit(corpus).pair_log_likelihoods()
    assert np.isnan(scores[1]) and np.all(np.isfinite(scores[[0, 2]])) and np.all(scores[[0, 2]] < 0)
    for method in ("translation_table", "pair_log_likelihoods"):
        with pytest.raises(RuntimeError, match="fit"):
            getattr(Aligner(), method)()


def test_default_prior_is_one_rule_for_aligner_align_and_the_command():
    assert [Aligner(algorithm=a).prior for a in ALGORITHMS] == [default_prior(a) for a in ALGORITHMS]
    assert {a: default_prior(a) for a in ALGORITHMS} == {"em": 0.1, "vb": 0.1, "cvi1": 1e-3, "cvi2": 1e-3,
                                                         "cgs": 1e-3, "scvi": 1e-3, "svi": 0.1}
    # align() without a prior gives what an explicit default_prior gives (and 0.1 would differ for cvi2)
    corpus, _ = sample_parallel_corpus(40, seed=4)
    implicit = align(corpus, algorithm="cvi2", n_iter=2, symmetrization="forward")
    assert implicit == align(corpus, algorithm="cvi2", n_iter=2, prior=1e-3, symmetrization="forward")
    assert implicit != align(corpus, algorithm="cvi2", n_iter=2, prior=0.1, symmetrization="forward")

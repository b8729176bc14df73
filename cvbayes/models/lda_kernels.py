"""LDA's numba bindings to the engine: E-steps, leave-one-out updates, minibatch kernels, Gibbs sites.

Documents are laid out as a CSR matrix of counts: document d holds the entries
``doc_start[d] .. doc_start[d + 1] - 1``, entry e a word ``entry_word[e]`` seen ``entry_count[e]`` times.
Topic-word tables and counts are (W, K), so that one word's K topics are one contiguous row.

Every Dirichlet number comes from `cvbayes.core.rules`: ``mean_cell`` (MEAN: CVB0, CVB, SCVB0, CGS, the
fold-in) and ``log_geometric_cell`` (VB's E[log theta]).  Topic-word tables that do not change during a
pass (VB, online VB, SCVB0) are built with the NumPy rules by the caller and passed in.

* `vb_estep`: the per-document fixed point of mean-field VB (Blei et al. 2003; Hoffman et al. 2010),
  ``prange`` over documents; shared by batch VB and online VB.
* `cvb0_entry`, `cvb_entry`: one token-level collapsed update (Asuncion et al. 2009; Teh et al. 2006)
  for `cvbayes.schedules.leave_one_out`; `cvb0_frozen_pass` the parallel variant with the topic-word
  counts frozen for a pass.
* `scvb0_minibatch`: SCVB0's per-document work on a minibatch (Foulds et al. 2013), ``prange`` over
  documents.
* `sparse_document`: the collapsed Gibbs sampler's draws for a document's tokens (Griffiths and
  Steyvers 2004) with SparseLDA's buckets (Yao, Mimno and McCallum 2009), for `cvbayes.schedules.gibbs`;
  `gibbs_sweep` runs it over every document (exact), `partitioned_gibbs_sweep` on partitions of the
  documents and the vocabulary in parallel (Yan, Xu and Qi 2009).
"""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from ..core.prefetch import prefetch
from ..core.rules import log_geometric_cell, mean_cell
from ..core.sampling import next_uniform, unit_generator
from ..core.units import first_bad, parallel_over_chunks
from ..schedules.collapsed import leave_one_out
from ..schedules.sampling import gibbs
from ..schedules.stochastic import step_size

# -- mean-field VB ------------------------------------------------------------------------------


@njit(cache=True)
def _exp_log_theta(gamma, alpha, alpha_total, out):
    """out_k = exp(E[log theta_k]) = exp(psi(gamma_k) - psi(sum gamma)) with gamma = alpha + n_d (VB's
    rule on the document's expected topic counts n_d, eq. 3.21-3.22 for one Dirichlet row)."""
    n_topics = gamma.shape[0]
    row = 0.0
    for k in range(n_topics):
        row += gamma[k] - alpha[k]
    for k in range(n_topics):
        out[k] = math.exp(log_geometric_cell(gamma[k] - alpha[k], alpha[k], row, alpha_total))


@njit(cache=True)
def _vb_document(doc_start, entry_word, entry_count, d, table, alpha, alpha_total, gamma, max_iter, tol,
                 exp_theta, new_gamma):
    """The fixed point gamma_k = alpha_k + sum_w c_w phi_wk, phi_wk ∝ exp(E[log theta_k]) table[w, k]
    (Blei et al. 2003, eq. 6-7), from the gamma given; returns the iterations run.  Each step is a
    coordinate ascent step of the document's ELBO (phi optimal given gamma, then gamma given phi)."""
    n_topics = gamma.shape[0]
    for iteration in range(max_iter):
        _exp_log_theta(gamma, alpha, alpha_total, exp_theta)
        for k in range(n_topics):
            new_gamma[k] = 0.0
        for e in range(doc_start[d], doc_start[d + 1]):
            row = table[entry_word[e]]
            norm = 0.0
            for k in range(n_topics):
                norm += exp_theta[k] * row[k]
            weight = entry_count[e] / norm
            for k in range(n_topics):
                new_gamma[k] += weight * row[k]
        change = 0.0
        for k in range(n_topics):
            value = alpha[k] + exp_theta[k] * new_gamma[k]
            change += abs(value - gamma[k])
            gamma[k] = value
        if change / n_topics < tol:
            return iteration + 1
    return max_iter


@njit(cache=True)
def document_kl(gamma, alpha):
    """KL(Dir(gamma) || Dir(alpha)) of one document's topic proportions, the term of its ELBO that
    `core.rules.dirichlet_kl` gives summed over rows (the same formula, for one row inside a kernel):
    lnG(gamma.) - lnG(alpha.) - sum_k [lnG(gamma_k) - lnG(alpha_k) - n_k (psi(gamma_k) - psi(gamma.))],
    n = gamma - alpha, the psi difference VB's log cell."""
    n_topics = gamma.shape[0]
    gamma_total = 0.0
    alpha_total = 0.0
    for k in range(n_topics):
        gamma_total += gamma[k]
        alpha_total += alpha[k]
    kl = math.lgamma(gamma_total) - math.lgamma(alpha_total)
    for k in range(n_topics):
        count = gamma[k] - alpha[k]
        kl -= (math.lgamma(gamma[k]) - math.lgamma(alpha[k])
               - count * log_geometric_cell(count, alpha[k], gamma_total - alpha_total, alpha_total))
    return kl


@parallel_over_chunks()
def vb_estep(doc_start, entry_word, entry_count, table, alpha, gamma, max_iter, tol, chunks, sstats,
             bound, iterations):
    """VB's E-step over every document of ``doc_start``, in parallel over ``chunks`` of documents.

    ``table`` (rows, K) is exp(E[log beta]) at the rows ``entry_word`` points to; ``gamma`` (D, K) holds
    the starting point and receives the fixed point (``max_iter`` = 0: kept).  Writes, with phi optimal
    for the final gamma, ``sstats[chunk]`` += sum c_w phi_w (the expected topic-word counts, per chunk),
    ``bound[d]`` = sum_w c_w log sum_k exp(E[log theta_k]) table[w, k] - KL(Dir(gamma_d) || Dir(alpha)),
    the document's part of the ELBO (Blei et al. 2003, eq. 15), and ``iterations[d]``.
    """
    n_topics = table.shape[1]
    alpha_total = alpha.sum()
    for chunk in prange(chunks.shape[0] - 1):
        exp_theta = np.empty(n_topics)
        scratch = np.empty(n_topics)
        out = sstats[chunk]
        for d in range(chunks[chunk], chunks[chunk + 1]):
            iterations[d] = _vb_document(doc_start, entry_word, entry_count, d, table, alpha, alpha_total,
                                         gamma[d], max_iter, tol, exp_theta, scratch)
            _exp_log_theta(gamma[d], alpha, alpha_total, exp_theta)
            total = 0.0
            for e in range(doc_start[d], doc_start[d + 1]):
                w = entry_word[e]
                row = table[w]
                norm = 0.0
                for k in range(n_topics):
                    norm += exp_theta[k] * row[k]
                total += entry_count[e] * math.log(norm)
                weight = entry_count[e] / norm
                for k in range(n_topics):
                    out[w, k] += weight * exp_theta[k] * row[k]
            bound[d] = total - document_kl(gamma[d], alpha)


# -- collapsed VB: CVB0 and CVB -----------------------------------------------------------------


@njit(cache=True)
def entry_totals(entry_doc, entry_word, entry_count, gamma, variance, doc_out, word_out):
    """doc_out[d] += sum of the entries' c g (or c g (1 - g) with ``variance``) over document d's entries,
    word_out[w] likewise over word w's: the global counts (or their variances) from the entries' q(z)."""
    for e in range(gamma.shape[0]):
        d = entry_doc[e]
        w = entry_word[e]
        for k in range(gamma.shape[1]):
            value = entry_count[e] * gamma[e, k]
            if variance:
                value *= 1.0 - gamma[e, k]
            doc_out[d, k] += value
            word_out[w, k] += value


@njit(cache=True)
def _cvb0_weights(g, d, w, rest_length, doc_topic, word_topic, topic, alpha, eta, eta_total, weights):
    """weights_k = MEAN(N_wk - g_k; eta) MEAN(N_dk - g_k; alpha) for a token of word w in document d whose
    q(z) is g: CVB0's update before normalising (Asuncion et al. 2009, eq. 7); returns their sum."""
    alpha_total = alpha.sum()
    norm = 0.0
    for k in range(g.shape[0]):
        own = g[k]
        weights[k] = (mean_cell(word_topic[w, k] - own, eta, topic[k] - own, eta_total)
                      * mean_cell(doc_topic[d, k] - own, alpha[k], rest_length, alpha_total))
        norm += weights[k]
    return norm


@njit(cache=True)
def cvb0_entry(state, e):
    """CVB0's update of the tokens of entry e (Asuncion et al. 2009, eq. 7), for `leave_one_out`.

    Every token of the entry has the same q(z) = gamma[e]; each token's update leaves out its own
    q(z) and no other: q(z = k) ∝ MEAN(N_wk - g_k; eta) MEAN(N_dk - g_k; alpha).  All the entry's
    count copies move to the result at once.  Returns count * log of the normaliser (the leave-one-
    token-out predictive of the entry's tokens under the surrogate parameters).
    """
    (entry_doc, entry_word, entry_count, doc_length, gamma, doc_topic, word_topic, topic, alpha,
     eta, eta_total, scratch) = state
    d = entry_doc[e]
    w = entry_word[e]
    count = entry_count[e]
    g = gamma[e]
    n_topics = g.shape[0]
    norm = _cvb0_weights(g, d, w, doc_length[d] - 1.0, doc_topic, word_topic, topic, alpha, eta, eta_total, scratch)
    if not norm > 0.0:
        return -np.inf
    # the entry's count copies move to the new q(z) together: one pass over the three count rows
    for k in range(n_topics):
        new = scratch[k] / norm
        delta = count * (new - g[k])
        g[k] = new
        doc_topic[d, k] += delta
        word_topic[w, k] += delta
        topic[k] += delta
    return count * math.log(norm)


@njit(cache=True, nogil=True)
def cvb0_pass(state, order):
    """One CVB0 pass over the entries in ``order`` (the cached entry point of `leave_one_out`).  Without
    the GIL, so that the shards of one process (`lda_shards`) run it on threads at once."""
    return leave_one_out(cvb0_entry, state, order)


@njit(cache=True)
def _variance_correction(mean, variance, pseudo):
    """-Var n / (2 (a + E n)^2): the second-order term of E[log(a + n)] ≈ log(a + E n) - Var n / (2 (a + E n)^2),
    Teh et al. 2006's Gaussian approximation (eq. 16-17) for a count n summed from independent Bernoullis."""
    shifted = max(mean, 0.0) + pseudo
    return -max(variance, 0.0) / (2.0 * shifted * shifted)


@njit(cache=True)
def cvb_entry(state, e):
    """Teh et al.'s second-order collapsed VB update of the tokens of entry e (eq. 18), for
    `leave_one_out`.

    q(z = k) ∝ MEAN(N_wk - g_k; eta) MEAN(N_dk - g_k; alpha) times the Gaussian correction
    exp(-V_wk/(2(eta + N_wk)^2) - V_dk/(2(alpha + N_dk)^2) + V_k/(2(W eta + N_k)^2)), every count
    and variance V = sum g(1 - g) without the token's own.  Returns count * log of the normaliser.
    """
    (entry_doc, entry_word, entry_count, doc_length, gamma, doc_topic, word_topic, topic, alpha,
     eta, eta_total, scratch, doc_var, word_var, topic_var) = state
    d = entry_doc[e]
    w = entry_word[e]
    count = entry_count[e]
    g = gamma[e]
    n_topics = g.shape[0]
    alpha_total = alpha.sum()
    rest_length = doc_length[d] - 1.0
    peak = -np.inf
    for k in range(n_topics):
        own = g[k]
        own_var = own * (1.0 - own)
        rest_wk = word_topic[w, k] - own
        rest_dk = doc_topic[d, k] - own
        rest_k = topic[k] - own
        correction = (_variance_correction(rest_wk, word_var[w, k] - own_var, eta)
                      + _variance_correction(rest_dk, doc_var[d, k] - own_var, alpha[k])
                      - _variance_correction(rest_k, topic_var[k] - own_var, eta_total))
        scratch[k] = correction
        peak = max(peak, correction)
    norm = 0.0
    for k in range(n_topics):
        own = g[k]
        scratch[k] = (mean_cell(word_topic[w, k] - own, eta, topic[k] - own, eta_total)
                      * mean_cell(doc_topic[d, k] - own, alpha[k], rest_length, alpha_total)
                      * math.exp(scratch[k] - peak))
        norm += scratch[k]
    if not norm > 0.0:
        return -np.inf
    for k in range(n_topics):
        new = scratch[k] / norm
        old = g[k]
        delta = count * (new - old)
        delta_var = count * (new * (1.0 - new) - old * (1.0 - old))
        g[k] = new
        doc_topic[d, k] += delta
        word_topic[w, k] += delta
        topic[k] += delta
        doc_var[d, k] += delta_var
        word_var[w, k] += delta_var
        topic_var[k] += delta_var
    return count * (math.log(norm) + peak)


@njit(cache=True)
def cvb_pass(state, order):
    """One pass of Teh et al.'s CVB over the entries in ``order`` (`leave_one_out`)."""
    return leave_one_out(cvb_entry, state, order)


@parallel_over_chunks()
def cvb0_frozen_pass(doc_start, entry_word, entry_count, doc_length, gamma, doc_topic, word_topic, topic, alpha,
                     eta, eta_total, chunks, new_word_topic):
    """CVB0 with the topic-word counts frozen for the pass: documents in parallel.

    Each document updates its own topic counts token by token, as in `cvb0_entry`, but reads the
    topic-word counts N_wk and N_k of the start of the pass (each token still leaves out its own old
    q(z)); the new ones are summed per chunk into ``new_word_topic`` (chunks, W, K), and the caller
    replaces the counts with their sum.  A named approximation (stale counts, like AD-LDA's for Gibbs,
    Newman et al. 2009), not CVB0 itself.  Returns (sum of count * log normaliser, first bad entry).
    """
    n_topics = gamma.shape[1]
    objectives = np.zeros(chunks.shape[0] - 1)
    bad = np.full(chunks.shape[0] - 1, -1, dtype=np.int64)
    for chunk in prange(chunks.shape[0] - 1):
        scratch = np.empty(n_topics)
        out = new_word_topic[chunk]
        for d in range(chunks[chunk], chunks[chunk + 1]):
            for e in range(doc_start[d], doc_start[d + 1]):
                w = entry_word[e]
                count = entry_count[e]
                g = gamma[e]
                norm = _cvb0_weights(g, d, w, doc_length[d] - 1.0, doc_topic, word_topic, topic, alpha, eta,
                                     eta_total, scratch)
                if not norm > 0.0:
                    if bad[chunk] < 0:
                        bad[chunk] = e
                    continue
                for k in range(n_topics):
                    new = scratch[k] / norm
                    doc_topic[d, k] += count * (new - g[k])
                    g[k] = new
                    out[w, k] += count * new
                objectives[chunk] += count * math.log(norm)
    return objectives.sum(), first_bad(bad)


# -- SCVB0 ---------------------------------------------------------------------------------------


def local_log_keep(n_steps, kappa, tau0):
    """sum_{t' < t} log(1 - rho_t') for t = 0 .. n_steps, rho_t = (tau0 + t)^-kappa the schedule's step
    size: a clump of c tokens from step t keeps exp(L[t + c] - L[t]) of N_theta (SCVB0's local steps)."""
    rho = step_size(np.arange(n_steps, dtype=float), kappa, tau0)
    return np.concatenate([[0.0], np.cumsum(np.log1p(-np.minimum(rho, 1.0 - 1e-16)))])


@parallel_over_chunks()
def scvb0_minibatch(doc_start, entry_word, entry_count, table, alpha, burn_in, log_keep, chunks, sstats, log_z):
    """SCVB0's work on a minibatch of documents (Foulds et al. 2013, Algorithm 1), in parallel.

    ``table`` (rows, K) is MEAN of the global topic-word statistics, (N_wk + eta) / (N_k + W eta).  For
    each document: N_theta starts uniform (its length over K); ``burn_in`` passes then one more go over
    its tokens, each token setting gamma_k ∝ table[w, k] MEAN(N_theta; alpha)_k and moving N_theta
    towards length * gamma by the document's own Robbins-Monro steps (``log_keep``, `local_log_keep`);
    the c tokens of an entry take c steps with the same gamma (Foulds et al.'s clumping).  The last go
    adds c * gamma to ``sstats[chunk]`` at the entry's row and c log sum_k (the unnormalised gamma) to
    ``log_z[d]``.
    """
    n_topics = table.shape[1]
    alpha_total = alpha.sum()
    for chunk in prange(chunks.shape[0] - 1):
        theta = np.empty(n_topics)
        weights = np.empty(n_topics)
        out = sstats[chunk]
        for d in range(chunks[chunk], chunks[chunk + 1]):
            length = 0.0
            for e in range(doc_start[d], doc_start[d + 1]):
                length += entry_count[e]
            for k in range(n_topics):
                theta[k] = length / n_topics
            t = 0
            total = 0.0
            for sweep in range(burn_in + 1):
                last = sweep == burn_in
                for e in range(doc_start[d], doc_start[d + 1]):
                    w = entry_word[e]
                    count = entry_count[e]
                    norm = 0.0
                    for k in range(n_topics):
                        weights[k] = table[w, k] * mean_cell(theta[k], alpha[k], length, alpha_total)
                        norm += weights[k]
                    steps = int(count)
                    keep = math.exp(log_keep[t + steps] - log_keep[t])
                    t += steps
                    moved = (1.0 - keep) * length / norm
                    for k in range(n_topics):
                        theta[k] = keep * theta[k] + moved * weights[k]
                    if last:
                        weight = count / norm
                        for k in range(n_topics):
                            out[w, k] += weight * weights[k]
                        total += count * math.log(norm)
            log_z[d] = total


# -- collapsed Gibbs: SparseLDA's buckets, documents and vocabulary partitioned for threads ------

# `sparse_document` prefetches the word list of the token this many places on: the wait for a word's
# list (a cache miss, a third of the sampler's time on the news articles) then overlaps the tokens before
PREFETCH_AHEAD = 4


@njit(cache=True)
def topic_normaliser(topic_count, eta_total):
    """1 / (n_k + W eta), MEAN's normaliser of topic k's word row: mean_cell(0, 1, n_k, W eta).

    The sampler keeps it per topic and refreshes it when n_k changes, so that a draw's weights
    (n_dk + alpha_k) (n_wk + eta) / (n_k + W eta) = (n_dk + alpha_k) mean_cell(n_wk, eta, n_k, W eta)
    cost multiplications only.
    """
    return mean_cell(0.0, 1.0, topic_count, eta_total)


@njit(cache=True)
def word_lists(token_word, assignment, n_words, n_topics):
    """Each word's topics of nonzero count as (topic, count) pairs: word w's are the rows
    ``list_start[w] .. list_start[w] + list_length[w] - 1`` of ``pairs`` (n, 2) int32, with room for
    min(K, frequency of w) of them.  Returns (pairs, list_start, list_length)."""
    frequency = np.zeros(n_words, dtype=np.int64)
    for i in range(token_word.shape[0]):
        frequency[token_word[i]] += 1
    list_start = np.zeros(n_words + 1, dtype=np.int64)
    for w in range(n_words):
        list_start[w + 1] = list_start[w] + min(frequency[w], n_topics)
    pairs = np.zeros((list_start[n_words], 2), dtype=np.int32)
    list_length = np.zeros(n_words, dtype=np.int32)
    for i in range(token_word.shape[0]):
        _list_add(pairs, list_start[token_word[i]], list_length, token_word[i], assignment[i])
    return pairs, list_start, list_length


@njit(cache=True)
def _list_add(pairs, first, list_length, w, k):
    """One more token of word w on topic k: its pair's count + 1, or the pair (k, 1) in the first
    pair of count 0 (left by `sparse_document`) or at the end."""
    free = -1
    for j in range(first, first + list_length[w]):
        if pairs[j, 0] == k:
            pairs[j, 1] += 1
            return
        if free < 0 and pairs[j, 1] == 0:
            free = j
    if free < 0:
        free = first + list_length[w]
        list_length[w] += 1
    pairs[free, 0] = k
    pairs[free, 1] = 1


@njit(cache=True)
def compact_word_lists(pairs, list_start, list_length, word_from, word_to):
    """Drop the pairs of count 0 of words word_from .. word_to - 1, heaviest first: the sampler leaves
    a word's emptied topics in its list during a sweep (dropping one would cost a search) and a heavy
    topic early ends the word bucket's search sooner."""
    for w in range(word_from, word_to):
        first = list_start[w]
        kept = 0
        for j in range(first, first + list_length[w]):
            if pairs[j, 1] > 0:
                topic, count = pairs[j, 0], pairs[j, 1]
                at = first + kept
                while at > first and pairs[at - 1, 1] < count:  # insertion sort, heaviest first
                    pairs[at, 0], pairs[at, 1] = pairs[at - 1, 0], pairs[at - 1, 1]
                    at -= 1
                pairs[at, 0], pairs[at, 1] = topic, count
                kept += 1
        list_length[w] = kept


@njit(cache=True)
def word_topic_counts(pairs, list_start, list_length, n_topics):
    """The dense (W, K) topic-word counts from the word lists."""
    out = np.zeros((list_length.shape[0], n_topics), dtype=np.int32)
    for w in range(list_length.shape[0]):
        for j in range(list_start[w], list_start[w] + list_length[w]):
            out[w, pairs[j, 0]] += pairs[j, 1]
    return out


@njit(cache=True)
def _moved(old_count, step, topic_count, old_normaliser, alpha_k, eta, eta_total, smoothing, in_document):
    """After n_dk (was ``old_count``) and n_k (now ``topic_count``) moved by ``step``: topic k's
    normaliser and word-bucket coefficient (n_dk + alpha_k) / (n_k + W eta), and the smoothing mass
    sum alpha_k eta / (n_k + W eta) and document mass sum n_dk eta / (n_k + W eta) (Yao et al. 2009,
    eq. 2) updated from their old values.  Scalars only: a call with arrays would pay numba's
    reference counts on every token."""
    normaliser = topic_normaliser(np.float64(topic_count), eta_total)
    count = old_count + step
    return (normaliser, (count + alpha_k) * normaliser, smoothing + alpha_k * eta * (normaliser - old_normaliser),
            in_document + eta * (count * normaliser - old_count * old_normaliser))


@njit(cache=True)
def sparse_document(state, d, power):
    """Redraw the topics of document d's tokens in ``first[d] .. stop[d] - 1`` in turn from
    p(z_i = k | rest) ∝ (n_dk + alpha_k) MEAN(n_wk; eta)_k over the counts without token i (Griffiths
    and Steyvers 2004, eq. 5), split as SparseLDA does (Yao, Mimno and McCallum 2009, eq. 2) into
    alpha_k eta / (n_k + W eta) (smoothing), n_dk eta / (n_k + W eta) (document) and
    (n_dk + alpha_k) n_wk / (n_k + W eta) (word): the first two masses are kept up to date as counts
    move, the third summed over the word's list of nonzero topics, so that a token costs the word's
    topics (3 to 8 on the benchmark's corpora once the chain has settled) rather than K.  A bucket is
    picked by its mass, then a topic inside it.  Exact: every draw is from the full conditional.

    The document's tokens are grouped by word, so a word's list stays in cache over its repeats, and
    the list of the token `PREFETCH_AHEAD` places on is prefetched.
    Draws come from the block's own xorshift generator (``generator``, `core.sampling.next_uniform`).
    LDA does not anneal: ``power`` (the `schedules.gibbs` signature's) is 1.
    """
    (token_word, assignment, first, stop, doc_topic, topic, normaliser, pairs, list_start, list_length, alpha,
     eta, eta_total, coefficient, cumulative, generator) = state
    n_topics = topic.shape[0]
    smoothing = 0.0
    in_document = 0.0
    for k in range(n_topics):
        smoothing += alpha[k] * eta * normaliser[k]
        in_document += eta * doc_topic[d, k] * normaliser[k]
        coefficient[k] = (doc_topic[d, k] + alpha[k]) * normaliser[k]
    x = generator[0]
    for i in range(first[d], stop[d]):
        w = token_word[i]
        z = assignment[i]
        if i + PREFETCH_AHEAD < token_word.shape[0]:  # the list of a word some tokens on: a third off a token
            prefetch(pairs, list_start[token_word[i + PREFETCH_AHEAD]])
        old_count, old_normaliser = doc_topic[d, z], normaliser[z]
        doc_topic[d, z] -= 1
        topic[z] -= 1
        normaliser[z], coefficient[z], smoothing, in_document = _moved(
            old_count, -1, topic[z], old_normaliser, alpha[z], eta, eta_total, smoothing, in_document)
        # the word bucket, taking the token out of its word's list on the way (a pair emptied stays,
        # weighing nothing, until `compact_word_lists`)
        row = list_start[w]
        n_pairs = list_length[w]
        in_word = 0.0
        for j in range(n_pairs):
            k = pairs[row + j, 0]
            count = pairs[row + j, 1] - (k == z)
            pairs[row + j, 1] = count
            in_word += coefficient[k] * count
            cumulative[j] = in_word
        x, u = next_uniform(x)
        u *= in_word + in_document + smoothing
        if u < in_word:
            j = 0
            while j < n_pairs - 1 and cumulative[j] <= u:
                j += 1
            z = pairs[row + j, 0]
            pairs[row + j, 1] += 1
        else:
            u -= in_word
            if u < in_document:  # the document bucket: topics with n_dk > 0
                for k in range(n_topics):
                    if doc_topic[d, k] > 0:
                        z = k
                        u -= eta * doc_topic[d, k] * normaliser[k]
                        if u < 0.0:
                            break
            else:  # smoothing
                u -= in_document
                for k in range(n_topics):
                    z = k
                    u -= alpha[k] * eta * normaliser[k]
                    if u < 0.0:
                        break
            _list_add(pairs, row, list_length, w, z)
        assignment[i] = z
        old_count, old_normaliser = doc_topic[d, z], normaliser[z]
        doc_topic[d, z] += 1
        topic[z] += 1
        normaliser[z], coefficient[z], smoothing, in_document = _moved(
            old_count, 1, topic[z], old_normaliser, alpha[z], eta, eta_total, smoothing, in_document)
    generator[0] = x
    return True


@njit(cache=True)
def _sample_block(token_word, assignment, first, stop, doc_topic, topic, normaliser, pairs, list_start,
                  list_length, alpha, eta, eta_total, doc_from, doc_to, generator):
    """`sparse_document` over documents doc_from .. doc_to - 1, each on its tokens first[d] .. stop[d] - 1."""
    n_topics = topic.shape[0]
    state = (token_word, assignment, first, stop, doc_topic, topic, normaliser, pairs, list_start, list_length,
             alpha, eta, eta_total, np.empty(n_topics), np.empty(n_topics), generator)
    gibbs(sparse_document, state, np.arange(doc_from, doc_to), 1.0)


@njit(cache=True)
def gibbs_sweep(token_word, assignment, token_start, doc_topic, topic, normaliser, pairs, list_start, list_length,
                alpha, eta, eta_total, seed, sweep):
    """One sweep of the exact collapsed Gibbs sampler, `sparse_document` over every document in turn,
    drawing from a generator seeded by (seed, sweep): a sweep resumes without a saved generator."""
    compact_word_lists(pairs, list_start, list_length, 0, list_length.shape[0])
    _sample_block(token_word, assignment, token_start[:-1], token_start[1:], doc_topic, topic, normaliser, pairs,
                  list_start, list_length, alpha, eta, eta_total, 0, token_start.shape[0] - 1,
                  unit_generator(seed, sweep))


def partitioned_gibbs_sweep(token_word, assignment, doc_topic, topic, normaliser, pairs, list_start, list_length,
                            alpha, eta, eta_total, doc_parts, word_bounds, word_offsets, seed, sweep):
    """One sweep of the partitioned parallel sampler of Yan, Xu and Qi (2009) (tomotopy's default) with
    `sparse_document`, on P = len(doc_parts) - 1 partitions, one thread each.

    Documents are cut into P parts (``doc_parts``) and the vocabulary into P parts (``word_bounds``; a
    document's tokens of vocabulary part q are ``word_offsets[q, d] .. word_offsets[q + 1, d] - 1``),
    both of equal tokens; in step s = 0 .. P - 1 thread p samples the block (documents p, words
    (p + s) mod P), so no two threads share a document's counts or a word's, and each keeps its own
    copy of the topic totals n_k, merged after the step.  The one approximation: within a step a
    thread's draws do not see the other threads' changes to n_k.  P = 1 is `gibbs_sweep`.

    Block (step s, part p) of sweep t draws from its own generator seeded by (seed, (t P + s) P + p):
    a sweep depends on P and the seed, never on the threads.  The blocks run on Python threads (the
    kernel releases the GIL), which wait for the step's end asleep: numba's OpenMP loop spun while
    waiting, and on a loaded machine that spinning took the time its partner needed (two threads ran
    slower than one).
    """
    n_parts = doc_parts.shape[0] - 1
    n_topics = topic.shape[0]
    # the threads' copies a cache line (64 bytes) apart at least, or a token's count moves would make
    # the line they share bounce between the cores
    local_topic = np.empty((n_parts, n_topics + 8), dtype=topic.dtype)
    local_normaliser = np.empty((n_parts, n_topics + 8))
    pool = _block_threads(n_parts)
    for step in range(n_parts):
        local_topic[:, :n_topics] = topic
        local_normaliser[:, :n_topics] = normaliser
        blocks = [pool.submit(_partition_block, token_word, assignment, doc_topic, local_topic[part, :n_topics],
                              local_normaliser[part, :n_topics], pairs, list_start, list_length, alpha, eta, eta_total,
                              doc_parts, word_bounds, word_offsets, seed, sweep, step, part)
                  for part in range(n_parts)]
        for block in blocks:
            block.result()
        _merge_topic_totals(topic, normaliser, local_topic, eta_total)


_POOLS = {}


def _block_threads(n_threads):
    """A pool of ``n_threads`` threads, kept for the next sweeps."""
    if n_threads not in _POOLS:
        _POOLS[n_threads] = ThreadPoolExecutor(n_threads, thread_name_prefix="cvbayes-lda")
    return _POOLS[n_threads]


@njit(nogil=True, cache=True)
def _partition_block(token_word, assignment, doc_topic, topic, normaliser, pairs, list_start, list_length, alpha,
                     eta, eta_total, doc_parts, word_bounds, word_offsets, seed, sweep, step, part):
    """Block (step, part) of `partitioned_gibbs_sweep` on the thread's own topic totals; in the first
    step it first compacts its words' lists, which no other thread touches in that step."""
    n_parts = doc_parts.shape[0] - 1
    words = (part + step) % n_parts
    if step == 0:
        compact_word_lists(pairs, list_start, list_length, word_bounds[words], word_bounds[words + 1])
    _sample_block(token_word, assignment, word_offsets[words], word_offsets[words + 1], doc_topic, topic, normaliser,
                  pairs, list_start, list_length, alpha, eta, eta_total, doc_parts[part], doc_parts[part + 1],
                  unit_generator(seed, (sweep * n_parts + step) * n_parts + part))


@njit(cache=True)
def _merge_topic_totals(topic, normaliser, local_topic, eta_total):
    """n_k += the sum of the threads' changes to their copies, and the normalisers anew."""
    for k in range(topic.shape[0]):
        total = topic[k]
        for part in range(local_topic.shape[0]):
            total += local_topic[part, k] - topic[k]
        topic[k] = total
        normaliser[k] = topic_normaliser(np.float64(total), eta_total)


@njit(cache=True)
def partition_offsets(token_word, token_start, word_bounds):
    """(P + 1, D): where each document's tokens of vocabulary part q (words word_bounds[q] ..
    word_bounds[q + 1] - 1) start; a document's tokens are sorted by word."""
    n_parts = word_bounds.shape[0] - 1
    n_documents = token_start.shape[0] - 1
    offsets = np.empty((n_parts + 1, n_documents), dtype=np.int64)
    for d in range(n_documents):
        i = token_start[d]
        for q in range(n_parts):
            while i < token_start[d + 1] and token_word[i] < word_bounds[q]:
                i += 1
            offsets[q, d] = i
        offsets[n_parts, d] = token_start[d + 1]
    return offsets


@njit(cache=True)
def log_gamma_ratios(prior, largest):
    """lgamma(n + prior) - lgamma(prior) for n = 0 .. largest: a count's term of a Dirichlet-multinomial."""
    out = np.empty(largest + 1)
    base = math.lgamma(prior)
    for n in range(largest + 1):
        out[n] = math.lgamma(n + prior) - base
    return out


@njit(cache=True)
def gibbs_log_joint(doc_topic, doc_length, topic, pairs, list_start, list_length, alpha, eta, n_words, eta_terms):
    """log p(w, z | alpha, eta) = sum_d log DirMult(n_d. | alpha) + sum_k log DirMult(n_.k | eta)
    (Griffiths and Steyvers 2004, eq. 2-3; `core.rules.dirichlet_log_marginal` of both count tables),
    with log Gamma taken only at nonzero counts (the others add nothing) and looked up in tables:
    ``eta_terms`` = `log_gamma_ratios` (eta, the largest word frequency), and alpha's when alpha is
    symmetric (then computed here, as alpha may have been learnt).  One thread: on a loaded machine the
    two parallel loops cost more in waking threads than they saved (a Brown sweep on two threads took
    twice as long)."""
    n_topics = alpha.shape[0]
    alpha_total = 0.0
    symmetric = True
    for k in range(n_topics):
        alpha_total += alpha[k]
        symmetric = symmetric and alpha[k] == alpha[0]
    longest = 0
    for d in range(doc_length.shape[0]):
        longest = max(longest, int(doc_length[d]))
    alpha_terms = log_gamma_ratios(alpha[0], longest if symmetric else 0)
    total = 0.0
    for d in range(doc_topic.shape[0]):
        total += math.lgamma(alpha_total) - math.lgamma(alpha_total + doc_length[d])
        for k in range(n_topics):
            count = doc_topic[d, k]
            if count > 0:
                total += alpha_terms[count] if symmetric else math.lgamma(count + alpha[k]) - math.lgamma(alpha[k])
    eta_total = n_words * eta
    for k in range(topic.shape[0]):
        total += math.lgamma(eta_total) - math.lgamma(eta_total + topic[k])
    for w in range(list_length.shape[0]):
        for j in range(list_start[w], list_start[w] + list_length[w]):
            total += eta_terms[pairs[j, 1]]
    return total

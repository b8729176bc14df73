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
* `gibbs_document`: the collapsed Gibbs sampler's draws for a document's tokens (Griffiths and
  Steyvers 2004), for `cvbayes.schedules.gibbs`.
"""
import math

import numpy as np
from numba import njit, prange

from ..core.rules import log_geometric_cell, mean_cell
from ..core.sampling import draw
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


@njit(cache=True)
def cvb0_pass(state, order):
    """One CVB0 pass over the entries in ``order`` (the cached entry point of `leave_one_out`)."""
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


# -- collapsed Gibbs -----------------------------------------------------------------------------


@njit(cache=True)
def topic_normaliser(topic_count, eta_total):
    """1 / (n_k + W eta), MEAN's normaliser of topic k's word row: mean_cell(0, 1, n_k, W eta).

    The sampler keeps it per topic and refreshes it when n_k changes, so that a draw's weights
    (n_dk + alpha_k) (n_wk + eta) / (n_k + W eta) = (n_dk + alpha_k) mean_cell(n_wk, eta, n_k, W eta)
    cost multiplications only.
    """
    return mean_cell(0.0, 1.0, topic_count, eta_total)


@njit(cache=True)
def gibbs_document(state, d, power):
    """Redraw the topic of each token of document d in turn from p(z_i = k | rest) ∝ (n_dk + alpha_k)
    MEAN(n_wk; eta)_k over the counts without token i (Griffiths and Steyvers 2004, eq. 5), with
    `core.sampling.draw`.

    The Gibbs schedule's site is the document: its tokens are still redrawn one at a time (a systematic
    scan), and a call per document instead of per token saves the call's cost (about 100 ns a token).
    """
    token_word, token_start, assignment, doc_topic, word_topic, topic, normaliser, alpha, eta, eta_total, weights = state
    n_topics = weights.shape[0]
    for i in range(token_start[d], token_start[d + 1]):
        w = token_word[i]
        z = assignment[i]
        doc_topic[d, z] -= 1
        word_topic[w, z] -= 1
        topic[z] -= 1
        normaliser[z] = topic_normaliser(np.float64(topic[z]), eta_total)
        for k in range(n_topics):
            weights[k] = (doc_topic[d, k] + alpha[k]) * (word_topic[w, k] + eta) * normaliser[k]
        z = draw(weights, n_topics, power)
        assignment[i] = z
        doc_topic[d, z] += 1
        word_topic[w, z] += 1
        topic[z] += 1
        normaliser[z] = topic_normaliser(np.float64(topic[z]), eta_total)
    return True


@njit(cache=True)
def gibbs_pass(state, order, power):
    """One Gibbs sweep over the documents in ``order`` (the cached entry point of `gibbs`)."""
    return gibbs(gibbs_document, state, order, power)


# -- collapsed Gibbs with SparseLDA's buckets -----------------------------------------------------


@njit(cache=True)
def build_topic_lists(word_topic, start, topics, length, position):
    """Each word's topics of nonzero count, as SparseLDA keeps them (Yao, Mimno and McCallum 2009):
    word w's list is topics[start[w] : start[w] + length[w]], and position[w, k] is k's index in it
    (-1 when n_wk = 0).  Unsorted: a topic joins at the end and leaves by swapping with the last."""
    for w in range(word_topic.shape[0]):
        length[w] = 0
        for k in range(word_topic.shape[1]):
            position[w, k] = -1
            if word_topic[w, k] > 0:
                topics[start[w] + length[w]] = k
                position[w, k] = length[w]
                length[w] += 1


@njit(cache=True)
def _list_add(topics, start, length, position, row, k):
    position[row, k] = length[row]
    topics[start[row] + length[row]] = k
    length[row] += 1


@njit(cache=True)
def _list_remove(topics, start, length, position, row, k):
    at = position[row, k]
    last = topics[start[row] + length[row] - 1]
    topics[start[row] + at] = last
    position[row, last] = at
    position[row, k] = -1
    length[row] -= 1


@njit(cache=True)
def gibbs_document_sparse(state, d, power):
    """`gibbs_document` with SparseLDA's three buckets (Yao, Mimno and McCallum 2009): the weight of
    topic k, (n_dk + alpha_k)(n_wk + eta) / (n_k + W eta), splits into alpha_k eta / (.) (smoothing,
    its total kept up to date), n_dk eta / (.) (the document's topics) and (n_dk + alpha_k) n_wk / (.)
    (the word's topics, from its list of nonzero counts); a bucket is drawn by its mass, then a topic
    inside it, both with `core.sampling.draw`.  A token costs the word's and the document's nonzero
    topics instead of K.  Exact for ``power`` = 1 (the buckets do not temper); other powers fall back
    to the dense draw."""
    (token_word, token_start, assignment, doc_topic, word_topic, topic, normaliser, alpha, eta, eta_total, weights,
     word_topics, word_start, word_length, word_position, coefficient, masses, doc_topics, doc_start, doc_length,
     doc_position) = state
    if power != 1.0:
        return gibbs_document(state[:11], d, power)
    n_topics = weights.shape[0]
    # the document's nonzero topics: one list (row 0 of the doc_* arrays), rebuilt per document
    doc_length[0] = 0
    smoothing = 0.0
    in_document = 0.0
    for k in range(n_topics):
        doc_position[0, k] = -1
        if doc_topic[d, k] > 0:
            _list_add(doc_topics, doc_start, doc_length, doc_position, 0, k)
            in_document += doc_topic[d, k] * eta * normaliser[k]
        smoothing += alpha[k] * eta * normaliser[k]
        coefficient[k] = (doc_topic[d, k] + alpha[k]) * normaliser[k]
    for i in range(token_start[d], token_start[d + 1]):
        w = token_word[i]
        z = assignment[i]
        for sign in (-1, 1):
            if sign == 1:
                # draw: the word bucket's weights first (they decide most draws)
                in_word = 0.0
                first = word_start[w]
                for j in range(word_length[w]):
                    k = word_topics[first + j]
                    weights[j] = coefficient[k] * word_topic[w, k]
                    in_word += weights[j]
                masses[0] = smoothing
                masses[1] = in_document
                masses[2] = in_word
                bucket = draw(masses, 3, 1.0)
                if bucket == 2:
                    z = word_topics[first + draw(weights, word_length[w], 1.0)]
                elif bucket == 1:
                    for j in range(doc_length[0]):
                        k = doc_topics[j]
                        weights[j] = doc_topic[d, k] * eta * normaliser[k]
                    z = doc_topics[draw(weights, doc_length[0], 1.0)]
                else:
                    for k in range(n_topics):
                        weights[k] = alpha[k] * eta * normaliser[k]
                    z = draw(weights, n_topics, 1.0)
                assignment[i] = z
            old_normaliser = normaliser[z]
            old_doc = doc_topic[d, z]
            doc_topic[d, z] += sign
            word_topic[w, z] += sign
            topic[z] += sign
            normaliser[z] = topic_normaliser(np.float64(topic[z]), eta_total)
            smoothing += alpha[z] * eta * (normaliser[z] - old_normaliser)
            in_document += eta * (doc_topic[d, z] * normaliser[z] - old_doc * old_normaliser)
            coefficient[z] = (doc_topic[d, z] + alpha[z]) * normaliser[z]
            if sign == -1:
                if doc_topic[d, z] == 0:
                    _list_remove(doc_topics, doc_start, doc_length, doc_position, 0, z)
                if word_topic[w, z] == 0:
                    _list_remove(word_topics, word_start, word_length, word_position, w, z)
            else:
                if doc_topic[d, z] == 1:
                    _list_add(doc_topics, doc_start, doc_length, doc_position, 0, z)
                if word_topic[w, z] == 1:
                    _list_add(word_topics, word_start, word_length, word_position, w, z)
    return True


@njit(cache=True)
def gibbs_pass_sparse(state, order, power):
    """One sweep of `gibbs_document_sparse` over the documents in ``order`` (`gibbs`)."""
    return gibbs(gibbs_document_sparse, state, order, power)

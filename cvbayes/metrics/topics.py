"""Topic-model evaluation that any system's topic-word matrix goes through alike.

* `document_completion`: held-out document-completion perplexity (Wallach et al. 2009, §4; Asuncion et
  al. 2009, §5).  Each held-out document is cut into halves; its topic proportions are folded in on
  the first half with the topics held fixed, and the second half is scored:
  log p(w | first half) = sum_i log sum_k theta_k phi_k,w_i.  The fold-in is the same fixed point for
  every system: q(z_i = k) ∝ phi_k,w_i theta_k, theta = MEAN(sum_i q(z_i); alpha) (the posterior mean
  of the document's proportions given the expected counts), iterated to convergence.
* `npmi_coherence`: the normalised pointwise mutual information of each topic's top words (Bouma 2009;
  Lau et al. 2014), from their document co-occurrences in a reference corpus.
"""
from typing import NamedTuple

import numpy as np
import scipy.sparse
from numba import njit, prange

from ..core.rules import mean_cell
from ..core.units import equal_token_chunks, parallel_over_chunks
from ..data.corpus import Corpus
from ..data.documents import document_term_matrix

FOLD_IN_ITERATIONS = 200
FOLD_IN_TOLERANCE = 1e-6


class Completion(NamedTuple):
    """The result of `document_completion`: the scored halves' total log-likelihood, their token
    count and the perplexity exp(-log_likelihood / n_tokens)."""

    log_likelihood: float
    n_tokens: int
    perplexity: float


def split_halves(documents, seed=0):
    """Cut every document into its first and second half of tokens: two CSR count matrices.

    ``documents`` is a `cvbayes.data.Corpus` (reading order: the first half is the first
    floor(n / 2) tokens) or a CSR document-term matrix, whose tokens have no order: each
    document's tokens are then shuffled with ``seed`` before cutting.
    """
    if isinstance(documents, Corpus):
        n_words = len(documents.vocabulary) if documents.vocabulary is not None else None
        words = documents.observations
        starts, lengths = documents.offsets[:-1], np.diff(documents.offsets)
    else:
        matrix = scipy.sparse.csr_matrix(documents)
        matrix.sum_duplicates()
        n_words = matrix.shape[1]
        rng = np.random.default_rng(seed)
        words = np.repeat(matrix.indices, np.asarray(matrix.data).astype(np.int64))
        lengths = np.asarray(matrix.sum(axis=1)).ravel().astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        for start, length in zip(starts, lengths):
            rng.shuffle(words[start:start + length])
    if n_words is None:
        n_words = int(words.max(initial=-1)) + 1
    n_documents = len(lengths)
    position = np.arange(words.shape[0]) - np.repeat(starts, lengths)
    first = position < np.repeat(lengths // 2, lengths)
    rows = np.repeat(np.arange(n_documents), lengths)
    halves = []
    for mask in (first, ~first):
        half = scipy.sparse.csr_matrix((np.ones(int(mask.sum())), (rows[mask], words[mask])),
                                       shape=(n_documents, n_words))
        half.sum_duplicates()
        halves.append(half)
    return halves[0], halves[1]


@njit(cache=True)
def _fold_in_document(start, stop, entry_word, entry_count, phi, alpha, alpha_total, max_iter, tol, theta,
                      expected):
    """theta = MEAN(expected counts; alpha), expected_k = sum_w c_w phi[w, k] theta_k / sum_j phi[w, j]
    theta_j, iterated from the uniform theta until the largest change is below ``tol``."""
    n_topics = phi.shape[1]
    length = 0.0
    for e in range(start, stop):
        length += entry_count[e]
    for k in range(n_topics):
        theta[k] = 1.0 / n_topics
    for _ in range(max_iter):
        for k in range(n_topics):
            expected[k] = 0.0
        for e in range(start, stop):
            row = phi[entry_word[e]]
            norm = 0.0
            for k in range(n_topics):
                norm += row[k] * theta[k]
            if norm > 0.0:
                weight = entry_count[e] / norm
                for k in range(n_topics):
                    expected[k] += weight * row[k] * theta[k]
        change = 0.0
        for k in range(n_topics):
            value = mean_cell(expected[k], alpha[k], length, alpha_total)
            change = max(change, abs(value - theta[k]))
            theta[k] = value
        if change < tol:
            break


@parallel_over_chunks()
def fold_in(doc_start, entry_word, entry_count, phi, alpha, max_iter, tol, chunks, theta):
    """Fold every document of the CSR arrays in: theta[d] (D, K) for topics ``phi`` (W, K, columns of
    each topic's word distribution), in parallel over ``chunks`` of documents."""
    n_topics = phi.shape[1]
    alpha_total = alpha.sum()
    for chunk in prange(chunks.shape[0] - 1):
        expected = np.empty(n_topics)
        for d in range(chunks[chunk], chunks[chunk + 1]):
            _fold_in_document(doc_start[d], doc_start[d + 1], entry_word, entry_count, phi, alpha, alpha_total,
                              max_iter, tol, theta[d], expected)


@parallel_over_chunks()
def _score(doc_start, entry_word, entry_count, phi, theta, chunks):
    """sum over entries of c_w log sum_k theta[d, k] phi[w, k], in parallel over chunks of documents."""
    totals = np.zeros(chunks.shape[0] - 1)
    n_topics = phi.shape[1]
    for chunk in prange(chunks.shape[0] - 1):
        for d in range(chunks[chunk], chunks[chunk + 1]):
            for e in range(doc_start[d], doc_start[d + 1]):
                row = phi[entry_word[e]]
                p = 0.0
                for k in range(n_topics):
                    p += theta[d, k] * row[k]
                totals[chunk] += entry_count[e] * np.log(p)
    return totals.sum()


def _csr_arrays(matrix):
    matrix = scipy.sparse.csr_matrix(matrix)
    matrix.sum_duplicates()
    return (np.ascontiguousarray(matrix.indptr, dtype=np.int64), np.ascontiguousarray(matrix.indices, dtype=np.int32),
            np.ascontiguousarray(matrix.data, dtype=np.float64))


def _word_columns(topic_word):
    """The topics as a (W, K) table of probabilities, from a (K, W) matrix of weights or counts."""
    topic_word = np.asarray(topic_word, dtype=float)
    if topic_word.ndim != 2 or not np.all(np.isfinite(topic_word)) or topic_word.min() < 0:
        raise ValueError("the topic-word matrix must be a finite, non-negative (K, W) array")
    totals = topic_word.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("every topic needs positive weight on some word")
    return np.ascontiguousarray((topic_word / totals).T)


def _alpha_row(alpha, n_topics):
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), (n_topics,)).copy()
    if np.any(alpha <= 0):
        raise ValueError("alpha must be positive")
    return alpha


def document_topics(topic_word, documents, alpha, max_iter=FOLD_IN_ITERATIONS, tol=FOLD_IN_TOLERANCE):
    """Topic proportions (D, K) of ``documents`` (a CSR document-term matrix or a Corpus) folded in on the topics of
    ``topic_word`` (K, W; each row normalised here) with the prior ``alpha`` (scalar or (K,))."""
    phi = _word_columns(topic_word)
    if isinstance(documents, Corpus):
        documents = document_term_matrix(documents, phi.shape[0])
    doc_start, entry_word, entry_count = _csr_arrays(documents)
    if entry_word.size and entry_word.max() >= phi.shape[0]:
        raise ValueError(f"the documents have {documents.shape[1]} words, the topics {phi.shape[0]}")
    theta = np.empty((doc_start.shape[0] - 1, phi.shape[1]))
    fold_in(doc_start, entry_word, entry_count, phi, _alpha_row(alpha, phi.shape[1]), max_iter, tol,
            equal_token_chunks(doc_start, phi.shape[1] * max(max_iter, 1)), theta)
    return theta


def document_completion(topic_word, documents, alpha, seed=0, max_iter=FOLD_IN_ITERATIONS,
                        tol=FOLD_IN_TOLERANCE):
    """Held-out document-completion perplexity of the topics ``topic_word`` (K, W).

    Parameters
    ----------
    topic_word : (K, W) array of topic-word weights (probabilities, or pseudo-counts such as a
        scikit-learn ``components_``; each row is normalised)
    documents : held-out documents, a `Corpus` (first half in reading order) or a CSR matrix (halves
        drawn with ``seed``; see `split_halves`)
    alpha : the document-topic prior of the fold-in, scalar or (K,)

    Returns
    -------
    Completion
        The second halves' log-likelihood given the first halves, their token count, the perplexity.
    """
    first, second = split_halves(documents, seed)
    theta = document_topics(topic_word, first, alpha, max_iter, tol)
    phi = _word_columns(topic_word)
    doc_start, entry_word, entry_count = _csr_arrays(second)
    with np.errstate(divide="ignore"):
        log_likelihood = float(_score(doc_start, entry_word, entry_count, phi, theta,
                                      equal_token_chunks(doc_start, phi.shape[1])))
    n_tokens = int(entry_count.sum())
    return Completion(log_likelihood, n_tokens, float(np.exp(-log_likelihood / max(n_tokens, 1))))


def top_words(topic_word, n=10):
    """The ids of each topic's ``n`` heaviest words, heaviest first: (K, n)."""
    topic_word = np.asarray(topic_word)
    n = min(n, topic_word.shape[1])
    top = np.argpartition(-topic_word, n - 1, axis=1)[:, :n]
    order = np.argsort(-np.take_along_axis(topic_word, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def npmi_coherence(topic_word, reference, n=10):
    """NPMI coherence of each topic's top ``n`` words: the mean over their pairs of
    log(P(a, b) / (P(a) P(b))) / -log P(a, b), with P the fraction of reference documents holding the
    words (Bouma 2009; Lau et al. 2014), and -1 for a pair never seen together.

    Parameters
    ----------
    topic_word : (K, W) topic-word weights
    reference : CSR document-term matrix (or `Corpus`) of the reference documents

    Returns
    -------
    numpy.ndarray (K,)
        One coherence a topic, in [-1, 1]; their mean is the usual single figure.
    """
    if isinstance(reference, Corpus):
        reference = document_term_matrix(reference)
    present = (scipy.sparse.csr_matrix(reference) > 0).astype(np.float64).tocsc()
    top = top_words(topic_word, n)
    words, local = np.unique(top, return_inverse=True)
    local = local.reshape(top.shape)
    columns = present[:, words]
    n_documents = present.shape[0]
    together = (columns.T @ columns).toarray() / n_documents
    alone = np.diag(together)
    scores = np.empty(top.shape[0])
    upper = np.triu_indices(top.shape[1], 1)
    for topic, ids in enumerate(local):
        joint = together[np.ix_(ids, ids)][upper]
        single = alone[ids]
        marginal = single[upper[0]] * single[upper[1]]
        with np.errstate(divide="ignore", invalid="ignore"):
            npmi = np.where(joint >= 1.0, 1.0, np.log(joint / marginal) / -np.log(joint))
        scores[topic] = np.where(joint > 0, npmi, -1.0).mean()
    return scores

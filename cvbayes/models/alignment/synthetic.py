"""Planted parallel corpora: sentence pairs drawn from a known HMM aligner, with their links."""
from __future__ import annotations

import numpy as np

from ...data.vocabulary import Vocabulary
from .corpus import ParallelCorpus

__all__ = ["sample_parallel_corpus"]


def sample_parallel_corpus(n_pairs: int, n_source_types: int = 20, n_target_types: int = 20,
                           min_length: int = 4, max_length: int = 10, null_prob: float = 0.1,
                           seed: int = 0) -> tuple[ParallelCorpus, list[set[tuple[int, int]]]]:
    """Draw a corpus from a near-diagonal HMM aligner (Vogel et al. 1996) and return its true links.

    Source sentences have I ~ U{min_length .. max_length} words drawn
    uniformly; target sentences have J = I + U{-1, 0, 1} words.  Target word j
    is NULL-generated with probability ``null_prob`` (no link), else aligned
    to a_j = clip(a + jump, 0, I - 1), a the previous real alignment (-1 at
    the start) and jump = +1, 0, +2, -1 with probabilities .7, .1, .1, .1;
    it is then drawn from t(. | f_{a_j}): the source word's own translation
    with probability .8, one of two alternatives with .1 each.  NULL draws
    one of three "function words".  Vocabularies are ``s0, s1, ...`` and
    ``t0, t1, ...``.

    Returns
    -------
    corpus : ParallelCorpus
    links : list of set of (source_i, target_j), the planted alignment
    """
    rng = np.random.default_rng(seed)
    main = rng.permutation(n_target_types)[np.arange(n_source_types) % n_target_types]
    alternatives = rng.integers(0, n_target_types, size=(n_source_types, 2))
    function_words = rng.choice(n_target_types, size=3, replace=False)
    jumps, jump_probs = np.array([1, 0, 2, -1]), np.array([0.7, 0.1, 0.1, 0.1])
    source, target, links = [], [], []
    for _ in range(n_pairs):
        n_src = int(rng.integers(min_length, max_length + 1))
        n_tgt = max(1, n_src + int(rng.integers(-1, 2)))
        f = rng.integers(0, n_source_types, size=n_src)
        e = np.empty(n_tgt, dtype=np.int64)
        pair_links = set()
        previous = -1
        for j in range(n_tgt):
            if rng.random() < null_prob:
                e[j] = rng.choice(function_words)
                continue
            previous = int(np.clip(previous + rng.choice(jumps, p=jump_probs), 0, n_src - 1))
            pair_links.add((previous, j))
            u = rng.random()
            word = f[previous]
            e[j] = main[word] if u < 0.8 else alternatives[word, int(u >= 0.9)]
        source.append(f)
        target.append(e)
        links.append(pair_links)
    source_vocabulary = Vocabulary([f"s{k}" for k in range(n_source_types)], unknown=False)
    target_vocabulary = Vocabulary([f"t{k}" for k in range(n_target_types)], unknown=False)
    return ParallelCorpus(source, target, source_vocabulary, target_vocabulary), links

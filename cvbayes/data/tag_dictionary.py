"""Tag dictionaries for semi-supervised PoS induction (thesis §3.8.1).

A tag dictionary lists the tags each word type may take (Merialdo 1994).
The thesis builds it from every tag seen with each word in the whole
treebank (a *complete* dictionary), and weakens it following Smith and
Eisner (2005): word types with fewer than d tokens in the training corpus
may take any tag (an *incomplete* dictionary).

The dictionaries are boolean (W, T) arrays, W the vocabulary size and T the
number of gold tags, ready for ``HMM(n_states=T, tag_dictionary=...)``.
"""

from __future__ import annotations

import numpy as np

from .corpus import Corpus

__all__ = ["ambiguity", "complete_tag_dictionary", "incomplete_tag_dictionary"]


def _check_tagged(corpus: Corpus, name: str) -> None:
    if corpus.vocabulary is None or corpus.gold is None or corpus.tagset is None:
        raise ValueError(f"{name} needs a vocabulary, gold tags and a tag set")


def complete_tag_dictionary(corpus: Corpus, reference: Corpus | None = None) -> np.ndarray:
    """Mark every tag seen with each word type (thesis §3.8.1).

    Parameters
    ----------
    corpus : Corpus
        A tagged corpus: `vocabulary`, `gold` and `tagset` must be set.
    reference : Corpus, optional
        Collect the tags from this corpus instead, e.g. the whole treebank
        when `corpus` is a 1K-sentence subset, as in the thesis. It must use
        the same vocabulary and tag set (the same ids), which slicing a
        loaded corpus (``full[:1000]``) guarantees.

    Returns
    -------
    numpy.ndarray of bool, shape (W, T)
        ``True`` where word type w was seen with tag t. Word types never
        seen in the tagged data, and the unknown word ``"<unk>"`` (id 0),
        may take every tag.

    Examples
    --------
    >>> from cvbayes.data import Corpus, Vocabulary
    >>> c = Corpus([1, 2, 1], [0, 3], Vocabulary(["a", "b"]), [0, 1, 1],
    ...            Vocabulary(["X", "Y"], unknown=False))
    >>> complete_tag_dictionary(c).astype(int).tolist()
    [[1, 1], [1, 1], [0, 1]]
    """
    _check_tagged(corpus, "corpus")
    source = corpus
    if reference is not None:
        _check_tagged(reference, "reference")
        if reference.vocabulary != corpus.vocabulary or reference.tagset != corpus.tagset:
            raise ValueError("reference must have the same vocabulary and tag set as corpus")
        source = reference
    dictionary = np.zeros((len(corpus.vocabulary), len(corpus.tagset)), dtype=bool)
    dictionary[source.observations, source.gold] = True
    dictionary[~dictionary.any(axis=1)] = True
    if corpus.vocabulary.unknown_id is not None:
        dictionary[corpus.vocabulary.unknown_id] = True
    return dictionary


def incomplete_tag_dictionary(
    corpus: Corpus, d: int, reference: Corpus | None = None
) -> np.ndarray:
    """Let word types rarer than `d` tokens take any tag (Smith and Eisner 2005).

    As in thesis §3.8.1 (Fig. 3.12): a word type is frequent if it has at
    least `d` tokens in `corpus` and then keeps its row of the complete
    dictionary; an infrequent type may take any of the T tags. Types absent
    from `corpus` keep their complete row, so ``d=1`` gives the complete
    dictionary.

    Parameters
    ----------
    corpus : Corpus
        The training corpus, whose token counts decide frequency.
    d : int
        The frequency threshold, at least 1.
    reference : Corpus, optional
        Where the complete rows come from; see `complete_tag_dictionary`.

    Returns
    -------
    numpy.ndarray of bool, shape (W, T)
    """
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d}")
    dictionary = complete_tag_dictionary(corpus, reference)
    counts = np.bincount(corpus.observations, minlength=dictionary.shape[0])
    dictionary[(counts > 0) & (counts < d)] = True
    return dictionary


def ambiguity(corpus: Corpus, dictionary: np.ndarray) -> dict[str, float | int]:
    """Summarise how much a tag dictionary leaves open on a corpus.

    These are the statistics of thesis §3.8.1 (about 2.3 tags per token and
    55% ambiguous tokens for WSJ with a complete dictionary; Fig. 3.12).

    Parameters
    ----------
    corpus : Corpus
        Discrete observations.
    dictionary : array_like of bool, shape (W, T)

    Returns
    -------
    dict
        ``tags_per_token``: the mean number of allowed tags over tokens;
        ``ambiguous_token_fraction``: the fraction of tokens with more than
        one allowed tag; ``n_types``: the number of word types occurring in
        `corpus`; ``n_tokens``: its number of tokens.
    """
    dictionary = np.asarray(dictionary, dtype=bool)
    obs = corpus.observations
    if not corpus.is_discrete or obs.size == 0:
        raise ValueError("ambiguity needs a non-empty corpus of token ids")
    if dictionary.ndim != 2 or obs.max() >= dictionary.shape[0]:
        raise ValueError(
            f"dictionary of shape {dictionary.shape} has no row for token id {int(obs.max())}"
        )
    allowed = dictionary.sum(axis=1)[obs]
    return {
        "tags_per_token": float(allowed.mean()),
        "ambiguous_token_fraction": float(np.mean(allowed > 1)),
        "n_types": int(np.count_nonzero(np.bincount(obs))),
        "n_tokens": int(obs.size),
    }

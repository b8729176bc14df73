"""Tag sequences with gold heads from a CoNLL-U treebank, for dependency-grammar induction.

`read_dependencies` reads the UPOS or XPOS column of a CoNLL-U file (parsed by
the ``conllu`` package) with the gold HEAD column, the input of the DMV (Klein
and Manning 2004; thesis §4.5.2).  Multiword-token ranges (``1-2``) and empty
nodes (``1.1``) are skipped: the sentences are the syntactic words.

Punctuation removal (``remove_punctuation=True``) drops the words whose UPOS
is ``PUNCT``, whichever column is read, as WSJ10 drops punctuation.  A kept
word whose head was dropped is re-attached to that head's own head, and so
on up the gold tree, to the nearest kept ancestor (ROOT if there is none).
So a tree whose root word was punctuation can leave several words attached to
ROOT.  ``max_length`` then keeps the sentences of at most that many words,
counted after removal (10 for the classic WSJ10 setting).  Sentences left
without words are dropped.  Gold trees are not checked to be trees or
projective (UD has non-projective trees); HEAD values are checked to be word
numbers of their sentence.  A file to be parsed may have no heads (``_``):
``gold=False`` does not read the HEAD column (punctuation is then dropped
without re-attaching anything, and ``heads`` is None).

``heads="function"`` reads the gold trees with function words as heads: each
sentence's UD tree goes through the UD-to-SUD conversion
(`cvbayes.data.function_heads`) before punctuation is removed, so adpositions,
subordinators, auxiliaries and copulas head their content words, as in the
WSJ dependencies the DMV was designed on.  The words and tags are the same
under either convention; only ``heads`` differs.

`UPOS_TAGS` is the fixed inventory of the 17 universal tags (in UD's order),
for a tag set that does not depend on which tags one file happens to hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .corpus import Corpus
from .errors import CorpusFormatError
from .function_heads import CONVENTIONS, function_heads
from .readers import _conllu_tokens, _encode
from .vocabulary import Vocabulary

__all__ = ["UPOS_TAGS", "DependencyCorpus", "read_dependencies", "upos_tagset"]

PathLike = str | os.PathLike[str]

UPOS_TAGS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN",
             "PUNCT", "SCONJ", "SYM", "VERB", "X")


def upos_tagset(remove_punctuation: bool = False) -> Vocabulary:
    """The 17 universal tags as a tag set (without ``PUNCT`` when punctuation is removed)."""
    return Vocabulary([t for t in UPOS_TAGS if not (remove_punctuation and t == "PUNCT")], unknown=False)


@dataclass(frozen=True, eq=False)
class DependencyCorpus:
    """Tag sequences with gold heads (flat arrays over the kept words).

    Attributes
    ----------
    tags : numpy.ndarray of int32, shape (N,)
        Tag ids into `tagset`.
    offsets : numpy.ndarray of int64, shape (I + 1,)
        Sentence i is ``tags[offsets[i]:offsets[i + 1]]``.
    heads : numpy.ndarray of int32, shape (N,), or None
        Gold heads, 1-based among the sentence's kept words, 0 = root (None
        when read with ``gold=False``).
    tagset : Vocabulary
        The tags (no ``<unk>``).
    word_ids : numpy.ndarray of int32, shape (N,)
        Each kept word's ID (the CoNLL-U ID column) in its sentence in the file.
    sentence_ids : numpy.ndarray of int64, shape (I,)
        Each kept sentence's index among the file's sentences (blocks with at
        least one word), 0-based.
    sentence_words : numpy.ndarray of int32, shape (I,)
        The number of words of each kept sentence in the file, before removal.
    source : str
        The file read.
    tag_column : str
        ``"upos"`` or ``"xpos"``.
    convention : str
        The gold heads' convention, ``"content"`` (the file's) or ``"function"``.
    """

    tags: np.ndarray
    offsets: np.ndarray
    heads: np.ndarray | None
    tagset: Vocabulary
    word_ids: np.ndarray
    sentence_ids: np.ndarray
    sentence_words: np.ndarray
    source: str
    tag_column: str
    convention: str = "content"

    @property
    def n_sentences(self) -> int:
        """The number of kept sentences, I."""
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        """The number of kept words, N."""
        return len(self.tags)

    @property
    def lengths(self) -> np.ndarray:
        """The length of each kept sentence, (I,) int64."""
        return np.diff(self.offsets)

    def as_corpus(self) -> Corpus:
        """The tag sequences as a `Corpus` whose vocabulary is the tag set (what the DMV reads)."""
        return Corpus(self.tags, self.offsets, vocabulary=self.tagset, source=self.source)

    def file_heads(self, heads: np.ndarray) -> list[np.ndarray]:
        """Put heads predicted on the kept words back on the file's words.

        Parameters
        ----------
        heads : array_like of int, shape (N,)
            1-based among each sentence's kept words, 0 = root (as `heads`).

        Returns
        -------
        list of numpy.ndarray of int32
            One array per kept sentence, over all of its words in the file
            (``sentence_words[i]`` of them): each kept word's head as a file
            word ID (0 = root); each removed word attached to the sentence's
            (first) predicted root word, so the result is still one tree.
        """
        heads = np.asarray(heads)
        if heads.shape != self.tags.shape:
            raise ValueError(f"expected {self.n_tokens} heads, one per kept word, got shape {heads.shape}")
        out = []
        for i in range(self.n_sentences):
            begin, end = self.offsets[i], self.offsets[i + 1]
            sentence = heads[begin:end]
            ids = self.word_ids[begin:end]
            if np.any(sentence < 0) or np.any(sentence > end - begin):
                raise ValueError(f"sentence {i} has a head outside 0..{end - begin}")
            mapped = np.where(sentence > 0, ids[np.maximum(sentence, 1) - 1], 0)
            roots = np.flatnonzero(sentence == 0)
            if roots.size == 0:
                raise ValueError(f"sentence {i} has no word attached to the root")
            full = np.full(self.sentence_words[i], ids[roots[0]], dtype=np.int32)
            full[ids - 1] = mapped
            out.append(full)
        return out


def _sentence_heads(
    tokens: list[tuple[str, str | None, str | None, int]],
    path: PathLike,
) -> np.ndarray:
    """Parse and range-check the HEAD fields of one sentence's words; (n,) int64."""
    n = len(tokens)
    heads = np.empty(n, dtype=np.int64)
    for i, (head, _, _, number) in enumerate(tokens):
        if head is None or not head.isdigit():
            raise CorpusFormatError(f"HEAD {head!r} is not a word number", path, number)
        value = int(head)
        if value > n:
            raise CorpusFormatError(
                f"HEAD {value} is not a word of this sentence of {n} words", path, number
            )
        heads[i] = value
    return heads


def _kept_heads(
    all_heads: np.ndarray,
    keep: np.ndarray,
    kept: np.ndarray,
    new_id: np.ndarray,
    words: list[tuple[str, str | None, str | None, int]],
    path: PathLike,
) -> np.ndarray:
    """Each kept word's head among the kept words: its gold head, or the nearest kept ancestor."""
    sentence_heads = np.empty(kept.size, dtype=np.int32)
    for k, position in enumerate(kept):
        head = all_heads[position]
        steps = 0
        while head != 0 and not keep[head - 1]:
            head = all_heads[head - 1]
            steps += 1
            if steps > len(words):
                raise CorpusFormatError(
                    "the HEAD column has a cycle through removed words", path, words[position][3]
                )
        sentence_heads[k] = new_id[head]
    return sentence_heads


def _function_heads(all_heads, words, columns, path):
    """One sentence's gold heads converted to function heads; a HEAD column that is not a
    tree is an error naming the sentence's first word line."""
    deprels, feats, lemmas = zip(*columns)
    try:
        converted, _ = function_heads(all_heads, deprels, [upos for _, upos, _, _ in words], feats, lemmas)
    except ValueError as error:
        raise CorpusFormatError(f"the gold heads are not a tree: {error}", path, words[0][3]) from None
    return converted


def read_dependencies(
    path: PathLike,
    tag: str = "upos",
    tagset: Vocabulary | None = None,
    *,
    remove_punctuation: bool = False,
    max_length: int | None = None,
    encoding: str = "utf-8",
    gold: bool = True,
    heads: str = "content",
) -> DependencyCorpus:
    """Read tag sequences and gold heads from a CoNLL-U file (module notes).

    Parameters
    ----------
    path : str or os.PathLike
    tag : {"upos", "xpos"}, default "upos"
        The column read as the tag sequence.
    tagset : Vocabulary, optional
        A fixed tag set (e.g. the training file's); a tag outside it is an
        error.  By default the tags of the kept words, most frequent first.
    remove_punctuation : bool, default False
        Drop the words whose UPOS is PUNCT, re-attaching their dependents to
        the nearest kept ancestor.
    max_length : int, optional
        Keep only the sentences of at most this many words after removal.
    encoding : str, default "utf-8"
    gold : bool, default True
        Read the HEAD column as gold heads; False for a file to be parsed,
        whose HEAD column may hold anything (``_``).
    heads : {"content", "function"}, default "content"
        The convention of the gold heads: the file's own (UD: content words
        head) or converted to function heads (module notes).

    Returns
    -------
    DependencyCorpus

    Raises
    ------
    CorpusFormatError
        Naming the file and line: an empty file, a token line without 10
        tab-separated fields, an invalid or out-of-sequence word ID, a HEAD
        that is not a word number of its sentence, a cycle met while
        re-attaching, a missing (``_``) tag or one outside a fixed `tagset`,
        gold heads that are not a tree (with ``heads="function"``);
        naming the file: no sentence left.
    """
    if tag not in ("upos", "xpos"):
        raise ValueError(f"tag must be 'upos' or 'xpos', got {tag!r}")
    if heads not in CONVENTIONS:
        raise ValueError(f"heads must be one of {', '.join(CONVENTIONS)}, got {heads!r}")
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    tags: list[str] = []
    token_lines: list[int] = []
    gold_heads: list[np.ndarray] = []
    word_ids: list[np.ndarray] = []
    offsets = [0]
    sentence_ids: list[int] = []
    sentence_words: list[int] = []
    index = -1
    for sentence in _conllu_tokens(path, encoding):
        # (HEAD, UPOS, the tag column, line) of each syntactic word
        words = []
        # (DEPREL, FEATS, lemma or form) of each word, for the function-head conversion
        columns = []
        for token, number in sentence:
            if not isinstance(token["id"], int):
                continue
            if token["id"] != len(words) + 1:
                raise CorpusFormatError(
                    f"word ID {token['id']} out of sequence, expected {len(words) + 1}", path, number
                )
            words.append((token["head"], token["upos"], token[tag], number))
            lemma = token["lemma"]
            columns.append((token["deprel"] or "_", token["feats"],
                            lemma if lemma not in (None, "_") else token["form"]))
        if not words:
            continue
        index += 1
        all_heads = _sentence_heads(words, path) if gold else None
        keep = np.ones(len(words), dtype=bool)
        if remove_punctuation:
            keep = np.array([upos != "PUNCT" for _, upos, _, _ in words])
        kept = np.flatnonzero(keep)
        if kept.size == 0 or (max_length is not None and kept.size > max_length):
            continue
        if gold and heads == "function":
            all_heads = _function_heads(all_heads, words, columns, path)
        new_id = np.zeros(len(words) + 1, dtype=np.int64)
        new_id[kept + 1] = np.arange(1, kept.size + 1)
        if gold:
            gold_heads.append(_kept_heads(all_heads, keep, kept, new_id, words, path))
        for position in kept:
            _, _, value, number = words[position]
            # conllu reads "_" as None in XPOS but keeps it in UPOS.
            if value is None or value == "_":
                raise CorpusFormatError(f"word has no {tag.upper()} tag", path, number)
            tags.append(value)
            token_lines.append(number)
        word_ids.append(kept + 1)
        offsets.append(len(tags))
        sentence_ids.append(index)
        sentence_words.append(len(words))
    if not tags:
        what = "" if max_length is None else f" of at most {max_length} words"
        raise CorpusFormatError(f"no sentence{what} left to read", path)
    if tagset is None:
        tagset = Vocabulary.from_counts(tags, unknown=False)
    ids = _encode(tags, tagset, "tag", token_lines.__getitem__, path)
    return DependencyCorpus(
        tags=ids,
        offsets=np.array(offsets, dtype=np.int64),
        heads=np.concatenate(gold_heads) if gold else None,
        tagset=tagset,
        word_ids=np.concatenate(word_ids).astype(np.int32),
        sentence_ids=np.array(sentence_ids, dtype=np.int64),
        sentence_words=np.array(sentence_words, dtype=np.int32),
        source=os.fspath(path),
        tag_column=tag,
        convention=heads,
    )

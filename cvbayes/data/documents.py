"""Documents for topic models: readers, stop words, frequency cut-offs, document-term matrices.

A topic model (LDA, `cvbayes.LDA`) sees a document as a bag of words.  The readers here turn raw
documents into a `Corpus` whose sequences are documents (token ids in reading order, so a held-out
document can be cut into halves, `cvbayes.metrics.topics`) and whose `Vocabulary` has no unknown
word: words the cut-offs drop are removed from the documents, not mapped to ``<unk>``.
`document_term_matrix` gives scikit-learn's layout, a CSR matrix of counts (documents x words).

Three layouts of raw documents are read:

* `read_lines`: one document a line of plain text;
* `read_folder`: a folder of plain-text files, one document a file;
* `read_tagged_documents`: a ``word/TAG`` corpus (one sentence a line, Brown's format), one document
  a file, or a file cut into documents of ``sentences_per_document`` sentences; ``keep_tags`` keeps
  only words whose tag starts with one of the given prefixes (e.g. nouns and verbs).

`documents_from_texts` and `documents_from_tokens` build documents from strings or token lists held in
memory (the news articles of `cvbayes.data.news`, for instance).  Every entry point takes the same
cleaning options:

stop_words : "english" (the default, `STOP_WORDS`), None, or any collection of words
lowercase : lowercase every word (default True)
min_length : drop words shorter than this (default 2)
min_count : drop words seen fewer times in the whole collection (default 1)
min_df, max_df : drop words in fewer than ``min_df`` documents, or in more than ``max_df`` of them (an
    int is a number of documents, a float in (0, 1] a fraction; defaults 1 and 1.0)
max_words : keep only the most frequent words (ties alphabetically)
vocabulary : a fixed vocabulary (a held-out set read with the training set's words); the cut-offs
    are then not applied and words outside it are dropped
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse

from .corpus import Corpus
from .errors import CorpusFormatError
from .readers import _read_lines
from .vocabulary import Vocabulary

__all__ = [
    "STOP_WORDS",
    "document_term_matrix",
    "documents_from_texts",
    "documents_from_tokens",
    "read_folder",
    "read_lines",
    "read_tagged_documents",
    "tokenize_document",
]

PathLike = str | os.PathLike[str]

# Function words, auxiliaries, pronouns and a few high-frequency verbs and adverbs that carry no topic.
STOP_WORDS = frozenset("""
a about above across after afterwards again against all almost alone along already also although always
am among amongst an and another any anyhow anyone anything anyway anywhere are around as at back be
became because become becomes becoming been before beforehand behind being below beside besides between
beyond both but by can cannot could did do does doing done down due during each either else elsewhere
enough etc even ever every everyone everything everywhere except few for former formerly from further
had has have having he hence her here hereafter hereby herein hers herself him himself his how however i
if in indeed into is it its itself just last latter latterly least less let like made make many may me
meanwhile might mine more moreover most mostly much must my myself namely neither never nevertheless next
no nobody none noone nor not nothing now nowhere of off often on once one only onto or other others
otherwise our ours ourselves out over own per perhaps please put rather re said same say says see seem
seemed seeming seems several she should since so some somehow someone something sometime sometimes
somewhere still such than that the their theirs them themselves then thence there thereafter thereby
therefore therein thereupon these they this those though through throughout thru thus to together too
toward towards under until up upon us very via was we well were what whatever when whence whenever where
whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever whole whom
whose why will with within without would yet you your yours yourself yourselves
ain aren couldn didn doesn don hadn hasn haven isn ll mr mrs ms shan shouldn ve wasn weren won wouldn
""".split())

# A word: letters, possibly joined by apostrophes or hyphens ("o'clock", "well-known").
_WORD = re.compile(r"[^\W\d_]+(?:['\-][^\W\d_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def tokenize_document(text: str, lowercase: bool = True) -> list[str]:
    """The words of a document: runs of letters, possibly joined by ``'`` or ``-``.

    Digits and punctuation separate words; a final possessive ``'s`` is dropped ("Trump's" -> "trump").

    Examples
    --------
    >>> tokenize_document("Trump's well-known tax plan, 2017: \u201cno\u201d!")
    ['trump', 'well-known', 'tax', 'plan', 'no']
    """
    text = text.translate(_APOSTROPHES)
    if lowercase:
        text = text.lower()
    return [word[:-2] if word.endswith("'s") else word for word in _WORD.findall(text)]


def _stop_words(stop_words: str | Collection[str] | None) -> frozenset[str]:
    if stop_words is None:
        return frozenset()
    if isinstance(stop_words, str):
        if stop_words != "english":
            raise ValueError(f"stop_words must be 'english', None or a collection of words, not {stop_words!r}")
        return STOP_WORDS
    return frozenset(stop_words)


def _document_limit(value: int | float, n_documents: int, name: str) -> float:
    """A document-frequency limit as a number of documents (an int as given, a float as a fraction)."""
    if isinstance(value, (bool, np.bool_)) or value < 0:
        raise ValueError(f"{name} must be a non-negative int or a fraction in (0, 1], got {value!r}")
    if isinstance(value, float):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"{name} as a fraction must lie in (0, 1], got {value}")
        return value * n_documents
    return float(value)


def _kept_words(documents: Sequence[list[str]], min_count: int, min_df: int | float, max_df: int | float,
                max_words: int | None) -> list[str]:
    """The words that pass the frequency cut-offs, most frequent first (ties alphabetically)."""
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    counts: Counter[str] = Counter()
    document_counts: Counter[str] = Counter()
    for words in documents:
        counts.update(words)
        document_counts.update(set(words))
    low = _document_limit(min_df, len(documents), "min_df")
    high = _document_limit(max_df, len(documents), "max_df")
    kept = sorted((word for word, count in counts.items()
                   if count >= min_count and low <= document_counts[word] <= high),
                  key=lambda word: (-counts[word], word))
    if max_words is not None:
        if max_words < 1:
            raise ValueError(f"max_words must be at least 1, got {max_words}")
        kept = kept[:max_words]
    return kept


def documents_from_tokens(
    documents: Iterable[Sequence[str]],
    *,
    stop_words: str | Collection[str] | None = "english",
    lowercase: bool = True,
    min_length: int = 2,
    min_count: int = 1,
    min_df: int | float = 1,
    max_df: int | float = 1.0,
    max_words: int | None = None,
    vocabulary: Vocabulary | None = None,
    source: str | None = None,
) -> Corpus:
    """A `Corpus` of documents from token lists (the options are the module's).

    Words without a letter (punctuation, numbers) are dropped.  Documents left empty stay, as empty
    sequences, so that document i of the input is sequence i of the corpus.

    Raises
    ------
    ValueError
        If no document keeps a word, or an option is out of range.
    """
    stops = _stop_words(stop_words)
    cleaned = []
    for document in documents:
        words = (word.lower() if lowercase else word for word in document)
        cleaned.append([word for word in words if len(word) >= min_length and word not in stops
                        and any(char.isalpha() for char in word)])
    if not cleaned:
        raise ValueError("no documents given")
    if vocabulary is None:
        vocabulary = Vocabulary(_kept_words(cleaned, min_count, min_df, max_df, max_words), unknown=False)
    ids = [vocabulary.encode([word for word in words if word in vocabulary]) for words in cleaned]
    if not any(len(document) for document in ids):
        raise ValueError("no document keeps a word after stop words and frequency cut-offs"
                         + (f" ({source})" if source else ""))
    lengths = np.array([len(document) for document in ids], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    observations = np.concatenate(ids).astype(np.int32) if ids else np.empty(0, dtype=np.int32)
    return Corpus(observations, offsets, vocabulary=vocabulary, source=source)


def documents_from_texts(texts: Iterable[str], *, source: str | None = None, **options) -> Corpus:
    """A `Corpus` of documents from strings, tokenised by `tokenize_document`."""
    return documents_from_tokens((tokenize_document(text, lowercase=False) for text in texts),
                                 source=source, **options)


def read_lines(path: PathLike, *, encoding: str = "utf-8", **options) -> Corpus:
    """Read one document a line; blank lines are skipped.

    Raises
    ------
    CorpusFormatError
        If the file is empty or not valid in ``encoding`` (with the line).
    """
    texts = [line for line in _read_lines(path, encoding) if line.strip()]
    if not texts:
        raise CorpusFormatError("file holds no documents", path)
    return documents_from_texts(texts, source=os.fspath(path), **options)


def _folder_files(path: PathLike, pattern: str) -> list[Path]:
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    files = sorted(file for file in folder.iterdir()
                   if file.is_file() and not file.name.startswith(".") and fnmatch.fnmatch(file.name, pattern))
    if not files:
        raise FileNotFoundError(f"{folder} holds no file matching {pattern!r}")
    return files


def read_folder(path: PathLike, *, pattern: str = "*", encoding: str = "utf-8", **options) -> Corpus:
    """Read a folder of plain-text files, one document a file (sorted by name; ``pattern`` filters
    the names, e.g. ``"*.txt"``; hidden files are skipped)."""
    texts = ["\n".join(_read_lines(file, encoding)) for file in _folder_files(path, pattern)]
    return documents_from_texts(texts, source=os.fspath(path), **options)


def _tagged_sentences(file: PathLike, sep: str, keep_tags: Sequence[str] | None, encoding: str):
    """The kept words of each sentence line of a ``word/TAG`` file."""
    for number, line in enumerate(_read_lines(file, encoding), start=1):
        words = []
        for token in line.split():
            word, found, tag = token.rpartition(sep)
            if not found or not word or not tag:
                raise CorpusFormatError(f"token {token!r} is not of the form word{sep}TAG", file, number)
            if keep_tags is None or tag.lower().startswith(keep_tags):
                words.append(word)
        if line.strip():
            yield words


def read_tagged_documents(
    path: PathLike,
    *,
    keep_tags: Sequence[str] | None = None,
    sentences_per_document: int | None = None,
    pattern: str = "*",
    sep: str = "/",
    encoding: str = "utf-8",
    **options,
) -> Corpus:
    """Read a ``word/TAG`` corpus (one sentence a line) as documents.

    Parameters
    ----------
    path : a folder (one document a file, as the 500 files of the Brown corpus; ``pattern`` filters
        the names, e.g. ``"c[a-r][0-9][0-9]"`` for Brown's) or one file
    keep_tags : keep only words whose tag starts with one of these prefixes (compared in lower case),
        e.g. ``("nn", "vb", "jj")`` for Brown's nouns, verbs and adjectives; all words by default
    sentences_per_document : cut each file into documents of this many sentences; by default a file
        is one document

    Raises
    ------
    CorpusFormatError
        For a token that is not ``word/TAG``, with its file and line.
    """
    if sentences_per_document is not None and sentences_per_document < 1:
        raise ValueError(f"sentences_per_document must be at least 1, got {sentences_per_document}")
    prefixes = None if keep_tags is None else tuple(tag.lower() for tag in keep_tags)
    files = _folder_files(path, pattern) if Path(path).is_dir() else [Path(path)]
    documents = []
    for file in files:
        sentences = list(_tagged_sentences(file, sep, prefixes, encoding))
        size = sentences_per_document or max(len(sentences), 1)
        for start in range(0, len(sentences), size):
            documents.append([word for sentence in sentences[start:start + size] for word in sentence])
    if not documents:
        raise CorpusFormatError("holds no sentences", path)
    return documents_from_tokens(documents, source=os.fspath(path), **options)


def document_term_matrix(corpus: Corpus, n_words: int | None = None) -> scipy.sparse.csr_matrix:
    """The counts of a `Corpus` of documents as a CSR matrix (documents x words), scikit-learn's layout.

    ``n_words`` defaults to the size of the corpus's vocabulary (else the largest id + 1).
    """
    if not corpus.is_discrete:
        raise ValueError("a document-term matrix needs integer token ids")
    if n_words is None:
        n_words = len(corpus.vocabulary) if corpus.vocabulary is not None else int(corpus.observations.max(initial=-1)) + 1
    elif corpus.n_tokens and int(corpus.observations.max()) >= n_words:
        raise ValueError(f"the documents hold word id {int(corpus.observations.max())}, but the model knows {n_words} "
                         f"words: read them with the model's vocabulary (vocabulary=model.vocabulary_)")
    documents = np.repeat(np.arange(corpus.n_sequences), np.diff(corpus.offsets))
    matrix = scipy.sparse.csr_matrix((np.ones(corpus.n_tokens, dtype=np.int64), (documents, corpus.observations)),
                                     shape=(corpus.n_sequences, n_words))
    matrix.sum_duplicates()
    return matrix

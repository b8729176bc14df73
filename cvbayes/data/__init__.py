"""Corpora, vocabularies and corpus-file readers."""

from .corpus import Corpus, as_corpus
from .errors import CorpusFormatError
from .readers import read_conllu, read_tagged, read_text
from .vocabulary import Vocabulary

__all__ = [
    "Corpus",
    "CorpusFormatError",
    "Vocabulary",
    "as_corpus",
    "read_conllu",
    "read_tagged",
    "read_text",
]

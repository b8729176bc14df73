"""Corpora, vocabularies and corpus-file readers."""

from .brown import cache_dir, fetch_brown, load_brown, load_embedded_brown
from .corpus import Corpus, as_corpus
from .errors import CorpusFormatError
from .readers import read_conllu, read_tagged, read_text
from .tag_dictionary import ambiguity, complete_tag_dictionary, incomplete_tag_dictionary
from .tagsets import TAGSETS, UNIVERSAL_FROM_BROWN, brown_base_tag, map_tags, universal_tag
from .vocabulary import Vocabulary

__all__ = [
    "TAGSETS",
    "UNIVERSAL_FROM_BROWN",
    "Corpus",
    "CorpusFormatError",
    "Vocabulary",
    "ambiguity",
    "as_corpus",
    "brown_base_tag",
    "cache_dir",
    "complete_tag_dictionary",
    "fetch_brown",
    "incomplete_tag_dictionary",
    "load_brown",
    "load_embedded_brown",
    "map_tags",
    "read_conllu",
    "read_tagged",
    "read_text",
    "universal_tag",
]

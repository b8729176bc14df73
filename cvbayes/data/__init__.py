"""Corpora, vocabularies and corpus-file readers."""

from .bible import (
    ParallelVerses,
    fetch_bible,
    fetch_nt_alignments,
    load_bible,
    load_nt_alignments,
    read_bible_cache,
    tokenize_osis,
)
from .brown import fetch_brown, load_brown, load_embedded_brown
from .cache import cache_dir
from .conllu_io import ConlluDocument, ConlluSentence, read_conllu_document, write_conllu_document
from .corpus import Corpus, as_corpus
from .errors import CorpusFormatError
from .morphology import fetch_morphology, load_morphology
from .news import NewsArticle, fetch_news, load_news
from .ptb import as_one_sequence, fetch_ptb, load_ptb, ptb_long_sequence, ptb_vocabulary
from .readers import read_conllu, read_tagged, read_text
from .segmentation import (SegmentationData, fetch_buckeye, fetch_eve, fetch_hkcancor, load_brent, load_buckeye, load_eve,
                           load_hkcancor)
from .tag_dictionary import ambiguity, complete_tag_dictionary, incomplete_tag_dictionary
from .tagsets import TAGSETS, UNIVERSAL_FROM_BROWN, brown_base_tag, map_tags, universal_tag
from .tidigits import TidigitsData, fetch_tidigits, load_tidigits, read_lsn, read_mfc
from .texts import (
    fetch_texts,
    join_corpora,
    load_large_text_corpus,
    load_texts,
    split_sentences,
    tokenize,
)
from .treebanks import (fetch_ewt, fetch_htb, fetch_pud, load_ewt, load_htb, load_pud, load_treebank,
                        treebank_file)
from .vocabulary import Vocabulary

__all__ = [
    "TAGSETS",
    "UNIVERSAL_FROM_BROWN",
    "Corpus",
    "CorpusFormatError",
    "ParallelVerses",
    "TidigitsData",
    "Vocabulary",
    "ambiguity",
    "as_corpus",
    "as_one_sequence",
    "brown_base_tag",
    "cache_dir",
    "complete_tag_dictionary",
    "fetch_bible",
    "fetch_brown",
    "fetch_nt_alignments",
    "fetch_ptb",
    "fetch_texts",
    "fetch_tidigits",
    "incomplete_tag_dictionary",
    "join_corpora",
    "load_bible",
    "load_brown",
    "load_embedded_brown",
    "load_large_text_corpus",
    "load_nt_alignments",
    "load_ptb",
    "load_texts",
    "load_tidigits",
    "map_tags",
    "ptb_long_sequence",
    "ptb_vocabulary",
    "read_bible_cache",
    "read_conllu",
    "read_lsn",
    "read_mfc",
    "read_tagged",
    "read_text",
    "split_sentences",
    "tokenize",
    "tokenize_osis",
    "universal_tag",
    # treebanks, morphology, topic-model and word-segmentation corpora
    "ConlluDocument",
    "ConlluSentence",
    "NewsArticle",
    "SegmentationData",
    "fetch_eve",
    "fetch_ewt",
    "fetch_buckeye",
    "fetch_hkcancor",
    "fetch_htb",
    "fetch_morphology",
    "fetch_news",
    "fetch_pud",
    "load_brent",
    "load_eve",
    "load_ewt",
    "load_buckeye",
    "load_hkcancor",
    "load_htb",
    "load_morphology",
    "load_news",
    "load_pud",
    "load_treebank",
    "read_conllu_document",
    "treebank_file",
    "write_conllu_document",
]

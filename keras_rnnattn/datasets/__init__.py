"""Corpus loaders: offline corpora from pip/apt packages, tfds for online use.

The loaders import no Keras; `LengthBucketedBatches` (a `keras.utils.PyDataset`)
imports it when first used.
"""

import importlib

from keras_rnnattn.datasets.chatterbot_dialogues import (
    load_chatterbot_dialogues,
    parse_chatterbot_yaml,
)
from keras_rnnattn.datasets.cmudict import load_cmudict, parse_cmudict
from keras_rnnattn.datasets.czech_text import (
    CZECH_SOURCES,
    load_czech_text,
    load_fortunes_cs,
    load_libreoffice_help_cs,
)
from keras_rnnattn.datasets.dataset_not_found_error import DatasetNotFoundError
from keras_rnnattn.datasets.debian_faq import load_debian_faq, parse_faq_page
from keras_rnnattn.datasets.ding import (
    load_ding_de_en,
    load_ding_de_en_alternatives,
    load_ding_de_en_lexicon,
    parse_ding,
    parse_ding_alternatives,
    parse_ding_lexicon,
)
from keras_rnnattn.datasets.documents import document_bucket, split_documents
from keras_rnnattn.datasets.fortunes import load_fortunes, parse_fortunes
from keras_rnnattn.datasets.lee_news import load_lee_news
from keras_rnnattn.datasets.libreoffice_help import (
    load_libreoffice_help_de_en,
    load_libreoffice_help_en,
    parse_help_paragraphs,
    parse_help_prose,
    parse_libreoffice_help,
)
from keras_rnnattn.datasets.misaki_lexicon import (
    MISAKI_SYMBOLS,
    load_misaki_lexicon,
    word_bucket,
)
from keras_rnnattn.datasets.movie_snippets import load_movie_snippets
from keras_rnnattn.datasets.nyt_editorials import load_nyt_editorials
from keras_rnnattn.datasets.python_docs import load_python_docs, parse_rest_prose
from keras_rnnattn.datasets.sources import cache_dir, fetch, install_command
from keras_rnnattn.datasets.splits import kfold_indices, split_indices
from keras_rnnattn.datasets.tfds_loader import load_tfds
from keras_rnnattn.datasets.word_vectors import (
    load_minilm_word_vectors,
    minilm_embeddings,
)
from keras_rnnattn.datasets.wordnet_topics import WORDNET_LEXNAMES, load_wordnet_topics
from keras_rnnattn.datasets.world_english_bible import load_world_english_bible

__all__ = [
    "CZECH_SOURCES",
    "DatasetNotFoundError",
    "LengthBucketedBatches",
    "MISAKI_SYMBOLS",
    "WORDNET_LEXNAMES",
    "cache_dir",
    "document_bucket",
    "fetch",
    "install_command",
    "kfold_indices",
    "load_chatterbot_dialogues",
    "load_cmudict",
    "load_czech_text",
    "load_debian_faq",
    "load_ding_de_en",
    "load_ding_de_en_alternatives",
    "load_ding_de_en_lexicon",
    "load_fortunes",
    "load_fortunes_cs",
    "load_lee_news",
    "load_libreoffice_help_de_en",
    "load_libreoffice_help_cs",
    "load_libreoffice_help_en",
    "load_minilm_word_vectors",
    "load_misaki_lexicon",
    "load_movie_snippets",
    "load_nyt_editorials",
    "load_python_docs",
    "load_tfds",
    "load_wordnet_topics",
    "load_world_english_bible",
    "minilm_embeddings",
    "parse_chatterbot_yaml",
    "parse_cmudict",
    "parse_ding",
    "parse_ding_alternatives",
    "parse_ding_lexicon",
    "parse_faq_page",
    "parse_fortunes",
    "parse_help_paragraphs",
    "parse_help_prose",
    "parse_libreoffice_help",
    "parse_rest_prose",
    "split_documents",
    "split_indices",
    "word_bucket",
]

_LAZY = {"LengthBucketedBatches": "keras_rnnattn.datasets.length_buckets"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""Tokenizers and vocabularies (pure Python and NumPy, saved as JSON).

`SentencePieceTokenizer` needs `sentencepiece` and `KerasHubTokenizer` wraps a
keras-hub tokenizer; both import their library only when used."""

from keras_rnnattn.text.bpe_tokenizer import BpeTokenizer
from keras_rnnattn.text.char_tokenizer import CharTokenizer
from keras_rnnattn.text.diacritics import (
    NO_MARK,
    apply_diacritics,
    diacritic_tags,
    strip_diacritics,
)
from keras_rnnattn.text.keras_hub_tokenizer import KerasHubTokenizer
from keras_rnnattn.text.normalization import (
    detokenize,
    fold_letters,
    normalize,
    split_words,
)
from keras_rnnattn.text.punctuation import (
    PUNCTUATION_TAGS,
    punctuation_tags,
    punctuation_windows,
    restore_punctuation,
    strip_punctuation,
    untagged_tokens,
)
from keras_rnnattn.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_rnnattn.text.tokenizer import Tokenizer
from keras_rnnattn.text.vocabulary import SPECIAL_TOKENS, Vocabulary
from keras_rnnattn.text.word_pieces import piece_tags, word_piece_ids, word_tags
from keras_rnnattn.text.word_tokenizer import WordTokenizer

__all__ = [
    "BpeTokenizer",
    "CharTokenizer",
    "KerasHubTokenizer",
    "NO_MARK",
    "PUNCTUATION_TAGS",
    "SPECIAL_TOKENS",
    "SentencePieceTokenizer",
    "Tokenizer",
    "Vocabulary",
    "WordTokenizer",
    "apply_diacritics",
    "detokenize",
    "diacritic_tags",
    "fold_letters",
    "normalize",
    "piece_tags",
    "punctuation_tags",
    "punctuation_windows",
    "restore_punctuation",
    "split_words",
    "strip_diacritics",
    "strip_punctuation",
    "untagged_tokens",
    "word_piece_ids",
    "word_tags",
]

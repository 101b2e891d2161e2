"""Corpus BLEU and chrF (through sacrebleu) with their sacrebleu signatures, and
exact match, on detokenized text; word and token error rates of sequences of
space-separated tokens (phonemes, tags); per-class F1 of punctuation and case
tags; BLEU by source length and the beam length penalty that scores best."""

from keras_rnnattn.metrics.error_rates import (
    exact_match,
    phoneme_error_rate,
    word_error_rate,
)
from keras_rnnattn.metrics.length_buckets import (
    LENGTH_BUCKETS,
    LENGTH_PENALTIES,
    bleu_by_length,
    pick_length_penalty,
)
from keras_rnnattn.metrics.punctuation import punctuation_scores
from keras_rnnattn.metrics.sacrebleu_scores import (
    bleu,
    bleu_signature,
    chrf,
    chrf_signature,
)

__all__ = [
    "LENGTH_BUCKETS",
    "LENGTH_PENALTIES",
    "bleu",
    "bleu_by_length",
    "bleu_signature",
    "chrf",
    "chrf_signature",
    "exact_match",
    "phoneme_error_rate",
    "pick_length_penalty",
    "punctuation_scores",
    "word_error_rate",
]

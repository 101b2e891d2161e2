"""Application models: text in, text out, on top of the attention layers."""

from keras_rnnattn.models.attention_classifier import AttentionClassifier
from keras_rnnattn.models.attentive_language_model import AttentiveLanguageModel
from keras_rnnattn.models.punctuation_stream import PunctuationStream
from keras_rnnattn.models.seq2seq_task import Seq2SeqTask
from keras_rnnattn.models.sequence_tagger import SequenceTagger
from keras_rnnattn.models.task import TextTask
from keras_rnnattn.models.translator import Translator
from keras_rnnattn.models.translator_ensemble import TranslatorEnsemble

__all__ = [
    "AttentionClassifier",
    "AttentiveLanguageModel",
    "PunctuationStream",
    "Seq2SeqTask",
    "SequenceTagger",
    "TextTask",
    "Translator",
    "TranslatorEnsemble",
]

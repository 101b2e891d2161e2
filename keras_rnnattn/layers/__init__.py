"""Attention layers for recurrent networks."""

from keras_rnnattn.layers.attention_decoder import AttentionDecoder
from keras_rnnattn.layers.attention_pooling import AttentionPooling
from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention
from keras_rnnattn.layers.bahdanau_monotonic_attention import (
    BahdanauMonotonicAttention,
)
from keras_rnnattn.layers.base_attention import BaseAttention
from keras_rnnattn.layers.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from keras_rnnattn.layers.luong_attention import LuongAttention
from keras_rnnattn.layers.luong_monotonic_attention import LuongMonotonicAttention
from keras_rnnattn.layers.sequence_self_attention import SequenceSelfAttention

__all__ = [
    "AttentionDecoder",
    "AttentionPooling",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "BaseAttention",
    "LocationSensitiveAttention",
    "LuongAttention",
    "LuongMonotonicAttention",
    "SequenceSelfAttention",
]

"""Model-agnostic decoding, and scheduled sampling's training loop (keras.ops only)."""

from keras_rnnattn.decoding.beam_search import beam_search
from keras_rnnattn.decoding.greedy import greedy_search
from keras_rnnattn.decoding.sampling import sample
from keras_rnnattn.decoding.scheduled import scheduled_sampling

__all__ = ["beam_search", "greedy_search", "sample", "scheduled_sampling"]

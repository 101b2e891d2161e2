"""Model-agnostic decoding: greedy search, sampling, beam search and continuous
frames (keras.ops only)."""

from keras_rnnattn.decoding.beam_search import beam_search
from keras_rnnattn.decoding.continuous import continuous_decode
from keras_rnnattn.decoding.greedy import greedy_search
from keras_rnnattn.decoding.sampling import sample

__all__ = ["beam_search", "continuous_decode", "greedy_search", "sample"]

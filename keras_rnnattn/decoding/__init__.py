"""Model-agnostic decoding: greedy search, sampling, beam search, continuous frames,
and the training loop of scheduled sampling (keras.ops only)."""

from keras_rnnattn.decoding.beam_search import beam_search
from keras_rnnattn.decoding.continuous import continuous_decode
from keras_rnnattn.decoding.greedy import greedy_search
from keras_rnnattn.decoding.sampling import sample
from keras_rnnattn.decoding.scheduled import scheduled_sampling

__all__ = [
    "beam_search",
    "continuous_decode",
    "greedy_search",
    "sample",
    "scheduled_sampling",
]

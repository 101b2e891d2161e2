"""Model-agnostic decoding: greedy search, sampling, beam search, continuous frames,
the training loop of scheduled sampling (keras.ops only), and the search settings
(`SearchSettings`) that models, presets, the CLI and export share."""

from keras_rnnattn.decoding.beam_search import beam_search
from keras_rnnattn.decoding.continuous import continuous_decode
from keras_rnnattn.decoding.greedy import greedy_search
from keras_rnnattn.decoding.sampling import sample
from keras_rnnattn.decoding.scheduled import scheduled_sampling
from keras_rnnattn.decoding.search_settings import SearchSettings

__all__ = [
    "SearchSettings",
    "beam_search",
    "continuous_decode",
    "greedy_search",
    "sample",
    "scheduled_sampling",
]

"""Adapters to other libraries' contracts, one module per library.

Each module imports its library only when used, and the library stays an
optional dependency: `keras_rnnattn.integrations.misaki.MisakiFallback` is a
fallback for misaki's English G2P (the phonemizer of the Kokoro TTS models);
`keras_rnnattn.integrations.tfa` ports trained `tfa.seq2seq` weights.
"""

__all__ = ["misaki", "shape_buckets", "tfa"]

"""Additive attention of Bahdanau et al. (2015), optionally weight-normalised."""

import math

import keras
from keras import ops

from keras_rnnattn._backend import additive_energies, dense_plus
from keras_rnnattn.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class BahdanauAttention(BaseAttention):
    """Additive attention: score(q, k) = vᵀ tanh(W_q q + W_k k + b).

    Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly Learning to
    Align and Translate" (ICLR 2015). The keys are projected once per source
    (`precompute_keys`), so a decoder loop pays only for `W_q q` at each step.

    With `normalize=True` it is the weight-normalised form of Salimans and Kingma
    (2016) used by tfa's `BahdanauAttention(normalize=True)`: v is replaced by
    g · v / ‖v‖ with a learned scalar g initialised to sqrt(1 / units).

    Args:
        units: int, the size of the hidden layer of the scoring network.
        normalize: bool, use the weight-normalised score.
        dropout: float in [0, 1), dropout on the attention weights.
        seed: optional int, the seed of the dropout.
        probability_fn: `"softmax"` (default), `"hardmax"`, `"sparsemax"` or a
            callable `(scores, mask) -> weights`: how the scores become weights
            (see `BaseAttention`).
        **kwargs: base layer arguments.

    Call arguments:
        query: `(B, T, dq)`, or one decoder step `(B, dq)`.
        value: `(B, S, dv)`.
        key: optional `(B, S, dk)`, defaults to `value`.
        query_mask: optional boolean `(B, T)`.
        value_mask: optional boolean `(B, S)`.
        return_attention_scores: bool, also return the weights.
        training: bool, whether dropout is active.
        processed_key: optional `precompute_keys(key)`, `(B, S, units)`.
        attention_mask: optional boolean `(B, T, S)`.

    Returns:
        The context `(B, T, dv)` (or `(B, dv)`), and with
        `return_attention_scores=True` the weights `(B, T, S)` (or `(B, S)`).

    Example:

    >>> import numpy as np
    >>> layer = BahdanauAttention(units=8)
    >>> query = np.random.rand(2, 16).astype("float32")  # one decoder step
    >>> memory = np.random.rand(2, 5, 12).astype("float32")
    >>> context, weights = layer(query, memory, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 12), (2, 5))
    """

    def __init__(self, units, normalize=False, dropout=0.0, seed=None, **kwargs):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        if not isinstance(units, int) or units < 1:
            raise ValueError(f"`units` must be a positive int. Received: units={units}")
        self.units = units
        self.normalize = bool(normalize)
        # Made here, built from the first shapes they see: `precompute_keys` may
        # come before the first call, and then builds the key projection alone.
        self.query_dense = keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name="query_dense"
        )
        self.key_dense = keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name="key_dense"
        )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self.query_dense.build(query_shape)
        if not self.key_dense.built:
            self.key_dense.build(key_shape)
        self.v = self.add_weight(
            name="v", shape=(self.units,), initializer="glorot_uniform"
        )
        self.b = self.add_weight(name="b", shape=(self.units,), initializer="zeros")
        if self.normalize:
            self.g = self.add_weight(
                name="g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )
        self.built = True

    def precompute_keys(self, key):
        """W_k k, `(B, S, units)`: computed once per source sentence.

        Before the layer's first call it builds the key projection from
        `key.shape`; the rest is built from the first query.
        """
        self._saw_key(key)
        return dense_plus(self.key_dense, key)  # (B, S, units)

    def compute_scores(self, query, processed_key):
        # Weights cast to the compute dtype: a decoder step calls this outside
        # `__call__`, where Keras does not autocast them under mixed precision.
        # The bias goes with the queries, (B, T, units), not the (B, T, S, units)
        # sum: one pass less over the largest tensor.
        q = dense_plus(self.query_dense, query, self.b)  # (B, T, units)
        v = ops.cast(self.v, q.dtype)
        if self.normalize:
            v = ops.cast(self.g, q.dtype) * v * ops.rsqrt(ops.sum(ops.square(v)))
        # vᵀ tanh(q_t + k_s) over the (B, T, S, units) sum.
        return additive_energies(q, processed_key, v)  # (B, T, S)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "normalize": self.normalize})
        return config

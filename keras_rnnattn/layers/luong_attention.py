"""Multiplicative attention of Luong et al. (2015): dot, general, concat, location."""

import keras
from keras import ops

from keras_rnnattn.layers.base_attention import BaseAttention

SCORES = ("dot", "general", "concat", "location")


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class LuongAttention(BaseAttention):
    """Luong attention with the four scores of "Effective Approaches to
    Attention-based Neural Machine Translation" (Luong, Pham and Manning, 2015).

    For a query q (the decoder's current state h_t) and keys k (encoder states):

    - `"dot"`: score = qᵀ k (needs dq == dk);
    - `"general"`: score = qᵀ W k, W mapping keys to the query's depth
      (`units` if given: tfa's `units`);
    - `"concat"`: score = vᵀ tanh(W [q; k]), written W_q q + W_k k, with
      `units` hidden units (default dq);
    - `"location"`: scores = softmax(W q) over source positions, ignoring the keys;
      `W` maps to `source_length` positions, the longest source it accepts.

    `scale=True` divides the scores by sqrt(dq): the Transformer's scaled
    dot-product score softmax(QKᵀ / √d) V.

    Args:
        score: one of `"dot"`, `"general"`, `"concat"`, `"location"`.
        scale: bool, divide the scores by sqrt(query depth).
        units: int, the hidden size of the `"concat"` score, or the query
            depth of the `"general"` score; either lets `precompute_keys` build
            the key projection before the first call. Default None: the
            query's depth, read at the first call.
        source_length: int, the number of positions of the `"location"` score.
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
        processed_key: optional `precompute_keys(key)`.
        attention_mask: optional boolean `(B, T, S)`.

    Returns:
        The context `(B, T, dv)` (or `(B, dv)`), and with
        `return_attention_scores=True` the weights `(B, T, S)` (or `(B, S)`).

    Example:

    >>> import numpy as np
    >>> layer = LuongAttention(score="general")
    >>> query = np.random.rand(2, 3, 8).astype("float32")
    >>> memory = np.random.rand(2, 5, 6).astype("float32")
    >>> layer(query, memory).shape
    (2, 3, 6)

    With `units` (tfa's: the query depth) the keys can be projected once per
    source before the first call:

    >>> general = LuongAttention(score="general", units=8)
    >>> tuple(general.precompute_keys(memory).shape)
    (2, 5, 8)

    `probability_fn="sparsemax"` gives exactly 0 to the low scores,
    `"hardmax"` all the weight to the best:

    >>> q = np.array([[[1.0, 0.0]]], "float32")
    >>> m = np.array([[[0.0, 1.0], [2.0, 0.0], [1.5, 0.0]]], "float32")
    >>> sparse = LuongAttention(probability_fn="sparsemax")
    >>> keras.ops.convert_to_numpy(sparse(q, m, return_attention_scores=True)[1])
    array([[[0.  , 0.75, 0.25]]], dtype=float32)
    >>> hard = LuongAttention(probability_fn="hardmax")
    >>> keras.ops.convert_to_numpy(hard(q, m, return_attention_scores=True)[1])
    array([[[0., 1., 0.]]], dtype=float32)
    """

    def __init__(
        self,
        score="dot",
        scale=False,
        units=None,
        source_length=None,
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        if score not in SCORES:
            raise ValueError(
                f"`score` must be one of {SCORES}. Received: score={score!r}"
            )
        if units is not None and score not in ("concat", "general"):
            raise ValueError(
                "`units` is the hidden size of score='concat' or the query depth "
                f"of score='general', and is not used by score={score!r}: leave it "
                f"None. Received: units={units}"
            )
        if units is not None and (not isinstance(units, int) or units < 1):
            raise ValueError(
                f"`units` must be a positive int or None. Received: units={units!r}"
            )
        if score == "location" and (
            not isinstance(source_length, int) or source_length < 1
        ):
            raise ValueError(
                "score='location' needs `source_length`, the longest source it "
                f"attends over. Received: source_length={source_length}"
            )
        self.score = score
        self.scale = bool(scale)
        self.units = units
        self.source_length = source_length
        if score == "concat" and units is not None:
            # Sizes known now: `precompute_keys` may build W_k before the first call.
            self.query_dense = self._dense(units, "query_dense")
            self.key_dense = self._dense(units, "key_dense")
        elif score == "general" and units is not None:
            self.key_dense = self._dense(units, "key_dense")  # W k, to depth `units`

    def _dense(self, units, name):
        return keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name=name
        )

    @property
    def _keys_need_query_depth(self):
        """Whether the key projection's size is the query depth."""
        return self.score in ("general", "concat") and not self.units

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        dq, dk = query_shape[-1], key_shape[-1]
        if self.score == "dot" and dq is not None and dk is not None and dq != dk:
            raise ValueError(
                "score='dot' needs query and key of the same depth; use "
                "score='general' to learn a projection. Received: "
                f"query depth {dq}, key depth {dk}"
            )
        if self.score == "general":
            if self.units and dq is not None and dq != self.units:
                raise ValueError(
                    f"score='general' with units={self.units} projects the keys to "
                    f"a query depth of {self.units}. Received: query depth {dq}"
                )
            if not self.units:
                self.key_dense = self._dense(dq, "key_dense")  # W k, to dq
            if not self.key_dense.built:
                self.key_dense.build(key_shape)
        elif self.score == "concat":
            units = self.units or dq
            if not self.units:
                self.query_dense = self._dense(units, "query_dense")
                self.key_dense = self._dense(units, "key_dense")
            self.query_dense.build(query_shape)
            if not self.key_dense.built:
                self.key_dense.build(key_shape)
            self.v = self.add_weight(
                name="v", shape=(units,), initializer="glorot_uniform"
            )
        elif self.score == "location":
            self.query_dense = self._dense(self.source_length, "location_dense")
            self.query_dense.build(query_shape)
        self.built = True

    def precompute_keys(self, key):
        """The keys as the score reads them: W k for `"general"` and `"concat"`.

        Before the layer's first call, `units` lets it build W from `key.shape`.
        Without `units`, `"general"` and `"concat"` project the keys to the
        query's depth, which the keys alone do not give: pass `units`, build the
        layer first with `build(query_shape, value_shape)`, or call it once.
        """
        if self.score not in ("general", "concat"):
            return key
        if not self.built and self._keys_need_query_depth:
            fix = " or pass `units` (the query depth)"
            if self.score == "concat":
                fix = " or pass `units`"
            raise ValueError(
                f"LuongAttention(score={self.score!r}) projects the keys to the "
                "query's depth, which `precompute_keys` cannot see before the "
                "layer is built: call `layer.build(query_shape, value_shape)` "
                f"first (for example `layer.build((None, dq), {tuple(key.shape)})`)"
                f", or call the layer once{fix}. Received: key.shape="
                f"{tuple(key.shape)}"
            )
        self._saw_key(key)
        return self.key_dense(key)  # (B, S, dq) or (B, S, units)

    def compute_scores(self, query, processed_key):
        if self.score in ("dot", "general"):
            scores = ops.matmul(
                query, ops.transpose(processed_key, (0, 2, 1))
            )  # (B, T, S)
        elif self.score == "concat":
            q = self.query_dense(query)  # (B, T, units)
            hidden = ops.tanh(
                ops.expand_dims(q, 2) + ops.expand_dims(processed_key, 1)
            )  # (B, T, S, units)
            v = ops.cast(self.v, hidden.dtype)  # not autocast outside `__call__`
            scores = ops.sum(hidden * v, axis=-1)  # (B, T, S)
        else:
            source_length = processed_key.shape[1]
            if source_length is not None and source_length > self.source_length:
                raise ValueError(
                    f"score='location' was built for sources of at most "
                    f"{self.source_length} positions. Received a source of "
                    f"{source_length}: raise `source_length`."
                )
            scores = self.query_dense(query)  # (B, T, source_length)
            scores = scores[:, :, : ops.shape(processed_key)[1]]  # (B, T, S)
        if self.scale:
            depth = ops.cast(ops.shape(query)[-1], scores.dtype)
            scores = scores / ops.sqrt(depth)
        return scores

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "scale": self.scale,
                "units": self.units,
                "source_length": self.source_length,
            }
        )
        return config

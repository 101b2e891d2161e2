"""Location-sensitive attention of Chorowski et al. (2015), as used by Tacotron 2."""

import keras
from keras import ops

from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class LocationSensitiveAttention(BahdanauAttention):
    """Additive attention that also sees where it attended before.

    Chorowski, Bahdanau, Serdyuk, Cho and Bengio, "Attention-Based Models for
    Speech Recognition" (NeurIPS 2015, eq. 8-9); Shen et al., "Natural TTS
    Synthesis by Conditioning WaveNet on Mel Spectrogram Predictions"
    (Tacotron 2, 2018). For a query s (the decoder state), keys h_j and the
    alignment state α (`previous_alignment`, `(B, S)`):

    1. f = F * α: a 1-D convolution over the source positions (`filters`
       channels, `kernel_size` wide, "same" padding, no bias), `(B, S, filters)`;
    2. e_j = vᵀ tanh(W s + V h_j + U f_j + b), `(B, S)`;
    3. the weights are `probability_fn(e)` (masked positions get exactly 0);
    4. the next state is α + weights with `cumulative=True` (Tacotron 2's
       cumulative attention weights) or the weights alone with
       `cumulative=False` (Chorowski et al.'s α_{t-1}).

    The state starts as zeros (as in Tacotron 2). V h is projected once per
    source (`precompute_keys`); at each step the layer pays for W s and U f.
    It is a `BahdanauAttention` with a location term, so `normalize=True`
    gives the weight-normalised v, and `AttentionDecoder` queries it, as
    Bahdanau's, with the previous decoder state (`query="previous"`) unless
    told otherwise. Being stateful (`stateful = True`), it attends one decoder
    step at a time: `AttentionDecoder` carries α through training and
    generation (beam search included).

    Args:
        units: int, the size of the hidden layer of the scoring network.
        filters: int, the number of channels of the location convolution F.
        kernel_size: int, its width, in source positions.
        cumulative: bool, convolve the sum of all previous alignments (True)
            or the previous step's alignment alone (False).
        normalize: bool, use the weight-normalised v (see `BahdanauAttention`).
        dropout: float in [0, 1), dropout on the attention weights.
        seed: optional int, the seed of the dropout.
        probability_fn: `"softmax"` (default), `"hardmax"`, `"sparsemax"` or a
            callable `(scores, mask) -> weights`: how the scores become weights
            (see `BaseAttention`).
        **kwargs: base layer arguments.

    Call arguments:
        query: one decoder step `(B, dq)` (or `(B, 1, dq)`).
        value: `(B, S, dv)`.
        key: optional `(B, S, dk)`, defaults to `value`.
        query_mask: optional boolean `(B,)` (or `(B, 1)`).
        value_mask: optional boolean `(B, S)`.
        return_attention_scores: bool, also return the weights.
        training: bool, whether dropout is active.
        processed_key: optional `precompute_keys(key)`, `(B, S, units)`.
        attention_mask: optional boolean `(B, 1, S)`.
        previous_alignment: `(B, S)`, the state after the previous step
            (`next_alignment_state`); zeros by default.

    Returns:
        The context `(B, dv)` (or `(B, 1, dv)`), and with
        `return_attention_scores=True` the weights `(B, S)` (or `(B, 1, S)`).

    Example:

    >>> import numpy as np
    >>> layer = LocationSensitiveAttention(units=8, filters=4, kernel_size=3)
    >>> memory = np.random.rand(2, 5, 12).astype("float32")
    >>> state = layer.initial_alignment(2, 5)  # zeros
    >>> for query in np.random.rand(3, 2, 16).astype("float32"):  # 3 steps
    ...     context, weights = layer(
    ...         query, memory, previous_alignment=state, return_attention_scores=True
    ...     )
    ...     state = layer.next_alignment_state(weights, state)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 12), (2, 5))
    >>> total = keras.ops.convert_to_numpy(state).sum(-1)  # cumulative: 3 steps
    >>> bool(np.allclose(total, 3.0, atol=1e-5))
    True

    Inside a decoder, which carries the state:

    >>> from keras_rnnattn.layers import AttentionDecoder
    >>> decoder = AttentionDecoder(16, attention=LocationSensitiveAttention(8))
    >>> targets = np.random.rand(2, 4, 6).astype("float32")
    >>> outputs, alignments = decoder(targets, memory)
    >>> tuple(outputs.shape), tuple(alignments.shape)
    ((2, 4, 16), (2, 4, 5))
    """

    stateful = True

    def __init__(
        self,
        units,
        filters=32,
        kernel_size=31,
        cumulative=True,
        normalize=False,
        dropout=0.0,
        seed=None,
        probability_fn="softmax",
        **kwargs,
    ):
        super().__init__(
            units,
            normalize=normalize,
            dropout=dropout,
            seed=seed,
            probability_fn=probability_fn,
            **kwargs,
        )
        for name, number in (("filters", filters), ("kernel_size", kernel_size)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(
                    f"`{name}` must be a positive int. Received: {name}={number!r}"
                )
        self.filters = filters
        self.kernel_size = kernel_size
        self.cumulative = bool(cumulative)
        # F: the convolution of the alignment; U: its projection to `units`.
        self.location_conv = keras.layers.Conv1D(
            filters,
            kernel_size,
            padding="same",
            use_bias=False,
            dtype=self.dtype_policy,
            name="location_conv",
        )
        self.location_dense = keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name="location_dense"
        )

    def build(self, query_shape, value_shape, key_shape=None):
        self.location_conv.build((None, None, 1))
        self.location_dense.build((None, None, self.filters))
        super().build(query_shape, value_shape, key_shape)

    def next_alignment_state(self, weights, previous_alignment):
        """α + weights with `cumulative=True`, else the weights, `(B, S)`."""
        if self.cumulative:
            return previous_alignment + weights
        return weights

    def location_features(self, previous_alignment):
        """U (F * α): the location term of the score, `(B, S, units)`."""
        alignment = ops.expand_dims(previous_alignment, -1)  # (B, S, 1)
        features = self.location_conv(alignment)  # (B, S, filters)
        return self.location_dense(features)  # (B, S, units)

    def compute_scores(self, query, processed_key, previous_alignment=None):
        if previous_alignment is None:
            previous_alignment = self.initial_alignment(
                ops.shape(processed_key)[0],
                ops.shape(processed_key)[1],
                processed_key.dtype,
            )
        location = self.location_features(
            ops.cast(previous_alignment, processed_key.dtype)
        )  # (B, S, units)
        # vᵀ tanh(W s + b + (V h_j + U f_j)): Bahdanau's score on shifted keys.
        return super().compute_scores(query, processed_key + location)  # (B, T, S)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "cumulative": self.cumulative,
            }
        )
        return config

"""The shared machinery of the scorer layers: masks, normalisation, context."""

import inspect

import keras
from keras import ops

from keras_rnnattn.ops import hardmax, masked_softmax, sparsemax

# The `probability_fn` names and what they run: each takes (scores, mask).
PROBABILITY_FNS = {
    "softmax": masked_softmax,
    "hardmax": hardmax,
    "sparsemax": sparsemax,
}


def _rank(x):
    return len(x.shape)


def _same(a, b):
    """Static dimensions agree, or at least one is unknown."""
    return a is None or b is None or a == b


def _check_probability_fn(probability_fn):
    if isinstance(probability_fn, str):
        if probability_fn in PROBABILITY_FNS:
            return probability_fn
    elif callable(probability_fn):
        return probability_fn
    raise ValueError(
        f"`probability_fn` must be one of {tuple(PROBABILITY_FNS)} or a callable "
        "`(scores, mask) -> weights`. Received: "
        f"probability_fn={probability_fn!r}"
    )


def _is_registered(fn):
    """Whether `keras.saving` can find `fn` (or the class of a callable object)."""
    target = fn if inspect.isfunction(fn) or inspect.isclass(fn) else type(fn)
    if inspect.isfunction(target) and target.__name__ == "<lambda>":
        return False
    if not inspect.isfunction(target) and target.__module__.startswith("keras."):
        return True  # Keras's own classes serialize without registration
    name = keras.saving.get_registered_name(target)
    return keras.saving.get_registered_object(name) is target


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class BaseAttention(keras.layers.Layer):
    """Base class of the attention scorers (`BahdanauAttention`, `LuongAttention`).

    A subclass defines how keys are projected once per source (`precompute_keys`)
    and how a query is scored against them (`compute_scores`); this class does the
    rest, identically for every score:

    1. keys are projected once: `processed_key = precompute_keys(key)`;
    2. `scores = compute_scores(query, processed_key)`, shape `(B, T, S)`;
    3. `weights = probability_fn(scores, mask)` over the source positions (the
       masked softmax by default): padded keys get weight exactly 0, a query
       whose keys are all masked gets all-zero weights (never NaN);
    4. optional dropout on the weights;
    5. `context = weights @ value`, shape `(B, T, dv)`; padded query rows are zero.

    A scorer may depend on where it attended before (monotonic or
    location-sensitive attention): it sets the class attribute `stateful =
    True` and reads `previous_alignment` `(B, S)` in `compute_scores` and/or
    `compute_weights`. The state starts as `initial_alignment(batch_size,
    source_length)` and after each step becomes `next_alignment_state(weights,
    previous_alignment)` (by default this step's weights, tfa's attention
    state; a cumulative scorer adds them up). `AttentionDecoder` carries it
    through training and generation, and the decoding loops (beam search
    included) through `next_fn`'s state. A stateful scorer attends one decoder
    step at a time. Stateless scorers never see any of it.

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights.
        seed: optional int, the seed of the dropout.
        probability_fn: how scores become weights over the source positions:
            `"softmax"` (the default: `ops.masked_softmax`), `"hardmax"` (a
            one-hot of the best unmasked position, the first on ties:
            `ops.hardmax`), `"sparsemax"` (Martins and Astudillo 2016: the
            projection onto the simplex, exact zeros for low scores:
            `ops.sparsemax`), or a callable `(scores, mask) -> weights` with
            `scores` `(B, T, S)` and `mask` a boolean tensor broadcastable to
            it, or None. The mask is applied to a callable's weights as well. To
            save a layer with a callable, register it with
            `keras.saving.register_keras_serializable`.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, T, dq)`, or one decoder step `(B, dq)`.
        value: `(B, S, dv)`.
        key: optional `(B, S, dk)`; defaults to `value`.
        query_mask: optional boolean `(B, T)` (or `(B,)` for one step).
        value_mask: optional boolean `(B, S)`; True marks real positions.
        return_attention_scores: bool, also return the weights.
        training: bool, whether dropout is active.
        processed_key: optional result of `precompute_keys(key)`: pass it in a
            decoder loop so that the S keys are not projected at every step.
        attention_mask: optional boolean `(B, T, S)` or `(T, S)` mask combined with
            `value_mask` (for example a causal mask).
        previous_alignment: `(B, S)`, the state of a stateful scorer from the
            previous step (default: `initial_alignment`); unused by the others.

    Returns:
        The context `(B, T, dv)` (or `(B, dv)` for a single step), and with
        `return_attention_scores=True` also the weights `(B, T, S)` (or `(B, S)`).
    """

    def __init__(self, dropout=0.0, seed=None, probability_fn="softmax", **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(
                f"`dropout` must be a float in [0, 1). Received: dropout={dropout}"
            )
        self.probability_fn = _check_probability_fn(probability_fn)
        self.dropout = float(dropout)
        self.seed = seed
        self.seed_generator = (
            keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        )
        self.supports_masking = True
        # The key shape `precompute_keys` saw before the first call, if it did.
        self._key_shape = None

    # Whether the weights depend on the previous step's alignment state.
    stateful = False

    # Hooks for subclasses.
    def initial_alignment(self, batch_size, source_length, dtype="float32"):
        """The alignment state before the first decoder step, `(B, S)`: zeros.

        Stateful scorers override it (monotonic attention puts all the mass on
        the first memory position).
        """
        return ops.zeros((batch_size, source_length), dtype=dtype)

    def next_alignment_state(self, weights, previous_alignment):
        """The state the next step reads as `previous_alignment`.

        Args:
            weights: `(B, S)`, this step's attention weights.
            previous_alignment: `(B, S)`, the state this step read.

        Returns:
            `(B, S)`: by default `weights`.
        """
        return weights

    def compute_weights(
        self, scores, mask=None, previous_alignment=None, training=None, noise=None
    ):
        """Weights `(B, T, S)` from scores: `probability_fn`, masked.

        Stateful scorers may override it to use `previous_alignment` `(B, S)`
        (and the step's `noise`, see `draw_noise`).
        """
        return self._probabilities(scores, mask)

    def draw_noise(self, shape, training=None):
        """The random numbers of `shape[0]` decoder steps, drawn at once.

        A compiled loop over decoder steps (`ops.scan` under `jax.jit`) cannot
        draw from a `SeedGenerator` inside its body, so `AttentionDecoder`
        draws every step's numbers before the loop and hands each step its
        slice as `attend(..., noise=...)`.

        Args:
            shape: `(steps, B, S)`.
            training: bool; nothing is drawn outside training.

        Returns:
            A dict of `shape` tensors (`"dropout"`: uniform numbers for the
            dropout on the weights), or None when the layer draws nothing.
        """
        if not training or self.dropout <= 0:
            return None
        return {"dropout": keras.random.uniform(shape, seed=self.seed_generator)}

    def precompute_keys(self, key):
        """Projects the keys once per source. Returns what `compute_scores` needs.

        It may be called before the layer's first call: a subclass then builds
        what it needs from `key.shape` (and records it with `_saw_key`); the
        rest is built from the first query that `attend` or `call` sees.
        """
        return key

    def compute_scores(self, query, processed_key, previous_alignment=None):
        """Raw scores `(B, T, S)` from a query `(B, T, dq)` and processed keys.

        `previous_alignment` `(B, S)` is given to stateful scorers only.
        """
        raise NotImplementedError

    def _probabilities(self, scores, mask=None):
        """Weights `(B, T, S)` from scores `(B, T, S)`: `probability_fn`, masked.

        Args:
            scores: the raw scores `(B, T, S)`.
            mask: optional boolean tensor broadcastable to `scores`.

        Returns:
            Weights of the dtype of `scores`, exactly 0 where `mask` is False.
        """
        if isinstance(self.probability_fn, str):
            return PROBABILITY_FNS[self.probability_fn](scores, mask)
        weights = ops.cast(self.probability_fn(scores, mask), scores.dtype)
        if mask is None:
            return weights
        # `where`, not a product: NaN or inf at a masked position becomes 0 too.
        return ops.where(mask, weights, ops.zeros_like(weights))

    # Validation.
    def _validate(self, query, value, key):
        if _rank(query) not in (2, 3):
            raise ValueError(
                f"{self.__class__.__name__}: `query` must have rank 3 (batch, "
                f"query_length, dim) or rank 2 (batch, dim) for one decoder step. "
                f"Received: query.shape={tuple(query.shape)}"
            )
        if _rank(value) != 3:
            raise ValueError(
                f"{self.__class__.__name__}: `value` must have rank 3 (batch, "
                f"source_length, dim). Received: value.shape={tuple(value.shape)}"
            )
        if key is not None:
            if _rank(key) != 3:
                raise ValueError(
                    f"{self.__class__.__name__}: `key` must have rank 3 (batch, "
                    f"source_length, dim). Received: key.shape={tuple(key.shape)}"
                )
            if not (
                _same(key.shape[0], value.shape[0])
                and _same(key.shape[1], value.shape[1])
            ):
                raise ValueError(
                    f"{self.__class__.__name__}: `key` and `value` must have the "
                    "same batch size and source length. Received: "
                    f"key.shape={tuple(key.shape)}, value.shape={tuple(value.shape)}"
                )
        if not _same(query.shape[0], value.shape[0]):
            raise ValueError(
                f"{self.__class__.__name__}: `query` and `value` must have the same "
                f"batch size. Received: query.shape={tuple(query.shape)}, "
                f"value.shape={tuple(value.shape)}"
            )

    def build(self, query_shape, value_shape, key_shape=None):
        self.built = True

    def _saw_key(self, key):
        """Records the key shape of a `precompute_keys` before the first call."""
        if not self.built:
            self._key_shape = tuple(key.shape)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        return_attention_scores=False,
        training=None,
        processed_key=None,
        attention_mask=None,
        previous_alignment=None,
    ):
        self._validate(query, value, key)
        single_step = _rank(query) == 2
        if single_step:
            query = ops.expand_dims(query, 1)  # (B, 1, dq)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, 1)  # (B, 1)
        if processed_key is None:
            processed_key = self.precompute_keys(value if key is None else key)
        context, weights = self.attend(
            query,
            value,
            processed_key,
            query_mask=query_mask,
            value_mask=value_mask,
            attention_mask=attention_mask,
            training=training,
            previous_alignment=previous_alignment,
        )
        if single_step:
            context = ops.squeeze(context, 1)  # (B, dv)
            weights = ops.squeeze(weights, 1)  # (B, S)
        if return_attention_scores:
            return context, weights
        return context

    def attend(
        self,
        query,
        value,
        processed_key,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        training=None,
        previous_alignment=None,
        noise=None,
    ):
        """Context and weights for a rank-3 query: the body of `call`, without checks.

        A decoder loop calls this directly with keys it projected once (and,
        for a stateful scorer, the state `previous_alignment` `(B, S)`). In
        training, `noise` is one step's slice of `draw_noise` (a dict of
        `(B, S)` tensors, T = 1), used instead of drawing.

        Before the layer's first call it builds itself from the shapes of
        `query` and `value` (and of the key that `precompute_keys` saw).

        Returns:
            `(context, weights)`: `(B, T, dv)` and `(B, T, S)`.
        """
        if not self.built:
            self.build(tuple(query.shape), tuple(value.shape), self._key_shape)
        if self.stateful:
            if query.shape[1] is not None and query.shape[1] != 1:
                raise ValueError(
                    f"{self.__class__.__name__} depends on its previous alignment: "
                    "it attends one decoder step at a time (a query of shape "
                    f"(batch, dim)). Received: query.shape={tuple(query.shape)}"
                )
            if previous_alignment is None:
                previous_alignment = self.initial_alignment(
                    ops.shape(value)[0], ops.shape(value)[1], self.compute_dtype
                )
            scores = self.compute_scores(query, processed_key, previous_alignment)
        else:
            scores = self.compute_scores(query, processed_key)  # (B, T, S)
        mask = None
        if value_mask is not None:
            mask = ops.expand_dims(ops.cast(value_mask, "bool"), 1)  # (B, 1, S)
        if attention_mask is not None:
            attention_mask = ops.cast(attention_mask, "bool")
            mask = (
                attention_mask
                if mask is None
                else ops.logical_and(mask, attention_mask)
            )
        if noise is not None:
            noise = {k: ops.expand_dims(v, 1) for k, v in noise.items()}  # (B, 1, S)
        if self.stateful:
            weights = self.compute_weights(
                scores, mask, previous_alignment, training, noise=noise
            )
        else:
            weights = self._probabilities(scores, mask)  # (B, T, S)
        if query_mask is not None:
            keep = ops.cast(ops.expand_dims(query_mask, -1), weights.dtype)  # (B, T, 1)
            weights = weights * keep
        applied = weights
        if training and self.dropout > 0 and noise is not None:
            keep = ops.greater_equal(
                ops.cast(noise["dropout"], weights.dtype), self.dropout
            )
            applied = ops.where(keep, weights / (1.0 - self.dropout), 0.0)
        elif training and self.dropout > 0:
            applied = keras.random.dropout(
                weights, self.dropout, seed=self.seed_generator
            )
        context = ops.matmul(applied, ops.cast(value, applied.dtype))  # (B, T, dv)
        return context, weights

    def compute_mask(self, inputs, previous_mask=None):
        return previous_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return tuple(query_shape[:-1]) + (value_shape[-1],)

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        return_attention_scores=False,
        training=None,
        processed_key=None,
        attention_mask=None,
        previous_alignment=None,
    ):
        self._validate(query, value, key)
        context_shape = self.compute_output_shape(query.shape, value.shape)
        context = keras.KerasTensor(context_shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return context
        weights_shape = tuple(query.shape[:-1]) + (value.shape[1],)
        return context, keras.KerasTensor(weights_shape, dtype=self.compute_dtype)

    def get_build_config(self):
        config = super().get_build_config()
        shapes = (config or {}).get("shapes_dict")
        if shapes is not None and shapes.get("key_shape") is None and self._key_shape:
            # Built by a call with `processed_key` after `precompute_keys(key)`:
            # the key's shape is the one that built the key projection.
            config = {"shapes_dict": {**shapes, "key_shape": self._key_shape}}
        return config

    def get_config(self):
        config = super().get_config()
        probability_fn = self.probability_fn
        if not isinstance(probability_fn, str):
            if not _is_registered(probability_fn):
                raise ValueError(
                    f"{self.__class__.__name__}: `probability_fn` must be registered "
                    "to be saved: define it as a named function (not a lambda) "
                    "and decorate it with "
                    "`@keras.saving.register_keras_serializable()`. Received: "
                    f"probability_fn={probability_fn!r}"
                )
            probability_fn = keras.saving.serialize_keras_object(probability_fn)
        config.update(
            {
                "dropout": self.dropout,
                "seed": self.seed,
                "probability_fn": probability_fn,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        probability_fn = config.get("probability_fn")
        if isinstance(probability_fn, dict):
            config = {
                **config,
                "probability_fn": keras.saving.deserialize_keras_object(probability_fn),
            }
        return super().from_config(config)

"""The attention mechanisms of an `AttentionDecoder`: one or several, alike.

`Mechanisms` is the only place that knows whether a decoder has one mechanism
or a list: memory per mechanism, their build, one attention step over all of
them (with the alignment states of the stateful ones and noise drawn before
the loop), `keras.layers.MultiHeadAttention` adapted to the `BaseAttention`
call, the attention layers W_c, and the output shapes and masks (an alignment
per mechanism, or one). It is a plain object the decoder owns; the layers it
holds stay attributes of the decoder, which Keras tracks (their weight paths
are the decoder's).
"""

import keras
from keras import ops

from keras_rnnattn._backend import linear, tanh_for
from keras_rnnattn.layers.base_attention import BaseAttention


class Mechanisms:
    """A decoder's attention mechanisms and attention layers W_c.

    Args:
        layers: list of attention layers (`BaseAttention` or
            `keras.layers.MultiHeadAttention`).
        multi: bool, whether the decoder was given a list (its results are
            then lists, one item per mechanism).
        units: int, the size of the queries (the cell's outputs).
        readout: list of W_c layers (Dense or a user's), one per mechanism, or
            None.
        user_readout: bool, whether `readout` is a user's layers (called) or
            the decoder's Dense layers (their kernels multiplied in the step).
        concat: bool, o_t = [h_t; c_t] (no W_c).
        activation: the activation of the Dense W_c.
    """

    def __init__(self, layers, multi, units, readout, user_readout, concat, activation):
        self.layers = list(layers)
        self.multi = multi
        self.units = units
        self.readout = None if readout is None else list(readout)
        self.user_readout = user_readout
        self.concat = concat
        self.activation = activation
        # The mechanisms that read their previous alignment: each adds a (B, S)
        # state after the cell states (and o_{t-1}).
        self.stateful = [
            i
            for i, layer in enumerate(self.layers)
            if isinstance(layer, BaseAttention) and layer.stateful
        ]
        self.context_sizes = None
        self.attention_size = None

    @property
    def context_size(self):
        """The summed depth of the contexts (known once built)."""
        return None if self.context_sizes is None else sum(self.context_sizes)

    def per_mechanism(self, value, name, shapes=False):
        """`value` as a list with one item per mechanism (one shared, or a list)."""
        count = len(self.layers)
        is_list = isinstance(value, (list, tuple)) and (
            not shapes or isinstance(value[0], (list, tuple))
        )
        if not is_list:
            return [value] * count
        if len(value) != count:
            raise ValueError(
                f"With {count} attentions, `{name}` must be one tensor or a list "
                f"of {count}. Received a list of {len(value)}."
            )
        return list(value)

    def each(self, values):
        """A result per mechanism as the decoder returns it: a list, or one."""
        return list(values) if self.multi else values[0]

    def as_list(self, value):
        """What `each` returned (or a prepared memory), as a list."""
        return list(value) if self.multi else [value]

    def build(self, memory_shape):
        """Builds the attention layers and W_c: the queries are `units` outputs."""
        query_shape = (None, None, self.units)
        shapes = self.per_mechanism(memory_shape, "memory", shapes=True)
        self.context_sizes = []
        for mechanism, shape in zip(self.layers, shapes):
            if not mechanism.built:
                mechanism.build(query_shape, tuple(shape))
            self.context_sizes.append(
                mechanism.compute_output_shape(query_shape, tuple(shape))[-1]
            )
        if self.concat:
            self.attention_size = self.units + self.context_size
        elif self.readout is None:
            self.attention_size = self.context_size
        else:
            self.attention_size = 0
            for layer, size in zip(self.readout, self.context_sizes):
                shape = (None, size + self.units)
                if not layer.built:
                    layer.build(shape)
                self.attention_size += layer.compute_output_shape(shape)[-1]

    def prepare(self, memories, masks):
        """Each mechanism's memory dict (values, projected keys, boolean mask),
        as the decoder returns it."""
        prepared = []
        for mechanism, values, mask in zip(self.layers, memories, masks):
            if isinstance(mechanism, BaseAttention):
                keys = mechanism.precompute_keys(values)
            else:  # keras.layers.MultiHeadAttention projects its keys itself
                keys = values
            mask = None if mask is None else ops.cast(mask, "bool")
            prepared.append({"values": values, "keys": keys, "mask": mask})
        return self.each(prepared)

    def readout_kernels(self, dtype):
        """The Dense W_c kernels in `dtype`, for the step (None otherwise)."""
        if self.readout is None or self.user_readout:
            return None
        return [ops.cast(layer.kernel, dtype) for layer in self.readout]

    def attend_all(self, query, memory, training, previous=(), noise=None):
        """Each mechanism's context `(B, T, dv_i)` and weights `(B, T, S_i)`.

        `previous` holds the alignment state `(B, S_i)` of each stateful
        mechanism (one step: T = 1); the third result is their next states.
        `noise` maps a mechanism's index (a str) to its step of `draw_noise`.
        """
        contexts, alignments, states = [], [], []
        previous = dict(zip(self.stateful, previous))
        noise = noise or {}
        for i, (mechanism, mem) in enumerate(zip(self.layers, self.as_list(memory))):
            state = previous.get(i)
            context, alignment = attend(
                mechanism, query, mem, training, state, noise.get(str(i))
            )
            contexts.append(context)
            alignments.append(alignment)
            if state is not None:
                states.append(mechanism.next_alignment_state(alignment[:, 0], state))
        return contexts, alignments, states

    def attention_vector(self, h, contexts, kernels):
        """o = f(W_c [c; h]) per mechanism, concatenated; c, or [h; c] without
        W_c. `kernels`: `readout_kernels`' (the Dense W_c)."""
        if self.concat:
            return ops.concatenate([h] + contexts, axis=-1)
        if self.readout is None:
            return contexts[0] if len(contexts) == 1 else ops.concatenate(contexts, -1)
        parts = []
        for i, (layer, context) in enumerate(zip(self.readout, contexts)):
            pre = ops.concatenate([context, h], axis=-1)  # (..., dv + units)
            if self.user_readout:
                parts.append(layer(pre))
            else:
                act = tanh_for(self.activation)  # Eigen's, compiled torch
                parts.append(act(linear(pre, kernels[i])))
        return parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)

    def draw_noise(self, steps, batch_size, memory, training):
        """The attention layers' random numbers for every step, drawn before a loop.

        A compiled scan cannot draw from a seed generator inside. Returns a
        dict from a mechanism's index (a str) to its `(T, B, S)` draws; empty
        when no mechanism draws.
        """
        noise = {}
        for i, (mechanism, mem) in enumerate(zip(self.layers, self.as_list(memory))):
            if isinstance(mechanism, BaseAttention):
                shape = (steps, batch_size, ops.shape(mem["values"])[1])
                drawn = mechanism.draw_noise(shape, training)
                if drawn is not None:
                    noise[str(i)] = drawn
        return noise

    def initial_alignments(self, batch_size, memory, dtype):
        """The initial alignment `(B, S)` of each stateful mechanism, a list."""
        if not self.stateful:
            return []
        if memory is None:
            raise ValueError(
                "An attention of this decoder depends on its previous alignment: "
                "pass `memory=decoder.prepare_memory(...)` to "
                "`get_initial_state`, for the source length."
            )
        memories = self.as_list(memory)
        return [
            self.layers[i].initial_alignment(
                batch_size, ops.shape(memories[i]["values"])[1], dtype
            )
            for i in self.stateful
        ]

    def masks(self, previous_mask):
        """The decoder's output mask and its alignments' masks."""
        if previous_mask is None:
            return None
        return [previous_mask, self.each([previous_mask] * len(self.layers))]

    def output_shapes(self, inputs_shape, memory_shape, size):
        """The decoder's output shape with `size` features, and the alignments'."""
        shapes = self.per_mechanism(memory_shape, "memory", shapes=True)
        batch, length = inputs_shape[0], inputs_shape[1]
        alignments = [(batch, length, shape[1]) for shape in shapes]
        return (batch, length, size), self.each(alignments)

    def output_specs(self, inputs, memory, size, dtype):
        """`KerasTensor`s of the decoder's outputs and alignments."""
        shapes = [m.shape for m in self.per_mechanism(memory, "memory")]
        out_shape, align_shapes = self.output_shapes(
            inputs.shape, self.each(shapes), size
        )
        alignments = [
            keras.KerasTensor(s, dtype=dtype) for s in self.as_list(align_shapes)
        ]
        return keras.KerasTensor(out_shape, dtype=dtype), self.each(alignments)


def attend(mechanism, query, memory, training, previous=None, noise=None):
    """Context `(B, T, dv)` and weights `(B, T, S)` of one mechanism for a query
    `(B, T, units)`: a `BaseAttention`, or `keras.layers.MultiHeadAttention`
    (its heads' weights averaged)."""
    if isinstance(mechanism, BaseAttention):
        return mechanism.attend(
            query,
            memory["values"],
            memory["keys"],
            value_mask=memory["mask"],
            training=training,
            previous_alignment=previous,
            noise=noise,
        )
    mask = memory["mask"]
    if mask is not None:
        mask = ops.expand_dims(mask, 1)  # (B, 1, S)
    context, weights = mechanism(
        query,
        memory["values"],
        key=memory["keys"],
        attention_mask=mask,
        return_attention_scores=True,
        training=training,
    )  # weights: (B, heads, T, S)
    return context, ops.mean(weights, axis=1)

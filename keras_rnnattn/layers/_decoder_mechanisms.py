"""`AttentionDecoder`'s attention plumbing: one mechanism or a list, alike.

A mixin of the decoder: the mechanisms as a list, memory per mechanism, their
build, one attention step over all of them (with the alignment states of the
stateful ones and noise drawn before the loop), `keras.layers.MultiHeadAttention`
adapted to the `BaseAttention` call, the attention layers W_c, and the output
shapes and masks (an alignment per mechanism, or one).
"""

import keras
from keras import ops

from keras_rnnattn._backend import linear, tanh_for
from keras_rnnattn.layers.base_attention import BaseAttention


class DecoderMechanisms:
    """Methods of `AttentionDecoder` over its attention mechanisms."""

    @property
    def mechanisms(self):
        """The attention layers, as a list (one item for a single attention)."""
        return list(self.attention) if self._multi else [self.attention]

    def _readout_layers(self):
        """The attention layers W_c (Dense or a user's), a list, or None."""
        layers = self.attention_layer
        if layers is None:
            layers = self.attention_dense
        if layers is None:
            return None
        return list(layers) if self._multi else [layers]

    def _build_attention(self, memory_shape):
        """Builds the attention layers and W_c: the queries are `units` outputs."""
        query_shape = (None, None, self.units)
        shapes = self._per_mechanism(memory_shape, "memory", shapes=True)
        self.context_sizes = []
        for mechanism, shape in zip(self.mechanisms, shapes):
            if not mechanism.built:
                mechanism.build(query_shape, tuple(shape))
            self.context_sizes.append(
                mechanism.compute_output_shape(query_shape, tuple(shape))[-1]
            )
        layers = self._readout_layers()
        if self._concat:
            self.attention_size = self.units + self.context_size
        elif layers is None:
            self.attention_size = self.context_size
        else:
            self.attention_size = 0
            for layer, size in zip(layers, self.context_sizes):
                shape = (None, size + self.units)
                if not layer.built:
                    layer.build(shape)
                self.attention_size += layer.compute_output_shape(shape)[-1]

    def _per_mechanism(self, value, name, shapes=False):
        """`value` as a list with one item per mechanism (one shared, or a list)."""
        count = len(self.mechanisms)
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

    def _attend(self, mechanism, query, memory, training, previous=None, noise=None):
        """Context `(B, T, dv)` and weights `(B, T, S)` for a query `(B, T, units)`."""
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

    def _attend_all(self, query, memory, training, previous=(), noise=None):
        """Each mechanism's context `(B, T, dv_i)` and weights `(B, T, S_i)`.

        `previous` holds the alignment state `(B, S_i)` of each stateful
        mechanism (one step: T = 1); the third result is their next states.
        `noise` maps a mechanism's index (a str) to its step of `draw_noise`.
        """
        memories = memory if self._multi else [memory]
        contexts, alignments, states = [], [], []
        previous = dict(zip(self._stateful, previous))
        noise = noise or {}
        for i, (mechanism, mem) in enumerate(zip(self.mechanisms, memories)):
            state = previous.get(i)
            context, alignment = self._attend(
                mechanism, query, mem, training, state, noise.get(str(i))
            )
            contexts.append(context)
            alignments.append(alignment)
            if state is not None:
                states.append(mechanism.next_alignment_state(alignment[:, 0], state))
        return contexts, alignments, states

    def _attention_vector(self, h, contexts, params):
        """o = f(W_c [c; h]) per mechanism, concatenated; c, or [h; c] without W_c."""
        if self._concat:
            return ops.concatenate([h] + contexts, axis=-1)
        layers = self._readout_layers()
        if layers is None:
            return contexts[0] if len(contexts) == 1 else ops.concatenate(contexts, -1)
        parts = []
        for i, (layer, context) in enumerate(zip(layers, contexts)):
            pre = ops.concatenate([context, h], axis=-1)  # (..., dv + units)
            if self.attention_layer is not None:
                parts.append(layer(pre))
            else:
                kernel = params["attention_kernels"][i]
                act = tanh_for(self._activation)  # Eigen's, compiled torch
                parts.append(act(linear(pre, kernel)))
        return parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)

    def _outputs(self, h, contexts, params):
        """The layer's output and o_t from h and the contexts."""
        attention = self._attention_vector(h, contexts, params)
        return (attention if self.output_attention else h), attention

    def _draw_noise(self, steps, batch_size, memories, training):
        """The attention layers' random numbers for every step, drawn before a loop.

        A compiled scan cannot draw from a seed generator inside. Returns a
        dict from a mechanism's index (a str) to its `(T, B, S)` draws; empty
        when no mechanism draws.
        """
        noise = {}
        for i, (mechanism, mem) in enumerate(zip(self.mechanisms, memories)):
            if isinstance(mechanism, BaseAttention):
                shape = (steps, batch_size, ops.shape(mem["values"])[1])
                drawn = mechanism.draw_noise(shape, training)
                if drawn is not None:
                    noise[str(i)] = drawn
        return noise

    def _initial_alignments(self, batch_size, memory, dtype):
        """The initial alignment `(B, S)` of each stateful mechanism, a list."""
        if not self._stateful:
            return []
        if memory is None:
            raise ValueError(
                "An attention of this decoder depends on its previous alignment: "
                "pass `memory=decoder.prepare_memory(...)` to "
                "`get_initial_state`, for the source length."
            )
        memories = memory if self._multi else [memory]
        return [
            self.mechanisms[i].initial_alignment(
                batch_size, ops.shape(memories[i]["values"])[1], dtype
            )
            for i in self._stateful
        ]

    def _prepare_one(self, mechanism, values, mask):
        """One mechanism's memory dict: values, projected keys, boolean mask."""
        if isinstance(mechanism, BaseAttention):
            keys = mechanism.precompute_keys(values)
        else:  # keras.layers.MultiHeadAttention projects its keys itself
            keys = values
        mask = None if mask is None else ops.cast(mask, "bool")
        return {"values": values, "keys": keys, "mask": mask}

    def compute_mask(self, inputs, previous_mask=None):
        if previous_mask is None:
            return None
        alignments = [previous_mask] * len(self.mechanisms)
        return [previous_mask, alignments if self._multi else alignments[0]]

    def compute_output_shape(self, inputs_shape, memory_shape):
        shapes = self._per_mechanism(memory_shape, "memory", shapes=True)
        size = self.output_size
        if size is None and self._sizes is not None:  # not built
            size = sum(self._sizes)
        elif size is None and self.attention_layer is None:  # not built, no W_c
            size = sum(shape[-1] for shape in shapes)
            size += self.units if self._concat else 0
        batch, length = inputs_shape[0], inputs_shape[1]
        alignments = [(batch, length, shape[1]) for shape in shapes]
        return (batch, length, size), alignments if self._multi else alignments[0]

    def compute_output_spec(
        self,
        inputs,
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
    ):
        memories = self._per_mechanism(memory, "memory")
        shapes = [m.shape for m in memories]
        out_shape, align_shapes = self.compute_output_shape(
            inputs.shape, shapes if self._multi else shapes[0]
        )
        dtype = self.compute_dtype
        if self._multi:
            alignments = [keras.KerasTensor(s, dtype=dtype) for s in align_shapes]
        else:
            alignments = keras.KerasTensor(align_shapes, dtype=dtype)
        return keras.KerasTensor(out_shape, dtype=dtype), alignments

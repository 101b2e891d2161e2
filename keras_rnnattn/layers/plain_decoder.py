"""The Translator's decoder without attention (Cho et al., 2014)."""

import keras
from keras import ops

from keras_rnnattn._backend import device_scalar
from keras_rnnattn.layers.recurrent import gather_step


class PlainDecoder(keras.layers.Layer):
    """The decoder of Cho et al. (2014): a fixed source summary c at every step.

    s_t = cell([y_{t-1}; c], s_{t-1}) and o_t = tanh(W [c; s_t]): the same readout
    as the attention decoder, with c fixed instead of attended. c is the
    encoder's final state, read from the memory: a forward RNN's output at the
    last real position and, for a bidirectional encoder, the backward RNN's at
    the first. It takes `AttentionDecoder`'s signatures (`call`,
    `prepare_memory`, `get_initial_state`, `step`), and its alignment is None.

    Args:
        units: int, the size of the recurrent state.
        cell: `"gru"` or `"lstm"`.
        output_size: int, the size of o_t; None for `units`.
        backward_size: int, the trailing features of the memory that a
            backward RNN wrote (0 for a forward encoder).
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Example:

    >>> import numpy as np
    >>> decoder = PlainDecoder(8, output_size=6)
    >>> targets = np.random.rand(2, 4, 5).astype("float32")  # (B, T, emb)
    >>> memory = np.random.rand(2, 3, 7).astype("float32")  # (B, S, d)
    >>> outputs, alignments = decoder(targets, memory)
    >>> tuple(outputs.shape), alignments
    ((2, 4, 6), None)
    """

    def __init__(self, units, cell="gru", output_size=None, backward_size=0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.cell_name = cell
        self.backward_size = int(backward_size)
        layer = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        self.rnn = layer(
            units,
            return_sequences=True,
            return_state=True,
            dtype=self.dtype_policy,
            name="rnn",
        )
        self.output_size = output_size or units
        self.readout = keras.layers.Dense(
            self.output_size,
            use_bias=False,
            activation="tanh",
            dtype=self.dtype_policy,
            name="readout",
        )
        self._num_cell_states = 2 if cell == "lstm" else 1

    def build(self, inputs_shape, memory_shape):
        self.rnn.build((None, None, inputs_shape[-1] + memory_shape[-1]))
        self.readout.build((None, memory_shape[-1] + self.units))
        self.built = True

    def _summary(self, memory, memory_mask=None):
        """c `(B, d)` from the memory `(B, S, d)`: the encoder's final state."""
        if memory_mask is None:
            last = ops.zeros((ops.shape(memory)[0],), "int32") + ops.shape(memory)[1]
        else:
            last = ops.sum(ops.cast(memory_mask, "int32"), axis=1)  # (B,) lengths
        last = ops.maximum(last - 1, device_scalar(0, "int32"))
        forward_size = memory.shape[-1] - self.backward_size
        summary = gather_step(memory[..., :forward_size], last)  # (B, forward)
        if self.backward_size:  # the backward RNN ends at the first token
            summary = ops.concatenate([summary, memory[:, 0, forward_size:]], -1)
        return summary

    def prepare_memory(self, memory, memory_mask=None):
        """`{"summary": (B, d)}`, the fixed context of every step."""
        memory = ops.convert_to_tensor(memory)
        return {"summary": self._summary(memory, memory_mask)}

    def get_initial_state(self, batch_size, cell_states=None, memory=None):
        """The cell's states: `cell_states`, or zeros `(B, units)`."""
        if cell_states is None:
            return [
                ops.zeros((batch_size, self.units), dtype=self.compute_dtype)
                for _ in range(self._num_cell_states)
            ]
        return list(cell_states)

    def call(self, inputs, memory, initial_state=None, memory_mask=None, training=None):
        summary = self._summary(memory, memory_mask)  # (B, d)
        summary = ops.expand_dims(summary, 1)  # (B, 1, d)
        summary = ops.broadcast_to(
            summary,
            (ops.shape(inputs)[0], ops.shape(inputs)[1], ops.shape(summary)[-1]),
        )  # (B, T, d)
        x = ops.concatenate([inputs, ops.cast(summary, inputs.dtype)], axis=-1)
        h = self.rnn(x, initial_state=initial_state, training=training)[0]
        readout = ops.concatenate([ops.cast(summary, h.dtype), h], axis=-1)
        return self.readout(readout), None

    def step(self, inputs_t, states, memory, training=None):
        summary = memory["summary"]
        if not self.built:
            self.build(tuple(inputs_t.shape), tuple(summary.shape))
        x = ops.concatenate([inputs_t, ops.cast(summary, inputs_t.dtype)], axis=-1)
        h, new_states = self.rnn.cell(x, list(states), training=training)
        output = self.readout(ops.concatenate([ops.cast(summary, h.dtype), h], axis=-1))
        return output, list(keras.tree.flatten(new_states)), None

    def compute_output_shape(self, inputs_shape, memory_shape):
        return tuple(inputs_shape[:2]) + (self.output_size,), None

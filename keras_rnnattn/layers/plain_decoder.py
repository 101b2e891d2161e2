"""The Translator's decoder without attention (Cho et al., 2014)."""

import keras
from keras import ops


class PlainDecoder(keras.layers.Layer):
    """The decoder of Cho et al. (2014): a fixed source summary c at every step.

    s_t = cell([y_{t-1}; c], s_{t-1}) and o_t = tanh(W [c; s_t]): the same readout
    as the attention decoder, with c fixed instead of attended. It has the
    interface the Translator uses from `AttentionDecoder` (`prepare_memory`,
    `get_initial_state`, `step`), and no alignment.
    """

    def __init__(self, units, cell="gru", output_size=None, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.cell_name = cell
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

    def prepare_memory(self, memory, memory_mask=None):
        return {"summary": memory}

    def get_initial_state(self, batch_size, cell_states=None):
        if cell_states is None:
            return [
                ops.zeros((batch_size, self.units), dtype=self.compute_dtype)
                for _ in range(self._num_cell_states)
            ]
        return list(cell_states)

    def call(self, inputs, memory, initial_state=None, training=None):
        summary = ops.expand_dims(memory, 1)  # (B, 1, d)
        summary = ops.broadcast_to(
            summary, (ops.shape(inputs)[0], ops.shape(inputs)[1], ops.shape(memory)[-1])
        )  # (B, T, d)
        x = ops.concatenate([inputs, ops.cast(summary, inputs.dtype)], axis=-1)
        h = self.rnn(x, initial_state=initial_state, training=training)[0]
        return self.readout(ops.concatenate([ops.cast(summary, h.dtype), h], axis=-1))

    def step(self, inputs_t, states, memory, training=None):
        summary = memory["summary"]
        if not self.built:
            self.build(tuple(inputs_t.shape), tuple(summary.shape))
        x = ops.concatenate([inputs_t, ops.cast(summary, inputs_t.dtype)], axis=-1)
        h, new_states = self.rnn.cell(x, list(states), training=training)
        output = self.readout(ops.concatenate([ops.cast(summary, h.dtype), h], axis=-1))
        return output, list(keras.tree.flatten(new_states)), None

    def compute_output_shape(self, inputs_shape, memory_shape):
        return tuple(inputs_shape[:2]) + (self.output_size,)

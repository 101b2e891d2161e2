"""A recurrent decoder that attends over encoder memory: the Keras 3 AttentionWrapper."""

import keras
from keras import ops

from keras_rnnattn._backend import gate_step, run_rnn, time_loop
from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention
from keras_rnnattn.layers.base_attention import BaseAttention
from keras_rnnattn.layers.score_layers import score_layer

CELLS = ("gru", "lstm")
ATTENTIONS = ("bahdanau", "luong_dot", "luong_general", "luong_concat")
QUERIES = ("previous", "current")


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class AttentionDecoder(keras.layers.Layer):
    """A recurrent cell that attends over encoder memory at every step.

    The Keras 3 successor of tfa's `AttentionWrapper`. One `step` holds the
    recurrence; `call` drives it over a whole target sequence (teacher forcing)
    with `keras.ops.scan` (a Python loop on torch), and generation drives the
    same `step` one token at a time. B is the batch, T the target length, S the source length.

    With `query="previous"` (Bahdanau et al., 2015) step t is

    1. c_t, a_t = attention(query=s_{t-1}, memory);
    2. s_t = cell([x_t; c_t], s_{t-1})  (the context enters with the input;
       without input feeding the cell sees x_t alone);
    3. o_t = tanh(W_c [c_t; s_t]).

    With `query="current"` (Luong et al., 2015) step t is

    1. h_t = cell([x_t; o_{t-1}], h_{t-1})  (input feeding; without it, x_t);
    2. c_t, a_t = attention(query=h_t, memory);
    3. o_t = tanh(W_c [c_t; h_t]), the attentional state h̃_t.

    With `attention_layer_size=None`, o_t = [h_t; c_t] instead of step 3.
    Work that does not depend on the previous step is done once, outside the
    loop: the input part of the cell's kernel for all T steps, the key
    projection of the memory, and (when o_t is not fed back) W_c. Without input
    feeding the recurrence does not depend on attention, so the whole target
    sequence goes through a stock `keras.layers.GRU`/`LSTM` (with the fastest
    kernel of the backend: PyTorch's fused one on torch) and attention runs for
    all steps at once (`use_fast_path`); the result is the same.

    Args:
        units: int, the size of the recurrent state. May be left None when
            `cell` is a cell instance with a `units` attribute.
        cell: `"gru"`, `"lstm"`, or a Keras RNN cell instance (such as
            `keras.layers.GRUCell(64)`). With a name, the step uses the cell's
            kernels directly so that the input projection is done once for all
            steps; an instance is called as it is at every step.
        attention: `"bahdanau"`, `"luong_dot"`, `"luong_general"`,
            `"luong_concat"`, or an attention layer instance (a `BaseAttention`
            subclass or `keras.layers.MultiHeadAttention`, whose weights are
            averaged over heads for the alignment).
        query: `"previous"` or `"current"`; None picks `"previous"` for
            Bahdanau attention and `"current"` otherwise.
        input_feeding: bool. `"previous"`: the context c_t is concatenated
            with the input of the cell. `"current"`: the previous output
            o_{t-1} is concatenated with the next input.
        attention_layer_size: int, the size of o_t = tanh(W_c [c_t; h_t]);
            `"auto"` uses `units`; None outputs [h_t; c_t] (size
            `units + memory depth`).
        use_fast_path: bool, with `input_feeding=False` run the recurrence
            through a stock Keras RNN layer and attend for all steps at once.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, input_dim)`, the embedded target inputs y_0..y_{T-1}.
        memory: `(B, S, memory_dim)`, the encoder outputs (keys and values).
        initial_state: optional list of the cell's states (`[h]` for a GRU,
            `[h, c]` for an LSTM), each `(B, units)`; zeros by default.
        inputs_mask: optional boolean `(B, T)`; outputs and alignments at
            padded target positions are zero. Filled in from Keras masks.
        memory_mask: optional boolean `(B, S)`; padded source positions get
            attention weight 0 at every step. Filled in from Keras masks.
        training: bool, whether dropout (of the attention layer) is active.

    Returns:
        `(outputs, alignments)`: `(B, T, output_size)` and `(B, T, S)`.

    Example:

    >>> import numpy as np
    >>> decoder = AttentionDecoder(16, cell="gru", attention="bahdanau")
    >>> targets = np.random.rand(2, 4, 8).astype("float32")  # embedded targets
    >>> memory = np.random.rand(2, 5, 12).astype("float32")  # encoder outputs
    >>> outputs, alignments = decoder(targets, memory)
    >>> tuple(outputs.shape), tuple(alignments.shape)
    ((2, 4, 16), (2, 4, 5))
    >>> # Generation: the same step, one token at a time.
    >>> mem = decoder.prepare_memory(memory)
    >>> states = decoder.get_initial_state(2)
    >>> out, states, weights = decoder.step(targets[:, 0], states, mem)
    >>> tuple(out.shape), tuple(weights.shape)
    ((2, 16), (2, 5))
    """

    def __init__(
        self,
        units=None,
        cell="gru",
        attention="bahdanau",
        query=None,
        input_feeding=True,
        attention_layer_size="auto",
        use_fast_path=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(cell, str):
            if cell not in CELLS:
                raise ValueError(
                    f"`cell` must be one of {CELLS} or a Keras RNN cell instance. "
                    f"Received: cell={cell!r}"
                )
            if not isinstance(units, int) or units < 1:
                raise ValueError(
                    f"`units` must be a positive int with cell={cell!r}. "
                    f"Received: units={units}"
                )
        elif isinstance(cell, keras.layers.Layer) and hasattr(cell, "state_size"):
            cell_units = getattr(cell, "units", None)
            if units is None:
                units = cell_units
            if not isinstance(units, int) or units < 1:
                raise ValueError(
                    "`units` must be a positive int: pass it, or a cell with a "
                    f"`units` attribute. Received: units={units}"
                )
            if cell_units is not None and cell_units != units:
                raise ValueError(
                    f"`units` must match the cell's units ({cell_units}). "
                    f"Received: units={units}"
                )
        else:
            raise ValueError(
                f"`cell` must be one of {CELLS} or a Keras RNN cell instance (a "
                f"layer with `state_size`). Received: cell={cell!r}"
            )

        if isinstance(attention, str):
            if attention not in ATTENTIONS:
                raise ValueError(
                    f"`attention` must be one of {ATTENTIONS} or an attention layer "
                    "instance (for Luong's location score, "
                    "`LuongAttention(score='location', source_length=S)`). "
                    f"Received: attention={attention!r}"
                )
        elif not isinstance(
            attention, (BaseAttention, keras.layers.MultiHeadAttention)
        ):
            raise ValueError(
                "`attention` must be a name or an instance of BaseAttention or "
                f"keras.layers.MultiHeadAttention. Received: attention={attention!r}"
            )
        is_bahdanau = attention == "bahdanau" or isinstance(
            attention, BahdanauAttention
        )
        if query is None:
            query = "previous" if is_bahdanau else "current"
        if query not in QUERIES:
            raise ValueError(
                f"`query` must be one of {QUERIES} or None. Received: query={query!r}"
            )
        if attention_layer_size is not None and attention_layer_size != "auto":
            if not isinstance(attention_layer_size, int) or attention_layer_size < 1:
                raise ValueError(
                    "`attention_layer_size` must be a positive int, 'auto' or None. "
                    f"Received: attention_layer_size={attention_layer_size!r}"
                )

        self.units = units
        self.query = query
        self.input_feeding = bool(input_feeding)
        self.attention_layer_size = attention_layer_size
        self.use_fast_path = bool(use_fast_path)
        # Names are kept for the config; instances are tracked once, inside the
        # RNN layer and as `self.attention`.
        self._cell_name = cell if isinstance(cell, str) else None
        self._attention_name = attention if isinstance(attention, str) else None
        self._size = units if attention_layer_size == "auto" else attention_layer_size

        if cell == "gru":
            self.rnn = keras.layers.GRU(
                units,
                return_sequences=True,
                return_state=True,
                dtype=self.dtype_policy,
                name="rnn",
            )
        elif cell == "lstm":
            self.rnn = keras.layers.LSTM(
                units,
                return_sequences=True,
                return_state=True,
                dtype=self.dtype_policy,
                name="rnn",
            )
        else:
            self.rnn = keras.layers.RNN(
                cell,
                return_sequences=True,
                return_state=True,
                dtype=self.dtype_policy,
                name="rnn",
            )
        self.attention = (
            score_layer(attention, units, name="attention")
            if isinstance(attention, str)
            else attention
        )
        self.attention_dense = None
        if self._size is not None:
            self.attention_dense = keras.layers.Dense(
                self._size,
                use_bias=False,
                activation="tanh",
                dtype=self.dtype_policy,
                name="attention_dense",
            )
        self._num_cell_states = len(keras.tree.flatten(self.cell.state_size))
        self.context_size = None
        self.supports_masking = True

    # Structure.
    @property
    def cell(self):
        """The recurrent cell (shared with the fast path's RNN layer)."""
        return self.rnn.cell

    @property
    def _feeds_output(self):
        """Whether o_{t-1} is part of the state (Luong input feeding)."""
        return self.query == "current" and self.input_feeding

    @property
    def _fast(self):
        return self.use_fast_path and not self.input_feeding

    @property
    def output_size(self):
        """The size of o_t (known once the layer is built)."""
        if self._size is not None:
            return self._size
        if self.context_size is None:
            return None
        return self.units + self.context_size

    def build(self, inputs_shape, memory_shape):
        input_dim = inputs_shape[-1]
        if input_dim is None or memory_shape[-1] is None:
            raise ValueError(
                "AttentionDecoder needs known feature sizes. Received: "
                f"inputs_shape={inputs_shape}, memory_shape={memory_shape}"
            )
        self._build_attention(memory_shape)
        feed_dim = 0
        if self.input_feeding:
            feed_dim = (
                self.output_size if self.query == "current" else self.context_size
            )
        self.input_dim = input_dim
        self.rnn.build((None, None, input_dim + feed_dim))
        if self.attention_dense is not None:
            self.attention_dense.build((None, self.context_size + self.units))
        self.built = True

    def _build_attention(self, memory_shape):
        """Builds the attention layer: the queries are the cell's `units` outputs."""
        query_shape = (None, None, self.units)
        if not self.attention.built:
            self.attention.build(query_shape, tuple(memory_shape))
        self.context_size = self.attention.compute_output_shape(
            query_shape, tuple(memory_shape)
        )[-1]

    # The pieces of a step.
    def _params(self):
        """The step's weights as tensors of the compute dtype, fetched once per loop."""
        dtype = self.compute_dtype
        params = {}
        if self._cell_name is not None:
            cell = self.cell
            kernel = ops.cast(cell.kernel, dtype)  # (input_dim + feed_dim, G)
            params["kernel_in"] = kernel[: self.input_dim]
            params["kernel_feed"] = kernel[self.input_dim :]
            params["recurrent_kernel"] = ops.cast(cell.recurrent_kernel, dtype)
            bias = ops.cast(cell.bias, dtype)
            if self._cell_name == "gru":  # reset_after: input and recurrent biases
                params["bias_in"], params["bias_rec"] = bias[0], bias[1]
            else:
                params["bias_in"] = bias
        if self.attention_dense is not None:
            params["attention_kernel"] = ops.cast(self.attention_dense.kernel, dtype)
        return params

    def _project_inputs(self, inputs, params):
        """The input part of the cell's pre-activations, for any number of steps."""
        if self._cell_name is None:
            return inputs
        return ops.matmul(inputs, params["kernel_in"]) + params["bias_in"]

    def _cell_step(self, x, cell_states, feed, params, training):
        """The recurrence: new output h and cell states from projected input x."""
        if self._cell_name is None:
            if feed is not None:
                x = ops.concatenate([x, feed], axis=-1)
            h, new_states = self.cell(x, list(cell_states), training=training)
            return h, list(keras.tree.flatten(new_states))
        if feed is not None:
            x = x + ops.matmul(feed, params["kernel_feed"])  # (B, G)
        return gate_step(
            self._cell_name,
            self.cell,
            x,
            cell_states,
            params["recurrent_kernel"],
            params.get("bias_rec"),
        )

    def _attend(self, query, memory, training):
        """Context `(B, T, dv)` and weights `(B, T, S)` for a query `(B, T, units)`."""
        if isinstance(self.attention, BaseAttention):
            return self.attention.attend(
                query,
                memory["values"],
                memory["keys"],
                value_mask=memory["mask"],
                training=training,
            )
        mask = memory["mask"]
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # (B, 1, S)
        context, weights = self.attention(
            query,
            memory["values"],
            key=memory["keys"],
            attention_mask=mask,
            return_attention_scores=True,
            training=training,
        )  # weights: (B, heads, T, S)
        return context, ops.mean(weights, axis=1)

    def _readout(self, h, context, params):
        """o = tanh(W_c [c; h]), or [h; c] without an attention layer."""
        if self.attention_dense is None:
            return ops.concatenate([h, context], axis=-1)
        pre = ops.concatenate([context, h], axis=-1)  # (..., dv + units)
        return ops.tanh(ops.matmul(pre, params["attention_kernel"]))

    def _step(self, x, states, memory, params, training=None, readout=True):
        """The decoder step on a projected input `x` `(B, G)`.

        With `readout=False` the output is [h; c] and W_c is left to the caller
        (the training loop applies it to all steps at once when o_t is not fed back).
        """
        cell_states = list(states[: self._num_cell_states])
        if self.query == "previous":
            context, alignment = self._attend(
                ops.expand_dims(cell_states[0], 1), memory, training
            )  # (B, 1, dv), (B, 1, S)
            context = ops.squeeze(context, 1)
            feed = context if self.input_feeding else None
            h, cell_states = self._cell_step(x, cell_states, feed, params, training)
        else:
            feed = states[self._num_cell_states] if self.input_feeding else None
            h, cell_states = self._cell_step(x, cell_states, feed, params, training)
            context, alignment = self._attend(ops.expand_dims(h, 1), memory, training)
            context = ops.squeeze(context, 1)
        alignment = ops.squeeze(alignment, 1)  # (B, S)
        if readout:
            output = self._readout(h, context, params)
        else:
            output = ops.concatenate([h, context], axis=-1)
        new_states = cell_states + ([output] if self._feeds_output else [])
        return output, new_states, alignment

    # Public API for generation.
    def prepare_memory(self, memory, memory_mask=None):
        """Encoder memory for `step`: computed once per source, reused at every step.

        Args:
            memory: `(B, S, memory_dim)` encoder outputs.
            memory_mask: optional boolean `(B, S)`, True at real positions.

        Before the layer's first call it builds the attention layer from
        `memory.shape` (and `step` builds the rest from its inputs).

        Returns:
            A dict `{"values": (B, S, dv), "keys": projected keys, "mask": (B, S)
            bool or None}`.
        """
        memory = ops.convert_to_tensor(memory, dtype=self.compute_dtype)
        if not self.built:
            self._build_attention(memory.shape)
        if isinstance(self.attention, BaseAttention):
            keys = self.attention.precompute_keys(memory)
        else:
            keys = memory
        mask = None if memory_mask is None else ops.cast(memory_mask, "bool")
        return {"values": memory, "keys": keys, "mask": mask}

    def get_initial_state(self, batch_size, cell_states=None):
        """The state list that `step` expects: the cell's states, then o_0 = 0 if fed.

        Args:
            batch_size: int or scalar tensor.
            cell_states: optional list of the cell's initial states, each
                `(B, units)`; zeros by default.

        Returns:
            A list of `(B, ...)` tensors.
        """
        dtype = self.compute_dtype
        if cell_states is None:
            sizes = keras.tree.flatten(self.cell.state_size)
            cell_states = [ops.zeros((batch_size, size), dtype=dtype) for size in sizes]
        states = [
            ops.convert_to_tensor(state, dtype=dtype)
            for state in keras.tree.flatten(cell_states)
        ]
        if len(states) != self._num_cell_states:
            raise ValueError(
                f"The cell has {self._num_cell_states} state tensors. Received "
                f"{len(states)} initial states."
            )
        if self._feeds_output:
            states.append(ops.zeros((batch_size, self.output_size), dtype=dtype))
        return states

    def step(self, inputs_t, states, memory, training=None):
        """One decoder step: `(outputs_t, states, alignment_t)`.

        Args:
            inputs_t: `(B, input_dim)`, the embedded previous token.
            states: the list from `get_initial_state` or the previous step.
            memory: the dict from `prepare_memory`.
            training: bool.

        Before the layer's first call it builds itself from the shapes of
        `inputs_t` and of the memory.

        Returns:
            `outputs_t` `(B, output_size)`, the new state list, and the
            attention weights `alignment_t` `(B, S)`.
        """
        dtype = self.compute_dtype
        if not self.built:
            self.build(tuple(inputs_t.shape), tuple(memory["values"].shape))
        params = self._params()
        x = self._project_inputs(ops.convert_to_tensor(inputs_t, dtype=dtype), params)
        states = [ops.convert_to_tensor(state, dtype=dtype) for state in states]
        return self._step(x, states, memory, params, training)

    # Drivers over a whole target sequence.
    def _run_scan(self, inputs, cell_states, memory, training):
        params = self._params()
        x = self._project_inputs(inputs, params)  # (B, T, G), all steps at once
        batch_size = ops.shape(inputs)[0]
        states = self.get_initial_state(batch_size, cell_states)
        readout = self._feeds_output  # otherwise W_c is applied after the loop
        step_size = self.output_size if readout else self.units + self.context_size
        init = (
            tuple(states),
            ops.zeros((batch_size, step_size), dtype=self.compute_dtype),
            ops.zeros(
                (batch_size, ops.shape(memory["values"])[1]), dtype=self.compute_dtype
            ),
        )

        def body(carry, x_t):
            output, new_states, alignment = self._step(
                x_t, list(carry[0]), memory, params, training, readout=readout
            )
            # The per-step output is the carry itself: TF's scan needs that.
            new_carry = (tuple(new_states), output, alignment)
            return new_carry, new_carry

        _, history = time_loop(body, init, ops.transpose(x, (1, 0, 2)))
        outputs = ops.transpose(history[1], (1, 0, 2))  # (B, T, step_size)
        alignments = ops.transpose(history[2], (1, 0, 2))  # (B, T, S)
        if not readout:
            outputs = self._readout(
                outputs[..., : self.units], outputs[..., self.units :], params
            )
        return outputs, alignments

    def _run_fast(self, inputs, cell_states, memory, training):
        params = self._params()
        h = run_rnn(self.rnn, inputs, cell_states, training)  # (B, T, units)
        if self.query == "current":
            queries = h
        else:  # s_{t-1}: the initial state, then all but the last output
            queries = ops.concatenate(
                [ops.expand_dims(ops.cast(cell_states[0], h.dtype), 1), h[:, :-1]],
                axis=1,
            )
        context, alignments = self._attend(queries, memory, training)
        return self._readout(h, context, params), alignments

    def call(
        self,
        inputs,
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
    ):
        if len(inputs.shape) != 3 or len(memory.shape) != 3:
            raise ValueError(
                "AttentionDecoder expects inputs (batch, target_length, dim) and "
                "memory (batch, source_length, dim). Received: "
                f"inputs.shape={tuple(inputs.shape)}, memory.shape={tuple(memory.shape)}"
            )
        mem = self.prepare_memory(memory, memory_mask)
        batch_size = ops.shape(inputs)[0]
        if initial_state is None:
            cell_states = self.get_initial_state(batch_size)[: self._num_cell_states]
        else:
            cell_states = [
                ops.convert_to_tensor(state, dtype=self.compute_dtype)
                for state in keras.tree.flatten(initial_state)
            ]
            if len(cell_states) != self._num_cell_states:
                raise ValueError(
                    f"`initial_state` must hold the cell's {self._num_cell_states} "
                    f"state tensors. Received {len(cell_states)}."
                )
        if self._fast:
            outputs, alignments = self._run_fast(inputs, cell_states, mem, training)
        else:
            outputs, alignments = self._run_scan(inputs, cell_states, mem, training)
        if inputs_mask is not None:
            keep = ops.cast(ops.expand_dims(inputs_mask, -1), outputs.dtype)  # (B,T,1)
            outputs = outputs * keep
            alignments = alignments * ops.cast(keep, alignments.dtype)
        return outputs, alignments

    def compute_mask(self, inputs, previous_mask=None):
        if previous_mask is None:
            return None
        return [previous_mask, previous_mask]

    def compute_output_shape(self, inputs_shape, memory_shape):
        size = self.output_size
        if size is None:
            size = self.units + memory_shape[-1]
        batch, length = inputs_shape[0], inputs_shape[1]
        return (batch, length, size), (batch, length, memory_shape[1])

    def compute_output_spec(
        self,
        inputs,
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
    ):
        out_shape, align_shape = self.compute_output_shape(inputs.shape, memory.shape)
        return (
            keras.KerasTensor(out_shape, dtype=self.compute_dtype),
            keras.KerasTensor(align_shape, dtype=self.compute_dtype),
        )

    def get_config(self):
        config = super().get_config()
        cell = self._cell_name or keras.saving.serialize_keras_object(self.cell)
        attention = self._attention_name or keras.saving.serialize_keras_object(
            self.attention
        )
        config.update(
            {
                "units": self.units,
                "cell": cell,
                "attention": attention,
                "query": self.query,
                "input_feeding": self.input_feeding,
                "attention_layer_size": self.attention_layer_size,
                "use_fast_path": self.use_fast_path,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("cell", "attention"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)

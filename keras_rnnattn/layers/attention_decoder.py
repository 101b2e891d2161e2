"""A recurrent decoder that attends over encoder memory: the Keras 3 AttentionWrapper.

The layer's public surface lives here; its pieces live beside it: the argument
checks (`_decoder_checks`), the attention plumbing (`_decoder_mechanisms`), the
named cells' kernels (`_decoder_cells`) and the step with its drivers over time
(`_decoder_loops`).
"""

import keras
from keras import ops

from keras_rnnattn.layers._decoder_cells import DecoderCells
from keras_rnnattn.layers._decoder_checks import (
    CELLS,
    activation_function,
    attention_specs,
    check_attention_layer,
    check_cell,
    check_stack,
    deserialize,
    indexed,
    layer_sizes,
    resolve_query,
)
from keras_rnnattn.layers._decoder_loops import DecoderLoops
from keras_rnnattn.layers._decoder_mechanisms import DecoderMechanisms
from keras_rnnattn.layers.base_attention import BaseAttention
from keras_rnnattn.layers.score_layers import score_layer

__all__ = ["AttentionDecoder", "CELLS"]


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class AttentionDecoder(
    DecoderMechanisms, DecoderCells, DecoderLoops, keras.layers.Layer
):
    """A recurrent cell that attends over encoder memory at every step.

    The Keras 3 successor of tfa's `AttentionWrapper`. One `step` holds the
    recurrence; `call` drives it over a whole target sequence (teacher forcing)
    with `keras.ops.scan` (a Python loop on torch), and generation drives the
    same `step` one token at a time. B is the batch, T the target length, S the
    source length.

    With `query="current"` (Luong et al., 2015; tfa's `AttentionWrapper`) step t is

    1. h_t = cell([x_t; o_{t-1}], h_{t-1})  (input feeding; without it, x_t);
    2. c_t, a_t = attention(query=h_t, memory);
    3. o_t = f(W_c [c_t; h_t]), the attentional vector (Luong's h̃_t); the
       step outputs o_t (or h_t with `output_attention=False`).

    With `query="previous"` (Bahdanau et al., 2015) step t is

    1. c_t, a_t = attention(query=s_{t-1}, memory);
    2. s_t = cell([x_t; c_t], s_{t-1})  (the context enters with the input;
       without input feeding the cell sees x_t alone);
    3. o_t = f(W_c [c_t; s_t]).

    f is `attention_activation` (tanh by default, as in Luong et al.; None is
    tfa's linear attention layer), W_c has `attention_layer_size` outputs, and
    `attention_layer` replaces f(W_c .) by any layer. Without an attention
    layer (`attention_layer_size=None`, as in tfa) o_t = c_t;
    `attention_layer_size="concat"` gives o_t = [h_t; c_t].

    Several attention mechanisms (`attention=[...]`, as in tfa) each attend
    with the same query; each has its own W_c (or none), and o_t is the
    concatenation of their attentional vectors. A stacked cell
    (`keras.layers.StackedRNNCells`, or a list of cells) is queried with its
    top layer's output, as in tfa.

    Work that does not depend on the previous step is done once, outside the
    loop: the input part of the cell's kernel for all T steps (named cells),
    the key projections of the memory, and W_c when o_t is not fed back.
    Without input feeding the recurrence does not depend on attention, so the
    whole target sequence goes through a stock Keras RNN layer (with the
    fastest kernel of the backend: PyTorch's fused one on torch) and attention
    runs for all steps at once (`use_fast_path`); the result is the same.

    Args:
        units: int, the size of the recurrent state (of the top layer for a
            stacked cell). May be left None when `cell` is a cell instance
            with a `units` attribute (or a stack whose top cell has one).
        cell: `"gru"`, `"lstm"`, a Keras RNN cell instance (such as
            `keras.layers.GRUCell(64)`), a `keras.layers.StackedRNNCells`, or a
            list of cells (stacked). With a name, the step uses the cell's
            kernels directly so that the input projection is done once for all
            steps; an instance is called as it is at every step.
        attention: `"bahdanau"`, `"luong_dot"`, `"luong_general"`,
            `"luong_concat"`, an attention layer instance (a `BaseAttention`
            subclass or `keras.layers.MultiHeadAttention`, whose weights are
            averaged over heads for the alignment), or a list of these:
            several mechanisms, each with its alignments.
        query: `"previous"` or `"current"`; None picks `"previous"` for a
            single Bahdanau attention and `"current"` otherwise.
        input_feeding: bool. `"previous"`: the context c_t is concatenated
            with the input of the cell. `"current"`: the previous attentional
            vector o_{t-1} is concatenated with the next input (tfa's
            `cell_input_fn`).
        attention_layer_size: the size of W_c's output: an int, `"auto"`
            (= `units`), a list of ints (one per mechanism), None (no
            attention layer: o_t = c_t, tfa's default) or `"concat"`
            (o_t = [h_t; c_t], size `units` plus the memory depths).
        use_fast_path: bool, with `input_feeding=False` run the recurrence
            through a stock Keras RNN layer and attend for all steps at once.
        attention_activation: the activation f of the attention layer: a
            Keras activation name or function, or None (linear, tfa's
            attention layer). Default `"tanh"` (Luong et al.).
        attention_layer: optional Keras layer (or a list, one per mechanism)
            used instead of f(W_c .), called on [c_t; h_t] (tfa's
            `attention_layer`, whose input is [h_t; c_t]: see the migration
            guide for porting its weights). Leave `attention_layer_size` at
            `"auto"` or None with it.
        output_attention: bool, output o_t (True) or the cell output h_t
            (False, tfa's `output_attention=False`); o_t is fed back either way.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, input_dim)`, the embedded target inputs y_0..y_{T-1}.
        memory: `(B, S, memory_dim)`, the encoder outputs (keys and values);
            with several mechanisms, one tensor shared by all or a list, one
            per mechanism.
        initial_state: optional list of the cell's states (`[h]` for a GRU,
            `[h, c]` for an LSTM; for a stack, the list of each layer's states,
            nested or flat, bottom layer first), each `(B, units)`; zeros by
            default.
        inputs_mask: optional boolean `(B, T)`; outputs and alignments at
            padded target positions are zero. Filled in from Keras masks.
        memory_mask: optional boolean `(B, S)` (a list with a list of
            memories); padded source positions get attention weight 0 at every
            step. Filled in from Keras masks.
        training: bool, whether dropout (of the attention layer) is active.

    Returns:
        `(outputs, alignments)`: `(B, T, output_size)` and `(B, T, S)` (a list
        of those with several mechanisms).

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

    tfa's `AttentionWrapper(cell, [bahdanau, luong], attention_layer_size=[6, 4])`
    over a two-layer LSTM:

    >>> from keras_rnnattn.layers import BahdanauAttention, LuongAttention
    >>> stacked = AttentionDecoder(
    ...     cell=[keras.layers.LSTMCell(16), keras.layers.LSTMCell(16)],
    ...     attention=[BahdanauAttention(16), LuongAttention("general")],
    ...     query="current", attention_layer_size=[6, 4],
    ...     attention_activation=None)
    >>> outputs, (a_1, a_2) = stacked(targets, memory)
    >>> tuple(outputs.shape), tuple(a_1.shape), tuple(a_2.shape)
    ((2, 4, 10), (2, 4, 5), (2, 4, 5))
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
        attention_activation="tanh",
        attention_layer=None,
        output_attention=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            check_stack(cell)
            cell = keras.layers.StackedRNNCells(list(cell), name="stacked_cells")
        units = check_cell(cell, units)
        self._multi, specs = attention_specs(attention)
        query = resolve_query(query, attention, self._multi)
        sizes = layer_sizes(attention_layer_size, units, len(specs), self._multi)
        check_attention_layer(
            attention_layer, attention_layer_size, len(specs), self._multi
        )
        self._activation = activation_function(attention_activation)

        self.units = units
        self.query = query
        self.input_feeding = bool(input_feeding)
        self.attention_layer_size = attention_layer_size
        self.use_fast_path = bool(use_fast_path)
        self.attention_activation = attention_activation
        self.output_attention = bool(output_attention)
        self._concat = attention_layer_size == "concat"
        self._sizes = None if attention_layer is not None else sizes
        # Names are kept for the config; instances are tracked once, inside the
        # RNN layer and as `self.attention`.
        self._cell_name = cell if isinstance(cell, str) else None
        self._attention_names = [
            spec if isinstance(spec, str) else None for spec in specs
        ]

        rnn_args = dict(
            return_sequences=True,
            return_state=True,
            dtype=self.dtype_policy,
            name="rnn",
        )
        if cell in CELLS:
            rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
            self.rnn = rnn(units, **rnn_args)
        else:
            self.rnn = keras.layers.RNN(cell, **rnn_args)
        mechanisms = [
            score_layer(spec, units, name=indexed("attention", i, self._multi))
            if isinstance(spec, str)
            else spec
            for i, spec in enumerate(specs)
        ]
        self.attention = mechanisms if self._multi else mechanisms[0]
        # The mechanisms that read their previous alignment: each adds a (B, S)
        # state after the cell states (and o_{t-1}).
        self._stateful = [
            i
            for i, mechanism in enumerate(mechanisms)
            if isinstance(mechanism, BaseAttention) and mechanism.stateful
        ]
        # W_c: one Dense layer per mechanism, a user's layer, or none.
        self.attention_dense = None
        self.attention_layer = None
        if attention_layer is not None:
            self.attention_layer = attention_layer
        elif sizes is not None:
            dense = [
                keras.layers.Dense(
                    size,
                    use_bias=False,
                    activation=attention_activation,
                    dtype=self.dtype_policy,
                    name=indexed("attention_dense", i, self._multi),
                )
                for i, size in enumerate(sizes)
            ]
            self.attention_dense = dense if self._multi else dense[0]
        flat_sizes = keras.tree.flatten(self.cell.state_size)
        self._num_cell_states = len(flat_sizes)
        # Where the top layer's output h is in the flat state list.
        self._query_index = 0
        if isinstance(self.cell, keras.layers.StackedRNNCells):
            top = len(keras.tree.flatten(self.cell.cells[-1].state_size))
            self._query_index = self._num_cell_states - top
        self.context_sizes = None
        self.attention_size = None
        self.supports_masking = True

    # Structure.
    @property
    def cell(self):
        """The recurrent cell (shared with the fast path's RNN layer)."""
        return self.rnn.cell

    @property
    def context_size(self):
        """The summed depth of the contexts (known once the layer is built)."""
        return None if self.context_sizes is None else sum(self.context_sizes)

    @property
    def _feeds_output(self):
        """Whether o_{t-1} is part of the state (Luong input feeding)."""
        return self.query == "current" and self.input_feeding

    @property
    def _fast(self):
        return self.use_fast_path and not self.input_feeding and not self._stateful

    @property
    def _num_step_states(self):
        """The states before the alignment states: the cell's, then o_{t-1} if fed."""
        return self._num_cell_states + (1 if self._feeds_output else 0)

    @property
    def output_size(self):
        """The size of the outputs (known once the layer is built)."""
        if not self.output_attention:
            return self.units
        return self.attention_size

    def build(self, inputs_shape, memory_shape):
        input_dim = inputs_shape[-1]
        memory_shapes = self._per_mechanism(memory_shape, "memory", shapes=True)
        if input_dim is None or any(shape[-1] is None for shape in memory_shapes):
            raise ValueError(
                "AttentionDecoder needs known feature sizes. Received: "
                f"inputs_shape={inputs_shape}, memory_shape={memory_shape}"
            )
        self._build_attention(memory_shape)
        feed_dim = 0
        if self.input_feeding:
            feed_dim = (
                self.attention_size if self.query == "current" else self.context_size
            )
        self.input_dim = input_dim
        self.rnn.build((None, None, input_dim + feed_dim))
        self.built = True

    # Public API for generation.
    def prepare_memory(self, memory, memory_mask=None):
        """Encoder memory for `step`: computed once per source, reused at every step.

        Args:
            memory: `(B, S, memory_dim)` encoder outputs (with several
                attentions, one shared tensor or a list, one per attention).
            memory_mask: optional boolean `(B, S)`, True at real positions (a
                list with a list of memories).

        Before the layer's first call it builds the attention layers from the
        memory's shape (and `step` builds the rest from its inputs).

        Returns:
            A dict `{"values": (B, S, dv), "keys": projected keys, "mask": (B, S)
            bool or None}`; with several attentions, a list of such dicts.
        """
        memories = self._per_mechanism(memory, "memory")
        memories = [
            ops.convert_to_tensor(m, dtype=self.compute_dtype) for m in memories
        ]
        masks = self._per_mechanism(memory_mask, "memory_mask")
        if not self.built:
            self._build_attention(
                [m.shape for m in memories] if self._multi else memories[0].shape
            )
        prepared = [
            self._prepare_one(mechanism, values, mask)
            for mechanism, values, mask in zip(self.mechanisms, memories, masks)
        ]
        return prepared if self._multi else prepared[0]

    def get_initial_state(self, batch_size, cell_states=None, memory=None):
        """The state list that `step` expects.

        The cell's states, then o_0 = 0 if it is fed back, then the initial
        alignment of each stateful attention (`BaseAttention.stateful`).

        Args:
            batch_size: int or scalar tensor.
            cell_states: optional list of the cell's initial states, each
                `(B, units)` (a stack's may be nested per layer); zeros by
                default.
            memory: what `prepare_memory` returned; needed (for the source
                length) when an attention is stateful.

        Returns:
            A flat list of `(B, ...)` tensors.
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
            states.append(ops.zeros((batch_size, self.attention_size), dtype=dtype))
        states += self._initial_alignments(batch_size, memory, dtype)
        return states

    def step(self, inputs_t, states, memory, training=None):
        """One decoder step: `(outputs_t, states, alignment_t)`.

        Args:
            inputs_t: `(B, input_dim)`, the embedded previous token.
            states: the list from `get_initial_state` or the previous step.
            memory: what `prepare_memory` returned.
            training: bool.

        Before the layer's first call it builds itself from the shapes of
        `inputs_t` and of the memory.

        Returns:
            `outputs_t` `(B, output_size)`, the new state list, and the
            attention weights `alignment_t` `(B, S)` (a list with several
            attentions).
        """
        dtype = self.compute_dtype
        if not self.built:
            memories = memory if self._multi else [memory]
            shapes = [tuple(m["values"].shape) for m in memories]
            self.build(tuple(inputs_t.shape), shapes if self._multi else shapes[0])
        params = self._params()
        x = self._project_inputs(ops.convert_to_tensor(inputs_t, dtype=dtype), params)
        states = [ops.convert_to_tensor(state, dtype=dtype) for state in states]
        return self._step(x, states, memory, params, training)

    def call(
        self,
        inputs,
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
    ):
        memories = self._per_mechanism(memory, "memory")
        if len(inputs.shape) != 3 or any(len(m.shape) != 3 for m in memories):
            raise ValueError(
                "AttentionDecoder expects inputs (batch, target_length, dim) and "
                "memory (batch, source_length, dim). Received: "
                f"inputs.shape={tuple(inputs.shape)}, memory shapes="
                f"{[tuple(m.shape) for m in memories]}"
            )
        mem = self.prepare_memory(memory, memory_mask)
        batch_size = ops.shape(inputs)[0]
        if initial_state is None:
            cell_states = self.get_initial_state(batch_size, memory=mem)
            cell_states = cell_states[: self._num_cell_states]
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
            alignments = [a * ops.cast(keep, a.dtype) for a in alignments]
        return outputs, alignments if self._multi else alignments[0]

    def get_config(self):
        config = super().get_config()
        serialize = keras.saving.serialize_keras_object
        cell = self._cell_name or serialize(self.cell)
        attention = [
            name or serialize(mechanism)
            for name, mechanism in zip(self._attention_names, self.mechanisms)
        ]
        attention_layer = self.attention_layer
        if attention_layer is not None:
            attention_layer = (
                [serialize(layer) for layer in attention_layer]
                if self._multi
                else serialize(attention_layer)
            )
        activation = self.attention_activation
        if activation is not None and not isinstance(activation, str):
            activation = keras.activations.serialize(activation)
        config.update(
            {
                "units": self.units,
                "cell": cell,
                "attention": attention if self._multi else attention[0],
                "query": self.query,
                "input_feeding": self.input_feeding,
                "attention_layer_size": self.attention_layer_size,
                "use_fast_path": self.use_fast_path,
                "attention_activation": activation,
                "attention_layer": attention_layer,
                "output_attention": self.output_attention,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if (
            "output_attention" not in config
            and config.get("attention_layer_size") is None
        ):
            # Saved before `attention_layer_size=None` took tfa's meaning (o_t = c_t):
            # None then meant o_t = [h_t; c_t].
            config["attention_layer_size"] = "concat"
        for key in ("cell", "attention", "attention_layer"):
            config[key] = deserialize(config.get(key))
        activation = config.get("attention_activation")
        if isinstance(activation, dict):
            config["attention_activation"] = keras.activations.deserialize(activation)
        return cls(**config)

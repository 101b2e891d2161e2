"""A recurrent decoder that attends over encoder memory: the Keras 3 AttentionWrapper.

The layer's public surface lives here; it owns one `Mechanisms` (`_mechanisms`:
one attention or several, their memory, alignment states, noise and attention
layers) and calls functions of explicit arguments beside it: the argument
checks (`_decoder_checks`), the named cells' kernels (`_decoder_cells`) and the
step with its drivers over time (`_decoder_loops`).
"""

import keras
from keras import ops

import keras_rnnattn.layers._decoder_loops as loops
from keras_rnnattn.layers._decoder_cells import project_inputs, step_params
from keras_rnnattn.layers._decoder_checks import (
    CELLS,
    activation_function,
    attention_specs,
    check_attention_layer,
    check_cell,
    check_stack,
    layer_sizes,
    resolve_query,
)
from keras_rnnattn.layers._decoder_parts import (
    arguments_from_config,
    attention_layers,
    cell_initial_states,
    dense_readout,
    recurrent_layer,
    serialize_arguments,
    state_layout,
    unbuilt_output_size,
)
from keras_rnnattn.layers._mechanisms import Mechanisms

__all__ = ["AttentionDecoder", "CELLS"]


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class AttentionDecoder(keras.layers.Layer):
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
        self._attention_names = [s if isinstance(s, str) else None for s in specs]
        self.rnn = recurrent_layer(cell, units, self.dtype_policy)
        mechanisms = attention_layers(specs, units, self._multi)
        self.attention = mechanisms if self._multi else mechanisms[0]
        # W_c: one Dense layer per mechanism, a user's layer, or none.
        dense = dense_readout(
            self._sizes, attention_activation, self.dtype_policy, self._multi
        )
        self.attention_dense = dense if dense is None or self._multi else dense[0]
        self.attention_layer = attention_layer
        readout = dense
        if attention_layer is not None:
            readout = list(attention_layer) if self._multi else [attention_layer]
        # The layers above are the decoder's attributes (their weight paths);
        # this object owns the questions of one or several mechanisms.
        self._mechanisms = Mechanisms(
            mechanisms,
            self._multi,
            units,
            readout,
            user_readout=attention_layer is not None,
            concat=self._concat,
            activation=self._activation,
        )
        self._num_cell_states, query_index = state_layout(self.cell)
        self._layout = loops.DecoderLayout(
            query=query,
            input_feeding=self.input_feeding,
            output_attention=self.output_attention,
            units=units,
            num_cell_states=self._num_cell_states,
            query_index=query_index,
            cell_name=self._cell_name,
        )
        self.supports_masking = True

    # Structure.
    @property
    def cell(self):
        """The recurrent cell (shared with the fast path's RNN layer)."""
        return self.rnn.cell

    @property
    def mechanisms(self):
        """The attention layers, as a list (one item for a single attention)."""
        return list(self._mechanisms.layers)

    @property
    def context_sizes(self):
        """The depth of each mechanism's context (known once built), a list."""
        return self._mechanisms.context_sizes

    @property
    def context_size(self):
        """The summed depth of the contexts (known once the layer is built)."""
        return self._mechanisms.context_size

    @property
    def attention_size(self):
        """The size of o_t (known once the layer is built)."""
        return self._mechanisms.attention_size

    @property
    def _stateful(self):
        """The indices of the mechanisms that read their previous alignment."""
        return self._mechanisms.stateful

    @property
    def _fast(self):
        return self.use_fast_path and not self.input_feeding and not self._stateful

    def _readout_layers(self):
        """The attention layers W_c (Dense or a user's), a list, or None."""
        return self._mechanisms.readout

    def _params(self):
        """The step's weights as tensors of the compute dtype."""
        dtype = self.compute_dtype
        return step_params(
            self.cell,
            self._cell_name,
            self.input_dim,
            self._mechanisms.readout_kernels(dtype),
            dtype,
        )

    @property
    def output_size(self):
        """The size of the outputs (known once the layer is built)."""
        if not self.output_attention:
            return self.units
        return self.attention_size

    def build(self, inputs_shape, memory_shape):
        input_dim = inputs_shape[-1]
        memory_shapes = self._mechanisms.per_mechanism(
            memory_shape, "memory", shapes=True
        )
        if input_dim is None or any(shape[-1] is None for shape in memory_shapes):
            raise ValueError(
                "AttentionDecoder needs known feature sizes. Received: "
                f"inputs_shape={inputs_shape}, memory_shape={memory_shape}"
            )
        self._mechanisms.build(memory_shape)
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
        mechanisms = self._mechanisms
        memories = [
            ops.convert_to_tensor(m, dtype=self.compute_dtype)
            for m in mechanisms.per_mechanism(memory, "memory")
        ]
        masks = mechanisms.per_mechanism(memory_mask, "memory_mask")
        if not self.built:
            mechanisms.build(mechanisms.each([m.shape for m in memories]))
        return mechanisms.prepare(memories, masks)

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
        if self._layout.feeds_output:
            states.append(ops.zeros((batch_size, self.attention_size), dtype=dtype))
        states += self._mechanisms.initial_alignments(batch_size, memory, dtype)
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
        mechanisms = self._mechanisms
        if not self.built:
            shapes = [tuple(m["values"].shape) for m in mechanisms.as_list(memory)]
            self.build(tuple(inputs_t.shape), mechanisms.each(shapes))
        params = self._params()
        x = project_inputs(
            self._cell_name, ops.convert_to_tensor(inputs_t, dtype=dtype), params
        )
        states = [ops.convert_to_tensor(state, dtype=dtype) for state in states]
        return loops.step(
            self._layout, mechanisms, self.cell, x, states, memory, params, training
        )

    def call(
        self,
        inputs,
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
    ):
        memories = self._mechanisms.per_mechanism(memory, "memory")
        if len(inputs.shape) != 3 or any(len(m.shape) != 3 for m in memories):
            raise ValueError(
                "AttentionDecoder expects inputs (batch, target_length, dim) and "
                "memory (batch, source_length, dim). Received: "
                f"inputs.shape={tuple(inputs.shape)}, memory shapes="
                f"{[tuple(m.shape) for m in memories]}"
            )
        mem = self.prepare_memory(memory, memory_mask)
        batch_size = ops.shape(inputs)[0]
        cell_states = cell_initial_states(
            initial_state, self._num_cell_states, self.compute_dtype
        )
        if cell_states is None:
            states = self.get_initial_state(batch_size, memory=mem)
            cell_states = states[: self._num_cell_states]
        if not self._fast:
            cell_states = self.get_initial_state(batch_size, cell_states, mem)
        run = loops.run_fast if self._fast else loops.run_scan
        outputs, alignments = run(
            self._layout, self._mechanisms, self.rnn, inputs, cell_states, mem,
            self._params(), training,
        )  # fmt: skip
        if inputs_mask is not None:
            keep = ops.cast(ops.expand_dims(inputs_mask, -1), outputs.dtype)  # (B,T,1)
            outputs = outputs * keep
            alignments = [a * ops.cast(keep, a.dtype) for a in alignments]
        return outputs, self._mechanisms.each(alignments)

    def compute_mask(self, inputs, previous_mask=None):
        return self._mechanisms.masks(previous_mask)

    def compute_output_shape(self, inputs_shape, memory_shape):
        size = unbuilt_output_size(self, memory_shape)
        return self._mechanisms.output_shapes(inputs_shape, memory_shape, size)

    def compute_output_spec(self, inputs, memory, *args, **kwargs):
        mechanisms = self._mechanisms
        shapes = [m.shape for m in mechanisms.per_mechanism(memory, "memory")]
        size = unbuilt_output_size(self, mechanisms.each(shapes))
        return mechanisms.output_specs(inputs, memory, size, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            serialize_arguments(
                self._cell_name,
                self.cell,
                self._attention_names,
                self.mechanisms,
                self._multi,
                self.attention_layer,
                self.attention_activation,
            )
        )
        config.update(
            {
                "units": self.units,
                "query": self.query,
                "input_feeding": self.input_feeding,
                "attention_layer_size": self.attention_layer_size,
                "use_fast_path": self.use_fast_path,
                "output_attention": self.output_attention,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**arguments_from_config(config))

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
LAYER_SIZES = ("auto", "concat")


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
            _check_stack(cell)
            cell = keras.layers.StackedRNNCells(list(cell), name="stacked_cells")
        units = _check_cell(cell, units)
        self._multi = isinstance(attention, (list, tuple))
        specs = list(attention) if self._multi else [attention]
        if not specs:
            raise ValueError(
                "`attention` must be an attention or a non-empty list of "
                "attentions. Received: attention=[]"
            )
        for spec in specs:
            _check_attention(spec)
        if query is None:
            single_bahdanau = not self._multi and (
                attention == "bahdanau" or isinstance(attention, BahdanauAttention)
            )
            query = "previous" if single_bahdanau else "current"
        if query not in QUERIES:
            raise ValueError(
                f"`query` must be one of {QUERIES} or None. Received: query={query!r}"
            )
        sizes = _layer_sizes(attention_layer_size, units, len(specs), self._multi)
        if attention_layer is not None:
            if attention_layer_size not in ("auto", None):
                raise ValueError(
                    "`attention_layer` and `attention_layer_size` cannot both be "
                    "set (as in tfa): leave `attention_layer_size` at 'auto'. "
                    f"Received: attention_layer_size={attention_layer_size!r}"
                )
            layers = attention_layer if self._multi else [attention_layer]
            if (
                not isinstance(layers, (list, tuple))
                or len(layers) != len(specs)
                or not all(isinstance(layer, keras.layers.Layer) for layer in layers)
            ):
                raise ValueError(
                    "`attention_layer` must be a Keras layer (with several "
                    "attentions, a list of one layer per attention). Received: "
                    f"attention_layer={attention_layer!r}"
                )
        try:
            self._activation = keras.activations.get(attention_activation)
        except (ValueError, TypeError) as error:
            raise ValueError(
                "`attention_activation` must be a Keras activation name or "
                "function, or None for a linear attention layer. Received: "
                f"attention_activation={attention_activation!r}"
            ) from error

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

        if cell in CELLS:
            rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
            self.rnn = rnn(
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
        mechanisms = [
            score_layer(spec, units, name=_indexed("attention", i, self._multi))
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
                    name=_indexed("attention_dense", i, self._multi),
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

    def _cell_structure(self, cell_states):
        """The flat cell states in the structure the cell takes."""
        if not isinstance(self.cell, keras.layers.StackedRNNCells):
            return list(cell_states)
        nested, start = [], 0  # plain lists: JAX takes no tracked ones
        for cell in self.cell.cells:
            count = len(keras.tree.flatten(cell.state_size))
            nested.append(list(cell_states[start : start + count]))
            start += count
        return nested

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
            params["attention_kernels"] = [
                ops.cast(layer.kernel, dtype) for layer in self._readout_layers()
            ]
        return params

    def _project_inputs(self, inputs, params):
        """The input part of the cell's pre-activations, for any number of steps."""
        if self._cell_name is None:
            return inputs
        return ops.matmul(inputs, params["kernel_in"]) + params["bias_in"]

    def _cell_step(self, x, cell_states, feed, params, training):
        """The recurrence: the top output h and the flat cell states from input x."""
        if self._cell_name is None:
            if feed is not None:
                x = ops.concatenate([x, feed], axis=-1)
            h, new_states = self.cell(
                x, self._cell_structure(cell_states), training=training
            )
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
                parts.append(self._activation(ops.matmul(pre, kernel)))
        return parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)

    def _outputs(self, h, contexts, params):
        """The layer's output and o_t from h and the contexts."""
        attention = self._attention_vector(h, contexts, params)
        return (attention if self.output_attention else h), attention

    def _step(self, x, states, memory, params, training=None, readout=True, noise=None):
        """The decoder step on a projected input `x` `(B, G)`.

        With `readout=False` (only when o_t is not fed back) the output is
        [h; c_1; ...] and the attention layers are left to the caller, which
        applies them to all steps at once.
        """
        cell_states = list(states[: self._num_cell_states])
        previous = list(states[self._num_step_states :])  # alignment states
        if self.query == "previous":
            query = ops.expand_dims(cell_states[self._query_index], 1)  # (B, 1, u)
            contexts, alignments, previous = self._attend_all(
                query, memory, training, previous, noise
            )
            contexts = [ops.squeeze(context, 1) for context in contexts]
            feed = None
            if self.input_feeding:
                feed = (
                    contexts[0] if len(contexts) == 1 else ops.concatenate(contexts, -1)
                )
            h, cell_states = self._cell_step(x, cell_states, feed, params, training)
        else:
            feed = states[self._num_cell_states] if self.input_feeding else None
            h, cell_states = self._cell_step(x, cell_states, feed, params, training)
            contexts, alignments, previous = self._attend_all(
                ops.expand_dims(h, 1), memory, training, previous, noise
            )
            contexts = [ops.squeeze(context, 1) for context in contexts]
        alignments = [ops.squeeze(alignment, 1) for alignment in alignments]  # (B, S)
        if readout:
            output, attention = self._outputs(h, contexts, params)
        else:
            output, attention = ops.concatenate([h] + contexts, axis=-1), None
        new_states = cell_states + ([attention] if self._feeds_output else [])
        new_states += previous
        return output, new_states, alignments if self._multi else alignments[0]

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
        prepared = []
        for mechanism, values, mask in zip(self.mechanisms, memories, masks):
            if isinstance(mechanism, BaseAttention):
                keys = mechanism.precompute_keys(values)
            else:
                keys = values
            mask = None if mask is None else ops.cast(mask, "bool")
            prepared.append({"values": values, "keys": keys, "mask": mask})
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
        if self._stateful:
            if memory is None:
                raise ValueError(
                    "An attention of this decoder depends on its previous alignment: "
                    "pass `memory=decoder.prepare_memory(...)` to "
                    "`get_initial_state`, for the source length."
                )
            memories = memory if self._multi else [memory]
            for i in self._stateful:
                length = ops.shape(memories[i]["values"])[1]
                states.append(
                    self.mechanisms[i].initial_alignment(batch_size, length, dtype)
                )
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

    # Drivers over a whole target sequence.
    def _split_raw(self, raw):
        """h and the contexts from [h; c_1; ...] `(..., units + dv)`."""
        parts, start = [], 0
        for size in [self.units] + self.context_sizes:
            parts.append(raw[..., start : start + size])
            start += size
        return parts[0], parts[1:]

    def _run_scan(self, inputs, cell_states, memory, training):
        params = self._params()
        x = self._project_inputs(inputs, params)  # (B, T, G), all steps at once
        batch_size = ops.shape(inputs)[0]
        states = self.get_initial_state(batch_size, cell_states, memory)
        readout = self._feeds_output  # otherwise W_c is applied after the loop
        step_size = self.output_size if readout else self.units + self.context_size
        dtype = self.compute_dtype
        memories = memory if self._multi else [memory]
        no_alignments = [
            ops.zeros((batch_size, ops.shape(m["values"])[1]), dtype=dtype)
            for m in memories
        ]
        init = (
            tuple(states),
            ops.zeros((batch_size, step_size), dtype=dtype),
            tuple(no_alignments),
        )

        # The attention layers' random numbers for every step, drawn before the
        # loop (a compiled scan cannot draw from a seed generator inside).
        steps = ops.shape(inputs)[1]
        noise = {}
        for i, (mechanism, mem) in enumerate(zip(self.mechanisms, memories)):
            if isinstance(mechanism, BaseAttention):
                shape = (steps, batch_size, ops.shape(mem["values"])[1])
                drawn = mechanism.draw_noise(shape, training)
                if drawn is not None:
                    noise[str(i)] = drawn
        xs = ops.transpose(x, (1, 0, 2))
        if noise:
            xs = (xs, noise)

        def body(carry, x_t):
            noise_t = None
            if noise:
                x_t, noise_t = x_t
            output, new_states, alignment = self._step(
                x_t,
                list(carry[0]),
                memory,
                params,
                training,
                readout=readout,
                noise=noise_t,
            )
            alignment = alignment if self._multi else [alignment]
            # The per-step output is the carry itself: TF's scan needs that.
            new_carry = (tuple(new_states), output, tuple(alignment))
            return new_carry, new_carry

        _, history = time_loop(body, init, xs)
        outputs = ops.transpose(history[1], (1, 0, 2))  # (B, T, step_size)
        alignments = [ops.transpose(a, (1, 0, 2)) for a in history[2]]  # (B, T, S)
        if not readout:
            h, contexts = self._split_raw(outputs)
            outputs = (
                h
                if not self.output_attention
                else self._outputs(h, contexts, params)[0]
            )
        return outputs, alignments

    def _run_fast(self, inputs, cell_states, memory, training):
        params = self._params()
        h = run_rnn(
            self.rnn, inputs, self._cell_structure(cell_states), training
        )  # (B, T, units)
        if self.query == "current":
            queries = h
        else:  # s_{t-1}: the initial state, then all but the last output
            first = ops.cast(cell_states[self._query_index], h.dtype)
            queries = ops.concatenate([ops.expand_dims(first, 1), h[:, :-1]], axis=1)
        contexts, alignments, _ = self._attend_all(queries, memory, training)
        if not self.output_attention:
            return h, alignments
        return self._outputs(h, contexts, params)[0], alignments

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
            config[key] = _deserialize(config.get(key))
        activation = config.get("attention_activation")
        if isinstance(activation, dict):
            config["attention_activation"] = keras.activations.deserialize(activation)
        return cls(**config)


def _indexed(name, index, multi):
    return f"{name}_{index}" if multi else name


def _deserialize(value):
    if isinstance(value, dict):
        return keras.saving.deserialize_keras_object(value)
    if isinstance(value, list):
        return [_deserialize(item) for item in value]
    return value


def _check_cell(cell, units):
    """The decoder's `units` for `cell` (a name or a cell instance), or raises."""
    if isinstance(cell, str):
        if cell not in CELLS:
            raise ValueError(
                f"`cell` must be one of {CELLS}, a Keras RNN cell instance or a "
                f"list of cells. Received: cell={cell!r}"
            )
        if not isinstance(units, int) or units < 1:
            raise ValueError(
                f"`units` must be a positive int with cell={cell!r}. "
                f"Received: units={units}"
            )
        return units
    if not (isinstance(cell, keras.layers.Layer) and hasattr(cell, "state_size")):
        raise ValueError(
            f"`cell` must be one of {CELLS}, a Keras RNN cell instance (a layer "
            f"with `state_size`) or a list of cells. Received: cell={cell!r}"
        )
    if isinstance(cell, keras.layers.StackedRNNCells):
        _check_stack(cell.cells)
        top = cell.cells[-1]
    else:
        top = cell
    cell_units = getattr(top, "units", None)
    if units is None:
        units = cell_units
    if not isinstance(units, int) or units < 1:
        raise ValueError(
            "`units` must be a positive int: pass it, or a cell with a "
            f"`units` attribute. Received: units={units}"
        )
    if cell_units is not None and cell_units != units:
        raise ValueError(
            f"`units` must match the (top) cell's units ({cell_units}). "
            f"Received: units={units}"
        )
    return units


def _check_stack(cells):
    if not cells:
        raise ValueError("A stack of cells needs at least one cell. Received: cell=[]")
    for item in cells:
        if not (isinstance(item, keras.layers.Layer) and hasattr(item, "state_size")):
            raise ValueError(
                "Every cell of a stack must be a Keras RNN cell instance (a "
                f"layer with `state_size`). Received: {item!r}"
            )


def _check_attention(attention):
    if isinstance(attention, str):
        if attention not in ATTENTIONS:
            raise ValueError(
                f"`attention` must be one of {ATTENTIONS}, an attention layer "
                "instance (for Luong's location score, "
                "`LuongAttention(score='location', source_length=S)`), or a list "
                f"of these. Received: attention={attention!r}"
            )
    elif not isinstance(attention, (BaseAttention, keras.layers.MultiHeadAttention)):
        raise ValueError(
            "`attention` must be a name or an instance of BaseAttention or "
            f"keras.layers.MultiHeadAttention (or a list of these). "
            f"Received: attention={attention!r}"
        )


def _layer_sizes(size, units, count, multi):
    """The output size of each mechanism's W_c, or None without W_c."""
    if size is None or size == "concat":
        return None
    if size == "auto":
        return [units] * count
    if isinstance(size, (list, tuple)):
        if (
            not multi
            or len(size) != count
            or not all(
                isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size
            )
        ):
            raise ValueError(
                "A list `attention_layer_size` needs a list of attentions of the "
                "same length and positive ints (one size per attention). "
                f"Received: attention_layer_size={size!r} for {count} attention(s)"
            )
        return list(size)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(
            "`attention_layer_size` must be a positive int, a list of them (one "
            f"per attention), {LAYER_SIZES!r} or None. "
            f"Received: attention_layer_size={size!r}"
        )
    return [size] * count

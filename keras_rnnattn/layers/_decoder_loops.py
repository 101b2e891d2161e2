"""`AttentionDecoder`'s step and its two drivers over a whole target sequence.

Functions of explicit arguments: the step on a projected input (shared by
`step`, the scan of teacher forcing and generation), the scan over time, and
the fast path without input feeding (a stock Keras RNN layer, then attention
for all steps at once). `DecoderLayout` is what they read of the decoder's
configuration.
"""

import dataclasses

from keras import ops

from keras_rnnattn._backend import run_rnn, time_loop
from keras_rnnattn.layers._decoder_cells import (
    cell_step,
    cell_structure,
    project_inputs,
)


@dataclasses.dataclass(frozen=True)
class DecoderLayout:
    """What the step reads of a decoder's configuration.

    Args:
        query: `"current"` (h_t) or `"previous"` (s_{t-1}).
        input_feeding: bool.
        output_attention: bool, the step outputs o_t (else h_t).
        units: int, the cell's output size.
        num_cell_states: int, the cell's flat state tensors.
        query_index: int, where the top layer's output is in them.
        cell_name: `"gru"`, `"lstm"` or None (a cell called as it is).
    """

    query: str
    input_feeding: bool
    output_attention: bool
    units: int
    num_cell_states: int
    query_index: int
    cell_name: object

    @property
    def feeds_output(self):
        """Whether o_{t-1} is part of the state (Luong input feeding)."""
        return self.query == "current" and self.input_feeding

    @property
    def num_step_states(self):
        """The states before the alignment states: the cell's, then o_{t-1}."""
        return self.num_cell_states + (1 if self.feeds_output else 0)


def outputs(layout, mechanisms, h, contexts, params):
    """The step's output and o_t from h and the contexts."""
    attention = mechanisms.attention_vector(
        h, contexts, params.get("attention_kernels")
    )
    return (attention if layout.output_attention else h), attention


def step(
    layout,
    mechanisms,
    cell,
    x,
    states,
    memory,
    params,
    training=None,
    readout=True,
    noise=None,
):
    """The decoder step on a projected input `x` `(B, G)`.

    With `readout=False` (only when o_t is not fed back) the output is
    [h; c_1; ...] and the attention layers are left to the caller, which
    applies them to all steps at once.

    Returns:
        `(output, new states, alignments as the decoder returns them)`.
    """
    cell_states = list(states[: layout.num_cell_states])
    previous = list(states[layout.num_step_states :])  # alignment states
    if layout.query == "previous":
        query = ops.expand_dims(cell_states[layout.query_index], 1)  # (B, 1, u)
        contexts, alignments, previous = mechanisms.attend_all(
            query, memory, training, previous, noise
        )
        contexts = [ops.squeeze(context, 1) for context in contexts]
        feed = None
        if layout.input_feeding:
            feed = contexts[0] if len(contexts) == 1 else ops.concatenate(contexts, -1)
        h, cell_states = cell_step(
            cell, layout.cell_name, x, cell_states, feed, params, training
        )
    else:
        feed = states[layout.num_cell_states] if layout.input_feeding else None
        h, cell_states = cell_step(
            cell, layout.cell_name, x, cell_states, feed, params, training
        )
        contexts, alignments, previous = mechanisms.attend_all(
            ops.expand_dims(h, 1), memory, training, previous, noise
        )
        contexts = [ops.squeeze(context, 1) for context in contexts]
    alignments = [ops.squeeze(alignment, 1) for alignment in alignments]  # (B, S)
    if readout:
        output, attention = outputs(layout, mechanisms, h, contexts, params)
    else:
        output, attention = ops.concatenate([h] + contexts, axis=-1), None
    new_states = cell_states + ([attention] if layout.feeds_output else [])
    new_states += previous
    return output, new_states, mechanisms.each(alignments)


def split_raw(units, context_sizes, raw):
    """h and the contexts from [h; c_1; ...] `(..., units + dv)`."""
    parts, start = [], 0
    for size in [units] + list(context_sizes):
        parts.append(raw[..., start : start + size])
        start += size
    return parts[0], parts[1:]


def run_scan(layout, mechanisms, rnn, inputs, states, memory, params, training):
    """Teacher forcing: the step over every target position, in a scan.

    Args:
        inputs: `(B, T, input_dim)`, the embedded targets.
        rnn: the decoder's RNN layer (its cell runs the steps).
        states: the decoder's initial state list (`get_initial_state`), in
            the compute dtype.

    Returns:
        `(outputs (B, T, size), [alignments (B, T, S_i)])`.
    """
    x = project_inputs(layout.cell_name, inputs, params)  # (B, T, G), all at once
    batch_size = ops.shape(inputs)[0]
    cell, dtype = rnn.cell, states[0].dtype
    readout = layout.feeds_output  # otherwise W_c is applied after the loop
    if readout:
        step_size = (
            mechanisms.attention_size if layout.output_attention else (layout.units)
        )
    else:
        step_size = layout.units + mechanisms.context_size
    memories = mechanisms.as_list(memory)
    no_alignments = [
        ops.zeros((batch_size, ops.shape(m["values"])[1]), dtype=dtype)
        for m in memories
    ]
    init = (
        tuple(states),
        ops.zeros((batch_size, step_size), dtype=dtype),
        tuple(no_alignments),
    )
    noise = mechanisms.draw_noise(ops.shape(inputs)[1], batch_size, memory, training)
    xs = ops.transpose(x, (1, 0, 2))
    if noise:
        xs = (xs, noise)

    def body(carry, x_t):
        noise_t = None
        if noise:
            x_t, noise_t = x_t
        output, new_states, alignment = step(
            layout,
            mechanisms,
            cell,
            x_t,
            list(carry[0]),
            memory,
            params,
            training,
            readout=readout,
            noise=noise_t,
        )
        # The per-step output is the carry itself: TF's scan needs that.
        new_carry = (tuple(new_states), output, tuple(mechanisms.as_list(alignment)))
        return new_carry, new_carry

    _, history = time_loop(body, init, xs)
    result = ops.transpose(history[1], (1, 0, 2))  # (B, T, step_size)
    alignments = [ops.transpose(a, (1, 0, 2)) for a in history[2]]  # (B, T, S)
    if not readout:
        h, contexts = split_raw(layout.units, mechanisms.context_sizes, result)
        result = (
            h
            if not layout.output_attention
            else outputs(layout, mechanisms, h, contexts, params)[0]
        )
    return result, alignments


def run_fast(layout, mechanisms, rnn, inputs, cell_states, memory, params, training):
    """Without input feeding: the RNN layer over all steps, then attention for
    all of them at once (`run_scan`'s arguments, the cell's states alone).
    `(outputs, [alignments (B, T, S_i)])`."""
    h = run_rnn(
        rnn, inputs, cell_structure(rnn.cell, cell_states), training
    )  # (B, T, units)
    if layout.query == "current":
        queries = h
    else:  # s_{t-1}: the initial state, then all but the last output
        first = ops.cast(cell_states[layout.query_index], h.dtype)
        queries = ops.concatenate([ops.expand_dims(first, 1), h[:, :-1]], axis=1)
    contexts, alignments, _ = mechanisms.attend_all(queries, memory, training)
    if not layout.output_attention:
        return h, alignments
    return outputs(layout, mechanisms, h, contexts, params)[0], alignments

"""`AttentionDecoder`'s step and its two drivers over a whole target sequence.

A mixin of the decoder: the step on a projected input (shared by `step`, the
scan of teacher forcing and generation), the scan over time, and the fast path
without input feeding (a stock Keras RNN layer, then attention for all steps at
once).
"""

from keras import ops

from keras_rnnattn._backend import run_rnn, time_loop


class DecoderLoops:
    """Methods of `AttentionDecoder` that run its step, once or over time."""

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

        noise = self._draw_noise(ops.shape(inputs)[1], batch_size, memories, training)
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

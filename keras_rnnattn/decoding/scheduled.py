"""Scheduled sampling: a training loop that feeds back sampled tokens now and then."""

import numbers

import keras
from keras import ops

from keras_rnnattn._backend import time_loop
from keras_rnnattn.decoding._common import FlatState, vocabulary_size
from keras_rnnattn.decoding.sampling import _invert_cdf, draw_uniforms


def scheduled_sampling(
    step_fn,
    state,
    target_ids,
    sampling_probability,
    seed=None,
    uniforms=None,
    excluded_ids=(),
    step_inputs=None,
):
    """Runs a decoder over a target sequence, feeding back sampled tokens with
    probability p (Bengio et al., 2015).

    Teacher forcing feeds the gold token y_{t-1} at step t; free-running
    decoding feeds the model's own token. Scheduled sampling picks, for every
    row and step t >= 1 independently, the gold token with probability 1 - p,
    or with probability p a token drawn from the softmax of the logits of
    step t - 1 (as tfa's `ScheduledEmbeddingTrainingSampler`). Step 0 always
    feeds `target_ids[:, 0]` (the start token). p = 0 is teacher forcing,
    p = 1 free-running sampled decoding. No gradient flows through the choice
    or the draw: the logits are read through `stop_gradient` and the tokens
    are integers; the gradient flows through each step's logits as in teacher
    forcing.

    The loop runs with `keras.ops.scan` (a Python loop on torch), so it can be
    differentiated and compiled on every backend. p may be a Python float, a
    scalar tensor or a `keras.Variable` (read when the loop is built: a
    compiled train step reads the variable's current value at every call, so
    a schedule can move it without recompiling).

    Randomness: two uniform numbers per row and step, drawn before the loop,
    `uniforms[b, t, 0]` (sample if below p) and `uniforms[b, t, 1]` (the token,
    by inverting the cumulative distribution, as `sample` does). Pass them in
    to make a run repeatable or to check it; otherwise they are drawn with
    `keras.random.uniform` and `seed`.

    Args:
        step_fn: `step_fn(token_ids, state) -> (logits, state)` or
            `(logits, state, output)`, as `next_fn` of the decoders:
            `token_ids` `(B,)` int32, `logits` `(B, V)`, `output` any nested
            structure of `(B, ...)` tensors to collect (the attention weights,
            say). With `step_inputs`, called as
            `step_fn(token_ids, state, inputs_t)`. It is called once for step
            0 and once inside the loop, so it must not create weights in the
            loop (build the layers first).
        state: the initial state, a nested structure of `(B, ...)` tensors
            (None leaves are passed through); the returned state must keep its
            structure, shapes and dtypes.
        target_ids: int `(B, T)`, the gold inputs `y_0 .. y_{T-1}` (teacher
            forcing's decoder inputs, the start token first).
        sampling_probability: float in [0, 1], scalar tensor or variable: p,
            the probability of feeding a sampled token.
        seed: int, a `keras.random.SeedGenerator` (for a model in training:
            one owned by the model) or None (Keras's global seed generator),
            used when `uniforms` is None.
        uniforms: optional float `(B, T, 2)` in [0, 1), the random numbers
            (step 0's are not used).
        excluded_ids: token ids never drawn (probability 0), for example the
            padding and start tokens, which generation never produces either.
        step_inputs: optional nested structure of `(B, T, ...)` tensors; step t
            receives their slices at t as a third argument (dropout masks
            drawn before the loop, say).

    Returns:
        `(logits, token_ids, outputs)`: logits `(B, T, V)` float32 (those of
        step t predict y_t), the int32 tokens fed `(B, T)`, and `outputs` the
        third results of `step_fn` stacked on axis 1 (`(B, T, ...)` leaves),
        or None when `step_fn` returns two values.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_rnnattn.decoding import scheduled_sampling
    >>> # A bigram model over 3 tokens: the logits are a row of a table.
    >>> table = ops.convert_to_tensor(np.log([[.1, .8, .1], [.1, .1, .8],
    ...                                       [.8, .1, .1]]).astype("float32"))
    >>> def step_fn(token_ids, state):
    ...     return ops.take(table, token_ids, axis=0), state + 1
    >>> gold = np.array([[0, 0, 0, 0]])
    >>> logits, fed, _ = scheduled_sampling(step_fn, ops.zeros((1,)), gold, 0.0)
    >>> ops.convert_to_numpy(fed).tolist()  # p = 0: teacher forcing
    [[0, 0, 0, 0]]
    >>> u = np.zeros((1, 4, 2), "float32")  # always sample, the most likely token
    >>> u[..., 1] = 0.5
    >>> _, fed, _ = scheduled_sampling(step_fn, ops.zeros((1,)), gold, 1.0, uniforms=u)
    >>> ops.convert_to_numpy(fed).tolist()  # p = 1: free running
    [[0, 1, 2, 0]]

    With an `AttentionDecoder`, `step_fn` embeds the token, runs
    `decoder.step` and the output layer:

    >>> from keras_rnnattn.layers import AttentionDecoder
    >>> embedding = keras.layers.Embedding(3, 8)
    >>> decoder = AttentionDecoder(16, attention="luong_general")
    >>> readout = keras.layers.Dense(3)
    >>> memory = decoder.prepare_memory(np.random.rand(1, 5, 12).astype("float32"))
    >>> states = decoder.get_initial_state(1)
    >>> def decoder_step(token_ids, states):
    ...     output, states, alignment = decoder.step(embedding(token_ids), states, memory)
    ...     return readout(output), states, alignment
    >>> _ = decoder_step(gold[:, 0], states)  # builds the layers
    >>> logits, fed, alignments = scheduled_sampling(
    ...     decoder_step, states, gold, 0.5, seed=1)
    >>> tuple(logits.shape), tuple(alignments.shape)
    ((1, 4, 3), (1, 4, 5))
    """
    target_ids = ops.cast(ops.convert_to_tensor(target_ids), "int32")
    if len(target_ids.shape) != 2:
        raise ValueError(
            "`target_ids` must be int (batch, target_length). Received: "
            f"target_ids.shape={tuple(target_ids.shape)}"
        )
    if isinstance(sampling_probability, numbers.Real) and not (
        0.0 <= sampling_probability <= 1.0
    ):
        raise ValueError(
            "`sampling_probability` must be in [0, 1]. Received: "
            f"sampling_probability={sampling_probability!r}"
        )
    probability = ops.cast(ops.convert_to_tensor(sampling_probability), "float32")
    batch_size, length = ops.shape(target_ids)[0], ops.shape(target_ids)[1]
    if uniforms is None:
        uniforms = draw_uniforms((batch_size, length, 2), seed)
    uniforms = ops.cast(ops.convert_to_tensor(uniforms), "float32")
    excluded_ids = [int(i) for i in excluded_ids]
    with_inputs = step_inputs is not None

    def call(token_ids, state, t):
        args = (token_ids, state)
        if with_inputs:
            args += (keras.tree.map_structure(lambda x: x[:, t], step_inputs),)
        out = step_fn(*args)
        if not isinstance(out, (tuple, list)) or len(out) not in (2, 3):
            raise ValueError(
                "`step_fn` must return `(logits, state)` or `(logits, state, "
                f"output)`. Received an output of type {type(out).__name__}"
            )
        return ops.cast(out[0], "float32"), out[1], (out[2] if len(out) == 3 else None)

    # Step 0 feeds the start token: no previous logits to sample from.
    logits, state, output = call(target_ids[:, 0], state, 0)  # (B, V)
    vocab = vocabulary_size(logits)
    drawable = None
    if excluded_ids:
        ids = ops.arange(vocab, dtype="int32")
        drawable = ops.all(
            ops.stack([ops.not_equal(ids, i) for i in excluded_ids]), axis=0
        )  # (V,) bool
    flat_state = FlatState(state)
    has_output = output is not None

    def body(carry, xs):
        state, previous, _, _ = carry
        gold, u, inputs_t = xs  # (B,), (B, 2), per-step inputs or ()
        scores = ops.stop_gradient(previous)  # (B, V)
        if drawable is not None:
            scores = ops.where(drawable[None], scores, float("-inf"))
        sampled = _invert_cdf(ops.softmax(scores, axis=-1), u[:, 1])  # (B,)
        fed = ops.where(ops.less(u[:, 0], probability), sampled, gold)
        fed = ops.stop_gradient(fed)
        args = (fed, flat_state.pack(list(state)))
        if with_inputs:
            args += (inputs_t,)
        out = step_fn(*args)
        new_carry = (
            tuple(flat_state.tensors(out[1])),
            ops.cast(out[0], "float32"),
            fed,
            out[2] if has_output else (),
        )
        return new_carry, new_carry  # the output is the carry: TF's scan needs that

    # Steps 1 .. T - 1, time first.
    xs = (
        ops.transpose(target_ids[:, 1:], (1, 0)),  # (T - 1, B)
        ops.transpose(uniforms[:, 1:], (1, 0, 2)),  # (T - 1, B, 2)
        keras.tree.map_structure(
            lambda x: ops.moveaxis(x[:, 1:], 1, 0), step_inputs if with_inputs else ()
        ),
    )
    init = (
        tuple(flat_state.tensors(state)),
        logits,
        target_ids[:, 0],
        output if has_output else (),
    )
    if target_ids.shape[1] == 1:
        history = keras.tree.map_structure(lambda x: ops.expand_dims(x, 0)[:0], init)
    else:
        _, history = time_loop(body, init, xs)

    def join(first, rest):  # (B, ...) and (T - 1, B, ...) -> (B, T, ...)
        rest = ops.moveaxis(rest, 0, 1)
        return ops.concatenate([ops.expand_dims(first, 1), rest], axis=1)

    all_logits = join(logits, history[1])  # (B, T, V)
    fed = join(target_ids[:, 0], history[2])  # (B, T)
    outputs = None
    if has_output:
        outputs = keras.tree.map_structure(join, output, history[3])
    return all_logits, fed, outputs

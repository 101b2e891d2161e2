"""tfa.seq2seq's computations in keras.ops, and the loader of its reference fixtures.

`scripts/tfa_reference.py` (run in a tensorflow-addons environment) wrote the
fixtures in `tests/fixtures/tfa/`; its docstring documents every key. The
functions here redo tfa's arithmetic on any backend, so that tests can feed
them tfa's weights: the LSTM and GRU cells of Keras 2, tfa's Luong and
Bahdanau scores with their masking, `AttentionWrapper`'s step, and the
decoding model of `decoding.npz` and `port.npz` as a `next_fn` for
`keras_rnnattn.decoding`. B is the batch, S the source length, D the memory
depth.
"""

from pathlib import Path

import numpy as np
from keras import ops

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tfa"

# tfa masks the scores of padded positions with the dtype's minimum (not -inf)
# before the probability function.
_FLOAT32_MIN = float(np.finfo(np.float32).min)


def load_fixture(name, group=None):
    """The arrays of `tests/fixtures/tfa/<name>.npz` as a dict of NumPy arrays.

    With `group` (for example `"linear"`), only the keys `group/...`, with the
    prefix removed.
    """
    with np.load(FIXTURES / f"{name}.npz") as data:
        arrays = {key: data[key] for key in data.files}
    if group is None:
        return arrays
    prefix = group + "/"
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


def lengths_to_mask(lengths, size):
    """`(B,)` lengths -> boolean `(B, size)`, True on the real positions."""
    return np.arange(size)[None, :] < np.asarray(lengths)[:, None]


def to_tensors(arrays):
    """A dict of NumPy arrays as backend tensors."""
    return {k: ops.convert_to_tensor(v) for k, v in arrays.items()}


# Keras 2 cells (tf.keras 2.15 defaults).


def lstm_cell(x, h, c, kernel, recurrent_kernel, bias):
    """One step of Keras 2's `LSTMCell`: gates i, f, c, o; sigmoid and tanh.

    Returns the new `(h, c)`, each `(B, units)`.
    """
    z = ops.matmul(x, kernel) + ops.matmul(h, recurrent_kernel) + bias  # (B, 4u)
    i, f, g, o = ops.split(z, 4, axis=-1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    h = ops.sigmoid(o) * ops.tanh(c)
    return h, c


def gru_cell(x, h, kernel, recurrent_kernel, bias):
    """One step of Keras 2's `GRUCell` with `reset_after=True` (the default).

    Gates z, r, h; `bias` `(2, 3u)` holds the input and the recurrent biases.
    Returns the new h `(B, units)`.
    """
    x_z, x_r, x_h = ops.split(ops.matmul(x, kernel) + bias[0], 3, axis=-1)
    h_z, h_r, h_h = ops.split(ops.matmul(h, recurrent_kernel) + bias[1], 3, axis=-1)
    z = ops.sigmoid(x_z + h_z)
    r = ops.sigmoid(x_r + h_r)
    candidate = ops.tanh(x_h + r * h_h)
    return z * h + (1.0 - z) * candidate


def lstm_encode(inputs, mask, kernel, recurrent_kernel, bias):
    """Keras 2's masked `LSTM(return_sequences=True, return_state=True)`, zero state.

    `inputs` `(B, S, d)`, `mask` `(B, S)` boolean. A padded step keeps the
    previous state. Returns `(outputs (B, S, u), h, c)`; outputs at padded
    steps are not defined by this function's caller (attention masks them).
    """
    batch = ops.shape(inputs)[0]
    units = ops.shape(recurrent_kernel)[0]
    h = ops.zeros((batch, units))
    c = ops.zeros((batch, units))
    outputs = []
    for t in range(inputs.shape[1]):
        new_h, new_c = lstm_cell(inputs[:, t], h, c, kernel, recurrent_kernel, bias)
        keep = mask[:, t : t + 1]  # (B, 1)
        h = ops.where(keep, new_h, h)
        c = ops.where(keep, new_c, c)
        outputs.append(h)
    return ops.stack(outputs, axis=1), h, c


# tfa's attention mechanisms.


def tfa_values(memory, mask=None):
    """tfa's `values`: the memory `(B, S, D)` with padded rows zeroed."""
    if mask is None:
        return memory
    return memory * ops.cast(mask, memory.dtype)[:, :, None]


def tfa_probabilities(scores, mask, probability_fn="softmax"):
    """tfa's masked probability function: padded scores set to float32's
    minimum, then softmax or hardmax (a one-hot of the argmax). `(B, S)`."""
    scores = ops.where(mask, scores, _FLOAT32_MIN)
    if probability_fn == "softmax":
        return ops.softmax(scores, axis=-1)
    if probability_fn == "hardmax":
        return ops.one_hot(ops.argmax(scores, axis=-1), scores.shape[-1])
    raise ValueError(f"Unknown probability_fn={probability_fn!r}")


def luong_scores(query, keys, attention_g=None):
    """tfa's `_luong_score`: g · (query · keys), `(B, dq)` x `(B, S, dq)` -> `(B, S)`."""
    scores = ops.einsum("bd,bsd->bs", query, keys)
    if attention_g is not None:
        scores = attention_g * scores
    return scores


def bahdanau_scores(processed_query, keys, attention_v, attention_g=None, b=None):
    """tfa's `_bahdanau_score`: vᵀ tanh(keys + W_q q (+ b)), v := g v / ‖v‖ when
    normalised. `processed_query` `(B, units)`, `keys` `(B, S, units)` -> `(B, S)`."""
    hidden = keys + processed_query[:, None, :]  # (B, S, units)
    v = attention_v
    if attention_g is not None:
        v = attention_g * v * ops.rsqrt(ops.sum(ops.square(v)))
        hidden = hidden + b
    return ops.sum(v * ops.tanh(hidden), axis=-1)


class TfaMechanism:
    """A tfa `LuongAttention` or `BahdanauAttention` from its stored variables.

    Args:
        weights: the mechanism's arrays: `memory_kernel`, and for Bahdanau
            `query_kernel`, `attention_v` (and `attention_g`, `attention_b`
            when normalised); Luong's `attention_g` when `scale=True`.
        probability_fn: `"softmax"` or `"hardmax"`.
    """

    def __init__(self, weights, probability_fn="softmax"):
        self.w = to_tensors(weights)
        self.kind = "bahdanau" if "attention_v" in weights else "luong"
        self.probability_fn = probability_fn

    def keys(self, memory, mask=None):
        """tfa's `keys`, `(B, S, units)`: `values @ memory_kernel`, where tfa's
        `values` are the memory with the padded rows (`mask` False) zeroed."""
        return ops.matmul(tfa_values(memory, mask), self.w["memory_kernel"])

    def scores(self, query, keys):
        if self.kind == "luong":
            return luong_scores(query, keys, self.w.get("attention_g"))
        processed = ops.matmul(query, self.w["query_kernel"])  # (B, units)
        return bahdanau_scores(
            processed,
            keys,
            self.w["attention_v"],
            self.w.get("attention_g"),
            self.w.get("attention_b"),
        )

    def alignments(self, query, keys, mask):
        """The alignments `(B, S)` of one query `(B, dq)`."""
        return tfa_probabilities(self.scores(query, keys), mask, self.probability_fn)


def wrapper_step(
    cell_fn,
    mechanisms,
    attention_layers,
    inputs,
    cell_state,
    attention,
    memory,
    keys,
    mask,
    output_attention=True,
):
    """One call of tfa's `AttentionWrapper` (default `cell_input_fn` and
    `attention_fn`).

    Args:
        cell_fn: `cell_fn(x, cell_state) -> (cell_output, cell_state)`.
        mechanisms: a list of `TfaMechanism`.
        attention_layers: None (the attention is the context), or one
            `attention_layer(concat([cell_output, context])) -> (B, k)` per
            mechanism.
        inputs: `(B, d)` the step's input; attention: `(B, A)` the previous one.
        cell_state: the cell's state; memory: `(B, S, D)`; keys: one
            `mechanism.keys(memory)` per mechanism; mask: `(B, S)` boolean.
        output_attention: False returns the cell output instead of the attention.

    Returns:
        `(output, cell_state, attention, alignments)`, `alignments` a list
        `(B, S)` per mechanism.
    """
    cell_output, cell_state = cell_fn(
        ops.concatenate([inputs, attention], axis=-1), cell_state
    )
    attentions, alignments = [], []
    for i, (mechanism, mechanism_keys) in enumerate(zip(mechanisms, keys)):
        alignment = mechanism.alignments(cell_output, mechanism_keys, mask)  # (B, S)
        context = ops.einsum("bs,bsd->bd", alignment, memory)  # (B, D)
        if attention_layers is not None:
            context = attention_layers[i](
                ops.concatenate([cell_output, context], axis=-1)
            )
        attentions.append(context)
        alignments.append(alignment)
    attention = ops.concatenate(attentions, axis=-1)
    output = attention if output_attention else cell_output
    return output, cell_state, attention, alignments


# The decoding model of decoding.npz and port.npz.


class LuongDecoderModel:
    """tfa's `Embedding` + `AttentionWrapper(LSTMCell, LuongAttention,
    attention_layer_size=k)` + `Dense(V)` decoder, as a `keras_rnnattn.decoding`
    `next_fn`.

    One step: cell input `[embedding(token); previous attention]`; the LSTM
    gives h; alignments = masked softmax(h · keys) with keys = memory @
    memory_kernel; context = alignments @ memory; attention = `[h; context] @
    attention_layer/kernel` (no bias, no activation); logits = attention @
    output/kernel + output/bias.

    Args:
        weights: a dict with `cell/kernel`, `cell/recurrent_kernel`,
            `cell/bias`, `mechanism/memory_kernel`, `attention_layer/kernel`,
            `output/kernel`, `output/bias` and the embedding.
        embedding_key: the key of the target embedding (`"embedding"` in
            decoding.npz, `"decoder_embedding"` in port.npz).
    """

    def __init__(self, weights, embedding_key="embedding"):
        self.w = to_tensors(weights)
        self.embedding = self.w[embedding_key]
        self.mechanism = TfaMechanism(
            {"memory_kernel": weights["mechanism/memory_kernel"]}
        )

    def initial_state(self, memory, lengths, h, c):
        """The state dict `next_fn` carries: tfa's initial state with cell state
        `(h, c)` and a zero attention, plus the memory, its keys and its mask."""
        mask = ops.convert_to_tensor(lengths_to_mask(lengths, memory.shape[1]))
        memory = tfa_values(ops.convert_to_tensor(memory), mask)
        attention_size = self.w["attention_layer/kernel"].shape[-1]
        return {
            "h": ops.convert_to_tensor(h),
            "c": ops.convert_to_tensor(c),
            "attention": ops.zeros((memory.shape[0], attention_size)),
            "memory": memory,
            "keys": self.mechanism.keys(memory, mask),
            "mask": mask,
        }

    def next_fn(self, token_ids, state):
        """`(B,)` ids, state -> `(logits (B, V), state, alignment (B, S))`."""
        w = self.w
        x = ops.take(self.embedding, token_ids, axis=0)  # (B, E)
        cell_input = ops.concatenate([x, state["attention"]], axis=-1)
        h, c = lstm_cell(
            cell_input,
            state["h"],
            state["c"],
            w["cell/kernel"],
            w["cell/recurrent_kernel"],
            w["cell/bias"],
        )
        alignment = self.mechanism.alignments(h, state["keys"], state["mask"])
        context = ops.einsum("bs,bsd->bd", alignment, state["memory"])  # (B, D)
        attention = ops.matmul(
            ops.concatenate([h, context], axis=-1), w["attention_layer/kernel"]
        )  # (B, k)
        logits = ops.matmul(attention, w["output/kernel"]) + w["output/bias"]
        new_state = {**state, "h": h, "c": c, "attention": attention}
        return logits, new_state, alignment


def sequence_log_prob(next_fn, state, start_ids, tokens, end_id):
    """Summed log-softmax of `tokens` `(B, L)` under `next_fn`, teacher-forced,
    up to and including each row's first `end_id`. Returns `(B,)` NumPy float64
    sums of the float32 log-probabilities."""
    tokens = np.asarray(tokens)
    previous = ops.convert_to_tensor(np.asarray(start_ids, dtype="int32"))
    total = np.zeros(tokens.shape[0])
    ended = np.zeros(tokens.shape[0], dtype=bool)
    for t in range(tokens.shape[1]):
        logits, state = next_fn(previous, state)[:2]
        log_probs = ops.convert_to_numpy(ops.log_softmax(logits, axis=-1))
        picked = log_probs[np.arange(tokens.shape[0]), tokens[:, t]]
        total += np.where(ended, 0.0, picked)
        ended |= tokens[:, t] == end_id
        previous = ops.convert_to_tensor(tokens[:, t].astype("int32"))
    return total


def gnmt_length_penalty(length, alpha):
    """((5 + |Y|) / 6) ** alpha, the length penalty of tfa and keras_rnnattn."""
    return ((5.0 + np.asarray(length, dtype="float64")) / 6.0) ** alpha


def hypothesis_length(tokens, end_id):
    """|Y| of end-padded rows `(..., L)`: tokens up to and including the first
    `end_id` (L when a row never ends)."""
    tokens = np.asarray(tokens)
    is_end = tokens == end_id
    first = np.argmax(is_end, axis=-1)
    return np.where(is_end.any(-1), first + 1, tokens.shape[-1])

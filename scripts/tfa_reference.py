"""Writes reference values computed by tensorflow-addons into tests/fixtures/tfa/.

The test suite never imports tensorflow-addons: it reads the `.npz` files this
script wrote, which hold tfa's inputs, every variable's value and tfa's outputs.
Rerun it only to regenerate the fixtures; the files are committed.

Environment (tfa 0.23.0 needs TensorFlow <= 2.15, Keras 2, NumPy 1, Python <= 3.11)::

    python3.11 -m venv /tmp/tfa-venv
    /tmp/tfa-venv/bin/pip install "tensorflow-cpu==2.15.*" \\
        "tensorflow-addons==0.23.0" "numpy<2"
    /tmp/tfa-venv/bin/python scripts/tfa_reference.py    # from the repository root

It was run with TensorFlow 2.15.1, tensorflow-addons 0.23.0 and NumPy 1.26.4 on
one CPU thread with TensorFlow's op determinism on; all weights and inputs come
from seeded NumPy generators. Two runs write byte-identical files (the zip
entries carry a fixed date; `np.load` reads them as usual). It takes about a
minute, most of it training the `port.npz` model.

Conventions of every file: floats are float32, ids and lengths int32. Keys are
`group/name`. B = batch, S = source (memory) length, D = memory depth, T =
decoder steps. `memory_sequence_length` masks a tail: positions
`>= memory_sequence_length[b]` of row b are padding, given to tfa as
`memory_sequence_length=` (tfa masks the scores with the dtype's minimum and
zeroes the padded memory rows). Kernels are stored as Keras holds them,
`(fan_in, fan_out)`, applied as `x @ kernel`.

scorers.npz: the attention mechanisms alone (B=3, S=6, D=5, T=3 queries)
=========================================================================
Shared inputs:

- `memory` (3, 6, 5): the memory (tfa's `memory`, unmasked values).
- `memory_sequence_length` (3,) int32: [6, 4, 6].
- `query` (3, 3, 6): T=3 queries of depth 6, each scored separately (tfa
  scores one `(B, 6)` query per call; the previous-alignment state is zeros
  and unused by these mechanisms).

One group per mechanism, each with its own random weights:

- `bahdanau/`: `BahdanauAttention(units=4, normalize=False)`.
- `bahdanau_normalized/`: `BahdanauAttention(units=4, normalize=True)`.
- `luong/`: `LuongAttention(units=6, scale=False)`.
- `luong_scaled/`: `LuongAttention(units=6, scale=True)`.
- `bahdanau_hardmax/`: `BahdanauAttention(units=4, probability_fn="hardmax")`.
- `luong_hardmax/`: `LuongAttention(units=6, probability_fn="hardmax")`.
- `bahdanau_sparsemax/`, `luong_sparsemax/`: as `bahdanau/` and `luong/`, with
  `tfa.activations.sparsemax` as the probability function. tfa's constructors
  take only "softmax" or "hardmax" (`_process_probability_fn`), so the script
  sets the mechanism's `default_probability_fn` to
  `lambda score, state: sparsemax(score)` before `setup_memory`, which wraps
  it with the mask exactly as it wraps softmax (scores of padding set to
  float32's minimum, then the probability function).

Keys of each group (absent where the mechanism has no such variable):

- `memory_kernel` (5, units): tfa's `memory_layer.kernel` (keys = memory @ it).
- `query_kernel` (6, 4): Bahdanau's `query_layer.kernel`.
- `attention_v` (4,): Bahdanau's `attention_v`.
- `attention_g` (): Bahdanau normalize's `attention_g` (the weight-norm scale),
  or Luong scale's `attention_g` (the learned scalar multiplying the score).
- `attention_b` (4,): Bahdanau normalize's `attention_b`.
- `score` (3, 3, 6): the raw scores before masking, from tfa's
  `_luong_score` / `_bahdanau_score` on the same variables and tfa's keys
  (`values @ memory_kernel`, the padded values being zero rows).
- `alignments` (3, 3, 6): tfa's alignments for each query, `(B, T, S)`.
- `context` (3, 3, 5): `alignments @ values` (tfa's values: the memory with
  padded rows zeroed), as tfa's `_compute_attention` computes it.

wrapper.npz: `tfa.seq2seq.AttentionWrapper` run step by step (B=3, S=6, D=5, T=4)
==================================================================================
Shared inputs: `memory` (3, 6, 5), `memory_sequence_length` (3,) = [6, 3, 6],
`inputs` (3, 4, 3): the wrapper's input at step t is `inputs[:, t]`. Every
form starts from the wrapper's `get_initial_state(...)` cloned with a random
`cell_state` (attention and alignments stay zeros, as in tfa), and calls the
wrapper T=4 times. The cell's input is tfa's default `cell_input_fn`:
`concat([inputs_t, previous attention], -1)`; the mechanisms' query is the
cell output; the attention layer reads `concat([cell_output, context], -1)`.

Forms (group prefix), with u = cell units 6 (Luong units = 6), k = attention
layer size:

- `default/`: LSTMCell(6) + LuongAttention(6), `attention_layer_size=None`:
  the attention (output and fed back) is the context, depth D=5.
- `linear/`: LSTMCell(6) + LuongAttention(6), `attention_layer_size=4`: the
  attention is `[h; c] @ attention_layer/kernel`, no bias, no activation.
- `tanh_layer/`: LSTMCell(6) + LuongAttention(6),
  `attention_layer=tf.keras.layers.Dense(4, activation="tanh", use_bias=False)`.
- `no_output_attention/`: as `linear/` with `output_attention=False`: the
  output is the cell output h, the attention is still fed back.
- `stacked/`: `StackedRNNCells([LSTMCell(6), LSTMCell(6)])` + LuongAttention(6),
  `attention_layer_size=4`; the query is the top cell's output.
- `multi/`: LSTMCell(6) + `[BahdanauAttention(4), LuongAttention(6)]` on the
  same memory, `attention_layer_size=[4, 3]`: the attention is
  `concat([a0, a1], -1)`, depth 7, each `a_i = [h; c_i] @ kernel_i`.
- `gru_bahdanau/`: GRUCell(6) (Keras 2 default `reset_after=True`) +
  `BahdanauAttention(4, normalize=True)`, `attention_layer_size=4`.
- `hardmax/`: LSTMCell(6) + `LuongAttention(6, probability_fn="hardmax")`,
  `attention_layer_size=4`.

Keys of each form (`m` = the mechanism group, `mechanism/` for one mechanism,
`mechanism0/` (Bahdanau) and `mechanism1/` (Luong) for `multi/`):

- cell variables: `cell/kernel` (in + A, 4u) (LSTM, gates i, f, c, o) or
  (in + A, 3u) (GRU, gates z, r, h), `cell/recurrent_kernel` (u, 4u) or (u, 3u),
  `cell/bias` (4u,) (LSTM) or (2, 3u) (GRU: input and recurrent biases); for
  `stacked/`: `cell0/...` (bottom) and `cell1/...` (top), the top one's
  kernel `(u, 4u)`. `in` = 3 (input depth), A = the attention depth.
- mechanism variables: `m/memory_kernel` (5, units); Bahdanau also
  `m/query_kernel` (6, 4), `m/attention_v` (4,), with normalize
  `m/attention_g` (), `m/attention_b` (4,).
- attention layer: `attention_layer/kernel` (u + 5, k) (rows: cell output
  first, then context); `multi/` has `attention_layer0/kernel` (11, 4) and
  `attention_layer1/kernel` (11, 3); `default/` has none.
- `initial_state/h`, `initial_state/c` (3, 6): the random cell state (GRU:
  `initial_state/h` only; `stacked/`: `initial_state/0/h`, `initial_state/0/c`,
  `initial_state/1/h`, `initial_state/1/c`). `initial_attention` (3, A): zeros.
- `outputs` (3, 4, out): the wrapper's output at each step (the attention,
  or the cell output for `no_output_attention/`).
- `attentions` (3, 4, A): `state.attention` after each step.
- `alignments` (3, 4, 6): `state.alignments` after each step (`multi/`:
  `alignments0` for Bahdanau, `alignments1` for Luong).
- `final_state/h`, `final_state/c` (3, 6) (same layout as `initial_state/`),
  `final_attention` (3, A).

decoding.npz: greedy and beam search of a random-weight model (B=3, S=6, L=8)
=============================================================================
The model: `Embedding(12, 5)`; `AttentionWrapper(LSTMCell(6),
LuongAttention(6, memory, memory_sequence_length), attention_layer_size=6)`;
`Dense(12)` output layer (with bias). Start id 1, end id 2, at most L=8
tokens (`maximum_iterations=8`). One step: cell input = [embedding(token);
previous attention]; (h, c) = LSTM; alignments = masked softmax(h . (memory @
memory_kernel)); context = alignments @ memory; attention =
[h; context] @ attention_layer/kernel; logits = attention @ output/kernel +
output/bias.

- inputs: `memory` (3, 6, 5), `memory_sequence_length` (3,) = [6, 4, 5],
  `initial_state/h`, `initial_state/c` (3, 6) (the random cell state; the
  initial attention is zeros), `start_ids` (3,) = 1, `end_id` () = 2,
  `max_length` () = 8.
- weights: `embedding` (12, 5); `cell/kernel` (11, 24), `cell/recurrent_kernel`
  (6, 24), `cell/bias` (24,); `mechanism/memory_kernel` (5, 6);
  `attention_layer/kernel` (11, 6) (rows: h, then context); `output/kernel`
  (6, 12), `output/bias` (12,).
- greedy (`BasicDecoder` + `GreedyEmbeddingSampler`):
  `greedy/sample_ids_raw` (3, T') int32 as tfa returns them (T' <= 8, rows
  that ended keep emitting whatever the model picks); `greedy/logits` (3, T',
  12): tfa's `rnn_output`; `greedy/sequence_lengths` (3,): tfa's final
  lengths (they count the end token); `greedy/tokens` (3, 8): the ids up to
  and including the first end id, then end ids (the layout of
  `keras_rnnattn.decoding.greedy_search`); `greedy/scores` (3,): the summed
  `log_softmax(logits)` of those tokens, end token included.
- beam search (`BeamSearchDecoder(beam_width=3)`, memory, lengths and cell
  state tiled with `tile_batch`), for `beam/` (length_penalty_weight 0) and
  `beam_lp06/` (0.6):
  `predicted_ids_raw` (3, T', 3): `beam_search_decoder_output.predicted_ids`
  (the token each beam chose at each step, before backtracking);
  `parent_ids` (3, T', 3); `step_scores` (3, T', 3):
  `beam_search_decoder_output.scores`, the length-penalised scores tfa ranks
  by at each step; `predicted_ids` (3, T', 3): tfa's final, backtracked
  `predicted_ids` (beams last); `sequences` (3, 3, 8): the same per beam,
  `(B, beam, L)`, cut after the first end id and filled with end ids;
  `log_probs` (3, 3): the final state's `log_probs` (summed log-softmax of
  each beam's tokens, no penalty); `lengths` (3, 3): the final state's
  `lengths` (the end token counted); `scores` (3, 3): the last step's
  `step_scores`, tfa's ranking (beam 0 is tfa's best). A final beam's score
  is `log_probs / ((5 + lengths) / 6) ** alpha`, except for a beam that ended
  at the last step: tfa ranks a hypothesis at the step that ends it with the
  end token not yet counted in its length, and counts it from the next step
  on (here `beam_lp06/step_scores[1, 6, 1]` = log_probs[1, 0] / lp(6) and
  `[1, 7, 0]` = log_probs[1, 0] / lp(7) for the same hypothesis).

port.npz: a tfa NMT model trained here on reversal (vocabulary 14)
=================================================================
Task: reverse a sequence of 3-6 digit tokens (ids 3..13); pad 0, start 1,
end 2. Source (B, 6) padded with 0; target = the reversed source then 2.
Model (units u=32, embedding 16): `Embedding(14, 16)` (source) + `LSTM(32,
return_sequences=True, return_state=True)` encoder (masked by the source
lengths); decoder `Embedding(14, 16)` (target), `AttentionWrapper(LSTMCell(32),
LuongAttention(32, memory=encoder outputs, memory_sequence_length=source
lengths), attention_layer_size=32)` started from the encoder's final (h, c);
`Dense(14)` output layer. Trained with `BasicDecoder` + `TrainingSampler`,
`tfa.seq2seq.sequence_loss`, Adam.

- weights: `encoder_embedding` (14, 16), `encoder/kernel` (16, 128),
  `encoder/recurrent_kernel` (32, 128), `encoder/bias` (128,);
  `decoder_embedding` (14, 16); `cell/kernel` (48, 128),
  `cell/recurrent_kernel` (32, 128), `cell/bias` (128,);
  `mechanism/memory_kernel` (32, 32); `attention_layer/kernel` (64, 32)
  (rows: h, then context); `output/kernel` (32, 14), `output/bias` (14,).
- `sources` (16, 6) int32 held-out sources (never trained on), padded with 0;
  `source_lengths` (16,); `targets` (16, 7): the reversed sources, end id,
  then 0.
- `greedy/tokens` (16, 10): tfa's greedy translations
  (`GreedyEmbeddingSampler`, `maximum_iterations=10`), cut after the first end
  id and filled with end ids; `greedy/sequence_lengths` (16,): tfa's lengths;
  `greedy/scores` (16,): their summed log-softmax.
- `beam/sequences` (16, 3, 10), `beam/log_probs` (16, 3), `beam/lengths`
  (16, 3), `beam/scores` (16, 3): beam search with `beam_width=3`,
  `length_penalty_weight=0`, `maximum_iterations=10` (same layout as in
  decoding.npz).
- `train_steps` (): the number of Adam steps; `heldout_exact_match` ():
  tfa's greedy exact-match accuracy (whole sequence, end id included) on 512
  held-out sources; `greedy/exact_match` (16,) bool for the stored 16.

monotonic.npz: monotonic attention (Raffel et al. 2017) (B=3, S=7)
==================================================================
The functions, from `np.random.default_rng(60)`:

- `safe_cumprod/x` (3, 6): values in [0, 1] with exact 0s (`[0, 2]`, `[2, 4]`),
  exact 1s (`[1, 0]`, `[1, 3]`) and a subnormal 1e-39 (`[2, 1]`);
  `safe_cumprod/y` (3, 6): `tfa.seq2seq.safe_cumprod(x, axis=1)`;
  `safe_cumprod/y_exclusive` (3, 6): the same with `exclusive=True` (TensorFlow
  on CPU flushes the subnormal products after a 0 to 0).
- `ops/p_choose_i` (3, 4, 7): T=4 steps of choosing probabilities, uniform in
  [0, 1] with exact 0s (`[0, 1, 3]`, `[2, 3, 2]`) and 1s (`[1, 2, 0]`,
  `[2, 0, 5]`); `ops/hard_p_choose_i` (3, 4, 7): 0s and 1s (P(1) = 0.4);
  `ops/previous_random` (3, 7): a random attention (Dirichlet rows, sum 1).
- For each mode of `tfa.seq2seq.monotonic_attention` (`parallel/`,
  `recursive/` with `p_choose_i`, `hard/` with `hard_p_choose_i`): step t
  reads the attention of step t - 1 (one-hot on position 0 at t = 0), as a
  decoder carries it: `previous_attention` (3, 4, 7) what each step read,
  `attention` (3, 4, 7) what it returned; `parallel/` and `recursive/` also
  `from_random` (3, 4, 7): `monotonic_attention(p_choose_i[:, t],
  ops/previous_random, mode)`. (After a p of exactly 1 the parallel form
  loses the previous attention's mass beyond it, the recursive one does not:
  `from_random[2, 0, 6]`.)

The mechanisms in an `AttentionWrapper`, step by step (D=5, T=5), from
`np.random.default_rng(6)`: `memory` (3, 7, 5), `memory_sequence_length` (3,)
= [7, 4, 6], `inputs` (3, 5, 3). Every form is `AttentionWrapper(LSTMCell(6),
mechanism, attention_layer_size=4)` (as in wrapper.npz: cell input
[inputs_t; previous attention], query = cell output, attention =
[h; context] @ attention_layer/kernel), started from its
`get_initial_state(...)` cloned with a random `cell_state` (the attention
zeros, the alignments and attention state tfa's one-hot on position 0), no
sigmoid noise. Forms:

- `bahdanau/`: `BahdanauMonotonicAttention(4)` (mode "parallel");
- `bahdanau_normalized/`: `BahdanauMonotonicAttention(4, normalize=True)`;
- `luong/`: `LuongMonotonicAttention(6)`;
- `luong_scaled/`: `LuongMonotonicAttention(6, scale=True)`;
- `bahdanau_recursive/`: `BahdanauMonotonicAttention(4, mode="recursive")`;
- `bahdanau_hard/`: `BahdanauMonotonicAttention(4, normalize=True,
  mode="hard")`, weights from `default_rng(101)`;
- `luong_hard/`: `LuongMonotonicAttention(6, scale=True, mode="hard")`,
  weights from `default_rng(100)`. The two hard forms have a score bias of 0,
  their seeds picked so that the alignments move on in some rows, stay in
  others, and (`bahdanau_hard/`, row 2) leave the memory (all-zero weights).

Keys of each form: `cell/kernel` (3 + 4, 24), `cell/recurrent_kernel` (6,
24), `cell/bias` (24,); `mechanism/memory_kernel` (5, units);
Bahdanau's `mechanism/query_kernel` (6, 4), `mechanism/attention_v` (4,),
with normalize `mechanism/attention_g` (), `mechanism/attention_b` (4,);
Luong scale's `mechanism/attention_g` () (the learned scalar on the score);
`mechanism/attention_score_bias` () (the learned r); `attention_layer/kernel`
(6 + 5, 4) (rows: h, then context); `initial_state/h`, `initial_state/c`
(3, 6); `initial_alignments` (3, 7): tfa's initial attention state;
`outputs` (3, 5, 4), `attentions` (3, 5, 4), `alignments` (3, 5, 7) after
each step (the attention state, which tfa's monotonic mechanisms set to the
alignments); `final_attention` (3, 4), `final_state/h`, `final_state/c` (3, 6).
"""

import io
import os
import sys
import time
import zipfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
# tfa's gather_tree in Python ops: its compiled kernel does not load on TF 2.15.
os.environ.setdefault("TF_ADDONS_PY_OPS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.experimental.enable_op_determinism()

import tensorflow_addons as tfa  # noqa: E402
from tensorflow_addons.seq2seq import attention_wrapper as tfa_aw  # noqa: E402

OUT_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "tests",
    "fixtures",
    "tfa",
)
F32 = np.float32


def save_npz(path, arrays):
    """`np.savez_compressed` with a fixed date in every zip entry, so reruns are
    byte-identical."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key in sorted(arrays):
            value = np.asarray(arrays[key])
            if value.dtype == np.float64:
                raise TypeError(f"{key} is float64")
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, value.copy(order="C"))
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue())


def np32(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=F32)


def set_var(variable, rng, scale, out, key, value=None):
    """Gives `variable` a random normal value (or `value`) and records it as `key`."""
    if value is None:
        value = rng.normal(0.0, scale, size=tuple(variable.shape))
    value = np.asarray(value, dtype=F32)
    variable.assign(value)
    out[key] = value


def lengths_mask(lengths, size):
    return np.arange(size)[None, :] < np.asarray(lengths)[:, None]


def end_padded(ids, end_id, length):
    """Rows cut after their first end id and filled with end ids to `length`."""
    ids = np.asarray(ids)
    out = np.full((ids.shape[0], length), end_id, dtype=np.int32)
    for row in range(ids.shape[0]):
        for t in range(min(ids.shape[1], length)):
            out[row, t] = ids[row, t]
            if ids[row, t] == end_id:
                break
    return out


def summed_log_probs(logits, tokens, end_id):
    """Summed log-softmax of `tokens` (B, L) up to and including the first end id."""
    log_probs = np32(tf.nn.log_softmax(tf.constant(logits, tf.float32), axis=-1))
    scores = np.zeros(tokens.shape[0], dtype=F32)
    for row in range(tokens.shape[0]):
        for t in range(min(tokens.shape[1], log_probs.shape[1])):
            scores[row] += log_probs[row, t, tokens[row, t]]
            if tokens[row, t] == end_id:
                break
    return scores


def mechanism_vars(mech, rng, out, prefix, g_value=None):
    """Randomises and records the variables of a built Luong or Bahdanau mechanism."""
    names = []
    set_var(mech.memory_layer.kernel, rng, 0.6, out, prefix + "memory_kernel")
    names.append(mech.memory_layer.kernel)
    if isinstance(mech, tfa.seq2seq.BahdanauAttention):
        set_var(mech.query_layer.kernel, rng, 0.6, out, prefix + "query_kernel")
        set_var(mech.attention_v, rng, 0.8, out, prefix + "attention_v")
        names += [mech.query_layer.kernel, mech.attention_v]
        if mech.normalize:
            g = rng.uniform(0.8, 2.0) if g_value is None else g_value
            set_var(mech.attention_g, rng, 0, out, prefix + "attention_g", g)
            set_var(mech.attention_b, rng, 0.5, out, prefix + "attention_b")
            names += [mech.attention_g, mech.attention_b]
    elif mech.scale:
        g = rng.uniform(0.4, 2.0) if g_value is None else g_value
        set_var(mech.scale_weight, rng, 0, out, prefix + "attention_g", g)
        names.append(mech.scale_weight)
    return names


def cell_vars(cell, rng, out, prefix):
    set_var(cell.kernel, rng, 0.5, out, prefix + "kernel")
    set_var(cell.recurrent_kernel, rng, 0.5, out, prefix + "recurrent_kernel")
    set_var(cell.bias, rng, 0.3, out, prefix + "bias")
    return [cell.kernel, cell.recurrent_kernel, cell.bias]


def check_all_recorded(layers, recorded, what):
    """The trainable variables of `layers` are exactly those in `recorded`."""
    variables = [v for layer in layers for v in layer.trainable_variables]
    expected = {id(v) for v in variables}
    got = {id(v) for v in recorded}
    if expected != got:
        missing = [v.name for v in variables if id(v) not in got]
        raise RuntimeError(
            f"{what}: {len(missing)} variables not recorded ({missing}), "
            f"{len(got - expected)} recorded that the layers do not have"
        )


def random_cell_state(rng, shape, is_lstm, group, prefix):
    """A random (h, c) (or h alone, for a GRU), recorded as `prefix` + h / c."""
    h = rng.normal(0, 0.5, size=shape).astype(F32)
    group[prefix + "h"] = h
    if not is_lstm:
        return tf.constant(h)  # a GRUCell's state is one tensor
    c = rng.normal(0, 0.5, size=shape).astype(F32)
    group[prefix + "c"] = c
    return [tf.constant(h), tf.constant(c)]


def record_cell_state(cell_state, group, prefix):
    if not isinstance(cell_state, (list, tuple)):
        cell_state = [cell_state]
    group[prefix + "h"] = np32(cell_state[0])
    if len(cell_state) > 1:
        group[prefix + "c"] = np32(cell_state[1])


# scorers.npz


def scorers():
    rng = np.random.default_rng(1)
    batch, source, depth, steps, query_depth = 3, 6, 5, 3, 6
    lengths = np.array([6, 4, 6], dtype=np.int32)
    memory = rng.normal(size=(batch, source, depth)).astype(F32)
    query = rng.normal(size=(batch, steps, query_depth)).astype(F32)
    out = {"memory": memory, "memory_sequence_length": lengths, "query": query}

    def sparsemax(score, _):
        return tfa.activations.sparsemax(score)

    # (group, mechanism, constructor arguments, probability function); the
    # sparsemax scorers get scaled kernels (`kernel_scales`) so that their rows
    # are sparse but not one-hot.
    specs = [
        ("bahdanau", "bahdanau", {"normalize": False}, None),
        ("bahdanau_normalized", "bahdanau", {"normalize": True}, None),
        ("luong", "luong", {"scale": False}, None),
        ("luong_scaled", "luong", {"scale": True}, None),
        ("bahdanau_hardmax", "bahdanau", {"probability_fn": "hardmax"}, None),
        ("luong_hardmax", "luong", {"probability_fn": "hardmax"}, None),
        ("bahdanau_sparsemax", "bahdanau", {}, sparsemax),
        ("luong_sparsemax", "luong", {}, sparsemax),
    ]
    kernel_scales = {"bahdanau_sparsemax": 2.0, "luong_sparsemax": 0.6}
    for name, kind, kwargs, probability_fn in specs:
        if kind == "bahdanau":
            mech = tfa.seq2seq.BahdanauAttention(4, memory=None, **kwargs)
        else:
            mech = tfa.seq2seq.LuongAttention(query_depth, memory=None, **kwargs)
        if probability_fn is not None:
            # tfa's constructors accept only "softmax" / "hardmax"; a custom
            # function goes where the constructor puts its own, before the
            # memory (and with it the mask) is set up.
            mech.default_probability_fn = probability_fn
            mech.probability_fn = probability_fn
        mech.setup_memory(memory, memory_sequence_length=lengths)
        state = mech.initial_state(batch, tf.float32)
        mech([tf.constant(query[:, 0]), state])  # builds the variables
        scale = kernel_scales.get(name, 1.0)
        group = {}
        mechanism_vars(mech, rng, group, "")
        if scale != 1.0:
            for key in ("memory_kernel", "query_kernel"):
                if key in group:
                    group[key] = group[key] * F32(scale)
            mech.memory_layer.kernel.assign(group["memory_kernel"])
            if "query_kernel" in group:
                mech.query_layer.kernel.assign(group["query_kernel"])
        # Keys depend on the memory kernel: set the memory up again.
        mech.setup_memory(memory, memory_sequence_length=lengths)
        alignments, scores = [], []
        for t in range(steps):
            q = tf.constant(query[:, t])
            a, _ = mech([q, state])
            alignments.append(np32(a))
            if kind == "bahdanau":
                scores.append(
                    np32(
                        tfa_aw._bahdanau_score(
                            mech.query_layer(q),
                            mech.keys,
                            mech.attention_v,
                            mech.attention_g,
                            mech.attention_b,
                        )
                    )
                )
            else:
                scores.append(
                    np32(tfa_aw._luong_score(q, mech.keys, mech.scale_weight))
                )
        alignments = np.stack(alignments, 1)  # (B, T, S)
        group["alignments"] = alignments
        group["score"] = np.stack(scores, 1)
        group["context"] = np32(tf.matmul(alignments, mech.values))
        for key, value in group.items():
            out[f"{name}/{key}"] = value
        if probability_fn is not None:
            zeros = int(
                np.sum((alignments == 0) & lengths_mask(lengths, source)[:, None])
            )
            print(f"  {name}: {zeros} zero weights on real positions")
    return out


# wrapper.npz


def wrapper_forms():
    rng = np.random.default_rng(2)
    batch, source, depth, steps, in_depth, units = 3, 6, 5, 4, 3, 6
    lengths = np.array([6, 3, 6], dtype=np.int32)
    memory = rng.normal(size=(batch, source, depth)).astype(F32)
    inputs = rng.normal(size=(batch, steps, in_depth)).astype(F32)
    out = {"memory": memory, "memory_sequence_length": lengths, "inputs": inputs}
    lstm = tf.keras.layers.LSTMCell

    def luong(**kwargs):
        return tfa.seq2seq.LuongAttention(
            units, memory=memory, memory_sequence_length=lengths, **kwargs
        )

    def bahdanau(**kwargs):
        return tfa.seq2seq.BahdanauAttention(
            4, memory=memory, memory_sequence_length=lengths, **kwargs
        )

    forms = {
        "default": lambda: (lstm(units), luong(), {}),
        "linear": lambda: (lstm(units), luong(), {"attention_layer_size": 4}),
        "tanh_layer": lambda: (
            lstm(units),
            luong(),
            {
                "attention_layer": tf.keras.layers.Dense(
                    4, activation="tanh", use_bias=False
                )
            },
        ),
        "no_output_attention": lambda: (
            lstm(units),
            luong(),
            {"attention_layer_size": 4, "output_attention": False},
        ),
        "stacked": lambda: (
            tf.keras.layers.StackedRNNCells([lstm(units), lstm(units)]),
            luong(),
            {"attention_layer_size": 4},
        ),
        "multi": lambda: (
            lstm(units),
            [bahdanau(), luong()],
            {"attention_layer_size": [4, 3]},
        ),
        "gru_bahdanau": lambda: (
            tf.keras.layers.GRUCell(units),
            bahdanau(normalize=True),
            {"attention_layer_size": 4},
        ),
        "hardmax": lambda: (
            lstm(units),
            luong(probability_fn="hardmax"),
            {"attention_layer_size": 4},
        ),
    }
    for name, make in forms.items():
        cell, mechs, kwargs = make()
        wrapper = tfa.seq2seq.AttentionWrapper(cell, mechs, **kwargs)
        state = wrapper.get_initial_state(batch_size=batch, dtype=tf.float32)
        wrapper(tf.constant(inputs[:, 0]), state)  # builds every variable
        group, recorded = {}, []
        if name == "stacked":
            for i, sub in enumerate(cell.cells):
                recorded += cell_vars(sub, rng, group, f"cell{i}/")
        else:
            recorded += cell_vars(cell, rng, group, "cell/")
        mech_list = mechs if isinstance(mechs, list) else [mechs]
        for i, mech in enumerate(mech_list):
            prefix = f"mechanism{i}/" if len(mech_list) > 1 else "mechanism/"
            recorded += mechanism_vars(mech, rng, group, prefix)
            # The keys were computed with the old memory kernel.
            mech.setup_memory(memory, memory_sequence_length=lengths)
        layers = wrapper._attention_layers or []
        for i, layer in enumerate(layers):
            prefix = f"attention_layer{i}/" if len(layers) > 1 else "attention_layer/"
            recorded += [layer.kernel]
            set_var(layer.kernel, rng, 0.5, group, prefix + "kernel")
        check_all_recorded([wrapper], recorded, name)

        # A random cell state; attention and alignments stay tfa's zeros.
        if name == "stacked":
            cell_state = (
                random_cell_state(rng, (batch, units), True, group, "initial_state/0/"),
                random_cell_state(rng, (batch, units), True, group, "initial_state/1/"),
            )
        else:
            is_lstm = not isinstance(cell, tf.keras.layers.GRUCell)
            cell_state = random_cell_state(
                rng, (batch, units), is_lstm, group, "initial_state/"
            )
        state = wrapper.get_initial_state(batch_size=batch, dtype=tf.float32).clone(
            cell_state=cell_state
        )
        group["initial_attention"] = np32(state.attention)
        outputs, attentions, alignments = [], [], [[] for _ in mech_list]
        for t in range(steps):
            output, state = wrapper(tf.constant(inputs[:, t]), state)
            outputs.append(np32(output))
            attentions.append(np32(state.attention))
            step_alignments = (
                state.alignments if len(mech_list) > 1 else (state.alignments,)
            )
            for i, a in enumerate(step_alignments):
                alignments[i].append(np32(a))
        group["outputs"] = np.stack(outputs, 1)
        group["attentions"] = np.stack(attentions, 1)
        for i, history in enumerate(alignments):
            key = f"alignments{i}" if len(mech_list) > 1 else "alignments"
            group[key] = np.stack(history, 1)
        group["final_attention"] = np32(state.attention)

        if name == "stacked":
            for i, sub_state in enumerate(state.cell_state):
                record_cell_state(sub_state, group, f"final_state/{i}/")
        else:
            record_cell_state(state.cell_state, group, "final_state/")
        for key, value in group.items():
            out[f"{name}/{key}"] = value
    return out


# decoding.npz


class Seq2SeqModel:
    """Embedding + AttentionWrapper(LSTMCell, LuongAttention) + Dense, tfa's way."""

    def __init__(self, vocab, embed, units, attention_size, memory, lengths):
        self.embedding = tf.keras.layers.Embedding(vocab, embed)
        self.embedding.build((None,))
        self.mechanism = tfa.seq2seq.LuongAttention(
            units, memory=memory, memory_sequence_length=lengths
        )
        self.cell = tfa.seq2seq.AttentionWrapper(
            tf.keras.layers.LSTMCell(units),
            self.mechanism,
            attention_layer_size=attention_size,
        )
        self.output_layer = tf.keras.layers.Dense(vocab)
        self.units = units

    def weights(self):
        """The stored name of every variable, in a fixed order."""
        cell = self.cell._cell
        return {
            "cell/kernel": cell.kernel,
            "cell/recurrent_kernel": cell.recurrent_kernel,
            "cell/bias": cell.bias,
            "mechanism/memory_kernel": self.mechanism.memory_layer.kernel,
            "attention_layer/kernel": self.cell._attention_layers[0].kernel,
            "output/kernel": self.output_layer.kernel,
            "output/bias": self.output_layer.bias,
        }

    def initial_state(self, cell_state, beam_width=1):
        if beam_width > 1:
            cell_state = tfa.seq2seq.tile_batch(cell_state, beam_width)
        batch = int(cell_state[0].shape[0])
        return self.cell.get_initial_state(batch_size=batch, dtype=tf.float32).clone(
            cell_state=cell_state
        )

    def greedy(self, memory, lengths, cell_state, start, end_id, max_length):
        self.mechanism.setup_memory(memory, memory_sequence_length=lengths)
        decoder = tfa.seq2seq.BasicDecoder(
            self.cell,
            tfa.seq2seq.GreedyEmbeddingSampler(),
            output_layer=self.output_layer,
            maximum_iterations=max_length,
        )
        outputs, _, seq_lengths = decoder(
            self.embedding.embeddings,
            start_tokens=start,
            end_token=end_id,
            initial_state=self.initial_state(cell_state),
        )
        ids = outputs.sample_id.numpy().astype(np.int32)
        logits = np32(outputs.rnn_output)
        tokens = end_padded(ids, end_id, max_length)
        return {
            "sample_ids_raw": ids,
            "logits": logits,
            "sequence_lengths": seq_lengths.numpy().astype(np.int32),
            "tokens": tokens,
            "scores": summed_log_probs(logits, tokens, end_id),
        }

    def beam(
        self, memory, lengths, cell_state, start, end_id, max_length, width, alpha
    ):
        self.mechanism.setup_memory(
            tfa.seq2seq.tile_batch(memory, width),
            memory_sequence_length=tfa.seq2seq.tile_batch(lengths, width),
        )
        decoder = tfa.seq2seq.BeamSearchDecoder(
            self.cell,
            beam_width=width,
            output_layer=self.output_layer,
            length_penalty_weight=alpha,
            maximum_iterations=max_length,
        )
        outputs, state, _ = decoder(
            self.embedding.embeddings,
            start_tokens=start,
            end_token=end_id,
            initial_state=self.initial_state(cell_state, width),
        )
        steps = outputs.beam_search_decoder_output
        predicted = outputs.predicted_ids.numpy().astype(np.int32)  # (B, T', K)
        batch = predicted.shape[0]
        sequences = np.stack(
            [end_padded(predicted[:, :, k], end_id, max_length) for k in range(width)],
            1,
        )  # (B, K, L)
        step_scores = np32(steps.scores)
        result = {
            "predicted_ids_raw": steps.predicted_ids.numpy().astype(np.int32),
            "parent_ids": steps.parent_ids.numpy().astype(np.int32),
            "step_scores": step_scores,
            "predicted_ids": predicted,
            "sequences": sequences,
            "log_probs": np32(state.log_probs),
            "lengths": state.lengths.numpy().astype(np.int32),
            "scores": step_scores[:, -1],
        }
        assert result["log_probs"].shape == (batch, width)
        return result


def decoding(seed=23, scales=None):
    rng = np.random.default_rng(seed)
    batch, source, depth, vocab, embed, units = 3, 6, 5, 12, 5, 6
    start_id, end_id, max_length = 1, 2, 8
    lengths = np.array([6, 4, 5], dtype=np.int32)
    memory = rng.normal(size=(batch, source, depth)).astype(F32)
    h0 = rng.normal(0, 0.5, size=(batch, units)).astype(F32)
    c0 = rng.normal(0, 0.5, size=(batch, units)).astype(F32)
    start = tf.fill([batch], start_id)
    model = Seq2SeqModel(vocab, embed, units, units, memory, lengths)
    cell_state = [tf.constant(h0), tf.constant(c0)]
    model.greedy(memory, lengths, cell_state, start, end_id, max_length)  # builds
    out = {
        "memory": memory,
        "memory_sequence_length": lengths,
        "initial_state/h": h0,
        "initial_state/c": c0,
        "start_ids": np.full((batch,), start_id, np.int32),
        "end_id": np.int32(end_id),
        "max_length": np.int32(max_length),
    }
    set_var(model.embedding.embeddings, rng, 1.0, out, "embedding")
    # The seed and the weight scales (normal standard deviations) were picked
    # so that the tokens vary, one row ends early and two never do, tfa's best
    # beam differs from keras_rnnattn's in some rows and not in others, and the
    # model is well conditioned: a 1e-6 change of the initial h moves no logit
    # by more than 1.5e-5 over the 8 steps (larger weights amplified it 900
    # times, and float32 rounding with it).
    scales = scales or {
        "cell/": 0.5,
        "mechanism/": 0.4,
        "attention_layer/": 0.6,
        "output/": 1.5,
    }
    for key, variable in model.weights().items():
        scale = next(s for prefix, s in scales.items() if key.startswith(prefix))
        set_var(variable, rng, scale, out, key)
    recorded = [model.embedding.embeddings] + list(model.weights().values())
    check_all_recorded(
        [model.embedding, model.cell, model.output_layer], recorded, "decoding"
    )
    for key, value in model.greedy(
        memory, lengths, cell_state, start, end_id, max_length
    ).items():
        out["greedy/" + key] = value
    for group, alpha in (("beam", 0.0), ("beam_lp06", 0.6)):
        result = model.beam(
            memory, lengths, cell_state, start, end_id, max_length, 3, alpha
        )
        for key, value in result.items():
            out[f"{group}/{key}"] = value
    print("  greedy tokens:", out["greedy/tokens"].tolist())
    print("  beam best:", out["beam/sequences"][:, 0].tolist())
    print("  beam lp0.6 best:", out["beam_lp06/sequences"][:, 0].tolist())
    return out


# port.npz


PAD, START, END, VOCAB = 0, 1, 2, 14
MAX_SOURCE = 6


def reversal_batch(rng, size, exclude=frozenset()):
    sources = np.zeros((size, MAX_SOURCE), np.int32)
    lengths = np.zeros((size,), np.int32)
    row = 0
    while row < size:
        n = int(rng.integers(3, MAX_SOURCE + 1))
        seq = rng.integers(3, VOCAB, size=n).astype(np.int32)
        if tuple(seq) in exclude:
            continue
        sources[row, :n] = seq
        lengths[row] = n
        row += 1
    targets = np.zeros((size, MAX_SOURCE + 1), np.int32)
    for i in range(size):
        n = lengths[i]
        targets[i, :n] = sources[i, :n][::-1]
        targets[i, n] = END
    return sources, lengths, targets


def port():
    tf.keras.utils.set_random_seed(4)
    rng = np.random.default_rng(4)
    embed, units, batch_size, train_steps = 16, 32, 64, 600
    heldout_sources, heldout_lengths, heldout_targets = reversal_batch(
        np.random.default_rng(5), 512
    )
    heldout_set = frozenset(
        tuple(s[:n]) for s, n in zip(heldout_sources, heldout_lengths)
    )

    encoder_embedding = tf.keras.layers.Embedding(VOCAB, embed)
    encoder = tf.keras.layers.LSTM(units, return_sequences=True, return_state=True)
    decoder_embedding = tf.keras.layers.Embedding(VOCAB, embed)
    mechanism = tfa.seq2seq.LuongAttention(units)
    cell = tfa.seq2seq.AttentionWrapper(
        tf.keras.layers.LSTMCell(units), mechanism, attention_layer_size=units
    )
    output_layer = tf.keras.layers.Dense(VOCAB)
    train_decoder = tfa.seq2seq.BasicDecoder(
        cell, tfa.seq2seq.TrainingSampler(), output_layer=output_layer
    )
    optimizer = tf.keras.optimizers.Adam(0.01)

    def encode(sources, lengths):
        mask = tf.sequence_mask(lengths, MAX_SOURCE)
        memory, h, c = encoder(encoder_embedding(sources), mask=mask)
        mechanism.setup_memory(memory, memory_sequence_length=lengths)
        return memory, [h, c]

    def initial_state(cell_state):
        batch = tf.shape(cell_state[0])[0]
        return cell.get_initial_state(batch_size=batch, dtype=tf.float32).clone(
            cell_state=cell_state
        )

    @tf.function
    def train_step(sources, lengths, targets):
        decoder_inputs = tf.concat(
            [tf.fill([tf.shape(targets)[0], 1], START), targets[:, :-1]], 1
        )
        with tf.GradientTape() as tape:
            _, cell_state = encode(sources, lengths)
            outputs, _, _ = train_decoder(
                decoder_embedding(decoder_inputs),
                initial_state=initial_state(cell_state),
                sequence_length=lengths + 1,
                training=True,
            )
            logits = outputs.rnn_output
            steps = tf.shape(logits)[1]
            weights = tf.sequence_mask(lengths + 1, steps, dtype=tf.float32)
            loss = tfa.seq2seq.sequence_loss(logits, targets[:, :steps], weights)
        variables = (
            encoder_embedding.trainable_variables
            + encoder.trainable_variables
            + decoder_embedding.trainable_variables
            + cell.trainable_variables
            + output_layer.trainable_variables
        )
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    start_time = time.time()
    for step in range(train_steps):
        loss = train_step(*reversal_batch(rng, batch_size, heldout_set))
        if step % 100 == 0 or step == train_steps - 1:
            print(
                f"  step {step}: loss {float(loss):.4f} ({time.time() - start_time:.0f}s)"
            )

    def greedy(sources, lengths, max_length=10):
        _, cell_state = encode(sources, lengths)
        decoder = tfa.seq2seq.BasicDecoder(
            cell,
            tfa.seq2seq.GreedyEmbeddingSampler(),
            output_layer=output_layer,
            maximum_iterations=max_length,
        )
        outputs, _, seq_lengths = decoder(
            decoder_embedding.embeddings,
            start_tokens=tf.fill([len(sources)], START),
            end_token=END,
            initial_state=initial_state(cell_state),
        )
        tokens = end_padded(outputs.sample_id.numpy(), END, max_length)
        logits = np32(outputs.rnn_output)
        return (
            tokens,
            seq_lengths.numpy().astype(np.int32),
            summed_log_probs(logits, tokens, END),
        )

    def exact(tokens, targets):
        width = targets.shape[1]
        padded = np.where(targets == PAD, END, targets)
        return np.all(tokens[:, :width] == padded, axis=1)

    tokens, _, _ = greedy(heldout_sources, heldout_lengths)
    accuracy = float(np.mean(exact(tokens, heldout_targets)))
    print(f"  held-out greedy exact match: {accuracy:.3f} on 512")

    n = 16
    sources, lengths, targets = (
        heldout_sources[:n],
        heldout_lengths[:n],
        heldout_targets[:n],
    )
    out = {
        "sources": sources,
        "source_lengths": lengths,
        "targets": targets,
        "train_steps": np.int32(train_steps),
        "heldout_exact_match": F32(accuracy),
        "encoder_embedding": np32(encoder_embedding.embeddings),
        "encoder/kernel": np32(encoder.cell.kernel),
        "encoder/recurrent_kernel": np32(encoder.cell.recurrent_kernel),
        "encoder/bias": np32(encoder.cell.bias),
        "decoder_embedding": np32(decoder_embedding.embeddings),
        "cell/kernel": np32(cell._cell.kernel),
        "cell/recurrent_kernel": np32(cell._cell.recurrent_kernel),
        "cell/bias": np32(cell._cell.bias),
        "mechanism/memory_kernel": np32(mechanism.memory_layer.kernel),
        "attention_layer/kernel": np32(cell._attention_layers[0].kernel),
        "output/kernel": np32(output_layer.kernel),
        "output/bias": np32(output_layer.bias),
    }
    recorded = [
        cell._cell.kernel,
        cell._cell.recurrent_kernel,
        cell._cell.bias,
        mechanism.memory_layer.kernel,
        cell._attention_layers[0].kernel,
    ]
    check_all_recorded([cell], recorded, "port cell")
    tokens, seq_lengths, scores = greedy(sources, lengths)
    out["greedy/tokens"] = tokens
    out["greedy/sequence_lengths"] = seq_lengths
    out["greedy/scores"] = scores
    out["greedy/exact_match"] = exact(tokens, targets)

    width, max_length = 3, 10
    memory, cell_state = encode(sources, lengths)
    mechanism.setup_memory(
        tfa.seq2seq.tile_batch(memory, width),
        memory_sequence_length=tfa.seq2seq.tile_batch(lengths, width),
    )
    decoder = tfa.seq2seq.BeamSearchDecoder(
        cell,
        beam_width=width,
        output_layer=output_layer,
        length_penalty_weight=0.0,
        maximum_iterations=max_length,
    )
    outputs, state, _ = decoder(
        decoder_embedding.embeddings,
        start_tokens=tf.fill([n], START),
        end_token=END,
        initial_state=initial_state(tfa.seq2seq.tile_batch(cell_state, width)),
    )
    predicted = outputs.predicted_ids.numpy()
    out["beam/sequences"] = np.stack(
        [end_padded(predicted[:, :, k], END, max_length) for k in range(width)], 1
    )
    out["beam/log_probs"] = np32(state.log_probs)
    out["beam/lengths"] = state.lengths.numpy().astype(np.int32)
    out["beam/scores"] = np32(outputs.beam_search_decoder_output.scores)[:, -1]
    print(f"  stored 16: greedy exact {int(out['greedy/exact_match'].sum())}/16")
    return out


# monotonic.npz


def monotonic_vars(mech, rng, out, prefix):
    """Randomises and records the variables of a built monotonic mechanism."""
    recorded = [mech.memory_layer.kernel, mech.attention_score_bias]
    set_var(mech.memory_layer.kernel, rng, 0.6, out, prefix + "memory_kernel")
    if isinstance(mech, tfa.seq2seq.BahdanauMonotonicAttention):
        set_var(mech.query_layer.kernel, rng, 0.6, out, prefix + "query_kernel")
        set_var(mech.attention_v, rng, 0.8, out, prefix + "attention_v")
        recorded += [mech.query_layer.kernel, mech.attention_v]
        if mech.normalize:
            g = rng.uniform(0.8, 2.0)
            set_var(mech.attention_g, rng, 0, out, prefix + "attention_g", g)
            set_var(mech.attention_b, rng, 0.5, out, prefix + "attention_b")
            recorded += [mech.attention_g, mech.attention_b]
    elif mech.scale:
        g = rng.uniform(0.4, 2.0)
        set_var(mech.attention_g, rng, 0, out, prefix + "attention_g", g)
        recorded.append(mech.attention_g)
    set_var(mech.attention_score_bias, rng, 0.5, out, prefix + "attention_score_bias")
    return recorded


def monotonic():
    rng = np.random.default_rng(60)
    out = {}
    # safe_cumprod, with exact 0s and 1s and values below float32's tiny.
    x = rng.uniform(0.0, 1.0, size=(3, 6)).astype(F32)
    x[0, 2] = 0.0
    x[1, 0] = 1.0
    x[1, 3] = 1.0
    x[2, 1] = 1e-39
    x[2, 4] = 0.0
    out["safe_cumprod/x"] = x
    out["safe_cumprod/y"] = np32(tfa.seq2seq.safe_cumprod(x, axis=1))
    out["safe_cumprod/y_exclusive"] = np32(
        tfa.seq2seq.safe_cumprod(x, axis=1, exclusive=True)
    )

    # monotonic_attention, each mode over T steps carrying its own attention.
    batch, source, steps = 3, 7, 4
    p = rng.uniform(0.0, 1.0, size=(batch, steps, source)).astype(F32)
    p[0, 1, 3] = 0.0
    p[1, 2, 0] = 1.0
    p[2, 0, 5] = 1.0
    p[2, 3, 2] = 0.0
    hard_p = (rng.uniform(size=(batch, steps, source)) < 0.4).astype(F32)
    previous = rng.dirichlet(np.ones(source), size=batch).astype(F32)
    out["ops/p_choose_i"] = p
    out["ops/hard_p_choose_i"] = hard_p
    out["ops/previous_random"] = previous
    first = np.eye(source, dtype=F32)[np.zeros(batch, int)]
    for mode in ("parallel", "recursive", "hard"):
        probabilities = hard_p if mode == "hard" else p
        attention, read = first, []
        history, from_random = [], []
        for t in range(steps):
            read.append(attention)
            attention = np32(
                tfa.seq2seq.monotonic_attention(probabilities[:, t], attention, mode)
            )
            history.append(attention)
            if mode != "hard":
                from_random.append(
                    np32(
                        tfa.seq2seq.monotonic_attention(
                            probabilities[:, t], previous, mode
                        )
                    )
                )
        out[f"{mode}/previous_attention"] = np.stack(read, 1)
        out[f"{mode}/attention"] = np.stack(history, 1)
        if from_random:
            out[f"{mode}/from_random"] = np.stack(from_random, 1)

    # Both mechanisms in an AttentionWrapper, step by step.
    rng = np.random.default_rng(6)
    depth, steps, in_depth, units = 5, 5, 3, 6
    lengths = np.array([7, 4, 6], dtype=np.int32)
    memory = rng.normal(size=(batch, source, depth)).astype(F32)
    inputs = rng.normal(size=(batch, steps, in_depth)).astype(F32)
    out["memory"] = memory
    out["memory_sequence_length"] = lengths
    out["inputs"] = inputs
    # The hard forms draw their weights from their own generator with a score
    # bias of 0: seeds picked so that the hard alignments move on in some rows,
    # stay in others, and lose their mass past the end in one.
    forms = {
        "bahdanau": ("bahdanau", {"normalize": False}, None),
        "bahdanau_normalized": ("bahdanau", {"normalize": True}, None),
        "luong": ("luong", {"scale": False}, None),
        "luong_scaled": ("luong", {"scale": True}, None),
        "bahdanau_recursive": ("bahdanau", {"mode": "recursive"}, None),
        "bahdanau_hard": ("bahdanau", {"normalize": True, "mode": "hard"}, 101),
        "luong_hard": ("luong", {"scale": True, "mode": "hard"}, 100),
    }
    shared_rng = rng
    for name, (kind, kwargs, seed) in forms.items():
        rng = shared_rng if seed is None else np.random.default_rng(seed)
        if kind == "bahdanau":
            mech = tfa.seq2seq.BahdanauMonotonicAttention(
                4, memory=memory, memory_sequence_length=lengths, **kwargs
            )
        else:
            mech = tfa.seq2seq.LuongMonotonicAttention(
                units, memory=memory, memory_sequence_length=lengths, **kwargs
            )
        cell = tf.keras.layers.LSTMCell(units)
        wrapper = tfa.seq2seq.AttentionWrapper(cell, mech, attention_layer_size=4)
        state = wrapper.get_initial_state(batch_size=batch, dtype=tf.float32)
        wrapper(tf.constant(inputs[:, 0]), state)  # builds every variable
        group = {}
        recorded = cell_vars(cell, rng, group, "cell/")
        recorded += monotonic_vars(mech, rng, group, "mechanism/")
        if seed is not None:
            bias = mech.attention_score_bias
            set_var(bias, rng, 0, group, "mechanism/attention_score_bias", 0.0)
        mech.setup_memory(memory, memory_sequence_length=lengths)
        layer = wrapper._attention_layers[0]
        set_var(layer.kernel, rng, 0.5, group, "attention_layer/kernel")
        recorded.append(layer.kernel)
        check_all_recorded([wrapper], recorded, name)
        cell_state = random_cell_state(
            rng, (batch, units), True, group, "initial_state/"
        )
        state = wrapper.get_initial_state(batch_size=batch, dtype=tf.float32).clone(
            cell_state=cell_state
        )
        group["initial_alignments"] = np32(state.attention_state)
        outputs, attentions, alignments = [], [], []
        for t in range(steps):
            output, state = wrapper(tf.constant(inputs[:, t]), state)
            outputs.append(np32(output))
            attentions.append(np32(state.attention))
            alignments.append(np32(state.alignments))
        group["outputs"] = np.stack(outputs, 1)
        group["attentions"] = np.stack(attentions, 1)
        group["alignments"] = np.stack(alignments, 1)
        group["final_attention"] = np32(state.attention)
        record_cell_state(state.cell_state, group, "final_state/")
        for key, value in group.items():
            out[f"{name}/{key}"] = value
        sums = group["alignments"].sum(-1)
        print(f"  {name}: alignment sums {sums.min():.3f}..{sums.max():.3f}")
        if seed is not None:
            where = np.where(sums > 0, group["alignments"].argmax(-1), -1)
            print(f"  {name}: positions {where.tolist()}")
    return out


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = sys.argv[1:]  # optional: the names of the files to write
    for name, build in (
        ("scorers", scorers),
        ("wrapper", wrapper_forms),
        ("decoding", decoding),
        ("port", port),
        ("monotonic", monotonic),
    ):
        if only and name not in only:
            continue
        start = time.time()
        print(f"{name}.npz")
        arrays = build()
        path = os.path.join(OUT_DIR, name + ".npz")
        save_npz(path, arrays)
        print(
            f"  {len(arrays)} arrays, {os.path.getsize(path)} bytes, {time.time() - start:.1f}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The state contract of attention: a scorer that reads its previous alignment.

`StepForward` is the smallest stateful scorer: Luong's dot score plus a bonus
for the position one after the previous alignment's mass, so its weights
depend on where it attended before. `AttentionDecoder` must carry that state
through the scan (training), `step` (generation) and the decoding loops, beam
search included, and all three must agree with a NumPy loop of the formula.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.decoding import beam_search, greedy_search
from keras_rnnattn.layers import AttentionDecoder, LuongAttention
from keras_rnnattn.layers.base_attention import BaseAttention
from keras_rnnattn.ops import masked_softmax

B, T, S, D_IN, UNITS = 3, 5, 6, 4, 8
rng = np.random.default_rng(11)
INPUTS = rng.normal(size=(B, T, D_IN)).astype("float32")
MEMORY = rng.normal(size=(B, S, UNITS)).astype("float32")
MASK = np.arange(S)[None, :] < np.array([[6], [4], [5]])
BONUS = 3.0


class StepForward(BaseAttention):
    """score_j = q·k_j + BONUS · (the previous alignment shifted by one)_j."""

    stateful = True

    def initial_alignment(self, batch_size, source_length, dtype="float32"):
        first = ops.arange(source_length) == 0
        return ops.cast(ops.broadcast_to(first, (batch_size, source_length)), dtype)

    def compute_scores(self, query, processed_key, previous_alignment=None):
        scores = ops.matmul(query, ops.transpose(processed_key, (0, 2, 1)))
        shifted = ops.pad(previous_alignment[:, :-1], [[0, 0], [1, 0]])  # (B, S)
        return scores + BONUS * ops.expand_dims(shifted, 1)


class Cumulative(StepForward):
    """The same, its state the running sum of the weights."""

    def next_alignment_state(self, weights, previous_alignment):
        return previous_alignment + weights


def np_(x):
    return ops.convert_to_numpy(x)


def reference(decoder, cumulative=False):
    """The decoder's outputs and alignments from a NumPy loop (GRU, o_t = c_t)."""
    cell = decoder.cell
    kernel, rec, bias = np_(cell.kernel), np_(cell.recurrent_kernel), np_(cell.bias)
    h = np.zeros((B, UNITS), "float32")
    attention = np.zeros((B, UNITS), "float32")
    state = np.zeros((B, S), "float32")
    state[:, 0] = 1.0
    outputs, alignments = [], []
    for t in range(T):
        x = np.concatenate([INPUTS[:, t], attention], -1)
        xz, xr, xh = np.split(x @ kernel + bias[0], 3, -1)
        rz, rr, rh = np.split(h @ rec + bias[1], 3, -1)
        z, r = 1 / (1 + np.exp(-(xz + rz))), 1 / (1 + np.exp(-(xr + rr)))
        h = z * h + (1 - z) * np.tanh(xh + r * rh)
        shifted = np.pad(state[:, :-1], [[0, 0], [1, 0]])
        scores = np.einsum("bu,bsu->bs", h, MEMORY) + BONUS * shifted
        scores = np.where(MASK, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        attention = np.einsum("bs,bsd->bd", weights, MEMORY)
        state = state + weights if cumulative else weights
        outputs.append(attention)
        alignments.append(weights)
    return np.stack(outputs, 1), np.stack(alignments, 1), state


def make_decoder(scorer=StepForward, **kwargs):
    keras.utils.set_random_seed(5)
    decoder = AttentionDecoder(
        UNITS,
        cell="gru",
        attention=scorer(),
        query="current",
        attention_layer_size=None,
        **kwargs,
    )
    decoder(INPUTS, MEMORY, memory_mask=MASK)
    return decoder


@pytest.mark.parametrize("scorer", [StepForward, Cumulative])
def test_the_scan_and_the_steps_carry_the_alignment_state(scorer):
    decoder = make_decoder(scorer)
    want_out, want_align, want_state = reference(decoder, scorer is Cumulative)
    outputs, alignments = decoder(INPUTS, MEMORY, memory_mask=MASK)
    np.testing.assert_allclose(np_(outputs), want_out, atol=1e-5)
    np.testing.assert_allclose(np_(alignments), want_align, atol=1e-5)
    memory = decoder.prepare_memory(MEMORY, MASK)
    states = decoder.get_initial_state(B, memory=memory)
    assert len(states) == 3  # h, o_{t-1}, the alignment state
    for t in range(T):
        out, states, weights = decoder.step(INPUTS[:, t], states, memory)
        np.testing.assert_allclose(np_(out), want_out[:, t], atol=1e-5)
        np.testing.assert_allclose(np_(weights), want_align[:, t], atol=1e-5)
    np.testing.assert_allclose(np_(states[-1]), want_state, atol=1e-5)


def test_the_state_changes_the_weights():
    # Without the bonus of the previous alignment the weights differ: the state
    # is really read.
    decoder = make_decoder()
    _, stateful, _ = reference(decoder)
    plain = AttentionDecoder(
        UNITS,
        cell="gru",
        attention=LuongAttention("dot"),
        query="current",
        attention_layer_size=None,
    )
    plain(INPUTS, MEMORY, memory_mask=MASK)
    plain.set_weights(decoder.get_weights())
    _, alignments = plain(INPUTS, MEMORY, memory_mask=MASK)
    assert np.abs(np_(alignments) - stateful).max() > 0.1


def test_stateless_decoders_keep_their_state_list():
    decoder = AttentionDecoder(UNITS, cell="lstm", attention="luong_general")
    decoder(INPUTS, MEMORY)
    assert len(decoder.get_initial_state(2, memory=None)) == 3  # h, c, o
    assert not decoder._stateful


def test_a_stateful_attention_takes_the_step_path_and_needs_the_memory():
    decoder = make_decoder(input_feeding=False)
    assert not decoder._fast  # the fast path attends all steps at once
    with pytest.raises(ValueError, match="pass `memory="):
        decoder.get_initial_state(B)


def test_a_stateful_scorer_attends_one_step_at_a_time():
    scorer = StepForward()
    with pytest.raises(ValueError, match="one decoder step at a time"):
        scorer(MEMORY[:, :2], MEMORY)
    # One step without a state starts from `initial_alignment`.
    context, weights = scorer(MEMORY[:, 0], MEMORY, return_attention_scores=True)
    scores = np.einsum("bu,bsu->bs", MEMORY[:, 0], MEMORY)
    scores[:, 1] += BONUS
    np.testing.assert_allclose(np_(weights), np_(masked_softmax(scores)), atol=1e-5)


def decoding_model(decoder):
    embedding = rng.normal(size=(7, D_IN)).astype("float32")
    output = rng.normal(size=(UNITS, 7)).astype("float32")

    def next_fn(token_ids, state):
        x = ops.take(embedding, token_ids, axis=0)
        out, states, alignment = decoder.step(x, state["states"], state["memory"])
        logits = ops.matmul(out, output)
        return logits, {"states": states, "memory": state["memory"]}, alignment

    memory = decoder.prepare_memory(MEMORY, MASK)
    state = {"states": decoder.get_initial_state(B, memory=memory), "memory": memory}
    return next_fn, state


def test_beam_search_reorders_the_alignment_state():
    # Beam size 1 is greedy search; a wider beam must carry each hypothesis's own
    # state: replaying its tokens through `step` gives its alignments.
    decoder = make_decoder()
    next_fn, state = decoding_model(decoder)
    start = np.zeros((B,), "int32")
    greedy = greedy_search(next_fn, state, start, 6, 6, return_alignments=True)
    beam1 = beam_search(next_fn, state, start, 6, 6, beam_size=1)
    np.testing.assert_array_equal(np_(beam1[0])[:, 0], np_(greedy[0]))
    tokens, _, alignments = beam_search(
        next_fn,
        state,
        start,
        6,
        6,
        beam_size=3,
        num_return_sequences=3,
        return_alignments=True,
    )
    tokens, alignments = np_(tokens), np_(alignments)
    for k in range(3):
        replay_state = state
        token = start
        for t in range(6):
            _, replay_state, weights = next_fn(token, replay_state)
            np.testing.assert_allclose(
                alignments[:, k, t][tokens[:, k, t - 1] != 6 if t else slice(None)],
                np_(weights)[tokens[:, k, t - 1] != 6 if t else slice(None)],
                atol=1e-5,
            )
            token = tokens[:, k, t]

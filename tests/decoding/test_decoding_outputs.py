"""Tests of the decoders' optional outputs: alignment histories and final states,
and model states with None leaves."""

import keras
import numpy as np
import pytest
from decoding_helpers import StepTableModel, jit
from keras import ops

from keras_rnnattn.decoding import beam_search, greedy_search, sample

END = 0


class TracingModel:
    """A step-and-token table model with attention and a state that records its past.

    At step t, fed token v, the log-probabilities are `table[t, v]` and the
    alignment is `weights[t, v]` `(S,)` (with `nested`, the list of that and
    `second[t, v]` `(S2,)`). The state counts the steps and keeps a trace of the
    tokens fed, `trace * V + v`, exact in float32 for these sizes, so a state
    names the whole ancestry of its hypothesis. With `with_mask` the state has a
    None leaf, as an unmasked `AttentionDecoder.prepare_memory` gives.
    """

    def __init__(self, table, seed=0, source_length=3, nested=False, with_mask=False):
        self.steps = StepTableModel(table)
        self.max_length, self.vocab_size = self.steps.max_length, self.steps.vocab_size
        rng = np.random.default_rng(seed)
        shape = (self.max_length, self.vocab_size)
        self.weights = rng.dirichlet(np.ones(source_length), size=shape)
        self.second = rng.dirichlet(np.ones(2), size=shape) if nested else None
        self.with_mask = with_mask

    @classmethod
    def random(cls, seed, max_length, vocab_size, **kwargs):
        table = StepTableModel.random(seed, max_length, vocab_size).table
        return cls(table, seed=seed, **kwargs)

    def initial_state(self, batch_size):
        state = {
            "step": ops.zeros((batch_size,), dtype="int32"),
            "trace": ops.zeros((batch_size,), dtype="float32"),
        }
        if self.with_mask:
            state["mask"] = None
        return state

    def next_fn(self, token_ids, state):
        if self.with_mask:
            assert state["mask"] is None  # passed through as it was
        logits, _ = self.steps.next_fn(token_ids, {"step": state["step"]})
        rows = ops.minimum(state["step"], self.max_length - 1) * self.vocab_size
        rows = rows + token_ids  # (N,)
        new_state = {
            "step": state["step"] + 1,
            "trace": state["trace"] * self.vocab_size + ops.cast(token_ids, "float32"),
        }
        if self.with_mask:
            new_state["mask"] = None
        alignment = self._take(self.weights, rows)  # (N, S)
        if self.second is not None:
            alignment = [alignment, self._take(self.second, rows)]  # + (N, S2)
        return logits, new_state, alignment

    def without_alignment(self, token_ids, state):
        return self.next_fn(token_ids, state)[:2]

    @staticmethod
    def _take(weights, rows):
        flat = weights.reshape(-1, weights.shape[-1]).astype("float32")
        return ops.take(ops.convert_to_tensor(flat), rows, axis=0)

    def expected(self, start, tokens):
        """What a hypothesis `tokens` `(L,)` (padded with END) must come with:
        its alignments `(L, S)` (a list with `nested`) and its state."""
        ends = np.flatnonzero(np.asarray(tokens) == END)
        length = int(ends[0]) + 1 if ends.size else self.max_length
        fed = [int(start)] + [int(t) for t in tokens[: length - 1]]
        histories = [np.zeros((self.max_length, self.weights.shape[-1]))]
        if self.second is not None:
            histories.append(np.zeros((self.max_length, 2)))
        for t, token in enumerate(fed):
            histories[0][t] = self.weights[t, token]
            if self.second is not None:
                histories[1][t] = self.second[t, token]
        trace = 0.0
        for token in fed:
            trace = trace * self.vocab_size + token
        alignments = histories if self.second is not None else histories[0]
        return alignments, {"step": length, "trace": trace}


def as_numpy(tree):
    return keras.tree.map_structure(
        lambda x: None if x is None else ops.convert_to_numpy(x), tree
    )


def assert_follows_tokens(model, starts, tokens, alignments, state):
    """Every row (or hypothesis) has the alignments and state of its own tokens."""
    tokens = np.asarray(tokens)
    for index in np.ndindex(tokens.shape[:-1]):
        start = starts[index[0]]
        want_alignments, want_state = model.expected(start, tokens[index])
        if model.second is not None:
            for got, want in zip(alignments, want_alignments):
                np.testing.assert_allclose(got[index], want, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_allclose(
                alignments[index], want_alignments, rtol=1e-6, atol=1e-7
            )
        assert state["step"][index] == want_state["step"], index
        assert state["trace"][index] == want_state["trace"], index
    if model.with_mask:
        assert state["mask"] is None


def decode(decoder, fn, state, starts, max_length, **kwargs):
    if isinstance(starts, list):
        starts = np.asarray(starts, "int32")
    if decoder == "greedy":
        return greedy_search(fn, state, starts, END, max_length, **kwargs)
    if decoder == "sample":
        return sample(fn, state, starts, END, max_length, seed=5, **kwargs)
    return beam_search(
        fn,
        state,
        starts,
        END,
        max_length,
        beam_size=3,
        num_return_sequences=2,
        **kwargs,
    )


@pytest.mark.parametrize("decoder", ["greedy", "sample"])
def test_token_loops_return_each_rows_alignments_and_frozen_state(decoder):
    model = TracingModel.random(8, max_length=6, vocab_size=5)
    starts = [1, 2, 3, 4, 1, 3]
    state = model.initial_state(6)
    tokens, scores = as_numpy(decode(decoder, model.next_fn, state, starts, 6))
    lengths = [int(model.expected(s, row)[1]["step"]) for s, row in zip(starts, tokens)]
    # Rows end at different steps (greedy: 1, 2, 4 and 6), so a state not
    # frozen at the end token would count on.
    assert len(set(lengths)) >= (4 if decoder == "greedy" else 2)

    outputs = as_numpy(
        decode(
            decoder,
            model.next_fn,
            state,
            starts,
            6,
            return_alignments=True,
            return_state=True,
        )
    )
    assert len(outputs) == 4
    got_tokens, got_scores, alignments, final_state = outputs
    np.testing.assert_array_equal(got_tokens, tokens)
    np.testing.assert_array_equal(got_scores, scores)
    assert alignments.shape == (6, 6, 3)
    assert_follows_tokens(model, starts, tokens, alignments, final_state)
    np.testing.assert_array_equal(final_state["step"], lengths)

    # One of the two: the tuple has three parts, in the documented order.
    only_alignments = as_numpy(
        decode(decoder, model.next_fn, state, starts, 6, return_alignments=True)
    )
    only_state = as_numpy(
        decode(decoder, model.next_fn, state, starts, 6, return_state=True)
    )
    assert len(only_alignments) == 3 and len(only_state) == 3
    np.testing.assert_array_equal(only_alignments[2], alignments)
    np.testing.assert_array_equal(only_state[2]["trace"], final_state["trace"])


def reordering_model():
    """Vocab {end, 1, 2, 3}, start 3, max_length 3, beam 2; the search goes:

    step 0, fed 3: [1] .5 (beam 0), [2] .4 (beam 1).
    step 1, fed 1: (.4, .25, .2, .15); fed 2: (.02, .03, .4, .55). Ranked:
        [2, 3] .22, [1, end] .2 (ends), [2, 2] .16, [1, 1] .125: both alive
        beams descend from beam 1, and [2, 3] moves to beam 0.
    step 2 (last), fed 3: end .95; fed 2: end .9. [2, 3, end] .209 is the
        best, [1, end] .2 the second.
    """
    table = np.full((3, 4, 4), 0.25)
    table[0, 3] = [0.05, 0.5, 0.4, 0.05]
    table[1, 1] = [0.4, 0.25, 0.2, 0.15]
    table[1, 2] = [0.02, 0.03, 0.4, 0.55]
    table[2, 3] = [0.95, 0.02, 0.02, 0.01]
    table[2, 2] = [0.9, 0.04, 0.03, 0.03]
    return TracingModel(np.log(table), seed=4)


def test_beam_history_and_state_are_reordered_with_the_beams():
    model = reordering_model()
    # Beam 0 fed 1 at step 1, beam 1 fed 2: different alignments, which a
    # history left in its slot would mix up.
    assert not np.allclose(model.weights[1, 1], model.weights[1, 2])
    state = model.initial_state(1)
    plain = as_numpy(
        beam_search(model.next_fn, state, np.array([3]), END, 3, 2, 0.0, 0.0, 2)
    )
    tokens, scores, alignments, final_state = as_numpy(
        beam_search(
            model.next_fn,
            state,
            np.array([3]),
            END,
            3,
            beam_size=2,
            num_return_sequences=2,
            return_alignments=True,
            return_state=True,
        )
    )
    np.testing.assert_array_equal(tokens, [[[2, 3, 0], [1, 0, 0]]])
    np.testing.assert_array_equal(tokens, plain[0])
    np.testing.assert_array_equal(scores, plain[1])
    np.testing.assert_allclose(
        scores[0], np.log([0.4 * 0.55 * 0.95, 0.5 * 0.4]), rtol=1e-6
    )
    w = model.weights
    np.testing.assert_allclose(alignments[0, 0], [w[0, 3], w[1, 2], w[2, 3]], rtol=1e-6)
    np.testing.assert_allclose(
        alignments[0, 1], [w[0, 3], w[1, 1], np.zeros(3)], rtol=1e-6
    )
    np.testing.assert_array_equal(final_state["step"], [[3, 2]])
    np.testing.assert_array_equal(
        final_state["trace"], [[(3 * 4 + 2) * 4 + 3, 3 * 4 + 1]]
    )
    assert alignments.shape == (1, 2, 3, 3) and final_state["step"].shape == (1, 2)


@pytest.mark.parametrize(
    "penalties",
    [{}, {"length_penalty": 0.6, "coverage_penalty": 0.3}],
)
def test_beam_hypotheses_get_their_own_alignments_and_states(penalties):
    # A narrow beam on a random model prunes and reorders at every step.
    model = TracingModel.random(5, max_length=6, vocab_size=6)
    starts = [1, 2, 3, 4]
    state = model.initial_state(4)
    kwargs = {"beam_size": 3, "num_return_sequences": 3, **penalties}
    tokens, scores = as_numpy(
        beam_search(model.next_fn, state, np.array(starts), END, 6, **kwargs)
    )
    outputs = as_numpy(
        beam_search(
            model.next_fn,
            state,
            np.array(starts),
            END,
            6,
            return_alignments=True,
            return_state=True,
            **kwargs,
        )
    )
    np.testing.assert_array_equal(outputs[0], tokens)
    np.testing.assert_array_equal(outputs[1], scores)
    alignments, final_state = outputs[2], outputs[3]
    assert alignments.shape == (4, 3, 6, 3)
    assert final_state["trace"].shape == (4, 3)
    # Hypotheses of several lengths, so the zeros after the end are tested.
    assert len({int(n) for n in final_state["step"].ravel()}) >= 2
    assert_follows_tokens(model, starts, tokens, alignments, final_state)

    only_state = as_numpy(
        beam_search(
            model.next_fn, state, np.array(starts), END, 6, return_state=True, **kwargs
        )
    )
    assert len(only_state) == 3
    np.testing.assert_array_equal(only_state[2]["trace"], final_state["trace"])


def test_beam_empty_slots_have_zero_alignments_and_state():
    # Vocab {end, 1}, max_length 1: only [end] and [1] exist, two slots stay empty.
    model = TracingModel(np.log([[[0.3, 0.7], [0.3, 0.7]]]))
    tokens, scores, alignments, final_state = as_numpy(
        beam_search(
            model.next_fn,
            model.initial_state(1),
            np.array([1]),
            END,
            1,
            beam_size=4,
            num_return_sequences=4,
            return_alignments=True,
            return_state=True,
        )
    )
    np.testing.assert_array_equal(tokens[0], [[1], [0], [0], [0]])
    assert np.all(scores[0, 2:] == -np.inf)
    np.testing.assert_allclose(alignments[0, :2, 0], [model.weights[0, 1]] * 2)
    assert np.all(alignments[0, 2:] == 0)
    np.testing.assert_array_equal(final_state["step"], [[1, 1, 0, 0]])
    np.testing.assert_array_equal(final_state["trace"], [[1, 1, 0, 0]])


@pytest.mark.parametrize("decoder", ["greedy", "sample", "beam"])
def test_nested_alignments_give_one_history_per_mechanism(decoder):
    model = TracingModel.random(3, max_length=5, vocab_size=5, nested=True)
    starts = [1, 2, 3]
    outputs = as_numpy(
        decode(
            decoder,
            model.next_fn,
            model.initial_state(3),
            starts,
            5,
            return_alignments=True,
            return_state=True,
        )
    )
    tokens, _, alignments, final_state = outputs
    assert isinstance(alignments, list) and len(alignments) == 2
    batch_axes = tokens.shape[:-1]
    assert alignments[0].shape == batch_axes + (5, 3)
    assert alignments[1].shape == batch_axes + (5, 2)
    assert_follows_tokens(model, starts, tokens, alignments, final_state)


@pytest.mark.parametrize("decoder", ["greedy", "sample", "beam"])
def test_none_leaf_in_state_is_passed_through(decoder):
    plain = TracingModel.random(6, max_length=5, vocab_size=5)
    masked = TracingModel.random(6, max_length=5, vocab_size=5, with_mask=True)
    starts = [1, 2, 3]
    expected = as_numpy(
        decode(decoder, plain.next_fn, plain.initial_state(3), starts, 5)
    )
    state = masked.initial_state(3)
    tokens, scores = as_numpy(decode(decoder, masked.next_fn, state, starts, 5))
    np.testing.assert_array_equal(tokens, expected[0])
    np.testing.assert_allclose(scores, expected[1], rtol=1e-6)
    tokens, _, alignments, final_state = as_numpy(
        decode(
            decoder,
            masked.next_fn,
            state,
            starts,
            5,
            return_alignments=True,
            return_state=True,
        )
    )
    assert set(final_state) == {"step", "trace", "mask"}
    assert_follows_tokens(masked, starts, tokens, alignments, final_state)


@pytest.mark.parametrize("decoder", ["greedy", "sample", "beam"])
def test_return_alignments_without_alignment_raises(decoder):
    model = TracingModel.random(0, max_length=3, vocab_size=4)
    with pytest.raises(ValueError, match=r"return_alignments=True.*alignment\)"):
        decode(
            decoder,
            model.without_alignment,
            model.initial_state(2),
            [1, 2],
            3,
            return_alignments=True,
        )
    # The state alone needs no alignment.
    outputs = decode(
        decoder,
        model.without_alignment,
        model.initial_state(2),
        [1, 2],
        3,
        return_state=True,
    )
    assert len(outputs) == 3


def test_next_fn_changing_the_none_leaves_raises():
    def next_fn(token_ids, state):
        return ops.zeros((2, 4)), {"mask": ops.zeros((2,)), "step": state["step"]}

    state = {"mask": None, "step": ops.zeros((2,), dtype="int32")}
    with pytest.raises(ValueError, match="None leaves where it had None"):
        greedy_search(next_fn, state, np.array([1, 2]), END, 3)


@pytest.mark.parametrize("decoder", ["greedy", "sample", "beam"])
def test_jit_equals_eager(decoder):
    model = TracingModel.random(
        7, max_length=5, vocab_size=5, nested=True, with_mask=True
    )
    starts = np.array([1, 2, 3], "int32")

    def run(start_ids, state):
        return decode(
            decoder,
            model.next_fn,
            state,
            start_ids,
            5,
            return_alignments=True,
            return_state=True,
        )

    eager = as_numpy(run(starts, model.initial_state(3)))
    compiled = as_numpy(jit(run)(ops.convert_to_tensor(starts), model.initial_state(3)))
    assert compiled[3]["mask"] is None
    assert len(keras.tree.flatten(compiled)) == len(keras.tree.flatten(eager))
    for got, want in zip(keras.tree.flatten(compiled), keras.tree.flatten(eager)):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert_follows_tokens(model, starts, compiled[0], compiled[2], compiled[3])


@pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="counts the loop's carried arrays in a jaxpr",
)
@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_loop_carries_history_and_pool_only_when_asked(decoder):
    import jax

    model = TracingModel.random(8, max_length=4, vocab_size=4)
    starts = np.array([1, 2], "int32")

    def carried(**flags):
        jaxpr = jax.make_jaxpr(
            lambda ids, state: decode(decoder, model.next_fn, state, ids, 4, **flags)
        )(starts, model.initial_state(2))
        (loop,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "while"]
        body = loop.params["body_jaxpr"].jaxpr
        return len(body.invars) - loop.params["body_nconsts"]

    # Greedy: step, last ids, tokens, finished, scores and the 2 state tensors.
    # Beam: step, last ids, alive seqs and log-probs, finished seqs and scores,
    # and the 2 state tensors.
    plain = carried()
    assert plain == (7 if decoder == "greedy" else 8)
    history = 1 if decoder == "greedy" else 2  # beam: alive and finished
    pool = 0 if decoder == "greedy" else 2  # beam: finished hypotheses' states
    assert carried(return_alignments=True) == plain + history
    assert carried(return_state=True) == plain + pool
    assert carried(return_alignments=True, return_state=True) == plain + history + pool


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="SavedModel is TensorFlow's format",
)
def test_saved_model_with_alignments_and_state_gives_eager_results(tmp_path):
    import tensorflow as tf

    model = TracingModel.random(9, max_length=5, vocab_size=5, with_mask=True)
    starts = np.array([1, 2, 3], "int32")

    def search(start_ids):
        return beam_search(
            model.next_fn,
            model.initial_state(3),
            start_ids,
            END,
            5,
            beam_size=3,
            num_return_sequences=2,
            length_penalty=0.6,
            return_alignments=True,
            return_state=True,
        )

    module = tf.Module()
    module.search = tf.function(
        search, input_signature=[tf.TensorSpec((3,), tf.int32)], autograph=False
    )
    tf.saved_model.save(module, str(tmp_path / "search"))
    restored = tf.saved_model.load(str(tmp_path / "search"))
    tokens, scores, alignments, final_state = as_numpy(
        restored.search(tf.constant(starts))
    )
    eager = as_numpy(search(starts))
    np.testing.assert_array_equal(tokens, eager[0])
    np.testing.assert_allclose(scores, eager[1], rtol=1e-6)
    np.testing.assert_allclose(alignments, eager[2], rtol=1e-6)
    np.testing.assert_array_equal(final_state["step"], eager[3]["step"])
    np.testing.assert_array_equal(final_state["trace"], eager[3]["trace"])
    assert final_state.get("mask") is None
    assert_follows_tokens(model, starts, tokens, alignments, final_state)

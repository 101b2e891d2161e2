"""Tests of beam_search against brute-force enumeration in NumPy."""

import doctest
import importlib
import math

import keras
import numpy as np
import pytest
from decoding_helpers import (
    MemoryModel,
    StepTableModel,
    brute_force_beams,
    gnmt_score,
    jit,
)
from keras import ops

from keras_rnnattn.decoding import beam_search, greedy_search

END = 0


def run_beam(model, starts, state, **kwargs):
    kwargs = {"end_id": END, "max_length": model.max_length, **kwargs}
    tokens, scores = beam_search(model.next_fn, state, np.asarray(starts), **kwargs)
    return ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)


def assert_matches_brute_force(tokens, scores, model_of_row, starts, n, **penalties):
    for b, start in enumerate(starts):
        expected_tokens, expected_scores = brute_force_beams(
            model_of_row(b), start, END, n, **penalties
        )
        np.testing.assert_array_equal(tokens[b], expected_tokens)
        np.testing.assert_allclose(scores[b], expected_scores, rtol=1e-5, atol=1e-5)


def test_module_docstring_example_runs():
    # `keras_rnnattn.decoding.beam_search` is the function; the module by name:
    module = importlib.import_module("keras_rnnattn.decoding.beam_search")
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_beam_size_one_equals_greedy():
    model = MemoryModel.random(0, batch_size=8, max_length=6, vocab_size=5)
    starts = np.array([1, 2, 3, 4, 1, 2, 3, 4])
    tokens, scores = run_beam(model, starts, model.initial_state(), beam_size=1)
    greedy_tokens, greedy_scores = greedy_search(
        model.next_fn, model.initial_state(), starts, END, 6
    )
    greedy_tokens = ops.convert_to_numpy(greedy_tokens)
    assert tokens.shape == (8, 1, 6) and tokens.dtype == np.int32
    # The rows end at various steps, and some never end (a real test).
    assert len({int(np.sum(row != END)) for row in greedy_tokens}) >= 3
    np.testing.assert_array_equal(tokens[:, 0], greedy_tokens)
    np.testing.assert_allclose(
        scores[:, 0], ops.convert_to_numpy(greedy_scores), rtol=1e-6, atol=1e-6
    )


def test_finds_the_best_sequence_where_greedy_does_not():
    # From the start token 3, greedy takes 1 (.6) and then never ends well;
    # 2 (.4) then end (.9) is the most probable sentence, p = .36.
    probs = np.array(
        [
            [0.97, 0.01, 0.01, 0.01],
            [0.3, 0.45, 0.24, 0.01],
            [0.9, 0.04, 0.05, 0.01],
            [0.01, 0.6, 0.38, 0.01],
        ]
    )
    model = StepTableModel(np.log(np.repeat(probs[None], 4, axis=0)))
    greedy_tokens, _ = greedy_search(
        model.next_fn, model.initial_state(1), np.array([3]), END, 4
    )
    np.testing.assert_array_equal(ops.convert_to_numpy(greedy_tokens), [[1, 1, 1, 1]])

    tokens, scores = run_beam(model, [3], model.initial_state(1), beam_size=2)
    expected_tokens, expected_scores = brute_force_beams(model, 3, END, 1)
    np.testing.assert_array_equal(expected_tokens, [[2, 0, 0, 0]])
    np.testing.assert_array_equal(tokens[0], expected_tokens)
    np.testing.assert_allclose(scores[0], [math.log(0.38 * 0.9)], rtol=1e-6)
    np.testing.assert_allclose(scores[0], expected_scores, rtol=1e-6)


# With vocab 3 and max_length 4, 8 hypotheses are alive and 24 candidates
# compete at most, so beam_size 24 keeps everything: beam search is exact.
@pytest.mark.parametrize("alpha", [0.0, 0.8, -0.5])
def test_n_best_matches_brute_force(alpha):
    model = StepTableModel.random(1, max_length=4, vocab_size=3, sharpness=1.5)
    starts = [1, 2]
    tokens, scores = run_beam(
        model,
        starts,
        model.initial_state(2),
        beam_size=24,
        num_return_sequences=7,
        length_penalty=alpha,
    )
    assert tokens.shape == (2, 7, 4) and scores.shape == (2, 7)
    for b in range(2):
        assert len({tuple(row) for row in tokens[b]}) == 7  # distinct
        assert np.all(np.diff(scores[b]) <= 0)  # best first
    assert_matches_brute_force(tokens, scores, lambda b: model, starts, 7, alpha=alpha)


def test_settings_give_the_searchs_arguments():
    # A SearchSettings (what models, presets and export hold) in place of the
    # keyword arguments: the same hypotheses and scores.
    from keras_rnnattn.decoding.search_settings import SearchSettings

    model = StepTableModel.random(1, max_length=4, vocab_size=3, sharpness=1.5)
    state = model.initial_state(2)
    settings = SearchSettings(
        "beam", beam_size=6, length_penalty=0.8, num_return_sequences=3
    )
    by_settings = run_beam(model, [1, 2], state, settings=settings)
    by_arguments = run_beam(
        model, [1, 2], state, beam_size=6, length_penalty=0.8, num_return_sequences=3
    )
    for got, want in zip(by_settings, by_arguments):
        np.testing.assert_array_equal(got, want)
    assert by_settings[0].shape == (2, 3, 4)


def test_n_best_with_a_narrow_beam_returns_its_own_best_sorted():
    # Beam search with beam 3 is approximate; its three best must still be
    # distinct, sorted, and scored exactly as log P of their own tokens.
    model = StepTableModel.random(5, max_length=6, vocab_size=6)
    tokens, scores = run_beam(
        model, [1, 2], model.initial_state(2), beam_size=3, num_return_sequences=3
    )
    for b, start in enumerate([1, 2]):
        assert len({tuple(row) for row in tokens[b]}) == 3
        assert np.all(np.diff(scores[b]) <= 0)
        for row, score in zip(tokens[b], scores[b]):
            prefix, log_prob = [], 0.0
            for token in row:
                log_prob += model.log_probs(start, prefix)[token]
                prefix.append(int(token))
                if token == END:
                    break
            np.testing.assert_allclose(score, log_prob, rtol=1e-5)


def length_penalty_model():
    """Short A = [end] (p .5) against long B = [1, 1, end] (p .45 * .9 * .9)."""
    step0 = [[0.5, 0.45, 0.05]] * 3
    step1 = [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.9, 0.05, 0.05]]
    step2 = [[0.9, 0.05, 0.05]] * 3
    return StepTableModel(np.log(np.array([step0, step1, step2])))


def test_length_penalty_swaps_short_and_long_at_the_formula_alpha():
    model = length_penalty_model()
    log_p_short, log_p_long = math.log(0.5), math.log(0.45 * 0.9 * 0.9)
    # log P_A / lp(1) = log P_B / lp(3), lp(1) = 1, lp(3) = (8/6) ** alpha.
    alpha_swap = math.log(log_p_long / log_p_short) / math.log(8 / 6)
    short, long = [0, 0, 0], [1, 1, 0]
    for alpha, expected in [
        (alpha_swap - 0.05, [short, long]),
        (alpha_swap + 0.05, [long, short]),
    ]:
        tokens, scores = run_beam(
            model,
            [1],
            model.initial_state(1),
            beam_size=12,
            num_return_sequences=2,
            length_penalty=alpha,
        )
        np.testing.assert_array_equal(tokens[0], expected)
        by_formula = {
            tuple(short): gnmt_score(log_p_short, 1, alpha),
            tuple(long): gnmt_score(log_p_long, 3, alpha),
        }
        np.testing.assert_allclose(
            scores[0], [by_formula[tuple(row)] for row in expected], rtol=1e-5
        )
        assert_matches_brute_force(tokens, scores, lambda b: model, [1], 2, alpha=alpha)


def test_coverage_penalty_on_a_hand_made_alignment():
    # Vocab {end, 1}, start 1, max_length 2. Step 0: p = (.5, .5), attention
    # (.5, .5, 0, 0); step 1: p = (.8, .2), attention (.2, .2, .6, 0). Position 3
    # is never attended (padding) and is left out of the sum.
    #   [end]:    log .5 + beta * (2 log .5)
    #   [1, end]: log .4 + beta * (2 log .7 + log .6)
    # Without the penalty [end] wins; with beta = 2 [1, end] does.
    log_probs = np.log([[[0.5, 0.5]] * 2, [[0.8, 0.2]] * 2])
    alignments = np.array(
        [[[0.5, 0.5, 0.0, 0.0]] * 2, [[0.2, 0.2, 0.6, 0.0]] * 2], "float32"
    )
    model = StepTableModel(log_probs, alignments)
    short = math.log(0.5) + 2.0 * (2 * math.log(0.5))
    long = math.log(0.4) + 2.0 * (2 * math.log(0.7) + math.log(0.6))
    assert math.log(0.5) > math.log(0.4)  # the order without the penalty
    tokens, scores = run_beam(
        model,
        [1],
        model.initial_state(1),
        beam_size=2,
        num_return_sequences=2,
        coverage_penalty=2.0,
    )
    np.testing.assert_array_equal(tokens[0], [[1, 0], [0, 0]])
    np.testing.assert_allclose(scores[0], [long, short], rtol=1e-5)


@pytest.mark.parametrize("alpha, beta", [(0.0, 0.4), (0.7, 0.2)])
def test_coverage_penalty_matches_brute_force(alpha, beta):
    rng = np.random.default_rng(7)
    log_probs = StepTableModel.random(7, max_length=4, vocab_size=3).table
    # Attention over 4 source positions, the last one padding (weight 0).
    alignments = rng.dirichlet(np.ones(3), size=(4, 3))
    alignments = np.concatenate([alignments, np.zeros((4, 3, 1))], axis=-1)
    model = StepTableModel(log_probs, alignments.astype("float32"))
    starts = [1, 2]
    tokens, scores = run_beam(
        model,
        starts,
        model.initial_state(2),
        beam_size=24,
        num_return_sequences=5,
        length_penalty=alpha,
        coverage_penalty=beta,
    )
    assert_matches_brute_force(
        tokens, scores, lambda b: model, starts, 5, alpha=alpha, beta=beta
    )
    # The penalty matters here: without it the ranking differs.
    without, _ = brute_force_beams(model, 1, END, 5, alpha=alpha)
    assert not np.array_equal(without, tokens[0])


def test_rows_end_at_different_steps_and_are_padded_with_end_id():
    # 1 -> end (.9); 2 -> 3 (.8) -> end (.7); 4 -> 4 (.9) forever.
    probs = np.full((5, 5), 0.025)
    probs[1, 0], probs[2, 3], probs[3, 0], probs[4, 4] = 0.9, 0.8, 0.7, 0.9
    probs[0, 0] = 0.9
    probs /= probs.sum(-1, keepdims=True)
    model = StepTableModel(np.log(np.repeat(probs[None], 4, axis=0)))
    tokens, scores = run_beam(model, [1, 2, 4], model.initial_state(3), beam_size=3)
    np.testing.assert_array_equal(
        tokens[:, 0], [[0, 0, 0, 0], [3, 0, 0, 0], [4, 4, 4, 4]]
    )
    log_p = np.log(probs)
    np.testing.assert_allclose(
        scores[:, 0],
        [log_p[1, 0], log_p[2, 3] + log_p[3, 0], log_p[4, 4] * 4],
        rtol=1e-6,
    )


# Vocab 4, max_length 3: 9 alive hypotheses and 36 candidates at most, so
# beam_size 36 is exact; each row has its own memory.
def test_nested_state_is_tiled_and_reordered():
    model = MemoryModel.random(11, batch_size=3, max_length=3, vocab_size=4)
    starts = [1, 2, 3]
    tokens, scores = run_beam(
        model, starts, model.initial_state(), beam_size=36, num_return_sequences=6
    )
    assert_matches_brute_force(tokens, scores, model.row, starts, 6)
    # The rows differ, so mixing up rows' memories would show.
    assert len({tuple(tokens[b].ravel()) for b in range(3)}) == 3


def test_nested_state_with_a_narrow_beam_follows_its_row():
    # Reversing the batch reverses the results: no row's state leaks into
    # another when beams are pruned and reordered.
    model = MemoryModel.random(12, batch_size=4, max_length=6, vocab_size=7)
    starts = np.array([1, 2, 3, 4])
    tokens, scores = run_beam(
        model, starts, model.initial_state(), beam_size=3, num_return_sequences=2
    )
    reversed_model = MemoryModel(model.memory[::-1])
    reversed_tokens, reversed_scores = run_beam(
        reversed_model,
        starts[::-1],
        reversed_model.initial_state(),
        beam_size=3,
        num_return_sequences=2,
    )
    assert len({tuple(tokens[b].ravel()) for b in range(4)}) == 4
    np.testing.assert_array_equal(tokens, reversed_tokens[::-1])
    np.testing.assert_allclose(scores, reversed_scores[::-1], rtol=1e-5, atol=1e-6)


def _gathers_of_shape(jaxpr, shape):
    """The gather equations of a jaxpr and its inner jaxprs with output `shape`."""
    count = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "gather":
            count += sum(tuple(v.aval.shape) == shape for v in eqn.outvars)
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                count += _gathers_of_shape(inner, shape)
    return count


def test_a_state_tensor_passed_through_is_not_reordered():
    # MemoryModel's next_fn returns its memory as it received it: the tiled
    # rows of a batch row are all alike, and the search leaves them in place
    # (the brute-force tests above show the results stay exact).
    model = MemoryModel.random(12, batch_size=4, max_length=6, vocab_size=7)
    starts = np.array([1, 2, 3, 4], "int32")
    seen = []

    def next_fn(token_ids, state):
        if ops.shape(state["memory"])[0] == 4 * 3:  # the loop's steps
            seen.append(state["memory"])
        return model.next_fn(token_ids, state)

    def decode(start_ids, state):
        return beam_search(next_fn, state, start_ids, END, 6, beam_size=3)

    if keras.backend.backend() == "jax":  # one trace of the loop's body
        import jax

        jaxpr = jax.make_jaxpr(decode)(starts, model.initial_state()).jaxpr
        assert _gathers_of_shape(jaxpr, (4 * 3, 6, 7)) == 0
        # The decoder's counts `(N, V)` are reordered: the check sees gathers.
        assert _gathers_of_shape(jaxpr, (4 * 3, 7)) > 0
    else:  # eager loops: the very tensor at every step
        decode(starts, model.initial_state())
        assert len(seen) >= 3
        assert all(memory is seen[0] for memory in seen[1:])


def test_too_small_vocabulary_leaves_empty_slots():
    # Vocab {end, 1}, max_length 1: only [end] and [1] exist.
    model = StepTableModel(np.log([[[0.3, 0.7], [0.3, 0.7]]]))
    tokens, scores = run_beam(
        model, [1], model.initial_state(1), beam_size=4, num_return_sequences=4
    )
    np.testing.assert_array_equal(tokens[0], [[1], [0], [0], [0]])
    np.testing.assert_allclose(scores[0, :2], np.log([0.7, 0.3]), rtol=1e-6)
    assert np.all(scores[0, 2:] == -np.inf)


def test_jit_equals_eager():
    log_probs = StepTableModel.random(3, max_length=5, vocab_size=6).table
    alignments = np.random.default_rng(3).dirichlet(np.ones(4), size=(5, 6))
    model = StepTableModel(log_probs, alignments.astype("float32"))
    memory_model = MemoryModel.random(13, batch_size=3, max_length=5, vocab_size=6)
    starts = np.array([1, 2, 3], "int32")

    def decode(start_ids, state, memory_state):
        with_penalties = beam_search(
            model.next_fn,
            state,
            start_ids,
            END,
            5,
            beam_size=3,
            length_penalty=0.6,
            coverage_penalty=0.3,
            num_return_sequences=2,
        )
        nested = beam_search(
            memory_model.next_fn, memory_state, start_ids, END, 5, beam_size=4
        )
        return with_penalties + nested

    inputs = (starts, model.initial_state(3), memory_model.initial_state())
    eager = decode(*inputs)
    compiled = jit(decode)(ops.convert_to_tensor(starts), *inputs[1:])
    for got, want in zip(compiled, eager):
        np.testing.assert_allclose(
            ops.convert_to_numpy(got), ops.convert_to_numpy(want), rtol=1e-5, atol=1e-6
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"beam_size": 0}, "beam_size=0"),
        ({"beam_size": 2.5}, "beam_size=2.5"),
        ({"max_length": 0}, "max_length=0"),
        ({"num_return_sequences": 5, "beam_size": 4}, "num_return_sequences=5"),
        ({"num_return_sequences": 0}, "num_return_sequences=0"),
        ({"coverage_penalty": -0.1}, "coverage_penalty=-0.1"),
        ({"length_penalty": float("nan")}, "length_penalty=nan"),
        ({"length_penalty": "0.6"}, "length_penalty='0.6'"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    model = StepTableModel.random(0, max_length=3, vocab_size=4)
    with pytest.raises(ValueError, match=message):
        run_beam(model, [1, 2], model.initial_state(2), **kwargs)


def test_coverage_penalty_without_alignment_raises():
    model = StepTableModel.random(0, max_length=3, vocab_size=4)
    with pytest.raises(ValueError, match="coverage_penalty=0.5"):
        run_beam(model, [1], model.initial_state(1), coverage_penalty=0.5)

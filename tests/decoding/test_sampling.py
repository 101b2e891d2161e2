"""Tests of sample: seeds, filtering, scores, and frequencies over many draws."""

import doctest

import numpy as np
import pytest
from decoding_helpers import MemoryModel, StepTableModel, jit
from keras import ops

from keras_rnnattn.decoding import greedy_search, sample, sampling

END = 0


def numpy_filtered_log_probs(logits, temperature=1.0, top_k=None, top_p=None):
    """The distribution `sample` documents, in NumPy (float64), for one row."""
    z = np.asarray(logits, "float64") / temperature
    if top_k is not None:
        kth = np.sort(z)[::-1][min(top_k, z.size) - 1]
        z = np.where(z >= kth, z, -np.inf)
    if top_p is not None:
        probs = np.exp(z - z.max())
        probs /= probs.sum()
        order = np.argsort(-z, kind="stable")
        mass_before = np.cumsum(probs[order]) - probs[order]
        # A test case must not sit on the boundary, where float32 could go either way.
        assert np.all(np.abs(mass_before - top_p) > 1e-3), (mass_before, top_p)
        smallest_kept = z[order][mass_before < top_p].min()
        z = np.where(z >= smallest_kept, z, -np.inf)
    return z - np.log(np.sum(np.exp(z - z.max()))) - z.max()


def run_sample(model, starts, state, max_length, **kwargs):
    tokens, scores = sample(
        model.next_fn, state, np.asarray(starts), END, max_length, **kwargs
    )
    return ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)


def memory_model():
    return MemoryModel.random(5, batch_size=12, max_length=6, vocab_size=6)


def test_same_seed_gives_same_tokens_other_seed_other_tokens():
    model = memory_model()
    starts = np.arange(12) % 5 + 1
    first = run_sample(model, starts, model.initial_state(), 6, seed=3)
    again = run_sample(model, starts, model.initial_state(), 6, seed=3)
    other = run_sample(model, starts, model.initial_state(), 6, seed=4)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], other[0])
    # top_k above the vocabulary size filters nothing.
    unfiltered = run_sample(model, starts, model.initial_state(), 6, seed=3, top_k=100)
    np.testing.assert_array_equal(first[0], unfiltered[0])


def test_top_k_one_and_tiny_top_p_equal_greedy():
    model = memory_model()
    starts = np.arange(12) % 5 + 1
    greedy_tokens, _ = greedy_search(
        model.next_fn, model.initial_state(), starts, END, 6
    )
    greedy_tokens = ops.convert_to_numpy(greedy_tokens)
    for kwargs in [
        {"top_k": 1},
        {"top_k": 1, "temperature": 3.0},
        {"top_p": 1e-6},
    ]:
        tokens, scores = run_sample(
            model, starts, model.initial_state(), 6, seed=1, **kwargs
        )
        np.testing.assert_array_equal(tokens, greedy_tokens)
        # One token left, probability 1: the documented score is 0.
        np.testing.assert_allclose(scores, 0.0, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"temperature": 0.7, "top_k": 3}, {"temperature": 1.5, "top_p": 0.8}],
)
def test_tokens_are_padded_and_scores_are_log_probs_of_the_filtered_distribution(
    kwargs,
):
    model = memory_model()
    starts = np.arange(12) % 5 + 1
    tokens, scores = run_sample(
        model, starts, model.initial_state(), 6, seed=2, **kwargs
    )
    lengths = []
    for b, start in enumerate(starts):
        row = model.row(b)
        prefix, expected = [], 0.0
        for token in tokens[b]:
            log_probs = numpy_filtered_log_probs(row.log_probs(start, prefix), **kwargs)
            assert np.isfinite(log_probs[token])  # never a filtered token
            expected += log_probs[token]
            prefix.append(int(token))
            if token == END:
                break
        # After the first end token, only end tokens.
        np.testing.assert_array_equal(tokens[b, len(prefix) :], END)
        np.testing.assert_allclose(scores[b], expected, rtol=1e-4, atol=1e-4)
        lengths.append(len(prefix))
    assert len(set(lengths)) >= 2  # rows end at different steps


# Step 0 from the start token 1, then step 1 from the first token.
FIRST = np.array([0.1, 0.4, 0.25, 0.15, 0.1])
SECOND = np.array(
    [
        [0.6, 0.1, 0.1, 0.1, 0.1],
        [0.3, 0.05, 0.35, 0.2, 0.1],
        [0.05, 0.45, 0.1, 0.2, 0.2],
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.1, 0.15, 0.05, 0.3, 0.4],
    ]
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"temperature": 0.5, "top_k": 3},
        {"temperature": 1.3, "top_p": 0.7},
        {"top_k": 4, "top_p": 0.75},
    ],
)
def test_frequencies_match_the_distribution(kwargs):
    n = 4000
    table = np.log(np.stack([np.tile(FIRST, (5, 1)), SECOND]))  # (2, V, V)
    model = StepTableModel(table)
    tokens, _ = run_sample(
        model, np.ones(n, int), model.initial_state(n), 2, seed=0, **kwargs
    )

    first = np.exp(numpy_filtered_log_probs(np.log(FIRST), **kwargs))
    second = np.stack(
        [np.exp(numpy_filtered_log_probs(np.log(p), **kwargs)) for p in SECOND]
    )
    joint = first[:, None] * second  # (V, V): P(y1, y2), y1 not the end
    joint[END] = 0.0
    joint[END, END] = first[END]  # the end token is followed by end tokens
    counts = np.zeros((5, 5))
    np.add.at(counts, (tokens[:, 0], tokens[:, 1]), 1)
    frequencies = counts / n
    # Loose: 5 standard deviations of a binomial frequency, plus a little.
    tolerance = 5 * np.sqrt(joint * (1 - joint) / n) + 2e-3
    assert np.all(np.abs(frequencies - joint) <= tolerance), (frequencies, joint)
    assert np.all(counts[joint == 0] == 0)  # filtered tokens are never drawn


def test_jit_equals_eager():
    model = memory_model()
    starts = (np.arange(12) % 5 + 1).astype("int32")

    def decode(start_ids, state):
        return sample(
            model.next_fn, state, start_ids, END, 6, temperature=0.8, top_p=0.9, seed=5
        )

    eager = decode(starts, model.initial_state())
    compiled = jit(decode)(ops.convert_to_tensor(starts), model.initial_state())
    np.testing.assert_array_equal(
        ops.convert_to_numpy(compiled[0]), ops.convert_to_numpy(eager[0])
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(compiled[1]), ops.convert_to_numpy(eager[1]), rtol=1e-5
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"temperature": 0.0}, "temperature=0.0"),
        ({"temperature": -1.0}, "temperature=-1.0"),
        ({"top_p": 0.0}, "top_p=0.0"),
        ({"top_p": 1.5}, "top_p=1.5"),
        ({"top_k": 0}, "top_k=0"),
        ({"top_k": 2.5}, "top_k=2.5"),
        ({"max_length": 0}, "max_length=0"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    model = StepTableModel.random(0, max_length=3, vocab_size=4)
    arguments = {"end_id": END, "max_length": 3, **kwargs}
    with pytest.raises(ValueError, match=message):
        sample(model.next_fn, model.initial_state(2), np.array([1, 2]), **arguments)
    if "max_length" in kwargs:
        return
    # The sampler with given uniforms (what exports and compiled models run)
    # checks the same arguments.
    del arguments["max_length"]
    uniforms = np.full((3, 2), 0.5, "float32")
    with pytest.raises(ValueError, match=message):
        sampling.sample_with_uniforms(
            model.next_fn,
            model.initial_state(2),
            np.array([1, 2]),
            **arguments,
            uniforms=uniforms,
        )


def test_docstring_example_runs():
    result = doctest.testmod(sampling)
    assert result.attempted > 0 and result.failed == 0

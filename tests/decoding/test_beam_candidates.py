"""A beam step's best continuations from the logits' best chunks, against every
score written out and sorted in NumPy."""

import keras
import numpy as np
import pytest
from decoding_helpers import MemoryModel, jit
from keras import ops

from keras_rnnattn._backend.decoding.loops import step_wrapper
from keras_rnnattn.decoding import _beam_candidates, beam_search
from keras_rnnattn.decoding._beam_candidates import best_candidates

TORCH = keras.backend.backend() == "torch"


def compiled(fn):
    """`fn` compiled as a decoding step is: `jit` on JAX and TensorFlow; on torch
    traced by Dynamo as one graph (eager torch takes the written-out scores)."""
    if not TORCH:
        return jit(fn)
    import torch

    return torch.compile(fn, fullgraph=True, backend="eager")


def numpy_scores(logits, alive):
    """Every continuation's score `(B, K * V)`, the log-softmax's formula in float32."""
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    b, k = alive.shape
    return (alive[:, :, None] + log_probs.reshape(b, k, -1)).reshape(b, -1)


def run(logits, alive, num_candidates, chunk_size=_beam_candidates.CHUNK_SIZE):
    fn = compiled(lambda x, a: best_candidates(x, a, num_candidates, chunk_size))
    scores, ids = fn(ops.convert_to_tensor(logits), ops.convert_to_tensor(alive))
    return ops.convert_to_numpy(scores), ops.convert_to_numpy(ids)


@pytest.mark.parametrize(
    "beam_size, vocab_size, dead",
    [(4, 1000, 0), (4, 1024, 3), (1, 3000, 0), (8, 1100, 5)],
    ids=["short-last-chunk", "whole-chunks-first-step", "one-beam", "beam-8"],
)
def test_the_best_continuations_are_those_of_every_score_sorted(
    beam_size, vocab_size, dead
):
    # `dead` beams of each row at -inf, as at the first step, where one beam
    # is alive and the others empty.
    rng = np.random.default_rng(vocab_size)
    batch_size, candidates = 3, 2 * beam_size
    assert beam_size * -(-vocab_size // 128) >= 4 * candidates  # chunks taken
    logits = rng.normal(scale=3.0, size=(batch_size * beam_size, vocab_size))
    logits = logits.astype("float32")
    alive = np.log(rng.dirichlet(np.ones(beam_size), size=batch_size))
    alive[:, beam_size - dead :] = -np.inf
    alive = alive.astype("float32")
    scores, ids = run(logits, alive, candidates)

    every = numpy_scores(logits, alive)
    want = np.argsort(-every, axis=-1, kind="stable")[:, :candidates]
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_allclose(
        scores, np.take_along_axis(every, want, 1), rtol=1e-6, atol=1e-6
    )


def test_ties_go_where_top_k_puts_them():
    # Logits of three values, alike for the 4 beams of a row, and a larger one
    # late in the row: the chunks chosen first are not the row's first, and
    # the candidates tie among themselves (4 at the larger value, 4 at 2).
    # JAX and TensorFlow put the lower index first; torch's topk orders ties
    # freely, so there only the scores and that each id holds its score count.
    rng = np.random.default_rng(1)
    beam_size, vocab_size, candidates = 4, 700, 8
    rows = rng.integers(0, 3, size=(2, 1, vocab_size)).astype("float32")
    rows[:, :, 650] = 5.0
    logits = np.tile(rows, (1, beam_size, 1)).reshape(-1, vocab_size)
    alive = np.zeros((2, beam_size), "float32")
    scores, ids = run(logits, alive, candidates, chunk_size=16)

    every = numpy_scores(logits, alive)
    want = np.argsort(-every, axis=-1, kind="stable")[:, :candidates]
    np.testing.assert_allclose(scores, np.take_along_axis(every, want, 1), atol=1e-6)
    if TORCH:
        np.testing.assert_allclose(np.take_along_axis(every, ids, 1), scores, atol=1e-6)
        assert all(len(set(row)) == candidates for row in ids.tolist())
    else:
        np.testing.assert_array_equal(ids, want)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="a jaxpr")
def test_the_scores_of_every_continuation_are_not_sorted():
    import jax

    logits = np.zeros((2 * 4, 4000), "float32")
    alive = np.zeros((2, 4), "float32")
    jaxpr = jax.make_jaxpr(lambda x, a: best_candidates(x, a, 8))(logits, alive)
    sorted_shapes = [
        tuple(eqn.invars[0].aval.shape)
        for eqn in jaxpr.jaxpr.eqns
        if eqn.primitive.name == "top_k"
    ]
    # The best chunks of the row's 4 x 32, then the scores of 8 chunks of 128.
    assert sorted_shapes == [(2, 128), (2, 1024)]


def test_a_small_vocabulary_writes_every_score_out():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2 * 4, 50)).astype("float32")
    alive = np.log(rng.dirichlet(np.ones(4), size=2)).astype("float32")
    scores, ids = run(logits, alive, 8)
    every = numpy_scores(logits, alive)
    np.testing.assert_array_equal(ids, np.argsort(-every, -1, kind="stable")[:, :8])


@pytest.mark.parametrize("batch_sizes", [(3,), (3, 5)] if TORCH else [(3,)])
def test_beam_search_finds_what_it_found_from_every_score(monkeypatch, batch_sizes):
    # A model of 1,000 tokens: its beam steps take the chunks. The same search
    # with every score written out (the path of small vocabularies) returns the
    # same sequences and scores. On torch the steps are traced by Dynamo (a
    # second batch size with the batch axis dynamic), as `jit_compile` runs them.
    def search(model, starts):
        def fn(starts, memory):
            state = model.initial_state()
            state["memory"] = memory
            return beam_search(
                model.next_fn,
                state,
                starts,
                end_id=0,
                max_length=model.max_length,
                beam_size=4,
                num_return_sequences=2,
            )

        args = ops.convert_to_tensor(starts), ops.convert_to_tensor(model.memory)
        if TORCH:
            import torch

            def compile_step(body):
                return torch.compile(body, fullgraph=True, backend="eager")

            with step_wrapper(compile_step):
                tokens, scores = fn(*args)
        else:
            tokens, scores = jit(fn)(*args)
        return ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)

    for batch_size in batch_sizes:
        model = MemoryModel.random(batch_size, batch_size, 6, 1000)
        for b in range(batch_size):  # row b likely ends at step 1 + b % 4
            model.memory[b, 1 + b % 4, 0] = 8.0
        starts = np.arange(1, batch_size + 1, dtype="int32")
        tokens, scores = search(model, starts)
        with monkeypatch.context() as patch:
            patch.setattr(_beam_candidates, "MIN_CHUNKS_PER_CANDIDATE", 10**9)
            if TORCH:
                import torch

                torch._dynamo.reset()
            want_tokens, want_scores = search(model, starts)
        np.testing.assert_array_equal(tokens, want_tokens)
        np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-5)
        assert len({int(np.sum(row != 0)) for row in tokens[:, 0]}) >= 2


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TFLite")
def test_converts_to_tflite_builtins_with_a_dynamic_batch():
    # An exported beam search of a large vocabulary runs these ops in LiteRT.
    tf = pytest.importorskip("tensorflow")
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(3 * 4, 1000)).astype("float32")
    alive = np.log(rng.dirichlet(np.ones(4), size=3)).astype("float32")
    specs = [tf.TensorSpec((None, 1000)), tf.TensorSpec((None, 4))]
    graph = tf.function(lambda x, a: best_candidates(x, a, 8), input_signature=specs)
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [graph.get_concrete_function()], graph
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    interpreter = litert.Interpreter(model_content=converter.convert())
    # LiteRT keeps no input order: each input is known by its last axis.
    by_size = {value.shape[-1]: value for value in (logits, alive)}
    inputs = [
        (d["index"], by_size[d["shape"][-1]]) for d in interpreter.get_input_details()
    ]
    for index, value in inputs:
        interpreter.resize_tensor_input(index, value.shape)
    interpreter.allocate_tensors()
    for index, value in inputs:
        interpreter.set_tensor(index, value)
    interpreter.invoke()
    outputs = [
        interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()
    ]
    (ids,) = [x for x in outputs if x.dtype == np.int32]
    every = numpy_scores(logits, alive)
    np.testing.assert_array_equal(ids, np.argsort(-every, -1, kind="stable")[:, :8])

"""Torch on the CPU: a compiled decoding loop's steps run as one
`while_loop` over the step's graph (with inductor under `jit_compile=True`:
`test_torch_steps.py::test_jit_compile_compiles_each_decoding_step_once`)."""

import functools

import keras
import numpy as np
import pytest

from keras_rnnattn._backend.decoding import loops, whole_loop
from keras_rnnattn._backend.decoding.loops import decoding_loop, step_wrapper
from keras_rnnattn.models import Translator
from keras_rnnattn.text import WordTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's decoding loop"
)


class LoopCompiler:
    """A loop compiler that runs what it is given as it is (the `while_loop`
    in Python, each step's graph op by op) and records each graph."""

    def __init__(self):
        self.loops = 0
        self.steps = 0

    def __call__(self, gm, example_inputs):
        import torch

        targets = [node.target for node in gm.graph.nodes]
        if torch.ops.higher_order.while_loop in targets:
            self.loops += 1
        else:
            self.steps += 1
        return gm


def translators():
    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    models = []
    for seed, units, attention in ((0, 8, "bahdanau"), (1, 12, "luong_general")):
        keras.utils.set_random_seed(seed)
        models.append(
            Translator(
                tokenizer,
                tokenizer,
                embedding_dim=8,
                units=units,
                attention=attention,
            )
        )
    return models


def test_a_loops_steps_run_as_one_while_loop():
    # Two models (other weights, sizes and attention), greedy and beam search
    # with alignments, called in turn: each gives its eager tokens, scores and
    # alignments, and each search's loop graph is built once (Dynamo's
    # "eager" backend for the steps, the loop run as built: the same graphs
    # and guards as `jit_compile=True`, without generating code).
    import torch

    first, second = translators()
    source = first.encode_source(["a b c", "d e f g h", "h g"])
    greedy = dict(beam_size=1, return_alignments=True)
    beam = dict(beam_size=3, length_penalty=1.0, return_alignments=True)
    runs = [(first, greedy), (second, beam), (first, greedy)]
    want = [model.generate_ids(source, max_length=7, **s) for model, s in runs]
    torch._dynamo.reset()
    compiler = LoopCompiler()
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, loops._differentiating_guards_only, compiler):
        for (model, search), expected in zip(runs, want):
            got = model.generate_ids(source, max_length=7, **search)
            np.testing.assert_array_equal(got[0], expected[0])
            for value, reference in zip(got[1:], expected[1:]):
                np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)
    # One loop for each of the first two runs; the third reuses the first's.
    # No step is compiled alone: the first step runs in the loop too.
    assert compiler.loops == 2
    assert compiler.steps == 0


def test_tensors_a_step_passes_through_are_not_carried():
    # A step that returns some tensors as they came, one it reads and one it
    # does not: they are passed to every step, the others carried, in one
    # loop, to the step-by-step result.
    import torch

    torch._dynamo.reset()
    compiler = LoopCompiler()

    def cond(i, memory, total, unread):
        return i < 4

    def body(i, memory, total, unread):
        return i + 1, memory, total + memory * keras.ops.cast(i, "float32"), unread

    memory = keras.ops.array([1.0, 2.0])
    unread = keras.ops.array([7, 8, 9])
    start = (keras.ops.array(0), memory, keras.ops.zeros((2,)), unread)
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, None, compiler):
        i, got_memory, total, got_unread = decoding_loop(cond, body, start, 10)
    assert int(i) == 4
    np.testing.assert_array_equal(total, [6.0, 12.0])  # (0 + 1 + 2 + 3) * memory
    np.testing.assert_array_equal(got_memory, [1.0, 2.0])
    np.testing.assert_array_equal(got_unread, [7, 8, 9])
    assert compiler.loops == 1 and compiler.steps == 0


def test_a_loop_runs_its_steps_in_the_loop_not_one_call_each():
    # The loop is one call of the compiled caller, whatever its length; the
    # condition is the body's: it stops where the step-by-step loop stops.
    import torch

    torch._dynamo.reset()
    calls = []
    compiler = LoopCompiler()

    def counting(gm, example_inputs):
        run = compiler(gm, example_inputs)

        def call(*args):
            calls.append(1)
            return run(*args)

        return call

    def cond(i, total):
        return i < 7

    def body(i, total):
        return i + 1, total + i

    start = (keras.ops.array(0), keras.ops.array(0))
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, None, counting):
        i, total = decoding_loop(cond, body, start, 10)
    assert (int(i), int(total)) == (7, 21)
    assert len(calls) == 1 and compiler.loops == 1


def test_a_step_whose_graph_a_loop_cannot_carry_runs_step_by_step():
    # A step that returns a tensor it received in another place: Dynamo's
    # graph does not output it (it is one of the graph's inputs), so the
    # outputs are not the carried tensors; the backend compiles the step
    # alone, and the loop goes on one call a step, to the same result.
    import torch

    torch._dynamo.reset()
    compiler = LoopCompiler()

    def cond(i, a, b):
        return i < 5

    def body(i, a, b):
        return i + 1, b, a + b

    start = (keras.ops.array(0), keras.ops.array(1.0), keras.ops.array(1.0))
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, None, compiler):
        i, a, b = decoding_loop(cond, body, start, 10)
    assert (int(i), float(a), float(b)) == (5, 8.0, 13.0)
    assert compiler.loops == 0 and compiler.steps == 1


def test_a_step_dynamo_cannot_trace_whole_runs_step_by_step():
    # A Python branch on a tensor's value inside the step is a graph break,
    # which the loop's `fullgraph=True` refuses: that body's loops run step
    # by step, to the same result, and are not traced again.
    import torch

    torch._dynamo.reset()
    compiler = LoopCompiler()

    def cond(i, total):
        return i < 4

    def body(i, total):
        if bool(total > 100.0):  # a read back to the host
            total = total * 0.0
        return i + 1, total + 2.0

    start = (keras.ops.array(0), keras.ops.array(0.0))
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, None, compiler):
        for _ in range(2):
            i, total = decoding_loop(cond, body, start, 10)
            assert (int(i), float(total)) == (4, 8.0)
    assert compiler.loops == 0
    assert len([key for key in whole_loop._REFUSED if key[0] is body.__code__]) == 1


def test_a_models_second_compiled_call_compiles_nothing():
    # Keras sets a layer's `_parent_path` at the layer's first call. An
    # encoder traced before its dropout layer was ever called (a model just
    # loaded, dropout > 0) was guarded on it being unset, so the second call
    # compiled the encoder again (3.6 s for the Ding preset). Tokens as eager.
    import torch
    from torch._dynamo.utils import counters

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    model = Translator(tokenizer, tokenizer, embedding_dim=8, units=8, dropout=0.2)
    source = model.encode_source(["a b c", "d e f g h", "h g"])
    torch._dynamo.reset()
    counters.clear()
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, None, LoopCompiler()):
        once = model.generate_ids(source, max_length=7)
        graphs = counters["stats"]["unique_graphs"]
        again = model.generate_ids(source, max_length=7)
    assert graphs > 0 and counters["stats"]["unique_graphs"] == graphs
    np.testing.assert_array_equal(once[0], again[0])
    np.testing.assert_array_equal(once[0], model.generate_ids(source, max_length=7)[0])

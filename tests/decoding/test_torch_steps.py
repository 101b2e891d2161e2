"""The torch decoding loops read nothing back from the device inside a step."""

import functools

import keras
import numpy as np
import pytest

from keras_rnnattn._backend.decoding import whole_loop
from keras_rnnattn._backend.decoding.loops import step_wrapper
from keras_rnnattn.models import Translator
from keras_rnnattn.text import WordTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's decoding loop"
)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_a_translators_decoding_step_compiles_as_one_graph(beam_size):
    # `fullgraph=True` fails on any graph break, which a read of a tensor's
    # value on the host (a Python `if` on it, `.item()`, a copy to NumPy)
    # causes: the step of greedy and beam search has none. Dynamo's "eager"
    # backend traces the graph without generating code (seconds on a CPU).
    import torch

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=8, attention="bahdanau"
    )
    source = model.encode_source(["a b c", "d e f g h"])
    want, want_scores = model.generate_ids(source, beam_size=beam_size)
    torch._dynamo.reset()
    compiled = []

    def compile_step(body):
        compiled.append(body)
        return torch.compile(body, fullgraph=True, dynamic=False, backend="eager")

    with step_wrapper(compile_step):
        got, scores = model.generate_ids(source, beam_size=beam_size)
    # The encoder (`compiled_stage`), beam search's first call of `next_fn`
    # (for the vocabulary size), then the step: each one graph.
    first = ["first_step"] if beam_size > 1 else []
    names = ["initial_state", *first, "step_and_cond"]
    assert [fn.__name__ for fn in compiled] == names
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(got), keras.ops.convert_to_numpy(want)
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(scores),
        keras.ops.convert_to_numpy(want_scores),
        rtol=1e-6,
    )


def test_jit_compile_compiles_each_decoding_step_once(monkeypatch):
    # `compile(jit_compile=True)` (Keras's torch.compile switch) compiles the
    # step of each search with inductor on the first call and reuses it: a
    # later call, and a batch of a size compiled before, compile nothing, and
    # wrap nothing in `torch.compile` anew (1.3 ms a wrap). Tokens as eager.
    import torch
    from torch._dynamo.utils import counters

    wraps = []
    wrap = torch.compile

    def counted(*args, **kwargs):
        wraps.append(args)
        return wrap(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", counted)

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=8, attention="bahdanau"
    )
    source = model.encode_source(["a b c", "d e f g h", "h g"])
    want = {beam: model.generate_ids(source, beam_size=beam) for beam in (1, 4)}
    torch._dynamo.reset()
    counters.clear()
    model.generate_ids(source, beam_size=1)
    assert counters["stats"]["unique_graphs"] == 0  # eager without jit_compile

    model.compile(jit_compile=True)
    for beam in (1, 4):
        tokens, scores = model.generate_ids(source, beam_size=beam)
        np.testing.assert_array_equal(tokens, want[beam][0])
        np.testing.assert_allclose(scores, want[beam][1], rtol=1e-5, atol=1e-6)
    # The encoder (`compiled_stage`), beam search's first call of `next_fn`,
    # and on the CPU each search's loop (`whole_loop`), compiled by inductor
    # as a `while_loop`: the steps are not compiled alone.
    assert counters["stats"]["unique_graphs"] == 4
    loops = [key for key in whole_loop._CALLERS if key[2] is whole_loop.compile_loop]
    refused = [key for key in whole_loop._REFUSED if key[2] is whole_loop.compile_loop]
    assert len(loops) == 2 and not refused
    # The callers of the encoder, of beam search's first `next_fn`, of each
    # search's step (made, not called), and of the two loops; none where an
    # earlier test made them.
    assert len(wraps) <= 5
    wrapped = len(wraps)
    model.generate_ids(source[:2], beam_size=1)  # another size: compiles
    graphs = counters["stats"]["unique_graphs"]
    for beam in (1, 4):
        model.generate_ids(source, beam_size=beam)
    tokens, _ = model.generate_ids(source[1:], beam_size=1)
    assert counters["stats"]["unique_graphs"] == graphs
    assert len(wraps) == wrapped
    np.testing.assert_array_equal(tokens, want[1][0][1:])

    model.compile(jit_compile=False)
    model.generate_ids(source, beam_size=4)
    assert counters["stats"]["unique_graphs"] == graphs


def test_a_compiling_call_collects_the_garbage_that_compiling_left():
    # Compiling a step leaves many long-lived Python objects, and Python's
    # full collection over them ran in a later call (0.4-0.5 s in a greedy
    # call of 0.07 s at decode.py's size). The call that compiled collects
    # them before it returns; a call that compiles nothing collects nothing.
    # Automatic collection is off here, so every full collection seen is one
    # the decoding call ran itself.
    import gc

    import torch

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(tokenizer, tokenizer, embedding_dim=8, units=8)
    model.compile(jit_compile=True)
    source = model.encode_source(["a b c", "d e f g h"])
    torch._dynamo.reset()
    full = []

    def seen(phase, info):
        if phase == "stop" and info["generation"] == 2:
            full.append(info)

    enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(seen)
    try:
        model.generate_ids(source, beam_size=1)  # compiles the encoder and step
        assert len(full) == 1
        model.generate_ids(source, beam_size=1)  # compiles nothing
        assert len(full) == 1
    finally:
        gc.callbacks.remove(seen)
        if enabled:
            gc.enable()


def test_a_search_in_a_thread_without_layer_calls_compiles_once():
    # Keras creates its layer call context at a thread's first layer call. A
    # step traced before it was guarded on its absence, so the second search
    # compiled the encoder again (1.9 s with inductor at decode.py's size).
    import threading

    import torch
    from torch._dynamo.utils import counters

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    model = Translator(tokenizer, tokenizer, embedding_dim=8, units=8)
    source = model.encode_source(["a b c", "d e f g h"])
    torch._dynamo.reset()
    counters.clear()
    graphs, errors = [], []

    def compile_step(body):
        return torch.compile(body, fullgraph=True, dynamic=False, backend="eager")

    def search_twice():  # a new thread: no layer has run in it
        try:
            with step_wrapper(compile_step):
                for _ in range(2):
                    model.generate_ids(source, beam_size=1)
                    graphs.append(counters["stats"]["unique_graphs"])
        except Exception as error:  # shown by the assertion below
            errors.append(error)

    thread = threading.Thread(target=search_twice)
    thread.start()
    thread.join()
    assert not errors, errors
    assert graphs == [2, 2]  # the encoder and the step, once each


def test_a_translators_sampling_step_compiles_as_one_graph():
    # Sampling with top-k and nucleus filtering: no graph break either (Keras's
    # `ops.max`/`ops.min` on torch would make one), the same draws.
    import torch

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=8, attention="bahdanau"
    )
    model.compile(sampler={"method": "sample", "top_k": 4, "top_p": 0.9})
    texts = ["a b c", "d e f g h"]
    keras.utils.set_random_seed(1)
    want = model.generate(texts)
    torch._dynamo.reset()
    compiled = []

    def compile_step(body):
        compiled.append(body)
        return torch.compile(body, fullgraph=True, dynamic=False, backend="eager")

    keras.utils.set_random_seed(1)
    with step_wrapper(compile_step):
        got = model.generate(texts)
    # The encoder (`compiled_stage`), then the step: each one graph.
    assert [fn.__name__ for fn in compiled] == ["initial_state", "step_and_cond"]
    assert got == want


def test_steps_after_the_second_check_only_the_guards_that_tell_versions_apart():
    # From the third step a compiled loop runs under Dynamo's
    # `skip_guard_eval_unsafe` (its inputs are the last step's outputs, alike in
    # all a guard reads); the stance is back as it was after the loop, also
    # when the loop stops early.
    import torch

    from keras_rnnattn._backend.decoding import loops

    def skipping():
        return torch._dynamo.eval_frame._stance.skip_guard_eval_unsafe

    seen = []

    def record(body):
        def step(*loop_vars):
            seen.append(skipping())
            return body(*loop_vars)

        return step

    def cond(i, total):
        return i < 5

    def body(i, total):
        return i + 1, total + i

    start = (keras.ops.array(0), keras.ops.array(0))
    with step_wrapper(record, loops._differentiating_guards_only):
        _, total = loops.decoding_loop(cond, body, start, max_steps=8)
    assert int(total) == 10
    assert seen == [False] * loops.GUARDED_STEPS + [True] * (5 - loops.GUARDED_STEPS)
    assert not skipping()
    seen.clear()
    with torch.compiler.set_stance("force_eager"):  # another stance: left alone
        with step_wrapper(record, loops._differentiating_guards_only):
            loops.decoding_loop(cond, body, start, max_steps=8)
    assert seen == [False] * 5


def test_a_wrapped_step_computes_the_next_steps_condition():
    # With a step wrapper (a compiled step), `cond` runs once before the loop
    # and then inside each wrapped step, on that step's outputs: no eager call
    # between two steps. The loop stops where `while_loop` does.
    from keras_rnnattn._backend.decoding import loops

    inside, calls = [False], []

    def record(body):
        def step(*loop_vars):
            inside[0] = True
            try:
                return body(*loop_vars)
            finally:
                inside[0] = False

        return step

    def cond(i, total):
        calls.append((inside[0], int(i)))
        return i < 4

    def body(i, total):
        return i + 1, total + i

    start = (keras.ops.array(0), keras.ops.array(0))
    with step_wrapper(record):
        i, total = loops.decoding_loop(cond, body, start, max_steps=8)
    assert (int(i), int(total)) == (4, 6)
    assert calls == [(False, 0)] + [(True, n) for n in range(1, 5)]


def test_compiled_steps_of_several_models_and_searches_keep_their_own_results():
    # The step's code is shared by every model and search setting; Dynamo keeps
    # a compiled version for each, and from the third step checks only the
    # guards that tell them apart. Two models (other weights, other sizes) and
    # beam search with two length penalties, called in turn: each gives its
    # eager tokens and scores. (Dynamo's "eager" backend: the same guards as
    # `jit_compile=True`'s inductor, without generating code.)
    import torch

    from keras_rnnattn._backend.decoding import loops

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    models = []
    for seed, units in ((0, 8), (1, 12)):
        keras.utils.set_random_seed(seed)
        models.append(
            Translator(
                tokenizer, tokenizer, embedding_dim=8, units=units, attention="bahdanau"
            )
        )
    source = models[0].encode_source(["a b c", "d e f g h", "h g"])
    settings = [dict(length_penalty=0.0), dict(length_penalty=1.0)]
    runs = [(m, s) for s in settings for m in models] + [(models[0], settings[0])]
    want = [model.generate_ids(source, 3, max_length=9, **s) for model, s in runs]
    torch._dynamo.reset()

    # The callers `jit_compile=True` wraps the encoder and steps in, made once.
    compile_step = functools.partial(loops._compiled_caller, backend="eager")
    with step_wrapper(compile_step, loops._differentiating_guards_only):
        for (model, setting), (tokens, scores) in zip(runs, want):
            got, got_scores = model.generate_ids(source, 3, max_length=9, **setting)
            np.testing.assert_array_equal(got, tokens)
            np.testing.assert_allclose(got_scores, scores, rtol=1e-5, atol=1e-6)


def test_the_fast_cpu_kernel_settings_hold_only_inside_compiled_steps():
    # Inductor's tanh as exp and a division, and contracted multiply-adds,
    # for the decoding steps only: the settings are restored after the block,
    # so the user's own `torch.compile` calls keep inductor's defaults.
    import torch._inductor.config as inductor

    from keras_rnnattn._backend.decoding.loops import compiled_steps

    keys = [
        key
        for key in ("use_decompose_tanh", "enable_floating_point_contract_flag")
        if hasattr(inductor.cpp, key)
    ]
    if not keys:
        pytest.skip("this torch's inductor has neither setting")
    before = {key: getattr(inductor.cpp, key) for key in keys}
    with compiled_steps(True):
        inside = {key: getattr(inductor.cpp, key) for key in keys}
    after = {key: getattr(inductor.cpp, key) for key in keys}
    want = {"use_decompose_tanh": True, "enable_floating_point_contract_flag": "fast"}
    assert inside == {key: want[key] for key in keys}
    assert after == before
    assert before != inside
    with compiled_steps(False):
        assert {key: getattr(inductor.cpp, key) for key in keys} == before

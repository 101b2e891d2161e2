"""A torch decoding loop's blocks of steps replayed from one capture
(`captured_loop`): on an NVIDIA GPU a CUDA graph, which `scripts/gpu_check.py`
checks there; here a capture that calls the block again, for the loop around it."""

import functools

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn._backend.decoding import loops
from keras_rnnattn._backend.decoding.loops import decoding_loop, step_wrapper
from keras_rnnattn._backend.experimental import captured_loop
from keras_rnnattn.models import Translator
from keras_rnnattn.text import WordTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's decoding loop"
)


class CallAgain:
    """A capture without a device graph: it records nothing, and each replay
    calls the block (where a CUDA graph's replay runs the kernels the
    block launched when captured)."""

    def __init__(self):
        self.captures = 0
        self.replays = 0

    def __call__(self, block, warm_up):
        warm_up()
        self.captures += 1

        def replay():
            self.replays += 1
            return block()

        return replay


@pytest.fixture
def accelerator_interval(monkeypatch):
    # The loops read their condition every 3 steps, as on an accelerator
    # every `STOP_CHECK_EVERY`; the CPU's is every step.
    monkeypatch.setattr(loops, "_interval_of", lambda leaves: 3)
    monkeypatch.setattr(captured_loop, "_REFUSED", set())


LIMITS = (1, 8, 11)


def counting_step(steps, total, fixed, fixed_again):
    """Rows that stop after `LIMITS` steps; `fixed` comes twice, passed through."""
    import torch

    limits = torch.tensor(LIMITS)
    go = steps < limits
    steps = torch.where(go, steps + 1, steps)
    total = torch.where(go, total + steps * fixed, total)
    return (steps, total, fixed, fixed), (steps < limits).any()


def counting_leaves():
    import torch

    fixed = torch.full((3,), 2)
    return (
        torch.zeros(3, dtype=torch.int64),
        torch.zeros(3, dtype=torch.int64),
        fixed,
        fixed,
    )


def steps_of(leaves, count):
    """`counting_step` `count` times, one after the other."""
    for _ in range(count):
        leaves, _ = counting_step(*leaves)
    return [leaf.numpy() for leaf in leaves]


def run_counting_loop(max_steps, capture, leaves=None):
    import torch

    return captured_loop.run_blocks(
        counting_step,
        leaves or counting_leaves(),
        torch.tensor(True),
        3,
        max_steps,
        3,
        "counting",
        capture,
    )


def test_blocks_run_until_the_condition_turns_false(accelerator_interval):
    capture = CallAgain()
    start = counting_leaves()
    leaves, go_on, step = run_counting_loop(30, capture, start)
    # From step 3 the blocks of 3 steps run until the last row has run 11
    # steps: at the end of the fourth block (12 steps) the condition is False.
    assert step == 3 + 12 and not bool(go_on)
    assert (capture.captures, capture.replays) == (1, 4)
    want = steps_of(counting_leaves(), 12)
    for got, expected in zip(leaves, want):
        np.testing.assert_array_equal(got.numpy(), expected)
    np.testing.assert_array_equal(leaves[0].numpy(), LIMITS)
    # The input tensors are as they came: the blocks ran on copies.
    for leaf in start[:2]:
        np.testing.assert_array_equal(leaf.numpy(), [0, 0, 0])


def test_the_steps_that_fill_no_block_are_left_to_the_caller(accelerator_interval):
    capture = CallAgain()
    # Two blocks of 3 fit between step 3 and 10: steps 9 and on are the caller's.
    leaves, go_on, step = run_counting_loop(10, capture)
    assert step == 9 and bool(go_on)
    np.testing.assert_array_equal(leaves[1].numpy(), steps_of(counting_leaves(), 6)[1])
    # Fewer than `MIN_BLOCKS` blocks: nothing captured.
    leaves, _, step = run_counting_loop(8, capture)
    assert step == 3 and capture.captures == 1


def test_a_step_that_returns_its_inputs_in_other_places(accelerator_interval):
    # The step swaps two tensors (returning views of its inputs) and counts:
    # each block's last step writes each into the other's place.
    import torch

    def step(a, b, count):
        return (b.view(-1), a.view(-1), count + 1), count < 100

    a, b = torch.arange(3.0), torch.arange(3.0) + 10
    capture = CallAgain()
    (x, y, count), _, step_index = captured_loop.run_blocks(
        step, (a, b, torch.tensor(0)), torch.tensor(True), 3, 12, 3, "swap", capture
    )
    # Three blocks of 3 steps: an odd count of swaps.
    assert step_index == 12 and int(count) == 9
    np.testing.assert_array_equal(x.numpy(), b.numpy())
    np.testing.assert_array_equal(y.numpy(), a.numpy())


def test_a_loop_with_a_value_that_is_not_a_tensor_is_left_to_the_caller(
    accelerator_interval,
):
    import torch

    def step(count, label):
        return (count + 1, label), count < 100

    capture = CallAgain()
    leaves, go_on, step_index = captured_loop.run_blocks(
        step, (torch.tensor(0), "label"), torch.tensor(True), 3, 12, 3, "x", capture
    )
    assert step_index == 3 and int(leaves[0]) == 0 and capture.captures == 0


def test_a_failed_capture_leaves_the_loop_to_the_caller(accelerator_interval):
    def refuse(block, warm_up):
        raise RuntimeError("operation not permitted when stream is capturing")

    leaves, go_on, step = run_counting_loop(30, refuse)
    assert step == 3 and bool(go_on)
    np.testing.assert_array_equal(leaves[0].numpy(), [0, 0, 0])
    assert "counting" in captured_loop._REFUSED
    capture = CallAgain()
    _, _, step = run_counting_loop(30, capture)
    assert step == 3 and capture.captures == 0


@pytest.mark.parametrize("beam_size", [1, 4])
def test_a_translator_decodes_the_same_tokens_from_replayed_blocks(
    accelerator_interval, beam_size
):
    import torch

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=8, attention="bahdanau"
    )
    source = model.encode_source(["a b c", "d e f g h", "h"])
    want, want_scores = model.generate_ids(source, beam_size=beam_size, max_length=14)

    def compile_step(body):
        return torch.compile(body, fullgraph=True, dynamic=False, backend="eager")

    capture = CallAgain()
    runner = functools.partial(captured_loop.run_blocks, capture=capture)
    with step_wrapper(compile_step, loops._differentiating_guards_only, None, runner):
        got, scores = model.generate_ids(source, beam_size=beam_size, max_length=14)
    np.testing.assert_array_equal(ops.convert_to_numpy(got), ops.convert_to_numpy(want))
    np.testing.assert_allclose(
        ops.convert_to_numpy(scores), ops.convert_to_numpy(want_scores), rtol=1e-6
    )
    # An untrained model runs to `max_length`: blocks from step 3 to 12, then
    # steps 12 and 13 one by one.
    assert (capture.captures, capture.replays) == (1, 3)


def test_a_loop_with_blocks_gives_the_results_of_while_loop(accelerator_interval):
    # `decoding_loop`'s toy loop: rows that stop after 1, 3 and 4 of 20 steps.
    limits = ops.convert_to_tensor(np.array([1, 3, 7], "int32"))

    def cond(steps, total):
        return ops.any(steps < limits)

    def body(steps, total):
        go = steps < limits
        return ops.where(go, steps + 1, steps), ops.where(go, total + steps, total)

    capture = CallAgain()
    runner = functools.partial(captured_loop.run_blocks, capture=capture)
    zeros = ops.zeros((3,), "int32")
    with step_wrapper(lambda fn: fn, None, None, runner):
        steps, total = decoding_loop(cond, body, (zeros, zeros), 20)
    np.testing.assert_array_equal(ops.convert_to_numpy(steps), [1, 3, 7])
    np.testing.assert_array_equal(ops.convert_to_numpy(total), [0, 3, 21])
    # Steps 0-2 one by one, the block 3-5 replayed, the block 6-8 replayed,
    # after which the condition is False.
    assert capture.replays == 2

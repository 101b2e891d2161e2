"""Monotonic attention against tensorflow-addons 0.23 itself.

`tests/fixtures/tfa/monotonic.npz` was written by `scripts/tfa_reference.py`
(whose docstring documents every key); tfa is never imported here. Covered:
`ops.safe_cumprod`, `ops.monotonic_attention` in its three modes over several
steps, each step reading the attention the previous one produced, and tfa's
`AttentionWrapper` with `BahdanauMonotonicAttention` and
`LuongMonotonicAttention` (masked memory, every mode) rebuilt as an
`AttentionDecoder` with tfa's weights (`utils.tfa_port.set_tfa_weights`): every
step's output, attention vector and alignments within 1e-5, through the scan
(training) and through `step` (generation).
"""

from pathlib import Path

import numpy as np
import pytest
from keras import ops

from keras_rnnattn.integrations.tfa import set_tfa_weights
from keras_rnnattn.layers import (
    AttentionDecoder,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
)
from keras_rnnattn.ops import monotonic_attention, safe_cumprod

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tfa" / "monotonic.npz"
TOLERANCE = 1e-5


def load(group=None):
    with np.load(FIXTURE) as data:
        arrays = {key: data[key] for key in data.files}
    if group is None:
        return arrays
    prefix = group + "/"
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


def np_(x):
    return ops.convert_to_numpy(x)


def assert_close(got, want, what):
    np.testing.assert_allclose(np_(got), want, atol=TOLERANCE, err_msg=what)


def test_safe_cumprod_matches_tfa():
    data = load("safe_cumprod")
    assert (data["x"] == 0).any() and (data["x"] == 1).any()
    assert_close(safe_cumprod(data["x"], axis=1), data["y"], "inclusive")
    assert_close(
        safe_cumprod(data["x"], axis=1, exclusive=True), data["y_exclusive"], "excl"
    )
    # Along another axis: the same numbers, transposed.
    assert_close(safe_cumprod(data["x"].T, axis=0), data["y"].T, "axis 0")


@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_monotonic_attention_matches_tfa_over_steps(mode):
    data, inputs = load(mode), load("ops")
    p = inputs["hard_p_choose_i"] if mode == "hard" else inputs["p_choose_i"]
    attention = np.eye(p.shape[-1], dtype="float32")[np.zeros(p.shape[0], int)]
    for t in range(p.shape[1]):
        assert_close(attention, data["previous_attention"][:, t], f"read at {t}")
        attention = monotonic_attention(p[:, t], attention, mode)
        assert_close(attention, data["attention"][:, t], f"step {t}")
        if mode != "hard":
            got = monotonic_attention(p[:, t], inputs["previous_random"], mode)
            assert_close(got, data["from_random"][:, t], f"random previous, {t}")
    if mode == "hard":
        assert set(np.unique(data["attention"])) == {0.0, 1.0}


def test_parallel_equals_recursive_except_after_a_certain_choice():
    # The closed form divides by cumprod(1 - p), clipped at 1e-10: after a
    # p_j of exactly 1 the previous attention's mass beyond j is lost
    # (tfa's numbers too), where the recursion keeps it.
    inputs, parallel, recursive = load("ops"), load("parallel"), load("recursive")
    p, previous = inputs["p_choose_i"], inputs["previous_random"]
    for t in (1, 3):  # no p of exactly 1 at these steps
        assert (p[:, t] < 1).all()
        np.testing.assert_allclose(
            np_(monotonic_attention(p[:, t], previous, "parallel")),
            np_(monotonic_attention(p[:, t], previous, "recursive")),
            atol=1e-5,
        )
    assert p[2, 0, 5] == 1.0  # row 2 at step 0 chooses position 5 for sure
    assert parallel["from_random"][2, 0, 6] == 0.0
    assert recursive["from_random"][2, 0, 6] > 0.05  # p_6 · previous_6


# form: (the keras-rnnattn mechanism, tfa's mechanism kind)
FORMS = {
    "bahdanau": (lambda: BahdanauMonotonicAttention(4), "bahdanau_monotonic"),
    "bahdanau_normalized": (
        lambda: BahdanauMonotonicAttention(4, normalize=True),
        "bahdanau_monotonic",
    ),
    "luong": (lambda: LuongMonotonicAttention(), "luong_monotonic"),
    "luong_scaled": (lambda: LuongMonotonicAttention(scale=True), "luong_monotonic"),
    "bahdanau_recursive": (
        lambda: BahdanauMonotonicAttention(4, mode="recursive"),
        "bahdanau_monotonic",
    ),
    "bahdanau_hard": (
        lambda: BahdanauMonotonicAttention(4, normalize=True, mode="hard"),
        "bahdanau_monotonic",
    ),
    "luong_hard": (
        lambda: LuongMonotonicAttention(scale=True, mode="hard"),
        "luong_monotonic",
    ),
}


def as_tfa_port(form, kind):
    """A fixture form as `tfa_wrapper_weights` would have read it from tfa."""
    weights = {
        f"cell/{j}": form[f"cell/{name}"]
        for j, name in enumerate(("kernel", "recurrent_kernel", "bias"))
    }
    weights["mechanism_0/kind"] = np.array(kind)
    for key, value in form.items():
        if key.startswith("mechanism/"):
            weights["mechanism_0/" + key.removeprefix("mechanism/")] = value
    weights["attention_layer_0/0"] = form["attention_layer/kernel"]
    return weights


def build_form(name):
    common, form = load(), load(name)
    make, kind = FORMS[name]
    decoder = AttentionDecoder(
        6,
        cell="lstm",
        attention=make(),
        query="current",
        attention_layer_size=4,
        attention_activation=None,
    )
    decoder.build(common["inputs"].shape, common["memory"].shape)
    set_tfa_weights(decoder, as_tfa_port(form, kind))
    return decoder, form, common


@pytest.mark.parametrize("name", list(FORMS))
def test_attention_wrapper_with_monotonic_mechanisms_matches_tfa(name):
    decoder, form, common = build_form(name)
    lengths = common["memory_sequence_length"]
    mask = np.arange(common["memory"].shape[1])[None, :] < lengths[:, None]
    states = [form["initial_state/h"], form["initial_state/c"]]
    inputs, memory = common["inputs"], common["memory"]
    mechanism = decoder.mechanisms[0]
    assert_close(
        mechanism.initial_alignment(3, memory.shape[1]),
        form["initial_alignments"],
        "initial alignments",
    )
    # The whole sequence: the scan carries the alignment state.
    outputs, alignments = decoder(
        inputs, memory, initial_state=states, memory_mask=mask
    )
    assert_close(outputs, form["outputs"], "outputs")
    assert_close(alignments, form["alignments"], "alignments")
    assert np.all(
        np_(alignments)[~np.broadcast_to(mask[:, None], alignments.shape)] == 0
    )
    # Step by step: the state is tfa's attention and its alignments.
    prepared = decoder.prepare_memory(memory, mask)
    step_states = decoder.get_initial_state(3, states, memory=prepared)
    for t in range(inputs.shape[1]):
        out, step_states, weights = decoder.step(inputs[:, t], step_states, prepared)
        assert_close(out, form["outputs"][:, t], f"step {t} output")
        assert_close(weights, form["alignments"][:, t], f"step {t} alignments")
        assert_close(step_states[-1], form["alignments"][:, t], f"step {t} state")
        assert_close(step_states[-2], form["attentions"][:, t], f"step {t} attention")
    assert_close(step_states[0], form["final_state/h"], "final h")
    assert_close(step_states[1], form["final_state/c"], "final c")


def test_hard_forms_move_and_keep_exact_zeros():
    # The hard fixtures are not degenerate: the alignments move on in some rows
    # and lose their mass past the end in one.
    for name in ("bahdanau_hard", "luong_hard"):
        alignments = load(name)["alignments"]
        assert set(np.unique(alignments)) <= {0.0, 1.0}
        positions = alignments.argmax(-1)
        assert (np.diff(positions, axis=1) > 0).any(), name
    assert (load("bahdanau_hard")["alignments"].sum(-1) == 0).any()


def test_monotonic_weights_need_a_monotonic_mechanism():
    _, form, _ = build_form("luong")
    plain = AttentionDecoder(
        6,
        cell="lstm",
        attention=LuongAttention("general"),
        query="current",
        attention_layer_size=4,
        attention_activation=None,
    )
    plain.build((3, 5, 3), (3, 7, 5))
    weights = as_tfa_port(form, "luong_monotonic")
    with pytest.raises(ValueError, match="build BahdanauMonotonicAttention or"):
        set_tfa_weights(plain, weights)

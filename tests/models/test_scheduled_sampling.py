"""Scheduled sampling (Bengio et al. 2015) in the Translator and its decoding loop."""

import doctest
import os

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.callbacks import ScheduledSampling
from keras_rnnattn.decoding import scheduled_sampling
from keras_rnnattn.models import Translator
from tests.backends import on_one_backend
from tests.models.test_translator import DIGITS, SOURCES, TARGETS, reversal_data, tiny

# XLA where the backend has it: `fit` compiles the loop with `jit_compile=True`
# on JAX and TensorFlow; torch has no XLA and trains eagerly.
JIT = keras.backend.backend() in ("jax", "tensorflow")

# Decoders: input feeding (the scan), Luong without input feeding (the fast
# path when teacher forcing), the lexical model, dropout, no attention.
CONFIGS = {
    "bahdanau": dict(),
    "luong_fast_path": dict(attention="luong_general", input_feeding=False),
    "lexical_lstm": dict(cell="lstm", attention="luong_general", lexical_model=True),
    "no_attention": dict(attention="none"),
}


@pytest.fixture(autouse=True)
def _seed():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield


def np_(x):
    return ops.convert_to_numpy(x)


def pair(config):
    """A model with scheduled sampling and the same model without it."""
    model = tiny(scheduled_sampling=True, **config)
    plain = tiny(**config)
    for a, b in zip(plain.trainable_weights, model.trainable_weights, strict=True):
        a.assign(np_(b))
    return model, plain


@pytest.mark.parametrize("name", CONFIGS)
def test_p0_is_teacher_forcing(name):
    model, plain = pair(CONFIGS[name])
    assert model.sampling_probability is not None and plain.sampling_probability is None
    assert float(np_(model.sampling_probability)) == 0.0
    x, _ = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    want_logits, want_alignments = plain.forward_pass(*x, training=True)
    # p = 0 (the variable): the cond takes teacher forcing's path. A p above 0
    # that no draw falls below runs the sampling loop, feeding gold tokens.
    never = np.full(x[1].shape + (2,), 0.5, "float32")
    runs = [
        model.forward_pass(*x, training=True),
        model.sampled_forward_pass(
            *x, sampling_probability=1e-9, uniforms=never, training=True
        )[:2],
    ]
    for logits, alignments in runs:
        np.testing.assert_allclose(np_(logits), np_(want_logits), atol=1e-5)
        if model.has_attention:
            np.testing.assert_allclose(np_(alignments), np_(want_alignments), atol=1e-5)
        else:
            assert alignments is None


def seed_states(model):
    """The model's random generators' states (the dropout layers' and sampling's)."""
    return [v for v in model.non_trainable_variables if "seed_generator" in v.path]


def restore(generators, states):
    """Puts the generators back, and the global seed (torch's dropout of an
    unseeded layer draws from torch's own generator)."""
    for v, value in zip(generators, states, strict=True):
        v.assign(value)
    keras.utils.set_random_seed(7)


def test_p0_fast_path_and_loop_share_the_dropout_masks():
    # With dropout and word dropout the fast path at p = 0 applies the masks the
    # loop would apply: the same numbers as the loop with p > 0 and no draw
    # below p, from the same generator states.
    model = tiny(scheduled_sampling=True, dropout=0.3, word_dropout=0.2)
    x, _ = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    generators = seed_states(model)
    assert len(generators) >= 2
    start = [np_(v) for v in generators]
    restore(generators, start)
    fast = model.sampled_forward_pass(*x, training=True)  # p = 0: the cond
    restore(generators, start)
    never = np.full(x[1].shape + (2,), 0.5, "float32")
    loop = model.sampled_forward_pass(
        *x, sampling_probability=1e-9, uniforms=never, training=True
    )
    for a, b in zip(fast, loop, strict=True):
        np.testing.assert_allclose(np_(a), np_(b), atol=1e-5)
    plain = model.sampled_forward_pass(*x, sampling_probability=0.0)
    assert not np.allclose(np_(fast[0]), np_(plain[0]), atol=1e-3)  # dropout on


def test_p0_trains_as_teacher_forcing_under_jit():
    # fit (compiled with XLA on JAX and TensorFlow) at p = 0 takes the same
    # steps as the model without scheduled sampling: the cond traces and
    # differentiates on every backend.
    model, plain = pair(CONFIGS["luong_fast_path"])
    x, y = model.encode_pairs(SOURCES[:16], TARGETS[:16])
    before = [np_(w) for w in plain.trainable_weights]
    for m in (model, plain):
        m.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=JIT)
        m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    after = [np_(w) for w in plain.trainable_weights]
    assert any(not np.allclose(a, b) for a, b in zip(before, after, strict=True))
    for a, b in zip(after, model.trainable_weights, strict=True):
        np.testing.assert_allclose(a, np_(b), atol=1e-5)


def numpy_draw(logits, uniform):
    """The token `sample` draws: the inverse CDF of softmax(logits) at `uniform`."""
    z = np.asarray(logits, "float64")
    probs = np.exp(z - z.max())
    cdf = np.cumsum(probs / probs.sum())
    return int(np.argmax(cdf > uniform))


def manual_scheduled_sampling(model, source, target_in, p, uniforms):
    """A Python loop over `next_fn`: at step t >= 1 row b is fed the token drawn
    from `next_fn`'s logits of step t - 1 (pad and bos at -1e9, so never drawn)
    if `uniforms[b, t, 0] < p`, else the gold token."""
    state = model.initial_state(source)
    token = target_in[:, 0]
    all_logits, fed = [], [token]
    for t in range(target_in.shape[1]):
        logits, state, _ = model.next_fn(token, state)
        logits = np_(logits)
        all_logits.append(logits)
        if t + 1 == target_in.shape[1]:
            break
        token = np.array(
            [
                numpy_draw(logits[b], uniforms[b, t + 1, 1])
                if uniforms[b, t + 1, 0] < p
                else target_in[b, t + 1]
                for b in range(len(token))
            ],
            "int32",
        )
        fed.append(token)
    return np.stack(all_logits, 1), np.stack(fed, 1)


@pytest.mark.parametrize("p", [1.0, 0.5])
def test_sampled_inputs_are_draws_from_next_fn(p):
    # p = 1: free-running sampled decoding; p = 0.5: each token chosen apart.
    model = tiny(scheduled_sampling=True, attention="luong_concat")
    (source, target_in), _ = model.encode_pairs(SOURCES[:6], TARGETS[:6])
    uniforms = np.random.default_rng(0).uniform(size=target_in.shape + (2,))
    uniforms = uniforms.astype("float32")
    logits, _, fed = model.sampled_forward_pass(
        source, target_in, sampling_probability=p, uniforms=uniforms, training=True
    )
    want_logits, want_fed = manual_scheduled_sampling(
        model, source, target_in, p, uniforms
    )
    np.testing.assert_array_equal(np_(fed), want_fed)
    sampled = want_fed[:, 1:] != target_in[:, 1:]
    assert sampled.mean() > (0.5 if p == 1 else 0.2)
    if p == 1:  # free running: nothing but the start token comes from the data
        assert (want_fed[:, 1:] == target_in[:, 1:]).mean() < 0.5
    # next_fn puts pad and bos at -1e9 (never produced): compare the others.
    produced = np.ones(DIGITS.vocabulary_size, bool)
    produced[[DIGITS.pad_id, DIGITS.bos_id]] = False
    np.testing.assert_allclose(
        np_(logits)[..., produced], want_logits[..., produced], atol=1e-5
    )


def test_training_reads_the_variable_and_the_model_seed_generator():
    model = tiny(scheduled_sampling=True)
    x, _ = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    other = (x[0], np.where(x[1] > 0, x[1] % 9 + 4, 0).astype("int32"))  # other gold
    other[1][:, 0] = x[1][:, 0]  # the same start token
    seed_state = np_(model.sampling_seed_generator.state)

    def train_logits(inputs):
        model.sampling_seed_generator.state.assign(seed_state)  # the same draws
        return np_(model(inputs, training=True))

    model.sampling_probability.assign(1.0)
    # p = 1: after the start token the gold inputs are never read.
    first = train_logits(x)
    np.testing.assert_allclose(first, train_logits(other), atol=1e-6)
    # Each call draws anew: the generator moves on.
    assert not np.allclose(first, np_(model(x, training=True)), atol=1e-3)


def test_the_step_loop_runs_only_when_sampling(monkeypatch):
    steps = []
    for scheduled, p in ((False, None), (True, 0.0), (True, 0.5)):
        model = tiny(
            attention="luong_general", input_feeding=False, scheduled_sampling=scheduled
        )
        if scheduled:
            model.sampling_probability.assign(p)
        x, _ = model.encode_pairs(SOURCES[:4], TARGETS[:4])
        step = model.decoder.step

        def counting_step(*args, _step=step, _p=p, **kwargs):
            steps.append(_p)
            return _step(*args, **kwargs)

        monkeypatch.setattr(model.decoder, "step", counting_step)
        model(x, training=True)
        model(x, training=False)
    # The fast path (one RNN layer over all steps) without scheduled sampling
    # and while p = 0; the step loop with p > 0, in training only. (JAX traces
    # both branches of a cond, eagerly too.)
    if keras.backend.backend() == "jax":
        assert steps and None not in steps
    else:
        assert steps and set(steps) == {0.5}
    assert Translator.from_config(model.get_config()).scheduled_sampling
    config = model.get_config()
    del config["scheduled_sampling"]  # a config saved before the option
    assert not Translator.from_config(config).scheduled_sampling
    with pytest.raises(ValueError, match="scheduled_sampling='yes'"):
        tiny(scheduled_sampling="yes")
    with pytest.raises(ValueError, match="scheduled_sampling=True"):
        tiny().sampled_forward_pass(*x)


def test_keras_file_keeps_the_probability(tmp_path):
    model = tiny(scheduled_sampling=True)
    model.sampling_probability.assign(0.25)
    path = os.path.join(tmp_path, "scheduled.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.scheduled_sampling
    assert float(np_(loaded.sampling_probability)) == 0.25


class PerBatch(keras.callbacks.Callback):
    """Reads the probability at each batch, after ScheduledSampling set it."""

    def __init__(self):
        super().__init__()
        self.values = []

    def on_train_batch_begin(self, batch, logs=None):
        self.values.append(float(np_(self.model.sampling_probability)))


# The learning itself is the same on every backend (the layers' numbers are
# checked against references on all three): the default suite runs it on one,
# the slow suite on every backend.
@on_one_backend
def test_learns_with_scheduled_sampling_and_the_callback():
    """A toy task (reversing digit strings) with p rising linearly to 0.5: the
    loss falls under `fit`, compiled (XLA on JAX and TensorFlow)."""
    sources, targets = reversal_data(256, 1, 5, seed=3)
    model = tiny(scheduled_sampling=True, attention="luong_general", units=32)
    model.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=JIT)
    x, y = model.encode_pairs(sources, targets)
    schedule = ScheduledSampling("linear", c=0.02, epsilon_min=0.5)
    record = PerBatch()
    history = model.fit(
        x, y, batch_size=32, epochs=5, verbose=0, callbacks=[schedule, record]
    )
    want = [min(0.5, 0.02 * i) for i in range(40)]  # 8 batches an epoch
    np.testing.assert_allclose(record.values, want, atol=1e-6)
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0], losses


def test_loop_helper_edge_cases():
    def step_fn(token_ids, state, inputs_t):
        logits = ops.one_hot(token_ids, 4) * 50.0 + inputs_t  # next = same token
        return logits, state + 1

    gold = np.array([[2, 1, 1], [3, 1, 1]], "int32")
    bias = np.zeros((2, 3, 4), "float32")
    # p = 1 with the one likely token excluded: the draws avoid it.
    _, fed, outputs = scheduled_sampling(
        step_fn,
        ops.zeros((2,)),
        gold,
        1.0,
        seed=3,
        excluded_ids=(2, 3),
        step_inputs=bias,
    )
    assert outputs is None
    fed = np_(fed)
    assert fed[:, 0].tolist() == [2, 3] and set(fed[:, 1:].ravel()) <= {0, 1}
    # One step: the start token only.
    logits, fed, _ = scheduled_sampling(
        step_fn, ops.zeros((2,)), gold[:, :1], 1.0, step_inputs=bias[:, :1]
    )
    assert tuple(logits.shape) == (2, 1, 4) and np_(fed).tolist() == [[2], [3]]
    with pytest.raises(ValueError, match="target_length"):
        scheduled_sampling(step_fn, (), gold[0], 0.5)
    with pytest.raises(ValueError, match="sampling_probability=1.5"):
        scheduled_sampling(step_fn, (), gold, 1.5)


def test_docstring_examples_run():
    from keras_rnnattn.decoding import scheduled

    result = doctest.testmod(scheduled)
    assert result.attempted >= 10 and result.failed == 0


@pytest.mark.slow
def test_learns_with_scheduled_sampling_and_the_callback_on_every_backend():
    test_learns_with_scheduled_sampling_and_the_callback()

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.decoding import beam_search
from keras_rnnattn.models import Translator, TranslatorEnsemble
from keras_rnnattn.models._seq2seq_text import teacher_forced_alignments
from keras_rnnattn.text import BpeTokenizer, CharTokenizer
from tests.task_test_utils import TASK_CHECKS, run_export_test, run_task_test

DIGITS = CharTokenizer().fit(["0123456789"])
SOURCES = ["12", "3456", "987", "5"]


@pytest.fixture(autouse=True)
def _seed():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield


def np_(x):
    return ops.convert_to_numpy(x)


def member(**kwargs):
    config = dict(embedding_dim=8, units=16)
    config.update(kwargs)
    model = Translator(DIGITS, DIGITS, **config)
    # Non-trivial weights: a few steps on digit reversal.
    sources = ["12", "345", "6789", "90817", "5566", "204"] * 4
    x, y = model.encode_pairs(sources, [s[::-1] for s in sources])
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    model.fit(x, y, epochs=2, verbose=0)
    return model


@pytest.fixture(scope="module")
def members():
    keras.utils.set_random_seed(7)
    return [member(), member(lexical_model=True, units=12)]


# Known library gaps, marked xfail by the shared checks while they fail.


@pytest.fixture(scope="module")
def ensemble(members):
    return TranslatorEnsemble(members)


@pytest.mark.parametrize("check", TASK_CHECKS)
def test_task_checks(ensemble, check, tmp_path):
    run_task_test(
        ensemble,
        SOURCES,
        check,
        targets=[s[::-1] for s in SOURCES],
        tmp_path=tmp_path,
        expected_output_shape=(4, 20),
    )


@pytest.mark.slow  # a TensorFlow export (a subprocess under JAX and torch)
def test_export(ensemble, tmp_path):
    run_export_test(ensemble, SOURCES, tmp_path)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_next_token_distribution_is_the_mean_of_the_members(members):
    ensemble = TranslatorEnsemble(members)
    source = ensemble.encode_source(SOURCES)
    state = ensemble.initial_state(source)
    member_states = [m.initial_state(source) for m in members]
    tokens = np.full((len(SOURCES),), DIGITS.bos_id, "int32")
    for _ in range(3):
        logits, state, alignment = ensemble.next_fn(tokens, state)
        outs = [m.next_fn(tokens, s) for m, s in zip(members, member_states)]
        member_states = [o[1] for o in outs]
        probs = np.mean([np.exp(log_softmax(np_(o[0]))) for o in outs], axis=0)
        never = [DIGITS.pad_id, DIGITS.bos_id]  # never produced: probability 0
        real = np.setdiff1d(np.arange(probs.shape[-1]), never)
        np.testing.assert_allclose(
            np_(logits)[:, real], np.log(probs[:, real]), rtol=1e-5, atol=1e-5
        )
        assert np.all(np_(logits)[:, never] < -1e8)
        np.testing.assert_allclose(
            np_(alignment), np.mean([np_(o[2]) for o in outs], axis=0), atol=1e-6
        )
        tokens = np.argmax(probs, axis=-1).astype("int32")


def test_teacher_forced_log_probabilities_match_the_steps(members):
    ensemble = TranslatorEnsemble(members)
    (source, target_in), _ = ensemble.encode_pairs(SOURCES, [s[::-1] for s in SOURCES])
    full = np_(ensemble((source, target_in)))  # (B, T, V)
    probs = np.mean(
        [np.exp(log_softmax(np_(m((source, target_in))))) for m in members], axis=0
    )
    np.testing.assert_allclose(full, np.log(probs), rtol=1e-5, atol=1e-5)
    # Decoding steps: each member's distribution over the tokens it may produce
    # (pad and bos never are), averaged.
    real = np.setdiff1d(np.arange(full.shape[-1]), [DIGITS.pad_id, DIGITS.bos_id])
    steps = np.log(
        np.mean(
            [
                np.exp(log_softmax(np_(m((source, target_in)))[..., real]))
                for m in members
            ],
            axis=0,
        )
    )  # (B, T, V - 2)
    state = ensemble.initial_state(source)
    for t in range(target_in.shape[1]):
        logits, state, _ = ensemble.next_fn(target_in[:, t], state)
        np.testing.assert_allclose(
            np_(logits)[:, real], steps[:, t], rtol=1e-4, atol=1e-4
        )


def test_one_member_translates_as_the_member(members):
    ensemble = TranslatorEnsemble(members[:1])
    for beam in (1, 3):
        assert ensemble.translate(SOURCES, beam_size=beam) == members[0].translate(
            SOURCES, beam_size=beam
        )


def test_beam_search_runs_on_the_mean_distribution(members):
    ensemble = TranslatorEnsemble(members)
    source = ensemble.encode_source(SOURCES)
    tokens, scores = ensemble.generate_ids(
        source, beam_size=3, max_length=8, length_penalty=0.6
    )

    def next_fn(ids, state):  # the ensemble written out from its members
        outs = [m.next_fn(ids, s) for m, s in zip(members, state)]
        stacked = ops.stack([ops.log_softmax(o[0], axis=-1) for o in outs])
        return ops.logsumexp(stacked, axis=0) - np.log(2.0), [o[1] for o in outs]

    state = [m.initial_state(source) for m in members]
    start = np.full((len(SOURCES),), DIGITS.bos_id, "int32")
    ref_tokens, ref_scores = beam_search(
        next_fn, state, start, DIGITS.eos_id, 8, beam_size=3, length_penalty=0.6
    )
    np.testing.assert_array_equal(tokens, np_(ref_tokens)[:, 0])
    np.testing.assert_allclose(scores, np_(ref_scores)[:, 0], atol=1e-4)


def test_attention_is_the_members_mean(members):
    ensemble = TranslatorEnsemble(members)
    translation, attention = ensemble.translate("3456", return_attention=True)
    weights = attention["weights"]  # (output tokens, source tokens)
    assert weights.shape == (
        len(attention["output_tokens"]),
        len(attention["source_tokens"]),
    )
    assert translation == ensemble.translate("3456")
    # Each member's attention over the ensemble's output, teacher-forced.
    source = ensemble.encode_source(["3456"])
    tokens, _ = ensemble.generate_ids(source)
    n_out, n_src = weights.shape
    mean = np.mean(
        [teacher_forced_alignments(m, source, tokens)[0] for m in members], axis=0
    )
    np.testing.assert_allclose(weights, mean[:n_out, :n_src], atol=1e-6)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_docstring_example_runs():
    import doctest

    from keras_rnnattn.models import translator_ensemble

    result = doctest.testmod(translator_ensemble)
    assert result.attempted > 0 and result.failed == 0


def test_preset_round_trip_in_float16(members, tmp_path):
    ensemble = TranslatorEnsemble(members, max_target_length=20)
    folder = ensemble.save_to_preset(tmp_path / "ens", weights_dtype="float16")
    loaded = Translator.from_preset(folder)
    assert isinstance(loaded, TranslatorEnsemble)
    assert loaded.max_target_length == 20 and len(loaded.members) == 2
    for saved, restored in zip(ensemble.weights, loaded.weights):
        saved, restored = np_(saved), np_(restored)
        assert restored.dtype == saved.dtype
        np.testing.assert_array_equal(
            restored, saved.astype("float16").astype("float32")
        )
    # Loaded weights are float16 values: saving them again loses nothing.
    again = Translator.from_preset(
        loaded.save_to_preset(tmp_path / "again", weights_dtype="float16")
    )
    for a, b in zip(loaded.weights, again.weights):
        np.testing.assert_array_equal(np_(a), np_(b))
    assert again.translate(SOURCES, beam_size=2) == loaded.translate(
        SOURCES, beam_size=2
    )


def test_bad_members():
    with pytest.raises(ValueError, match="non-empty list"):
        TranslatorEnsemble([])
    with pytest.raises(ValueError, match="Translator instances"):
        TranslatorEnsemble([keras.layers.Dense(2)])
    letters = CharTokenizer().fit(["abc"])
    with pytest.raises(ValueError, match="same target_tokenizer"):
        TranslatorEnsemble(
            [
                Translator(DIGITS, DIGITS, embedding_dim=4, units=4),
                Translator(DIGITS, letters, embedding_dim=4, units=4),
            ]
        )
    with pytest.raises(ValueError, match="all have an attention or all have none"):
        TranslatorEnsemble(
            [
                Translator(DIGITS, DIGITS, embedding_dim=4, units=4),
                Translator(DIGITS, DIGITS, embedding_dim=4, units=4, attention="none"),
            ]
        )
    with pytest.raises(ValueError, match="at most the members' smallest"):
        TranslatorEnsemble(
            [Translator(DIGITS, DIGITS, embedding_dim=4, units=4, max_target_length=9)],
            max_target_length=10,
        )


def test_tokenizers_that_differ_only_in_their_seed_are_the_same_vocabulary():
    texts = ["die neuen Häuser", "die alten Häuser", "neue Häuser"]
    first = BpeTokenizer(max_vocab=40, seed=1).fit(texts)
    second = BpeTokenizer(max_vocab=40, seed=2).fit(texts)
    ensemble = TranslatorEnsemble(
        [
            Translator(first, first, embedding_dim=4, units=4),
            Translator(second, second, embedding_dim=4, units=4),
        ]
    )
    assert ensemble.source_tokenizer is first

import os
import re
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer, WordTokenizer
from tests.backends import on_one_backend
from tests.task_test_utils import TASK_CHECKS, run_export_test, run_task_test

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = CharTokenizer().fit(["0123456789"])


@pytest.fixture(autouse=True)
def _seed():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield


def np_(x):
    return ops.convert_to_numpy(x)


def reversal_data(n, low, high, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(low, high + 1, size=n)
    sources = ["".join(map(str, rng.integers(0, 10, size=k))) for k in lengths]
    return sources, [s[::-1] for s in sources]


def tiny(**kwargs):
    config = dict(embedding_dim=8, units=16)
    config.update(kwargs)
    return Translator(DIGITS, DIGITS, **config)


SOURCES, TARGETS = reversal_data(64, 1, 6, seed=0)


# Known library gaps, marked xfail by the shared checks while they fail.
TEXTS = ["31415", "27", "1828", "4"]


@pytest.fixture(scope="module")
def translator():
    """A small translator (compiled, not trained), shared by the tests that
    only read it."""
    keras.utils.set_random_seed(1234)
    model = tiny()
    model.compile()
    return model


@pytest.mark.parametrize("check", TASK_CHECKS)
def test_task_checks(translator, check, tmp_path):
    run_task_test(
        translator,
        TEXTS,
        check,
        targets=[t[::-1] for t in TEXTS],
        tmp_path=tmp_path,
        expected_output_shape=(4, 22),
    )


@pytest.mark.slow  # a TensorFlow export (a subprocess under JAX and torch)
def test_export(translator, tmp_path):
    run_export_test(translator, TEXTS, tmp_path)


def test_encode_pairs_layout():
    model = tiny(max_target_length=4)
    (source, target_in), target_out = model.encode_pairs(["12", "345678"], ["21", "9"])
    tok = DIGITS
    eos, bos = tok.eos_id, tok.bos_id
    np.testing.assert_array_equal(
        source, [tok.encode("12") + [eos, 0, 0, 0, 0], tok.encode("345678") + [eos]]
    )
    # Inputs start with bos, outputs end with eos; the length limit keeps eos.
    np.testing.assert_array_equal(target_in, [[bos] + tok.encode("21"), [bos, 13, 0]])
    np.testing.assert_array_equal(target_out, [tok.encode("21") + [eos], [13, eos, 0]])


def test_loss_is_the_cross_entropy_of_real_tokens():
    model = tiny()
    model.compile()
    (source, target_in), target_out = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    logits = np_(model((source, target_in)))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_probs, target_out[..., None], -1)[..., 0]
    real = target_out != 0
    want = nll[real].mean()
    got = model.evaluate((source, target_in), target_out, batch_size=8, verbose=0)
    np.testing.assert_allclose(got[0], want, rtol=1e-4)
    accuracy = (logits.argmax(-1) == target_out)[real].mean()
    np.testing.assert_allclose(got[1], accuracy, rtol=1e-5)


def test_label_smoothing_is_the_cross_entropy_against_the_smoothed_target():
    model = tiny()
    model.compile(label_smoothing=0.2)
    (source, target_in), target_out = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    logits = np_(model((source, target_in)))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    vocab = logits.shape[-1]
    # Szegedy et al. (2016): q = (1 - eps) one_hot + eps / V, loss = -sum q log p.
    q = 0.8 * np.eye(vocab)[target_out] + 0.2 / vocab
    want = -(q * log_probs).sum(-1)[target_out != 0].mean()
    got = model.evaluate((source, target_in), target_out, batch_size=8, verbose=0)
    np.testing.assert_allclose(got[0], want, rtol=1e-4)
    with pytest.raises(ValueError, match="default loss only"):
        model.compile(loss="mse", label_smoothing=0.1)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        model.compile(label_smoothing=1.0)


def test_fit_on_arrays_and_tf_data_lowers_the_loss():
    import tensorflow as tf

    model = tiny(attention="luong_general", input_feeding=False)
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    x, y = model.encode_pairs(SOURCES, TARGETS)
    first = model.evaluate(x, y, verbose=0)[0]
    before = [np_(w).copy() for w in model.trainable_weights]
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    for w, b in zip(model.trainable_weights, before):  # every weight is trained
        assert not np.allclose(np_(w), b), w.path
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    history = model.fit(dataset, epochs=2, shuffle=False, verbose=0)
    assert history.history["loss"][-1] < 0.85 * first


def test_padding_does_not_change_the_encoding():
    model = tiny(encoder_layers=2, bidirectional=True, cell="lstm")
    source = model.encode_source(["123", "45678"])  # row 0: 4 tokens, 2 pads
    memory, mask, states = model.encode(source)
    assert np_(mask).tolist() == (source != 0).tolist()
    # Row 0 alone, without padding, encodes the same as inside the padded batch:
    # the backward direction starts at its last real token.
    alone, _, alone_states = model.encode(source[:1, :4])
    np.testing.assert_allclose(np_(alone)[0], np_(memory)[0, :4], atol=1e-5)
    for a, b in zip(alone_states, states):  # the bridge's h and c
        np.testing.assert_allclose(np_(a)[0], np_(b)[0], atol=1e-5)


def manual_greedy(model, text, max_length):
    """A plain Python argmax loop over `next_fn`, collecting the alignments."""
    source = model.encode_source([text])
    state = model.initial_state(source)
    token = np.array([DIGITS.bos_id], "int32")
    tokens, alignments = [], []
    for _ in range(max_length):
        logits, state, alignment = model.next_fn(token, state)
        token = np_(logits).argmax(-1).astype("int32")
        tokens.append(int(token[0]))
        alignments.append(np_(alignment)[0])
        if token[0] == DIGITS.eos_id:
            break
    return tokens, np.stack(alignments)


@pytest.mark.parametrize("attention", ["bahdanau", "luong_concat", "luong_location"])
def test_translate_is_greedy_decoding_of_next_fn(attention):
    model = tiny(attention=attention, max_source_length=12)
    text = "31415"
    tokens, alignments = manual_greedy(model, text, max_length=8)
    translation, attention_info = model.translate(  # the ids as they are
        text, max_length=8, return_attention=True, replace_unknown=False
    )
    assert translation == DIGITS.decode(tokens)
    assert attention_info["output_tokens"][: len(tokens)] == [
        DIGITS.vocabulary.id_to_token(t) for t in tokens
    ]
    assert attention_info["source_tokens"] == list("31415") + ["<eos>"]
    # Teacher-forcing the produced tokens gives the decode-time alignments.
    np.testing.assert_allclose(attention_info["weights"], alignments, atol=1e-5)
    np.testing.assert_allclose(attention_info["weights"].sum(-1), 1.0, atol=1e-5)
    # The search returns them itself, zero after the end token.
    source = model.encode_source([text])
    ids, _, searched = model.generate_ids(source, max_length=8, return_alignments=True)
    assert ids[0].tolist()[: len(tokens)] == tokens
    np.testing.assert_allclose(searched[0, : len(tokens)], alignments, atol=1e-5)
    assert not searched[0, len(tokens) :].any()
    if attention == "bahdanau":
        beams = model.translate([text, "2", ""], beam_size=3, max_length=8)
        assert len(beams) == 3 and beams[2] == ""


@pytest.mark.parametrize(
    "attention",
    [
        "bahdanau_monotonic",
        # The same decoder state and checks with the other scorer.
        pytest.param("luong_monotonic", marks=pytest.mark.slow),
    ],
)
def test_monotonic_attention_never_moves_back(attention, tmp_path):
    from keras_rnnattn.layers import (
        BahdanauMonotonicAttention,
        LuongMonotonicAttention,
    )

    model = tiny(attention=attention)
    layer = model.decoder.attention
    expected = {
        "bahdanau_monotonic": BahdanauMonotonicAttention,
        "luong_monotonic": LuongMonotonicAttention,
    }[attention]
    assert type(layer) is expected
    assert (layer.sigmoid_noise, layer.score_bias_init) == (1.0, -1.0)
    randomise = np.random.default_rng(5)
    for weight in model.weights:
        weight.assign(randomise.normal(scale=0.5, size=weight.shape))
    text = "3141592"
    tokens, alignments = manual_greedy(model, text, max_length=6)
    translation, info = model.translate(
        text, max_length=6, return_attention=True, replace_unknown=False
    )
    assert translation == DIGITS.decode(tokens)
    # Decoding carries the alignment state as teacher forcing does.
    np.testing.assert_allclose(info["weights"], alignments, atol=1e-5)
    # Raffel et al. (2017): the attention mass only moves right, so at every
    # source position the cumulative weight can only fall from step to step,
    # and a step's weights sum to at most 1.
    weights = np.asarray(info["weights"])
    cumulative = np.cumsum(weights, axis=-1)
    assert (np.diff(cumulative, axis=0) <= 1e-6).all(), cumulative
    assert (weights.sum(-1) <= 1 + 1e-6).all()
    path = os.path.join(tmp_path, "monotonic.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.decoder.attention) is expected
    x, _ = model.encode_pairs([text], [text[::-1]])
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(cell="lstm", attention="luong_general"),
        dict(cell="gru", attention="bahdanau", input_feeding=False),
    ],
    ids=["lstm_luong_feeding", "gru_bahdanau_fast_path"],
)
def test_stacked_decoder_decodes_as_it_trains(kwargs, tmp_path):
    model = tiny(decoder_layers=2, encoder_layers=2, **kwargs)
    assert isinstance(model.decoder.cell, keras.layers.StackedRNNCells)
    states_per_layer = 2 if kwargs["cell"] == "lstm" else 1
    assert len(model.bridges) == 2 * states_per_layer
    randomise = np.random.default_rng(3)
    for weight in model.weights:
        weight.assign(randomise.normal(scale=0.5, size=weight.shape))
    # Each layer starts from its own bridge.
    _, _, states = model.encode(model.encode_source(["3141"]))
    assert len(states) == 2 * states_per_layer
    assert not np.allclose(np_(states[0]), np_(states[states_per_layer]))
    text = "31415"
    tokens, alignments = manual_greedy(model, text, max_length=6)
    translation, info = model.translate(
        text, max_length=6, return_attention=True, replace_unknown=False
    )
    assert translation == DIGITS.decode(tokens)
    # Teacher forcing (the scan or the fast path) gives the step's alignments.
    np.testing.assert_allclose(info["weights"], alignments, atol=1e-5)
    path = os.path.join(tmp_path, "stacked.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.decoder_layers == 2
    x, _ = model.encode_pairs([text], [text[::-1]])
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


def test_stacked_decoder_needs_attention():
    with pytest.raises(ValueError, match="needs an attention"):
        tiny(decoder_layers=2, attention="none")
    with pytest.raises(ValueError, match="has no attention"):
        tiny(attention="none").generate_ids([[3, 4]], return_alignments=True)


def test_configs_saved_with_the_old_meaning_of_none_still_concatenate():
    config = tiny(attention_layer_size="concat").get_config()
    config["attention_layer_size"] = None
    del config["decoder_layers"]
    model = Translator.from_config(config)
    assert model.decoder.attention_layer_size == "concat"
    assert model.decoder.output_size == 16 + 2 * 16


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_text_translates_the_same_alone_and_in_a_batch(beam_size):
    model = tiny(max_source_length=32)
    bias = np_(model.output_dense.bias)
    bias[DIGITS.eos_id] = -100.0  # never ends by itself: runs to its length limit
    model.output_dense.bias.assign(bias)
    texts = ["7", "31415926535897"]  # 2 and 15 source tokens (end token included)
    batch = model.translate(texts, beam_size=beam_size)
    alone = [model.translate(text, beam_size=beam_size) for text in texts]
    assert batch == alone
    source = model.encode_source(texts)  # (2, 15)
    eos = DIGITS.eos_id

    def lengths(tokens):  # tokens before the first end token
        return [list(row).index(eos) if eos in row else len(row) for row in tokens]

    tokens = model.generate_ids(source, beam_size)[0]  # (2, 40)
    assert lengths(tokens) == [2 * 2 + 10, 2 * 15 + 10]
    # An explicit max_length is the same for every row.
    assert lengths(model.generate_ids(source, beam_size, max_length=5)[0]) == [5, 5]


def test_bad_input():
    model = tiny(max_source_length=6)
    assert model.translate("") == ""
    assert model.translate(["", "  "]) == ["", ""]
    with pytest.raises(ValueError, match="max_source_length=6"):
        model.translate(["12", "123456"])  # 6 digits + end token
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="beam_size"):
            model.translate("12", beam_size=bad)
        with pytest.raises(ValueError, match="max_length"):
            model.translate("12", max_length=bad)
    # Unknown words map to the unknown token and still translate.
    words = WordTokenizer().fit(["the cat sat", "le chat assis"])
    wmodel = Translator(words, words, embedding_dim=8, units=8)
    source = wmodel.encode_source(["the dog sat"])
    assert source[0].tolist() == words.encode("the dog sat", add_eos=True)
    assert words.unk_id in source[0]
    assert isinstance(wmodel.translate("the dog sat"), str)
    with pytest.raises(ValueError, match="attention="):
        tiny(attention="cosine")
    with pytest.raises(ValueError, match="source_tokenizer"):
        Translator("not a tokenizer", DIGITS)


def test_unknown_target_words_copy_the_attended_source_word():
    # Luong et al. (2015)'s unknown-word replacement. The output bias makes
    # every step produce <unk>; each is replaced by the source word of the
    # step's largest attention weight, a run on the same word copied once.
    source_words = WordTokenizer().fit(["Ada met Bob in Zürich ."])
    model = Translator(
        source_words, WordTokenizer().fit(["x"]), embedding_dim=8, units=8
    )
    model(model.encode_pairs(["Ada met Bob"], ["x"])[0])  # builds it
    bias = np.zeros(model.output_dense.bias.shape, "float32")
    bias[model.target_tokenizer.unk_id] = 100.0
    model.output_dense.bias.assign(bias)
    text = "Ada met Bob in Zürich ."
    kept, attention = model.translate(
        text, max_length=6, replace_unknown=False, return_attention=True
    )
    assert kept == " ".join(["<unk>"] * 6)
    words = text.split()
    pointed = [words[j] for j in attention["weights"][:, : len(words)].argmax(-1)]
    expected = [w for i, w in enumerate(pointed) if i == 0 or w != pointed[i - 1]]
    assert model.translate([text, "met"], max_length=6)[0].split() == expected
    # Beam search gives the same tokens here, and the same copies.
    assert model.translate(text, beam_size=3, max_length=6).split() == expected


def test_ids_of_the_wrong_rank_get_the_models_own_error():
    model = tiny()
    (source, target_in), _ = model.encode_pairs(["12"], ["21"])  # (1, 3) each
    for inputs, name in [
        ((source[..., None], target_in), "source_ids of shape (1, 3, 1)"),
        ((source, target_in[..., None]), "target_in_ids of shape (1, 3, 1)"),
        ((source[0], target_in), "source_ids of shape (3,)"),
    ]:
        with pytest.raises(ValueError, match=r"takes `\(source_ids, target_in_ids\)`"):
            model(inputs)
        with pytest.raises(ValueError, match=re.escape(name)):
            model(inputs)
    assert model((source, target_in)).shape == (1, 3, DIGITS.vocabulary_size)


def test_word_dropout_zeroes_whole_tokens_in_training_only():
    model = tiny(word_dropout=0.5)
    ids = np.tile(np.arange(4, 14, dtype="int32"), (8, 1))  # (8, 10)
    plain = np_(model.source_embedding(ids))  # (8, 10, 8)
    dropped = np_(model._readout.embed(model.source_embedding, ids, training=True))
    zero = np.all(dropped == 0, axis=-1)  # (8, 10): one draw per token
    kept = ~zero
    np.testing.assert_allclose(dropped[kept], plain[kept] * 2.0, rtol=1e-6)
    assert 0.25 < zero.mean() < 0.75  # about half of the 80 tokens
    np.testing.assert_array_equal(
        np_(model._readout.embed(model.source_embedding, ids, training=False)), plain
    )
    assert model.get_config()["word_dropout"] == 0.5
    assert Translator.from_config(model.get_config()).word_dropout == 0.5
    with pytest.raises(ValueError, match="word_dropout=1"):
        tiny(word_dropout=1.0)


def assert_steps_give_teacher_forced_logits(model, source, target_in, logits):
    """`next_fn` step by step gives the logits of `_forward` (pad and bos,
    which decoding never produces, left out)."""
    state = model.initial_state(source)
    produced = np.ones(DIGITS.vocabulary_size, bool)
    produced[[DIGITS.pad_id, DIGITS.bos_id]] = False
    for t in range(target_in.shape[1]):
        step_logits, state, _ = model.next_fn(target_in[:, t], state)
        real = target_in[:, t] != 0
        np.testing.assert_allclose(
            np_(step_logits)[real][:, produced],
            np_(logits)[real, t][:, produced],
            atol=1e-5,
        )


def teacher_forced_decoder(model, source, target_in):
    """The decoder's outputs `(B, T, d)` and alignments `(B, T, S)` as NumPy."""
    memory, mask, states = model.encode(source)
    o, a = model.decoder(
        model.target_embedding(target_in),
        memory,
        initial_state=states,
        memory_mask=mask,
    )
    return np_(o), np_(a)


def lexical_h(model, embedded, alignments):
    """The paper's h_t = tanh(W f_t) + f_t, f_t = tanh(sum_s a_ts e_s), as NumPy."""
    f = np.tanh(np.einsum("bts,bse->bte", alignments, embedded))
    return np.tanh(f @ np_(model.lexical_dense.kernel)) + f


def test_lexical_model_is_nguyen_and_chiang_2018(tmp_path):
    model = tiny(lexical_model=True, attention="luong_general")
    (source, target_in), _ = model.encode_pairs(SOURCES[:4], TARGETS[:4])
    logits, alignments = model.forward_pass(source, target_in, training=False)
    # The reference from the paper: f_t = tanh(sum_s a_ts e_s),
    # h_t = tanh(W f_t) + f_t, logits = W_o o_t + W_l h_t + b.
    o, a = teacher_forced_decoder(model, source, target_in)
    np.testing.assert_allclose(np_(alignments), a, atol=1e-6)
    h = lexical_h(model, np_(model.source_embedding(source)), a)
    kernel, bias = np_(model.output_dense.kernel), np_(model.output_dense.bias)
    d = o.shape[-1]
    assert kernel.shape == (d + 8, DIGITS.vocabulary_size)
    want = o @ kernel[:d] + h @ kernel[d:] + bias
    np.testing.assert_allclose(np_(logits), want, atol=1e-5)
    # Decoding step by step (the source embeddings ride in the memory) gives
    # the teacher-forced logits.
    assert_steps_give_teacher_forced_logits(model, source, target_in, logits)
    assert isinstance(model.translate(["123", "4"], beam_size=2)[0], str)
    path = os.path.join(tmp_path, "lexical.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.lexical_model
    np.testing.assert_array_equal(np_(loaded((source, target_in))), np_(logits))
    with pytest.raises(ValueError, match="lexical_model=True, attention='none'"):
        tiny(lexical_model=True, attention="none")


@pytest.mark.parametrize("lexical_model", [True, False])
def test_fixnorm_is_nguyen_and_chiang_2018(tmp_path, lexical_model):
    r = 3.5
    model = tiny(lexical_model=lexical_model, fixnorm=r)
    (source, target_in), _ = model.encode_pairs(SOURCES[:4], TARGETS[:4])
    logits, _ = model.forward_pass(source, target_in, training=False)
    # The paper's output layer: each readout part (the attentional output o_t,
    # and the lexical model's h_t) and each word's weight vector in that part
    # at norm r; logits = sum_p (r x_p / |x_p|) . (r w_p / |w_p|) + b.
    o, a = teacher_forced_decoder(model, source, target_in)
    parts = [o]
    if lexical_model:
        parts.append(lexical_h(model, np_(model.source_embedding(source)), a))
    kernel, bias = np_(model.output_dense.kernel), np_(model.output_dense.bias)
    want, start = bias, 0
    for x in parts:
        w = kernel[start : start + x.shape[-1]]
        start += x.shape[-1]
        x = r * x / np.linalg.norm(x, axis=-1, keepdims=True)
        w = r * w / np.linalg.norm(w, axis=0, keepdims=True)
        want = want + x @ w
    assert start == kernel.shape[0]
    np.testing.assert_allclose(np_(logits), want, atol=1e-5)
    # Every logit is within r^2 of the bias in each part, whatever the weights.
    model.output_dense.kernel.assign(100.0 * kernel)
    big, _ = model.forward_pass(source, target_in, training=False)
    np.testing.assert_allclose(np_(big), want, atol=1e-4)
    assert np.abs(np_(big) - bias).max() <= len(parts) * r**2 + 1e-4
    assert_steps_give_teacher_forced_logits(model, source, target_in, big)
    # It learns, and the round trip is exact.
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y = model.encode_pairs(SOURCES[:16], TARGETS[:16])
    losses = [float(np.ravel(model.train_on_batch(x, y))[0]) for _ in range(10)]
    assert losses[-1] < losses[0]
    path = os.path.join(tmp_path, "fixnorm.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.fixnorm == r
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


def test_fixnorm_bad_values():
    for bad in (0, -1.0, "3.5", True):
        with pytest.raises(ValueError, match="`fixnorm` must be a positive number"):
            tiny(fixnorm=bad)
    with pytest.raises(ValueError, match="drop one of the two"):
        tiny(fixnorm=3.5, share_decoder_embeddings=True)


def test_shared_embeddings_are_press_and_wolf_2017(tmp_path):
    # Three-way tying: one embedding E reads the source, the target and, after
    # a projection W_p of the readout, gives the logits E (W_p r_t) + b.
    model = tiny(
        lexical_model=True,
        share_embeddings=True,
        share_decoder_embeddings=True,
        embedding_dim=8,
    )
    assert model.source_embedding is None and model.output_dense is None
    emb = np_(model.target_embedding.embeddings)  # (V, 8)
    names = sorted(w.path for w in model.weights)
    assert "translator/output_bias" in names
    assert not any("source_embedding" in n or "output_dense" in n for n in names)
    # One matrix fewer than the untied model, and no (readout, V) kernel.
    untied = tiny(lexical_model=True, embedding_dim=8)
    readout = model.output_projection.kernel.shape[0]
    vocab = DIGITS.vocabulary_size
    assert untied.count_params() - model.count_params() == (
        vocab * 8 + readout * vocab - readout * 8
    )
    (source, target_in), _ = model.encode_pairs(SOURCES[:4], TARGETS[:4])
    memory, mask, states = model.encode(source)
    # The encoder reads E: the same memory as the untied model whose source
    # embedding holds E's values and whose other layers hold the same weights.
    tied = {w.path.split("/", 1)[1]: np_(w) for w in model.weights}
    for w in untied.weights:
        path = w.path.split("/", 1)[1]
        if path.endswith("embedding/embeddings"):
            w.assign(emb)
        elif path in tied:
            w.assign(tied[path])
    untied_memory, _, untied_states = untied.encode(source)
    np.testing.assert_allclose(np_(memory), np_(untied_memory), atol=1e-6)
    np.testing.assert_allclose(np_(states[0]), np_(untied_states[0]), atol=1e-6)
    logits, alignments = model.forward_pass(source, target_in, training=False)
    o, a = model.decoder(
        model.target_embedding(target_in),
        memory,
        initial_state=states,
        memory_mask=mask,
    )
    o, a = np_(o), np_(a)
    h = lexical_h(model, emb[np_(source)], a)  # the source embedded with E
    r = np.concatenate([o, h], axis=-1)  # (B, T, readout)
    want = (r @ np_(model.output_projection.kernel)) @ emb.T + np_(model.output_bias)
    np.testing.assert_allclose(np_(logits), want, atol=1e-5)
    # Step by step gives the teacher-forced logits.
    assert_steps_give_teacher_forced_logits(model, source, target_in, logits)
    # A train step moves E through all three uses; the round trip is exact.
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y = model.encode_pairs(SOURCES[:16], TARGETS[:16])
    model.train_on_batch(x, y)
    assert not np.allclose(np_(model.target_embedding.embeddings), emb)
    path = os.path.join(tmp_path, "tied.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.share_embeddings and loaded.share_decoder_embeddings
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))
    assert loaded.translate(["123"], beam_size=2) == model.translate(
        ["123"], beam_size=2
    )


def test_decoder_embeddings_alone_keep_the_source_embedding():
    model = tiny(share_decoder_embeddings=True)
    assert model.source_embedding is not None and model.output_dense is None
    (source, target_in), _ = model.encode_pairs(SOURCES[:4], TARGETS[:4])
    logits, _ = model.forward_pass(source, target_in, training=False)
    o, _ = teacher_forced_decoder(model, source, target_in)
    emb = np_(model.target_embedding.embeddings)
    want = (o @ np_(model.output_projection.kernel)) @ emb.T
    np.testing.assert_allclose(np_(logits), want + np_(model.output_bias), atol=1e-5)


def test_shared_embeddings_need_one_vocabulary():
    other = CharTokenizer().fit(["0123456789ab"])
    with pytest.raises(ValueError, match="pass the same tokenizer"):
        Translator(DIGITS, other, embedding_dim=8, units=16, share_embeddings=True)
    # Equal vocabularies of two tokenizer objects are one vocabulary.
    twin = CharTokenizer().fit(["0123456789"])
    model = Translator(DIGITS, twin, embedding_dim=8, units=16, share_embeddings=True)
    assert model.source_embedding is None


def test_plain_encoder_decoder_baseline():
    model = tiny(attention="none", cell="lstm")
    assert isinstance(model.translate("123", beam_size=2), str)
    with pytest.raises(ValueError, match="return_attention"):
        model.translate("123", return_attention=True)


def test_keras_file_round_trip_keeps_the_optimizer_state(tmp_path):
    model = tiny(cell="lstm", attention="luong_general", bridge="zeros")
    model.compile()
    x, y = model.encode_pairs(SOURCES[:16], TARGETS[:16])
    model.train_on_batch(x, y)  # optimizer state is saved too
    path = os.path.join(tmp_path, "translator.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, Translator)
    assert int(loaded.optimizer.iterations) == 1
    for a, b in zip(loaded.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(np_(a), np_(b))
    # The tokenizers, the JSON config and the preset round trip:
    # test_task_checks[keras_file] and [preset].
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


def test_location_attention_round_trip(tmp_path):
    # Luong's location score: weights from the decoder state alone, over
    # max_source_length positions, cut to each batch's source length.
    model = tiny(attention="luong_location", max_source_length=9)
    assert model.decoder.attention.score == "location"
    assert model.decoder.attention.source_length == 9
    x, _ = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    path = os.path.join(tmp_path, "location.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))
    with pytest.raises(ValueError, match="max_source_length=9"):
        model.translate("1234567890")


def test_plot_attention_returns_a_figure():
    import matplotlib

    matplotlib.use("Agg")
    model = tiny()
    fig = model.plot_attention("1234")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == list("1234") + ["<eos>"]
    image = ax.images[0].get_array()
    assert image.shape[1] == 5 and image.shape[0] == len(ax.get_yticklabels())
    # The decoding arguments reach the translation it draws (its title).
    for alpha in (0.0, 2.0):
        fig = model.plot_attention("1234", beam_size=3, length_penalty=alpha)
        title = fig.axes[0].get_title()
        assert title == model.translate("1234", beam_size=3, length_penalty=alpha)


_OTHER = {"jax": "tensorflow", "tensorflow": "torch", "torch": "jax"}
_LOAD = """
import sys, numpy as np, keras
from keras_rnnattn.models import Translator
model = keras.saving.load_model(sys.argv[1])
x = np.load(sys.argv[2])
np.save(sys.argv[3], keras.ops.convert_to_numpy(model((x[0], x[1]))))
print(model.translate(["123", "98765"]))
"""


@pytest.mark.slow  # a second process importing another backend: 6 to 10 s
def test_weights_load_under_another_backend(tmp_path):
    model = tiny(attention="bahdanau")
    path = os.path.join(tmp_path, "translator.keras")
    model.save(path)
    (source, target_in), _ = model.encode_pairs(["123", "98765"], ["321", "56789"])
    inputs = np.stack([source, target_in[:, : source.shape[1]]])
    np.save(os.path.join(tmp_path, "x.npy"), inputs)
    backend = _OTHER[keras.backend.backend()]
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=REPO)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    out = os.path.join(tmp_path, "logits.npy")
    run = subprocess.run(
        [sys.executable, "-c", _LOAD, path, os.path.join(tmp_path, "x.npy"), out],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    np.testing.assert_allclose(
        np.load(out), np_(model((inputs[0], inputs[1]))), atol=1e-5
    )
    assert run.stdout.strip().splitlines()[-1] == str(model.translate(["123", "98765"]))


def reversal_results():
    train_s, train_t = reversal_data(3000, 1, 9, seed=1)
    test_s, test_t = reversal_data(300, 1, 9, seed=2)
    longest = [i for i, s in enumerate(test_s) if len(s) >= 8]
    results = {}
    for attention in ("bahdanau", "none"):
        keras.utils.set_random_seed(0)
        model = Translator(
            DIGITS, DIGITS, embedding_dim=32, units=64, attention=attention
        )
        model.compile(optimizer=keras.optimizers.Adam(3e-3, clipnorm=5.0))
        x, y = model.encode_pairs(train_s, train_t)
        start = time.time()
        model.fit(x, y, batch_size=64, epochs=6, verbose=0)
        out = model.translate(test_s)
        exact = np.mean([o == t for o, t in zip(out, test_t)])
        exact_long = np.mean([out[i] == test_t[i] for i in longest])
        results[attention] = (exact, exact_long, time.time() - start)
    print(results)
    return results


# The learning is the same on every backend (the layers' numbers are checked
# against references on all three): the default suite runs it on one, the slow
# suite on every backend.
@on_one_backend
def test_learns_to_reverse_digits_and_attention_beats_no_attention():
    """Digit strings of 1 to 9 characters; thresholds: attention >= 95% exact
    match overall, and better than the plain encoder-decoder by >= 20 points on
    the longest (8 and 9 digits)."""
    results = reversal_results()
    assert results["bahdanau"][0] >= 0.95, results
    assert results["bahdanau"][1] >= results["none"][1] + 0.2, results


@pytest.mark.slow
def test_learns_to_reverse_digits_on_every_backend():
    results = reversal_results()
    assert results["bahdanau"][0] >= 0.95, results
    assert results["bahdanau"][1] >= results["none"][1] + 0.2, results


@pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="autograd graphs exist on torch only"
)
def test_decoding_records_no_autograd_graph(monkeypatch):
    # Eager torch would record every op of the decoding loop and keep its
    # tensors alive (about 450 MB for 64 sentences with beam 4 at 256 units).
    import torch

    model = tiny()
    source = model.encode_source(["123", "4567"])
    seen = []
    step = model.decoder.step

    def recording_step(*args, **kwargs):
        seen.append(torch.is_grad_enabled())
        return step(*args, **kwargs)

    monkeypatch.setattr(model.decoder, "step", recording_step)
    for beam_size in (1, 3):
        model.generate_ids(source, beam_size, 6)
    model.translate("123", return_attention=True)
    assert seen and not any(seen)
    assert torch.is_grad_enabled()  # restored after decoding


def test_translate_passes_the_beam_penalties_to_the_search(monkeypatch):
    from keras_rnnattn.models import _seq2seq_search

    model = tiny()
    calls = []
    search_ids = _seq2seq_search.search_ids

    def recording(model, source, settings, max_length, *args):
        calls.append(settings)  # the one SearchSettings of the call
        return search_ids(model, source, settings, max_length, *args)

    monkeypatch.setattr(_seq2seq_search, "search_ids", recording)
    model.translate("123", beam_size=3)
    out = model.translate("123", beam_size=3, length_penalty=0.6, coverage_penalty=0.2)
    assert [
        (s.method, s.beam_size, s.length_penalty, s.coverage_penalty) for s in calls
    ] == [("beam", 3, 0.0, 0.0), ("beam", 3, 0.6, 0.2)]
    tokens, _ = model.generate_ids(
        model.encode_source(["123"]), 3, None, length_penalty=0.6, coverage_penalty=0.2
    )
    assert out == model.target_tokenizer.decode(tokens[0])


def test_a_translation_makes_its_search_settings_once(monkeypatch):
    from keras_rnnattn.decoding.search_settings import SearchSettings
    from keras_rnnattn.models._generator import CompileKey

    model = tiny()
    made = []
    post_init = SearchSettings.__post_init__

    def counting(settings):
        made.append(settings)
        post_init(settings)

    monkeypatch.setattr(SearchSettings, "__post_init__", counting)
    model.translate(["123", "45"])
    assert len(made) == 1  # greedy: the call's settings, nothing more
    made.clear()
    model.translate("123", beam_size=3, length_penalty=0.6, coverage_penalty=0.2)
    # The call's settings, and the compile key's copy without α and β, which
    # run as inputs beside it (then `beam_search` checks its own arguments).
    assert [(s.length_penalty, s.coverage_penalty) for s in made[:2]] == [
        (0.6, 0.2),
        (0.0, 0.0),
    ]
    keys = [k for k in model.__dict__["_compiled_fns"] if k.settings.method == "beam"]
    longest = 2 * model.encode_source(["123"]).shape[1] + 10
    assert keys == [CompileKey(made[1], longest, True, False, sums_coverage=True)]


def test_docstring_examples_run():
    import doctest

    from keras_rnnattn.models import _translator_readout, translator

    result = doctest.testmod(translator)
    assert result.attempted >= 10 and result.failed == 0
    result = doctest.testmod(_translator_readout)
    assert result.attempted > 0 and result.failed == 0


def test_training_mistakes_get_one_clear_error():
    model = tiny()
    model.compile()
    pairs = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    (source, target_in), target_out = pairs
    fix = r"x, y = model\.encode_pairs\(source_texts, target_texts\)"
    with pytest.raises(ValueError, match=rf"whole result of `encode_pairs`.*{fix}"):
        model.fit(pairs, verbose=0)
    # Texts need their targets (texts with them train: test_text_datasets.py).
    with pytest.raises(ValueError, match=r"need their target texts.*translate"):
        model.fit(SOURCES[:8], verbose=0)
    with pytest.raises(ValueError, match=r"\(batch, length\). Received shape \(8,"):
        model.fit((source[..., None], target_in), target_out, verbose=0)
    with pytest.raises(ValueError, match=rf"target inputs' shape.*{fix}"):
        model.fit((source, target_in), target_out[:, :-1], verbose=0)
    with pytest.raises(ValueError, match=r"x must be \(source_ids, target_in_ids\)"):
        model.evaluate(source, target_out, verbose=0)
    x, y = pairs  # the fix the messages name
    history = model.fit(x, y, epochs=1, verbose=0, validation_data=(x, y))
    assert np.isfinite(history.history["val_loss"]).all()


def test_tf_data_of_pairs_trains_and_mistakes_are_named():
    tf = pytest.importorskip("tensorflow")
    model = tiny()
    model.compile()
    x, y = model.encode_pairs(SOURCES[:8], TARGETS[:8])
    data = tf.data.Dataset.from_tensor_slices((x, y))
    with pytest.raises(ValueError, match=r"not batched.*\.batch\(n\)"):
        model.fit(data, verbose=0)
    with pytest.raises(ValueError, match=r"must yield \(\(source_ids, target_in_ids\)"):
        model.fit(tf.data.Dataset.from_tensor_slices((x[0], y)).batch(4), verbose=0)
    losses = model.fit(data.batch(4), epochs=1, verbose=0).history["loss"]
    assert np.isfinite(losses).all()


def test_a_search_scales_the_fixnorm_kernel_once_not_at_every_step():
    r = 3.5
    model = tiny(lexical_model=True, fixnorm=r)
    kernel = np_(model.output_dense.kernel)
    constants = model.step_constants()
    start = 0
    for block, size in zip(constants["output_kernels"], model._readout.sizes):
        w = kernel[start : start + size]
        start += size
        want = r * w / np.linalg.norm(w, axis=0, keepdims=True)
        np.testing.assert_allclose(np_(block), want, rtol=1e-6)
    # A step given the constants is the step that computes them itself.
    source, _ = model.encode_pairs(SOURCES[:3], TARGETS[:3])[0]
    state = model.initial_state(source)
    ids = ops.full((3,), model.target_tokenizer.bos_id, "int32")
    with_constants = model.next_fn(ids, state, constants=constants)
    without = model.next_fn(ids, state)
    np.testing.assert_array_equal(np_(with_constants[0]), np_(without[0]))
    # The search computes them once (JAX and TensorFlow trace the search
    # once; a torch step calling it would count every step).
    calls = []
    scaled = model.step_constants

    def counted():
        calls.append(1)
        return scaled()

    model.step_constants = counted
    tokens, _ = model.generate_ids(source, max_length=6)
    assert len(calls) == 1
    # ... and decodes as the steps without them do.
    step_ids, want = ids, []
    for _ in range(6):
        logits, state = model.next_fn(step_ids, state)[:2]
        step_ids = ops.cast(ops.argmax(logits, axis=-1), "int32")
        want.append(np_(step_ids))
    want = np.stack(want, axis=1)
    eos = model.target_tokenizer.eos_id
    for got_row, want_row in zip(tokens, want):
        end = list(want_row).index(eos) + 1 if eos in want_row else len(want_row)
        np.testing.assert_array_equal(got_row[:end], want_row[:end])

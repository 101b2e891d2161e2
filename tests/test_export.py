"""Exported SavedModels and TFLite files give the Keras model's results."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_rnnattn.decoding import SearchSettings
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.export import export_model, export_preset
from keras_rnnattn.models import (
    AttentionClassifier,
    AttentiveLanguageModel,
    SequenceTagger,
    Translator,
    TranslatorEnsemble,
)
from keras_rnnattn.text import CharTokenizer, WordTokenizer
from keras_rnnattn.text import inputs as text_inputs

tf = pytest.importorskip("tensorflow")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKEND = keras.backend.backend()
tf_only = pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="exported directly under TensorFlow; the other backends are tested "
    "through the subprocess path below",
)

PAIRS = [("abcd", "dcba"), ("ab", "ba"), ("cab", "bac"), ("dbca", "acbd")]
TEXTS = ["a good film", "a bad film", "good good", "bad", "film film good"]


def translator(**kwargs):
    keras.utils.set_random_seed(3)
    src = CharTokenizer().fit([s for s, _ in PAIRS])
    tgt = CharTokenizer().fit([t for _, t in PAIRS])
    model = Translator(
        src, tgt, embedding_dim=8, units=16, max_target_length=12, **kwargs
    )
    x, y = model.encode_pairs([s for s, _ in PAIRS] * 8, [t for _, t in PAIRS] * 8)
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    model.fit(x, y, epochs=3, verbose=0)  # non-trivial weights
    return model


def classifier():
    keras.utils.set_random_seed(4)
    tok = WordTokenizer().fit(TEXTS)
    return AttentionClassifier(
        tokenizer=tok, num_classes=3, embedding_dim=8, units=8, max_length=12
    )


def language_model():
    keras.utils.set_random_seed(5)
    tok = CharTokenizer().fit(["abcabc", "cab"])
    return AttentiveLanguageModel(
        tokenizer=tok, embedding_dim=8, units=16, max_length=16
    )


def onnx_runner(path):
    """`run(**inputs) -> {output name: array}` of an ONNX file (onnxruntime)."""
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]

    def run(**inputs):
        return dict(zip(names, session.run(names, inputs)))

    return run


def interpreter(path):
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    runner = litert.Interpreter(model_path=path)
    runner.allocate_tensors()
    return runner.get_signature_runner()


def manifest(path):
    with open(os.path.join(path, "export.json"), encoding="utf-8") as file:
        return json.load(file)


def padded(ids, length):
    return np.pad(ids, ((0, 0), (0, length - ids.shape[1]))).astype("int32")


@tf_only
def test_classifier_saved_model_and_tflite(tmp_path):
    model = classifier()
    ids = model.tokenizer.encode_batch(TEXTS, max_length=12)
    ids = padded(ids, 12)
    expected = model.predict(ids, verbose=0)

    # Keras's format names ("tf_saved_model", "litert"); the first names stay.
    export_model(model, str(tmp_path / "sm"), "tf_saved_model")
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    got = loaded.signatures["serving_default"](token_ids=tf.constant(ids))
    np.testing.assert_allclose(got["probabilities"].numpy(), expected, atol=1e-5)
    assert manifest(str(tmp_path / "sm"))["format"] == "saved_model"

    export_model(
        model, str(tmp_path / "lite"), "litert", batch_size=5, sequence_length=12
    )
    run = interpreter(str(tmp_path / "lite" / "serving_default.tflite"))
    np.testing.assert_allclose(run(token_ids=ids)["probabilities"], expected, atol=1e-5)
    assert manifest(str(tmp_path / "lite"))["tokenizers"]["tokenizer"]["eos_id"] == 3

    export_model(
        model,
        str(tmp_path / "q"),
        "tflite",
        batch_size=5,
        sequence_length=12,
        quantize=True,
    )
    quantized = interpreter(str(tmp_path / "q" / "serving_default.tflite"))
    probs = quantized(token_ids=ids)["probabilities"]
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(probs, expected, atol=0.05)  # 8-bit weights


@tf_only
def test_tagger_saved_model(tmp_path):
    keras.utils.set_random_seed(6)
    tok = WordTokenizer().fit(TEXTS)
    model = SequenceTagger(tokenizer=tok, tags=["O", "X"], embedding_dim=8, units=8)
    ids = padded(tok.encode_batch(TEXTS, max_length=6), 6)
    export_model(model, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    got = loaded.signatures["serving_default"](token_ids=tf.constant(ids))
    np.testing.assert_allclose(
        got["probabilities"].numpy(), model.predict(ids, verbose=0), atol=1e-5
    )


def tagger():
    keras.utils.set_random_seed(6)
    tok = WordTokenizer().fit(TEXTS)
    return SequenceTagger(tokenizer=tok, tags=["O", "X"], embedding_dim=8, units=8)


# Classifying with only the ONNX file and the tokenizer JSON, without Keras.
ONNX_WITHOUT_KERAS = """
import json, sys
import onnxruntime
from keras_rnnattn.text import Tokenizer

folder, texts = sys.argv[1], json.loads(sys.argv[2])
tokenizer = Tokenizer.load(f"{folder}/tokenizer.json")
ids = tokenizer.encode_batch(texts)  # (N, S), padded with 0
session = onnxruntime.InferenceSession(f"{folder}/serving_default.onnx")
(probabilities,) = session.run(["probabilities"], {"token_ids": ids})
assert "keras" not in sys.modules and "tensorflow" not in sys.modules
print(json.dumps({"ids": ids.tolist(), "probabilities": probabilities.tolist()}))
"""


def test_classifier_and_tagger_onnx(tmp_path):
    """ONNX files give the Keras model's probabilities on any batch and length,
    on every backend (JAX and torch export through the TensorFlow subprocess),
    and classify strings with the tokenizer JSON alone."""
    pytest.importorskip("tf2onnx")
    pytest.importorskip("onnxruntime")
    models = {"classifier": classifier()}
    if BACKEND == "tensorflow":
        # Under JAX and torch the export is the same TensorFlow subprocess for
        # any model; the slow tests below export the tagger there too.
        models["tagger"] = tagger()
    ids = padded(models["classifier"].tokenizer.encode_batch(TEXTS), 12)
    for name, model in models.items():
        path = str(tmp_path / name)
        assert export_model(model, path, "onnx") == path
        info = manifest(path)
        assert info["format"] == "onnx" and info["not_converted"] == {}
        assert set(info["signatures"]) == {"serving_default"}
        assert info.get("tags") == getattr(model, "tags", None)  # the tagger's
        run = onnx_runner(os.path.join(path, "serving_default.onnx"))
        for batch in (ids, ids[:2, :4], ids[3:, :2]):  # variable batch and length
            np.testing.assert_allclose(
                run(token_ids=batch)["probabilities"],
                model.predict(batch, verbose=0),
                atol=1e-5,
            )

    model = models["classifier"]
    env = {**os.environ, "PYTHONPATH": REPO}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            ONNX_WITHOUT_KERAS,
            str(tmp_path / "classifier"),
            json.dumps(TEXTS),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    ids = np.array(out["ids"], "int32")
    expected = model.predict(ids, verbose=0)
    np.testing.assert_allclose(out["probabilities"], expected, atol=1e-5)
    np.testing.assert_allclose(
        out["probabilities"], model.classify(TEXTS)[1], atol=1e-5
    )


def check_onnx_probabilities(model, path, ids):
    """`serving_default.onnx` gives `model.predict`'s probabilities on `ids`
    and on a shorter batch of shorter rows."""
    run = onnx_runner(os.path.join(path, "serving_default.onnx"))
    for batch in (ids, ids[: len(ids) // 2, : ids.shape[1] // 2]):
        np.testing.assert_allclose(
            run(token_ids=batch)["probabilities"],
            model.predict(batch, verbose=0),
            atol=1e-5,
        )


@pytest.mark.slow
def test_preset_sized_classifier_and_tagger_onnx(tmp_path):
    """The shipped classifier through `export_preset`, and a tagger of its size,
    on real sentences, on every backend."""
    pytest.importorskip("tf2onnx")
    texts = [
        "A gripping, beautifully acted film.",
        "Dull and far too long; I left halfway.",
        "not bad at all",
        "The plot makes no sense, but the music is wonderful and the cast shines.",
    ]
    model = AttentionClassifier.from_preset("movie_snippets_sentiment")
    export_preset("movie_snippets_sentiment", str(tmp_path / "clf"), "onnx")
    ids = text_inputs.pad(
        [model.tokenizer.encode(text) for text in texts], model.tokenizer.pad_id
    )
    check_onnx_probabilities(model, str(tmp_path / "clf"), ids)
    assert manifest(str(tmp_path / "clf"))["labels"] == ["negative", "positive"]
    _, probabilities = model.classify(texts)
    run = onnx_runner(str(tmp_path / "clf" / "serving_default.onnx"))
    np.testing.assert_allclose(
        run(token_ids=ids)["probabilities"], probabilities, atol=1e-5
    )

    keras.utils.set_random_seed(7)
    tagger = SequenceTagger(
        tokenizer=model.tokenizer,
        tags=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
        embedding_dim=128,
        units=64,
    )
    export_model(tagger, str(tmp_path / "tag"), "onnx")
    check_onnx_probabilities(tagger, str(tmp_path / "tag"), ids)


@pytest.mark.slow
def test_translator_onnx(tmp_path):
    """encode + decode_step give Keras's logits and greedy tokens; greedy and
    beam_search (with penalties) give `generate_ids`'s tokens, on every backend."""
    pytest.importorskip("tf2onnx")
    model = translator()
    penalties = {"length_penalty": 1.5, "coverage_penalty": 0.4}
    search = SearchSettings("beam", beam_size=4, **penalties)
    export_model(model, str(tmp_path), "onnx", search=search, max_length=12)
    info = manifest(str(tmp_path))
    assert set(info["signatures"]) == {"encode", "decode_step", "greedy", "beam_search"}
    assert "next_state_*" in info["signatures"]["decode_step"]
    ids = model.encode_source([s for s, _ in PAIRS])  # (4, S)

    state = onnx_runner(str(tmp_path / "encode.onnx"))(source_ids=ids)
    step = onnx_runner(str(tmp_path / "decode_step.onnx"))
    keras_state = model.initial_state(ids)
    token = np.full((len(ids),), model.target_tokenizer.bos_id, "int32")
    produced = []
    for _ in range(12):
        out = step(token_ids=token, **state)
        logits, keras_state, _ = model.next_fn(
            keras.ops.convert_to_tensor(token), keras_state
        )
        np.testing.assert_allclose(
            out["logits"], keras.ops.convert_to_numpy(logits), atol=1e-5
        )
        token = np.argmax(out["logits"], axis=-1).astype("int32")
        produced.append(token)
        state.update(
            {k[len("next_") :]: v for k, v in out.items() if k.startswith("next_")}
        )
    greedy, _ = model.generate_ids(ids, max_length=12)
    eos = model.target_tokenizer.eos_id
    for row, ref in zip(np.stack(produced, axis=1), greedy):
        n = list(ref).index(eos) + 1 if eos in ref else len(ref)
        np.testing.assert_array_equal(row[:n], ref[:n])

    for name, beam, kwargs in (("greedy", 1, {}), ("beam_search", 4, penalties)):
        got = onnx_runner(str(tmp_path / f"{name}.onnx"))(source_ids=ids)
        tokens, scores, alignments = model.generate_ids(
            ids, beam_size=beam, max_length=12, return_alignments=True, **kwargs
        )
        np.testing.assert_array_equal(got["tokens"], tokens)
        np.testing.assert_allclose(got["scores"], scores, atol=1e-4)
        np.testing.assert_allclose(got["alignments"], alignments, atol=1e-5)


@pytest.mark.slow
def test_preset_translator_onnx(tmp_path):
    """The shipped ensemble: decode_step's logits, greedy and beam tokens (with
    the preset's length penalty) as Keras's."""
    pytest.importorskip("tf2onnx")
    export_preset("ding_de_en_bahdanau", str(tmp_path), "onnx", max_length=20)
    info = manifest(str(tmp_path))
    assert info["not_converted"] == {}
    model = TranslatorEnsemble.from_preset("ding_de_en_bahdanau")
    ids = model.encode_source(["Ich habe keine Zeit.", "Das Haus ist klein."])
    state = onnx_runner(str(tmp_path / "encode.onnx"))(source_ids=ids)
    step = onnx_runner(str(tmp_path / "decode_step.onnx"))
    keras_state = model.initial_state(ids)
    token = np.full((len(ids),), model.target_tokenizer.bos_id, "int32")
    for _ in range(6):
        out = step(token_ids=token, **state)
        logits, keras_state = model.next_fn(
            keras.ops.convert_to_tensor(token), keras_state
        )[:2]
        np.testing.assert_allclose(
            out["logits"], keras.ops.convert_to_numpy(logits), atol=1e-4, rtol=1e-5
        )
        token = np.argmax(out["logits"], axis=-1).astype("int32")
        state.update(
            {k[len("next_") :]: v for k, v in out.items() if k.startswith("next_")}
        )
    for name, beam in (("greedy", 1), ("beam_search", 4)):
        got = onnx_runner(str(tmp_path / f"{name}.onnx"))(source_ids=ids)
        penalty = {"length_penalty": info["options"]["length_penalty"]}
        tokens, scores = model.generate_ids(
            ids, beam_size=beam, max_length=20, **(penalty if beam > 1 else {})
        )
        np.testing.assert_array_equal(got["tokens"], tokens)
        np.testing.assert_allclose(got["scores"], scores, atol=1e-4)


@pytest.mark.slow
def test_language_model_onnx(tmp_path):
    pytest.importorskip("tf2onnx")
    model = language_model()
    export_model(model, str(tmp_path), "onnx", max_length=8)
    state = model.initial_state(2)
    inputs = {
        f"state_{i}": keras.ops.convert_to_numpy(v)
        for i, v in enumerate(keras.tree.flatten(state))
    }
    token = np.array([2, 2], "int32")
    out = onnx_runner(str(tmp_path / "decode_step.onnx"))(token_ids=token, **inputs)
    logits, state = model.next_logits(keras.ops.convert_to_tensor(token), state)
    np.testing.assert_allclose(
        out["logits"], keras.ops.convert_to_numpy(logits), atol=1e-5
    )
    for i, value in enumerate(keras.tree.flatten(state)):
        np.testing.assert_allclose(
            out[f"next_state_{i}"], keras.ops.convert_to_numpy(value), atol=1e-5
        )

    ids = [[2] + model.tokenizer.encode(p) for p in ("ab", "c")]
    ids = padded(np.array([ids[0], ids[1] + [0]], "int32"), 4)
    uniforms = keras.ops.convert_to_numpy(draw_uniforms((8, 2), 11))
    got = onnx_runner(str(tmp_path / "sample.onnx"))(token_ids=ids, uniforms=uniforms)
    tokens, scores = model.generate_ids(ids, uniforms=uniforms, max_length=8)
    np.testing.assert_array_equal(got["tokens"], tokens)
    np.testing.assert_allclose(got["scores"], scores, atol=1e-4)


@tf_only  # the other backends export through the same TensorFlow writer
def test_int8_onnx_stores_large_weights_as_int8_with_the_same_tokens(tmp_path):
    # Each large weight stored as int8 with a scale per column, restored to
    # float32 at the top of the graph (the decode loop reads it inside).
    model = translator()
    ids = padded(model.encode_source(["abcd", "dcba", "abc"]), 8)
    files = {}
    for quantize in (False, True):
        folder = str(tmp_path / str(quantize))
        export_model(
            model, folder, "onnx", sequence_length=8, max_length=12,
            quantize=quantize, signatures=["greedy"],
        )  # fmt: skip
        files[quantize] = os.path.join(folder, "greedy.onnx")
        assert manifest(folder)["options"]["quantize"] is quantize
    float32, int8 = (onnx_runner(files[q])(source_ids=ids)["tokens"] for q in (0, 1))
    want = model.generate_ids(ids, 1, 12)[0]
    np.testing.assert_array_equal(float32, want)
    assert (int8 == want).all(axis=1).mean() >= 2 / 3  # int8 rounding may flip one
    onnx = pytest.importorskip("onnx")
    from keras_rnnattn.export.onnx_int8 import MIN_ELEMENTS

    def initializers(file):
        return {t.name: t for t in onnx.load(file).graph.initializer}

    large = [
        name
        for name, t in initializers(files[False]).items()
        if t.data_type == onnx.TensorProto.FLOAT
        and int(np.prod(t.dims)) >= MIN_ELEMENTS
    ]
    assert large  # the recurrent kernels at least
    int8 = initializers(files[True])
    for name in large:  # stored as int8 with a scale; the float one is gone
        assert int8[f"{name}_int8"].data_type == onnx.TensorProto.INT8
        assert name not in int8
    assert os.path.getsize(files[True]) < os.path.getsize(files[False])


def test_onnx_errors(tmp_path, monkeypatch):
    model = classifier()
    with pytest.raises(ValueError, match="TFLite and ONNX.*quantize=True"):
        export_model(model, str(tmp_path), "tf_saved_model", quantize=True)
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # not installed
    message = 'pip install "\\.\\[onnx\\]". Missing: tf2onnx'
    with pytest.raises(ImportError, match=message):
        export_model(model, str(tmp_path), "onnx")
    with pytest.raises(ImportError, match=message):
        export_preset("no_such_preset", str(tmp_path), "onnx")
    assert not os.listdir(tmp_path)


def check_translator_saved_model(model, path, **penalties):
    """Greedy and beam tokens identical, encode + decode_step = greedy.

    `penalties`: the beam's `length_penalty` and `coverage_penalty` exported.
    """
    loaded = tf.saved_model.load(path)
    ids = model.encode_source([s for s, _ in PAIRS])
    for name, beam, kwargs in (("greedy", 1, {}), ("beam_search", 4, penalties)):
        got = loaded.signatures[name](source_ids=tf.constant(ids))
        tokens, scores, alignments = model.generate_ids(
            ids, beam_size=beam, max_length=12, return_alignments=True, **kwargs
        )
        np.testing.assert_array_equal(got["tokens"].numpy(), tokens)
        np.testing.assert_allclose(got["scores"].numpy(), scores, atol=1e-4)
        np.testing.assert_allclose(got["alignments"].numpy(), alignments, atol=1e-5)

    state = loaded.signatures["encode"](source_ids=tf.constant(ids))
    token = np.full((len(ids),), model.target_tokenizer.bos_id, "int32")
    produced = []
    for _ in range(12):
        out = loaded.signatures["decode_step"](
            token_ids=tf.constant(token),
            **{k: v for k, v in state.items()},
        )
        token = np.argmax(out["logits"].numpy(), axis=-1).astype("int32")
        produced.append(token)
        state.update({k: v for k, v in out.items() if k.startswith("state_")})
        np.testing.assert_allclose(out["alignment"].numpy().sum(-1), 1.0, atol=1e-5)
    greedy, _ = model.generate_ids(ids, max_length=12)
    produced = np.stack(produced, axis=1)
    eos = model.target_tokenizer.eos_id
    for row, ref in zip(produced, greedy):  # equal up to the first end token
        n = list(ref).index(eos) + 1 if eos in ref else len(ref)
        np.testing.assert_array_equal(row[:n], ref[:n])


def export_tflite_and_check(model, path):
    """Exports a translator to TFLite for one 6-token sentence and checks it."""
    export_model(model, path, "tflite", batch_size=1, sequence_length=6, max_length=12)
    check_translator_tflite(model, path)


def check_translator_tflite(model, path, **penalties):
    """Encoder + decoder-step loop, and the whole greedy and beam loops.

    `penalties`: the beam's `length_penalty` and `coverage_penalty` exported.
    """
    ids = padded(model.encode_source(["abcd"]), 6)  # one sentence, 6 tokens
    greedy, _ = model.generate_ids(ids, max_length=12)
    beam, beam_scores, beam_alignments = model.generate_ids(
        ids, beam_size=4, max_length=12, return_alignments=True, **penalties
    )
    info = manifest(path)
    assert {"encode", "decode_step", "greedy"} <= set(info["signatures"])

    state = interpreter(os.path.join(path, "encode.tflite"))(source_ids=ids)
    step = interpreter(os.path.join(path, "decode_step.tflite"))
    token = np.array([model.target_tokenizer.bos_id], "int32")
    produced = []
    for _ in range(12):
        out = step(token_ids=token, **state)
        token = np.argmax(out["logits"], axis=-1).astype("int32")
        produced.append(int(token[0]))
        state.update({k: v for k, v in out.items() if k.startswith("state_")})
    eos = model.target_tokenizer.eos_id
    n = list(greedy[0]).index(eos) + 1 if eos in greedy[0] else 12
    assert produced[:n] == list(greedy[0][:n])

    run = interpreter(os.path.join(path, "greedy.tflite"))(source_ids=ids)
    np.testing.assert_array_equal(run["tokens"], greedy)
    _, _, greedy_alignments = model.generate_ids(
        ids, max_length=12, return_alignments=True
    )
    np.testing.assert_allclose(run["alignments"], greedy_alignments, atol=1e-5)
    if "beam_search" in info["signatures"]:
        got = interpreter(os.path.join(path, "beam_search.tflite"))(source_ids=ids)
        np.testing.assert_array_equal(got["tokens"], beam)
        np.testing.assert_allclose(got["scores"], beam_scores, atol=1e-4)
        np.testing.assert_allclose(got["alignments"], beam_alignments, atol=1e-5)


@tf_only
@pytest.mark.parametrize(
    "options",
    [
        # 40-50 s each: the default suite exports a lexical member (with
        # fixnorm) to a SavedModel in the ensemble's test, and a Translator to
        # TFLite in test_translator_tflite.
        pytest.param({}, marks=pytest.mark.slow),
        pytest.param({"share_decoder_embeddings": True}, marks=pytest.mark.slow),
        pytest.param({"fixnorm": 3.5}, marks=pytest.mark.slow),
    ],
    ids=["untied", "tied_output", "fixnorm"],
)
def test_lexical_model_translator_tflite(tmp_path, options):
    # The source embeddings ride in the exported memory; tokens match Keras.
    # With the tied output layer, the target embedding is read by both ends;
    # with fixnorm, the output layer normalizes its weights in the graph.
    model = translator(lexical_model=True, **options)
    export_model(
        model, str(tmp_path), "tflite", batch_size=1, sequence_length=6, max_length=12
    )
    check_translator_tflite(model, str(tmp_path))


def ensemble_with_a_fixnorm_lexical_member():
    # The members' states and memories are flattened like one translator's; the
    # second is a lexical model whose output layer normalizes (fixnorm).
    return TranslatorEnsemble(
        [translator(), translator(lexical_model=True, fixnorm=3.5)]
    )


@tf_only
def test_translator_ensemble_exports_like_a_translator(tmp_path):
    model = ensemble_with_a_fixnorm_lexical_member()
    export_model(model, str(tmp_path / "sm"), max_length=12)
    check_translator_saved_model(model, str(tmp_path / "sm"))


@tf_only
@pytest.mark.slow  # 80-110 s; the same graphs go to a SavedModel in the default run
def test_translator_ensemble_tflite(tmp_path):
    model = ensemble_with_a_fixnorm_lexical_member()
    export_tflite_and_check(model, str(tmp_path / "lite"))


@tf_only
def test_translator_saved_model(tmp_path):
    # The beam's penalties are fixed at export (the beam without them is
    # checked by the ensemble's test) and recorded.
    model = translator()
    penalties = {"length_penalty": 1.5, "coverage_penalty": 0.4}
    search = SearchSettings("beam", beam_size=4, **penalties)
    export_model(model, str(tmp_path), search=search, max_length=12)
    check_translator_saved_model(model, str(tmp_path), **penalties)
    info = manifest(str(tmp_path))
    assert set(info["signatures"]) == {
        "encode",
        "decode_step",
        "greedy",
        "beam_search",
        "serving_default",
    }
    assert {k: info["options"][k] for k in penalties} == penalties
    assert (
        "length penalty 1.5, coverage penalty 0.4" in info["signatures"]["beam_search"]
    )


def test_an_unknown_format_names_the_formats(tmp_path):
    formats = "'tf_saved_model', 'litert', 'onnx', 'saved_model', 'tflite'"
    with pytest.raises(ValueError, match=f"one of \\({formats}\\)"):
        export_model(classifier(), str(tmp_path), "onnx_or_so")
    with pytest.raises(ValueError, match="Received: format='openvino'"):
        export_preset("no_such_preset", str(tmp_path), "openvino")


def test_penalties_are_checked(tmp_path):
    tok = CharTokenizer().fit(["abcd"])
    model = Translator(tok, tok, embedding_dim=4, units=4)
    with pytest.raises(ValueError, match="length_penalty=-1"):
        search = SearchSettings("beam", length_penalty=-1)  # GNMT's α >= 0 here
        export_model(model, str(tmp_path), search=search)
    with pytest.raises(ValueError, match="beam_search only"):
        export_model(
            classifier(), str(tmp_path), search=SearchSettings(length_penalty=0.5)
        )
    with pytest.raises(ValueError, match="must be a keras_rnnattn.decoding.Search"):
        export_model(model, str(tmp_path), search={"length_penalty": 0.5})
    # A SearchSettings of the defaults passes a model without a search.
    export_model(classifier(), str(tmp_path / "clf"), search=SearchSettings())


# The export guide's example (docs/guides/export.md): translating with the .tflite
# files and the tokenizer JSON only (`keras_rnnattn.text` is pure Python), without
# importing Keras.
WITHOUT_KERAS = """
import json, sys
from ai_edge_litert.interpreter import Interpreter
from keras_rnnattn.text import CharTokenizer as Tokenizer  # BpeTokenizer for Ding

folder, length = sys.argv[1], int(sys.argv[2])
def load(name):
    with open(f"{folder}/{name}.json", encoding="utf-8") as file:
        return Tokenizer.from_config(json.load(file)["config"])
source, target = load("source_tokenizer"), load("target_tokenizer")
greedy = Interpreter(model_path=f"{folder}/greedy.tflite").get_signature_runner()
ids = source.encode_batch(["abcd"], max_length=length, add_eos=True)  # (1, length)
print(target.decode(greedy(source_ids=ids)["tokens"][0]))
assert "keras" not in sys.modules and "tensorflow" not in sys.modules
"""


@tf_only
def test_translator_tflite(tmp_path):
    # export_preset gives the beam the length penalty the preset's recipe
    # validated (what `keras-rnnattn translate --beam` uses), and records it.
    model = translator()
    preset = model.save_to_preset(
        str(tmp_path / "preset"), {"search": {"length_penalty": 1.5}}
    )
    export_preset(preset, str(tmp_path), "tflite", sequence_length=6)
    check_translator_tflite(model, str(tmp_path), length_penalty=1.5)
    info = manifest(str(tmp_path))
    assert info["options"]["length_penalty"] == 1.5
    assert info["options"]["coverage_penalty"] == 0.0
    ids = padded(model.encode_source(["abcd"]), 6)
    beam = interpreter(str(tmp_path / "beam_search.tflite"))(source_ids=ids)
    translation = model.translate("abcd", beam_size=4, length_penalty=1.5)
    assert model.target_tokenizer.decode(beam["tokens"][0]) == translation
    pytest.importorskip("ai_edge_litert.interpreter")
    env = {**os.environ, "PYTHONPATH": REPO}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_KERAS, str(tmp_path), "6"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == model.translate("abcd", max_length=12)


@tf_only
def test_language_model_saved_model_and_tflite(tmp_path):
    model = language_model()
    prompts = ["ab", "c"]
    ids = [[2] + model.tokenizer.encode(p) for p in prompts]
    ids = padded(np.array([ids[0], ids[1] + [0]], "int32"), 4)
    uniforms = np.asarray(draw_uniforms((8, 2), 11))
    expected = model.generate(prompts, max_length=8, seed=11)

    export_model(model, str(tmp_path / "sm"), max_length=8)
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    got = loaded.signatures["sample"](
        token_ids=tf.constant(ids), uniforms=tf.constant(uniforms)
    )["tokens"].numpy()
    eos = model.tokenizer.eos_id
    texts = []
    for prompt, row in zip(prompts, got.tolist()):
        row = row[: row.index(eos)] if eos in row else row
        texts.append(prompt + model.tokenizer.decode(row))
    assert texts == expected

    export_model(
        model,
        str(tmp_path / "lite"),
        "tflite",
        batch_size=2,
        sequence_length=4,
        max_length=8,
    )
    step = interpreter(str(tmp_path / "lite" / "decode_step.tflite"))
    state = model.initial_state(2)
    inputs = {
        f"state_{i}": np.asarray(v) for i, v in enumerate(keras.tree.flatten(state))
    }
    token = np.array([2, 2], "int32")
    out = step(token_ids=token, **inputs)
    logits, _ = model.next_logits(keras.ops.convert_to_tensor(token), state)
    np.testing.assert_allclose(out["logits"], np.asarray(logits), atol=1e-5)
    if "sample" in manifest(str(tmp_path / "lite"))["signatures"]:
        run = interpreter(str(tmp_path / "lite" / "sample.tflite"))
        np.testing.assert_array_equal(
            run(token_ids=ids, uniforms=uniforms)["tokens"], got
        )


def test_tflite_needs_static_shapes_and_a_built_model(tmp_path):
    model = classifier()
    with pytest.raises(ValueError, match="set `batch_size`"):
        export_model(model, str(tmp_path), "tflite", sequence_length=8)
    with pytest.raises(ValueError, match="set `sequence_length`"):
        export_model(model, str(tmp_path), "tflite", batch_size=1)
    with pytest.raises(ValueError, match="format"):
        export_model(model, str(tmp_path), "torchscript")
    with pytest.raises(ValueError, match="at most this model's limit of 12"):
        export_model(model, str(tmp_path), sequence_length=13)
    with pytest.raises(ValueError, match="model.export"):
        export_model(keras.Sequential([keras.layers.Dense(2)]), str(tmp_path))
    with pytest.raises(ValueError, match=r"signatures \['serving_default'\]"):
        export_model(model, str(tmp_path), signatures=["greedy"])
    with pytest.raises(ValueError, match=r"Received: signatures=\[\]"):
        export_model(model, str(tmp_path), signatures=[])
    model.built = False
    with pytest.raises(ValueError, match="not built"):
        export_model(model, str(tmp_path))


@pytest.mark.skipif(
    BACKEND != "torch",
    reason="the TensorFlow subprocess path: the same for JAX and torch models (a "
    "preset on disk), run in the torch suite; TensorFlow exports in-process",
)
def test_exports_under_other_backends(tmp_path):
    """A JAX or torch model exports through a TensorFlow subprocess to
    artefacts that give this backend's results."""
    model = translator()
    export_tflite_and_check(model, str(tmp_path / "lite"))
    # export_preset gives the beam the preset's validated length penalty.
    preset = model.save_to_preset(
        str(tmp_path / "preset"), {"search": {"length_penalty": 1.5}}
    )
    export_preset(preset, str(tmp_path / "sm"), max_length=12)
    check_translator_saved_model(model, str(tmp_path / "sm"), length_penalty=1.5)
    assert manifest(str(tmp_path / "sm"))["options"]["length_penalty"] == 1.5

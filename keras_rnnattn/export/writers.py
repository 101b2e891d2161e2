"""The writers of `keras_rnnattn.export`: a model's signatures as a SavedModel,
as TFLite files or as ONNX files, and its tokenizers as JSON."""

import contextlib
import json
import logging
import os
import tempfile

import keras


# --- Signatures -------------------------------------------------------------------------
def _spec(shape, dtype, name):
    import tensorflow as tf

    return tf.TensorSpec(shape, dtype, name=name)


def _endpoints(model, options):
    """`[(name, fn, input_signature, description)]` for the model's signatures
    (those of `options["signatures"]` when it names some)."""
    wanted = options.get("signatures")
    return [
        _signature(endpoint)
        for endpoint in model.export_endpoints(options)
        if wanted is None or endpoint.name in wanted
    ]


def _signature(endpoint):
    """An `Endpoint` of a model as a function of one dict of named tensors."""
    specs = {
        name: _spec(shape, dtype, name)
        for name, (shape, dtype) in endpoint.inputs.items()
    }

    def fn(inputs):
        return endpoint.fn(**inputs)

    return endpoint.name, fn, [specs], endpoint.description


# --- Writers ----------------------------------------------------------------------------
def _archive(model, endpoints):
    archive = keras.export.ExportArchive()
    archive.track(model)
    by_name = {entry[0]: entry for entry in endpoints}
    if "greedy" in by_name:
        endpoints = endpoints + [("serving_default",) + by_name["greedy"][1:]]
    for name, fn, signature, _ in endpoints:
        archive.add_endpoint(name, fn, input_signature=signature)
    return archive


def _describe(endpoints):
    return {name: description for name, _, _, description in endpoints}


def _base_manifest(model, format, options):
    manifest = {
        "format": format,
        "model_class": type(model).__name__,
        "backend": keras.backend.backend(),  # a fact recorded, not a branch
        "options": dict(options),
    }
    # The names of the outputs' classes (classifier) and tags (tagger), so that
    # a reader needs no Keras for strings out either.
    for name in ("labels", "tags"):
        names = getattr(model, name, None)
        if names is not None:
            manifest[name] = [str(item) for item in names]
    return manifest


def write_saved_model(model, path, options):
    endpoints = _endpoints(model, options)
    archive = _archive(model, endpoints)
    archive.write_out(path, verbose=False)
    manifest = _base_manifest(model, "saved_model", options)
    signatures = _describe(endpoints)
    if "greedy" in signatures:
        signatures["serving_default"] = "the same as greedy"
    manifest["signatures"] = signatures
    return manifest


def write_tflite(model, path, options):
    import tensorflow as tf

    endpoints = _endpoints(model, options)
    manifest = _base_manifest(model, "tflite", options)
    manifest["signatures"], manifest["not_converted"] = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        saved = os.path.join(folder, "saved_model")
        _archive(model, endpoints).write_out(saved, verbose=False)
        for name, _, _, description in endpoints:
            converter = tf.lite.TFLiteConverter.from_saved_model(
                saved, signature_keys=[name]
            )
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
            if options["quantize"]:
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            try:
                flatbuffer = converter.convert()
            except Exception as error:  # the converter raises several types
                manifest["not_converted"][name] = _first_line(error)
                continue
            with open(os.path.join(path, f"{name}.tflite"), "wb") as file:
                file.write(flatbuffer)
            manifest["signatures"][name] = description
    if not manifest["signatures"]:
        raise RuntimeError(
            "No signature converted to TFLite builtin ops: "
            + json.dumps(manifest["not_converted"])
        )
    return manifest


@contextlib.contextmanager
def _tf2onnx_converter():
    """tf2onnx, quiet and without its reshape optimizer, for the `with` block.

    That optimizer (tf2onnx 1.17) rewrites the shape of the reshape that its
    transpose optimizer makes of `AttentionPooling`'s `(B, S, 1) -> (B, 1, S)`
    transpose with `0` (copy the dimension) for B, whose input there is the
    `(B * S, 1)` of the score layer's matmul: the file converts and passes
    `onnx.checker`, and onnxruntime fails on it with a broadcast error. Without
    it every signature gives Keras's results; the other optimizers run.
    """
    import tf2onnx
    from tf2onnx import optimizer

    optimizers = optimizer._optimizers  # the ordered dict optimize_graph runs
    kept = dict(optimizers)
    optimizers.pop("reshape_optimizer", None)
    tf2onnx_logger = logging.getLogger(tf2onnx.__name__)
    level = tf2onnx_logger.level
    tf2onnx_logger.setLevel(logging.ERROR)  # one line per op and rewriter
    try:
        yield tf2onnx
    finally:
        tf2onnx_logger.setLevel(level)
        optimizers.clear()
        optimizers.update(kept)


def _distinct_outputs(fn, input_names, renamed):
    """`fn` whose outputs named like an input are named `next_<name>`.

    ONNX names each value once, and the decoders' `decode_step` takes and
    returns `state_*`. The new names are appended to `renamed`.
    """

    def distinct(inputs):
        outputs = {}
        for name, value in fn(inputs).items():
            if name in input_names:
                renamed.append(name)
                name = f"next_{name}"
            outputs[name] = value
        return outputs

    return distinct


def write_onnx(model, path, options):
    import onnx
    import tensorflow as tf

    from keras_rnnattn.export.onnx_int8 import quantize_weights

    endpoints = _endpoints(model, options)
    manifest = _base_manifest(model, "onnx", options)
    manifest["signatures"], manifest["not_converted"] = {}, {}
    for name, fn, signature, description in endpoints:
        renamed = []
        function = tf.function(
            _distinct_outputs(fn, set(signature[0]), renamed),
            input_signature=signature,
            autograph=False,
        )
        try:
            with _tf2onnx_converter() as tf2onnx:
                proto, _ = tf2onnx.convert.from_function(
                    function, input_signature=signature
                )
            # tf2onnx keeps an op it cannot convert as a TensorFlow op; the
            # checker rejects such a graph.
            onnx.checker.check_model(proto)
        except Exception as error:  # the converter raises several types
            manifest["not_converted"][name] = _first_line(error)
            continue
        if options["quantize"]:
            proto = quantize_weights(proto)
        onnx.save(proto, os.path.join(path, f"{name}.onnx"))
        if renamed:  # `state_0`, `state_1`, ... -> "state_*"
            stems = sorted({f"{n.rpartition('_')[0] or n}_*" for n in renamed})
            description += "; in the file " + ", ".join(
                f"the output {stem} is next_{stem}" for stem in stems
            )
        manifest["signatures"][name] = description
        manifest["opset"] = max(
            entry.version
            for entry in proto.opset_import
            if entry.domain in ("", "ai.onnx")
        )
    if not manifest["signatures"]:
        raise RuntimeError(
            "No signature converted to ONNX: " + json.dumps(manifest["not_converted"])
        )
    return manifest


def _first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]


def write_tokenizers(model, path, manifest):
    from keras_rnnattn.presets import preset_tokenizers
    from keras_rnnattn.text.serialization import serialize_tokenizer

    files = {}
    for name, tokenizer in preset_tokenizers(model).items():
        filename = f"{name}.json"
        with open(os.path.join(path, filename), "w", encoding="utf-8") as file:
            json.dump(serialize_tokenizer(tokenizer), file, ensure_ascii=False)
        files[name] = {
            "file": filename,
            "pad_id": int(tokenizer.pad_id),
            "unk_id": int(tokenizer.unk_id),
            "bos_id": int(tokenizer.bos_id),
            "eos_id": int(tokenizer.eos_id),
        }
        proto = getattr(tokenizer, "model_proto", None)
        if isinstance(proto, bytes):  # a SentencePieceTokenizer: its model too,
            # for SentencePiece's runtimes (the JSON file holds it as well)
            with open(os.path.join(path, f"{name}.model"), "wb") as file:
                file.write(proto)
            files[name]["model_file"] = f"{name}.model"
    manifest["tokenizers"] = files


# Each format's writer: `writer(model, path, options) -> manifest`.
WRITERS = {
    "saved_model": write_saved_model,
    "tflite": write_tflite,
    "onnx": write_onnx,
}

"""SavedModel, TFLite (LiteRT) and ONNX export of the application models.

What each model exports (SavedModel signatures; TFLite and ONNX files of the
same names):

- `AttentionClassifier`, `SequenceTagger`: `serving_default`, token ids
  `(B, S)` to probabilities.
- `Translator`: `encode` (source ids to the decoding state), `decode_step`
  (one token and the state to logits, the new state and the attention
  weights), `greedy` and `beam_search` (source ids to output ids and scores,
  the whole decode loop inside the graph, `max_length`, the beam size and the
  beam's length and coverage penalties fixed at export). `serving_default` is
  `greedy`.
- `AttentiveLanguageModel`: `decode_step`, and `sample` (prompt ids and the
  uniform random numbers to draw with, to generated ids).

TFLite needs static shapes (`batch_size` and `sequence_length`) and is
converted with builtin ops only; a signature that does not convert is left
out and the reason is written to `export.json`. The folder also holds the
model's tokenizers as JSON (`keras_rnnattn.text` reads them without Keras) and
`export.json`, which lists the files, their signatures and the special ids.

ONNX files (one per signature, shapes variable like the SavedModel's) are
converted by tf2onnx from the same TensorFlow functions, less tf2onnx's reshape
optimizer (see `_tf2onnx_converter`). An output named like an input (the
decoders' `state_*`) is named `next_<name>` in ONNX, which needs distinct
names. Keras's own `model.export(format="onnx")` does not export these models:
on TensorFlow it runs tf2onnx with that optimizer (a graph that onnxruntime
rejects), torch's exporter has no `take_along_dim` (and would trace the RNN
loops at one length), and on JAX it needs jax2onnx, which the `onnx` extra
does not install.

Export runs under the TensorFlow backend. Under JAX and torch the model is
saved as a preset (the weights are the same on every backend) and a
TensorFlow subprocess exports it: torch has no SavedModel path, and JAX's
(jax2tf) writes StableHLO that TensorFlow 2.21 cannot run for this JAX
(`vhlo.composite_v2`, from `lax.top_k` in the decode loops).
"""

import argparse
import contextlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile

import keras
import numpy as np

from keras_rnnattn._extras import require

# Keras's names for the formats (`model.export(format=...)`), then the names this
# package used first, which stay: each names the SavedModel, TFLite or ONNX writer.
FORMATS = ("tf_saved_model", "litert", "onnx", "saved_model", "tflite")
_WRITERS = {
    "tf_saved_model": "saved_model",
    "litert": "tflite",
    "onnx": "onnx",
    "saved_model": "saved_model",
    "tflite": "tflite",
}
MANIFEST = "export.json"
# The packages the ONNX writer imports (the `onnx` extra also has onnxruntime,
# which runs the files).
_ONNX_PACKAGES = ("tensorflow", "onnx", "tf2onnx")
# The extra that installs each writer's packages, and what to call it in errors.
_EXTRAS = {
    "saved_model": ("tensorflow", "SavedModel export"),
    "tflite": ("export", "TFLite (LiteRT) export"),
    "onnx": ("onnx", "ONNX export"),
}


# --- Public API -----------------------------------------------------------------------
def export_model(
    model,
    path,
    format="saved_model",
    batch_size=None,
    sequence_length=None,
    max_length=None,
    beam_size=4,
    length_penalty=None,
    coverage_penalty=None,
    temperature=1.0,
    top_k=None,
    top_p=None,
    quantize=False,
    signatures=None,
):
    """Exports an application model to a SavedModel, TFLite files or ONNX files.

    Args:
        model: a built `Translator`, `AttentionClassifier`, `SequenceTagger` or
            `AttentiveLanguageModel`.
        path: the output folder (created; files in it are replaced).
        format: Keras's format names `"tf_saved_model"` (or `"saved_model"`),
            `"litert"` (or `"tflite"`) and `"onnx"` (one `.onnx` file per
            signature; needs `pip install "keras-rnnattn[onnx]"`).
        batch_size: int, or None for a variable batch (SavedModel and ONNX).
        sequence_length: int, the source (or text) length in tokens, or None
            for a variable length (SavedModel and ONNX). Inputs are padded
            with 0 to it; padding does not change the results.
        max_length: int, the most tokens the decode loops produce; default:
            the Translator's `max_target_length`, or the language model's
            `max_length - 1`.
        beam_size: int, the beam of the Translator's `beam_search` signature.
        length_penalty: float α >= 0, GNMT's length penalty of the
            Translator's `beam_search` (as in `Translator.translate`; 0 ranks
            by log-probability). None: the model's (`search_settings`: for a
            preset, the α its recipe validated, which `translate` and
            `keras-rnnattn translate --beam` use too).
        coverage_penalty: float β >= 0, the coverage penalty of the
            Translator's `beam_search` (as in `Translator.translate`); None:
            the model's, as for `length_penalty`.
        temperature, top_k, top_p: the language model's sampling settings.
        quantize: bool, TFLite dynamic-range quantisation of the weights.
        signatures: None (every signature of the model), or a list of the
            signature names to write (for example `["greedy"]`, the one file
            a device needs to translate; each TFLite file is converted on its
            own, so fewer export faster).

    Returns:
        The output folder.

    Raises:
        ValueError: for a format not in `FORMATS` (the message lists them),
            and for options the format or the model does not take.
        ImportError: naming the extra to install when the format's writer
            is missing: TensorFlow (every format; `pip install
            "keras-rnnattn[tensorflow]"`, `[export]` for TFLite), onnx and
            tf2onnx (`pip install "keras-rnnattn[onnx]"`).

    Example:

    >>> import tempfile
    >>> from keras_rnnattn.models import AttentionClassifier
    >>> model = AttentionClassifier(vocabulary_size=20, num_classes=2, units=8)
    >>> out = export_model(model, tempfile.mkdtemp())  # a SavedModel
    >>> sorted(json.load(open(os.path.join(out, "export.json")))["signatures"])
    ['serving_default']

    The same as ONNX, run by onnxruntime:

    >>> import onnxruntime
    >>> out = export_model(model, tempfile.mkdtemp(), "onnx")
    >>> session = onnxruntime.InferenceSession(f"{out}/serving_default.onnx")
    >>> ids = np.array([[5, 7, 9, 0]], "int32")  # (B, S), padded with 0
    >>> (probabilities,) = session.run(["probabilities"], {"token_ids": ids})
    >>> bool(np.allclose(probabilities, model.predict(ids, verbose=0), atol=1e-5))
    True
    """
    format = _check_format(format)
    options = _check_options(
        model,
        format,
        batch_size=batch_size,
        sequence_length=sequence_length,
        max_length=max_length,
        beam_size=beam_size,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        quantize=quantize,
        signatures=signatures,
    )
    _require_writer(format)
    # The writers need TensorFlow's graph: other backends export from a TensorFlow
    # subprocess, a choice of process rather than of computation.
    if keras.backend.backend() != "tensorflow":
        with tempfile.TemporaryDirectory() as folder:
            preset = model.save_to_preset(os.path.join(folder, "preset"))
            return _export_in_subprocess(preset, path, format, options)
    os.makedirs(path, exist_ok=True)
    writers = {
        "saved_model": _write_saved_model,
        "tflite": _write_tflite,
        "onnx": _write_onnx,
    }
    manifest = writers[format](model, path, options)
    _write_tokenizers(model, path, manifest)
    with open(os.path.join(path, MANIFEST), "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=2, ensure_ascii=False)
    return path


def export_preset(preset, path, format="saved_model", quantize=False, **options):
    """Exports a preset (a name or a folder) with `export_model`.

    The preset is loaded and its options checked under the current backend;
    under JAX and torch a TensorFlow subprocess then writes the files.

    Args:
        preset: a preset name (see `keras_rnnattn.presets.list_presets`) or folder.
        path: the output folder.
        format: `"tf_saved_model"` (or `"saved_model"`), `"litert"` (or
            `"tflite"`) or `"onnx"`, as in `export_model`.
        quantize: bool, see `export_model`.
        **options: the other arguments of `export_model`; for TFLite,
            `batch_size` defaults to 1 and `sequence_length` to the model's
            length limit. For a Translator, `length_penalty` and
            `coverage_penalty` default to the model's search settings, read
            from the preset's metadata.json when it loads (see
            `keras_rnnattn.decoding.SearchSettings.from_metadata`), the ones
            `translate` and `keras-rnnattn translate --beam N` use, so the
            exported `beam_search` gives `translate`'s tokens; export.json
            records them.

    Returns:
        The output folder.

    Example:

    >>> import tempfile
    >>> out = export_preset(  # doctest: +SKIP
    ...     "ding_de_en_bahdanau", tempfile.mkdtemp(), "tflite", sequence_length=48
    ... )
    >>> sorted(json.load(open(os.path.join(out, "export.json")))["signatures"])  # doctest: +SKIP
    ['beam_search', 'decode_step', 'encode', 'greedy']
    """
    from keras_rnnattn.presets import find_preset, load_preset

    format = _check_format(format)
    _require_writer(format)
    path_in = find_preset(preset)
    model = _task(load_preset(path_in))
    if format == "tflite":
        options.setdefault("batch_size", 1)
        if options.get("sequence_length") is None:
            options["sequence_length"] = model.export_length_limit or 128
    return export_model(model, path, format=format, quantize=quantize, **options)


# --- Checks -----------------------------------------------------------------------------
# The model-specific options of `export_model`: their defaults, and the
# signatures they set (each model's `task_contract.export_options` names its own).
_BEAM = "the Translator's beam_search"
_SAMPLE = "the language model's sample"
_MODEL_OPTIONS = {
    "max_length": (None, "the decode loops of the Translator and language model"),
    "beam_size": (4, _BEAM),
    "length_penalty": (0.0, _BEAM),
    "coverage_penalty": (0.0, _BEAM),
    "temperature": (1.0, _SAMPLE),
    "top_k": (None, _SAMPLE),
    "top_p": (None, _SAMPLE),
}


def _task(model):
    from keras_rnnattn.models.task import TextTask

    if not isinstance(model, TextTask):
        raise ValueError(
            "export_model exports the models of keras_rnnattn.models (Translator, "
            "AttentionClassifier, SequenceTagger, AttentiveLanguageModel); for any "
            "other Keras model use `model.export(path)`. Received: "
            f"model of class {type(model).__name__}"
        )
    return model


def _check_format(format):
    """The writer of a format name: `"saved_model"`, `"tflite"` or `"onnx"`."""
    if not isinstance(format, str) or format not in _WRITERS:
        raise ValueError(
            f"`format` must be one of {FORMATS}. Received: format={format!r}"
        )
    return _WRITERS[format]


def _require_onnx():
    """Raises ImportError unless the ONNX writer's packages are installed."""
    missing = [
        name for name in _ONNX_PACKAGES if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise ImportError(
            f"ONNX export needs the packages {', '.join(_ONNX_PACKAGES)}: "
            f'pip install "keras-rnnattn[onnx]". Missing: {", ".join(missing)}'
        )


def _require_writer(format):
    """Raises ImportError naming the extra unless the format's writer can run:
    every writer needs TensorFlow (in a subprocess under JAX and torch)."""
    extra, what = _EXTRAS[format]
    if format == "onnx":
        _require_onnx()
    require("tensorflow", extra, what)


def _optional_int(name, value):
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(
            f"`{name}` must be None or an int >= 1. Received: {name}={value!r}"
        )
    return int(value)


def _penalty(name, value):
    if value is None:  # the model's own (`check_export_options`)
        return None
    number = isinstance(value, (int, float, np.integer, np.floating))
    if not number or isinstance(value, bool) or not 0 <= value < float("inf"):
        raise ValueError(f"`{name}` must be a float >= 0. Received: {name}={value!r}")
    return float(value)


def _check_options(model, format, **options):
    _check_format(format)
    _task(model)
    if not model.built:
        raise ValueError(
            "The model is not built: call it on a batch of token ids (or load it "
            "with `from_preset`) before exporting it. Received: an unbuilt "
            f"{type(model).__name__}"
        )
    for name in ("batch_size", "sequence_length", "max_length", "beam_size", "top_k"):
        options[name] = _optional_int(name, options[name])
    applies = model.task_contract.export_options
    for name, (default, owner) in _MODEL_OPTIONS.items():
        if name in ("length_penalty", "coverage_penalty"):
            options[name] = _penalty(name, options[name])
        value = options[name]
        if name not in applies and value is not None and value != default:
            raise ValueError(
                f"`{name}` applies to {owner} only; this {type(model).__name__} "
                f"has none. Received: {name}={value}"
            )
    if format == "tflite":
        for name, example in (("batch_size", 1), ("sequence_length", 64)):
            if options[name] is None:
                raise ValueError(
                    f"TFLite needs static shapes: set `{name}` (for example "
                    f"{name}={example}); a variable {name.replace('_', ' ')} is only "
                    f"possible with format='saved_model'. Received: {name}=None"
                )
    limit = model.export_length_limit
    length = options["sequence_length"]
    if limit is not None and length is not None and length > limit:
        raise ValueError(
            f"`sequence_length` can be at most this model's limit of {limit} tokens. "
            f"Received: sequence_length={options['sequence_length']}"
        )
    options["quantize"] = bool(options["quantize"])
    if options["quantize"] and format == "onnx":
        raise ValueError(
            "`quantize` applies to TFLite only (format='litert'); ONNX files keep "
            "float32 weights. Received: quantize=True with format='onnx'"
        )
    signatures = options.pop("signatures", None)
    options = model.check_export_options(options)
    for name in ("length_penalty", "coverage_penalty"):
        if options[name] is None:
            options[name] = 0.0  # recorded in export.json as before
    if signatures is not None:
        options["signatures"] = _check_signatures(model, options, signatures)
    return options


def _check_signatures(model, options, signatures):
    names = [endpoint.name for endpoint in model.export_endpoints(options)]
    wanted = [signatures] if isinstance(signatures, str) else list(signatures)
    unknown = [name for name in wanted if name not in names]
    if not wanted or unknown:
        raise ValueError(
            f"`signatures` must name some of this {type(model).__name__}'s "
            f"signatures {names}, or be None for all of them. Received: "
            f"signatures={signatures!r}"
        )
    return wanted


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


def _write_saved_model(model, path, options):
    endpoints = _endpoints(model, options)
    archive = _archive(model, endpoints)
    archive.write_out(path, verbose=False)
    manifest = _base_manifest(model, "saved_model", options)
    signatures = _describe(endpoints)
    if "greedy" in signatures:
        signatures["serving_default"] = "the same as greedy"
    manifest["signatures"] = signatures
    return manifest


def _write_tflite(model, path, options):
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


def _write_onnx(model, path, options):
    import onnx
    import tensorflow as tf

    endpoints = _endpoints(model, options)
    manifest = _base_manifest(model, "onnx", options)
    manifest["signatures"], manifest["not_converted"] = {}, {}
    for name, fn, signature, description in endpoints:
        renamed = []
        function = tf.function(
            _distinct_outputs(fn, set(signature[0]), renamed),
            input_signature=signature,
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


def _write_tokenizers(model, path, manifest):
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


# --- The subprocess path ----------------------------------------------------------------
def _export_in_subprocess(preset, path, format, options):
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [
        sys.executable,
        "-m",
        "keras_rnnattn.export",
        str(preset),
        str(path),
        "--format",
        format,
        "--options",
        json.dumps(options),
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise RuntimeError(
            "Export under the TensorFlow backend failed: "
            + (lines[-1] if lines else f"exit status {result.returncode}")
        )
    return path


def main(argv=None):
    """`python -m keras_rnnattn.export PRESET OUT --format F --options JSON`."""
    parser = argparse.ArgumentParser(description="Exports a preset.")
    parser.add_argument("preset")
    parser.add_argument("out")
    parser.add_argument("--format", default="saved_model", choices=FORMATS)
    parser.add_argument("--options", default="{}", help="export_model options (JSON)")
    args = parser.parse_args(argv)
    options = json.loads(args.options)
    quantize = options.pop("quantize", False)
    print(export_preset(args.preset, args.out, args.format, quantize, **options))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`export_model` and `export_preset`: a model or preset to SavedModel, TFLite, ONNX."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import keras

from keras_rnnattn.export.checks import (
    FORMATS,
    check_format,
    check_options,
    require_writer,
    search_options,
    task_model,
)
from keras_rnnattn.export.writers import WRITERS, write_tokenizers

MANIFEST = "export.json"


# --- Public API -----------------------------------------------------------------------
def export_model(
    model,
    path,
    format="saved_model",
    search=None,
    batch_size=None,
    sequence_length=None,
    max_length=None,
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
            signature; needs `pip install ".[onnx]"`).
        batch_size: int, or None for a variable batch (SavedModel and ONNX).
        sequence_length: int, the source (or text) length in tokens, or None
            for a variable length (SavedModel and ONNX). Inputs are padded
            with 0 to it; padding does not change the results.
        search: a `keras_rnnattn.decoding.SearchSettings`, the settings the
            decode signatures fix: the Translator's `beam_search` takes its
            `beam_size` (with `method="beam"`; 4 otherwise) and its length
            and coverage penalties (as `Translator.translate`), the language
            model's `sample` its `temperature`, `top_k` and `top_p`. None:
            the model's own (`model.search_settings`: for a preset, the α its
            recipe validated, which `translate` and `keras-rnnattn translate
            --beam` use too), a beam of 4. A `SearchSettings` is taken whole:
            `model.search_settings.replace(method="beam", beam_size=8)` keeps
            the model's penalties.
        max_length: int, the most tokens the decode loops produce; default:
            the Translator's `max_target_length`, or the language model's
            `max_length - 1`.
        quantize: bool, int8 weights: TFLite's dynamic-range quantisation,
            or for ONNX each large weight stored as int8 with a scale per
            column (`keras_rnnattn.export.onnx_int8`); about a quarter of the
            file.
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
            ".[tensorflow]"`, `[export]` for TFLite), onnx and
            tf2onnx (`pip install ".[onnx]"`).

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
    format = check_format(format)
    options = check_options(
        model,
        format,
        batch_size=batch_size,
        sequence_length=sequence_length,
        max_length=max_length,
        quantize=quantize,
        signatures=signatures,
        **search_options(search),
    )
    require_writer(format)
    # The writers need TensorFlow's graph: other backends export from a TensorFlow
    # subprocess, a choice of process rather than of computation.
    if keras.backend.backend() != "tensorflow":
        with tempfile.TemporaryDirectory() as folder:
            preset = model.save_to_preset(os.path.join(folder, "preset"))
            return _export_in_subprocess(preset, path, format, options)
    return _write(model, path, format, options)


def _write(model, path, format, options):
    """Writes the files of checked `options` (`check_options`), under TensorFlow."""
    os.makedirs(path, exist_ok=True)
    manifest = WRITERS[format](model, path, options)
    write_tokenizers(model, path, manifest)
    with open(os.path.join(path, MANIFEST), "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=2, ensure_ascii=False)
    return path


def export_preset(preset, path, format="saved_model", quantize=False, **options):
    # `options`: export_model's keywords (search, batch_size, ...).
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
            length limit. Without `search`, a Translator's beam takes the
            model's search settings, read from the preset's metadata.json
            when it loads (see
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

    format = check_format(format)
    require_writer(format)
    path_in = find_preset(preset)
    model = task_model(load_preset(path_in))
    if format == "tflite":
        options.setdefault("batch_size", 1)
        if options.get("sequence_length") is None:
            options["sequence_length"] = model.export_length_limit or 128
    return export_model(model, path, format=format, quantize=quantize, **options)


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
    parser.add_argument("--options", default="{}", help="checked options (JSON)")
    args = parser.parse_args(argv)
    from keras_rnnattn.presets import find_preset, load_preset

    model = task_model(load_preset(find_preset(args.preset)))
    print(_write(model, args.out, args.format, json.loads(args.options)))
    return 0

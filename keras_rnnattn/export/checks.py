"""The checks of `keras_rnnattn.export`'s arguments: the format names, the
packages each writer needs, a model's export options."""

import importlib.util

from keras_rnnattn._checks import non_negative_float, positive_int
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
# The packages the ONNX writer imports (the `onnx` extra also has onnxruntime,
# which runs the files).
ONNX_PACKAGES = ("tensorflow", "onnx", "tf2onnx")
# The extra that installs each writer's packages, and what to call it in errors.
EXTRAS = {
    "saved_model": ("tensorflow", "SavedModel export"),
    "tflite": ("export", "TFLite (LiteRT) export"),
    "onnx": ("onnx", "ONNX export"),
}


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


def task_model(model):
    from keras_rnnattn.models.task import TextTask

    if not isinstance(model, TextTask):
        raise ValueError(
            "export_model exports the models of keras_rnnattn.models (Translator, "
            "AttentionClassifier, SequenceTagger, AttentiveLanguageModel); for any "
            "other Keras model use `model.export(path)`. Received: "
            f"model of class {type(model).__name__}"
        )
    return model


def check_format(format):
    """The writer of a format name: `"saved_model"`, `"tflite"` or `"onnx"`."""
    if not isinstance(format, str) or format not in _WRITERS:
        raise ValueError(
            f"`format` must be one of {FORMATS}. Received: format={format!r}"
        )
    return _WRITERS[format]


def _require_onnx():
    """Raises ImportError unless the ONNX writer's packages are installed."""
    missing = [name for name in ONNX_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"ONNX export needs the packages {', '.join(ONNX_PACKAGES)}: "
            f'pip install ".[onnx]". Missing: {", ".join(missing)}'
        )


def require_writer(format):
    """Raises ImportError naming the extra unless the format's writer can run:
    every writer needs TensorFlow (in a subprocess under JAX and torch)."""
    extra, what = EXTRAS[format]
    if format == "onnx":
        _require_onnx()
    require("tensorflow", extra, what)


def _optional_int(name, value):
    return positive_int(name, value, allow_none=True)


def _penalty(name, value):
    # None: the model's own (`check_export_options`).
    return non_negative_float(name, value, allow_none=True)


def search_options(search):
    """The decode signatures' settings of `export_model(search=...)`, by the
    names the writers read (`beam_size`, the penalties, the sampling's).

    Args:
        search: a `keras_rnnattn.decoding.SearchSettings`, or None (the
            model's own settings, a beam of 4).

    Returns:
        dict.
    """
    from keras_rnnattn.decoding.search_settings import SearchSettings

    if search is None:
        return {
            "beam_size": 4,
            "length_penalty": None,  # the model's (`check_export_options`)
            "coverage_penalty": None,
            "temperature": 1.0,
            "top_k": None,
            "top_p": None,
        }
    if not isinstance(search, SearchSettings):
        raise ValueError(
            "`search` must be a keras_rnnattn.decoding.SearchSettings (for "
            'example SearchSettings("beam", beam_size=4, length_penalty=0.6)), or '
            f"None for the model's own. Received: search={search!r}"
        )
    return {
        "beam_size": search.beam_size if search.method == "beam" else 4,
        "length_penalty": search.length_penalty,
        "coverage_penalty": search.coverage_penalty,
        "temperature": search.temperature,
        "top_k": search.top_k,
        "top_p": search.top_p,
    }


def check_options(model, format, **options):
    check_format(format)
    task_model(model)
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
    if options["quantize"] and format == "saved_model":
        raise ValueError(
            "`quantize` applies to TFLite and ONNX files (format='litert' or "
            "'onnx'); a SavedModel keeps its float32 variables. Received: "
            "quantize=True with format='tf_saved_model'"
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

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
optimizer (see `keras_rnnattn.export.writers`). An output named like an input (the
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

from keras_rnnattn.export.checks import FORMATS  # noqa: F401 (re-exported)

# Exporting needs Keras: it loads from `exporter` on first use, so that the
# CLI's parser reads FORMATS without Keras.
_EXPORTER = ("MANIFEST", "export_model", "export_preset", "main")

__all__ = ["export_model", "export_preset"]


def __getattr__(name):
    if name in _EXPORTER:
        from keras_rnnattn.export import exporter

        return getattr(exporter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""Rewrites a shipped preset's weights as float16 and re-measures what it pins.

A float32 preset takes twice the room of a float16 one; the classifiers and the
language model keep their outputs to about 1e-3 in float16. This script loads the
preset, saves it again with `weights_dtype="float16"` (the metadata is kept, its
`files` facts rewritten), then measures again, with the stored float16 weights,
what the shipped-preset tests pin: the probe outputs and the test-split
metrics that tests/test_shipped_presets.py reads. The float32 values are kept
under `float32_metrics` so that the change stays visible.

Usage (from the repository root; the corpora must be installed):

    KERAS_BACKEND=torch python scripts/float16_preset.py movie_snippets_sentiment
"""

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED = os.path.join(ROOT, "saved_models")

# Metadata keys that save_preset writes itself.
AUTOMATIC = {
    "class_name",
    "registered_name",
    "parameter_count",
    "keras_rnnattn_version",
    "keras_version",
    "backend",
    "date",
    "format_version",
    "files",
    "weights_dtype",
}

# Test metrics of each classifier: (loader, metric of the whole split, slices).
CLASSIFIERS = {
    "movie_snippets_sentiment": (
        "load_movie_snippets",
        {"test_accuracy_first_200": 200},
    ),
    "wordnet_topics": ("load_wordnet_topics", {"test_accuracy_first_500": 500}),
}


def _accuracy(model, texts, labels):
    probs = model.predict(texts, batch_size=500, verbose=0)
    return float(np.mean(probs.argmax(axis=-1) == np.asarray(labels)))


def remeasure_classifier(name, model, metadata):
    from keras_rnnattn import datasets

    loader, slices = CLASSIFIERS[name]
    texts, labels = getattr(datasets, loader)("test")
    metrics = metadata["metrics"]
    metrics["test_accuracy"] = round(_accuracy(model, texts, labels), 4)
    for key, count in slices.items():
        metrics[key] = _accuracy(model, texts[:count], labels[:count])
    _, probs = model.classify(metadata["probe_texts"])
    metadata["probe_probabilities"] = np.asarray(probs).tolist()


def remeasure_language_model(model, metadata):
    metadata["probe_greedy"] = model.generate(
        metadata["probe_prompts"], max_new_tokens=40, temperature=0
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", help="a folder name in saved_models/")
    args = parser.parse_args(argv)

    from keras_rnnattn.models import AttentionClassifier, AttentiveLanguageModel
    from keras_rnnattn.presets import save_preset

    folder = os.path.join(SAVED, args.preset)
    with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as f:
        metadata = json.load(f)
    if metadata.get("weights_dtype") == "float16":
        sys.exit(f"{args.preset} already stores float16 weights.")
    cls = {
        "AttentionClassifier": AttentionClassifier,
        "AttentiveLanguageModel": AttentiveLanguageModel,
    }[metadata["class_name"]]
    model = cls.from_preset(folder)
    kept = {k: v for k, v in metadata.items() if k not in AUTOMATIC}
    kept["float32_metrics"] = dict(metadata.get("metrics", {}))
    save_preset(model, folder, kept, weights_dtype="float16")

    model = cls.from_preset(folder)  # the stored float16 values
    if args.preset in CLASSIFIERS:
        remeasure_classifier(args.preset, model, kept)
    else:
        remeasure_language_model(model, kept)
    kept["float16_note"] = (
        "Weights stored as float16; the probes and the test metrics were measured "
        "again with them (float32_metrics holds the float32 run's)."
    )
    save_preset(model, folder, kept, weights_dtype="float16")
    print(json.dumps(kept.get("metrics", {}), indent=1))


if __name__ == "__main__":
    main()

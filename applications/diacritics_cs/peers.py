"""Adds the recipe's baseline without attention to a `diacritics_cs` preset.

The lexicon baseline is scored by `train.py` itself (`evaluation.metadata`);
this script copies the test metrics of a run of the same recipe without
attention (`train.py --attention none --out FOLDER`) into the preset's
metadata as `no_attention_*`, and prints both side by side.

    python applications/diacritics_cs/peers.py --into saved_models/diacritics_cs \\
        --baseline /tmp/diacritics_cs_none
"""

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from keras_rnnattn.training.metadata import update_metadata  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--into", required=True, help="the preset folder")
    parser.add_argument("--baseline", required=True, help="the no-attention run")
    args = parser.parse_args(argv)
    metadata = update_metadata(args.into, runs={"no_attention": args.baseline})
    metrics = metadata["metrics"]
    for name in metrics["test"]:
        own, base = metrics["test"][name], metrics["no_attention_test"][name]
        print(
            f"{name}: word accuracy {own['word_accuracy']} (no attention "
            f"{base['word_accuracy']}), marked {own['marked_word_accuracy']} "
            f"({base['marked_word_accuracy']})"
        )
    print(json.dumps({"parameters": metrics.get("no_attention_parameters")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

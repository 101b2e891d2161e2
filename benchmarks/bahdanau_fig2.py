"""Bahdanau et al. (2015), Fig. 2, on Ding de→en: BLEU by source length,
attention beside the plain encoder-decoder.

Reads the test scores by source-length bucket that
`applications/ding_de_en_bahdanau/train.py` stores in each preset's
metadata.json (`test_<decoding>_by_source_length`), prints the table and
draws the figure. The two presets are trained by the same script, budget and
seeds, with `--attention bahdanau` and `--attention none`, each with the
options that suited it better (the baseline does worse with the attention
preset's network size, fixnorm and averaging, and with its schedule); the
commands are printed from their metadata. The baseline is not shipped; its
recipe writes it:

    python applications/ding_de_en_bahdanau/train.py --attention none \\
        --schedule plateau --out saved_models/ding_de_en_none
    python benchmarks/bahdanau_fig2.py \\
        --attention saved_models/ding_de_en_bahdanau \\
        --baseline saved_models/ding_de_en_none --out benchmarks/bahdanau_fig2.png
"""

import argparse
import json
import os
import sys


def scores(folder, decoding):
    with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as file:
        metadata = json.load(file)
    metrics = metadata["metrics"]
    return metrics[f"test_{decoding}_by_source_length"], metrics, metadata["command"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attention", default="saved_models/ding_de_en_bahdanau")
    parser.add_argument("--baseline", default="saved_models/ding_de_en_none")
    parser.add_argument("--decoding", default="beam4", help="greedy or beam4")
    parser.add_argument("--out", default="benchmarks/bahdanau_fig2.png")
    parser.add_argument("--quick", action="store_true", help="the same: it is quick")
    args = parser.parse_args(argv)
    with_attention, metrics_a, command_a = scores(args.attention, args.decoding)
    without, metrics_b, command_b = scores(args.baseline, args.decoding)
    buckets = list(with_attention)

    print(
        "## Bahdanau et al. 2015, Fig. 2: BLEU by source length "
        "(`benchmarks/bahdanau_fig2.py`)\n"
    )
    print(
        f"Ding de→en test split, {args.decoding}, sacrebleu (cased, detokenized); "
        f"`{os.path.basename(args.attention)}` beside `{os.path.basename(args.baseline)}`, "
        "trained by the same script, budget and seeds, each with the options that "
        "suited it better (the scores stored in their metadata): "
        f"`{command_a}` and `{command_b}`.\n"
    )
    print(
        "| source words | sentences | BLEU attention | BLEU none | chrF attention | chrF none |"
    )
    print("|---|---|---|---|---|---|")
    for bucket in buckets:
        a, b = with_attention[bucket], without[bucket]
        print(
            f"| {bucket} | {a['sentences']} | {a['bleu']:.1f} | {b['bleu']:.1f} | "
            f"{a['chrf']:.1f} | {b['chrf']:.1f} |"
        )
    key = f"test_{args.decoding}"
    print(
        f"| all | 1000 | {metrics_a[key + '_bleu']:.1f} | {metrics_b[key + '_bleu']:.1f} | "
        f"{metrics_a[key + '_chrf']:.1f} | {metrics_b[key + '_chrf']:.1f} |"
    )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, metric in zip(axes, ("bleu", "chrf")):
        for label, table, style in (
            ("Bahdanau attention", with_attention, "o-"),
            ("no attention (Cho et al.)", without, "s--"),
        ):
            ax.plot(buckets, [table[b][metric] for b in buckets], style, label=label)
        ax.set_xlabel("source sentence length (words)")
        ax.set_ylabel(metric.replace("bleu", "BLEU").replace("chrf", "chrF"))
        ax.grid(alpha=0.3)
    axes[0].legend()
    figure.suptitle(f"Ding de→en test split by source length ({args.decoding})")
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(f"\n![Fig. 2]({os.path.basename(args.out)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

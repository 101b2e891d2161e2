"""Attention pooling beside mean and last pooling on the movie snippets, over seeds.

Trains `applications/movie_snippets_sentiment/train.py` (BiGRU 64 per
direction, embeddings initialised from all-MiniLM-L6-v2's WordPiece vectors,
the shipped preset's recipe) with `--pooling attention`, `mean` and `last`,
three seeds each, everything else equal. Reports test-split accuracy (1000
snippets) as mean ± standard deviation over the seeds (sample std, n - 1),
beside the peers of DATA.md, as a table and a PNG. Results are kept in
`benchmarks/results/pooling_seeds.json`; without `--rerun` the table is made
from them.

    python benchmarks/pooling_seeds.py --rerun --jobs 2
"""

import argparse
import os
import sys

import numpy as np
from _common import REPO, run_study

POOLINGS = ("attention", "mean", "last")
PEERS = (
    ("multinomial NB, binary uni+bigrams", 81.7),
    ("TF-IDF uni+bigram logistic regression", 81.3),
    ("BiLSTM 128 + max-pool, random embeddings (PyTorch)", 80.6),
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--jobs", type=int, default=2, help="models trained at once")
    parser.add_argument("--threads", type=int, default=1, help="threads a model")
    parser.add_argument("--rerun", action="store_true", help="train again")
    parser.add_argument("--quick", action="store_true", help="smoke run, not saved")
    parser.add_argument("--results", default="benchmarks/results/pooling_seeds.json")
    parser.add_argument("--plot", default="benchmarks/pooling_seeds.png")
    args = parser.parse_args(argv)
    common = ["--word-vectors", "minilm"] + (["--quick"] if args.quick else [])
    variants = {
        f"{pooling}/{seed}": ["--pooling", pooling, "--seed", str(seed), *common]
        for pooling in POOLINGS
        for seed in args.seeds
    }

    results = run_study(
        os.path.join(REPO, args.results),
        "movie_snippets_sentiment",
        variants,
        args.rerun,
        args.jobs,
        args.threads,
        quick=args.quick,
    )

    accuracy = {
        pooling: [
            100 * m["test_accuracy"]
            for name, m in results.items()
            if name.split("/")[0] == pooling
        ]
        for pooling in POOLINGS
    }
    seeds = sorted({int(name.split("/")[1]) for name in results})
    print("## Attention pooling vs mean and last (`benchmarks/pooling_seeds.py`)\n")
    print(
        "Movie review snippets, canonical split (train 9,068, test 1000); the "
        "`movie_snippets_sentiment` recipe (BiGRU 64 per direction, MiniLM word "
        f"vectors, early stopping on validation accuracy), seeds {seeds}; test "
        "accuracy, mean ± sample std over the seeds, each seed's value beside it.\n"
    )
    print("| pooling | test accuracy | per seed |")
    print("|---|---|---|")
    for pooling, values in accuracy.items():
        std = np.std(values, ddof=1) if len(values) > 1 else 0.0
        each = ", ".join(f"{v:.1f}" for v in values)
        print(f"| {pooling} | {np.mean(values):.1f} ± {std:.1f} | {each} |")
    for name, value in PEERS:
        print(f"| peer: {name} (DATA.md) | {value:.1f} | |")
    if args.quick:
        return 0

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(5.5, 3.2))
    means = [np.mean(accuracy[p]) for p in POOLINGS]
    stds = [np.std(accuracy[p], ddof=1) for p in POOLINGS]
    ax.bar(POOLINGS, means, yerr=stds, capsize=6, color="tab:blue", alpha=0.8)
    for i, pooling in enumerate(POOLINGS):
        ax.plot([i] * len(accuracy[pooling]), accuracy[pooling], "k.", zorder=3)
    ax.axhline(81.7, color="tab:red", ls="--", lw=1, label="best peer (NB, 81.7)")
    ax.set_ylim(min(min(v) for v in accuracy.values()) - 3, 85)
    ax.set_ylabel("test accuracy (%)")
    ax.legend(loc="lower right")
    ax.set_title(f"Pooling on movie snippets, {len(seeds)} seeds")
    figure.tight_layout()
    figure.savefig(os.path.join(REPO, args.plot), dpi=110)
    print(f"\n![Pooling]({os.path.basename(args.plot)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

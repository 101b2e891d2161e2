"""Trains and scores the Joey NMT peer on the Ding German-English data.

Joey NMT 2.3 (Kreutzer, Bastings & Riezler 2019; Apache-2.0; `pip install
joeynmt==2.3.0`) is an RNN and Transformer encoder-decoder toolkit on PyTorch.
This script trains its BiGRU encoder and GRU decoder with Bahdanau attention
and input feeding, word level and lowercased, on this recipe's data and
within the same wall-clock budget, and scores it on the canonical 1000 test
pairs with this package's sacrebleu metrics.

    # one folder: data files (train = the 15,070 training sentences plus
    # 270,000 dictionary pairs), the Joey YAML config
    python applications/ding_de_en_bahdanau/joey_peer.py prepare \\
        --out runs/joey --lexicon-pairs 270000
    # 40 minutes on one thread (pin it with taskset -c N)
    python applications/ding_de_en_bahdanau/joey_peer.py train \\
        --dir runs/joey --minutes 40
    # greedy and beam 5 on the test split: runs/joey/result.json
    python applications/ding_de_en_bahdanau/joey_peer.py score --dir runs/joey

`prepare` needs this package and numpy only; `train` and `score` need Joey NMT,
whose declared dependencies pin old versions (protobuf < 3.21 among them), so
it lives best in a virtual environment of its own that sees this one's
packages (torch, sacrebleu, keras-rnnattn) through a `.pth` file, with only
the few packages Joey imports that this one lacks added:

    python -m venv joey-venv  # with the python of this environment
    echo "import site; site.addsitedir('$(python -c \\
        'import site; print(site.getsitepackages()[0])')')" \\
        > joey-venv/lib/python3.11/site-packages/keras_rnnattn_env.pth
    joey-venv/bin/pip install --no-deps joeynmt==2.3.0
    joey-venv/bin/pip install subword-nmt tensorboard sacremoses
    joey-venv/bin/python applications/ding_de_en_bahdanau/joey_peer.py ...

The model (`prepare`'s config): word-level tokens after Joey's Moses
pre-tokenizer (sacremoses), lowercased, per side the words seen at least twice
in the training data, at most 7,000 German and 6,500 English, the rest
`<unk>` (the sentences alone have fewer, 6,939 and 6,332 with the 4 special
tokens: 6,924,288 parameters; with the dictionary pairs the limits hold it at
7,028,992); embeddings 256; a bidirectional GRU encoder of 256 units per
direction; a GRU decoder of 256 units initialised by a dense bridge from the
encoder's last states, with Bahdanau attention, input feeding and the
attentional layer tanh(W[s; c]) of 256; dropout 0.3 on the embeddings and the
attentional layer's input. Adam at
1e-3 (gradient norm clipped at 5, loss per target token), batches of 64
pairs in random order, the learning rate halved when the validation
perplexity has not improved for 2 validations; validation (greedy, the 500
validation pairs) every 500 updates (`--validation-freq`), the checkpoint of the
best validation perplexity kept as `best.ckpt`. Nothing is filtered by length
(the longest pair has 33 words).

Joey has no time budget: `train` stops it through its update limit, which
here is reached when the clock runs out (less the time the last validation
took), then validates the last weights once more so that `best.ckpt` is the
best of the whole run. Data loading and the vocabulary come before the clock
starts. `score` translates with `best.ckpt`, greedy and beam 5 (length
penalty `--beam-alpha`), on one thread, and scores the detokenized outputs
against the cased references (as this recipe's models are scored) and, as
Joey outputs lowercase, lowercased.
"""

import argparse
import json
import os
import shutil
import sys
import time
import types
from pathlib import Path

import numpy as np

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    load_ding_de_en,
    load_ding_de_en_lexicon,
)

SOURCE, TARGET = "de", "en"
BEAM_SIZE = 5


def write_lines(path, lines):
    """Writes one sentence a line, its whitespace collapsed to single spaces."""
    with open(path, "w", encoding="utf-8") as file:
        for line in lines:
            file.write(" ".join(line.split()) + "\n")


def write_pairs(prefix, pairs):
    """`prefix.de` and `prefix.en`, the files of Joey's plain dataset."""
    write_lines(f"{prefix}.{SOURCE}", [german for german, _ in pairs])
    write_lines(f"{prefix}.{TARGET}", [english for _, english in pairs])


def joey_config(folder, args):
    """The Joey NMT 2.3 configuration (a dict for its YAML file)."""
    data = folder / "data"

    def side(lang, voc_limit):
        return {
            "lang": lang,
            "level": "word",
            "lowercase": True,
            "normalize": False,
            "voc_limit": voc_limit,
            "voc_min_freq": args.voc_min_freq,
            "tokenizer_cfg": {"pretokenizer": "moses"},
        }

    def embeddings():
        return {"embedding_dim": 256, "scale": False, "dropout": args.dropout}

    return {
        "name": "ding_de_en_joey",
        "joeynmt_version": "2.3.0",
        "model_dir": str(folder / "model"),
        "use_cuda": False,
        "random_seed": args.seed,
        "data": {
            "train": str(data / "train"),
            "dev": str(data / "dev"),
            "test": str(data / "test"),
            "dataset_type": "plain",
            "src": side(SOURCE, args.src_voc_limit),
            "trg": side(TARGET, args.trg_voc_limit),
        },
        "testing": {
            "n_best": 1,
            "beam_size": BEAM_SIZE,
            "beam_alpha": 1.0,
            "batch_size": 64,
            "batch_type": "sentence",
            "max_output_length": -1,  # 1.5 times the longest source in a batch
            "eval_metrics": ["bleu"],
            "sacrebleu_cfg": {"tokenize": "13a"},
        },
        "training": {
            "optimizer": "adam",
            "adam_betas": [0.9, 0.999],
            "learning_rate": args.learning_rate,
            "learning_rate_min": 1.0e-5,
            "clip_grad_norm": 5.0,
            "weight_decay": 0.0,
            "loss": "crossentropy",
            "label_smoothing": 0.0,
            "normalization": "tokens",
            "batch_size": args.batch_size,
            "batch_type": "sentence",
            "shuffle": True,
            "scheduling": "plateau",
            "patience": 2,
            "decrease_factor": 0.5,
            "early_stopping_metric": "ppl",
            "epochs": 1000,  # the clock stops it first
            "validation_freq": args.validation_freq,
            "logging_freq": args.logging_freq,
            "keep_best_ckpts": 2,
            "print_valid_sents": [0, 1, 2],
            "overwrite": False,
        },
        "model": {
            "initializer": "xavier_uniform",
            "bias_initializer": "zeros",
            "embed_initializer": "normal",
            "embed_init_weight": 0.1,
            "tied_embeddings": False,
            "tied_softmax": False,
            "encoder": {
                "type": "recurrent",
                "rnn_type": "gru",
                "embeddings": embeddings(),
                "hidden_size": 256,
                "bidirectional": True,
                "dropout": args.dropout,
                "num_layers": 1,
            },
            "decoder": {
                "type": "recurrent",
                "rnn_type": "gru",
                "embeddings": embeddings(),
                "hidden_size": 256,
                "dropout": args.dropout,
                "hidden_dropout": args.dropout,
                "num_layers": 1,
                "input_feeding": True,
                "init_hidden": "bridge",
                "attention": "bahdanau",
            },
        },
    }


def prepare(args):
    """Writes the data files and the Joey config into `args.out`."""
    import yaml

    folder = Path(args.out).absolute()
    (folder / "data").mkdir(parents=True, exist_ok=True)
    train = load_ding_de_en("train")
    lexicon = load_ding_de_en_lexicon()
    rows = np.random.default_rng(args.lexicon_seed).choice(
        len(lexicon), args.lexicon_pairs, replace=False
    )
    write_pairs(folder / "data" / "train", train + [lexicon[i] for i in rows])
    write_pairs(folder / "data" / "dev", load_ding_de_en("validation"))
    write_pairs(folder / "data" / "test", load_ding_de_en("test"))
    with open(folder / "config.yaml", "w", encoding="utf-8") as file:
        yaml.safe_dump(joey_config(folder, args), file, sort_keys=False)
    data = {
        "sentence_pairs": len(train),
        "lexicon_pairs": int(args.lexicon_pairs),
        "lexicon_sample": f"numpy.random.default_rng({args.lexicon_seed}).choice("
        f"{len(lexicon)}, {args.lexicon_pairs}, replace=False)",
        "train_pairs": len(train) + int(args.lexicon_pairs),
    }
    (folder / "data.json").write_text(json.dumps(data, indent=2) + "\n")
    print(f"{folder}: {data['train_pairs']} training pairs, config.yaml")


def use_threads(threads):
    """One process on `threads` threads (set before torch starts its pools)."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def import_joey():
    """Joey NMT's modules, its TensorBoard logging kept from importing TensorFlow."""
    # TensorBoard's stand-in for TensorFlow is used where this module exists.
    name = "tensorboard.compat.notf"
    sys.modules.setdefault(name, types.ModuleType(name))
    try:
        import joeynmt.builders
        import joeynmt.training
    except ImportError as error:
        raise SystemExit(
            f"{error}\nJoey NMT is needed: see this script's docstring "
            "(pip install --no-deps joeynmt==2.3.0 in its own environment)."
        ) from error
    from torch.optim.lr_scheduler import ReduceLROnPlateau

    def plateau_scheduler(optimizer, verbose=False, **kwargs):
        # Joey 2.3 passes `verbose=False`, which newer torch no longer takes.
        return ReduceLROnPlateau(optimizer, **kwargs)

    joeynmt.builders.ReduceLROnPlateau = plateau_scheduler
    return joeynmt


class Clock:
    """Joey's update limit as a deadline: `steps >= clock` is true once
    `seconds` have passed since `start()`, less `reserve` (the time that the
    last validation took, kept for the final one)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.reserve = 0.0
        self.reached = False
        self.began = time.monotonic()

    def start(self):
        self.began = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.began

    def __le__(self, steps):  # `steps >= clock`
        self.reached = self.reached or (self.elapsed() >= self.seconds - self.reserve)
        return self.reached

    def __str__(self):
        return f"(the {self.seconds / 60:g}-minute clock)"


def budgeted_trainer(base, clock, summary):
    """Joey's `TrainManager` stopped by `clock`, counting what it trains on."""

    class BudgetedTrainManager(base):
        def train_and_validate(self, train_data, valid_data):
            self.args = self.args._replace(max_updates=clock)
            self.pairs_seen = self.tokens_seen = 0
            self.validations = 0
            self.validation_seconds = 0.0
            clock.start()
            super().train_and_validate(train_data, valid_data)
            if clock.reached and self.stats.steps % self.args.validation_freq:
                self._validate(valid_data)  # the last weights
                self.tb_writer.close()
            summary.update(
                train_seconds=round(clock.elapsed(), 1),
                validation_seconds=round(self.validation_seconds, 1),
                validations=self.validations,
                steps=self.stats.steps,
                epoch_reached=self.stats.epochs,
                pairs_seen=self.pairs_seen,
                epochs_done=round(self.pairs_seen / len(train_data), 3),
                train_pairs=len(train_data),
                target_tokens_seen=self.tokens_seen,
                target_tokens_per_second=round(
                    self.tokens_seen
                    / max(clock.elapsed() - self.validation_seconds, 1e-9),
                    1,
                ),
                best_step=self.stats.best_ckpt_iter,
                best_validation_ppl=self.stats.best_ckpt_score,
                stopped_by_clock=clock.reached,
                parameters=sum(p.numel() for p in self.model.parameters()),
                src_vocab=len(self.model.src_vocab),
                trg_vocab=len(self.model.trg_vocab),
            )

        def _train_step(self, batch):
            self.pairs_seen += int(batch.nseqs)
            self.tokens_seen += int(batch.ntokens)
            return super()._train_step(batch)

        def _validate(self, valid_data):
            began = time.monotonic()
            super()._validate(valid_data)
            clock.reserve = time.monotonic() - began
            self.validation_seconds += clock.reserve
            self.validations += 1

    return BudgetedTrainManager


def train(args):
    """Trains Joey on `args.dir`'s config for `args.minutes` of wall clock."""
    use_threads(args.threads)
    joeynmt = import_joey()
    from joeynmt.config import load_config
    from joeynmt.helpers import make_model_dir
    from joeynmt.helpers_for_ddp import get_logger

    folder = Path(args.dir).absolute()
    cfg = load_config(folder / "config.yaml")
    model_dir = Path(cfg["model_dir"])
    make_model_dir(model_dir, overwrite=args.overwrite)
    shutil.copy2(folder / "config.yaml", model_dir / "config.yaml")
    logger = get_logger("", log_file=str(model_dir / "train.log"))
    logger.info("Joey NMT %s, %d thread(s)", "2.3.0", args.threads)

    summary = {"minutes": args.minutes, "threads": args.threads}
    clock = Clock(args.minutes * 60)
    joeynmt.training.TrainManager = budgeted_trainer(
        joeynmt.training.TrainManager, clock, summary
    )
    began = time.monotonic()
    joeynmt.training.train(rank=0, world_size=None, cfg=cfg, skip_test=True)
    summary["total_seconds"] = round(time.monotonic() - began, 1)
    (folder / "train.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


def score(args):
    """Translates the test split with greedy and beam search; scores, writes
    `result.json`."""
    use_threads(args.threads)
    import_joey()
    from joeynmt.config import load_config, parse_global_args
    from joeynmt.helpers_for_ddp import get_logger
    from joeynmt.prediction import predict
    from joeynmt.prediction import prepare as prepare_joey

    from keras_rnnattn.metrics import bleu, bleu_signature, chrf, chrf_signature

    folder = Path(args.dir).absolute()
    cfg = load_config(folder / "config.yaml")
    model_dir = Path(cfg["model_dir"])
    test = load_ding_de_en("test")[: args.limit]
    references = [english for _, english in test]
    prefix = folder / "score" / "test"
    prefix.parent.mkdir(exist_ok=True)
    write_pairs(prefix, test)
    cfg["data"]["test"] = str(prefix)
    cfg["data"]["dev"] = None
    cfg["testing"]["load_model"] = str(model_dir / args.checkpoint)
    get_logger("", log_file=str(model_dir / "score.log"))
    joey_args = parse_global_args(cfg, rank=0, mode="test")
    model, _, _, test_data = prepare_joey(joey_args, rank=0, mode="test")

    result = {
        "system": "Joey NMT 2.3.0",
        "checkpoint": str((model_dir / args.checkpoint).resolve().name),
        "test_pairs": len(test),
        "parameters": sum(p.numel() for p in model.parameters()),
        "threads": args.threads,
        "sacrebleu_signatures": {
            "bleu": bleu_signature(),
            "bleu_lowercase": bleu_signature(lowercase=True),
            "chrf": chrf_signature(),
        },
    }
    for name, beam_size in (("greedy", 1), (f"beam{BEAM_SIZE}", BEAM_SIZE)):
        decoding = joey_args.test._replace(
            beam_size=beam_size,
            beam_alpha=args.beam_alpha if beam_size > 1 else -1,
            n_best=1,
            return_attention=False,
            return_prob="none",
        )
        began = time.perf_counter()
        hypotheses = predict(
            model=model,
            data=test_data,
            device=joey_args.device,
            n_gpu=0,
            compute_loss=False,
            args=decoding,
            autocast=joey_args.autocast,
        )[2]
        seconds = time.perf_counter() - began
        write_lines(folder / "score" / f"{name}.{TARGET}", hypotheses)
        lower_hyps = [h.lower() for h in hypotheses]
        lower_refs = [r.lower() for r in references]
        with_unk = sum("<unk>" in h for h in hypotheses)
        result[name] = {
            "bleu": round(bleu(hypotheses, references), 2),
            "chrf": round(chrf(hypotheses, references), 2),
            "bleu_lowercase": round(bleu(hypotheses, references, lowercase=True), 2),
            "chrf_lowercase": round(chrf(lower_hyps, lower_refs), 2),
            "outputs_with_unk": with_unk,
            "outputs_with_unk_percent": round(100 * with_unk / len(hypotheses), 1),
            "sentences_per_second": round(len(hypotheses) / seconds, 1),
        }
        if beam_size > 1:
            result[name]["beam_alpha"] = args.beam_alpha
    for extra in ("data.json", "train.json"):
        if (folder / extra).exists():
            result[extra.removesuffix(".json")] = json.loads(
                (folder / extra).read_text()
            )
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("prepare", help="write the data files and the config")
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--lexicon-pairs", type=int, default=270_000)
    p.add_argument("--lexicon-seed", type=int, default=1234)
    p.add_argument("--src-voc-limit", type=int, default=7000)
    p.add_argument("--trg-voc-limit", type=int, default=6500)
    p.add_argument("--voc-min-freq", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=64, help="pairs a batch")
    p.add_argument("--validation-freq", type=int, default=500, help="updates")
    p.add_argument("--logging-freq", type=int, default=100, help="updates")
    p.add_argument("--seed", type=int, default=42, help="Joey's random seed")

    p = commands.add_parser("train", help="train for a wall-clock budget")
    p.add_argument("--dir", required=True, help="the folder `prepare` wrote")
    p.add_argument("--minutes", type=float, default=40.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--overwrite", action="store_true", help="replace dir/model")

    p = commands.add_parser("score", help="translate and score the test split")
    p.add_argument("--dir", required=True, help="the folder `prepare` wrote")
    p.add_argument("--checkpoint", default="best.ckpt", help="in dir/model")
    p.add_argument("--beam-alpha", type=float, default=1.0, help="length penalty")
    p.add_argument("--limit", type=int, default=None, help="the first N pairs")
    p.add_argument("--threads", type=int, default=1)

    args = parser.parse_args(argv)
    try:
        {"prepare": prepare, "train": train, "score": score}[args.command](args)
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One worker of a data-parallel job over several processes; writes its weights.

`test_multi_process.py` starts two of these on 127.0.0.1, as a user would start
one per machine, and compares their weights with one process trained on the
same global batches:

    # JAX: jax.distributed (CPU collectives: gloo) and keras.distribution.DataParallel
    KERAS_BACKEND=jax python multi_process_worker.py --out DIR --initial DIR \\
        --workers 2 --index 0 --coordinator 127.0.0.1:PORT
    # TensorFlow: MultiWorkerMirroredStrategy, the cluster and this worker from TF_CONFIG
    KERAS_BACKEND=tensorflow TF_CONFIG='{"cluster": {"worker": [...]}, "task": ...}' \\
        python multi_process_worker.py --out DIR --initial DIR

Each model of `--tasks` is built from the initial weights in `--initial`
(`<task>.npz`, written by the one-process run; without it, from `--seed`) and
trained on its worker's shard of a `tf.data` pipeline of strings, tokenized in
the pipeline (`text_dataset`). The worker writes `<run>-<index>.npz` (its final
weights) and `<run>-<index>.json` (losses per epoch, its TCP sockets). A run
`<task>+backup` trains with `keras.callbacks.BackupAndRestore(BACKUP/<task>/
worker-<index>)`, and with `--kill-at E,S` this worker SIGKILLs itself in it,
after step S of epoch E (0-based).
"""

import argparse
import collections
import contextlib
import ipaddress
import json
import os
import signal

import keras
import numpy as np
import tensorflow as tf

from keras_rnnattn.models import AttentionClassifier, Translator
from keras_rnnattn.text import CharTokenizer

GLOBAL_BATCH = 16
EXAMPLES = 64  # 4 global batches per epoch
EPOCHS = 3
CLASSIFIER_LENGTH = 6  # texts padded to one length: every process's batch has one shape

# model: the model to train; texts: a pair of arrays of str (inputs, targets);
# encode: the model's encode step, from two lists of str to int32 arrays of the
# ranks `ranks`; structure: puts those arrays in the `(x, y)` structure of `fit`;
# compile: compiles the model.
Task = collections.namedtuple("Task", "model texts encode ranks structure compile")


def translator_task():
    """Digit reversal on 4-digit strings: every batch, and every half of one, holds
    the same number of real target tokens, so a per-replica mean over real tokens
    (TensorFlow strategies) equals the mean over the global batch.

    The decoder's fast path (Luong attention without input feeding, a forward
    encoder) compiles in half the time of the default Translator, which
    `test_two_devices.py` trains."""
    digits = CharTokenizer().fit(["0123456789"])
    model = Translator(
        digits,
        digits,
        embedding_dim=8,
        units=8,
        bidirectional=False,
        attention="luong_general",
        input_feeding=False,
    )
    rng = np.random.default_rng(0)
    sources = ["".join(map(str, rng.integers(0, 10, size=4))) for _ in range(EXAMPLES)]
    texts = (np.array(sources), np.array([s[::-1] for s in sources]))

    def encode(sources, targets):  # batches of str -> ((source, target in), target out)
        (source, target_in), target_out = model.encode_pairs(sources, targets)
        return source, target_in, target_out

    def structure(source, target_in, target_out):
        return (source, target_in), target_out

    return Task(model, texts, encode, (2, 2, 2), structure, lambda m: m.compile())


def classifier_task():
    """Labels strings of letters by their first letter ("low": a-h, "high": i-p);
    vocabulary 20 (16 letters and 4 special tokens), texts of 3 to 6 letters.

    A forward GRU compiles in half the time of the default bidirectional one,
    which `test_two_devices.py` trains."""
    letters = "abcdefghijklmnop"
    tokenizer = CharTokenizer().fit([letters])
    model = AttentionClassifier(
        tokenizer=tokenizer,
        labels=["low", "high"],
        embedding_dim=8,
        units=8,
        bidirectional=False,
        max_length=CLASSIFIER_LENGTH,
    )
    rng = np.random.default_rng(0)
    texts = [
        "".join(rng.choice(list(letters), size=rng.integers(3, CLASSIFIER_LENGTH + 1)))
        for _ in range(EXAMPLES)
    ]
    labels = ["low" if text[0] < "i" else "high" for text in texts]

    def encode(texts, labels):  # batches of str -> (token ids, class ids)
        ids = model.tokenizer.encode_batch(texts, max_length=model.max_length)
        classes = np.array([model.labels.index(label) for label in labels], "int32")
        return ids, classes

    return Task(
        model,
        (np.array(texts), np.array(labels)),
        encode,
        (2, 1),
        lambda ids, classes: (ids, classes),
        lambda m: m.compile(optimizer=keras.optimizers.Adam(0.01)),
    )


TASKS = {"translator": translator_task, "classifier": classifier_task}


def text_dataset(task, num_workers=1, index=0, batch_size=None):
    """This worker's shard of a pipeline of string pairs, tokenized in the pipeline.

    Args:
        task: a `Task`: its texts, encoded by its model's encode step.
        num_workers: int, the number of processes.
        index: int, this process's index.
        batch_size: int, this worker's batch (default: the global batch split
            evenly between the workers).

    Returns:
        A `tf.data.Dataset` of `(x, y)` int32 batches: examples `index`,
        `index + num_workers`, ... of `task.texts`, so the workers' batches together
        hold the examples of one global batch of a one-process run.
    """
    batch_size = batch_size or GLOBAL_BATCH // num_workers

    def encode(inputs, targets):  # batches of bytes -> int32 arrays
        return task.encode(
            [text.decode("utf-8") for text in inputs],
            [text.decode("utf-8") for text in targets],
        )

    def tokenize(inputs, targets):
        arrays = tf.numpy_function(
            encode, [inputs, targets], [tf.int32] * len(task.ranks)
        )
        for array, rank in zip(arrays, task.ranks):
            array.set_shape((None,) * rank)
        return task.structure(*arrays)

    dataset = tf.data.Dataset.from_tensor_slices(task.texts)  # (str, str) pairs
    dataset = dataset.shard(num_workers, index)  # examples index, index + n, ...
    dataset = dataset.batch(batch_size, drop_remainder=True)  # same steps everywhere
    return dataset.map(tokenize)


def weights_of(model):
    return [np.array(keras.ops.convert_to_numpy(w)) for w in model.weights]


class KillAt(keras.callbacks.Callback):
    """SIGKILLs this process after step `step` of epoch `epoch` (a lost machine)."""

    def __init__(self, epoch, step):
        super().__init__()
        self.epoch, self.step, self.current = epoch, step, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


def build(name, seed=0):
    """A task's model, built from `seed`, and its data."""
    keras.utils.set_random_seed(seed)
    return TASKS[name]()


def train(name, make_dataset, initial=None, seed=0, scope=None, callbacks=()):
    """Builds, compiles and fits a task's model on `make_dataset(task)`.

    `scope`, if given, makes the context in which the model is built and
    compiled (`strategy.scope`).

    Returns:
        `(model, initial weights, history)`.
    """
    with scope() if scope is not None else contextlib.nullcontext():
        task = build(name, seed)
        model = task.model
        if initial is not None:
            model.set_weights(initial)
        start = weights_of(model)
        task.compile(model)
    history = model.fit(
        make_dataset(task),
        epochs=EPOCHS,
        shuffle=False,
        verbose=0,
        callbacks=list(callbacks),
    )
    return model, start, history


def train_one_process(name, initial):
    """The reference: one process, the whole global batch, no distribution."""
    return train(name, text_dataset, initial)


def pin_gloo_to_loopback():
    """Makes JAX's CPU collectives (gloo) listen on 127.0.0.1.

    Gloo listens on the address the host's name resolves to, which on many
    machines is not 127.0.0.1; the tests must speak over loopback only. On real
    hosts, leave this out: gloo then uses the host's address. Uses JAX's
    internal backend registry (jax 0.10): call it before the first JAX
    computation.
    """
    from jax._src import distributed, xla_bridge
    from jax._src.lib import _jax

    def make_cpu_client():
        collectives = _jax.make_gloo_tcp_collectives(
            distributed_client=distributed.global_state.client, hostname="127.0.0.1"
        )
        return xla_bridge.make_cpu_client(collectives=collectives)

    xla_bridge.register_backend_factory("cpu", make_cpu_client, priority=0)


def reduce_each_tensor(strategy):
    """Makes `strategy.reduce` work as `fit` calls it (Keras 3.15, TensorFlow 2.21).

    Under `MultiWorkerMirroredStrategy`, Keras's `fit` fails twice in
    `strategy.reduce` (keras-team/keras#20585): before the first step it reduces
    the first batch, a tuple, which the strategy cannot take ("Attempt to
    convert a value (PerReplica ...) to a Tensor"); after each step it averages
    the scalar logs with `axis=0` ("Invalid reduction dimension 0 for input
    with 0 dimensions"). Reducing each tensor alone, over the replicas only for
    a scalar, gives what `fit` expects.
    """
    reduce = strategy.reduce

    def reduce_each(reduce_op, value, axis=None):
        def one(tensor):
            rank = strategy.experimental_local_results(tensor)[0].shape.rank
            return reduce(reduce_op, tensor, axis=axis if rank else None)

        return tf.nest.map_structure(one, value)

    strategy.reduce = reduce_each


def tcp_sockets():
    """`[(local address, remote address, state)]` of this process's TCP sockets."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/self/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    states = {"01": "ESTABLISHED", "0A": "LISTEN"}
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[9] in inodes:
                    out.append(
                        (
                            _address(fields[1]),
                            _address(fields[2]),
                            states.get(fields[3], fields[3]),
                        )
                    )
    return out


def _address(text):
    """`0100007F:1F90` (little-endian words) -> `127.0.0.1:8080`; IPv6 likewise."""
    host, port = text.split(":")
    raw = b"".join(bytes.fromhex(host[i : i + 8])[::-1] for i in range(0, len(host), 8))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]  # IPv4-mapped IPv6
    if len(raw) == 4:
        return f"{'.'.join(str(b) for b in raw)}:{int(port, 16)}"
    return f"[{ipaddress.IPv6Address(raw)}]:{int(port, 16)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--initial", help="folder of <task>.npz initial weights")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tasks",
        default="translator,classifier",
        help="models to train in turn; <task>+backup: with BackupAndRestore",
    )
    parser.add_argument("--workers", type=int, help="JAX: the number of processes")
    parser.add_argument("--index", type=int, help="JAX: this process's id")
    parser.add_argument("--coordinator", help="JAX: host:port of process 0")
    parser.add_argument("--backup", help="folder of the +backup runs' backups")
    parser.add_argument("--kill-at", help="E,S: SIGKILL in the +backup run")
    args = parser.parse_args()

    if keras.backend.backend() == "jax":
        pin_gloo_to_loopback()
        keras.distribution.initialize(
            job_addresses=args.coordinator,
            num_processes=args.workers,
            process_id=args.index,
        )
        keras.distribution.set_distribution(
            # Each process reads its own shard (text_dataset), so Keras must not
            # shard the dataset again.
            keras.distribution.DataParallel(auto_shard_dataset=False)
        )
        workers, index = args.workers, args.index
        scope = None

        def make_dataset(task):
            return text_dataset(task, workers, index)

    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG
        reduce_each_tensor(strategy)
        workers = strategy.num_replicas_in_sync
        index = strategy.cluster_resolver.task_id
        scope = strategy.scope

        def make_dataset(task):
            def dataset_fn(context):
                return text_dataset(
                    task,
                    context.num_input_pipelines,
                    context.input_pipeline_id,
                    context.get_per_replica_batch_size(GLOBAL_BATCH),
                )

            return strategy.distribute_datasets_from_function(dataset_fn)

    for run in args.tasks.split(","):
        name, _, backed_up = run.partition("+")  # "classifier+backup"
        initial = None
        if args.initial:
            with np.load(os.path.join(args.initial, f"{name}.npz")) as f:
                initial = [f[f"arr_{i}"] for i in range(len(f.files))]
        callbacks = []
        if backed_up:
            backup = os.path.join(args.backup, name, f"worker-{index}")
            callbacks.append(keras.callbacks.BackupAndRestore(backup))
            if args.kill_at:
                callbacks.append(KillAt(*map(int, args.kill_at.split(","))))
        model, _, history = train(
            name, make_dataset, initial, args.seed, scope, callbacks
        )
        np.savez(os.path.join(args.out, f"{run}-{index}.npz"), *weights_of(model))
        report = {
            "workers": workers,
            "index": index,
            "loss": [float(v) for v in history.history["loss"]],
            "sockets": tcp_sockets(),
        }
        with open(os.path.join(args.out, f"{run}-{index}.json"), "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()

"""Trains the Translator and AttentionClassifier on 1 and on 2 CPU devices; prints JSON.

Run in a fresh process (the device count must be set before the backend starts):

    python tests/distribution/distributed_run.py jax         # DataParallel, ModelParallel
    python tests/distribution/distributed_run.py tensorflow  # MirroredStrategy

Each model is trained from the same initial weights, on the same data in the
same order with the same global batch: once on one device, then on two devices
with each engine. The last line printed is a JSON object: per model and engine,
the largest absolute difference from the one-device run's weights, the losses
per epoch, whether translations / predictions agree, and which variables were
split across the devices.
"""

import contextlib
import json
import os
import sys

BACKEND = sys.argv[1] if len(sys.argv) > 1 else ""
if BACKEND not in ("jax", "tensorflow"):
    raise SystemExit("usage: distributed_run.py {jax|tensorflow} [TASK ...]")
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if BACKEND == "jax":
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    )
    os.environ["JAX_PLATFORMS"] = "cpu"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_rnnattn.models import AttentionClassifier, Translator  # noqa: E402
from keras_rnnattn.text import CharTokenizer  # noqa: E402

GLOBAL_BATCH = 16
EPOCHS = 2


def translator_task():
    """Digit reversal. Every source has 4 digits, so each half of a batch holds
    the same number of real target tokens: the loss (a mean over real tokens)
    is then the same whether averaged over the whole batch or per replica."""
    digits = CharTokenizer().fit(["0123456789"])
    model = Translator(digits, digits, embedding_dim=8, units=8)
    rng = np.random.default_rng(0)
    sources = ["".join(map(str, rng.integers(0, 10, size=4))) for _ in range(64)]
    x, y = model.encode_pairs(sources, [s[::-1] for s in sources])
    return model, x, y, lambda m: m.compile()  # Adam, global norm clipping


def classifier_task():
    """Is the first token even? 64 sequences of 6 ids, some padded."""
    model = AttentionClassifier(
        vocabulary_size=20, num_classes=2, embedding_dim=8, units=8
    )
    rng = np.random.default_rng(0)
    x = rng.integers(1, 20, size=(64, 6)).astype("int32")
    x[::4, 4:] = 0
    y = (x[:, 0] % 2).astype("int32")
    return model, x, y, lambda m: m.compile(optimizer=keras.optimizers.Adam(0.01))


TASKS = {"translator": translator_task, "classifier": classifier_task}


def to_numpy(variable):
    return np.asarray(keras.ops.convert_to_numpy(variable))


def train(task, initial=None, scope=None):
    """Builds, compiles and fits a task's model (inside `scope` if given).

    Returns:
        `(model, initial weights, losses per epoch, inputs)`.
    """
    keras.utils.set_random_seed(0)
    with scope if scope is not None else contextlib.nullcontext():
        model, x, y, compile_fn = task()
        if initial is not None:
            model.set_weights(initial)
        start = [to_numpy(w) for w in model.weights]
        compile_fn(model)
    history = model.fit(
        x, y, batch_size=GLOBAL_BATCH, epochs=EPOCHS, shuffle=False, verbose=0
    )
    return model, start, history.history["loss"], x


SOURCES = ["0123", "9876", "5555", "1029"]


def compare(name, one, two):
    """How far the two-device run is from the one-device run."""
    (model_1, start, loss_1, x), (model_2, _, loss_2, _) = one, two
    diffs = [
        float(np.max(np.abs(to_numpy(a) - to_numpy(b))))
        for a, b in zip(model_1.weights, model_2.weights)
    ]
    out = {
        "max_weight_diff": max(diffs),
        "max_weight_change": float(
            max(np.max(np.abs(to_numpy(w) - s)) for w, s in zip(model_1.weights, start))
        ),
        "loss_one_device": [float(v) for v in loss_1],
        "loss_two_devices": [float(v) for v in loss_2],
    }
    if name == "translator":
        out["same_translations"] = model_1.translate(SOURCES) == model_2.translate(
            SOURCES
        )
    else:
        out["max_prediction_diff"] = float(
            np.max(
                np.abs(model_1.predict(x, verbose=0) - model_2.predict(x, verbose=0))
            )
        )
    return out


def jax_layout_map(mesh):
    """Shards the embeddings' feature axis and the output layer's class axis.

    Keys are regular expressions matched in full against variable paths
    (`translator/source_embedding/embeddings`, `token_embedding/embeddings`).
    """
    layout_map = keras.distribution.LayoutMap(mesh)
    layout_map[".*_embedding/embeddings"] = (None, "model")
    layout_map[".*output_dense/kernel"] = (None, "model")
    layout_map[".*output_dense/bias"] = ("model",)
    return layout_map


def sharded_shapes(model):
    """`{path: [shape of each device's shard]}` of the variables split across devices."""
    out = {}
    for variable in model.weights:
        shards = variable.value.addressable_shards
        shapes = [list(s.data.shape) for s in shards]
        if any(shape != list(variable.shape) for shape in shapes):
            out[variable.path] = shapes
    return out


def jax_distributions():
    import jax

    devices = jax.devices()
    mesh = keras.distribution.DeviceMesh(
        (1, 2), axis_names=("batch", "model"), devices=devices
    )
    return {
        "data_parallel": keras.distribution.DataParallel(devices=devices),
        "model_parallel": keras.distribution.ModelParallel(
            layout_map=jax_layout_map(mesh), batch_dim_name="batch"
        ),
    }


def main():
    results = {"backend": keras.backend.backend()}
    if BACKEND == "tensorflow":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
        # One strategy for the whole process (a second one in the same process
        # can reuse the first one's collective-op keys).
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        results["devices"] = strategy.num_replicas_in_sync
    else:
        import jax

        results["devices"] = len(jax.devices())
        distributions = jax_distributions()
        batch = distributions["data_parallel"].get_data_layout((GLOBAL_BATCH, 6))
        results["data_layout"] = list(batch.axes)
    for name in sys.argv[2:] or TASKS:
        task = TASKS[name]
        one = train(task)
        results[name] = {}
        if BACKEND == "tensorflow":
            two = train(task, one[1], scope=strategy.scope())
            results[name]["mirrored"] = compare(name, one, two)
            continue
        for engine, distribution in distributions.items():
            keras.distribution.set_distribution(distribution)
            try:
                two = train(task, one[1])
            finally:
                keras.distribution.set_distribution(None)
            results[name][engine] = compare(name, one, two)
            results[name][engine]["sharded"] = sharded_shapes(two[0])
    print(json.dumps(results))


if __name__ == "__main__":
    main()

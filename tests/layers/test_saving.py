"""A model holding every layer round-trips through `.keras` files, across backends."""

import json
import os
import subprocess
import sys

import keras
import numpy as np

from keras_rnnattn.layers import (
    AttentionPooling,
    BahdanauAttention,
    LuongAttention,
    SequenceSelfAttention,
)
from tests.backends import next_backend

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def every_layer_model():
    tokens = keras.Input((6,), dtype="int32", name="tokens")
    query = keras.Input((5,), name="query")
    embedded = keras.layers.Embedding(9, 8, mask_zero=True)(tokens)  # (B, S, 8)
    states = SequenceSelfAttention("scaled_dot", causal=True)(embedded)  # (B, S, 16)
    states = SequenceSelfAttention(
        keras.layers.MultiHeadAttention(num_heads=2, key_dim=4), concat=False
    )(states)
    q = keras.layers.Dense(16)(query)
    parts = [
        BahdanauAttention(4, normalize=True)(q, states),
        LuongAttention("general", scale=True)(q, states),
        LuongAttention("concat", units=3)(q, states),
        LuongAttention("location", source_length=6)(q, states),
        AttentionPooling()(states),
        AttentionPooling(units=4, hops=2, penalty=0.1)(states),
    ]
    outputs = keras.layers.Dense(3)(keras.layers.Concatenate()(parts))
    return keras.Model([tokens, query], outputs)


def inputs():
    rng = np.random.default_rng(5)
    tokens = rng.integers(1, 9, size=(4, 6)).astype("int32")
    tokens[1, 3:] = 0
    return {"tokens": tokens, "query": rng.normal(size=(4, 5)).astype("float32")}


def test_keras_file_round_trip(tmp_path):
    model = every_layer_model()
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)  # safe_mode is on by default
    np.testing.assert_array_equal(
        loaded.predict(inputs(), verbose=0), model.predict(inputs(), verbose=0)
    )


LOAD_SCRIPT = """
import json, sys
import numpy as np
import keras
import keras_rnnattn  # registers the layers
x = {k: np.asarray(v, dtype=("int32" if k == "tokens" else "float32"))
     for k, v in json.load(open(sys.argv[2])).items()}
model = keras.models.load_model(sys.argv[1])
np.save(sys.argv[3], np.asarray(model.predict(x, verbose=0)))
"""


def test_saved_here_loads_on_the_next_backend(tmp_path):
    other = next_backend()
    model = every_layer_model()
    path = str(tmp_path / "model.keras")
    model.save(path)
    x = inputs()
    with open(tmp_path / "x.json", "w") as f:
        json.dump({k: v.tolist() for k, v in x.items()}, f)
    env = dict(os.environ, KERAS_BACKEND=other, PYTHONPATH=REPO)
    subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_SCRIPT,
            path,
            str(tmp_path / "x.json"),
            str(tmp_path / "y.npy"),
        ],
        check=True,
        env=env,
        timeout=300,
    )
    np.testing.assert_allclose(
        np.load(tmp_path / "y.npy"), model.predict(x, verbose=0), atol=1e-5
    )

"""Shared by the decoding tests: the per-backend `jit`, table models, brute force,
the TFLite conversion."""

import types

import keras
import numpy as np
import pytest
from keras import ops


def jit(fn):
    """Compiles `fn` the way each backend does in production.

    JAX: `jax.jit`. TensorFlow: `tf.function(jit_compile=True)` (XLA). Torch: the
    function itself, run eagerly: `keras.ops.while_loop` is a Python loop on
    torch, so `torch.compile` would break the graph at every step and compile
    for minutes on CPU; decoding on torch is tested eagerly.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.jit(fn)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    return fn


class StepTableModel:
    """A model whose next-token log-probabilities are a table `(L, V, V)`
    indexed by step and previous token; its state is the step counter.

    `next_fn` is the Keras version, `log_probs(start, prefix)` the NumPy one
    (float64). With `alignments` `(L, V, S)` the model also returns attention
    weights, indexed the same way.
    """

    def __init__(self, log_probs, alignments=None):
        self.table = np.asarray(log_probs, "float64")  # (L, V, V)
        self.max_length, self.vocab_size, _ = self.table.shape
        self.alignments = None if alignments is None else np.asarray(alignments)

    @classmethod
    def random(cls, seed, max_length, vocab_size, sharpness=2.0):
        logits = np.random.default_rng(seed).normal(
            scale=sharpness, size=(max_length, vocab_size, vocab_size)
        )
        return cls(logits - np.log(np.exp(logits).sum(-1, keepdims=True)))

    def initial_state(self, batch_size):
        return {"step": ops.zeros((batch_size,), dtype="int32")}

    def next_fn(self, token_ids, state):
        flat = ops.convert_to_tensor(
            self.table.reshape(-1, self.vocab_size).astype("float32")
        )  # (L * V, V)
        step = ops.minimum(state["step"], self.max_length - 1)  # (N,)
        rows = step * self.vocab_size + token_ids  # (N,)
        logits = ops.take(flat, rows, axis=0)  # (N, V)
        new_state = {"step": state["step"] + 1}
        if self.alignments is None:
            return logits, new_state
        weights = ops.convert_to_tensor(
            self.alignments.reshape(-1, self.alignments.shape[-1]).astype("float32")
        )
        return logits, new_state, ops.take(weights, rows, axis=0)

    def log_probs(self, start, prefix):
        previous = prefix[-1] if prefix else start
        return self.table[len(prefix), previous]

    def alignment(self, start, prefix):
        previous = prefix[-1] if prefix else start
        return self.alignments[len(prefix), previous].astype("float64")


def hypotheses(log_probs_fn, start, end_id, max_length, vocab_size):
    """Every hypothesis beam search can return, as (tokens, log P) pairs: token
    lists that end at their first end_id, or have max_length tokens."""
    found = []

    def extend(prefix, log_prob):
        step_log_probs = log_probs_fn(start, prefix)
        for token in range(vocab_size):
            tokens = prefix + [token]
            total = log_prob + float(step_log_probs[token])
            if token == end_id or len(tokens) == max_length:
                found.append((tokens, total))
            else:
                extend(tokens, total)

    extend([], 0.0)
    return found


def gnmt_score(log_prob, length, alpha=0.0, beta=0.0, coverage=None):
    """log P / ((5 + |Y|) / 6) ** alpha + beta * sum log(min(coverage, 1)), with
    source positions of zero coverage left out."""
    score = log_prob / ((5.0 + length) / 6.0) ** alpha
    if beta:
        attended = coverage[coverage > 0]
        score += beta * np.sum(np.log(np.minimum(attended, 1.0)))
    return score


def brute_force_beams(model, start, end_id, n, alpha=0.0, beta=0.0):
    """The n best hypotheses by enumeration: tokens `(n, L)` padded with end_id,
    scores `(n,)`, best first."""
    length = model.max_length
    scored = []
    for tokens, log_prob in hypotheses(
        model.log_probs, start, end_id, length, model.vocab_size
    ):
        coverage = None
        if beta:
            coverage = sum(
                model.alignment(start, tokens[:t]) for t in range(len(tokens))
            )
        scored.append(
            (gnmt_score(log_prob, len(tokens), alpha, beta, coverage), tokens)
        )
    scored.sort(key=lambda pair: -pair[0])
    best = scored[:n]
    tokens = np.full((len(best), length), end_id)
    for i, (_, seq) in enumerate(best):
        tokens[i, : len(seq)] = seq
    return tokens, np.array([score for score, _ in best])


class MemoryModel:
    """A model with a nested state: per-row encoder memory and a decoder part.

    State: `{"memory": (B, S, V), "decoder": (counts (B, V), step (B,) int32)}`.
    At step t the logits are `memory[b, t] - repeat_cost * counts[b]`, where
    `counts` counts the tokens fed so far (the start id included), so the
    logits depend on the memory row and on the history of the beam: a wrong
    tiling or reordering of either gives other tokens.
    """

    def __init__(self, memory, repeat_cost=3.0):
        self.memory = np.asarray(memory, "float32")  # (B, S, V)
        _, self.max_length, self.vocab_size = self.memory.shape
        self.repeat_cost = repeat_cost

    @classmethod
    def random(cls, seed, batch_size, max_length, vocab_size):
        memory = np.random.default_rng(seed).normal(
            scale=2.0, size=(batch_size, max_length, vocab_size)
        )
        return cls(memory)

    def initial_state(self):
        batch_size = self.memory.shape[0]
        return {
            "memory": ops.convert_to_tensor(self.memory),
            "decoder": (
                ops.zeros((batch_size, self.vocab_size), dtype="float32"),
                ops.zeros((batch_size,), dtype="int32"),
            ),
        }

    def next_fn(self, token_ids, state):
        memory = state["memory"]  # (N, S, V)
        counts, step = state["decoder"]  # (N, V), (N,)
        counts = counts + ops.one_hot(token_ids, self.vocab_size, dtype="float32")
        at_step = ops.one_hot(step, self.max_length, dtype="float32")  # (N, S)
        logits = ops.sum(memory * at_step[:, :, None], axis=1)  # (N, V)
        logits = logits - self.repeat_cost * counts
        return logits, {"memory": memory, "decoder": (counts, step + 1)}

    def row(self, b):
        """The NumPy model of batch row b, in the form `brute_force_beams` takes."""

        def log_probs(start, prefix):
            counts = np.bincount([start, *prefix], minlength=self.vocab_size)
            logits = self.memory[b, len(prefix)].astype("float64")
            logits = logits - self.repeat_cost * counts
            return logits - np.log(np.sum(np.exp(logits)))

        return types.SimpleNamespace(
            log_probs=log_probs, max_length=self.max_length, vocab_size=self.vocab_size
        )


def numpy_greedy(log_probs_fn, start, end_id, max_length):
    """Greedy decoding of one row in NumPy: tokens `(L,)` padded, and log P."""
    tokens, total = [], 0.0
    while len(tokens) < max_length:
        step_log_probs = log_probs_fn(start, tokens)
        token = int(np.argmax(step_log_probs))
        tokens.append(token)
        total += float(step_log_probs[token])
        if token == end_id:
            break
    padded = np.full((max_length,), end_id)
    padded[: len(tokens)] = tokens
    return padded, total


def convert_and_run(fn, starts):
    """Converts `fn(starts)` with builtin ops only and runs it in LiteRT.

    `starts` is a NumPy array (start ids or start frames); the model's input has
    its shape and dtype. Returns the LiteRT outputs (in the model's order, which
    TFLite does not guarantee) and `fn`'s outputs run in TensorFlow.
    """
    tf = pytest.importorskip("tensorflow")
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    spec = tf.TensorSpec(starts.shape, tf.as_dtype(starts.dtype))
    graph = tf.function(fn, input_signature=[spec])
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [graph.get_concrete_function()], graph
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    interpreter = litert.Interpreter(model_content=converter.convert())
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], starts)
    interpreter.invoke()
    outputs = [
        interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()
    ]
    expected = [np.asarray(x) for x in fn(tf.constant(starts))]
    return outputs, expected

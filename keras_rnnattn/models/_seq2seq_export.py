"""The export endpoints of the sequence-to-sequence models (`Seq2SeqTask`)."""

import keras
import numpy as np
from keras import ops

from keras_rnnattn.models.endpoint import (
    Endpoint,
    flatten_state,
    state_inputs,
    unflatten_state,
)


def _memory_inputs(memory, longer, batch_size, length):
    """`state_inputs` of the decoding memory, with `length` on axis 1 of the
    tensors that depend on the source length: those whose axis 1 differs in
    `longer`, the memory of a longer source."""
    inputs = state_inputs("memory", memory, batch_size)
    pairs = zip(keras.tree.flatten(memory), keras.tree.flatten(longer))
    for name, (leaf, other) in zip(list(inputs), pairs):
        if tuple(leaf.shape) != tuple(other.shape):
            shape, dtype = inputs[name]
            inputs[name] = ((batch_size, length) + shape[2:], dtype)
    return inputs


def check_options(model, options):
    """`Seq2SeqTask.check_export_options`: `max_length` defaults to
    `max_target_length` and the beam's penalties to the model's.

    Args:
        model: the `Seq2SeqTask`.
        options: dict, `export_model`'s options.

    Returns:
        The options (changed in place).
    """
    if options.get("max_length") is None:
        options["max_length"] = model.max_target_length
    for name in ("length_penalty", "coverage_penalty"):
        if options.get(name) is None:
            options[name] = getattr(model.search_settings, name)
    return options


def seq2seq_endpoints(model, options):
    """`encode`, `decode_step`, `greedy` and `beam_search` of a `Seq2SeqTask`.

    Built on the model's hooks alone (`initial_state`, `next_fn`) and its
    `search_fn`; see `Seq2SeqTask.export_endpoints`.

    Args:
        model: a `Seq2SeqTask`.
        options: the checked options of `export_model`.

    Returns:
        A list of `Endpoint`s.
    """
    b, s = options["batch_size"], options["sequence_length"]
    max_length = options["max_length"] or model.max_target_length
    probe = model.initial_state(np.ones((1, 2), "int32"))
    longer = model.initial_state(np.ones((1, 3), "int32"))["memory"]
    states, memory = probe["states"], probe["memory"]
    step_inputs = {
        "token_ids": ((b,), "int32"),
        **state_inputs("state", states, b),
        **_memory_inputs(memory, longer, b, s),
    }
    # With attention, the searches also return the alignments of their tokens.
    aligned = model.has_attention
    beam = {name: options[name] for name in ("length_penalty", "coverage_penalty")}
    searches = {
        "greedy": model.search_fn(1, max_length, return_alignments=aligned),
        "beam_search": model.search_fn(
            options["beam_size"], max_length, return_alignments=aligned, **beam
        ),
    }

    def encode(source_ids):
        state = model.initial_state(source_ids)
        return {
            **flatten_state("state", state["states"]),
            **flatten_state("memory", state["memory"]),
        }

    def decode_step(**inputs):
        state = {
            "states": unflatten_state("state", states, inputs),
            "memory": unflatten_state("memory", memory, inputs),
        }
        out = model.next_fn(inputs["token_ids"], state)
        result = {"logits": out[0], **flatten_state("state", out[1]["states"])}
        if len(out) == 3:
            result["alignment"] = out[2]
        return result

    def searcher(name):
        def search(source_ids):
            results = searches[name](source_ids)
            out = {"tokens": ops.cast(results[0], "int32"), "scores": results[1]}
            if aligned:
                out["alignments"] = results[2]
            return out

        return search

    source = {"source_ids": ((b, s), "int32")}
    outputs = f"tokens (B, {max_length}), scores (B,)"
    if aligned:
        outputs += f", alignments (B, {max_length}, S)"
    return [
        Endpoint("encode", encode, source, "source ids (B, S) -> state_*, memory_*"),
        Endpoint(
            "decode_step",
            decode_step,
            step_inputs,
            "previous token (B,), state_*, memory_* -> logits (B, V), the next "
            "state_*, alignment (B, S)",
        ),
        Endpoint(
            "greedy",
            searcher("greedy"),
            source,
            f"source ids (B, S) -> {outputs}",
        ),
        Endpoint(
            "beam_search",
            searcher("beam_search"),
            source,
            f"source ids (B, S) -> the best of {options['beam_size']} beams "
            f"(length penalty {options['length_penalty']:g}, coverage penalty "
            f"{options['coverage_penalty']:g}): {outputs}",
        ),
    ]

"""The search of the sequence-to-sequence models, as functions of the model.

`Seq2SeqTask`'s `search_settings_for`, `search_fn`, `generate_ids` and
`generate` call these: one `Generator` (`_generator.py`) over the model's
hooks (`initial_state`, `next_fn`, `step_constants`), compiled once per
`CompileKey`.
"""

import numpy as np
from keras import ops

from keras_rnnattn._backend import compiled_stage, no_grad
from keras_rnnattn._checks import positive_int
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.models._generator import (
    CompileKey,
    Generator,
    bind_constants,
    runtime_penalties,
)
from keras_rnnattn.models.generation import NEVER, token_bias
from keras_rnnattn.text import inputs as text_inputs


def search_settings_for(base, beam_size, beam_kwargs):
    """The `SearchSettings` of a beam size and beam options, over `base`.

    Args:
        base: the model's `search_settings`.
        beam_size: int >= 1.
        beam_kwargs: dict of `length_penalty`, `coverage_penalty`,
            `num_return_sequences`.

    Returns:
        Greedy search's settings for one beam without penalties or n-best,
        else beam search's.
    """
    beam_size = positive_int("beam_size", beam_size)
    beam = beam_size > 1 or any(
        value != (1 if name == "num_return_sequences" else 0)
        for name, value in beam_kwargs.items()
    )
    if not beam:
        return base.replace(method="greedy", beam_size=1, num_return_sequences=1)
    beam_kwargs = {"num_return_sequences": 1, **beam_kwargs}
    return base.replace(method="beam", beam_size=beam_size, **beam_kwargs)


def with_row_limits(next_fn, vocabulary_size, end_id):
    """`next_fn` over `{"model", "step", "limit"}` that forces the end token
    in the rows past their length limit.

    Args:
        next_fn: the model's step `next_fn(token_ids, state)`.
        vocabulary_size: int V.
        end_id: int, the end token.

    Returns:
        The step over the wrapped state.
    """

    def step(token_ids, state):
        out = next_fn(token_ids, state["model"])
        # (V,): 0 at the end token, -1e9 elsewhere
        only_eos = token_bias(vocabulary_size, (end_id,), 0.0, NEVER)
        over = ops.greater_equal(state["step"], state["limit"])[:, None]  # (N, 1)
        logits = ops.where(over, only_eos[None], out[0])
        new_state = {
            "model": out[1],
            "step": state["step"] + 1,
            "limit": state["limit"],
        }
        return (logits, new_state) + tuple(out[2:])

    return step


def seq2seq_generator(model, key):
    """The `Generator` of `model` (a `Seq2SeqTask`) for `key`.

    Args:
        model: the model, read through its hooks.
        key: a `CompileKey`.

    Returns:
        A `Generator` of source ids `(B, S)`.
    """
    tok = model.target_tokenizer
    bos, eos = tok.bos_id, tok.eos_id
    next_fn = model.next_fn

    def make_step():
        step = bind_constants(next_fn, model.step_constants())
        if key.per_row:
            step = with_row_limits(step, tok.vocabulary_size, eos)
        return step

    def start(source_ids):
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        state = compiled_stage(model.initial_state)(source_ids)  # the encoder
        start_ids = ops.full((ops.shape(source_ids)[0],), bos, dtype="int32")
        if key.per_row:
            lengths = ops.sum(ops.cast(ops.not_equal(source_ids, 0), "int32"), 1)
            state = {
                "model": state,
                "step": ops.zeros_like(lengths),  # (B,) tokens produced
                "limit": ops.minimum(2 * lengths + 10, key.max_length),  # (B,)
            }
        return state, start_ids

    return Generator(make_step, start, eos, key)


def search_ids(model, source_ids, settings, max_length, return_alignments=False):
    """`generate_ids` with its `SearchSettings` made (once, by the caller).

    Args:
        model: the `Seq2SeqTask`.
        source_ids: int `(B, S)` (checked here).
        settings: the `SearchSettings`.
        max_length: int or None (each row's own limit).
        return_alignments: bool.

    Returns:
        NumPy `(tokens, scores[, alignments])`.
    """
    name = type(model).__name__
    if return_alignments and not model.has_attention:
        raise ValueError(
            f"{name} has no attention (attention='none'). "
            "Received: return_alignments=True"
        )
    if settings.coverage_penalty > 0 and not model.has_attention:
        raise ValueError(
            f"{name} has no attention (attention='none'), "
            "which a coverage penalty needs: give coverage_penalty=0. "
            f"Received: coverage_penalty={settings.coverage_penalty:g}"
        )
    if source_ids is not None and not isinstance(source_ids, (list, tuple)):
        source_ids = np.asarray(ops.convert_to_numpy(source_ids))
    source_ids = text_inputs.check_token_ids(
        source_ids, model.source_tokenizer.vocabulary_size, f"{name}.generate_ids"
    )
    per_row = max_length is None
    if per_row:
        max_length = min(model.max_target_length, 2 * source_ids.shape[1] + 10)
    max_length = positive_int("max_length", max_length)
    # The beam's penalties are inputs: one compiled search for every value.
    settings, penalties = runtime_penalties(settings)
    key = CompileKey(
        settings,
        max_length,
        per_row=per_row,
        return_alignments=bool(return_alignments),
        sums_coverage="coverage_penalty" in penalties,
    )
    generator = model._compiled(key, lambda: seq2seq_generator(model, key))
    results = generator(
        source_ids,
        **{k: ops.convert_to_tensor(v, "float32") for k, v in penalties.items()},
    )
    return tuple(ops.convert_to_numpy(r) for r in results)


def given_penalties(defaults, length_penalty, coverage_penalty):
    """The penalties given that the search must hear of: those that are not
    None and not 0 where the model's default (`defaults`) is 0 too.

    Args:
        defaults: the model's `search_settings`.
        length_penalty, coverage_penalty: floats or None, `translate`'s.

    Returns:
        dict of `length_penalty` and `coverage_penalty`.
    """
    given = {"length_penalty": length_penalty, "coverage_penalty": coverage_penalty}
    return {
        name: value
        for name, value in given.items()
        if value is not None and (value or getattr(defaults, name))
    }


def sampled_ids(model, hub, settings, source, max_length):
    """Tokens `(B, max_length)` drawn by a keras-hub sampler `hub`, or with
    the sampling `settings`.

    Args:
        model: the `Seq2SeqTask`.
        hub: a keras-hub sampler, or None.
        settings: the `SearchSettings` (sampling), read without `hub`.
        source: int `(B, S)` source ids.
        max_length: int.

    Returns:
        int NumPy `(B, max_length)`.
    """
    key = CompileKey(settings, max_length)
    if hub is not None:
        prompt = np.zeros((source.shape[0], max_length + 1), "int32")
        prompt[:, 0] = model.target_tokenizer.bos_id
        with no_grad():
            state = model.initial_state(source)
            generator = seq2seq_generator(model, key)
            tokens = generator.run_keras_hub_sampler(hub, state, prompt, 1, model)
        return tokens[:, 1:]
    uniforms = draw_uniforms((max_length, source.shape[0]))  # (L, B)
    generator = model._compiled(key, lambda: seq2seq_generator(model, key))
    tokens, _ = generator(source, uniforms)
    return ops.convert_to_numpy(tokens)

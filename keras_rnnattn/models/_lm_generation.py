"""The generation of `AttentiveLanguageModel`, as functions of the model:
prompts in, continued ids out, through one `Generator` (`_generator.py`)
compiled once per `CompileKey`."""

import functools

import keras
import numpy as np
from keras import ops

from keras_rnnattn._backend import no_grad
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.models._generator import CompileKey, Generator
from keras_rnnattn.models.generation import token_bias
from keras_rnnattn.text import inputs as text_utils


def _where_rows(keep, new, old):
    """`new` in the rows where `keep` `(B,)` is True, else `old`."""
    keep = ops.reshape(keep, (-1,) + (1,) * (len(old.shape) - 1))
    return ops.where(keep, new, old)


def check_room(model, longest, max_length, owner, name="max_length"):
    """`max_length` (default: all the room there is) for prompts of at most
    `longest` positions, the begin token included: prompt and generated
    tokens but the last must fit the model's `max_length` positions.

    Args:
        model: the language model.
        longest: int, the longest prompt's positions.
        max_length: int or None, the tokens asked for.
        owner: str, the caller named in errors; `name`: the argument's name.

    Returns:
        The checked int (a ValueError naming the limit otherwise).
    """
    room = model.max_length - longest + 1
    if room < 1:
        raise ValueError(
            f"{owner}: the prompt has {longest - 1} tokens but the model reads "
            f"at most {model.max_length - 1} (max_length={model.max_length}, one "
            "position is the begin token): shorten the prompt."
        )
    if max_length is None:
        max_length = room
    if not isinstance(max_length, int) or max_length < 1 or max_length > room:
        raise ValueError(
            f"{owner}: `{name}` must be an int in [1, {room}] for this "
            f"prompt of {longest - 1} tokens (the model's limit is "
            f"{model.max_length} positions). Received: {name}={max_length}"
        )
    return max_length


def generate_with(model, prompt_ids, settings, uniforms=None, max_length=None):
    """`AttentiveLanguageModel.generate_ids` with its `SearchSettings` (made
    once by the caller).

    Args:
        model: the language model.
        prompt_ids: int `(B, P)`.
        settings: the `SearchSettings`.
        uniforms: optional float `(L, B)`, sampling's numbers.
        max_length: int or None.

    Returns:
        `(tokens (B, L), scores (B,))` as NumPy arrays.
    """
    owner = model._caller("generate_ids")
    prompt_ids = text_utils.check_token_ids(prompt_ids, model.vocabulary_size, owner)
    longest = max(int(np.max(np.sum(prompt_ids != model.pad_id, axis=1))), 1)
    if uniforms is not None:
        uniforms = np.asarray(uniforms, dtype="float32")  # (L, B)
        if max_length not in (None, uniforms.shape[0]):
            raise ValueError(
                f"{owner}: with `uniforms`, `max_length` is their length "
                f"{uniforms.shape[0]} (or None). Received: max_length={max_length}"
            )
        max_length = int(uniforms.shape[0])
    max_length = check_room(model, longest, max_length, owner)
    key = CompileKey(settings, max_length)
    generator = model._compiled(key, lambda: lm_generator(model, key))
    args = (prompt_ids,) if uniforms is None else (prompt_ids, uniforms)
    tokens, scores = generator(*args)
    return ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)


def banned_ids(model):
    """The ids never generated: padding, and unknown and begin tokens.

    Args:
        model: the language model.

    Returns:
        A tuple of ints.
    """
    if model.tokenizer is None:
        return (model.pad_id,)
    tok = model.tokenizer
    return (model.pad_id, int(tok.unk_id), int(tok.bos_id))


def end_id(model):
    """The end token; without a tokenizer no id ends a text (out of range).

    Args:
        model: the language model.

    Returns:
        int.
    """
    if model.tokenizer is None:
        return model.vocabulary_size
    return int(model.tokenizer.eos_id)


def allowed_step(model, next_fn):
    """`next_fn` with the banned ids' logits at -1e9 (`token_bias`).

    Args:
        model: the language model.
        next_fn: its `next_fn`.

    Returns:
        The step `(ids, state) -> (logits (B, V) float32, state)`.
    """
    never = token_bias(model.vocabulary_size, banned_ids(model))  # (V,)

    def allowed_next(ids, state):
        logits, state = next_fn(ids, state)
        return ops.cast(logits, "float32") + never, state  # (B, V)

    return allowed_next


def lm_generator(model, key):
    """The `Generator` of the language model `model` for `key`.

    Its `start` reads the prompts `(B, P)` through `next_fn` but their last
    token (rows of different lengths step together; a row whose prompt has
    ended keeps its state); the search then runs for `key.max_length`
    tokens, sampling with the uniforms `(L, B)`. keras.ops only:
    `generate_ids` compiles it, `export_endpoints` traces it.

    Args:
        model: the `AttentiveLanguageModel`.
        key: a `CompileKey`.

    Returns:
        A `Generator` of prompt ids.
    """
    next_fn = model.next_fn

    def start(token_ids):
        token_ids = ops.cast(token_ids, "int32")  # (B, P)
        lengths = ops.sum(ops.cast(ops.not_equal(token_ids, model.pad_id), "int32"), 1)
        lengths = ops.maximum(lengths, 1)  # (B,): the begin token at least

        def prefill(t, state):
            active = ops.less(t, lengths - 1)  # (B,)
            _, stepped = next_fn(ops.take(token_ids, t, axis=1), state)
            return keras.tree.map_structure(
                functools.partial(_where_rows, active), stepped, state
            )

        state = model.initial_state(ops.shape(token_ids)[0])
        state = ops.fori_loop(0, ops.shape(token_ids)[1] - 1, prefill, state)
        start_ids = ops.take_along_axis(token_ids, ops.expand_dims(lengths - 1, 1), 1)
        return state, start_ids[:, 0]

    return Generator(lambda: allowed_step(model, next_fn), start, end_id(model), key)


def generation_settings(model, temperature, top_k, top_p):
    """How `generate` decodes.

    Args:
        model: the language model.
        temperature, top_k, top_p: `generate`'s, or None.

    Returns:
        The `SearchSettings` of the arguments given, else the model's
        (`compile(sampler=...)`); None for a keras-hub sampler.
    """
    settings = model.search_settings
    if temperature is not None or top_k is not None or top_p is not None:
        if temperature == 0:
            return settings.replace(method="greedy")
        return settings.replace(
            method="sample",
            temperature=1.0 if temperature is None else temperature,
            top_k=top_k,
            top_p=top_p,
        )
    if model.keras_hub_sampler is not None:
        return None
    return settings.replace(num_return_sequences=1)


def keras_hub_generate(model, sampler, prompts, new):
    """The tokens a keras-hub sampler adds after each prompt.

    Args:
        model: the language model.
        sampler: a `keras_hub.samplers.Sampler`.
        prompts: lists of ids, each starting with the begin token.
        new: int, the most new tokens.

    Returns:
        A list of lists of ids, one per prompt.
    """
    lengths = [len(p) for p in prompts]
    start = min(lengths)
    width = max(lengths) + new
    full = np.zeros((len(prompts), width), "int32")
    for row, p in enumerate(prompts):
        full[row, : len(p)] = p
    with no_grad():
        state = model.initial_state(len(prompts))
        for t in range(start - 1):  # the columns every prompt has
            _, state = model.next_fn(ops.convert_to_tensor(full[:, t]), state)
        generator = lm_generator(model, CompileKey(model.search_settings, new))
        tokens = generator.run_keras_hub_sampler(sampler, state, full, start, model)
    return [tokens[row, n : n + new].tolist() for row, n in enumerate(lengths)]


def generate_texts(
    model,
    prompt,
    max_length,
    temperature,
    top_k,
    top_p,
    seed,
    max_new_tokens,
    strip_prompt,
):
    """`AttentiveLanguageModel.generate` of `model` (see there).

    Args:
        model: the language model.
        prompt, max_length, temperature, top_k, top_p, seed, max_new_tokens,
            strip_prompt: `generate`'s.

    Returns:
        A string, or a list for a list of prompts.
    """
    items, single, owner = model._read_texts(prompt, "generate")
    text_utils.require_tokenizer(model.tokenizer, owner)
    if not items:
        return []
    if max_length is not None and max_new_tokens is not None:
        raise ValueError(
            f"{owner}: give `max_length` (the whole sequence) or "
            "`max_new_tokens`, not both. Received: "
            f"max_length={max_length}, max_new_tokens={max_new_tokens}"
        )
    bos = int(model.tokenizer.bos_id)
    eos = int(model.tokenizer.eos_id)
    prompts = [[bos] + [int(t) for t in model.tokenizer.encode(p)] for p in items]
    lengths = [len(p) for p in prompts]
    new = max_new_tokens
    if max_length is not None:
        if not isinstance(max_length, int) or not (
            max(lengths) < max_length <= model.max_length
        ):
            raise ValueError(
                f"{owner}: `max_length` counts the whole sequence (begin "
                "token, prompt and new tokens, as in keras-hub): an int in "
                f"[{max(lengths) + 1}, {model.max_length}] for these prompts "
                f"(the longest has {max(lengths) - 1} tokens). For a number "
                "of new tokens pass `max_new_tokens`. Received: "
                f"max_length={max_length}"
            )
        new = max_length - min(lengths)
        room = model.max_length - max(lengths) + 1
        new = min(new, room)
    new = check_room(model, max(lengths), new, owner, "max_new_tokens")
    caps = [new if max_length is None else max_length - n for n in lengths]
    settings = generation_settings(model, temperature, top_k, top_p)
    if settings is None:
        generated = keras_hub_generate(model, model.keras_hub_sampler, prompts, new)
    else:
        ids = text_utils.pad(prompts, model.pad_id)  # (B, P)
        # Prompt columns rounded up to a multiple of 8: fewer shapes to compile.
        ids = np.pad(
            ids, ((0, 0), (0, -ids.shape[1] % 8)), constant_values=model.pad_id
        )
        uniforms = None
        if settings.method == "sample":
            uniforms = draw_uniforms((new, len(prompts)), seed)  # (L, B)
        tokens, _ = generate_with(model, ids, settings, uniforms, new)
        generated = [row.tolist() for row in tokens]
    out = []
    for p, row, cap in zip(prompts, generated, caps, strict=True):
        row = row[:cap]
        if eos in row:
            row = row[: row.index(eos)]
        out.append(model.tokenizer.decode(row if strip_prompt else p[1:] + row))
    return out[0] if single else out

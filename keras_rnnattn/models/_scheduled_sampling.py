"""Scheduled sampling (Bengio et al. 2015): the Translator's training pass
with some decoder inputs drawn from the model itself.

A function of the Translator, which `Translator.sampled_forward_pass` calls:
its steps run the Translator's readout (`Readout.step`), the one `next_fn`
decodes with.
"""

import keras
from keras import ops

from keras_rnnattn._backend import cond_differentiable
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.decoding.scheduled import scheduled_sampling
from keras_rnnattn.models._translator_decoder import decoding_state


def _without_none(values):
    """`values` as a tuple without its None entries (a `cond` branch's results)."""
    return tuple(v for v in values if v is not None)


def sampling_variables(model):
    """p and the seed generator of its draws (with `scheduled_sampling=True`).

    Args:
        model: the Translator, which owns the weight.

    Returns:
        `(sampling_probability, seed_generator)`: a non-trainable float32
        scalar weight at 0 (set by `keras_rnnattn.callbacks.ScheduledSampling`)
        and a `keras.random.SeedGenerator`.
    """
    probability = model.add_weight(
        shape=(),
        initializer="zeros",
        dtype="float32",
        trainable=False,
        name="sampling_probability",
    )
    return probability, keras.random.SeedGenerator(name="sampling_seed_generator")


def sampled_forward_pass(
    model,
    source_ids,
    target_in_ids,
    sampling_probability=None,
    uniforms=None,
    training=None,
):
    """`Translator.sampled_forward_pass` of `model` (see there).

    Args:
        model: the `Translator`.
        source_ids: int `(B, S)`.
        target_in_ids: int `(B, T)`.
        sampling_probability: p, or None for the model's variable.
        uniforms: optional float `(B, T, 2)`.
        training: bool.

    Returns:
        `(logits (B, T, V) float32, alignments (B, T, S) or None,
        token_ids (B, T) int32)`.
    """
    if sampling_probability is None:
        if model.sampling_probability is None:
            raise ValueError(
                "This Translator has no `sampling_probability` variable: "
                "pass `sampling_probability=p`, or build it with "
                "`scheduled_sampling=True`."
            )
        sampling_probability = model.sampling_probability
    readout = model._readout
    encoded = model._encode(source_ids, training=training)
    state = decoding_state(model.decoder, *encoded, model.lexical_model)
    mem = state["memory"]
    target_in_ids = ops.cast(target_in_ids, "int32")
    shape = (ops.shape(target_in_ids)[0], ops.shape(target_in_ids)[1])
    dtype = model.compute_dtype
    # Every random number is drawn here, before the loop and the cond: a
    # random op inside a scan or a branch would move the seed generator's
    # state there (JAX cannot trace that).
    embedded = encoded[3]
    masks = {}
    if model.word_dropout and training:
        ones = ops.ones(shape + (1,), dtype=dtype)
        masks["word"] = model.word_dropout_layer(ones, training=training)
    if model.dropout and training:
        emb, size = model.embedding_dim, sum(readout.sizes)
        ones = ops.ones(shape + (emb,), dtype=dtype)
        masks["embedding"] = model.dropout_layer(ones, training=training)
        ones = ops.ones(shape + (size,), dtype=dtype)
        masks["output"] = model.dropout_layer(ones, training=training)
    if uniforms is None:
        uniforms = draw_uniforms(
            shape + (2,), getattr(model, "sampling_seed_generator", None)
        )

    def step_fn(token_ids, states, masks_t=None):
        masks_t = masks_t or {}
        y = model.target_embedding(token_ids)  # (B, emb)
        for key in ("word", "embedding"):
            if key in masks_t:
                y = y * masks_t[key]
        logits, states, alignment = readout.step(
            y, states, mem, embedded, training, masks_t.get("output")
        )  # (B, V)
        if alignment is None:
            return logits, states
        return logits, states, alignment

    tok = model.target_tokenizer

    def sampled():
        logits, token_ids, alignments = scheduled_sampling(
            step_fn,
            state["states"],
            target_in_ids,
            sampling_probability,
            uniforms=uniforms,
            excluded_ids=(tok.pad_id, tok.bos_id),
            step_inputs=masks or None,
        )
        return _without_none((logits, alignments, token_ids))

    def teacher_forced():
        y = model.target_embedding(target_in_ids)  # (B, T, emb)
        for key in ("word", "embedding"):
            if key in masks:
                y = y * masks[key]
        logits, alignments = readout.teacher_forced(
            encoded, y, training, output_mask=masks.get("output")
        )
        if alignments is not None:
            alignments = ops.cast(alignments, model.compute_dtype)
        return _without_none((logits, alignments, target_in_ids))

    if isinstance(sampling_probability, (int, float)):
        results = teacher_forced() if sampling_probability == 0 else sampled()
    elif training and not cond_differentiable(model.jit_compile):
        results = sampled()  # right for p = 0 too, only slower
    else:
        p = ops.convert_to_tensor(sampling_probability)
        results = ops.cond(ops.equal(p, 0), teacher_forced, sampled)
    logits, *rest = results
    alignments = rest[0] if len(rest) == 2 else None
    return logits, alignments, rest[-1]

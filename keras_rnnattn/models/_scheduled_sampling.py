"""Scheduled sampling (Bengio et al. 2015): the Translator's training pass
with some decoder inputs drawn from the model itself."""

import keras
from keras import ops

from keras_rnnattn._backend import cond_differentiable
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.decoding.scheduled import scheduled_sampling


def _without_none(values):
    """`values` as a tuple without its None entries (a `cond` branch's results)."""
    return tuple(v for v in values if v is not None)


def _sampled_forward_pass(
    model,
    source_ids,
    target_in_ids,
    sampling_probability=None,
    uniforms=None,
    training=None,
):
    """`ScheduledSampling.sampled_forward_pass` of `model` (see there)."""
    if sampling_probability is None:
        if model.sampling_probability is None:
            raise ValueError(
                "This Translator has no `sampling_probability` variable: "
                "pass `sampling_probability=p`, or build it with "
                "`scheduled_sampling=True`."
            )
        sampling_probability = model.sampling_probability
    encoded = model._encode(source_ids, training=training)
    memory, mask, cell_states, embedded = encoded
    state = model._decoding_state(memory, mask, cell_states, embedded)
    mem = state["memory"]
    target_in_ids = ops.cast(target_in_ids, "int32")
    shape = (ops.shape(target_in_ids)[0], ops.shape(target_in_ids)[1])
    dtype = model.compute_dtype
    # Every random number is drawn here, before the loop and the cond: a
    # random op inside a scan or a branch would move the seed generator's
    # state there (JAX cannot trace that).
    masks = {}
    if model.word_dropout and training:
        ones = ops.ones(shape + (1,), dtype=dtype)
        masks["word"] = model.word_dropout_layer(ones, training=training)
    if model.dropout and training:
        emb, readout = model.embedding_dim, sum(model._readout_sizes)
        ones = ops.ones(shape + (emb,), dtype=dtype)
        masks["embedding"] = model.dropout_layer(ones, training=training)
        ones = ops.ones(shape + (readout,), dtype=dtype)
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
        logits, states, alignment = model.step_readout(
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
        logits, alignments = model._teacher_forced(
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


class ScheduledSampling:
    """`sampled_forward_pass`, a mixin of `Translator`: its steps run the
    Translator's `step_readout`, the readout `next_fn` decodes with."""

    def _make_sampling_variables(self):
        """p and the seed generator of its draws, with `scheduled_sampling`."""
        # Scheduled sampling: p, set from outside (a callback), and the
        # generator of its random draws.
        self.sampling_probability = None
        if self.scheduled_sampling:
            self.sampling_probability = self.add_weight(
                shape=(),
                initializer="zeros",
                dtype="float32",
                trainable=False,
                name="sampling_probability",
            )
            self.sampling_seed_generator = keras.random.SeedGenerator(
                name="sampling_seed_generator"
            )

    def sampled_forward_pass(
        self,
        source_ids,
        target_in_ids,
        sampling_probability=None,
        uniforms=None,
        training=None,
    ):
        """Scheduled sampling: teacher forcing with some inputs drawn from the model.

        The decoder runs step by step (`keras_rnnattn.decoding.
        scheduled_sampling` over `AttentionDecoder.step`): at step t >= 1 each
        row is fed, independently, `target_in_ids[:, t]` with probability
        1 - p, or with probability p a token sampled from the softmax of its
        own logits of step t - 1 (pad and bos excluded, as in decoding).
        Dropout and word dropout apply as in `forward_pass`. p = 0 gives
        `forward_pass`'s logits; p = 1, those of sampling from `next_fn`.
        While p is 0 (a `cond` on its value, so also in a compiled train
        step) the decoder runs teacher forcing's fast path instead of the
        step loop, with the same dropout masks: training is as fast as
        without scheduled sampling until the schedule moves p. (Not in a
        train step that TensorFlow compiles with XLA, which cannot compile
        the gradient of that cond: there the loop runs at p = 0 too, with
        the same results.)

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.
            target_in_ids: int `(B, T)`, `bos y_1 .. y_{T-1}`.
            sampling_probability: p, a float in [0, 1] or a scalar tensor;
                None reads the `sampling_probability` variable (with
                `scheduled_sampling=True`).
            uniforms: optional float `(B, T, 2)` in [0, 1), the random
                numbers (see `scheduled_sampling`); None draws them from the
                model's seed generator (Keras's global one without
                `scheduled_sampling=True`).
            training: bool.

        Returns:
            `(logits (B, T, V) float32, alignments (B, T, S) or None,
            token_ids (B, T) int32)`, the last the tokens fed.
        """
        return _sampled_forward_pass(
            self,
            source_ids,
            target_in_ids,
            sampling_probability=sampling_probability,
            uniforms=uniforms,
            training=training,
        )

"""The search of the sequence-to-sequence models: `generate_ids`, `generate`."""

import functools

import numpy as np
from keras import ops

from keras_rnnattn._backend import compiled_stage, no_grad
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.models.generation import (
    NEVER,
    GenerationMixin,
    run_keras_hub_sampler,
    search,
    token_bias,
)
from keras_rnnattn.text import inputs as text_inputs


class Seq2SeqSearch(GenerationMixin):
    """`GenerationMixin` over source ids: the search half of `Seq2SeqTask`.

    Needs the hooks of `Seq2SeqTask` (`initial_state`, `next_fn`,
    `has_attention`), its tokenizers and lengths, `_sources` and `translate`.
    """

    def _never_generated(self):
        """`(V,)` float32: -1e9 at pad and bos (never produced), 0 elsewhere."""
        tok = self.target_tokenizer
        return token_bias(tok.vocabulary_size, (tok.pad_id, tok.bos_id))

    def step_constants(self):
        """What every decoding step computes from the weights alone, or None.

        A hook: a model whose step uses tensors that depend only on its
        weights returns them here; the search computes them once, before the
        loop, and calls `next_fn(token_ids, state, constants=...)`. None (the
        default): `next_fn(token_ids, state)`.
        """
        return None

    def _step_fn(self, next_fn, constants):
        """`next_fn` with the search's `step_constants` bound, if any."""
        if constants is None:
            return next_fn
        return functools.partial(next_fn, constants=constants)

    def _next_fn_with_row_limits(self, token_ids, state, constants=None):
        """`next_fn` that forces the end token in rows past their length limit."""
        out = self._step_fn(self.next_fn, constants)(token_ids, state["model"])
        tok = self.target_tokenizer
        # (V,): 0 at the end token, -1e9 elsewhere
        only_eos = token_bias(tok.vocabulary_size, (tok.eos_id,), 0.0, NEVER)
        over = ops.greater_equal(state["step"], state["limit"])[:, None]  # (N, 1)
        logits = ops.where(over, only_eos[None], out[0])
        new_state = {
            "model": out[1],
            "step": state["step"] + 1,
            "limit": state["limit"],
        }
        return (logits, new_state) + tuple(out[2:])

    def search_settings_for(self, beam_size=1, **beam_kwargs):
        """The `SearchSettings` of a beam size and beam options, over the model's.

        Greedy search for one beam without penalties or n-best, else beam
        search; the settings not given are `search_settings`' (a preset's
        length penalty, say).

        Args:
            beam_size: int >= 1.
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences`.

        Returns:
            A `keras_rnnattn.decoding.SearchSettings`.
        """
        beam_size = self._positive_int("beam_size", beam_size)
        beam = beam_size > 1 or any(
            value != (1 if name == "num_return_sequences" else 0)
            for name, value in beam_kwargs.items()
        )
        if not beam:
            return self.search_settings.replace(
                method="greedy", beam_size=1, num_return_sequences=1
            )
        beam_kwargs.setdefault("num_return_sequences", 1)
        return self.search_settings.replace(
            method="beam", beam_size=beam_size, **beam_kwargs
        )

    def search_fn(
        self,
        beam_size=1,
        max_length=None,
        per_row=False,
        return_alignments=False,
        settings=None,
        **beam_kwargs,
    ):
        """A traceable `source_ids -> (tokens, scores)` with fixed search settings.

        What `generate_ids` compiles and `export_endpoints` exports: a function
        of tensors only, for `jax.jit`, `tf.function` or eager torch.

        Args:
            beam_size: int >= 1; 1 without `beam_kwargs` is greedy search.
            max_length: int >= 1, the most tokens produced; None uses
                `max_target_length`.
            per_row: bool; row b also ends (its end token forced) after
                `2 * S_b + 10` tokens, S_b its source length, as if decoded
                alone.
            return_alignments: bool, the function also returns the attention
                weights of the returned sequences (a model with attention).
            settings: optional `keras_rnnattn.decoding.SearchSettings`, in place of
                `beam_size` and `beam_kwargs`; with `method="sample"` the
                function takes `(source_ids, uniforms)`, uniforms `(L, B)`.
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences` of `beam_search`.

        Returns:
            The function; its `tokens, scores[, alignments]` are shaped as in
            `generate_ids`. A beam search's function also takes the keywords
            `length_penalty` and `coverage_penalty`, 0-d float32 tensors in
            place of the settings' α and β, read when it runs.
        """
        if settings is None:
            settings = self.search_settings_for(beam_size, **beam_kwargs)
        max_length = self._positive_int(
            "max_length", max_length or self.max_target_length
        )
        bos, eos = self.target_tokenizer.bos_id, self.target_tokenizer.eos_id
        next_fn = self._next_fn_with_row_limits if per_row else self.next_fn

        def run(source_ids, uniforms=None, **penalties):
            source_ids = ops.convert_to_tensor(source_ids, "int32")
            state = compiled_stage(self.initial_state)(source_ids)  # the encoder
            step_fn = self._step_fn(next_fn, self.step_constants())
            start = ops.full((ops.shape(source_ids)[0],), bos, dtype="int32")
            if per_row:
                lengths = ops.sum(ops.cast(ops.not_equal(source_ids, 0), "int32"), 1)
                state = {
                    "model": state,
                    "step": ops.zeros_like(lengths),  # (B,) tokens produced
                    "limit": ops.minimum(2 * lengths + 10, max_length),  # (B,)
                }
            return search(
                step_fn,
                state,
                start,
                eos,
                max_length,
                settings,
                uniforms=uniforms,
                return_alignments=return_alignments,
                **penalties,
            )

        return run

    def generate_ids(
        self,
        source_ids,
        beam_size=1,
        max_length=None,
        return_alignments=False,
        **beam_kwargs,
    ):
        """Token ids for source ids: greedy search, or beam search if beam_size > 1.

        Args:
            source_ids: int `(B, S)`, ids in `[0, source vocabulary size)`;
                anything else raises one ValueError naming the fix.
            beam_size: int >= 1.
            max_length: int >= 1, the most tokens produced; None gives each
                row `min(max_target_length, 2 * its source length + 10)`
                (so a row's output does not depend on the rest of the batch).
            return_alignments: bool, also return the attention weights of the
                returned sequences, from the search itself (a model with
                attention): `(B, max_length, S)`, or `(B, n, max_length, S)`,
                zero after each sequence's end token.
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences` of `beam_search`; the penalties not
                given are the model's (`search_settings`).

        Returns:
            `(tokens, scores)` as NumPy arrays: `(B, max_length)` and `(B,)` for
            greedy and for beam search with one returned sequence, else
            `(B, n, max_length)` and `(B, n)`; then the alignments if asked.
        """
        if return_alignments and not self.has_attention:
            raise ValueError(
                f"{type(self).__name__} has no attention (attention='none'). "
                "Received: return_alignments=True"
            )
        settings = self.search_settings_for(beam_size, **beam_kwargs)
        if settings.coverage_penalty > 0 and not self.has_attention:
            raise ValueError(
                f"{type(self).__name__} has no attention (attention='none'), "
                "which a coverage penalty needs: give coverage_penalty=0. "
                f"Received: coverage_penalty={settings.coverage_penalty:g}"
            )
        if source_ids is not None and not isinstance(source_ids, (list, tuple)):
            source_ids = np.asarray(ops.convert_to_numpy(source_ids))
        source_ids = text_inputs.check_token_ids(
            source_ids,
            self.source_tokenizer.vocabulary_size,
            f"{type(self).__name__}.generate_ids",
        )
        per_row = max_length is None
        if per_row:
            max_length = min(self.max_target_length, 2 * source_ids.shape[1] + 10)
        max_length = self._positive_int("max_length", max_length)
        return_alignments = bool(return_alignments)
        penalties = {}
        if settings.method == "beam":  # inputs: one function for every value
            penalties["length_penalty"] = settings.length_penalty
            if settings.coverage_penalty > 0:  # β = 0 sums no coverage
                penalties["coverage_penalty"] = settings.coverage_penalty
            # The key keeps only whether the coverage is summed (1.0 marks it).
            on = "coverage_penalty" in penalties
            settings = settings.replace(
                length_penalty=0.0, coverage_penalty=1.0 if on else 0.0
            )
        search_fn = self._compiled(
            ("search", settings, max_length, per_row, return_alignments),
            lambda: self.search_fn(
                max_length=max_length,
                per_row=per_row,
                return_alignments=return_alignments,
                settings=settings,
            ),
        )
        results = search_fn(
            source_ids,
            **{k: ops.convert_to_tensor(v, "float32") for k, v in penalties.items()},
        )
        return tuple(ops.convert_to_numpy(r) for r in results)

    def _penalties(self, length_penalty, coverage_penalty):
        """The penalties given that `generate_ids` must hear of: those that
        are not None and not 0 where the model's default is 0 too."""
        given = {"length_penalty": length_penalty, "coverage_penalty": coverage_penalty}
        defaults = self.search_settings
        return {
            name: value
            for name, value in given.items()
            if value is not None and (value or getattr(defaults, name))
        }

    def generate(
        self, inputs, max_length=None, max_new_tokens=None, strip_prompt=False
    ):
        """Target texts for source texts, decoded with `compile(sampler=...)`.

        keras-hub's `Seq2SeqLM.generate`: the sampler set by `compile` (the
        model's `search_settings`: greedy search unless a preset records
        otherwise), strings in and strings out. `translate` does the same
        with its own keyword arguments (`beam_size`, penalties, attention).

        Args:
            inputs: a source text or a list of them.
            max_length: int, the most target tokens; None gives each text
                `min(max_target_length, 2 * its source length + 10)`. The
                decoder's prompt is only the begin token, so the whole target
                sequence and the new tokens are the same here.
            max_new_tokens: int, the same as `max_length` (keras-hub's and
                Hugging Face's name for it); give one of the two.
            strip_prompt: bool, accepted for keras-hub's signature: the
                output holds no prompt to strip.

        Returns:
            A str for a str input, else a list of str.

        Example:

        >>> from keras_rnnattn.models import Translator
        >>> translator = Translator.from_preset("ding_de_en_bahdanau")
        >>> translator.compile(sampler="beam")
        >>> translator.generate(["Ich habe keine Zeit."])
        ['I have no time.']
        """
        owner = self._caller("generate")
        if max_length is not None and max_new_tokens is not None:
            raise ValueError(
                f"{owner}: give `max_length` or `max_new_tokens`, not both. "
                f"Received: max_length={max_length}, max_new_tokens={max_new_tokens}"
            )
        limit = max_length if max_new_tokens is None else max_new_tokens
        limit = self._positive_int("max_length", limit, allow_none=True)
        hub, settings = self.keras_hub_sampler, self.search_settings
        if hub is None and settings.method != "sample":
            return self.translate(
                inputs, beam_size=settings.beam_size, max_length=limit
            )
        texts, single, _ = self._read_texts(inputs, "generate")
        keep, source = self._sources(texts)
        outputs = [""] * len(texts)
        if keep:
            if limit is None:
                limit = min(self.max_target_length, 2 * source.shape[1] + 10)
            tokens = self._sampled_ids(hub, settings, source, limit)
            for row, i in enumerate(keep):
                outputs[i] = self.target_tokenizer.decode(tokens[row])
        return outputs[0] if single else outputs

    def _sampled_ids(self, hub, settings, source, max_length):
        """Tokens `(B, max_length)` drawn by a keras-hub sampler `hub`, or
        with the sampling `settings`."""
        bos, eos = self.target_tokenizer.bos_id, self.target_tokenizer.eos_id
        if hub is not None:
            prompt = np.zeros((source.shape[0], max_length + 1), "int32")
            prompt[:, 0] = bos
            with no_grad():
                state = self.initial_state(source)
                step_fn = self._step_fn(self.next_fn, self.step_constants())
                tokens = run_keras_hub_sampler(
                    hub, step_fn, state, prompt, 1, eos, model=self
                )
            return tokens[:, 1:]
        uniforms = draw_uniforms((max_length, source.shape[0]))  # (L, B)
        search_fn = self._compiled(
            ("search", settings, max_length, False, False),
            lambda: self.search_fn(max_length=max_length, settings=settings),
        )
        tokens, _ = search_fn(source, uniforms)
        return ops.convert_to_numpy(tokens)

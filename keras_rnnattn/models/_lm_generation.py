"""The generation of `AttentiveLanguageModel`: prompts in, continued ids out."""

import functools

import keras
import numpy as np
from keras import ops

from keras_rnnattn._backend import no_grad
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.models.generation import (
    GenerationMixin,
    run_keras_hub_sampler,
    search,
    token_bias,
)
from keras_rnnattn.text import inputs as text_utils


def _where_rows(keep, new, old):
    """`new` in the rows where `keep` `(B,)` is True, else `old`."""
    keep = ops.reshape(keep, (-1,) + (1,) * (len(old.shape) - 1))
    return ops.where(keep, new, old)


class LanguageModelGeneration(GenerationMixin):
    """`GenerationMixin` over prompts: the generating half of
    `AttentiveLanguageModel` (its `initial_state`, `next_fn`, tokenizer and
    `max_length`)."""

    def _check_room(self, longest, max_length, owner, name="max_length"):
        """`max_length` (default: all the room there is) for prompts of at most
        `longest` positions, the begin token included: prompt and generated
        tokens but the last must fit the model's `max_length` positions."""
        room = self.max_length - longest + 1
        if room < 1:
            raise ValueError(
                f"{owner}: the prompt has {longest - 1} tokens but the model reads "
                f"at most {self.max_length - 1} (max_length={self.max_length}, one "
                "position is the begin token): shorten the prompt."
            )
        if max_length is None:
            max_length = room
        if not isinstance(max_length, int) or max_length < 1 or max_length > room:
            raise ValueError(
                f"{owner}: `{name}` must be an int in [1, {room}] for this "
                f"prompt of {longest - 1} tokens (the model's limit is "
                f"{self.max_length} positions). Received: {name}={max_length}"
            )
        return max_length

    def generate_ids(
        self,
        prompt_ids,
        uniforms=None,
        max_length=None,
        temperature=1.0,
        top_k=None,
        top_p=None,
        beam_size=1,
    ):
        """Generated token ids for prompt ids: greedy search, beam search, or
        sampling with the uniform numbers given.

        Compiled on JAX and TensorFlow once per shape and setting (as
        `Translator.generate_ids`). The padding, unknown and begin tokens are
        never generated.

        Args:
            prompt_ids: int `(B, P)`, each row the begin token and the prompt's
                tokens, right-padded with the pad id.
            uniforms: optional float `(L, B)` in [0, 1): sample with these
                numbers (`decoding.sampling.draw_uniforms`); None: greedy
                search.
            max_length: int, the most tokens generated (default: as many as
                fit); with `uniforms`, their `L`.
            temperature, top_k, top_p: the sampling settings (with `uniforms`).
            beam_size: int, beam search with this many beams when above 1
                (without `uniforms`): the best sequence of each row.

        Returns:
            `(tokens, scores)` as NumPy arrays, `(B, L)` and `(B,)`.
        """
        if uniforms is None:
            method = "greedy" if int(beam_size) == 1 else "beam"
            settings = self.search_settings.replace(
                method=method, beam_size=beam_size, num_return_sequences=1
            )
        else:
            settings = self.search_settings.replace(
                method="sample", temperature=temperature, top_k=top_k, top_p=top_p
            )
        return self._generate_with(prompt_ids, settings, uniforms, max_length)

    def _generate_with(self, prompt_ids, settings, uniforms=None, max_length=None):
        """`generate_ids` with its `SearchSettings`."""
        owner = self._caller("generate_ids")
        prompt_ids = text_utils.check_token_ids(prompt_ids, self.vocabulary_size, owner)
        longest = max(int(np.max(np.sum(prompt_ids != self.pad_id, axis=1))), 1)
        if uniforms is not None:
            uniforms = np.asarray(uniforms, dtype="float32")  # (L, B)
            if max_length not in (None, uniforms.shape[0]):
                raise ValueError(
                    f"{owner}: with `uniforms`, `max_length` is their length "
                    f"{uniforms.shape[0]} (or None). Received: max_length={max_length}"
                )
            max_length = int(uniforms.shape[0])
        max_length = self._check_room(longest, max_length, owner)
        search_fn = self._compiled(
            ("search", settings, max_length),
            lambda: functools.partial(
                self._generate_fn, max_length=max_length, settings=settings
            ),
        )
        args = (prompt_ids,) if uniforms is None else (prompt_ids, uniforms)
        tokens, scores = search_fn(*args)
        return ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)

    def _banned_ids(self):
        """The ids never generated: padding, and unknown and begin tokens."""
        if self.tokenizer is None:
            return (self.pad_id,)
        tok = self.tokenizer
        return (self.pad_id, int(tok.unk_id), int(tok.bos_id))

    def _allowed_next_fn(self):
        """`next_fn` with the banned ids' logits at -1e9 (`token_bias`)."""
        never = token_bias(self.vocabulary_size, self._banned_ids())  # (V,)

        def allowed_next(ids, state):
            logits, state = self.next_fn(ids, state)
            return ops.cast(logits, "float32") + never, state  # (B, V)

        return allowed_next

    def _generate_fn(self, token_ids, uniforms=None, max_length=None, settings=None):
        """Prompts `(B, P)` -> `(tokens (B, L), scores (B,))`, as one graph.

        The prompts run through `next_fn` but their last token (rows of
        different lengths step together; a row whose prompt has ended keeps its
        state), then the search of `settings` (`generation.search`) for
        `max_length` tokens, sampling with the uniforms `(L, B)`. keras.ops
        only: `generate_ids` compiles it, `export_endpoints` traces it.
        """
        token_ids = ops.cast(token_ids, "int32")  # (B, P)
        lengths = ops.sum(ops.cast(ops.not_equal(token_ids, self.pad_id), "int32"), 1)
        lengths = ops.maximum(lengths, 1)  # (B,): the begin token at least

        def prefill(t, state):
            active = ops.less(t, lengths - 1)  # (B,)
            _, stepped = self.next_fn(ops.take(token_ids, t, axis=1), state)
            return keras.tree.map_structure(
                functools.partial(_where_rows, active), stepped, state
            )

        state = self.initial_state(ops.shape(token_ids)[0])
        state = ops.fori_loop(0, ops.shape(token_ids)[1] - 1, prefill, state)
        start_ids = ops.take_along_axis(token_ids, ops.expand_dims(lengths - 1, 1), 1)
        # Without a tokenizer no id ends a text: the end id is out of range.
        eos = self.vocabulary_size
        if self.tokenizer is not None:
            eos = int(self.tokenizer.eos_id)
        if uniforms is not None:
            max_length = int(uniforms.shape[0])
        return search(
            self._allowed_next_fn(),
            state,
            start_ids[:, 0],
            eos,
            max_length,
            settings,
            uniforms=uniforms,
        )

    def generate(
        self,
        prompt,
        max_length=None,
        temperature=None,
        top_k=None,
        top_p=None,
        seed=None,
        max_new_tokens=None,
        strip_prompt=False,
    ):
        """Continues a prompt, with the sampler of `compile` or the settings given.

        keras-hub's `CausalLM.generate`: `max_length` counts the whole
        sequence, the begin token and the prompt included; `max_new_tokens`
        counts the generated tokens alone.

        Args:
            prompt: a string or a list of strings (may be empty).
            max_length: int, the most tokens of each whole sequence (begin
                token, prompt and generated tokens), at most the model's
                `max_length`. Give this or `max_new_tokens`; with neither,
                as many tokens as fit in the model's `max_length`.
            temperature: float; 0 means greedy search. None: the sampler of
                `compile(sampler=...)` decides (sampling at temperature 1
                without one).
            top_k: optional int, sample among the k most likely tokens.
            top_p: optional float, sample from the smallest set of tokens whose
                probability reaches p (nucleus sampling).
            seed: optional int; the same seed gives the same text on the same
                backend. Each backend (JAX, TensorFlow, torch) has its own
                random stream, so one seed gives other text on another backend.
            max_new_tokens: int, the most tokens to generate after each
                prompt.
            strip_prompt: bool, return the generated text alone, without the
                prompt.

        Generation stops at the end token. The padding, unknown and begin
        tokens are never generated. The prompt and the loop run compiled on
        JAX and TensorFlow (`jax.jit`, `tf.function`), once for each
        generated length and setting.

        Returns:
            The prompt's tokens followed by the generated ones (the generated
            ones alone with `strip_prompt=True`), decoded by the tokenizer: a
            string, or a list for a list of prompts.

        Example:

        >>> from keras_rnnattn.models import AttentiveLanguageModel
        >>> lm = AttentiveLanguageModel.from_preset("web_bible_char_lm")
        >>> lm.compile(sampler="greedy")
        >>> lm.generate("In the beginning", max_length=27)
        'In the beginning of the ch'
        >>> lm.generate("In the beginning", max_new_tokens=10, strip_prompt=True)
        ' of the ch'
        """
        items, single, owner = self._read_texts(prompt, "generate")
        text_utils.require_tokenizer(self.tokenizer, owner)
        if not items:
            return []
        if max_length is not None and max_new_tokens is not None:
            raise ValueError(
                f"{owner}: give `max_length` (the whole sequence) or "
                "`max_new_tokens`, not both. Received: "
                f"max_length={max_length}, max_new_tokens={max_new_tokens}"
            )
        bos = int(self.tokenizer.bos_id)
        eos = int(self.tokenizer.eos_id)
        prompts = [[bos] + [int(t) for t in self.tokenizer.encode(p)] for p in items]
        lengths = [len(p) for p in prompts]
        new = max_new_tokens
        if max_length is not None:
            if not isinstance(max_length, int) or not (
                max(lengths) < max_length <= self.max_length
            ):
                raise ValueError(
                    f"{owner}: `max_length` counts the whole sequence (begin "
                    "token, prompt and new tokens, as in keras-hub): an int in "
                    f"[{max(lengths) + 1}, {self.max_length}] for these prompts "
                    f"(the longest has {max(lengths) - 1} tokens). For a number "
                    "of new tokens pass `max_new_tokens`. Received: "
                    f"max_length={max_length}"
                )
            new = max_length - min(lengths)
            room = self.max_length - max(lengths) + 1
            new = min(new, room)
        new = self._check_room(max(lengths), new, owner, "max_new_tokens")
        caps = [new if max_length is None else max_length - n for n in lengths]
        settings = self._generation_settings(temperature, top_k, top_p)
        if settings is None:
            generated = self._keras_hub_generate(self.keras_hub_sampler, prompts, new)
        else:
            ids = text_utils.pad(prompts, self.pad_id)  # (B, P)
            # Prompt columns rounded up to a multiple of 8: fewer shapes to compile.
            ids = np.pad(
                ids, ((0, 0), (0, -ids.shape[1] % 8)), constant_values=self.pad_id
            )
            uniforms = None
            if settings.method == "sample":
                uniforms = draw_uniforms((new, len(prompts)), seed)  # (L, B)
            tokens, _ = self._generate_with(ids, settings, uniforms, new)
            generated = [row.tolist() for row in tokens]
        out = []
        for p, row, cap in zip(prompts, generated, caps, strict=True):
            row = row[:cap]
            if eos in row:
                row = row[: row.index(eos)]
            out.append(self.tokenizer.decode(row if strip_prompt else p[1:] + row))
        return out[0] if single else out

    def _generation_settings(self, temperature, top_k, top_p):
        """How `generate` decodes: the `SearchSettings` of the arguments
        given, else the model's (`compile(sampler=...)`); None for a keras-hub
        sampler."""
        settings = self.search_settings
        if temperature is not None or top_k is not None or top_p is not None:
            if temperature == 0:
                return settings.replace(method="greedy")
            return settings.replace(
                method="sample",
                temperature=1.0 if temperature is None else temperature,
                top_k=top_k,
                top_p=top_p,
            )
        if self.keras_hub_sampler is not None:
            return None
        return settings.replace(num_return_sequences=1)

    def _keras_hub_generate(self, sampler, prompts, new):
        """The tokens a keras-hub sampler adds after each prompt (lists)."""
        lengths = [len(p) for p in prompts]
        start = min(lengths)
        width = max(lengths) + new
        full = np.zeros((len(prompts), width), "int32")
        for row, p in enumerate(prompts):
            full[row, : len(p)] = p
        with no_grad():
            state = self.initial_state(len(prompts))
            for t in range(start - 1):  # the columns every prompt has
                _, state = self.next_fn(ops.convert_to_tensor(full[:, t]), state)
            tokens = run_keras_hub_sampler(
                sampler,
                self._allowed_next_fn(),
                state,
                full,
                start,
                int(self.tokenizer.eos_id),
                model=self,
            )
        return [tokens[row, n : n + new].tolist() for row, n in enumerate(lengths)]

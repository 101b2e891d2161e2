"""Generation, written once: `compile(sampler=...)`, the search, keras-hub samplers.

`GenerationMixin` is what `Seq2SeqTask` and `AttentiveLanguageModel` share,
as keras-hub's `CausalLM` is for its generating models: the search settings
(`keras_rnnattn.decoding.SearchSettings`) a model keeps, from its class, its preset's
metadata.json or `compile(sampler=...)`; one dispatch (`search`) over greedy
search, beam search and sampling; one bias for the tokens a model never
generates (`token_bias`); and the adapter that runs a keras-hub sampler over a
model's `next_fn` (`run_keras_hub_sampler`).
"""

import numpy as np
from keras import ops

from keras_rnnattn.decoding.search_settings import SearchSettings
from keras_rnnattn.ops import device_scalar

NEVER = -1e9  # the logit bias of a token that is never generated


def is_keras_hub_sampler(sampler):
    """Whether `sampler` follows keras-hub's `Sampler` protocol."""
    return callable(sampler) and hasattr(sampler, "get_next_token")


def token_bias(vocabulary_size, token_ids, at=NEVER, elsewhere=0.0):
    """`(V,)` float32: `at` on `token_ids`, `elsewhere` on the other ids.

    Made on the device (no host copy at each step), so it can be added to the
    logits inside a decoding loop; a scatter into a filled vector, which a
    compiler keeps as one small buffer (folded into a constant by XLA).
    Written as a comparison of `arange` with the ids, inductor recomputed it
    in every pass over the `(N, V)` logits that it fused it into: 1.1 ms of
    a 256 x 4,000 log-softmax on one CPU thread.

    Args:
        vocabulary_size: int V.
        token_ids: the ids (Python ints) that get `at`.
        at: float, by default `NEVER` (-1e9): the ids are never chosen.
        elsewhere: float.

    Returns:
        A float32 tensor `(V,)`.

    Example:

    >>> ops.convert_to_numpy(token_bias(4, (0, 2))).tolist()
    [-1000000000.0, 0.0, -1000000000.0, 0.0]
    """
    # Python numbers only through `device_scalar`: no host copy per step.
    bias = ops.zeros((vocabulary_size,), "float32") + device_scalar(
        elsewhere, "float32"
    )
    if not token_ids:
        return bias  # (V,)
    indices = ops.stack(
        [ops.reshape(device_scalar(int(i), "int32"), (1,)) for i in token_ids]
    )  # (n, 1)
    updates = ops.zeros((len(token_ids),), "float32") + device_scalar(at, "float32")
    return ops.scatter_update(bias, indices, updates)  # (V,)


def search(
    next_fn,
    state,
    start_ids,
    end_id,
    max_length,
    settings,
    uniforms=None,
    return_alignments=False,
    length_penalty=None,
    coverage_penalty=None,
):
    """Runs the search `settings` names: the one dispatch of both tasks.

    keras.ops only (a compiled or exported function calls it).

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state[, alignment])`.
        state: the decoding state.
        start_ids: int `(B,)`, the first tokens fed.
        end_id: int, the end token.
        max_length: int, the most tokens produced.
        settings: a `SearchSettings`.
        uniforms: float `(max_length, B)` in [0, 1), the random numbers of
            `"sample"` (`decoding.sampling.draw_uniforms`).
        return_alignments: bool, also return the alignments.
        length_penalty, coverage_penalty: optional 0-d float32 tensors, the
            beam's α and β in place of the settings' (read when run: one
            compiled search for every value).

    Returns:
        `(tokens, scores[, alignments])`: `(B, L)` and `(B,)`, or `(B, n, L)`
        and `(B, n)` for a beam search returning n > 1 sequences.
    """
    from keras_rnnattn.decoding import beam_search, greedy_search
    from keras_rnnattn.decoding.sampling import sample_with_uniforms

    if settings.method == "greedy":
        return greedy_search(
            next_fn,
            state,
            start_ids,
            end_id,
            max_length,
            return_alignments=return_alignments,
        )
    if settings.method == "sample":
        if uniforms is None:
            raise ValueError(
                "Sampling needs its uniform numbers `(max_length, batch)` "
                "(`keras_rnnattn.decoding.sampling.draw_uniforms`). Received: "
                "uniforms=None"
            )
        return sample_with_uniforms(
            next_fn,
            state,
            start_ids,
            end_id,
            uniforms,
            settings.temperature,
            settings.top_k,
            settings.top_p,
            return_alignments=return_alignments,
        )
    if length_penalty is None:
        length_penalty = settings.length_penalty
    if coverage_penalty is None:
        coverage_penalty = settings.coverage_penalty
    results = beam_search(
        next_fn,
        state,
        start_ids,
        end_id,
        max_length,
        beam_size=settings.beam_size,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        num_return_sequences=settings.num_return_sequences,
        return_alignments=return_alignments,
    )
    if settings.num_return_sequences == 1:
        results = tuple(result[:, 0] for result in results)
    return results


def run_keras_hub_sampler(sampler, next_fn, state, prompt, index, eos, model=None):
    """Runs a keras-hub sampler over a model's `next_fn`.

    keras-hub's contract: `next(prompt, cache, index) -> (logits,
    hidden_states, cache)`.

    Args:
        sampler: a `keras_hub.samplers.Sampler`.
        next_fn: the model's `next_fn(token_ids, state) -> (logits, state, ...)`.
        state: the model's state after reading the first `index - 1` columns
            of `prompt`.
        prompt: int `(B, L)`: the tokens given (begin token first), then
            anything (zeros) up to the full length L.
        index: int, the first column to generate in every row (rows whose
            own prompt goes further keep their prompt tokens there).
        eos: int, the end token id (keras-hub's `stop_token_ids`).
        model: passed on to the sampler (keras-hub compiles nothing with it).

    Returns:
        int32 NumPy `(B, L)`: the prompt and the generated tokens, each row
        cut after its first end token at or after its prompt (zeros after).
    """
    prompt = np.asarray(prompt, "int32")
    lengths = np.sum(prompt != 0, axis=1)  # each row's prompt, begin token included
    mask = np.arange(prompt.shape[1])[None, :] < lengths[:, None]  # (B, L)

    def hub_next(tokens, cache, position):
        previous = ops.take(tokens, position - 1, axis=1)  # (B,)
        out = next_fn(ops.cast(previous, "int32"), cache)
        return out[0], None, out[1]

    tokens = sampler(
        hub_next,
        ops.convert_to_tensor(prompt),
        cache=state,
        index=index,
        mask=ops.convert_to_tensor(mask),
        stop_token_ids=(int(eos),),
        model=model,
    )
    tokens = np.asarray(ops.convert_to_numpy(tokens), "int32")
    for row, length in enumerate(lengths):
        ends = np.flatnonzero(tokens[row, length:] == eos)
        if ends.size:
            tokens[row, length + ends[0] + 1 :] = 0
    return tokens


class GenerationMixin:
    """The generation of a model with a `next_fn`: its settings and sampler.

    A mixin before the task base: `class MyTask(GenerationMixin, TextTask,
    keras.Model)`. The model's search settings are, in order: those of
    `compile(sampler=...)`; else the defaults of its preset (metadata.json,
    read when the preset loads, so that Python, the CLI and export share
    them); else the class's `default_search_settings`.
    """

    # The search a model of this class runs when nothing else is asked for.
    default_search_settings = SearchSettings()

    @property
    def search_defaults(self):
        """The model's default `SearchSettings` (its preset's, else the class's)."""
        return self.__dict__.get("_search_defaults") or self.default_search_settings

    def set_search_defaults(self, settings):
        """Makes `settings` (a `SearchSettings`, a sampler name or a dict)
        the model's defaults, also for a `compile` without `sampler`."""
        settings = SearchSettings.from_sampler(
            settings, self.default_search_settings, f"{type(self).__name__}"
        )
        follows = self.__dict__.get("_sampler_given") is None
        object.__setattr__(self, "_search_defaults", settings)
        if follows:
            object.__setattr__(self, "_search_settings", settings)

    def read_preset_metadata(self, metadata):
        """Takes the search settings a preset's metadata.json records as the
        defaults (see `SearchSettings.from_metadata`)."""
        self.set_search_defaults(
            SearchSettings.from_metadata(metadata, self.default_search_settings)
        )

    def preset_metadata(self):
        """`{"search": ...}`, the search defaults, where they differ from the
        class's (as a preset loaded with recorded settings has them)."""
        if self.search_defaults == self.default_search_settings:
            return {}
        return {"search": self.search_defaults.get_config()}

    @property
    def search_settings(self):
        """The `SearchSettings` that `generate` uses (see `compile`)."""
        return self.__dict__.get("_search_settings") or self.search_defaults

    @property
    def keras_hub_sampler(self):
        """The keras-hub sampler of `compile(sampler=...)`, or None."""
        return self.__dict__.get("_hub_sampler")

    def compile(self, *args, sampler=None, **kwargs):
        """`compile` with `sampler`: how `generate` decodes, as in keras-hub.

        `sampler` is None (the model's defaults, `search_defaults`), a
        `keras_rnnattn.decoding.SearchSettings`, a dict of its settings, a keras-hub
        name (`"greedy"`; `"beam"`, this library's beam search with 5 beams;
        `"top_k"`, k = 5; `"top_p"`, p = 0.1; `"random"`), which changes the
        defaults in those settings alone (a preset's length penalty stays),
        or a `keras_hub.samplers.Sampler`, which runs its own loop over
        `next_fn`. The other arguments are those of the task's `compile`.
        """
        owner = f"{type(self).__name__}.compile"
        hub = sampler if is_keras_hub_sampler(sampler) else None
        settings = self.search_defaults
        if hub is None:
            settings = SearchSettings.from_sampler(sampler, settings, owner)
        object.__setattr__(self, "_hub_sampler", hub)
        object.__setattr__(self, "_sampler_given", sampler)
        object.__setattr__(self, "_search_settings", settings)
        super().compile(*args, **kwargs)

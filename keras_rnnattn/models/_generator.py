"""The one search of the generating models: `Generator` and its `CompileKey`.

`Seq2SeqTask` and `AttentiveLanguageModel` each build a `Generator` from their
step, their start (the encoder's state, or the prompt read) and their end
token, for one `CompileKey`; the model compiles it once per key
(`TextTask._compiled`). A beam search's penalties are passed beside the key
when it runs (`runtime_penalties`), so one compiled search serves every α
and β.
"""

import dataclasses
import functools

from keras_rnnattn.decoding.search_settings import SearchSettings
from keras_rnnattn.models.generation import run_keras_hub_sampler, search


@dataclasses.dataclass(frozen=True)
class CompileKey:
    """What a compiled search is made for: its key in the model's cache.

    Args:
        settings: the `SearchSettings`; a beam search's penalties are 0 here
            when they are given at run time (`runtime_penalties`).
        max_length: int, the most tokens produced.
        per_row: bool, each row also ends after `2 * its source length + 10`
            tokens (translation).
        return_alignments: bool, the search also returns the alignments.
        sums_coverage: bool, the beam's coverage penalty β is given at run
            time (the search sums the coverage).
    """

    settings: SearchSettings
    max_length: int
    per_row: bool = False
    return_alignments: bool = False
    sums_coverage: bool = False


def runtime_penalties(settings):
    """A beam search's settings without α and β, and α and β apart.

    Args:
        settings: a `SearchSettings`.

    Returns:
        `(settings, penalties)`: for a beam search, the settings with both
        penalties at 0 and `{"length_penalty": α[, "coverage_penalty": β]}`
        (β only when above 0: β = 0 sums no coverage); else `(settings, {})`.
    """
    if settings.method != "beam":
        return settings, {}
    penalties = {"length_penalty": settings.length_penalty}
    if settings.coverage_penalty > 0:
        penalties["coverage_penalty"] = settings.coverage_penalty
    return settings.replace(length_penalty=0.0, coverage_penalty=0.0), penalties


def bind_constants(next_fn, constants):
    """`next_fn` with a search's `step_constants` bound, if there are any.

    Args:
        next_fn: a model's `next_fn`.
        constants: its `step_constants()`, or None.

    Returns:
        A `next_fn(token_ids, state)`.
    """
    if constants is None:
        return next_fn
    return functools.partial(next_fn, constants=constants)


class Generator:
    """Runs the search of a `CompileKey` over a model's steps.

    A callable of tensors only (for `jax.jit`, `tf.function`, eager torch
    and export): `generator(inputs, uniforms=None, length_penalty=None,
    coverage_penalty=None) -> (tokens, scores[, alignments])`.

    Args:
        make_step: `make_step() -> next_fn`, called once per search (in the
            compiled function): the model's step with what it computes from
            the weights once (its step constants, the bias of the tokens
            never generated) bound.
        start: `start(inputs) -> (state, start_ids)`: the decoding state of
            the inputs (source ids, prompts) and the first tokens fed `(B,)`.
        end_id: int, the end token.
        key: the `CompileKey`.
    """

    def __init__(self, make_step, start, end_id, key):
        self.make_step = make_step
        self.start = start
        self.end_id = end_id
        self.key = key

    def __call__(
        self, inputs, uniforms=None, length_penalty=None, coverage_penalty=None
    ):
        """The search over `inputs`.

        Args:
            inputs: what `start` reads (source ids, prompt ids).
            uniforms: float `(max_length, B)` in [0, 1), the random numbers
                of sampling.
            length_penalty, coverage_penalty: optional 0-d float32 tensors,
                a beam search's α and β (see `runtime_penalties`).

        Returns:
            `(tokens, scores[, alignments])` (see `generation.search`).
        """
        state, start_ids = self.start(inputs)
        return search(
            self.make_step(),
            state,
            start_ids,
            self.end_id,
            self.key.max_length,
            self.key.settings,
            uniforms=uniforms,
            return_alignments=self.key.return_alignments,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
        )

    def run_keras_hub_sampler(self, sampler, state, prompt, index, model=None):
        """A keras-hub sampler's loop over the same step (eager).

        Args:
            sampler: a `keras_hub.samplers.Sampler`.
            state: the state after the first `index - 1` prompt columns.
            prompt: int `(B, L)`, see `generation.run_keras_hub_sampler`.
            index: int, the first column to generate.
            model: passed on to the sampler.

        Returns:
            int32 NumPy `(B, L)`: the prompt and the generated tokens.
        """
        return run_keras_hub_sampler(
            sampler, self.make_step(), state, prompt, index, self.end_id, model=model
        )

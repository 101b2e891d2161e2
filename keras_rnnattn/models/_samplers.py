"""`compile(sampler=...)` of the generating models: names, and keras-hub's samplers.

A sampler is named (`"greedy"`, `"beam"`, `"top_k"`, `"top_p"`, `"random"`,
with keras-hub's defaults: `top_k` k = 5, `top_p` p = 0.1, `beam` 5 beams,
the project's own beam search) or a `keras_hub.samplers.Sampler` instance,
which then runs its own loop over the model's `next_fn` through
`run_keras_hub_sampler` (keras-hub's contract: `next(prompt, cache, index) ->
(logits, hidden_states, cache)`).
"""

import numpy as np
from keras import ops

SAMPLER_NAMES = ("greedy", "beam", "top_k", "top_p", "random")
# keras-hub's defaults: TopKSampler(k=5), TopPSampler(p=0.1), BeamSampler(num_beams=5).
NAMED = {
    "greedy": {"method": "greedy"},
    "beam": {"method": "beam", "beam_size": 5},
    "top_k": {"method": "sample", "top_k": 5},
    "top_p": {"method": "sample", "top_p": 0.1},
    "random": {"method": "sample"},
}


def resolve_sampler(sampler, owner):
    """`compile`'s `sampler` as a settings dict or a keras-hub sampler.

    Args:
        sampler: None, a name of `SAMPLER_NAMES`, or a
            `keras_hub.samplers.Sampler`.
        owner: str, the caller named in errors.

    Returns:
        None, a dict `{"method": "greedy" | "beam" | "sample", ...}` (a copy),
        or the keras-hub sampler itself.
    """
    if sampler is None:
        return None
    if isinstance(sampler, str):
        if sampler not in NAMED:
            raise ValueError(
                f"{owner}: `sampler` must be one of {SAMPLER_NAMES} or a "
                f"keras_hub.samplers.Sampler. Received: sampler={sampler!r}"
            )
        return dict(NAMED[sampler])
    if callable(sampler) and hasattr(sampler, "get_next_token"):
        return sampler  # keras-hub's Sampler protocol
    raise ValueError(
        f"{owner}: `sampler` must be one of {SAMPLER_NAMES} or a "
        'keras_hub.samplers.Sampler (pip install "keras-rnnattn[hub]"). '
        f"Received: sampler of type {type(sampler).__name__}"
    )


def is_keras_hub_sampler(sampler):
    return sampler is not None and not isinstance(sampler, dict)


def run_keras_hub_sampler(sampler, next_fn, state, prompt, index, eos, model=None):
    """Runs a keras-hub sampler over a model's `next_fn`.

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

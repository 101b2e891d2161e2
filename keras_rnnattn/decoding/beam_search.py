"""Beam search with GNMT length and coverage penalties and n-best output."""

import keras
from keras import ops

from keras_rnnattn._backend import compiled_stage, decoding_loop
from keras_rnnattn.decoding._beam_steps import BeamSteps
from keras_rnnattn.decoding._common import (
    FlatState,
    call_next_fn,
    check_end_id,
    check_int,
    map_state,
    read_when_run,
    require_alignment,
    vocabulary_size,
    where_rows,
)
from keras_rnnattn.decoding.search_settings import SearchSettings


def beam_search(
    next_fn,
    state,
    start_ids,
    end_id,
    max_length,
    beam_size=4,
    length_penalty=0.0,
    coverage_penalty=0.0,
    num_return_sequences=1,
    return_alignments=False,
    return_state=False,
    settings=None,
):
    """Decodes with beam search; returns the n best hypotheses of every row.

    Every step extends each of the `beam_size` alive hypotheses of a row by
    every token and ranks the extensions by summed log-probability. Those among
    the `beam_size` most probable that end (the token is `end_id`, or the step
    is the last of `max_length`) are scored and join the row's pool of the
    `num_return_sequences` best finished hypotheses, as in fairseq; the
    `beam_size` most probable extensions that do not end stay alive. So
    `beam_size=1` without penalties is greedy search. The search stops after
    `max_length` steps, or earlier when in every row no alive hypothesis can
    still score better than the worst one in the pool (an exact test: the
    result is the same as running all `max_length` steps). Compiled (JAX,
    TensorFlow, torch with `jit_compile=True`), a step of a large vocabulary
    finds its most probable extensions among the logits' best chunks of
    tokens, without writing out or sorting the `beam_size * V` scores; the
    extensions are the same.

    A finished hypothesis Y of |Y| tokens is ranked by GNMT's score
    (Wu et al., 2016, "Google's Neural Machine Translation System"):

        s(Y) = log P(Y) / lp(Y) + cp(Y)
        lp(Y) = ((5 + |Y|) / 6) ** length_penalty
        cp(Y) = coverage_penalty * sum_i log(min(sum_t a_t,i, 1))

    log P(Y) is the sum of `log_softmax(logits)` over its tokens. |Y| counts
    the generated tokens including the end token and excluding the start id
    (a hypothesis cut at `max_length` has |Y| = `max_length`). a_t is the
    alignment `next_fn` returned at the step that produced token t, so the sum
    over t runs over the same |Y| steps (the end token's step included).
    Source positions i whose summed attention is exactly 0 (padding, which a
    masked softmax weights exactly 0) are left out of the sum, so cp is always
    finite. With both penalties 0 the score is log P(Y).

    State handling: every tensor of `state`, encoder memory included, is
    repeated to `B * beam_size` rows (row `b * beam_size + k` is beam k of row
    b) and, after every step, reordered by parent beam with a gather along axis
    0 (None leaves stay None). Anything `next_fn` needs per row must therefore
    be part of `state`. The alignment history of `return_alignments` is
    reordered the same way, so each hypothesis keeps its own ancestry's; the
    pool of finished hypotheses keeps their alignments and states only when
    they are asked for.
    Before the loop, `next_fn` is called once on the B rows, to learn the
    vocabulary size and the alignment's shape; it returns only zeros of their
    shapes, so a compiled search (jit, or torch's `jit_compile=True`)
    computes none of it.

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state)` or
            `(logits, state, alignment)`: `token_ids` `(N,)` int32, `logits`
            `(N, V)`, `alignment` `(N, S)` attention weights of this step, where
            N is `B * beam_size` (B for the call before the loop); a list of
            them (one per attention mechanism) for `return_alignments`. The
            returned state must keep the structure, shapes and dtypes it
            received. A state tensor it returns as it received it (the same
            tensor, such as an encoder's memory) is one it never changes: it
            keeps the rows it was tiled with, and the search does not reorder
            it among the beams.
        state: the initial model state, any nested structure (dict, list, tuple)
            of tensors with leading dimension B (`()` for none); None leaves
            (an absent mask) are passed through as None.
        start_ids: `(B,)` int, the token fed at the first step.
        end_id: int, the end token.
        max_length: Python int >= 1, the most tokens a hypothesis has.
        beam_size: int >= 1, hypotheses kept alive per row.
        length_penalty: float, α of lp(Y); 0 ranks by log P(Y), larger values
            favour longer hypotheses (GNMT uses 0.6 to 0.7). Or a 0-d float
            tensor, read when the search runs: one compiled search then
            serves every α (a tensor's value is not checked).
        coverage_penalty: float >= 0, β of cp(Y); needs `next_fn` to return
            the alignment. Or a 0-d float tensor, read when the search runs
            (the coverage is then summed whatever its value).
        num_return_sequences: int in [1, beam_size], hypotheses returned per
            row.
        return_alignments: bool; also return each hypothesis's alignments.
            Needs `next_fn` to return the alignment.
        return_state: bool; also return each hypothesis's final model state.
        settings: optional `keras_rnnattn.decoding.SearchSettings`; its `beam_size`,
            `length_penalty`, `coverage_penalty` and `num_return_sequences`
            replace the arguments of those names (a model's settings, a
            preset's recorded penalties, pass through unchanged).

    Returns:
        `(tokens, scores)`: `tokens` `(B, num_return_sequences, max_length)`
        int32, without the start id, each ending at its first `end_id` and
        filled with `end_id` after it; `scores` `(B, num_return_sequences)`
        float32, s(Y) of each, best first. Distinct hypotheses always; a slot
        for which the search found no hypothesis (a vocabulary too small to
        give `num_return_sequences` of them) has score -inf and only `end_id`.
        With `return_alignments` and/or `return_state`, `(tokens, scores,
        alignments)`, `(tokens, scores, state)` or `(tokens, scores,
        alignments, state)`: `alignments` `(B, num_return_sequences,
        max_length, S)` (the structure of `next_fn`'s alignment, each leaf with
        these two axes), position t the alignment of the step that produced the
        hypothesis's token t, along its own ancestry, exactly 0 after its end
        token; `state` the state `next_fn` returned for the hypothesis at the
        step that produced its last token, each leaf `(B,
        num_return_sequences, ...)`, None leaves None. An empty slot has zero
        alignments and a zero state.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_rnnattn.decoding import beam_search, greedy_search
    >>> # A bigram model over 4 tokens, 0 the end token, 3 the start token; the
    >>> # row is the previous token. Greedy takes 1 (p .58) and never ends well;
    >>> # 2 (p .4) then the end (p .88) is the most probable sentence.
    >>> probs = np.array(
    ...     [[0.97, 0.01, 0.012, 0.008], [0.3, 0.44, 0.25, 0.01],
    ...      [0.88, 0.04, 0.06, 0.02], [0.015, 0.58, 0.4, 0.005]]
    ... )
    >>> table = ops.convert_to_tensor(np.log(probs).astype("float32"))
    >>> def next_fn(token_ids, state):
    ...     return ops.take(table, token_ids, axis=0), state
    >>> tokens, scores = beam_search(
    ...     next_fn, (), start_ids=np.array([3]), end_id=0, max_length=3,
    ...     beam_size=3, num_return_sequences=2,
    ... )
    >>> ops.convert_to_numpy(tokens).tolist()
    [[[2, 0, 0], [1, 0, 0]]]
    >>> [round(float(s), 4) for s in ops.convert_to_numpy(scores)[0]]  # log .352, .174
    [-1.0441, -1.7487]
    >>> greedy, _ = greedy_search(next_fn, (), np.array([3]), end_id=0, max_length=3)
    >>> ops.convert_to_numpy(greedy).tolist()
    [[1, 1, 1]]
    >>> # With an attention over 2 source positions that depends on the token
    >>> # fed, and a state that counts the steps:
    >>> def attending_fn(token_ids, state):
    ...     logits, _ = next_fn(token_ids, state)
    ...     return logits, state + 1, ops.one_hot(token_ids % 2, 2)
    >>> tokens, scores, alignments, steps = beam_search(
    ...     attending_fn, ops.zeros((1,), "int32"), np.array([3]), end_id=0,
    ...     max_length=3, beam_size=3, num_return_sequences=2,
    ...     return_alignments=True, return_state=True,
    ... )
    >>> ops.convert_to_numpy(alignments)[0, 0].tolist()  # [2, 0]: fed 3, then 2
    [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    >>> ops.convert_to_numpy(steps).tolist()  # both hypotheses end at step 2
    [[2, 2]]
    """
    end_id = check_end_id(end_id)
    max_length = check_int("max_length", max_length)
    # A tensor penalty is read when run; 0 stands in for it while checking.
    alpha, beta = _tensor_or_none(length_penalty), _tensor_or_none(coverage_penalty)
    if settings is None:  # the settings are checked where they are made
        settings = SearchSettings(
            "beam",
            beam_size=beam_size,
            length_penalty=length_penalty if alpha is None else 0.0,
            coverage_penalty=coverage_penalty if beta is None else 0.0,
            num_return_sequences=num_return_sequences,
        )
    elif alpha is not None or beta is not None:
        raise ValueError(
            "beam_search: give tensor penalties without `settings`, whose "
            "float penalties would replace them. Received: length_penalty="
            f"{length_penalty!r}, coverage_penalty={coverage_penalty!r} and "
            f"settings={settings!r}"
        )
    beam_size = settings.beam_size
    num_return_sequences = settings.num_return_sequences
    length_penalty = settings.length_penalty if alpha is None else alpha
    coverage_penalty = settings.coverage_penalty if beta is None else beta
    with_coverage = beta is not None or coverage_penalty > 0

    start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")  # (B,)

    # One call on the B rows, only to learn the vocabulary size and whether
    # (over how many source positions) `next_fn` returns attention. It returns
    # zeros of the logits' and alignment's shapes, so a compiler computes no
    # step (jit, and torch's compiled stage: 0.75 ms against 4.0 ms for 64
    # sentences of `benchmarks/decode.py`'s model on one CPU thread).
    def first_step(start_ids, state):
        logits, _, alignment = call_next_fn(next_fn, start_ids, state)
        if alignment is not None:
            alignment = keras.tree.map_structure(ops.zeros_like, alignment)
        return ops.zeros_like(logits[:1]), alignment  # (1, V), (B, S) leaves

    logits, alignment = compiled_stage(first_step)(start_ids, state)
    if return_alignments:
        require_alignment(alignment)
    if with_coverage and alignment is None:
        raise ValueError(
            "A coverage penalty needs the attention weights: `next_fn` must return "
            "`(logits, state, alignment)`. Received: coverage_penalty="
            f"{_shown(coverage_penalty)} and a `next_fn` returning `(logits, state)`"
        )
    search = BeamSteps(
        end_id=end_id,
        max_length=max_length,
        beam_size=beam_size,
        num_return_sequences=num_return_sequences,
        vocab_size=vocabulary_size(logits),
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        return_alignments=bool(return_alignments),
        return_state=bool(return_state),
    )

    def tile(x):  # (B, ...) -> (B * K, ...), the K beams of a row side by side
        return ops.repeat(x, beam_size, axis=0)

    # The source length may be known only when run (a graph of variable S).
    source_length = ops.shape(alignment)[-1] if with_coverage else None
    flat_state = FlatState(state)
    beams = search.initial_state(
        start_ids,
        flat_state.tensors(map_state(tile, state)),
        source_length,
        alignment if return_alignments else None,
    )

    def body(beams):
        logits, model_state, alignment = call_next_fn(
            next_fn,
            ops.reshape(beams.last_ids, (-1,)),
            flat_state.pack(beams.model_state),
        )
        model_state = flat_state.tensors(model_state)
        # The tensors `next_fn` passed through are the same for every beam of
        # a row (tiled): reordering them would copy them unchanged.
        kept = [new is old for new, old in zip(model_state, beams.model_state)]
        beams = beams._replace(model_state=model_state)
        return (search.advance(beams, logits, alignment, kept),)

    (beams,) = decoding_loop(search.is_running, body, (beams,), max_length)
    found = ops.isfinite(beams.finished_scores)  # (B, N)
    tokens = ops.where(found[:, :, None], beams.finished_seqs, end_id)
    outputs = (tokens, beams.finished_scores)

    def found_only(x):  # zeros in the empty slots
        return where_rows(found, x, ops.zeros_like(x))

    if return_alignments:
        outputs += (keras.tree.map_structure(found_only, beams.finished_alignments),)
    if return_state:
        outputs += (flat_state.pack([found_only(x) for x in beams.finished_state]),)
    return outputs


def _tensor_or_none(penalty):
    """`penalty` if it is a tensor (read when the search runs), else None."""
    return penalty if read_when_run(penalty) else None


def _shown(penalty):
    """A penalty for an error message: its value where it is known."""
    try:
        return f"{float(ops.convert_to_numpy(penalty)):g}"
    except Exception:  # a symbolic tensor, known only when run
        return "a tensor"

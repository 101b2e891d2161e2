"""Beam search with GNMT length and coverage penalties and n-best output."""

from typing import Any, NamedTuple

import keras
from keras import ops

from keras_rnnattn._backend import decoding_loop, device_scalar
from keras_rnnattn.decoding._common import (
    FlatState,
    call_next_fn,
    check_end_id,
    check_int,
    map_state,
    require_alignment,
    vocabulary_size,
    where_rows,
    write_at,
    write_column,
    zero_history,
)
from keras_rnnattn.decoding.search_settings import SearchSettings

_NEG_INF = float("-inf")


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
    result is the same as running all `max_length` steps).

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
    vocabulary size and the alignment's shape; its results are not used (jit
    compiles that call away).

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state)` or
            `(logits, state, alignment)`: `token_ids` `(N,)` int32, `logits`
            `(N, V)`, `alignment` `(N, S)` attention weights of this step, where
            N is `B * beam_size` (B for the call before the loop); a list of
            them (one per attention mechanism) for `return_alignments`. The
            returned state must keep the structure, shapes and dtypes it
            received.
        state: the initial model state, any nested structure (dict, list, tuple)
            of tensors with leading dimension B (`()` for none); None leaves
            (an absent mask) are passed through as None.
        start_ids: `(B,)` int, the token fed at the first step.
        end_id: int, the end token.
        max_length: Python int >= 1, the most tokens a hypothesis has.
        beam_size: int >= 1, hypotheses kept alive per row.
        length_penalty: float, α of lp(Y); 0 ranks by log P(Y), larger values
            favour longer hypotheses (GNMT uses 0.6 to 0.7).
        coverage_penalty: float >= 0, β of cp(Y); needs `next_fn` to return
            the alignment.
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
    if settings is None:  # the settings are checked where they are made
        settings = SearchSettings(
            "beam",
            beam_size=beam_size,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
            num_return_sequences=num_return_sequences,
        )
    beam_size = settings.beam_size
    num_return_sequences = settings.num_return_sequences
    length_penalty = settings.length_penalty
    coverage_penalty = settings.coverage_penalty

    start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")  # (B,)
    # One call on the B rows, only to learn the vocabulary size and whether
    # (over how many source positions) `next_fn` returns attention; under jit
    # its unused results are compiled away.
    logits, _, alignment = call_next_fn(next_fn, start_ids, state)
    if return_alignments:
        require_alignment(alignment)
    if coverage_penalty > 0 and alignment is None:
        raise ValueError(
            "A coverage penalty needs the attention weights: `next_fn` must return "
            "`(logits, state, alignment)`. Received: coverage_penalty="
            f"{coverage_penalty} and a `next_fn` returning `(logits, state)`"
        )
    search = _BeamSearch(
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
    source_length = ops.shape(alignment)[-1] if coverage_penalty > 0 else None
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
        return (
            search.advance(beams._replace(model_state=model_state), logits, alignment),
        )

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


class _BeamState(NamedTuple):
    """What beam search carries from one step to the next (K = beam_size,
    N = num_return_sequences, L = max_length, S = source length)."""

    # Scalar int32: tokens in each alive hypothesis, the position the next step writes.
    step: Any
    # (B, K) int32: the token each alive beam feeds `next_fn` next (the start id first).
    last_ids: Any
    # (B, K, L) int32: the alive hypotheses (not ended yet), end_id from `step` on.
    alive_seqs: Any
    # (B, K) float32: their log-probabilities, best first; -inf marks an empty beam.
    alive_log_probs: Any
    # (B, K, S) float32: their summed attention per source position; () without a
    # coverage penalty.
    alive_coverage: Any
    # Their alignment histories: `next_fn`'s alignment structure with (B, K, L, S)
    # leaves, zero from `step` on; () unless alignments are returned.
    alive_alignments: Any
    # (B, N, L) int32: the best finished hypotheses so far (ended or cut at L).
    finished_seqs: Any
    # (B, N) float32: their scores s(Y), best first; -inf marks an empty slot.
    finished_scores: Any
    # Their alignment histories, (B, N, L, S) leaves; () unless returned.
    finished_alignments: Any
    # Their final model states, a `FlatState` list of (B, N, ...) tensors; () unless
    # returned.
    finished_state: Any
    # The model state of the alive beams: the `FlatState` list of its (B * K, ...)
    # tensors, or, while a step runs, those `next_fn` returned for the beams
    # before reordering.
    model_state: Any


class _BeamSearch:
    """The settings of one search, and the pieces of its loop."""

    def __init__(
        self,
        end_id,
        max_length,
        beam_size,
        num_return_sequences,
        vocab_size,
        length_penalty,
        coverage_penalty,
        return_alignments=False,
        return_state=False,
    ):
        self.end_id = end_id
        self.max_length = max_length
        self.beam_size = beam_size
        self.num_return_sequences = num_return_sequences
        self.vocab_size = vocab_size
        self.length_penalty = length_penalty
        self.coverage_penalty = coverage_penalty
        self.return_alignments = return_alignments
        self.return_state = return_state
        # Enough candidates that `beam_size` of them do not end, whatever ends:
        # each beam contributes at most one candidate with the end token.
        self.num_candidates = min(2 * beam_size, beam_size * vocab_size)

    def initial_state(self, start_ids, model_state, source_length, alignment=None):
        """Before the first step: one live beam per row (the others -inf).

        `model_state` is the list of the tiled state's tensors, `alignment` the
        one `next_fn` returned for the B rows when alignments are returned."""
        batch_size = ops.shape(start_ids)[0]
        k, n, length = self.beam_size, self.num_return_sequences, self.max_length
        first_beam = ops.where(ops.arange(k) == 0, 0.0, _NEG_INF)  # (K,)
        if source_length is None:
            coverage = ()
        else:
            coverage = ops.zeros((batch_size, k, source_length), dtype="float32")
        alive_alignments = finished_alignments = finished_state = ()
        if self.return_alignments:
            alive_alignments = keras.tree.map_structure(
                lambda a: zero_history(a, (batch_size, k, length)), alignment
            )  # (B, K, L, S) leaves
            finished_alignments = keras.tree.map_structure(
                lambda a: zero_history(a, (batch_size, n, length)), alignment
            )  # (B, N, L, S) leaves
        if self.return_state:
            finished_state = [
                ops.zeros_like(
                    _gather_beams(
                        _per_beam(x, k), ops.zeros((batch_size, n), dtype="int32")
                    )
                )
                for x in model_state
            ]  # (B, N, ...) each
        return _BeamState(
            step=ops.convert_to_tensor(0, dtype="int32"),
            last_ids=ops.tile(start_ids[:, None], (1, k)),  # strides as later steps'
            alive_seqs=ops.full((batch_size, k, length), self.end_id, dtype="int32"),
            alive_log_probs=ops.zeros((batch_size, k), dtype="float32") + first_beam,
            alive_coverage=coverage,
            alive_alignments=alive_alignments,
            finished_seqs=ops.full((batch_size, n, length), self.end_id, dtype="int32"),
            finished_scores=ops.full((batch_size, n), _NEG_INF, dtype="float32"),
            finished_alignments=finished_alignments,
            finished_state=finished_state,
            model_state=model_state,
        )

    def lp(self, length):
        """GNMT's length penalty ((5 + |Y|) / 6) ** alpha, for a float32 tensor."""
        alpha = device_scalar(self.length_penalty, "float32")
        return ops.power((5.0 + length) / 6.0, alpha)

    def cp(self, coverage):
        """GNMT's coverage penalty of coverage `(..., S)`, zero-coverage positions left out."""
        one = device_scalar(1.0, coverage.dtype)
        capped = ops.where(coverage > 0.0, ops.minimum(coverage, one), one)
        return self.coverage_penalty * ops.sum(ops.log(capped), axis=-1)

    def advance(self, beams, logits, alignment):
        """One step: `logits` `(B * K, V)` and `alignment` `(B * K, S)` (or None)
        computed for the alive beams, whose new state is `beams.model_state`."""
        k, v = self.beam_size, self.vocab_size
        log_probs = ops.reshape(ops.log_softmax(logits, axis=-1), (-1, k, v))
        extended = beams.alive_log_probs[:, :, None] + log_probs  # (B, K, V)
        cand_log_probs, flat_ids = ops.top_k(
            ops.reshape(extended, (-1, k * v)), self.num_candidates
        )  # (B, C)
        flat_ids = ops.cast(flat_ids, "int32")
        v_tensor = device_scalar(v, "int32")
        parents = ops.floor_divide(flat_ids, v_tensor)  # (B, C) beam each extends
        cand_tokens = ops.mod(flat_ids, v_tensor)  # (B, C)
        cand_seqs = write_column(
            _gather_beams(beams.alive_seqs, parents), beams.step, cand_tokens
        )  # (B, C, L)
        # A candidate ends with the end token, or is cut at the last step.
        ending = ops.logical_or(
            ops.equal(cand_tokens, device_scalar(self.end_id, "int32")),
            ops.equal(beams.step, device_scalar(self.max_length - 1, "int32")),
        )  # (B, C)
        neg_inf = device_scalar(_NEG_INF, cand_log_probs.dtype)

        # The K most probable candidates that go on stay alive.
        alive_log_probs, alive_ids = ops.top_k(
            ops.where(ending, neg_inf, cand_log_probs), k
        )  # (B, K)
        alive_ids = ops.cast(alive_ids, "int32")
        alive_parents = ops.take_along_axis(parents, alive_ids, axis=1)  # (B, K)
        rows = _flat_index(alive_parents, k)  # (B * K,)
        model_state = [ops.take(x, rows, axis=0) for x in beams.model_state]

        # The candidates that end now are scored and merged into the pool.
        scores = cand_log_probs
        if self.length_penalty != 0.0:
            scores = scores / self.lp(ops.cast(beams.step + 1, "float32"))
        coverage = beams.alive_coverage
        if self.coverage_penalty > 0.0:
            weights = ops.reshape(
                ops.cast(alignment, "float32"), (-1, k, ops.shape(coverage)[-1])
            )  # (B, K, S)
            cand_coverage = _gather_beams(coverage + weights, parents)  # (B, C, S)
            scores = scores + self.cp(cand_coverage)
            coverage = _gather_beams(cand_coverage, alive_ids)  # (B, K, S)
        # Only candidates among the K most probable end (as in fairseq and
        # Hugging Face), so that beam_size 1 is greedy search.
        in_top_k = ops.arange(self.num_candidates) < k  # (C,)
        scores = ops.where(ops.logical_and(ending, in_top_k), scores, neg_inf)
        pool_scores = ops.concatenate([beams.finished_scores, scores], axis=1)
        finished_scores, best = ops.top_k(pool_scores, self.num_return_sequences)
        best = ops.cast(best, "int32")  # (B, N) in [0, N + C)
        pool_seqs = ops.concatenate([beams.finished_seqs, cand_seqs], axis=1)
        finished_seqs = _gather_beams(pool_seqs, best)

        # The alignments and states of the hypotheses in the pool: those of a
        # candidate are its parent beam's, so they are picked from the N
        # finished and the K beams (not from the C candidates).
        alive_alignments = beams.alive_alignments
        finished_alignments = beams.finished_alignments
        finished_state = beams.finished_state
        if self.return_alignments or self.return_state:
            n = self.num_return_sequences
            n_tensor = device_scalar(n, "int32")
            parent_of_best = ops.take_along_axis(
                parents, ops.maximum(best - n_tensor, 0), axis=1
            )  # (B, N)
            sources = ops.where(best < n_tensor, best, n_tensor + parent_of_best)
        if self.return_alignments:
            # This step's alignment at its position, then reordered like the seqs.
            written = keras.tree.map_structure(
                lambda history, a: write_at(history, 2, beams.step, _per_beam(a, k)),
                beams.alive_alignments,
                alignment,
            )  # (B, K, L, S) leaves
            alive_alignments = keras.tree.map_structure(
                lambda w: _gather_beams(w, alive_parents), written
            )
            finished_alignments = keras.tree.map_structure(
                lambda f, w: _gather_beams(ops.concatenate([f, w], axis=1), sources),
                beams.finished_alignments,
                written,
            )
        if self.return_state:
            finished_state = [
                _gather_beams(ops.concatenate([f, _per_beam(x, k)], axis=1), sources)
                for f, x in zip(beams.finished_state, beams.model_state)
            ]  # (B, N, ...) each

        return _BeamState(
            step=beams.step + 1,
            last_ids=ops.take_along_axis(cand_tokens, alive_ids, axis=1),
            alive_seqs=_gather_beams(cand_seqs, alive_ids),
            alive_log_probs=alive_log_probs,
            alive_coverage=coverage,
            alive_alignments=alive_alignments,
            finished_seqs=finished_seqs,
            finished_scores=finished_scores,
            finished_alignments=finished_alignments,
            finished_state=finished_state,
            model_state=model_state,
        )

    def is_running(self, beams):
        """Whether another step is needed: not at max_length, and in some row the
        best alive hypothesis may still beat the worst one in the pool."""
        # An upper bound of the score an alive hypothesis can reach: its
        # log-probability only falls, cp <= 0, and lp is largest at max_length
        # (alpha >= 0) or at the next length (alpha < 0).
        if self.length_penalty >= 0.0:
            largest_lp = ((5.0 + self.max_length) / 6.0) ** self.length_penalty
        else:
            largest_lp = self.lp(ops.cast(beams.step + 1, "float32"))
        best_alive = ops.amax(beams.alive_log_probs, axis=1) / largest_lp  # (B,)
        worst_finished = ops.amin(beams.finished_scores, axis=1)  # (B,)
        return ops.logical_and(
            ops.less(beams.step, device_scalar(self.max_length, "int32")),
            ops.any(best_alive > worst_finished),
        )


def _flat_index(beam_ids, num_beams):
    """Rows `(B * C,)` of the flat `(B * num_beams, ...)` layout for beam ids `(B, C)`."""
    batch_size = ops.shape(beam_ids)[0]
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * num_beams  # (B, 1)
    return ops.reshape(beam_ids + offsets, (-1,))


def _per_beam(x, num_beams):
    """`(B * num_beams, ...)` -> `(B, num_beams, ...)`."""
    return ops.reshape(x, (-1, num_beams) + tuple(ops.shape(x)[1:]))


def _gather_beams(x, beam_ids):
    """Picks beams: `x` `(B, M, ...)`, `beam_ids` `(B, C)` in [0, M) -> `(B, C, ...)`."""
    rest = tuple(ops.shape(x)[2:])  # dynamic where unknown when traced
    flat = ops.reshape(x, (-1,) + rest)  # (B * M, ...)
    picked = ops.take(flat, _flat_index(beam_ids, x.shape[1]), axis=0)  # (B * C, ...)
    return ops.reshape(picked, (-1, beam_ids.shape[1]) + rest)

"""The state beam search carries and one step of it (`beam_search`'s pieces)."""

from typing import Any, NamedTuple

import keras
from keras import ops

from keras_rnnattn._backend import device_scalar
from keras_rnnattn.decoding._beam_candidates import best_candidates
from keras_rnnattn.decoding._common import (
    read_when_run,
    write_at,
    write_column,
    zero_history,
)

NEG_INF = float("-inf")


class BeamState(NamedTuple):
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


class BeamSteps:
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
        # A Python float is known when traced; a 0-d tensor is read when run
        # (one compiled search for every α).
        self.length_penalty = length_penalty
        self.static_alpha = not read_when_run(length_penalty)
        self.coverage_penalty = coverage_penalty
        # A tensor β sums the coverage whatever its value.
        self.with_coverage = read_when_run(coverage_penalty) or coverage_penalty > 0.0
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
        first_beam = ops.where(ops.arange(k) == 0, 0.0, NEG_INF)  # (K,)
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
        return BeamState(
            step=ops.convert_to_tensor(0, dtype="int32"),
            last_ids=ops.tile(start_ids[:, None], (1, k)),  # strides as later steps'
            alive_seqs=ops.full((batch_size, k, length), self.end_id, dtype="int32"),
            alive_log_probs=ops.zeros((batch_size, k), dtype="float32") + first_beam,
            alive_coverage=coverage,
            alive_alignments=alive_alignments,
            finished_seqs=ops.full((batch_size, n, length), self.end_id, dtype="int32"),
            finished_scores=ops.full((batch_size, n), NEG_INF, dtype="float32"),
            finished_alignments=finished_alignments,
            finished_state=finished_state,
            model_state=model_state,
        )

    def lp(self, length):
        """GNMT's length penalty ((5 + |Y|) / 6) ** alpha, for a float32 tensor."""
        if self.static_alpha:
            alpha = device_scalar(self.length_penalty, "float32")
        else:
            alpha = ops.cast(self.length_penalty, "float32")
        return ops.power((5.0 + length) / 6.0, alpha)

    def largest_lp(self, step):
        """The largest lp any alive hypothesis can reach from `step` on: at
        `max_length` for alpha >= 0, at the next length for alpha < 0.

        In float32, as the scores: lp is the same function there."""

        def at_most():
            return self.lp(device_scalar(float(self.max_length), "float32"))

        def at_next():
            return self.lp(ops.cast(step + 1, "float32"))

        if self.static_alpha:
            return at_most() if self.length_penalty >= 0.0 else at_next()
        alpha = ops.cast(self.length_penalty, "float32")
        return ops.where(alpha >= device_scalar(0.0, "float32"), at_most(), at_next())

    def cp(self, coverage):
        """GNMT's coverage penalty of coverage `(..., S)`, zero-coverage positions left out."""
        one = device_scalar(1.0, coverage.dtype)
        capped = ops.where(coverage > 0.0, ops.minimum(coverage, one), one)
        beta = self.coverage_penalty
        if read_when_run(beta):
            beta = ops.cast(beta, coverage.dtype)
        return beta * ops.sum(ops.log(capped), axis=-1)

    def advance(self, beams, logits, alignment, kept=None):
        """One step: `logits` `(B * K, V)` and `alignment` `(B * K, S)` (or None)
        computed for the alive beams, whose new state is `beams.model_state`;
        `kept`: optional bools, one per state tensor, True where `next_fn`
        passed it through (the same for every beam of a row: not reordered)."""
        k, v = self.beam_size, self.vocab_size
        cand_log_probs, flat_ids = best_candidates(
            logits, beams.alive_log_probs, self.num_candidates
        )  # (B, C)
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
        neg_inf = device_scalar(NEG_INF, cand_log_probs.dtype)

        # The K most probable candidates that go on stay alive.
        alive_log_probs, alive_ids = ops.top_k(
            ops.where(ending, neg_inf, cand_log_probs), k
        )  # (B, K)
        alive_ids = ops.cast(alive_ids, "int32")
        alive_parents = ops.take_along_axis(parents, alive_ids, axis=1)  # (B, K)
        rows = _flat_index(alive_parents, k)  # (B * K,)
        if kept is None:
            kept = [False] * len(beams.model_state)
        model_state = [
            x if same else ops.take(x, rows, axis=0)
            for x, same in zip(beams.model_state, kept)
        ]

        # The candidates that end now are scored and merged into the pool.
        scores = cand_log_probs
        if not self.static_alpha or self.length_penalty != 0.0:
            scores = scores / self.lp(ops.cast(beams.step + 1, "float32"))
        coverage = beams.alive_coverage
        if self.with_coverage:
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

        return BeamState(
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
        # log-probability only falls, cp <= 0, and lp is at most `largest_lp`.
        best_alive = ops.amax(beams.alive_log_probs, axis=1)  # (B,)
        if not self.static_alpha or self.length_penalty != 0.0:
            best_alive = best_alive / self.largest_lp(beams.step)
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

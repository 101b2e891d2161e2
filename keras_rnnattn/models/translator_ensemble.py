"""Translators that decode together: an ensemble with one vocabulary."""

import keras
from keras import ops

from keras_rnnattn._backend import log_mean_exp
from keras_rnnattn.models.seq2seq_task import Seq2SeqTask
from keras_rnnattn.models.translator import Translator


def _vocabulary_config(tokenizer):
    """A tokenizer's config without the settings that do not change its ids."""
    config = dict(tokenizer.get_config())
    for key in ("seed", "dropout", "name"):
        config.pop(key, None)
    return type(tokenizer).__name__, config


def _as_member(member, index):
    if isinstance(member, dict):
        member = keras.saving.deserialize_keras_object(member)
    if not isinstance(member, Translator):
        raise ValueError(
            "`members` must be Translator instances (or their serialisations). "
            f"Received: members[{index}] of type {type(member).__name__}"
        )
    return member


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class TranslatorEnsemble(Translator):
    """An ensemble of translators that share their tokenizers.

    At every decoding step each member reads the same previous token and the
    ensemble predicts the mean of the members' next-token probabilities,
    log(1/M sum_m p_m(y | y_<t, x)), as ensembles of NMT systems decode
    (Sutskever et al. 2014; Sennrich et al. 2016; fairseq's `EnsembleModel`).
    Its attention weights are the members' mean. Members may differ in
    anything but their tokenizers (the ids must mean the same subwords): for
    example the same recipe trained from other random seeds.

    It is a `Translator` that implements the hooks of `Seq2SeqTask` over its
    members through their public hooks (`forward_pass`, `initial_state`,
    `next_fn`, `has_attention`): `translate`, `plot_attention`,
    `generate_ids`, `next_fn` / `initial_state` (for
    `keras_rnnattn.decoding`), `encode_pairs`, `call` (log-probabilities as
    logits), `export_model` and the presets work the same way. The decoding
    state holds each member's state, in member order.

    Args:
        members: list of at least one `Translator` (or their Keras
            serialisations), with the same source and target vocabularies.
        max_source_length: int, the most source tokens `translate` accepts;
            None (default) uses the smallest of the members'.
        max_target_length: int, the most tokens `translate` produces; None
            (default) uses the smallest of the members'.
        **kwargs: base `keras.Model` arguments (`name`).

    Call arguments:
        inputs: `(source_ids, target_in_ids)`, int `(B, S)` and `(B, T)`.
        training: bool.

    Returns:
        Log-probabilities of the mean distribution `(B, T, target_vocabulary_size)`
        (float32), usable as logits.

    Example:

    >>> from keras_rnnattn.text import CharTokenizer
    >>> pairs = [("abc", "cba"), ("ab", "ba"), ("ca", "ac"), ("bca", "acb")]
    >>> src = CharTokenizer().fit([s for s, _ in pairs])
    >>> tgt = CharTokenizer().fit([t for _, t in pairs])
    >>> members = [Translator(src, tgt, embedding_dim=8, units=16) for _ in range(2)]
    >>> ensemble = TranslatorEnsemble(members)
    >>> len(ensemble.translate(["abc", "ca"], beam_size=2))
    2
    """

    def __init__(
        self, members, max_source_length=None, max_target_length=None, **kwargs
    ):
        if not isinstance(members, (list, tuple)) or not members:
            raise ValueError(
                "`members` must be a non-empty list of Translators. "
                f"Received: members={members!r}"
            )
        members = [_as_member(m, i) for i, m in enumerate(members)]
        first = members[0]
        for i, member in enumerate(members[1:], start=1):
            for side in ("source_tokenizer", "target_tokenizer"):
                if _vocabulary_config(getattr(member, side)) != _vocabulary_config(
                    getattr(first, side)
                ):
                    raise ValueError(
                        f"Every member must have the same {side} (the same ids "
                        f"for the same subwords): members[{i}].{side} differs from "
                        f"members[0].{side}. Fit one tokenizer per side and give "
                        "it to every member."
                    )
        if len({m.has_attention for m in members}) > 1:
            raise ValueError(
                "Members must all have an attention or all have none "
                "(attention='none'). Received: attentions "
                f"{[getattr(m, 'attention', None) for m in members]}"
            )
        shortest_source = min(m.max_source_length for m in members)
        shortest_target = min(m.max_target_length for m in members)
        # The members own every layer: the task's initializer, not Translator's.
        Seq2SeqTask.__init__(
            self,
            first.source_tokenizer,
            first.target_tokenizer,
            max_source_length or shortest_source,
            max_target_length or shortest_target,
            **kwargs,
        )
        for name, value, limit in (
            ("max_source_length", self.max_source_length, shortest_source),
            ("max_target_length", self.max_target_length, shortest_target),
        ):
            if value > limit:
                raise ValueError(
                    f"`{name}` can be at most the members' smallest ({limit}). "
                    f"Received: {name}={value}"
                )
        self.members = members
        self.built = True

    def build(self, input_shape=None):
        self.built = True  # every member is built in its constructor

    def encode(self, source_ids, training=None):
        """Runs every member's encoder.

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.
            training: bool.

        Returns:
            A list, one `(memory, mask, cell_states)` per member (see
            `Translator.encode`).
        """
        return [m.encode(source_ids, training=training) for m in self.members]

    @property
    def has_attention(self):
        """Whether the members attend (they all do, or none does)."""
        return self.members[0].has_attention

    def forward_pass(self, source_ids, target_in_ids, training=None):
        """Teacher forcing through every member.

        Returns:
            `(log-probabilities (B, T, V) float32, alignments (B, T, S))`: the
            log of the members' mean probability and their mean alignment
            (None without attention).
        """
        log_probs, alignments = [], []
        for member in self.members:
            logits, alignment = member.forward_pass(
                source_ids, target_in_ids, training=training
            )
            log_probs.append(ops.log_softmax(logits, axis=-1))  # (B, T, V)
            alignments.append(alignment)
        logits = self._mean_probability(log_probs)  # (B, T, V)
        if not self.has_attention:
            return logits, None
        mean = ops.mean(ops.stack(alignments, axis=0), axis=0)  # (B, T, S)
        return logits, mean

    def _mean_probability(self, log_probs):
        """log(1/M sum_m exp(log_probs[m])), float32."""
        return log_mean_exp(log_probs)

    def initial_state(self, source_ids):
        """Every member's decoding state, as `{"states": [...], "memory": [...]}`.

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.

        Returns:
            A dict whose `"states"` and `"memory"` hold one entry per member
            (see `Translator.initial_state`), in member order.
        """
        states = [m.initial_state(source_ids) for m in self.members]
        return {
            "states": [s["states"] for s in states],
            "memory": [s["memory"] for s in states],
        }

    def step_constants(self):
        """Every member's `step_constants()`, in member order (None if none
        has any)."""
        constants = [m.step_constants() for m in self.members]
        return None if all(c is None for c in constants) else constants

    def next_fn(self, token_ids, state, constants=None):
        """One decoding step of every member; the mean of their probabilities.

        Args:
            token_ids: int `(N,)`, the previous tokens.
            state: `{"states": [...], "memory": [...]}`, one entry per member
                (see `initial_state`).
            constants: optional `step_constants()`, one entry per member.

        Returns:
            `(log-probabilities (N, V) float32, state, alignment (N, S))`; the
            alignment (the members' mean) is omitted without attention.
        """
        log_probs, states, alignments = [], [], []
        if constants is None:
            constants = [None] * len(self.members)
        for member, member_states, memory, member_constants in zip(
            self.members, state["states"], state["memory"], constants
        ):
            out = member.next_fn(
                token_ids,
                {"states": member_states, "memory": memory},
                constants=member_constants,
            )
            log_probs.append(ops.log_softmax(out[0], axis=-1))  # (N, V)
            states.append(out[1]["states"])
            if len(out) == 3:
                alignments.append(out[2])
        logits = self._mean_probability(log_probs)
        new_state = {"states": states, "memory": state["memory"]}
        if not alignments:
            return logits, new_state
        return logits, new_state, ops.mean(ops.stack(alignments, axis=0), axis=0)

    def get_config(self):
        # The task's config (the length limits) and the members, which hold
        # everything else.
        config = Seq2SeqTask.get_config(self)
        config["members"] = [
            keras.saving.serialize_keras_object(m) for m in self.members
        ]
        return config

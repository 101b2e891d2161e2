"""The sequence-to-sequence task: encoding, search, `translate` and plots, once."""

import keras
import numpy as np
from keras import ops

from keras_rnnattn._backend import no_grad
from keras_rnnattn._checks import positive_int
from keras_rnnattn.models._optimizers import InPlaceAdam
from keras_rnnattn.models._seq2seq_export import seq2seq_endpoints
from keras_rnnattn.models._seq2seq_samples import check_pairs
from keras_rnnattn.models._seq2seq_search import Seq2SeqSearch
from keras_rnnattn.models.losses import MaskedAccuracy, MaskedSparseCrossEntropy
from keras_rnnattn.models.task import TaskContract, TextTask
from keras_rnnattn.text.kept_symbols import split_symbols
from keras_rnnattn.text.serialization import as_tokenizer
from keras_rnnattn.text.unknown_words import decode_translations


class Seq2SeqTask(Seq2SeqSearch, TextTask, keras.Model):
    """Base of the translators: text handling, search and plots over four hooks.

    A subclass is a model from source ids to target logits that implements:

    - `forward_pass(source_ids, target_in_ids, training=None)`: teacher
      forcing, `(logits (B, T, V) float32, alignments (B, T, S) or None)`.
      (Not `forward`: on torch every Keras layer is a `torch.nn.Module`,
      whose `__call__` runs `forward`.)
    - `initial_state(source_ids)`: the decoding state of source ids `(B, S)`,
      a dict `{"states": ..., "memory": ...}` of nested tensors with the
      batch on axis 0; `next_fn` returns "memory" as it received it, and
      its tensors that depend on the source length have it on axis 1.
    - `next_fn(token_ids, state)`: one step for `keras_rnnattn.decoding`,
      `(logits (N, V) float32, state[, alignment (N, S)])`, with the
      alignment exactly when `has_attention`.
    - `has_attention`: bool property, whether the model attends (and so can
      return and plot alignments).

    From these it gives `call`, `compile` defaults, the sample checks of
    `fit`/`evaluate`/`predict` (`preprocess_samples`), `encode_source`,
    `encode_pairs`, `search_fn`, `generate_ids`, `translate`,
    `plot_attention` and `export_endpoints`. Empty input follows `TextTask`:
    `translate([])` returns `[]`; `fit`/`evaluate` with no samples raise.

    Args:
        source_tokenizer: a fitted tokenizer of `keras_rnnattn.text` (or its
            `{"class_name", "config"}` dict).
        target_tokenizer: the same for the target language.
        max_source_length: int, the most source tokens (end token included)
            `translate` accepts.
        max_target_length: int, the most tokens `translate` produces.
        **kwargs: base `keras.Model` arguments (`name`, `dtype`).

    Example:

    >>> from keras_rnnattn.text import CharTokenizer
    >>> from keras_rnnattn.models import Translator
    >>> tok = CharTokenizer().fit(["abc"])
    >>> model = Translator(tok, tok, embedding_dim=4, units=4)
    >>> isinstance(model, Seq2SeqTask), model.has_attention
    (True, True)
    """

    _BEAM = ("beam_size", "max_length", "length_penalty", "coverage_penalty")
    task_contract = TaskContract(
        "translate",
        input_tokenizer="source_tokenizer",
        methods={
            "translate": _BEAM + ("return_attention",),
            "generate": ("max_length", "max_new_tokens", "strip_prompt"),
            "plot_attention": _BEAM,
        },
        export_options=_BEAM,
    )

    def __init__(
        self,
        source_tokenizer,
        target_tokenizer,
        max_source_length,
        max_target_length,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_tokenizer = as_tokenizer(source_tokenizer, "source_tokenizer")
        self.target_tokenizer = as_tokenizer(target_tokenizer, "target_tokenizer")
        self.max_source_length = self._positive_int(
            "max_source_length", max_source_length
        )
        self.max_target_length = self._positive_int(
            "max_target_length", max_target_length
        )

    @staticmethod
    def _positive_int(name, value, allow_none=False):
        """`value` as an int >= 1 (or None where allowed); a ValueError names it."""
        return positive_int(name, value, allow_none=allow_none)

    # The hooks.
    def forward_pass(self, source_ids, target_in_ids, training=None):
        """Teacher forcing: `(logits (B, T, V) float32, alignments or None)`."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement `forward_pass`."
        )

    def initial_state(self, source_ids):
        """The decoding state for `next_fn`: `{"states": ..., "memory": ...}`."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement `initial_state`."
        )

    def next_fn(self, token_ids, state):
        """One decoding step: `(logits (N, V) float32, state[, alignment])`."""
        raise NotImplementedError(f"{type(self).__name__} must implement `next_fn`.")

    @property
    def has_attention(self):
        """Whether `next_fn` and `forward_pass` give alignments."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement `has_attention`."
        )

    def _forward(self, source_ids, target_in_ids, training=None):
        # The name `forward_pass` had before it was a public hook.
        return self.forward_pass(source_ids, target_in_ids, training=training)

    # Keras.
    def call(self, inputs, training=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                f"{type(self).__name__} takes `(source_ids, target_in_ids)`. "
                f"Received: inputs={type(inputs).__name__}"
            )
        for name, ids in zip(("source_ids", "target_in_ids"), inputs):
            if len(ids.shape) != 2:
                raise ValueError(
                    f"{type(self).__name__} takes `(source_ids, target_in_ids)`, "
                    "each token ids of shape (batch, length). Received: "
                    f"{name} of shape {tuple(ids.shape)}"
                )
        return self.forward_pass(inputs[0], inputs[1], training=training)[0]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[1][:2]) + (self.target_tokenizer.vocabulary_size,)

    def compile(
        self,
        optimizer=None,
        loss=None,
        metrics=None,
        label_smoothing=0.0,
        sampler=None,
        **kwargs,
    ):
        """`keras.Model.compile` with defaults for translation.

        Defaults: Adam (learning rate 1e-3, global gradient norm clipped at 5;
        Keras's Adam on the backend's fused update kernels), sparse
        cross-entropy from logits ignoring the pad id 0 (averaged over real
        tokens), and the accuracy over real tokens. `label_smoothing` (ε, used
        by the default loss only) trains against (1 - ε) on the label and ε
        spread over the vocabulary. `sampler` is how `generate` decodes
        (`GenerationMixin.compile`): None keeps the model's search settings
        (greedy search, with a preset's recorded penalties for beams).
        """
        if optimizer is None:
            optimizer = InPlaceAdam(learning_rate=1e-3, global_clipnorm=5.0)
        if loss is None:
            loss = MaskedSparseCrossEntropy(pad_id=0, label_smoothing=label_smoothing)
        elif label_smoothing:
            raise ValueError(
                "`label_smoothing` applies to the default loss only; pass it to your "
                "own loss instead."
            )
        if metrics is None:
            metrics = [MaskedAccuracy(pad_id=0)]
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, sampler=sampler, **kwargs
        )

    # Training data.
    def preprocess_samples(self, x, y=None, owner=None, with_targets=True):
        """Checks the token ids of `fit`/`evaluate`/`predict`.

        Args:
            x: source texts (a list or array of strings, with the target
                texts as `y`: encoded here by `encode_pairs`);
                `(source_ids, target_in_ids)`, each int `(N, length)`, from
                `x, y = model.encode_pairs(source_texts, target_texts)`; or a
                `tf.data.Dataset` of batches `((source_ids, target_in_ids),
                target_out_ids)`, for example
                `tf.data.Dataset.from_tensor_slices((x, y)).batch(32)`. (A
                dataset of `(source, target)` strings is read batch by batch
                through this method by `fit`, `evaluate` and `predict`.)
            y: target texts, or target_out_ids `(N, length)`; None with a
                dataset.
            owner: str, the caller named in errors.
            with_targets: bool, False for `predict`, whose dataset is not
                checked.

        Returns:
            `(x, y)`, checked; a ValueError that names the fix otherwise.
        """
        return check_pairs(self, x, y, owner, with_targets)

    # Text.
    def encode_source(self, texts, truncate=False):
        """Source ids `(B, S)` int32 for a list of texts, each ending with eos.

        Args:
            texts: list of str.
            truncate: bool; False raises a ValueError for a text longer than
                `max_source_length` tokens (eos included), True cuts it.

        Returns:
            int32 array, padded with 0 to the longest row.
        """
        tok = self.source_tokenizer
        rows = [tok.encode(text) for text in texts]  # once: BPE-dropout samples
        lengths = [len(row) + 1 for row in rows]
        longest = max(lengths, default=1)
        if longest > self.max_source_length and not truncate:
            index = int(np.argmax(lengths))
            raise ValueError(
                f"Text {index} has {longest} source tokens (end token included), "
                f"more than this model's max_source_length={self.max_source_length}: "
                "shorten or split it. Received: "
                f"text={str(texts[index])[:80]!r}"
            )
        return tok.pad(
            rows, max_length=min(longest, self.max_source_length), add_eos=True
        )

    def encode_pairs(self, source_texts, target_texts):
        """Training arrays: `((source_ids, target_in_ids), target_out_ids)`.

        Sources end with eos; target inputs are `bos y_1 .. y_n` and target
        outputs `y_1 .. y_n eos`, padded with 0. Texts longer than
        `max_source_length` / `max_target_length` are truncated.

        Args:
            source_texts: list of str.
            target_texts: list of str, one per source.

        Returns:
            `((source_ids, target_in_ids), target_out_ids)`, int32 arrays.
        """
        if len(source_texts) != len(target_texts):
            raise ValueError(
                "Expected one target per source. Received: "
                f"{len(source_texts)} sources, {len(target_texts)} targets"
            )
        source = self.encode_source(source_texts, truncate=True)
        tok = self.target_tokenizer
        rows = [tok.encode(text) for text in target_texts]
        longest = max((len(row) for row in rows), default=0)
        target = tok.pad(
            rows,
            max_length=min(longest, self.max_target_length - 1) + 2,
            add_bos=True,
            add_eos=True,
        )  # bos y_1 .. y_n eos: at most max_target_length tokens after bos
        target_in = np.where(target == tok.eos_id, tok.pad_id, target)[:, :-1]
        target_out = target[:, 1:]
        return (source, target_in.astype("int32")), target_out.astype("int32")

    def translate(
        self,
        texts,
        beam_size=1,
        max_length=None,
        return_attention=False,
        length_penalty=None,
        coverage_penalty=None,
        replace_unknown=True,
    ):
        """Translates texts: strings in, strings out.

        Empty (or blank) texts give an empty translation without running the
        model, and an empty list gives an empty list. Words the source
        tokenizer does not know map to its unknown token; a symbol it cannot
        read (an emoji, say) is left out of the model's input and put back
        into the translation after the word attended to where it stood
        (`keras_rnnattn.text.kept_symbols`). A text longer than
        `max_source_length` tokens raises a ValueError.

        Args:
            texts: a str or a list of str (UTF-8 bytes are decoded); anything
                else raises a ValueError.
            beam_size: int >= 1; 1 is greedy search.
            max_length: int >= 1, the most target tokens; None uses
                `min(max_target_length, 2 * source length + 10)` for each text
                (a text translates the same alone or in a batch).
            return_attention: bool, also return the attention weights.
            length_penalty: float α >= 0 of beam search, GNMT's
                ((5 + |Y|) / 6)^α; larger values favour longer outputs. None:
                the model's (`search_settings`: a preset's recorded α, the
                one `keras-rnnattn translate --beam` and export use).
            coverage_penalty: float β >= 0 of beam search (Wu et al. 2016),
                rewards hypotheses that attend to every source token. None:
                the model's, as for `length_penalty`.
            replace_unknown: bool, replace each unknown target token by the
                source word its attention points at (Luong et al. 2015; see
                `keras_rnnattn.text.unknown_words`), so that no `<unk>` is
                printed; False keeps the tokenizer's `<unk>`.

        Returns:
            The translation (a str for a str input, else a list of str); with
            `return_attention=True` a pair `(translations, attentions)` where
            `attentions[i]` is a dict with `"source_tokens"`, `"output_tokens"`
            (both ending with the end token) and `"weights"`, a float array
            `(len(output_tokens), len(source_tokens))`.
        """
        beam_size = self._positive_int("beam_size", beam_size)
        max_length = self._positive_int("max_length", max_length, allow_none=True)
        texts, single, _ = self._read_texts(texts, "translate")
        if return_attention and not self.has_attention:
            raise ValueError(
                "This model has no attention (attention='none'). "
                "Received: return_attention=True"
            )
        penalties = self._penalties(length_penalty, coverage_penalty)
        self.search_settings_for(beam_size, **penalties)  # checked before running
        # Emoji and other symbols the source vocabulary lacks: out of the
        # source, back into the translation (`keras_rnnattn.text.kept_symbols`).
        split = [split_symbols(self.source_tokenizer, t) for t in texts]
        if return_attention:  # the attention is over the text as written
            split = [(t, []) for t in texts]
        keep, source = self._sources([reduced for reduced, _ in split])
        translations = [" ".join(s for s, _ in symbols) for _, symbols in split]
        attentions = [None] * len(texts)
        if keep:
            tokens, _ = self.generate_ids(source, beam_size, max_length, **penalties)
            decoded = decode_translations(  # `<unk>`: the source word attended to
                (self.source_tokenizer, self.target_tokenizer),
                [split[i][0] for i in keep],
                source,
                tokens,
                self._alignments if self.has_attention else None,
                replace_unknown,
                symbols=[split[i][1] for i in keep],
            )
            for row, i in enumerate(keep):
                translations[i] = decoded[row]
            if return_attention:
                self._attention_entries(texts, keep, source, tokens, attentions)
        result = translations[0] if single else translations
        if return_attention:
            return result, (attentions[0] if single else attentions)
        return result

    def _sources(self, texts):
        """`(keep, source_ids)`: the indices of the texts with tokens, and
        their source ids (None where there are none)."""
        tok = self.source_tokenizer
        keep = [i for i, t in enumerate(texts) if t.strip() and tok.encode(t)]
        return keep, (self.encode_source([texts[i] for i in keep]) if keep else None)

    def _attention_entries(self, texts, keep, source, tokens, attentions):
        """Fills `attentions[i]` for the kept texts (see `translate`)."""
        source_tok, target_tok = self.source_tokenizer, self.target_tokenizer
        eos = target_tok.eos_id
        weights = self._alignments(source, tokens)
        for row, i in enumerate(keep):
            out = tokens[row].tolist()
            n_out = out.index(eos) + 1 if eos in out else len(out)
            n_src = int(np.sum(source[row] != 0))
            attentions[i] = {
                "source_tokens": source_tok.tokenize(texts[i])
                + [source_tok.vocabulary.id_to_token(source_tok.eos_id)],
                "output_tokens": [
                    target_tok.vocabulary.id_to_token(t) for t in out[:n_out]
                ],
                "weights": weights[row, :n_out, :n_src],
            }

    def _alignments(self, source, tokens):
        """Attention weights `(B, L, S)` of teacher-forcing the produced tokens.

        With the same weights and inputs this is exactly the alignment the
        decoding step computed for each produced token.
        """
        bos = np.full((tokens.shape[0], 1), self.target_tokenizer.bos_id, "int32")
        target_in = np.concatenate([bos, tokens[:, :-1]], axis=1).astype("int32")
        with no_grad():
            _, alignments = self.forward_pass(source, target_in, training=False)
        return ops.convert_to_numpy(ops.cast(alignments, "float32"))

    def plot_attention(
        self,
        text,
        beam_size=1,
        max_length=None,
        ax=None,
        length_penalty=None,
        coverage_penalty=None,
    ):
        """A heat map of the attention weights of one translation.

        Args:
            text: str, the source.
            beam_size, max_length, length_penalty, coverage_penalty: as in
                `translate`.
            ax: optional matplotlib axes to draw on.

        Returns:
            The matplotlib figure: source tokens along x, output tokens along y.
        """
        from keras_rnnattn.plotting import plot_attention

        translation, attention = self.translate(
            text,
            beam_size=beam_size,
            max_length=max_length,
            return_attention=True,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
        )
        if attention is None:
            raise ValueError(
                f"Nothing to plot for an empty text. Received: text={text!r}"
            )
        return plot_attention(
            attention["weights"],
            attention["source_tokens"],
            attention["output_tokens"],
            title=translation,
            ax=ax,
        )

    # Export.
    @property
    def export_length_limit(self):
        """The longest source `keras_rnnattn.export` accepts: `max_source_length`."""
        return self.max_source_length

    def check_export_options(self, options):
        """The export options with `max_length` defaulting to `max_target_length`
        and the beam's penalties to the model's (`search_settings`)."""
        if options.get("max_length") is None:
            options["max_length"] = self.max_target_length
        for name in ("length_penalty", "coverage_penalty"):
            if options.get(name) is None:
                options[name] = getattr(self.search_settings, name)
        return options

    def export_endpoints(self, options):
        """The functions `keras_rnnattn.export` writes for this model.

        `encode` (source ids to the decoding state), `decode_step` (one token
        and the state to logits, the next state and the alignment), `greedy`
        and `beam_search` (source ids to tokens and scores, the whole loop in
        the graph).

        Args:
            options: the checked options of `export_model`: `batch_size`,
                `sequence_length`, `max_length`, `beam_size`, `length_penalty`,
                `coverage_penalty`.

        Returns:
            A list of `Endpoint`s.
        """
        return seq2seq_endpoints(self, options)

    # Saving.
    def get_config(self):
        config = super().get_config()
        config.update(
            {
                # The dtype policy too, so a mixed-precision model stays one.
                "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                "max_source_length": self.max_source_length,
                "max_target_length": self.max_target_length,
            }
        )
        return config

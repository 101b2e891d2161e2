"""The sequence-to-sequence task: encoding, search, `translate` and plots, once."""

import keras

import keras_rnnattn.models._seq2seq_search as searching
import keras_rnnattn.models._seq2seq_text as text_ids
from keras_rnnattn._checks import positive_int
from keras_rnnattn.models._generator import CompileKey
from keras_rnnattn.models._optimizers import InPlaceAdam
from keras_rnnattn.models._seq2seq_export import check_options, seq2seq_endpoints
from keras_rnnattn.models._seq2seq_samples import check_call_inputs, check_pairs
from keras_rnnattn.models.generation import GenerationMixin, token_bias
from keras_rnnattn.models.losses import MaskedAccuracy, MaskedSparseCrossEntropy
from keras_rnnattn.models.task import TaskContract, TextTask
from keras_rnnattn.text.serialization import as_tokenizer


class Seq2SeqTask(GenerationMixin, TextTask, keras.Model):
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
    def _missing(self, hook):
        """The error of a hook the subclass does not implement."""
        return NotImplementedError(f"{type(self).__name__} must implement `{hook}`.")

    def forward_pass(self, source_ids, target_in_ids, training=None):
        """Teacher forcing: `(logits (B, T, V) float32, alignments or None)`."""
        raise self._missing("forward_pass")

    def initial_state(self, source_ids):
        """The decoding state for `next_fn`: `{"states": ..., "memory": ...}`."""
        raise self._missing("initial_state")

    def next_fn(self, token_ids, state):
        """One decoding step: `(logits (N, V) float32, state[, alignment])`."""
        raise self._missing("next_fn")

    @property
    def has_attention(self):
        """Whether `next_fn` and `forward_pass` give alignments."""
        raise self._missing("has_attention")

    # Keras.
    def call(self, inputs, training=None):
        check_call_inputs(type(self).__name__, inputs)
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
        return text_ids.source_ids(self, texts, truncate)

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
        return text_ids.training_pairs(self, source_texts, target_texts)

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
        penalties = searching.given_penalties(
            self.search_settings, length_penalty, coverage_penalty
        )
        # Made once, checked before running.
        settings = self.search_settings_for(beam_size, **penalties)
        return text_ids.translate_texts(
            self, texts, single, settings, max_length, return_attention, replace_unknown
        )

    # Search.
    def _never_generated(self):
        """`(V,)` float32: -1e9 at pad and bos (never produced), 0 elsewhere."""
        tok = self.target_tokenizer
        return token_bias(tok.vocabulary_size, (tok.pad_id, tok.bos_id))

    def step_constants(self):
        """What every decoding step computes from the weights alone, or None.

        A hook: the search computes them once, before the loop, and calls
        `next_fn(token_ids, state, constants=...)`; None (the default) calls
        `next_fn(token_ids, state)`.

        Returns:
            Nested tensors, or None.
        """
        return None

    def search_settings_for(self, beam_size=1, **beam_kwargs):
        """The `SearchSettings` of a beam size and beam options, over the model's.

        Greedy search for one beam without penalties or n-best, else beam
        search; the rest are `search_settings`' (a preset's length penalty).

        Args:
            beam_size: int >= 1.
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences`.

        Returns:
            A `keras_rnnattn.decoding.SearchSettings`.
        """
        return searching.search_settings_for(
            self.search_settings, beam_size, beam_kwargs
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
            settings: optional `keras_rnnattn.decoding.SearchSettings`, in place
                of `beam_size` and `beam_kwargs`; with `method="sample"` the
                function takes `(source_ids, uniforms)`, uniforms `(L, B)`.
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences` of `beam_search`.

        Returns:
            The function (a `Generator`); its `tokens, scores[, alignments]`
            are shaped as in `generate_ids`. A beam search's function also
            takes the keywords `length_penalty` and `coverage_penalty`, 0-d
            float32 tensors in place of the settings' α and β, read when it
            runs.
        """
        if settings is None:
            settings = self.search_settings_for(beam_size, **beam_kwargs)
        max_length = self._positive_int(
            "max_length", max_length or self.max_target_length
        )
        key = CompileKey(settings, max_length, per_row, bool(return_alignments))
        return searching.seq2seq_generator(self, key)

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
        settings = self.search_settings_for(beam_size, **beam_kwargs)
        return searching.search_ids(
            self, source_ids, settings, max_length, return_alignments
        )

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
        return text_ids.generate_texts(self, inputs, max_length, max_new_tokens)

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
        return text_ids.plot_translation(
            self,
            text,
            ax,
            beam_size=beam_size,
            max_length=max_length,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
        )

    # Export.
    @property
    def export_length_limit(self):
        """The longest source `keras_rnnattn.export` accepts: `max_source_length`."""
        return self.max_source_length

    def check_export_options(self, options):
        """The export options with `max_length` defaulting to `max_target_length`
        and the beam's penalties to the model's (`search_settings`)."""
        return check_options(self, options)

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

"""The sequence-to-sequence task: encoding, search, `translate` and plots, once."""

import numbers

import keras
import numpy as np
from keras import ops

from keras_rnnattn._backend import no_grad
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.models._optimizers import InPlaceAdam
from keras_rnnattn.models._samplers import (
    is_keras_hub_sampler,
    resolve_sampler,
    run_keras_hub_sampler,
)
from keras_rnnattn.models._seq2seq_export import seq2seq_endpoints
from keras_rnnattn.models.losses import MaskedAccuracy, MaskedSparseCrossEntropy
from keras_rnnattn.models.task import TextTask
from keras_rnnattn.ops import device_scalar
from keras_rnnattn.text import inputs as text_inputs
from keras_rnnattn.text.serialization import as_tokenizer
from keras_rnnattn.text.unknown_words import decode_translations


class Seq2SeqTask(TextTask, keras.Model):
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
        if value is None and allow_none:
            return None
        if (
            not isinstance(value, numbers.Integral)
            or isinstance(value, bool)
            or value < 1
        ):
            raise ValueError(
                f"`{name}` must be an int >= 1. Received: {name}={value!r}"
            )
        return int(value)

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
        Keras's Adam, updated in place on torch), sparse
        cross-entropy from logits ignoring the pad id 0 (averaged over real
        tokens), and the accuracy over real tokens. `label_smoothing` (ε, used
        by the default loss only) trains against (1 - ε) on the label and ε
        spread over the vocabulary. `sampler` is how `generate` decodes, as
        in keras-hub: `"greedy"` (the default), `"beam"` (this library's beam
        search, 5 beams), `"top_k"` (k = 5), `"top_p"` (p = 0.1), `"random"`,
        or a `keras_hub.samplers.Sampler` (its own loop over `next_fn`).
        """
        object.__setattr__(
            self, "_sampler", resolve_sampler(sampler, self._caller("compile"))
        )
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
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

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
        owner = owner or type(self).__name__
        fix = (
            "Pass `x, y = model.encode_pairs(source_texts, target_texts)`, then "
            "`fit(x, y)`"
        )
        dataset = text_inputs.as_dataset(x)
        if dataset is not None and not with_targets:
            return x, y  # `predict`: its elements may or may not hold targets
        if dataset is not None:
            x_spec, y_spec, _ = text_inputs.dataset_parts(dataset, owner, True)
            if not isinstance(x_spec, tuple) or len(x_spec) != 2:
                raise ValueError(
                    f"{owner}: the dataset must yield ((source_ids, target_in_ids), "
                    f"target_out_ids). {fix}, and build the dataset from "
                    "`tf.data.Dataset.from_tensor_slices((x, y)).batch(n)`. "
                    f"Received: element_spec={dataset.element_spec}"
                )
            for spec, what in zip(
                (*x_spec, y_spec), ("source ids", "target input ids", "target ids")
            ):
                text_inputs.check_ids_spec(spec, owner, what=what)
            return x, y
        if not isinstance(x, (tuple, list, np.ndarray, str)):
            return x, y  # a keras.utils.PyDataset, a generator: Keras reads them
        if text_inputs.is_text(x):
            if isinstance(x, (str, bytes)):
                raise ValueError(
                    f"{owner}: texts must be a list of sources, not one string. "
                    f"Received: x={x!r}"
                )
            if y is None:
                raise ValueError(
                    f"{owner}: source texts need their target texts, "
                    "`fit(source_texts, target_texts)` (to translate, call "
                    f"`translate` or `generate`). Received: x={list(x)[:2]!r}, y=None"
                )
            if not text_inputs.is_text(y) or isinstance(y, (str, bytes)):
                raise ValueError(
                    f"{owner}: source texts need a list of target texts, one per "
                    f"source. Received: y of type {type(y).__name__}"
                )
            sources, _ = text_inputs.as_text_list(x, owner)
            targets, _ = text_inputs.as_text_list(y, owner)
            if len(sources) != len(targets):
                raise ValueError(
                    f"{owner}: {len(sources)} source texts but {len(targets)} "
                    "target texts: give one target per source."
                )
            return self.encode_pairs(sources, targets)
        if (
            y is None
            and isinstance(x, (tuple, list))
            and len(x) == 2
            and isinstance(x[0], (tuple, list))
        ):
            raise ValueError(
                f"{owner}: x is the whole result of `encode_pairs`, "
                "((source_ids, target_in_ids), target_out_ids), passed as the "
                f"inputs. {fix}."
            )
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError(
                f"{owner}: x must be (source_ids, target_in_ids). {fix}. "
                f"Received: x of type {type(x).__name__}"
            )
        source = text_inputs.check_token_ids(
            x[0], self.source_tokenizer.vocabulary_size, f"{owner} (source ids)"
        )
        target_size = self.target_tokenizer.vocabulary_size
        target_in = text_inputs.check_token_ids(
            x[1], target_size, f"{owner} (target input ids)"
        )
        if y is not None:
            y = text_inputs.check_token_ids(y, target_size, f"{owner} (target ids)")
            if np.shape(y) != np.shape(target_in):
                raise ValueError(
                    f"{owner}: the target ids must have the target inputs' shape "
                    f"{np.shape(target_in)}. {fix}. Received shape {np.shape(y)}"
                )
        return (source, target_in), y

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

    # Search.
    def _target_bias(self, token_ids, at, elsewhere):
        """`(V,)` float32: `at` on `token_ids` of the target vocabulary, else
        `elsewhere`. Made on the device from `arange`, not copied at each step.
        """
        ids = ops.arange(self.target_tokenizer.vocabulary_size, dtype="int32")
        hit = None
        for token_id in token_ids:
            equal = ops.equal(ids, device_scalar(token_id, "int32"))
            hit = equal if hit is None else ops.logical_or(hit, equal)
        return ops.where(
            hit, device_scalar(at, "float32"), device_scalar(elsewhere, "float32")
        )

    def _never_generated(self):
        """`(V,)` float32: -1e9 at pad and bos (never produced), 0 elsewhere."""
        tok = self.target_tokenizer
        return self._target_bias((tok.pad_id, tok.bos_id), -1e9, 0.0)

    def _next_fn_with_row_limits(self, token_ids, state):
        """`next_fn` that forces the end token in rows past their length limit."""
        out = self.next_fn(token_ids, state["model"])
        # (V,): 0 at the end token, -1e9 elsewhere
        only_eos = self._target_bias((self.target_tokenizer.eos_id,), 0.0, -1e9)
        over = ops.greater_equal(state["step"], state["limit"])[:, None]  # (N, 1)
        logits = ops.where(over, only_eos[None], out[0])
        new_state = {
            "model": out[1],
            "step": state["step"] + 1,
            "limit": state["limit"],
        }
        return (logits, new_state) + tuple(out[2:])

    def search_fn(
        self,
        beam_size=1,
        max_length=None,
        per_row=False,
        return_alignments=False,
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
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences` of `beam_search`.

        Returns:
            The function; its `tokens, scores[, alignments]` are shaped as in
            `generate_ids`.
        """
        from keras_rnnattn.decoding import beam_search, greedy_search

        beam_size = self._positive_int("beam_size", beam_size)
        max_length = self._positive_int(
            "max_length", max_length or self.max_target_length
        )
        bos, eos = self.target_tokenizer.bos_id, self.target_tokenizer.eos_id
        next_fn = self._next_fn_with_row_limits if per_row else self.next_fn

        def search(source_ids):
            state = self.initial_state(source_ids)
            start = ops.full((ops.shape(source_ids)[0],), bos, dtype="int32")
            if per_row:
                lengths = ops.sum(ops.cast(ops.not_equal(source_ids, 0), "int32"), 1)
                state = {
                    "model": state,
                    "step": ops.zeros_like(lengths),  # (B,) tokens produced
                    "limit": ops.minimum(2 * lengths + 10, max_length),  # (B,)
                }
            if beam_size == 1 and not beam_kwargs:
                return greedy_search(
                    next_fn,
                    state,
                    start,
                    eos,
                    max_length,
                    return_alignments=return_alignments,
                )
            results = beam_search(
                next_fn,
                state,
                start,
                eos,
                max_length,
                beam_size=beam_size,
                return_alignments=return_alignments,
                **beam_kwargs,
            )
            if beam_kwargs.get("num_return_sequences", 1) == 1:
                results = tuple(result[:, 0] for result in results)
            return results

        return search

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
                `num_return_sequences` of `beam_search`.

        Returns:
            `(tokens, scores)` as NumPy arrays: `(B, max_length)` and `(B,)` for
            greedy and for beam search with one returned sequence, else
            `(B, n, max_length)` and `(B, n)`; then the alignments if asked.
        """
        if return_alignments and not self.has_attention:
            raise ValueError(
                f"{type(self).__name__} has no attention (attention='none'). "
                "Received: return_alignments=True"
            )
        beam_size = self._positive_int("beam_size", beam_size)
        if source_ids is not None and not isinstance(source_ids, (list, tuple)):
            source_ids = np.asarray(ops.convert_to_numpy(source_ids))
        source_ids = text_inputs.check_token_ids(
            source_ids,
            self.source_tokenizer.vocabulary_size,
            f"{type(self).__name__}.generate_ids",
        )
        per_row = max_length is None
        if per_row:
            max_length = min(self.max_target_length, 2 * source_ids.shape[1] + 10)
        max_length = self._positive_int("max_length", max_length)
        return_alignments = bool(return_alignments)
        key = (beam_size, max_length, per_row, return_alignments)
        key += (tuple(sorted(beam_kwargs.items())),)
        search = self._compiled(
            ("search",) + key,
            lambda: self.search_fn(
                beam_size, max_length, per_row, return_alignments, **beam_kwargs
            ),
        )
        return tuple(ops.convert_to_numpy(result) for result in search(source_ids))

    def translate(
        self,
        texts,
        beam_size=1,
        max_length=None,
        return_attention=False,
        length_penalty=0.0,
        coverage_penalty=0.0,
        replace_unknown=True,
    ):
        """Translates texts: strings in, strings out.

        Empty (or blank) texts give an empty translation without running the
        model, and an empty list gives an empty list. Words the source
        tokenizer does not know map to its unknown token. A text longer than
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
                ((5 + |Y|) / 6)^α; larger values favour longer outputs.
            coverage_penalty: float β >= 0 of beam search (Wu et al. 2016),
                rewards hypotheses that attend to every source token.
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
        source_tok = self.source_tokenizer
        keep = [
            i
            for i, text in enumerate(texts)
            if text.strip() and source_tok.encode(text)
        ]
        translations = [""] * len(texts)
        attentions = [None] * len(texts)
        if keep:
            source = self.encode_source([texts[i] for i in keep])
            penalties = {
                name: float(value)
                for name, value in (
                    ("length_penalty", length_penalty),
                    ("coverage_penalty", coverage_penalty),
                )
                if value
            }
            tokens, _ = self.generate_ids(source, beam_size, max_length, **penalties)
            decoded = decode_translations(  # `<unk>`: the source word attended to
                (source_tok, self.target_tokenizer),
                [texts[i] for i in keep],
                source,
                tokens,
                self._alignments if self.has_attention else None,
                replace_unknown,
            )
            for row, i in enumerate(keep):
                translations[i] = decoded[row]
            if return_attention:
                eos = self.target_tokenizer.eos_id
                weights = self._alignments(source, tokens)
                for row, i in enumerate(keep):
                    out = tokens[row].tolist()
                    n_out = out.index(eos) + 1 if eos in out else len(out)
                    n_src = int(np.sum(source[row] != 0))
                    attentions[i] = {
                        "source_tokens": source_tok.tokenize(texts[i])
                        + [source_tok.vocabulary.id_to_token(source_tok.eos_id)],
                        "output_tokens": [
                            self.target_tokenizer.vocabulary.id_to_token(t)
                            for t in out[:n_out]
                        ],
                        "weights": weights[row, :n_out, :n_src],
                    }
        result = translations[0] if single else translations
        if return_attention:
            return result, (attentions[0] if single else attentions)
        return result

    def generate(
        self, inputs, max_length=None, max_new_tokens=None, strip_prompt=False
    ):
        """Target texts for source texts, decoded with `compile(sampler=...)`.

        keras-hub's `Seq2SeqLM.generate`: the sampler set by `compile` (greedy
        search if none), strings in and strings out. `translate` does the same
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
        owner = self._caller("generate")
        if max_length is not None and max_new_tokens is not None:
            raise ValueError(
                f"{owner}: give `max_length` or `max_new_tokens`, not both. "
                f"Received: max_length={max_length}, max_new_tokens={max_new_tokens}"
            )
        limit = max_length if max_new_tokens is None else max_new_tokens
        limit = self._positive_int("max_length", limit, allow_none=True)
        sampler = getattr(self, "_sampler", None)
        if sampler is None or (
            not is_keras_hub_sampler(sampler) and sampler["method"] != "sample"
        ):
            beam_size = 1 if sampler is None else sampler.get("beam_size", 1)
            return self.translate(inputs, beam_size=beam_size, max_length=limit)
        texts, single, _ = self._read_texts(inputs, "generate")
        source_tok = self.source_tokenizer
        keep = [i for i, t in enumerate(texts) if t.strip() and source_tok.encode(t)]
        outputs = [""] * len(texts)
        if keep:
            source = self.encode_source([texts[i] for i in keep])
            if limit is None:
                limit = min(self.max_target_length, 2 * source.shape[1] + 10)
            tokens = self._sampled_ids(sampler, source, limit)
            for row, i in enumerate(keep):
                outputs[i] = self.target_tokenizer.decode(tokens[row])
        return outputs[0] if single else outputs

    def _sampled_ids(self, sampler, source, max_length):
        """Tokens `(B, max_length)` drawn by a sampling `sampler` (a settings
        dict or a keras-hub sampler)."""
        bos, eos = self.target_tokenizer.bos_id, self.target_tokenizer.eos_id
        if is_keras_hub_sampler(sampler):
            prompt = np.zeros((source.shape[0], max_length + 1), "int32")
            prompt[:, 0] = bos
            with no_grad():
                state = self.initial_state(source)
                tokens = run_keras_hub_sampler(
                    sampler, self.next_fn, state, prompt, 1, eos, model=self
                )
            return tokens[:, 1:]
        settings = (sampler.get("top_k"), sampler.get("top_p"))

        def make():
            from keras_rnnattn.decoding.sampling import sample_with_uniforms

            def search(source_ids, uniforms):
                state = self.initial_state(source_ids)
                start = ops.full((ops.shape(source_ids)[0],), bos, dtype="int32")
                return sample_with_uniforms(
                    self.next_fn, state, start, eos, uniforms, 1.0, *settings
                )

            return search

        uniforms = draw_uniforms((max_length, source.shape[0]))  # (L, B)
        search = self._compiled(("sample", max_length) + settings, make)
        tokens, _ = search(source, uniforms)
        return ops.convert_to_numpy(tokens)

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
        self, text, beam_size=1, max_length=None, ax=None, length_penalty=0.0
    ):
        """A heat map of the attention weights of one translation.

        Args:
            text: str, the source.
            beam_size, max_length, length_penalty: as in `translate`.
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
    exports_beam_search = True

    @property
    def export_length_limit(self):
        """The longest source `keras_rnnattn.export` accepts: `max_source_length`."""
        return self.max_source_length

    def check_export_options(self, options):
        """The export options with `max_length` defaulting to `max_target_length`."""
        if options.get("max_length") is None:
            options["max_length"] = self.max_target_length
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

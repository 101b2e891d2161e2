"""`TextTask`: the text-in, text-out shell that every application model shares."""

import keras
import numpy as np

from keras_rnnattn._backend import compiled, own_trace_counts
from keras_rnnattn.layers.attention_decoder import CELLS
from keras_rnnattn.layers.masked_sequence import PaddingMask
from keras_rnnattn.models._task_loading import (
    build_optimizer_as_saved,
    initializers_while_loading,
)
from keras_rnnattn.models._text_datasets import encode_text_dataset, is_text_dataset
from keras_rnnattn.models.endpoint import (  # noqa: F401 (re-exported)
    Endpoint,
    flatten_state,
    state_inputs,
    unflatten_state,
)
from keras_rnnattn.models.task_contract import TaskContract
from keras_rnnattn.presets.mixin import PresetMixin
from keras_rnnattn.text import inputs as text_inputs
from keras_rnnattn.text.serialization import deserialize_tokenizer, serialize_tokenizer


def _dataset_batch_size(x, kwargs):
    """`batch_size` from `fit`/`evaluate`/`predict`'s keyword arguments where
    `x` is a dataset of texts (which may be unbatched; Keras itself takes no
    `batch_size` with a dataset): taken out of `kwargs` then."""
    if is_text_dataset(x):
        return kwargs.pop("batch_size", None)
    return None


def embedding_initializer():
    """N(0, 1) token embeddings, as in PyTorch's `nn.Embedding`.

    Keras's default, U(-0.05, 0.05), feeds an RNN inputs so small that its
    states start near zero and alike at every position; attention over them then
    has nothing to tell positions apart and learns far more slowly.
    """
    return keras.initializers.RandomNormal(stddev=1.0)


def embedding_and_mask(vocabulary_size, embedding_dim, pad_id):
    """The input block of the functional application models.

    Makes the layers `"padding_mask"` (a `PaddingMask`) and `"token_embedding"`
    (N(0, 1) initialised), in this order and with these names, which the
    weights files of the shipped presets hold, and applies them to a new input.

    Args:
        vocabulary_size: int, the number of token ids.
        embedding_dim: int, the size of the token embeddings.
        pad_id: int, the padding id (padding comes at the end of each row).

    Returns:
        `(token_ids, mask, x, token_embedding)`: the `keras.Input` `(B, S)`, the
        boolean mask of the real tokens `(B, S)`, the embeddings
        `(B, S, embedding_dim)` and the embedding layer.

    Example:

    >>> token_ids, mask, x, layer = embedding_and_mask(10, 4, pad_id=0)
    >>> tuple(x.shape), layer.name
    ((None, None, 4), 'token_embedding')
    """
    padding_mask = PaddingMask(pad_id, name="padding_mask")
    token_embedding = keras.layers.Embedding(
        vocabulary_size,
        embedding_dim,
        embeddings_initializer=embedding_initializer(),
        name="token_embedding",
    )
    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    mask = padding_mask(token_ids)  # (B, S)
    x = token_embedding(token_ids)  # (B, S, embedding_dim)
    return token_ids, mask, x, token_embedding


class TextTask(PresetMixin):
    """The base of the application models: texts or token ids in, texts out.

    A mixin over `keras.Model`: declare `class MyTask(TextTask, keras.Model)`.
    (Keras puts its `Functional` class into the bases of a functional model's
    class, all the way up to `keras.Model`; a `keras.Model` base shared by
    functional and subclassed models would turn into a functional one.)

    What it gives a model:

    - `fit`, `evaluate` and `predict` that take texts, token ids or a
      `tf.data.Dataset`, through the hook `preprocess_samples`, with
      `validation_data` read the same way, and errors that name the model's
      class and method (`"AttentionClassifier.fit: ..."`);
    - `compile` whose `"auto"` loss and metrics come from `compile_defaults`,
      and `compile_from_config`, `get_config` (subclasses `update` it) and
      `from_config`;
    - `task_contract`, a `TaskContract` each subclass declares: its text
      method, input tokenizer and export options;
    - `export_endpoints`, what `keras_rnnattn.export` serves (by default
      `serving_default`, token ids to probabilities), and
      `check_export_options`;
    - construction helpers: before `super().__init__`, `_resolve_vocabulary`
      (or `_resolve_text`, which also checks `cell` and `max_length`),
      `_resolve_names`, `_check_choice`, `_check_max_length` and the function
      `embedding_and_mask`; after it, `_set_text_config` and
      `_set_attention_output`;
    - for the methods: `_read_texts` and `_encode_padded` (texts in), the
      attention read-out `_attention_model` and a cache of compiled functions
      `_compiled`.

    Empty input: the string-level methods (`classify`, `tag`, `explain`,
    `generate`, ...) return empty results for an empty list of texts (read it
    with `_read_texts`); `fit`, `evaluate` and `predict` refuse an empty batch
    with one `ValueError`.

    Example:

    >>> import numpy as np
    >>> class Counter(TextTask, keras.Model):
    ...     def __init__(self, **kwargs):
    ...         token_ids, mask, x, _ = embedding_and_mask(10, 2, pad_id=0)
    ...         outputs = keras.layers.Dense(2, activation="softmax")(x[:, 0])
    ...         super().__init__(inputs=token_ids, outputs=outputs, **kwargs)
    ...     def preprocess_samples(self, x, y=None, owner=None, with_targets=True):
    ...         return text_inputs.check_token_ids(x, 10, owner), y
    >>> Counter().predict(np.array([[1, 2, 0]]), verbose=0).shape
    (1, 2)
    """

    # --- Construction helpers, called before `super().__init__` ---------------
    @classmethod
    def _resolve_vocabulary(cls, tokenizer, vocabulary_size):
        """`(tokenizer, vocabulary_size, pad_id)`: the tokenizer rebuilt from
        its config where needed, the vocabulary size (by default the
        tokenizer's) and the padding id (the tokenizer's, else 0)."""
        tokenizer = deserialize_tokenizer(tokenizer)
        if vocabulary_size is None:
            if tokenizer is None:
                raise ValueError(
                    f"{cls.__name__} needs `vocabulary_size` or a `tokenizer`. "
                    "Received: vocabulary_size=None, tokenizer=None"
                )
            vocabulary_size = int(tokenizer.vocabulary_size)
        pad_id = 0 if tokenizer is None else int(tokenizer.pad_id)
        return tokenizer, vocabulary_size, pad_id

    @classmethod
    def _resolve_text(
        cls, tokenizer, vocabulary_size, cell, max_length, min_length=1, optional=True
    ):
        """`_resolve_vocabulary`, with the checks of the RNN `cell` (`"gru"` or
        `"lstm"`) and of `max_length` (an int >= `min_length`, or None where
        `optional`) that the single-text models share."""
        cls._check_choice("cell", cell, CELLS)
        cls._check_max_length(max_length, min_length, allow_none=optional)
        return cls._resolve_vocabulary(tokenizer, vocabulary_size)

    @classmethod
    def _resolve_names(cls, names, count, names_arg, count_arg, minimum):
        """`(names, count)` for the label or tag set: `names` as distinct strings
        (or None) and their number, checked against `count`."""
        if names is not None:
            names = [str(name) for name in names]
            if not names or len(set(names)) != len(names):
                raise ValueError(
                    f"`{names_arg}` must be distinct strings. "
                    f"Received: {names_arg}={names}"
                )
            if count is not None and count != len(names):
                raise ValueError(
                    f"`{count_arg}` ({count}) must equal len({names_arg}) "
                    f"({len(names)}). Received: {names_arg}={names}"
                )
            count = len(names)
        if not isinstance(count, int) or count < minimum:
            raise ValueError(
                f"{cls.__name__} needs `{count_arg}` (an int >= {minimum}) or "
                f"`{names_arg}`. Received: {count_arg}={count}"
            )
        return names, count

    @staticmethod
    def _check_choice(name, value, choices):
        if value not in choices:
            raise ValueError(
                f"`{name}` must be one of {choices}. Received: {name}={value!r}"
            )

    @staticmethod
    def _check_max_length(max_length, minimum=1, allow_none=True):
        if max_length is None and allow_none:
            return
        if not isinstance(max_length, int) or max_length < minimum:
            none = "None or " if allow_none else ""
            raise ValueError(
                f"`max_length` must be {none}an int >= {minimum}. "
                f"Received: max_length={max_length}"
            )

    def _set_attention_output(self, attention):
        """Keeps the graph tensor of the attention weights (or None) for
        `_attention_model`, out of Keras's attribute tracking."""
        object.__setattr__(self, "_attention_tensor", attention)
        object.__setattr__(self, "_explainer", None)

    # --- Config -----------------------------------------------------------------
    def _set_text_config(
        self, vocabulary, embedding_dim, units, cell, dropout, max_length
    ):
        """Keeps the arguments every single-text model has; `get_config` then
        holds them. `vocabulary` is `_resolve_text`'s
        `(tokenizer, vocabulary_size, pad_id)`."""
        tokenizer, vocabulary_size, pad_id = vocabulary
        self.vocabulary_size = vocabulary_size
        self.tokenizer = tokenizer
        self.embedding_dim = embedding_dim
        self.units = units
        self.cell = cell
        self.dropout = float(dropout)
        self.max_length = max_length
        self.pad_id = pad_id
        object.__setattr__(self, "_has_text_config", True)

    def get_config(self):
        """`name` and `trainable`, and the text arguments of `_set_text_config`
        where the model kept them; subclasses `update` it with their own."""
        config = {"name": self.name, "trainable": self.trainable}
        if getattr(self, "_has_text_config", False):
            config.update(
                {
                    "vocabulary_size": self.vocabulary_size,
                    "tokenizer": serialize_tokenizer(self.tokenizer),
                    "embedding_dim": self.embedding_dim,
                    "units": self.units,
                    "cell": self.cell,
                    "dropout": self.dropout,
                    "max_length": self.max_length,
                }
            )
        return config

    @classmethod
    def from_config(cls, config):
        with initializers_while_loading(config):
            return cls(**config)

    def compile_defaults(self):
        """`(loss, metrics)` that `compile` uses for `"auto"`."""
        return "sparse_categorical_crossentropy", ["accuracy"]

    def compile(self, optimizer="adam", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with the model's defaults (`compile_defaults`)
        for `loss="auto"` and `metrics="auto"`."""
        default_loss, default_metrics = self.compile_defaults()
        if isinstance(loss, str) and loss == "auto":
            loss = default_loss
        if isinstance(metrics, str) and metrics == "auto":
            metrics = default_metrics
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        # The saved config holds the concrete loss and metrics `compile` chose.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            build_optimizer_as_saved(self.optimizer, self.trainable_variables)

    # --- Samples ----------------------------------------------------------------
    def preprocess_samples(self, x, y=None, owner=None, with_targets=True):
        """Inputs and targets as Keras reads them: the hook under `fit`,
        `evaluate` and `predict` (and their `validation_data`).

        Args:
            x: what the caller passed: texts, token ids or a `tf.data.Dataset`.
            y: the targets, or None.
            owner: str, the caller to name in errors (`"MyTask.fit"`).
            with_targets: bool, False for `predict`, whose dataset may hold
                inputs alone.

        Returns:
            `(x, y)`, checked NumPy arrays (or the dataset, checked or mapped).
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement preprocess_samples(x, y, "
            "owner, with_targets)."
        )

    def _caller(self, method):
        return f"{type(self).__name__}.{method}"

    def _samples(self, x, y, method, with_targets=True, batch_size=None):
        owner = self._caller(method)
        if isinstance(x, (list, tuple, np.ndarray)) and len(x) == 0:
            raise ValueError(
                f"{owner}: received no samples (an empty batch). Pass at least "
                "one text, one row of token ids, or a tf.data.Dataset."
            )
        if is_text_dataset(x):
            if y is not None:
                raise ValueError(
                    f"{owner}: with a dataset, the targets come from the dataset "
                    "(elements (texts, targets)); pass y=None."
                )
            return self._text_dataset(x, owner, with_targets, batch_size), None
        return self.preprocess_samples(x, y, owner, with_targets=with_targets)

    def _text_dataset(self, dataset, owner, with_targets, batch_size=None):
        """A `tf.data.Dataset` of texts tokenized in the pipeline, each batch
        read by `preprocess_samples` as a list of texts is (see
        `keras_rnnattn.models._text_datasets`)."""

        def preprocess(texts, targets):
            return self.preprocess_samples(
                texts, targets, owner, with_targets=with_targets
            )

        return encode_text_dataset(
            dataset,
            preprocess,
            owner,
            with_targets=with_targets,
            batch_size=batch_size,
            bucketed=with_targets,
            pad_id=getattr(self, "pad_id", 0),
            max_length=getattr(self, "max_length", None),
        )

    def _validation_samples(self, data, owner):
        """`validation_data` read as `fit`'s samples: a dataset, `(x, y)` or
        `(x, y, sample_weight)`, or bare texts where the targets come from the
        texts themselves (a language model)."""
        owner = f"{owner} (validation_data)"
        if is_text_dataset(data):
            return self._text_dataset(data, owner, True)
        if text_inputs.as_dataset(data) is not None or text_inputs.is_text(data):
            x, y = self.preprocess_samples(data, None, owner)
            if y is None and text_inputs.is_text(data):
                raise ValueError(
                    f"{owner}: texts alone have no targets here; pass (texts, targets)."
                )
            return x if y is None else (x, y)
        if isinstance(data, (tuple, list)) and len(data) in (2, 3):
            x, y = self.preprocess_samples(data[0], data[1], owner)
            return (x, y) + tuple(data[2:])
        return data

    def fit(self, x=None, y=None, *args, validation_data=None, **kwargs):
        """`keras.Model.fit` that also takes texts (see `preprocess_samples`).

        Args:
            x: texts (a list or array of strings), token ids `(N, S)`, or a
                `tf.data.Dataset` of ids and targets, or of texts and targets
                (strings or numbers), batched or one per element. A dataset
                of texts is tokenized in the pipeline, batch by batch, as a
                list of the same texts would be (it streams: nothing is read
                ahead); an unbatched one is batched into buckets of similar
                length, `batch_size` (default 32) per batch.
            y: the targets (strings where the model has their names); None
                with a dataset.
            *args, validation_data, **kwargs: as `keras.Model.fit`;
                `validation_data` is read as `x` and `y` are.

        Returns:
            The `History` of `keras.Model.fit`.
        """
        batch_size = _dataset_batch_size(x, kwargs)
        x, y = self._samples(x, y, "fit", batch_size=batch_size)
        validation_data = self._validation_samples(validation_data, self._caller("fit"))
        if hasattr(x, "element_spec") and not args:
            # A dataset is shuffled (or not) by its pipeline: Keras's default
            # shuffle=True does not apply to it, and it warns if passed.
            kwargs.setdefault("shuffle", False)
        return super().fit(x, y, *args, validation_data=validation_data, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate` that also takes texts, as `fit` does."""
        batch_size = _dataset_batch_size(x, kwargs)
        x, y = self._samples(x, y, "evaluate", batch_size=batch_size)
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        """`keras.Model.predict` that also takes texts: the model's outputs.

        `x` is texts, token ids `(N, S)`, or a `tf.data.Dataset` of ids or of
        texts (batched or not; alone or with targets), in order.
        """
        batch_size = _dataset_batch_size(x, kwargs)
        x, _ = self._samples(
            x, None, "predict", with_targets=False, batch_size=batch_size
        )
        return super().predict(x, *args, **kwargs)

    def make_predict_function(self, force=False):
        # Each model's predict function counts its own TensorFlow traces.
        super().make_predict_function(force)
        self.predict_function = own_trace_counts(self.predict_function)
        return self.predict_function

    # --- Strings ----------------------------------------------------------------
    def _encode_padded(self, items, owner):
        """`(encoded, ids)`: `_encode_texts`'s lists and their padded `(N, S)`."""
        encoded = self._encode_texts(items, owner)
        return encoded, text_inputs.pad(encoded, self.pad_id)

    def _read_texts(self, texts, method):
        """`(items, single, owner)` for a string-level method: the texts as a
        list (empty for an empty batch, which the method answers with empty
        results), whether one string was given, and the caller's name."""
        owner = self._caller(method)
        items, single = text_inputs.as_text_list(texts, owner, allow_empty=True)
        return items, single, owner

    def _encode_texts(self, items, owner):
        """Token ids of each text, cut to `max_length` (warned once), unpadded."""
        return text_inputs.encode_texts(
            self.tokenizer, items, owner, max_length=self.max_length, model=self
        )

    # --- Compiled functions -----------------------------------------------------
    def _attention_model(self):
        """`keras.Model(inputs, [outputs, attention])`, made once."""
        if getattr(self, "_attention_tensor", None) is None:
            raise ValueError(f"{type(self).__name__} has no attention weights.")
        if self._explainer is None:
            model = keras.Model(self.inputs, [self.outputs[0], self._attention_tensor])
            object.__setattr__(self, "_explainer", model)
        return self._explainer

    def _compiled(self, key, make_fn):
        """`compiled(self, make_fn())`, made once per `key` (a hashable setting)."""
        # A plain dict outside Keras attribute tracking.
        cache = self.__dict__.setdefault("_compiled_fns", {})
        if key not in cache:
            cache[key] = compiled(self, make_fn())
        return cache[key]

    # --- Export -----------------------------------------------------------------
    # What the class declares about its text methods and export options, read
    # by the CLI, `keras_rnnattn.export` and the test harness; each
    # application model declares its own.
    task_contract = TaskContract("predict")

    @property
    def export_length_limit(self):
        """The longest input `keras_rnnattn.export` accepts: `max_length`, or None."""
        return getattr(self, "max_length", None)

    def check_export_options(self, options):
        """`keras_rnnattn.export`'s checked options, completed for this model.

        Args:
            options: dict of `export_model`'s options (`batch_size`,
                `sequence_length`, `max_length`, ...).

        Returns:
            The options (the default changes nothing).
        """
        return options

    def export_endpoints(self, options):
        """The functions `keras_rnnattn.export` serves.

        Args:
            options: dict of checked export options (`batch_size` and
                `sequence_length`, None where variable).

        Returns:
            A list of `Endpoint`; by default `serving_default`, token ids
            `(B, S)` to the model's output as `"probabilities"`.
        """
        shape = (options["batch_size"], options["sequence_length"])

        def probabilities(token_ids):
            return {"probabilities": self(token_ids, training=False)}

        return [
            Endpoint(
                "serving_default",
                probabilities,
                {"token_ids": (shape, "int32")},
                "token ids -> probabilities",
            )
        ]

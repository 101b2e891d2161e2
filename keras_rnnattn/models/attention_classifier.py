"""A text classifier: an RNN encoder, attention pooling over time, a softmax head."""

import keras
import numpy as np

import keras_rnnattn.models._apps_text as text_utils
from keras_rnnattn.layers.attention_pooling import AttentionPooling
from keras_rnnattn.models._apps_layers import (
    LastOutput,
    MaskedMean,
    PaddingMask,
    embedding_initializer,
    recurrent_encoder,
)
from keras_rnnattn.preset_mixin import PresetMixin

POOLINGS = ("attention", "structured", "mean", "last")
CELLS = ("gru", "lstm")


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class AttentionClassifier(PresetMixin, keras.Model):
    """Classifies texts with attention pooling over the outputs of an RNN.

    1. token ids `(B, S)` -> Embedding -> (Bi)GRU or (Bi)LSTM outputs H `(B, S, h)`;
    2. attention pooling: a Dense `h -> 1` scores each step (its kernel is the
       learned query), a softmax over the real (unpadded) steps gives the weights
       a `(B, S)`, and Σ_s a_s H_s `(B, h)` is the pooled vector;
    3. the pooled vector is concatenated with the RNN's last output (`concat_last`);
    4. Dense -> softmax over the classes (or a sigmoid per label, `multi_label`).

    `pooling="structured"` is Lin et al.'s multi-hop form (`hops`,
    `attention_units`, `penalty`); `"mean"` and `"last"` are the baselines to
    compare against (mean of the outputs, last output alone).

    Strings in and out: with a `tokenizer` (from `keras_rnnattn.text`) and
    `labels`, `fit`, `evaluate` and `predict` take texts and label strings as
    well as token ids, and `classify`, `explain` and `plot_attention` read texts.
    Token ids are padded at the end with the tokenizer's pad id (0). The
    tokenizer and labels are part of the config, so `keras.models.load_model`
    restores a classifier that reads strings.

    Bad input: an empty text (or one with no tokens) raises `ValueError`; a text
    of unknown words only is classified from its unknown-token ids (the result
    carries little information); a text longer than `max_length` tokens is cut to
    its first `max_length` tokens (with a warning, once per model); labels or
    token ids outside the model's sets raise `ValueError` in
    `fit`/`evaluate`/`predict`. A `tf.data.Dataset` must
    yield batches of int token ids `(batch, length)` and labels (class indices,
    or label strings that the model maps through `labels`); one of texts, or
    one that is not batched, raises a `ValueError` that names the fix.

    Args:
        vocabulary_size: int, the number of token ids (default: the tokenizer's).
        num_classes: int, the number of classes (default: `len(labels)`).
        labels: optional list of label strings, one per class.
        tokenizer: optional `keras_rnnattn.text` tokenizer (or its serialized
            form `{"class_name", "config"}`).
        embedding_dim: int, the size of the token embeddings.
        units: int, the RNN units (per direction).
        cell: `"gru"` or `"lstm"`.
        bidirectional: bool, a bidirectional RNN.
        pooling: `"attention"`, `"structured"`, `"mean"` or `"last"`.
        hops: int, the attention rows of `pooling="structured"`.
        attention_units: int, the hidden size of `pooling="structured"`
            (default: `units`).
        penalty: float, the ‖AAᵀ - I‖² weight of `pooling="structured"`.
        concat_last: bool, concatenate the last RNN output to the pooled vector
            (attention poolings only).
        multi_label: bool, independent sigmoid outputs (several labels per text).
        dropout: float in [0, 1), dropout before the output layer.
        max_length: optional int, texts are cut to this many tokens.
        **kwargs: base model arguments (`name`, `trainable`).

    Example:

    >>> import numpy as np
    >>> clf = AttentionClassifier(vocabulary_size=20, num_classes=2, units=8)
    >>> clf.compile()
    >>> ids = np.array([[3, 5, 7, 0], [4, 4, 0, 0]], "int32")
    >>> _ = clf.fit(ids, np.array([0, 1]), epochs=1, verbose=0)
    >>> clf.predict(ids, verbose=0).shape
    (2, 2)
    """

    def __init__(
        self,
        vocabulary_size=None,
        num_classes=None,
        labels=None,
        tokenizer=None,
        embedding_dim=32,
        units=32,
        cell="gru",
        bidirectional=True,
        pooling="attention",
        hops=1,
        attention_units=None,
        penalty=0.0,
        concat_last=True,
        multi_label=False,
        dropout=0.0,
        max_length=None,
        **kwargs,
    ):
        tokenizer = text_utils.deserialize_tokenizer(tokenizer)
        if vocabulary_size is None:
            if tokenizer is None:
                raise ValueError(
                    "AttentionClassifier needs `vocabulary_size` or a `tokenizer`. "
                    "Received: vocabulary_size=None, tokenizer=None"
                )
            vocabulary_size = int(tokenizer.vocabulary_size)
        if labels is not None:
            labels = [str(label) for label in labels]
            if len(set(labels)) != len(labels) or not labels:
                raise ValueError(
                    f"`labels` must be distinct strings. Received: labels={labels}"
                )
            if num_classes is not None and num_classes != len(labels):
                raise ValueError(
                    f"`num_classes` ({num_classes}) must equal len(labels) "
                    f"({len(labels)}). Received: labels={labels}"
                )
            num_classes = len(labels)
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(
                "AttentionClassifier needs `num_classes` (an int >= 1) or `labels`. "
                f"Received: num_classes={num_classes}"
            )
        if num_classes == 1 and not multi_label:
            raise ValueError(
                "A softmax over one class is constant: use num_classes=2 or "
                "multi_label=True. Received: num_classes=1"
            )
        if pooling not in POOLINGS:
            raise ValueError(
                f"`pooling` must be one of {POOLINGS}. Received: pooling={pooling!r}"
            )
        if cell not in CELLS:
            raise ValueError(f"`cell` must be one of {CELLS}. Received: cell={cell!r}")
        if max_length is not None and (
            not isinstance(max_length, int) or max_length < 1
        ):
            raise ValueError(
                f"`max_length` must be None or an int >= 1. Received: {max_length}"
            )
        pad_id = 0 if tokenizer is None else int(tokenizer.pad_id)

        # === Layers ===
        padding_mask = PaddingMask(pad_id, name="padding_mask")
        token_embedding = keras.layers.Embedding(
            vocabulary_size,
            embedding_dim,
            embeddings_initializer=embedding_initializer(),
            name="token_embedding",
        )
        encoder = recurrent_encoder(cell, units, bidirectional, name="encoder")
        last_output = LastOutput(
            backward_units=units if bidirectional else None, name="last_output"
        )
        if pooling == "attention":
            pooling_layer = AttentionPooling(name="attention_pooling")
        elif pooling == "structured":
            pooling_layer = AttentionPooling(
                units=attention_units or units,
                hops=hops,
                penalty=penalty,
                name="attention_pooling",
            )
        elif pooling == "mean":
            pooling_layer = MaskedMean(name="mean_pooling")
        else:
            pooling_layer = None
        dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        # The head computes in float32 under any policy: float16 probabilities
        # saturate to 0 or 1, and the loss's gradient 1/p then overflows.
        output_dense = keras.layers.Dense(
            num_classes,
            activation="sigmoid" if multi_label else "softmax",
            dtype="float32",
            name="output_dense",
        )

        # === Functional model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        mask = padding_mask(token_ids)  # (B, S)
        x = token_embedding(token_ids)  # (B, S, embedding_dim)
        # A forward RNN needs no mask: padding comes last and never changes the
        # outputs at real steps. The backward half of a BiRNN does need it.
        hidden = encoder(x, mask=mask if bidirectional else None)  # (B, S, h)
        last = last_output(hidden, mask=mask)  # (B, h)
        attention = None
        if pooling in ("attention", "structured"):
            pooled, attention = pooling_layer(
                hidden, mask=mask, return_attention_scores=True
            )  # (B, hops * h), (B, S) or (B, hops, S)
            features = pooled
            if concat_last:
                features = keras.layers.Concatenate(name="concat_last")(
                    [pooled, last]
                )  # (B, hops * h + h)
        elif pooling == "mean":
            features = pooling_layer(hidden, mask=mask)  # (B, h)
        else:
            features = last  # (B, h)
        outputs = output_dense(dropout_layer(features))  # (B, num_classes)
        super().__init__(inputs=token_ids, outputs=outputs, **kwargs)
        self.token_embedding = token_embedding
        self.encoder = encoder
        self.pooling_layer = pooling_layer
        self.output_dense = output_dense
        # Kept out of Keras's tracking: the graph tensor of the attention weights.
        object.__setattr__(self, "_attention_tensor", attention)
        object.__setattr__(self, "_explainer", None)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_classes = num_classes
        self.labels = labels
        self.tokenizer = tokenizer
        self.embedding_dim = embedding_dim
        self.units = units
        self.cell = cell
        self.bidirectional = bool(bidirectional)
        self.pooling = pooling
        self.hops = hops
        self.attention_units = attention_units
        self.penalty = float(penalty)
        self.concat_last = bool(concat_last)
        self.multi_label = bool(multi_label)
        self.dropout = float(dropout)
        self.max_length = max_length

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "vocabulary_size": self.vocabulary_size,
            "num_classes": self.num_classes,
            "labels": self.labels,
            "tokenizer": text_utils.serialize_tokenizer(self.tokenizer),
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "cell": self.cell,
            "bidirectional": self.bidirectional,
            "pooling": self.pooling,
            "hops": self.hops,
            "attention_units": self.attention_units,
            "penalty": self.penalty,
            "concat_last": self.concat_last,
            "multi_label": self.multi_label,
            "dropout": self.dropout,
            "max_length": self.max_length,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def compile(self, optimizer="adam", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with defaults for the head.

        `loss="auto"` is sparse categorical cross-entropy (binary cross-entropy
        with `multi_label`); `metrics="auto"` is accuracy.
        """
        if loss == "auto":
            loss = (
                "binary_crossentropy"
                if self.multi_label
                else "sparse_categorical_crossentropy"
            )
        if metrics == "auto":
            metrics = ["binary_accuracy" if self.multi_label else "accuracy"]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        # The saved config holds the concrete loss and metrics `compile` chose.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    # --- Inputs: strings or checked ids --------------------------------------
    def _ids(self, x, owner):
        if text_utils.is_text(x):
            texts, _ = text_utils.as_text_list(x, owner)
            encoded = text_utils.encode_texts(
                self.tokenizer, texts, owner, max_length=self.max_length, model=self
            )
            return text_utils.pad(encoded, int(self.tokenizer.pad_id))
        return text_utils.check_token_ids(x, self.vocabulary_size, owner)

    def _targets(self, y, owner):
        text_utils.check_label_batch(y, owner)
        if y is None or not isinstance(y, (np.ndarray, list, tuple)):
            return y
        if self.multi_label:
            return self._multi_hot(y, owner)
        if text_utils.is_text(y):
            return self._label_ids(list(np.asarray(y, dtype=object).ravel()), owner)
        array = np.asarray(y)
        if array.dtype.kind not in ("i", "u", "f", "b") or (
            array.dtype.kind == "f" and not np.all(array == np.round(array))
        ):
            raise ValueError(
                f"{owner}: labels must be class indices in [0, {self.num_classes}) "
                f"or label strings of {self.labels}. Received dtype {array.dtype}"
            )
        if array.ndim == 2 and array.shape[1] == 1:
            array = array[:, 0]
        if array.ndim != 1:
            raise ValueError(
                f"{owner}: labels must have shape (batch,) (class indices). "
                f"Received shape {array.shape}"
            )
        bad = (array < 0) | (array >= self.num_classes)
        if np.any(bad):
            raise ValueError(
                f"{owner}: labels must be class indices in [0, {self.num_classes}). "
                f"Received: {sorted(set(array[bad].tolist()))}"
            )
        return array.astype("int32")

    def _label_ids(self, names, owner):
        if self.labels is None:
            raise ValueError(
                f"{owner}: label strings need the model's `labels`; this model has "
                f"none, so pass class indices. Received: {names[:3]}"
            )
        index = text_utils.label_index(self.labels)
        unknown = sorted({n for n in names if n not in index})
        if unknown:
            raise ValueError(
                f"{owner}: labels outside the label set {self.labels}. "
                f"Received: {unknown}"
            )
        return np.array([index[n] for n in names], dtype="int32")

    def _multi_hot(self, y, owner):
        rows = list(y)
        if rows and all(isinstance(r, (list, tuple, set)) for r in rows):
            flat = [str(item) for row in rows for item in row]
            if flat and all(isinstance(item, str) for row in rows for item in row):
                out = np.zeros((len(rows), self.num_classes), "float32")
                for i, row in enumerate(rows):
                    ids = self._label_ids([str(item) for item in row], owner)
                    out[i, ids] = 1.0
                return out
        array = np.asarray(y, dtype="float32")
        if array.ndim != 2 or array.shape[1] != self.num_classes:
            raise ValueError(
                f"{owner}: multi-label targets must be multi-hot of shape (batch, "
                f"{self.num_classes}) or lists of label strings. "
                f"Received shape {array.shape}"
            )
        if not np.all((array == 0) | (array == 1)):
            raise ValueError(
                f"{owner}: multi-hot targets must be 0 or 1. Received values "
                f"{sorted(set(array[(array != 0) & (array != 1)].tolist()))[:5]}"
            )
        return array

    def _dataset(self, dataset, owner, with_targets):
        """Checks a tf.data.Dataset, its label strings mapped to class ids."""
        x_spec, y_spec, _ = text_utils.dataset_parts(dataset, owner, with_targets)
        text_utils.check_ids_spec(x_spec, owner)
        dtype = getattr(y_spec, "dtype", None)
        if dtype is None or dtype.name != "string":
            return dataset
        if self.labels is None or self.multi_label:
            raise ValueError(
                f"{owner}: the dataset's labels are strings, which need the model's "
                "`labels` (single-label): map them to class indices in the dataset, "
                f"or build the model with `labels=`. Received: {y_spec}"
            )
        return text_utils.map_label_strings(dataset, self.labels, owner)

    def _prepare(self, x, y, owner):
        if text_utils.as_dataset(x) is not None:
            return self._dataset(x, owner, with_targets=True), y
        x = self._ids(x, owner)
        y = self._targets(y, owner)
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            if len(x) != len(y):
                raise ValueError(
                    f"{owner}: {len(x)} inputs but {len(y)} labels: give one "
                    "label per text."
                )
        return x, y

    def _prepare_validation(self, data):
        if text_utils.as_dataset(data) is not None:
            return self._dataset(data, "validation_data", with_targets=True)
        if isinstance(data, (tuple, list)) and len(data) in (2, 3):
            x, y = self._prepare(data[0], data[1], "validation_data")
            return (x, y) + tuple(data[2:])
        return data

    def fit(self, x=None, y=None, *args, validation_data=None, **kwargs):
        """`keras.Model.fit` that also takes texts and label strings.

        Args:
            x: texts (a list of strings), token ids `(N, S)`, or a
                `tf.data.Dataset` of batches `(ids, labels)`: ids int
                `(batch, length)`, labels class indices `(batch,)` or label
                strings of `labels` (mapped to their indices here), multi-hot
                `(batch, C)` with `multi_label`. Build it with
                `tokenizer.to_tf_dataset(texts, labels).batch(n)`.
            y: labels, one per text: label strings or class indices (lists of
                label strings or multi-hot rows with `multi_label`); None with
                a dataset.
            *args, validation_data, **kwargs: as `keras.Model.fit`;
                `validation_data` may hold texts and label strings too.

        Returns:
            The `History` of `keras.Model.fit`.
        """
        x, y = self._prepare(x, y, "AttentionClassifier.fit")
        validation_data = self._prepare_validation(validation_data)
        return super().fit(x, y, *args, validation_data=validation_data, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate` that also takes texts and label strings."""
        x, y = self._prepare(x, y, "AttentionClassifier.evaluate")
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        """`keras.Model.predict` that also takes texts: probabilities `(N, C)`.

        `x` is texts, token ids `(N, S)` or a `tf.data.Dataset` of batches of
        ids `(batch, length)` (alone or with labels).
        """
        owner = "AttentionClassifier.predict"
        if text_utils.as_dataset(x) is not None:
            x = self._dataset(x, owner, with_targets=False)
            return super().predict(x, *args, **kwargs)
        x = self._ids(x, owner)
        return super().predict(x, *args, **kwargs)

    # --- Strings out -----------------------------------------------------------
    def classify(self, texts, threshold=0.5, batch_size=32):
        """Labels and class probabilities of texts.

        Args:
            texts: a string or a list of strings.
            threshold: float, the probability above which a label is given
                (`multi_label` only).
            batch_size: int.

        Returns:
            `(labels, probabilities)`: for a list of texts, a list of labels
            (label strings, or class indices without `labels`; with
            `multi_label`, a list of labels per text) and a `(N, C)` array; for a
            single string, its label and a `(C,)` array.
        """
        owner = "AttentionClassifier.classify"
        items, single = text_utils.as_text_list(texts, owner)
        probs = self.predict(items, batch_size=batch_size, verbose=0)  # (N, C)
        names = self.labels or list(range(self.num_classes))
        if self.multi_label:
            predicted = [
                [names[j] for j in np.flatnonzero(p >= threshold)] for p in probs
            ]
        else:
            predicted = [names[j] for j in np.argmax(probs, axis=-1)]
        if single:
            return predicted[0], probs[0]
        return predicted, probs

    def _attention_model(self):
        if self._attention_tensor is None:
            raise ValueError(
                "explain and plot_attention need attention weights, which "
                f"pooling={self.pooling!r} does not have: use pooling='attention' "
                "or 'structured'."
            )
        if self._explainer is None:
            model = keras.Model(self.inputs, [self.outputs[0], self._attention_tensor])
            object.__setattr__(self, "_explainer", model)
        return self._explainer

    def explain(self, texts, batch_size=32):
        """The attention weight of every token of each text.

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            For each text a list of `(token, weight)` pairs, the weights of its
            tokens summing to 1 (for `pooling="structured"`, the mean over hops);
            for a single string, its list.
        """
        owner = "AttentionClassifier.explain"
        items, single = text_utils.as_text_list(texts, owner)
        encoded = text_utils.encode_texts(
            self.tokenizer, items, owner, max_length=self.max_length, model=self
        )
        ids = text_utils.pad(encoded, int(self.tokenizer.pad_id))
        _, weights = self._attention_model().predict(
            ids, batch_size=batch_size, verbose=0
        )  # (N, S) or (N, hops, S)
        if weights.ndim == 3:
            weights = weights.mean(axis=1)  # (N, S)
        out = []
        for text, seq, w in zip(items, encoded, weights):
            tokens = text_utils.token_strings(self.tokenizer, text, seq)
            out.append([(t, float(a)) for t, a in zip(tokens, w[: len(seq)])])
        return out[0] if single else out

    def plot_attention(self, text, ax=None, cmap="Reds"):
        """Draws the tokens of `text` shaded by their attention weight.

        Needs matplotlib (imported here, not at import time); the title is the
        predicted label and its probability.

        Args:
            text: a string.
            ax: optional matplotlib Axes to draw on.
            cmap: a matplotlib colour map name.

        Returns:
            The matplotlib `Figure`.
        """
        from keras_rnnattn.plotting import plot_token_weights

        pairs = self.explain(text)
        label, probs = self.classify(text)
        if self.multi_label:
            title = ", ".join(str(name) for name in label) or "(no label)"
        else:
            title = f"{label} ({float(np.max(probs)):.2f})"
        return plot_token_weights(
            [t for t, _ in pairs], [w for _, w in pairs], title=title, ax=ax, cmap=cmap
        )

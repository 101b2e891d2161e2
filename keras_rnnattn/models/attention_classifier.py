"""A text classifier: an RNN encoder, attention pooling over time, a softmax head."""

import keras
import numpy as np

from keras_rnnattn.layers.attention_pooling import AttentionPooling
from keras_rnnattn.layers.masked_sequence import LastOutput, MaskedMean
from keras_rnnattn.layers.recurrent import recurrent_encoder
from keras_rnnattn.models.task import TaskContract, TextTask, embedding_and_mask
from keras_rnnattn.text import inputs as text_utils

POOLINGS = ("attention", "structured", "mean", "last")


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class AttentionClassifier(TextTask, keras.Model):
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

    Explanations (`explain`, `plot_attention`) show the pooling weights. With
    `concat_last=True` (the default, the better classifier) the last RNN
    output is a second path from the text to the label, so the weights need
    not single out the words that decide it, and how sharp they are depends on
    the initial weights: on 1,000 reviews whose label one keyword decides (3
    labels, 6 epochs, `Adam(5e-3)`), the keyword got the top weight in 74-97%
    of 300 held-out reviews over four seeds, at 100% accuracy (the encoder's
    two RNNs are built directly since the presets' loading change, which draws
    their initial weights in another order: the same seeds gave 86-97%
    before). With `concat_last=False` the pooled vector is the only path and
    the keyword got it in 95-97% on the seeds that gave 74-78%: build the model
    so where the weights are to explain its decisions.

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
    `fit`/`evaluate`/`predict`. A `tf.data.Dataset` may yield texts (or
    `(text, label)` pairs), tokenized inside the input pipeline, or int token
    ids `(batch, length)` with labels (class indices, or label strings that the
    model maps through `labels`); an unbatched dataset is batched for you
    (`batch_size` per batch, in buckets of similar length for `fit` and
    `evaluate`).

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

    # `from_preset(name, num_classes=N)` and the like: a new output layer.
    preset_head_keys = ("num_classes", "labels", "multi_label")
    preset_head_resets = ("num_classes", "labels")
    preset_head_layers = ("output_dense",)

    task_contract = TaskContract(
        "classify",
        methods={
            "classify": ("threshold", "batch_size"),
            "explain": ("batch_size",),
            "plot_attention": ("ax", "cmap"),
        },
    )

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
        vocabulary = self._resolve_text(tokenizer, vocabulary_size, cell, max_length)
        tokenizer, vocabulary_size, pad_id = vocabulary
        labels, num_classes = self._resolve_names(
            labels, num_classes, "labels", "num_classes", minimum=1
        )
        if num_classes == 1 and not multi_label:
            raise ValueError(
                "A softmax over one class is constant: use num_classes=2 or "
                "multi_label=True. Received: num_classes=1"
            )
        self._check_choice("pooling", pooling, POOLINGS)

        # === Layers ===
        # The input block first: the weights files hold its layers' names.
        token_ids, mask, x, token_embedding = embedding_and_mask(
            vocabulary_size, embedding_dim, pad_id
        )  # (B, S), (B, S), (B, S, embedding_dim)
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
        self._set_attention_output(attention)

        # === Config ===
        self._set_text_config(
            vocabulary, embedding_dim, units, cell, dropout, max_length
        )
        self.num_classes = num_classes
        self.labels = labels
        self.bidirectional = bool(bidirectional)
        self.pooling = pooling
        self.hops = hops
        self.attention_units = attention_units
        self.penalty = float(penalty)
        self.concat_last = bool(concat_last)
        self.multi_label = bool(multi_label)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_classes": self.num_classes,
                "labels": self.labels,
                "bidirectional": self.bidirectional,
                "pooling": self.pooling,
                "hops": self.hops,
                "attention_units": self.attention_units,
                "penalty": self.penalty,
                "concat_last": self.concat_last,
                "multi_label": self.multi_label,
            }
        )
        return config

    def compile_defaults(self):
        """Sparse categorical cross-entropy and accuracy (binary cross-entropy
        and binary accuracy with `multi_label`)."""
        if self.multi_label:
            return "binary_crossentropy", ["binary_accuracy"]
        return "sparse_categorical_crossentropy", ["accuracy"]

    # --- Inputs: strings or checked ids --------------------------------------
    def _ids(self, x, owner):
        if text_utils.is_text(x):
            texts, _ = text_utils.as_text_list(x, owner)
            return text_utils.pad(self._encode_texts(texts, owner), self.pad_id)
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

    def preprocess_samples(self, x, y=None, owner=None, with_targets=True):
        """Class ids (or multi-hot rows) for texts or token ids and labels.

        `x` is texts, token ids `(N, S)` or a `tf.data.Dataset` of batches
        `(ids, labels)`: ids int `(batch, length)`, labels class indices
        `(batch,)` or label strings of `labels` (mapped to their indices here),
        multi-hot `(batch, C)` with `multi_label`; build it with
        `tokenizer.to_tf_dataset(texts, labels).batch(n)`. `y` is one label per
        text: a label string or class index (a list of label strings or a
        multi-hot row with `multi_label`); None with a dataset.
        """
        if text_utils.as_dataset(x) is not None:
            return self._dataset(x, owner, with_targets=with_targets), y
        x = self._ids(x, owner)
        y = self._targets(y, owner)
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            if len(x) != len(y):
                raise ValueError(
                    f"{owner}: {len(x)} inputs but {len(y)} labels: give one "
                    "label per text."
                )
        return x, y

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
            single string, its label and a `(C,)` array. An empty list gives
            `([], an empty (0, C) array)`.
        """
        items, single, _ = self._read_texts(texts, "classify")
        if not items:
            return [], np.zeros((0, self.num_classes), "float32")
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

    def explain(self, texts, batch_size=32):
        """The attention weight of every token of each text.

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            For each text a list of `(token, weight)` pairs, the weights of its
            tokens summing to 1 (for `pooling="structured"`, the mean over hops);
            for a single string, its list; for an empty list, `[]`.
        """
        items, single, owner = self._read_texts(texts, "explain")
        if self._attention_tensor is None:
            raise ValueError(
                "explain and plot_attention need attention weights, which "
                f"pooling={self.pooling!r} does not have: use pooling='attention' "
                "or 'structured'."
            )
        if not items:
            return []
        encoded, ids = self._encode_padded(items, owner)
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

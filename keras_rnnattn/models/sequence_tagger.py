"""A sequence tagger: per-token labels from self-attention over encoder outputs."""

import keras
import numpy as np

from keras_rnnattn.layers.masked_sequence import MaskedZeros
from keras_rnnattn.layers.recurrent import recurrent_encoder
from keras_rnnattn.layers.sequence_self_attention import SequenceSelfAttention
from keras_rnnattn.models._diacritic_windows import (
    check_diacritic_tags,
    restore_diacritics,
)
from keras_rnnattn.models._punctuation_windows import (
    read_words,
    tag_word_lists,
    window_words,
)
from keras_rnnattn.models.punctuation_stream import PunctuationStream, sentence_tags
from keras_rnnattn.models.punctuation_utterances import UTTERANCE_WORDS, utterance_tags
from keras_rnnattn.models.task import TaskContract, TextTask, embedding_and_mask
from keras_rnnattn.text import inputs as text_utils
from keras_rnnattn.text.punctuation import (
    PUNCTUATION_TAGS,
    restore_punctuation,
    untagged_tokens,
)

ENCODERS = ("rnn", "cnn", "dense")


def _encoder(encoder, cell, units, bidirectional, kernel_size):
    if encoder == "rnn":
        return recurrent_encoder(cell, units, bidirectional, name="encoder")
    if encoder == "cnn":
        return keras.layers.Conv1D(
            units, kernel_size, padding="same", activation="relu", name="encoder"
        )
    return keras.layers.Dense(units, activation="tanh", name="encoder")


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class SequenceTagger(TextTask, keras.Model):
    """Tags every token of a text from its encoder state and an attention context.

    1. token ids `(B, S)` -> Embedding -> an encoder gives h_1..h_S `(B, S, h)`:
       a (Bi)GRU/LSTM (`encoder="rnn"`), a 1-D convolution (`"cnn"`, local
       context only) or a per-token Dense layer (`"dense"`, no context);
    2. self-attention: c_i = Σ_j a_ij h_j, a_ij = softmax_j score(h_i, h_j) over
       the real tokens (`SequenceSelfAttention`);
    3. the tag of token i is softmax(W [h_i; c_i] + b) over the tags
       (softmax(W h_i + b) with `score=None`: no attention, the baseline).

    Padded positions (id 0, at the end) are masked everywhere and left out of
    the loss and metrics. With a `tokenizer` (from `keras_rnnattn.text`) and
    `tags`, `fit` and `evaluate` take texts and lists of tag strings (one per
    token), and `tag(texts)` returns `(token, tag)` pairs; the tokenizer and the
    tags are part of the config, so `keras.models.load_model` restores them.

    Bad input: an empty text raises `ValueError`; unknown words are tagged as
    the unknown token (their token string is the tokenizer's unknown token when
    it reports it); a tag outside `tags`, a tag list whose length differs from
    the text's token count, or token ids outside the vocabulary raise
    `ValueError` in `fit`/`evaluate`; texts are cut to `max_length` tokens
    (with a warning, once per model).

    Args:
        vocabulary_size: int, the number of token ids (default: the tokenizer's).
        num_tags: int, the number of tags (default: `len(tags)`).
        tags: optional list of tag strings.
        tokenizer: optional `keras_rnnattn.text` tokenizer (or its serialized
            form).
        embedding_dim: int, the size of the token embeddings.
        units: int, the encoder's units (per direction for a bidirectional RNN).
        encoder: `"rnn"`, `"cnn"` or `"dense"`.
        cell: `"gru"` or `"lstm"` (`encoder="rnn"`).
        bidirectional: bool (`encoder="rnn"`).
        kernel_size: int, the convolution width (`encoder="cnn"`).
        score: the attention score, a `SequenceSelfAttention` score name. The
            default, `"scaled_general"` (h_iᵀ W h_j / √h), learned the
            distant-token test task from every seed and backend tried, where
            `"general"` and `"bahdanau"` sometimes stalled. None: no
            attention, each tag from h_i alone (the baseline that shows what
            the attention adds).
        attention_units: optional int, the hidden size of the `"concat"` and
            `"bahdanau"` scores.
        dropout: float in [0, 1), dropout before the output layer.
        max_length: optional int, texts are cut to this many tokens.
        **kwargs: base model arguments (`name`, `trainable`).

    Example:

    >>> import numpy as np
    >>> tagger = SequenceTagger(vocabulary_size=20, num_tags=3, units=8)
    >>> tagger.compile()
    >>> ids = np.array([[3, 5, 7, 0], [4, 4, 0, 0]], "int32")
    >>> tags = np.array([[0, 1, 2, 0], [2, 2, 0, 0]], "int32")
    >>> _ = tagger.fit(ids, tags, epochs=1, verbose=0)
    >>> tagger.predict(ids, verbose=0).shape
    (2, 4, 3)
    """

    # `from_preset(name, num_classes=N)` and the like: a new output layer.
    preset_head_keys = ("num_tags", "tags")
    preset_head_resets = ("num_tags", "tags")
    preset_head_layers = ("output_dense",)

    task_contract = TaskContract(
        "tag",
        methods={
            "tag": ("batch_size",),
            "restore_punctuation": ("batch_size",),
            "restore_diacritics": ("batch_size",),
        },
    )

    def __init__(
        self,
        vocabulary_size=None,
        num_tags=None,
        tags=None,
        tokenizer=None,
        embedding_dim=32,
        units=32,
        encoder="rnn",
        cell="gru",
        bidirectional=True,
        kernel_size=3,
        score="scaled_general",
        attention_units=None,
        dropout=0.0,
        max_length=None,
        **kwargs,
    ):
        vocabulary = self._resolve_text(tokenizer, vocabulary_size, cell, max_length)
        tokenizer, vocabulary_size, pad_id = vocabulary
        tags, num_tags = self._resolve_names(
            tags, num_tags, "tags", "num_tags", minimum=2
        )
        self._check_choice("encoder", encoder, ENCODERS)

        # === Layers ===
        # The input block first: the weights files hold its layers' names.
        token_ids, mask, x, token_embedding = embedding_and_mask(
            vocabulary_size, embedding_dim, pad_id
        )  # (B, S), (B, S), (B, S, embedding_dim)
        zero_padding = MaskedZeros(name="zero_padding")
        sequence_encoder = _encoder(encoder, cell, units, bidirectional, kernel_size)
        attention = None
        if score is not None:
            attention = SequenceSelfAttention(
                score=score, units=attention_units, concat=True, name="self_attention"
            )
        dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        # The head computes in float32 under any policy: float16 probabilities
        # saturate to 0 or 1, and the loss's gradient 1/p then overflows.
        output_dense = keras.layers.Dense(
            num_tags, activation="softmax", dtype="float32", name="output_dense"
        )

        # === Functional model ===
        x = zero_padding(x, mask=mask)  # padded steps are zeros for the CNN
        if encoder == "rnn" and bidirectional:
            hidden = sequence_encoder(x, mask=mask)  # (B, S, h)
        else:
            # A forward RNN, a convolution over zeroed padding or a Dense layer
            # gives the real steps the same outputs with or without padding.
            hidden = sequence_encoder(x)  # (B, S, h)
        hidden = zero_padding(hidden, mask=mask)  # (B, S, h)
        features, weights = hidden, None  # (B, S, h)
        if attention is not None:
            features, weights = attention(
                hidden, mask=mask, return_attention_scores=True
            )  # (B, S, 2h): [h_i; c_i], (B, S, S)
        outputs = output_dense(dropout_layer(features))  # (B, S, num_tags)
        super().__init__(inputs=token_ids, outputs=outputs, **kwargs)
        self.token_embedding = token_embedding
        self.sequence_encoder = sequence_encoder
        self.attention = attention
        self.output_dense = output_dense
        self._set_attention_output(weights)

        # === Config ===
        self._set_text_config(
            vocabulary, embedding_dim, units, cell, dropout, max_length
        )
        self.num_tags = num_tags
        self.tags = tags
        self.encoder = encoder
        self.bidirectional = bool(bidirectional)
        self.kernel_size = kernel_size
        self.score = score
        self.attention_units = attention_units

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_tags": self.num_tags,
                "tags": self.tags,
                "encoder": self.encoder,
                "bidirectional": self.bidirectional,
                "kernel_size": self.kernel_size,
                "score": self.score,
                "attention_units": self.attention_units,
            }
        )
        return config

    # --- Inputs: strings or checked ids --------------------------------------
    def preprocess_samples(self, x, y=None, owner=None, with_targets=True):
        """Token ids and tag ids for texts or ids and their tags.

        `x` is texts, token ids `(N, S)`, or a `tf.data.Dataset` of batches
        `(ids, tag_ids)`, both int `(batch, length)` (call `.batch(n)` on an
        unbatched one). `y` is one list of tag strings per text (one tag per
        token; or one string of space-separated tags), or tag ids `(N, S)`;
        None with a dataset.
        """
        if text_utils.is_checked_id_dataset(x, owner, with_targets, "tag ids"):
            return x, y
        if y is not None:
            text_utils.check_label_batch(y, owner, what="tags")
        if text_utils.is_text(x):
            items, _ = text_utils.as_text_list(x, owner)
            encoded = self._encode_texts(items, owner)
            ids = text_utils.pad(encoded, self.pad_id)
            if y is not None:
                y = self._tag_ids_for_texts(y, encoded, ids.shape[1], owner)
            return ids, y
        x = text_utils.check_token_ids(x, self.vocabulary_size, owner)
        if y is not None and isinstance(y, (np.ndarray, list, tuple)):
            y = self._check_tag_ids(y, x, owner)
        return x, y

    def _tag_ids_for_texts(self, y, encoded, length, owner):
        if self.tags is None:
            raise ValueError(
                f"{owner}: tag strings need the model's `tags`; this model has none."
            )
        if len(y) != len(encoded):
            raise ValueError(
                f"{owner}: {len(encoded)} texts but {len(y)} tag sequences: give "
                "one list of tags per text."
            )
        index = text_utils.label_index(self.tags)
        out = np.zeros((len(encoded), length), "int32")
        for i, (row, ids) in enumerate(zip(y, encoded)):
            row = row.split() if isinstance(row, str) else [str(t) for t in row]
            if self.max_length is not None:
                row = row[: self.max_length]
            if len(row) != len(ids):
                raise ValueError(
                    f"{owner}: text {i} has {len(ids)} tokens but {len(row)} tags: "
                    "give one tag per token (see `tokenizer.tokenize`)."
                )
            unknown = sorted({t for t in row if t not in index})
            if unknown:
                raise ValueError(
                    f"{owner}: tags outside the tag set {self.tags}. "
                    f"Received: {unknown}"
                )
            out[i, : len(row)] = [index[t] for t in row]
        return out

    def _check_tag_ids(self, y, x, owner):
        array = np.asarray(y)
        if array.dtype.kind not in ("i", "u") or array.shape != np.shape(x):
            raise ValueError(
                f"{owner}: tags must be integer tag ids of the inputs' shape "
                f"{np.shape(x)}. Received dtype {array.dtype}, shape {array.shape}"
            )
        bad = (array < 0) | (array >= self.num_tags)
        if np.any(bad):
            raise ValueError(
                f"{owner}: tag ids must lie in [0, {self.num_tags}). Received: "
                f"{sorted(set(array[bad].tolist()))}"
            )
        return array.astype("int32")

    # --- Strings out -----------------------------------------------------------
    def tag(self, texts, batch_size=32):
        """Tags every token of each text.

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            For each text a list of `(token, tag)` pairs (tag strings, or tag ids
            without `tags`); for a single string, its list; for an empty
            list, `[]`.
        """
        items, single, owner = self._read_texts(texts, "tag")
        if not items:
            return []
        encoded, ids = self._encode_padded(items, owner)
        probs = self.predict(ids, batch_size=batch_size, verbose=0)  # (N, S, T)
        predicted = np.argmax(probs, axis=-1)  # (N, S)
        names = self.tags or list(range(self.num_tags))
        out = []
        for text, seq, row in zip(items, encoded, predicted):
            tokens = text_utils.token_strings(self.tokenizer, text, seq)
            out.append([(t, names[j]) for t, j in zip(tokens, row[: len(seq)])])
        return out[0] if single else out

    def restore_punctuation(self, texts, batch_size=32):
        """Punctuation and capitals for text without them (what speech recognisers emit).

        For a tagger trained on `keras_rnnattn.text.PUNCTUATION_TAGS` (Tilk &
        Alumäe 2016's classes with the word's case, `punctuation_tags` of
        running text). Any punctuation and capitals already in the texts are
        removed first (`strip_punctuation`); tokens that are neither words nor
        punctuation (emoji, symbols) are kept in their place, untagged
        (`untagged_tokens`). With a subword tokenizer each word is encoded on
        its own and takes its case from its first piece and its mark from its
        last (`keras_rnnattn.text.word_pieces`). A text longer than one window
        (`max_length` words for a word tokenizer, half as many for subwords)
        is tagged in overlapping windows, each word by the window where it is
        central (`PunctuationStream`). Each text is taken
        to be whole sentences: its first word and each word after a full stop
        or question mark are capitalised, and its last word ends a sentence (a
        full stop where the tagger put a comma or nothing); `tag` gives the
        tagger's own tags. A text of at most 15 words (`UTTERANCE_WORDS`), a
        line as a speech recogniser emits it, is one utterance: a sentence end
        inside it is kept only where the tagger is sure of it, and it ends with
        a question mark where the tagger gives any of its words a fair chance
        of one (`keras_rnnattn.models.punctuation_utterances`).

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            The texts with punctuation and capitals: a str for a str, else a
            list of str.

        Example:

        >>> from keras_rnnattn.text import (
        ...     PUNCTUATION_TAGS, WordTokenizer, strip_punctuation)
        >>> tok = WordTokenizer(lowercase=True).fit(["where is it"])
        >>> tagger = SequenceTagger(tokenizer=tok, tags=PUNCTUATION_TAGS, units=4)
        >>> out = tagger.restore_punctuation("where is it")  # untrained: any tags
        >>> strip_punctuation(out)  # the same words, cased and punctuated
        'where is it'
        >>> out[0].isupper() and out[-1] in ".?"  # whole sentences
        True
        """
        items, single, owner = self._read_texts(texts, "restore_punctuation")
        if self.tags is None or not set(self.tags) <= set(PUNCTUATION_TAGS):
            raise ValueError(
                f"{owner}: the tagger's tags must be PUNCTUATION_TAGS "
                f"{PUNCTUATION_TAGS} (train it on `punctuation_tags` of running "
                f"text). Received: tags={self.tags}"
            )
        window = window_words(self)
        word_lists = [read_words(text) for text in items]
        short = [i for i, words in enumerate(word_lists) if len(words) <= window]
        tags, marks = tag_word_lists(
            self, [word_lists[i] for i in short], batch_size, with_marks=True
        )
        out = [None] * len(items)
        for i, text_tags, text_marks in zip(short, tags, marks):
            if len(text_tags) <= UTTERANCE_WORDS:  # a recogniser's line: one unit
                whole = utterance_tags(text_tags, text_marks)
            else:
                whole, _ = sentence_tags(text_tags, True, True)
            # Emoji and symbols, which the tagger does not read, back in place.
            out[i] = restore_punctuation(
                word_lists[i], whole, untagged_tokens(items[i])
            )
        for i, text in enumerate(items):
            if out[i] is None:  # a long text: overlapping windows
                stream = PunctuationStream(self, window)
                out[i] = stream.push(text) + stream.finish()
        return out[0] if single else out

    def restore_diacritics(self, texts, batch_size=32):
        """Puts back the diacritics of text typed without them.

        For a character tagger trained on `keras_rnnattn.text.diacritic_tags`
        (each character's tag names the marks its letter carries, or
        `"none"`). The tagger reads each text without marks, lowercased,
        in windows of at most `max_length` characters cut at spaces; each
        letter gets the marks of its tag where they compose with it into one
        letter. The output differs from the input only in marks added to
        letters: every other character, space and capital is kept, and so
        are the marks the input already has.

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            The texts with diacritics (NFC): a str for a str, else a list of
            str.

        Example:

        >>> from keras_rnnattn.text import CharTokenizer, strip_diacritics
        >>> tok = CharTokenizer().fit(["zitra rano"])
        >>> tagger = SequenceTagger(
        ...     tokenizer=tok, tags=["none", "acute", "caron"], units=4)
        >>> out = tagger.restore_diacritics("Zitra rano")  # untrained: any marks
        >>> strip_diacritics(out)
        'Zitra rano'
        """
        items, single, owner = self._read_texts(texts, "restore_diacritics")
        check_diacritic_tags(self.tags, owner)
        out = restore_diacritics(self, items, batch_size)
        return out[0] if single else out

    def attention_weights(self, texts, batch_size=32):
        """The self-attention weights of each text: `(n_tokens, n_tokens)` arrays.

        Row i holds the weights a_ij with which token i attends to token j.

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            For each text `(tokens, weights)`; for a single string, its pair;
            for an empty list, `[]`.
        """
        items, single, owner = self._read_texts(texts, "attention_weights")
        if not items:
            return []
        encoded, ids = self._encode_padded(items, owner)
        _, weights = self._attention_model().predict(
            ids, batch_size=batch_size, verbose=0
        )  # (N, S, S)
        out = []
        for text, seq, w in zip(items, encoded, weights):
            tokens = text_utils.token_strings(self.tokenizer, text, seq)
            out.append((tokens, w[: len(seq), : len(seq)]))
        return out[0] if single else out

"""An RNN encoder-decoder translator with attention: text in, text out."""

import numbers

import keras
import numpy as np
from keras import ops

from keras_rnnattn._backend import compiled, dense_2d, no_grad, run_rnn
from keras_rnnattn.layers.attention_decoder import ATTENTIONS, CELLS, AttentionDecoder
from keras_rnnattn.layers.plain_decoder import PlainDecoder
from keras_rnnattn.layers.recurrent import gather_step, reverse_by_length
from keras_rnnattn.layers.score_layers import score_layer
from keras_rnnattn.models._optimizers import InPlaceAdam
from keras_rnnattn.models.losses import MaskedAccuracy, MaskedSparseCrossEntropy
from keras_rnnattn.ops import device_scalar
from keras_rnnattn.preset_mixin import PresetMixin
from keras_rnnattn.text import inputs as text_utils
from keras_rnnattn.text.serialization import as_tokenizer, serialize_tokenizer

BRIDGES = ("dense", "zeros")
TRANSLATOR_ATTENTIONS = ATTENTIONS + ("luong_location", "none")


def _as_texts(texts):
    """A str (or UTF-8 bytes), or a list, tuple or 1-D array of them, as a list of str."""
    if isinstance(texts, (str, bytes)):
        items = [texts]
    elif isinstance(texts, (list, tuple)) or (
        isinstance(texts, np.ndarray) and texts.ndim == 1
    ):
        items = list(texts)
    else:
        raise ValueError(
            "Translator.translate takes a str or a list of str. "
            f"Received: texts={str(texts)[:80]!r} of type {type(texts).__name__}"
        )
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bytes):
            try:
                item = item.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"Texts given as bytes must be UTF-8 ({error}): decode them "
                    f"yourself or pass str. Received: texts[{i}]={item[:80]!r}"
                ) from None
        if not isinstance(item, str):
            raise ValueError(
                "Translator.translate takes a str or a list of str. "
                f"Received: texts[{i}]={str(item)[:80]!r} of type {type(item).__name__}"
            )
        out.append(str(item))
    return out


def _scale_to_norm(x, norm, axis):
    """`x` scaled to L2 norm `norm` along `axis` (zero vectors stay zero)."""
    squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * (norm * ops.rsqrt(ops.maximum(squares, 1e-12)))


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{name}` must be an int >= 1. Received: {name}={value!r}")
    return int(value)


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class Translator(PresetMixin, keras.Model):
    """A sequence-to-sequence translator: RNN encoder, attention decoder, tokenizers.

    Encoder: embedding, then `encoder_layers` (bidirectional) GRU/LSTM layers;
    its outputs are the memory the decoder attends over. A bridge
    (tanh(W h_enc), from the final forward state and, when bidirectional, the
    backward state at the first token, as in Bahdanau et al.) gives the
    decoder's initial state. Decoder: an `AttentionDecoder`, then a Dense layer
    over the target vocabulary (or, with `share_decoder_embeddings`, the target
    embedding after a projection). `attention="none"` gives the plain RNN
    encoder-decoder of Cho et al. (2014), with the encoder summary fed at every
    step instead of attention: the baseline of the attention papers.

    The tokenizers are part of the model and saved with it (as plain JSON data
    in the config). Sources are encoded with an end token; target inputs start
    with `bos` and target outputs end with `eos` (`encode_pairs` does this).
    Padded source positions are masked at every step (source padding is at the
    end); padded target positions (label 0) are left out of the loss and the
    accuracy. `from_preset(name)` / `save_to_preset(dir)` load and write presets
    (`keras_rnnattn.presets`).

    Args:
        source_tokenizer: a fitted tokenizer of `keras_rnnattn.text` (or its
            `{"class_name", "config"}` dict).
        target_tokenizer: the same for the target language.
        embedding_dim: int, the size of both embeddings.
        units: int, the decoder's state size.
        encoder_units: int, the state size of each encoder direction; None
            uses `units`.
        encoder_layers: int, the number of stacked encoder layers.
        bidirectional: bool, a bidirectional encoder.
        cell: `"gru"` or `"lstm"`, for encoder and decoder.
        attention: `"bahdanau"`, `"luong_dot"`, `"luong_general"`,
            `"luong_concat"`, `"luong_location"` (scores from the decoder
            state alone, over `max_source_length` positions) or `"none"`.
        query: `"previous"`, `"current"` or None (by attention), see
            `AttentionDecoder`.
        input_feeding: bool, see `AttentionDecoder`. With `False` and Luong
            attention the decoder takes its fast path (a stock RNN layer).
        attention_layer_size: int, `"auto"` (= `units`) or None, see
            `AttentionDecoder`.
        bridge: `"dense"` (tanh(W h_enc)) or `"zeros"` (zero initial state).
        dropout: float in [0, 1), on the embeddings and the decoder outputs.
        word_dropout: float in [0, 1), the share of whole source and target
            input tokens whose embedding is zeroed in training (Gal &
            Ghahramani 2016; advised for small corpora by Sennrich & Zhang
            2019).
        lexical_model: bool, add the lexical model of Nguyen & Chiang (2018)
            to the output layer: the attention weights also average the
            source embeddings, f_t = tanh(sum_s a_ts e_s), and
            h_t = tanh(W f_t) + f_t joins the attentional output in the softmax
            layer, so a source word can vote for its translation directly
            (helps rare words on small corpora). Needs attention.
        share_embeddings: bool, one embedding for source and target tokens
            (needs one vocabulary for both languages: pass the same tokenizer,
            for example a `BpeTokenizer` fitted on both sides' texts, as both
            tokenizers). Names, numbers and cognates then start from one
            vector on both sides.
        share_decoder_embeddings: bool, the output layer's weights are the
            target embedding (Press & Wolf 2017; Inan et al. 2017): logits
            E (W_p r_t) + b, with W_p a linear projection of the readout r_t
            to `embedding_dim`. With `share_embeddings` too, all three are one
            matrix (three-way tying).
        fixnorm: float or None, the "fixnorm" output layer of Nguyen & Chiang
            (2018): each part of the readout (the attentional output and,
            with `lexical_model`, the lexical model's h_t) is scaled to
            norm `fixnorm`, and so is each output word's weight vector in
            that part, so a logit is `fixnorm**2` times a cosine per part
            plus a bias. Frequent words can no longer win by norm alone,
            which helps rare words on small corpora (the paper uses 3.5).
            None: a plain Dense output layer. Not with
            `share_decoder_embeddings`.
        max_source_length: int, the most source tokens (end token included)
            `translate` accepts: longer inputs raise a ValueError; `encode_pairs`
            truncates them.
        max_target_length: int, the most tokens `translate` produces, and the
            length `encode_pairs` truncates targets to.
        **kwargs: base `keras.Model` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `(source_ids, target_in_ids)`, int `(B, S)` and `(B, T)`.
        training: bool.

    Returns:
        Logits `(B, T, target_vocabulary_size)` (float32).

    Example:

    >>> from keras_rnnattn.text import CharTokenizer
    >>> pairs = [("abc", "cba"), ("ab", "ba"), ("ca", "ac"), ("bca", "acb")]
    >>> src = CharTokenizer().fit([s for s, _ in pairs])
    >>> tgt = CharTokenizer().fit([t for _, t in pairs])
    >>> model = Translator(src, tgt, embedding_dim=8, units=16)
    >>> model.compile()  # masked sparse cross-entropy, Adam, masked accuracy
    >>> x, y = model.encode_pairs([s for s, _ in pairs], [t for _, t in pairs])
    >>> history = model.fit(x, y, epochs=1, verbose=0)
    >>> translations = model.translate(["abc", ""], beam_size=2)
    >>> len(translations), translations[1]
    (2, '')

    With `fixnorm`, a logit is at most r^2 per readout part from its bias,
    however large the output weights grow:

    >>> fixed = Translator(src, tgt, embedding_dim=8, units=16, fixnorm=3.5)
    >>> _ = fixed.output_dense.kernel.assign(1e3 * fixed.output_dense.kernel)
    >>> logits = keras.ops.convert_to_numpy(fixed(x))
    >>> bool(abs(logits).max() <= 3.5 ** 2 + 1e-4)
    True

    One tokenizer for both sides lets all three embeddings be one matrix:

    >>> both = CharTokenizer().fit([s + t for s, t in pairs])
    >>> tied = Translator(both, both, embedding_dim=8, units=16,
    ...                   share_embeddings=True, share_decoder_embeddings=True)
    >>> tied.source_embedding is None, tied.output_dense is None
    (True, True)
    """

    def __init__(
        self,
        source_tokenizer,
        target_tokenizer,
        embedding_dim=256,
        units=512,
        encoder_units=None,
        encoder_layers=1,
        bidirectional=True,
        cell="gru",
        attention="bahdanau",
        query=None,
        input_feeding=True,
        attention_layer_size="auto",
        bridge="dense",
        dropout=0.0,
        word_dropout=0.0,
        lexical_model=False,
        share_embeddings=False,
        share_decoder_embeddings=False,
        fixnorm=None,
        max_source_length=128,
        max_target_length=128,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_tokenizer = as_tokenizer(source_tokenizer, "source_tokenizer")
        self.target_tokenizer = as_tokenizer(target_tokenizer, "target_tokenizer")
        self.embedding_dim = _positive_int("embedding_dim", embedding_dim)
        self.units = _positive_int("units", units)
        self.encoder_units = _positive_int("encoder_units", encoder_units, True)
        self.encoder_layers = _positive_int("encoder_layers", encoder_layers)
        self.max_source_length = _positive_int("max_source_length", max_source_length)
        self.max_target_length = _positive_int("max_target_length", max_target_length)
        if cell not in CELLS:
            raise ValueError(f"`cell` must be one of {CELLS}. Received: cell={cell!r}")
        if attention not in TRANSLATOR_ATTENTIONS:
            raise ValueError(
                f"`attention` must be one of {TRANSLATOR_ATTENTIONS}. "
                f"Received: attention={attention!r}"
            )
        if bridge not in BRIDGES:
            raise ValueError(
                f"`bridge` must be one of {BRIDGES}. Received: bridge={bridge!r}"
            )
        for arg, value in (("dropout", dropout), ("word_dropout", word_dropout)):
            if not 0.0 <= float(value) < 1.0:
                raise ValueError(f"`{arg}` must be in [0, 1). Received: {arg}={value}")
        if lexical_model and attention == "none":
            raise ValueError(
                "The lexical model averages the source embeddings with the "
                "attention weights: use it with an attention. "
                "Received: lexical_model=True, attention='none'"
            )
        if share_embeddings and (
            self.source_tokenizer.vocabulary.tokens
            != self.target_tokenizer.vocabulary.tokens
        ):
            raise ValueError(
                "`share_embeddings=True` needs one vocabulary for both languages: "
                "pass the same tokenizer (for example one BpeTokenizer fitted on "
                "source and target texts together) as `source_tokenizer` and "
                "`target_tokenizer`. Received vocabularies of "
                f"{self.source_tokenizer.vocabulary_size} and "
                f"{self.target_tokenizer.vocabulary_size} tokens that differ."
            )
        if fixnorm is not None and (
            isinstance(fixnorm, bool)
            or not isinstance(fixnorm, numbers.Real)
            or not fixnorm > 0
        ):
            raise ValueError(
                f"`fixnorm` must be a positive number or None. Received: "
                f"fixnorm={fixnorm!r}"
            )
        if fixnorm is not None and share_decoder_embeddings:
            raise ValueError(
                "`fixnorm` fixes the norms of the output Dense layer's weights; "
                "with `share_decoder_embeddings=True` there is none: drop one "
                "of the two."
            )
        self.fixnorm = None if fixnorm is None else float(fixnorm)
        self.bidirectional = bool(bidirectional)
        self.lexical_model = bool(lexical_model)
        self.share_embeddings = bool(share_embeddings)
        self.share_decoder_embeddings = bool(share_decoder_embeddings)
        self.cell = cell
        self.attention = attention
        self.query = query
        self.input_feeding = bool(input_feeding)
        self.attention_layer_size = attention_layer_size
        self.bridge = bridge
        self.dropout = float(dropout)
        self.word_dropout = float(word_dropout)

        # Layers.
        enc_units = self.encoder_units or self.units
        rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        # With shared embeddings the encoder reads `target_embedding` too.
        self.source_embedding = (
            None
            if self.share_embeddings
            else keras.layers.Embedding(
                self.source_tokenizer.vocabulary_size,
                self.embedding_dim,
                name="source_embedding",
            )
        )
        self.target_embedding = keras.layers.Embedding(
            self.target_tokenizer.vocabulary_size,
            self.embedding_dim,
            name="target_embedding",
        )
        self.encoder_forward = [
            rnn(enc_units, return_sequences=True, name=f"encoder_forward_{i}")
            for i in range(self.encoder_layers)
        ]
        self.encoder_backward = (
            [
                rnn(enc_units, return_sequences=True, name=f"encoder_backward_{i}")
                for i in range(self.encoder_layers)
            ]
            if self.bidirectional
            else []
        )
        num_states = 2 if cell == "lstm" else 1
        self.bridges = (
            [
                keras.layers.Dense(self.units, activation="tanh", name=f"bridge_{i}")
                for i in range(num_states)
            ]
            if bridge == "dense"
            else []
        )
        if attention == "none":
            size = self.units if attention_layer_size in ("auto", None) else None
            self.decoder = PlainDecoder(
                self.units,
                cell=cell,
                output_size=size or attention_layer_size,
                name="decoder",
            )
        else:
            if attention == "luong_location":
                # The location score needs the longest source it attends over.
                attention = score_layer(
                    attention, None, self.max_source_length, name="attention"
                )
            self.decoder = AttentionDecoder(
                self.units,
                cell=cell,
                attention=attention,
                query=query,
                input_feeding=input_feeding,
                attention_layer_size=attention_layer_size,
                name="decoder",
            )
        self.dropout_layer = keras.layers.Dropout(self.dropout, name="dropout")
        # One draw per token, shared by its embedding's features.
        self.word_dropout_layer = keras.layers.Dropout(
            self.word_dropout, noise_shape=(None, None, 1), name="word_dropout"
        )
        # W of the lexical model's h_t = tanh(W f_t) + f_t; its output weights
        # are the last `embedding_dim` rows of `output_dense`'s kernel.
        self.lexical_dense = (
            keras.layers.Dense(
                self.embedding_dim,
                activation="tanh",
                use_bias=False,
                name="lexical_dense",
            )
            if self.lexical_model
            else None
        )
        if self.share_decoder_embeddings:
            # logits = E (W_p r_t) + b: the target embedding E is the output
            # layer's weights, after a linear projection of the readout r_t.
            self.output_dense = None
            self.output_projection = keras.layers.Dense(
                self.embedding_dim, use_bias=False, name="output_projection"
            )
        else:
            self.output_dense = keras.layers.Dense(
                self.target_tokenizer.vocabulary_size, name="output_dense"
            )
            self.output_projection = None
        self.memory_size = enc_units * (2 if self.bidirectional else 1)
        self.build()  # every shape is known from the configuration

    # Building and the forward pass.
    def build(self, input_shape=None):
        if self.built:
            return
        emb = self.embedding_dim
        if self.source_embedding is not None:
            self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        width = emb
        for i in range(self.encoder_layers):
            self.encoder_forward[i].build((None, None, width))
            if self.bidirectional:
                self.encoder_backward[i].build((None, None, width))
            width = self.memory_size
        for bridge in self.bridges:
            bridge.build((None, self.memory_size))
        if self.attention == "none":
            self.decoder.build((None, None, emb), (None, self.memory_size))
        else:
            self.decoder.build((None, None, emb), (None, None, self.memory_size))
        readout = self.decoder.output_size
        # The readout's parts, which fixnorm scales one by one.
        self._readout_sizes = (readout, emb) if self.lexical_model else (readout,)
        if self.lexical_model:
            self.lexical_dense.build((None, emb))
            readout += emb
        if self.share_decoder_embeddings:
            self.output_projection.build((None, readout))
            self.output_bias = self.add_weight(
                shape=(self.target_tokenizer.vocabulary_size,),
                initializer="zeros",
                name="output_bias",
            )
        else:
            self.output_dense.build((None, readout))
        self.built = True

    def _output_logits(self, readout):
        """The output layer: logits `(N, V)` of readouts `(N, d)`."""
        if self.fixnorm is not None:
            return self._fixnorm_logits(readout)
        if not self.share_decoder_embeddings:
            return dense_2d(self.output_dense, readout)
        projected = self.output_projection(readout)  # (N, emb)
        embeddings = ops.cast(self.target_embedding.embeddings, projected.dtype)
        logits = ops.matmul(projected, ops.transpose(embeddings))  # (N, V)
        return logits + ops.cast(self.output_bias, projected.dtype)

    def _fixnorm_logits(self, readout):
        """Logits `(N, V)` with each readout part and weight column at norm r.

        logits = sum over parts p of (r x_p / |x_p|) . (r W_p / |W_p|) + b, the
        columns of each row block W_p of the kernel normalized one by one.
        """
        dtype = readout.dtype
        kernel = ops.cast(self.output_dense.kernel, dtype)  # (d, V)
        logits, start = None, 0
        for size in self._readout_sizes:
            x = _scale_to_norm(readout[:, start : start + size], self.fixnorm, 1)
            w = _scale_to_norm(kernel[start : start + size], self.fixnorm, 0)
            part = ops.matmul(x, w)  # (N, V)
            logits = part if logits is None else logits + part
            start += size
        return logits + ops.cast(self.output_dense.bias, dtype)

    def _embed(self, embedding, ids, training):
        x = embedding(ids)
        if self.word_dropout:
            x = self.word_dropout_layer(x, training=training)
        if self.dropout:
            x = self.dropout_layer(x, training=training)
        return x

    def encode(self, source_ids, training=None):
        """Runs the encoder.

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.
            training: bool.

        Returns:
            `(memory, mask, cell_states)`: `(B, S, memory_size)`, bool `(B, S)`,
            and the decoder's initial cell states (a list of `(B, units)`).
        """
        return self._encode(source_ids, training)[:3]

    def _encode(self, source_ids, training=None):
        """`encode`'s results and the embedded source `(B, S, emb)`."""
        source_ids = ops.cast(source_ids, "int32")
        mask = ops.not_equal(source_ids, device_scalar(0, "int32"))  # (B, S)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)  # (B,)
        embedding = self.source_embedding
        if embedding is None:  # share_embeddings
            embedding = self.target_embedding
        x = self._embed(embedding, source_ids, training)  # (B, S, emb)
        embedded = x
        for i in range(self.encoder_layers):
            # Unmasked RNNs (the fast kernels); padding sits after the real tokens,
            # and the backward direction reads each row reversed within its length.
            forward = run_rnn(self.encoder_forward[i], x, training=training)
            if self.bidirectional:
                backward = run_rnn(
                    self.encoder_backward[i],
                    reverse_by_length(x, lengths),
                    training=training,
                )
                backward = reverse_by_length(backward, lengths)  # (B, S, u)
                x = ops.concatenate([forward, backward], axis=-1)
            else:
                x = forward
        memory = x  # (B, S, memory_size)
        last = ops.maximum(lengths - 1, device_scalar(0, "int32"))
        summary = gather_step(forward, last)  # (B, u): forward state at the end
        if self.bidirectional:  # backward state at the first token
            summary = ops.concatenate([summary, backward[:, 0]], axis=-1)
        if self.bridges:
            cell_states = [bridge(summary) for bridge in self.bridges]
        else:
            num_states = 2 if self.cell == "lstm" else 1
            cell_states = self.decoder.get_initial_state(ops.shape(source_ids)[0])
            cell_states = cell_states[:num_states]
        if self.attention == "none":
            memory = summary  # (B, memory_size): the fixed context of Cho et al.
        return memory, mask, cell_states, embedded

    def _lexical_readout(self, outputs, alignments, source_embedded):
        """[o_t; h_t] with the lexical model's h_t = tanh(W f_t) + f_t.

        `outputs` `(B, T, d)` (or `(B, d)` for one step), `alignments`
        `(B, T, S)` (or `(B, S)`), `source_embedded` `(B, S, emb)`.
        """
        if not self.lexical_model:
            return outputs
        one_step = len(alignments.shape) == 2
        if one_step:
            alignments = ops.expand_dims(alignments, 1)  # (B, 1, S)
        weights = ops.cast(alignments, source_embedded.dtype)
        f = ops.tanh(ops.matmul(weights, source_embedded))  # (B, T, emb)
        if one_step:
            f = ops.squeeze(f, 1)  # (B, emb)
        h = self.lexical_dense(f) + f  # tanh(W f) + f
        return ops.concatenate([outputs, ops.cast(h, outputs.dtype)], axis=-1)

    def _forward(self, source_ids, target_in_ids, training=None):
        memory, mask, cell_states, embedded = self._encode(
            source_ids, training=training
        )
        y = self._embed(
            self.target_embedding, ops.cast(target_in_ids, "int32"), training
        )  # (B, T, emb)
        if self.attention == "none":
            outputs = self.decoder(
                y, memory, initial_state=cell_states, training=training
            )
            alignments = None
        else:
            outputs, alignments = self.decoder(
                y,
                memory,
                initial_state=cell_states,
                memory_mask=mask,
                training=training,
            )
            outputs = self._lexical_readout(outputs, alignments, embedded)
        if self.dropout:
            outputs = self.dropout_layer(outputs, training=training)
        # The output layer as one 2-D matmul (XLA runs it faster than a 3-D one).
        batch, length = ops.shape(outputs)[0], ops.shape(outputs)[1]
        flat = ops.reshape(outputs, (-1, outputs.shape[-1]))  # (B T, d)
        logits = ops.reshape(self._output_logits(flat), (batch, length, -1))
        logits = ops.cast(logits, "float32")  # (B, T, V)
        return logits, alignments

    def call(self, inputs, training=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                "Translator takes `(source_ids, target_in_ids)`. "
                f"Received: inputs={type(inputs).__name__}"
            )
        return self._forward(inputs[0], inputs[1], training=training)[0]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[1][:2]) + (self.target_tokenizer.vocabulary_size,)

    def compile(
        self, optimizer=None, loss=None, metrics=None, label_smoothing=0.0, **kwargs
    ):
        """`keras.Model.compile` with defaults for translation.

        Defaults: Adam (learning rate 1e-3, global gradient norm clipped at 5;
        Keras's Adam, updated in place on torch), sparse
        cross-entropy from logits ignoring the pad id 0 (averaged over real
        tokens), and the accuracy over real tokens. `label_smoothing` (ε, used
        by the default loss only) trains against (1 - ε) on the label and ε
        spread over the vocabulary.
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
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built and getattr(self, "optimizer", None) is not None:
            self.optimizer.build(self.trainable_variables)

    # Training data.
    def _training_data(self, x, y, owner):
        """Checks `fit`/`evaluate` data; one ValueError that names the fix."""
        fix = (
            "Pass `x, y = model.encode_pairs(source_texts, target_texts)`, then "
            "`fit(x, y)`"
        )
        dataset = text_utils.as_dataset(x)
        if dataset is not None:
            x_spec, y_spec, _ = text_utils.dataset_parts(dataset, owner, True)
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
                text_utils.check_ids_spec(spec, owner, what=what)
            return x, y
        if not isinstance(x, (tuple, list, np.ndarray, str)):
            return x, y  # a keras.utils.PyDataset, a generator: Keras reads them
        if text_utils.is_text(x):
            raise ValueError(
                f"{owner} takes token ids, not texts. {fix}. Received: x={x[:2]!r}"
            )
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
        source = text_utils.check_token_ids(
            x[0], self.source_tokenizer.vocabulary_size, f"{owner} (source ids)"
        )
        target_size = self.target_tokenizer.vocabulary_size
        target_in = text_utils.check_token_ids(
            x[1], target_size, f"{owner} (target input ids)"
        )
        if y is not None:
            y = text_utils.check_token_ids(y, target_size, f"{owner} (target ids)")
            if np.shape(y) != np.shape(target_in):
                raise ValueError(
                    f"{owner}: the target ids must have the target inputs' shape "
                    f"{np.shape(target_in)}. {fix}. Received shape {np.shape(y)}"
                )
        return (source, target_in), y

    def fit(self, x=None, y=None, *args, validation_data=None, **kwargs):
        """`keras.Model.fit` on token ids, checked.

        Args:
            x: `(source_ids, target_in_ids)`, each int `(N, length)`, from
                `x, y = model.encode_pairs(source_texts, target_texts)`; or a
                `tf.data.Dataset` of batches `((source_ids, target_in_ids),
                target_out_ids)`, all int `(batch, length)`, for example
                `tf.data.Dataset.from_tensor_slices((x, y)).batch(32)`.
            y: target_out_ids `(N, length)`; None with a dataset.
            *args, validation_data, **kwargs: as `keras.Model.fit`.

        Returns:
            The `History` of `keras.Model.fit`.
        """
        x, y = self._training_data(x, y, "Translator.fit")
        if text_utils.as_dataset(validation_data) is not None:
            self._training_data(validation_data, None, "validation_data")
        elif isinstance(validation_data, (tuple, list)) and len(validation_data) in (
            2,
            3,
        ):
            vx, vy = self._training_data(*validation_data[:2], "validation_data")
            validation_data = (vx, vy) + tuple(validation_data[2:])
        return super().fit(x, y, *args, validation_data=validation_data, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate` on token ids, checked as in `fit`."""
        x, y = self._training_data(x, y, "Translator.evaluate")
        return super().evaluate(x, y, *args, **kwargs)

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

    def _initial_decoding_state(self, source_ids):
        memory, mask, cell_states, embedded = self._encode(source_ids, training=False)
        batch_size = ops.shape(source_ids)[0]
        if self.attention == "none":
            mem = self.decoder.prepare_memory(memory)
        else:
            mem = self.decoder.prepare_memory(memory, mask)
        if self.lexical_model:
            mem["source_embeddings"] = embedded  # (B, S, emb)
        states = self.decoder.get_initial_state(batch_size, cell_states)
        return {"states": states, "memory": mem}

    def next_fn(self, token_ids, state):
        """One decoding step for `keras_rnnattn.decoding`.

        Args:
            token_ids: int `(N,)`, the previous tokens.
            state: `{"states": [...], "memory": {...}}` (see `initial_state`).

        Returns:
            `(logits (N, V) float32, state, alignment (N, S))`; the alignment is
            omitted for `attention="none"`.
        """
        y = self.target_embedding(ops.cast(token_ids, "int32"))  # (N, E)
        output, states, alignment = self.decoder.step(
            y, state["states"], state["memory"]
        )
        if self.lexical_model:
            output = self._lexical_readout(
                output, alignment, state["memory"]["source_embeddings"]
            )
        logits = ops.cast(self._output_logits(output), "float32")  # (N, V)
        logits = logits + self._never_generated()  # pad and bos are never produced
        new_state = {"states": states, "memory": state["memory"]}
        if alignment is None:
            return logits, new_state
        return logits, new_state, ops.cast(alignment, "float32")

    def _next_fn_with_row_limits(self, token_ids, state):
        """`next_fn` that forces the end token in rows past their length limit."""
        out = self.next_fn(token_ids, state["model"])
        ids = ops.arange(self.target_tokenizer.vocabulary_size, dtype="int32")
        eos = device_scalar(self.target_tokenizer.eos_id, "int32")
        only_eos = ops.where(  # (V,): 0 at the end token, -1e9 elsewhere
            ops.equal(ids, eos),
            device_scalar(0.0, "float32"),
            device_scalar(-1e9, "float32"),
        )
        over = ops.greater_equal(state["step"], state["limit"])[:, None]  # (N, 1)
        logits = ops.where(over, only_eos[None], out[0])
        new_state = {
            "model": out[1],
            "step": state["step"] + 1,
            "limit": state["limit"],
        }
        return (logits, new_state) + tuple(out[2:])

    def _never_generated(self):
        """`(V,)` float32: -1e9 at pad and bos (never produced), 0 elsewhere.

        Made on the device from `arange`, not copied from the host at each step.
        """
        tok = self.target_tokenizer
        ids = ops.arange(tok.vocabulary_size, dtype="int32")
        never = ops.logical_or(
            ops.equal(ids, device_scalar(tok.pad_id, "int32")),
            ops.equal(ids, device_scalar(tok.bos_id, "int32")),
        )
        return ops.where(
            never, device_scalar(-1e9, "float32"), device_scalar(0.0, "float32")
        )

    def initial_state(self, source_ids):
        """The decoding state for `next_fn`: encoder memory and the first state."""
        return self._initial_decoding_state(source_ids)

    def generate_ids(self, source_ids, beam_size=1, max_length=None, **beam_kwargs):
        """Token ids for source ids: greedy search, or beam search if beam_size > 1.

        Args:
            source_ids: int `(B, S)`.
            beam_size: int >= 1.
            max_length: int >= 1, the most tokens produced; None gives each
                row `min(max_target_length, 2 * its source length + 10)`
                (so a row's output does not depend on the rest of the batch).
            **beam_kwargs: `length_penalty`, `coverage_penalty`,
                `num_return_sequences` of `beam_search`.

        Returns:
            `(tokens, scores)` as NumPy arrays: `(B, max_length)` and `(B,)` for
            greedy and for beam search with one returned sequence, else
            `(B, n, max_length)` and `(B, n)`.
        """
        beam_size = _positive_int("beam_size", beam_size)
        source_ids = np.asarray(source_ids, dtype="int32")
        per_row = max_length is None
        if per_row:
            max_length = min(self.max_target_length, 2 * source_ids.shape[1] + 10)
        max_length = _positive_int("max_length", max_length)
        key = (beam_size, max_length, per_row, tuple(sorted(beam_kwargs.items())))
        # A plain dict outside Keras attribute tracking: compiled searches by setting.
        cache = self.__dict__.setdefault("_generators", {})
        if key not in cache:
            cache[key] = compiled(
                self, self._search_fn(beam_size, max_length, beam_kwargs, per_row)
            )
        tokens, scores = cache[key](source_ids)
        return ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)

    def _search_fn(self, beam_size, max_length, beam_kwargs, per_row=False):
        """`source_ids -> (tokens, scores)` with fixed search settings.

        With `per_row`, row b also ends (its end token forced) after
        `2 * S_b + 10` tokens, S_b its source length, as if decoded alone.
        """
        from keras_rnnattn.decoding import beam_search, greedy_search

        bos, eos = self.target_tokenizer.bos_id, self.target_tokenizer.eos_id
        next_fn = self._next_fn_with_row_limits if per_row else self.next_fn

        def search(source_ids):
            state = self._initial_decoding_state(source_ids)
            start = ops.full((ops.shape(source_ids)[0],), bos, dtype="int32")
            if per_row:
                lengths = ops.sum(ops.cast(ops.not_equal(source_ids, 0), "int32"), 1)
                state = {
                    "model": state,
                    "step": ops.zeros_like(lengths),  # (B,) tokens produced
                    "limit": ops.minimum(2 * lengths + 10, max_length),  # (B,)
                }
            if beam_size == 1 and not beam_kwargs:
                return greedy_search(next_fn, state, start, eos, max_length)
            tokens, scores = beam_search(
                next_fn,
                state,
                start,
                eos,
                max_length,
                beam_size=beam_size,
                **beam_kwargs,
            )
            if beam_kwargs.get("num_return_sequences", 1) == 1:
                tokens, scores = tokens[:, 0], scores[:, 0]
            return tokens, scores

        return search

    def translate(
        self,
        texts,
        beam_size=1,
        max_length=None,
        return_attention=False,
        length_penalty=0.0,
        coverage_penalty=0.0,
    ):
        """Translates texts: strings in, strings out.

        Empty (or blank) texts give an empty translation without running the
        model. Words the source tokenizer does not know map to its unknown token.
        A text longer than `max_source_length` tokens raises a ValueError.

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

        Returns:
            The translation (a str for a str input, else a list of str); with
            `return_attention=True` a pair `(translations, attentions)` where
            `attentions[i]` is a dict with `"source_tokens"`, `"output_tokens"`
            (both ending with the end token) and `"weights"`, a float array
            `(len(output_tokens), len(source_tokens))`.
        """
        beam_size = _positive_int("beam_size", beam_size)
        max_length = _positive_int("max_length", max_length, allow_none=True)
        single = isinstance(texts, (str, bytes))
        texts = _as_texts(texts)
        if return_attention and self.attention == "none":
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
            eos = self.target_tokenizer.eos_id
            for row, i in enumerate(keep):
                translations[i] = self.target_tokenizer.decode(tokens[row])
            if return_attention:
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

    def _alignments(self, source, tokens):
        """Attention weights `(B, L, S)` of teacher-forcing the produced tokens.

        With the same weights and inputs this is exactly the alignment the
        decoding step computed for each produced token.
        """
        bos = np.full((tokens.shape[0], 1), self.target_tokenizer.bos_id, "int32")
        target_in = np.concatenate([bos, tokens[:, :-1]], axis=1).astype("int32")
        with no_grad():
            _, alignments = self._forward(source, target_in, training=False)
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

    # Saving.
    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_tokenizer": serialize_tokenizer(self.source_tokenizer),
                "target_tokenizer": serialize_tokenizer(self.target_tokenizer),
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "encoder_units": self.encoder_units,
                "encoder_layers": self.encoder_layers,
                "bidirectional": self.bidirectional,
                "cell": self.cell,
                "attention": self.attention,
                "query": self.query,
                "input_feeding": self.input_feeding,
                "attention_layer_size": self.attention_layer_size,
                "bridge": self.bridge,
                "dropout": self.dropout,
                "word_dropout": self.word_dropout,
                "lexical_model": self.lexical_model,
                "share_embeddings": self.share_embeddings,
                "share_decoder_embeddings": self.share_decoder_embeddings,
                "fixnorm": self.fixnorm,
                "max_source_length": self.max_source_length,
                "max_target_length": self.max_target_length,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

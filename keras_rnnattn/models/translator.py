"""An RNN encoder-decoder translator with attention: text in, text out."""

import numbers

import keras
from keras import ops

from keras_rnnattn._backend import cond_differentiable, dense_2d, run_rnn
from keras_rnnattn.decoding.sampling import draw_uniforms
from keras_rnnattn.decoding.scheduled import scheduled_sampling
from keras_rnnattn.layers.attention_decoder import CELLS, AttentionDecoder
from keras_rnnattn.layers.plain_decoder import PlainDecoder
from keras_rnnattn.layers.recurrent import gather_step, reverse_by_length
from keras_rnnattn.layers.score_layers import TRANSLATOR_ATTENTIONS, score_layer
from keras_rnnattn.models.seq2seq_task import Seq2SeqTask
from keras_rnnattn.ops import device_scalar
from keras_rnnattn.text.serialization import serialize_tokenizer

BRIDGES = ("dense", "zeros")
# The constructor arguments kept as attributes of the same name.
_CONFIG_NAMES = (
    "embedding_dim units encoder_units encoder_layers decoder_layers bidirectional "
    "cell attention "
    "query input_feeding attention_layer_size bridge dropout word_dropout "
    "lexical_model share_embeddings share_decoder_embeddings fixnorm scheduled_sampling"
).split()


def _without_none(values):
    """`values` as a tuple without its None entries (a `cond` branch's results)."""
    return tuple(v for v in values if v is not None)


def _scale_to_norm(x, norm, axis):
    """`x` scaled to L2 norm `norm` along `axis` (zero vectors stay zero)."""
    squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * (norm * ops.rsqrt(ops.maximum(squares, 1e-12)))


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class Translator(Seq2SeqTask):
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
        encoder_layers: int, the number of stacked encoder layers (each
            bidirectional with `bidirectional`).
        decoder_layers: int, the number of stacked decoder cells (GNMT-style:
            attention is queried with the top layer's output, as in tfa's
            `AttentionWrapper` over a `StackedRNNCells`); with `"dense"`
            bridges each layer gets its own initial state. Needs an attention.
        bidirectional: bool, a bidirectional encoder.
        cell: `"gru"` or `"lstm"`, for encoder and decoder.
        attention: `"bahdanau"`, `"luong_dot"`, `"luong_general"`,
            `"luong_concat"`, `"luong_location"` (scores from the decoder
            state alone, over `max_source_length` positions),
            `"bahdanau_monotonic"` or `"luong_monotonic"` (monotonic attention,
            Raffel et al. 2017: each step's attention starts where the last
            one stopped and never moves back; trained and decoded with its
            expected weights, with score noise 1.0 in training and the score
            bias starting at -1) or `"none"`.
        query: `"previous"`, `"current"` or None (by attention), see
            `AttentionDecoder`.
        input_feeding: bool, see `AttentionDecoder`. With `False` and Luong
            attention the decoder takes its fast path (a stock RNN layer).
        attention_layer_size: int, `"auto"` (= `units`), None (no attention
            layer: the context is the output) or `"concat"` ([h_t; c_t]), see
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
        scheduled_sampling: bool, train with scheduled sampling (Bengio et
            al. 2015): in training (`fit`, or a call with `training=True`)
            each target input token after the first is, independently per
            row and step, the gold token with probability 1 - p or a token
            sampled from the model's own previous output distribution (pad
            and bos excluded) with probability p; the decoder then runs step
            by step while p > 0 (teacher forcing's fast path while p = 0,
            see `sampled_forward_pass`). p is the non-trainable variable `sampling_probability`
            (0 at first), which `keras_rnnattn.callbacks.ScheduledSampling`
            moves during training without recompiling; the draws come from
            the model's own seed generator. Evaluation and decoding are as
            without it. False: plain teacher forcing (the decoder's fast
            paths kept) and no `sampling_probability` (None).
        **kwargs: base `keras.Model` arguments (`name`, `dtype`).

    It implements the hooks of `Seq2SeqTask` (`forward_pass`, `initial_state`,
    `next_fn`, `has_attention`), which gives it `translate`, `generate_ids`,
    `plot_attention`, `encode_pairs`, checked `fit`/`evaluate` and its export
    endpoints.

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
        decoder_layers=1,
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
        scheduled_sampling=False,
        **kwargs,
    ):
        super().__init__(
            source_tokenizer,
            target_tokenizer,
            max_source_length,
            max_target_length,
            **kwargs,
        )
        # === Config ===
        self.embedding_dim = self._positive_int("embedding_dim", embedding_dim)
        self.units = self._positive_int("units", units)
        self.encoder_units = self._positive_int("encoder_units", encoder_units, True)
        self.encoder_layers = self._positive_int("encoder_layers", encoder_layers)
        self.decoder_layers = self._positive_int("decoder_layers", decoder_layers)
        self._check_choice("cell", cell, CELLS)
        self._check_choice("attention", attention, TRANSLATOR_ATTENTIONS)
        self._check_choice("bridge", bridge, BRIDGES)
        self.cell = cell
        self.attention = attention
        self.bridge = bridge
        for arg, value in (("dropout", dropout), ("word_dropout", word_dropout)):
            if not 0.0 <= float(value) < 1.0:
                raise ValueError(f"`{arg}` must be in [0, 1). Received: {arg}={value}")
        if self.decoder_layers > 1 and attention == "none":
            raise ValueError(
                "A stacked decoder (`decoder_layers` > 1) needs an attention: "
                "its top layer's output is the query. Received: "
                f"decoder_layers={decoder_layers}, attention='none'"
            )
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
        if not isinstance(scheduled_sampling, bool):
            raise ValueError(
                "`scheduled_sampling` must be True or False. Received: "
                f"scheduled_sampling={scheduled_sampling!r}"
            )
        self.scheduled_sampling = scheduled_sampling
        self.bidirectional = bool(bidirectional)
        self.lexical_model = bool(lexical_model)
        self.share_embeddings = bool(share_embeddings)
        self.share_decoder_embeddings = bool(share_decoder_embeddings)
        self.query = query
        self.input_feeding = bool(input_feeding)
        self.attention_layer_size = attention_layer_size
        self.dropout = float(dropout)
        self.word_dropout = float(word_dropout)
        enc_units = self.encoder_units or self.units
        self.memory_size = enc_units * (2 if self.bidirectional else 1)
        source_size = self.source_tokenizer.vocabulary_size
        target_size = self.target_tokenizer.vocabulary_size
        emb = self.embedding_dim

        # === Layers ===
        # B batch, S source length, T target length, V target vocabulary.
        rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        # (B, S) -> (B, S, emb); with shared embeddings the encoder reads
        # `target_embedding` too.
        self.source_embedding = (
            None
            if self.share_embeddings
            else keras.layers.Embedding(source_size, emb, name="source_embedding")
        )
        # (B, T) -> (B, T, emb)
        self.target_embedding = keras.layers.Embedding(
            target_size, emb, name="target_embedding"
        )
        # (B, S, emb or memory_size) -> (B, S, enc_units), per layer and direction
        self.encoder_forward = [
            rnn(enc_units, return_sequences=True, name=f"encoder_forward_{i}")
            for i in range(self.encoder_layers)
        ]
        self.encoder_backward = [
            rnn(enc_units, return_sequences=True, name=f"encoder_backward_{i}")
            for i in range(self.encoder_layers if self.bidirectional else 0)
        ]
        # (B, memory_size) -> (B, units): one per cell state (h, and c for
        # LSTM) of each decoder layer, the bottom layer's first.
        num_states = (2 if cell == "lstm" else 1) * self.decoder_layers
        self.bridges = [
            keras.layers.Dense(self.units, activation="tanh", name=f"bridge_{i}")
            for i in range(num_states if bridge == "dense" else 0)
        ]
        # (B, T, emb) and memory -> (B, T, d) outputs and (B, T, S) alignments
        # (None without attention). The registry builds the attention of the
        # name (the location score from the longest source); "none" is None.
        mechanism = score_layer(
            attention, self.units, self.max_source_length, name="attention"
        )
        if mechanism is None:
            size = attention_layer_size
            if attention_layer_size in ("auto", None, "concat"):
                size = self.units
            self.decoder = PlainDecoder(
                self.units,
                cell=cell,
                output_size=size,
                backward_size=enc_units if self.bidirectional else 0,
                name="decoder",
            )
        else:
            decoder_cell = cell
            if self.decoder_layers > 1:
                cell_class = (
                    keras.layers.GRUCell if cell == "gru" else keras.layers.LSTMCell
                )
                decoder_cell = [
                    cell_class(self.units, name=f"decoder_cell_{i}")
                    for i in range(self.decoder_layers)
                ]
            self.decoder = AttentionDecoder(
                self.units,
                cell=decoder_cell,
                attention=mechanism,
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
        # W of the lexical model's h_t = tanh(W f_t) + f_t, (B, T, emb) ->
        # (B, T, emb); its output weights are the last `embedding_dim` rows of
        # `output_dense`'s kernel.
        self.lexical_dense = (
            keras.layers.Dense(
                emb, activation="tanh", use_bias=False, name="lexical_dense"
            )
            if self.lexical_model
            else None
        )
        if self.share_decoder_embeddings:
            # logits = E (W_p r_t) + b: the target embedding E is the output
            # layer's weights, after a linear projection (N, d) -> (N, emb) of
            # the readout r_t.
            self.output_dense = None
            self.output_projection = keras.layers.Dense(
                emb, use_bias=False, name="output_projection"
            )
        else:
            # (N, d) -> (N, V)
            self.output_dense = keras.layers.Dense(target_size, name="output_dense")
            self.output_projection = None
        # Scheduled sampling: p, set from outside (a callback), and the
        # generator of its random draws.
        self.sampling_probability = None
        if self.scheduled_sampling:
            self.sampling_probability = self.add_weight(
                shape=(),
                initializer="zeros",
                dtype="float32",
                trainable=False,
                name="sampling_probability",
            )
            self.sampling_seed_generator = keras.random.SeedGenerator(
                name="sampling_seed_generator"
            )
        self.build()  # every shape is known from the configuration

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

    @property
    def has_attention(self):
        """Whether the decoder attends (False for `attention="none"`)."""
        return self.attention != "none"

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
            num_states = (2 if self.cell == "lstm" else 1) * self.decoder_layers
            zeros = ops.zeros(
                (ops.shape(source_ids)[0], self.units), self.compute_dtype
            )
            cell_states = [zeros] * num_states
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

    def forward_pass(self, source_ids, target_in_ids, training=None):
        """Teacher forcing: the hook `Seq2SeqTask` builds `call` on.

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.
            target_in_ids: int `(B, T)`, `bos y_1 .. y_{T-1}`.
            training: bool.

        Returns:
            `(logits (B, T, V) float32, alignments (B, T, S))`; the alignments
            are None for `attention="none"`. With `scheduled_sampling=True`
            and `training=True`, those of `sampled_forward_pass` (which runs
            teacher forcing's fast path while p is 0).
        """
        if self.scheduled_sampling and training:
            logits, alignments, _ = self.sampled_forward_pass(
                source_ids, target_in_ids, training=training
            )
            return logits, alignments
        encoded = self._encode(source_ids, training=training)
        y = self._embed(
            self.target_embedding, ops.cast(target_in_ids, "int32"), training
        )  # (B, T, emb)
        return self._teacher_forced(encoded, y, training)

    def _teacher_forced(self, encoded, y, training, output_mask=None):
        """Logits and alignments of the decoder run over embedded inputs `y`.

        `encoded` is `_encode`'s result and `y` the embedded decoder inputs
        `(B, T, emb)` (dropout applied). The outputs get `output_mask`
        `(B, T, d)` when given, else the dropout layer.
        """
        memory, mask, cell_states, embedded = encoded
        outputs, alignments = self.decoder(
            y,
            memory,
            initial_state=cell_states,
            memory_mask=mask,
            training=training,
        )  # alignments: None without attention
        outputs = self._lexical_readout(outputs, alignments, embedded)
        if output_mask is not None:
            outputs = outputs * output_mask
        elif self.dropout:
            outputs = self.dropout_layer(outputs, training=training)
        # The output layer as one 2-D matmul (XLA runs it faster than a 3-D one).
        batch, length = ops.shape(outputs)[0], ops.shape(outputs)[1]
        flat = ops.reshape(outputs, (-1, outputs.shape[-1]))  # (B T, d)
        logits = ops.reshape(self._output_logits(flat), (batch, length, -1))
        logits = ops.cast(logits, "float32")  # (B, T, V)
        return logits, alignments

    def sampled_forward_pass(
        self,
        source_ids,
        target_in_ids,
        sampling_probability=None,
        uniforms=None,
        training=None,
    ):
        """Scheduled sampling: teacher forcing with some inputs drawn from the model.

        The decoder runs step by step (`keras_rnnattn.decoding.
        scheduled_sampling` over `AttentionDecoder.step`): at step t >= 1 each
        row is fed, independently, `target_in_ids[:, t]` with probability
        1 - p, or with probability p a token sampled from the softmax of its
        own logits of step t - 1 (pad and bos excluded, as in decoding).
        Dropout and word dropout apply as in `forward_pass`. p = 0 gives
        `forward_pass`'s logits; p = 1, those of sampling from `next_fn`.
        While p is 0 (a `cond` on its value, so also in a compiled train
        step) the decoder runs teacher forcing's fast path instead of the
        step loop, with the same dropout masks: training is as fast as
        without scheduled sampling until the schedule moves p. (Not in a
        train step that TensorFlow compiles with XLA, which cannot compile
        the gradient of that cond: there the loop runs at p = 0 too, with
        the same results.)

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.
            target_in_ids: int `(B, T)`, `bos y_1 .. y_{T-1}`.
            sampling_probability: p, a float in [0, 1] or a scalar tensor;
                None reads the `sampling_probability` variable (with
                `scheduled_sampling=True`).
            uniforms: optional float `(B, T, 2)` in [0, 1), the random
                numbers (see `scheduled_sampling`); None draws them from the
                model's seed generator (Keras's global one without
                `scheduled_sampling=True`).
            training: bool.

        Returns:
            `(logits (B, T, V) float32, alignments (B, T, S) or None,
            token_ids (B, T) int32)`, the last the tokens fed.
        """
        if sampling_probability is None:
            if self.sampling_probability is None:
                raise ValueError(
                    "This Translator has no `sampling_probability` variable: "
                    "pass `sampling_probability=p`, or build it with "
                    "`scheduled_sampling=True`."
                )
            sampling_probability = self.sampling_probability
        encoded = self._encode(source_ids, training=training)
        memory, mask, cell_states, embedded = encoded
        state = self._decoding_state(memory, mask, cell_states, embedded)
        mem = state["memory"]
        target_in_ids = ops.cast(target_in_ids, "int32")
        shape = (ops.shape(target_in_ids)[0], ops.shape(target_in_ids)[1])
        dtype = self.compute_dtype
        # Every random number is drawn here, before the loop and the cond: a
        # random op inside a scan or a branch would move the seed generator's
        # state there (JAX cannot trace that).
        masks = {}
        if self.word_dropout and training:
            ones = ops.ones(shape + (1,), dtype=dtype)
            masks["word"] = self.word_dropout_layer(ones, training=training)
        if self.dropout and training:
            emb, readout = self.embedding_dim, sum(self._readout_sizes)
            ones = ops.ones(shape + (emb,), dtype=dtype)
            masks["embedding"] = self.dropout_layer(ones, training=training)
            ones = ops.ones(shape + (readout,), dtype=dtype)
            masks["output"] = self.dropout_layer(ones, training=training)
        if uniforms is None:
            uniforms = draw_uniforms(
                shape + (2,), getattr(self, "sampling_seed_generator", None)
            )

        def step_fn(token_ids, states, masks_t=None):
            masks_t = masks_t or {}
            y = self.target_embedding(token_ids)  # (B, emb)
            for key in ("word", "embedding"):
                if key in masks_t:
                    y = y * masks_t[key]
            output, states, alignment = self.decoder.step(
                y, states, mem, training=training
            )
            if self.lexical_model:
                output = self._lexical_readout(output, alignment, embedded)
            if "output" in masks_t:
                output = output * masks_t["output"]
            logits = ops.cast(self._output_logits(output), "float32")  # (B, V)
            if alignment is None:
                return logits, states
            return logits, states, alignment

        tok = self.target_tokenizer

        def sampled():
            logits, token_ids, alignments = scheduled_sampling(
                step_fn,
                state["states"],
                target_in_ids,
                sampling_probability,
                uniforms=uniforms,
                excluded_ids=(tok.pad_id, tok.bos_id),
                step_inputs=masks or None,
            )
            return _without_none((logits, alignments, token_ids))

        def teacher_forced():
            y = self.target_embedding(target_in_ids)  # (B, T, emb)
            for key in ("word", "embedding"):
                if key in masks:
                    y = y * masks[key]
            logits, alignments = self._teacher_forced(
                encoded, y, training, output_mask=masks.get("output")
            )
            if alignments is not None:
                alignments = ops.cast(alignments, self.compute_dtype)
            return _without_none((logits, alignments, target_in_ids))

        if isinstance(sampling_probability, (int, float)):
            results = teacher_forced() if sampling_probability == 0 else sampled()
        elif training and not cond_differentiable(self.jit_compile):
            results = sampled()  # right for p = 0 too, only slower
        else:
            p = ops.convert_to_tensor(sampling_probability)
            results = ops.cond(ops.equal(p, 0), teacher_forced, sampled)
        logits, *rest = results
        alignments = rest[0] if len(rest) == 2 else None
        return logits, alignments, rest[-1]

    def initial_state(self, source_ids):
        """The decoding state for `next_fn`: encoder memory and the first state.

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.

        Returns:
            `{"states": [...], "memory": {...}}`: the decoder's states (each
            `(B, units)`) and its prepared memory (with the embedded source
            under `"source_embeddings"` for the lexical model).
        """
        memory, mask, cell_states, embedded = self._encode(source_ids, training=False)
        return self._decoding_state(memory, mask, cell_states, embedded)

    def _decoding_state(self, memory, mask, cell_states, embedded):
        """`initial_state`'s dict from the results of `_encode`."""
        batch_size = ops.shape(mask)[0]
        mem = self.decoder.prepare_memory(memory, mask)
        if self.lexical_model:
            mem["source_embeddings"] = embedded  # (B, S, emb)
        states = self.decoder.get_initial_state(batch_size, cell_states, mem)
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

    # Saving.
    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if (
            "decoder_layers" not in config
            and "attention_layer_size" in config
            and config["attention_layer_size"] is None
        ):
            # Saved when `attention_layer_size=None` meant o_t = [h_t; c_t].
            config["attention_layer_size"] = "concat"
        return super().from_config(config)

    def get_config(self):
        config = super().get_config()  # with max_source_length, max_target_length
        for side in ("source_tokenizer", "target_tokenizer"):
            config[side] = serialize_tokenizer(getattr(self, side))
        config.update({name: getattr(self, name) for name in _CONFIG_NAMES})
        return config

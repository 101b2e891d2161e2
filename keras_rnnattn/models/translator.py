"""An RNN encoder-decoder translator with attention: text in, text out."""

import keras
from keras import ops

from keras_rnnattn.layers.attention_decoder import CELLS
from keras_rnnattn.layers.score_layers import TRANSLATOR_ATTENTIONS
from keras_rnnattn.models._scheduled_sampling import (
    sampled_forward_pass,
    sampling_variables,
)
from keras_rnnattn.models._translator_checks import (
    check_translator_arguments,
    upgrade_config,
)
from keras_rnnattn.models._translator_decoder import decoding_state, make_decoder
from keras_rnnattn.models._translator_encoder import (
    build_encoder,
    encode,
    make_encoder_layers,
)
from keras_rnnattn.models._translator_readout import Readout, readout_layers
from keras_rnnattn.models.seq2seq_task import Seq2SeqTask
from keras_rnnattn.text.serialization import serialize_tokenizer

BRIDGES = ("dense", "zeros")
# The constructor arguments kept as attributes of the same name.
_CONFIG_NAMES = (
    "embedding_dim units encoder_units encoder_layers decoder_layers bidirectional "
    "cell attention "
    "query input_feeding attention_layer_size bridge dropout word_dropout "
    "lexical_model share_embeddings share_decoder_embeddings fixnorm scheduled_sampling"
).split()


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
            al. 2015; `sampled_forward_pass`): in training each target input
            token after the first is the gold token with probability 1 - p,
            else one sampled from the model's previous output (pad and bos
            excluded). p is the non-trainable variable
            `sampling_probability` (0 at first), which
            `keras_rnnattn.callbacks.ScheduledSampling` moves during training
            without recompiling. Evaluation and decoding are as without it.
            False: plain teacher forcing and `sampling_probability=None`.
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
        self.cell, self.attention, self.bridge = cell, attention, bridge
        check_translator_arguments(
            self.source_tokenizer,
            self.target_tokenizer,
            attention,
            self.decoder_layers,
            dropout,
            word_dropout,
            lexical_model,
            share_embeddings,
            share_decoder_embeddings,
            fixnorm,
            scheduled_sampling,
        )
        self.fixnorm = None if fixnorm is None else float(fixnorm)
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
        # With shared embeddings the encoder reads `target_embedding` too.
        num_states = (2 if cell == "lstm" else 1) * self.decoder_layers
        (
            self.source_embedding,
            self.target_embedding,
            self.encoder_forward,
            self.encoder_backward,
            self.bridges,
        ) = make_encoder_layers(
            (None if self.share_embeddings else source_size, target_size, emb),
            cell,
            enc_units,
            self.encoder_layers,
            self.bidirectional,
            (self.units, num_states if bridge == "dense" else 0),
        )
        # (B, T, emb) and memory -> (B, T, d) outputs and (B, T, S) alignments
        # (None without attention).
        self.decoder = make_decoder(
            attention,
            cell,
            self.units,
            self.decoder_layers,
            query,
            input_feeding,
            attention_layer_size,
            self.max_source_length,
            enc_units if self.bidirectional else 0,
        )
        self.dropout_layer = keras.layers.Dropout(self.dropout, name="dropout")
        # One draw per token, shared by its embedding's features.
        self.word_dropout_layer = keras.layers.Dropout(
            self.word_dropout, noise_shape=(None, None, 1), name="word_dropout"
        )
        self.lexical_dense, self.output_dense, self.output_projection = readout_layers(
            emb, target_size, lexical_model, share_decoder_embeddings
        )
        self._readout = Readout(
            self.decoder,
            self.target_embedding,
            self.lexical_dense,
            self.output_dense,
            self.output_projection,
            self.dropout_layer,
            self.word_dropout_layer,
            self.fixnorm,
        )
        # Scheduled sampling: p, set from outside (a callback), and the
        # generator of its random draws.
        self.sampling_probability = None
        if self.scheduled_sampling:
            self.sampling_probability, self.sampling_seed_generator = (
                sampling_variables(self)
            )
        self.build()  # every shape is known from the configuration

    def build(self, input_shape=None):
        if self.built:
            return
        emb = self.embedding_dim
        if self.source_embedding is not None:
            self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        build_encoder(
            self.encoder_forward,
            self.encoder_backward,
            self.bridges,
            emb,
            self.memory_size,
        )
        self.decoder.build((None, None, emb), (None, None, self.memory_size))
        self._readout.build(self.decoder.output_size, emb)
        if self.share_decoder_embeddings:
            self.output_bias = self.add_weight(
                shape=(self.target_tokenizer.vocabulary_size,),
                initializer="zeros",
                name="output_bias",
            )
            self._readout.output_bias = self.output_bias
        self.built = True

    @property
    def has_attention(self):
        """Whether the decoder attends (False for `attention="none"`)."""
        return self.attention != "none"

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
        embedding = self.source_embedding
        if embedding is None:  # share_embeddings
            embedding = self.target_embedding
        embedded = self._readout.embed(embedding, source_ids, training)
        num_states = (2 if self.cell == "lstm" else 1) * self.decoder_layers
        memory, mask, cell_states = encode(
            source_ids,
            embedded,
            self.encoder_forward,
            self.encoder_backward,
            self.bridges,
            (num_states, self.units, self.compute_dtype),
            training,
        )
        return memory, mask, cell_states, embedded

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
        y = self._readout.embed(
            self.target_embedding, ops.cast(target_in_ids, "int32"), training
        )  # (B, T, emb)
        return self._readout.teacher_forced(encoded, y, training)

    def initial_state(self, source_ids):
        """The decoding state for `next_fn`: encoder memory and the first state.

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.

        Returns:
            `{"states": [...], "memory": {...}}`: the decoder's states (each
            `(B, units)`) and its prepared memory (with the embedded source
            under `"source_embeddings"` for the lexical model).
        """
        encoded = self._encode(source_ids, training=False)
        return decoding_state(self.decoder, *encoded, self.lexical_model)

    def next_fn(self, token_ids, state, constants=None):
        """One decoding step for `keras_rnnattn.decoding`.

        Args:
            token_ids: int `(N,)`, the previous tokens.
            state: `{"states": [...], "memory": {...}}` (see `initial_state`).
            constants: optional `step_constants()`, computed once for all
                the steps of a search (else computed here).

        Returns:
            `(logits (N, V) float32, state, alignment (N, S))`; the alignment is
            omitted for `attention="none"`.
        """
        y = self.target_embedding(ops.cast(token_ids, "int32"))  # (N, E)
        memory = state["memory"]
        embedded = memory["source_embeddings"] if self.lexical_model else None
        logits, states, alignment = self._readout.step(
            y, state["states"], memory, embedded, constants=constants
        )  # (N, V)
        logits = logits + self._never_generated()  # pad and bos are never produced
        new_state = {"states": states, "memory": state["memory"]}
        if alignment is None:
            return logits, new_state
        return logits, new_state, ops.cast(alignment, "float32")

    def step_constants(self):
        """The fixnorm output layer's scaled kernel blocks, or None.

        They depend on the weights alone: a search computes them once and
        passes them to every step (`next_fn(..., constants=...)`); see
        `Readout.step_constants`.

        Returns:
            `{"output_kernels": [(d_p, V), ...]}` with `fixnorm`; None
            without.
        """
        return self._readout.step_constants()

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
        scheduled_sampling`): at step t >= 1 each row is fed `target_in_ids[:,
        t]` with probability 1 - p, else a token sampled from its own logits
        of step t - 1 (pad and bos excluded). Dropout applies as in
        `forward_pass`; p = 0 gives `forward_pass`'s logits, p = 1 those of
        sampling from `next_fn`. While p is 0 (a `cond` on its value) teacher
        forcing's fast path runs instead of the step loop, with the same
        dropout masks (not under TensorFlow's XLA, which cannot compile the
        gradient of that cond: there the loop runs, with the same results).

        Args:
            source_ids: int `(B, S)`, padded with 0 at the end.
            target_in_ids: int `(B, T)`, `bos y_1 .. y_{T-1}`.
            sampling_probability: p, a float in [0, 1] or a scalar tensor;
                None reads the `sampling_probability` variable (with
                `scheduled_sampling=True`).
            uniforms: optional float `(B, T, 2)` in [0, 1), the random
                numbers (see `scheduled_sampling`); None draws them from the
                model's seed generator (Keras's global one without it).
            training: bool.

        Returns:
            `(logits (B, T, V) float32, alignments (B, T, S) or None,
            token_ids (B, T) int32)`, the last the tokens fed.
        """
        return sampled_forward_pass(
            self, source_ids, target_in_ids, sampling_probability, uniforms, training
        )

    # Saving.
    @classmethod
    def from_config(cls, config):
        return super().from_config(upgrade_config(config))

    def get_config(self):
        config = super().get_config()  # with max_source_length, max_target_length
        for side in ("source_tokenizer", "target_tokenizer"):
            config[side] = serialize_tokenizer(getattr(self, side))
        config.update({name: getattr(self, name) for name in _CONFIG_NAMES})
        return config

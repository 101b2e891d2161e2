"""A recurrent language model whose output at t attends over its previous states."""

import keras
import numpy as np
from keras import ops

import keras_rnnattn.models._lm_generation as generating
from keras_rnnattn.decoding.search_settings import SearchSettings
from keras_rnnattn.layers.recurrent import recurrent_layer
from keras_rnnattn.layers.sequence_self_attention import (
    SCORE_NAMES,
    SequenceSelfAttention,
)
from keras_rnnattn.models._generator import CompileKey
from keras_rnnattn.models.endpoint import (
    Endpoint,
    flatten_state,
    state_inputs,
    unflatten_state,
)
from keras_rnnattn.models.generation import GenerationMixin
from keras_rnnattn.models.task import TaskContract, TextTask, embedding_and_mask
from keras_rnnattn.text import inputs as text_utils


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class AttentiveLanguageModel(GenerationMixin, TextTask, keras.Model):
    """An RNN language model with causal attention over its previous hidden states.

    For token ids x_1..x_T (the text with a begin-of-sequence token first):

    1. h_t = RNN(embed(x_t), h_{t-1}), a GRU or an LSTM `(B, T, units)`;
    2. c_t = Σ_{j<=t} a_tj h_j, a_tj = softmax_j score(h_t, h_j) over the
       previous real positions (causal `SequenceSelfAttention`);
    3. h̃_t = tanh(W_c [h_t; c_t]) (Luong's attentional state);
    4. logits of x_{t+1} = W_o h̃_t + b `(B, T, vocabulary_size)`.

    `attention=False` drops steps 2 and 3's context (h̃_t = tanh(W_c h_t)): the
    same RNN without attention, the baseline to compare against.

    Word- or character-level is the tokenizer's choice (`keras_rnnattn.text`).
    With a tokenizer, `fit` takes texts (the targets are the texts shifted by
    one, with an end token), `generate` continues a prompt and `perplexity`
    scores texts; the tokenizer is part of the config, so
    `keras.models.load_model` restores a model that reads and writes strings.
    `fit`/`evaluate`/`predict` also take token ids: inputs `(B, T)` padded at the
    end with 0 and targets `(B, T)` (padded targets are ignored by the loss).

    Generation keeps the RNN state and a buffer of the previous hidden states
    `(B, max_length, units)` with the current position in the decoding state,
    so each step costs one RNN step and one attention read; it gives the same
    logits as the full forward pass.

    Bad input: an empty prompt (no tokens) is allowed and starts from the
    begin token alone; a text of unknown words reads as unknown tokens; a
    prompt plus the requested length longer than `max_length` raises
    `ValueError`, as do token ids outside the vocabulary.

    Args:
        vocabulary_size: int, the number of token ids (default: the tokenizer's).
        tokenizer: optional `keras_rnnattn.text` tokenizer (or its serialized
            form).
        embedding_dim: int, the size of the token embeddings.
        units: int, the RNN units.
        cell: `"gru"` or `"lstm"`.
        score: a `SequenceSelfAttention` score name. The default,
            `"scaled_general"` (qᵀWk / √units), learned the copy test task from
            every seed tried; unscaled `"general"` sometimes saturates on a few
            positions and stalls.
        attention: bool, attend over the previous states (False: the baseline).
        max_length: int, the most positions generation can use (prompt with
            its begin token, plus the generated tokens).
        dropout: float in [0, 1), dropout before the output layer.
        **kwargs: base model arguments (`name`, `trainable`).

    Example:

    >>> import numpy as np
    >>> lm = AttentiveLanguageModel(vocabulary_size=20, units=8, max_length=16)
    >>> lm.compile()
    >>> x = np.array([[2, 5, 6, 7], [2, 8, 9, 0]], "int32")
    >>> y = np.array([[5, 6, 7, 3], [8, 9, 3, 0]], "int32")
    >>> _ = lm.fit(x, y, epochs=1, verbose=0)
    >>> lm.predict(x, verbose=0).shape
    (2, 4, 20)
    """

    # Without a sampler `generate` samples at temperature 1 (keras-hub's
    # `compile(sampler=...)` sets another).
    default_search_settings = SearchSettings("sample")
    task_contract = TaskContract(
        "generate",
        methods={
            "generate": (
                "max_length",
                "max_new_tokens",
                "temperature",
                "top_k",
                "top_p",
                "seed",
                "strip_prompt",
            ),
            "perplexity": ("batch_size",),
        },
        export_options=("max_length", "temperature", "top_k", "top_p"),
    )

    def __init__(
        self,
        vocabulary_size=None,
        tokenizer=None,
        embedding_dim=32,
        units=64,
        cell="gru",
        score="scaled_general",
        attention=True,
        max_length=128,
        dropout=0.0,
        **kwargs,
    ):
        vocabulary = self._resolve_text(
            tokenizer, vocabulary_size, cell, max_length, min_length=2, optional=False
        )
        tokenizer, vocabulary_size, pad_id = vocabulary
        self._check_choice("score", score, SCORE_NAMES)

        # === Layers ===
        # The input block first: the weights files hold its layers' names.
        token_ids, mask, x, token_embedding = embedding_and_mask(
            vocabulary_size, embedding_dim, pad_id
        )  # (B, T), (B, T), (B, T, embedding_dim)
        rnn = recurrent_layer(cell, units, name="rnn")
        self_attention = (
            SequenceSelfAttention(
                score=score, causal=True, concat=True, name="self_attention"
            )
            if attention
            else None
        )
        attentional_dense = keras.layers.Dense(
            units, activation="tanh", name="attentional_dense"
        )
        dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        output_dense = keras.layers.Dense(vocabulary_size, name="output_dense")

        # === Functional model ===
        # The RNN runs unmasked: padding comes last, so it never changes the
        # states of earlier, real positions; attention and loss skip padding.
        hidden = rnn(x)  # (B, T, units)
        if self_attention is not None:
            hidden = self_attention(hidden, mask=mask)  # (B, T, 2 units): [h; c]
        features = attentional_dense(hidden)  # (B, T, units)
        logits = output_dense(dropout_layer(features))  # (B, T, vocabulary_size)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)
        self.token_embedding = token_embedding
        self.rnn = rnn
        self.self_attention = self_attention
        self.attentional_dense = attentional_dense
        self.output_dense = output_dense

        # === Config ===
        self._set_text_config(
            vocabulary, embedding_dim, units, cell, dropout, max_length
        )
        self.score = score
        self.attention = bool(attention)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "attention": self.attention,
            }
        )
        return config

    def compile_defaults(self):
        """Cross-entropy from the logits that ignores padded targets (id
        `pad_id`), and token accuracy."""
        loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=self.pad_id
        )
        return loss, ["accuracy"]

    # --- Inputs: strings or checked ids --------------------------------------
    def _text_pairs(self, texts, owner):
        """Inputs `[bos] + ids` and targets `ids + [eos]` of texts, padded."""
        items, _ = text_utils.as_text_list(texts, owner)
        encoded = text_utils.encode_texts(self.tokenizer, items, owner)
        x = text_utils.pad([[self.tokenizer.bos_id] + s for s in encoded], self.pad_id)
        y = text_utils.pad([s + [self.tokenizer.eos_id] for s in encoded], self.pad_id)
        return x, y

    def preprocess_samples(self, x, y=None, owner=None, with_targets=True):
        """Input and target ids for texts, or checked ids.

        `x` is texts (a list of strings; the targets are the texts shifted by
        one, so `y` must be None), input ids `(N, T)` with target ids `y`
        `(N, T)`, or a `tf.data.Dataset` of batches `(input_ids, target_ids)`,
        both int `(batch, length)` (call `.batch(n)` on an unbatched one).
        """
        if text_utils.is_checked_id_dataset(x, owner, with_targets, "target ids"):
            return x, y
        if text_utils.is_text(x):
            if y is not None:
                raise ValueError(
                    f"{owner}: with texts, the targets are the texts themselves; "
                    "pass y=None."
                )
            return self._text_pairs(x, owner)
        x = text_utils.check_token_ids(x, self.vocabulary_size, owner)
        if y is not None and isinstance(y, (np.ndarray, list, tuple)):
            y = text_utils.check_token_ids(y, self.vocabulary_size, owner)
            if y.shape != x.shape:
                raise ValueError(
                    f"{owner}: targets must have the inputs' shape {x.shape}. "
                    f"Received shape {y.shape}"
                )
        return x, y

    def perplexity(self, texts, batch_size=32):
        """exp of the mean negative log-likelihood per token of texts.

        Every token of every text and each text's end token count once.

        Args:
            texts: a string or a list of strings.
            batch_size: int.

        Returns:
            A float. An empty list of texts has no tokens to score: it raises
            a `ValueError`, as `evaluate` does.
        """
        x, y = self._text_pairs(texts, self._caller("perplexity"))
        logits = self.predict(x, batch_size=batch_size, verbose=0)  # (N, T, V)
        logits = logits.astype("float64")
        logits -= logits.max(axis=-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        picked = np.take_along_axis(log_probs, y[..., None], axis=-1)[..., 0]
        real = y != self.pad_id
        return float(np.exp(-picked[real].sum() / real.sum()))

    # --- Generation --------------------------------------------------------------
    def initial_state(self, batch_size):
        """The decoding state before the first token.

        Returns:
            A dict: `"rnn"`, the RNN cell's states (a list of `(B, units)`);
            `"memory"`, the hidden states so far `(B, max_length, units)`, zero
            where not yet written; `"position"`, the next position `(B,)`.
        """
        zeros = ops.zeros((batch_size, self.units), dtype=self.compute_dtype)
        return {
            "rnn": [zeros, zeros] if self.cell == "lstm" else [zeros],
            "memory": ops.zeros(
                (batch_size, self.max_length, self.units), dtype=self.compute_dtype
            ),
            "position": ops.zeros((batch_size,), dtype="int32"),
        }

    def next_fn(self, token_ids, state):
        """One generation step: the next token's logits after `token_ids`.

        The `next_fn` of `keras_rnnattn.decoding`; `next_logits` is the same
        method.

        Args:
            token_ids: integer `(B,)`, the token at the state's position.
            state: the decoding state (see `initial_state`).

        Returns:
            `(logits, state)`: `(B, vocabulary_size)` and the state one position
            further on. The logits equal the full forward pass's at that position.
        """
        x = self.token_embedding(token_ids)  # (B, embedding_dim)
        h, rnn_state = self.rnn.cell(x, state["rnn"])  # (B, units)
        position = state["position"]  # (B,)
        features = h
        memory = state["memory"]
        if self.self_attention is not None:
            slot = ops.one_hot(position, self.max_length, dtype=h.dtype)  # (B, M)
            slot = ops.expand_dims(slot, -1)  # (B, M, 1)
            memory = memory * (1.0 - slot) + slot * ops.expand_dims(h, 1)
            seen = ops.less_equal(
                ops.expand_dims(ops.arange(self.max_length), 0),
                ops.expand_dims(position, -1),
            )  # (B, M): positions 0..t
            context = self.self_attention.scorer(
                h, memory, value_mask=seen
            )  # (B, units)
            features = ops.concatenate([h, context], axis=-1)  # (B, 2 units)
        logits = self.output_dense(self.attentional_dense(features))  # (B, V)
        state = {"rnn": list(rnn_state), "memory": memory, "position": position + 1}
        return logits, state

    next_logits = next_fn

    def generate_ids(
        self,
        prompt_ids,
        uniforms=None,
        max_length=None,
        temperature=1.0,
        top_k=None,
        top_p=None,
        beam_size=1,
    ):
        """Generated token ids for prompt ids: greedy search, beam search, or
        sampling with the uniform numbers given.

        Compiled on JAX and TensorFlow once per shape and setting (as
        `Translator.generate_ids`). The padding, unknown and begin tokens are
        never generated.

        Args:
            prompt_ids: int `(B, P)`, each row the begin token and the prompt's
                tokens, right-padded with the pad id.
            uniforms: optional float `(L, B)` in [0, 1): sample with these
                numbers (`decoding.sampling.draw_uniforms`); None: greedy
                search.
            max_length: int, the most tokens generated (default: as many as
                fit); with `uniforms`, their `L`.
            temperature, top_k, top_p: the sampling settings (with `uniforms`).
            beam_size: int, beam search with this many beams when above 1
                (without `uniforms`): the best sequence of each row.

        Returns:
            `(tokens, scores)` as NumPy arrays, `(B, L)` and `(B,)`.
        """
        if uniforms is None:
            method = "greedy" if int(beam_size) == 1 else "beam"
            settings = self.search_settings.replace(
                method=method, beam_size=beam_size, num_return_sequences=1
            )
        else:
            settings = self.search_settings.replace(
                method="sample", temperature=temperature, top_k=top_k, top_p=top_p
            )
        return generating.generate_with(
            self, prompt_ids, settings, uniforms, max_length
        )

    def generate(
        self,
        prompt,
        max_length=None,
        temperature=None,
        top_k=None,
        top_p=None,
        seed=None,
        max_new_tokens=None,
        strip_prompt=False,
    ):
        """Continues a prompt, with the sampler of `compile` or the settings given.

        keras-hub's `CausalLM.generate`: `max_length` counts the whole
        sequence, the begin token and the prompt included; `max_new_tokens`
        counts the generated tokens alone.

        Args:
            prompt: a string or a list of strings (may be empty).
            max_length: int, the most tokens of each whole sequence (begin
                token, prompt and generated tokens), at most the model's
                `max_length`. Give this or `max_new_tokens`; with neither,
                as many tokens as fit in the model's `max_length`.
            temperature: float; 0 means greedy search. None: the sampler of
                `compile(sampler=...)` decides (sampling at temperature 1
                without one).
            top_k: optional int, sample among the k most likely tokens.
            top_p: optional float, sample from the smallest set of tokens whose
                probability reaches p (nucleus sampling).
            seed: optional int; the same seed gives the same text on the same
                backend. Each backend (JAX, TensorFlow, torch) has its own
                random stream, so one seed gives other text on another backend.
            max_new_tokens: int, the most tokens to generate after each
                prompt.
            strip_prompt: bool, return the generated text alone, without the
                prompt.

        Generation stops at the end token. The padding, unknown and begin
        tokens are never generated. The prompt and the loop run compiled on
        JAX and TensorFlow (`jax.jit`, `tf.function`), once for each
        generated length and setting.

        Returns:
            The prompt's tokens followed by the generated ones (the generated
            ones alone with `strip_prompt=True`), decoded by the tokenizer: a
            string, or a list for a list of prompts.

        Example:

        >>> from keras_rnnattn.models import AttentiveLanguageModel
        >>> lm = AttentiveLanguageModel.from_preset("web_bible_char_lm")
        >>> lm.compile(sampler="greedy")
        >>> lm.generate("In the beginning", max_length=27)
        'In the beginning of the ch'
        >>> lm.generate("In the beginning", max_new_tokens=10, strip_prompt=True)
        ' of the ch'
        """
        return generating.generate_texts(
            self,
            prompt,
            max_length,
            temperature,
            top_k,
            top_p,
            seed,
            max_new_tokens,
            strip_prompt,
        )

    # --- Export -----------------------------------------------------------------
    def check_export_options(self, options):
        """`max_length` (the exported loops' length) defaults to, and may not
        exceed, `max_length - 1` (one position is the begin token)."""
        room = self.max_length - 1
        if options["max_length"] is None:
            options["max_length"] = room
        if options["max_length"] > room:
            raise ValueError(
                f"`max_length` can be at most {room} for this language model "
                f"(max_length={self.max_length} positions, one is the begin token). "
                f"Received: max_length={options['max_length']}"
            )
        return options

    def export_endpoints(self, options):
        """`decode_step` (one token and the state to the logits and the next
        state) and `sample` (prompt ids and uniform numbers to generated ids)."""
        b, s = options["batch_size"], options["sequence_length"]
        max_length = options["max_length"]
        template = self.initial_state(1)

        def decode_step(token_ids, **state):
            logits, state = self.next_fn(
                token_ids, unflatten_state("state", template, state)
            )
            return {
                "logits": ops.cast(logits, "float32"),
                **flatten_state("state", state),
            }

        settings = self.search_settings.replace(
            method="sample",
            temperature=options["temperature"],
            top_k=options["top_k"],
            top_p=options["top_p"],
        )

        generator = generating.lm_generator(self, CompileKey(settings, max_length))

        def sample(token_ids, uniforms):
            tokens, scores = generator(token_ids, uniforms)
            return {"tokens": tokens, "scores": scores}

        return [
            Endpoint(
                "decode_step",
                decode_step,
                {"token_ids": ((b,), "int32"), **state_inputs("state", template, b)},
                "token (B,) and state -> logits (B, V) and the next state",
            ),
            Endpoint(
                "sample",
                sample,
                {
                    "token_ids": ((b, s), "int32"),
                    "uniforms": ((max_length, b), "float32"),
                },
                "prompt ids (B, P) starting with bos, right-padded with 0, and "
                f"uniform numbers in [0, 1) (max_length={max_length}, B) -> "
                "generated ids and their summed log-probabilities",
            ),
        ]

"""The readout of the `Translator`: embeddings, the lexical model, the output layer."""

import keras
from keras import ops

from keras_rnnattn._backend import dense_2d, linear


def _scale_to_norm(x, norm, axis):
    """`x` scaled to L2 norm `norm` along `axis` (zero vectors stay zero)."""
    squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * (norm * ops.rsqrt(ops.maximum(squares, 1e-12)))


class TranslatorReadout:
    """The Translator's parts between the decoder and the logits.

    A mixin of `Translator` (its layers: `target_embedding`, `decoder`,
    `lexical_dense`, `output_dense` or `output_projection`, the dropout
    layers); `step_readout` is the one step that decoding (`next_fn`) and
    scheduled sampling share.
    """

    def _make_readout_layers(self, emb, target_size):
        """The lexical model's and the output layer's layers (in `__init__`)."""
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

    def _build_readout(self, readout):
        """Builds the readout's layers over the decoder's `readout` size."""
        emb = self.embedding_dim
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

    def step_constants(self):
        """The fixnorm output layer's scaled kernel blocks, or None.

        They depend on the weights alone: a search computes them once and
        passes them to every step (`next_fn(..., constants=...)`). XLA
        hoisted them out of JAX's loop; TensorFlow's loop and a torch step
        computed them at every step.

        Returns:
            `{"output_kernels": [(d_p, V), ...]}` with `fixnorm`, each readout
            part's block of the output kernel with its columns at norm
            `fixnorm`; None without `fixnorm`.

        Example:

        >>> import numpy as np
        >>> from keras import ops
        >>> from keras_rnnattn.models import Translator
        >>> from keras_rnnattn.text import WordTokenizer
        >>> tok = WordTokenizer().fit(["a b c"])
        >>> model = Translator(tok, tok, embedding_dim=8, units=16, fixnorm=3.5)
        >>> (block,) = model.step_constants()["output_kernels"]  # (16, 7)
        >>> np.linalg.norm(ops.convert_to_numpy(block), axis=0).round(4).tolist()[:3]
        [3.5, 3.5, 3.5]
        """
        if self.fixnorm is None:
            return None
        kernel = self.output_dense.kernel  # (d, V)
        blocks, start = [], 0
        for size in self._readout_sizes:
            block = kernel[start : start + size]
            blocks.append(_scale_to_norm(block, self.fixnorm, 0))
            start += size
        return {"output_kernels": blocks}

    def step_readout(
        self,
        y,
        states,
        memory,
        source_embedded,
        training=None,
        output_mask=None,
        constants=None,
    ):
        """One decoder step and the output layer: what decoding and scheduled
        sampling share.

        Args:
            y: the embedded input tokens `(N, emb)`.
            states: the decoder's states; `memory`: its prepared memory.
            source_embedded: the embedded source `(N, S, emb)` (the lexical
                model's), or None.
            training: bool.
            output_mask: optional `(N, d)` dropout mask of the readout.
            constants: optional `step_constants()`, computed once for many
                steps.

        Returns:
            `(logits (N, V) float32, states, alignment (N, S) or None)`.
        """
        output, states, alignment = self.decoder.step(
            y, states, memory, training=training
        )
        if self.lexical_model:
            output = self._lexical_readout(output, alignment, source_embedded)
        if output_mask is not None:
            output = output * output_mask
        logits = self._output_logits(output, constants)
        return ops.cast(logits, "float32"), states, alignment

    def _output_logits(self, readout, constants=None):
        """The output layer: logits `(N, V)` of readouts `(N, d)`."""
        if self.fixnorm is not None:
            if constants is None:
                constants = self.step_constants()
            return self._fixnorm_logits(readout, constants["output_kernels"])
        if not self.share_decoder_embeddings:
            return dense_2d(self.output_dense, readout)
        projected = self.output_projection(readout)  # (N, emb)
        embeddings = ops.cast(self.target_embedding.embeddings, projected.dtype)
        logits = ops.matmul(projected, ops.transpose(embeddings))  # (N, V)
        return logits + ops.cast(self.output_bias, projected.dtype)

    def _fixnorm_logits(self, readout, kernels):
        """Logits `(N, V)` with each readout part and weight column at norm r.

        logits = sum over parts p of (r x_p / |x_p|) . (r W_p / |W_p|) + b, the
        columns of each row block W_p of the kernel normalized one by one
        (`kernels`, of `step_constants`).
        """
        dtype = readout.dtype
        logits, start = None, 0
        for size, w in zip(self._readout_sizes, kernels):
            x = _scale_to_norm(readout[:, start : start + size], self.fixnorm, 1)
            part = linear(x, ops.cast(w, dtype))  # (N, V)
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

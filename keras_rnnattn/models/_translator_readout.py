"""The readout of the `Translator`: embeddings, the lexical model, the output layer.

`Readout` is a plain object the Translator owns (as `AttentionDecoder` owns its
`Mechanisms`): the one readout that decoding (`next_fn`), teacher forcing and
scheduled sampling share. The layers it reads stay attributes of the
Translator, which Keras tracks (their weight paths are the Translator's).
"""

import keras
from keras import ops

from keras_rnnattn._backend import dense_2d, linear


def _scale_to_norm(x, norm, axis):
    """`x` scaled to L2 norm `norm` along `axis` (zero vectors stay zero)."""
    squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * (norm * ops.rsqrt(ops.maximum(squares, 1e-12)))


def readout_layers(emb, target_size, lexical_model, share_decoder_embeddings):
    """The lexical model's and the output layer's layers.

    Args:
        emb: int, the embedding size.
        target_size: int V, the target vocabulary size.
        lexical_model: bool.
        share_decoder_embeddings: bool, the target embedding as the output
            layer's weights (after a projection).

    Returns:
        `(lexical_dense, output_dense, output_projection)`, each a layer or
        None.
    """
    # W of the lexical model's h_t = tanh(W f_t) + f_t, (B, T, emb) ->
    # (B, T, emb); its output weights are the last `embedding_dim` rows of
    # `output_dense`'s kernel.
    lexical_dense = None
    if lexical_model:
        lexical_dense = keras.layers.Dense(
            emb, activation="tanh", use_bias=False, name="lexical_dense"
        )
    if share_decoder_embeddings:
        # logits = E (W_p r_t) + b: the target embedding E is the output
        # layer's weights, after a linear projection (N, d) -> (N, emb) of
        # the readout r_t.
        projection = keras.layers.Dense(emb, use_bias=False, name="output_projection")
        return lexical_dense, None, projection
    # (N, d) -> (N, V)
    return lexical_dense, keras.layers.Dense(target_size, name="output_dense"), None


class Readout:
    """The Translator's parts between the decoder and the logits.

    Args:
        decoder: the Translator's decoder (`AttentionDecoder` or
            `PlainDecoder`).
        target_embedding: the target `Embedding`.
        lexical_dense: the lexical model's W, or None.
        output_dense: the output layer, or None with shared decoder
            embeddings.
        output_projection: W_p of shared decoder embeddings, or None.
        dropout_layer: the `Dropout` of the embeddings and the outputs.
        word_dropout_layer: the `Dropout` of whole input tokens.
        fixnorm: float r of the fixnorm output layer, or None.

    The output bias of shared decoder embeddings is the Translator's weight,
    made in its `build` and given to `build` here.
    """

    def __init__(
        self,
        decoder,
        target_embedding,
        lexical_dense,
        output_dense,
        output_projection,
        dropout_layer,
        word_dropout_layer,
        fixnorm,
    ):
        self.decoder = decoder
        self.target_embedding = target_embedding
        self.lexical_dense = lexical_dense
        self.output_dense = output_dense
        self.output_projection = output_projection
        self.dropout_layer = dropout_layer
        self.word_dropout_layer = word_dropout_layer
        self.fixnorm = fixnorm
        self.output_bias = None
        self.sizes = None  # the readout's parts, which fixnorm scales one by one

    def build(self, readout, emb):
        """Builds the layers over the decoder's `readout` size.

        Args:
            readout: int d, the decoder's output size.
            emb: int, the embedding size.

        Returns:
            int, the whole readout's size (d, plus `emb` with the lexical
            model).
        """
        self.sizes = (readout,) if self.lexical_dense is None else (readout, emb)
        if self.lexical_dense is not None:
            self.lexical_dense.build((None, emb))
        layer = self.output_dense
        if layer is None:
            layer = self.output_projection
        layer.build((None, sum(self.sizes)))
        return sum(self.sizes)

    def embed(self, embedding, ids, training):
        """`embedding(ids)` with word dropout and dropout.

        Args:
            embedding: an `Embedding` layer.
            ids: int token ids.
            training: bool.

        Returns:
            The embedded ids.
        """
        x = embedding(ids)
        if self.word_dropout_layer.rate:
            x = self.word_dropout_layer(x, training=training)
        if self.dropout_layer.rate:
            x = self.dropout_layer(x, training=training)
        return x

    def step_constants(self):
        """The fixnorm output layer's scaled kernel blocks, or None.

        They depend on the weights alone: a search computes them once and
        passes them to every step. XLA hoisted them out of JAX's loop;
        TensorFlow's loop and a torch step computed them at every step.

        Returns:
            `{"output_kernels": [(d_p, V), ...]}` with `fixnorm`, each readout
            part's block of the output kernel with its columns at norm
            `fixnorm`; None without `fixnorm`.

        Example:

        >>> import numpy as np
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
        for size in self.sizes:
            block = kernel[start : start + size]
            blocks.append(_scale_to_norm(block, self.fixnorm, 0))
            start += size
        return {"output_kernels": blocks}

    def teacher_forced(self, encoded, y, training, output_mask=None):
        """Logits and alignments of the decoder run over embedded inputs `y`.

        Args:
            encoded: `Translator._encode`'s `(memory, mask, cell_states,
                embedded)`.
            y: the embedded decoder inputs `(B, T, emb)` (dropout applied).
            training: bool.
            output_mask: optional `(B, T, d)` mask of the outputs, in place
                of the dropout layer.

        Returns:
            `(logits (B, T, V) float32, alignments (B, T, S) or None)`.
        """
        memory, mask, cell_states, embedded = encoded
        outputs, alignments = self.decoder(
            y,
            memory,
            initial_state=cell_states,
            memory_mask=mask,
            training=training,
        )  # alignments: None without attention
        outputs = self.lexical(outputs, alignments, embedded)
        if output_mask is not None:
            outputs = outputs * output_mask
        elif self.dropout_layer.rate:
            outputs = self.dropout_layer(outputs, training=training)
        # The output layer as one 2-D matmul (XLA runs it faster than a 3-D one).
        batch, length = ops.shape(outputs)[0], ops.shape(outputs)[1]
        flat = ops.reshape(outputs, (-1, outputs.shape[-1]))  # (B T, d)
        logits = ops.reshape(self.logits(flat), (batch, length, -1))
        return ops.cast(logits, "float32"), alignments  # (B, T, V)

    def step(
        self,
        y,
        states,
        memory,
        source_embedded,
        training=None,
        output_mask=None,
        constants=None,
    ):
        """One decoder step and the output layer: what decoding (`next_fn`)
        and scheduled sampling share.

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
        output = self.lexical(output, alignment, source_embedded)
        if output_mask is not None:
            output = output * output_mask
        logits = self.logits(output, constants)
        return ops.cast(logits, "float32"), states, alignment

    def logits(self, readout, constants=None):
        """The output layer: logits `(N, V)` of readouts `(N, d)`.

        Args:
            readout: `(N, d)`.
            constants: optional `step_constants()`.

        Returns:
            `(N, V)`, in the readout's dtype.
        """
        if self.fixnorm is not None:
            if constants is None:
                constants = self.step_constants()
            return self._fixnorm_logits(readout, constants["output_kernels"])
        if self.output_dense is not None:
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
        for size, w in zip(self.sizes, kernels):
            x = _scale_to_norm(readout[:, start : start + size], self.fixnorm, 1)
            part = linear(x, ops.cast(w, dtype))  # (N, V)
            logits = part if logits is None else logits + part
            start += size
        return logits + ops.cast(self.output_dense.bias, dtype)

    def lexical(self, outputs, alignments, source_embedded):
        """[o_t; h_t] with the lexical model's h_t = tanh(W f_t) + f_t.

        Args:
            outputs: `(B, T, d)` (or `(B, d)` for one step).
            alignments: `(B, T, S)` (or `(B, S)`).
            source_embedded: `(B, S, emb)`.

        Returns:
            `outputs` as they are without the lexical model, else
            `(B, T, d + emb)` (or `(B, d + emb)`).
        """
        if self.lexical_dense is None:
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

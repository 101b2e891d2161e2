"""The encoder of the `Translator`: embedded source to memory and initial states."""

from keras import ops

from keras_rnnattn._backend import run_rnn
from keras_rnnattn.layers.recurrent import gather_step, reverse_by_length
from keras_rnnattn.ops import device_scalar


class TranslatorEncoder:
    """`encode`, a mixin of `Translator` (its embeddings, `encoder_forward`,
    `encoder_backward` and `bridges`)."""

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
            # By index: after the fused RNN's graph break under `torch.compile`,
            # Dynamo cannot iterate the tracked list and ran this frame eagerly.
            cell_states = [self.bridges[i](summary) for i in range(len(self.bridges))]
        else:
            num_states = (2 if self.cell == "lstm" else 1) * self.decoder_layers
            zeros = ops.zeros(
                (ops.shape(source_ids)[0], self.units), self.compute_dtype
            )
            cell_states = [zeros] * num_states
        return memory, mask, cell_states, embedded

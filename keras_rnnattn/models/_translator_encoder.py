"""The encoder of the `Translator`: its layers, and embedded source to memory.

Functions of explicit arguments: `make_encoder_layers` makes the embeddings,
the recurrent layers and the bridges (which stay attributes of the
Translator), `build_encoder` builds them and `encode` runs them.
"""

import keras
from keras import ops

from keras_rnnattn._backend import run_rnn
from keras_rnnattn.layers.recurrent import gather_step, reverse_by_length
from keras_rnnattn.ops import device_scalar


def make_encoder_layers(embeddings, cell, enc_units, layers, bidirectional, bridges):
    """The embeddings, the encoder's recurrent layers and the bridges.

    Args:
        embeddings: `(source_size, target_size, emb)`; `source_size` None
            shares the target embedding (no source embedding).
        cell: `"gru"` or `"lstm"`.
        enc_units: int, the state size of each direction.
        layers: int, the number of stacked layers.
        bidirectional: bool.
        bridges: `(units, count)`: the decoder's state size and the number of
            `Dense` bridges, one per decoder cell state (0: zero states).

    Returns:
        `(source_embedding, target_embedding, forward, backward, bridges)`:
        the source embedding is None with shared embeddings, `backward` is
        empty without `bidirectional`.
    """
    source_size, target_size, emb = embeddings
    # (B, S) -> (B, S, emb) and (B, T) -> (B, T, emb)
    source_embedding = None
    if source_size is not None:
        source_embedding = keras.layers.Embedding(
            source_size, emb, name="source_embedding"
        )
    target_embedding = keras.layers.Embedding(target_size, emb, name="target_embedding")
    rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
    # (B, S, emb or memory_size) -> (B, S, enc_units), per layer and direction
    forward = [
        rnn(enc_units, return_sequences=True, name=f"encoder_forward_{i}")
        for i in range(layers)
    ]
    backward = [
        rnn(enc_units, return_sequences=True, name=f"encoder_backward_{i}")
        for i in range(layers if bidirectional else 0)
    ]
    # (B, memory_size) -> (B, units): one per cell state (h, and c for LSTM)
    # of each decoder layer, the bottom layer's first.
    units, count = bridges
    dense = [
        keras.layers.Dense(units, activation="tanh", name=f"bridge_{i}")
        for i in range(count)
    ]
    return source_embedding, target_embedding, forward, backward, dense


def build_encoder(forward_layers, backward_layers, bridges, emb, memory_size):
    """Builds the encoder's layers (`make_encoder_layers`' results).

    Args:
        forward_layers, backward_layers, bridges: the layers.
        emb: int, the embedding size (the first layer's input).
        memory_size: int, the width of each layer's output.
    """
    width = emb
    for i in range(len(forward_layers)):
        forward_layers[i].build((None, None, width))
        if backward_layers:
            backward_layers[i].build((None, None, width))
        width = memory_size
    for bridge in bridges:
        bridge.build((None, memory_size))


def encode(
    source_ids, x, forward_layers, backward_layers, bridges, zero_states, training
):
    """Runs the encoder over an embedded source.

    Unmasked RNNs (the fast kernels): padding sits after the real tokens, and
    the backward direction reads each row reversed within its length.

    Args:
        source_ids: int32 `(B, S)`, padded with 0 at the end.
        x: the embedded source `(B, S, emb)` (dropout applied).
        forward_layers: the forward RNN of each layer.
        backward_layers: the backward RNN of each layer (empty: one direction).
        bridges: the `Dense` bridges, one per decoder cell state, or empty.
        zero_states: `(count, units, dtype)`, the zero initial states used
            without bridges.
        training: bool.

    Returns:
        `(memory, mask, cell_states)`: `(B, S, memory_size)`, bool `(B, S)`
        and the decoder's initial cell states (a list of `(B, units)`).
    """
    mask = ops.not_equal(source_ids, device_scalar(0, "int32"))  # (B, S)
    lengths = ops.sum(ops.cast(mask, "int32"), axis=1)  # (B,)
    # By index: after the fused RNN's graph break under `torch.compile`,
    # Dynamo cannot iterate the tracked lists and ran this frame eagerly.
    for i in range(len(forward_layers)):
        forward = run_rnn(forward_layers[i], x, training=training)
        if backward_layers:
            backward = run_rnn(
                backward_layers[i], reverse_by_length(x, lengths), training=training
            )
            backward = reverse_by_length(backward, lengths)  # (B, S, u)
            x = ops.concatenate([forward, backward], axis=-1)
        else:
            x = forward
    memory = x  # (B, S, memory_size)
    last = ops.maximum(lengths - 1, device_scalar(0, "int32"))
    summary = gather_step(forward, last)  # (B, u): forward state at the end
    if backward_layers:  # backward state at the first token
        summary = ops.concatenate([summary, backward[:, 0]], axis=-1)
    if bridges:
        cell_states = [bridges[i](summary) for i in range(len(bridges))]
    else:
        count, units, dtype = zero_states
        zeros = ops.zeros((ops.shape(source_ids)[0], units), dtype)
        cell_states = [zeros] * count
    return memory, mask, cell_states

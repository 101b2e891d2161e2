"""The decoder of the `Translator`, and its decoding state, as functions."""

import keras

from keras_rnnattn.layers.attention_decoder import AttentionDecoder
from keras_rnnattn.layers.plain_decoder import PlainDecoder
from keras_rnnattn.layers.score_layers import score_layer


def make_decoder(
    attention,
    cell,
    units,
    decoder_layers,
    query,
    input_feeding,
    attention_layer_size,
    max_source_length,
    backward_size,
):
    """The Translator's decoder: an `AttentionDecoder`, or a `PlainDecoder`
    for `attention="none"`.

    The registry (`score_layer`) builds the attention of the name (the
    location score from the longest source).

    Args:
        attention: a `TRANSLATOR_ATTENTIONS` name.
        cell: `"gru"` or `"lstm"`.
        units: int, the decoder's state size.
        decoder_layers: int, stacked cells (with attention).
        query, input_feeding, attention_layer_size: see `AttentionDecoder`.
        max_source_length: int, the longest source.
        backward_size: int, the encoder's backward state size (0 if one
            direction), which the plain decoder's summary holds.

    Returns:
        The decoder layer, named `"decoder"`.
    """
    mechanism = score_layer(attention, units, max_source_length, name="attention")
    if mechanism is None:
        size = attention_layer_size
        if attention_layer_size in ("auto", None, "concat"):
            size = units
        return PlainDecoder(
            units,
            cell=cell,
            output_size=size,
            backward_size=backward_size,
            name="decoder",
        )
    decoder_cell = cell
    if decoder_layers > 1:
        cell_class = keras.layers.GRUCell if cell == "gru" else keras.layers.LSTMCell
        decoder_cell = [
            cell_class(units, name=f"decoder_cell_{i}") for i in range(decoder_layers)
        ]
    return AttentionDecoder(
        units,
        cell=decoder_cell,
        attention=mechanism,
        query=query,
        input_feeding=input_feeding,
        attention_layer_size=attention_layer_size,
        name="decoder",
    )


def decoding_state(decoder, memory, mask, cell_states, embedded, lexical_model):
    """The Translator's decoding state from the encoder's results.

    Args:
        decoder: the Translator's decoder.
        memory: `(B, S, memory_size)`.
        mask: bool `(B, S)`.
        cell_states: the decoder's initial cell states.
        embedded: the embedded source `(B, S, emb)`.
        lexical_model: bool, keep the embedded source in the memory (under
            `"source_embeddings"`).

    Returns:
        `{"states": [...], "memory": {...}}`.
    """
    batch_size = keras.ops.shape(mask)[0]
    mem = decoder.prepare_memory(memory, mask)
    if lexical_model:
        mem["source_embeddings"] = embedded  # (B, S, emb)
    states = decoder.get_initial_state(batch_size, cell_states, mem)
    return {"states": states, "memory": mem}

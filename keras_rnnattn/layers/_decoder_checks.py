"""`AttentionDecoder`'s argument checks, each raising one error that names the fix."""

import keras

from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention
from keras_rnnattn.layers.base_attention import BaseAttention
from keras_rnnattn.layers.score_layers import DECODER_ATTENTIONS

CELLS = ("gru", "lstm")
QUERIES = ("previous", "current")
LAYER_SIZES = ("auto", "concat")


def indexed(name, index, multi):
    return f"{name}_{index}" if multi else name


def deserialize(value):
    if isinstance(value, dict):
        return keras.saving.deserialize_keras_object(value)
    if isinstance(value, list):
        return [deserialize(item) for item in value]
    return value


def check_cell(cell, units):
    """The decoder's `units` for `cell` (a name or a cell instance), or raises."""
    if isinstance(cell, str):
        if cell not in CELLS:
            raise ValueError(
                f"`cell` must be one of {CELLS}, a Keras RNN cell instance or a "
                f"list of cells. Received: cell={cell!r}"
            )
        if not isinstance(units, int) or units < 1:
            raise ValueError(
                f"`units` must be a positive int with cell={cell!r}. "
                f"Received: units={units}"
            )
        return units
    if not (isinstance(cell, keras.layers.Layer) and hasattr(cell, "state_size")):
        raise ValueError(
            f"`cell` must be one of {CELLS}, a Keras RNN cell instance (a layer "
            f"with `state_size`) or a list of cells. Received: cell={cell!r}"
        )
    if isinstance(cell, keras.layers.StackedRNNCells):
        check_stack(cell.cells)
        top = cell.cells[-1]
    else:
        top = cell
    cell_units = getattr(top, "units", None)
    if units is None:
        units = cell_units
    if not isinstance(units, int) or units < 1:
        raise ValueError(
            "`units` must be a positive int: pass it, or a cell with a "
            f"`units` attribute. Received: units={units}"
        )
    if cell_units is not None and cell_units != units:
        raise ValueError(
            f"`units` must match the (top) cell's units ({cell_units}). "
            f"Received: units={units}"
        )
    return units


def check_stack(cells):
    if not cells:
        raise ValueError("A stack of cells needs at least one cell. Received: cell=[]")
    for item in cells:
        if not (isinstance(item, keras.layers.Layer) and hasattr(item, "state_size")):
            raise ValueError(
                "Every cell of a stack must be a Keras RNN cell instance (a "
                f"layer with `state_size`). Received: {item!r}"
            )


def check_attention(attention):
    if isinstance(attention, str):
        if attention not in DECODER_ATTENTIONS:
            raise ValueError(
                f"`attention` must be one of {DECODER_ATTENTIONS}, an attention layer "
                "instance (for Luong's location score, "
                "`LuongAttention(score='location', source_length=S)`), or a list "
                f"of these. Received: attention={attention!r}"
            )
    elif not isinstance(attention, (BaseAttention, keras.layers.MultiHeadAttention)):
        raise ValueError(
            "`attention` must be a name or an instance of BaseAttention or "
            f"keras.layers.MultiHeadAttention (or a list of these). "
            f"Received: attention={attention!r}"
        )


def layer_sizes(size, units, count, multi):
    """The output size of each mechanism's W_c, or None without W_c."""
    if size is None or size == "concat":
        return None
    if size == "auto":
        return [units] * count
    if isinstance(size, (list, tuple)):
        if (
            not multi
            or len(size) != count
            or not all(
                isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size
            )
        ):
            raise ValueError(
                "A list `attention_layer_size` needs a list of attentions of the "
                "same length and positive ints (one size per attention). "
                f"Received: attention_layer_size={size!r} for {count} attention(s)"
            )
        return list(size)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(
            "`attention_layer_size` must be a positive int, a list of them (one "
            f"per attention), {LAYER_SIZES!r} or None. "
            f"Received: attention_layer_size={size!r}"
        )
    return [size] * count


def attention_specs(attention):
    """`(multi, specs)`: whether `attention` is a list, and its items, checked."""
    multi = isinstance(attention, (list, tuple))
    specs = list(attention) if multi else [attention]
    if not specs:
        raise ValueError(
            "`attention` must be an attention or a non-empty list of "
            "attentions. Received: attention=[]"
        )
    for spec in specs:
        check_attention(spec)
    return multi, specs


def resolve_query(query, attention, multi):
    """`query`, or for None `"previous"` with one Bahdanau attention, else `"current"`."""
    if query is None:
        single_bahdanau = not multi and (
            attention == "bahdanau" or isinstance(attention, BahdanauAttention)
        )
        query = "previous" if single_bahdanau else "current"
    if query not in QUERIES:
        raise ValueError(
            f"`query` must be one of {QUERIES} or None. Received: query={query!r}"
        )
    return query


def check_attention_layer(attention_layer, attention_layer_size, count, multi):
    """Raises unless `attention_layer` is None or one Keras layer per attention."""
    if attention_layer is None:
        return
    if attention_layer_size not in ("auto", None):
        raise ValueError(
            "`attention_layer` and `attention_layer_size` cannot both be "
            "set (as in tfa): leave `attention_layer_size` at 'auto'. "
            f"Received: attention_layer_size={attention_layer_size!r}"
        )
    layers = attention_layer if multi else [attention_layer]
    if (
        not isinstance(layers, (list, tuple))
        or len(layers) != count
        or not all(isinstance(layer, keras.layers.Layer) for layer in layers)
    ):
        raise ValueError(
            "`attention_layer` must be a Keras layer (with several "
            "attentions, a list of one layer per attention). Received: "
            f"attention_layer={attention_layer!r}"
        )


def activation_function(attention_activation):
    """The Keras activation of `attention_activation`, or raises."""
    try:
        return keras.activations.get(attention_activation)
    except (ValueError, TypeError) as error:
        raise ValueError(
            "`attention_activation` must be a Keras activation name or "
            "function, or None for a linear attention layer. Received: "
            f"attention_activation={attention_activation!r}"
        ) from error

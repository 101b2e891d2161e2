"""Attention heat maps and token shading (matplotlib, imported only when called)."""

import math

import numpy as np


def _matplotlib():
    """`(Figure, FigureCanvasAgg)`; an ImportError naming the install command."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "Plotting needs matplotlib: pip install matplotlib "
            "(or pip install '.[plot]')."
        ) from error
    return Figure, FigureCanvasAgg


def _new_axes(ax, figsize):
    """The axes to draw on and their figure: `ax`'s, or a new Agg figure's."""
    Figure, FigureCanvasAgg = _matplotlib()
    if ax is not None:
        return ax.figure, ax
    # A figure with its own Agg canvas: no pyplot, no global backend change,
    # `savefig` works anywhere, and notebooks still display it.
    figure = Figure(figsize=figsize)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot(1, 1, 1)


def _as_array(weights, ndim, name):
    try:
        array = np.asarray(weights, dtype="float32")
    except (TypeError, ValueError):
        import keras

        array = np.asarray(keras.ops.convert_to_numpy(weights), dtype="float32")
    if array.ndim != ndim:
        raise ValueError(
            f"`{name}` must be {ndim}-D. Received: {name} of shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"`{name}` holds NaN or infinite values: {array}")
    return array


def _tokens(tokens, name):
    if isinstance(tokens, str):
        raise ValueError(
            f"`{name}` must be a list of tokens, not one str: split the text "
            f"first. Received: {name}={tokens!r}"
        )
    return [str(token) for token in tokens]


def plot_attention(
    weights, source_tokens, target_tokens, title=None, ax=None, cmap="viridis"
):
    """Draws attention weights as a heat map: source tokens across, output down.

    Row t holds the weights with which output token t attended to each source
    token (for a translator: the alignment of Bahdanau et al., Figure 3).

    Args:
        weights: array-like `(T, S)` (NumPy or a backend tensor), T =
            `len(target_tokens)`, S = `len(source_tokens)`. Slice away padding
            first.
        source_tokens: list of S str, written along the top.
        target_tokens: list of T str, written down the left.
        title: optional str.
        ax: optional matplotlib `Axes` to draw on; by default a new figure.
        cmap: a matplotlib colour map name.

    Returns:
        The matplotlib `Figure` (with an Agg canvas: `figure.savefig(path)`).

    Example:

    >>> import numpy as np
    >>> weights = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> figure = plot_attention(weights, ["Guten", "Tag"], ["good", "day"])
    >>> [t.get_text() for t in figure.axes[0].get_xticklabels()]
    ['Guten', 'Tag']
    """
    source_tokens = _tokens(source_tokens, "source_tokens")
    target_tokens = _tokens(target_tokens, "target_tokens")
    weights = _as_array(weights, 2, "weights")
    expected = (len(target_tokens), len(source_tokens))
    if weights.shape != expected:
        raise ValueError(
            f"`weights` must have shape (len(target_tokens), len(source_tokens)) = "
            f"{expected}; slice off padding with weights[:{expected[0]}, "
            f":{expected[1]}]. Received: weights of shape {weights.shape}"
        )
    rows, cols = expected
    figsize = (max(3.0, 0.45 * cols + 1.8), max(2.5, 0.4 * rows + 1.4))
    figure, ax = _new_axes(ax, figsize)
    top = float(weights.max()) if weights.size else 1.0
    image = ax.imshow(
        weights,
        cmap=cmap,
        vmin=min(0.0, float(weights.min()) if weights.size else 0.0),
        vmax=top if top > 0 else 1.0,
        aspect="auto",
        interpolation="nearest",
    )
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xticks(range(cols))
    ax.set_xticklabels(source_tokens, rotation=90)
    ax.set_yticks(range(rows))
    ax.set_yticklabels(target_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    if title is not None:
        ax.set_title(title, y=-0.1, va="top")
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return figure


def plot_token_weights(
    tokens, weights, title=None, ax=None, cmap="Reds", tokens_per_row=12
):
    """Draws tokens on cells shaded by their weight (what a classifier attended to).

    Tokens are laid out left to right, `tokens_per_row` per row.

    Args:
        tokens: list of n str.
        weights: array-like `(n,)`, one weight per token (e.g. attention
            pooling weights).
        title: optional str (e.g. the predicted label).
        ax: optional matplotlib `Axes` to draw on; by default a new figure.
        cmap: a matplotlib colour map name.
        tokens_per_row: int >= 1.

    Returns:
        The matplotlib `Figure` (with an Agg canvas: `figure.savefig(path)`).

    Example:

    >>> figure = plot_token_weights(["a", "gorgeous", "movie"], [0.1, 0.8, 0.1])
    >>> [t.get_text() for t in figure.axes[0].texts]
    ['a', 'gorgeous', 'movie']
    """
    tokens = _tokens(tokens, "tokens")
    weights = _as_array(weights, 1, "weights")
    if len(weights) != len(tokens):
        raise ValueError(
            f"`weights` must hold one weight per token ({len(tokens)}). "
            f"Received: weights of shape {weights.shape}"
        )
    if not isinstance(tokens_per_row, int) or tokens_per_row < 1:
        raise ValueError(
            f"`tokens_per_row` must be an int >= 1. Received: {tokens_per_row!r}"
        )
    cols = max(1, min(tokens_per_row, len(tokens)))
    rows = max(1, math.ceil(len(tokens) / cols))
    grid = np.full((rows, cols), np.nan, dtype="float32")  # empty cells stay blank
    grid.flat[: len(weights)] = weights
    longest = max((len(token) for token in tokens), default=1)
    figsize = (max(3.0, cols * (0.12 * longest + 0.4)), 0.55 * rows + 0.9)
    figure, ax = _new_axes(ax, figsize)
    low = min(0.0, float(weights.min())) if weights.size else 0.0
    high = float(weights.max()) if weights.size else 1.0
    high = high if high > low else low + 1.0
    ax.imshow(grid, cmap=cmap, vmin=low, vmax=high, aspect="auto")
    colormap = ax.images[0].cmap
    for i, (token, weight) in enumerate(zip(tokens, weights)):
        shade = (float(weight) - low) / (high - low)
        red, green, blue, _ = colormap(shade)
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
        ax.text(
            i % cols,
            i // cols,
            token,
            ha="center",
            va="center",
            fontsize=9,
            color="white" if dark else "black",
        )
    ax.set_xticks([])
    ax.set_yticks([])
    if title is not None:
        ax.set_title(title, fontsize=10)
    return figure

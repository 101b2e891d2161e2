"""The text side of `Seq2SeqTask`, as functions of the model: source and
training ids, `translate`'s and `generate`'s texts, the attention entries and
their plot."""

import numpy as np
from keras import ops

import keras_rnnattn.models._seq2seq_search as searching
from keras_rnnattn._backend import no_grad
from keras_rnnattn._checks import positive_int
from keras_rnnattn.text.kept_symbols import split_symbols
from keras_rnnattn.text.unknown_words import decode_translations


def source_ids(model, texts, truncate=False):
    """`Seq2SeqTask.encode_source` of `model` (see there).

    Args:
        model: the `Seq2SeqTask`.
        texts: list of str.
        truncate: bool, cut long texts instead of raising.

    Returns:
        int32 array `(B, S)`, each row ending with eos, padded with 0.
    """
    tok = model.source_tokenizer
    rows = [tok.encode(text) for text in texts]  # once: BPE-dropout samples
    lengths = [len(row) + 1 for row in rows]
    longest = max(lengths, default=1)
    if longest > model.max_source_length and not truncate:
        index = int(np.argmax(lengths))
        raise ValueError(
            f"Text {index} has {longest} source tokens (end token included), "
            f"more than this model's max_source_length={model.max_source_length}: "
            "shorten or split it. Received: "
            f"text={str(texts[index])[:80]!r}"
        )
    return tok.pad(rows, max_length=min(longest, model.max_source_length), add_eos=True)


def training_pairs(model, source_texts, target_texts):
    """`Seq2SeqTask.encode_pairs` of `model` (see there).

    Args:
        model: the `Seq2SeqTask`.
        source_texts: list of str.
        target_texts: list of str, one per source.

    Returns:
        `((source_ids, target_in_ids), target_out_ids)`, int32 arrays.
    """
    if len(source_texts) != len(target_texts):
        raise ValueError(
            "Expected one target per source. Received: "
            f"{len(source_texts)} sources, {len(target_texts)} targets"
        )
    source = source_ids(model, source_texts, truncate=True)
    tok = model.target_tokenizer
    rows = [tok.encode(text) for text in target_texts]
    longest = max((len(row) for row in rows), default=0)
    target = tok.pad(
        rows,
        max_length=min(longest, model.max_target_length - 1) + 2,
        add_bos=True,
        add_eos=True,
    )  # bos y_1 .. y_n eos: at most max_target_length tokens after bos
    target_in = np.where(target == tok.eos_id, tok.pad_id, target)[:, :-1]
    target_out = target[:, 1:]
    return (source, target_in.astype("int32")), target_out.astype("int32")


def sources(model, texts):
    """The texts that have tokens, encoded.

    Args:
        model: the `Seq2SeqTask`.
        texts: list of str.

    Returns:
        `(keep, source_ids)`: the indices of the texts with tokens, and their
        source ids (None where there are none).
    """
    tok = model.source_tokenizer
    keep = [i for i, t in enumerate(texts) if t.strip() and tok.encode(t)]
    return keep, (source_ids(model, [texts[i] for i in keep]) if keep else None)


def translate_texts(
    model, texts, single, settings, max_length, return_attention, replace_unknown
):
    """`Seq2SeqTask.translate` of read texts with its `SearchSettings`.

    Args:
        model: the `Seq2SeqTask`.
        texts: list of str; `single`: bool, whether one str was given.
        settings: the `SearchSettings`, made once by `translate`.
        max_length: int or None.
        return_attention, replace_unknown: see `translate`.

    Returns:
        See `translate`.
    """
    # Emoji and other symbols the source vocabulary lacks: out of the
    # source, back into the translation (`keras_rnnattn.text.kept_symbols`).
    split = [split_symbols(model.source_tokenizer, t) for t in texts]
    if return_attention:  # the attention is over the text as written
        split = [(t, []) for t in texts]
    keep, source = sources(model, [reduced for reduced, _ in split])
    translations = [" ".join(s for s, _ in symbols) for _, symbols in split]
    attentions = [None] * len(texts)
    if keep:
        tokens, _ = searching.search_ids(model, source, settings, max_length)
        decoded = decode_translations(  # `<unk>`: the source word attended to
            (model.source_tokenizer, model.target_tokenizer),
            [split[i][0] for i in keep],
            source,
            tokens,
            (lambda s, t: teacher_forced_alignments(model, s, t))
            if model.has_attention
            else None,
            replace_unknown,
            symbols=[split[i][1] for i in keep],
        )
        for row, i in enumerate(keep):
            translations[i] = decoded[row]
        if return_attention:
            attention_entries(model, texts, keep, source, tokens, attentions)
    result = translations[0] if single else translations
    if return_attention:
        return result, (attentions[0] if single else attentions)
    return result


def attention_entries(model, texts, keep, source, tokens, attentions):
    """Fills `attentions[i]` for the kept texts (see `translate`).

    Args:
        model: the `Seq2SeqTask`.
        texts: the texts as written; `keep`: the indices of those decoded.
        source: their source ids; `tokens`: the produced tokens.
        attentions: the list to fill, one entry per text.
    """
    source_tok, target_tok = model.source_tokenizer, model.target_tokenizer
    eos = target_tok.eos_id
    weights = teacher_forced_alignments(model, source, tokens)
    for row, i in enumerate(keep):
        out = tokens[row].tolist()
        n_out = out.index(eos) + 1 if eos in out else len(out)
        n_src = int(np.sum(source[row] != 0))
        attentions[i] = {
            "source_tokens": source_tok.tokenize(texts[i])
            + [source_tok.vocabulary.id_to_token(source_tok.eos_id)],
            "output_tokens": [
                target_tok.vocabulary.id_to_token(t) for t in out[:n_out]
            ],
            "weights": weights[row, :n_out, :n_src],
        }


def teacher_forced_alignments(model, source, tokens):
    """Attention weights `(B, L, S)` of teacher-forcing the produced tokens.

    With the same weights and inputs this is exactly the alignment the
    decoding step computed for each produced token.

    Args:
        model: the `Seq2SeqTask`.
        source: int `(B, S)` source ids.
        tokens: int NumPy `(B, L)`, the produced tokens.

    Returns:
        float32 NumPy `(B, L, S)`.
    """
    bos = np.full((tokens.shape[0], 1), model.target_tokenizer.bos_id, "int32")
    target_in = np.concatenate([bos, tokens[:, :-1]], axis=1).astype("int32")
    with no_grad():
        _, alignments = model.forward_pass(source, target_in, training=False)
    return ops.convert_to_numpy(ops.cast(alignments, "float32"))


def generate_texts(model, inputs, max_length, max_new_tokens):
    """`Seq2SeqTask.generate` of `model` (see there).

    Args:
        model: the `Seq2SeqTask`.
        inputs: a source text or a list of them.
        max_length, max_new_tokens: int or None, the most target tokens
            (give one of the two).

    Returns:
        A str for a str input, else a list of str.
    """
    owner = model._caller("generate")
    if max_length is not None and max_new_tokens is not None:
        raise ValueError(
            f"{owner}: give `max_length` or `max_new_tokens`, not both. "
            f"Received: max_length={max_length}, max_new_tokens={max_new_tokens}"
        )
    limit = max_length if max_new_tokens is None else max_new_tokens
    limit = positive_int("max_length", limit, allow_none=True)
    hub, settings = model.keras_hub_sampler, model.search_settings
    if hub is None and settings.method != "sample":
        return model.translate(inputs, beam_size=settings.beam_size, max_length=limit)
    texts, single, _ = model._read_texts(inputs, "generate")
    keep, source = sources(model, texts)
    outputs = [""] * len(texts)
    if keep:
        if limit is None:
            limit = min(model.max_target_length, 2 * source.shape[1] + 10)
        tokens = searching.sampled_ids(model, hub, settings, source, limit)
        for row, i in enumerate(keep):
            outputs[i] = model.target_tokenizer.decode(tokens[row])
    return outputs[0] if single else outputs


def plot_translation(model, text, ax=None, **translate_kwargs):
    """`Seq2SeqTask.plot_attention` of `model` (see there).

    Args:
        model: the `Seq2SeqTask`.
        text: str, the source.
        ax: optional matplotlib axes.
        **translate_kwargs: `beam_size`, `max_length` and the penalties.

    Returns:
        The matplotlib figure.
    """
    from keras_rnnattn.plotting import plot_attention

    translation, attention = model.translate(
        text, return_attention=True, **translate_kwargs
    )
    if attention is None:
        raise ValueError(f"Nothing to plot for an empty text. Received: text={text!r}")
    return plot_attention(
        attention["weights"],
        attention["source_tokens"],
        attention["output_tokens"],
        title=translation,
        ax=ax,
    )

"""Word tags on subword input: each word's pieces, their tags, and back.

A punctuation tagger restores marks and capitals per word, but a word
vocabulary turns every word it never saw into one unknown token. With a
subword tokenizer (`SentencePieceTokenizer`, `BpeTokenizer`) an unseen word
keeps its pieces. The tagger then reads pieces and tags pieces: a word's
first piece carries its case and its last piece the mark that follows it
(the convention of BERT-style punctuation restorers); the other pieces are
`lower_O`. A word tokenizer gives one piece per word, so its tags are the
word tags.
"""

from keras_rnnattn.text.punctuation import PUNCTUATION_TAGS
from keras_rnnattn.text.word_tokenizer import WordTokenizer


def word_piece_ids(tokenizer, words):
    """The token ids of each word, encoded on its own.

    Args:
        tokenizer: a fitted `keras_rnnattn.text` tokenizer.
        words: list of str.

    Returns:
        list of lists of int, one non-empty list per word (a word the
        tokenizer drops becomes its unknown id); a `WordTokenizer` gives
        each word its own id (or the unknown id) as one token.

    Example:

    >>> from keras_rnnattn.text import WordTokenizer
    >>> tok = WordTokenizer().fit(["hello world"])
    >>> word_piece_ids(tok, ["hello", "there"])
    [[4], [1]]
    """
    # A word tokenizer's words are `punctuation_tags`'s: one id each, looked up
    # whole (split alone, a clitic such as "’s" would fall apart).
    whole = isinstance(tokenizer, WordTokenizer)
    cache, out = {}, []
    for word in words:
        ids = cache.get(word)
        if ids is None:
            if whole:
                ids = [tokenizer.vocabulary.token_to_id(tokenizer.normalize(word))]
            else:
                ids = list(tokenizer.encode(word)) or [tokenizer.unk_id]
            cache[word] = ids
        out.append(ids)
    return out


def piece_tags(lengths, tags):
    """The tag of each piece, from the tag of each word and its piece count.

    Args:
        lengths: list of int >= 1, the pieces of each word.
        tags: list of str, one `PUNCTUATION_TAGS` tag per word.

    Returns:
        list of str, `sum(lengths)` tags.

    Example:

    >>> piece_tags([1, 3], ["title_COMMA", "upper_QUESTION"])
    ['title_COMMA', 'upper_O', 'lower_O', 'lower_QUESTION']
    """
    if len(lengths) != len(tags):
        raise ValueError(
            f"Give one tag per word. Received: {len(lengths)} words and "
            f"{len(tags)} tags"
        )
    out = []
    for n, tag in zip(lengths, tags):
        if n == 1:
            out.append(tag)
            continue
        case, mark = tag.split("_")
        out += [f"{case}_O"] + ["lower_O"] * (n - 2) + [f"lower_{mark}"]
    return out


def word_tags(lengths, tags):
    """The tag of each word from the tags of its pieces: `piece_tags` undone.

    The case comes from a word's first piece and the mark from its last.

    Args:
        lengths: list of int >= 1, the pieces of each word.
        tags: list of str, one `PUNCTUATION_TAGS` tag per piece.

    Returns:
        list of str, one tag per word.

    Example:

    >>> word_tags([1, 3], ['title_COMMA', 'upper_O', 'lower_O', 'lower_QUESTION'])
    ['title_COMMA', 'upper_QUESTION']
    """
    if sum(lengths) != len(tags):
        raise ValueError(
            f"Give one tag per piece. Received: {sum(lengths)} pieces and "
            f"{len(tags)} tags"
        )
    out, start = [], 0
    for n in lengths:
        first, last = tags[start], tags[start + n - 1]
        if first not in PUNCTUATION_TAGS or last not in PUNCTUATION_TAGS:
            raise ValueError(
                f"Each tag must be one of {PUNCTUATION_TAGS}. "
                f"Received: {first!r}, {last!r}"
            )
        out.append(f"{first.split('_')[0]}_{last.split('_')[1]}")
        start += n
    return out

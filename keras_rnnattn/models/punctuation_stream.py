"""Punctuation and capitals for a stream of words, restored window by window."""

from keras_rnnattn.models._punctuation_windows import (
    central_window_tags,
    central_windows,
    read_words,
    tag_word_lists,
    window_words,
)
from keras_rnnattn.text.normalization import detokenize
from keras_rnnattn.text.punctuation import (
    PUNCTUATION_TAGS,
    restore_punctuation,
    untagged_tokens,
)


def sentence_tags(tags, sentence_start, ends_text):
    """Tags made consistent with whole sentences.

    A word after a sentence end (or the first, with `sentence_start`) is
    capitalised; with `ends_text`, the last word ends a sentence (a full
    stop where the tagger put a comma or nothing).

    Args:
        tags: list of `PUNCTUATION_TAGS` tags.
        sentence_start: bool, whether the first word starts a sentence.
        ends_text: bool, whether the last word ends the text.

    Returns:
        `(tags, sentence_start)`: the new tags, and whether the word after
        them starts a sentence.

    Example:

    >>> sentence_tags(["lower_PERIOD", "lower_O"], True, True)
    (['title_PERIOD', 'title_PERIOD'], True)
    """
    out = []
    for i, tag in enumerate(tags):
        case, mark = tag.split("_")
        if sentence_start and case == "lower":
            case = "title"
        if ends_text and i == len(tags) - 1 and mark in ("O", "COMMA"):
            mark = "PERIOD"
        out.append(f"{case}_{mark}")
        sentence_start = mark in ("PERIOD", "QUESTION")
    return out, sentence_start


class PunctuationStream:
    """Restores punctuation and capitals of text of any length, as it arrives.

    Speech recognisers emit words as they go. The stream collects them and
    tags overlapping windows of `window` words that start every half window
    (`central_windows`); each word takes its tags from the window in which
    it is central, far from the edges where a tagger sees half its context.
    The windows depend only on a word's position in the stream, so the
    restored text is the same however the words arrive: pushed at once or
    a few at a time. `push` returns the text of the words whose window is
    complete; `finish` the rest, ending the last sentence. Emoji and symbols
    stay in place, untagged. `SequenceTagger.restore_punctuation` restores a
    long text with the same windows.

    Args:
        tagger: a `SequenceTagger` trained on `PUNCTUATION_TAGS`.
        window: optional int >= 4, the words in a window (default: the
            tagger's `max_length` for a word tokenizer, half of it for
            subwords).

    Example:

    >>> from keras_rnnattn.models import SequenceTagger
    >>> from keras_rnnattn.text import PUNCTUATION_TAGS, WordTokenizer
    >>> tok = WordTokenizer(lowercase=True).fit(["where is it"])
    >>> tagger = SequenceTagger(
    ...     tokenizer=tok, tags=PUNCTUATION_TAGS, units=4, max_length=4)
    >>> stream = PunctuationStream(tagger)  # windows of 4 words
    >>> text = stream.push("where is it where is") + stream.push("it")
    >>> text += stream.finish()
    >>> text == tagger.restore_punctuation("where is it where is it")
    True
    """

    def __init__(self, tagger, window=None):
        if not tagger.tags or not set(tagger.tags) <= set(PUNCTUATION_TAGS):
            raise ValueError(
                "PunctuationStream needs a tagger trained on PUNCTUATION_TAGS "
                f"(train it on `punctuation_tags` of running text). Received: "
                f"tags={tagger.tags}"
            )
        window = window_words(tagger) if window is None else window
        if not isinstance(window, int) or window < 4:
            raise ValueError(
                f"`window` must be an int >= 4. Received: window={window!r}"
            )
        self.tagger = tagger
        self.window = window
        self.stride = window // 2
        self.reset()

    @property
    def delay_words(self):
        """`(fewest, most)` words that arrive after a word before `push`
        returns it.

        A word is returned once the window where it is central is complete
        and one more word has come: the first words of a stream wait for a
        whole window (`window` words), every later word from `window -
        margin - stride + 1` to `window - margin` words (`margin = (window -
        stride) // 2`): 17 to 48 words for windows of 64, 5 to 12 for 16.
        At a speaking rate of 150 words a minute (2.5 words a second), 48
        words are about 19 seconds. A smaller `window` answers sooner and
        sees less context.

        Returns:
            tuple of two ints.
        """
        margin = (self.window - self.stride) // 2
        return self.window - margin - self.stride + 1, self.window - margin

    def reset(self):
        """Forgets the stream: the next `push` starts a new text."""
        self._words, self._others, self._tags = [], [], []
        self._next_window = 0  # the first window not tagged yet
        self._emitted = 0  # words already returned
        self._sentence_start = True
        self._started = False

    def push(self, text):
        """Adds whole words to the stream; returns the restored text now final.

        Args:
            text: str, one or more whole words (their punctuation and capitals
                are ignored).

        Returns:
            str, possibly empty; the pieces `push` and `finish` return, joined
            as they are, are the restored stream.
        """
        if not isinstance(text, str):
            raise ValueError(
                f"`push` takes a str of words. Received: {type(text).__name__}"
            )
        offset = len(self._words)
        self._others += [(offset + p, token) for p, token in untagged_tokens(text)]
        self._words += read_words(text)
        while True:
            start = self._next_window * self.stride
            if start + self.window >= len(self._words):
                break  # not complete, or the last window: wait for more words
            self._tag_window(start, start + self.window, last=False)
        return self._emit(len(self._tags), ends_text=False)

    def finish(self):
        """Restores the words left, ends the last sentence and resets the stream.

        Returns:
            str, the rest of the restored text.
        """
        n = len(self._words)
        for start, end, _, _ in central_windows(n, self.window, self.stride):
            if n and start >= self._next_window * self.stride:
                self._tag_window(start, end, last=end >= n)
        text = self._emit(n, ends_text=True)
        self.reset()
        return text

    def word_tags(self, words, batch_size=32):
        """The tag of each word of one running text, as the stream decides it.

        The tagger's own tags (no sentence rules), each from the window where
        the word is central; the windows are tagged in batches, so this is
        the fast way to score a tagger on long text.

        Args:
            words: list of str, lowercase words (`punctuation_tags`'s).
            batch_size: int.

        Returns:
            list of str, one `PUNCTUATION_TAGS` tag per word.
        """
        return central_window_tags(self.tagger, list(words), self.window, batch_size)

    def _tag_window(self, start, end, last):
        margin = (self.window - self.stride) // 2
        keep_start = 0 if start == 0 else start + margin
        keep_end = end if last else start + margin + self.stride
        tags = tag_word_lists(self.tagger, [self._words[start:end]], batch_size=1)[0]
        self._tags += tags[keep_start - start : keep_end - start]
        self._next_window += 1

    def _emit(self, up_to, ends_text):
        first = self._emitted
        words = self._words[first:up_to]
        others = [(p - first, t) for p, t in self._others if p >= first]
        if not ends_text:
            others = [(p, t) for p, t in others if p < len(words)]
        if not words and not (ends_text and others):
            return ""
        tags, self._sentence_start = sentence_tags(
            self._tags[first:up_to], self._sentence_start, ends_text
        )
        text = restore_punctuation(words, tags, others)
        head = others[0][1] if others and others[0][0] == 0 else words[:1] or ["x"]
        head = head if isinstance(head, str) else head[0]
        joined = detokenize(["x", head]) == "x" + head
        separator = "" if not self._started or joined else " "
        self._started = True
        self._emitted = up_to
        self._others = [(p, t) for p, t in self._others if p >= first + len(words)]
        if ends_text:
            self._others = []
        return separator + text

"""Byte-pair encoding subword tokenizer (Sennrich, Haddow and Birch, 2016)."""

import collections
import heapq
import random

from keras_rnnattn.text.normalization import detokenize, split_words
from keras_rnnattn.text.tokenizer import Tokenizer
from keras_rnnattn.text.vocabulary import SPECIAL_TOKENS, Vocabulary

END_OF_WORD = "</w>"
_CACHE_SIZE = 200_000


def _merge_word(symbols, pair, merged):
    """Merges every non-overlapping occurrence of `pair`, left to right."""
    out = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


class BpeTokenizer(Tokenizer):
    """Subword tokenizer that learns byte-pair merges from the training text.

    Words (split as in `WordTokenizer`) are spelled as characters, the last one
    marked with the end-of-word suffix `"</w>"`; `fit` then repeatedly merges
    the most frequent adjacent pair of symbols (ties broken by the pair itself,
    so training is deterministic) until the vocabulary reaches `max_vocab` or
    `num_merges` merges are done, or no pair is seen twice. Every character seen
    in training is in the vocabulary in both forms ("a" and "a</w>"), so every
    word made of known characters can be spelled and encoding never gives unk
    for it. A character never seen in training (or seen fewer than `min_count`
    times) becomes `unk_id`; when it ends a word, the lone `"</w>"` symbol
    follows it so word boundaries survive. `decode` joins the pieces of a word
    and restores natural spacing.

    With `dropout > 0` (BPE-dropout, Provilkov, Emelianenko and Voita, 2020),
    encoding skips each applicable merge with probability `dropout` at every
    step, so a word gets a different, finer segmentation now and then: a
    regulariser for training data, re-encoded every epoch. Inference uses
    `dropout=0` (the default), the one deterministic segmentation; the
    attribute may be set after `fit`.

    Pair counts are updated incrementally (only the words holding the merged
    pair are revisited) and the best pair comes from a heap, so 15k sentence
    pairs train in seconds.

    Args:
        max_vocab: optional int, the target vocabulary size, special tokens,
            characters and merged symbols included. Default 8000.
        num_merges: optional int, the largest number of merges.
        lowercase: bool, lowercase the text first.
        min_count: int, characters seen fewer times map to unk.
        special_tokens: four str, the pad, unk, bos and eos tokens (ids 0 to 3).
        merges: optional list of pairs of str, learned merges (set by
            `from_config`; leave it None and call `fit`).
        dropout: float in [0, 1), the BPE-dropout probability of skipping a
            merge while encoding; 0 for inference.
        seed: optional int, seeds the generator of the dropout.

    Example:

    >>> tok = BpeTokenizer(num_merges=10).fit(["low lower lowest.", "newer newest"])
    >>> tok.tokenize("lowest")
    ['lowe', 'st</w>']
    >>> tok.decode(tok.encode("slow newest."))
    'slow newest.'
    >>> tok.tokenize("newest!")  # "!" was never seen
    ['newe', 'st</w>', '<unk>', '</w>']
    >>> tok.dropout = 0.5  # training: sampled segmentations of the same word
    >>> len({" ".join(tok.tokenize("lowest")) for _ in range(50)}) > 1
    True
    """

    def __init__(
        self,
        max_vocab=8000,
        num_merges=None,
        lowercase=False,
        min_count=1,
        special_tokens=SPECIAL_TOKENS,
        merges=None,
        dropout=0.0,
        seed=None,
    ):
        super().__init__(
            lowercase=lowercase,
            max_vocab=max_vocab,
            min_count=min_count,
            special_tokens=special_tokens,
        )
        if num_merges is not None and (
            not isinstance(num_merges, int) or num_merges < 0
        ):
            raise ValueError(
                "`num_merges` must be None or an int >= 0. "
                f"Received: num_merges={num_merges!r}"
            )
        self.num_merges = num_merges
        self.dropout = dropout
        self.seed = seed
        self._rng = random.Random(seed)
        self._set_merges(merges or [])

    @property
    def dropout(self):
        return self._dropout

    @dropout.setter
    def dropout(self, value):
        if not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ValueError(
                "`dropout` is the probability of skipping a merge, a float in "
                f"[0, 1). Received: dropout={value!r}"
            )
        self._dropout = float(value)

    def _set_merges(self, merges):
        self.merges = [tuple(pair) for pair in merges]
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self._cache = {}

    # Splitting.
    def _spell(self, word):
        """The initial symbols of `word`; unknown characters become unk."""
        vocab = self.vocabulary
        unk = self.special_tokens[1]
        symbols = []
        last = len(word) - 1
        for i, char in enumerate(word):
            symbol = char + END_OF_WORD if i == last else char
            if symbol in vocab:
                symbols.append(symbol)
            else:
                symbols.append(unk)
                if i == last:
                    symbols.append(END_OF_WORD)
        return symbols

    def _encode_word(self, word):
        if self._dropout:
            return self._sample_word(word)
        pieces = self._cache.get(word)
        if pieces is not None:
            return pieces
        symbols = self._spell(word)
        ranks = self._ranks
        while len(symbols) > 1:
            best = min(
                zip(symbols, symbols[1:]),
                key=lambda pair: ranks.get(pair, len(ranks)),
            )
            if best not in ranks:
                break
            symbols = _merge_word(symbols, best, best[0] + best[1])
        if len(self._cache) < _CACHE_SIZE:
            self._cache[word] = symbols
        return symbols

    def _sample_word(self, word):
        """BPE-dropout: the best-ranked merge among those not dropped, applied
        at its surviving positions, until none is left."""
        symbols = self._spell(word)
        ranks, keep = self._ranks, 1.0 - self._dropout
        random = self._rng.random
        while len(symbols) > 1:
            kept = [
                (ranks[pair], i)
                for i, pair in enumerate(zip(symbols, symbols[1:]))
                if pair in ranks and random() < keep
            ]
            if not kept:
                break
            best = min(kept)[0]
            starts = {i for rank, i in kept if rank == best}
            out, i = [], 0
            while i < len(symbols):
                if i in starts and i + 1 < len(symbols):
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            symbols = out
        return symbols

    def _split(self, text):
        self._check_fitted()
        pieces = []
        for word in split_words(text):
            pieces.extend(self._encode_word(word))
        return pieces

    def _join(self, tokens):
        specials = set(self.special_tokens) - {self.special_tokens[1]}
        words = []
        current = ""
        for token in tokens:
            if token in specials:
                if current:
                    words.append(current)
                    current = ""
                words.append(token)
            elif token.endswith(END_OF_WORD):
                words.append(current + token[: -len(END_OF_WORD)])
                current = ""
            else:
                current += token
        if current:
            words.append(current)
        return detokenize(words)

    # Learning the merges.
    def _fit(self, texts):
        word_counts = collections.Counter()
        for text in texts:
            word_counts.update(split_words(text))
        char_counts = collections.Counter()
        for word, count in word_counts.items():
            for char in word:
                char_counts[char] += count
        alphabet = sorted(c for c, n in char_counts.items() if n >= self.min_count)
        base = [END_OF_WORD]
        for char in alphabet:
            base += [char, char + END_OF_WORD]
        if self.max_vocab is not None and len(base) + 4 > self.max_vocab:
            raise ValueError(
                f"The {len(alphabet)} characters of the training text need a "
                f"vocabulary of at least {len(base) + 4}: raise `max_vocab` or "
                f"`min_count`. Received: max_vocab={self.max_vocab}"
            )
        self.vocabulary = Vocabulary(base, special_tokens=self.special_tokens)
        self._set_merges([])

        words = sorted(word_counts)  # fixed order: deterministic bookkeeping
        freqs = [word_counts[w] for w in words]
        symbols = [self._spell(w) for w in words]
        merges, tokens = self._learn(symbols, freqs, len(base) + 4)
        self.vocabulary = Vocabulary(base + tokens, special_tokens=self.special_tokens)
        self._set_merges(merges)

    def _learn(self, words, freqs, size):
        unk = self.special_tokens[1]
        pair_counts = collections.defaultdict(int)  # pair -> weighted count
        where = collections.defaultdict(set)  # pair -> indices of words holding it
        for i, (symbols, freq) in enumerate(zip(words, freqs)):
            for pair in zip(symbols, symbols[1:]):
                if unk not in pair:
                    pair_counts[pair] += freq
                    where[pair].add(i)
        heap = [(-n, pair) for pair, n in pair_counts.items()]
        heapq.heapify(heap)

        merges, tokens, known = [], [], set(self.vocabulary.tokens)
        while heap:
            if self.num_merges is not None and len(merges) >= self.num_merges:
                break
            if self.max_vocab is not None and size >= self.max_vocab:
                break
            neg, pair = heapq.heappop(heap)
            if pair_counts.get(pair, 0) != -neg:
                continue  # stale entry: the count changed since it was pushed
            if -neg < 2:
                break
            merged = pair[0] + pair[1]
            merges.append(pair)
            if merged not in known:
                known.add(merged)
                tokens.append(merged)
                size += 1
            changed = set()
            for i in where.pop(pair):
                old = words[i]
                new = _merge_word(old, pair, merged)
                if len(new) == len(old):
                    continue  # a stale index: the pair left this word earlier
                words[i] = new
                freq = freqs[i]
                for p in zip(old, old[1:]):
                    if unk not in p:
                        pair_counts[p] -= freq
                        changed.add(p)
                for p in zip(new, new[1:]):
                    if unk not in p:
                        pair_counts[p] += freq
                        where[p].add(i)
                        changed.add(p)
            pair_counts.pop(pair, None)
            changed.discard(pair)
            for p in changed:
                n = pair_counts[p]
                if n > 0:
                    heapq.heappush(heap, (-n, p))
                else:
                    pair_counts.pop(p, None)
        return merges, tokens

    # Saving.
    def get_config(self):
        config = super().get_config()
        config["num_merges"] = self.num_merges
        config["merges"] = [list(pair) for pair in self.merges]
        config["dropout"] = self._dropout
        config["seed"] = self.seed
        return config

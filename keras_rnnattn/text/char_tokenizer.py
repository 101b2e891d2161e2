"""Character-level tokenizer: every character, spaces included, is a token."""

from keras_rnnattn.text.normalization import fold_letters as fold
from keras_rnnattn.text.tokenizer import Tokenizer
from keras_rnnattn.text.vocabulary import SPECIAL_TOKENS, Vocabulary

# The characters `fold_letters=True` spells with the vocabulary's letters: the
# Latin letters with marks (Latin-1, Extended-A and B, Extended Additional),
# the Latin ligatures and the typographic apostrophe.
FOLDED_RANGES = ((0x00C0, 0x0250), (0x1E00, 0x1F00), (0xFB00, 0xFB07), (0x2019, 0x201A))


class CharTokenizer(Tokenizer):
    """One token per character (after Unicode NFC), for character models.

    Spaces and newlines are tokens like any other character, so `decode`
    gives back the normalised text exactly. Characters not seen in `fit` map
    to `unk_id` (1), except with `fold_letters=True`, where a letter with a
    mark that the vocabulary lacks is read as its base letters
    (`keras_rnnattn.text.fold_letters`: `café` as `cafe`, `straße` as
    `strasse`), by a table of the Latin letters with marks (`folding`), which
    the tokenizer's config holds, so that a runtime without this package
    (an exported model's JSON) reads text alike.

    Args:
        lowercase: bool, lowercase the text first.
        max_vocab: optional int, the largest vocabulary size, the 4 special
            tokens included; the most frequent characters are kept.
        min_count: int, characters seen fewer times in `fit` map to unk.
        special_tokens: four str, the pad, unk, bos and eos tokens (ids 0 to 3).
        fold_letters: bool, read letters with marks outside the vocabulary as
            their base letters. Defaults to `False`.

    Example:

    >>> tok = CharTokenizer().fit(["abba cab"])
    >>> tok.encode("abc")
    [4, 5, 7]
    >>> tok.decode([2, 5, 4, 6, 3, 4])
    'ba '
    >>> folding = CharTokenizer(fold_letters=True).fit(["cafe naive"])
    >>> folding.tokenize("café naïve"), folding.folding["é"]
    (['c', 'a', 'f', 'e', ' ', 'n', 'a', 'i', 'v', 'e'], 'e')
    """

    def __init__(
        self,
        lowercase=False,
        max_vocab=None,
        min_count=1,
        special_tokens=SPECIAL_TOKENS,
        fold_letters=False,
    ):
        super().__init__(
            lowercase=lowercase,
            max_vocab=max_vocab,
            min_count=min_count,
            special_tokens=special_tokens,
        )
        self.fold_letters = bool(fold_letters)
        self._folding = None

    @property
    def folding(self):
        """dict `{character: spelling}` of the letters with marks that
        `fold_letters=True` reads as others (empty without it or unfitted)."""
        if not self.fold_letters or self.vocabulary is None:
            return {}
        if self._folding is None:
            known = set(self.vocabulary.tokens)
            table = {}
            for start, stop in FOLDED_RANGES:
                for code in range(start, stop):
                    char = chr(code)
                    if self.lowercase:
                        char = char.lower()
                    if char in known or len(char) != 1:
                        continue
                    spelling = fold(char, known)
                    if spelling is not None:
                        table[char] = spelling
            self._folding = table
        return self._folding

    def normalize(self, text):
        text = super().normalize(text)
        table = self.folding
        if not table:
            return text
        return "".join(table.get(char, char) for char in text)

    def fit(self, texts):
        self.vocabulary, self._folding = None, None  # fitted on the text as it is
        return super().fit(texts)

    def _split(self, text):
        return list(text)

    def _join(self, tokens):
        return "".join(tokens)

    def _fit(self, texts):
        self._folding = None
        self.vocabulary = Vocabulary.build(
            texts,
            min_count=self.min_count,
            max_size=self.max_vocab,
            special_tokens=self.special_tokens,
        )

    def get_config(self):
        config = super().get_config()
        if self.fold_letters:  # the key absent otherwise: older configs unchanged
            config["fold_letters"] = True
            config["folding"] = self.folding
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("folding", None)  # made again from the vocabulary
        return super().from_config(config)

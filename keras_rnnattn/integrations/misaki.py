"""A fallback for misaki's English G2P: a neural G2P preset instead of espeak-ng."""

import re

from keras_rnnattn.integrations.shape_buckets import bucketed_translate, warm_up
from keras_rnnattn.text import fold_letters

# misaki's lexicon rates gold words 4 and silver words 3; its espeak-ng
# fallback rates its guesses 2, and so does this one by default.
DEFAULT_RATING = 2
WORD = re.compile(r"[^\W\d_]+(?:['’.\-][^\W\d_]+)*")
# A word longer than the model reads is pronounced in pieces of at most that
# length, cut at its hyphens and dots first; one of more than this many pieces
# (a run of letters that is no word: base64, a pasted hash) gets (None, None).
MAX_PIECES = 4
SEPARATORS = re.compile(r"(?<=[.\-])")
# misaki writes its lexicon's flap and glottal stop as Kokoro-82M v1.0's T and
# t unless `G2P(version="2.0")` (misaki/en.py, after resolving every token).
MISAKI_VERSIONS = ("1.0", "2.0")
KOKORO_V1 = str.maketrans({"ɾ": "T", "ʔ": "t"})


def misaki_symbols(phonemes, version="2.0"):
    """Phonemes in the symbols of a misaki version, as misaki's `G2P` writes them.

    misaki's lexicons (and `G2P(version="2.0")`) keep the flap `ɾ` and the
    glottal stop `ʔ`; for Kokoro-82M v1.0 (misaki's default `version=None`)
    it writes them `T` and `t`. The G2P presets write the lexicon's symbols;
    standalone users of Kokoro v1.0 map them with `version="1.0"` (inside
    misaki's pipeline misaki maps the fallback's output itself).

    Args:
        phonemes: str or None.
        version: `"2.0"` (the lexicon's symbols, unchanged) or `"1.0"`.

    Returns:
        str (None stays None).

    Example:

    >>> misaki_symbols("bˈʌɾəɹ", "1.0"), misaki_symbols("bˈʌɾəɹ", "2.0")
    ('bˈʌTəɹ', 'bˈʌɾəɹ')
    """
    if version not in MISAKI_VERSIONS:
        raise ValueError(
            f"`version` must be one of {MISAKI_VERSIONS} (misaki's symbols for "
            f"Kokoro-82M v1.0, or its lexicon's). Received: version={version!r}"
        )
    if phonemes is None or version == "2.0":
        return phonemes
    return phonemes.translate(KOKORO_V1)


class MisakiFallback:
    """misaki's `fallback(token) -> (phonemes, rating)`, from a G2P preset.

    misaki's English `G2P` looks each word up in its lexicon and hands every
    word it does not know to its fallback; the fallback misaki ships is
    espeak-ng (GPL). This one pronounces the word with a `Translator` preset
    trained on misaki's own lexicon (`misaki_us_g2p`), so its phonemes are in
    misaki's symbol set. Pronunciations are cached; `prime` pronounces the
    words of whole texts in one batched model call, so that a sentence of
    unknown words costs one call. A letter the model was not trained on is
    folded to its base letter (`café` → `cafe`); a word that still has such
    letters, or has none, gets `(None, None)`, which misaki writes as its
    unknown-word mark. A word longer than the model reads is pronounced in
    pieces (cut at its hyphens and dots first), or refused with `(None, None)`
    past four pieces: the fallback never raises on a token's text.

    Args:
        preset: str, the preset name or folder. Defaults to `"misaki_us_g2p"`,
            or `"misaki_gb_g2p"` with `british=True`.
        model: optional `Translator`, used instead of loading `preset`.
        rating: int, the rating returned with each pronunciation (misaki's
            lexicon uses 4 and 3; below them by default).
        beam_size: int, 1 (greedy, the default) or more for beam search.
        warm: bool, compile the model's few fixed shapes now (seconds on JAX),
            so that no call compiles later (`shape_buckets`). Defaults to `True`.
        misaki_version: `"2.0"` (default: the lexicon's symbols, what misaki's
            `G2P` expects of a fallback and maps itself) or `"1.0"` (Kokoro-82M
            v1.0's `T` and `t` for `ɾ` and `ʔ`, for calling the fallback
            outside misaki's pipeline; see `misaki_symbols`).
        british: bool, British English (`misaki_gb_g2p`), for misaki's
            `en.G2P(british=True)`, as misaki's own
            `EspeakFallback(british=True)`. Defaults to `False`.

    Call arguments:
        token: an object with a `.text` str (misaki's `MToken`).

    Returns:
        `(phonemes, rating)`: a str and the int rating, or `(None, None)`.

    Example:

    >>> from misaki import en  # doctest: +SKIP
    >>> fallback = MisakiFallback()  # doctest: +SKIP
    >>> g2p = en.G2P(fallback=fallback)  # doctest: +SKIP
    >>> text = "Glorptastic zibbering frumbles."  # doctest: +SKIP
    >>> fallback.prime([text])  # one model call for its words  # doctest: +SKIP
    >>> phonemes, tokens = g2p(text)  # doctest: +SKIP
    """

    def __init__(
        self,
        preset=None,
        model=None,
        rating=DEFAULT_RATING,
        beam_size=1,
        misaki_version="2.0",
        warm=True,
        british=False,
    ):
        misaki_symbols("", misaki_version)  # checks it
        if not isinstance(british, bool):
            raise ValueError(f"`british` must be a bool. Received: british={british!r}")
        if preset is None:
            preset = "misaki_gb_g2p" if british else "misaki_us_g2p"
        if model is None:
            from keras_rnnattn.models import Translator

            model = Translator.from_preset(preset)
        if not hasattr(model, "translate") or not hasattr(model, "source_tokenizer"):
            raise ValueError(
                "`model` must be a Translator from spelling to phonemes (for example "
                "Translator.from_preset('misaki_us_g2p')). "
                f"Received: model of type {type(model).__name__}"
            )
        if not isinstance(rating, int) or isinstance(rating, bool):
            raise ValueError(f"`rating` must be an int. Received: rating={rating!r}")
        self.model = model
        self.rating = rating
        self.beam_size = beam_size
        self.misaki_version = misaki_version
        self.british = british
        self.cache = {}
        # Characters a piece may have: the model reads its eos token too.
        self.piece_length = max(1, int(model.max_source_length) - 1)
        vocabulary = model.source_tokenizer.vocabulary
        self._known = set(vocabulary.tokens[len(vocabulary.special_tokens) :])
        if warm:
            warm_up(model, beam_size=beam_size)

    def spelling(self, word):
        """The word as the model reads it, or None where it cannot.

        Letters outside the model's training characters are folded to their
        base letters (`keras_rnnattn.text.fold_letters`: `é` → `e`, `ß` → `ss`).

        Args:
            word: str.

        Returns:
            str, or None when a character stays unknown or the word has no
            letter.
        """
        if not any(ch.isalpha() for ch in word):
            return None
        return fold_letters(word, self._known)

    def prime(self, texts, lexicon=None):
        """Pronounces the words of `texts` that are not cached, in one model call.

        Args:
            texts: str or list of str; their words (runs of letters with
                inner apostrophes, dots or hyphens) are pronounced.
            lexicon: optional misaki `Lexicon` (`g2p.lexicon` of misaki's
                `en.G2P`): then only the words it lacks are pronounced, the
                ones misaki will hand to the fallback.

        Returns:
            int, the number of words pronounced.
        """
        if isinstance(texts, str):
            texts = [texts]
        words = dict.fromkeys(w for text in texts for w in WORD.findall(text))
        todo = [w for w in words if w not in self.cache]
        if lexicon is not None:
            todo = [w for w in todo if not _in_lexicon(lexicon, w)]
        return self._pronounce(todo)

    def pieces(self, spelled):
        """The pieces the model reads of a spelled word: the word itself when
        it fits, else cut at its hyphens and dots and then evenly; None past
        `MAX_PIECES` pieces.

        Args:
            spelled: str, from `spelling`.

        Returns:
            list of str, or None.
        """
        limit = self.piece_length
        if len(spelled) <= limit:
            return [spelled]
        out = []
        for part in SEPARATORS.split(spelled):
            count = -(-len(part) // limit)  # ceil
            size = -(-len(part) // count) if count else 0
            out += [part[i : i + size] for i in range(0, len(part), size or 1)]
        return out if 0 < len(out) <= MAX_PIECES else None

    def _pronounce(self, words):
        readable = {}
        for word in words:
            spelled = self.spelling(word)
            readable[word] = None if spelled is None else self.pieces(spelled)
            if readable[word] is None:
                self.cache[word] = None
        todo = sorted({p for ps in readable.values() if ps for p in ps}, key=len)
        if not todo:
            return 0
        outputs = bucketed_translate(self.model, todo, beam_size=self.beam_size)
        phonemes = dict(zip(todo, outputs))
        for word, pieces in readable.items():
            if pieces is not None:
                joined = "".join(phonemes[p] for p in pieces)
                self.cache[word] = misaki_symbols(joined, self.misaki_version) or None
        return len(todo)

    def __call__(self, token):
        text = getattr(token, "text", None)
        if not isinstance(text, str):
            raise ValueError(
                "A misaki fallback is called with a token that has a `.text` str "
                f"(misaki.token.MToken). Received: {type(token).__name__}"
            )
        if text not in self.cache:
            self._pronounce([text])
        phonemes = self.cache[text]
        return (None, None) if phonemes is None else (phonemes, self.rating)


def _in_lexicon(lexicon, word):
    """Whether misaki's lexicon pronounces `word` itself (its own lookup, with
    its suffix and name rules), so that misaki will not ask the fallback."""
    from misaki.en import TokenContext

    tag = "NNP" if word[:1].isupper() else "NN"
    try:
        phonemes, _ = lexicon.get_word(word, tag, None, TokenContext())
    except Exception:  # noqa: BLE001 (misaki's lookup of an odd word: ask the model)
        return False
    return phonemes is not None

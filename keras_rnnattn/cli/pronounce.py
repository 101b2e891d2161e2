"""`keras-rnnattn pronounce`: the words of each line, one output line a word,
streamed as the lines come."""

import sys
import unicodedata

from keras_rnnattn.cli.backend import PROG, CommandError
from keras_rnnattn.cli.commands import _load

# WORD: letters, with inner apostrophes, dots and hyphens kept in the word
# (`it's`, `U.S.A`, `e-mail`, `Okonjo-Iweala`), as misaki's tokens are.
from keras_rnnattn.integrations.misaki import WORD, misaki_symbols


def cmd_pronounce(args):
    """Prints `word phonemes` for every word of every line, in order (a word
    as often as it comes), after each line; warns once on stderr for each
    thing it cannot read. Exit 1 when nothing was pronounced."""
    from keras_rnnattn.text import fold_letters

    model = _load(args, "translate")
    # The letters the model reads (a model without a tokenizer reads any).
    tokenizer = getattr(model, "source_tokenizer", None)
    known = getattr(tokenizer, "vocabulary", None)
    # A preset that reads lowercase (cmudict_g2p) prints words lowercased; one
    # that keeps case (misaki_us_g2p: names) prints them as written.
    lower = getattr(tokenizer, "lowercase", True)
    longest = int(getattr(model, "max_source_length", 10**9)) - 1
    letters = "letters" if known is None else "".join(sorted(_letters(known)))
    cache, warned = {}, set()
    pronounced = 0

    def warn(thing, why):
        if thing not in warned:
            warned.add(thing)
            print(
                f"{PROG} pronounce: warning: {thing!r} not pronounced: {why}",
                file=sys.stderr,
                flush=True,
            )

    for line in _lines(args.texts):
        words = []
        for chunk in line.split():
            found = [w.lower() if lower else w for w in WORD.findall(chunk)]
            rest = WORD.sub("", chunk)
            # What is neither a word nor punctuation (an emoji, a digit).
            rest = "".join(c for c in rest if unicodedata.category(c)[0] != "P")
            for word in found:
                spelling = word if known is None else fold_letters(word, known)
                if spelling is None:
                    warn(
                        word,
                        f"the preset reads words of {letters} (accented "
                        "letters are folded to their base letters)",
                    )
                elif len(spelling) > longest:
                    warn(word, f"longer than the {longest} letters the preset reads")
                else:
                    words.append((word, spelling))
            if rest:
                warn(
                    rest,
                    f"the preset reads words of {letters} (accented "
                    "letters are folded to their base letters)",
                )
        todo = sorted({s for _, s in words if s not in cache}, key=len)
        for start in range(0, len(todo), args.batch_size):
            batch = todo[start : start + args.batch_size]
            cache.update(zip(batch, model.translate(batch, beam_size=args.beam)))
        for word, spelling in words:
            phonemes = misaki_symbols(cache[spelling] or "", args.misaki_version)
            print(f"{word} {phonemes}".rstrip())
        sys.stdout.flush()
        pronounced += len(words)
    if not pronounced and not warned:
        raise CommandError("no word given: pass words of letters (and apostrophes)")
    return 0 if pronounced else 1


def _lines(texts):
    """The texts given as arguments, else stdin's lines as they come."""
    if texts:
        yield from texts
        return
    if sys.stdin is None:
        raise CommandError("no text given and no stdin to read texts from")
    if sys.stdin.isatty():
        print(
            "Reading words from stdin, one line at a time (Ctrl-D ends).",
            file=sys.stderr,
        )
    for line in sys.stdin:
        yield line.rstrip("\r\n")


def _letters(vocabulary):
    """The one-character tokens of a vocabulary (a character model's letters)."""
    return [token for token in vocabulary.tokens if len(token) == 1]

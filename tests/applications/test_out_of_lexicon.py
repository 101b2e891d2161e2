"""The out-of-lexicon test set of the misaki G2P preset: CMUdict words that
misaki's lexicons lack, their ARPAbet in misaki's symbols, and the mapping's
agreement with misaki on the words both have."""

from applications.misaki_us_g2p import out_of_lexicon as ool
from tests.backends import on_one_backend

# Data and Python only: the same on every backend.
pytestmark = on_one_backend


def test_arpabet_in_misaki_symbols():
    assert ool.arpabet_to_misaki("K AE1 T") == "kˈæt"
    assert ool.arpabet_to_misaki("B ER1 D") == "bˈɜɹd"
    assert ool.arpabet_to_misaki("W AO1 T ER0") == "wˈɔtəɹ"
    assert ool.arpabet_to_misaki("AH0 B AH1 V") == "əbˈʌv"
    assert ool.arpabet_to_misaki("CH OY2 S JH IY1") == "ʧˌYsʤˈi"
    assert ool.comparable("wˈɔɾəɹ", stress=False) == "wɔtəɹ"


def test_the_set_holds_only_words_misaki_lacks_and_the_mapping_agrees():
    entries = ool.cmudict_entries()
    known = ool.misaki_words()
    words, references = ool.out_of_lexicon(entries, known, words=300)
    assert len(words) == 300 == len(references)
    assert not {w.lower() for w in words} & known
    assert all(w[0].isupper() and len(w) >= 4 for w in words)
    # The same words every time (chosen by their SHA-1).
    assert ool.out_of_lexicon(entries, known, words=300)[0] == words
    agreement = ool.mapping_agreement(entries, words=500)
    # Measured 23.0% / 4.2% on 1,728 words: the mapping is misaki's symbols,
    # less what CMUdict does not write (reduced vowels, flaps it spells t/d).
    assert agreement["wer_without_stress"] < 30 and agreement["ser"] < 6


def test_scores_take_any_reference_and_fold_flaps():
    got = ool.scores(["wˈɔɾəɹ", "kˈæt"], [["wˈɔtəɹ"], ["kˈɑt", "kˈæt"]])
    assert got == {"wer": 0.0, "wer_without_stress": 0.0, "ser": 0.0}
    assert ool.scores(["kæt"], [["kˈæt"]])["wer"] == 100.0

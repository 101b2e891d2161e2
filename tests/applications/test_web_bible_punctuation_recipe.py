"""The punctuation recipe (applications/web_bible_punctuation): its windows of
running text, its scores table, the CRF peer's features and the peer itself."""

import json

import pytest

from applications.web_bible_punctuation import peers, train
from keras_rnnattn.datasets import DatasetNotFoundError, load_world_english_bible
from keras_rnnattn.metrics import punctuation_scores
from keras_rnnattn.text import PUNCTUATION_TAGS, punctuation_tags, punctuation_windows
from tests.backends import on_one_backend

# The recipe's own Python; the tagger it trains is tested on all three backends
# elsewhere, and the shipped preset in tests/test_shipped_presets.py.
pytestmark = on_one_backend

TEXT = (
    "He said, “Isn’t it late?” She answered: “It’s not; we’ll go.” "
    "Then they went to the city of David, and the king’s men followed."
)


def _bible_installed():
    try:
        load_world_english_bible("test")
    except DatasetNotFoundError:
        return False
    return True


def test_tag_windows_gives_one_tag_per_word():
    from keras_rnnattn.models import SequenceTagger
    from keras_rnnattn.text import WordTokenizer

    words, tags = punctuation_tags(TEXT)
    texts, tag_lists = punctuation_windows(words, tags, 7)
    tagger = SequenceTagger(
        tokenizer=WordTokenizer(lowercase=True).fit(texts[:2]),  # unknown words too
        tags=list(PUNCTUATION_TAGS), units=4, embedding_dim=4, max_length=7,
    )  # fmt: skip
    predicted = train.tag_windows(tagger, texts)
    assert [len(p) for p in predicted] == [len(t) for t in tag_lists]
    assert all(t in PUNCTUATION_TAGS for row in predicted for t in row)
    scores = train.rounded(punctuation_scores(predicted, tag_lists))
    table = train.score_table([("x", scores)])
    assert table.count("\n") == 2 and "| x | " in table


def test_quick_options_and_description():
    args = train.parse_args(["--quick", "--attention", "none"])
    assert (args.units, args.max_length) == (8, 20)
    assert args.out.endswith("web_bible_punctuation_none")
    assert "no attention" in train.describe(args)


def test_crf_features_are_the_word_window():
    features = peers.window_features("and he said")
    assert len(features) == 3
    assert features[0]["w"] == "and" and features[0]["w-1"] == "<edge>"
    assert features[0]["first"] and "first" not in features[1]
    assert features[1]["w-1|w"] == "and|he" and features[1]["w|w+1"] == "he|said"
    assert features[2]["w+2"] == "<edge>" and features[2]["last"]
    assert features[2]["suffix3"] == "aid" and features[2]["prefix3"] == "sai"


@pytest.mark.skipif(not _bible_installed(), reason="apt-get install sword-text-web")
def test_the_crf_peer_trains_and_scores_offline(capsys, tmp_path):
    pytest.importorskip("sklearn_crfsuite")
    folder = tmp_path / "preset"
    folder.mkdir()
    (folder / "metadata.json").write_text('{"metrics": {"test": {}}}')
    args = ["--limit", "4000", "--max-iterations", "20", "--into", str(folder)]
    assert peers.main(args) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert result["training_words"] == 4000 and result["test_words"] > 39000
    # Even 4,000 words teach a CRF that a capital follows a full stop and many
    # commas: well above zero, well below perfect.
    assert 20 < result["test"]["overall"]["f1"] < 90
    assert 20 < result["test"]["case_overall"]["f1"] < 95
    written = json.loads((folder / "metadata.json").read_text())
    assert written["metrics"]["peers"]["crf"] == result

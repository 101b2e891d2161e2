"""Tests of BpeTokenizer against a naive byte-pair encoding written from the paper."""

import collections
import random

import numpy as np
import pytest

from keras_rnnattn.text import BpeTokenizer, Tokenizer, split_words
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

CORPUS = [
    "The lower house votes.",
    "The newest lowest prices are the lowest!",
    "Die neuesten Häuser sind größer als die älteren Häuser.",
    "Newer houses are bigger than older houses.",
    "Sie wohnt in einem Haus mit Garten.",
    "A house with a garden is nice, isn't it?",
] * 3 + ["Der Fluss fließt langsam.", "The river flows slowly."]


def naive_bpe(texts, num_merges):
    """Sennrich et al. (2016), Algorithm 1: re-count every pair for every merge."""
    vocab = collections.Counter()
    for text in texts:
        for word in split_words(text):
            vocab[tuple(word[:-1]) + (word[-1] + "</w>",)] += 1
    merges = []
    for _ in range(num_merges):
        pairs = collections.Counter()
        for word, freq in vocab.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += freq
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))  # ties: smallest pair
        if pairs[best] < 2:
            break
        merges.append(best)
        new_vocab = collections.Counter()
        for word, freq in vocab.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new_vocab[tuple(out)] += freq
        vocab = new_vocab
    return merges


def test_merges_match_the_naive_algorithm():
    tok = BpeTokenizer(max_vocab=None, num_merges=60).fit(CORPUS)
    assert tok.merges == naive_bpe(CORPUS, 60)
    assert len(tok.merges) == 60


def test_merges_stop_when_no_pair_is_seen_twice():
    tok = BpeTokenizer(max_vocab=None).fit(CORPUS)
    reference = naive_bpe(CORPUS, 10_000)
    assert tok.merges == reference
    assert len(reference) < 10_000


def test_training_is_deterministic_and_order_free():
    shuffled = list(CORPUS)
    random.Random(0).shuffle(shuffled)
    a = BpeTokenizer(max_vocab=120).fit(CORPUS)
    b = BpeTokenizer(max_vocab=120).fit(shuffled)
    assert a.merges == b.merges
    assert a.vocabulary.tokens == b.vocabulary.tokens
    assert a.vocabulary_size == 120


def test_every_word_of_known_characters_encodes_without_unk():
    tok = BpeTokenizer(max_vocab=100).fit(CORPUS)
    for text in CORPUS + ["Gartenhaus, riverhouse, größte Häuser?"]:
        ids = tok.encode(text)
        assert tok.unk_id not in ids
        assert tok.decode(ids) == text


def test_pieces_join_back_with_end_of_word_marker():
    tok = BpeTokenizer(num_merges=30).fit(CORPUS)
    pieces = tok.tokenize("houses")
    assert "".join(pieces) == "houses</w>"
    assert all(not p.endswith("</w>") for p in pieces[:-1])
    assert tok.detokenize(tok.tokenize("Die Häuser, oder?")) == "Die Häuser, oder?"


def test_unseen_characters_map_to_unk_and_keep_word_boundaries():
    tok = BpeTokenizer(num_merges=30).fit(CORPUS)
    assert tok.tokenize("Hz") == ["H", "<unk>", "</w>"]
    ids = tok.encode("The zoo is here")
    assert ids.count(tok.unk_id) == 1
    assert tok.decode(ids) == "The <unk>oo is here"


def test_min_count_drops_rare_characters():
    tok = BpeTokenizer(num_merges=0, min_count=2).fit(["aab", "aa"])
    assert "b" not in tok.vocabulary and "a" in tok.vocabulary
    assert tok.encode("ab") == [tok.vocabulary.token_to_id("a"), tok.unk_id, 4]
    assert tok.vocabulary.tokens[4] == "</w>"


def test_save_load_gives_identical_encodings(tmp_path):
    tok = BpeTokenizer(max_vocab=90, lowercase=True).fit(CORPUS)
    tok.save(tmp_path / "bpe.json")
    again = BpeTokenizer.load(tmp_path / "bpe.json")
    assert again.merges == tok.merges
    np.testing.assert_array_equal(
        again.encode_batch(CORPUS, add_eos=True), tok.encode_batch(CORPUS, add_eos=True)
    )
    assert isinstance(Tokenizer.load(tmp_path / "bpe.json"), BpeTokenizer)


def test_max_vocab_smaller_than_the_alphabet_raises():
    with pytest.raises(ValueError, match="Received: max_vocab=10"):
        BpeTokenizer(max_vocab=10).fit(CORPUS)
    with pytest.raises(ValueError, match="num_merges=-1"):
        BpeTokenizer(num_merges=-1)


def test_trains_fast_on_many_words():
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyzäöüß")
    words = np.array(
        ["".join(rng.choice(letters, size=rng.integers(2, 12))) for _ in range(20_000)]
    )
    texts = [" ".join(rng.choice(words, size=8)) + "." for _ in range(15_000)]
    # Random words are the worst case (no frequent pairs): a few seconds.
    tok = BpeTokenizer(max_vocab=2000).fit(texts)
    assert tok.vocabulary_size == 2000
    assert tok.decode(tok.encode(texts[0])) == texts[0]


def test_bpe_dropout_samples_segmentations_with_the_papers_probabilities():
    # Provilkov et al. (2020), Algorithm 1: each step applies the best merge
    # among those not dropped (each dropped with probability p) and stops when
    # all are dropped. With the merges (a, b), (ab, c</w>), "abc" is
    # "a b c</w>" with probability p, "ab c</w>" with (1 - p) p and "abc</w>"
    # with (1 - p)^2.
    tok = BpeTokenizer(num_merges=2, seed=0).fit(["abc abc abc"])
    assert tok.merges == [("a", "b"), ("ab", "c</w>")]
    assert tok.tokenize("abc") == ["abc</w>"]
    p = 0.3
    tok.dropout = p
    n = 4000
    counts = collections.Counter(" ".join(tok.tokenize("abc")) for _ in range(n))
    expected = {"a b c</w>": p, "ab c</w>": (1 - p) * p, "abc</w>": (1 - p) ** 2}
    assert set(counts) == set(expected)
    for segmentation, probability in expected.items():
        assert abs(counts[segmentation] / n - probability) < 0.03, counts


def test_bpe_dropout_keeps_words_spellable_and_is_off_for_inference():
    tok = BpeTokenizer(max_vocab=120, seed=3).fit(CORPUS)
    text = "The newest houses are bigger than the lower river."
    plain = tok.encode(text)
    tok.dropout = 0.5
    samples = [tok.encode(text) for _ in range(30)]
    assert len({tuple(s) for s in samples}) > 1
    assert max(len(ids) for ids in samples) > len(plain)  # finer pieces
    for ids in samples:
        assert tok.unk_id not in ids
        assert tok.decode(ids) == text
    tok.dropout = 0.0
    assert tok.encode(text) == plain
    # Seeded: the same seed samples the same segmentations.
    a = BpeTokenizer.from_config({**tok.get_config(), "dropout": 0.5, "seed": 7})
    b = BpeTokenizer.from_config({**tok.get_config(), "dropout": 0.5, "seed": 7})
    assert [a.encode(text) for _ in range(5)] == [b.encode(text) for _ in range(5)]


def test_bpe_dropout_out_of_range_raises():
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        BpeTokenizer(dropout=1.0)
    tok = BpeTokenizer()
    with pytest.raises(ValueError, match="dropout"):
        tok.dropout = -0.1

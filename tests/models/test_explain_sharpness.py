"""`AttentionClassifier.explain` on reviews whose label one keyword decides.

With `concat_last=False` the pooled vector is the classifier's only view of the
text, so a model that classifies the reviews must put its attention on the
keyword; with the default `concat_last=True` the last RNN output is a second
path, and how much the attention alone carries depends on the initial weights
(the class docstring says so).
"""

import keras
import numpy as np
import pytest

from keras_rnnattn.models import AttentionClassifier
from keras_rnnattn.text import WordTokenizer

KEYWORDS = {
    "positive": ["great", "superb", "wonderful", "brilliant"],
    "negative": ["awful", "dreadful", "terrible", "boring"],
    "neutral": ["average", "ordinary", "standard", "typical"],
}
NOUNS = ["film", "plot", "cast", "story", "script", "ending", "score", "pace"]
TEMPLATES = [
    "the {n} was {k}",
    "i think the {n} was {k} overall",
    "honestly this {n} felt {k} and we saw it on friday",
    "we saw it with friends and the {n} was {k}",
    "{k} {n} really",
    "the {n} and the {m} were {k} i think",
    "overall a {k} {n} with friends on friday",
    "it was quite {k} the {n} i mean",
]


def reviews(n, seed):
    """`n` reviews, their labels and their keywords."""
    rng = np.random.default_rng(seed)
    texts, labels, keywords = [], [], []
    for _ in range(n):
        label = list(KEYWORDS)[rng.integers(3)]
        keyword = KEYWORDS[label][rng.integers(4)]
        template = TEMPLATES[rng.integers(len(TEMPLATES))]
        nouns = rng.choice(NOUNS, 2)
        texts.append(template.format(n=nouns[0], m=nouns[1], k=keyword))
        labels.append(label)
        keywords.append(keyword)
    return texts, labels, keywords


def keyword_share(n_train, n_test, epochs, seed, **config):
    """(accuracy, share of held-out reviews whose top weight is the keyword)."""
    keras.utils.set_random_seed(seed)
    texts, labels, _ = reviews(n_train, seed)
    held, held_labels, held_keywords = reviews(n_test, seed + 100)
    model = AttentionClassifier(
        tokenizer=WordTokenizer().fit(texts), labels=list(KEYWORDS), **config
    )
    model.compile(optimizer=keras.optimizers.Adam(5e-3))
    model.fit(texts, labels, epochs=epochs, batch_size=32, verbose=0)
    predicted, _ = model.classify(held)
    accuracy = np.mean([p == t for p, t in zip(predicted, held_labels)])
    top = [max(pairs, key=lambda pair: pair[1])[0] for pairs in model.explain(held)]
    return accuracy, np.mean([t == k for t, k in zip(top, held_keywords)])


def test_without_concat_last_the_pooled_vector_is_the_only_path():
    # What makes the weights explain the decision (the slow test measures it):
    # the output layer reads the attention-pooled vector alone.
    for concat_last, width in ((False, 2 * 8), (True, 4 * 8)):
        model = AttentionClassifier(
            vocabulary_size=20, num_classes=3, units=8, concat_last=concat_last
        )
        model(np.ones((1, 5), "int32"))
        assert model.output_dense.kernel.shape == (width, 3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_the_keyword_gets_the_top_weight_on_the_issues_reviews(seed):
    # 1,000 reviews, 6 epochs, Adam(5e-3), the default sizes; 300 held out. On
    # these seeds the default concat_last=True gave the keyword the top weight
    # in 78% and 74% of the reviews (JAX), without it in 97% and 95%.
    accuracy, share = keyword_share(1000, 300, 6, seed=seed, concat_last=False)
    assert accuracy >= 0.95
    assert share >= 0.8

"""Tiny models with the application models' text methods, for the preset and CLI tests."""

import keras
import numpy as np

from keras_rnnattn.models.generation import GenerationMixin
from keras_rnnattn.models.task_contract import TaskContract
from keras_rnnattn.plotting import plot_attention
from keras_rnnattn.presets.mixin import PresetMixin
from keras_rnnattn.text import CharTokenizer

PACKAGE = "keras_rnnattn_tests"
FEATURES = 4


def featurize(texts):
    """A fixed text -> (N, 4) float32 map (character codes folded into 4 bins)."""
    out = np.zeros((len(texts), FEATURES), "float32")
    for i, text in enumerate(texts):
        for j, char in enumerate(text):
            out[i, (ord(char) + j) % FEATURES] += 1.0 / (1 + len(text))
    return out


@keras.saving.register_keras_serializable(package=PACKAGE)
class TinyModel(PresetMixin, keras.Model):
    """A functional Dense network `(B, 4) -> (B, units)` with a config."""

    def __init__(self, units=2, **kwargs):
        inputs = keras.Input((FEATURES,), name="features")
        hidden = keras.layers.Dense(8, activation="tanh", name="hidden")(inputs)
        outputs = keras.layers.Dense(units, name="head")(hidden)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.units = units

    def get_config(self):
        return {"units": self.units, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def scores(self, texts):
        return self.predict(featurize(texts), verbose=0)  # (N, units)


@keras.saving.register_keras_serializable(package=PACKAGE)
class TinyClassifier(TinyModel):
    """`classify(texts) -> (labels, probabilities)`, with a tokenizer and labels."""

    task_contract = TaskContract("classify")

    def __init__(self, labels=("neg", "pos"), tokenizer=None, **kwargs):
        kwargs.setdefault("units", len(labels))
        super().__init__(**kwargs)
        self.labels = list(labels)
        if isinstance(tokenizer, dict):
            tokenizer = CharTokenizer.from_config(tokenizer)
        self.tokenizer = tokenizer

    def get_config(self):
        config = super().get_config()
        config["labels"] = self.labels
        config["tokenizer"] = (
            None if self.tokenizer is None else self.tokenizer.get_config()
        )
        return config

    def classify(self, texts):
        logits = self.scores(texts)
        probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        return [self.labels[j] for j in probabilities.argmax(-1)], probabilities


@keras.saving.register_keras_serializable(package=PACKAGE)
class TinyTranslator(GenerationMixin, TinyModel):
    """`translate` reverses the words; `plot_attention` draws `scores` as weights.

    Its beam's penalties default to its search settings (a preset's recorded
    ones), as a `Seq2SeqTask`'s do.
    """

    task_contract = TaskContract(
        "translate",
        methods={
            "translate": ("beam_size", "max_length", "length_penalty"),
            "plot_attention": ("beam_size",),
        },
    )

    def translate(
        self,
        texts,
        beam_size=1,
        max_length=None,
        return_attention=False,
        length_penalty=None,
        coverage_penalty=None,
    ):
        defaults = self.search_settings
        beam = beam_size > 1
        if length_penalty is None:
            length_penalty = defaults.length_penalty if beam else 0.0
        if coverage_penalty is None:
            coverage_penalty = defaults.coverage_penalty if beam else 0.0
        penalty = f", alpha {length_penalty}" if length_penalty else ""
        penalty += f", beta {coverage_penalty}" if coverage_penalty else ""
        out = [
            " ".join(text.split()[::-1]) + f" (beam {beam_size}{penalty})"
            for text in texts
        ]
        if max_length is not None:
            out = [text[:max_length] for text in out]
        return out

    def plot_attention(self, text, beam_size=1):
        source = text.split()
        target = source[::-1]
        weights = np.full((len(target), len(source)), 1.0 / len(source))
        return plot_attention(weights, source, target, title=f"beam {beam_size}")


@keras.saving.register_keras_serializable(package=PACKAGE)
class TinyGenerator(TinyModel):
    """`generate` echoes the prompt and the sampling arguments it received."""

    task_contract = TaskContract(
        "generate",
        methods={
            "generate": (
                "max_length",
                "temperature",
                "top_k",
                "top_p",
                "seed",
                "max_new_tokens",
            )
        },
    )

    def generate(
        self,
        prompt,
        max_length=None,
        temperature=1.0,
        top_k=None,
        top_p=None,
        seed=None,
        max_new_tokens=None,
    ):
        return (
            f"{prompt} | max_length={max_length} max_new_tokens={max_new_tokens} "
            f"temperature={temperature} top_k={top_k} top_p={top_p} seed={seed}"
        )


@keras.saving.register_keras_serializable(package=PACKAGE)
class TinyTagger(TinyModel):
    """`tag` tags words longer than two characters N, the others X."""

    task_contract = TaskContract("tag")

    def tag(self, texts):
        return [
            [(word, "N" if len(word) > 2 else "X") for word in t.split()] for t in texts
        ]


@keras.saving.register_keras_serializable(package=PACKAGE)
class TinySubclassed(PresetMixin, keras.Model):
    """A subclassed model whose variables are made on the first call."""

    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = keras.layers.Dense(5, activation="relu")
        self.head = keras.layers.Dense(units)

    def call(self, inputs):
        return self.head(self.hidden(inputs))

    def get_config(self):
        return {"units": self.units, "name": self.name}


def fitted_tokenizer():
    return CharTokenizer().fit(["a gorgeous movie", "a dull film"])


def trained(model, steps=2):
    """Compiles and fits a TinyModel a little, so that it has optimizer state."""
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, FEATURES)).astype("float32")
    y = rng.normal(size=(8, model.units)).astype("float32")
    model.fit(x, y, epochs=steps, verbose=0)
    return model

"""The mixin that gives a Keras model `from_preset` and `save_to_preset`."""

import keras

import keras_rnnattn.presets as presets


class _ClassProperty:
    """A read-only property of a class (`Model.presets`), as keras-hub has one.

    Read on an instance it raises AttributeError, so that Keras, which reads
    every attribute of a model when it saves or loads weights, does not list
    the presets each time.
    """

    def __init__(self, getter):
        self.getter = getter
        self.__doc__ = getter.__doc__

    def __get__(self, instance, owner):
        if instance is not None:
            raise AttributeError(
                f"`presets` is a property of the class: read it as "
                f"{owner.__name__}.presets."
            )
        return self.getter(owner)


class PresetMixin:
    """Adds `from_preset`, `save_to_preset`, `list_presets` and `presets` to a `keras.Model`.

    Put it first among the bases and register the class:

        @keras.saving.register_keras_serializable(package="keras_rnnattn")
        class Translator(PresetMixin, keras.Model):
            ...

    The class needs what a `.keras` file needs: a `get_config` of plain JSON
    data (tokenizers included, as the application models keep them) and a
    `from_config`, and it must be built once deserialised (a functional model
    is; a subclassed one builds from the `build_config` Keras records). See
    `keras_rnnattn.presets` for the folder layout and where presets are looked
    up.

    Example:

    >>> import tempfile, keras, numpy as np
    >>> @keras.saving.register_keras_serializable(package="docs")
    ... class Scaler(PresetMixin, keras.Model):
    ...     def __init__(self, units=2, **kwargs):
    ...         inputs = keras.Input((3,))
    ...         super().__init__(inputs, keras.layers.Dense(units)(inputs), **kwargs)
    ...         self.units = units
    ...     def get_config(self):
    ...         return {"units": self.units, "name": self.name}
    >>> model = Scaler()
    >>> folder = model.save_to_preset(tempfile.mkdtemp(), {"description": "demo"})
    >>> loaded = Scaler.from_preset(folder)
    >>> x = np.ones((1, 3), "float32")
    >>> bool(np.all(loaded.predict(x, verbose=0) == model.predict(x, verbose=0)))
    True
    """

    # Config entries that define the output layer ("head") and the layers they
    # build: overriding one in `from_preset` gives a freshly initialised head
    # over the preset's other weights. Those of `preset_head_resets` that are
    # not given are set to None (a new `num_classes` drops the preset's
    # `labels`).
    preset_head_keys = ()
    preset_head_resets = ()
    preset_head_layers = ()

    @classmethod
    def from_preset(cls, name_or_dir, compile=True, **config_overrides):
        """Builds a model from a preset and loads its weights.

        Args:
            name_or_dir: a preset name (see `list_presets()`), the path of a
                preset folder, or a hub handle, `hf://<owner>/<name>` or
                `kaggle://<owner>/<model>/keras/<variation>`.
            compile: bool, whether to `compile()` the model with its defaults
                (so `fit` works at once, as in keras-hub). Defaults to True.
            **config_overrides: entries of the model's config to replace before
                it is built (for example `max_length`); they must keep the
                weights' shapes, but for the output layer's own entries
                (`preset_head_keys`: `num_classes`/`labels` of
                `AttentionClassifier`, `num_tags`/`tags` of `SequenceTagger`),
                which give a new output layer, freshly initialised, over the
                preset's other weights: the preset as a starting point for
                fine-tuning to new labels.

        Returns:
            An instance of this class (or of a subclass, if the preset holds
            one), built and loaded, compiled unless `compile=False`. Called on
            `PresetMixin` itself, whatever model the preset holds.

        Raises:
            keras_rnnattn.presets.PresetError: (a `ValueError`) an unknown name
                (the message lists the presets), a missing or corrupt file
                (named), a preset of another class, or a config that safe mode
                refuses.

        Example:

        >>> from keras_rnnattn.models import AttentionClassifier
        >>> clf = AttentionClassifier.from_preset(
        ...     "movie_snippets_sentiment", labels=["neg", "neutral", "pos"])
        >>> clf.labels, clf.num_classes
        (['neg', 'neutral', 'pos'], 3)
        """
        expected = None if cls is PresetMixin else cls
        found = presets.preset_class(name_or_dir)
        head_keys = getattr(found, "preset_head_keys", ())
        head = {k: v for k, v in config_overrides.items() if k in head_keys}
        kept = {k: v for k, v in config_overrides.items() if k not in head_keys}
        model = presets.load_preset(name_or_dir, cls=expected, **kept)
        if head:
            model = _with_new_head(model, head)
        if compile:
            model.compile()
        return model

    def save_to_preset(self, preset_dir, metadata=None, weights_dtype=None):
        """Writes this model as a preset folder.

        Writes config.json, model.weights.h5 (without optimizer state), one
        `<attribute>.json` per tokenizer of `preset_tokenizers()`, and
        metadata.json: `metadata` plus the class, parameter count, versions,
        backend, date and the size and SHA-256 of each file.

        Args:
            preset_dir: str or path-like, the folder (created if missing).
            metadata: optional dict of plain JSON data; for a shipped preset
                `"description"`, `"data"`, `"data_license"`, `"command"` and
                `"metrics"`.
            weights_dtype: None (default), or `"float16"` to write the
                floating-point weights at half the size (loading casts them
                back); see `keras_rnnattn.presets.save_preset`.

        Returns:
            The absolute path of the folder.
        """
        return presets.save_preset(
            self, preset_dir, metadata=metadata, weights_dtype=weights_dtype
        )

    def preset_metadata(self):
        """Entries the model keeps in its preset's metadata.json itself (the
        search defaults of a generating model); `{}` here."""
        return {}

    def read_preset_metadata(self, metadata):
        """Reads back, when the preset loads, what `preset_metadata` wrote
        (and what the preset's recipe recorded); nothing here."""

    def preset_tokenizers(self):
        """The tokenizers written as `<name>.json` beside the weights.

        By default every public attribute that is a `keras_rnnattn.text`
        tokenizer, under its attribute name. Override to choose other names.
        The files are for reading and for other tools: `from_preset` reads the
        tokenizers from config.json.

        Returns:
            dict `{file_stem: tokenizer}`.
        """
        return presets.preset_tokenizers(self)

    @classmethod
    def list_presets(cls):
        """The available presets that hold this class (or a subclass).

        Returns:
            dict `{name: summary}` as `keras_rnnattn.presets.list_presets()`,
            keeping presets whose class is registered and a subclass of `cls`
            (all of them when called on `PresetMixin`).
        """
        out = {}
        for name, summary in presets.list_presets().items():
            if cls is not PresetMixin:
                registered = _registered_class(summary)
                if registered is None or not issubclass(registered, cls):
                    continue
            out[name] = summary
        return out

    @_ClassProperty
    def presets(cls):
        """The available presets of this class, as `list_presets()` (keras-hub's name).

        A class property: `Translator.presets`.
        """
        return cls.list_presets()


def _registered_class(summary):
    metadata_class = summary.get("registered_name") or summary.get("class_name")
    if not metadata_class:
        return None
    found = keras.saving.get_registered_object(metadata_class)
    return found if isinstance(found, type) else None


def _with_new_head(model, head):
    """A model of `model`'s class and config with `head`'s entries, holding
    `model`'s weights but in its freshly initialised `preset_head_layers`."""
    cls = type(model)
    config = model.get_config()
    for key in cls.preset_head_resets:
        config[key] = None
    config.update(head)
    fresh = cls.from_config(config)
    for layer in fresh.layers:
        if layer.name in cls.preset_head_layers or not layer.weights:
            continue
        layer.set_weights(model.get_layer(layer.name).get_weights())
    return fresh

"""A shared harness for the application models' tests, the task-level sibling of
`layer_test_utils.run_layer_test`. It reads a model through its public API only."""

import json
import os
import re

import keras
import numpy as np
import pytest

TASK_CHECKS = ("strings", "ids", "padding", "keras_file", "preset", "bad_input")
EXTRA_PADDING = 3  # pad columns appended by the padding check


def run_task_test(
    model,
    texts,
    check,
    targets=None,
    tmp_path=None,
    expected_output_shape=None,
    known_gaps=None,
):
    """Checks one thing every application model must do (the checks don't
    change the model, so one model can serve all of them).

    - `"strings"`: strings in, strings out (`classify`, `tag`, `generate`,
      `translate`), well formed; one string gives the first result of a list;
    - `"ids"`: token ids in give the same outputs, strings and loss as strings in;
    - `"padding"`: extra pad ids at the end, or a row alone without its padding,
      change neither the outputs nor the loss;
    - `"keras_file"`: a `.keras` round trip restores the class, the config, the
      tokenizers and the compile state, and gives identical outputs and strings;
    - `"preset"`: a `save_to_preset` / `from_preset` round trip writes the
      tokenizer files and gives identical outputs and strings;
    - `"bad_input"`: x=None, ids out of range, negative or fractional ids, 1-D
      and 3-D ids, and a text that is None each raise one `ValueError` that
      names the model's class and what is expected.

    Args:
        model: a built application model (compiled, for the loss checks).
        texts: list of str the model's tokenizer knows, of different lengths.
        check: one of `TASK_CHECKS`.
        targets: the texts' targets as `fit` takes them (label strings, lists of
            tags, target texts); None for a language model (its texts).
        tmp_path: a folder for the saving checks.
        expected_output_shape: the shape of the outputs of `texts`' ids
            (`predict`'s, or the Translator's generated tokens).
        known_gaps: dict `{label: reason}`: a failing part whose description
            contains `label` is a known library gap; if only those fail, the
            test is marked xfail with the reasons. A gap that is fixed passes.
    """
    if check not in TASK_CHECKS:
        raise ValueError(f"`check` must be one of {TASK_CHECKS}. Received: {check!r}")
    io = task_io(model)
    failures = []
    if check == "strings":
        _check_strings(io, texts, expected_output_shape)
    elif check == "ids":
        _check_ids(io, texts, targets)
    elif check == "padding":
        _check_padding(io, texts, targets)
    elif check in ("keras_file", "preset"):
        assert tmp_path is not None, "pass tmp_path to run the saving checks"
        round_trip = _check_keras_file if check == "keras_file" else _check_preset
        round_trip(io, texts, targets, str(tmp_path))
    else:
        failures = _bad_input_failures(io)
    gaps = known_gaps or {}
    unknown = [f for f in failures if not any(label in f for label in gaps)]
    assert not unknown, "\n".join(unknown)
    if failures:
        reasons = sorted(
            {r for label, r in gaps.items() if any(label in f for f in failures)}
        )
        pytest.xfail("; ".join(reasons))


def run_export_test(model, texts, tmp_path, max_length=8):
    """Exports `model` to a SavedModel and checks its signatures give the
    model's own results (needs TensorFlow; under JAX and torch the export runs
    in a TensorFlow subprocess, so callers mark it `slow`).

    Args:
        model: a built application model.
        texts: list of str.
        tmp_path: the output folder's parent.
        max_length: the decode loops' length (Translator, language model).
    """
    tf = pytest.importorskip("tensorflow")
    from keras_rnnattn.export import export_model

    io = task_io(model)
    path = os.path.join(str(tmp_path), "export")
    export_model(model, path, **io.export_options(max_length))
    with open(os.path.join(path, "export.json"), encoding="utf-8") as file:
        manifest = json.load(file)
    for name in model.preset_tokenizers():
        assert os.path.exists(os.path.join(path, f"{name}.json")), name
    loaded = tf.saved_model.load(path)
    assert set(manifest["signatures"]) <= set(loaded.signatures)
    io.check_export(loaded.signatures, texts, max_length)


# --- Reading each kind of application --------------------------------------------
def task_io(model):
    """The reader for `model`, chosen by the text method its class declares
    (`task_contract.text_method`)."""
    readers = {cls.method: cls for cls in (_Translate, _Classify, _Tag, _Generate)}
    method = model.task_contract.text_method
    if method not in readers:
        raise ValueError(
            f"run_task_test reads models whose text method is one of "
            f"{sorted(readers)}. Received: {type(model).__name__} ({method})"
        )
    return readers[method](model)


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _pad_columns(ids, extra, pad_id=0):
    return np.pad(ids, ((0, 0), (0, extra)), constant_values=pad_id).astype("int32")


def _lengths(ids, pad_id=0):
    return [int(np.sum(row != pad_id)) for row in ids]


class _TaskIO:
    """How the harness reads one kind of application; subclasses fill it in."""

    method = None
    needs_targets = True  # the loss checks need `targets`

    def __init__(self, model):
        self.model = model
        self.name = type(model).__name__

    @property
    def tokenizer(self):
        return self.model.task_contract.input_tokenizer_of(self.model)

    @property
    def vocabulary_size(self):
        return self.model.vocabulary_size

    # Strings and ids.
    def strings(self, texts):
        """The strings-out result of a list of texts, checked for its form."""
        raise NotImplementedError

    def single(self, text, texts):
        """The strings-out result of one str of `texts`, comparable to its entry."""
        raise NotImplementedError

    def ids(self, texts):
        """The texts' token ids `(B, S)`, padded at the end with 0."""
        ids = self.tokenizer.encode_batch(texts)
        limit = getattr(self.model, "max_length", None)
        return ids if limit is None else ids[:, :limit]

    def outputs(self, ids):
        return self.model.predict(ids, verbose=0)

    def text_outputs(self, texts):
        return self.model.predict(texts, verbose=0)

    def strings_from_ids(self, ids, texts):
        raise NotImplementedError

    def same_outputs(self, got, want, ids, exact=False):
        """`got` (of padded or cut ids) equals `want` at the real positions of `ids`."""
        if want.ndim > 2:  # (B, S, ...): compare the real positions
            real, width = ids != 0, ids.shape[1]
            got, want = got[:, :width][real], want[:, :width][real]
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, atol=1e-5)

    # Training data.
    def text_data(self, texts, targets):
        """`(x, y)` as `evaluate` takes strings."""
        return texts, targets

    def id_data(self, texts, targets):
        """`(x, y)` as `evaluate` takes ids, the same data as `text_data`."""
        raise NotImplementedError

    def pad_data(self, x, y, extra):
        """`(x, y)` of `id_data` with `extra` pad columns at the end."""
        return _pad_columns(x, extra), y

    def evaluate(self, x, y):
        return np.ravel(self.model.evaluate(x, y, batch_size=len(y), verbose=0))

    # Round trips.
    def fingerprint(self, texts, targets):
        """Outputs and strings that a restored model must give identically."""
        return {
            "outputs": self.outputs(self.ids(texts)),
            "strings": self.strings(texts),
        }

    # Bad input.
    def id_entries(self):
        """`{name: fn(ids)}`: the public methods that take token ids."""
        return {
            "predict": lambda x: self.model.predict(x, verbose=0),
            "evaluate": lambda x: self.model.evaluate(x, verbose=0),
        }

    # Export.
    def export_options(self, max_length):
        return {}

    def check_export(self, signatures, texts, max_length):
        import tensorflow as tf

        ids = self.ids(texts)
        got = signatures["serving_default"](token_ids=tf.constant(ids))
        got = got["probabilities"]
        np.testing.assert_allclose(_np(got), self.outputs(ids), atol=1e-5)


class _Classify(_TaskIO):
    method = "classify"

    def _names(self):
        return self.model.labels or list(range(self.model.num_classes))

    def strings(self, texts):
        labels, probs = self.model.classify(texts)
        assert probs.shape == (len(texts), self.model.num_classes), probs.shape
        assert np.all(np.isfinite(probs)) and len(labels) == len(texts)
        names = self._names()
        if self.model.multi_label:
            assert all(set(row) <= set(names) for row in labels), labels
        else:
            np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
            assert labels == [names[j] for j in probs.argmax(-1)], labels
        return labels

    def single(self, text, texts):
        label, probs = self.model.classify(text)
        assert probs.shape == (self.model.num_classes,)
        return label

    def strings_from_ids(self, ids, texts):
        probs = self.outputs(ids)
        names = self._names()
        if self.model.multi_label:
            return [[names[j] for j in np.flatnonzero(p >= 0.5)] for p in probs]
        return [names[j] for j in probs.argmax(-1)]

    def fingerprint(self, texts, targets):
        out = super().fingerprint(texts, targets)
        if self.model.pooling in ("attention", "structured"):
            out["explain"] = self.model.explain(texts)
        return out

    def id_data(self, texts, targets):
        if self.model.multi_label:
            y = np.zeros((len(texts), self.model.num_classes), "float32")
            for i, row in enumerate(targets):
                y[i, [self._names().index(t) for t in row]] = 1.0
            return self.ids(texts), y
        names = self._names()
        return self.ids(texts), np.array([names.index(t) for t in targets], "int32")


class _Tag(_TaskIO):
    method = "tag"

    def _names(self):
        return self.model.tags or list(range(self.model.num_tags))

    def strings(self, texts):
        pairs = self.model.tag(texts)
        assert len(pairs) == len(texts)
        for text, row in zip(texts, pairs):
            tokens = self.tokenizer.tokenize(text)[: self.model.max_length]
            assert [t for t, _ in row] == tokens, (row, tokens)
            assert all(tag in self._names() for _, tag in row), row
        return pairs

    def single(self, text, texts):
        return self.model.tag(text)

    def strings_from_ids(self, ids, texts):
        predicted = self.outputs(ids).argmax(-1)  # (B, S)
        names = self._names()
        out = []
        for text, row, n in zip(texts, predicted, _lengths(ids)):
            tokens = self.tokenizer.tokenize(text)[:n]
            out.append([(t, names[j]) for t, j in zip(tokens, row[:n])])
        return out

    def id_data(self, texts, targets):
        x = self.ids(texts)
        y = np.zeros_like(x)
        names = self._names()
        for i, row in enumerate(targets):
            row = [names.index(t) for t in row][: x.shape[1]]
            y[i, : len(row)] = row
        return x, y

    def pad_data(self, x, y, extra):
        # Tags written at padded positions are left out of the loss: write some.
        x, y = _pad_columns(x, extra), _pad_columns(y, extra)
        y[x == 0] = self.model.num_tags - 1
        return x, y


class _Generate(_TaskIO):
    method = "generate"
    needs_targets = False  # the targets are the texts

    def _room(self, texts):
        longest = max(len(self.tokenizer.encode(t)) for t in texts) + 1  # + bos
        return min(4, self.model.max_length - longest + 1)

    def strings(self, texts):
        room = self._room(texts)
        out = self.model.generate(texts, max_new_tokens=room, temperature=0)
        assert len(out) == len(texts) and all(isinstance(t, str) for t in out)
        for prompt, text in zip(texts, out):
            read = self.tokenizer.decode(self.tokenizer.encode(prompt))
            assert text.startswith(read), (prompt, text)
            grown = len(self.tokenizer.encode(text)) - len(self.tokenizer.encode(read))
            assert 0 <= grown <= room, (prompt, text)  # at most max_length tokens
        perplexity = self.model.perplexity(texts)
        assert np.isfinite(perplexity) and perplexity >= 1.0, perplexity
        return out

    def single(self, text, texts):
        # The list's length limit, so that the two agree.
        return self.model.generate(
            text, max_new_tokens=self._room(texts), temperature=0
        )

    def ids(self, texts):
        return self.tokenizer.encode_batch(texts, add_bos=True)  # (B, 1 + S)

    def strings_from_ids(self, ids, texts):
        # The perplexity of `texts` from the logits of their ids: the ids'
        # side of `perplexity(texts)`, strings in.
        logits = self.outputs(ids).astype("float64")  # (B, T, V)
        logits -= logits.max(-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        _, y = self.id_data(texts, None)
        picked = np.take_along_axis(log_probs, y[..., None], -1)[..., 0]
        return float(np.exp(-picked[y != 0].mean()))

    def text_data(self, texts, targets):
        return texts, None

    def id_data(self, texts, targets):
        x = self.ids(texts)
        y = self.tokenizer.encode_batch(texts, add_eos=True)  # ids + [eos]
        return x, y

    def pad_data(self, x, y, extra):
        return _pad_columns(x, extra), _pad_columns(y, extra)

    def fingerprint(self, texts, targets):
        out = super().fingerprint(texts, targets)
        out["sampled"] = self.model.generate(
            texts, max_new_tokens=self._room(texts), seed=1, top_p=0.9
        )
        out["perplexity"] = self.model.perplexity(texts)
        return out

    def export_options(self, max_length):
        return {"max_length": max_length}

    def check_export(self, signatures, texts, max_length):
        import tensorflow as tf

        from keras_rnnattn.decoding.sampling import draw_uniforms

        ids = tf.constant(self.ids(texts))
        uniforms = tf.constant(np.asarray(draw_uniforms((max_length, len(texts)), 11)))
        got = signatures["sample"](token_ids=ids, uniforms=uniforms)["tokens"]
        eos = self.tokenizer.eos_id
        exported = []
        for row, prompt in zip(_np(got).tolist(), texts):
            row = row[: row.index(eos)] if eos in row else row
            exported.append(self.tokenizer.decode(self.tokenizer.encode(prompt) + row))
        assert exported == self.model.generate(
            texts, max_new_tokens=max_length, seed=11
        )


class _Translate(_TaskIO):
    method = "translate"
    needs_targets = False  # the sources stand in as targets

    @property
    def vocabulary_size(self):
        return self.tokenizer.vocabulary_size

    def strings(self, texts):
        # Greedy (beams have their own tests), the ids decoded as they are
        # (unknown-word replacement has its own tests).
        out = self.model.translate(texts, replace_unknown=False)
        assert len(out) == len(texts) and all(isinstance(t, str) for t in out), out
        return out

    def single(self, text, texts):
        return self.model.translate(text, replace_unknown=False)

    def ids(self, texts):
        return self.model.encode_source(texts)  # (B, S), each row ends with eos

    def outputs(self, ids):
        return self.model.generate_ids(ids)[0]  # (B, L) tokens

    def text_outputs(self, texts):
        return self.outputs(self.ids(texts))

    def strings_from_ids(self, ids, texts):
        decode = self.model.target_tokenizer.decode
        return [decode(row) for row in self.outputs(ids)]

    def same_outputs(self, got, want, ids, exact=False):
        # Each row has its own length limit (from its real source length), so
        # the tokens before the end token agree; the arrays' widths may not.
        eos = self.model.target_tokenizer.eos_id

        def before_eos(row):
            row = [int(t) for t in row]
            return row[: row.index(eos)] if eos in row else row

        assert [before_eos(g) for g in got] == [before_eos(w) for w in want]

    def text_data(self, texts, targets):
        return None, None  # the Translator's fit and evaluate take ids only

    def id_data(self, texts, targets):
        return self.model.encode_pairs(texts, texts if targets is None else targets)

    def pad_data(self, x, y, extra):
        source, target_in = x
        return (_pad_columns(source, extra), _pad_columns(target_in, extra)), (
            _pad_columns(y, extra)
        )

    def fingerprint(self, texts, targets):
        out = super().fingerprint(texts, targets)
        x, _ = self.id_data(texts, targets)
        out["logits"] = _np(self.model(x))
        return out

    def id_entries(self):
        (_, target_in), target_out = self.model.encode_pairs(["x"], ["x"])
        return {
            "generate_ids": lambda x: self.model.generate_ids(x),
            "evaluate": lambda x: self.model.evaluate(
                (x, target_in), target_out, verbose=0
            ),
        }

    def export_options(self, max_length):
        return {"max_length": max_length}

    def check_export(self, signatures, texts, max_length):
        import tensorflow as tf

        ids = self.ids(texts)
        aligned = self.model.has_attention
        for name, beam in (("greedy", 1), ("beam_search", 4)):
            got = signatures[name](source_ids=tf.constant(ids))
            tokens, scores, *alignments = self.model.generate_ids(
                ids, beam, max_length, return_alignments=aligned
            )
            np.testing.assert_array_equal(_np(got["tokens"]), tokens)
            np.testing.assert_allclose(_np(got["scores"]), scores, atol=1e-4)
            assert ("alignments" in got) == aligned
            if aligned:
                np.testing.assert_allclose(
                    _np(got["alignments"]), alignments[0], atol=1e-5
                )


# --- The checks ---------------------------------------------------------------------
def _check_strings(io, texts, expected_output_shape):
    result = io.strings(texts)
    # The shortest text: the padding check reads it alone too (one shape less).
    i = int(np.argmin(_lengths(io.ids(texts))))
    assert io.single(texts[i], texts) == result[i]
    outputs = io.text_outputs(texts)
    assert np.all(np.isfinite(outputs))
    if expected_output_shape is not None:
        assert outputs.shape == tuple(expected_output_shape), outputs.shape


def _check_ids(io, texts, targets):
    ids = io.ids(texts)
    assert ids.dtype == np.int32 and ids.ndim == 2
    np.testing.assert_array_equal(io.outputs(ids), io.text_outputs(texts))
    from_ids = io.strings_from_ids(ids, texts)
    if isinstance(from_ids, float):  # a perplexity
        np.testing.assert_allclose(from_ids, io.model.perplexity(texts), rtol=1e-5)
    else:
        assert from_ids == io.strings(texts)
    x, y = io.text_data(texts, targets)
    if x is not None and io.model.compiled and (targets or not io.needs_targets):
        x_ids, y_ids = io.id_data(texts, targets)
        np.testing.assert_allclose(
            np.ravel(io.model.evaluate(x, y, batch_size=len(texts), verbose=0)),
            io.evaluate(x_ids, y_ids),
            rtol=1e-5,
        )


def _check_padding(io, texts, targets):
    ids = io.ids(texts)
    lengths = _lengths(ids)
    assert len(set(lengths)) > 1, "give texts of different lengths"
    want = io.outputs(ids)
    io.same_outputs(io.outputs(_pad_columns(ids, EXTRA_PADDING)), want, ids)
    i = int(np.argmin(lengths))  # the most padded row, alone without its padding
    alone = ids[i : i + 1, : lengths[i]]
    io.same_outputs(io.outputs(alone), want[i : i + 1], alone)
    if io.model.compiled and (targets is not None or not io.needs_targets):
        x, y = io.id_data(texts, targets)
        padded = io.evaluate(*io.pad_data(x, y, EXTRA_PADDING))
        np.testing.assert_allclose(padded, io.evaluate(x, y), rtol=1e-5, atol=1e-6)
    if isinstance(io, _Translate):  # the teacher-forced logits too
        (source, target_in), _ = io.id_data(texts, targets)
        logits = _np(io.model((source, target_in)))
        long_source = _pad_columns(source, EXTRA_PADDING)
        long_in = _pad_columns(target_in, EXTRA_PADDING)
        got = _np(io.model((long_source, long_in)))[:, : target_in.shape[1]]
        real = target_in != 0
        np.testing.assert_allclose(got[real], logits[real], atol=1e-5)


def _assert_same_fingerprint(got, want):
    assert got.keys() == want.keys()
    for key in want:
        if isinstance(want[key], np.ndarray):
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        else:
            assert got[key] == want[key], key


def _assert_same_tokenizers(loaded, model, texts):
    want = model.preset_tokenizers()
    got = loaded.preset_tokenizers()
    assert sorted(got) == sorted(want) and want, sorted(got)
    for name, tokenizer in want.items():
        assert type(got[name]) is type(tokenizer), name
        assert got[name].get_config() == tokenizer.get_config(), name
        assert [got[name].encode(t) for t in texts] == [
            tokenizer.encode(t) for t in texts
        ]


def _check_keras_file(io, texts, targets, folder):
    model = io.model
    config = model.get_config()
    assert json.loads(json.dumps(config)) == config  # plain JSON data
    path = os.path.join(folder, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    assert loaded.get_config() == config
    assert loaded.compiled == model.compiled
    if model.compiled:  # the loss `compile` chose
        assert type(loaded.loss) is type(model.loss)
        if isinstance(model.loss, str):
            assert loaded.loss == model.loss
    _assert_same_tokenizers(loaded, model, texts)
    _assert_same_fingerprint(
        type(io)(loaded).fingerprint(texts, targets), io.fingerprint(texts, targets)
    )


def _check_preset(io, texts, targets, folder):
    model = io.model
    folder = model.save_to_preset(os.path.join(folder, "preset"), {"description": "x"})
    files = set(os.listdir(folder))
    assert {"config.json", "model.weights.h5", "metadata.json"} <= files, files
    assert {f"{name}.json" for name in model.preset_tokenizers()} <= files, files
    restored = type(model).from_preset(folder)
    assert type(restored) is type(model)
    _assert_same_tokenizers(restored, model, texts)
    _assert_same_fingerprint(
        type(io)(restored).fingerprint(texts, targets), io.fingerprint(texts, targets)
    )


def _bad_input_failures(io):
    """Descriptions of the bad inputs that did not raise the ValueError asked for."""
    vocabulary = io.vocabulary_size
    cases = [
        ("x=None", None, r"None"),
        ("ids out of range", np.array([[4, 5, vocabulary]]), rf"\[0, {vocabulary}\)"),
        ("negative ids", np.array([[4, -1, 5]]), rf"\[0, {vocabulary}\)"),
        ("fractional ids", np.array([[4.5, 5.0, 6.0]]), r"integer"),
        ("1-D ids", np.array([4, 5, 6], "int32"), r"\(batch, length\)"),
        ("3-D ids", np.full((2, 3, 1), 4, "int32"), r"\(batch, length\)"),
    ]
    entries = [
        (name, case, x, pattern)
        for name, fn in io.id_entries().items()
        for case, x, pattern in cases
    ]
    text_fn = getattr(io.model, io.method)
    entries.append((io.method, "text=None", None, r"str"))
    failures = []
    for name, case, x, pattern in entries:
        fn = text_fn if case == "text=None" else io.id_entries()[name]
        where = f"{io.name}.{name}({case})"
        try:
            fn(x)
        except ValueError as error:
            message = str(error)
            if not re.search(rf"\b{io.name}\b", message):
                failures.append(f"{where}: does not name {io.name}: {message!r}")
            elif not re.search(pattern, message):
                failures.append(f"{where}: no {pattern!r} in {message!r}")
        except Exception as error:  # noqa: BLE001 - any other error is the failure
            failures.append(
                f"{where}: raised {type(error).__name__}, not ValueError: "
                f"{str(error)[:120]!r}"
            )
        else:
            failures.append(f"{where}: raised nothing")
    return failures

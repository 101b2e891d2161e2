"""The sample checks of `Seq2SeqTask.fit`/`evaluate`/`predict` and `call`."""

import numpy as np

from keras_rnnattn.text import inputs as text_inputs


def check_call_inputs(owner, inputs):
    """Raises a ValueError unless `inputs` are `(source_ids, target_in_ids)`,
    each of rank 2 (`Seq2SeqTask.call`'s inputs).

    Args:
        owner: str, the class named in errors.
        inputs: what `call` received.
    """
    if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
        raise ValueError(
            f"{owner} takes `(source_ids, target_in_ids)`. "
            f"Received: inputs={type(inputs).__name__}"
        )
    for name, ids in zip(("source_ids", "target_in_ids"), inputs):
        if len(ids.shape) != 2:
            raise ValueError(
                f"{owner} takes `(source_ids, target_in_ids)`, "
                "each token ids of shape (batch, length). Received: "
                f"{name} of shape {tuple(ids.shape)}"
            )


def check_pairs(model, x, y=None, owner=None, with_targets=True):
    """`Seq2SeqTask.preprocess_samples` for `model` (see there)."""
    owner = owner or type(model).__name__
    fix = (
        "Pass `x, y = model.encode_pairs(source_texts, target_texts)`, then `fit(x, y)`"
    )
    dataset = text_inputs.as_dataset(x)
    if dataset is not None and not with_targets:
        return x, y  # `predict`: its elements may or may not hold targets
    if dataset is not None:
        x_spec, y_spec, _ = text_inputs.dataset_parts(dataset, owner, True)
        if not isinstance(x_spec, tuple) or len(x_spec) != 2:
            raise ValueError(
                f"{owner}: the dataset must yield ((source_ids, target_in_ids), "
                f"target_out_ids). {fix}, and build the dataset from "
                "`tf.data.Dataset.from_tensor_slices((x, y)).batch(n)`. "
                f"Received: element_spec={dataset.element_spec}"
            )
        for spec, what in zip(
            (*x_spec, y_spec), ("source ids", "target input ids", "target ids")
        ):
            text_inputs.check_ids_spec(spec, owner, what=what)
        return x, y
    if not isinstance(x, (tuple, list, np.ndarray, str)):
        return x, y  # a keras.utils.PyDataset, a generator: Keras reads them
    if text_inputs.is_text(x):
        if isinstance(x, (str, bytes)):
            raise ValueError(
                f"{owner}: texts must be a list of sources, not one string. "
                f"Received: x={x!r}"
            )
        if y is None:
            raise ValueError(
                f"{owner}: source texts need their target texts, "
                "`fit(source_texts, target_texts)` (to translate, call "
                f"`translate` or `generate`). Received: x={list(x)[:2]!r}, y=None"
            )
        if not text_inputs.is_text(y) or isinstance(y, (str, bytes)):
            raise ValueError(
                f"{owner}: source texts need a list of target texts, one per "
                f"source. Received: y of type {type(y).__name__}"
            )
        sources, _ = text_inputs.as_text_list(x, owner)
        targets, _ = text_inputs.as_text_list(y, owner)
        if len(sources) != len(targets):
            raise ValueError(
                f"{owner}: {len(sources)} source texts but {len(targets)} "
                "target texts: give one target per source."
            )
        return model.encode_pairs(sources, targets)
    if (
        y is None
        and isinstance(x, (tuple, list))
        and len(x) == 2
        and isinstance(x[0], (tuple, list))
    ):
        raise ValueError(
            f"{owner}: x is the whole result of `encode_pairs`, "
            "((source_ids, target_in_ids), target_out_ids), passed as the "
            f"inputs. {fix}."
        )
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(
            f"{owner}: x must be (source_ids, target_in_ids). {fix}. "
            f"Received: x of type {type(x).__name__}"
        )
    source = text_inputs.check_token_ids(
        x[0], model.source_tokenizer.vocabulary_size, f"{owner} (source ids)"
    )
    target_size = model.target_tokenizer.vocabulary_size
    target_in = text_inputs.check_token_ids(
        x[1], target_size, f"{owner} (target input ids)"
    )
    if y is not None:
        y = text_inputs.check_token_ids(y, target_size, f"{owner} (target ids)")
        if np.shape(y) != np.shape(target_in):
            raise ValueError(
                f"{owner}: the target ids must have the target inputs' shape "
                f"{np.shape(target_in)}. {fix}. Received shape {np.shape(y)}"
            )
    return (source, target_in), y

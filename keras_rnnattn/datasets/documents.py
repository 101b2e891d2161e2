"""Deterministic splits by document: a document's key decides its split."""

import hashlib

from keras_rnnattn.datasets.splits import check_split


def document_bucket(key):
    """`int(sha1(key)) % 20`: 0 is test, 1 validation, 2..19 train.

    Example:

    >>> document_bucket("tutorial/controlflow.rst.txt")
    6
    """
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16) % 20


def split_documents(keyed, split):
    """The documents of one split, in their given order.

    A document belongs to test when `document_bucket(key) == 0` (5%), to
    validation when it is 1 (5%) and to train otherwise, so adding or
    removing documents never moves the others between splits.

    Args:
        keyed: list of `(key, document)` pairs; keys are str and unique.
        split: `"train"`, `"validation"`, `"test"` or `"all"`.

    Returns:
        list of the documents (whatever `keyed` holds beside the keys).

    Example:

    >>> docs = [(f"d{i}", f"text {i}") for i in range(40)]
    >>> split_documents(docs, "test")
    ['text 16', 'text 19']
    """
    check_split(split)
    if split == "all":
        return [document for _, document in keyed]
    wanted = {"test": (0,), "validation": (1,), "train": tuple(range(2, 20))}[split]
    return [document for key, document in keyed if document_bucket(key) in wanted]

"""Public classes are composed, not sliced into private base classes.

A class cut into private base classes that share `self` reads as one class
spread over many files. Two guards, each with a test that it bites:

- a public class's MRO holds few of the package's classes (`MAX_PACKAGE_CLASSES`;
  the decoder at most 2, the Translator 5, the language model 4);
- no private module (a `_name` in its path) defines a base class of a public
  class.
"""

import importlib
import inspect

from tests.backends import on_one_backend

PACKAGE = "keras_rnnattn"
PUBLIC_PACKAGES = ("models", "layers", "callbacks", "text", "decoding", "training")
DEFAULT_MAX = 4
MAX_PACKAGE_CLASSES = {
    "AttentionDecoder": 2,
    "Translator": 5,
    "AttentiveLanguageModel": 4,
    # A Translator (`Translator.from_preset` loads the ensemble preset): the
    # Translator's classes and itself.
    "TranslatorEnsemble": 6,
}


def public_classes():
    """`{name: class}` of the classes in the public subpackages' `__all__`."""
    found = {}
    for name in PUBLIC_PACKAGES:
        module = importlib.import_module(f"{PACKAGE}.{name}")
        for attribute in getattr(module, "__all__", ()):
            value = getattr(module, attribute, None)
            if inspect.isclass(value) and value.__module__.startswith(PACKAGE):
                found[attribute] = value
    return found


def package_classes(cls):
    """The package's classes in `cls`'s MRO, itself first."""
    return [k for k in cls.__mro__ if k.__module__.startswith(PACKAGE + ".")]


def private_bases(cls):
    """The bases of `cls` (in its MRO) that a private module defines."""
    return [
        k
        for k in package_classes(cls)[1:]
        if any(part.startswith("_") for part in k.__module__.split(".")[1:])
    ]


def over_the_limit(classes, limits=MAX_PACKAGE_CLASSES, default=DEFAULT_MAX):
    """`{name: count}` of the classes whose MRO holds too many package classes."""
    counts = {name: len(package_classes(cls)) for name, cls in classes.items()}
    return {
        name: count
        for name, count in counts.items()
        if count > limits.get(name, default)
    }


@on_one_backend
def test_public_classes_hold_few_package_classes():
    classes = public_classes()
    assert {"Translator", "AttentionDecoder", "AttentiveLanguageModel"} <= set(classes)
    over = over_the_limit(classes)
    assert not over, (
        f"{over}: their MRO holds more of the package's classes than "
        "MAX_PACKAGE_CLASSES allows; compose owned objects and functions instead "
        "of private base classes"
    )


@on_one_backend
def test_no_private_module_defines_a_base_of_a_public_class():
    found = {
        base.__name__: f"{base.__module__} under {name}"
        for name, cls in public_classes().items()
        for base in private_bases(cls)
    }
    assert not found, f"Private base classes of public classes: {found}"


def test_the_guards_bite():
    # A public class made of a private slice and two more package classes.
    def made(name, module, *bases):
        cls = type(name, bases, {})
        cls.__module__ = module
        return cls

    root = made("Root", f"{PACKAGE}.models.task")
    middle = made("Middle", f"{PACKAGE}.models.middle", root)
    slice_ = made("Slice", f"{PACKAGE}.models._slice")
    public = made("Public", f"{PACKAGE}.models.public", slice_, middle)
    assert [k.__name__ for k in private_bases(public)] == ["Slice"]
    assert over_the_limit({"Public": public}, {}, default=3) == {"Public": 4}
    assert over_the_limit({"Public": public}, {"Public": 4}) == {}
    assert private_bases(middle) == []

"""Small argument checks, each written once: an int, a non-negative number, a
choice; for Python callers (a ValueError that names the argument) and for
argparse (`argparse_type`, the same check on the command line's text).

Imports nothing of the package (nor Keras): `decoding/`, `text/`, the CLI and
the layers all use it.
"""

import argparse
import numbers


def is_int(value):
    """Whether `value` is an integer (a NumPy one too), not a bool.

    Example:

    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value):
    """Whether `value` is a real number (int, float, NumPy's), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_int(name, value, minimum=1, allow_none=False, why=""):
    """`value` as a Python int >= `minimum` (None where allowed), or a
    ValueError that names the argument.

    Args:
        name: str, the argument's name.
        value: what was passed.
        minimum: int, the smallest value allowed. Defaults to 1.
        allow_none: bool, None passes (and is returned).
        why: str, said after the rule (" (it fixes a loop bound)").

    Returns:
        int, or None.

    Example:

    >>> positive_int("beam_size", 4)
    4
    >>> try:
    ...     positive_int("beam_size", 0)
    ... except ValueError as error:
    ...     print(error)
    `beam_size` must be an int >= 1. Received: beam_size=0
    """
    if value is None and allow_none:
        return None
    if not is_int(value) or value < minimum:
        rule = f"an int >= {minimum}"
        if allow_none:
            rule = f"None or {rule}"
        raise ValueError(f"`{name}` must be {rule}{why}. Received: {name}={value!r}")
    return int(value)


def non_negative_float(name, value, allow_none=False, why=""):
    """`value` as a finite float >= 0 (None where allowed), or a ValueError
    that names the argument (a beam's coverage penalty, a duration).

    Example:

    >>> non_negative_float("coverage_penalty", 0.2)
    0.2
    """
    if value is None and allow_none:
        return None
    if not is_real(value) or not 0 <= value < float("inf"):
        rule = "a float >= 0"
        if allow_none:
            rule = f"None or {rule}"
        raise ValueError(f"`{name}` must be {rule}{why}. Received: {name}={value!r}")
    return float(value)


def choice(name, value, choices):
    """`value` where it is one of `choices`, or a ValueError listing them.

    Example:

    >>> choice("method", "beam", ("greedy", "beam"))
    'beam'
    """
    if value not in choices:
        raise ValueError(
            f"`{name}` must be one of {tuple(choices)}. Received: {name}={value!r}"
        )
    return value


def argparse_type(check, parse):
    """An argparse `type=` from a check: the text parsed by `parse` (int,
    float), then checked; argparse prints the check's message.

    Example:

    >>> import argparse
    >>> count = argparse_type(positive_int, int)
    >>> count("3")
    3
    >>> try:
    ...     count("0")
    ... except argparse.ArgumentTypeError as error:
    ...     print(error)
    expected an int >= 1, got '0'
    """

    def convert(text):
        try:
            value = parse(text)
        except ValueError:
            value = None  # text that is no number: the check says the rule
        try:
            return check("value", value)
        except ValueError as error:
            rule = str(error).split(" must be ", 1)[-1].split(". Received")[0]
            raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}") from None

    convert.__name__ = f"{check.__name__}_{parse.__name__}"
    return convert

"""The argument checks written once (`keras_rnnattn._checks`), as Python callers
and argparse see them."""

import argparse
import doctest

import numpy as np
import pytest

from keras_rnnattn import _checks
from keras_rnnattn._checks import (
    argparse_type,
    choice,
    non_negative_float,
    positive_int,
)


def test_positive_int_takes_numpy_ints_and_refuses_bools_floats_and_small():
    assert positive_int("n", np.int64(3)) == 3 and type(positive_int("n", 3)) is int
    assert positive_int("n", None, allow_none=True) is None
    assert positive_int("end_id", 0, minimum=0) == 0
    for bad in (True, 2.0, "2", 0, None):
        with pytest.raises(ValueError, match=r"`n` must be an int >= 1\. Received"):
            positive_int("n", bad)
    with pytest.raises(ValueError, match=r"must be None or an int >= 1 \(why\)\."):
        positive_int("n", -1, allow_none=True, why=" (why)")


def test_non_negative_float_and_choice():
    assert non_negative_float("beta", np.float32(0.5)) == 0.5
    assert non_negative_float("beta", 0) == 0.0
    for bad in (-0.1, float("inf"), float("nan"), True, "1"):
        with pytest.raises(ValueError, match="`beta` must be a float >= 0"):
            non_negative_float("beta", bad)
    assert choice("m", "beam", ("greedy", "beam")) == "beam"
    with pytest.raises(ValueError, match=r"one of \('greedy', 'beam'\)"):
        choice("m", "bean", ("greedy", "beam"))


def test_argparse_types_say_the_rule_of_the_python_check():
    parser = argparse.ArgumentParser()
    parser.add_argument("--beam", type=argparse_type(positive_int, int))
    parser.add_argument("--alpha", type=argparse_type(non_negative_float, float))
    assert parser.parse_args(["--beam", "4", "--alpha", "0.6"]).beam == 4
    count = argparse_type(positive_int, int)
    for text in ("0", "x", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected an int >= 1"):
            count(text)
    with pytest.raises(argparse.ArgumentTypeError, match="expected a float >= 0"):
        argparse_type(non_negative_float, float)("-1")


def test_docstring_examples():
    assert doctest.testmod(_checks).failed == 0

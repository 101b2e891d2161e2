"""The private Keras names the presets use are where `_keras_private` looks.

When a Keras release moves one, these tests fail first, naming it. What the
names do for the presets (no optimizer state in the weights, safe mode against
the global switch) is tested in tests/test_presets.py.
"""

import pytest

from keras_rnnattn import _keras_private


def test_the_private_keras_names_are_there():
    # Exactly the names `keras_rnnattn._keras_private` uses.
    from keras.src.saving.saving_lib import save_weights_only
    from keras.src.saving.serialization_lib import SafeModeScope

    assert (
        _keras_private.private_name(
            "keras.src.saving.saving_lib", "save_weights_only", ("objects_to_skip",)
        )
        is save_weights_only
    )
    assert (
        _keras_private.private_name(
            "keras.src.saving.serialization_lib", "SafeModeScope"
        )
        is SafeModeScope
    )


def test_a_moved_name_fails_loudly_with_the_keras_versions():
    with pytest.raises(ImportError, match=r"no_such_name.*Keras 3\.10 to 3\.16"):
        _keras_private.private_name("keras.src.saving.saving_lib", "no_such_name")
    with pytest.raises(ImportError, match=r"save_weights_only\(no_such_arg=\.\.\.\)"):
        _keras_private.private_name(
            "keras.src.saving.saving_lib", "save_weights_only", ("no_such_arg",)
        )
    with pytest.raises(ImportError, match=r"keras\.src\.no_such_module\.x"):
        _keras_private.private_name("keras.src.no_such_module", "x")

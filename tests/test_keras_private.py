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
    from keras.src.saving.serialization_lib import ObjectSharingScope, SafeModeScope

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
    assert (
        _keras_private.private_name(
            "keras.src.saving.serialization_lib", "ObjectSharingScope"
        )
        is ObjectSharingScope
    )
    # ... and the global attribute it sets while a model is rebuilt.
    from keras.src.backend.common import global_state

    with ObjectSharingScope():
        assert global_state.get_global_attribute("shared_objects/id_to_obj_map") == {}
        assert _keras_private.loading_saved_model()


def test_a_moved_name_fails_loudly_with_the_keras_versions():
    with pytest.raises(ImportError, match=r"no_such_name.*Keras 3\.10 to 3\.16"):
        _keras_private.private_name("keras.src.saving.saving_lib", "no_such_name")
    with pytest.raises(ImportError, match=r"save_weights_only\(no_such_arg=\.\.\.\)"):
        _keras_private.private_name(
            "keras.src.saving.saving_lib", "save_weights_only", ("no_such_arg",)
        )
    with pytest.raises(ImportError, match=r"keras\.src\.no_such_module\.x"):
        _keras_private.private_name("keras.src.no_such_module", "x")


def test_deferred_initializers_leave_only_unassigned_variables_to_initialize():
    import keras
    import numpy as np
    from keras.src.backend.common import global_state

    deferred = _keras_private.DeferredInitializers()
    with deferred:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    dense = model.layers[0]
    # Keras's list of variables awaiting a value keeps none of the block's.
    pending = global_state.get_global_attribute("uninitialized_variables") or []
    assert not {id(v) for v in pending} & {id(v) for v in model.variables}
    # On JAX both wait for a value; elsewhere they have their initial ones.
    assert len(deferred.created) == (2 if deferred.active else 0)
    dense.kernel.assign(np.ones((3, 2), "float32"))  # as loading weights does
    deferred.initialize_unassigned()
    # The bias got its initializer's zeros, the kernel kept what was assigned.
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(dense.bias), [0, 0])
    np.testing.assert_array_equal(
        model.predict(np.ones((1, 3), "float32"), verbose=0), [[3.0, 3.0]]
    )
    with keras.StatelessScope():  # a later scope finds nothing left to initialise
        pass


def test_deferred_initializers_forget_a_failed_block():
    import keras
    from keras.src.backend.common import global_state

    deferred = _keras_private.DeferredInitializers()
    with pytest.raises(RuntimeError):
        with deferred:
            keras.layers.Dense(2).build((None, 3))
            raise RuntimeError("failed")
    assert deferred.created == []
    assert not global_state.get_global_attribute("uninitialized_variables")


def test_load_model_builds_a_task_without_running_its_initializers(tmp_path):
    # `keras.saving.load_model` assigns every variable next, so the model of a
    # `.keras` file defers its initializers where they compile (JAX), as
    # `from_preset` does; the round trip of the values is checked for every
    # task in tests/task_test_utils.py.
    import keras
    import numpy as np

    from keras_rnnattn._backend import initializers_compile
    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer

    tokenizer = CharTokenizer().fit(["abc"])
    model = Translator(tokenizer, tokenizer, embedding_dim=4, units=4)
    path = str(tmp_path / "model.keras")
    model.save(path)
    assert not _keras_private.loading_saved_model()

    calls = []
    glorot = keras.initializers.GlorotUniform.__call__

    def counted(self, *args, **kwargs):
        calls.append(_keras_private.loading_saved_model())
        return glorot(self, *args, **kwargs)

    keras.initializers.GlorotUniform.__call__ = counted
    try:
        loaded = keras.saving.load_model(path)
    finally:
        keras.initializers.GlorotUniform.__call__ = glorot
    # Initializers ran during the build only where they are cheap.
    assert (calls == []) == initializers_compile()
    assert all(calls) and not _keras_private.loading_saved_model()
    for saved, restored in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(restored), keras.ops.convert_to_numpy(saved)
        )


def test_the_modules_examples_run():
    import doctest

    result = doctest.testmod(_keras_private)
    assert result.attempted > 0 and result.failed == 0

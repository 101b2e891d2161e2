"""The error raised when a preset cannot be found, read or loaded."""


class PresetError(ValueError):
    """A preset is unknown, incomplete, corrupt or of the wrong class.

    The message names the preset folder or file and says how to fix it (for an
    unknown name it lists the available presets). Subclasses `ValueError`, so
    `except ValueError` catches it.

    Example:

    >>> from keras_rnnattn.presets import load_preset
    >>> try:
    ...     load_preset("no_such_preset")
    ... except ValueError as error:
    ...     print(str(error).split(".")[0])
    Unknown preset 'no_such_preset'
    """

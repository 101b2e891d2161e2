"""The accelerator the backend computes on, by name, for a training run's record."""

import keras


def accelerator_name():
    """The name of the backend's first GPU or TPU, or None on the CPU.

    Returns:
        str (such as `"NVIDIA H100 80GB HBM3"`), or None where the backend
        computes on the CPU.

    Example:

    >>> name = accelerator_name()
    >>> name is None or isinstance(name, str)
    True
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform == "cpu":
            return None
        return str(getattr(device, "device_kind", device.platform))
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    if backend == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            return None
        details = tf.config.experimental.get_device_details(gpus[0])
        return str(details.get("device_name", gpus[0].name))
    return None

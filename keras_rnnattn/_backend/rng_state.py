"""The backend's global random generator, saved and restored with a training run.

Keras draws a layer's randomness from its `SeedGenerator` (a variable, saved
with the model's variables), except where a backend falls back to its own
global generator: torch's dropout for a layer built without a seed
(`torch.nn.functional.dropout`). A resumed run restores that generator too.
"""

import keras
import numpy as np


def global_rng_state():
    """The backend's global generator state as a dict of NumPy arrays (empty
    where the backend has none that Keras draws from).

    Example:

    >>> state = global_rng_state()
    >>> set_global_rng_state(state)
    """
    if keras.backend.backend() != "torch":
        return {}
    import torch

    state = {"cpu": torch.get_rng_state().numpy()}
    if torch.cuda.is_available():
        for i, cuda in enumerate(torch.cuda.get_rng_state_all()):
            state[f"cuda{i}"] = cuda.numpy()
    return state


def set_global_rng_state(state):
    """Gives the backend's global generator a state from `global_rng_state()`."""
    if keras.backend.backend() != "torch" or not state:
        return
    import torch

    torch.set_rng_state(torch.from_numpy(np.asarray(state["cpu"], dtype="uint8")))
    cuda = [state[k] for k in sorted(state) if k.startswith("cuda")]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(
            [torch.from_numpy(np.asarray(c, dtype="uint8")) for c in cuda]
        )

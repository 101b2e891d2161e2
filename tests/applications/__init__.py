import importlib.util
import sys
from pathlib import Path

APPLICATIONS = Path(__file__).resolve().parents[2] / "applications"


def recipe_module(recipe, name):
    """`applications/<recipe>/<name>.py` as a module.

    The recipe files import each other by file name (`peers` imports
    `train`), as when run as scripts: the folder is on `sys.path` while the
    file loads, and `train` leaves `sys.modules` afterwards (every recipe has
    a `train.py`).
    """
    folder = APPLICATIONS / recipe
    saved = sys.modules.pop("train", None)
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(
            f"{recipe}_{name}", folder / f"{name}.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("train", None)
        if saved is not None:
            sys.modules["train"] = saved
    return module

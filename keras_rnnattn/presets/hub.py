"""Preset handles on model hubs, `hf://` and `kaggle://`, resolved into local folders.

A handle is downloaded (or found in the library's cache) by the hub's own
client, `huggingface_hub` or `kagglehub`, imported only when a handle is
given; the folder it returns is then loaded as any local preset folder, with
the same SHA-256 check of the weights and the same safe mode. Neither Keras
nor a backend is imported here.
"""

import os

from keras_rnnattn.presets.error import PresetError

HUB_EXTRA = 'pip install ".[hub]"'
HANDLE_FORMS = (
    "hf://<owner>/<name> (or hf://<owner>/<name>@<revision>), "
    "kaggle://<owner>/<model>/keras/<variation> (or .../<variation>/<version>)"
)


def is_hub_handle(name):
    """Whether `name` is a handle with a scheme (`hf://...`, `kaggle://...`).

    Args:
        name: str, a preset name, folder or handle.

    Returns:
        bool.

    Example:

    >>> is_hub_handle("hf://someone/preset"), is_hub_handle("ding_de_en_bahdanau")
    (True, False)
    """
    return isinstance(name, str) and "://" in name


def resolve_handle(handle):
    """The local folder of a preset on the Hugging Face Hub or Kaggle Models.

    `hf://<owner>/<name>[@<revision>]` is fetched with
    `huggingface_hub.snapshot_download` (into the Hugging Face cache,
    `HF_HOME`; with `HF_HUB_OFFLINE=1` only the cache is read), and
    `kaggle://<owner>/<model>/<framework>/<variation>[/<version>]` with
    `kagglehub.model_download` (into `KAGGLEHUB_CACHE`; a handle with its
    version is read from the cache without the network). Files already cached
    are not downloaded again.

    Args:
        handle: str, the handle.

    Returns:
        The absolute path of the folder that holds the preset's files.

    Raises:
        ImportError: the hub's client is not installed (the message gives
            `pip install ".[hub]"`).
        PresetError: a malformed handle or another scheme; a preset that could
            not be downloaded and is not cached (the message names the handle,
            the cache and what to do); a folder without config.json.

    Example:

    >>> try:
    ...     resolve_handle("gs://bucket/preset")
    ... except ValueError as error:
    ...     print(str(error).split(":")[0])
    Unsupported preset handle 'gs
    """
    scheme, _, rest = handle.partition("://")
    if scheme == "hf":
        path = _resolve_hf(handle, rest)
    elif scheme == "kaggle":
        path = _resolve_kaggle(handle, rest)
    else:
        raise PresetError(
            f"Unsupported preset handle {handle!r}: a preset is a name, a local "
            f"folder, or one of {HANDLE_FORMS}. Received: name_or_dir={handle!r}"
        )
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise PresetError(
            f"The preset {handle!r} resolved to {path}, which holds no config.json: "
            "it is not a keras-rnnattn preset (upload the folder that "
            "`model.save_to_preset(folder)` writes, files at its top level)."
        )
    return path


def _client(module, handle):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        package = module.split(".")[0]
        raise ImportError(
            f"Loading the preset {handle!r} needs the `{package}` package: "
            f"{HUB_EXTRA} (or pip install {package})."
        ) from error


def _resolve_hf(handle, rest):
    repo_id, _, revision = rest.partition("@")
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts) or (revision == "" and "@" in rest):
        raise PresetError(
            "A Hugging Face preset handle is hf://<owner>/<name>, optionally "
            f"followed by @<revision>. Received: name_or_dir={handle!r}"
        )
    hub = _client("huggingface_hub", handle)
    constants = _client("huggingface_hub.constants", handle)
    errors = _client("huggingface_hub.errors", handle)
    try:
        return hub.snapshot_download(repo_id, revision=revision or None)
    except errors.LocalEntryNotFoundError as error:
        cache = constants.HF_HUB_CACHE
        if constants.HF_HUB_OFFLINE:
            why = (
                "HF_HUB_OFFLINE is set, so only the Hugging Face cache is read, "
                f"and it holds no copy ({cache}). Unset HF_HUB_OFFLINE with a "
                "network connection to download it once"
            )
        else:
            why = (
                f"the Hub could not be reached ({_first_line(error)}) and the "
                f"Hugging Face cache holds no copy ({cache}). Check the network "
                "connection, or download it once where there is one"
            )
    except errors.RevisionNotFoundError:
        why = f"the repository {repo_id} has no revision {revision!r}"
    except errors.RepositoryNotFoundError:  # gated and private ones too
        why = (
            f"the Hub has no repository {repo_id} that this user may read (check "
            "the name; for a private or gated one, log in with `hf auth login` "
            "or set HF_TOKEN)"
        )
    except errors.HfHubHTTPError as error:
        why = f"the Hub answered {_first_line(error)}"
    except errors.HFValidationError as error:
        why = f"{repo_id!r} is not a repository name ({_first_line(error)})"
    raise PresetError(
        f"Could not load the preset {handle!r}: {why}. Or pass the path of a "
        "local preset folder."
    ) from None


def _resolve_kaggle(handle, rest):
    parts = rest.split("/")
    if len(parts) not in (4, 5) or not all(parts):
        raise PresetError(
            "A Kaggle preset handle is "
            "kaggle://<owner>/<model>/<framework>/<variation>, optionally "
            f"followed by /<version>. Received: name_or_dir={handle!r}"
        )
    if len(parts) == 5 and not parts[4].isdigit():
        raise PresetError(
            "The version of a Kaggle preset handle is a number, as in "
            f"kaggle://{'/'.join(parts[:4])}/1. Received: name_or_dir={handle!r}"
        )
    kagglehub = _client("kagglehub", handle)
    config = _client("kagglehub.config", handle)
    try:
        return kagglehub.model_download(rest)
    except Exception as error:  # requests', kagglehub's and the OS's alike
        why = f"{type(error).__name__}: {_first_line(error)}"
    cached = _kaggle_cached_versions(config, parts)
    if len(parts) == 4:
        hint = (
            "Without a version, Kaggle is asked for the latest one, which needs "
            "the network"
            + (
                f"; cached here: version {', '.join(cached)}, loaded offline as "
                f"kaggle://{rest}/{cached[-1]}"
                if cached
                else ""
            )
        )
    else:
        hint = (
            "The version is not in the kagglehub cache "
            f"({config.get_cache_folder()}): download it once with a "
            "network connection (and Kaggle credentials for a private model)"
        )
    raise PresetError(
        f"Could not load the preset {handle!r} ({why}). {hint}. Or pass the path "
        "of a local preset folder."
    ) from None


def _kaggle_cached_versions(config, parts):
    """The versions of a Kaggle model variation that kagglehub has cached, oldest first."""
    folder = os.path.join(config.get_cache_folder(), "models", *parts[:4])
    if not os.path.isdir(folder):
        return []
    versions = [
        name[: -len(".complete")]
        for name in os.listdir(folder)
        if name.endswith(".complete") and name[: -len(".complete")].isdigit()
    ]
    return sorted(versions, key=int)


def _first_line(error):
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 300 else line[:300] + "..."

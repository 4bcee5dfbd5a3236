"""Checking a model path before any work starts: a local folder that is there and holds a
``config.json``, a ``.gguf`` file that converts (``pairrl.model_source``), or a hub id the
hub (or, offline, the local hub cache) can give. Every command that loads a model checks
its paths here first, so that a typo fails in one line, not after minutes of work.
"""

from __future__ import annotations

import os
from pathlib import Path

from pairrl.errors import InputError, ModelSourceError
from pairrl.model_source import SMOLLM2, check_gguf_source, is_gguf, resolve_model_path

__all__ = ["check_model_path"]


def check_model_path(field: str, path: str | None, convert: bool = True, hub: bool = True) -> None:
    """Raise ``InputError`` when ``path`` names a local model folder that is not there (or
    holds no ``config.json``), or a ``.gguf`` file that cannot be converted (converting it
    on first use, ``pairrl.model_source``; with ``convert=False`` its header is checked and
    nothing is converted). A hub id passes, unless ``hub`` and the hub is off
    (``HF_HUB_OFFLINE``) and the local hub cache holds no such model (``hub=False``: a
    training config planned here may load its hub model on another machine)."""
    if not path:
        return
    try:
        if not convert and (is_gguf(path) or path == SMOLLM2):
            check_gguf_source(path)
            return
        path = resolve_model_path(path)
    except ModelSourceError as err:
        raise InputError(f"{field}: {err}") from None
    local = Path(path).expanduser()
    expected = "expected a model folder saved with save_pretrained, or a hub id"
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise InputError(f"{field} {path}: the folder holds no config.json; {expected}")
        return
    if _names_a_local_path(path):
        raise InputError(f"{field} {path}: no model folder there; {expected}")
    if hub and _hub_offline() and not _in_hub_cache(path):
        raise InputError(
            f"{field} {path}: no model folder there, and HF_HUB_OFFLINE is set and the local "
            f"hub cache holds no model {path!r}; {expected}"
        )


def _names_a_local_path(path: str) -> bool:
    """Whether ``path`` can only be a file system path, never a hub id (``org/name``): it
    exists, starts like a path, has more than one ``/``, or its first part is a local
    folder (``runs/nomodel`` where ``runs/`` exists)."""
    if Path(path).expanduser().exists() or path.startswith(("/", ".", "~")):
        return True
    return path.count("/") > 1 or ("/" in path and Path(path.split("/")[0]).is_dir())


def _hub_offline() -> bool:
    """Whether the hub is switched off (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``, with
    the values huggingface_hub reads as true)."""
    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    return any(os.environ.get(n, "").strip().upper() in {"1", "ON", "YES", "TRUE"} for n in names)


def _in_hub_cache(repo_id: str) -> bool:
    """Whether the local hub cache holds ``repo_id``'s config.json."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid repo id: nothing of that name can be cached
        return False
    return isinstance(found, str)

"""The one error class for input a user supplied and pairrl cannot read.

An :class:`InputError` is raised for a missing file, an unreadable row, an absent column,
a pool that matches no task or an output path that cannot be written. Its message is the
whole story (the file, the row or column, what was expected), so a command line prints it
as it is, exits non-zero, and shows no traceback.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["InputError", "ModelSourceError", "require_writable_file"]


class InputError(ValueError):
    """A file, row, column or dataset the user pointed at cannot be used; ``str(err)`` says
    which and what was expected."""


class ModelSourceError(InputError):
    """A model path that cannot be used: a missing or non-GGUF file, or a GGUF whose
    architecture or quantisation type pairrl cannot convert; ``str(err)`` names it."""


def require_writable_file(path: Path, option: str) -> None:
    """Raise :class:`InputError` unless a file can be written at ``path``: its folder is
    created if need be, and the file is opened for appending (a file that was not there is
    removed again), so nothing already in it changes. Commands call it before long work
    whose results go there, so that the work is not lost to an unusable output path."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"{option} {path}: its folder {path.parent} cannot be created ({_reason(err)})"
        ) from None
    if path.is_dir():
        raise InputError(f"{option} {path}: is a folder; expected a file path")
    existed = path.exists()
    try:
        with path.open("a"):
            pass
    except OSError as err:
        raise InputError(f"{option} {path}: cannot be written ({_reason(err)})") from None
    if not existed:
        path.unlink(missing_ok=True)


def _reason(err: OSError) -> str:
    return err.strerror or f"{type(err).__name__}: {err}"

"""The one error class for input a user supplied and pairrl cannot read.

An :class:`InputError` is raised for a missing file, an unreadable row, an absent column or
a pool that matches no task. Its message is the whole story (the file, the row or column,
what was expected), so a command line prints it as it is, exits non-zero, and shows no
traceback.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """A file, row, column or dataset the user pointed at cannot be used; ``str(err)`` says
    which and what was expected."""

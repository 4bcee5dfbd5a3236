"""Pull the solution program out of a model completion.

Policy: the last closed fenced block tagged python (``python``, ``py``, ``python3``, any
case); failing that, the last closed fenced block with any or no tag; ``None`` when there
is no closed block or the chosen block is blank. An unclosed fence (a truncated answer)
is not code: half a program would only fail later with a misleading syntax error.
"""

from __future__ import annotations

import re

# A fence opens at a line start with ``` and an optional info string, and closes at the
# next line that starts with ```. Non-greedy, so consecutive blocks stay separate.
_FENCED_BLOCK = re.compile(
    r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL
)
_PYTHON_TAGS = frozenset({"python", "py", "python3"})


def extract_code(text: str) -> str | None:
    """Return the code of the last python fenced block (else last fenced block), or None."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCED_BLOCK.finditer(text)]
    python_blocks = [code for tag, code in blocks if tag in _PYTHON_TAGS]
    candidates = python_blocks or [code for _, code in blocks]
    if not candidates:
        return None
    code = candidates[-1]
    return code if code.strip() else None

"""Pull the solution program out of a model completion.

Policy: the last closed fenced block tagged python (``python``, ``py``, ``python3``, any
case); failing that, the last closed fenced block with any or no tag; ``None`` when there
is no closed block or the chosen block is blank. An unclosed fence (a truncated answer)
is not code: half a program would only fail later with a misleading syntax error.

``first_code_block`` is the other policy, for a completion whose first block is the
answer and whose later blocks are usage examples: the first closed block tagged python or
untagged.
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


def first_code_block(text: str) -> str | None:
    """The code of the first closed fenced block tagged python or untagged, or None (none,
    or a blank one).

    >>> first_code_block("Sure:\\n```python\\ndef f():\\n    return 1\\n```\\nTest:\\n```python\\nf(\\n```")
    'def f():\\n    return 1\\n'
    >>> first_code_block("no code") is None
    True
    """
    for match in _FENCED_BLOCK.finditer(text):
        tag, code = match.group(1).lower(), match.group(2)
        if tag in _PYTHON_TAGS or not tag:
            return code if code.strip() else None
    return None

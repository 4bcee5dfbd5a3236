"""A chat template the warm start can mask: the assistant's turn inside ``{% generation %}``.

The warm start's loss is on assistant tokens only (TRL's ``assistant_only_loss``), which
needs ``{% generation %}`` / ``{% endgeneration %}`` markers in the chat template. The
tiny model's template has them and TRL patches the templates it knows; a ChatML template
such as SmolLM2-Instruct's (``<|im_start|>role\\n...<|im_end|>\\n``, written as one
expression per message) has neither, so :func:`training_chat_template` wraps the
assistant's content and its ``<|im_end|>`` in the markers. The patched template renders
every conversation exactly as the original does (checked on a probe before it is used),
so the model trains on the very text it is prompted with.
"""

from __future__ import annotations

import re
from typing import Any

from pairrl.errors import InputError

__all__ = ["training_chat_template"]

# '<|im_start|>' + message['role'] + NL + message['content'] + '<|im_end|>' + NL, where NL is
# a quoted newline, written as the two characters \n or as a real line break
_NL = r"'(?:\\n|\n)'"
_CHATML_MESSAGE = re.compile(
    r"\{\{-?\s*'<\|im_start\|>'\s*\+\s*message\['role'\]\s*\+\s*" + _NL
    + r"\s*\+\s*message\['content'\]\s*\+\s*'<\|im_end\|>'\s*\+\s*" + _NL + r"\s*-?\}\}"
)  # fmt: skip
_MARKED_MESSAGE = (
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{% else %}{{ message['content'] + '<|im_end|>' }}{% endif %}{{ '\\n' }}"
)
_PROBE = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Write f.\nOne block."},
    {"role": "assistant", "content": "```python\ndef f():\n    return 1\n```"},
    {"role": "user", "content": "Again"},
    {"role": "assistant", "content": "<rating>9</rating>"},
]


def _has_markers(template: str) -> bool:
    return re.search(r"\{%-?\s*generation\s*-?%\}", template) is not None


def training_chat_template(tokenizer: Any) -> str | None:
    """The template to train with: None when the tokenizer's own has the markers; TRL's
    training template when TRL knows the model's; a marked ChatML template when the
    tokenizer's is the one-expression ChatML form; else a clear error naming the fix."""
    template = tokenizer.chat_template
    if not isinstance(template, str) or _has_markers(template):
        return None
    patched, count = _CHATML_MESSAGE.subn(lambda _: _MARKED_MESSAGE, template)
    if count != 1:
        from trl.chat_template_utils import get_training_chat_template

        try:
            return get_training_chat_template(tokenizer)
        except ValueError as err:
            raise InputError(
                "the warm start trains on assistant tokens only and needs {% generation %} "
                "markers in the chat template; this model's template has none, and neither "
                f"pairrl nor TRL knows how to add them ({err}). Set the tokenizer's "
                "chat_template to one with the markers."
            ) from err
    for messages in (_PROBE, _PROBE[1:], _PROBE[1:3]):
        want = tokenizer.apply_chat_template(messages, tokenize=False)
        got = tokenizer.apply_chat_template(messages, tokenize=False, chat_template=patched)
        if want != got:
            raise InputError(
                "the chat template with {% generation %} markers renders differently from the "
                f"model's own ({got[:80]!r} against {want[:80]!r}); set a marked template"
            )
    return patched

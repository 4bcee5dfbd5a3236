"""The plain-data codec and the length-prefixed JSON framing shared by the sandbox worker
and the trusted parent.

Standard library only: this source runs inside the sandbox too, prepended to the worker's
(``pairrl.rewards.sandbox.worker_source``), so it must stay small enough to audit.
"""

import base64
import json
import os
import struct


# ---------------------------------------------------------------- plain data codec
# Tagged JSON: lists are JSON arrays; tuples, sets, dicts, bytes, complex and big ints are
# one-key objects. Anything else is not plain data and fails loudly in encode().
def encode(value, depth=0):
    """Plain data by content: subclasses of builtins (Counter, namedtuple, a str with a
    rigged __eq__) travel as their base type, so only honest built-in values reach the
    parent. Other objects travel as an opaque token with their type name and truth value,
    which never compares equal to anything but itself in the parent."""
    if depth > 200:
        raise ValueError("value nested deeper than 200 levels")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, bool):
        return bool.__bool__(value)
    if isinstance(value, int):
        value = int.__index__(value)
        return value if -(2**63) < value < 2**63 else {"i": hex(value)}
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [encode(item, depth + 1) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"t": [encode(item, depth + 1) for item in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]}
    if isinstance(value, (set, frozenset)):
        tag = "f" if isinstance(value, frozenset) else "s"
        return {tag: [encode(item, depth + 1) for item in value]}
    if isinstance(value, (bytes, bytearray)):
        return {"b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, complex):
        return {"c": [value.real, value.imag]}
    kind = type(value)
    if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return encode(value.item(), depth + 1)
    return {"o": [kind.__module__ + "." + kind.__qualname__, bool(value)]}


OPAQUE = (
    None  # the parent installs pairrl.rewards.plain_data.OpaqueValue; the sandbox never decodes "o"
)


def decode(obj):
    if isinstance(obj, list):
        return [decode(item) for item in obj]
    if not isinstance(obj, dict):
        return obj
    ((tag, payload),) = obj.items()
    if tag == "t":
        return tuple(decode(item) for item in payload)
    if tag == "s":
        # Via a frozenset, like a set literal compiled to a constant, so that iteration
        # order (an implementation detail some candidates rely on) matches a normal run.
        return set(frozenset(decode(item) for item in payload))
    if tag == "f":
        return frozenset(decode(item) for item in payload)
    if tag == "d":
        return {decode(k): decode(v) for k, v in payload}
    if tag == "b":
        return base64.b64decode(payload)
    if tag == "c":
        return complex(payload[0], payload[1])
    if tag == "i":
        return int(payload, 16)
    if tag == "o" and OPAQUE is not None:
        return OPAQUE(str(payload[0]), payload[1] is True)
    raise ValueError("unknown tag " + tag)


# ---------------------------------------------------------------- framing
def read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    head = read_exact(fd, 4)
    if head is None:
        return None
    body = read_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def write_frame(fd, obj):
    body = json.dumps(obj).encode()
    data = struct.pack(">I", len(body)) + body
    while data:
        data = data[os.write(fd, data) :]

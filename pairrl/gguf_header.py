"""Reading a GGUF file's header: its metadata scalars, its tensors' types, and whether
the file holds all the tensor data the header describes (a download or copy cut short is
named here, before any conversion). No tensor data is read.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from typing import Any, BinaryIO

from pairrl.errors import ModelSourceError

__all__ = ["quant_name", "read_gguf_header", "require_gguf_file"]


def require_gguf_file(path: Path) -> None:
    """Raise :class:`ModelSourceError` unless ``path`` is a file."""
    if not path.is_file():
        raise ModelSourceError(f"{path}: no such GGUF file")


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}  # fmt: skip
_STRING, _ARRAY = 8, 9


def _unpack(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise EOFError("the file ends inside its GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    return f.read(_unpack(f, "<Q")).decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int) -> Any:
    """One metadata value; an array is returned as its length (its items are skipped)."""
    if kind in _SCALARS:
        return _unpack(f, _SCALARS[kind])
    if kind == _STRING:
        return _string(f)
    if kind != _ARRAY:
        raise ValueError(f"unknown GGUF value type {kind}")
    item, count = _unpack(f, "<I"), _unpack(f, "<Q")
    if item in _SCALARS:
        f.seek(count * struct.calcsize(_SCALARS[item]), os.SEEK_CUR)
    else:
        for _ in range(count):
            _value(f, item)
    return count


def read_gguf_header(path: str | Path) -> dict[str, Any]:
    """The file's metadata (arrays as their lengths) under ``metadata`` and its tensors'
    ggml type ids under ``tensor_types``; a clear error when it is no GGUF file."""
    path = Path(path)
    require_gguf_file(path)
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelSourceError(f"{path} is not a GGUF file (no GGUF magic bytes)")
        try:
            version = _unpack(f, "<I")
            if version not in (2, 3):
                raise ValueError(f"GGUF version {version} (supported: 2, 3)")
            n_tensors, n_kv = _unpack(f, "<Q"), _unpack(f, "<Q")
            metadata = {}
            for _ in range(n_kv):
                key = _string(f)
                metadata[key] = _value(f, _unpack(f, "<I"))
            tensors = []  # (element count, ggml type, offset in the data section)
            for _ in range(n_tensors):
                _string(f)
                dims = [_unpack(f, "<Q") for _ in range(_unpack(f, "<I"))]
                kind, offset = _unpack(f, "<I"), _unpack(f, "<Q")
                tensors.append((math.prod(dims), kind, offset))
            header_end = f.tell()
        except (EOFError, ValueError, UnicodeDecodeError) as err:
            raise ModelSourceError(f"{path}: unreadable GGUF header ({err})") from None
    header = {"version": version, "metadata": metadata, "tensor_types": [t[1] for t in tensors]}
    _check_whole(path, header, tensors, header_end)
    return header


def _check_whole(
    path: Path, header: dict[str, Any], tensors: list[tuple[int, int, int]], header_end: int
) -> None:
    """A file shorter than its header's tensors need is cut short (a download or copy
    that stopped): say so, rather than let the conversion fail on it later. Needs the gguf
    package's block sizes; without it the conversion's own check is the only one."""
    try:
        from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
    except ImportError:
        return
    alignment = header["metadata"].get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0:
        alignment = 32  # what readers assume when the key is unusable
    data_start = -(-header_end // alignment) * alignment
    needed = data_start
    for count, kind, offset in tensors:
        try:
            block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
        except (KeyError, ValueError):
            return  # a type this gguf does not know: _check_supported names it
        needed = max(needed, data_start + offset + count // block * block_bytes)
    size = path.stat().st_size
    if size < needed:
        raise ModelSourceError(
            f"{path} is cut short: {size} bytes where its header describes {needed}; "
            "download or copy it again"
        )


def quant_name(type_id: int) -> str:
    from gguf import GGMLQuantizationType

    try:
        return GGMLQuantizationType(type_id).name
    except ValueError:
        return f"ggml type {type_id}"

"""Whether the files of a model folder or a checkpoint are whole, from their headers.

A kill or a full disk during a save, or a copy cut short, leaves files shorter than they
say they are. The checks read headers and indexes only, never the tensors, so they cost
milliseconds for any model size, and they never hand a damaged file to ``torch.load`` or
safetensors (which can abort the process instead of raising).
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["file_problem", "folder_problem", "holds_weights"]

_TORCH_SUFFIXES = {".pt", ".pth", ".bin"}  # torch.save files (a zip archive since torch 1.6)
# model weights as transformers, PEFT, FSDP (sharded .distcp) and DeepSpeed (ZeRO-3 states) save them
_WEIGHT_SUFFIXES = {".safetensors", ".bin", ".distcp"}
_DEEPSPEED_WEIGHTS = "model_states.pt"


def folder_problem(folder: Path) -> str | None:
    """The first file of ``folder`` (recursively) that is not whole, named with what is
    wrong ("model.safetensors is cut short ..."), or None."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        problem = file_problem(path)
        if problem is not None:
            return f"{path.relative_to(folder)} {problem}"
    return None


def holds_weights(path: Path) -> bool:
    return path.suffix in _WEIGHT_SUFFIXES or path.name.endswith(_DEEPSPEED_WEIGHTS)


def file_problem(path: Path) -> str | None:
    """What is wrong with one file of a model folder or checkpoint, judged by its kind;
    None when whole."""
    if path.stat().st_size == 0:
        return "is empty"
    if path.suffix == ".json":
        try:
            record = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return "is not valid JSON (cut short?)"
        return _index_problem(path, record) if path.name.endswith(".index.json") else None
    if path.suffix == ".safetensors":
        return _safetensors_problem(path)
    if path.suffix in _TORCH_SUFFIXES and not zipfile.is_zipfile(path):
        return "is not a whole torch file (its zip directory is missing: cut short?)"
    return None


def _safetensors_problem(path: Path) -> str | None:
    """A safetensors file is an 8-byte header length, a JSON header, then the tensors'
    bytes; the header's largest data offset says how long the file must be."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(8)
        (header_len,) = struct.unpack("<Q", head) if len(head) == 8 else (size,)
        if 8 + header_len > size:
            return f"is cut short ({size} bytes, its header alone needs {8 + header_len})"
        try:
            header = json.loads(fh.read(header_len))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return "has an unreadable header"
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
    expected = 8 + header_len + max(ends, default=0)
    if size != expected:
        return f"is {size} bytes, its header says {expected} (cut short?)"
    return None


def _index_problem(path: Path, index: Any) -> str | None:
    """A sharded model's index names its shard files; each must be there."""
    shards = set(index.get("weight_map", {}).values()) if isinstance(index, dict) else set()
    missing = sorted(s for s in shards if not (path.parent / s).is_file())
    return f"names missing shards: {', '.join(missing)}" if missing else None

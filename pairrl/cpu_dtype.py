"""One rule for the floating-point type of every engine pairrl starts on CPU.

bfloat16 halves a model's memory traffic, but only a CPU that computes it natively gains
from it: AMX (``amx_bf16``) or AVX-512's bfloat16 instructions (``avx512_bf16``). Elsewhere
each bfloat16 value is widened to float32 in software, and the same work runs slower than
in float32 (vLLM's CPU build on an AVX2-only AMD EPYC: 36.9 tokens/s in bfloat16 against
95.7 in float32). So an engine whose dtype is ``auto`` gets bfloat16 where the CPU
computes it natively and torch's kernels use it, float32 elsewhere; a dtype the config
names is kept as it is.

torch's kernels follow ``ATEN_CPU_CAPABILITY`` (``avx2`` forces the AVX2 kernels on an
AVX-512 machine): below ``avx512`` they have no bfloat16 instructions, so the rule gives
float32 there too. That is also how the AVX2-only path is exercised on an AVX-512 machine.

The rule is a pure function of the flags (:func:`dtype_for`), fed by :func:`read_cpu`
(``/proc/cpuinfo`` or ``lscpu`` text, and torch's kernel level); ``pairrl doctor`` prints
both and the dtype each engine gets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BF16_NATIVE_FLAGS",
    "CpuInfo",
    "cpu_dtype",
    "dtype_for",
    "local_dtype",
    "parse_cpu_text",
    "read_cpu",
]

BF16_NATIVE_FLAGS = ("amx_bf16", "avx512_bf16")
# The flags doctor shows: the vector units that decide a kernel's speed.
SHOWN_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class CpuInfo:
    """What the rule reads: the CPU's name, its feature flags, and torch's kernel level
    (``torch.backends.cpu.get_cpu_capability()``: ``AVX512``, ``AVX2``, ``DEFAULT``; empty
    when unknown)."""

    model_name: str
    flags: frozenset[str]
    kernels: str = ""
    family_model: str = ""

    def describe(self) -> str:
        """The name with its family and model, e.g. ``AMD EPYC (family 25, model 17)``."""
        return f"{self.model_name} ({self.family_model})" if self.family_model else self.model_name

    @property
    def bf16_native(self) -> bool:
        """Whether bfloat16 is computed natively: the CPU has the instructions and torch's
        kernels are allowed to use them."""
        level = self.kernels.lower()
        if level and not level.startswith("avx512"):
            return False
        return any(flag in self.flags for flag in BF16_NATIVE_FLAGS)

    def shown_flags(self) -> str:
        """The relevant flags, present ones by name, e.g. ``avx2 avx512f avx512_bf16``."""
        present = [flag for flag in SHOWN_FLAGS if flag in self.flags]
        return " ".join(present) or "none of " + ", ".join(SHOWN_FLAGS)


def parse_cpu_text(text: str, kernels: str = "") -> CpuInfo:
    """A :class:`CpuInfo` from ``/proc/cpuinfo`` (``flags : ...``, ``model name : ...``) or
    ``lscpu`` (``Flags: ...``, ``Model name: ...``) text.

    >>> info = parse_cpu_text("Model name: AMD EPYC\\nFlags: fpu avx avx2 fma")
    >>> info.model_name, sorted(info.flags), info.bf16_native
    ('AMD EPYC', ['avx', 'avx2', 'fma', 'fpu'], False)
    """
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower().removeprefix("cpu ")
        if sep and key in ("model name", "flags", "family", "model"):
            found.setdefault(key, value.strip())  # the first processor's
    ids = [f"{k} {found[k]}" for k in ("family", "model") if found.get(k)]
    return CpuInfo(
        found.get("model name") or "unknown CPU",
        frozenset(found.get("flags", "").split()),
        kernels,
        ", ".join(ids),
    )


def dtype_for(requested: str, cpu: CpuInfo) -> str:
    """The dtype an engine on this CPU gets: ``requested`` when it names one, else
    bfloat16 where the CPU computes it natively and float32 elsewhere.

    >>> avx2 = CpuInfo("AMD EPYC", frozenset({"avx2"}))
    >>> amx = CpuInfo("Intel Xeon", frozenset({"avx512f", "amx_bf16"}), "AVX512")
    >>> dtype_for("auto", avx2), dtype_for("auto", amx), dtype_for("float32", amx)
    ('float32', 'bfloat16', 'float32')
    """
    if requested not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)} (got {requested!r})")
    if requested != "auto":
        return requested
    return "bfloat16" if cpu.bf16_native else "float32"


def torch_kernels() -> str:
    """torch's CPU kernel level (it follows ``ATEN_CPU_CAPABILITY``); without torch, that
    variable itself."""
    try:
        import torch

        return str(torch.backends.cpu.get_cpu_capability())
    except (ImportError, AttributeError):
        return os.environ.get("ATEN_CPU_CAPABILITY", "").upper()


def read_cpu(cpuinfo: str | Path = "/proc/cpuinfo") -> CpuInfo:
    """This machine's :class:`CpuInfo` (an unreadable file gives no flags: float32)."""
    try:
        text = Path(cpuinfo).read_text(errors="ignore")
    except OSError:
        text = ""
    return parse_cpu_text(text, torch_kernels())


def cpu_dtype(requested: str = "auto") -> str:
    """:func:`dtype_for` on this machine's CPU: the dtype a CPU engine asked for
    ``requested`` runs in."""
    return dtype_for(requested, read_cpu())


def local_dtype(requested: str = "auto") -> str:
    """The dtype a local engine asked for ``requested`` runs in: on CPU (no CUDA device
    visible) :func:`cpu_dtype`; with a GPU, ``requested`` (``auto``: the engine decides)."""
    import torch

    return requested if torch.cuda.is_available() else cpu_dtype(requested)

"""The CPU dtype rule: bfloat16 only where the CPU computes it natively, fed by real flag lists.

Each CPU below is written as the tool that reports it prints it (``lscpu`` or
``/proc/cpuinfo``), with the flags such a CPU reports: an AVX2-only AMD EPYC (Zen 3), an
AVX-512 Intel Xeon without bfloat16 (Ice Lake), an AMD EPYC with AVX512_BF16 (Zen 4) and
an Intel Xeon with AMX (Sapphire Rapids).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pairrl import cpu_dtype
from pairrl.cpu_dtype import CpuInfo, dtype_for, parse_cpu_text

COMMON = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid pni "
    "pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c "
    "rdrand hypervisor lahf_lm abm 3dnowprefetch fsgsbase bmi1 avx2 smep bmi2 erms invpcid "
    "rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves"
)
AVX512 = "avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512vbmi avx512_vbmi2"
ZEN3_LSCPU = f"""Vendor ID: AuthenticAMD
Model name: AMD EPYC
CPU family: 25
Model: 1
Flags: {COMMON} vaes vpclmulqdq rdpid fsrm
"""
ICELAKE_CPUINFO = f"""processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 106
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
flags\t\t: {COMMON} {AVX512} gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq
"""
ZEN4_LSCPU = f"""Vendor ID: AuthenticAMD
Model name: AMD EPYC
CPU family: 25
Model: 17
Flags: {COMMON} {AVX512} avx512_bf16 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg
"""
SAPPHIRE_RAPIDS_CPUINFO = f"""processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: {COMMON} {AVX512} avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8 avx512_vnni
processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu
"""

CPUS = {
    "avx2 only (AMD EPYC Zen 3)": (ZEN3_LSCPU, "float32"),
    "avx-512 without bf16 (Intel Ice Lake)": (ICELAKE_CPUINFO, "float32"),
    "avx512_bf16 (AMD EPYC Zen 4)": (ZEN4_LSCPU, "bfloat16"),
    "amx (Intel Sapphire Rapids)": (SAPPHIRE_RAPIDS_CPUINFO, "bfloat16"),
}


@pytest.mark.parametrize("name", list(CPUS))
def test_auto_is_bfloat16_only_where_the_cpu_computes_it(name: str) -> None:
    text, expected = CPUS[name]
    cpu = parse_cpu_text(text, kernels="AVX512" if "avx512f" in text else "AVX2")
    assert dtype_for("auto", cpu) == expected
    # a dtype the config names is kept, on every CPU
    for named in ("float32", "bfloat16", "float16"):
        assert dtype_for(named, cpu) == named


def test_both_text_shapes_are_read() -> None:
    zen3 = parse_cpu_text(ZEN3_LSCPU)
    assert zen3.describe() == "AMD EPYC (family 25, model 1)" and "avx2" in zen3.flags
    assert "avx512f" not in zen3.flags
    xeon = parse_cpu_text(SAPPHIRE_RAPIDS_CPUINFO)
    # the first processor's lines, not a later one's
    assert xeon.model_name == "Intel(R) Xeon(R) Processor" and "amx_bf16" in xeon.flags
    assert parse_cpu_text(ICELAKE_CPUINFO).describe().endswith("(family 6, model 106)")
    assert xeon.shown_flags() == "avx2 avx512f avx512_bf16 avx512_vnni amx_bf16 amx_tile"
    assert parse_cpu_text("").flags == frozenset() and not parse_cpu_text("").bf16_native


@pytest.mark.parametrize("kernels", ["AVX2", "DEFAULT", "avx2"])
def test_torch_kernels_below_avx512_give_float32_on_a_bf16_cpu(kernels: str) -> None:
    # ATEN_CPU_CAPABILITY=avx2 on an AMX machine: torch's kernels have no bf16 instructions
    amx = parse_cpu_text(SAPPHIRE_RAPIDS_CPUINFO, kernels=kernels)
    assert dtype_for("auto", amx) == "float32"
    assert dtype_for("auto", parse_cpu_text(SAPPHIRE_RAPIDS_CPUINFO, "AVX512")) == "bfloat16"
    assert dtype_for("auto", parse_cpu_text(SAPPHIRE_RAPIDS_CPUINFO, "")) == "bfloat16"


def test_an_unknown_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="dtype must be one of"):
        dtype_for("fp8", CpuInfo("x", frozenset()))


def test_this_machine_follows_aten_cpu_capability() -> None:
    """In a child process with ATEN_CPU_CAPABILITY=avx2 the rule gives float32 here, and
    without it what the CPU's own flags say."""
    code = "from pairrl.cpu_dtype import cpu_dtype, read_cpu; c = read_cpu(); "
    code += "print(cpu_dtype(), c.kernels, c.bf16_native)"

    def child(env: dict[str, str]) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.split()

    import os

    base = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    assert child({**base, "ATEN_CPU_CAPABILITY": "avx2"})[:2] == ["float32", "AVX2"]
    flags = parse_cpu_text(Path("/proc/cpuinfo").read_text()).flags
    native = bool(flags & {"amx_bf16", "avx512_bf16"})
    dtype, _, reported = child(base)
    assert reported == str(native) and dtype == ("bfloat16" if native else "float32")


def test_engines_resolve_auto_by_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM in-process, the vLLM server command and a training model's ``auto`` all take the
    rule's dtype; a named dtype passes through."""
    from pairrl.rollout.samplers.vllm import cpu_engine_kwargs
    from pairrl.rollout.serve import vllm_server_command
    from pairrl.train.config import ModelConfig

    for text, expected in CPUS.values():
        cpu = parse_cpu_text(text, "AVX512" if "avx512f" in text else "AVX2")
        monkeypatch.setattr(cpu_dtype, "read_cpu", lambda cpu=cpu: cpu)
        assert cpu_engine_kwargs("auto", None)["dtype"] == expected
        assert cpu_engine_kwargs("float32", None)["dtype"] == "float32"
        command = vllm_server_command("m", port=1)
        assert command[command.index("--dtype") + 1] == expected
        if not _cuda():
            assert ModelConfig(path="m", dtype="auto").resolved_dtype() == expected
        assert ModelConfig(path="m").resolved_dtype() == "float32"


def test_doctor_prints_the_flags_and_each_engines_dtype() -> None:
    from pairrl.doctor import run_checks

    checks = {c.name: c for c in run_checks()}
    cpu = cpu_dtype.read_cpu()
    assert cpu.describe() in checks["cpu"].detail
    assert f"flags: {cpu.shown_flags()}" in checks["cpu"].detail
    auto = cpu_dtype.cpu_dtype()
    assert f"dtype auto on this CPU: {auto}" in checks["dtypes"].detail
    assert "training: model.dtype (default float32" in checks["dtypes"].detail


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_a_benchmark_caches_each_dtype_apart(tiny_model_dir: Path) -> None:
    """Samples and verdicts cached in one dtype are never read for another: the model's
    identity (the cache key's) names any dtype but float32, and auto by what it gives."""
    from pairrl.eval.models import model_identity

    folder = str(tiny_model_dir)
    assert model_identity(folder, None, "", engine="hf", dtype="float32").startswith("hf:")
    assert model_identity(folder, None, "", engine="vllm", dtype="bfloat16").startswith(
        "vllm-bfloat16:"
    )
    resolved = model_identity(folder, None, "", engine="hf", dtype="auto")
    named = model_identity(folder, None, "", engine="hf", dtype=cpu_dtype.local_dtype())
    assert resolved == named

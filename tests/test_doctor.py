"""`pairrl doctor` reports real facts about this machine."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from pairrl import versions
from pairrl.doctor import run_checks


def test_checks_match_this_machine() -> None:
    checks = {c.name: c for c in run_checks()}
    assert {"python", "torch", "gpus", "vllm", "bubblewrap", "slurm", "wandb", "disk"} <= set(
        checks
    )
    assert platform.python_version() in checks["python"].detail
    import torch

    assert checks["torch"].ok and torch.__version__ in checks["torch"].detail
    assert checks["gpus"].ok == torch.cuda.is_available()
    if checks["bubblewrap"].ok:  # a working sandbox needs the binary (it may exist yet fail)
        assert shutil.which("bwrap") is not None
    else:
        assert "bwrap" in checks["bubblewrap"].detail
    assert checks["slurm"].ok == (shutil.which("sbatch") is not None)
    for check in checks.values():
        if not check.ok:
            assert check.disables, f"{check.name} is missing but does not say what that disables"


def test_vllm_check_agrees_with_import() -> None:
    import importlib.util

    vllm = next(c for c in run_checks() if c.name == "vllm")
    if importlib.util.find_spec("vllm") is None:
        assert not vllm.ok
        assert ".[vllm]" in vllm.detail  # tells the user which extra to install
        assert "vLLM" in vllm.disables
    else:
        assert vllm.ok or "import failed" in vllm.detail


def test_cli_json_output() -> None:
    exe = Path(sys.executable).with_name("pairrl")
    out = subprocess.run([str(exe), "doctor", "--json"], capture_output=True, text=True, check=True)
    names = [c["name"] for c in json.loads(out.stdout)]
    assert "torch" in names and "disk" in names


def test_library_versions_are_those_installed() -> None:
    import importlib.metadata

    found = versions.library_versions()
    assert found["python"] == platform.python_version()
    assert found["torch"] == importlib.metadata.version("torch")
    assert found["transformers"] == importlib.metadata.version("transformers")
    assert set(found) <= {"python", *versions.NUMERIC_LIBRARIES}

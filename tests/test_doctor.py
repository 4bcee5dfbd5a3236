"""`pairrl doctor` reports real facts about this machine."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairrl import versions
from pairrl.doctor import check_slurm, check_wandb, run_checks


def _controller_answers() -> bool:
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return ping.returncode == 0


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
    assert checks["slurm"].ok == (shutil.which("sbatch") is not None and _controller_answers())
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


def _fake_slurm(bin_dir: Path, ping_output: str, ping_status: int) -> None:
    """sbatch and an `scontrol ping` that answers as a cluster in that state would."""
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho '{ping_output}'\nexit {ping_status}\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)


def test_slurm_is_usable_only_when_its_controller_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_slurm(tmp_path / "down", "Slurmctld(primary) at ctl is DOWN", 1)
    monkeypatch.setenv("PATH", str(tmp_path / "down"))
    down = check_slurm()
    assert not down.ok
    assert "controller down: Slurmctld(primary) at ctl is DOWN" in down.detail
    assert "pairrl slurm submit" in down.disables
    _fake_slurm(tmp_path / "up", "Slurmctld(primary) at ctl is UP", 0)
    monkeypatch.setenv("PATH", str(tmp_path / "up"))
    up = check_slurm()
    assert up.ok and up.detail.endswith("controller: Slurmctld(primary) at ctl is UP")


def test_wandb_is_usable_offline_without_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs take the W&B mode from their config (offline by default), not from WANDB_MODE."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc, so no stored key
    wandb = check_wandb()
    assert wandb.ok
    assert "default offline" in wandb.detail
    assert "online sync needs an API key (wandb login): not found" in wandb.detail
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    assert "online sync API key found" in check_wandb().detail

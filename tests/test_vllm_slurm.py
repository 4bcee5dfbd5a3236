"""The sharded benchmark on the local Slurm cluster with a vLLM server job as its endpoint.

`pairrl slurm submit EVAL --serve-model MODEL` submits four jobs: the vLLM server, the
shard array (which waits for the endpoint the server writes once it answers), the merge
(after every shard succeeded) and a stop job that cancels the server once the shards have
ended. The cluster is started and stopped by the fixture of ``test_slurm_cluster``; the
server is torn down by the jobs themselves, and the test checks that nothing is left.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from test_slurm_cluster import cluster, read_logs, submit, wait_for  # noqa: F401 (fixture)
from vllm_support import free_port, require_vllm

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_sharded_eval_with_a_vllm_server_job(
    cluster: dict[str, str],  # noqa: F811
    tmp_path: Path,
    tiny_model_dir: Path,
    shared_data_dir: Path,
) -> None:
    require_vllm()
    port = free_port()
    out = tmp_path / "ev"
    config = tmp_path / "eval.yaml"
    config.write_text(yaml.safe_dump({
        "kind": "eval", "out_dir": str(out),
        "tasks": {"path": str(shared_data_dir / "mbpp_sanitized.json"), "limit": 4},
        "candidates": {"source": "endpoint", "endpoint": "http://set-by-the-server-job/v1",
                       "served_model": "tiny", "k": 2, "sampling": {"max_tokens": 24}},
        "selectors": ["random", "first", "oracle"],
        "executor": {"workers": 1}, "bootstrap": 200, "gate": {"strict": True}}))  # fmt: skip
    run = tmp_path / "r"
    ids = submit([str(config), "--shards", "2", "--cpus-per-task", "1", "--run-dir", str(run),
                  "--serve-model", str(tiny_model_dir), "--vllm-port", str(port),
                  "--server-arg=--enforce-eager", "--eval-arg=--no-progress",
                  "--time", "00:30:00"], cluster, tmp_path)  # fmt: skip
    assert len(ids) == 4, ids
    server, shards, merge, stop = ids
    logs = run / "logs"
    assert wait_for(merge, cluster, 900, logs) == ["COMPLETED"], read_logs(logs)
    assert wait_for(shards, cluster, 60, logs) == ["COMPLETED", "COMPLETED"]
    assert wait_for(stop, cluster, 120, logs) == ["COMPLETED"], read_logs(logs)
    assert wait_for(server, cluster, 120, logs) == ["CANCELLED"], read_logs(logs)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "PASS" and summary["num_tasks"] == 4, summary.get("gate")
    text = "".join(p.read_text(errors="replace") for p in sorted(logs.iterdir()))
    line = f"sampling from the vLLM server at http://localhost:{port}/v1"
    assert text.count(line) == 2, read_logs(logs)  # both shards used the server job
    left = subprocess.run(["pgrep", "-f", f"api_server.*--port {port}"], capture_output=True)
    assert left.returncode == 1, f"vLLM server processes left: {left.stdout!r}"

"""The rendered Slurm scripts, executed under bash against stand-ins for srun, scontrol,
getent, curl, sbatch, accelerate, trl and pairrl that record how they were called.

Checked: the things that break multi-node jobs in practice. The vLLM node is never a
training rank; every training node gets --num_machines N-1 and its own --machine_rank, with
rank 0 on the rendezvous host (even when srun starts the nodes in another order); the
rendezvous address and port; the server host and port passed to the trainer; --resume
exactly when a checkpoint exists; the eval array's shard arguments and the merge's
afterok dependency on the array job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pairrl.config import ConfigError
from pairrl.slurm.render import (
    EvalJobSpec,
    RenderedJob,
    TrainJobSpec,
    render_eval,
    render_train,
)

REPO = Path(__file__).resolve().parents[1]
NODES = ["gpu-a01", "gpu-a02", "gpu-b07", "gpu-c11"]  # the last one will serve vLLM
NODE_IPS = {n: f"10.1.0.{i + 1}" for i, n in enumerate(NODES)}

# Records every call as one JSON line: tool name, argv, the node it ran on.
RECORDER = """#!{python}
import json, os, sys
with open(os.environ["CALLS"], "a") as f:
    f.write(json.dumps({{"tool": os.path.basename(sys.argv[0]), "argv": sys.argv[1:],
                        "node": os.environ.get("SLURMD_NODENAME")}}) + "\\n")
if os.path.basename(sys.argv[0]) == "sbatch" and "--parsable" in sys.argv:
    print("4242")
"""

# srun: runs the command once per node of --nodelist, in reverse order and with task ranks
# (SLURM_PROCID) that do not follow the node list, so a launcher that took its machine rank
# from start order or task rank instead of its node name would be caught.
SRUN = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
opts = {{}}
while args and args[0].startswith("--"):
    key, _, value = args.pop(0)[2:].partition("=")
    opts[key] = value
nodes = opts["nodelist"].split(",")
with open(os.environ["CALLS"], "a") as f:
    f.write(json.dumps({{"tool": "srun", "argv": args, "opts": opts, "nodes": nodes}}) + "\\n")
rc = 0
for procid, node in enumerate(reversed(nodes)):
    env = dict(os.environ, SLURMD_NODENAME=node, SLURM_PROCID=str(procid))
    rc = max(rc, subprocess.run(args, env=env).returncode)
sys.exit(rc)
"""

SCONTROL = """#!/bin/bash
if [[ "$1 $2" == "show hostnames" ]]; then printf '%s\\n' $FAKE_NODES; exit 0; fi
echo "{{\\"tool\\": \\"scontrol\\", \\"argv\\": \\"$*\\"}}" >> "$CALLS"
"""

GETENT = """#!/bin/bash
case "$2" in
{cases}
*) exit 2 ;;
esac
"""


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    """A bin folder of recording stand-ins; prepend it to PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = sys.executable
    for tool in ("accelerate", "trl", "pairrl", "curl", "sbatch"):
        (bin_dir / tool).write_text(RECORDER.format(python=python))
    (bin_dir / "srun").write_text(SRUN.format(python=python))
    (bin_dir / "scontrol").write_text(SCONTROL.format())
    cases = "\n".join(f"{n}) echo '{ip} STREAM {n}' ;;" for n, ip in NODE_IPS.items())
    (bin_dir / "getent").write_text(GETENT.format(cases=cases))
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir


def write_config(tmp_path: Path, **engine: object) -> Path:
    """A training config shaped like configs/*.yaml, with its engine section replaced."""
    data = yaml.safe_load((REPO / "configs" / "tiny_cpu.yaml").read_text())
    data["model"]["path"] = "Qwen/Qwen3-4B-Instruct-2507"
    data["engine"] = {"kind": "vllm_colocate", **engine}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def train_spec(tmp_path: Path, config: Path, **kw: object) -> TrainJobSpec:
    base: dict[str, object] = {
        "config": str(config),
        "workdir": str(tmp_path),
        "run_dir": str(tmp_path / "slurm-run"),
        "nodes": 4,
        "gpus_per_node": 8,
        "accelerate_config": str(REPO / "configs" / "accelerate" / "multi_gpu.yaml"),
    }
    return TrainJobSpec(**{**base, **kw})


def write_scripts(job: RenderedJob, run_dir: Path) -> Path:
    script_dir = run_dir / "slurm"
    script_dir.mkdir(parents=True, exist_ok=True)
    for name, text in job.scripts.items():
        (script_dir / name).write_text(text)
    return script_dir


def run_batch(script: Path, stubs: Path, tmp_path: Path, nodes: list[str]) -> list[dict]:
    """Run a rendered batch script as Slurm would on the first node; return the calls."""
    calls = tmp_path / "calls.jsonl"
    calls.unlink(missing_ok=True)
    env = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "CALLS": str(calls),
        "FAKE_NODES": " ".join(nodes),
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NODELIST": "gpu-[a01-a02,b07,c11]",
        "SLURMD_NODENAME": nodes[0],
        "HOME": str(tmp_path),
    }
    result = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in calls.read_text().splitlines()]


def option(argv: list[str], flag: str) -> str:
    assert argv.count(flag) == 1, f"{flag} given {argv.count(flag)} times in {argv}"
    return argv[argv.index(flag) + 1]


def set_values(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


def test_multi_node_roles_rendezvous_and_server_host(tmp_path: Path, stubs: Path) -> None:
    config = write_config(tmp_path)
    spec = train_spec(tmp_path, config, overrides=["optim.lr=1e-6"])
    job = render_train(spec)
    script_dir = write_scripts(job, Path(spec.run_dir))
    calls = run_batch(script_dir / "train.sbatch", stubs, tmp_path, NODES)
    vllm_node, train_nodes = NODES[-1], NODES[:-1]

    servers = [c for c in calls if c["tool"] == "trl"]
    assert [s["node"] for s in servers] == [vllm_node]
    assert servers[0]["argv"][0] == "vllm-serve"
    assert option(servers[0]["argv"], "--model") == "Qwen/Qwen3-4B-Instruct-2507"
    assert option(servers[0]["argv"], "--port") == "8000"
    health = [c for c in calls if c["tool"] == "curl"]
    assert health and all(f"http://{vllm_node}:8000/health/" in c["argv"] for c in health)
    # The server is up before any trainer starts.
    first_trainer = next(i for i, c in enumerate(calls) if c["tool"] == "accelerate")
    assert max(i for i, c in enumerate(calls) if c["tool"] == "curl") < first_trainer

    train_srun = [
        c for c in calls if c["tool"] == "srun" and c["opts"].get("job-name") == "pairrl-train"
    ]
    assert len(train_srun) == 1 and train_srun[0]["nodes"] == train_nodes
    server_srun = [
        c for c in calls if c["tool"] == "srun" and c["opts"].get("job-name") == "pairrl-vllm"
    ]
    assert len(server_srun) == 1 and server_srun[0]["nodes"] == [vllm_node]
    assert {c["opts"]["gpus-per-node"] for c in train_srun + server_srun} == {"8"}

    launches = [c for c in calls if c["tool"] == "accelerate"]
    assert sorted(c["node"] for c in launches) == sorted(train_nodes)  # never the vLLM node
    for c in launches:
        argv = c["argv"]
        assert argv[0] == "launch"
        assert option(argv, "--num_machines") == "3"
        assert option(argv, "--num_processes") == "24"  # 3 nodes x 8 GPUs
        assert option(argv, "--machine_rank") == str(train_nodes.index(c["node"]))
        assert option(argv, "--main_process_ip") == NODE_IPS[train_nodes[0]]
        assert option(argv, "--main_process_port") == "29500"
        assert option(argv, "--config_file").endswith("configs/accelerate/multi_gpu.yaml")
        trainer = argv[argv.index("train") :]
        assert trainer[1] == str(config)
        sets = set_values(trainer)
        assert sets["engine.kind"] == "vllm_server"
        assert sets["engine.server_host"] == vllm_node
        assert sets["engine.server_port"] == "8000"
        assert sets["engine.server_base_url"] == "null"
        assert sets["optim.lr"] == "1e-6"
        assert option(trainer, "--out") == str(tmp_path / "runs" / "tiny_cpu")
        assert "--resume" not in trainer


def test_trainer_reads_the_rendered_arguments_as_server_mode(tmp_path: Path, stubs: Path) -> None:
    """The arguments a training node passes, parsed by the trainer's own config and mapped to
    TRL: server mode, pointed at the vLLM node (a config with a base URL set must not win)."""
    from pairrl.config import load_config
    from pairrl.train.config import TrainConfig
    from pairrl.train.plan import grpo_config_kwargs, resolve_plan

    spec = train_spec(tmp_path, write_config(tmp_path, server_base_url="http://stale:1/"))
    script_dir = write_scripts(render_train(spec), Path(spec.run_dir))
    calls = run_batch(script_dir / "train.sbatch", stubs, tmp_path, NODES)
    argv = next(c["argv"] for c in calls if c["tool"] == "accelerate")
    trainer = argv[argv.index("train") :]
    sets = [trainer[i + 1] for i, a in enumerate(trainer) if a == "--set"]
    cfg = load_config(trainer[1], TrainConfig, sets)
    kwargs = grpo_config_kwargs(cfg, resolve_plan(cfg, out=option(trainer, "--out")))
    assert kwargs["vllm_mode"] == "server"
    assert kwargs["vllm_server_host"] == NODES[-1]
    assert kwargs["vllm_server_port"] == 8000
    assert kwargs["vllm_server_base_url"] is None


def test_requeued_job_resumes_when_a_checkpoint_exists(tmp_path: Path, stubs: Path) -> None:
    spec = train_spec(tmp_path, write_config(tmp_path))
    script_dir = write_scripts(render_train(spec), Path(spec.run_dir))
    (tmp_path / "runs" / "tiny_cpu" / "checkpoint-2").mkdir(parents=True)
    calls = run_batch(script_dir / "train.sbatch", stubs, tmp_path, NODES)
    launches = [c for c in calls if c["tool"] == "accelerate"]
    assert len(launches) == 3
    assert all(c["argv"][-1] == "--resume" for c in launches)


def test_single_node_runs_trainer_without_server(tmp_path: Path, stubs: Path) -> None:
    config = write_config(tmp_path)
    spec = train_spec(tmp_path, config, nodes=1, gpus_per_node=0, accelerate_config=None)
    script_dir = write_scripts(render_train(spec), Path(spec.run_dir))
    calls = run_batch(script_dir / "train.sbatch", stubs, tmp_path, NODES[:1])
    assert not [c for c in calls if c["tool"] in ("trl", "curl", "accelerate")]
    trainers = [c for c in calls if c["tool"] == "pairrl"]
    assert [c["node"] for c in trainers] == [NODES[0]]
    argv = trainers[0]["argv"]
    assert argv[:2] == ["train", str(config)]
    assert "engine.kind" not in set_values(argv)  # the config's engine is kept


def test_gpu_nodes_without_accelerate_config_run_plain_data_parallel(
    tmp_path: Path, stubs: Path
) -> None:
    spec = train_spec(tmp_path, write_config(tmp_path), accelerate_config=None)
    job = render_train(spec)
    assert "no --accelerate-config: accelerate's plain data parallel (--multi_gpu)" in job.notes
    calls = run_batch(
        write_scripts(job, Path(spec.run_dir)) / "train.sbatch", stubs, tmp_path, NODES
    )
    launches = [c for c in calls if c["tool"] == "accelerate"]
    assert sorted(c["node"] for c in launches) == sorted(NODES[:-1])
    for c in launches:
        argv = c["argv"]
        assert argv[:2] == ["launch", "--multi_gpu"] and "--config_file" not in argv
        assert option(argv, "--num_machines") == "3" and option(argv, "--num_processes") == "24"
        assert option(argv, "--machine_rank") == str(NODES.index(c["node"]))


def test_cli_renders_a_config_with_the_default_options(tmp_path: Path) -> None:
    """`pairrl slurm render CONFIG` as the README shows it: two nodes, no GPUs, one
    trainer process (no accelerate launch) beside the vLLM server node."""
    cmd = [str(Path(sys.executable).with_name("pairrl")), "slurm", "render",
           str(write_config(tmp_path)), "--run-dir", str(tmp_path / "r"), "--dry-run"]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --nodes=2" in result.stdout
    assert "# note: nodes 1..1 train (1 processes); node 2 serves vLLM" in result.stdout
    assert 'exec "$PAIRRL_BIN" train' in result.stdout
    assert "accelerate launch" not in result.stdout


def test_rendered_header_asks_for_requeue_and_early_signal(tmp_path: Path) -> None:
    spec = train_spec(tmp_path, write_config(tmp_path), signal_lead_s=600, partition="gpu")
    batch = render_train(spec).scripts["train.sbatch"]
    for line in ("#SBATCH --nodes=4", "#SBATCH --gpus-per-node=8", "#SBATCH --requeue",
                 "#SBATCH --signal=B:USR1@600", "#SBATCH --partition=gpu",
                 "#SBATCH --open-mode=append"):  # fmt: skip
        assert line in batch.splitlines()
    result = subprocess.run(["bash", "-n"], input=batch, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_configs_that_cannot_work_are_refused(tmp_path: Path) -> None:
    server_cfg = write_config(tmp_path, server_host="somewhere")
    data = yaml.safe_load(server_cfg.read_text())
    data["engine"]["kind"] = "vllm_server"
    server_cfg.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="needs --nodes >= 2"):
        render_train(train_spec(tmp_path, server_cfg, nodes=1))
    cpu_processes = {"gpus_per_node": 0, "processes_per_node": 2, "accelerate_config": None}
    with pytest.raises(ConfigError, match="accelerate-config: 6 trainer processes on CPU"):
        render_train(train_spec(tmp_path, write_config(tmp_path), **cpu_processes))
    with pytest.raises(ConfigError, match="exceeds --gpus-per-node"):
        render_train(train_spec(tmp_path, write_config(tmp_path), vllm_tensor_parallel_size=16))


def test_eval_array_shards_and_dependent_merge(tmp_path: Path, stubs: Path) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text(yaml.safe_dump({"kind": "eval", "out_dir": "runs/ev", "gate": {"strict": True},
                                      "candidates": {"source": "pool", "pool": "p.jsonl"}}))  # fmt: skip
    spec = EvalJobSpec(config=str(config), workdir=str(tmp_path), run_dir=str(tmp_path / "sr"),
                       shards=3, max_parallel=2, venv=None)  # fmt: skip
    job = render_eval(spec)
    script_dir = write_scripts(job, tmp_path / "sr")
    assert "#SBATCH --array=0-2%2" in job.scripts["eval-shards.sbatch"].splitlines()
    out = str(tmp_path / "runs" / "ev")
    calls = tmp_path / "calls.jsonl"
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "CALLS": str(calls), "HOME": str(tmp_path)}
    for task in range(3):
        env.update(SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_JOB_ID="4242")
        subprocess.run(["bash", str(script_dir / "eval-shards.sbatch")], env=env, check=True)
    subprocess.run(["bash", str(script_dir / "eval-merge.sbatch")], env=env, check=True)
    subprocess.run(["bash", "-euc", "\n".join(job.submit)], env=env, check=True)
    recorded = [json.loads(line) for line in calls.read_text().splitlines()]
    shards = [c["argv"] for c in recorded if c["tool"] == "pairrl" and c["argv"][1] != "merge"]
    assert [(option(a, "--shard"), option(a, "--out"), a[1]) for a in shards] == [
        (f"{i}/3", out, str(config)) for i in range(3)
    ]
    merges = [c["argv"] for c in recorded if c["tool"] == "pairrl" and c["argv"][1] == "merge"]
    assert merges == [["eval", "merge", out, "--strict"]]
    sbatch = [c["argv"] for c in recorded if c["tool"] == "sbatch"]
    assert sbatch[0][-1].endswith("eval-shards.sbatch")
    assert "--dependency=afterok:4242" in sbatch[1] and sbatch[1][-1].endswith("eval-merge.sbatch")


def test_configs_are_parsed_with_their_schemas(tmp_path: Path) -> None:
    """The renderer reads the typed configs: a bad field fails before anything is written."""
    config = write_config(tmp_path)
    config.write_text(config.read_text() + "optim:\n  lr: -1\n")
    with pytest.raises(ConfigError, match=r"optim\.lr = -1"):
        render_train(train_spec(tmp_path, config, nodes=1))


def test_cli_dry_run_prints_scripts_and_writes_nothing(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    cmd = [str(Path(sys.executable).with_name("pairrl")), "slurm", "render", str(config),
           "--nodes", "3", "--gpus-per-node", "4", "--accelerate-config",
           str(REPO / "configs/accelerate/multi_gpu.yaml"), "--run-dir", str(tmp_path / "r"),
           "--dry-run"]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --nodes=3" in result.stdout
    assert f"sbatch --parsable {tmp_path / 'r' / 'slurm' / 'train.sbatch'}" in result.stdout
    assert "--num_machines 2 --num_processes 8" in result.stdout
    assert not (tmp_path / "r").exists()

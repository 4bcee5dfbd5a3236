"""The stop contract, stage by stage, on the main job shortened: a SIGTERM to the main
process only, or to every process of the job (as Slurm sends it), in the warm start's SFT,
a PairRL step, the benchmark and a baseline's step, ends the job within 25 s with no
traceback and no process left behind, printing the command that continues; continued
stop after stop, the job ends with exactly ``max_steps`` steps and the numbers of a run
never stopped. Run in one process (each stage in turn) and as two processes side by side
(the baseline trains in the second one, told to stop by the main process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "toy_cpu.yaml"
PAIRRL = str(Path(sys.executable).with_name("pairrl"))
STEPS = 8
# Each stage long enough to be signalled inside (seconds, not milliseconds), the whole job
# in about 30 s on 2 cores.
SHORT = [
    "recipe.options.warm_start_examples=400",
    "recipe.options.eval_problems=4",
    "recipe.options.eval_k=4",
    "recipe.options.eval_batch_size=64",
    "warm_start.steps=100",
    "warm_start.batch_size=8",
    "batch.problems_per_step=2",
    f"batch.max_steps={STEPS}",
    "checkpoint.every_steps=4",
    "logging.wandb=disabled",
]
ONE_PROCESS = "recipe.options.side_by_side=false"


def job_args(tmp_path: Path, out: Path, *extra: str) -> list[str]:
    args = [PAIRRL, "experiment", str(CONFIG), "--out", str(out)]
    return (
        args + [f"--set=model.path={tmp_path / 'model'}"] + [f"--set={o}" for o in (*SHORT, *extra)]
    )


def start(cmd: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "CUDA_VISIBLE_DEVICES": ""}
    with log.open("w") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)  # fmt: skip


def job_processes(root: int) -> dict[int, str]:
    """``root`` and every process descended from it, whatever their session (Slurm stops a
    job step by its cgroup, not its process group): {pid: start time}."""
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError):
            stats[int(stat.parent.name)] = stat.read_text().rsplit(")", 1)[1].split()
    found, frontier = {root}, {root}
    while frontier:
        frontier = {pid for pid, f in stats.items() if int(f[1]) in frontier} - found
        found |= frontier
    return {pid: stats[pid][19] for pid in found if pid in stats}


def alive(processes: dict[int, str]) -> list[int]:
    """Those of ``processes`` still running (the same pid and start time), zombies aside."""
    left = []
    for pid, started in processes.items():
        with suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if fields[19] == started and fields[0] != "Z":
                left.append(pid)
    return left


def stop_at(
    proc: subprocess.Popen[bytes],
    log: Path,
    marker: str,
    whom: str,
    after: str = "",
    ended: str = "",
) -> tuple[int, str]:
    """Wait for ``marker`` (and ``after``, if given) in the job's output, then SIGTERM to
    the main process or to every process of the job; the exit status and output, after
    checking the stop's contract and that it came inside the stage ``marker`` starts (the
    output has no ``ended``: by default, that stage's "finished" line)."""
    deadline = time.monotonic() + 600
    while not all(m in log.read_text() for m in (marker, after)):
        assert proc.poll() is None, f"ended before {marker!r}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {marker!r} within 600 s"
        time.sleep(0.02)
    processes = job_processes(proc.pid)
    assert proc.poll() is None, f"the job ended before the stop could be sent after {marker!r}"
    for pid in processes if whom == "every" else [proc.pid]:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    stopped = time.monotonic()
    code = proc.wait(timeout=120)
    took = time.monotonic() - stopped
    assert took < 25, f"{took:.0f} s to stop after {marker!r}"
    # A helper that outlives the main process by a moment (multiprocessing's resource
    # tracker ignores SIGTERM and leaves when its pipe closes) is no leak; one still running
    # when Slurm's SIGKILL would come is.
    while alive(processes) and time.monotonic() - stopped < 25:
        time.sleep(0.1)
    assert not alive(processes), f"left running after the stop: {alive(processes)}"
    output = log.read_text()
    assert "Traceback" not in output, output[-4000:]
    assert "leaked" not in output, output[-2000:]
    ended = ended or marker.replace("started", "finished")
    assert ended not in output, f"the stop came after {ended!r}"
    return code, output


def continued(output: str) -> list[str]:
    """The command the stopped job printed to continue it, as an argument list."""
    import shlex

    line = output.rstrip().splitlines()[-1].strip()
    assert line.startswith("pairrl experiment "), output[-2000:]
    return [PAIRRL, *shlex.split(line)[1:]]


def finish(cmd: list[str], log: Path, cwd: Path) -> dict:
    proc = start(cmd, log, cwd)
    assert proc.wait(timeout=900) == 0, log.read_text()[-4000:]
    assert "Traceback" not in log.read_text()
    return json.loads((Path(cmd[cmd.index("--out") + 1]) / "summary.json").read_text())


@pytest.fixture(scope="module")
def never_stopped(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The job run to its end without a stop (one process: its numbers are the two
    processes' too, as the main job's test shows)."""
    tmp = tmp_path_factory.mktemp("never-stopped")
    return finish(job_args(tmp, tmp / "run", ONE_PROCESS), tmp / "log", tmp)


def check_ended_like(summary: dict, out: Path, reference: dict) -> None:
    assert json.loads((out / "run.json").read_text())["global_step"] == STEPS
    for trained in (out, out / "baselines" / "grpo"):
        state = json.loads((trained / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())
        assert state["global_step"] == STEPS, trained
        assert not list(trained.glob(f"checkpoint-{STEPS + 1}")), trained
    assert summary["models"] == reference["models"]


@pytest.mark.slow
@pytest.mark.parametrize("whom", ["main", "every"])
def test_a_stop_in_each_stage_continues_to_the_uninterrupted_result(
    tmp_path: Path, whom: str, never_stopped: dict
) -> None:
    out = tmp_path / "run"
    cmd = job_args(tmp_path, out, ONE_PROCESS)

    log = tmp_path / "1-warm-start.log"
    code, output = stop_at(start(cmd, log, tmp_path), log, "warm start (SFT): started", whom)
    assert code == 143 and "stopped (SIGTERM)" in output, output[-3000:]
    assert "--resume" not in continued(output)  # no checkpoint yet: the command itself
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"

    log = tmp_path / "2-train.log"
    code, output = stop_at(
        start(continued(output), log, tmp_path), log, "train (pairrl): started", whom
    )
    assert code == 0, output[-3000:]
    step = json.loads((out / "run.json").read_text())["interrupted_at_step"]
    assert 1 <= step < STEPS and (out / f"checkpoint-{step}").is_dir()
    assert "--resume" in continued(output)

    log = tmp_path / "3-benchmark.log"
    code, output = stop_at(
        start(continued(output), log, tmp_path),
        log,
        "warm_start: sample: started",
        whom,
        ended="train (grpo): started",  # the benchmark of the warm start and PairRL before it
    )
    assert code == 143 and "stopped (SIGTERM)" in output, output[-3000:]

    log = tmp_path / "4-baseline.log"
    code, output = stop_at(
        start(continued(output), log, tmp_path), log, "train (grpo): started", whom
    )
    assert code == 143 and "stopped (SIGTERM)" in output, output[-3000:]
    assert list((out / "baselines" / "grpo").glob("checkpoint-*")), (
        "the baseline kept no checkpoint"
    )
    assert not (out / "baselines" / "grpo" / "final").exists()

    summary = finish(continued(output), tmp_path / "5-end.log", tmp_path)
    check_ended_like(summary, out, never_stopped)


@pytest.mark.slow
def test_side_by_side_the_second_process_stops_with_the_job(
    tmp_path: Path, never_stopped: dict
) -> None:
    """Two processes: a stop to the main process alone during PairRL's training (the second
    process evaluating the warm start), then one to every process during the baseline's
    training in the second process (the main one evaluating): each ends both processes, the
    baseline with a checkpoint, and the job ends with the uninterrupted numbers."""
    out = tmp_path / "run"
    log = tmp_path / "1-train.log"
    code, output = stop_at(
        start(job_args(tmp_path, out), log, tmp_path), log, "train (pairrl): started", "main"
    )
    assert code == 0, output[-3000:]

    log = tmp_path / "2-baseline.log"
    code, output = stop_at(
        start(continued(output), log, tmp_path),
        log,
        "train (grpo): started",
        "every",
        after="train (pairrl): finished",  # the main process evaluating by then
    )
    assert code == 143 and "stopped (SIGTERM)" in output, output[-3000:]
    assert list((out / "baselines" / "grpo").glob("checkpoint-*")), (
        "the baseline kept no checkpoint"
    )

    summary = finish(continued(output), tmp_path / "3-end.log", tmp_path)
    assert summary["side_by_side"] is True
    check_ended_like(summary, out, never_stopped)


@pytest.mark.slow
@pytest.mark.parametrize("whom", ["main", "every"])
def test_a_stop_during_the_real_model_samples_leaves_no_sampler(tmp_path: Path, whom: str) -> None:
    """The real-model job's warm start samples in a child process (vLLM in float32 or
    bfloat16): a stop there ends it with the job, with no semaphore reported as leaked."""
    from pairrl import model_source

    if model_source.smollm2_gguf() is None:
        pytest.skip("the SmolLM2 GGUF is not installed (.ci/setup.sh installs it)")
    config = REPO / "configs" / "smollm2_cpu.yaml"
    cmd = [PAIRRL, "experiment", str(config), "--out", str(tmp_path / "run"),
           "--set", "recipe.options.train_problems=6", "--set", "recipe.options.warm_samples_per_task=6"]  # fmt: skip
    log = tmp_path / "log"
    code, output = stop_at(start(cmd, log, tmp_path), log, "warm start: sample: started", whom)
    assert code == 143 and "stopped (SIGTERM)" in output, output[-3000:]
    assert continued(output)[1:] == [
        "experiment",
        *cmd[2:],
    ]  # no checkpoint yet: the command itself

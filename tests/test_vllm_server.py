"""vLLM's OpenAI server, started here on 127.0.0.1 as pairrl starts it, on a tiny judge.

One server for the module (start-up is about a minute on 2 cores), over the tiny model
after a short supervised warm start on the benchmark's formats (``vllm_support``), so the
judge writes parseable ratings and puts its mass on the rating and A/B tokens, and the
integrity gate can PASS. Covered: usage and log-probabilities read over HTTP, `pairrl
select` and the benchmark with every judge read-out (sampled, expected, forced; pointwise
A/B) with token counts measured by the server, and the server killed mid-run (SIGKILL,
SIGTERM): failures within a stated deadline, no judge call for a failed sample, a gate
FAIL, then a rerun against a restarted server that resumes from the cache and PASSes.
The kill tests come last: they stop the module's server and leave a restarted one.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import typer
from typer.testing import CliRunner
from vllm_support import VLLMServer, build_judge_model, require_vllm

from pairrl.config import parse_config
from pairrl.eval.config import EvalConfig

pytestmark = pytest.mark.slow

SERVED = "judge"
TASKS = 3
# A stopped server must surface within this (the watchdog needs ~4 s, retries ~1 s more;
# the rest of the run fails fast against a closed port). The read timeout is 600 s.
KILL_DEADLINE_S = 45


@pytest.fixture(scope="module")
def mbpp(shared_data_dir: Path) -> Path:
    return shared_data_dir / "mbpp_sanitized.json"


def eval_config(out: Path, mbpp: Path, url: str, **over: object) -> EvalConfig:
    data: dict = {
        "kind": "eval",
        "out_dir": str(out),
        "tasks": {"path": str(mbpp), "limit": TASKS},
        "candidates": {
            "source": "endpoint",
            "endpoint": url,
            "served_model": SERVED,
            "k": 3,
            "sampling": {"max_tokens": 48},
        },
        "judge": {"max_tokens": 32},
        "selectors": ["random", "oracle", "all_pairs", "pointwise_ab"],
        "executor": {"workers": 1},
        "bootstrap": 200,
    }
    for key, value in over.items():
        section, _, field = key.partition("__")
        if field:
            data[section] = {**data[section], field: value}
        else:
            data[section] = value
    return parse_config(data, EvalConfig)


@pytest.fixture(scope="module")
def judge_model(mbpp: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_vllm()
    from pairrl.eval.kit import benchmark_kit
    from pairrl.eval.tasks import load_task_set

    folder = tmp_path_factory.mktemp("vllm-judge")
    tasks = load_task_set(mbpp, None, folder)[:6]
    kit = benchmark_kit(eval_config(folder / "unused", mbpp, "http://unused/v1"), tasks)
    return build_judge_model(folder, kit, tasks)


@pytest.fixture(scope="module")
def server(judge_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    process = VLLMServer(judge_model, log, served=SERVED).start()
    try:
        yield process
    finally:
        process.stop()


def test_usage_and_logprobs_over_http(server: VLLMServer, judge_model: Path) -> None:
    """Usage is the server's count; sampled-token log-probs match transformers' softmax."""
    from pairrl.rollout.samplers import OpenAISampler, SamplingParams
    from pairrl.tiny_model import load_tiny_model

    model, tokenizer = load_tiny_model(judge_model)
    prompts = [[{"role": "user", "content": "write a python function"}], "def add(x, y):"]
    with OpenAISampler(server.url, SERVED, max_retries=0) as remote:
        rows = remote.generate(prompts, 2, SamplingParams(temperature=1.0, max_tokens=12, seed=3))
        scores = remote.next_token_logprobs(prompts, ["A", "<"])
    for prompt, row in zip(prompts, rows, strict=True):
        text = (
            prompt
            if isinstance(prompt, str)
            else tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        )
        ids = tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"]
        for c in row:
            assert c.ok and c.usage is not None and c.token_ids, c
            assert c.usage.prompt_tokens == len(ids)
            assert c.usage.completion_tokens == len(c.token_ids) == len(c.logprobs)
            full = torch.tensor([ids + c.token_ids])
            with torch.no_grad():
                logp = torch.log_softmax(model(full).logits[0].float(), -1)
            hf = [float(logp[len(ids) + j - 1, t]) for j, t in enumerate(c.token_ids)]
            assert max(abs(a - b) for a, b in zip(hf, c.logprobs, strict=True)) < 1e-4
        assert remote.measured_usage(prompt).prompt_tokens == len(ids)  # the scoring call's
    assert all(isinstance(s, dict) for s in scores)


@pytest.mark.parametrize("readout", ["sampled", "expected", "forced"])
def test_select_with_every_readout(server: VLLMServer, tmp_path: Path, readout: str) -> None:
    from pairrl.rollout.select_cli import register

    root = typer.Typer()

    @root.callback()
    def _root() -> None:
        """Test root (keeps `select` a subcommand)."""

    register(root)
    jsonl = tmp_path / "c.jsonl"
    cands = ["def f(x):\n    return x", "def f(x):\n    return 2 * x", "pass", "return x"]
    jsonl.write_text("".join(json.dumps(c) + "\n" for c in cands))
    result = CliRunner().invoke(
        root,
        ["select", "--candidates", str(jsonl), "--problem", "Return x.", "--endpoint",
         server.url, "--readout", readout, "--temperature", "0", "--max-tokens", "32",
         "--max-retries", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "winner" in result.output and "failed 0" in result.output
    assert "judge tokens (measured by the engine): prompt " in result.output
    measured = result.output.split("judge tokens (measured by the engine): prompt ")[1]
    assert int(measured.split(",")[0]) > 0


@pytest.mark.parametrize("readout", ["sampled", "expected", "forced"])
def test_benchmark_with_every_readout_passes(
    server: VLLMServer, mbpp: Path, tmp_path_factory: pytest.TempPathFactory, readout: str
) -> None:
    from pairrl.eval.runner import run_eval

    root = tmp_path_factory.getbasetemp() / "vllm-bench"
    cfg = eval_config(
        root / readout, mbpp, server.url, cache_dir=str(root / "cache"), judge__readout=readout
    )
    outcome = run_eval(cfg, show_progress=False)
    assert outcome.gate.verdict == "PASS", outcome.gate.reasons
    for name in ("all_pairs", "pointwise_ab"):
        cost = outcome.summary["selectors"][name]["cost"]
        assert cost["judge_calls"] > 0 and cost["failed_calls"] == 0, cost
        assert cost["prompt_tokens"] > 100 * cost["judge_calls"], cost  # measured, not 0
        assert cost.get("unmeasured_calls", 0) == 0, cost
    pairs = outcome.summary["selectors"]["all_pairs"]["cost"]
    # sampled and expected ratings are written by the judge; forced and A/B write nothing
    assert (pairs["completion_tokens"] > 0) == (readout != "forced"), pairs


def _killed_run(server: VLLMServer, cfg: EvalConfig, sig: int) -> tuple[object, float, int]:
    """run_eval in a thread; the server's API process gets ``sig`` once two tasks are
    sampled. Returns (outcome, seconds from the signal to the run's end, samples cached)."""
    from pairrl.eval.runner import run_eval

    samples = Path(cfg.cache_dir or "") / "samples.jsonl"
    done: dict = {}

    def run() -> None:
        done["outcome"] = run_eval(cfg, show_progress=False)
        done["end"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not (samples.exists() and len(samples.read_text().splitlines()) >= 2):
        assert time.monotonic() < deadline and thread.is_alive(), "the run never sampled"
        time.sleep(0.05)
    cached = len(samples.read_text().splitlines())
    killed = time.monotonic()
    server.signal_api(sig)
    thread.join(timeout=300)
    assert not thread.is_alive(), "the run did not end after the server was killed"
    return done["outcome"], done["end"] - killed, cached


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_server_killed_mid_run_fails_then_resumes(
    server: VLLMServer, mbpp: Path, tmp_path: Path, sig: int
) -> None:
    cfg = eval_config(
        tmp_path / "ev",
        mbpp,
        server.url,
        cache_dir=str(tmp_path / "cache"),
        tasks={"path": str(mbpp), "limit": 8},
        candidates__k=4,
        candidates__batch_size=1,  # one request per task: the kill lands between tasks
        selectors=["random", "oracle", "all_pairs"],
        # the tiny judge garbles a rating now and then; the kill fails a whole task's
        # samples (4 of 32, 12.5%) or more
        gate={"tolerance": 0.1},
    )
    outcome, after_kill_s, cached = _killed_run(server, cfg, sig)
    assert after_kill_s < KILL_DEADLINE_S, f"{after_kill_s:.1f} s after the kill"
    assert outcome.gate.verdict == "FAIL"
    reasons = " ".join(outcome.gate.reasons)
    assert "samples:" in reasons and "transport" in reasons, reasons
    records = [json.loads(line) for line in (tmp_path / "ev" / "records.jsonl").open()]
    by_task: dict[str, list[bool]] = {}
    for r in records:
        if r.get("kind") == "candidate":
            by_task.setdefault(r["task_id"], []).append(r["sample_error"] is None)
    assert any(not all(ok) for ok in by_task.values()), "no sample failed"
    # Only candidates that were sampled are judged: all pairs among the good ones, no more.
    expected_calls = sum(sum(ok) * (sum(ok) - 1) // 2 for ok in by_task.values())
    assert outcome.summary["selectors"]["all_pairs"]["cost"]["judge_calls"] == expected_calls

    server.stop()  # the group: SIGKILL leaves the engine processes behind
    server.start()
    samples = tmp_path / "cache" / "samples.jsonl"
    before = len(samples.read_text().splitlines())
    failed_tasks = sum(1 for ok in by_task.values() if not all(ok))
    from pairrl.eval.runner import run_eval

    rerun = run_eval(cfg, show_progress=False)
    assert rerun.gate.verdict == "PASS", rerun.gate.reasons
    assert rerun.gate.stages["samples"]["failed"] == 0, rerun.gate.stages
    # resumed: only the tasks whose samples failed were sampled again
    assert len(samples.read_text().splitlines()) - before == failed_tasks
    assert cached >= 2

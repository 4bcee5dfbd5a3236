"""Shared by the vLLM tests: whether vLLM must run, a vLLM server process, and a tiny judge
that has learnt the judge's output formats.

With ``PAIRRL_VLLM_REQUIRED=1`` (set by CI, whose setup installs vLLM's CPU build) a
missing vLLM fails the tests instead of skipping them, so a CI run cannot pass by
skipping them.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

REQUIRED = os.environ.get("PAIRRL_VLLM_REQUIRED") == "1"
SERVER_READY_S = 420  # eager start-up is ~60 s on 2 idle cores; the machine is shared


def require_vllm() -> None:
    """Skip (or, with PAIRRL_VLLM_REQUIRED=1, fail) unless vLLM is installed and imports."""
    from pairrl.rollout.samplers.vllm import installed_vllm

    build = installed_vllm()
    reason = None
    if build is None:
        reason = "vLLM is not installed (CPU: PAIRRL_VLLM=cpu bash .ci/setup.sh)"
    else:
        try:
            from pairrl.rollout.samplers.vllm import import_vllm

            import_vllm()  # the CPU build's environment defaults first, as pairrl does
        except Exception as err:  # the finding itself
            reason = f"{build.distribution} {build.version} is installed but does not import: {err}"
    if reason is None:
        return
    if REQUIRED:
        pytest.fail(f"PAIRRL_VLLM_REQUIRED=1 but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    """vLLM's OpenAI server on 127.0.0.1, started as pairrl starts it, in a session of its
    own (so that it can be stopped with its engine processes), one thread, eager."""

    def __init__(self, model: str | Path, log: Path, served: str = "judge", port: int = 0):
        self.model, self.log, self.served = str(model), log, served
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.startup_s: list[float] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> VLLMServer:
        from pairrl.rollout.serve import vllm_server_command, vllm_server_env

        command = vllm_server_command(
            self.model,
            port=self.port,
            served_model_name=self.served,
            eager=True,
            # the tests compare read-outs with transformers' float32 judge
            dtype="float32",
        )
        # nobind: the engine keeps the tests' OMP_NUM_THREADS=1 instead of pinning cores.
        env = vllm_server_env(dict(os.environ, VLLM_CPU_OMP_THREADS_BIND="nobind"))
        started = time.monotonic()
        with self.log.open("a") as handle:
            self.process = subprocess.Popen(
                command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
            )
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"vLLM server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass  # not listening yet
            if time.monotonic() - started > SERVER_READY_S:
                self.stop()
                pytest.fail(f"vLLM server not healthy after {SERVER_READY_S} s:\n{self.tail()}")
            time.sleep(0.5)
        self.startup_s.append(time.monotonic() - started)
        return self

    def signal_api(self, sig: int) -> None:
        """Signal the API server process only (as a crash or `kill` would)."""
        assert self.process is not None
        os.kill(self.process.pid, sig)

    def stop(self) -> None:
        """TERM, then KILL, the whole process group; reap the API process."""
        if self.process is None:
            return
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _group_alive(self.process.pid):
                self.process.poll()
                time.sleep(0.2)
            if not _group_alive(self.process.pid):
                break
        self.process.wait(timeout=10)
        self.process = None

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # zombies of the group count as gone
    out = subprocess.run(["ps", "-o", "stat=", "-g", str(pgid)], capture_output=True, text=True)
    return any(not s.startswith("Z") for s in out.stdout.split())


def judge_conversations(kit: Any, tasks: list[Any], count: int, seed: int = 0) -> list[list[dict]]:
    """Conversations in the benchmark's formats on ``tasks``: solution prompts answered
    with a python block of random words, pairwise prompts answered with
    ``<rating_A>a</rating_A>\n<rating_B>b</rating_B>`` and yes/no prompts with ``A`` or
    ``B``; the solutions judged look like what this model itself writes (code blocks,
    stray text, its own judge answers)."""
    rng = random.Random(seed)
    words = [
        "def",
        "return",
        "x",
        "y",
        "if",
        "else",
        "for",
        "in",
        "range",
        "sum",
        "list",
        "len",
        "print",
        "the",
        "a",
        "is",
        "not",
    ]

    def code() -> str:
        return (
            "```python\n" + " ".join(rng.choice(words) for _ in range(rng.randint(1, 16))) + "\n```"
        )

    def ratings() -> str:
        a, b = rng.randint(1, 10), rng.randint(1, 10)
        return f"<rating_A>{a}</rating_A>\n<rating_B>{b}</rating_B>"

    def shown() -> str:
        return rng.choice([code(), code(), ratings(), rng.choice("AB"), "(empty completion)"])

    out = []
    for i in range(count):
        task = tasks[i % len(tasks)]
        kind = i % 4
        if kind == 3:
            prompt, answer = kit.generation(task), code()
        elif kind == 2:
            prompt, answer = kit.pointwise_ab(task, shown()), rng.choice("AB")
        else:
            prompt, answer = kit.pairwise(task, shown(), shown()), ratings()
        out.append([*prompt, {"role": "assistant", "content": answer}])
    return out


def build_judge_model(
    out_dir: Path, kit: Any, tasks: list[Any], steps: int = 150, lr: float = 3e-3
) -> Path:
    """The tiny model (seed 0) after ``steps`` of supervised training on
    :func:`judge_conversations`, loss on the answers only, at full length (the benchmark's
    pairwise prompts are ~450 tokens). Plain torch: seconds, deterministic."""
    import math

    import torch

    from pairrl.tiny_model import build_tiny_model, load_tiny_model

    base = build_tiny_model(out_dir / "base", seed=0, num_layers=2)
    model, tokenizer = load_tiny_model(base, padding_side="right")
    rows = []
    for conversation in judge_conversations(kit, tasks, count=steps * 8):
        prompt = tokenizer.apply_chat_template(
            conversation[:-1], tokenize=False, add_generation_prompt=True
        )
        full = tokenizer.apply_chat_template(conversation, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        ids = tokenizer(full, add_special_tokens=False)["input_ids"]
        rows.append((ids, len(prompt_ids)))
    torch.manual_seed(0)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95))
    model.train()
    for step in range(steps):
        batch = rows[step * 8 : (step + 1) * 8]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (ids, start) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            labels[row, start : len(ids)] = torch.tensor(ids[start:])
            mask[row, : len(ids)] = 1
        for group in optimiser.param_groups:  # cosine decay
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    out = out_dir / "judge"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out

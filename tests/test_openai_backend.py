"""OpenAI-compatible HTTP sampler: against pairrl.rollout.serve on the tiny model, and failing cleanly.

The live server runs in a subprocess on a free port (bounded readiness wait, always killed).
Failure modes use small in-process HTTP servers: a closed port, a server that never
answers (read timeout), one that always answers 503 (bounded retries, counted) and one
that answers 200 with a body that is not the OpenAI schema.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pairrl.rollout.samplers import HFSampler, OpenAISampler, SamplerError, SamplingParams

CHAT = [{"role": "user", "content": "write a python function that returns the sum"}]
PROMPTS = [CHAT, "def add(x, y):", [*CHAT, {"role": "assistant", "content": "<rating_A>"}]]
SERVED = "tiny"
READY_TIMEOUT_S = 180  # the shared 2-core machine can take ~30 s to import torch + load


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path) -> Iterator[str]:
    port = _free_port()
    command = [sys.executable, "-m", "pairrl.rollout.serve", "--model", str(tiny_model_dir)]
    command += ["--port", str(port), "--served-model-name", SERVED, "--device", "cpu"]
    command += ["--dtype", "float32"]  # compared token for token with the local sampler
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                pytest.fail(f"rollout.serve exited with {process.returncode}:\n{output[-3000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass  # not listening yet: retry until the deadline below
            if time.monotonic() > deadline:
                pytest.fail(f"rollout.serve not ready after {READY_TIMEOUT_S} s")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def local(tiny_model_dir: Path) -> HFSampler:
    return HFSampler.from_pretrained(tiny_model_dir, device="cpu", dtype="float32")


def test_models_endpoint(server: str) -> None:
    body = httpx.get(f"{server}/models", timeout=5).json()
    assert [m["id"] for m in body["data"]] == [SERVED]


def test_http_matches_local_sampling(server: str, local: HFSampler) -> None:
    """Same seed, same model: the server's completions equal the in-process ones."""
    params = SamplingParams(temperature=1.0, max_tokens=6, seed=5, top_logprobs=3)
    with OpenAISampler(server, SERVED, max_retries=0) as remote:
        over_http = remote.generate(PROMPTS, 2, params)
    in_process = local.generate(PROMPTS, 2, params)
    for http_row, local_row in zip(over_http, in_process, strict=True):
        assert len(http_row) == 2
        for got, want in zip(http_row, local_row, strict=True):
            assert got.ok, got.error
            assert got.text == want.text
            assert got.token_ids == want.token_ids
            assert got.finish_reason == want.finish_reason
            assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)
            assert got.top_logprobs is not None and len(got.top_logprobs) == len(got.token_ids)


def test_http_stop_strings(server: str, local: HFSampler) -> None:
    (row,) = local.generate([CHAT], 1, SamplingParams(temperature=0, max_tokens=8))
    stop = local.tokenizer.decode([row[0].token_ids[2]], skip_special_tokens=False)
    params = SamplingParams(temperature=0, max_tokens=8, stop=(stop,))
    with OpenAISampler(server, SERVED, max_retries=0) as remote:
        ((c,),) = remote.generate([CHAT], 1, params)
    assert c.ok and c.finish_reason == "stop" and c.matched_stop == stop
    assert c.text == row[0].text[: row[0].text.index(stop)]


def test_http_next_token_logprobs_match_local(server: str, local: HFSampler) -> None:
    (exact,) = local.next_token_logprobs([PROMPTS[2]], ["1", "A"])
    # The server returns the top 20 next tokens; take candidates from them to compare.
    ((greedy,),) = local.generate(
        [PROMPTS[2]], 1, SamplingParams(temperature=0, max_tokens=1, top_logprobs=20)
    )
    top_tokens = list(greedy.top_logprobs[0])[:5]
    with OpenAISampler(server, SERVED, max_retries=0) as remote:
        (scores,) = remote.next_token_logprobs([PROMPTS[2]], [*top_tokens, "no such token"])
    assert isinstance(scores, dict) and isinstance(exact, dict)
    assert set(scores) == set(top_tokens)  # absent candidates are absent, not defaulted
    for token in top_tokens:
        assert scores[token] == pytest.approx(greedy.top_logprobs[0][token], abs=1e-4)


def test_serve_raw_endpoints(server: str) -> None:
    body = {"model": SERVED, "prompt": ["a", "b"], "n": 2, "max_tokens": 3, "logprobs": 2}
    body |= {"seed": 1, "return_token_ids": True}
    data = httpx.post(f"{server}/completions", json=body, timeout=60).json()
    assert sorted(c["index"] for c in data["choices"]) == [0, 1, 2, 3]
    for choice in data["choices"]:
        block = choice["logprobs"]
        assert len(block["tokens"]) == len(block["token_logprobs"]) == len(choice["token_ids"])
        assert all(1 <= len(top) <= 2 for top in block["top_logprobs"])
    # A final assistant message without continue_final_message is refused, not guessed.
    chat = {"model": SERVED, "messages": PROMPTS[2], "max_tokens": 2}
    response = httpx.post(f"{server}/chat/completions", json=chat, timeout=60)
    assert response.status_code == 400 and "continue_final_message" in response.text
    bad = httpx.post(f"{server}/completions", json={"model": SERVED, "prompt": "a", "top_p": 0})
    assert bad.status_code == 422  # request validation names the field
    assert "top_p" in bad.text


def test_http_400_is_reported_without_retry(server: str) -> None:
    with OpenAISampler(server, "not-served", max_retries=3, retry_backoff_s=5.0) as remote:
        start = time.monotonic()
        ((c,),) = remote.generate([CHAT], 1, SamplingParams(max_tokens=2))
        elapsed = time.monotonic() - start
    assert not c.ok and c.error.kind == "http_status"
    assert "400" in c.error.reason and "not-served" in c.error.reason
    assert elapsed < 5.0  # a 400 is final: no backoff sleep happened


def test_closed_port_fails_cleanly_and_quickly() -> None:
    port = _free_port()  # bound then released: nothing listens there
    remote = OpenAISampler(f"http://127.0.0.1:{port}/v1", "m", 1.0, 1.0, 2, retry_backoff_s=0.01)
    start = time.monotonic()
    rows = remote.generate([CHAT, "x"], 2, SamplingParams(max_tokens=2))
    scores = remote.next_token_logprobs([CHAT], ["A"])
    elapsed = time.monotonic() - start
    remote.close()
    for row in rows:
        assert len(row) == 2
        for c in row:
            assert not c.ok and c.text == "" and c.finish_reason is None
            assert c.error.kind == "transport"
            assert "after 3 attempt(s)" in c.error.reason
    assert isinstance(scores[0], SamplerError) and scores[0].kind == "transport"
    assert elapsed < 5.0


class _FakeServer:
    """A one-behaviour HTTP server in a thread; counts the requests it received."""

    def __init__(self, behaviour: str) -> None:
        self.requests = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None  # keep pytest output free of access logs

            def do_POST(self) -> None:
                owner.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if behaviour == "hang":
                    time.sleep(3)
                    return
                status, body = {
                    "503": (503, b'{"error": "overloaded"}'),
                    "malformed": (200, b'{"choices": "nope"}'),
                    "not_json": (200, b"<html>hi</html>"),
                    "bad_finish": (
                        200,
                        json.dumps(
                            {"choices": [{"index": 0, "text": "x", "finish_reason": "cut"}]}
                        ).encode(),
                    ),
                    # vLLM's answer to the requests it holds when it shuts down
                    "abort": (
                        200,
                        json.dumps(
                            {"choices": [{"index": 0, "text": "", "finish_reason": "abort"}]}
                        ).encode(),
                    ),
                }[behaviour]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    ("behaviour", "kind", "retries", "expected_requests"),
    [
        ("hang", "timeout", 1, 2),
        ("503", "http_status", 2, 3),
        ("malformed", "malformed_response", 2, 1),
        ("not_json", "malformed_response", 2, 1),
        ("bad_finish", "malformed_response", 2, 1),
        ("abort", "transport", 2, 3),
    ],
)
def test_server_failures_are_errors_with_reasons(
    behaviour: str, kind: str, retries: int, expected_requests: int
) -> None:
    fake = _FakeServer(behaviour)
    try:
        remote = OpenAISampler(fake.url, "m", 1.0, 0.3, retries, retry_backoff_s=0.01)
        ((c,),) = remote.generate(["prompt"], 1, SamplingParams(max_tokens=2))
        remote.close()
    finally:
        fake.close()
    assert not c.ok and c.error.kind == kind and c.error.reason
    assert fake.requests == expected_requests  # retries are bounded and only for retryable errors


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="timeout"):
        OpenAISampler("http://x/v1", "m", connect_timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAISampler("http://x/v1", "m", max_retries=-1)


def test_liveness_watchdog_stops_when_the_batch_is_done() -> None:
    """The watchdog ends on the batch's done flag alone, even when no cancellation reaches it
    (Python 3.11's asyncio.wait_for can swallow one that lands as its probe connects)."""
    import asyncio

    from pairrl.rollout.samplers.http_transport import Batch, HttpTransport

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)  # accepts every probe: the server looks alive throughout
    port = listener.getsockname()[1]
    transport = HttpTransport(
        f"http://127.0.0.1:{port}/v1",
        connect_timeout=1.0,
        read_timeout=1.0,
        max_retries=0,
        retry_backoff_s=0.0,
        max_concurrency=1,
        headers={},
        liveness_interval_s=0.02,
        liveness_failures=2,
        deadline_s=None,
    )

    async def scenario() -> bool:
        batch = Batch(client=None, slots=asyncio.Semaphore(1))  # type: ignore[arg-type]
        watchdog = asyncio.create_task(transport._watch(batch))
        await asyncio.sleep(0.1)  # a few probes succeed
        batch.done = True  # and no cancel
        await asyncio.wait_for(watchdog, 2.0)
        return not batch.down.is_set()

    try:
        assert asyncio.run(scenario())
    finally:
        listener.close()

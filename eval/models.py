"""Build samplers for the generator and the judge, with an identity string for cache keys.

The identity names *what* answers (a model folder's content fingerprint and the engine
that runs it, or an endpoint and its served model name), so a retrained checkpoint at the
same path gets new keys, and so do the HF and vLLM engines (their random streams differ)
and a dtype other than float32 (``hf-bfloat16:...``).

A local model runs on transformers (``engine="hf"``) or on an in-process vLLM engine
(``engine="vllm"``; vLLM's CPU build on machines without a GPU). vLLM engines are kept
for the life of the process, one per model folder: the judge that defaults to the
generator's model reuses the generator's engine instead of starting a second one, and a
second benchmark in the same process starts none.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pairrl.cpu_dtype import local_dtype
from pairrl.eval.config import HttpConfig
from pairrl.model_source import resolve_model_path

__all__ = ["make_sampler", "model_identity", "resolve_engine"]

ENGINES: tuple[str, ...] = ("hf", "vllm")
DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16")
_VLLM_ENGINES: dict[str, Any] = {}


def resolve_engine(engine: str | None, default: str = "hf") -> str:
    """The engine to use: ``engine`` when given (a judge's), else ``default`` (the
    candidates' engine, which the judge's defaults to)."""
    chosen = engine or default
    if chosen not in ENGINES:
        raise ValueError(f"engine {chosen!r} unknown; allowed: {list(ENGINES)}")
    return chosen


def model_identity(
    model: str | None,
    endpoint: str | None,
    served_model: str,
    engine: str = "hf",
    dtype: str = "auto",
) -> str:
    """`hf:<abs path>:<fingerprint>`, `vllm:<abs path>:<fingerprint>` or
    `http:<url>:<served model>`; a local engine in another dtype than float32 adds it to
    the engine (`hf-bfloat16:...`)."""
    if endpoint:
        return f"http:{endpoint.rstrip('/')}:{served_model}"
    if not model:
        raise ValueError("need a model path or an endpoint")
    prefix = resolve_engine(engine)
    resolved = local_dtype(dtype)
    if resolved != "float32":
        prefix = f"{prefix}-{resolved}"
    path = Path(resolve_model_path(model))  # a .gguf file: its converted folder
    if not path.exists():
        return f"{prefix}:{model}"  # a hub id: its name is all we know before loading
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if item.is_file() and item.suffix in {".json", ".safetensors", ".bin", ".jinja", ".txt"}:
            # the content, not the file times: a model saved again with the same weights
            # (a resumed run's final/) keeps its cached verdicts
            digest.update(f"{item.name}:{_file_digest(item)}".encode())
    return f"{prefix}:{path.resolve()}:{digest.hexdigest()[:16]}"


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """The file's sha256, read once per process for each (path, size, modification time)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 22):
                digest.update(chunk)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def make_sampler(
    model: str | None,
    endpoint: str | None,
    served_model: str,
    http: HttpConfig,
    batch_size: int,
    engine: str = "hf",
    dtype: str = "auto",
) -> Any:
    """An OpenAISampler for an endpoint, else an HFSampler or a (shared) VLLMSampler for a
    model folder, by ``engine``, in ``dtype`` (``auto``: :func:`local_dtype`)."""
    if endpoint:
        from pairrl.rollout.samplers import OpenAISampler

        return OpenAISampler(
            endpoint,
            served_model,
            connect_timeout=http.connect_timeout_s,
            read_timeout=http.read_timeout_s,
            max_retries=http.max_retries,
            retry_backoff_s=http.retry_backoff_s,
        )
    if not model:
        raise ValueError("need a model path or an endpoint")
    if resolve_engine(engine) == "vllm":
        return vllm_sampler(model, dtype)
    from pairrl.errors import InputError
    from pairrl.rollout.samplers import HFSampler

    try:
        return HFSampler.from_pretrained(model, batch_size=batch_size, dtype=local_dtype(dtype))
    except OSError as err:  # transformers: no such folder or hub id, or the hub unreachable
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"model {model}: cannot be loaded: {reason}") from None


def vllm_sampler(model: str, dtype: str = "auto") -> Any:
    """The process's vLLM engine for ``model`` in ``dtype`` (started on first use)."""
    key = model_identity(model, None, "", engine="vllm", dtype=dtype)
    if key not in _VLLM_ENGINES:
        from pairrl.rollout.samplers import VLLMSampler

        _VLLM_ENGINES.clear()  # one engine at a time: each holds its own KV cache
        _VLLM_ENGINES[key] = VLLMSampler(model, dtype=local_dtype(dtype))
    return _VLLM_ENGINES[key]

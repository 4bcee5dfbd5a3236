"""Build samplers for the generator and the judge, with an identity string for cache keys.

The identity names *what* answers (a model folder's content fingerprint, or an endpoint
and its served model name), so a retrained checkpoint at the same path gets new keys.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pairrl.eval.config import HttpConfig

__all__ = ["make_sampler", "model_identity"]


def model_identity(model: str | None, endpoint: str | None, served_model: str) -> str:
    """`hf:<abs path>:<fingerprint>` or `http:<url>:<served model>`."""
    if endpoint:
        return f"http:{endpoint.rstrip('/')}:{served_model}"
    if not model:
        raise ValueError("need a model path or an endpoint")
    path = Path(model)
    if not path.exists():
        return f"hf:{model}"  # a hub id: its name is all we know before loading
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if item.is_file() and item.suffix in {".json", ".safetensors", ".bin", ".jinja", ".txt"}:
            stat = item.stat()
            digest.update(f"{item.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
            if item.suffix == ".json" and stat.st_size < 1_000_000:
                digest.update(item.read_bytes())
    return f"hf:{path.resolve()}:{digest.hexdigest()[:16]}"


def make_sampler(
    model: str | None, endpoint: str | None, served_model: str, http: HttpConfig, batch_size: int
) -> Any:
    """An HFSampler for a model folder or an OpenAISampler for an endpoint."""
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
    from pairrl.rollout.samplers import HFSampler

    return HFSampler.from_pretrained(model, batch_size=batch_size)

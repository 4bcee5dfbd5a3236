"""``pairrl export``: a run's model as one plain HF folder that every loader reads.

A LoRA run's checkpoints and ``final/`` hold an adapter, which a vLLM server and
``pairrl eval --model`` do not load as a model. The export loads the adapter's base model,
merges the adapter into its weights (``W + alpha/r * B A``, in float32, then cast to the
chosen dtype) and writes ``config.json``, ``model.safetensors`` (sharded when large), the
generation config and the tokenizer. A full fine-tuning checkpoint is written the same way,
without its optimiser state, so the export is always a servable folder.

The source may be a run folder (its ``final/``, else its last ``checkpoint-N``), a
checkpoint, any adapter or model folder, or a ``.gguf`` file (its converted folder,
``pairrl.model_source``); ``--base`` may name a ``.gguf`` file too. A source whose files
do not load (a damaged or half-written checkpoint) is an :class:`~pairrl.errors.InputError`
naming the folder, and nothing is written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import typer

from pairrl.errors import InputError
from pairrl.model_source import resolve_model_path
from pairrl.train.lora import ADAPTER_CONFIG, is_adapter_dir, require_peft

__all__ = ["export_cmd", "export_model", "resolve_source"]

Dtype = Literal["auto", "float32", "bfloat16", "float16"]
EXPORT_RECORD = "pairrl_export.json"


def _is_model_dir(path: Path) -> bool:
    return is_adapter_dir(path) or (path / "config.json").is_file()


def resolve_source(source: str | Path) -> Path:
    """The model or adapter folder that ``source`` names: itself, a run's final model
    (else its newest intact checkpoint), or a ``.gguf`` file's converted folder."""
    from pairrl.train.checkpoints import last_intact_checkpoint

    path = Path(resolve_model_path(source))
    if not path.is_dir():
        raise InputError(f"{path}: no such folder (give a run folder, a checkpoint or a model)")
    if (path / "final").is_dir() and _is_model_dir(path / "final"):
        return path / "final"
    if _is_model_dir(path):
        return path
    last, passed_over = last_intact_checkpoint(path)
    if last is not None and _is_model_dir(last):
        for note in passed_over:
            print(f"[pairrl] passing over {note}", file=sys.stderr)
        return last
    damaged = f" (damaged: {'; '.join(passed_over)})" if passed_over else ""
    raise InputError(
        f"{path} holds no model: expected {ADAPTER_CONFIG} or config.json, a final/ folder "
        f"or intact checkpoint-N folders{damaged}"
    )


def _base_path(adapter: Path, base: str | None) -> str:
    """The adapter's base model: ``base`` when given, else the one its config names."""
    if base:
        return resolve_model_path(base)
    recorded = json.loads((adapter / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not recorded:
        raise InputError(f"{adapter / ADAPTER_CONFIG} names no base model: pass --base")
    looks_local = recorded.startswith((".", "/")) or Path(recorded).exists()
    if looks_local and not (Path(recorded) / "config.json").is_file():
        raise InputError(
            f"the adapter's base model {recorded!r} is not found from here: pass --base PATH"
        )
    return recorded


def _load(source: Path, base: str | None) -> tuple[Any, str]:
    """The model with any adapter merged in (float32), and where its tokenizer lives."""
    import torch
    from transformers import AutoModelForCausalLM

    if not is_adapter_dir(source):
        return AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32), str(source)
    peft = require_peft()
    base_path = _base_path(source, base)
    model = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32)
    merged = peft.PeftModel.from_pretrained(model, str(source)).merge_and_unload()
    tokenizer_from = str(source) if (source / "tokenizer_config.json").is_file() else base_path
    return merged, tokenizer_from


def _unloadable(folder: Path, err: Exception) -> str:
    """What a user reads when ``folder`` holds files that do not load as a model."""
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return (
        f"{folder} cannot be loaded as a model ({type(err).__name__}: {first_line}); its "
        "files are incomplete or damaged: give another checkpoint folder of the run (or a "
        "model folder) as the source"
    )


def _target_dtype(model: Any, dtype: Dtype) -> Any:
    import torch

    if dtype != "auto":
        return getattr(torch, dtype)
    stored = getattr(model.config, "dtype", None) or getattr(model.config, "torch_dtype", None)
    if isinstance(stored, str):
        stored = getattr(torch, stored, None)
    return stored if isinstance(stored, torch.dtype) else torch.float32


def export_model(
    source: str | Path, out: str | Path, *, base: str | None = None, dtype: Dtype = "auto"
) -> dict[str, Any]:
    """Write the merged (or plain) model of ``source`` to ``out``; returns what was done."""
    from safetensors import SafetensorError
    from transformers import AutoTokenizer

    from pairrl.config import ConfigError

    folder = resolve_source(source)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} is not empty: choose a new --out folder")
    try:  # everything is read before anything is written
        model, tokenizer_from = _load(folder, base)
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_from)
    except (InputError, ConfigError):  # already the user's message (no base, no peft)
        raise
    except (OSError, ValueError, SafetensorError) as err:
        raise InputError(_unloadable(folder, err)) from None
    target = _target_dtype(model, dtype)
    model = model.to(target)
    model.config.dtype = target
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    record = {
        "source": str(folder),
        "kind": "merged LoRA adapter" if is_adapter_dir(folder) else "full weights",
        "base": _base_path(folder, base) if is_adapter_dir(folder) else None,
        "dtype": str(target).removeprefix("torch."),
        "parameters": sum(p.numel() for p in model.parameters()),
        "out": str(out),
    }
    (out / EXPORT_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return record


def export_cmd(
    source: Path = typer.Argument(
        ...,
        metavar="RUN",
        help="A run folder (its final/, else its last checkpoint), a checkpoint, a model or "
        "a .gguf file.",
    ),
    out: Path = typer.Option(
        ..., "--out", metavar="DIR", help="New folder for the merged HF model."
    ),
    base: str | None = typer.Option(
        None, "--base", help="The adapter's base model (default: the one its config names)."
    ),
    dtype: str = typer.Option(
        "auto", "--dtype", help="auto (the base model's), float32, bfloat16 or float16."
    ),
) -> None:
    """Write a run's model as a plain HF folder (a LoRA adapter merged into its base).

    The folder loads wherever a model folder is taken: `pairrl eval --model`, `pairrl
    select --judge-model`, a vLLM server (python -m vllm.entrypoints.openai.api_server
    --model DIR, which every vLLM build has)."""
    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise typer.BadParameter("--dtype must be auto, float32, bfloat16 or float16")
    import transformers

    from pairrl.config import ConfigError

    transformers.utils.logging.disable_progress_bar()  # the JSON record is the output
    try:
        record = export_model(source, out, base=base, dtype=dtype)  # type: ignore[arg-type]
    except ConfigError as err:  # peft missing
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from None
    except InputError as err:  # a source that is no model, or does not load
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(record, indent=2))

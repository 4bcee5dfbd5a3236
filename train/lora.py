"""LoRA for the policy: the ``model.lora`` schema and its PEFT config.

With ``model.lora`` set, TRL wraps the policy in a PEFT model (``peft_config=`` of the
trainer): the base weights stay frozen and only the low-rank adapters train, so one
24-48 GB GPU holds a 4B model's RL run. Checkpoints then hold the adapter
(``adapter_model.safetensors`` + ``adapter_config.json``) with the optimiser state, and
``pairrl export`` merges an adapter into its base model for ``pairrl eval --model`` and
``vllm serve`` (``pairrl.train.export``). Without ``model.lora`` every weight trains.

``peft`` is an extra (``pip install -e '.[lora]'``); it is imported only when LoRA is used,
and its absence is a config error that says how to install it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from pairrl.config import ConfigError, PairrlModel

__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_WEIGHTS",
    "QWEN_PROJECTIONS",
    "LoraConfig",
    "check_targets",
    "describe_lora",
    "is_adapter_dir",
    "linear_module_names",
    "peft_config",
    "require_peft",
]

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
PEFT_INSTALL = "pip install -e '.[lora]' (or: pip install 'peft>=0.20,<0.22')"

# The linear layers of a Qwen3 / Llama-style decoder block: attention and MLP projections.
QWEN_PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class LoraConfig(PairrlModel):
    """Low-rank adapters on the policy's linear layers; only they train (PEFT LoRA)."""

    rank: int = Field(default=16, ge=1, le=1024, description="r: the adapters' inner dimension")
    alpha: float = Field(
        default=32.0,
        gt=0.0,
        le=4096.0,
        description="scaling numerator: the adapter's update is scaled by alpha / rank",
    )
    dropout: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="dropout on the adapters' input; 0 keeps the trainer's log-probs equal to "
        "the sampler's (dropout makes every RL step slightly off-policy)",
    )
    target_modules: list[str] | str = Field(
        default_factory=lambda: list(QWEN_PROJECTIONS),
        description="module names (suffixes) that get adapters, e.g. [q_proj, v_proj]; "
        "'all-linear': every linear layer but the output head",
    )

    @field_validator("target_modules")
    @classmethod
    def _names(cls, value: list[str] | str) -> list[str] | str:
        if isinstance(value, str):
            if value != "all-linear":
                raise ValueError(f"give a list of module names or 'all-linear', not {value!r}")
            return value
        if not value:
            raise ValueError("name at least one module (or 'all-linear')")
        bad = [name for name in value if not name.strip() or name != name.strip()]
        if bad:
            raise ValueError(f"module names must be non-empty, without spaces: {bad!r}")
        if len(set(value)) != len(value):
            raise ValueError(f"module names repeat: {value!r}")
        return value


def require_peft() -> Any:
    """The ``peft`` module, or a ConfigError that says how to install it."""
    try:
        import peft
    except ImportError as err:
        raise ConfigError(
            "model.lora", [f"LoRA needs the peft package, which is not installed: {PEFT_INSTALL}"]
        ) from err
    return peft


def peft_config(lora: LoraConfig | None) -> Any:
    """The ``peft.LoraConfig`` TRL's trainer takes, or None (full fine-tuning)."""
    if lora is None:
        return None
    peft = require_peft()
    targets = lora.target_modules
    return peft.LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=targets if isinstance(targets, str) else list(targets),
        bias="none",
        task_type="CAUSAL_LM",
    )


def describe_lora(lora: LoraConfig | None) -> str:
    """One line for the run plan: what trains."""
    if lora is None:
        return "all weights"
    targets = lora.target_modules
    names = targets if isinstance(targets, str) else ",".join(targets)
    return f"LoRA r={lora.rank} alpha={lora.alpha:g} dropout={lora.dropout:g} on {names}"


def is_adapter_dir(path: str | Path) -> bool:
    """Whether ``path`` holds a PEFT adapter (a LoRA checkpoint) rather than full weights."""
    return (Path(path) / ADAPTER_CONFIG).is_file()


def linear_module_names(model: Any) -> list[str]:
    """The distinct last names of a model's linear layers (what ``target_modules`` names)."""
    import torch

    names = {
        name.rsplit(".", 1)[-1]
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and name
    }
    return sorted(names)


def check_targets(model_path: str, lora: LoraConfig | None) -> None:
    """Fail with the model's linear layer names when a target module matches none of them.

    PEFT itself only fails when no target matches, so a misspelt name beside correct ones
    would silently train fewer layers. The model is built on the meta device (no weights
    are read), so the check costs nothing for a large model.
    """
    if lora is None or isinstance(lora.target_modules, str):
        return
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_path))
    modules = [name for name, _ in model.named_modules() if name]
    missing = [
        target
        for target in lora.target_modules
        if not any(name == target or name.endswith("." + target) for name in modules)
    ]
    if missing:
        raise ConfigError(
            "model.lora.target_modules",
            [
                f"{missing} name no module of {model_path}; its linear layers are: "
                f"{', '.join(linear_module_names(model))} (or use 'all-linear')"
            ],
        )

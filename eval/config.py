"""The benchmark's config schema (`kind: eval` YAML files under configs/).

Every field has a description and bounds; invalid files fail before anything loads, with
an error naming the field (see pairrl.config). The quick command line
(`pairrl eval --tasks ... --pool ... --k 5`) builds the same object.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pairrl.config import PairrlModel
from pairrl.eval.selectors import NO_JUDGE_SELECTORS
from pairrl.rollout.recipe import RecipeConfig
from pairrl.rollout.schedule_registry import TOURNAMENT_SELECTORS

__all__ = [
    "ALL_SELECTORS",
    "JUDGE_SELECTORS",
    "AgreementConfig",
    "CandidatesConfig",
    "EvalConfig",
    "ExecutorConfig",
    "GateConfig",
    "HttpConfig",
    "JudgeConfig",
    "SamplingConfig",
    "SelectiveConfig",
    "TasksConfig",
    "WandbConfig",
]

NO_JUDGE: tuple[str, ...] = NO_JUDGE_SELECTORS
# Run when named, never by default: the vote over final answers (identical programs for code).
EXTRA_NO_JUDGE: tuple[str, ...] = ("majority",)
# The pointwise judges (``pairrl.eval.judge_controls.POINTWISE_SELECTORS``), then every
# tournament selector of the schedule registry.
JUDGE_SELECTORS: tuple[str, ...] = (
    "pointwise_ab",
    "pointwise_think",
    "pointwise_rating",
    *TOURNAMENT_SELECTORS,
)
ALL_SELECTORS: tuple[str, ...] = NO_JUDGE + JUDGE_SELECTORS + EXTRA_NO_JUDGE
SelectorName = Literal[ALL_SELECTORS]  # type: ignore[valid-type]
"""What ``selectors`` accepts: the names in ``ALL_SELECTORS``."""


class TasksConfig(PairrlModel):
    """Which tasks to evaluate."""

    path: str | None = Field(
        None,
        description="Task file (MBPP/MBPP+/HumanEval/HumanEval+, stdin/stdout or math JSONL), "
        "a parquet file, a dataset folder (save_to_disk) or a datasets hub id (read from the "
        "local cache when offline); may be omitted when the pool carries its own tests",
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="Column mapping {task field: column}, e.g. {problem: question} for "
        "GSM8K (math rows need problem or question, and answer)",
    )
    subset: str | None = Field(None, description="Dataset config of a hub id (e.g. main)")
    dataset_split: str = Field(
        "test", description="Dataset split of a hub id or a DatasetDict folder"
    )
    limit: int | None = Field(None, ge=1, description="Evaluate only the first N tasks")
    split: Literal["all", "mbpp_test"] = Field(
        "all", description="mbpp_test keeps MBPP task ids 11..510 (the test split)"
    )


class SamplingConfig(PairrlModel):
    """Decoding settings for sampling candidates."""

    temperature: float = Field(0.8, ge=0.0, le=10.0, description="Sampling temperature")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="Nucleus sampling mass")
    max_tokens: int = Field(512, ge=1, le=65536, description="Tokens per candidate")
    seed: int = Field(0, ge=0, description="Sampling seed (part of the cache key)")


class HttpConfig(PairrlModel):
    """Transport limits for OpenAI-compatible endpoints (retries are explicit and bounded)."""

    connect_timeout_s: float = Field(5.0, gt=0.0, le=600.0, description="TCP connect timeout")
    read_timeout_s: float = Field(600.0, gt=0.0, le=86400.0, description="Response read timeout")
    max_retries: int = Field(1, ge=0, le=10, description="Retries after a failed request")
    retry_backoff_s: float = Field(0.5, ge=0.0, le=60.0, description="First retry delay")


class CandidatesConfig(PairrlModel):
    """Where candidates come from: a pool file, a model path, or an endpoint."""

    source: Literal["pool", "model", "endpoint"] = Field(
        "pool",
        description="pool: read a file; model: sample from a local model; "
        "endpoint: sample from an OpenAI-compatible server",
    )
    pool: str | None = Field(None, description="Pool file (source=pool)")
    model: str | None = Field(None, description="Model folder, hub id or .gguf file (source=model)")
    endpoint: str | None = Field(None, description="Base URL, e.g. http://host:8000/v1")
    served_model: str = Field("default", description="Model name sent to the endpoint")
    k: int = Field(5, ge=1, le=1000, description="Candidates per task (first k of a pool)")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    batch_size: int = Field(8, ge=1, le=4096, description="Prompts per generation call")
    engine: Literal["hf", "vllm"] = Field(
        "hf",
        description="Local model engine (source=model): hf (transformers generate) or vllm "
        "(an in-process vLLM engine; the vLLM CPU build on machines without a GPU)",
    )

    @model_validator(mode="after")
    def _source_has_location(self) -> CandidatesConfig:
        needed = {"pool": self.pool, "model": self.model, "endpoint": self.endpoint}[self.source]
        if not needed:
            raise ValueError(f"candidates.source={self.source!r} needs candidates.{self.source}")
        return self


class JudgeConfig(PairrlModel):
    """The judge model used by the judge selectors."""

    model: str | None = Field(
        None, description="Judge model folder, hub id or .gguf file (default: the generator)"
    )
    endpoint: str | None = Field(None, description="Judge endpoint (OpenAI-compatible base URL)")
    served_model: str = Field("default", description="Model name sent to the judge endpoint")
    engine: Literal["hf", "vllm"] | None = Field(
        None, description="Local judge model engine; default: the candidates' engine"
    )
    readout: Literal["sampled", "expected", "forced"] = Field(
        "sampled",
        description="Pairwise ratings and pointwise_rating's rating: parse the tags "
        "(sampled), expectation over 1..10 at the tags the judge wrote (expected), or no "
        "reasoning: tags forced at once and read as expectations (forced)",
    )
    max_tokens: int = Field(
        512,
        ge=1,
        le=65536,
        description="Judge completion tokens (the paper's judges reason at length: thousands)",
    )
    temperature: float = Field(
        0.0,
        ge=0.0,
        le=10.0,
        description="Judge temperature; 0 is greedy (repeatable), the paper samples at 0.6",
    )
    top_p: float = Field(
        1.0, gt=0.0, le=1.0, description="Judge nucleus sampling mass; the paper's is 0.95"
    )
    min_rating_mass: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Log-probability read-outs (expected, forced, pointwise A/B) fail when the "
        "rating (or A/B) tokens hold less next-token mass than this",
    )
    thinking_budget: int = Field(
        256, ge=1, le=65536, description="Thinking tokens for pointwise_think"
    )
    seed: int = Field(0, ge=0, description="Tournament and judge seed")
    controls: bool = Field(
        True,
        description="The judge-quality controls: a foreign solution per task (must be "
        "rejected) and an A/B swap of each task's first comparison (extra judge calls)",
    )
    fixed_pairs: bool = Field(
        False,
        description="Also judge the disjoint pairs (0,1), (2,3), ... of every task once: a "
        "fixed set of items, the same for every judge given the same pool",
    )
    batch_size: int = Field(16, ge=1, le=4096, description="Judge prompts per call")
    http: HttpConfig = Field(default_factory=HttpConfig)


class ExecutorConfig(PairrlModel):
    """Labelling by execution."""

    timeout_s: float = Field(3.0, gt=0.0, le=600.0, description="Per-candidate time limit")
    workers: int | None = Field(None, ge=1, le=512, description="Executor workers")
    isolation: Literal["bwrap", "process"] = Field(
        "bwrap", description="Sandbox; 'process' gives up namespace isolation"
    )
    chunk: int = Field(256, ge=1, le=100000, description="Candidates per cached batch")
    time_limit: Literal["fixed", "reference"] = Field(
        "fixed",
        description="fixed: timeout_s per candidate (per input for EvalPlus tasks); "
        "reference: EvalPlus's rule, max(limit_floor_s, limit_factor x the reference "
        "solution's time), for tasks that have one",
    )
    limit_factor: float = Field(4.0, gt=0.0, le=100.0, description="Reference mode: factor")
    limit_floor_s: float = Field(1.0, gt=0.0, le=600.0, description="Reference mode: floor")


class AgreementConfig(PairrlModel):
    """Execution agreement selector."""

    inputs: Literal["prompt", "tests", "prompt_or_tests"] = Field(
        "prompt_or_tests",
        description="Where call inputs come from (only inputs are read, never outputs)",
    )
    max_inputs: int = Field(10, ge=1, le=1000, description="Inputs per task")


class SelectiveConfig(PairrlModel):
    """Selective verification: skip judging where the candidates already agree."""

    enabled: bool = Field(True, description="Report selectors with the skip gate too")
    pointwise_confidence: float = Field(
        0.9,
        ge=0.5,
        le=1.0,
        description="Skip when every pointwise P(correct) is this far on one side (>= c or <= 1-c)",
    )


class GateConfig(PairrlModel):
    """The integrity gate."""

    tolerance: float = Field(
        0.0, ge=0.0, le=1.0, description="Largest share of failed labels/judge calls allowed"
    )
    strict: bool = Field(False, description="Exit non-zero when the verdict is FAIL")


class WandbConfig(PairrlModel):
    """Weights & Biases logging."""

    enabled: bool = Field(False, description="Log tables and images to W&B")
    project: str = Field("pairrl-eval", description="W&B project")
    name: str | None = Field(None, description="Run name")
    mode: Literal["online", "offline"] = Field("offline", description="W&B mode")


class EvalConfig(PairrlModel):
    """Root schema of an eval config."""

    kind: Literal["eval"] = Field("eval", description="Config kind marker")
    out_dir: str = Field("runs/eval", description="Output folder (reports, records)")
    cache_dir: str | None = Field(None, description="Stage cache (default: OUT_DIR/cache)")
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    recipe: RecipeConfig | None = Field(
        None,
        description="a recipe (pairrl.rollout.recipe): its held-out tasks (when tasks.path "
        "is not given) and its prompt kit for sampling and judging; default: the paper's prompts",
    )
    candidates: CandidatesConfig
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    selectors: list[SelectorName] = Field(
        default_factory=lambda: list(NO_JUDGE), min_length=1, description="Selectors to run"
    )
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    agreement: AgreementConfig = Field(default_factory=AgreementConfig)
    selective: SelectiveConfig = Field(default_factory=SelectiveConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    wandb: WandbConfig = Field(default_factory=WandbConfig)
    bootstrap: int = Field(2000, ge=100, le=100000, description="Bootstrap replicates")
    seed: int = Field(0, ge=0, description="Bootstrap seed")
    shard: str | None = Field(
        None, pattern=r"^\d+/\d+$", description="i/n: evaluate the i-th of n task shards"
    )

    @model_validator(mode="after")
    def _check(self) -> EvalConfig:
        if self.candidates.source == "pool" and self.tasks.path is None:
            pass  # allowed when the pool carries its own tests; checked on load
        elif self.tasks.path is None and self.recipe is None:
            raise ValueError(
                "tasks.path is required when sampling candidates (or name a recipe: its "
                "held-out tasks)"
            )
        if self.shard is not None:
            i, n = (int(x) for x in self.shard.split("/"))
            if not 0 <= i < n:
                raise ValueError(f"shard {self.shard!r}: need 0 <= i < n")
        return self

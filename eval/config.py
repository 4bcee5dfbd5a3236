"""The benchmark's config schema (`kind: eval` YAML files under configs/).

Every field has a description and bounds; invalid files fail before anything loads, with
an error naming the field (see pairrl.config). The quick command line
(`pairrl eval --tasks ... --pool ... --k 5`) builds the same object.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from pairrl.config import PairrlModel
from pairrl.eval.rsa import RsaConfig, check_rsa
from pairrl.eval.selectors import NO_JUDGE_SELECTORS
from pairrl.eval.thinking import ThinkingConfig, check_thinking
from pairrl.rewards.config import ExecutorConfig
from pairrl.rollout.config import SamplingConfig
from pairrl.rollout.recipe import RecipeConfig
from pairrl.rollout.schedule_registry import TOURNAMENT_SELECTORS

__all__ = [
    "ALL_SELECTORS",
    "JUDGE_SELECTORS",
    "AgreementConfig",
    "CandidatesConfig",
    "CostConfig",
    "DifficultyConfig",
    "EvalConfig",
    "ExecutorConfig",
    "GateConfig",
    "HttpConfig",
    "JudgeConfig",
    "PreflightConfig",
    "RemoteConfig",
    "RsaConfig",
    "SamplingConfig",
    "SelectiveConfig",
    "TasksConfig",
    "ThinkingConfig",
    "WandbConfig",
    "check_endpoint_url",
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


def check_endpoint_url(url: str | None) -> str | None:
    """``url`` when it is an http(s) base URL with a host (or None); else ValueError, so that
    a mistyped endpoint is refused when the config is read, not after sampling failed.

    >>> check_endpoint_url("http://127.0.0.1:8000/v1")
    'http://127.0.0.1:8000/v1'
    >>> check_endpoint_url("notaurl")
    Traceback (most recent call last):
    ...
    ValueError: not an http:// or https:// URL with a host; expected a base URL such as http://127.0.0.1:8000/v1
    """
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "not an http:// or https:// URL with a host; expected a base URL such as "
            "http://127.0.0.1:8000/v1"
        )
    return url


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
    seed: int = Field(0, ge=0, description="Sampling seed (part of the cache key)")
    http: HttpConfig = Field(default_factory=HttpConfig)
    batch_size: int = Field(8, ge=1, le=4096, description="Prompts per generation call")
    engine: Literal["hf", "vllm"] = Field(
        "hf",
        description="Local model engine (source=model): hf (transformers generate) or vllm "
        "(an in-process vLLM engine; the vLLM CPU build on machines without a GPU)",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="Local model dtype (source=model); auto on CPU: bfloat16 where the CPU "
        "computes it natively (AMX, AVX512_BF16), else float32 (pairrl doctor shows which); "
        "on a GPU, the engine's own choice",
    )

    _endpoint_is_url = field_validator("endpoint")(check_endpoint_url)

    def sampling_key(self) -> dict[str, float | int]:
        """The decoding settings and seed, as the sample cache keys hold them."""
        return {**self.sampling.model_dump(), "seed": self.seed}

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
    dtype: Literal["auto", "float32", "bfloat16", "float16"] | None = Field(
        None, description="Local judge model dtype; default: the candidates' dtype"
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
        256,
        ge=1,
        le=65536,
        description="Thinking tokens for pointwise_think, and for the candidates sampled with "
        "thinking when thinking.enabled (one budget: the comparison is at equal thinking)",
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

    _endpoint_is_url = field_validator("endpoint")(check_endpoint_url)


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
    sweep: list[Annotated[float, Field(ge=0.5, le=1.0)]] = Field(
        default_factory=lambda: [0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0],
        description="pointwise_confidence values the report replays the skip rule at, from "
        "the cached judgements (no new judge calls): an accuracy-against-cost curve",
    )


class DifficultyConfig(PairrlModel):
    """Task difficulty by the pool's pass rate: the share of a task's k candidates that pass."""

    easy_at: float = Field(
        2 / 3, ge=0.0, le=1.0, description="Easy: a pass rate of at least this (default 2/3)"
    )
    hard_at: float = Field(
        1 / 3,
        ge=0.0,
        le=1.0,
        description="Hard: a pass rate of at most this (default 1/3); medium: between the two",
    )

    @model_validator(mode="after")
    def _hard_below_easy(self) -> DifficultyConfig:
        if self.hard_at >= self.easy_at:
            raise ValueError(
                f"need hard_at < easy_at, got hard_at={self.hard_at} easy_at={self.easy_at}"
            )
        return self


class CostConfig(PairrlModel):
    """Token prices of the full cost (generation and judge tokens), per million tokens.

    The defaults, 1 each, are relative units with no price list behind them: the cost is then
    the token count in millions. Cached input is prompt tokens a prefix cache would reuse:
    a task's k samples share one prompt, so the first sample's prompt is input and the
    other k-1 are cached input. The judge's shared prefix is not measured, so judge prompts
    are priced as uncached input."""

    input_per_mtok: float = Field(
        1.0, ge=0.0, description="Price of a million prompt tokens (default 1: relative units)"
    )
    cached_input_per_mtok: float = Field(
        1.0,
        ge=0.0,
        description="Price of a million prompt tokens a prefix cache reuses (default 1: "
        "relative units, no discount)",
    )
    output_per_mtok: float = Field(
        1.0,
        ge=0.0,
        description="Price of a million generated tokens (default 1: relative units)",
    )


class GateConfig(PairrlModel):
    """The integrity gate."""

    tolerance: float = Field(
        0.0, ge=0.0, le=1.0, description="Largest share of failed labels/judge calls allowed"
    )
    strict: bool = Field(
        False,
        description="A FAIL always exits non-zero; strict also exits non-zero when the gate "
        "passed with failed entries that the tolerance let through",
    )


class PreflightConfig(PairrlModel):
    """A few real calls before the run spends its budget (never in `pairrl eval gate`)."""

    enabled: bool = Field(
        True,
        description="Before sampling and judging the budget, sample the first task that needs "
        "it and make judge_calls calls of each judge read-out the selectors use (through the "
        "cache: nothing is spent twice); when every call of one of these checks fails, stop "
        "with the reasons and what to change (verdict FAIL, exit 1, no score)",
    )
    judge_calls: int = Field(
        2,
        ge=1,
        le=16,
        description="Preflight judge calls per read-out (pairwise, pointwise A/B, A/B after "
        "thinking, pointwise rating), on the first task's candidates",
    )


# Twelve hours: long enough for a large run on a healthy server (longer ones shard with
# --shard), short of the days a hung server could hold a run, each batch waiting
# read_timeout_s x (max_retries + 1). Reaching it loses nothing: what came back is cached
# and the calls it stopped are failures that a rerun retries.
REMOTE_DEADLINE_S = 12 * 3600.0


class RemoteConfig(PairrlModel):
    """The run's remote calls (the candidates' and the judge's endpoints) all together."""

    deadline_s: float | None = Field(
        REMOTE_DEADLINE_S,
        gt=0.0,
        le=30 * 86400.0,
        description="Total time for the run's remote calls (default 12 h); after it, calls in "
        "flight are abandoned and the rest are not sent: failed calls, counted by the gate and "
        "retried by a rerun; null: no deadline",
    )


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
        description="a recipe (pairrl.rollout.recipe): its held-out tasks (when neither "
        "tasks.path nor a pool that carries its own tests gives them) and its prompt kit for "
        "sampling and judging; default: the paper's prompts",
    )
    candidates: CandidatesConfig
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    selectors: list[SelectorName] = Field(
        default_factory=lambda: list(NO_JUDGE), min_length=1, description="Selectors to run"
    )
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    label_chunk: int = Field(
        256,
        ge=1,
        le=100000,
        description="Candidates labelled per cached batch (a stop "
        "loses at most one batch of labels)",
    )
    agreement: AgreementConfig = Field(default_factory=AgreementConfig)
    selective: SelectiveConfig = Field(default_factory=SelectiveConfig)
    difficulty: DifficultyConfig = Field(default_factory=DifficultyConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    preflight: PreflightConfig = Field(default_factory=PreflightConfig)
    remote: RemoteConfig = Field(default_factory=RemoteConfig)
    wandb: WandbConfig = Field(default_factory=WandbConfig)
    rsa: RsaConfig = Field(default_factory=RsaConfig)
    thinking: ThinkingConfig = Field(default_factory=ThinkingConfig)
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
        check_rsa(self.rsa, self.candidates.source, self.candidates.k)
        check_thinking(self.thinking, self.candidates.source, self.selectors)
        return self

    @field_validator("shard")
    @classmethod
    def _shard_in_range(cls, shard: str | None) -> str | None:
        # a field validator, so that the error names the field rather than the whole config
        if shard is not None:
            i, n = (int(x) for x in shard.split("/"))
            if not 0 <= i < n:
                raise ValueError(f"need 0 <= i < n (shards are counted from 0), got {shard}")
        return shard

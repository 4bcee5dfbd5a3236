"""``pairrl select``: rank one problem's candidates with a model as pairwise judge, or
rate each once on 1-10 (``--method pointwise_rating``, ``pairrl.rollout.select_pointwise``).

Candidates come from a JSONL file (one per row: a JSON string, or an object with one of
``text`` / ``completion`` / ``solution`` / ``code`` and an optional ``id``) and/or from
files given as arguments (one candidate per file). The judge is a local model
(``--judge-model``, HF transformers) or an OpenAI-compatible server (``--endpoint``).
The judge model runs on transformers or, with ``--engine vllm``, on an in-process vLLM
engine. ``--schedule`` takes the names of ``pairrl.rollout.schedule_registry.SCHEDULES``
(default ``swiss``, budget 2N comparisons). Read-outs: ``sampled`` (parse the rating tags
the judge writes), ``expected`` (expectation over the ten rating tokens where it writes
them) and ``forced`` (no reasoning: the answer is forced to open with ``<rating_A>`` and
both ratings are read as expectations, B's after A's rounded rating). The output is the
ranking with mu and mean rating, the comparisons made, and every failed comparison with
its reason. With no successful comparison there is no winner and no ranking: the command
counts the failures by reason and exits with status 1, never printing a table made of
failures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from pairrl.rollout import select_pointwise as pointwise
from pairrl.rollout.schedule_registry import SCHEDULES, get_schedule
from pairrl.rollout.select_pointwise import JudgeSettings

SELECT_READOUTS: tuple[str, ...] = ("sampled", "expected", "forced")
ENGINES: tuple[str, ...] = ("hf", "vllm")
DEFAULT_BUDGET_PER_CANDIDATE = 2
"""Comparisons per candidate when ``--budget`` is not given."""
SCHEDULE_METAVAR = "[" + "|".join(SCHEDULES) + "]"
"""``--schedule``'s choices as ``--help`` shows them: the registry's names."""
_TEXT_KEYS = ("text", "completion", "solution", "code")


@dataclass(frozen=True)
class Candidate:
    """One candidate solution and where it came from."""

    candidate_id: str
    text: str


class CandidateError(ValueError):
    """A candidate source that cannot be read; the message names the file and row."""


@dataclass
class ForcedPairwiseJudge:
    """The no-reasoning pairwise read-out, with :class:`~pairrl.rollout.judges.PairwiseJudge`'s
    ``judge`` interface: the answer is forced to open with ``<rating_A>`` and A's rating is
    the expectation over the ten rating tokens there; B's is read after
    ``<rating_A>k</rating_A>\n<rating_B>`` with k A's rounded rating (as the judge would
    have written it). Deterministic: two scoring calls per batch, no sampling."""

    sampler: Any
    domain: str = "code"
    sampling: Any = None  # SamplingParams; only its seed is read (by TournamentJudge)
    min_rating_mass: float = 0.5

    def judge(self, items: list[tuple[str, str, str]], *, seed: int | None = None) -> list[Any]:
        """(problem, A, B) triples -> PairVerdict or JudgeFailure, in order."""
        from pairrl.rollout.judges import forced_pair_verdicts
        from pairrl.rollout.prompts import pairwise_messages

        prompts = [pairwise_messages(p, a, b, self.domain) for p, a, b in items]  # type: ignore[arg-type]
        return forced_pair_verdicts(self.sampler, prompts, self.min_rating_mass)


def load_candidates(jsonl: Path | None, files: list[Path]) -> list[Candidate]:
    """Candidates from a JSONL file (in row order) followed by the given files."""
    candidates: list[Candidate] = []
    if jsonl is not None:
        try:
            lines = jsonl.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CandidateError(f"{jsonl}: cannot read ({exc})") from exc
        for row, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CandidateError(f"{jsonl} row {row}: not JSON ({exc.msg})") from exc
            candidates.append(_candidate_from_row(value, jsonl, row))
    for path in files:
        try:
            candidates.append(Candidate(str(path), path.read_text(encoding="utf-8")))
        except OSError as exc:
            raise CandidateError(f"{path}: cannot read ({exc})") from exc
    return candidates


def _candidate_from_row(value: Any, path: Path, row: int) -> Candidate:
    if isinstance(value, str):
        return Candidate(f"{path.name}:{row}", value)
    if isinstance(value, dict):
        keys = [k for k in _TEXT_KEYS if isinstance(value.get(k), str)]
        if keys:
            return Candidate(str(value.get("id", f"{path.name}:{row}")), value[keys[0]])
    raise CandidateError(
        f"{path} row {row}: expected a JSON string or an object with one of "
        f"{list(_TEXT_KEYS)} as a string"
    )


def run_selection(
    judge: Any,
    problem: str,
    candidates: list[Candidate],
    *,
    schedule: str,
    budget: int | None,
    domain: str,
    seed: int,
) -> tuple[Any, Any]:
    """Run the schedule called ``schedule`` (a key of ``SCHEDULES``; default budget 2N);
    returns (TournamentResult, TournamentJudge with failure reasons)."""
    from pairrl.rollout.judges import TournamentJudge
    from pairrl.rollout.prompts import solution_for_judge

    run = get_schedule(schedule)
    shown = [solution_for_judge(c.text, domain) for c in candidates]  # type: ignore[arg-type]
    judge_pairs = TournamentJudge(judge, problem, shown)
    n = len(candidates)
    if budget is None:
        budget = DEFAULT_BUDGET_PER_CANDIDATE * n
    result = run(n, judge_pairs, budget, seed=seed)
    return result, judge_pairs


def _fmt(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"  # nan (no evidence) shows as '-'


def _print_report(result: Any, judge_pairs: Any, candidates: list[Candidate]) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    if result.num_judged == 0 and len(candidates) > 1:
        _print_all_failed(console, result, judge_pairs)
        return
    _print_table(console, result, candidates)
    console.print(
        f"comparisons sent {result.num_comparisons}, judged {result.num_judged}, "
        f"failed {result.num_failed}, rounds {result.rounds}, judge calls {judge_pairs.calls}"
    )
    for comparison in result.comparisons:
        ratings = "FAILED" if comparison.ratings is None else f"{comparison.ratings}"
        console.print(
            f"  round {comparison.round_index}: {comparison.a} vs {comparison.b} -> {ratings}"
        )
    for (a, b), reason in judge_pairs.failures:
        console.print(f"[red]failure[/] {a} vs {b}: {escape(reason)}")
    if result.winner is None:
        console.print(f"[red]no winner[/]: {escape(str(result.no_winner_reason))}")
    else:
        winner = candidates[result.winner].candidate_id
        console.print(f"[green]winner[/]: [{result.winner}] {escape(winner)}")


def _print_all_failed(console: Any, result: Any, judge_pairs: Any) -> None:
    """Every comparison failed: the counts and reasons, and no ranking (there is none)."""
    from rich.markup import escape

    console.print(
        f"comparisons sent {result.num_comparisons}, judged 0, failed {result.num_failed}, "
        f"rounds {result.rounds}, judge calls {judge_pairs.calls}"
    )
    for (a, b), reason in judge_pairs.failures:
        console.print(f"[red]failure[/] {a} vs {b}: {escape(reason)}")
    for reason, count in pointwise.failure_counts([reason for _, reason in judge_pairs.failures]):
        console.print(f"  {count} x {escape(reason)}")
    console.print(
        f"[red]no winner[/]: every comparison failed ({result.num_failed} of "
        f"{result.num_comparisons}); no ranking to show"
    )


def _print_table(console: Any, result: Any, candidates: list[Candidate]) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"pairrl select: {result.schedule}, budget {result.budget}")
    for column in ("rank", "candidate", "mu", "mean rating", "judged"):
        table.add_column(column)
    for rank, index in enumerate(result.ranking, start=1):
        table.add_row(
            str(rank),
            escape(f"[{index}] {candidates[index].candidate_id}"),
            _fmt(result.mu[index]),
            _fmt(result.mean_rating[index]),
            str(result.degree[index]),
        )
    console.print(table)


def _print_usage(sampler: Any) -> None:
    """The judge's token usage as its engine measured it (vLLM, servers returning usage)."""
    log = getattr(sampler, "usage_log", None)
    if log is None or not log.requests:
        typer.echo("judge tokens: not measured (this engine reports no usage)")
        return
    typer.echo(
        f"judge tokens (measured by the engine): prompt {log.prompt_tokens}, "
        f"completion {log.completion_tokens}, over {log.requests} requests"
    )


def _endpoint_model(base_url: str, timeout: float) -> str:
    import httpx

    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout)
        response.raise_for_status()
        return str(response.json()["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise typer.BadParameter(
            f"cannot list models at {base_url}/models ({type(exc).__name__}: {exc}); "
            "pass --served-model",
            param_hint="--endpoint",
        ) from exc


_HELP = {
    "candidates": "JSONL of candidates (string, or object with text/completion/solution/code "
    "and id).",
    "endpoint": "OpenAI-compatible base URL, e.g. http://host:8000/v1.",
    "served_model": "Model name at --endpoint (default: its first).",
    "method": "pairwise (a tournament, --schedule) or pointwise_rating (the paper's "
    "pointwise baseline: each candidate rated once on 1-10, the highest rating wins).",
    "schedule": "Tournament schedule: swiss is the paper's, rated_halving the project's default.",
    "readout": "sampled (parse tags), expected (rating-token probabilities where the judge "
    "writes them) or forced (no reasoning: tags forced at once, read as expectations).",
    "think_tokens": "Thinking budget, then </think> is forced.",
    "min_rating_mass": "expected/forced: fail a rating whose tokens hold less next-token mass "
    "than this.",
    "temperature": "The judge's sampling temperature.",
    "top_p": "The judge's nucleus sampling: the top-p mass it samples from.",
    "connect_timeout": "With --endpoint: seconds to wait for a connection to the server.",
    "read_timeout": "With --endpoint: seconds a request waits for the server's data, then fails.",
    "max_retries": "With --endpoint: retries of a request whose failure can pass (transport "
    "error, timeout, HTTP 408, 429, 5xx).",
}


def schedule_name(value: str) -> str:
    """``--schedule``'s value, a key of ``SCHEDULES``; any other value is a usage error
    naming the allowed names."""
    if value not in SCHEDULES:
        raise typer.BadParameter(f"{value!r}; allowed: {', '.join(SCHEDULES)}")
    return value


def select_cmd(
    ctx: typer.Context,
    candidate_files: list[Path] = typer.Argument(
        None, metavar="FILE", help="Files, one candidate each."
    ),
    candidates_jsonl: Path | None = typer.Option(None, "--candidates", help=_HELP["candidates"]),
    problem: str | None = typer.Option(None, help="The problem statement."),
    problem_file: Path | None = typer.Option(None, help="File holding the problem statement."),
    judge_model: str | None = typer.Option(
        None, help="Local HF model folder or .gguf file used as judge."
    ),
    endpoint: str | None = typer.Option(None, help=_HELP["endpoint"]),
    served_model: str | None = typer.Option(None, help=_HELP["served_model"]),
    method: str = typer.Option("pairwise", help=_HELP["method"]),
    schedule: str = typer.Option(
        "swiss", parser=schedule_name, metavar=SCHEDULE_METAVAR, help=_HELP["schedule"]
    ),
    budget: int | None = typer.Option(None, min=0, help="Comparisons allowed (default 2N)."),
    domain: str = typer.Option("code", help="code or math."),
    readout: str = typer.Option("sampled", help=_HELP["readout"]),
    engine: str = typer.Option("hf", help="Engine for --judge-model: hf or vllm."),
    temperature: float = typer.Option(0.6, min=0.0, max=10.0, help=_HELP["temperature"]),
    top_p: float = typer.Option(0.95, min=0.0, max=1.0, help=_HELP["top_p"]),
    max_tokens: int = typer.Option(4096, min=1, help="Judge tokens per comparison or rating."),
    think_tokens: int | None = typer.Option(None, min=1, help=_HELP["think_tokens"]),
    min_rating_mass: float = typer.Option(0.5, min=0.0, max=1.0, help=_HELP["min_rating_mass"]),
    seed: int = typer.Option(0, help="Seed for the schedule and the judge's sampling."),
    connect_timeout: float = typer.Option(5.0, min=0.001, help=_HELP["connect_timeout"]),
    read_timeout: float = typer.Option(600.0, min=0.001, help=_HELP["read_timeout"]),
    max_retries: int = typer.Option(2, min=0, help=_HELP["max_retries"]),
    device: str | None = typer.Option(None, help="cpu or cuda for --judge-model."),
) -> None:
    """Rank candidates for one problem with a pairwise judge (Swiss or another schedule)
    or by the pointwise 1-10 rating."""
    _check_arguments(judge_model, endpoint, problem, problem_file, domain, readout, engine)
    # Compared by name: the enum's class is that of the click build typer runs on.
    given = getattr(ctx.get_parameter_source("schedule"), "name", "DEFAULT") != "DEFAULT"
    pointwise.check_method(method, schedule if given else None, budget)
    candidates = _read_candidates(candidates_jsonl, list(candidate_files or []))
    problem_text = problem if problem is not None else problem_file.read_text(encoding="utf-8")  # type: ignore[union-attr]
    sampling = _sampling(temperature, top_p, max_tokens, seed)
    if endpoint is not None:
        sampler = _endpoint_sampler(
            endpoint, served_model, connect_timeout, read_timeout, max_retries
        )
    else:
        sampler = _local_sampler(judge_model, engine, device)  # type: ignore[arg-type]
    settings = JudgeSettings(readout, domain, sampling, think_tokens, min_rating_mass)
    if method == pointwise.POINTWISE_METHOD:
        won = pointwise.select_pointwise(sampler, problem_text, candidates, settings)
    else:
        won = _select_pairwise(sampler, problem_text, candidates, settings, schedule, budget, seed)
    _print_usage(sampler)
    if not won:
        raise typer.Exit(1)


def _select_pairwise(
    sampler: Any,
    problem: str,
    candidates: list[Candidate],
    settings: JudgeSettings,
    schedule: str,
    budget: int | None,
    seed: int,
) -> bool:
    """The tournament under ``schedule`` and its report; True when it has a winner."""
    result, judge_pairs = run_selection(
        _make_judge(sampler, settings),
        problem,
        candidates,
        schedule=schedule,
        budget=budget,
        domain=settings.domain,
        seed=seed,
    )
    _print_report(result, judge_pairs, candidates)
    return result.winner is not None


def _check_arguments(
    judge_model: str | None,
    endpoint: str | None,
    problem: str | None,
    problem_file: Path | None,
    domain: str,
    readout: str,
    engine: str,
) -> None:
    """Usage errors, before anything is read or loaded."""
    from pairrl.rollout.prompts import DOMAINS

    if (judge_model is None) == (endpoint is None):
        raise typer.BadParameter("give exactly one of --judge-model and --endpoint")
    if (problem is None) == (problem_file is None):
        raise typer.BadParameter("give exactly one of --problem and --problem-file")
    for name, value, allowed in (
        ("--domain", domain, DOMAINS),
        ("--readout", readout, SELECT_READOUTS),
        ("--engine", engine, ENGINES),
    ):
        if value not in allowed:
            raise typer.BadParameter(f"{value!r}; allowed: {', '.join(allowed)}", param_hint=name)


def _read_candidates(jsonl: Path | None, files: list[Path]) -> list[Candidate]:
    try:
        candidates = load_candidates(jsonl, files)
    except CandidateError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if not candidates:
        raise typer.BadParameter("no candidates: give --candidates FILE.jsonl and/or files")
    return candidates


def _sampling(temperature: float, top_p: float, max_tokens: int, seed: int) -> Any:
    from pairrl.rollout.samplers.base import SamplingParams

    try:
        return SamplingParams(
            temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def _endpoint_sampler(
    endpoint: str,
    served_model: str | None,
    connect_timeout: float,
    read_timeout: float,
    max_retries: int,
) -> Any:
    from pairrl.rollout.samplers.openai_http import OpenAISampler

    model_name = served_model or _endpoint_model(endpoint, connect_timeout)
    return OpenAISampler(endpoint, model_name, connect_timeout, read_timeout, max_retries)


def _local_sampler(judge_model: str, engine: str, device: str | None) -> Any:
    if engine == "vllm":
        from pairrl.rollout.samplers.vllm import VLLMSampler

        return VLLMSampler(judge_model)
    from pairrl.rollout.samplers.hf import HFSampler

    return HFSampler.from_pretrained(judge_model, device=device)


def _make_judge(sampler: Any, settings: JudgeSettings) -> Any:
    """The pairwise judge for ``settings.readout`` (forced: ``ForcedPairwiseJudge``)."""
    from pairrl.rollout.judges import PairwiseJudge

    if settings.readout == "forced":
        return ForcedPairwiseJudge(
            sampler, settings.domain, settings.sampling, settings.min_rating_mass
        )
    return PairwiseJudge(
        sampler,
        domain=settings.domain,  # type: ignore[arg-type]
        readout=settings.readout,  # type: ignore[arg-type]
        sampling=settings.sampling,
        think_tokens=settings.think_tokens,
        min_rating_mass=settings.min_rating_mass,
    )


def register(app: typer.Typer) -> None:
    """Entry point (``pairrl.commands``): add ``pairrl select`` to the root CLI."""
    app.command("select")(select_cmd)

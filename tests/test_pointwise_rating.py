"""The benchmark's ``pointwise_rating`` selector (the paper's pointwise baseline): each
candidate rated once on 1-10 with the kit's pointwise prompt, the highest rating wins, ties
by the tournaments' rule, failed calls counted by the gate; ratings hand-worked below."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pairrl.eval import judge_selectors
from pairrl.eval.aggregate import summarise
from pairrl.eval.cache import StageCache
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import ALL_SELECTORS, JUDGE_SELECTORS, EvalConfig
from pairrl.eval.gate import check_run
from pairrl.eval.judge_cache import CachedJudge
from pairrl.eval.judge_controls import POINTWISE_SELECTORS
from pairrl.eval.judge_selectors import JudgeOutcome, run_judge_selectors
from pairrl.eval.report import format_table
from pairrl.eval.run_state import EvalRun
from pairrl.eval.selectors import Selection
from pairrl.rewards.tasks import AssertTests, Task
from pairrl.rollout.aggregation import rank_candidates
from pairrl.rollout.prompt_kit import paper_prompt_kit
from pairrl.rollout.samplers import Completion, SamplingParams

NAME = "pointwise_rating"
_MARK = re.compile(r"# id=(\w+)")
ln = math.log


def _task(tid: str) -> Task:
    return Task(tid, f"Write f() for {tid}.", "f", AssertTests(cases=("assert f() == 2",)))


class RatingSampler:
    """A judge scripted per candidate (found by the ``# id=...`` mark in its code): ``texts``
    is what it writes (a Completion for a failed call), ``first`` / ``after_one`` the
    next-token log-probabilities where it writes a rating (after ``<rating>``) and after a
    ``"1"`` there. Counts tokens as words, so every call's cost is measured."""

    def __init__(
        self,
        texts: dict[str, str | Completion],
        first: dict[str, dict[str, float]] | None = None,
        after_one: dict[str, dict[str, float]] | None = None,
    ) -> None:
        self.texts, self.first, self.after_one = texts, first or {}, after_one or {}
        self.generated: list[Any] = []
        self.scored: list[Any] = []

    @staticmethod
    def _mark(prompt: Any) -> str:
        user = prompt[0]["content"]
        assert "<rating>k</rating>" in user, "not the kit's 1-10 pointwise prompt"
        match = _MARK.search(user)
        assert match is not None
        return match.group(1)

    def generate(self, prompts: list[Any], n: int, sampling: SamplingParams) -> list[Any]:
        self.generated.extend(prompts)
        rows = []
        for prompt in prompts:
            text = self.texts[self._mark(prompt)]
            done = text if isinstance(text, Completion) else Completion(text, finish_reason="stop")
            rows.append([done] * n)
        return rows

    def next_token_logprobs(self, prompts: list[Any], candidates: list[str]) -> list[Any]:
        out = []
        for prompt in prompts:
            self.scored.append(prompt)
            answer = prompt[-1]["content"]
            assert prompt[-1]["role"] == "assistant" and answer.rstrip("1").endswith("<rating>")
            table = self.after_one if answer.endswith("1") else self.first
            scores = table[self._mark(prompt)]
            out.append({c: v for c, v in scores.items() if c in candidates})
        return out

    def encode(self, messages: Any) -> list[int]:
        return [0] * len(messages[0]["content"].split())

    def tokenizer(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [0] * len(text.split())}


def _config(readout: str = "sampled", controls: bool = False) -> EvalConfig:
    return EvalConfig.model_validate(
        {
            "candidates": {"pool": "p"},
            "judge": {
                "endpoint": "http://127.0.0.1:9/v1",
                "readout": readout,
                "controls": controls,
            },
            "selectors": ["random", NAME],
        }
    )


def _run(cfg: EvalConfig, tasks: dict[str, list[bool]]) -> tuple[EvalRun, dict[str, Task]]:
    """Candidates ``<tid>c<i>`` (code carries the mark) with the given labels."""
    cands = {
        tid: [
            Candidate(tid, str(i), f"def f():\n    return {i}  # id={tid}c{i}\n")
            for i in range(len(labels))
        ]
        for tid, labels in tasks.items()
    }
    labels = {
        tid: [{"passed": ok, "status": "pass" if ok else "wrong"} for ok in row]
        for tid, row in tasks.items()
    }
    run = EvalRun(cfg, "compute", list(tasks), cands, labels, {})
    return run, {tid: _task(tid) for tid in tasks}


def _select(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cfg: EvalConfig,
    run: EvalRun,
    tasks: dict[str, Task],
    sampler: RatingSampler | None,
) -> JudgeOutcome:
    """``run_judge_selectors`` for ``pointwise_rating`` with the scripted judge (sampler
    None: replay from the cache, as the gate does)."""
    judge = CachedJudge(
        identity="scripted",
        sampler=sampler,
        kit=paper_prompt_kit(),
        sampling=SamplingParams(temperature=0.0, max_tokens=64, seed=0),
        readout=cfg.judge.readout,
        think_tokens=cfg.judge.thinking_budget,
        pair_cache=StageCache(tmp_path, "pairwise"),
        point_cache=StageCache(tmp_path, "pointwise"),
        min_rating_mass=cfg.judge.min_rating_mass,
    )
    monkeypatch.setattr(judge_selectors, "build_judge", lambda *args, **kwargs: judge)
    mode = "compute" if sampler is not None else "replay"
    return run_judge_selectors(
        cfg, [NAME], tasks, run, tmp_path, mode, lambda name, n: lambda done: None
    )


def _only(outcome: JudgeOutcome) -> Selection:
    (selection,) = outcome.selections[NAME].values()
    return selection


def _says(ratings: dict[str, int]) -> dict[str, str | Completion]:
    return {mark: f"Looks right.\n<rating>{r}</rating>" for mark, r in ratings.items()}


def test_the_highest_rating_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # t1 rated (4, 9, 6): candidate 1, which is correct. t2 rated (2, 5, 7): candidate 2,
    # which is wrong (score 0): the selector follows the judge, not the labels.
    cfg = _config(controls=True)
    run, tasks = _run(cfg, {"t1": [False, True, False], "t2": [True, True, False]})
    ratings = {"t1c0": 4, "t1c1": 9, "t1c2": 6, "t2c0": 2, "t2c1": 5, "t2c2": 7}
    sampler = RatingSampler(_says(ratings))
    outcome = _select(monkeypatch, tmp_path, cfg, run, tasks, sampler)
    t1, t2 = outcome.selections[NAME]["t1"], outcome.selections[NAME]["t2"]
    assert (t1.chosen, t1.score, t1.failure) == (1, 1.0, None)
    assert (t2.chosen, t2.score) == (2, 0.0)
    assert t1.detail["scores"] == [4.0, 9.0, 6.0]
    # Cost: one judge call per candidate, tokens counted (prompt words + "Looks right." etc.).
    assert (t1.cost.judge_calls, t1.cost.failed_calls, t1.cost.unmeasured_calls) == (3, 0, 0)
    assert t1.cost.completion_tokens == 3 * 3 and t1.cost.prompt_tokens > 0
    assert outcome.expected[NAME] == 6 and outcome.issues == []
    records = [r for r in outcome.records if r["selector"] == NAME]
    assert [r["rating"] for r in records] == [4.0, 9.0, 6.0, 2.0, 5.0, 7.0]
    # The judge-quality controls: each task's foreign solution (the other task's first
    # candidate: t1 sees t2c0 rated 2, t2 sees t1c0 rated 4) is rejected, rating < 5.5.
    quality = outcome.quality[NAME]
    assert quality["judgements"] == 6 and quality["foreign_checked"] == 2
    assert quality["foreign_reject_rate"] == 1.0


def test_a_tie_goes_to_the_tournaments_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # (3, 8, 8): candidates 1 and 2 tie; the tournaments' rule (mu, then mean rating, then
    # the lowest index) picks 1, here the wrong one.
    cfg = _config()
    run, tasks = _run(cfg, {"t": [False, False, True]})
    sampler = RatingSampler(_says({"tc0": 3, "tc1": 8, "tc2": 8}))
    selection = _only(_select(monkeypatch, tmp_path, cfg, run, tasks, sampler))
    assert rank_candidates([3.0, 8.0, 8.0], [3.0, 8.0, 8.0])[0] == 1
    assert (selection.chosen, selection.score) == (1, 0.0)


def test_a_failed_call_is_a_failure_the_gate_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # t: (7, no tag, transport error) -> candidate 0, with two failed calls of three;
    # u: every call fails -> no selection, score 0, a failure with its reason.
    cfg = _config()
    run, tasks = _run(cfg, {"t": [True, False, True], "u": [True]})
    texts: dict[str, str | Completion] = {
        "tc0": "ok <rating>7</rating>",
        "tc1": "I think it is fine.",
        "tc2": Completion("", error="transport: refused"),
        "uc0": "<rating>11</rating>",
    }
    outcome = _select(monkeypatch, tmp_path, cfg, run, tasks, RatingSampler(texts))
    t, u = outcome.selections[NAME]["t"], outcome.selections[NAME]["u"]
    assert (t.chosen, t.score) == (0, 1.0)
    assert (t.cost.judge_calls, t.cost.failed_calls) == (3, 2)
    assert (u.chosen, u.score, u.failure) == (None, 0.0, "every pointwise judgement failed")
    assert (u.cost.judge_calls, u.cost.failed_calls) == (1, 1)
    reasons = {(i.task_id, i.item): i.reason for i in outcome.issues}
    assert {i.stage for i in outcome.issues} == {NAME}
    assert reasons[("t", "candidate 1")] == "missing <rating> tag"
    assert "sampler failed" in reasons[("t", "candidate 2")]
    assert "out of range" in reasons[("u", "candidate 0")]
    # The gate: its replay reads the same verdicts from the cache (no model call) and
    # refuses the run, 3 of 4 calls failed; within a tolerance above that share it passes.
    replay = _select(monkeypatch, tmp_path, cfg, run, tasks, None)
    assert replay.issues == outcome.issues and replay.expected == {NAME: 4}
    replayed = EvalRun(cfg, "replay", run.task_ids, run.candidates, run.labels, {})
    replayed.selections, replayed.issues = replay.selections, replay.issues
    replayed.expected = replay.expected
    gate = check_run(replayed, None, tolerance=0.0)
    assert gate.verdict == "FAIL" and gate.stages[NAME]["failed"] == 3
    assert any(r.startswith(f"{NAME}: 3 of 4 failed") for r in gate.reasons)
    assert check_run(replayed, None, tolerance=0.8).verdict == "PASS"
    # The summary and the report's table carry the row, its failed task and failed calls.
    summary = summarise(run.bool_labels(), outcome.selections, n_boot=100)
    row = summary["selectors"][NAME]
    assert (row["failed_tasks"], row["cost"]["judge_calls"], row["cost"]["failed_calls"]) == (
        1,
        4,
        3,
    )
    assert f"| {NAME} | " in format_table(summary)


# Hand-made next-token log-probabilities where the judge writes its rating:
#   c0: P(6)=0.2, P(7)=0.4, P(" 9")=0.2 -> mass 0.8, E = (1.2 + 2.8 + 1.8) / 0.8 = 7.25
#   c1: P(7)=0.5, P(8)=0.5 -> E = 7.5
#   c2 (digit-split "10"): P("1")=0.4, P(7)=0.2, then P("0"|"1")=0.5, P("2"|"1")=0.1:
#       P(10)=0.2, P(1)=0.4*0.4=0.16, P(7)=0.2 -> mass 0.56, E = 3.56 / 0.56 = 6.357...
FIRST = {
    "tc0": {"6": ln(0.2), "7": ln(0.4), " 9": ln(0.2)},
    "tc1": {"7": ln(0.5), "8": ln(0.5)},
    "tc2": {"1": ln(0.4), "7": ln(0.2)},
}
AFTER_ONE = {"tc2": {"0": ln(0.5), "2": ln(0.1)}}


@pytest.mark.parametrize("readout", ["expected", "forced"])
def test_log_prob_readouts_give_the_expected_rating(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, readout: str
) -> None:
    cfg = _config(readout)
    run, tasks = _run(cfg, {"t": [False, True, False]})
    # Every written rating is 7 (sampled: a three-way tie, candidate 0); the expectations
    # tell the candidates apart and pick candidate 1.
    sampler = RatingSampler(_says({"tc0": 7, "tc1": 7, "tc2": 7}), FIRST, AFTER_ONE)
    selection = _only(_select(monkeypatch, tmp_path, cfg, run, tasks, sampler))
    assert selection.detail["scores"] == pytest.approx([7.25, 7.5, 3.56 / 0.56])
    assert (selection.chosen, selection.score) == (1, 1.0)
    # expected: read at the tag the judge wrote; forced: no generation, the answer opened
    # with the tag at once.
    prefixes = {p[-1]["content"] for p in sampler.scored}
    if readout == "expected":
        assert len(sampler.generated) == 3
        assert prefixes == {"Looks right.\n<rating>", "Looks right.\n<rating>1"}
    else:
        assert sampler.generated == [] and prefixes == {"<rating>", "<rating>1"}


def test_the_sampled_readout_reads_the_tag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = _config("sampled")
    run, tasks = _run(cfg, {"t": [True, False, False]})
    sampler = RatingSampler(_says({"tc0": 7, "tc1": 7, "tc2": 7}), FIRST, AFTER_ONE)
    selection = _only(_select(monkeypatch, tmp_path, cfg, run, tasks, sampler))
    assert selection.detail["scores"] == [7.0, 7.0, 7.0] and selection.chosen == 0
    assert sampler.scored == []  # no log-probabilities read


def test_the_eval_config_accepts_pointwise_rating() -> None:
    assert NAME in JUDGE_SELECTORS and NAME in ALL_SELECTORS
    assert POINTWISE_SELECTORS[NAME] == "rating"
    cfg = EvalConfig.model_validate({"candidates": {"pool": "p"}, "selectors": [NAME, "first"]})
    assert cfg.selectors == [NAME, "first"]
    with pytest.raises(ValidationError):
        EvalConfig.model_validate({"candidates": {"pool": "p"}, "selectors": ["pointwise_ratin"]})

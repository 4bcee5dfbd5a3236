"""The rows the PairRL rollout hands TRL, for pairrl / pointrl / grpo, with scripted parts.

The generator and executor are scripted (no model): problem p0 gets solutions that pass,
fail, fail, pass; problem p1 gets four failing ones. Every judgement rates A=10, B=1
(pointwise: 10), so each judgement's reward is known by hand from its labels:
(pass, fail) -> 1.0, (pass, pass) -> 0.5 (|1-1| + |0-1| -> (1 + 0) / 2), (fail, pass) -> 0;
pointwise pass -> 1.0, fail -> 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from pairrl.config import parse_config
from pairrl.rewards.results import ExecResult
from pairrl.rollout.pairrl_rollout import PairRLRollout, RolloutError
from pairrl.rollout.prompt_kit import paper_prompt_kit
from pairrl.train.config import TrainConfig
from pairrl.train.row_temperatures import sample_temperatures
from pairrl.train.tiny_tasks import answer_text, tiny_code_tasks

EOS = 0
PASSING = {"return x", "return x + 1"}
SCRIPT = {  # solutions per problem, in sampling order
    "tiny/int": ["return x", "return str(x)", "return [x]", "return x + 1"],
    "tiny/larger": ["return x - 1", "return 0", "return x // 2", "return str(x)"],
}


class FakeTokens:
    """Each distinct text gets one id; a prompt is one token, a completion one token + EOS."""

    def __init__(self) -> None:
        self.texts: list[str] = ["<eos>"]

    def encode(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text)

    def tokenize(self, messages: list[dict[str, str]]) -> list[int]:
        return [self.encode("PROMPT:" + messages[-1]["content"])]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.texts[i] for i in ids if i != EOS)


class ScriptedGenerator:
    def __init__(
        self, tokens: FakeTokens, tasks_by_prompt_id: dict[int, str], pointwise: bool
    ) -> None:
        self.tokens = tokens
        self.task_of = tasks_by_prompt_id
        self.pointwise = pointwise
        self.calls: list[tuple[str, int, int]] = []

    def generate(self, prompt_ids: list[list[int]], phase: str, num_generations: int):
        self.calls.append((phase, len(prompt_ids), num_generations))
        out = []
        if phase == "solution":
            for k, ids in enumerate(prompt_ids):
                body = SCRIPT[self.task_of[ids[0]]][k % num_generations]
                out.append([self.tokens.encode(answer_text(body)), EOS])
        else:
            verdict = (
                "<rating>10</rating>"
                if self.pointwise
                else "<rating_A>10</rating_A>\n<rating_B>1</rating_B>"
            )
            out = [[self.tokens.encode(verdict), EOS] for _ in prompt_ids]
        return out, None


def _label(jobs: list[Any]) -> list[ExecResult]:
    results = []
    for job in jobs:
        passed = any(job.code is not None and job.code.strip().endswith(b) for b in PASSING)
        results.append(
            ExecResult(
                job.task.task_id,
                job.candidate_id,
                passed,
                "pass" if passed else "wrong",
                1,
                int(passed),
                None,
                0.0,
            )
        )
    return results


TEMPERATURES = sample_temperatures(1.0, 0.4)  # solutions at 1.0, judgements at 0.4


def _rollout(
    mode: str, g_gen: int, g_ver: int, reward: dict[str, Any] | None = None, pairs: str = "paper"
) -> tuple[PairRLRollout, FakeTokens, list[Any]]:
    cfg = parse_config(
        {
            "kind": "train",
            "model": {"path": "unused"},
            "data": {"source": "tiny_code"},
            "rollout": {
                "mode": mode,
                "group_size": g_gen + g_ver,
                "num_solutions": g_gen,
                "pairs": pairs,
            },
            "reward": reward or {},
        },
        TrainConfig,
    )
    kit = paper_prompt_kit()
    tasks = [t for t in tiny_code_tasks() if t.task_id in SCRIPT]
    tokens = FakeTokens()
    by_prompt = {kit.generation(t)[-1]["content"]: t for t in tasks}
    prompt_task = {tokens.tokenize(kit.generation(t))[0]: t.task_id for t in tasks}
    generator = ScriptedGenerator(tokens, prompt_task, pointwise=mode == "pointrl")
    rollout = PairRLRollout(
        cfg.rollout,
        cfg.reward,
        by_prompt,
        label=_label,
        prompts=kit,
        tokenize=tokens.tokenize,
        decode=tokens.decode,
        eos_token_id=EOS,
        generator_factory=lambda trainer: generator,
        temperatures=TEMPERATURES,
    )
    trl_prompts = [kit.generation(t) for t in tasks for _ in range(g_gen + g_ver)]
    return rollout, tokens, trl_prompts


def _types(out: dict[str, Any]) -> list[str]:
    return [r.sample_type for r in out["pairrl_record"]]


def _rewards(out: dict[str, Any]) -> list[float | None]:
    return [r.reward for r in out["pairrl_record"]]


def test_pairrl_rows_in_trl_order() -> None:
    rollout, tokens, prompts = _rollout("pairrl", 4, 4)
    out = rollout(prompts, trainer=None)
    types = _types(out)
    assert types == ["solution"] * 4 + ["judgement"] * 4 + ["solution"] * 4 + ["no_pair"] * 4
    assert len(out["prompt_ids"]) == len(out["completion_ids"]) == len(out["env_mask"]) == 16
    assert out["logprobs"] is None
    # Solutions: p0 passes on 0 and 3; p1 never.
    assert _rewards(out)[:4] == [1.0, 0.0, 0.0, 1.0]
    assert _rewards(out)[8:12] == [0.0] * 4
    # Judgements: rated A=10, B=1; reward by (label A, label B).
    expected = {(True, False): 1.0, (True, True): 0.5, (False, True): 0.0}
    for record in out["pairrl_record"][4:8]:
        assert record.labels in expected, "an incorrect-incorrect pair was judged"
        assert record.reward == expected[record.labels]
        assert record.ratings == (10, 1) and record.parse_failure is None
    # Judgement rows carry the pairwise prompt; solution rows the generation prompt.
    assert all("Solution A" in tokens.texts[out["prompt_ids"][i][0]] for i in range(4, 8))
    assert all("Solution A" not in tokens.texts[out["prompt_ids"][i][0]] for i in range(4))
    # No-pair rows: one EOS token, masked out of the loss, no reward.
    for i in range(12, 16):
        assert out["completion_ids"][i] == [EOS] and out["env_mask"][i] == [0]
        assert _rewards(out)[i] is None
    assert all(m == [1, 1] for m in out["env_mask"][:12])
    assert [r.group for r in out["pairrl_record"]] == [0] * 8 + [1] * 8
    # Each row's sampling temperature; a no-pair row (never sampled) at the solution one.
    assert out["pairrl_temperature"] == [1.0] * 4 + [0.4] * 4 + [1.0] * 8
    # The call's statistics: one value (not a column), no fillers on one process.
    stats = out["pairrl_rollout_stats"]
    assert stats["fillers"] == 0 and set(stats["timings"]) == {"generate", "execute", "judge"}


def test_pairs_follow_the_rollout_config() -> None:
    """p0's solutions 0 and 3 pass: the paper's rule also pairs the two correct ones;
    ``rollout.pairs: mixed_only`` pairs a correct with an incorrect one only."""
    kinds = {}
    for rule in ("paper", "mixed_only"):
        rollout, _, prompts = _rollout("pairrl", 4, 4, pairs=rule)
        records = rollout(prompts, trainer=None)["pairrl_record"]
        kinds[rule] = {r.pair_kind for r in records[4:8]}
        assert all(r.labels != (False, False) for r in records[4:8])
    assert kinds["paper"] == {"correct_incorrect", "correct_correct"}
    assert kinds["mixed_only"] == {"correct_incorrect"}


def test_class_balanced_verification_reward() -> None:
    """reward.class_balance: with n judged items, n_c of them correct, an item counts
    n / (2 n_c) if correct and n / (2 (n - n_c)) if not. Every judgement rates A=10, B=1,
    so a correct A and an incorrect B each score 1 before weighting, a correct B 0:
    (pass, fail) -> (w_c + w_i) / 2, (pass, pass) -> w_c / 2, (fail, pass) -> 0."""
    rollout, _, prompts = _rollout("pairrl", 4, 4, reward={"class_balance": True})
    out = rollout(prompts, trainer=None)
    judged = [r for r in out["pairrl_record"] if r.sample_type == "judgement"]
    labels = [label for r in judged for label in r.labels]
    n, n_c = len(labels), sum(labels)
    assert 0 < n_c < n and 2 * n_c != n, "the scripted pairs hold unequal classes"
    w_c, w_i = n / (2 * n_c), n / (2 * (n - n_c))
    assert rollout.class_weights == pytest.approx((w_i, w_c))
    expected = {(True, False): (w_c + w_i) / 2, (True, True): w_c / 2, (False, True): 0.0}
    for record in judged:
        assert record.reward == pytest.approx(expected[record.labels])
    # Each class carries half of the weight: sum of weights over items = n / 2 per class.
    assert n_c * w_c == pytest.approx(n / 2) and (n - n_c) * w_i == pytest.approx(n / 2)


def test_pointrl_rates_single_solutions_in_every_group() -> None:
    rollout, _, prompts = _rollout("pointrl", 4, 4)
    out = rollout(prompts, trainer=None)
    assert _types(out) == (["solution"] * 4 + ["judgement"] * 4) * 2
    for record in out["pairrl_record"]:
        if record.sample_type == "judgement":
            assert len(record.judged) == 1 and record.ratings == (10,)
            assert record.reward == (1.0 if record.labels[0] else 0.0)
    # p0 has both classes: its four slots alternate pass and fail solutions.
    p0 = [r.labels[0] for r in out["pairrl_record"][4:8]]
    assert sorted(p0) == [False, False, True, True]


def test_grpo_generates_solutions_only() -> None:
    rollout, _, prompts = _rollout("grpo", 4, 0)
    out = rollout(prompts, trainer=None)
    assert _types(out) == ["solution"] * 8
    assert _rewards(out) == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_split_groups_are_rejected() -> None:
    rollout, _, prompts = _rollout("pairrl", 4, 4)
    with pytest.raises(RolloutError, match="not a multiple of group_size"):
        rollout(prompts[:12], trainer=None)
    with pytest.raises(RolloutError, match="not one problem repeated"):
        rollout(prompts[4:12] + prompts[:8], trainer=None)


def test_deepcoder_rows_become_stdio_tasks() -> None:
    import json

    from pairrl.rewards.task_loaders import deepcoder_row_to_task
    from pairrl.rewards.tasks import StdioTests

    row = {
        "problem": "Read n, print n+1",
        "tests": json.dumps([{"input": "1\n", "output": "2\n", "testtype": "stdin"}]),
    }
    task = deepcoder_row_to_task(row, "primeintellect/0")
    assert isinstance(task.tests, StdioTests) and task.tests.cases == (("1\n", "2\n"),)
    with pytest.raises(ValueError, match="not stdin/stdout"):
        deepcoder_row_to_task(
            {"problem": "p", "tests": [{"input": "1", "output": "2", "testtype": "functional"}]},
            "x",
        )


def _label_with_sandbox_error(broken: set[str]):
    """The scripted executor, except that the candidates in ``broken`` hit a sandbox error."""

    def label(jobs: list[Any]) -> list[ExecResult]:
        out = []
        for res in _label(jobs):
            if res.candidate_id in broken:
                res = ExecResult(
                    res.task_id, res.candidate_id, False, "sandbox_error", 0, 0, "bwrap died", 0.0
                )
            out.append(res)
        return out

    return label


@pytest.mark.parametrize("mode", ["pairrl", "pointrl"])
def test_sandbox_errors_are_unlabelled_never_paired_and_carry_no_gradient(mode: str) -> None:
    # p0's solution 0 passes but its execution hits a sandbox error (an infrastructure
    # failure, not a wrong answer): it must not be rewarded 0, judged, or trained on.
    rollout, _, prompts = _rollout(mode, 4, 4)
    rollout.label = _label_with_sandbox_error({"s0-p0-0"})
    out = rollout(prompts, trainer=None)
    assert _types(out)[0] == "unlabelled"
    assert _rewards(out)[0] is None and out["env_mask"][0] == [0, 0]
    assert _rewards(out)[1:4] == [0.0, 0.0, 1.0]  # the other solutions are labelled
    for record in out["pairrl_record"]:
        if record.sample_type == "judgement" and record.group == 0:
            assert 0 not in record.judged, f"the unlabelled solution was judged: {record}"
    from pairrl.train.advantages import compute_advantages
    from pairrl.train.metrics import step_metrics

    records = out["pairrl_record"]
    advantages = compute_advantages(
        [r.group for r in records], [r.sample_type for r in records], [r.reward for r in records]
    )
    assert advantages[0] == 0.0
    # p0's labelled solutions: rewards 0, 0, 1 -> mean 1/3 -> advantages -1/3, -1/3, 2/3
    assert advantages[1:4] == pytest.approx([-1 / 3, -1 / 3, 2 / 3])
    metrics = step_metrics(records)
    assert metrics["pairrl/unlabelled_solutions"] == 1.0 and metrics["exec/sandbox_error"] == 1.0
    assert metrics["pairrl/solution_pass_rate"] == pytest.approx(1 / 7)  # 1 of 7 labelled

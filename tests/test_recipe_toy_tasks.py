"""The toy demo's task family, checker, warm-start data, pickers and report maths."""

from __future__ import annotations

import pytest

from pairrl.recipes.toy_addition.conversations import teacher_drops_carry, warm_start_conversations
from pairrl.recipes.toy_addition.evaluate import judge_quality, majority_pick
from pairrl.recipes.toy_addition.prompts import (
    pairwise_judgement_text,
    pointwise_judgement_text,
    solution_completion,
)
from pairrl.recipes.toy_addition.report import curves_from_log_history, goal_checks
from pairrl.recipes.toy_addition.tasks import (
    AdditionProblem,
    all_problems,
    distractor_answers,
    dropped_carry_sum,
    solution_text,
    split_problems,
)
from pairrl.rewards import extract_code, parse_pair_ratings, parse_rating, verification_reward
from pairrl.rewards.results import ExecJob
from pairrl.rollout.lockstep import run_lockstep_swiss


def test_family_is_two_digit_sums_with_three_digits() -> None:
    problems = all_problems()
    # b in max(10, 100 - a)..99 gives min(a, 90) values: sum(10..89) + 10 * 90 = 3960 + 900
    assert len(problems) == 4860
    assert all(100 <= p.answer <= 198 for p in problems)
    with pytest.raises(ValueError, match="three-digit"):
        AdditionProblem(12, 13)


def test_split_is_disjoint_and_fixed_by_split_seed() -> None:
    train, held = split_problems(200, split_seed=7)
    assert len(held) == 200 and len(train) == 4660
    assert not set(train) & set(held)
    assert split_problems(200, split_seed=7)[1] == held
    assert split_problems(200, split_seed=8)[1] != held


def test_distractors_are_wrong_three_digit_sums() -> None:
    for p in all_problems()[::37]:
        values = distractor_answers(p)
        assert values and p.answer not in values
        assert all(100 <= v <= 999 for v in values)
    # 67 + 48 = 115; 7 + 8 carries, so dropping the carry gives 105
    assert distractor_answers(AdditionProblem(67, 48))[0] == 105


def test_task_tests_run_for_real_in_the_executor() -> None:
    """The hidden test is executed: right sums pass, wrong sums, broken code and no code fail."""
    executor_mod = pytest.importorskip("pairrl.rewards.executor")
    problem = AdditionProblem(67, 48)
    task = problem.to_task()
    texts = [
        solution_text(115),
        solution_text(105),
        "```python\ndef f():\n    return 67 + 48\n```",  # computed, not a literal: passes
        "```python\ndef f(:\n    return 115\n```",
        "return 115",
    ]
    jobs = [
        ExecJob(task=task, code=extract_code(t), candidate_id=str(i)) for i, t in enumerate(texts)
    ]
    with executor_mod.Executor(workers=1, timeout_s=5.0) as executor:
        results = executor.run(jobs)
    assert [r.passed for r in results] == [True, False, True, False, False]
    assert [r.status for r in results] == ["pass", "wrong", "pass", "syntax_error", "no_code"]


def test_taught_judgements_parse_and_earn_the_reward() -> None:
    problem = AdditionProblem(67, 48)
    text = pairwise_judgement_text(problem, [115, 105])
    assert parse_pair_ratings(text) == (9, 1)
    # the digit checks: hundreds and units agree, tens differ (1 vs 0)
    assert "A 11= 11= 55=\nB 11= 10! 55=</think>" in text
    # 9 -> v = 8/9, |v - 1| = 1/9 <= 0.2 earns 1 - 1/9; 1 -> v = 0 earns 1; mean = 17/18
    assert verification_reward((9, 1), (True, False)) == pytest.approx(17 / 18)
    assert parse_rating(pointwise_judgement_text(problem, 105)) == 1
    assert parse_rating(pointwise_judgement_text(problem, 115)) == 9
    # a candidate of another width is checked digit by digit, the missing one as "_"
    assert "11= 11= 5_!" in pointwise_judgement_text(problem, 11)


def test_solution_completion_thinks_then_answers_in_code() -> None:
    text = solution_completion(AdditionProblem(67, 48))
    assert text.startswith("<think>67+48: 7+8=15 6+4+1=11 115</think>\n")
    assert extract_code(text) == "def f():\n    return 115\n"


def test_warm_start_data_is_right_and_covers_all_formats() -> None:
    train, _ = split_problems(200)
    conversations = warm_start_conversations(train[:50], 400, seed=0)
    kinds = {"solution": 0, "pairwise": 0, "pointwise": 0}
    for conv in conversations:
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        a, b = (
            int(x)
            for x in prompt.split("returning ")[1]
            .rstrip(".")
            .split("\n")[0]
            .rstrip(".")
            .split(" + ")
        )
        if "```" in answer:
            kinds["solution"] += 1
            assert f"return {a + b}\n" in answer
            assert answer.startswith(f"<think>{a}+{b}: ")
            assert f" {a + b}</think>" in answer
        elif "<rating_A>" in answer:
            kinds["pairwise"] += 1
            shown = [
                int(line.split("return ")[1]) for line in prompt.splitlines() if "return " in line
            ]
            expected = tuple(9 if v == a + b else 1 for v in shown)
            assert parse_pair_ratings(answer) == expected
            assert answer.startswith(f"<think>{a}+{b}: ") and f" {a + b}\nA " in answer
        else:
            kinds["pointwise"] += 1
            shown = int(prompt.split("return ")[-1].split("\n")[0])
            assert parse_rating(answer) == (9 if shown == a + b else 1)
    assert all(count > 20 for count in kinds.values()), kinds


def test_noisy_teacher_drops_the_units_carry_at_its_rate_in_every_role() -> None:
    import random

    # 67 + 48: 7 + 8 = 15 carries, so the dropped-carry sum is 115 - 10 = 105;
    # 61 + 48 = 109 does not carry and 55 + 47 = 102 would fall to two digits (92).
    carry, no_carry, short = (
        AdditionProblem(67, 48),
        AdditionProblem(61, 48),
        AdditionProblem(55, 47),
    )
    assert dropped_carry_sum(carry) == 105
    assert dropped_carry_sum(no_carry) is None and dropped_carry_sum(short) is None
    rng = random.Random(0)
    draws = [teacher_drops_carry(carry, 0.3, rng) for _ in range(4000)]
    assert abs(sum(draws) / 4000 - 0.3) < 0.03  # binomial sd ~0.007
    assert not teacher_drops_carry(no_carry, 1.0, rng)
    assert not teacher_drops_carry(short, 1.0, rng)
    with pytest.raises(ValueError, match="dropped_carry_rate"):
        warm_start_conversations([carry], 1, dropped_carry_rate=1.5)
    # rate 1.0 on the carrying problem: every role works with 105 and rates against it
    for conv in warm_start_conversations([carry], 60, seed=1, dropped_carry_rate=1.0):
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        assert answer.startswith("<think>67+48: 7+8=15 6+4=10 105")
        if "```" in answer:
            assert "return 105\n" in answer
        elif "<rating_A>" in answer:
            shown = [int(x.split("return ")[1]) for x in prompt.splitlines() if "return " in x]
            assert parse_pair_ratings(answer) == tuple(9 if v == 105 else 1 for v in shown)


def test_majority_pick_and_judge_quality() -> None:
    assert majority_pick([105, 115, 115, None, 105, 115]) == 1
    assert majority_pick([None]) is None
    # items: (T, F) judged (9, 1): both right; (T, T) judged (1, 9): one TP, one FN;
    # TPR = 2/3, TNR = 1/1, balanced = 5/6
    quality = judge_quality([(9, 1), (1, 9)], [(True, False), (True, True)])
    assert quality["balanced_accuracy"] == pytest.approx(5 / 6)
    assert quality["parse_failure_rate"] == 0.0


def test_lockstep_swiss_batches_rounds_and_finds_the_rated_best() -> None:
    batches: list[int] = []

    def judge(requests: list[tuple[int, tuple[int, int]]]) -> list[tuple[int, int] | None]:
        batches.append(len(requests))
        best = {p: p % 8 for p, _ in requests}  # problem p's best candidate is p % 8
        return [(9 if a == best[p] else 1, 9 if b == best[p] else 1) for p, (a, b) in requests]

    results = run_lockstep_swiss([8] * 20, judge, seed=0)
    assert [r.winner for r in results] == [p % 8 for p in range(20)]
    assert all(r.num_comparisons == 16 for r in results)  # budget 2N
    assert len(batches) < 10 and sum(batches) == 20 * 16  # rounds batched across problems


def test_goal_checks_and_curves() -> None:
    warm = {"solution_pass_rate": 0.50, "judge_balanced_accuracy": 0.60}
    final = {
        "solution_pass_rate": 0.56,
        "judge_balanced_accuracy": 0.66,
        "best_of_k": {"random": 0.56, "swiss": 0.70},
    }
    checks = goal_checks(warm, final)
    assert checks["met"] and checks["solution_pass_rate_gain"] == pytest.approx(0.06)
    final["judge_balanced_accuracy"] = 0.64
    assert not goal_checks(warm, final)["met"]
    curves = curves_from_log_history([{"step": 1, "judge/balanced_accuracy": 0.7}, {"loss": 1.0}])
    assert curves["step"] == [1] and curves["solution_pass_rate"] == [None]

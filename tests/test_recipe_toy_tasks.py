"""The toy recipe's task family, checker, warm-start data (two teachers, two different
errors) and report maths."""

from __future__ import annotations

import pytest

from pairrl.recipes.comparison.report import curves_from_log_history, format_table, label
from pairrl.recipes.toy_addition.conversations import (
    teacher_drops_carry,
    teacher_overcounts_units,
    warm_start_conversations,
)
from pairrl.recipes.toy_addition.prompts import (
    check_line,
    pairwise_judgement_text,
    pointwise_judgement_text,
    solution_completion,
    worked_difference,
    worked_sum,
)
from pairrl.recipes.toy_addition.tasks import (
    AdditionProblem,
    all_problems,
    distractor_answers,
    dropped_carry_sum,
    overcounted_units_sum,
    solution_text,
    split_problems,
)
from pairrl.rewards import extract_code, parse_pair_ratings, parse_rating, verification_reward
from pairrl.rewards.results import ExecJob


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
    # each candidate checked by subtraction: 115 - 67 = 48 = b; 105 - 67 = 38 != 48
    assert "A 115-67: 15-7=8 11-1-6=4 48 44= 88=\nB 105-67: 15-7=8 10-1-6=3 38 43! 88=" in text
    # 9 -> v = 8/9, |v - 1| = 1/9 <= 0.2 earns 1 - 1/9; 1 -> v = 0 earns 1; mean = 17/18
    assert verification_reward((9, 1), (True, False)) == pytest.approx(17 / 18)
    assert parse_rating(pointwise_judgement_text(problem, 105)) == 1
    assert parse_rating(pointwise_judgement_text(problem, 115)) == 9
    # a two-digit candidate: 15 - 67 = 0 tens - 6 + borrow ... is still checked digit by digit
    assert parse_rating(pointwise_judgement_text(problem, 11)) == 1


def test_the_judge_never_replays_the_solvers_sum() -> None:
    """The check is a subtraction: no judgement text holds the sum's worked columns."""
    problem = AdditionProblem(67, 48)
    for values in ([115, 105], [105, 125], [115, 114]):
        for drop in (False, True):
            assert "7+8" not in pairwise_judgement_text(problem, values, drop_borrow=drop)
    # Exactly where the sum carries, the check borrows: a judge that drops the borrow
    # rejects the true sum and accepts the dropped-carry one (a blind spot of its own).
    for p in all_problems()[::13]:
        if dropped_carry_sum(p) is None:
            continue
        assert worked_difference(p, p.answer)[1] == p.b
        assert worked_difference(p, p.answer, drop_borrow=True)[1] == p.b + 10
        assert worked_difference(p, p.answer - 10, drop_borrow=True)[1] == p.b


def test_a_units_only_judge_is_lenient_never_harsh() -> None:
    """Checking the units digit alone accepts what ends like the sum and never rejects it."""
    problem = AdditionProblem(67, 48)  # 115; dropped carry 105; 114 is off in the units
    # 105 - 67 = 38: units 8 = 8 (accepted, wrongly); 114 - 67 = 47: units 7 != 8
    assert check_line(problem, 105, units_only=True) == ("105-67: 15-7=8 10-1-6=3 38 88=", True)
    assert check_line(problem, 114, units_only=True)[1] is False
    for p in all_problems()[::7]:
        assert check_line(p, p.answer, units_only=True)[1]  # the true sum always passes
        if dropped_carry_sum(p) is not None:
            assert check_line(p, p.answer - 10, units_only=True)[1]
            assert not check_line(p, p.answer - 10)[1]
    # the teacher's habit reaches the warm-start judgements: always units-only, 105 passes
    for conv in warm_start_conversations([problem], 60, seed=3, units_only_check_rate=1.0):
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        if "<rating_A>" in answer:
            shown = [int(x.split("return ")[1]) for x in prompt.splitlines() if "return " in x]
            expected = tuple(9 if v % 10 == 5 else 1 for v in shown)
            assert parse_pair_ratings(answer) == expected
            assert "44=" not in answer  # the tens digit is never compared


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
            assert (
                answer.startswith(f"<think>A {shown[0]}-{a}: ")
                and f"\nB {shown[1]}-{a}: " in answer
            )
        else:
            kinds["pointwise"] += 1
            shown = int(prompt.split("return ")[-1].split("\n")[0])
            assert parse_rating(answer) == (9 if shown == a + b else 1)
    assert all(count > 20 for count in kinds.values()), kinds


def test_each_teacher_makes_its_own_error_at_its_rate() -> None:
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
    with pytest.raises(ValueError, match="dropped_borrow_rate"):
        warm_start_conversations([carry], 1, dropped_borrow_rate=-0.1)
    # solver teacher always drops the carry, judge teacher never drops the borrow: solutions
    # say 105; judgements check correctly (9 for 115, 1 for 105) whatever the solver did
    for conv in warm_start_conversations([carry], 80, seed=1, dropped_carry_rate=1.0):
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        if "```" in answer:
            assert answer.startswith("<think>67+48: 7+8=15 6+4=10 105") and "return 105\n" in answer
        elif "<rating_A>" in answer:
            shown = [int(x.split("return ")[1]) for x in prompt.splitlines() if "return " in x]
            assert parse_pair_ratings(answer) == tuple(9 if v == 115 else 1 for v in shown)
    # and the other way round: the judge teacher always drops the borrow, the solver never
    # drops the carry: the judge accepts exactly 105 and rejects the true 115
    for conv in warm_start_conversations([carry], 80, seed=2, dropped_borrow_rate=1.0):
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        if "```" in answer:
            assert "return 115\n" in answer
        elif "<rating_A>" in answer:
            shown = [int(x.split("return ")[1]) for x in prompt.splitlines() if "return " in x]
            assert parse_pair_ratings(answer) == tuple(9 if v == 105 else 1 for v in shown)


def test_table_and_curves() -> None:
    model = {
        "solution_pass_rate": 0.8,
        "judge_balanced_accuracy": 0.7,
        "best_of_k": {"random": 0.8, "majority": 0.85, "swiss": 0.82, "oracle": 1.0},
        "shared_pool": {"random": 0.8, "swiss": 0.82, "oracle": 1.0},
        "verdicts": {"own": "PASS", "shared": "PASS"},
    }
    better = {
        **model,
        "judge_balanced_accuracy": 0.95,
        "shared_pool": {**model["shared_pool"], "swiss": 0.97},
    }
    summary = {
        "models": {"warm_start": model, "grpo": model, "pairrl": better},
        "heldout": {"k": 8},
        "verification_gain": {
            "judge_balanced_accuracy_vs_grpo": 25.0,
            "shared_pool_swiss_vs_grpo": 15.0,
            "pass_rate_vs_grpo": 0.0,
        },
    }
    table = format_table(summary)
    assert "best-of-8 Swiss (own judge)" in table and "PairRL" in table and "GRPO" in table
    assert "judge balanced accuracy +25.0 points" in table
    assert "benchmark gate: PASS on every run" in table
    assert label("grpo@4") == "GRPO-4"
    curves = curves_from_log_history([{"step": 1, "judge/balanced_accuracy": 0.7}, {"loss": 1.0}])
    assert curves["step"] == [1] and curves["solution_pass_rate"] == [None]


def test_the_overcounted_units_fact_is_a_solver_error_of_its_own() -> None:
    """The solver teacher's second error: a confused units fact (digits summing to 11..15)
    written one too many, keeping the carry; only on those facts, at its rate."""
    import random

    # 67 + 45: 7 + 5 = 12 is a confused fact -> 7+5=13, tens 6+4+1=11, sum 113 (true 112)
    confused, plain = AdditionProblem(67, 45), AdditionProblem(69, 49)  # 9 + 9 = 18: not
    assert overcounted_units_sum(confused) == 113 and overcounted_units_sum(plain) is None
    assert worked_sum(confused, overcount_units=True) == ("67+45: 7+5=13 6+4+1=11 113", 113)
    with pytest.raises(ValueError, match="not a confused fact"):
        worked_sum(plain, overcount_units=True)
    # 30 of the 100 ordered units-digit pairs: sum 11 has 8 pairs, 12: 7, 13: 6, 14: 5, 15: 4
    facts = {(x, y) for x in range(10) for y in range(10)}
    assert (
        sum(overcounted_units_sum(AdditionProblem(50 + x, 50 + y)) is not None for x, y in facts)
        == 30
    )
    rng = random.Random(0)
    draws = [teacher_overcounts_units(confused, 0.4, rng) for _ in range(4000)]
    assert abs(sum(draws) / 4000 - 0.4) < 0.03  # binomial sd ~0.008
    assert not teacher_overcounts_units(plain, 1.0, rng)
    for conv in warm_start_conversations([confused], 60, seed=2, overcounted_units_rate=1.0):
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        if "```" in answer:
            assert answer.startswith("<think>67+45: 7+5=13 ") and "return 113\n" in answer
        elif "<rating_A>" in answer:  # the judge teacher is unaffected: 112 passes, 113 not
            shown = [int(x.split("return ")[1]) for x in prompt.splitlines() if "return " in x]
            assert parse_pair_ratings(answer) == tuple(9 if v == 112 else 1 for v in shown)


def test_a_tens_only_judge_accepts_an_overcounted_sum() -> None:
    """The judge teacher's lenient habit: compare every digit but the units."""
    problem = AdditionProblem(67, 45)  # 112; overcounted 113
    # 113 - 67 = 46: tens 4 = 4 (accepted, wrongly); a full check sees 46 != 45
    assert check_line(problem, 113, tens_only=True) == ("113-67: 13-7=6 11-1-6=4 46 44=", True)
    assert check_line(problem, 113)[1] is False
    assert check_line(problem, 122, tens_only=True)[1] is False  # 55: the tens differ
    for p in all_problems()[::7]:
        assert check_line(p, p.answer, tens_only=True)[1]  # the true sum always passes
    with pytest.raises(ValueError, match="not both"):
        check_line(problem, 113, units_only=True, tens_only=True)
    with pytest.raises(ValueError, match="tens_only_check_rate"):
        warm_start_conversations([problem], 1, tens_only_check_rate=2.0)
    for conv in warm_start_conversations([problem], 60, seed=3, tens_only_check_rate=1.0):
        prompt, answer = conv[0]["content"], conv[-1]["content"]
        if "<rating_A>" in answer:
            shown = [int(x.split("return ")[1]) for x in prompt.splitlines() if "return " in x]
            expected = tuple(9 if (v - 67) // 10 == 4 else 1 for v in shown)
            assert parse_pair_ratings(answer) == expected


def test_zero_rates_leave_the_warm_start_data_unchanged() -> None:
    """A new teacher error at rate 0 draws nothing: earlier configs keep their data."""
    train, _ = split_problems(200)
    base = warm_start_conversations(train[:40], 200, seed=5, dropped_carry_rate=0.5)
    same = warm_start_conversations(
        train[:40], 200, seed=5, dropped_carry_rate=0.5, overcounted_units_rate=0.0,
        tens_only_check_rate=0.0,
    )  # fmt: skip
    assert base == same


def test_warm_start_share_keeps_rl_problems_unseen_by_the_warm_start() -> None:
    from pairrl.recipes.toy_addition.config import ToyAdditionOptions
    from pairrl.recipes.toy_addition.recipe import ToyAdditionRecipe

    recipe = ToyAdditionRecipe()
    train, _ = split_problems(200, 1234)
    full = ToyAdditionOptions(heldout_problems=200, warm_start_examples=400)
    assert [t.task_id for t in recipe.training_tasks(full)] == [p.task_id for p in train]

    half = full.model_copy(update={"warm_start_share": 0.5})
    rl_ids = {t.task_id for t in recipe.training_tasks(half)}
    assert len(rl_ids) == len(train) // 2  # 4660 training problems, cut at 2330
    # every problem the warm start's conversations state is outside RL's set
    conversations = recipe.warm_start_conversations(None, half, 0, [])  # the toy reads no cfg
    taught = {conv[0]["content"] for conv in conversations}
    rl_prompts = {t.prompt for t in recipe.training_tasks(half)}
    assert not any(prompt in text for text in taught for prompt in rl_prompts)
    assert rl_ids | {p.task_id for p in train[: len(train) // 2]} == {p.task_id for p in train}

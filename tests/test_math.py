"""Math tasks end to end, on hand-written problems: the reward (math-verify on the last
``\\boxed{}`` answer), task rows, labelling without the sandbox, the math prompt kit, the
majority vote over final answers, and the rollout labelling math solutions."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pairrl.rewards import (
    AnswerTests,
    ExecJob,
    ExecResult,
    InputError,
    TaskFormatError,
    TaskLabeller,
    answer_clusters,
    candidate_job,
    label_jobs,
    load_tasks,
    math_answer_reward,
)
from pairrl.rewards.answers import answer_task, gold_answer
from pairrl.rewards.tasks import AssertTests, Task

HALF = answer_task("m/half", "What is half of one?", "\\frac{1}{2}")
SEVEN = answer_task("m/seven", "What is 3 + 4?", "7")


@pytest.mark.parametrize(
    ("completion", "gold", "status"),
    [
        # equivalent forms of one half count, whichever side writes which
        ("So it is \\boxed{1/2}.", "\\frac{1}{2}", "pass"),
        ("\\boxed{0.5}", "\\frac{1}{2}", "pass"),
        ("\\boxed{\\frac{1}{2}}", "0.5", "pass"),
        ("\\boxed{\\dfrac{1}{2}}", "1/2", "pass"),
        ("\\boxed{\\frac{2}{4}}", "0.5", "pass"),
        ("\\boxed{0.50}", "1/2", "pass"),
        ("x is \\boxed{x = 5}", "5", "pass"),
        ("\\boxed{5.0}", "5", "pass"),
        # the last boxed answer is the final one
        ("first \\boxed{3}, then corrected: \\boxed{1/2}", "0.5", "pass"),
        ("\\boxed{1/2}, no wait, \\boxed{3}", "0.5", "wrong"),
        # answers that must not match
        ("\\boxed{2}", "1/2", "wrong"),
        ("\\boxed{-1/2}", "1/2", "wrong"),
        ("\\boxed{0.333}", "1/3", "wrong"),
        ("\\boxed{1/3}", "0.5", "wrong"),
        # no final answer at all
        ("the answer is 1/2", "1/2", "no_answer"),
        ("\\boxed{}", "1", "no_answer"),
        ("\\boxed{unclosed", "1", "no_answer"),
    ],
)
def test_math_reward_hand_written_answers(completion: str, gold: str, status: str) -> None:
    outcome = math_answer_reward(completion, gold)
    assert outcome.status == status
    assert outcome.reward == (1.0 if status == "pass" else 0.0)


def test_math_reward_off_the_main_thread() -> None:
    """math-verify's own time limit needs the main thread; elsewhere it runs without it."""
    seen: list[str] = []
    thread = threading.Thread(
        target=lambda: seen.append(math_answer_reward("\\boxed{0.5}", "1/2").status)
    )
    thread.start()
    thread.join()
    assert seen == ["pass"]


def test_gold_answer_of_gsm8k_style_rows() -> None:
    assert gold_answer("48 / 2 = 24 in May, 48 + 24 = 72 in all. #### 72") == "72"
    assert gold_answer(" 0.25 ") == "0.25"


def test_math_rows_load_as_answer_tasks(tmp_path: Path) -> None:
    rows = [
        {"task_id": "a", "problem": "What is 1 + 1?", "answer": "2"},
        {"question": "What is 10 / 4?", "answer": "so 2.5 #### 5/2"},  # no task_id
    ]
    path = tmp_path / "math.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first, second = load_tasks(path)
    assert first.task_id == "a" and first.prompt == "What is 1 + 1?"
    assert first.tests == AnswerTests("2")
    assert second.task_id == "math/2" and second.tests == AnswerTests("5/2")
    # A column mapping renames a file's own columns.
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(json.dumps({"id": "x", "q": "What is 2 + 2?", "gold": "4"}) + "\n")
    (task,) = load_tasks(renamed, {"task_id": "id", "problem": "q", "answer": "gold"})
    assert (task.task_id, task.prompt, task.tests) == ("x", "What is 2 + 2?", AnswerTests("4"))
    with pytest.raises(
        TaskFormatError, match=r"renamed\.jsonl: row 1: column 'question'.*gold, id, q"
    ):
        load_tasks(renamed, {"problem": "question"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"problem": "p", "answer": " "}) + "\n")
    with pytest.raises(TaskFormatError, match=r"bad\.jsonl: row 2 .*the answer is empty"):
        load_tasks(bad)


def _code_task() -> Task:
    return Task("c/1", "def f(): return 1", "f", AssertTests(("assert f() == 1",)))


def test_label_jobs_checks_math_and_sends_code_to_the_executor() -> None:
    code = _code_task()
    jobs = [
        candidate_job(HALF, "it is \\boxed{0.5}", "h0"),
        candidate_job(code, "```python\ndef f():\n    return 1\n```", "c0"),
        candidate_job(HALF, "\\boxed{2}", "h1"),
        candidate_job(SEVEN, "no box", "s0"),
    ]
    assert jobs[0].code is None and jobs[1].code == "def f():\n    return 1\n"
    ran: list[list[str]] = []

    def run_code(batch: list[ExecJob]) -> list[ExecResult]:
        ran.append([j.candidate_id for j in batch])
        return [
            ExecResult(j.task.task_id, j.candidate_id, True, "pass", 1, 1, None, 0.0) for j in batch
        ]

    results = label_jobs(jobs, run_code)
    assert ran == [["c0"]]  # only the code job reached the executor, in one batch
    assert [(r.candidate_id, r.status) for r in results] == [
        ("h0", "pass"),
        ("c0", "pass"),
        ("h1", "wrong"),
        ("s0", "no_answer"),
    ]
    assert results[2].first_failure == "the final answer '2' is not the gold answer"
    with pytest.raises(ValueError, match="'c/1' is a code task, and no executor"):
        label_jobs(jobs, None)


def test_task_labeller_builds_no_executor_for_math() -> None:
    built: list[int] = []

    def make() -> Any:
        built.append(1)
        raise AssertionError("a math batch must not start the sandbox")

    labeller = TaskLabeller(make)
    results = labeller.run([candidate_job(SEVEN, "\\boxed{7}", "a")])
    assert [r.passed for r in results] == [True] and not labeller.started and built == []
    labeller.close()


def test_answer_clusters_group_equivalent_final_answers() -> None:
    texts = [
        "\\boxed{0.5}",
        "\\boxed{2}",
        "\\boxed{\\frac{1}{2}}",
        "no answer",
        "\\boxed{2.0}",
        "\\boxed{1/2}",
    ]
    assert answer_clusters(texts) == [0, 1, 0, None, 1, 0]


def test_majority_vote_over_final_answers() -> None:
    from pairrl.eval.candidates import Candidate
    from pairrl.eval.majority import select_majority

    def cands(texts: list[str]) -> list[Candidate]:
        return [Candidate("m/half", str(i), "", text=t) for i, t in enumerate(texts)]

    # 1/2 and 0.5 are one answer (two votes) against 3 (two votes) and 2: a tie of two,
    # broken by the earliest candidate: index 1 (1/2) comes before index 2 (3).
    texts = ["\\boxed{2}", "\\boxed{1/2}", "\\boxed{3}", "\\boxed{0.5}", "\\boxed{3}"]
    labels = [False, True, False, True, False]
    pick = select_majority("m/half", HALF, cands(texts), labels)
    assert (pick.chosen, pick.score, pick.detail["cluster_size"], pick.detail["num_clusters"]) == (
        1,
        1.0,
        2,
        3,
    )
    # Nobody gives a final answer: the first sample, and the fallback is said.
    none = select_majority("m/half", HALF, cands(["?", "??"]), [False, False])
    assert none.chosen == 0 and none.detail["fallback"] == "no candidate gave a final answer"
    # A failed sample does not vote.
    failed = [Candidate("m/half", "0", "", error="timeout"), *cands(["\\boxed{2}"])[:1]]
    assert select_majority("m/half", HALF, failed, [False, False]).chosen == 1


def test_majority_on_code_votes_with_identical_programs() -> None:
    from pairrl.eval.candidates import Candidate
    from pairrl.eval.majority import select_majority

    codes = ["return 1", "return  2", "return 2", "return 1 "]
    cands = [Candidate("c/1", str(i), c) for i, c in enumerate(codes)]
    pick = select_majority("c/1", _code_task(), cands, [True, False, False, True])
    assert pick.chosen == 0 and pick.detail["num_clusters"] == 2  # ties: the earlier group


def test_math_prompt_kit() -> None:
    from pairrl.rollout.prompt_kit import kit_for_tasks, paper_prompt_kit
    from pairrl.rollout.prompts import PAIRWISE_MATH

    kit = kit_for_tasks([HALF, SEVEN])
    assert "\\boxed{}" in kit.generation(HALF)[-1]["content"]
    assert "What is half of one?" in kit.generation(HALF)[-1]["content"]
    pairwise = kit.pairwise(HALF, "A says 1", "B says 2")[-1]["content"]
    assert pairwise.startswith(PAIRWISE_MATH.split("{")[0]) and "final answer" in pairwise
    # The judge sees a math completion whole, even one that holds a code block.
    completion = "Compute:\n```python\nprint(1/2)\n```\nso \\boxed{0.5}"
    assert kit.for_judge(completion) == completion
    assert paper_prompt_kit().for_judge(completion) == "```python\nprint(1/2)\n```"
    assert (
        kit_for_tasks([_code_task()])
        .generation(_code_task())[-1]["content"]
        .startswith("Solve the following programming")
    )
    with pytest.raises(InputError, match=r"mix math .*'m/half'.* and code .*'c/1'"):
        kit_for_tasks([HALF, _code_task()])

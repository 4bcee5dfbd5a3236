"""Task loaders: the four shared sets, generic HumanEval-style and stdin/stdout JSONL, bad rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairrl.rewards import AssertTests, IOTests, StdioTests, TaskFormatError, load_tasks
from pairrl.rewards.tasks import prompt_helpers


def test_mbpp_sanitized(shared_data_dir: Path) -> None:
    tasks = load_tasks(shared_data_dir / "mbpp_sanitized.json")
    assert len(tasks) == 427
    by_id = {t.task_id: t for t in tasks}
    # MBPP 6 defines a helper before the tested function: the entry point is the called one.
    assert by_id["6"].entry_point == "differ_At_One_Bit_Pos"
    assert isinstance(by_id["2"].tests, AssertTests)
    assert len(by_id["2"].tests.cases) == 3


def test_mbpp_plus(shared_data_dir: Path) -> None:
    tasks = load_tasks(shared_data_dir / "mbppplus.json")
    assert len(tasks) == 399
    first = tasks[0]
    assert first.task_id == "Mbpp/2" and first.entry_point == "similar_elements"
    assert isinstance(first.tests, IOTests) and len(first.tests.inputs) > 3
    assert first.canonical_solution and "def similar_elements" in first.canonical_solution


@pytest.mark.parametrize(
    ("name", "kind"), [("HumanEval.jsonl.gz", AssertTests), ("HumanEvalPlus.jsonl.gz", IOTests)]
)
def test_humaneval_sets(shared_data_dir: Path, name: str, kind: type) -> None:
    tasks = load_tasks(shared_data_dir / name)
    assert len(tasks) == 164
    he32 = tasks[32]
    assert isinstance(he32.tests, kind)
    # The prompt's helper poly() is defined for the driver; the entry point is not.
    assert "def poly" in he32.helpers and "def find_zero" not in he32.helpers
    assert he32.canonical_solution is not None and he32.canonical_solution.startswith(he32.prompt)


def test_generic_humaneval_style_and_int_ids(tmp_path: Path) -> None:
    row = {
        "task_id": 7,
        "prompt": "def inc(x):\n    '''x+1'''\n",
        "entry_point": "inc",
        "test": "def check(candidate):\n    assert inc(1) == 2\n",
        "canonical_solution": "    return x + 1\n",
    }
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(row) + "\n")
    [task] = load_tasks(path)
    assert task.task_id == "7" and task.tests.check_call  # type: ignore[union-attr]
    assert task.canonical_solution == row["prompt"] + row["canonical_solution"]


def test_stdio_jsonl_both_layouts(tmp_path: Path) -> None:
    rows = [
        {"task_id": "a", "question": "sum", "tests": [{"input": "1 2\n", "output": "3\n"}]},
        {"task_id": "b", "input_output": json.dumps({"inputs": ["4\n"], "outputs": ["16\n"]})},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    a, b = load_tasks(path)
    assert isinstance(a.tests, StdioTests) and a.tests.cases == (("1 2\n", "3\n"),)
    assert isinstance(b.tests, StdioTests) and b.tests.cases == (("4\n", "16\n"),)


def test_bad_row_names_file_and_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task_id": "x", "prompt": "p"}) + "\n")
    with pytest.raises(TaskFormatError, match=r"bad\.jsonl: row 1 \(task_id 'x'\)"):
        load_tasks(path)


def test_prompt_helpers_keeps_imports_and_helpers_only() -> None:
    prompt = "import math\n\ndef poly(xs, x):\n    return 1\n\ndef find_zero(xs):\n    '''doc'''\n"
    helpers = prompt_helpers(prompt, "find_zero")
    assert "import math" in helpers and "def poly" in helpers and "find_zero" not in helpers


def test_mbpp_plus_inputs_get_their_python_types_back(shared_data_dir: Path) -> None:
    by_id = {t.task_id: t for t in load_tasks(shared_data_dir / "mbppplus.json")}
    # JSON lost these types; EvalPlus restores them per task before running anything.
    assert by_id["Mbpp/106"].tests.inputs[0] == [[5, 6, 7], (9, 10)]  # type: ignore[union-attr]
    assert by_id["Mbpp/124"].tests.inputs[0] == [0.0, 1j]  # type: ignore[union-attr]
    assert by_id["Mbpp/737"].tests.oracle == "not_none"  # type: ignore[union-attr]
    assert by_id["Mbpp/2"].tests.oracle == "set_equal"  # type: ignore[union-attr]
    assert by_id["Mbpp/3"].tests.oracle == "equal"  # type: ignore[union-attr]

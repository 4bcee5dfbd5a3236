"""Stage cache (resume after a torn write) and pool normalisation per the data README."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate, read_candidates, write_candidates
from pairrl.eval.pools import last_function, load_pool, map_prompts_to_tasks, truncate_completion


def test_cache_roundtrip_resume_and_torn_line(tmp_path: Path) -> None:
    cache = StageCache(tmp_path, "labels")
    k1, k2 = content_key("a", 1), content_key("a", 2)
    assert k1 != k2 and k1 == content_key("a", 1)
    cache.put_many([(k1, {"passed": True})])
    # A kill mid-write leaves half a line at the end of the file.
    with cache.path.open("a") as handle:
        handle.write('{"key": "' + k2 + '", "value": {"pas')
    again = StageCache(tmp_path, "labels")
    assert again.get(k1) == {"passed": True} and k2 not in again
    assert again.torn_lines == 1
    again.put_many([(k2, {"passed": False})])
    third = StageCache(tmp_path, "labels")
    assert third.get(k2) == {"passed": False} and len(third) == 2 and third.torn_lines == 0
    assert third.delete(k1) and k1 not in StageCache(tmp_path, "labels")


def test_cache_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "labels.jsonl").write_text(
        '{"key": "x", "value": {}}\nnot json\n{"key": "y", "value": {}}\n'
    )
    with pytest.raises(ValueError, match=r"labels\.jsonl:2"):
        StageCache(tmp_path, "labels")


def test_truncation_and_last_function() -> None:
    assert (
        truncate_completion("    return x\n\nif __name__ == '__main__':\n    f()")
        == "    return x\n"
    )
    assert truncate_completion("    return x\n# note\n") == "    return x"
    assert truncate_completion("    # indented comment stays\n    return 1") == (
        "    # indented comment stays\n    return 1"
    )
    prompt = "def a():\n    return 1\ndef b(x):\n    # Write b.\n"
    assert last_function(prompt) == "def b(x):\n    # Write b."


def test_candidates_schema_roundtrip(tmp_path: Path) -> None:
    cands = [
        Candidate("7", "0", "def f(): pass", error=None),
        Candidate("7", "1", "", error="timeout: x"),
    ]
    write_candidates(tmp_path / "c.jsonl", cands)
    assert read_candidates(tmp_path / "c.jsonl") == cands
    (tmp_path / "bad.jsonl").write_text('{"task_id": 1, "code": "x"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1.*candidate_id"):
        read_candidates(tmp_path / "bad.jsonl")


@dataclass
class _T:
    task_id: str
    prompt: str


def _humaneval(shared: Path) -> list[_T]:
    with gzip.open(shared / "HumanEval.jsonl.gz", "rt") as handle:
        return [_T(r["task_id"], r["prompt"]) for r in map(json.loads, handle)]


def test_codegen_pool_maps_one_to_one(shared_data_dir: Path) -> None:
    tasks = _humaneval(shared_data_dir)
    pool = load_pool(shared_data_dir / "pools/humaneval_codegen16b_t0.8_n100.jsonl", tasks)
    assert pool.layout == "codegen_prompt_samples"
    assert len(pool.candidates) == 16400
    assert len({c.task_id for c in pool.candidates}) == 164
    first = pool.candidates[0]
    # The program starts from HumanEval's own prompt (with the examples), not the pool's.
    assert first.task_id == "HumanEval/0" and first.code.startswith(tasks[0].prompt)
    assert all("\ndef " not in c.text and "\nif" not in c.text for c in pool.candidates[:500])
    with pytest.raises(ValueError, match="matches 0 tasks"):
        map_prompts_to_tasks(["def nowhere():\n"], tasks)


def test_codegeex_pools(shared_data_dir: Path) -> None:
    he = load_pool(
        shared_data_dir / "pools/humaneval_codegeex13b_adapt_n15.jsonl", _humaneval(shared_data_dir)
    )
    assert he.layout == "per_sample_completion" and len(he.candidates) == 164 * 15
    assert [c.candidate_id for c in he.candidates[:16]] == [str(i) for i in range(15)] + ["0"]
    mbpp = load_pool(shared_data_dir / "pools/mbpp_codegeex13b_fewshot_n20.jsonl")
    assert mbpp.layout == "mbpp_fewshot_completions" and len(mbpp.candidates) == 500 * 20
    assert mbpp.task_rows is not None and len(mbpp.task_rows) == 500
    first = mbpp.candidates[0]
    assert first.task_id == "11"
    # Last function of the prompt, its trailing newline dropped, then the completion
    # (which starts with its own newline).
    assert first.code.startswith("def remove_Occ(s, ch):\n    # Write a python function")
    assert (
        "\n\n    if s:" not in first.code
        and "first and last occurrence of a given character from the string.\n    if s:"
        in first.code
    )
    assert "def check_Concat" not in first.code


def test_a_pool_with_its_own_tests_defines_the_tasks_beside_a_recipe(tmp_path: Path) -> None:
    """A recipe gives the judge's prompts; the MBPP-layout pool, carrying its own tests,
    still gives the task set (not the recipe's held-out tasks)."""
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.sources import load_candidates_and_tasks

    row = {"task_id": 11, "prompt": "def double(x):\n    # Return twice x.\n",
           "entry_point": "double", "test": "def check(candidate):\n    assert double(2) == 4\n",
           "completion": ["    return 2 * x\n", "    return x\n"]}  # fmt: skip
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps(row) + "\n")
    cfg = EvalConfig.model_validate(
        {
            "kind": "eval",
            "out_dir": str(tmp_path / "out"),
            "recipe": {"name": "pairrl.recipes.simple_functions"},
            "candidates": {"source": "pool", "pool": str(pool), "k": 2},
            "selectors": ["random", "oracle"],
        }
    )
    by_id, candidates, issues = load_candidates_and_tasks(
        cfg, tmp_path / "cache", "run", lambda name, total: lambda n: None
    )
    assert list(by_id) == ["11"] and len(candidates) == 2 and issues == []
    assert by_id["11"].prompt.startswith("def double(x):")

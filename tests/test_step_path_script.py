"""``benchmarks/step_path.py``'s tally and tracer, on a file written here (the script's full
run traces a training step: minutes, so it is a benchmark, not a test)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_the_tally_counts_each_files_length_and_the_lines_that_ran(
    tmp_path: Path, load_benchmark: Callable[[str], Any]
) -> None:
    step_path = load_benchmark("step_path.py")
    (tmp_path / "pkg").mkdir()
    source = tmp_path / "pkg" / "mod.py"
    source.write_text("def f(x):\n    if x:\n        return 1\n    return 2\n")
    (tmp_path / "tests").mkdir()
    skipped = tmp_path / "tests" / "test_mod.py"
    skipped.write_text("def g():\n    return 3\n")
    tracer = step_path.LineTracer(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    exec(compile(skipped.read_text(), str(skipped), "exec"), namespace)
    sys.settrace(tracer)
    try:
        namespace["f"](True)
        tracer.part = "step"
        namespace["f"](False)
        namespace["g"]()
    finally:
        sys.settrace(None)
    setup = step_path.tally(tracer.hits["setup"], tmp_path)
    step = step_path.tally(tracer.hits["step"], tmp_path)
    # f(True) runs lines 1 (the call), 2 and 3; f(False) lines 1, 2 and 4; g is a test's
    assert setup == {"pkg/mod.py": {"lines": 4, "run": 3}}
    assert step == {"pkg/mod.py": {"lines": 4, "run": 3}}
    assert step_path.totals(setup) == "1 files, 4 lines, 3 lines run"

"""``benchmarks/real_model_step.py``'s arithmetic on two logged steps worked out by hand
(the benchmark itself trains SmolLM2 for minutes per arm: it is run by hand, not here).

Step A: solutions 100 tokens in 2.0 s (50 tok/s); 16 solutions executed in 0.5 s (32/s);
judgements 80 tokens in 4.0 s (20 tok/s); TRL's scoring 1.0 s and the optimiser 0.5 s of an
update of 9.0 s, so forward+backward 7.5 s for 180 tokens (24 tok/s); a 16 s step with 16
judgement slots, 4 of them empty: 12 judgements, 12 / 16 * 3600 = 2700 an hour.
Step B: 100 tokens in 4.0 s (25); 80 in 2.0 s (40); update 7.0 s: forward+backward 5.5 s
(180 / 5.5 = 32.727...); a 14 s step, no empty slot: 16 / 14 * 3600 = 4114.29 an hour.
Medians of the two: generate 3.0 s at 37.5 tok/s, judge 3.0 s at 30 tok/s,
forward+backward 6.5 s at 28.36 tok/s, the step 15 s at 3407.14 judgements an hour and
(16 slots a step) (3600 + 4114.29) / 2 = 3857.14 slots an hour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

STEP_A = {
    "time/generate_s": 2.0, "tokens/solution": 100.0, "time/execute_s": 0.5,
    "time/judge_s": 4.0, "tokens/judgement": 80.0, "time/score_s": 1.0,
    "time/optimizer_s": 0.5, "time/update_s": 9.0, "time/step_s": 16.0,
    "pairrl/no_pair_rows": 4.0,
}  # fmt: skip
STEP_B = {**STEP_A, "time/generate_s": 4.0, "time/judge_s": 2.0, "time/update_s": 7.0,
          "time/step_s": 14.0, "pairrl/no_pair_rows": 0.0}  # fmt: skip


def test_each_stage_is_timed_and_rated_from_the_log(
    load_benchmark: Callable[[str], Any],
) -> None:
    bench = load_benchmark("real_model_step.py")
    steps = [bench.step_figures(row, 16.0, 16.0) for row in (STEP_A, STEP_B)]
    assert steps[0]["time/forward_backward_s"] == 7.5 and steps[0]["judgements"] == 12.0
    table = bench.stage_table(steps)
    assert table["generate"] == {"seconds": 3.0, "rate": 37.5}
    assert table["execute"] == {"seconds": 0.5, "rate": 32.0}
    assert table["judge"] == {"seconds": 3.0, "rate": 30.0}
    assert table["score"] == {"seconds": 1.0, "rate": None}
    assert table["forward+backward"]["seconds"] == 6.5
    assert table["forward+backward"]["rate"] == pytest.approx((24.0 + 180 / 5.5) / 2)
    assert table["whole step"]["seconds"] == 15.0
    assert table["whole step"]["rate"] == pytest.approx((2700.0 + 16 / 14 * 3600) / 2)
    # the step's capacity: 16 slots a step, whether the judge had a pair for each or not
    assert table["step capacity"]["rate"] == pytest.approx((3600.0 + 16 / 14 * 3600) / 2)
    faster = {name: {"seconds": c["seconds"], "rate": c["rate"] and 2 * c["rate"]}
              for name, c in table.items()}  # fmt: skip
    text = bench.format_tables({"shipped": table, "faster": faster})
    whole = next(line for line in text.splitlines() if line.startswith("whole step"))
    assert "3407.1 judgements/h" in whole and "6814.3 judgements/h x2.00" in whole

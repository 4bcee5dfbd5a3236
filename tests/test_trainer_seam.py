"""Where PairRL's advantages enter TRL's loss: ``PairRLTrainer._generate_and_score_completions``.

TRL's parent method is stubbed (it would generate and score); the override must replace
its advantages with PairRL's on TRL's batch layout, per process slice, gathered over
processes, and fix the logged advantages. Two processes, each holding one problem group
of G = 4 rows (2 solutions + 2 judgement slots), lambda 0.5, batch judgement baseline:

    group 0 (process 0): solution r=1, solution r=0, judgement r=0.8, judgement r=0.4
    group 1 (process 1): solution r=1, solution r=1, judgement r=0.0, no_pair

    solutions, centred per problem: group 0 mean 0.5 -> +0.5, -0.5; group 1 mean 1 -> 0, 0
    judgements, centred on the batch mean (0.8 + 0.4 + 0.0) / 3 = 0.4, times lambda 0.5:
        0.8 -> +0.2, 0.4 -> 0.0, 0.0 -> -0.2;   no_pair -> 0

    process 0 gets [0.5, -0.5, 0.2, 0.0]; process 1 gets [0.0, 0.0, -0.2, 0.0]

With ``loss.token_normalisation: per_sample_type`` each row is also weighted by N / N_type
over the loss's tokens: solutions hold 2 tokens each, judgements 4, no_pair 0 (masked):
N = 8 + 12 = 20, N_solution = 8, N_judgement = 12 -> weights 2.5 and 5/3:

    process 0 gets [1.25, -1.25, 1/3, 0.0]; process 1 gets [0.0, 0.0, -1/3, 0.0]
"""

from __future__ import annotations

from collections import defaultdict, deque
from types import SimpleNamespace

import pytest
import torch

from pairrl.config import parse_config
from pairrl.rollout.layout import RECORD_COLUMN, STATS_COLUMN, TEMPERATURE_COLUMN, RowRecord
from pairrl.train import trainer as trainer_module
from pairrl.train.config import TrainConfig
from pairrl.train.row_temperatures import (
    sample_temperatures,
    scored_row_temperatures,
)
from pairrl.train.trainer import PairRLTrainer

CFG = parse_config(
    {
        "kind": "train",
        "model": {"path": "unused"},
        "data": {"source": "tiny_code"},
        "rollout": {"group_size": 4, "num_solutions": 2},
        "advantage": {"lambda_ver": 0.5, "judgement_baseline": "batch"},
    },
    TrainConfig,
)


def _rows(group: int, rewards: list[float | None], types: list[str]) -> list[RowRecord]:
    rows = []
    for reward, kind in zip(rewards, types, strict=True):
        if kind == "solution":
            rows.append(RowRecord(group, "solution", reward, passed=bool(reward)))
        elif kind == "judgement":
            rows.append(RowRecord(group, "judgement", reward, labels=(True, False), ratings=(9, 1)))
        else:
            rows.append(RowRecord(group, "no_pair", None))
    return rows


PROCESS_ROWS = [
    _rows(0, [1.0, 0.0, 0.8, 0.4], ["solution", "solution", "judgement", "judgement"]),
    _rows(1, [1.0, 1.0, 0.0, None], ["solution", "solution", "judgement", "no_pair"]),
]
EXPECTED = [[0.5, -0.5, 0.2, 0.0], [0.0, 0.0, -0.2, 0.0]]


TOKENS = [[2, 2, 4, 4], [2, 2, 4, 0]]  # per row, the tokens the loss counts


def _inputs(process_index: int, temperatures: dict[str, float] | None = None) -> list[dict]:
    """The batch's rows as TRL leaves them: the rollout's extra columns put on each row."""
    temperatures = temperatures or sample_temperatures(1.0, 1.0)
    stats = {"fillers": 0, "timings": {"generate": 1.5}}
    return [
        {RECORD_COLUMN: r, TEMPERATURE_COLUMN: temperatures[r.sample_type], STATS_COLUMN: stats}
        for r in PROCESS_ROWS[process_index]
    ]


def _trainer(process_index: int, cfg: TrainConfig = CFG) -> PairRLTrainer:
    """A PairRLTrainer with only what the override reads (no model, no TRL setup)."""
    trainer = object.__new__(PairRLTrainer)
    trainer.advantage, trainer.loss, trainer.reward = cfg.advantage, cfg.loss, cfg.reward
    trainer.num_generations = cfg.rollout.group_size
    trainer.accelerator = SimpleNamespace(
        num_processes=2,
        process_index=process_index,
        gather=lambda local: torch.tensor([float(c) for row in TOKENS for c in row]),
    )
    trainer.model = SimpleNamespace(training=True)
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    # TRL logged its own group-mean advantages for the whole (gathered) batch: 8 rows.
    trainer._logs = {"advantages": deque([9.0] * 8)}
    return trainer


@pytest.mark.parametrize("process_index", [0, 1])
def test_override_puts_pairrl_advantages_in_each_process_slice(
    monkeypatch: pytest.MonkeyPatch, process_index: int
) -> None:
    def parent(self: PairRLTrainer, inputs: list) -> dict:
        return {"advantages": torch.full((4,), 9.0), "completion_ids": torch.zeros(4, 3)}

    monkeypatch.setattr(trainer_module.GRPOTrainer, "_generate_and_score_completions", parent)
    monkeypatch.setattr(
        trainer_module, "gather_object", lambda rows: [*PROCESS_ROWS[0], *PROCESS_ROWS[1]]
    )
    trainer = _trainer(process_index)
    output = trainer._generate_and_score_completions(_inputs(process_index))
    assert output["advantages"].dtype == torch.float32
    assert output["advantages"].tolist() == pytest.approx(EXPECTED[process_index])
    assert output["completion_ids"].shape == (4, 3)  # the rest of TRL's batch is untouched
    # The completions log holds PairRL's advantages for all 8 rows, not TRL's.
    assert list(trainer._logs["advantages"]) == pytest.approx(EXPECTED[0] + EXPECTED[1])
    metrics = trainer._metrics["train"]
    assert metrics["pairrl/solution_pass_rate"] == [pytest.approx(3 / 4)]
    assert metrics["pairrl/no_pair_rows"] == [1.0]
    assert metrics["time/generate_s"] == [1.5]
    # TRL's batch beyond the rollout: the stubbed parent's time, never below 0
    assert len(metrics["time/score_s"]) == 1 and metrics["time/score_s"][0] >= 0.0
    assert output[TEMPERATURE_COLUMN].tolist() == [1.0] * 4  # one sampling temperature


def test_trl_scores_the_fresh_rows_at_the_temperatures_the_rollout_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside the override, TRL calls the rollout and then scores its rows (old and
    reference log-probs): the rollout's temperatures are in scope there, and only there."""
    seen = []

    def parent(self: PairRLTrainer, inputs: list) -> dict:
        seen.append(scored_row_temperatures())  # before the rollout ran: nothing reported
        self.rollout_func(None, self)
        seen.append(scored_row_temperatures())
        return {"advantages": torch.zeros(4)}

    monkeypatch.setattr(trainer_module.GRPOTrainer, "_generate_and_score_completions", parent)
    monkeypatch.setattr(trainer_module, "gather_object", lambda rows: rows)
    trainer = _trainer(0)
    trainer.rollout_func = lambda prompts, trainer: trainer_module.report_rollout_temperatures(
        [1.0, 1.0, 0.4, 0.4]
    )
    trainer._generate_and_score_completions(_inputs(0))
    assert seen[0] is None
    assert seen[1].tolist() == pytest.approx([1.0, 1.0, 0.4, 0.4])
    assert scored_row_temperatures() is None  # the scope closed with the call


@pytest.mark.parametrize("process_index", [0, 1])
def test_override_adds_each_rows_sampling_temperature(
    monkeypatch: pytest.MonkeyPatch, process_index: int
) -> None:
    """Judgements drawn at 0.4, solutions at 1.0; the no-pair row (never sampled) at the
    solution temperature. The column travels with the rows through TRL's shuffle."""
    monkeypatch.setattr(
        trainer_module.GRPOTrainer,
        "_generate_and_score_completions",
        lambda self, inputs: {"advantages": torch.zeros(4)},
    )
    monkeypatch.setattr(
        trainer_module, "gather_object", lambda rows: [*PROCESS_ROWS[0], *PROCESS_ROWS[1]]
    )
    trainer = _trainer(process_index)
    output = trainer._generate_and_score_completions(
        _inputs(process_index, sample_temperatures(1.0, 0.4))
    )
    expected = [[1.0, 1.0, 0.4, 0.4], [1.0, 1.0, 0.4, 1.0]][process_index]
    assert output[TEMPERATURE_COLUMN].tolist() == pytest.approx(expected)


def test_override_refuses_records_that_do_not_match_the_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parent(self: PairRLTrainer, inputs: list) -> dict:
        return {"advantages": torch.zeros(5)}

    monkeypatch.setattr(trainer_module.GRPOTrainer, "_generate_and_score_completions", parent)
    with pytest.raises(RuntimeError, match="5 rows do not all carry the rollout's records"):
        _trainer(0)._generate_and_score_completions(_inputs(0))
    with pytest.raises(RuntimeError, match="4 rows do not all carry the rollout's records"):
        monkeypatch.setattr(
            trainer_module.GRPOTrainer,
            "_generate_and_score_completions",
            lambda self, inputs: {"advantages": torch.zeros(4)},
        )
        _trainer(0)._generate_and_score_completions([{}] * 4)


def _output(process_index: int) -> dict:
    mask = torch.zeros(4, 4, dtype=torch.int)
    for row, count in enumerate(TOKENS[process_index]):
        mask[row, :count] = 1
    return {"advantages": torch.zeros(4), "completion_mask": mask, "tool_mask": torch.ones(4, 4)}


@pytest.mark.parametrize("process_index", [0, 1])
def test_per_sample_type_token_normalisation(
    monkeypatch: pytest.MonkeyPatch, process_index: int
) -> None:
    cfg = CFG.model_copy(
        update={"loss": CFG.loss.model_copy(update={"token_normalisation": "per_sample_type"})}
    )
    monkeypatch.setattr(
        trainer_module.GRPOTrainer,
        "_generate_and_score_completions",
        lambda self, inputs: _output(process_index),
    )
    monkeypatch.setattr(
        trainer_module, "gather_object", lambda rows: [*PROCESS_ROWS[0], *PROCESS_ROWS[1]]
    )
    output = _trainer(process_index, cfg)._generate_and_score_completions(_inputs(process_index))
    expected = [[1.25, -1.25, 1 / 3, 0.0], [0.0, 0.0, -1 / 3, 0.0]][process_index]
    assert output["advantages"].tolist() == pytest.approx(expected)


def test_step_timer_splits_a_step_into_rollout_update_and_optimiser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A clock read at: step begins 10.0, optimiser starts 15.0 and ends 15.5, step ends
    16.0; the rollout ran in between, its phases 2.0 + 1.0 s: step 6.0 s, update 6.0 - 3.0
    = 3.0 s, optimiser 0.5 s. A step whose rollout did not run (its batch was generated
    earlier) counts no rollout time."""
    clock = iter([10.0, 15.0, 15.5, 16.0, 20.0, 21.0, 21.25, 22.0])
    monkeypatch.setattr(trainer_module.time, "perf_counter", lambda: next(clock))
    rollout = SimpleNamespace(calls=0, timings={})
    timer = trainer_module.StepTimer(rollout)  # type: ignore[arg-type]
    timer.trainer = SimpleNamespace(_metrics={"train": defaultdict(list)})  # type: ignore[assignment]
    for ran in (True, False):
        timer.on_step_begin(None, None, None)
        if ran:
            rollout.calls, rollout.timings = 1, {"generate": 2.0, "judge": 1.0}
        timer.on_pre_optimizer_step(None, None, None)
        timer.on_optimizer_step(None, None, None)
        timer.on_step_end(None, None, None)
    metrics = timer.trainer._metrics["train"]
    assert metrics["time/step_s"] == [6.0, 2.0]
    assert metrics["time/update_s"] == [3.0, 2.0]
    assert metrics["time/optimizer_s"] == [0.5, 0.25]

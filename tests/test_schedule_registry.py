"""The schedule registry is the one table of schedule names: the benchmark's config and
tournament selectors, and `pairrl select`'s choices, all come from it; an unknown name is
an error that names the allowed ones."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from pairrl.config import ConfigError, parse_config
from pairrl.eval.config import ALL_SELECTORS, JUDGE_SELECTORS, EvalConfig, SelectorName
from pairrl.eval.judge_controls import POINTWISE_SELECTORS
from pairrl.rollout.schedule_registry import (
    SCHEDULES,
    TOURNAMENT_SELECTORS,
    TournamentSelector,
    get_schedule,
    get_tournament_selector,
)
from pairrl.rollout.select_cli import register, schedule_name

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
# The names the benchmark's configs, summaries and tests use: (schedule, budget / N).
BENCHMARK_NAMES = {
    "all_pairs": ("all_pairs", None),
    "swiss_1n": ("swiss", 1),
    "swiss_2n": ("swiss", 2),
    "swiss_3n": ("swiss", 3),
    "random_pairing_2n": ("random_pairing", 2),
    "rated_halving_2n": ("rated_halving", 2),
    "halving_2n": ("sequential_halving", 2),
    "ladder_2n": ("ladder", 2),
}


def _select_app() -> typer.Typer:
    root = typer.Typer()

    @root.callback()
    def _root() -> None:
        """Test root (keeps `select` a subcommand)."""

    register(root)
    return root


def test_benchmark_tournament_selectors_are_the_registry() -> None:
    accepted = set(typing.get_args(SelectorName))
    assert accepted == set(ALL_SELECTORS)
    tournament_names = set(JUDGE_SELECTORS) - set(POINTWISE_SELECTORS)
    assert tournament_names == set(TOURNAMENT_SELECTORS) <= accepted
    assert {
        name: (s.schedule, s.budget_per_candidate) for name, s in TOURNAMENT_SELECTORS.items()
    } == BENCHMARK_NAMES
    cfg = EvalConfig.model_validate(
        {"candidates": {"pool": "p"}, "selectors": list(TOURNAMENT_SELECTORS)}
    )
    assert cfg.selectors == list(TOURNAMENT_SELECTORS)


def test_every_config_selector_is_known() -> None:
    known = set(ALL_SELECTORS)
    for path in sorted(CONFIGS.glob("eval*.yaml")):
        names = yaml.safe_load(path.read_text()).get("selectors", [])
        assert set(names) <= known, path.name


@pytest.mark.parametrize("budget_per_candidate", [1, 2, 3])
def test_the_toy_recipes_swiss_selector_is_registered(budget_per_candidate: int) -> None:
    """recipes/toy_addition builds ``swiss_{B}n`` for B in its config's bounds (1..3)."""
    selector = get_tournament_selector(f"swiss_{budget_per_candidate}n")
    assert selector.schedule == "swiss" and selector.budget(5) == 5 * budget_per_candidate


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_a_schedules_results_carry_its_registry_name(name: str) -> None:
    result = get_schedule(name)(4, lambda pairs: [(7, 3)] * len(pairs), 4, seed=0)
    assert result.schedule == name


def test_a_selector_runs_its_schedule_at_its_budget() -> None:
    def judge(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return [(9 if a == 2 else 2, 9 if b == 2 else 2) for a, b in pairs]

    better = get_tournament_selector("rated_halving_2n").run(6, judge, seed=3)
    assert better.schedule == "rated_halving" and better.budget == 12
    assert better.num_comparisons == 12 and better.winner == 2
    every_pair = get_tournament_selector("all_pairs").run(6, judge, seed=3)
    assert every_pair.num_comparisons == 15 and every_pair.winner == 2


def test_select_choices_are_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    command = typer.main.get_command(_select_app()).commands["select"]  # type: ignore[attr-defined]
    (param,) = [p for p in command.params if p.name == "schedule"]
    assert param.metavar == "[" + "|".join(SCHEDULES) + "]"
    assert param.default == "swiss"
    # a terminal wide enough that the help does not fold the choices over lines
    monkeypatch.setattr("typer.rich_utils.MAX_WIDTH", 400)
    help_text = CliRunner().invoke(_select_app(), ["select", "--help"])
    assert help_text.exit_code == 0
    assert "[" + "|".join(SCHEDULES) + "]" in help_text.output
    assert all(schedule_name(name) == name for name in SCHEDULES)
    with pytest.raises(typer.BadParameter, match="'rated-halving'; allowed: swiss"):
        schedule_name("rated-halving")  # one spelling: the registry's


def test_unknown_names_are_errors_naming_the_allowed_ones() -> None:
    allowed = ", ".join(SCHEDULES)
    with pytest.raises(ValueError, match=f"unknown schedule 'elo'; allowed: {allowed}$"):
        get_schedule("elo")
    allowed = ", ".join(TOURNAMENT_SELECTORS)
    with pytest.raises(
        ValueError, match=f"unknown tournament selector 'swiss_4n'; allowed: {allowed}$"
    ):
        get_tournament_selector("swiss_4n")
    with pytest.raises(ValueError, match="unknown schedule 'rated-halving'"):
        TournamentSelector("rated_2n", "rated-halving", 2)
    with pytest.raises(ConfigError, match=r"selectors\.0 = 'swiss_4n' is invalid") as err:
        parse_config({"candidates": {"pool": "p"}, "selectors": ["swiss_4n"]}, EvalConfig)
    assert all(repr(name) in str(err.value) for name in ALL_SELECTORS)


def test_select_rejects_an_unknown_schedule_with_the_allowed_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("typer.rich_utils.MAX_WIDTH", 400)  # the message on one line
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text('"a"\n"b"\n', encoding="utf-8")
    result = CliRunner().invoke(
        _select_app(),
        ["select", "--candidates", str(jsonl), "--problem", "P", "--judge-model", "x",
         "--schedule", "halving"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "'halving'; allowed: " + ", ".join(SCHEDULES) in result.output

"""The held-out judge probe: its pairs, its numbers (worked by hand), its files, its
read-out through a scripted sampler, the config's rule, and the probe inside a tiny
training run (a line per probed step, the numbers in the step's logged metrics)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pairrl.config import ConfigError, load_config
from pairrl.rewards.tasks import AssertTests, Task
from pairrl.train.heldout_probe import (
    PROBE_LOG,
    ProbePair,
    build_probe_pairs,
    probe_metrics,
    read_probe_log,
    read_probe_pairs,
    write_probe_pairs,
)


def _task(task_id: str) -> Task:
    return Task(task_id, f"solve {task_id}", "f", AssertTests(cases=("assert True",)))


def _shown(task: Task, a: str, b: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{task.task_id}|{a}|{b}"}]


def test_pairs_are_distinct_candidates_of_one_task_half_mixed_each_shown_both_ways() -> None:
    # t1: x passes, y and z fail -> (x,y) (x,z) mixed, (y,z) same-label. t2: "p" twice
    # (its first label, pass, is kept) and q passing -> (p,q) same-label. 2 mixed, 2 same.
    tasks = [_task("t1"), _task("t2")]
    candidates = [
        [("x", True), ("y", False), ("z", False)],
        [("p", True), ("q", True), ("p", False)],
    ]
    every = build_probe_pairs(tasks, candidates, _shown, seed=0, max_pairs=10)
    assert len(every) == 4 and sum(p.mixed for p in every) == 2
    for pair in every:
        task, a, b = pair.a_first[0]["content"].split("|")
        assert pair.b_first[0]["content"] == f"{task}|{b}|{a}" and task == pair.task_id
        assert pair.label_a == (a in {"x", "p", "q"}) and pair.label_b == (b in {"x", "p", "q"})
    three = build_probe_pairs(tasks, candidates, _shown, seed=0, max_pairs=3)
    assert len(three) == 3 and sum(p.mixed for p in three) == 2  # mixed fill up to half (2)
    one_same = build_probe_pairs([tasks[1]], [candidates[1]], _shown, seed=0, max_pairs=3)
    assert len(one_same) == 1 and not one_same[0].mixed  # no mixed pair to take
    assert build_probe_pairs(tasks, candidates, _shown, seed=0, max_pairs=10) == every


def test_the_probe_numbers_match_a_hand_worked_example() -> None:
    # items (score, label): pair 1 (0.9 T, 0.2 F), pair 2 (0.7 F, 0.6 T), pair 3 (0.1 F,
    # 0.3 F), pair 4 (0.8 T, 0.4 T). Yes at >= 0.5: positives 0.9 0.6 0.8 yes, 0.4 no ->
    # TPR 3/4; negatives 0.2 0.1 0.3 no, 0.7 yes -> TNR 3/4; BA 0.75. Mixed pairs: TPR 1,
    # TNR 1/2 -> 0.75; the passing one above in pair 1 only -> 0.5. Same-label pairs:
    # TPR 1/2 (0.8 yes, 0.4 no), TNR 1 -> 0.75. Yes-rate 4/8.
    pairs = [
        ProbePair("a", [], [], True, False),
        ProbePair("b", [], [], False, True),
        ProbePair("c", [], [], False, False),
        ProbePair("d", [], [], True, True),
    ]
    found = probe_metrics(pairs, [(0.9, 0.2), (0.7, 0.6), (0.1, 0.3), (0.8, 0.4)])
    assert found["judge_balanced_accuracy"] == pytest.approx(0.75)
    assert found["mixed_balanced_accuracy"] == pytest.approx(0.75)
    assert found["same_label_balanced_accuracy"] == pytest.approx(0.75)
    assert found["mixed_order_accuracy"] == pytest.approx(0.5)
    assert found["judge_yes_rate"] == pytest.approx(0.5)
    assert found["mean_score"] == pytest.approx(4.0 / 8)  # 0.9 + 0.2 + ... + 0.4 = 4.0
    assert (found["pairs"], found["mixed_pairs"], found["failed_items"]) == (4, 2, 0)
    # a tie counts one half; a failed read-out leaves its pair out of the order accuracy
    tie = probe_metrics(pairs[:2], [(0.6, 0.6), (None, 0.9)])
    assert tie["mixed_order_accuracy"] == 0.5 and tie["failed_items"] == 1
    with pytest.raises(ValueError, match="2 pairs but 1"):
        probe_metrics(pairs[:2], [(0.1, 0.2)])


def test_pairs_and_probe_log_files(tmp_path: Path) -> None:
    pairs = build_probe_pairs(
        [_task("t")], [[("x", True), ("y", False)]], _shown, seed=1, max_pairs=4
    )
    path = tmp_path / "pairs.jsonl"
    write_probe_pairs(path, pairs)
    assert read_probe_pairs(path) == pairs and not list(tmp_path.glob(".*partial"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_probe_pairs(tmp_path / "missing.jsonl")
    path.write_text('{"task_id": "t"}\n')
    with pytest.raises(ValueError, match=r"pairs\.jsonl:1: not a probe pair"):
        read_probe_pairs(path)
    log = tmp_path / PROBE_LOG
    log.write_text(
        '{"step": 0, "judge_balanced_accuracy": 0.5}\n{"step": 5, "judge_balanced_accuracy": 0.6}\n'
        '{"step": 5, "judge_balanced_accuracy": 0.7}\n'  # probed again after a resume
    )
    assert [(r["step"], r["judge_balanced_accuracy"]) for r in read_probe_log(log)] == [
        (0, 0.5),
        (5, 0.7),
    ]
    assert read_probe_log(tmp_path / "none.jsonl") == []


class _RatingSampler:
    """Next-token log-probabilities at ``<rating_A>``: all mass on "9" when the candidate
    shown as A is "good", on "2" when it is "bad", none on a rating for "mute"."""

    def __init__(self) -> None:
        self.prefixes: list[Any] = []

    def next_token_logprobs(self, prompts: Any, candidates: Any) -> list[dict[str, float]]:
        out = []
        for prompt in prompts:
            self.prefixes.append(prompt)
            shown_as_a = prompt[0]["content"].split("|")[1]
            digit = {"good": "9", "bad": "2"}.get(shown_as_a)
            out.append({digit: 0.0} if digit else {"x": 0.0})
        return out


def test_probe_scores_read_each_candidate_as_a() -> None:
    from pairrl.train.probe_callback import probe_scores

    pairs = build_probe_pairs(
        [_task("t")], [[("good", True), ("bad", False), ("mute", False)]], _shown, seed=0,
        max_pairs=3,
    )  # fmt: skip
    sampler = _RatingSampler()
    scores = probe_scores(sampler, pairs)
    value = {"good": 8 / 9, "bad": 1 / 9, "mute": None}  # (r - 1) / 9
    for pair, (a, b) in zip(pairs, scores, strict=True):
        name_a, name_b = pair.a_first[0]["content"].split("|")[1:]
        for name, score in ((name_a, a), (name_b, b)):
            assert score is None if value[name] is None else math.isclose(score, value[name])
    assert all(p[-1] == {"role": "assistant", "content": "<rating_A>"} for p in sampler.prefixes)
    assert len(sampler.prefixes) == 2 * len(pairs)


def test_a_probe_needs_pairs_from_a_recipe_or_a_file(repo_root: Path) -> None:
    from pairrl.train.config import TrainConfig

    tiny = repo_root / "configs" / "tiny_cpu.yaml"
    with pytest.raises(ConfigError, match=r"heldout_probe\.every_steps needs held-out pairs"):
        load_config(tiny, TrainConfig, ["heldout_probe.every_steps=5"])
    cfg = load_config(
        tiny, TrainConfig, ["heldout_probe.every_steps=5", "heldout_probe.pairs_file=p.jsonl"]
    )
    assert cfg.heldout_probe.every_steps == 5
    with pytest.raises(ConfigError, match=r"heldout_probe\.max_pairs"):
        load_config(tiny, TrainConfig, ["heldout_probe.max_pairs=1"])


def test_a_training_run_probes_at_its_start_every_n_steps_and_at_its_end(
    tiny_model_dir: Path, tmp_path: Path, repo_root: Path
) -> None:
    """3 steps, a probe every 2: steps 0, 2 and 3 (the last) in heldout_judge.jsonl, and
    the probe's numbers in the logged metrics of steps 2 and 3 only."""
    from pairrl.train.config import TrainConfig
    from pairrl.train.plan import resolve_plan
    from pairrl.train.run import run_training
    from pairrl.train.tiny_tasks import tiny_code_tasks

    tasks = tiny_code_tasks()[:3]
    candidates = [[("return 1", True), ("return 2", False), ("pass", False)] for _ in tasks]
    pairs_file = tmp_path / "pairs.jsonl"
    write_probe_pairs(pairs_file, build_probe_pairs(tasks, candidates, _shown, seed=0, max_pairs=6))
    overrides = [
        f"model.path={tiny_model_dir}",
        "batch.max_steps=3",
        "batch.problems_per_step=1",
        "warm_start.steps=0",
        "logging.wandb=disabled",
        "heldout_probe.every_steps=2",
        f"heldout_probe.pairs_file={pairs_file}",
    ]
    cfg = load_config(repo_root / "configs" / "tiny_cpu.yaml", TrainConfig, overrides)
    run_dir = tmp_path / "run"
    summary = run_training(cfg, resolve_plan(cfg, out=str(run_dir)))
    assert summary["global_step"] == 3
    rows = read_probe_log(run_dir / PROBE_LOG)
    assert [r["step"] for r in rows] == [0, 2, 3]
    assert all(r["pairs"] == 6 and r["mixed_pairs"] == 3 for r in rows)  # half mixed
    assert all(0 <= r["failed_items"] <= 12 and r["seconds"] >= 0 for r in rows)
    logged = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = {row["step"] for row in logged if "heldout/pairs" in row}
    assert steps == {2, 3}


def test_an_experiments_baselines_are_probed_on_the_main_runs_pairs(repo_root: Path) -> None:
    from pairrl.recipes.comparison import experiment
    from pairrl.train.config import TrainConfig
    from pairrl.train.task_family import resolve_recipe

    cfg = load_config(
        repo_root / "configs" / "toy_cpu.yaml", TrainConfig, ["heldout_probe.every_steps=5"]
    )
    options = resolve_recipe(cfg.recipe).options
    pairs = Path("runs/toy/heldout_pairs.jsonl")
    grpo = experiment.baseline_config(cfg, options, "grpo", Path("w"), probe_pairs=pairs)
    assert grpo.heldout_probe.pairs_file == str(pairs) and grpo.heldout_probe.every_steps == 5
    # the file's spelling does not make a finished baseline another config's
    elsewhere = experiment.baseline_config(
        cfg, options, "grpo", Path("w"), probe_pairs=Path("./runs/toy/heldout_pairs.jsonl")
    )
    assert experiment._comparable(grpo) == experiment._comparable(elsewhere)


def test_the_experiments_curves_come_from_each_runs_probe_log(tmp_path: Path) -> None:
    from pairrl.recipes.comparison.heldout_curves import heldout_curves, plot_heldout_curves

    main, grpo, none = tmp_path / "main", tmp_path / "grpo", tmp_path / "none"
    for folder, values in ((main, (0.5, 0.7)), (grpo, (0.5, 0.52))):
        folder.mkdir()
        rows = [
            {"step": step, "seconds": 1.0, "judge_balanced_accuracy": v, "judge_yes_rate": 0.6}
            for step, v in zip((0, 5), values, strict=True)
        ]
        (folder / PROBE_LOG).write_text("".join(json.dumps(r) + "\n" for r in rows))
    curves = heldout_curves({"pairrl": main, "grpo": grpo, "pointrl": none})
    assert set(curves) == {"pairrl", "grpo"}  # a run never probed is left out
    assert curves["pairrl"]["step"] == [0, 5]
    assert curves["pairrl"]["judge_balanced_accuracy"] == [0.5, 0.7]
    assert curves["grpo"]["mixed_order_accuracy"] == [None, None]  # absent: no point drawn
    figure = plot_heldout_curves(tmp_path / "c.png", curves, {"pairrl": "PairRL"}, "t")
    assert figure.stat().st_size > 1000


def test_no_probe_once_the_run_was_asked_to_stop(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from pairrl.train.probe_callback import HeldoutJudgeProbe

    asked = [False]
    probe = HeldoutJudgeProbe([], 5, tmp_path, 4, stopping=lambda: asked[0])
    state = SimpleNamespace(global_step=10, max_steps=12, is_world_process_zero=True)
    assert probe._due(state)
    assert not probe._due(SimpleNamespace(**{**vars(state), "global_step": 11}))
    assert probe._due(SimpleNamespace(**{**vars(state), "global_step": 12}))  # the last step
    assert not probe._due(SimpleNamespace(**{**vars(state), "is_world_process_zero": False}))
    asked[0] = True  # the stop's checkpoint comes first; a resumed run probes the step
    assert not probe._due(state)

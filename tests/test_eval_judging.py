"""The benchmark's judge calls: a repeated pair is a fresh sample, and the judge's sampling
settings (top-p, the rating-mass floor) come from the config."""

from __future__ import annotations

from pathlib import Path

from pairrl.eval.cache import StageCache
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import EvalConfig
from pairrl.eval.judge_cache import CachedJudge
from pairrl.eval.judge_selectors import build_judge
from pairrl.eval.run_state import EvalRun
from pairrl.eval.tournament_selectors import TaskLedger, run_tournaments
from pairrl.rewards.tasks import AssertTests, Task
from pairrl.rollout.prompt_kit import paper_prompt_kit
from pairrl.rollout.samplers import Completion, SamplingParams

TASK = Task("t", "Write f() returning 2.", "f", AssertTests(cases=("assert f() == 2",)))

VERDICT = "<rating_A>7</rating_A>\n<rating_B>3</rating_B>"


class CountingSampler:
    """Answers every pairwise prompt with one fixed verdict; records each call's seed."""

    def __init__(self) -> None:
        self.prompts = 0
        self.seeds: list[int | None] = []

    def generate(self, prompts, n, sampling):  # type: ignore[no-untyped-def]
        self.prompts += len(prompts)
        self.seeds.append(sampling.seed)
        return [[Completion(VERDICT, finish_reason="stop")] * n for _ in prompts]

    def next_token_logprobs(self, prompts, candidates):  # type: ignore[no-untyped-def]
        raise AssertionError("the sampled read-out makes no scoring call")


def _judge(tmp_path: Path, sampler: CountingSampler) -> CachedJudge:
    return CachedJudge(
        identity="fake",
        sampler=sampler,
        kit=paper_prompt_kit(),
        sampling=SamplingParams(temperature=0.6, top_p=0.95, max_tokens=64, seed=5),
        readout="sampled",
        think_tokens=8,
        pair_cache=StageCache(tmp_path, "pairwise"),
        point_cache=StageCache(tmp_path, "pointwise"),
    )


def test_a_repeated_pair_is_a_fresh_sample(tmp_path: Path) -> None:
    sampler = CountingSampler()
    judge = _judge(tmp_path, sampler)
    item = (TASK, "solution x", "solution y")
    first, again = judge.pairwise([item, item], occurrences=[0, 1])
    assert first.key != again.key and sampler.prompts == 2
    assert sampler.seeds == [5, 6]  # the repeat has its own seed
    # Asking occurrence 0 again (another selector, a rerun) reuses the cached sample.
    (cached,) = judge.pairwise([item])
    assert cached.key == first.key and sampler.prompts == 2


def test_a_tournament_that_repeats_a_pair_pays_for_each_repeat(tmp_path: Path) -> None:
    # Two candidates and a budget of 4 comparisons: sequential halving (rated_halving_2n) plays the
    # one pair 4 times. Each must be its own judgement, not one sample counted 4 times.
    sampler = CountingSampler()
    cfg = EvalConfig.model_validate({"candidates": {"pool": "p"}})
    cands = [Candidate("t", "0", "def f():\n    return 2\n"), Candidate("t", "1", "x = 1\n")]
    label = {"passed": True, "status": "pass"}
    run = EvalRun(cfg, "compute", ["t"], {"t": cands}, {"t": [label, None]}, {})
    ledgers = {"t": TaskLedger("t")}
    selections = run_tournaments(
        cfg, "rated_halving_2n", _judge(tmp_path, sampler), {"t": TASK}, run, {"t": ["a", "b"]},
        ledgers, lambda n: None,
    )  # fmt: skip
    selection = selections["t"]
    records = [r for r in ledgers["t"].records if r["kind"] == "comparison"]
    assert len(records) == 4 and selection.cost.judge_calls == 4
    assert len({r["key"] for r in records}) == 4
    assert sampler.prompts == 4


def test_judge_sampling_and_mass_floor_come_from_the_config(tmp_path: Path) -> None:
    cfg = EvalConfig.model_validate(
        {
            "candidates": {"pool": "p"},
            "judge": {
                "endpoint": "http://127.0.0.1:9/v1",
                "temperature": 0.6,
                "top_p": 0.95,
                "min_rating_mass": 0.8,
            },
        }
    )
    judge = build_judge(cfg, tmp_path, mode="replay")
    assert (judge.sampling.temperature, judge.sampling.top_p) == (0.6, 0.95)
    assert judge.min_rating_mass == 0.8
    default = build_judge(
        EvalConfig.model_validate(
            {"candidates": {"pool": "p"}, "judge": {"endpoint": "http://127.0.0.1:9/v1"}}
        ),
        tmp_path,
        mode="replay",
    )
    messages = judge.kit.pairwise(TASK, "a", "b")
    assert judge.pair_key(messages) != default.pair_key(messages)  # settings are in the key


def test_a_failed_sample_is_never_judged(tmp_path: Path) -> None:
    """A candidate whose sampling failed takes no part in the tournament."""
    sampler = CountingSampler()
    cfg = EvalConfig.model_validate({"candidates": {"pool": "p"}})
    cands = [
        Candidate("t", "0", "def f():\n    return 2\n"),
        Candidate("t", "1", "", error="transport: refused"),
        Candidate("t", "2", "def f():\n    return 3\n"),
    ]
    labels = [{"passed": True, "status": "pass"}, None, {"passed": False, "status": "wrong"}]
    run = EvalRun(cfg, "compute", ["t"], {"t": cands}, {"t": labels}, {})
    ledgers = {"t": TaskLedger("t")}
    sols = {"t": ["a", "(failed)", "c"]}
    (selection,) = run_tournaments(
        cfg, "swiss_2n", _judge(tmp_path, sampler), {"t": TASK}, run, sols, ledgers, lambda n: None
    ).values()
    shown = {(r["a"], r["b"]) for r in ledgers["t"].records if r["kind"] == "comparison"}
    assert shown and all(1 not in pair for pair in shown)
    assert selection.chosen in (0, 2) and selection.cost.judge_calls == sampler.prompts

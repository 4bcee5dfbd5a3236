"""Every command README.md and the guides in docs/ show, and how this suite checks that it
runs as written (docs/experiments.md, the record of past experiments, is left out: its
commands are history).

The commands are the lines of the documents' ```bash blocks (continuations joined, comments
dropped) and the inline code spans that invoke a program the blocks use and hold no
placeholder (an all-capitals word such as CONFIG or RUN, ``...``, ``<x>``, ``[--x]``).
``TABLE`` gives each, verbatim, its check after the last `` | ``:

- ``run SCENARIO``: run here verbatim with ``bash -c`` in a scratch checkout (links to the
  repository's files in an empty folder, ``../shared`` beside it as beside the repository,
  no ``runs/``) with this Python's ``bin`` first on PATH, so that ``pairrl`` and
  ``python`` resolve; a scenario's commands run in ``TABLE`` order in one checkout after
  its setup lines, and each must exit 0. ``serve SCENARIO URL``: the same for a server, which
  runs until the scenario ends; the next command starts once URL answers.
- ``chain``: README command lines joined by `` && ``, each a ``run`` of one scenario.
- ``prose``: a command's name in a sentence, not an invocation.
- any other word: a key of ``NOT_HERE_TABLE``, why the command cannot run in this suite (a
  GPU, a Slurm cluster, the network, a job of many minutes), the test that comes nearest
  and the marker a test of it would carry.

A documented command missing from the table, or a table line no document shows any more,
fails ``test_every_documented_command_has_a_check``.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "readme_fixtures"
# What the commands write, and caches: a fresh checkout has none, so a scratch one links none.
OUTPUTS = frozenset({"runs", "wandb", "outputs", ".pytest_cache", ".ruff_cache"})
PROGRAMS = ("pairrl", "python", "accelerate", "bash", "pip", "/usr/bin/time")
VENV_BIN = ".venv/bin/"
PLACEHOLDER = re.compile(r"\.\.\.|^\[|<\w+>|(?:^|[/=])[A-Z][A-Z_]*(?:$|[/.])")
SERVER_READY_S = 420  # vLLM's eager start-up is about 60 s on 2 idle cores; they are shared

TABLE = r"""
bash .ci/setup.sh && .venv/bin/pairrl experiment configs/toy_cpu.yaml --out runs/toy | setup
.venv/bin/python -m pytest | suite
pairrl train configs/tiny_cpu.yaml --dry-run | run dry_run
pairrl train configs/tiny_cpu.yaml --out runs/tiny | run tiny_train
pairrl train configs/tiny_cpu.yaml --out runs/tiny --resume | run tiny_train
accelerate launch --config_file configs/accelerate/cpu_2proc.yaml "$(which pairrl)" train configs/tiny_cpu.yaml | run two_processes
accelerate launch --config_file configs/accelerate/deepspeed_zero2.yaml "$(which pairrl)" train configs/qwen3_4b_deepcoder.yaml | eight_gpus
pairrl train configs/tiny_cpu.yaml --out runs/tiny_lora --set model.lora.rank=8 --set optim.lr=3e-3 | run lora
pairrl export runs/tiny_lora --out runs/tiny_lora/merged | run lora
pairrl eval configs/eval_math_tiny_cpu.yaml --model runs/tiny_lora/merged --out runs/eval/tiny_lora --strict | run lora
pairrl train configs/qwen3_4b_lora_1gpu.yaml --out runs/qwen3-4b-lora | one_gpu
pairrl sample --model-dir smollm2 --prompt "What is 17 + 25?" | run smollm2_sample
pairrl train configs/math_tiny_cpu.yaml --out runs/math_tiny | run math
pairrl eval configs/eval_math_tiny_cpu.yaml --strict | run math
.venv/bin/python -c "import datasets; datasets.Dataset.from_json('configs/data/tiny_math.jsonl').rename_column('problem', 'question').to_parquet('runs/tiny_math.parquet')" | run math
pairrl eval configs/eval_math_tiny_cpu.yaml --tasks runs/tiny_math.parquet --set tasks.columns.problem=question --strict | run math
.venv/bin/pairrl experiment configs/toy_cpu.yaml --out runs/toy | main_job
.venv/bin/python benchmarks/toy_ablation.py --out runs/toy_ablation --seeds 0 1 2 | ablation
.venv/bin/python benchmarks/toy_ablation.py --evaluate-from runs/toy_ablation --out runs/toy_ablation_eval | ablation
.venv/bin/pairrl experiment configs/smollm2_cpu.yaml --out runs/smollm2 | real_model_job
.venv/bin/pairrl experiment configs/smollm2_cpu.yaml --out runs/smollm2-s1 --set seed=1 | real_model_job
.venv/bin/pairrl experiment configs/smollm2_cpu.yaml --out runs/smollm2-probe --set heldout_probe.every_steps=5 | probed_real_model_job
pairrl eval --tasks ../shared/data/HumanEval.jsonl.gz --pool ../shared/data/pools/humaneval_codegeex13b_adapt_n15.jsonl --k 15 --limit 40 --out runs/eval/he --strict | run humaneval_pool
pairrl eval configs/eval_tiny_cpu.yaml --strict | run tiny_eval
pairrl eval gate runs/eval/he --strict | run humaneval_pool
pairrl eval configs/eval_pool_humaneval_smollm2.yaml --set judge.model=runs/sa0/warm_start --set out_dir=runs/eval/hu_sa0_warm_start | after_real_model_job
pairrl eval configs/eval_pool_humaneval_smollm2.yaml --set judge.model=runs/sa0/final --set out_dir=runs/eval/hu_sa0_final | after_real_model_job
pairrl eval configs/eval_pool_mbpp_smollm2.yaml --set judge.model=runs/sa0/final --set out_dir=runs/eval/mb_sa0_final | after_real_model_job
pairrl eval configs/eval_smollm2_cpu.yaml --set candidates.model=runs/sa0/final --set judge.model=runs/sa0/final --set out_dir=runs/eval/sm_sa0_final | real_model_eval
pairrl select --judge-model runs/tiny-model --candidates tests/readme_fixtures/cands.jsonl --problem "Write f(x) that returns x + 1." --readout forced --min-rating-mass 0 --schedule rated_halving --budget 16 | run select
pairrl select --judge-model runs/tiny-model --candidates tests/readme_fixtures/cands.jsonl --problem "Write f(x) that returns x + 1." --method pointwise_rating --readout forced --min-rating-mass 0 | run select
pairrl slurm render configs/qwen3_4b_deepcoder.yaml --nodes 3 --gpus-per-node 8 --dry-run | run slurm_render
pairrl slurm submit configs/qwen3_4b_deepcoder.yaml --nodes 3 --gpus-per-node 8 | gpu_cluster
squeue -u $USER; tail -f runs/slurm/*/logs/train-*.log | follow_logs
pairrl slurm submit configs/eval_endpoint_mbpp.yaml | endpoint_cluster
pairrl eval configs/eval_tiny_cpu.yaml --set candidates.engine=vllm --set judge.engine=hf --strict | run vllm_eval
VLLM_CPU_KVCACHE_SPACE=1 python -m vllm.entrypoints.openai.api_server --model runs/tiny-model --served-model-name judge --dtype float32 --max-model-len 1024 --no-enable-chunked-prefill --max-logprobs 20 --enforce-eager | serve vllm_server http://127.0.0.1:8000/health
pairrl eval configs/eval_tiny_cpu.yaml --endpoint http://127.0.0.1:8000/v1 --set candidates.served_model=judge --judge-model runs/tiny-model --set judge.engine=hf --strict | run vllm_server
pairrl train configs/tiny_cpu.yaml --set engine.kind=vllm_colocate | run vllm_train
.venv/bin/python -m pytest -q -m "not slow" | suite
pairrl select | prose
pairrl train | prose
pairrl experiment | prose
pairrl execute | prose
pairrl doctor | run doctor
pairrl export | prose
pairrl eval --model | prose
pairrl select --judge-model | prose
pairrl sample --model-dir | prose
pairrl eval gate | prose
pairrl eval merge | prose
pairrl tiny-model runs/tiny-model | run tiny_model
pairrl train configs/math_tiny_cpu.yaml --out runs/math_tiny && pairrl eval configs/eval_math_tiny_cpu.yaml --strict | chain
python benchmarks/selection.py --problems 2000 --seed-offset 10000 | selection_simulation
accelerate launch | prose
pip install -e '.[vllm]' | pip
pip install -e '.[deepspeed]' | pip
pip install -e '.[dev]' | pip
pip install -e '.[gguf]' | pip
OMP_NUM_THREADS=1 /usr/bin/time -v .venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" --durations=25 | suite
.venv/bin/ruff check . && .venv/bin/ruff format --check . | run lint
/usr/bin/time -v .venv/bin/pairrl experiment configs/toy_cpu.yaml --out runs/m0 --set model.path=runs/model-m0 | main_job
/usr/bin/time -v .venv/bin/pairrl experiment configs/smollm2_cpu.yaml --out runs/sa0 | real_model_job
.venv/bin/python benchmarks/seed_curves.py runs/sa0 runs/sa1 --out docs/smollm2_curves.png | after_real_model_job
/usr/bin/time -v | prose
OMP_NUM_THREADS=1 /usr/bin/time -v .venv/bin/python benchmarks/toy_ablation.py --out runs/abl_epyc --seeds 0 1 2 --jobs 3 | ablation
OMP_NUM_THREADS=1 python benchmarks/selection.py --problems 2000 --seed-offset 10000 | selection_simulation
python benchmarks/train_overhead.py | step_timing
OMP_NUM_THREADS=1 python benchmarks/eval_engines.py runs/toy/eval/pairrl/config.json --out runs/engines | after_main_job
OMP_NUM_THREADS=2 python benchmarks/hf_sampling.py | pick_timing
python benchmarks/evalplus_agreement.py write --out runs/evalplus | evalplus_harness
HF_HUB_OFFLINE=1 HUMANEVAL_OVERRIDE_PATH=runs/evalplus/HumanEvalPlus.jsonl evalplus.evaluate --dataset humaneval --samples runs/evalplus/humaneval_samples.jsonl --parallel 2 | evalplus_harness
HF_HUB_OFFLINE=1 MBPP_OVERRIDE_PATH=runs/evalplus/MbppPlus-shared.jsonl evalplus.evaluate --dataset mbpp --samples runs/evalplus/mbpp_samples.jsonl --parallel 2 | evalplus_harness
OMP_NUM_THREADS=1 python benchmarks/evalplus_agreement.py compare --out runs/evalplus | evalplus_harness
setsid python -c 'while 1: pass' & setsid python -c 'while 1: pass' & | busy_loops
"""


# why | the marker a test of it would carry (or -) | the test that comes nearest (tests/)
NOT_HERE_TABLE = r"""
setup | - | test_recipe_toy_pipeline.py::test_main_job_end_to_end_and_eval_reproduces_it | installs Debian and PyPI packages as root (network), then the main job
suite | - | - | the suite itself: run from inside it, it would run itself (CI runs it)
pip | - | - | installs from PyPI (network) into the environment this suite runs in
main_job | - | test_recipe_toy_pipeline.py::test_main_job_end_to_end_and_eval_reproduces_it | the main job: several minutes on 2 cores
after_main_job | - | test_recipe_toy_pipeline.py::test_main_job_end_to_end_and_eval_reproduces_it | reads the main job's run (several minutes)
ablation | - | test_toy_ablation.py::test_the_children_of_jobs_n_are_told_to_write_no_tables | three main jobs: about 16 min on 2 cores
real_model_job | - | test_recipe_smollm2_job.py::test_the_real_model_job_runs_end_to_end_and_its_judge_parses | the real-model job: about 40 min on 2 cores
probed_real_model_job | - | test_heldout_probe.py::test_a_training_run_probes_at_its_start_every_n_steps_and_at_its_end | the real-model job with its judge probed every 5 steps: about an hour on 2 cores
after_real_model_job | - | test_recipe_smollm2_job.py::test_the_pool_benchmark_runs_with_the_jobs_judge | reads runs/sa0 (and runs/sa1), the 40-minute real-model job's runs
real_model_eval | - | test_eval_real_model_config.py::test_real_model_config_runs_every_comparison_on_the_tiny_model | reads runs/sa0, the 40-minute real-model job's run, then samples and judges for 7 min on 2 cores
eight_gpus | gpu | test_train_config.py::test_paper_recipe_values | 8 GPUs of 80 GB and Qwen3-4B from the model hub (network)
one_gpu | gpu | test_lora.py::test_one_gpu_lora_config_plans_one_row_per_micro_batch | a 24-48 GB GPU and Qwen3-4B from the model hub (network)
gpu_cluster | slurm | test_slurm_render.py::test_multi_node_roles_rendezvous_and_server_host | a Slurm cluster of 3 nodes with 8 GPUs each
follow_logs | slurm | test_slurm_cluster.py::test_cpu_training_demo_two_steps | follows the logs of the job above until interrupted (tail -f never exits)
endpoint_cluster | slurm | test_slurm_cluster.py::test_two_shard_eval_with_merge | a Slurm cluster and a model served at the config's endpoint
selection_simulation | - | test_schedules.py::test_halving_beats_swiss_at_2n_on_a_simulated_judge | a simulation of 2000 problems per cell: about 15 min
step_timing | - | test_train_cpu.py::test_pairrl_cpu_run_metrics_wandb_and_resume | a timing benchmark: its numbers are wall times, not a check
evalplus_harness | - | test_evalplus_agreement_script.py::test_every_kept_evalplus_run_is_compared | EvalPlus's own harness (installed apart from the venv) on 7,240 programs, then pairrl's on the same: minutes
busy_loops | - | - | two busy loops that never end: the load a comparison runs beside
pick_timing | - | test_samplers.py::test_batched_pick_draws_what_multinomial_draws | a timing benchmark: its numbers are wall times, not a check
"""
NOT_HERE = {
    key: (marker, nearest, why)
    for key, marker, nearest, why in (
        line.split(" | ", 3) for line in NOT_HERE_TABLE.split("\n") if line
    )
}


@dataclass(frozen=True)
class Scenario:
    setup: tuple[str, ...] = ()  # shell lines run first, in the scratch checkout
    fixtures: tuple[str, ...] = ()  # files of tests/readme_fixtures/ copied into it
    slow: bool = True  # over about 30 s on 2 cores
    needs: str = ""  # vllm or smollm2: skipped, saying why, when it is not installed
    in_repo: bool = False  # read-only commands that must walk the real tree, not links


TINY_MODEL = "pairrl tiny-model runs/tiny-model"
SCENARIOS: dict[str, Scenario] = {
    "dry_run": Scenario(slow=False),
    "tiny_model": Scenario(slow=False),
    "doctor": Scenario(slow=False),
    "lint": Scenario(slow=False, in_repo=True),
    "slurm_render": Scenario(slow=False),
    "select": Scenario((TINY_MODEL,), slow=False),
    "smollm2_sample": Scenario(needs="smollm2"),
    "tiny_train": Scenario(),
    "two_processes": Scenario(),
    "lora": Scenario(),
    "math": Scenario(),
    "humaneval_pool": Scenario(),
    "tiny_eval": Scenario(setup=(TINY_MODEL,)),
    "vllm_eval": Scenario(setup=(TINY_MODEL,), needs="vllm"),
    "vllm_server": Scenario(setup=(TINY_MODEL,), needs="vllm"),
    "vllm_train": Scenario(needs="vllm"),
}


def parse_table(table: str) -> dict[str, tuple[str, ...]]:
    """``{command: (check word, its arguments...)}`` from the lines of ``TABLE``."""
    entries = {}
    for line in table.strip().splitlines():
        command, _, check = line.rpartition(" | ")
        entries[command] = tuple(check.split())
    return entries


COMMANDS = parse_table(TABLE)


def strip_comment(line: str) -> str:
    """``line`` without a shell comment: a ``#`` that starts a word outside quotes."""
    quote = ""
    for at, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or line[at - 1].isspace()):
            return line[:at].rstrip()
    return line.rstrip()


def bash_block_commands(text: str) -> list[str]:
    """The command lines of the ```bash blocks, continuations joined, comments dropped."""
    commands, language, pending = [], None, ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            language = stripped[3:].strip() if language is None else None
            continue
        if language != "bash":
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        command, pending = strip_comment(pending + stripped), ""
        if command:
            commands.append(command)
    return commands


def is_invocation(span: str) -> bool:
    """Whether an inline code span runs a program the README's blocks use, with no
    placeholder left to fill in."""
    words = [w for w in span.split() if not re.match(r"[A-Za-z_]\w*=", w)]
    if len(words) < 2:
        return False
    program = words[0]
    if program not in PROGRAMS and not program.startswith(VENV_BIN):
        return False
    return not any(PLACEHOLDER.search(word) for word in words)


def inline_commands(text: str) -> list[str]:
    """The inline code spans outside fenced blocks that are invocations, whitespace
    (a span wrapped over lines) made single spaces."""
    prose, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        prose.append("" if fenced or line.strip().startswith("```") else line)
    spans = (" ".join(m.group(1).split()) for m in re.finditer(r"`([^`]+)`", "\n".join(prose)))
    return [span for span in spans if is_invocation(span)]


def readme_commands(text: str) -> list[str]:
    """Every command of one document, once each, in its order (blocks, then inline)."""
    return list(dict.fromkeys(bash_block_commands(text) + inline_commands(text)))


DOCUMENTS = [
    REPO / "README.md",
    *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "experiments.md"),
]


def documented_commands() -> list[str]:
    """Every command of README.md and docs/*.md (but the experiments' record), once each."""
    found = (readme_commands(p.read_text(encoding="utf-8")) for p in DOCUMENTS)
    return list(dict.fromkeys(c for commands in found for c in commands))


def test_the_extraction_joins_continuations_drops_comments_and_placeholders() -> None:
    text = (
        "Run `pairrl train CONFIG --dry-run`, `pairrl eval --model` or `pairrl doctor`; see\n"
        "`pairrl tiny-model D [--seed S]`, `pip install '.[dev]'`, `pairrl eval <run>/x`,\n"
        "`pairrl select ...` and `OMP_NUM_THREADS=1 python x.py\n--seed 1`.\n\n"
        "  ```bash\n  # a comment line\n  pairrl a --x 1 \\\n      --y 2   # trailing\n"
        "  echo '# kept' \"#kept\" a#b\n  ```\n\n```yaml\npairrl not: bash\n```\n"
    )
    assert bash_block_commands(text) == ["pairrl a --x 1 --y 2", "echo '# kept' \"#kept\" a#b"]
    assert inline_commands(text) == [
        "pairrl eval --model",
        "pairrl doctor",
        "pip install '.[dev]'",
        "OMP_NUM_THREADS=1 python x.py --seed 1",
    ]


def test_every_documented_command_has_a_check() -> None:
    found = documented_commands()
    missing = [c for c in found if c not in COMMANDS]
    stale = [c for c in COMMANDS if c not in found]
    assert not missing, "commands not in TABLE (give each a check):\n" + "\n".join(missing)
    assert not stale, "TABLE lines no document shows:\n" + "\n".join(stale)


def names_a_test(node: str) -> bool:
    """Whether ``FILE.py::NAME`` names a test function defined in tests/FILE.py."""
    path, _, name = node.partition("::")
    file = REPO / "tests" / path
    if not file.is_file():
        return False
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def scenario_lines(name: str, documented: list[str]) -> list[str]:
    """The documented commands of scenario ``name``, in ``TABLE`` order."""
    return [c for c, check in COMMANDS.items() if check[:1] in (("run",), ("serve",))
            and check[1] == name and c in documented]  # fmt: skip


def test_the_table_is_consistent() -> None:
    order = list(COMMANDS)
    for command, (check, *args) in COMMANDS.items():
        if check in ("run", "serve"):
            assert args and args[0] in SCENARIOS, f"{command}: no scenario {args}"
            assert len(args) == (2 if check == "serve" else 1), f"{command}: {check} {args}"
        elif check == "chain":
            parts = command.split(" && ")
            assert {COMMANDS.get(p, ("",))[0] for p in parts} == {"run"}, command
            assert len({COMMANDS[p][1] for p in parts}) == 1, f"{command}: scenarios differ"
            where = [order.index(p) for p in parts]
            assert where == sorted(where), f"{command}: its parts run in another order"
        elif check != "prose":
            assert check in NOT_HERE, f"{command}: unknown check {check!r}"
            marker, nearest, _ = NOT_HERE[check]
            assert marker in ("-", "gpu", "slurm"), check
            assert nearest == "-" or names_a_test(nearest), nearest
    unused = set(SCENARIOS) - {args[0] for check, *args in COMMANDS.values() if check == "run"}
    assert not unused, f"scenarios with no documented command: {sorted(unused)}"


def scratch_checkout(root: Path) -> Path:
    """An empty folder holding links to the repository's files (not its outputs), with
    ``../shared`` linked beside it as it lies beside the repository."""
    checkout = root / "main"
    checkout.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in OUTPUTS:
            (checkout / entry.name).symlink_to(entry)
    if (REPO.parent / "shared").exists():
        (root / "shared").symlink_to(REPO.parent / "shared")
    return checkout


def run_line(line: str, cwd: Path, env: dict[str, str], deadline: float) -> None:
    """Run one shell line; fail with its output's tail unless it exits 0."""
    try:
        done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=max(1.0, deadline - time.monotonic()))  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{line}` did not finish in time")
    if done.returncode != 0:
        pytest.fail(f"`{line}` exited {done.returncode}:\n{(done.stdout + done.stderr)[-4000:]}")


def start_server(line: str, ready_url: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start a server command in a session of its own; return once ``ready_url`` answers."""
    try:
        httpx.get(ready_url, timeout=2)
        pytest.skip(f"something already answers at {ready_url}")
    except httpx.HTTPError:
        pass  # the port is free, as the README's command needs it
    with (cwd / "server.log").open("w") as log:
        server = subprocess.Popen(["bash", "-c", line], cwd=cwd, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    started = time.monotonic()
    while time.monotonic() - started < SERVER_READY_S:
        if server.poll() is not None:
            pytest.fail(f"`{line}` exited {server.returncode}:\n{log_tail(cwd)}")
        try:
            if httpx.get(ready_url, timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(1)  # not listening yet
    stop_server(server)
    pytest.fail(f"`{line}` not ready after {SERVER_READY_S} s:\n{log_tail(cwd)}")


def log_tail(cwd: Path) -> str:
    return (cwd / "server.log").read_text(errors="replace")[-4000:]


def stop_server(server: subprocess.Popen) -> None:
    """TERM, then KILL, the server's process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
            server.wait(timeout=30)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def require(needs: str) -> None:
    """Skip, saying why, when the optional install a scenario needs is absent."""
    if needs == "vllm":
        from vllm_support import require_vllm

        require_vllm()
    elif needs == "smollm2":
        from pairrl import model_source

        if model_source.smollm2_gguf() is None:
            pytest.skip("the SmolLM2 GGUF is not installed (.ci/setup.sh installs it)")


def timeout_s(scenario: Scenario) -> int:
    return 600 if scenario.slow else 120


def scenario_params() -> list:
    """One test per scenario: slow, timed out and expected to fail as its scenario says."""
    params = []
    for name, scenario in SCENARIOS.items():
        marks = [pytest.mark.timeout(timeout_s(scenario) + 60)]
        marks += [pytest.mark.slow] if scenario.slow else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def user_shell_env() -> dict[str, str]:
    """The environment of a user's shell: this one without the variables the suite's own
    in-process engines set (vLLM's, which a user's shell does not hold), the venv first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return env


@pytest.mark.parametrize("name", scenario_params())
def test_readme_commands_run_as_written(name: str, tmp_path: Path) -> None:
    scenario = SCENARIOS[name]
    require(scenario.needs)
    lines = scenario_lines(name, documented_commands())
    assert lines, f"no document shows a command of scenario {name!r}"
    cwd = REPO if scenario.in_repo else scratch_checkout(tmp_path)
    for fixture in scenario.fixtures:
        shutil.copy(FIXTURES / fixture, cwd / fixture)
    env = user_shell_env()
    deadline = time.monotonic() + timeout_s(scenario)
    servers: list[subprocess.Popen] = []
    try:
        for line in scenario.setup:
            run_line(line, cwd, env, deadline)
        for line in lines:
            if COMMANDS[line][0] == "serve":
                servers.append(start_server(line, COMMANDS[line][2], cwd, env))
            else:
                run_line(line, cwd, env, deadline)
    finally:
        for server in servers:
            stop_server(server)

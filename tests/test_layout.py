"""The house rules, checked on the code itself: one namespace, the import direction, no
import circles, recipes on top, Slurm Python only in slurm/, small files; and a wheel that
installs ``pairrl`` and nothing else at the top level."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# folder -> installed package (pyproject's package-dir)
PACKAGES = {
    "pairrl": "pairrl",
    "rewards": "pairrl.rewards",
    "rollout": "pairrl.rollout",
    "train": "pairrl.train",
    "eval": "pairrl.eval",
    "slurm": "pairrl.slurm",
    "recipes": "pairrl.recipes",
}
# What each layer may import (besides itself and the root's shared modules).
ALLOWED = {
    "pairrl.rewards": set(),
    "pairrl.rollout": {"pairrl.rewards"},
    "pairrl.train": {"pairrl.rewards", "pairrl.rollout"},
    "pairrl.eval": {"pairrl.rewards", "pairrl.rollout"},
    "pairrl.slurm": {"pairrl.rewards", "pairrl.rollout", "pairrl.train", "pairrl.eval"},
    "pairrl.recipes": {"pairrl.rewards", "pairrl.rollout", "pairrl.train", "pairrl.eval"},
}
ROOT_SHARED = {
    "pairrl.child_process",
    "pairrl.cli_help",
    "pairrl.config",
    "pairrl.cpu_dtype",
    "pairrl.cpu_floats",
    "pairrl.errors",
    "pairrl.gguf_header",
    "pairrl.memory",
    "pairrl.model_paths",
    "pairrl.model_source",
    "pairrl.progress",
    "pairrl.tiny_model",
    "pairrl.versions",
    "pairrl.weight_files",
}
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """pairrl modules named by import statements (module level only, or anywhere);
    ``from pkg import mod`` names ``pkg.mod`` when that is a module, else ``pkg``."""
    modules = _modules()
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return {name for name in found if name == "pairrl" or name.startswith("pairrl.")}


def _layer(module: str) -> str:
    """The subpackage a module belongs to, or "pairrl" for the root's own modules."""
    parts = module.split(".")
    if len(parts) > 1 and f"pairrl.{parts[1]}" in ALLOWED:
        return f"pairrl.{parts[1]}"
    return "pairrl"


def test_nothing_is_imported_by_its_old_top_level_name() -> None:
    old = {"rewards", "rollout", "train", "eval", "slurm", "recipes"}
    offenders = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{module}: {n}" for n in names if n.split(".")[0] in old]
    assert not offenders, offenders


def test_import_direction() -> None:
    """rewards <- rollout <- {train, eval} <- slurm; recipes on top; anywhere in a file."""
    modules = _modules()
    broken = []
    for module, path in modules.items():
        layer = _layer(module)
        if layer not in ALLOWED:
            continue  # the root package: config and tiny model import nothing of pairrl
        for target in _imports(path, top_level_only=False):
            other = _layer(target)
            if other == layer or target in ROOT_SHARED:
                continue
            if other not in ALLOWED[layer]:
                broken.append(f"{module} imports {target}")
    assert not broken, "\n".join(broken)


def test_the_root_imports_only_the_root() -> None:
    """The root package (the CLI's front door, the config base, errors, memory, progress,
    the tiny model, versions) sits under every layer, so it imports none of them: a
    subcommand reaches the CLI through its entry point, never by an import."""
    modules = _modules()
    broken = [
        f"{module} imports {target}"
        for module, path in modules.items()
        if _layer(module) == "pairrl"
        for target in _imports(path, top_level_only=False)
        if _layer(target) != "pairrl"
    ]
    assert not broken, "\n".join(broken)


def test_no_library_module_imports_a_recipe() -> None:
    library = {m: p for m, p in _modules().items() if not m.startswith("pairrl.recipes")}
    hits = [
        f"{m} imports {t}"
        for m, p in library.items()
        for t in _imports(p, top_level_only=False)
        if t.startswith("pairrl.recipes")
    ]
    assert not hits, hits


def test_no_import_circles() -> None:
    """Among package modules, counting imports inside functions too (a deferred import
    that closes a circle is still one)."""
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        edges = set()
        for target in _imports(path, top_level_only=False):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # a package is initialised before its submodules anyway: not a design circle
            if target and target != module and not module.startswith(target + "."):
                edges.add(target)
        graph[module] = edges
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles


def test_slurm_python_lives_in_slurm_and_files_are_small() -> None:
    for module, path in _modules().items():
        text = path.read_text()
        if not module.startswith("pairrl.slurm"):
            assert "#SBATCH" not in text and "srun " not in text, module
        assert len(text.splitlines()) <= MAX_LINES, f"{module}: {len(text.splitlines())} lines"


@pytest.mark.slow
def test_wheel_installs_only_the_pairrl_namespace(tmp_path: Path) -> None:
    """`pip wheel` of the checkout holds only pairrl; importing it works outside the repo."""
    import shutil

    source = tmp_path / "checkout"  # build a copy: setuptools writes build/ into the tree
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".venv", ".git", "runs", "build"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("pairrl-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        names = set(archive.namelist())
    assert {t for t in tops if not t.endswith(".dist-info")} == {"pairrl"}, tops
    for module in ("pairrl/train/run.py", "pairrl/slurm/local_cluster.sh",
                   "pairrl/recipes/toy_addition/recipe.py", "pairrl/rewards/sandbox_codec.py"):  # fmt: skip
        assert module in names, module
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)  # what pip install does for a pure-Python wheel
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import pairrl.train, pairrl.rollout, pairrl.slurm, pairrl.recipes; "
         "print(pairrl.train.__file__)"],
        capture_output=True, text=True, cwd=outside, timeout=120,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    assert str(site) in probe.stdout

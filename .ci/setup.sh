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
# torch first, pinned: this is the CPU wheel; an unpinned torch would pull a multi-GB CUDA build.
.venv/bin/pip install -q torch==2.13.0
# DeepSpeed builds from source against the torch above (no build isolation, or pip would
# fetch a CUDA torch into the build environment); its ops compile on first use.
.venv/bin/pip install -q --no-build-isolation 'deepspeed>=0.18.6'
.venv/bin/pip install -q -e '.[dev,serve,deepspeed]'
.venv/bin/pairrl doctor

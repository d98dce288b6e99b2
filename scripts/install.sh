#!/usr/bin/env bash
# Fresh-machine install of evigraph into ./.venv (CPU): torch's CPU wheel first, then evigraph with its dev
# tools and the TRL trainer (`evigraph train --engine trl`, tested on CPU), then `evigraph setup` for the pieces
# pip cannot install on its own (see README "Install").
# Extra arguments go to `evigraph setup` (e.g. --no-model-cache).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
# torch must come first and be a CPU build: an unpinned resolve pulls a CUDA torch with ~20 CUDA packages.
TORCH_SPEC="${EVIGRAPH_TORCH_SPEC:-torch==2.13.0}"

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "$TORCH_SPEC"
.venv/bin/python -m pip install --quiet -c scripts/constraints-cpu.txt -e '.[dev,trl]'
# OpenRLHF's own code for the trainer contract tests, without its GPU dependencies (flash-attn cannot build
# here); training itself needs the [train] extra on a GPU machine.
.venv/bin/python -m pip install --quiet --no-deps openrlhf==0.11.2
.venv/bin/evigraph setup "$@"

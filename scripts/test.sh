#!/usr/bin/env bash
# Runs every test: the Rust workspace (unit, property, multi-process) and the real
# Slurm clients (submitit, dask-jobqueue, Snakemake) against a local Drover cluster.
# Installs what it needs first: Python packages into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/pytest ] || ! cmp -s tests/python/requirements.txt .venv/requirements.txt; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet -r tests/python/requirements.txt
  cp tests/python/requirements.txt .venv/requirements.txt
fi

scripts/build.sh
# Multi-process tests start several daemons each: two at a time on a small machine.
cargo test --workspace -- --test-threads=2
PATH="$PWD/.venv/bin:$PATH" .venv/bin/pytest -q -p no:cacheprovider tests/python

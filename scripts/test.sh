#!/usr/bin/env bash
# Runs every test: the Rust workspace (unit, property, multi-process) and the real
# Slurm clients (submitit, dask-jobqueue, Snakemake, torchrun) against a local Drover
# cluster.
# Installs what it needs first: Python packages into .venv, and, as root on Debian,
# hwloc's development files (libhwloc-dev, libudev-dev) for the node daemon's topology;
# without them the daemon is built without hwloc and its topology tests do not run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/pytest ] || ! cmp -s tests/python/requirements.txt .venv/requirements.txt; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet -r tests/python/requirements.txt
  cp tests/python/requirements.txt .venv/requirements.txt
fi

if [ -z "$(scripts/cargo-features.sh)" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  install_hwloc() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q pkg-config libhwloc-dev libudev-dev >/dev/null 2>&1; }
  install_hwloc || { apt-get update -q >/dev/null 2>&1 && install_hwloc; } ||
    echo "test.sh: cannot install libhwloc-dev; building without hwloc" >&2
fi

scripts/build.sh
# shellcheck disable=SC2207
features=($(scripts/cargo-features.sh))
# Multi-process tests start several daemons each: two at a time on a small machine.
cargo test "${features[@]}" --workspace -- --test-threads=2
PATH="$PWD/.venv/bin:$PATH" .venv/bin/pytest -q -p no:cacheprovider tests/python

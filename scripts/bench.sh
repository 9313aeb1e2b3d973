#!/usr/bin/env bash
# Builds Drover in release mode and prints its benchmark figures on this machine
# (`drover-bench`; pass --quick for smaller counts). When a real Slurm answers here
# (its sinfo first on PATH, or --slurm-bin DIR), the same command-line workloads also
# run against it, side by side; --no-slurm skips that, --side-only runs only that.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --release
exec target/release/drover-bench "$@"

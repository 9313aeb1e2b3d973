#!/usr/bin/env bash
# Builds Drover in release mode and prints its benchmark figures on this machine
# (`drover bench`; pass --quick for smaller counts).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins
exec target/release/drover bench "$@"

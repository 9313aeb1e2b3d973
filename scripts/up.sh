#!/usr/bin/env bash
# Builds Drover and starts a local cluster with the embedded default config
# (`drover up`): a controller and 4 node daemons on loopback. Ctrl-C stops it; running
# it again recovers the state. Arguments go to `drover up` (--nodes, --dir, --port, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --release
exec target/release/drover up "$@"

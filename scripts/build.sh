#!/usr/bin/env bash
# Builds every binary of the workspace. Arguments go to cargo (`--release`).
#
# The `drover` CLI is linked statically where the toolchain can (Linux with glibc and
# its static libc): every `sbatch` or `squeue` call is a new process, and a static
# executable starts without the dynamic loader, about a millisecond sooner per call on
# a virtual machine. Elsewhere, or without a static libc, it is linked dynamically.
# The daemons stay dynamic: the node daemon loads GPU libraries at run time.
#
# Each executable is then rewritten as a fresh copy of itself. The linker writes its
# output in small pieces, and while those pages stay cached the kernel keeps them as
# single 4 KB pages; a copy written in large chunks is cached in large folios, which a
# new process maps in fewer and cheaper faults. Started from the linker's file, an
# `sbatch` call took 0.3-0.6 ms longer here.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck disable=SC2207
features=($(scripts/cargo-features.sh))
cargo build "$@" "${features[@]}" --workspace --bins --exclude cli
# The fake NVML library the tests load instead of the NVIDIA driver's.
cargo build "$@" -p fake-nvml

static=()
# The host is read whole first: `rustc -vV | grep -q` under pipefail fails whenever grep
# exits before rustc has written everything, and the CLI was then linked dynamically.
host=$(rustc -vV | sed -n 's/^host: //p')
if { [ "$host" = x86_64-unknown-linux-gnu ] || [ "$host" = aarch64-unknown-linux-gnu ]; } &&
  [ -f "$(cc -print-file-name=libc.a 2>/dev/null)" ]; then
  static=(-C target-feature=+crt-static -C relocation-model=static)
fi
cargo rustc "$@" -p cli --bin drover -- "${static[@]}"

profile=debug
for arg in "$@"; do
  case "$arg" in --release | -r) profile=release ;; esac
done
out="${CARGO_TARGET_DIR:-target}/$profile"
for bin in drover drover-ctld drover-noded drover-auth drover-sim drover-bench; do
  if [ -f "$out/$bin" ]; then
    cp "$out/$bin" "$out/$bin.copy"
    mv -f "$out/$bin.copy" "$out/$bin"
  fi
done

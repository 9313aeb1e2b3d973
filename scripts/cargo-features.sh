#!/usr/bin/env bash
# Prints the cargo feature flags this host can build: `--features noded/hwloc` where
# pkg-config finds hwloc 2.8 or later and libudev (Debian: libhwloc-dev, libudev-dev),
# for the node daemon's processor topology. `scripts/build.sh` and `scripts/test.sh`
# build with the same flags, so that the tests run the binaries built.
if command -v pkg-config >/dev/null 2>&1 &&
  pkg-config --exists 'hwloc >= 2.8.0' libudev 2>/dev/null; then
  echo "--features noded/hwloc"
fi

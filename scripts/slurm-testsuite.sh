#!/usr/bin/env bash
# Runs Slurm's own test suite (tag slurm-22-05-8-1) against a local Drover cluster and
# prints one line per test, then `N passed, M failed, K skipped`.
#
#   scripts/slurm-testsuite.sh                  # the tests in scripts/slurm-testsuite.list
#   scripts/slurm-testsuite.sh test1.4 commands/srun/test_--help.py
#   scripts/slurm-testsuite.sh --all            # every expect and python test
#
# The suite is Slurm's code under its own licence: it is fetched, never vendored. It
# comes from Debian's source package slurm-wlm 22.05.8 (`apt-get source
# --download-only`, with a private apt configuration whose deb-src entries mirror the
# system's own Debian sources), and is unpacked under $SLURM_TESTSUITE_DIR (default
# ~/.cache/drover/slurm-testsuite). The expect tests need `expect` (installed from
# Debian's packages when missing, as root); the python tests run in a virtual
# environment of their own with pytest 7.1 (22.05's conftest imports `py.io`).
#
# The cluster is shaped like the reference Slurm: partitions debug (default) and gpu,
# node[1-4] of 8 CPUs (one socket of 8 cores), 16000 MB and 4 gpu:h100 each, and its
# multifactor priority weights (age 1000, fair share 10000, job size 100, partition
# 1000). It is
# started with `drover up --config` on port $SLURM_TESTSUITE_PORT (default 7817), and
# stopped at the end. The suite runs in its local-config mode: it never rewrites the
# cluster's configuration. A slurm.conf written by `scontrol write config` (and a
# gres.conf) is there for the tests that read it. Each test has
# $SLURM_TESTSUITE_TIMEOUT seconds (default 300).
# PROFILE=release tests release binaries (built first).
#
# SLURM_TESTSUITE_AGAINST=slurm runs the same tests, the same way, against a real Slurm
# that is already running instead (its commands first on PATH, its configuration where
# $SLURM_CONF says, default /etc/slurm/slurm.conf): the reference the figures in
# docs/slurm-testsuite.md are measured against.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${SLURM_TESTSUITE_DIR:-$HOME/.cache/drover/slurm-testsuite}
port=${SLURM_TESTSUITE_PORT:-7817}
per_test=${SLURM_TESTSUITE_TIMEOUT:-300}
profile=${PROFILE:-debug}
tag=slurm-slurm-22-05-8-1
src=$work/$tag/testsuite
cluster=$work/cluster

mkdir -p "$work"

# --- Slurm's test suite, from Debian's source package ---------------------------------
if [ ! -d "$src" ]; then
  apt_dir=$work/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources"
  # The system's Debian sources, as deb-src.
  found=
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && grep -q '^URIs:.*debian' "$f" || continue
    sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/sources/$(basename "$f")"
    found=1
  done
  if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb \(.*debian.*\)/deb-src \1/p' /etc/apt/sources.list >"$apt_dir/sources/system.list"
    [ -s "$apt_dir/sources/system.list" ] && found=1
  fi
  [ -n "$found" ] || { echo "slurm-testsuite: no Debian apt sources on this system" >&2; exit 1; }
  apt_opts=(-q -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
    # The files are the caller's, under a directory apt's own user may not enter.
    -o "APT::Sandbox::User=$(id -un)")
  apt-get "${apt_opts[@]}" update >/dev/null
  # Debian 12's slurm-wlm is 22.05.8 (with Debian's patches, which the tarball leaves out).
  (cd "$work" && apt-get "${apt_opts[@]}" source --download-only slurm-wlm >/dev/null 2>&1)
  [ -f "$work/slurm-wlm_22.05.8.orig.tar.gz" ] ||
    { echo "slurm-testsuite: Debian's apt sources have no slurm-wlm 22.05.8" >&2; exit 1; }
  tar -C "$work" -xzf "$work"/slurm-wlm_22.05.8.orig.tar.gz
  [ -d "$src" ] || { echo "slurm-testsuite: $src missing after unpacking" >&2; exit 1; }
fi

# --- What the suite runs with ---------------------------------------------------------
if ! command -v expect >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q expect >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q expect >/dev/null; }
fi
venv=$work/venv
if [ ! -x "$venv/bin/pytest" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet 'pytest>=7,<7.2' py pexpect
fi

if [ "${SLURM_TESTSUITE_AGAINST:-drover}" = slurm ]; then
  # --- A real Slurm, already running ------------------------------------------------
  slurm_conf=${SLURM_CONF:-/etc/slurm/slurm.conf}
  [ -f "$slurm_conf" ] && command -v sinfo >/dev/null ||
    { echo "slurm-testsuite: no running Slurm (no $slurm_conf or sinfo)" >&2; exit 1; }
  rm -rf "$cluster"
  mkdir -p "$cluster"
  cat >"$cluster/testsuite.conf" <<EOF
SlurmSourceDir=$work/$tag
SlurmBuildDir=$work/$tag
SlurmInstallDir=$(dirname "$(dirname "$(command -v sinfo)")")
SlurmConfigDir=$(dirname "$slurm_conf")
EOF
  export SLURM_TESTSUITE_CONF=$cluster/testsuite.conf SLURM_CONF=$slurm_conf
else
# --- The Drover cluster ---------------------------------------------------------------
if [ "$profile" = release ]; then "$repo/scripts/build.sh" --release; else "$repo/scripts/build.sh"; fi
bin=$repo/target/$profile
rm -rf "$cluster"
mkdir -p "$cluster/etc" "$cluster/sbin"
# What a slurmd here would report as its TmpDisk: the size of /tmp, in MB.
tmp_mb=$(df -Pm /tmp | awk 'NR == 2 { print $2 }')
cat >"$cluster/drover.toml" <<EOF
# Slurm's test suite: shaped like the reference Slurm 22.05 cluster.
cluster_name = "drover"
state_dir = "$cluster/state"

[controller]
addr = "127.0.0.1:$port"
heartbeat_interval_ms = 1000
node_timeout_s = 10
kill_wait_s = 5
min_job_age_s = 300
return_to_service = 1

[[nodes]]
names = "node[1-4]"
cpus = 8
sockets = 1
cores_per_socket = 8
memory = "16000M"
gpus = 4
gpu_type = "h100"
config_overrides = true
tmp_disk = "${tmp_mb}M"

[[partitions]]
name = "debug"
nodes = "ALL"
default = true
max_time = "UNLIMITED"

[[partitions]]
name = "gpu"
nodes = "ALL"
max_time = "UNLIMITED"

[priority]
weight_age = 1000
weight_fairshare = 10000
weight_job_size = 100
weight_partition = 1000

[cgroup]
prefix = "drover-suite-$port"

[auth]
key_file = "$cluster/cluster.key"
socket = "$cluster/auth.sock"
EOF
"$bin/drover" up --dir "$cluster" --config "$cluster/drover.toml" >"$cluster/up.log" 2>&1 &
up_pid=$!
stop_cluster() {
  kill -INT "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
}
trap stop_cluster EXIT
export PATH="$cluster/bin:$PATH"
for _ in $(seq 1 120); do
  [ -x "$cluster/bin/scontrol" ] && scontrol ping 2>/dev/null | grep -q 'is UP' && break
  kill -0 "$up_pid" 2>/dev/null || { cat "$cluster/up.log" >&2; exit 1; }
  sleep 0.5
done
for _ in $(seq 1 120); do
  [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" -ge 4 ] && break
  sleep 0.5
done
# The daemons under Slurm's names, for the tests that look for them.
ln -sf "$bin/drover-ctld" "$cluster/sbin/slurmctld"
ln -sf "$bin/drover-noded" "$cluster/sbin/slurmd"
# The settings as slurm.conf lines, for the tests that read the file.
rm -f "$cluster/etc/slurm.conf".*
scontrol write config "$cluster/etc/slurm.conf" >/dev/null
mv "$cluster/etc/slurm.conf".* "$cluster/etc/slurm.conf"
cat >>"$cluster/etc/slurm.conf" <<EOF
NodeName=node[1-4] CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=16000 Gres=gpu:h100:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
EOF
echo "NodeName=node[1-4] Name=gpu Type=h100 File=/dev/nvidia[0-3]" >"$cluster/etc/gres.conf"
cat >"$cluster/testsuite.conf" <<EOF
SlurmSourceDir=$work/$tag
SlurmBuildDir=$work/$tag
SlurmInstallDir=$cluster
SlurmConfigDir=$cluster/etc
EOF
export SLURM_TESTSUITE_CONF=$cluster/testsuite.conf SLURM_CONF=$cluster/etc/slurm.conf
fi

# --- The tests ------------------------------------------------------------------------
tests=()
if [ "${1:-}" = --all ]; then
  while IFS= read -r t; do tests+=("$t"); done \
    < <(ls "$src/expect" | grep -E '^test[0-9]+\.[0-9]+$' | sort -t. -k1.5n -k2n)
  while IFS= read -r t; do tests+=("${t#"$src"/python/tests/}"); done \
    < <(find "$src/python/tests" -name 'test_*.py' | sort)
elif [ $# -gt 0 ]; then
  tests=("$@")
else
  while IFS= read -r t; do
    t=${t%%#*}; t=${t//[[:space:]]/}
    [ -n "$t" ] && tests+=("$t")
  done <"$repo/scripts/slurm-testsuite.list"
fi

logs=$work/logs
rm -rf "$logs"
mkdir -p "$logs"
passed=0 failed=0 skipped=0
for t in "${tests[@]}"; do
  log=$logs/${t//\//_}.log
  case "$t" in
    *.py)
      rc=0
      (cd "$src/python" && timeout -k 10 "$per_test" "$venv/bin/pytest" -p no:cacheprovider \
        -q --local-config --junitxml="$log.xml" "tests/$t") >"$log" 2>&1 || rc=$?
      if [ $rc = 0 ] && grep -q 'skipped="[1-9]' "$log.xml" && ! grep -qE '[0-9]+ passed' "$log"; then
        result=skipped
      elif [ $rc = 0 ]; then result=passed
      elif [ $rc = 5 ] || { grep -qE ' skipped' "$log" && ! grep -qE '[0-9]+ (passed|failed)' "$log"; }; then
        result=skipped
      else result=failed; fi
      ;;
    *)
      rc=0
      (cd "$src/expect" && timeout -k 10 "$per_test" expect "$t") >"$log" 2>&1 </dev/null || rc=$?
      case $rc in 0) result=passed ;; 255) result=skipped ;; *) result=failed ;; esac
      ;;
  esac
  case $result in passed) passed=$((passed + 1)) ;; failed) failed=$((failed + 1)) ;; *) skipped=$((skipped + 1)) ;; esac
  printf '%-8s %s\n' "$result" "$t"
  # Leave no job of one test behind for the next.
  scancel -u "$(id -un)" >/dev/null 2>&1 || true
done
echo "$passed passed, $failed failed, $skipped skipped (logs in $logs)"

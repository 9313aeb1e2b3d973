#!/usr/bin/env bash
# Checks node execution on a real GPU server (run as root): NVML discovery and MIG
# listing against nvidia-smi, cgroup confinement (v2 where the host runs it), and
# CUDA_VISIBLE_DEVICES binding and device confinement of a job on a one-node cluster
# that finds its GPUs (no config_overrides). Prints one PASS/FAIL/NOTE line per check
# and exits non-zero when a check fails. Not part of the test command: it needs a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."

fail=0
pass() { echo "PASS $*"; }
bad() { echo "FAIL $*"; fail=1; }
note() { echo "NOTE $*"; }

scripts/build.sh >/dev/null 2>&1 || { echo "FAIL build"; exit 1; }
bin=$PWD/target/debug

# 1. Discovery: the GPUs and MIG instances nvidia-smi lists, as drover-noded finds them.
inv=$("$bin/drover-noded" --name gpucheck inventory 2>&1)
echo "$inv"
want=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
mig=$(nvidia-smi -L 2>/dev/null | grep -c '  MIG ')
in_mig=$(nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader 2>/dev/null | grep -c Enabled)
whole=$((want - in_mig))
found=$(echo "$inv" | grep -c '^GPU ')
[ "$found" -eq $((whole + mig)) ] && pass "discovery: $found devices ($whole GPUs, $mig MIG instances)" ||
  bad "discovery: found $found, nvidia-smi lists $whole GPUs not in MIG mode and $mig MIG instances"

# 2. cgroups: the real-cgroup tests of the node daemon (v1 or v2, as the host mounts).
if grep -q 'cgroup2 /sys/fs/cgroup ' /proc/mounts; then note "cgroup v2 host"; else note "cgroup v1 or hybrid host"; fi
cargo test -q -p noded --test cgroups >/tmp/device-cgroups.log 2>&1 &&
  pass "cgroup confinement tests" || { bad "cgroup confinement tests"; tail -30 /tmp/device-cgroups.log; }

# 3. A job given one GPU: CUDA_VISIBLE_DEVICES names it, and the other GPUs' device
#    files cannot be opened (v1: the devices controller; v2: a BPF device program).
dir=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
gpus=$((whole > 0 ? whole : 0))
"$bin/drover" keygen "$dir/cluster.key" >/dev/null || { echo "FAIL keygen"; exit 1; }
cat >"$dir/drover.toml" <<EOF
cluster_name = "gpucheck"
state_dir = "$dir/state"
[auth]
key_file = "$dir/cluster.key"
socket = "$dir/auth.sock"
[controller]
addr = "127.0.0.1:$port"
node_timeout_s = 30
[[nodes]]
names = "gpucheck"
cpus = 1
memory = "1G"
gpus = $gpus
[[partitions]]
name = "gpu"
nodes = "ALL"
EOF
"$bin/drover-ctld" --config "$dir/drover.toml" >"$dir/ctld.log" 2>&1 &
ctld=$!
"$bin/drover-noded" --config "$dir/drover.toml" --name gpucheck --listen "127.0.0.1:$((port + 1))" >"$dir/noded.log" 2>&1 &
noded=$!
export DROVER_CONF="$dir/drover.toml"
for _ in $(seq 100); do "$bin/drover" sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.1; done
cat >"$dir/job.sh" <<'EOF'
#!/bin/sh
echo "visible=$CUDA_VISIBLE_DEVICES"
nvidia-smi -L | grep -c '^GPU ' | sed 's/^/sees=/'
for f in /dev/nvidia[0-9]*; do (exec 3<"$f") 2>/dev/null && echo "open $f" || echo "denied $f"; done
EOF
id=$(cd "$dir" && "$bin/drover" sbatch --parsable --gpus=1 -o "$dir/job.out" "$dir/job.sh")
for _ in $(seq 300); do "$bin/drover" sacct -n -X -P -o State -j "$id" 2>/dev/null | grep -q COMPLETED && break; sleep 0.1; done
cat "$dir/job.out"
# One GPU by its index: 0 where the job's cgroup hides the others (CUDA numbers what it
# can open), else the node's index of the GPU placement chose.
visible=$(sed -n 's/^visible=//p' "$dir/job.out")
[[ "$visible" =~ ^[0-9]+$ ]] && pass "binding: CUDA_VISIBLE_DEVICES=$visible" || bad "binding: CUDA_VISIBLE_DEVICES='$visible'"
grep -q '^sees=1$' "$dir/job.out" && pass "the job sees one GPU" || note "the job sees more than its GPU (see above)"
opened=$(grep -c '^open ' "$dir/job.out")
[ "$opened" -eq 1 ] && pass "device confinement: only the job's GPU opens" || bad "device confinement: $opened open"
kill "$noded" "$ctld" 2>/dev/null
wait 2>/dev/null
rm -rf "$dir"
exit $fail

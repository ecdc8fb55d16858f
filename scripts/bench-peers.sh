#!/usr/bin/env bash
# gpuslack's allocator beside PyTorch's (default and expandable_segments:True)
# on the same allocation traces, on the simulated device, in one run: peak
# reserved, utilization, per-call latency, driver calls, and the cached
# alloc+free pair. Prints Markdown (bench/README.md, "Peers: PyTorch's
# allocator on the simulated device", is this output).
#
#   scripts/bench-peers.sh [BUILD_DIR] [peers.py options: --out FILE, --traces PATH, --pairs N, --rounds R]
#   scripts/bench-peers.sh [BUILD_DIR] --pressure [--gpuslack-only] [--out FILE] [--traces PATH]
#   scripts/bench-peers.sh [BUILD_DIR] --goals [--out FILE] [--traces PATH]
#
# --goals prints issue 14's goals as one table (bench/README.md, "Allocator
# goals", is this output), each row met or by how much it misses, measured
# in this one run beside torch's allocator: the peers' tables, the pressure
# table and the allocation loops (bench/alloc_loop.py) follow it.
#
# --pressure prints the pressure table instead: per trace, the smallest
# simulated device each allocator replays it on with no failed allocation
# (bench/replay/pressure.py: bisection, 8 probes per trace and allocator;
# ../shared/traces takes about 10 minutes on 2 cores).
#
# BUILD_DIR (default build) must be a Release build: it builds the targets
# this needs there, installs the pinned torch if needed (scripts/torch-env.sh,
# cached outside the clone) and runs bench/replay/peers.py. Traces:
# $GPUSLACK_TRACES, else ../shared/traces and bench/traces (real models'
# traces, recorded by scripts/record-traces.sh). Takes a few minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=build
if [ $# -gt 0 ] && [[ $1 != -* ]]; then build=$1; shift; fi
[ -f "$build/CMakeCache.txt" ] || "$root/scripts/build.sh" "$build"
cmake --build "$build" --target trace_replay alloc_bench alloc_loop_app gpuslack gpusim sim_cudart sim_cuda sim_nvml sim_nccl \
  -j "$(nproc)" >/dev/null
torch_python=$("$root/scripts/torch-env.sh" | tail -n1)
exec python3 "$root/bench/replay/peers.py" --build "$build" --torch-python "$torch_python" "$@"

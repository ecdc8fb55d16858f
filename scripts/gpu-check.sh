#!/usr/bin/env bash
# The GPU check: one command, at most ~8 minutes on one GPU with no network,
# that measures what gpuslack publishes on the device it runs on and writes
# OUTDIR/gpu-check.json and OUTDIR/gpu-check.md (bench/README.md, "GPU
# check"). Runs on a real GPU when the driver finds one, otherwise on the
# simulated device, and says which in both files.
#
#   scripts/gpu-check.sh OUTDIR [BUILD_DIR]     (BUILD_DIR, or $GPUSLACK_BUILD; default build)
#
# Steps, each with its own timeout inside a total budget
# ($GPU_CHECK_BUDGET_S, default 450 s); a failing step is recorded, not
# fatal: the conformance suite, hook overhead, alloc / pinned / copy
# benchmarks native against gpuslack, the demo natively and under
# gpuslack, the trace replays, the GPU timeline's overhead, NCCL
# collectives when libnccl.so.2 is found, the topology and NCCL's choices
# as the summary records them (with nvidia-smi topo -m), what the driver's
# cuGetProcAddress, CUPTI (version, per-thread buffers, 20 launching
# threads' figures) and NVML (per device, MIG) answer
# (scripts/gpu_check_probe.py), PyTorch when torch imports. On the simulated device sizes and repetitions are reduced (the
# outputs say so). Exit status: 0 when every step that ran passed, 1
# otherwise, 2 on bad usage.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: scripts/gpu-check.sh OUTDIR [BUILD_DIR]" >&2; exit 2; }
exec python3 -B "$root/scripts/gpu_check.py" --out "$1" --build "${2:-${GPUSLACK_BUILD:-build}}" --root "$root"

#!/usr/bin/env bash
# Records the allocation traces of real PyTorch models on the simulated
# device into bench/traces (bench/traces/README.md says how each was made):
#
#   scripts/record-traces.sh [BUILD_DIR] [record_torch.py options: --out DIR, --steps N, --list] [MODEL...]
#
# BUILD_DIR (an existing folder; default build) gets the simulated device's libraries built;
# the pinned torch is installed if needed (scripts/torch-env.sh, cached
# outside the clone); then bench/replay/record_torch.py records each MODEL
# (default: all but `tiny`) in a process of its own. About 2 minutes here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=build
if [ $# -gt 0 ] && [[ $1 != -* ]] && [ -d "$1" ]; then build=$1; shift; fi
[ -f "$build/CMakeCache.txt" ] || "$root/scripts/build.sh" "$build" >&2
cmake --build "$build" --target gpusim sim_cudart sim_cuda sim_nvml sim_nccl sim_cublas sim_cublaslt >/dev/null
torch_python=$("$root/scripts/torch-env.sh" | tail -n1)
exec python3 "$root/bench/replay/record_torch.py" --build "$build" --torch-python "$torch_python" "$@"

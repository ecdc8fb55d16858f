#!/usr/bin/env bash
# Runs the demo workload (bench/demo/train_loop.cc) from the build folder $1
# (default ./build): on the real GPU when one is present, otherwise on the
# simulated CUDA device, and says which. Further arguments go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
[ -x "$dir/train_loop" ] || { echo "demo: $dir/train_loop not built; run scripts/build.sh $dir" >&2; exit 1; }
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  cuda=${CUDA_HOME:-/usr/local/cuda}
  echo "demo: GPU found ($(nvidia-smi -L | head -n 1)): running on the real device"
  export LD_LIBRARY_PATH="$cuda/lib64:$cuda/lib:${LD_LIBRARY_PATH:-}"
else
  echo "demo: no GPU found: running on the simulated CUDA device ($dir/simcuda)"
  export LD_LIBRARY_PATH="$dir/simcuda:${LD_LIBRARY_PATH:-}"
fi
"$dir/train_loop" "$@"
echo "demo: to run it under gpuslack: LD_PRELOAD=$dir/libgpuslack.so scripts/demo.sh $dir"

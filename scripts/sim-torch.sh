#!/usr/bin/env bash
# Runs a PyTorch script on the simulated CUDA device, under gpuslack: no GPU
# needed (a laptop, CI). docs/simulated-device.md, "PyTorch on the simulated device".
#
#   scripts/sim-torch.sh [--build DIR] [--conf key:value,...] [--out DIR] [--no-gpuslack] [--] ARGS...
#
# ARGS go to the pinned torch's Python (scripts/torch-env.sh installs it
# into a cache outside the clone the first time, about 3.3 GB):
#   scripts/sim-torch.sh train.py --epochs 2
#   scripts/sim-torch.sh --conf allocator:vmm -- -m pytest tests/
# It builds libgpuslack.so and the simulated libraries in DIR (default
# build) if needed, puts the simulated device first on LD_LIBRARY_PATH, and
# runs `python -m gpuslack run [--conf ...] [--out ...] -- python ARGS...`
# with the package from python_shim/ (no pip install needed): the summary
# lands in ./gpuslack-out unless --out says otherwise. --no-gpuslack runs
# the script on the simulated device alone. The simulated device's knobs
# (GPUSIM_DEVICE_COUNT, GPUSIM_DEVICE_MEMORY, GPUSIM_COST_*:
# tests/simcuda/README.md) pass through from the environment.
#
# What it shows and what it cannot: tensor VALUES ARE GARBAGE (no kernel is
# computed; a loss is not a loss), but memory (capacity, the allocator's
# reserved and allocated bytes, out-of-memory), ordering (streams, events,
# synchronizations, graph capture) and time (cudaMalloc, cudaFree, copies,
# launches by the cost model) are modelled, so gpuslack's summary of where
# time went around the model is meaningful; a kernel's own run time is not.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
launcher=()
use_gpuslack=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --conf|--out) launcher+=("$1" "$2"); shift 2 ;;
    --no-gpuslack) use_gpuslack=0; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ -f "$build/CMakeCache.txt" ] || "$root/scripts/build.sh" "$build" >&2
cmake --build "$build" --target gpuslack gpusim sim_cudart sim_cuda sim_nvml sim_nccl sim_cublas sim_cublaslt >/dev/null
python=$("$root/scripts/torch-env.sh" | tail -n1)

export LD_LIBRARY_PATH=$build/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONWARNINGS=${PYTHONWARNINGS:-ignore::UserWarning}  # torch warns that NumPy is not installed
if [ "$use_gpuslack" = 0 ]; then
  exec "$python" "$@"
fi
export GPUSLACK_LIBRARY=$build/libgpuslack.so
export PYTHONPATH=$root/python_shim${PYTHONPATH:+:$PYTHONPATH}
exec "$python" -m gpuslack run "${launcher[@]}" -- "$python" "$@"

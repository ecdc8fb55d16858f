#!/usr/bin/env bash
# Configures and builds into the folder $1 (default ./build), passing any
# further arguments to CMake: scripts/build.sh build-asan -DGPUSLACK_SANITIZE=address
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# Find the CUDA toolkit in its standard place without touching the PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDAToolkit_ROOT=/usr/local/cuda
fi
# ccache, where installed, shares compiled objects between build folders
# and clones (it changes nothing else).
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
# Two cores here; more where there are more.
cmake --build "$dir" -j "$(nproc)"

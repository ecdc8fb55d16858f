#!/usr/bin/env bash
# Issue 26's field report on the simulated device, before and after
# gpuslack's fix: 8 ranks as 2 nodes x 4 GPUs, NVLink within a node, 50 GB/s
# between, NCCL's default Ring; prints the job report's first finding, the
# fix it gives, and the collectives' GPU time before and after against the
# finding's estimate (scripts/collectives_compare.py says how). Builds
# nothing: run scripts/build.sh first. Further arguments go to
# collectives_compare.py (--steps N, --grad-mib M, --json FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
[ -f "$dir/libgpuslack.so" ] && [ -x "$dir/train_loop" ] || {
  echo "collectives-compare: $dir/libgpuslack.so or train_loop not built; run scripts/build.sh $dir" >&2; exit 2; }
exec python3 scripts/collectives_compare.py --build "$dir" "$@"

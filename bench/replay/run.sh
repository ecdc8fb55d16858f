#!/usr/bin/env bash
# Replays every trace under ../shared/traces (from the repository root; or
# $GPUSLACK_TRACES) through gpuslack's VMM allocator on the simulated
# device, and prints one Markdown table (bench/README.md, "Trace replay").
#
#   bench/replay/run.sh [BUILD_DIR]      (default: build; needs its trace_replay:
#                                         cmake --build BUILD_DIR --target trace_replay)
#
# *.pickle are PyTorch memory snapshots (*.pickle.gz gzipped, as bench/traces
# keeps them: GPUSLACK_TRACES=bench/traces replays those); *.csv are RMM logs or minimalloc
# problems, told apart by their header. minimalloc sizes are multiplied by
# $MINIMALLOC_SCALE (default 1024; 1: as written): each problem fits in
# 1 MiB, less than one 2 MiB granule, so unscaled they measure the granule
# size rather than the allocator (bench/README.md says more).
# GPUSIM_DEVICE_MEMORY (default here 80G) is the simulated device's size.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
traces=${GPUSLACK_TRACES:-$root/../shared/traces}
scale=${MINIMALLOC_SCALE:-1024}
replay=$build/bench/trace_replay
convert=$root/bench/replay/trace_events.py

[ -x "$replay" ] || { echo "run.sh: no $replay (cmake --build $build --target trace_replay)" >&2; exit 1; }
[ -d "$traces" ] || { echo "run.sh: no trace folder $traces (set GPUSLACK_TRACES)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
streams=()
n=0
while IFS= read -r file; do
  rel=${file#"$traces"/}
  name=${rel%%.*}
  args=()
  if [[ $file == *.csv ]] && head -n1 "$file" | grep -q '^id,lower,upper,size'; then
    if [ "$scale" != 1 ]; then
      args=(--scale "$scale")
      name="$name ×$scale"
    fi
  fi
  n=$((n + 1))
  out=$tmp/$n.events
  python3 "$convert" "${args[@]}" --name "$name" -o "$out" "$file"
  streams+=("$out")
done < <(find "$traces" -type f \( -name '*.pickle' -o -name '*.pickle.gz' -o -name '*.csv' \) | LC_ALL=C sort)

[ "$n" -gt 0 ] || { echo "run.sh: no *.pickle, *.pickle.gz or *.csv under $traces" >&2; exit 1; }
GPUSIM_DEVICE_MEMORY=${GPUSIM_DEVICE_MEMORY:-80G} "$replay" ${GPUSLACK_REPLAY_ARGS:-} "${streams[@]}"

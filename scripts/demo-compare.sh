#!/usr/bin/env bash
# The quickstart's last screen: the demo (bench/demo/train_loop.cc) run three
# times from the build folder $1 (default ./build), on the real GPU when one
# is present, else on the simulated device (scripts/demo.sh says which):
#   no gpuslack   the program alone (its own median step);
#   before        under gpuslack, measuring only: every intervention off
#                 (allocator:native, pin:false, stage_copies:false), so
#                 the runtime does every call as it does natively;
#   after         under gpuslack with its fixes on (allocator:vmm, and the
#                 pinned heap and staged copies, on by default).
# Both gpuslack runs take the GPU timeline (gpu_timeline:on: the simulated
# driver is r580, whose CUPTI allows one subscriber, README "The GPU
# timeline"), write their summaries to $GPUSLACK_DEMO_OUT (default
# $1/quickstart) and their full text beside them; then
# `python -m gpuslack compare` prints the before/after table and the
# findings. Further arguments go to the demo (e.g. --steps 40).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
out=${GPUSLACK_DEMO_OUT:-$dir/quickstart}
rm -rf "$out"
mkdir -p "$out"
measure=gpu_timeline:on,text_summary:file
echo "demo-compare: the demo natively, then under gpuslack measuring only, then with its fixes on"
scripts/demo.sh "$dir" "$@" > "$out/native.log" 2>&1
env GPUSLACK_CONF="$measure,allocator:native,pin:false,stage_copies:false,output_dir:$out/before" \
  LD_PRELOAD="$PWD/$dir/libgpuslack.so" scripts/demo.sh "$dir" "$@" > "$out/before.log" 2>&1
env GPUSLACK_CONF="$measure,allocator:vmm,output_dir:$out/after" \
  LD_PRELOAD="$PWD/$dir/libgpuslack.so" scripts/demo.sh "$dir" "$@" > "$out/after.log" 2>&1
head -n 1 "$out/native.log" | sed 's/^demo: /demo-compare: /'
echo
PYTHONPATH=python_shim python3 -m gpuslack compare --native-log "$out/native.log" \
  --labels "before: measured" "after: fixes on" "$out"/before/*.json "$out"/after/*.json

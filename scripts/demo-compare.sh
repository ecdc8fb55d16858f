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
# driver is r580, whose CUPTI allows one subscriber, docs/gpu-timeline.md), write their summaries to $GPUSLACK_DEMO_OUT (default
# $1/quickstart) and their full text beside them; then
# `python -m gpuslack compare` prints the before/after table and the
# findings. Further arguments go to the demo (e.g. --steps 40).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
out=${GPUSLACK_DEMO_OUT:-$dir/quickstart}
[ -f "$dir/libgpuslack.so" ] || { echo "demo-compare: $dir/libgpuslack.so not built; run scripts/build.sh $dir" >&2; exit 1; }
library=$(cd "$dir" && pwd)/libgpuslack.so
rm -rf "$out"
mkdir -p "$out"
measure=gpu_timeline:on,text_summary:file
# One run, its output in $out/$1.log; on failure, the log's end and exit.
run() {
  local name=$1
  shift
  if ! "$@" > "$out/$name.log" 2>&1; then
    echo "demo-compare: the $name run failed; its output ($out/$name.log) ends:" >&2
    tail -n 20 "$out/$name.log" >&2
    exit 1
  fi
}
echo "demo-compare: the demo natively, under gpuslack measuring only, then fixing"
run native scripts/demo.sh "$dir" "$@"
run before env GPUSLACK_CONF="$measure,allocator:native,pin:false,stage_copies:false,output_dir:$out/before" \
  LD_PRELOAD="$library" scripts/demo.sh "$dir" "$@"
run after env GPUSLACK_CONF="$measure,allocator:vmm,output_dir:$out/after" \
  LD_PRELOAD="$library" scripts/demo.sh "$dir" "$@"
head -n 1 "$out/native.log" | sed 's/^demo: /demo-compare: /' | fold -s -w 80
echo
PYTHONPATH=python_shim python3 -m gpuslack compare --native-log "$out/native.log" \
  --labels "before: measured" "after: fixes on" "$out"/before/*.json "$out"/after/*.json

#!/usr/bin/env bash
# Before and after, in one run: scripts/bench-compare.sh BASE_REV [ROUNDS] [--table-only]
#
# Builds the three benchmarks that guard against slowdowns (bench/README.md,
# "Before and after") for BASE_REV, in a git worktree under
# ${XDG_CACHE_HOME:-~/.cache}/gpuslack-bench/<sha>, and for the working tree
# (build folder ./build), both Release with ccache and the same flags, only
# the targets they need. Then runs them alternately, base then head, ROUNDS
# times (default 7), and prints per figure the median of each side and
# head/base. Exits 1 when a figure is worse by more than 3%
# (BENCH_TOLERANCE=0.03): a time (ns, lower is better) when head/base > 1.03,
# a bandwidth (GB/s, higher is better) when head/base < 0.97.
# --table-only prints nothing but the table and the load-average line.
# Every run's output stays in the results folder it names;
# scripts/bench_compare.py <folder> prints the table again.
set -euo pipefail
cd "$(dirname "$0")/.."
head_dir=$PWD
base_rev=${1:?usage: scripts/bench-compare.sh BASE_REV [ROUNDS] [--table-only]}
shift
rounds=7 quiet=false
for a in "$@"; do
  case $a in
    --table-only) quiet=true ;;
    *[!0-9]* | '') echo "bench-compare: unknown argument $a" >&2; exit 2 ;;
    *) rounds=$a ;;
  esac
done
say() { $quiet || echo "bench-compare: $*" >&2; }

sha=$(git rev-parse --verify "$base_rev^{commit}")
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpuslack-bench
base_src=$cache/$sha/src base_build=$cache/$sha/build
if [ ! -e "$base_src/.git" ]; then
  git worktree prune
  git worktree add --quiet --detach "$base_src" "$sha"
fi

# The same configuration as scripts/build.sh, Release, no sanitizer.
targets=(hook_overhead_bench alloc_bench copy_bench)
build() {  # build SOURCE_DIR BUILD_DIR
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  say "building ${targets[*]} in $2"
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSLACK_SANITIZE= "${launcher[@]}" >/dev/null
  nice cmake --build "$2" --target "${targets[@]}" -j "$(nproc)" >"$2/bench-compare-build.log" 2>&1 ||
    { tail -30 "$2/bench-compare-build.log" >&2; exit 2; }
}
build "$base_src" "$base_build"
build "$head_dir" "$head_dir/build"

# The same flags for both sides. The hooks' summaries are off so that no
# run writes files (alloc_bench sets its own GPUSLACK_CONF).
gbench=(--benchmark_min_time=0.2 --benchmark_out_format=json)
run_one() {  # run_one SIDE BUILD_DIR ROUND
  local b=$2/bench o=$results/$1
  GPUSLACK_CONF=json_summary:false,text_summary:off "$b/hook_overhead_bench" "${gbench[@]}" \
    --benchmark_filter='^BM_(MemGetInfo|FreeNull|StreamSyncIdle)_ThroughHook$' \
    --benchmark_out="$o.hook.$3.json" >"$o.hook.$3.log" 2>&1
  "$b/alloc_bench" "${gbench[@]}" --benchmark_filter='^BM_CudaMallocFree_Vmm/' \
    --benchmark_out="$o.alloc.$3.json" >"$o.alloc.$3.log" 2>&1
  "$b/copy_bench" --bandwidth --max-mib 64 >"$o.copy.$3.txt" 2>&1
}

results=$cache/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$results"
{
  echo "base $sha"
  echo "head $(git rev-parse HEAD)$(git diff --quiet HEAD -- . && echo '' || echo ' + uncommitted changes')"
  echo "rounds $rounds"
  echo "nproc $(nproc)"
  echo "load_before $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$results/meta"
for ((r = 1; r <= rounds; r++)); do
  say "round $r of $rounds (load $(cut -d' ' -f1 /proc/loadavg))"
  # ABBA: odd rounds run base first, even rounds head first, so that a
  # drift in the machine's state over a round favours neither side.
  if ((r % 2)); then
    run_one base "$base_build" "$r"
    run_one head "$head_dir/build" "$r"
  else
    run_one head "$head_dir/build" "$r"
    run_one base "$base_build" "$r"
  fi
done
echo "load_after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/meta"
say "results in $results"
exec python3 scripts/bench_compare.py "$results"

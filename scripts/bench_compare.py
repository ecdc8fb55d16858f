#!/usr/bin/env python3
"""The table of scripts/bench-compare.sh: python3 scripts/bench_compare.py RESULTS_DIR

Reads every run in RESULTS_DIR (<side>.<bench>.<round>.json from Google
Benchmark, <side>.copy.<round>.txt from copy_bench), takes per figure the
median over the rounds of each side, prints a markdown table with head/base,
and exits 1 when a figure is worse by more than BENCH_TOLERANCE (0.03): a
time when head/base > 1 + tolerance, a bandwidth when head/base < 1 - tolerance.
"""
import glob
import json
import os
import statistics
import sys

# Google Benchmark name -> (benchmark, figure). Times are wall time, or CPU
# time with BENCH_TIME=cpu_time (steadier on a loaded machine, blind to waits).
TIME = os.environ.get("BENCH_TIME", "real_time")
GBENCH = {
    "BM_MemGetInfo_ThroughHook": ("hook overhead", "cudaMemGetInfo through the hook"),
    "BM_FreeNull_ThroughHook": ("hook overhead", "cudaFree(NULL) through the hook"),
    "BM_StreamSyncIdle_ThroughHook": ("hook overhead", "cudaStreamSynchronize, idle, through the hook"),
    "BM_CudaMallocFree_Vmm/65536": ("alloc pair", "cudaMalloc+cudaFree 64 KiB, allocator:vmm"),
    "BM_CudaMallocFree_Vmm/8388608": ("alloc pair", "cudaMalloc+cudaFree 8 MiB, allocator:vmm"),
}
# copy_bench --bandwidth: the "H2D gpuslack" (3) and "D2H gpuslack" (9)
# columns of these sizes, GB/s until the data landed.
COPY_SIZES = ("64 KiB", "1 MiB", "64 MiB")
COPY_COLUMNS = {3: "H2D", 9: "D2H"}
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def figures(path):
    """{(benchmark, figure, unit): value} of one run."""
    out = {}
    if path.endswith(".json"):
        with open(path) as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("run_type", "iteration") == "iteration" and b["name"] in GBENCH:
                    out[GBENCH[b["name"]] + ("ns",)] = b[TIME] * TO_NS[b["time_unit"]]
        return out
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 10 and cells[0] in COPY_SIZES:
                for col, way in COPY_COLUMNS.items():
                    out[("staged-copy bandwidth", f"{way} {cells[0]} through the stager", "GB/s")] = float(cells[col])
    return out


def main():
    results = sys.argv[1]
    tolerance = float(os.environ.get("BENCH_TOLERANCE", "0.03"))
    runs = {"base": {}, "head": {}}
    for path in sorted(glob.glob(os.path.join(results, "*.*.*.*"))):
        side = os.path.basename(path).split(".")[0]
        if side in runs and not path.endswith(".log"):
            for key, value in figures(path).items():
                runs[side].setdefault(key, []).append(value)
    meta = dict(line.rstrip("\n").split(" ", 1) for line in open(os.path.join(results, "meta")))
    print("| benchmark | figure | better | base | head | head/base | spread | |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    worse = 0
    order = ["hook overhead", "alloc pair", "staged-copy bandwidth"]
    keys = sorted((k for k in runs["base"] if k in runs["head"]), key=lambda k: order.index(k[0]))
    for bench, figure, unit in keys:
        base, head = runs["base"][(bench, figure, unit)], runs["head"][(bench, figure, unit)]
        mb, mh = statistics.median(base), statistics.median(head)
        ratio = mh / mb if mb else float("nan")
        time = unit == "ns"
        bad = ratio > 1 + tolerance if time else ratio < 1 - tolerance
        worse += bad
        # The larger side's (max - min) / median over the rounds: the noise.
        spread = max((max(v) - min(v)) / statistics.median(v) for v in (base, head) if statistics.median(v))
        print(f"| {bench} | {figure} | {'lower' if time else 'higher'} "
              f"| {mb:.4g} {unit} | {mh:.4g} {unit} | {ratio:.3f} | {100 * spread:.0f}% "
              f"| {'**worse**' if bad else 'ok'} |")
    print(f"\nbase {meta['base'][:12]}, head {meta['head'][:12]}{meta['head'][40:]}; "
          f"{meta['rounds']} rounds each, interleaved (base, head); medians; nproc {meta['nproc']}; "
          f"load average (1, 5, 15 min) before {meta['load_before']}, after {meta.get('load_after', '?')}; "
          f"times: {TIME}; worse = beyond {100 * tolerance:g}%")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())

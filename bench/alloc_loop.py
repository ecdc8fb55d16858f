#!/usr/bin/env python3
"""The VMM allocator under plain programs, native beside gpuslack in one run;
prints one Markdown row per case (issue 14's goal outside traces).

    alloc_loop.py --build DIR [--iterations N] [--p2p-max-mib M] [--header]

The program is tests/interpose/programs/alloc_loop_app.cc (built with the
tests: DIR/tests/interpose/alloc_loop_app), on the simulated device. Each
case runs twice, natively and with DIR/libgpuslack.so preloaded under
GPUSLACK_CONF=allocator:vmm:

- loop, 8 GiB: two 160 MiB cudaMallocs, a cudaMemset of each,
  cudaDeviceSynchronize, two cudaFrees, N times (default 200), on the
  default simulated device;
- loop, 1 GiB: the same with GPUSIM_DEVICE_MEMORY=1G;
- p2p: a p2pBandwidthLatencyTest-style peer test on two devices, a one-way
  and a two-way phase per size from 4 KiB doubling to M MiB (default 64),
  each phase allocating and freeing a source and a destination per device.

Columns: ms in cudaMalloc (the program's own steady_clock around each call)
and the whole mode's wall time, native and gpuslack; gpuslack's peak mapped
(peak_reserved) over peak live (peak_allocated) per device, from its JSON
summary, with the goal's bound (1.25 x live + one 16 MiB map chunk); and its
out-of-memory retries. Natively, the simulated cudaMalloc maps fresh host
memory, so the native loop's wall time is mostly page faults of its
memsets: compare its cudaMalloc column, not its total.

rows(build, iterations, p2p_max_mib) returns the same rows for a table
generator to call; measure() the figures behind them (peers.py --goals). Exit status 1 when a run fails.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

MIB = 1 << 20
CHUNK = 16 * MIB  # map_chunk_mb's default (lib/config/options.h)
HEADER = ("| case | cudaMalloc, native | cudaMalloc, gpuslack | total, native | total, gpuslack "
          "| gpuslack peak mapped / peak live (goal: ≤ 1.25 × live + 16 MiB) | gpuslack OOM retries |\n"
          "|---|---:|---:|---:|---:|---|---:|")


class RunFailed(Exception):
    pass


def run(build, args, env_extra, preload):
    """(the program's printed figures, the allocator section or None)."""
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ)
        for k in ("GPUSLACK_CONF", "LD_PRELOAD", "GPUSIM_DEVICE_MEMORY", "GPUSIM_DEVICE_COUNT"):
            env.pop(k, None)
        env.update(env_extra)
        env["GPUSLACK_OUTPUT"] = out
        if preload:
            env["LD_PRELOAD"] = os.path.join(build, "libgpuslack.so")
            env["GPUSLACK_CONF"] = "allocator:vmm"
        argv = [os.path.join(build, "tests", "interpose", "alloc_loop_app")] + [str(a) for a in args]
        r = subprocess.run(argv, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RunFailed("%s%s: exit %d\n%s" % ("gpuslack " if preload else "native ", " ".join(argv),
                                                 r.returncode, r.stderr[-2000:]))
        words = r.stdout.split()
        printed = {k: float(words[len(words) - words[::-1].index(k)]) for k in ("malloc_ms", "total_ms")}
        alloc = None
        if preload:
            files = glob.glob(os.path.join(out, "gpuslack-*.json"))
            if len(files) != 1:
                raise RunFailed("expected one summary, found %s" % files)
            with open(files[0]) as f:
                alloc = json.load(f).get("allocator", [])
            if not alloc:
                raise RunFailed("the summary has no allocator section: was allocator:vmm in effect?")
        return printed, alloc


def ms(v):
    if v >= 10000:
        return "%.1f s" % (v / 1000)
    return "%.0f ms" % v if v >= 100 else "%.1f ms" % v


def mib(v):
    return "%.0f MiB" % (v / MIB)


def case(build, name, args, env_extra):
    """{name, native, gpuslack, alloc}: the figures of one case."""
    native, _ = run(build, args, env_extra, preload=False)
    ours, alloc = run(build, args, env_extra, preload=True)
    return {"name": name, "native": native, "gpuslack": ours, "alloc": sorted(alloc, key=lambda a: a["device"])}


def within_goal(a):
    return a["peak_reserved"] <= 1.25 * a["peak_allocated"] + CHUNK


def row(c):
    alloc = c["alloc"]
    mapped = ", ".join(
        "%s%s / %s (%.2f×%s)" % ("dev %d: " % a["device"] if len(alloc) > 1 else "", mib(a["peak_reserved"]),
                                mib(a["peak_allocated"]), a["peak_reserved"] / max(a["peak_allocated"], 1),
                                "" if within_goal(a) else ", over")
        for a in alloc)
    retries = ", ".join(str(a["oom_retries"]) for a in alloc)
    native, ours = c["native"], c["gpuslack"]
    return "| %s | %s | %s | %s | %s | %s | %s |" % (c["name"], ms(native["malloc_ms"]), ms(ours["malloc_ms"]),
                                                    ms(native["total_ms"]), ms(ours["total_ms"]), mapped, retries)


def measure(build, iterations=200, p2p_max_mib=64):
    """The cases' figures, in the order of rows()."""
    loop = ["loop", 160, 2, iterations]
    return [
        case(build, "loop 2 × 160 MiB × %d, 8 GiB device" % iterations, loop, {}),
        case(build, "loop 2 × 160 MiB × %d, 1 GiB device" % iterations, loop, {"GPUSIM_DEVICE_MEMORY": "1G"}),
        case(build, "p2p bandwidth 4 KiB–%d MiB, 2 devices" % p2p_max_mib, ["p2p", p2p_max_mib],
             {"GPUSIM_DEVICE_COUNT": "2"}),
    ]


def rows(build, iterations=200, p2p_max_mib=64):
    """The Markdown rows, one per case (no header: HEADER is the header)."""
    return [row(c) for c in measure(build, iterations, p2p_max_mib)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="the build folder (libgpuslack.so, tests/interpose/alloc_loop_app)")
    ap.add_argument("--iterations", type=int, default=200, help="loop iterations (default 200)")
    ap.add_argument("--p2p-max-mib", type=int, default=64, help="largest p2p size, MiB (default 64)")
    ap.add_argument("--header", action="store_true", help="print the table's header first")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    try:
        lines = rows(build, a.iterations, a.p2p_max_mib)
    except RunFailed as e:
        print("alloc_loop.py: %s" % e, file=sys.stderr)
        return 1
    if a.header:
        print(HEADER)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The GPU timeline's cost to a training loop: the demo's median step time
with gpu_timeline on against off, in interleaved runs on the simulated
device (issue 15's goal: within 2%).

    timeline_overhead.py --build DIR [--pairs N] [--steps S] [--header]

Each pair runs bench/demo/train_loop twice under DIR/libgpuslack.so, once
with GPUSLACK_CONF=gpu_timeline:off and once with gpu_timeline:on (the
order alternating from pair to pair, so that drift on a noisy machine falls
on both), with kernels (--kernel-us 200) and the CPU-bound input stage
(--decode-ms 5), on one simulated device whose CUPTI allows several
subscribers. It prints one Markdown row: the median over pairs of each
run's median step, off and on, their ratio, and, from the "on" runs' JSON
summaries, the activity records processed and dropped.

rows(build, pairs, steps) returns the row for a table generator to call.
Exit status 1 when a run fails or the timeline did not measure.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HEADER = ("| case | median step, timeline off | median step, timeline on | on / off | records | dropped |\n"
          "|---|---:|---:|---:|---:|---:|")
DEMO_ARGS = ["--kernel-us", "200", "--decode-ms", "5"]
SIM_ENV = {"GPUSIM_DEVICE_COUNT": "1", "GPUSIM_COST_KERNEL_US": "200", "GPUSIM_CUPTI_VERSION": "130300",
           "GPUSIM_DRIVER_VERSION": "610"}


REAL_DEVICE = False


class RunFailed(Exception):
    pass


def run(build, steps, timeline):
    """(median step in ms, the gpu_timeline section or None)."""
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ)
        env.pop("GPUSLACK_CONF", None)
        if not REAL_DEVICE:  # --real: the libraries the caller's environment finds (scripts/gpu_check.py)
            env.update(SIM_ENV)
            env["LD_LIBRARY_PATH"] = os.path.join(build, "simcuda")
        env["LD_PRELOAD"] = os.path.join(build, "libgpuslack.so")
        env["GPUSLACK_OUTPUT"] = out
        env["GPUSLACK_CONF"] = "gpu_timeline:" + timeline + ",text_summary:off"
        r = subprocess.run([os.path.join(build, "train_loop"), "--steps", str(steps), "--warmup", "2"] + DEMO_ARGS,
                           env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RunFailed(f"train_loop (gpu_timeline:{timeline}) exited {r.returncode}: {r.stderr[-2000:]}")
        m = re.search(r"median step ([0-9.]+) ms", r.stdout)
        if not m:
            raise RunFailed("train_loop printed no median step: " + r.stdout[-2000:])
        files = glob.glob(os.path.join(out, "*.json"))
        section = None
        if files:
            with open(files[0]) as f:
                section = json.load(f).get("gpu_timeline")
        return float(m.group(1)), section


def measure(build, pairs, steps):
    off, on, records, dropped = [], [], 0, 0
    for i in range(pairs):
        order = ("off", "on") if i % 2 == 0 else ("on", "off")
        for timeline in order:
            ms, section = run(build, steps, timeline)
            if timeline == "off":
                off.append(ms)
                continue
            if not section or section.get("status") != "measured":
                raise RunFailed("gpu_timeline:on did not measure: " + json.dumps(section))
            on.append(ms)
            records += section["records"]
            dropped += section["dropped_by_pool"] + section["dropped_by_cupti"]
    return statistics.median(off), statistics.median(on), records, dropped


def rows(build, pairs, steps):
    off, on, records, dropped = measure(build, pairs, steps)
    return [f"| demo, {steps} steps, {pairs} interleaved pairs | {off:.2f} ms | {on:.2f} ms | {on / off:.3f} "
            f"| {records} | {dropped} |"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--header", action="store_true")
    p.add_argument("--real", action="store_true", help="run on the device LD_LIBRARY_PATH finds, not the simulated one")
    a = p.parse_args()
    global REAL_DEVICE
    REAL_DEVICE = a.real
    try:
        lines = rows(a.build, a.pairs, a.steps)
    except RunFailed as e:
        print("timeline_overhead: " + str(e), file=sys.stderr)
        return 1
    if a.header:
        print(HEADER)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

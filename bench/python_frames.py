#!/usr/bin/env python3
"""What a call site's Python frames cost (lib/ledger/python_frames.h): ns
per captured call site from Python with a 10-deep Python stack, with the
Python frames (the call made holding the GIL) against the native backtrace
alone (the same call with the GIL released).

    python_frames.py --build DIR [--calls N] [--rounds R]

Each round runs four child processes under DIR/libgpuslack.so on the
simulated device, each timing N calls of cudaMemGetInfo (a hooked call that
does no work) made 10 Python frames deep through ctypes:
  - PyDLL (keeps the GIL): call_site_threshold_us:0 (every call captures
    its call site: Python frames, then the native backtrace) and the default
    threshold (no call captures);
  - CDLL (releases the GIL): the same two (the native backtrace only).
A capture's cost is the time per call with every call captured less the
time per call with none, in the same way of calling. Python frames cost the
difference of the two: what the GIL-held capture adds to the native one.
Prints the medians over the rounds, in ns per call. The site's recording
(ledger::record_call_site: the shard's map, the site-key map) is in both.
"""
import argparse
import os
import statistics
import subprocess
import sys

CHILD = r'''
import ctypes, os, sys, time
d = os.environ["SIMCUDA_DIR"]
ctypes.CDLL(os.path.join(d, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
lib = (ctypes.PyDLL if sys.argv[1] == "pydll" else ctypes.CDLL)(None)
f = lib.cudaMemGetInfo
f.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
a, b = ctypes.c_size_t(), ctypes.c_size_t()
pa, pb = ctypes.byref(a), ctypes.byref(b)
n = int(sys.argv[2])

def deep(k):
    if k > 1:
        return deep(k - 1)
    for _ in range(1000):  # warm: the Python texts are interned once
        f(pa, pb)
    t = time.perf_counter_ns()
    for _ in range(n):
        f(pa, pb)
    return (time.perf_counter_ns() - t) / n

print(deep(10))
'''


def run(build, way, threshold, calls):
    env = dict(os.environ)
    simcuda = os.path.join(build, "simcuda")
    env.update(LD_PRELOAD=os.path.join(build, "libgpuslack.so"), SIMCUDA_DIR=simcuda,
               LD_LIBRARY_PATH=simcuda, GPUSLACK_CONF="text_summary:off,json_summary:false,call_site_threshold_us:%s"
               % threshold)
    r = subprocess.run([sys.executable, "-c", CHILD, way, str(calls)], env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        sys.exit("%s threshold %s failed (exit %d): %s" % (way, threshold, r.returncode, r.stderr))
    return float(r.stdout.strip())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    figures = {k: [] for k in ("pydll_all", "pydll_none", "cdll_all", "cdll_none")}
    for _ in range(a.rounds):
        for way in ("pydll", "cdll"):
            figures[way + "_all"].append(run(a.build, way, 0, a.calls))
            figures[way + "_none"].append(run(a.build, way, 100000, a.calls))
    med = {k: statistics.median(v) for k, v in figures.items()}
    with_python = med["pydll_all"] - med["pydll_none"]
    native = med["cdll_all"] - med["cdll_none"]
    print("per call, ns (median of %d rounds, %d calls each, 10 Python frames deep):" % (a.rounds, a.calls))
    for k in ("pydll_none", "pydll_all", "cdll_none", "cdll_all"):
        print("  %-11s %8.0f   (rounds: %s)" % (k, med[k], ", ".join("%.0f" % x for x in figures[k])))
    print("call-site capture, GIL held (4 Python frames + native backtrace): %.0f ns" % with_python)
    print("call-site capture, GIL released (native backtrace only):          %.0f ns" % native)
    print("the Python frames' share:                                          %.0f ns" % (with_python - native))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What a call site's Python frames cost (lib/ledger/python_frames.h): ns
per captured call site from Python with a 10-deep Python stack, with the
Python frames against the native backtrace alone.

    python_frames.py --build DIR [--python PY] [--calls N] [--rounds R]

Each round runs, for each way of calling, three child processes under
DIR/libgpuslack.so on the simulated device, each timing N calls of
cudaMemGetInfo (a hooked call that does no work) made 10 Python frames deep
through ctypes:
  - none:   call_site_threshold_us at its default (no call captures);
  - native: call_site_threshold_us:0 (every call captures its call site),
            python_frames:false (the native backtrace alone);
  - python: call_site_threshold_us:0, python_frames:true (the Python frames,
            then the native backtrace).
The ways of calling: ctypes.CDLL (releases the GIL, as PyTorch's ops do)
and ctypes.PyDLL (keeps it). native - none is what a native capture costs
a call; python - native what the Python frames add. Prints the medians over
the rounds, in ns per call. The site's recording (ledger::record_call_site:
the shard's map, the site-key map) is in both. Times are the calling
thread's CPU time (time.thread_time_ns): steadier than wall time on a loaded
machine.
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
    t = time.thread_time_ns()
    for _ in range(n):
        f(pa, pb)
    return (time.thread_time_ns() - t) / n

print(deep(10))
'''


def run(build, python, way, conf, calls):
    env = dict(os.environ)
    simcuda = os.path.join(build, "simcuda")
    env.update(LD_PRELOAD=os.path.join(build, "libgpuslack.so"), SIMCUDA_DIR=simcuda, LD_LIBRARY_PATH=simcuda,
               GPUSLACK_CONF="text_summary:off,json_summary:false," + conf)
    r = subprocess.run([python, "-c", CHILD, way, str(calls)], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit("%s %s failed (exit %d): %s" % (way, conf, r.returncode, r.stderr))
    return float(r.stdout.strip())


CONFS = {"none": "python_frames:false", "native": "call_site_threshold_us:0,python_frames:false",
         "python": "call_site_threshold_us:0,python_frames:true"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    version = subprocess.run([a.python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True).stdout.strip()
    print("Python %s, %d calls per run, 10 Python frames deep; ns per call, median of %d rounds:" % (
        version, a.calls, a.rounds))
    for way in ("cdll", "pydll"):
        figures = {k: [] for k in CONFS}
        for _ in range(a.rounds):
            for k, conf in CONFS.items():
                figures[k].append(run(a.build, a.python, way, conf, a.calls))
        med = {k: statistics.median(v) for k, v in figures.items()}
        print("  %s (%s): no capture %.0f, native capture %.0f, with Python frames %.0f" % (
            way, "GIL released" if way == "cdll" else "GIL held", med["none"], med["native"], med["python"]))
        print("    native backtrace: %.0f ns per capture; Python frames add %.0f ns" % (
            med["native"] - med["none"], med["python"] - med["native"]))


if __name__ == "__main__":
    main()

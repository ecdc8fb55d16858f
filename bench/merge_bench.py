#!/usr/bin/env python3
"""Benchmark of `python -m gpuslack merge` at scale (bench/README.md, "Job
report merge").

    merge_bench.py [--ranks 4096] [--max-seconds S] [--max-cpu-seconds S] [--max-rss-mib M] [--keep DIR]

Writes RANKS rank files with python -m gpuslack.job.synth's generator from the
real demo summaries in tests/job/fixtures (a few stragglers, throttled
ranks, restarts and figures over time), then merges them in a child process
and reports its wall time, its CPU time (user + system, its reading
processes included), its peak resident memory (ru_maxrss of the largest
child), the input's size and the sizes of the text, JSON and HTML reports.
With --max-seconds (wall), --max-cpu-seconds and --max-rss-mib it exits 1
when the merge went past them. The ctest bench.merge_4096_ranks holds CPU
time to 10 s and memory to 1 GiB, and wall time only to 60 s: on a shared,
loaded CI machine wall time measures the neighbours.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHIM = os.path.join(ROOT, "python_shim")
FIXTURES = os.path.join(ROOT, "tests", "job", "fixtures")
sys.path.insert(0, SHIM)
from gpuslack.job import synth  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4096)
    p.add_argument("--max-seconds", type=float, default=0)
    p.add_argument("--max-cpu-seconds", type=float, default=0)
    p.add_argument("--max-rss-mib", type=float, default=0)
    p.add_argument("--keep", metavar="DIR", help="keep the rank files and the report in DIR")
    a = p.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="gpuslack-merge-bench-")
    ranks_dir, out = os.path.join(work, "ranks"), os.path.join(work, "report")
    templates = []
    for f in sorted(os.listdir(FIXTURES)):
        with open(os.path.join(FIXTURES, f)) as fh:
            templates.append(json.load(fh))
    n = a.ranks
    t0 = time.monotonic()
    synth.generate(templates, ranks_dir, n, seed=11, slow=[n // 3, n // 2 + 1], throttled=[n // 5, n - 3],
                   restarted=[7 % n])
    gen_s = time.monotonic() - t0
    in_bytes = sum(os.path.getsize(os.path.join(ranks_dir, f)) for f in os.listdir(ranks_dir))
    env = dict(os.environ, PYTHONPATH=SHIM, PYTHONDONTWRITEBYTECODE="1")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "gpuslack", "merge", ranks_dir, "--out", out], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    merge_s = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mib, cpu_s = ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime
    sizes = {n_: os.path.getsize(os.path.join(out, n_)) for n_ in ("job-report.txt", "job-report.json",
                                                                   "job-report.html")} if proc.returncode == 0 else {}
    print("merge_bench: %d ranks (%d files, %.1f MiB; generated in %.1f s)" % (
        n, len(os.listdir(ranks_dir)), in_bytes / 2**20, gen_s))
    print("merge_bench: merge took %.2f s wall, %.2f s CPU, peak RSS %.0f MiB, exit %d (load average %.1f, %d CPUs)" % (
        merge_s, cpu_s, rss_mib, proc.returncode, os.getloadavg()[0], os.cpu_count() or 0))
    for k, v in sizes.items():
        print("merge_bench: %s %.1f KiB" % (k, v / 1024.0))
    if not a.keep:
        shutil.rmtree(work)
    ok = proc.returncode == 0
    if not ok:
        print("merge_bench: merge failed: %s" % proc.stderr[-2000:], file=sys.stderr)
    if a.max_seconds and merge_s > a.max_seconds:
        print("merge_bench: %.2f s is over the %.1f s limit" % (merge_s, a.max_seconds), file=sys.stderr)
        ok = False
    if a.max_cpu_seconds and cpu_s > a.max_cpu_seconds:
        print("merge_bench: %.2f s CPU is over the %.1f s limit" % (cpu_s, a.max_cpu_seconds), file=sys.stderr)
        ok = False
    if a.max_rss_mib and rss_mib > a.max_rss_mib:
        print("merge_bench: %.0f MiB is over the %.0f MiB limit" % (rss_mib, a.max_rss_mib), file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""gpuslack's allocator beside PyTorch's CUDACachingAllocator on the same
allocation traces and the same simulated device, in one run; prints Markdown
(bench/README.md, "Peers: PyTorch's allocator on the simulated device").

    peers.py --build DIR --torch-python PY [--traces PATH]... [--pairs N]
             [--rounds R] [--out FILE]
    peers.py --pressure [--gpuslack-only] --build DIR [--torch-python PY]
             [--traces PATH]... [--out FILE]

scripts/bench-peers.sh is the usual way in (it builds what this needs and
finds the pinned torch). Run by any Python 3.9+; torch runs in child
processes under PY, one per PYTORCH_CUDA_ALLOC_CONF (torch reads it once),
with LD_LIBRARY_PATH=DIR/simcuda and GPUSIM_DEVICE_MEMORY=80G.

What runs, on the streams bench/replay/trace_events.py makes of every trace
under --traces (default $GPUSLACK_TRACES, else ../shared/traces and
bench/traces, the real models' traces recorded by bench/replay/record_torch.py;
minimalloc sizes x1024, as bench/replay/run.sh does):

- gpuslack: bench/trace_replay --tsv, the defaults and --cache-limit-mb 2
  (C++, alloc::DeviceAllocator, the replay's held-GPU model; each call
  timed with steady_clock);
- torch: torch._C._cuda_cudaCachingAllocator_raw_alloc(size, stream) and
  _raw_delete(ptr) (c10 raw_alloc_with_stream/raw_delete, what
  torch.cuda.caching_allocator_alloc/delete call after their own Python
  argument handling), each block on the stream the trace recorded (the
  legacy stream for 0, a torch.cuda.Stream of its own for each other, as
  trace_replay does), default and expandable_segments:True;
  each call timed from Python with time.perf_counter_ns. Peaks from
  torch.cuda.memory_stats() (reset, and the cache emptied, between traces).
  The Python floor, the same timing around _raw_delete(0) (a binding call
  that returns at once), is measured in the same process and subtracted
  from torch's medians; the raw figures are printed too.
- driver calls: gpusim_calls() of the simulated device (cudaMalloc,
  cuMemCreate, cuMemMap, ...), read before and after each replay, the same
  counter for both allocators.

Then the cached alloc+free pair (64 KiB and 8 MiB, legacy stream), per pair:
torch's raw_alloc/raw_delete and gpuslack's C API (gpuslack_device_alloc/
free through ctypes, libgpuslack.so dlopen'ed into the same torch process),
each beside its Python floor (the same loop calling a binding that returns
at once), interleaved for R rounds; and bench/alloc_bench's C++ figures
(BM_DeviceAllocator_StreamPair, BM_CudaMallocFree_Vmm) in the same run.

Synchronizations (cudaDeviceSynchronize, cudaStreamSynchronize,
cudaEventSynchronize, gpusim_calls too) are counted apart from the driver
calls, for both allocators.

--pressure prints instead, per trace, the smallest simulated device each
allocator replays it on with no failed allocation (pressure.py says how:
bisection between the trace's ideal peak and 4x it); --gpuslack-only leaves
torch out (no --torch-python needed).

Exit status 1 when a replay fails an allocation or a child fails.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import goals

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COUNTED = ("cudaMalloc", "cudaFree", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess",
           "cuMemAddressReserve", "cuMemAddressFree")
SYNCS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize")
TORCH_CONFS = (("torch default", ""), ("torch expandable_segments", "expandable_segments:True"))
PAIR_SIZES = (64 << 10, 8 << 20)


# ------------------------------------------------------------ torch side --
# Runs in a child under the torch Python; imports torch only here.

def read_stream(path):
    """The events of one stream (trace_events.py's format): name,
    [(kind, id, size, stream)]: the stream the trace recorded, as an integer
    (0: the legacy stream), for allocations; 0 for frees."""
    name, events = os.path.basename(path), []
    with open(path) as f:
        for line in f:
            if line.startswith("# name "):
                name = line[7:].strip()
            elif line[0] == "a":
                _, i, size, stream = line.split()
                events.append((True, int(i), int(size), int(stream)))
            elif line[0] == "f":
                events.append((False, int(line.split()[1]), 0, 0))
    return name, events


def torch_streams(torch):
    """The torch stream handle for each stream a trace recorded: 0 for 0,
    and a stream of its own for every other (a torch.cuda.Stream, kept
    alive by the returned function), as trace_replay makes one per recorded
    stream: each allocator then serves every block on the stream the trace
    allocated it on (and frees it there), per-stream pools included."""
    made = {0: None}

    def handle(recorded):
        if recorded not in made:
            made[recorded] = torch.cuda.Stream()
        return made[recorded].cuda_stream if made[recorded] is not None else 0
    return handle


def gpusim_counter():
    fn = ctypes.CDLL("libgpusim.so").gpusim_calls
    fn.restype, fn.argtypes = ctypes.c_long, [ctypes.c_char_p]
    return lambda: {n: fn(n.encode()) for n in COUNTED + SYNCS}


def python_floor(call, arg, n=20000):
    """Median of perf_counter_ns around a binding call that returns at once."""
    clock = time.perf_counter_ns
    samples = []
    for _ in range(n):
        t0 = clock()
        call(arg)
        samples.append(clock() - t0)
    samples.sort()
    return samples[len(samples) // 2]


def torch_replay(streams):
    import torch
    alloc, delete = torch._C._cuda_cudaCachingAllocator_raw_alloc, torch._C._cuda_cudaCachingAllocator_raw_delete
    clock = time.perf_counter_ns
    counts = gpusim_counter()
    torch.cuda.init()
    delete(alloc(512, 0))  # the first call makes the allocator
    torch.cuda.empty_cache()
    for path in streams:
        name, events = read_stream(path)
        stream_of = torch_streams(torch)
        for e in events:  # made before the timed loop and the call counts
            stream_of(e[3])
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        floor = python_floor(delete, 0)
        ptr, alloc_ns, free_ns, failed = {}, [], [], 0
        before = counts()
        for is_alloc, i, size, stream in events:
            if is_alloc:
                if size == 0:
                    continue
                s = stream_of(stream)
                t0 = clock()
                try:
                    p = alloc(size, s)
                except RuntimeError:
                    p = 0
                alloc_ns.append(clock() - t0)
                if p:
                    ptr[i] = p
                else:
                    failed += 1
            elif i in ptr:
                p = ptr.pop(i)
                t0 = clock()
                delete(p)
                free_ns.append(clock() - t0)
        after = counts()
        stats = torch.cuda.memory_stats()
        for p in ptr.values():
            delete(p)
        alloc_ns.sort()
        free_ns.sort()
        print(json.dumps({
            "trace": name, "failed": failed, "floor_ns": floor,
            "peak_reserved": stats["reserved_bytes.all.peak"], "peak_allocated": stats["allocated_bytes.all.peak"],
            "alloc_median_ns": pct(alloc_ns, 0.5), "alloc_p99_ns": pct(alloc_ns, 0.99),
            "free_median_ns": pct(free_ns, 0.5), "free_p99_ns": pct(free_ns, 0.99),
            "calls": {k: after[k] - before[k] for k in COUNTED if after[k] != before[k]},
            "syncs": {k: max(0, after[k] - before[k]) for k in SYNCS},
        }), flush=True)
    print(json.dumps({"torch": torch.__version__}), flush=True)


def torch_pressure(streams, caps):
    """Replays each stream under a cap of its own (bytes; this device is
    the largest): torch's per-process memory fraction. Stops a stream at
    its first failed allocation; prints {"trace", "cap", "failed"} each."""
    import torch
    alloc, delete = torch._C._cuda_cudaCachingAllocator_raw_alloc, torch._C._cuda_cudaCachingAllocator_raw_delete
    torch.cuda.init()
    delete(alloc(512, 0))
    total = torch.cuda.mem_get_info()[1]
    for path, cap in zip(streams, caps):
        name, events = read_stream(path)
        stream_of = torch_streams(torch)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total))
        ptr, failed = {}, 0
        for is_alloc, i, size, stream in events:
            if is_alloc:
                if size == 0:
                    continue
                try:
                    ptr[i] = alloc(size, stream_of(stream))
                except RuntimeError:  # torch.OutOfMemoryError
                    failed = 1
                    break
            elif i in ptr:
                delete(ptr.pop(i))
        for p in ptr.values():
            delete(p)
        torch.cuda.set_per_process_memory_fraction(1.0)
        print(json.dumps({"trace": name, "cap": cap, "failed": failed}), flush=True)


def torch_pairs(gpuslack_so, n, rounds):
    import torch
    alloc, delete = torch._C._cuda_cudaCachingAllocator_raw_alloc, torch._C._cuda_cudaCachingAllocator_raw_delete
    torch.cuda.init()  # the allocator exists once CUDA is initialized
    lib = ctypes.CDLL(gpuslack_so)
    g_alloc, g_free = lib.gpuslack_device_alloc, lib.gpuslack_device_free
    g_alloc.restype, g_alloc.argtypes = ctypes.c_void_p, [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    g_free.restype, g_free.argtypes = None, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    clock = time.perf_counter_ns

    def torch_pair(size):
        t0 = clock()
        for _ in range(n):
            delete(alloc(size, 0))
        return (clock() - t0) / n

    def torch_floor(size):  # two binding calls that return at once
        t0 = clock()
        for _ in range(n):
            delete(delete(0) or 0)
        return (clock() - t0) / n

    def gpuslack_pair(size):
        t0 = clock()
        for _ in range(n):
            g_free(g_alloc(size, 0, None), size, 0, None)
        return (clock() - t0) / n

    def gpuslack_floor(size):  # gpuslack_device_free(NULL, ...) returns at once
        t0 = clock()
        for _ in range(n):
            g_free(g_free(None, size, 0, None), size, 0, None)
        return (clock() - t0) / n

    paths = {"torch": torch_pair, "torch floor": torch_floor, "gpuslack": gpuslack_pair,
             "gpuslack floor": gpuslack_floor}
    for size in PAIR_SIZES:  # warm: the first pair of each size maps memory
        torch_pair(size)
        gpuslack_pair(size)
    results = {}
    for _ in range(rounds):
        for size in PAIR_SIZES:
            for label, fn in paths.items():
                results.setdefault("%s/%d" % (label, size), []).append(fn(size))
    print(json.dumps({k: statistics.median(v) for k, v in results.items()}), flush=True)


# ------------------------------------------------------------ the parent --

def pct(sorted_values, q):
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def gib(b):
    return "%.2f GiB" % (b / float(1 << 30))


def run(cmd, env=None, what=""):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("peers.py: %s failed (exit %d):\n%s%s" % (what or cmd[0], r.returncode, r.stdout, r.stderr[-4000:]))
    return r.stdout


TRACE_SUFFIXES = (".pickle", ".pickle.gz", ".csv")  # what trace_events.py reads (gzip: bench/traces)


def convert(traces, tmp):
    files = []
    for t in traces:
        if not os.path.exists(t):
            sys.exit("peers.py: no trace folder or file %s (--traces or $GPUSLACK_TRACES name others)" % t)
        if os.path.isdir(t):
            for d, _, names in os.walk(t):
                files += [(os.path.join(d, n), t) for n in names if n.endswith(TRACE_SUFFIXES)]
        else:
            files.append((t, os.path.dirname(t)))
    files.sort()
    streams = []
    for n, (path, base) in enumerate(files):
        name = os.path.relpath(path, base).split(".")[0]
        args = []
        with open(path, "rb") as f:
            if path.endswith(".csv") and f.readline().startswith(b"id,lower,upper,size"):
                args, name = ["--scale", "1024"], name + " ×1024"
        out = os.path.join(tmp, "%d.events" % n)
        run([sys.executable, os.path.join(HERE, "trace_events.py"), *args, "--name", name, "-o", out, path],
            what="trace_events.py " + path)
        streams.append(out)
    if not streams:
        sys.exit("peers.py: no *.pickle, *.pickle.gz or *.csv in %s" % " ".join(traces))
    return streams


def sim_env(build, alloc_conf=None, device_bytes=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF")}
    simcuda = os.path.join(build, "simcuda")
    env["LD_LIBRARY_PATH"] = simcuda + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["GPUSIM_DEVICE_MEMORY"] = str(device_bytes) if device_bytes else "80G"
    env["PYTHONWARNINGS"] = "ignore"  # torch warns that NumPy is not installed
    env["GPUSLACK_CONF"] = "text_summary:off,json_summary:false"
    if alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    return env


def gpuslack_replay(build, streams, extra):
    out = run([os.path.join(build, "bench", "trace_replay"), "--tsv", *extra, *streams],
              env=sim_env(build), what="trace_replay")
    lines = out.splitlines()
    head = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t")))
        calls = {}
        if row["driver_calls"] != "-":
            calls = {k: int(v) for k, v in (c.split("=") for c in row["driver_calls"].split(","))}
        rows.append({"trace": row["trace"], "failed": int(row["failed"]), "floor_ns": 0,
                     "ideal": int(row["ideal_peak"]), "peak_reserved": int(row["peak_reserved"]),
                     "peak_allocated": int(row["peak_allocated"]),
                     "alloc_median_ns": int(row["alloc_median_ns"]), "alloc_p99_ns": int(row["alloc_p99_ns"]),
                     "free_median_ns": int(row["free_median_ns"]), "free_p99_ns": int(row["free_p99_ns"]),
                     "calls": calls, "syncs": {k: int(row[c]) for k, c in zip(SYNCS, SYNC_COLUMNS)}})
    return rows


SYNC_COLUMNS = ("device_syncs", "stream_syncs", "event_syncs")  # trace_replay --tsv's, as SYNCS


def torch_child(build, py, alloc_conf, args, device_bytes=None):
    out = run([py, "-B", os.path.abspath(__file__), *args], env=sim_env(build, alloc_conf, device_bytes),
              what="torch (%s)" % (alloc_conf or "default allocator"))
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return "%s cores (%s), %s" % (os.cpu_count(), model or platform.processor(), platform.platform())


def load():
    return " ".join("%.2f" % x for x in os.getloadavg())


def rev():
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def ns(v):
    return "%.0f" % v if v < 100000 else "%.0f µs" % (v / 1000.0)


def report_text(args, extra_goals=()):
    streams_tmp = tempfile.TemporaryDirectory()
    streams = convert(args.traces, streams_tmp.name)
    load_before = load()
    t_start = time.monotonic()
    sides = []  # (label, rows, from Python?)
    sides.append(("gpuslack default", gpuslack_replay(args.build, streams, []), False))
    sides.append(("gpuslack cache_limit_mb:2", gpuslack_replay(args.build, streams, ["--cache-limit-mb", "2"]), False))
    torch_version = "?"
    for label, conf in TORCH_CONFS:
        rows = torch_child(args.build, args.torch_python, conf, ["--worker", "replay", *streams])
        torch_version = rows[-1].get("torch", torch_version)
        sides.append((label, rows[:-1], True))
    pairs = {}
    for label, conf in TORCH_CONFS:
        got = torch_child(args.build, args.torch_python, conf,
                          ["--worker", "pairs", "--gpuslack", os.path.join(args.build, "libgpuslack.so"),
                           "--pairs", str(args.pairs), "--rounds", str(args.rounds)])
        pairs[label] = got[0]
    bench = ""
    alloc_bench = os.path.join(args.build, "bench", "alloc_bench")
    if os.path.exists(alloc_bench) and not args.no_alloc_bench:
        out = run([alloc_bench, "--benchmark_filter=StreamPair|CudaMallocFree_Vmm",
                   "--benchmark_min_time=0.2", "--benchmark_repetitions=3",
                   "--benchmark_report_aggregates_only=true"], env=sim_env(args.build), what="alloc_bench")
        bench = "\n".join(l for l in out.splitlines() if "_median" in l)
    took = time.monotonic() - t_start

    failed = [(label, r["trace"], r["failed"]) for label, rows, _ in sides for r in rows if r["failed"]]
    ideal = {r["trace"]: r["ideal"] for r in sides[0][1]}
    traces = [r["trace"] for r in sides[0][1]]
    by = {label: {r["trace"]: r for r in rows} for label, rows, _ in sides}
    order = [s[0] for s in sides[2:]] + [s[0] for s in sides[:2]]  # torch first, as in the issue

    o = []
    w = o.append
    w("date: %s  " % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    w("machine: %s  " % machine())
    w("load average (1, 5, 15 min) before: %s; after: %s; the run took %.0f s  " % (load_before, load(), took))
    w("gpuslack: %s, %s; torch %s (PyPI wheel) on the simulated device (GPUSIM_DEVICE_MEMORY=80G)  "
      % (rev(), os.path.basename(os.path.abspath(args.build)), torch_version))
    # Paths relative to the checkout: the table says where the traces are
    # for anyone's clone, not for this machine.
    w("command: `scripts/bench-peers.sh%s`; traces: %s"
      % (" --goals" if getattr(args, "goals", False) else "",
         ", ".join(os.path.relpath(os.path.abspath(t), ROOT) for t in args.traces)))
    w("")
    goals.table(w, by, list(by["gpuslack default"].keys()), list(extra_goals) + goals.pair_rows(bench))
    w("**Peak reserved (utilization = peak allocated / peak reserved)**, same event streams:")
    w("")
    w("| trace | ideal (peak live) | " + " | ".join(order) + " |")
    w("|---|---:|" + "---:|" * len(order))
    sums = {label: 0 for label in order}
    for t in traces:
        cells = []
        for label in order:
            r = by[label][t]
            sums[label] += r["peak_reserved"]
            util = r["peak_allocated"] / r["peak_reserved"] if r["peak_reserved"] else 0
            cells.append("%s (%.1f%%)" % (gib(r["peak_reserved"]), 100 * util))
        w("| %s | %s | %s |" % (t, gib(ideal[t]), " | ".join(cells)))
    w("| **sum** | %s | %s |" % (gib(sum(ideal.values())), " | ".join(gib(sums[l]) for l in order)))
    w("")
    floors = [r["floor_ns"] for label, rows, py in sides if py for r in rows]
    w("**Per-call latency, ns: allocation median / p99, free median.** gpuslack: C++ (trace_replay, "
      "steady_clock around the call). torch: from Python (perf_counter_ns around the torch._C binding of "
      "c10 raw_alloc_with_stream / raw_delete); medians are net of the Python floor measured in the same "
      "process (the same timing around `_raw_delete(0)`, which returns at once: %s ns), raw median in "
      "brackets; the p99 is raw (the floor is noise there). Simulated driver costs included (cudaMalloc "
      "and cuMemCreate are modelled at tens of µs)." % ("–".join(str(x) for x in (min(floors), max(floors)))
                                                         if floors else "?"))
    w("")
    w("| trace | " + " | ".join(order) + " |")
    w("|---|" + "---:|" * len(order))
    for t in traces:
        cells = []
        for label in order:
            r = by[label][t]
            f = r["floor_ns"]
            if f:
                cells.append("%s [%s] / %s / %s [%s]" % (
                    ns(max(0, r["alloc_median_ns"] - f)), ns(r["alloc_median_ns"]), ns(r["alloc_p99_ns"]),
                    ns(max(0, r["free_median_ns"] - f)), ns(r["free_median_ns"])))
            else:
                cells.append("%s / %s / %s" % (ns(r["alloc_median_ns"]), ns(r["alloc_p99_ns"]),
                                               ns(r["free_median_ns"])))
        w("| %s | %s |" % (t, " | ".join(cells)))
    w("")
    w("**Driver calls during each replay** (gpusim_calls: cudaMalloc, cudaFree, cuMemCreate, cuMemMap, "
      "cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressReserve, cuMemAddressFree; every call that gives "
      "or takes device memory):")
    w("")
    w("| trace | " + " | ".join(order) + " |")
    w("|---|" + "---:|" * len(order))
    totals = {label: {} for label in order}
    for t in traces:
        cells = []
        for label in order:
            calls = by[label][t]["calls"]
            for k, v in calls.items():
                totals[label][k] = totals[label].get(k, 0) + v
            cells.append(str(sum(calls.values())))
        w("| %s | %s |" % (t, " | ".join(cells)))
    w("| **sum** | %s |" % " | ".join(str(sum(totals[l].values())) for l in order))
    w("")
    for label in order:
        w("- %s: %s" % (label, ", ".join("%s %d" % (k, totals[label][k]) for k in COUNTED if k in totals[label])
                        or "none"))
    w("")
    w("**Synchronizations during each replay** (gpusim_calls: cudaDeviceSynchronize / cudaStreamSynchronize / "
      "cudaEventSynchronize; gpuslack's own, the replay's GPU model's excluded):")
    w("")
    w("| trace | " + " | ".join(order) + " |")
    w("|---|" + "---:|" * len(order))
    for t in traces:
        w("| %s | %s |" % (t, " | ".join(" / ".join(str(by[label][t].get("syncs", {}).get(k, 0)) for k in SYNCS)
                                          for label in order)))
    w("")
    w("**Cached alloc+free pair, legacy stream** (ns per pair; loops of %d pairs, median of %d interleaved "
      "rounds; one Python process per torch configuration, gpuslack's C API dlopen'ed into it). *Floor*: "
      "the same loop calling two bindings that return at once (`_raw_delete(0)`; "
      "`gpuslack_device_free(NULL, ...)` through ctypes), so *net* = pair − floor:" % (args.pairs, args.rounds))
    w("")
    w("| process | path | 64 KiB pair | floor | net | 8 MiB pair | floor | net |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, _ in TORCH_CONFS:
        p = pairs[label]
        for who, path in (("torch", "torch._C raw_alloc/raw_delete (pybind11)"),
                          ("gpuslack", "gpuslack_device_alloc/free (ctypes)")):
            cells = []
            for size in PAIR_SIZES:
                pair, floor = p["%s/%d" % (who, size)], p["%s floor/%d" % (who, size)]
                cells += ["%.0f" % pair, "%.0f" % floor, "%.0f" % (pair - floor)]
            w("| %s | %s | %s |" % (label, path, " | ".join(cells)))
    w("")
    if bench:
        w("gpuslack's C++ figures in the same run (`bench/alloc_bench`, medians of its repetitions; StreamPair is "
          "`DeviceAllocator::allocate(bytes, stream)` + `free(p, stream)`, CudaMallocFree_Vmm the same through "
          "libgpuslack.so's cudaMalloc/cudaFree hooks):")
        w("")
        w("```")
        w(bench)
        w("```")
        w("")
    if failed:
        w("FAILED allocations: " + ", ".join("%s %s: %d" % f for f in failed))
    return (1 if failed else 0), "\n".join(o) + "\n"


def report(args):
    code, text = goals.report(args) if args.goals else report_text(args)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return code


RECORDED = os.path.join(ROOT, "bench", "traces")  # real models' traces, bench/replay/record_torch.py


def default_traces():
    """The trace set: $GPUSLACK_TRACES alone, else ../shared/traces (the
    minimalloc problems and opt-finetune) and bench/traces."""
    if os.environ.get("GPUSLACK_TRACES"):
        return [os.environ["GPUSLACK_TRACES"]]
    return [os.path.normpath(os.path.join(ROOT, "..", "shared", "traces")), RECORDED]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", choices=("replay", "pairs", "pressure"), help=argparse.SUPPRESS)
    ap.add_argument("--caps", help=argparse.SUPPRESS)
    ap.add_argument("--pressure", action="store_true",
                    help="the smallest simulated device each trace replays on (pressure.py)")
    ap.add_argument("--gpuslack-only", action="store_true", help="--pressure without torch")
    ap.add_argument("--goals", action="store_true",
                    help="issue 14's goals as one table: the peers, the smallest devices and the loops, one run")
    ap.add_argument("--gpuslack", help=argparse.SUPPRESS)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--torch-python")
    ap.add_argument("--traces", action="append")
    ap.add_argument("--pairs", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-alloc-bench", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("streams", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "replay":
        return torch_replay(args.streams)
    if args.worker == "pairs":
        return torch_pairs(args.gpuslack, args.pairs, args.rounds)
    if args.worker == "pressure":
        return torch_pressure(args.streams, [int(c) for c in args.caps.split(",")])
    args.build = os.path.abspath(args.build)
    if args.pressure:
        import pressure
        args.traces = args.traces or default_traces()
        if not args.torch_python and not args.gpuslack_only:
            sys.exit("peers.py: --torch-python is needed (scripts/torch-env.sh prints it), or --gpuslack-only")
        return pressure.report(args)
    if not args.torch_python:
        sys.exit("peers.py: --torch-python is needed (scripts/torch-env.sh prints it)")
    args.traces = args.traces or default_traces()
    return report(args)


if __name__ == "__main__":
    sys.exit(main() or 0)

#!/usr/bin/env python3
"""The GPU check's driver (scripts/gpu-check.sh is its entry point).

    gpu_check.py --out OUTDIR --build BUILD_DIR --root REPO [--budget-s S] [--quick]

Runs each step of the check with its own timeout inside a total budget,
records each (passed, failed, timeout, skipped; seconds; what it measured;
its log under OUTDIR/logs/), and writes OUTDIR/gpu-check.json and
OUTDIR/gpu-check.md. A failing step never stops the others.

The device: a real GPU when `nvidia-smi -L` lists one (the toolkit's
libcudart and the driver's libcuda.so.1 come first on LD_LIBRARY_PATH, so
that no binary's RUNPATH to <build>/simcuda wins), else the simulated one
(LD_LIBRARY_PATH=<build>/simcuda). Which libcudart.so.13 the conformance
binary actually resolves is recorded beside it, and decides the "device"
field: "simulated" when it lies in <build>/simcuda. On the simulated device
the sizes and repetitions are reduced ("reduced": true, and said in both
files), so that the whole check fits the 2-core CI machine.
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

STATUSES = ("passed", "failed", "timeout", "skipped")


class Check:
    def __init__(self, args):
        self.root = args.root
        self.build = args.build if os.path.isabs(args.build) else os.path.abspath(args.build)
        if not os.path.isdir(self.build):
            self.build = os.path.join(self.root, args.build)
        self.out = os.path.abspath(args.out)
        self.logs = os.path.join(self.out, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.budget_s = args.budget_s
        self.start = time.monotonic()
        self.steps = []
        self.real = self._gpu_listed()
        self.env = self._device_env()
        self.quick = args.quick or not self.real
        self.libcudart = self._resolved("libcudart.so.13")
        self.simulated = (not self.real) or self.libcudart.startswith(os.path.join(self.build, "simcuda"))

    # ---- the device ----
    @staticmethod
    def _gpu_listed():
        if not shutil.which("nvidia-smi"):
            return False
        try:
            r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return r.returncode == 0 and "GPU" in r.stdout

    def _device_env(self):
        env = dict(os.environ)
        env.pop("GPUSLACK_CONF", None)
        env.pop("LD_PRELOAD", None)
        if self.real:
            cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
            dirs = [os.path.join(cuda, "lib64")]
            # The driver's own libcuda.so.1 (and NCCL, NVML) by the loader's
            # cache, ahead of any RUNPATH to the simulated ones.
            try:
                cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.TimeoutExpired):
                cache = ""
            for lib in ("libcuda.so.1", "libnccl.so.2", "libnvidia-ml.so.1"):
                m = re.search(r"\s%s .*=> (\S+)" % re.escape(lib), cache)
                if m and os.path.dirname(m.group(1)) not in dirs:
                    dirs.append(os.path.dirname(m.group(1)))
            env["LD_LIBRARY_PATH"] = ":".join(dirs + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])
        else:
            env["LD_LIBRARY_PATH"] = os.path.join(self.build, "simcuda")
            env.setdefault("GPUSIM_DEVICE_COUNT", "1")
        env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
        return env

    def _resolved(self, soname, binary=None):
        """Where the loader finds `soname` for `binary` (the conformance binary)."""
        binary = binary or os.path.join(self.build, "tests", "conformance", "gpuslack_conformance")
        if not os.path.exists(binary):
            return "(no %s binary)" % os.path.basename(binary)
        env = dict(self.env, LD_TRACE_LOADED_OBJECTS="1")
        try:
            r = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return "(unknown)"
        m = re.search(r"%s => (\S+)" % re.escape(soname), r.stdout)
        return os.path.realpath(m.group(1)) if m else "(not found)"

    # ---- steps ----
    def left_s(self):
        return self.budget_s - (time.monotonic() - self.start)

    def step(self, name, argv, timeout_s, parse=None, env=None, what=""):
        rec = {"name": name, "what": what, "command": " ".join(argv), "status": "skipped", "seconds": 0.0,
               "exit_code": None, "log": os.path.join("logs", name + ".log"), "results": {}}
        self.steps.append(rec)
        left = self.left_s() - 5
        if left < 10:
            rec["reason"] = "the check's time budget is spent"
            return rec
        limit = min(timeout_s, left)
        t0 = time.monotonic()
        log_path = os.path.join(self.out, rec["log"])
        with open(log_path, "w") as log:
            try:
                p = subprocess.Popen(argv, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, cwd=self.root, start_new_session=True)
            except OSError as e:
                rec.update(status="failed", reason=str(e))
                return rec
            try:
                output, _ = p.communicate(timeout=limit)
                rec["exit_code"] = p.returncode
                rec["status"] = "passed" if p.returncode == 0 else "failed"
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                output, _ = p.communicate()
                rec["status"] = "timeout"
                rec["reason"] = "ran past %d s" % limit
            log.write(output or "")
        rec["seconds"] = round(time.monotonic() - t0, 1)
        if parse:
            try:
                rec["results"] = parse(output or "") or {}
            except Exception as e:  # a parser's failure is the step's
                rec["results"] = {"parse_error": str(e)}
                if rec["status"] == "passed":
                    rec["status"] = "failed"
        return rec

    def skip(self, name, reason, what=""):
        self.steps.append({"name": name, "what": what, "status": "skipped", "reason": reason, "seconds": 0.0,
                           "exit_code": None, "results": {}})


def benchmark_medians(path):
    """{benchmark name: median real time in ns} of a Google Benchmark JSON file."""
    with open(path) as f:
        doc = json.load(f)
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
    rows = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        rows[name] = round(b["real_time"] * scale.get(b.get("time_unit", "ns"), 1.0), 1)
    return rows


def lines_matching(output, pattern, limit=80):
    return [l for l in output.splitlines() if re.search(pattern, l)][:limit]


NCCL_PROBE = r"""
import ctypes
lib = ctypes.CDLL("libnccl.so.2")
v = ctypes.c_int(0)
rc = lib.ncclGetVersion(ctypes.byref(v))
path = next((l.split()[-1] for l in open("/proc/self/maps") if "libnccl.so" in l), "")
print("%d %s" % (v.value if rc == 0 else -1, path))
"""


def nccl_version_text(code):
    """NCCL's version code as NCCL_VERSION_CODE spells it: 22304 is 2.23.4 (1000s before 2.9)."""
    if code is None or code < 0:
        return "unknown"
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, code % 10000 // 100, code % 100)
    return "%d.%d.%d" % (code // 1000, code % 1000 // 100, code % 100)


def nccl_probe(env):
    """{"version_code", "version", "path"} of the libnccl.so.2 this device's environment loads; None without one."""
    try:
        r = subprocess.run([sys.executable, "-c", NCCL_PROBE], env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    code, _, path = (r.stdout.strip().splitlines() or ["-1"])[-1].partition(" ")
    code = int(code) if code.lstrip("-").isdigit() else -1
    return {"version_code": code, "version": nccl_version_text(code), "path": os.path.realpath(path) if path else ""}


def visible_gpus(c):
    """How many GPUs a CUDA program sees: 2 on the simulated device (GPUSIM_DEVICE_COUNT, below), else
    nvidia-smi's list cut to CUDA_VISIBLE_DEVICES when that is set."""
    if c.simulated:
        return 2
    try:
        listed = [l for l in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                            timeout=30).stdout.splitlines() if l.startswith("GPU ")]
    except (OSError, subprocess.TimeoutExpired):
        listed = []
    n = len(listed)
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        n = min(n, len([d for d in cvd.split(",") if d.strip()]))
    return max(n, 1)


# The collectives row fields the topology step keeps (docs/summary.md, "Collectives").
COLL_ROW_KEYS = ("op", "size_bucket", "nranks", "count", "busbw_gbps", "algo", "proto", "channels", "nnodes",
                 "expected_busbw_gbps", "expected_from", "best_algo", "best_proto", "best_channels", "best_time_s",
                 "chosen_time_s")


def topology_step(c, nccl):
    """A small CUDA program under LD_PRELOAD=libgpuslack.so: with NCCL, nccl_profiler_app's all-reduces
    and all-gathers with one rank (a thread) per visible GPU; without, cuda_app's one round trip. Its
    summary JSON's `topology` section, and the collectives' profiler status, records, algorithms and
    per-row choices (algo/proto/channels, the cost model's expected busbw and best choice), go into the
    step's results, beside `nvidia-smi topo -m` and the NCCL version. On the simulated device: two GPUs
    with 18 NVLink 4 links each, so that the figures are not all zero."""
    name, what = "topology", "topology and NCCL's choices: the summary's topology and profiler records"
    b = c.build
    results = {"nccl": nccl, "nvidia_smi_topo": None}
    if shutil.which("nvidia-smi"):
        try:
            r = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30)
            results["nvidia_smi_topo"] = (r.stdout if r.returncode == 0 else r.stdout + r.stderr).rstrip()
        except (OSError, subprocess.TimeoutExpired) as e:
            results["nvidia_smi_topo"] = "(nvidia-smi topo -m: %s)" % e
    else:
        results["nvidia_smi_topo"] = "(no nvidia-smi)"
    if nccl:
        app = os.path.join(b, "tests", "interpose", "nccl_profiler_app")
        ranks = visible_gpus(c)
        argv = [app, str(ranks), "10" if c.quick else "50"]
    else:
        app = os.path.join(b, "tests", "interpose", "cuda_app")
        ranks = 1
        argv = [app]
    if not os.path.exists(app):
        c.skip(name, "%s not built (GPUSLACK_BUILD_TESTS)" % os.path.relpath(app, b), what=what)
        c.steps[-1]["results"] = results
        return
    out_dir = os.path.join(c.out, "topology-gpuslack")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    env = dict(c.env, LD_PRELOAD=os.path.join(b, "libgpuslack.so"),
               GPUSLACK_CONF="output_dir:%s,summary_detail:full" % out_dir)
    if c.simulated:
        env.update(GPUSIM_NVLINK_LINKS="18", GPUSIM_DEVICE_COUNT="2")
        results["simulated"] = "GPUSIM_DEVICE_COUNT=2 GPUSIM_NVLINK_LINKS=18: the simulated device's figures"
    results.update(program=os.path.basename(app), ranks=ranks, libcudart=c._resolved("libcudart.so.13", app))
    if nccl:
        results["libnccl"] = c._resolved("libnccl.so.2", app)

    def parse(out):
        files = sorted(glob.glob(os.path.join(out_dir, "gpuslack-*.json")), key=os.path.getmtime)
        if not files:
            raise RuntimeError("no summary JSON in %s" % out_dir)
        with open(files[-1]) as f:
            doc = json.load(f)
        r = dict(results, summary=os.path.relpath(files[-1], c.out), topology=doc.get("topology"))
        coll = doc.get("collectives") or {}
        if nccl:
            r["collectives"] = {
                "nccl_version": nccl_version_text(coll.get("nccl_version")),
                "profiler": coll.get("profiler"),
                "profiler_records": coll.get("profiler_records"),
                "profiler_dropped": coll.get("profiler_dropped"),
                "algorithms": coll.get("algorithms", []),
                "rows": [{k: row.get(k) for k in COLL_ROW_KEYS} for row in coll.get("rows", [])],
            }
        return r

    rec = c.step(name, argv, 60, parse, env=env, what=what)
    if not rec["results"] or "parse_error" in rec["results"]:
        rec["results"] = dict(results, **rec["results"])
    t = rec["results"].get("topology")
    if rec["status"] == "passed" and (t or {}).get("status") != "read":  # the step's point: say so
        rec["status"] = "failed"
        rec["reason"] = ("topology %s: %s" % (t.get("status"), t.get("detail")) if t else
                         "the summary has no topology (device_health:off, or a build before issue 26)")


def _f(v, spec="%.1f"):
    """A figure for a Markdown cell: "-" when the summary did not have it."""
    return "-" if v is None or v == "" else (spec % v if isinstance(v, (int, float)) else str(v))


def topology_md(r):
    """The topology step's results as a few lines of Markdown."""
    md = ["- **simulated** (%s)" % r["simulated"]] if r.get("simulated") else []
    n = r.get("nccl")
    md.append("- program: `%s` (%s rank%s), NCCL %s%s" % (
        r.get("program"), r.get("ranks"), "" if r.get("ranks") == 1 else "s",
        n["version"] if n else "not found", (" (`%s`)" % n["path"]) if n and n.get("path") else ""))
    t = r.get("topology")
    if t:
        l = t.get("links") or {}
        shape = ("%s node(s) x %s rank(s) per node" % (l.get("nodes"), l.get("ranks_per_node"))
                 if l.get("nodes") else "unknown")
        md.append("- topology: %s; %s GPU(s) on the node; shape %s (%s)" % (
            t.get("status"), t.get("gpus_on_node"), shape, l.get("shape_from")))
        md.append("- within the node: %s GB/s%s (%s)" % (l.get("intra_gbps"), ", NVLink" if l.get("intra_is_nvlink")
                                                            else "", l.get("intra_from")))
        md.append("- between nodes: %s GB/s (%s)" % (l.get("inter_gbps"), l.get("inter_from")))
        md += ["", "| GPU | name | PCI bus id | NVLink links / gen / GB/s | PCIe max (now) | peers |",
               "|---:|---|---|---|---|---|"]
        for g in t.get("gpus") or []:
            md.append("| %s | %s | %s | %s / %s / %s | gen %s x%s (gen %s x%s) | %s |" % (
                g.get("device"), g.get("name"), g.get("bus_id"), g.get("nvlink_links"), g.get("nvlink_generation"),
                g.get("nvlink_gbps"), g.get("pcie_max_generation"), g.get("pcie_max_width"),
                g.get("pcie_generation"), g.get("pcie_width"), g.get("peers")))
        nics = t.get("nics") or []
        md.append("")
        if nics:
            md.append("- NICs: " + ", ".join("%s:%s %s %s Gb/s %s" % (x.get("name"), x.get("port"), x.get("link_layer"),
                                                                      x.get("gbit_s"), x.get("state")) for x in nics))
        else:
            md.append("- NICs: none (%s)" % t.get("nics_unknown"))
        for a in t.get("affinity") or []:
            md.append("- GPU %s's nearest NIC: %s:%s (%s)" % (a.get("device"), a.get("nic"), a.get("port"),
                                                              a.get("closeness")))
    coll = r.get("collectives")
    if coll:
        md.append("- NCCL profiler plugin: %s; %s collectives recorded, %s dropped" % (
            coll.get("profiler"), coll.get("profiler_records"), coll.get("profiler_dropped")))
        if coll.get("algorithms"):
            md += ["", "NCCL's choices (the profiler's `algorithms`):", "",
                   "| op | size bucket | algo/proto | calls | channels | GPU s | busbw GB/s |",
                   "|---|---:|---|---:|---:|---:|---:|"]
            md += ["| %s | 2^%s | %s/%s | %s | %s | %s | %s |" % (
                a.get("op"), a.get("size_bucket"), a.get("algo"), a.get("proto"), a.get("calls"),
                _f(a.get("channels")), _f(a.get("gpu_s"), "%.6f"), _f(a.get("busbw_gbps"), "%.2f"))
                for a in coll["algorithms"]]
        if coll.get("rows"):
            md += ["", "Collectives rows, against the cost model (GB/s):", "",
                   "| op | size bucket | calls | NCCL's algo/proto/channels | busbw | expected busbw | best |",
                   "|---|---:|---:|---|---:|---:|---|"]
            md += ["| %s | 2^%s | %s | %s/%s/%s | %s | %s | %s/%s/%s |" % (
                w.get("op"), w.get("size_bucket"), w.get("count"), _f(w.get("algo")), _f(w.get("proto")),
                _f(w.get("channels")), _f(w.get("busbw_gbps"), "%.2f"), _f(w.get("expected_busbw_gbps"), "%.2f"),
                _f(w.get("best_algo")), _f(w.get("best_proto")), _f(w.get("best_channels"), "%d"))
                for w in coll["rows"]]
    if r.get("nvidia_smi_topo"):
        md += ["", "`nvidia-smi topo -m`:", "", "```text", r["nvidia_smi_topo"], "```"]
    return md


def run_all(c):
    b = c.build
    quick = c.quick
    exe = lambda *p: os.path.join(b, *p)

    nccl = nccl_probe(c.env)
    have_nccl = nccl is not None

    # 1. The conformance suite on this device (its NCCL tests only where an
    # NCCL is installed: they fail, never skip, without one).
    conf_json = os.path.join(c.logs, "conformance.json")

    def parse_conformance(out):
        with open(conf_json) as f:
            doc = json.load(f)
        failed = [s["name"] + "." + t["name"] for s in doc["testsuites"] for t in s["testsuite"]
                  if t.get("failures")]
        skipped = [s["name"] + "." + t["name"] for s in doc["testsuites"] for t in s["testsuite"]
                   if t.get("result") == "SKIPPED"]
        return {"tests": doc["tests"], "failures": doc["failures"], "failed": failed, "skipped": skipped,
                "device_line": next(iter(lines_matching(out, r"^conformance: ")), "")}

    c.step("conformance", [exe("tests", "conformance", "gpuslack_conformance"), "--gtest_output=json:" + conf_json]
           + ([] if have_nccl else ["--gtest_filter=-Nccl.*"]),
           240, parse_conformance, what="tests/conformance: documented CUDA behaviour and gpuslack's assumptions")

    # 2-5. Benchmarks, native against gpuslack in one process each.
    reps = ["--benchmark_min_time=0.05", "--benchmark_repetitions=1"] if quick else \
        ["--benchmark_min_time=0.2", "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"]
    for name, what in (("hook_overhead_bench", "what a hook adds to a call"),
                       ("alloc_bench", "VMM allocator against cudaMalloc/cudaFree"),
                       ("pinned_bench", "pinned heap against cudaHostAlloc/cudaFreeHost")):
        out_json = os.path.join(c.logs, name + ".json")
        filt = ["--benchmark_filter=-AllReduce"] if name == "hook_overhead_bench" else []
        c.step(name, [exe("bench", name), "--benchmark_out=" + out_json, "--benchmark_out_format=json"] + reps + filt,
               90 if quick else 75, lambda out, p=out_json: {"median_ns": benchmark_medians(p)}, what=what)
    copy_modes = ["--busy", "--small"] if quick else []
    c.step("copy_bench", [exe("bench", "copy_bench")] + copy_modes, 120 if quick else 90,
           lambda out: {"table_lines": lines_matching(out, r"^\|")}, what="staged copies against native")

    # 6. The demo, natively and under gpuslack.
    steps = "3" if quick else "10"
    demo = [os.path.join(c.root, "scripts", "demo.sh"), b, "--steps", steps]

    def parse_demo(out):
        m = re.search(r"median step ([0-9.]+) ms", out)
        r = {"median_step_ms": float(m.group(1)) if m else None}
        first = lines_matching(out, r"^gpuslack: .*% of .* lost", 1)
        if first:
            r["summary_first_line"] = first[0]
        staged = lines_matching(out, r"staged copies blocked", 1)
        if staged:
            r["staging_line"] = staged[0].strip()
        return r

    c.step("demo_native", demo, 90, parse_demo, what="bench/demo/train_loop, no gpuslack")
    demo_out = os.path.join(c.out, "demo-gpuslack")
    env = dict(c.env, LD_PRELOAD=exe("libgpuslack.so"), GPUSLACK_OUTPUT=demo_out, GPUSLACK_CONF="top_call_sites:1")
    c.step("demo_gpuslack", demo, 90, parse_demo, env=env, what="the demo under LD_PRELOAD=libgpuslack.so")

    # 7. The trace replays (bench/replay/run.sh, bench/trace_replay).
    traces = os.environ.get("GPUSLACK_TRACES") or next(
        (d for d in (os.path.join(c.root, "..", "shared", "traces"), os.path.join(c.root, "shared", "traces"))
         if os.path.isdir(d)), None)
    if not traces:
        c.skip("trace_replay", "no trace folder (../shared/traces or $GPUSLACK_TRACES)")
    else:
        env = dict(c.env)
        if quick:  # two minimalloc problems: the replay path, not the table
            small = tempfile.mkdtemp(prefix="gpu-check-traces-")
            for f in sorted(glob.glob(os.path.join(traces, "minimalloc", "*.csv")))[:2]:
                shutil.copy(f, small)
            traces = small
        env["GPUSLACK_TRACES"] = traces
        c.step("trace_replay", [os.path.join(c.root, "bench", "replay", "run.sh"), b], 120,
               lambda out: {"table_lines": lines_matching(out, r"^\|")}, env=env,
               what="recorded allocation traces through the VMM allocator")

    # 8. The GPU timeline's overhead (bench/timeline_overhead.py).
    pairs, tsteps = ("1", "3") if quick else ("3", "10")
    c.step("timeline_overhead", [sys.executable, "-B", os.path.join(c.root, "bench", "timeline_overhead.py"),
                                 "--build", b, "--pairs", pairs, "--steps", tsteps, "--header"]
           + ([] if c.simulated else ["--real"]), 150,
           lambda out: {"table_lines": lines_matching(out, r"^\|")},
           what="the demo's median step, gpu_timeline on against off")

    # 9. Single-GPU NCCL collectives, when libnccl.so.2 is there.
    if not have_nccl:
        c.skip("nccl", "libnccl.so.2 not found")
    else:
        out_json = os.path.join(c.logs, "nccl.json")
        c.step("nccl", [exe("bench", "hook_overhead_bench"), "--benchmark_filter=AllReduce",
                        "--benchmark_out=" + out_json, "--benchmark_out_format=json"] + reps, 90,
               lambda out, p=out_json: {"median_ns": benchmark_medians(p)},
               what="one-rank all-reduce, natively and through the hooks")

    # 10. The topology and NCCL's choices, as gpuslack's summary records them.
    topology_step(c, nccl)

    # 10b. What the driver, CUPTI and NVML answer (scripts/gpu_check_probe.py):
    # cuGetProcAddress against the exported functions, CUPTI's version and
    # per-thread buffers with 20 launching threads' figures, NVML per device.
    c.step("driver_cupti_nvml", [sys.executable, "-B", os.path.join(c.root, "scripts", "gpu_check_probe.py"),
                                 "all", b], 240, lambda out: json.loads(out.strip().splitlines()[-1]),
           what="cuGetProcAddress answers, CUPTI buffers, NVML's answers")

    # 11. PyTorch, only if torch imports.
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=c.env, capture_output=True)
    if probe.returncode != 0:
        c.skip("torch", "torch does not import")
    else:
        out_json = os.path.join(c.logs, "torch.json")
        c.step("torch", [sys.executable, "-B", os.path.join(c.root, "tests", "gpu", "torch_allocators.py"),
                         "--steps", "5" if quick else "100", "--json", out_json], 150,
               lambda out: {"table_lines": lines_matching(out, r"^\|")},
               what="a small transformer under four allocators")


def write_outputs(c):
    doc = {
        "schema": "gpuslack-gpu-check/1",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": "simulated" if c.simulated else "real",
        "gpu": None,
        "libcudart": c.libcudart,
        "reduced": c.quick,
        "build": c.build,
        "budget_s": c.budget_s,
        "seconds": round(time.monotonic() - c.start, 1),
        "steps": c.steps,
    }
    if c.real:
        try:
            doc["gpu"] = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                        timeout=30).stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            pass
    doc["passed"] = all(s["status"] in ("passed", "skipped") for s in c.steps)
    with open(os.path.join(c.out, "gpu-check.json"), "w") as f:
        json.dump(doc, f, indent=2)
    md = ["# GPU check", ""]
    if doc["device"] == "simulated":
        md.append("**Simulated device** (libcudart: `%s`): no GPU was found, so every figure below is the "
                  "simulated device's, not a GPU's." % c.libcudart)
    else:
        md.append("**Real GPU**: %s (libcudart: `%s`)." % (doc["gpu"], c.libcudart))
    if c.quick:
        md.append("")
        md.append("Reduced sizes and repetitions (%s)." % ("simulated device" if not c.real else "--quick"))
    md += ["", "%s, %.0f s of a %d s budget." % (doc["when"], doc["seconds"], c.budget_s), "",
           "| step | status | seconds | what |", "|---|---|---:|---|"]
    for s in c.steps:
        status = s["status"] + (" (%s)" % s["reason"] if s.get("reason") else "")
        md.append("| %s | %s | %.1f | %s |" % (s["name"], status, s["seconds"], s.get("what", "")))
    for s in c.steps:
        r = s.get("results") or {}
        if not r:
            continue
        md += ["", "## " + s["name"], ""]
        if "failed" in r:
            md.append("%d tests, %d failed%s" % (r["tests"], r["failures"],
                                                 (": " + ", ".join(r["failed"])) if r["failed"] else ""))
        for k in ("median_step_ms", "summary_first_line", "staging_line"):
            if r.get(k) is not None:
                md.append("- %s: `%s`" % (k, r[k]))
        if "median_ns" in r:
            md += ["| benchmark | median |", "|---|---:|"]
            md += ["| %s | %.1f ns |" % (k, v) for k, v in r["median_ns"].items()]
        if r.get("table_lines"):
            md += r["table_lines"]
        if s["name"] == "topology":
            md += topology_md(r)
        if s["name"] == "driver_cupti_nvml":
            md += ["```json", json.dumps(r, indent=1)[:6000], "```"]
    with open(os.path.join(c.out, "gpu-check.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return doc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--build", default="build")
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--budget-s", type=int, default=int(os.environ.get("GPU_CHECK_BUDGET_S", "450")))
    p.add_argument("--quick", action="store_true", help="reduced sizes on a real GPU too")
    args = p.parse_args()
    c = Check(args)
    print("gpu-check: %s device (libcudart %s)%s; output in %s" % (
        "simulated" if c.simulated else "real", c.libcudart, ", reduced sizes" if c.quick else "", c.out),
        flush=True)
    run_all(c)
    doc = write_outputs(c)
    for s in c.steps:
        print("gpu-check: %-20s %-8s %6.1f s %s" % (s["name"], s["status"], s["seconds"], s.get("reason", "")))
    print("gpu-check: %s in %.0f s: %s" % ("passed" if doc["passed"] else "FAILED", doc["seconds"],
                                          os.path.join(c.out, "gpu-check.json")))
    return 0 if doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

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

    def _resolved(self, soname):
        """Where the loader finds `soname` for the conformance binary."""
        binary = os.path.join(self.build, "tests", "conformance", "gpuslack_conformance")
        if not os.path.exists(binary):
            return "(no conformance binary)"
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


def run_all(c):
    b = c.build
    quick = c.quick
    exe = lambda *p: os.path.join(b, *p)

    have_nccl = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnccl.so.2')"], env=c.env,
                               capture_output=True).returncode == 0

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

    # 10. PyTorch, only if torch imports.
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

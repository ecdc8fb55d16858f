"""Real PyTorch on the simulated device (ctest label `torch`, Release builds;
registered by torch_sim.cmake). Not a pytest module: the system's Python,
which runs tests/python, has no torch; this runs under the pinned torch's
Python (scripts/torch-env.sh) and imports nothing from it itself.

  torch_sim.py symbols  every runtime, driver, NCCL, cuBLAS(Lt) and NVML name torch's
                        libraries bind or look up is exported by the
                        simulated libraries; fails listing what is missing
                        (a new torch release shows here what it needs)
  torch_sim.py smoke    import torch, is_available, a 4 MiB tensor, free,
                        synchronize: under torch's default allocator and
                        expandable_segments:True, each without and with
                        LD_PRELOAD=libgpuslack.so; fails on any lookup the
                        simulated device logs as unanswered

Environment (set by ctest): TORCH_PYTHON, SIMCUDA_DIR, GPUSLACK_LIBRARY,
CUDA_INCLUDE_DIR (cuda.h, to tell driver entry-point names in torch's
strings from other words).
"""
import glob
import os
import re
import subprocess
import sys
import time

UNANSWERED = "gpusim: unanswered"


def env_path(name):
    value = os.environ.get(name)
    if not value:
        sys.exit("torch_sim: %s is not set (ctest sets it; see torch_sim.cmake)" % name)
    return value


def torch_python():
    py = env_path("TORCH_PYTHON")
    if not os.path.exists(py):
        sys.exit("torch_sim: no torch at %s: run scripts/torch-env.sh (scripts/test.sh does)" % py)
    return py


def torch_dir(py):
    """The installed torch package's folder, found without importing it
    (importing needs a CUDA runtime)."""
    r = subprocess.run([py, "-c", "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def nm(path, *flags):
    r = subprocess.run(["nm", "-D", *flags, path], capture_output=True, text=True, check=True)
    names = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts:
            names.add(parts[-1].split("@")[0])
    return names


def strings(path):
    """The whole NUL-terminated identifiers in a file (as names passed to
    dlsym or cuGetProcAddress are stored)."""
    with open(path, "rb") as f:
        data = f.read()
    return {m.decode() for m in re.findall(rb"(?<=\x00)[A-Za-z_][A-Za-z0-9_]{3,}(?=\x00)", data)}


def driver_api_names(include_dir):
    """Function names cuda.h declares, and the base names it #defines to
    versioned ones (cuMemGetInfo -> cuMemGetInfo_v2)."""
    with open(os.path.join(include_dir, "cuda.h")) as f:
        text = f.read()
    names = set(re.findall(r"CUresult CUDAAPI (cu\w+)\s*\(", text))
    names |= set(re.findall(r"#define (cu[A-Z]\w*)\s", text))
    return names


def symbols():
    py = torch_python()
    simcuda = env_path("SIMCUDA_DIR")
    include_dir = env_path("CUDA_INCLUDE_DIR")
    lib = os.path.join(torch_dir(py), "lib")
    libs = sorted(glob.glob(os.path.join(lib, "*.so*")) + glob.glob(os.path.join(os.path.dirname(lib), "_C*.so")))

    exported = {}
    for name in ("libcudart.so.13", "libcuda.so.1", "libnccl.so.2", "libnvidia-ml.so.1", "libcublas.so.13",
                 "libcublasLt.so.13", "libcupti.so.13"):
        path = os.path.join(simcuda, name)
        exported[name] = nm(path, "--defined-only") if os.path.exists(path) else set()

    # What the dynamic linker binds (Python loads extensions with RTLD_NOW).
    prefixes = {"libcudart.so.13": re.compile(r"^(cuda|__cuda)"),
                "libcuda.so.1": re.compile(r"^cu[A-Z]"),
                "libnccl.so.2": re.compile(r"^p?nccl[A-Z]"),
                "libcublas.so.13": re.compile(r"^cublas(?!Lt)[A-Z]"),
                "libcublasLt.so.13": re.compile(r"^cublasLt[A-Z]"),
                "libcupti.so.13": re.compile(r"^cupti[A-Z]")}
    missing = []
    bound, looked_up = set(), set()
    for path in libs:
        for sym in sorted(nm(path, "--undefined-only")):
            if sym.startswith("cuFile"):  # libcufile's, a real wheel
                continue
            for soname, pattern in prefixes.items():
                if not pattern.match(sym):
                    continue
                bound.add(sym)
                if sym not in exported[soname]:
                    missing.append("%s: %s (%s, bound at load)" % (os.path.basename(path), sym, soname))
    # What torch looks up by name: driver entry points through
    # cudaGetDriverEntryPoint/cuGetProcAddress, NVML through dlsym.
    api = driver_api_names(include_dir)
    driver_answers = exported["libcuda.so.1"] | {n for n in api if n + "_v2" in exported["libcuda.so.1"]}
    for path in libs:
        base = os.path.basename(path)
        if not base.startswith(("libc10_cuda", "libtorch_cuda")):
            continue
        words = strings(path)
        looked_up |= (words & api) | {w for w in words if re.match(r"^nvml[A-Z]\w+$", w)}
        for w in sorted(words & api):
            if w not in driver_answers:
                missing.append("%s: %s (libcuda.so.1, looked up by name)" % (base, w))
        for w in sorted(w for w in words if re.match(r"^nvml[A-Z]\w+$", w)):
            if w not in exported["libnvidia-ml.so.1"]:
                missing.append("%s: %s (libnvidia-ml.so.1, looked up by name)" % (base, w))
    checked = sum(1 for _ in libs)
    if missing:
        print("torch_sim: the simulated device lacks %d names torch uses:" % len(missing))
        for m in missing:
            print("  " + m)
        return 1
    print("torch_sim: the %d names torch's %d libraries bind and the %d they look up (driver, NVML) are all"
          " exported by the simulated device" % (len(bound), checked, len(looked_up)))
    return 0


SMOKE = """
import torch
assert torch.cuda.is_available(), "torch sees no CUDA device"
x = torch.empty(1 << 20, device="cuda")
del x
torch.cuda.synchronize()
print("reserved", torch.cuda.memory_reserved())
"""


def smoke():
    py = torch_python()
    simcuda = env_path("SIMCUDA_DIR")
    library = env_path("GPUSLACK_LIBRARY")
    failures = []
    for alloc_conf in ("", "expandable_segments:True"):
        for preload in (None, library):
            env = {k: v for k, v in os.environ.items()
                   if k not in ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF", "GPUSLACK_CONF")}
            env["LD_LIBRARY_PATH"] = simcuda + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
            env["PYTHONWARNINGS"] = "ignore"  # torch warns that NumPy is not installed
            if alloc_conf:
                env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
            if preload:
                env["LD_PRELOAD"] = preload
                env["GPUSLACK_CONF"] = "text_summary:off,json_summary:false"
            label = "allocator %s, %s" % (alloc_conf or "default", "LD_PRELOAD=libgpuslack.so" if preload else "no preload")
            t0 = time.monotonic()
            r = subprocess.run([py, "-c", SMOKE], env=env, capture_output=True, text=True, timeout=300)
            took = time.monotonic() - t0
            unanswered = [line for line in r.stderr.splitlines() if UNANSWERED in line]
            ok = r.returncode == 0 and not unanswered
            print("torch_sim: %-60s %s (%.1f s)" % (label, "ok" if ok else "FAILED", took))
            if not ok:
                failures.append("%s: exit %d%s\n--- stdout\n%s--- stderr\n%s" % (
                    label, r.returncode, ", unanswered lookups" if unanswered else "", r.stdout, r.stderr))
    for f in failures:
        print(f)
    return 1 if failures else 0


def timeline():
    """The GPU timeline under torch (under_torch/timeline.py): a slow
    DataLoader shows as host-bound idle, and torch.profiler, started in the
    middle of the run, gets its GPU records, gpuslack stepping aside for it
    (Note [One CUPTI, several tools]) whether CUPTI allows one subscriber
    (gpu_timeline:on, and auto, took it: Note [gpu_timeline:auto and CUPTI's
    single subscription]) or several (auto shares it, and Kineto's
    cuptiSubscribe asks for CUPTI to itself)."""
    import glob
    import json
    import tempfile
    py = torch_python()
    simcuda = env_path("SIMCUDA_DIR")
    library = env_path("GPUSLACK_LIBRARY")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "under_torch", "timeline.py")
    shim = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python_shim")
    failures = []
    # (label, GPUSLACK_CONF, environment, gpuslack steps aside for the profiler)
    for label, conf, extra, yields in (("one subscriber, gpu_timeline:on", "gpu_timeline:on", {}, True),
                                       ("one subscriber, auto", "", {}, True),
                                       ("several subscribers, auto", "", {"GPUSIM_DRIVER_VERSION": "610"}, False)):
        with tempfile.TemporaryDirectory() as out:
            env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GPUSLACK_CONF")}
            env["LD_LIBRARY_PATH"] = simcuda + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
            env["PYTHONPATH"] = shim
            env["PYTHONWARNINGS"] = "ignore"
            env["LD_PRELOAD"] = library
            env["GPUSLACK_OUTPUT"] = out
            env["GPUSLACK_CONF"] = ",".join(c for c in (conf, "text_summary:off") if c)
            env.update(extra)
            r = subprocess.run([py, script], env=env, capture_output=True, text=True, timeout=300)
            files = glob.glob(os.path.join(out, "*.json"))
            problems = []
            unanswered = [line for line in r.stderr.splitlines() if UNANSWERED in line]
            if r.returncode != 0 or unanswered or len(files) != 1:
                problems.append("exit %d, %d summaries%s" % (r.returncode, len(files),
                                                              ", unanswered lookups" if unanswered else ""))
            else:
                app = json.loads(r.stdout.split("timeline: ", 1)[1].splitlines()[0])
                with open(files[0]) as f:
                    g = json.load(f).get("gpu_timeline") or {}
                devices = g.get("devices") or [{}]
                d = devices[0]
                host = d.get("idle", {}).get("host_bound", 0)
                print("torch_sim: %s: status %s, stopped by %r after %.2f s; host-bound %.3f s of %.3f s wall, "
                      "the loader waited %.3f s; steps %s; torch.profiler's GPU events %d" % (
                          label, g.get("status"), g.get("stopped_by"), g.get("stopped_after_s", 0), host,
                          d.get("wall_s", 0), app["loader_wait_s"], d.get("steps", {}).get("count"),
                          app["profiler_gpu_events"]))
                if g.get("status") != "measured":
                    problems.append("the timeline did not measure: %s" % g)
                if yields and not g.get("stopped_by"):
                    problems.append("torch.profiler started, but gpuslack held CUPTI alone and did not step aside")
                if not yields and g.get("stopped_by"):
                    problems.append("gpuslack stepped aside though CUPTI was shared")
                if app["profiler_gpu_events"] <= 0:
                    problems.append("torch.profiler got no GPU events")
                # The loader's waits are host-bound: all of them where the
                # timeline ran to the end, about half where the profiler took
                # CUPTI over at the middle step.
                least = (0.3 if yields else 0.8) * app["loader_wait_s"]
                if host < least:
                    problems.append("host-bound idle %.3f s, the loader waited %.3f s" % (host, app["loader_wait_s"]))
                if not d.get("steps", {}).get("from_marks"):
                    problems.append("steps not marked: %s" % d.get("steps"))
            if problems:
                failures.append("%s: %s\n--- stdout\n%s--- stderr\n%s" % (label, "; ".join(problems), r.stdout,
                                                                         r.stderr[-6000:]))
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    commands = {"symbols": symbols, "smoke": smoke, "timeline": timeline}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: torch_sim.py symbols|smoke|timeline")
    sys.exit(commands[sys.argv[1]]())

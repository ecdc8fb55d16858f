#!/usr/bin/env python3
"""What the driver, CUPTI and NVML of this machine answer, for
scripts/gpu_check.py's "driver_cupti_nvml" step (bench/README.md, "GPU
check"): things the simulated device cannot show (issue 29, point 5).

  gpu_check_probe.py driver     cuGetProcAddress_v2 of driver functions
                                gpuslack hooks, against the exported symbol
                                of the same name (dlsym on libcuda.so.1).
                                Run natively, "exported" must hold for each:
                                a driver that answers an internal pointer
                                makes gpuslack pass that pointer on unhooked
                                (Note [Only the function the hook forwards
                                to], interpose/entry_points.cc), so every
                                program that finds the driver that way
                                (PyTorch, JAX, Triton) bypasses its hooks.
                                Under LD_PRELOAD=libgpuslack.so, "hooked"
                                says whether the answer is gpuslack's hook.
  gpu_check_probe.py cupti      cuptiGetVersion and the per-thread buffer
                                attribute (CUPTI_ACTIVITY_ATTR_PER_THREAD_
                                ACTIVITY_BUFFER), and CUDA_INJECTION64_PATH
                                (set when Nsight Systems or Nsight Compute
                                launched this process).
  gpu_check_probe.py nvml       NVML's answers per device: return codes and
                                values of what the health sampler reads,
                                and the MIG mode and MIG devices (Note [A
                                MIG device's own handle]).

  gpu_check_probe.py all BUILD  each of the above in a process of its own
                                (driver twice: natively and preloaded), and
                                the CUPTI buffer figures of 20 launching
                                threads under gpuslack (tests/interpose's
                                timeline_app --threads 20: the summary's
                                records, refusals and pool peak; Note
                                [Buffers per launching thread]).

Each prints one JSON object on stdout. Uses ctypes only.
"""
import ctypes
import glob
import json
import os
import subprocess
import sys
import tempfile

# Driver functions gpuslack hooks (interpose/driver_hook_table.h): the name
# cuGetProcAddress is asked for, and the exported variant it should answer.
DRIVER_NAMES = (("cuMemAlloc", "cuMemAlloc_v2"), ("cuMemFree", "cuMemFree_v2"), ("cuMemcpyHtoD", "cuMemcpyHtoD_v2"),
                ("cuMemcpyDtoH", "cuMemcpyDtoH_v2"), ("cuMemcpyAsync", "cuMemcpyAsync"),
                ("cuLaunchKernel", "cuLaunchKernel"), ("cuStreamSynchronize", "cuStreamSynchronize"),
                ("cuMemCreate", "cuMemCreate"), ("cuMemMap", "cuMemMap"),
                ("cuMemAllocAsync", "cuMemAllocAsync"), ("cuMemFreeAsync", "cuMemFreeAsync"))
CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER = 9  # cupti_activity.h 13.2: after ..._HOST_PINNED = 8


def load(names):
    for n in names:
        try:
            return ctypes.CDLL(n), n
        except OSError:
            continue
    return None, None


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def owner(address):
    """The file name of the object holding `address` ("" if none)."""
    if not address:
        return ""
    info = DlInfo()
    libc = ctypes.CDLL(None)
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    if not libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info)) or not info.dli_fname:
        return ""
    return os.path.basename(info.dli_fname.decode(errors="replace"))


def driver():
    cuda, _ = load(["libcuda.so.1"])
    if not cuda:
        return {"error": "libcuda.so.1 not found"}
    out = {"cuInit": cuda.cuInit(0)}
    version = ctypes.c_int(0)
    cuda.cuDriverGetVersion(ctypes.byref(version))
    out["driver_version"] = version.value
    get = cuda.cuGetProcAddress_v2
    get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64,
                    ctypes.POINTER(ctypes.c_int)]
    rows = []
    for base, exported in DRIVER_NAMES:
        pfn, status = ctypes.c_void_p(0), ctypes.c_int(-1)
        rc = get(base.encode(), ctypes.byref(pfn), version.value or 13000, 0, ctypes.byref(status))
        try:
            by_handle = ctypes.cast(getattr(cuda, exported), ctypes.c_void_p).value
        except AttributeError:
            by_handle = None
        # Natively the answer must be libcuda's exported function; under
        # LD_PRELOAD=libgpuslack.so, gpuslack's hook (its dlsym by handle
        # answers the hook too: interpose/dl_hooks.cc).
        rows.append({"name": base, "exported": exported, "rc": rc, "status": status.value,
                     "answers_exported": bool(pfn.value) and pfn.value == by_handle,
                     "answered_by": owner(pfn.value),
                     "hooked": owner(pfn.value).startswith("libgpuslack")})
    out["rows"] = rows
    out["preloaded"] = "libgpuslack" in os.environ.get("LD_PRELOAD", "")
    out["all_exported"] = all(r["answers_exported"] for r in rows if r["rc"] == 0)
    return out


def cupti():
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    lib, name = load(["libcupti.so.13", os.path.join(home, "extras", "CUPTI", "lib64", "libcupti.so.13"),
                      "libcupti.so.12", os.path.join(home, "extras", "CUPTI", "lib64", "libcupti.so.12")])
    out = {"injection": os.environ.get("CUDA_INJECTION64_PATH", "")}
    if not lib:
        out["error"] = "no libcupti.so.13/.12"
        return out
    out["library"] = name
    v = ctypes.c_uint32(0)
    out["version_rc"] = lib.cuptiGetVersion(ctypes.byref(v))
    out["version"] = v.value
    out["refuses_safely"] = v.value >= 27  # Note [Never refusing a CUPTI that crashes on it]
    value, size = ctypes.c_uint8(255), ctypes.c_size_t(1)
    out["per_thread_rc"] = lib.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                                                         ctypes.byref(size), ctypes.byref(value))
    out["per_thread_buffers"] = value.value if out["per_thread_rc"] == 0 else None
    return out


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def nvml():
    lib, _ = load(["libnvidia-ml.so.1"])
    if not lib:
        return {"error": "libnvidia-ml.so.1 not found"}
    out = {"init": lib.nvmlInit_v2()}
    text = ctypes.create_string_buffer(96)
    out["driver_rc"] = lib.nvmlSystemGetDriverVersion(text, 96)
    out["driver"] = text.value.decode(errors="replace")
    count = ctypes.c_uint(0)
    out["count_rc"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))

    def read(h):
        d = {}
        for key, fn in (("name", lib.nvmlDeviceGetName), ("uuid", lib.nvmlDeviceGetUUID)):
            rc = fn(h, text, 96)
            d[key] = text.value.decode(errors="replace") if rc == 0 else "rc %d" % rc
        m = Memory()
        rc = lib.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
        d["memory"] = {"total": m.total, "used": m.used} if rc == 0 else "rc %d" % rc
        for key, fn, args in (("power_mw", lib.nvmlDeviceGetPowerUsage, ()),
                              ("sm_mhz", lib.nvmlDeviceGetClockInfo, (1,)),
                              ("sm_max_mhz", lib.nvmlDeviceGetMaxClockInfo, (1,)),
                              ("temperature_c", lib.nvmlDeviceGetTemperature, (0,))):
            v = ctypes.c_uint(0)
            rc = fn(h, *args, ctypes.byref(v))
            d[key] = v.value if rc == 0 else "rc %d" % rc
        reasons = ctypes.c_ulonglong(0)
        rc = lib.nvmlDeviceGetCurrentClocksEventReasons(h, ctypes.byref(reasons))
        d["clock_event_reasons"] = reasons.value if rc == 0 else "rc %d" % rc
        return d

    devices = []
    for i in range(count.value):
        h = ctypes.c_void_p(0)
        if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) != 0:
            continue
        d = dict(index=i, **read(h))
        cur, pend = ctypes.c_uint(0), ctypes.c_uint(0)
        rc = lib.nvmlDeviceGetMigMode(h, ctypes.byref(cur), ctypes.byref(pend))
        d["mig_mode"] = cur.value if rc == 0 else "rc %d" % rc
        if rc == 0 and cur.value == 1:
            n = ctypes.c_uint(0)
            lib.nvmlDeviceGetMaxMigDeviceCount(h, ctypes.byref(n))
            d["mig_devices"] = []
            for j in range(n.value):
                mh = ctypes.c_void_p(0)
                if lib.nvmlDeviceGetMigDeviceHandleByIndex(h, j, ctypes.byref(mh)) == 0:
                    d["mig_devices"].append(dict(index=j, **read(mh)))
        devices.append(d)
    out["devices"] = devices
    return out


def run_json(argv, env, timeout=60):
    try:
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return {"error": "%s: %s" % (os.path.basename(argv[-1]), e)}


def threads_under_gpuslack(build, env):
    """timeline_app --threads 20 under gpuslack: the summary's CUPTI buffer figures."""
    app = os.path.join(build, "tests", "interpose", "timeline_app")
    if not os.path.exists(app):
        return {"error": "no timeline_app in %s (a build with tests)" % build}
    with tempfile.TemporaryDirectory() as out:
        env = dict(env, LD_PRELOAD=os.path.join(build, "libgpuslack.so"), GPUSLACK_OUTPUT=out,
                   GPUSLACK_CONF="text_summary:off")
        try:
            r = subprocess.run([app, "--threads", "20", "--steps", "3", "--kernels", "50"], env=env,
                               capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"error": str(e)}
        files = glob.glob(os.path.join(out, "gpuslack-*.json"))
        if r.returncode != 0 or len(files) != 1:
            return {"error": "exit %d, %d summaries: %s" % (r.returncode, len(files), r.stderr[-500:])}
        with open(files[0]) as f:
            g = json.load(f).get("gpu_timeline") or {}
    launched = int(r.stdout.split("kernels ")[1].split()[0]) if "kernels " in r.stdout else None
    keys = ("status", "detail", "records", "dropped_by_pool", "dropped_by_cupti", "buffers_beyond_cap",
            "buffer_bytes_limit", "buffer_bytes_peak")
    return dict({k: g.get(k) for k in keys}, launched=launched,
                kernels_recorded=sum(d.get("kernels", 0) for d in g.get("devices") or []))


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    probes = {"driver": driver, "cupti": cupti, "nvml": nvml}
    if what == "all" and len(sys.argv) == 3:
        build, me, env = sys.argv[2], [sys.executable, "-B", os.path.abspath(__file__)], dict(os.environ)
        env.pop("LD_PRELOAD", None)
        doc = {"driver": run_json(me + ["driver"], env),
               "driver_preloaded": run_json(me + ["driver"], dict(env, LD_PRELOAD=os.path.join(build, "libgpuslack.so"))),
               "cupti": run_json(me + ["cupti"], env), "nvml": run_json(me + ["nvml"], env),
               "threads": threads_under_gpuslack(build, env)}
        print(json.dumps(doc))
        return 0
    if what not in probes:
        print("usage: gpu_check_probe.py driver|cupti|nvml|all BUILD", file=sys.stderr)
        return 2
    print(json.dumps(probes[what]()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

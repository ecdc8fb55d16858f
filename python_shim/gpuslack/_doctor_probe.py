"""What the CUDA libraries of this machine answer: run by doctor.py in a child.

    python -m gpuslack._doctor_probe      # one JSON document on stdout

Internal. doctor.py starts this in a child process without LD_PRELOAD (so
that no gpuslack, and no other interposer, sees these calls and writes a
summary) and with a timeout (a driver that hangs, or a library that
crashes, costs the doctor one line, not its run). Each library is loaded by
the name gpuslack itself loads or finds it by (lib/cuda/driver_api.cc:
libcuda.so.1; runtime_symbols.cc: libcudart.so.<major>; cupti_api.cc:
libcupti.so.<the runtime's major>; nvml_api.cc: libnvidia-ml.so.1; NCCL:
libnccl.so.2), and asked only for versions; CUPTI is also asked, by a
subscription it drops at once, whether it takes several subscribers and who
holds it.
"""
import ctypes
import json
import os
import sys

RUNTIME_MAJORS = (12, 13)
CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39


def mapped(stem):
    """The path of the mapped object whose file name starts with `stem`."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith(stem):
                    return os.path.realpath(parts[5].strip())
    except OSError:
        pass
    return None


def load(name):
    """(library, answer): answer says found, path, or the loader's error."""
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        return None, {"name": name, "found": False, "error": str(e)}
    return lib, {"name": name, "found": True, "path": mapped(name.split(".so")[0] + ".so")}


def int_answer(fn, kind=ctypes.c_int):
    value = kind(0)
    rc = fn(ctypes.byref(value))
    return rc, value.value


def driver():
    lib, d = load("libcuda.so.1")
    if lib is None:
        return d
    rc, d["version"] = int_answer(lib.cuDriverGetVersion)
    d["version_result"] = rc
    d["init_result"] = lib.cuInit(0)
    if d["init_result"] == 0:
        rc, count = int_answer(lib.cuDeviceGetCount)
        d["devices"] = count if rc == 0 else None
    return d


def runtime(major):
    lib, d = load("libcudart.so.%d" % major)
    if lib is not None:
        rc, version = int_answer(lib.cudaRuntimeGetVersion)
        d["version"] = version if rc == 0 else None
    return d


class SubscriberParams(ctypes.Structure):
    """CUpti_SubscriberParams (cupti_callbacks.h, CUPTI 13.2)."""

    _fields_ = [
        ("structSize", ctypes.c_size_t),
        ("subscriberName", ctypes.c_char_p),
        ("oldSubscriberName", ctypes.c_char_p),
        ("oldSubscriberSize", ctypes.c_size_t),
        ("allowMultipleSubscribers", ctypes.c_uint8),
        ("padding", ctypes.c_uint8 * 7),
    ]


CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


def _ignore(*_args):
    pass


def cupti(major):
    lib, d = load("libcupti.so.%d" % major)
    if lib is None:
        return d
    rc, d["version"] = int_answer(lib.cuptiGetVersion, ctypes.c_uint32)
    d["subscribe_v2"] = hasattr(lib, "cuptiSubscribe_v2")
    callback = CALLBACK(_ignore)
    handle = ctypes.c_void_p()
    d["multiple"] = False
    d["holder"] = ""
    if d["subscribe_v2"]:
        holder = ctypes.create_string_buffer(256)
        params = SubscriberParams()
        params.structSize = ctypes.sizeof(SubscriberParams)
        params.subscriberName = b"gpuslack doctor"
        params.oldSubscriberName = ctypes.cast(holder, ctypes.c_char_p)
        params.oldSubscriberSize = ctypes.sizeof(holder)
        params.allowMultipleSubscribers = 1
        rc = lib.cuptiSubscribe_v2(ctypes.byref(handle), callback, None, ctypes.byref(params))
        d["subscribe_v2_result"] = rc
        if rc == 0:
            d["multiple"] = True
            lib.cuptiUnsubscribe(handle)
            return d
        d["holder"] = holder.value.decode("utf-8", "replace")
        if rc != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED or d["holder"]:
            return d
    # One subscriber at most: is that one free? (what gpu_timeline:on takes)
    rc = lib.cuptiSubscribe(ctypes.byref(handle), callback, None)
    d["subscribe_result"] = rc
    if rc == 0:
        lib.cuptiUnsubscribe(handle)
    elif rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and not d["holder"]:
        d["holder"] = "another tool (CUPTI does not say which)"
    return d


def nvml():
    lib, d = load("libnvidia-ml.so.1")
    if lib is None:
        return d
    init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
    d["init_result"] = init()
    if d["init_result"] == 0:
        buf = ctypes.create_string_buffer(96)
        if lib.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(len(buf))) == 0:
            d["driver_version"] = buf.value.decode("utf-8", "replace")
        lib.nvmlShutdown()
    return d


def nccl():
    lib, d = load("libnccl.so.2")
    if lib is not None:
        rc, version = int_answer(lib.ncclGetVersion)
        d["version"] = version if rc == 0 else None
    return d


def main():
    answer = {}
    for name, fn in (("driver", driver), ("nvml", nvml), ("nccl", nccl)):
        answer[name] = _guarded(fn)
    answer["runtimes"] = [_guarded(runtime, m) for m in RUNTIME_MAJORS]
    answer["cupti"] = [_guarded(cupti, m) for m in RUNTIME_MAJORS]
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    os._exit(0)  # no library's exit handlers: only the answers matter


def _guarded(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # a missing symbol, a bad answer: said, not raised
        return {"found": False, "error": "%s: %s" % (type(e).__name__, e)}


if __name__ == "__main__":
    main()

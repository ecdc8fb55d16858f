"""Python frames at call sites (lib/ledger/python_frames.h, Note [Python
frames]): a CUDA call made from Python names the Python lines first
("train.py:12 in copy_with_gil (python)"), then the native frames.

No torch here: the system's Python (3.11) calls the simulated runtime
through ctypes under LD_PRELOAD. ctypes.PyDLL keeps the GIL during a foreign
call; ctypes.CDLL releases it, as PyTorch's ops do (on 3.11 both are read;
on later Pythons only the first). The near miss: a native thread (started
by pthread_create, straight into the hooked cudaDeviceSynchronize) has no
Python and names none, though the process runs Python on other threads."""
import glob
import json
import subprocess
import sys

from conftest import needs_library, sim_env

TRAIN = r'''
import ctypes, os, threading
d = os.environ["SIMCUDA_DIR"]
ctypes.CDLL(os.path.join(d, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
held = ctypes.PyDLL(None)      # keeps the GIL: gpuslack's hooks come first
released = ctypes.CDLL(None)   # releases it
for lib in (held, released):
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
N = 1 << 20
host = ctypes.create_string_buffer(N)   # pageable
dev = ctypes.c_void_p()
assert held.cudaMalloc(ctypes.byref(dev), N) == 0

def copy_with_gil():
    assert held.cudaMemcpy(dev, host, N, 1) == 0  # MARK with_gil

def sync_with_gil():
    assert held.cudaDeviceSynchronize() == 0  # MARK sync_gil

def copy_without_gil():
    assert released.cudaMemcpy(dev, host, N, 1) == 0  # MARK without_gil

def sync_without_gil():
    assert released.cudaDeviceSynchronize() == 0  # MARK sync_nogil

def step():
    copy_with_gil()  # MARK step_calls
    sync_with_gil()
    copy_without_gil()  # MARK step_calls_nogil
    sync_without_gil()

def thread_body():
    copy_without_gil()  # MARK thread_calls

for _ in range(3):
    step()  # MARK module_calls
t = threading.Thread(target=thread_body)
t.start()
t.join()

# A native thread: pthread_create straight into gpuslack's hook of
# cudaDeviceSynchronize (no Python on that thread at all).
libc = ctypes.CDLL(None)
libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
libc.pthread_join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
tid = ctypes.c_ulong()
sync = ctypes.cast(released.cudaDeviceSynchronize, ctypes.c_void_p)
assert libc.pthread_create(ctypes.byref(tid), None, sync, None) == 0
assert libc.pthread_join(tid, None) == 0
'''

PY311 = sys.version_info[:2] == (3, 11)


def line_of(mark):
    for i, text in enumerate(TRAIN.splitlines(), 1):
        if text.endswith("# MARK " + mark):
            return i
    raise AssertionError(mark)


def frame(mark, function):
    return "train.py:%d in %s (python)" % (line_of(mark), function)


def run_train(tmp_path, extra_conf=""):
    (tmp_path / "train.py").write_text(TRAIN)
    out = tmp_path / "out"
    conf = "text_summary:off,json_summary:true,call_site_threshold_us:0,top_call_sites:50,output_dir:%s%s" % (
        out, extra_conf)
    r = subprocess.run([sys.executable, "train.py"], env=sim_env(conf=conf, preload=True), cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    found = glob.glob(str(out / "*.json"))
    assert len(found) == 1, (found, r.stderr)
    with open(found[0]) as f:
        return json.load(f)


def python_frames(frames):
    return [f for f in frames if f.endswith(" (python)")]


@needs_library
def test_calls_from_python_name_their_python_lines_first_and_a_native_thread_none(tmp_path):
    summary = run_train(tmp_path)
    sites = summary["call_sites"]
    by_first = {}
    for s in sites:
        if s["frames"]:
            by_first.setdefault(s["frames"][0], []).append(s)
    caller = [frame("module_calls", "<module>")]
    # Holding the GIL: Python frames first, innermost first, then the native
    # ones (the hook's own left out).
    for first, api, calls in ((frame("with_gil", "copy_with_gil"), "cudaMemcpy", "step_calls"),
                              (frame("sync_gil", "sync_with_gil"), "cudaDeviceSynchronize", None)):
        assert first in by_first, [s["frames"][:4] for s in sites]
        (s,) = by_first[first]
        assert s["api"] == api and s["count"] == 3, s
        frames = s["frames"]
        assert len(python_frames(frames)) == 3 and frames[:3] == python_frames(frames), frames
        if calls:
            assert frames[1:3] == [frame(calls, "step")] + caller, frames
        assert len(frames) > 3, frames
    # The GIL released (ctypes.CDLL): on 3.11 read all the same, on the main
    # thread and on a threading.Thread (whose outer frames are threading's).
    nogil = frame("without_gil", "copy_without_gil")
    if PY311:
        main_thread = [s for s in by_first.get(nogil, []) if frame("step_calls_nogil", "step") in s["frames"]]
        assert len(main_thread) == 1 and main_thread[0]["frames"][1:3] == [frame("step_calls_nogil", "step")] + caller
        other = [s for s in by_first.get(nogil, []) if frame("thread_calls", "thread_body") in s["frames"]]
        assert len(other) == 1 and other[0]["count"] == 1, by_first.get(nogil)
        assert other[0]["frames"][2].startswith("threading.py:") or "/threading.py:" in other[0]["frames"][2]
        assert frame("sync_nogil", "sync_without_gil") in by_first
    else:
        assert nogil not in by_first and "sync_without_gil" not in json.dumps(sites)
    # The near miss: the native thread's call names no Python frame, though
    # Python runs in its process: all its frames are libc's (start_thread,
    # clone3), none ctypes' or the interpreter's.
    bare = [s for s in sites if s["api"] == "cudaDeviceSynchronize" and not python_frames(s["frames"])]
    native = [s for s in bare if s["frames"] and all("libc.so.6" in f for f in s["frames"])]
    assert len(native) == 1 and native[0]["count"] == 1, [s["frames"][:3] for s in bare]
    if PY311:
        assert bare == native, [s["frames"][:3] for s in bare]
    # The pageable copies' sampled sites ("pin these buffers") too.
    staged = [s["frames"][0] for s in summary["staging"]["sites"] if s["frames"]]
    assert frame("with_gil", "copy_with_gil") in staged, staged
    assert (nogil in staged) == PY311, staged


@needs_library
def test_python_frames_off_leaves_the_native_frames_alone(tmp_path):
    summary = run_train(tmp_path, ",python_frames:false")
    sites = summary["call_sites"] + summary["staging"]["sites"]
    assert sites and all(s["frames"] for s in sites)
    assert "(python)" not in json.dumps(summary)

"""gpuslack from Python: the live figures of libgpuslack.so, and its tools.

gpuslack measures the time a CUDA process loses to allocation, copies and
collectives, and can serve device memory from its own VMM allocator
(docs/allocator.md). This package reads its figures and drives it:

- `stats()`: the live summary -- time lost per category, per call, per
  thread, the allocator and collectives sections -- as plain Python
  objects (the document of docs/summary.schema.json); None before the
  process's first CUDA call.
- `device_stats(device)`: the VMM allocator's figures for one device.
- `trim(device)`: gives the allocator's cached physical memory back.
- `step()`: marks a step boundary (the GPU timeline then reports busy and
  idle per step); does nothing in a process not running under gpuslack.
- `gpuslack.torch`: gpuslack as PyTorch's CUDA allocator (`use()`), and
  memory statistics in torch.cuda's terms.
- ``python -m gpuslack run -- COMMAND``: runs a command under gpuslack;
  ``python -m gpuslack report FILE``: prints a summary file as the text its
  process printed (rendered by the library).

Where libgpuslack.so comes from: `library_path()` (details in _lib.py).
Nothing here loads the library until a function needs it, and the library
itself does nothing until the process makes a CUDA call. Every function may
be called from any thread.
"""
import ctypes
import json
import time

from ._lib import DeviceStats, LibraryNotFound, MissingFunction, library_path
from ._lib import load as _load

__all__ = [
    "LibraryNotFound", "MissingFunction", "build_info", "device_stats", "library_path", "stats", "step", "trim",
    "version", "write_summary",
]

# The package's version; the library's own is version(). Kept equal to the
# CMake project's VERSION (tests/python/test_package.py).
__version__ = "0.1.0"


def version():
    """The loaded libgpuslack.so's version, "MAJOR.MINOR.PATCH"."""
    return _load().version().decode()


def build_info():
    """One line naming the library's build and the dependencies sealed in it."""
    return _load().build_info().decode()


def stats():
    """The live summary as a dict (docs/summary.md reads it field by field),
    or None when the process has made no CUDA call yet.

    Its "reason" is "api". Times are seconds, shares fractions of "wall_s".
    """
    lib = _load()
    raw = lib.summary_json()
    if not raw:
        return None
    try:
        return json.loads(ctypes.string_at(raw).decode("utf-8"))
    finally:
        lib.free(raw)


def device_stats(device=0):
    """The VMM allocator's figures for `device` as a dict (the fields of
    struct gpuslack_device_stats: bytes, counts, stall_s in seconds), or
    None when the allocator is not serving that device (allocator:vmm not
    selected, device not used yet, or no VMM support)."""
    out = DeviceStats()
    if _load().device_stats_get(int(device), ctypes.byref(out)) != 0:
        return None
    return {name: getattr(out, name) for name, _ in DeviceStats._fields_}


def trim(device=-1):
    """Releases the physical memory the VMM allocator keeps cached on
    `device` (-1: every device). Returns the bytes released."""
    return int(_load().trim(int(device)))


def write_summary():
    """Writes the summary files now, as at exit. Returns False when the
    process has made no CUDA call yet (nothing to write)."""
    return _load().write_summary() == 0


# step(): the library's gpuslack_step once found, and when it was last
# looked for (a process not under gpuslack looks again at most once a
# second: finding it reads /proc/self/maps).
_step_fn = None
_step_looked_at = None
_STEP_LOOK_AGAIN_S = 1.0


def _find_step():
    """gpuslack_step of the libgpuslack.so mapped into this process, or None.

    Only a library already mapped (LD_PRELOAD, gpuslack.torch.use()) counts:
    step() never loads one, since a copy loaded for it would see none of the
    process's CUDA calls."""
    global _step_fn, _step_looked_at
    now = time.monotonic()
    if _step_looked_at is not None and now - _step_looked_at < _STEP_LOOK_AGAIN_S:
        return None
    _step_looked_at = now
    from . import _lib

    if _lib._loaded is None and _lib._mapped_library() is None:
        return None
    try:
        lib = _load()
    except LibraryNotFound:
        return None
    if not lib.has("step"):
        return None
    _step_fn = lib.step
    return _step_fn


def step():
    """Marks a step boundary now: the end of one step (a training iteration,
    a batch served) and the start of the next, as gpuslack_step() in the C
    API. With the GPU timeline, the summary then shows busy and idle per step
    (p50, p99, the worst steps). Call it at the same point of every step, on
    any thread.

    Does nothing, and loads nothing, when no libgpuslack.so is loaded in
    this process (not run under gpuslack), or when it is too old to mark
    steps. For a torch training loop, gpuslack.torch.mark_steps() calls it
    after each optimizer step."""
    fn = _step_fn or _find_step()
    if fn is not None:
        fn()

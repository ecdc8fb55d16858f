"""libgpuslack.so: where it is found, and its C API through ctypes.

Internal: use the functions of the `gpuslack` package instead.

Which library, first match wins (`library_path()`):

1. A libgpuslack.so already mapped into this process (``LD_PRELOAD``, or
   loaded by PyTorch's CUDAPluggableAllocator). One process must use one
   copy: a second copy would keep a second ledger and a second allocator.
2. ``GPUSLACK_LIBRARY``, the path of a libgpuslack.so. An error if the file
   is missing: a path the user gave is never silently passed over.
3. The copy installed inside this package: ``pip install ./python_shim``
   copies the built library in (python_shim/setup.py), so an installed
   package works after the build folder is gone and in a container.
4. ``build/libgpuslack.so`` of the source checkout this package sits in,
   for running the package from the checkout without installing it
   (``PYTHONPATH=python_shim``).

Loading (`load()`) is lazy: importing `gpuslack` maps nothing, so the
launcher never loads the library into its own process; `report` does, to
render with it (gpuslack_render_summary). Loading it does nothing either
until the process makes a CUDA call.

Every prototype of include/gpuslack/gpuslack.h is declared in PROTOTYPES
(tests/python/test_lib.py checks the table against the header). A function
the loaded library lacks -- an older build -- raises MissingFunction when
called, naming the library and the function; the others keep working.
"""
import ctypes
import os
import threading

ENV_LIBRARY = "GPUSLACK_LIBRARY"
LIBRARY_NAME = "libgpuslack.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFound(RuntimeError):
    """No libgpuslack.so where the package looks (the message says where)."""


class MissingFunction(RuntimeError):
    """The loaded libgpuslack.so does not export a function of the C API."""


class DeviceStats(ctypes.Structure):
    """struct gpuslack_device_stats, field for field."""

    _fields_ = [
        ("allocated", ctypes.c_ulonglong),
        ("peak_allocated", ctypes.c_ulonglong),
        ("reserved", ctypes.c_ulonglong),
        ("peak_reserved", ctypes.c_ulonglong),
        ("largest_free", ctypes.c_ulonglong),
        ("pending_free", ctypes.c_ulonglong),
        ("allocations", ctypes.c_ulonglong),
        ("frees", ctypes.c_ulonglong),
        ("granules_mapped", ctypes.c_ulonglong),
        ("granules_unmapped", ctypes.c_ulonglong),
        ("oom_retries", ctypes.c_ulonglong),
        ("stall_s", ctypes.c_double),
        ("failed_allocations", ctypes.c_ulonglong),
    ]


class PinnedStats(ctypes.Structure):
    """struct gpuslack_pinned_stats, field for field."""

    _fields_ = [
        ("pinned", ctypes.c_ulonglong),
        ("peak_pinned", ctypes.c_ulonglong),
        ("live", ctypes.c_ulonglong),
        ("peak_live", ctypes.c_ulonglong),
        ("cap", ctypes.c_ulonglong),
        ("chunks", ctypes.c_ulonglong),
        ("allocations", ctypes.c_ulonglong),
        ("frees", ctypes.c_ulonglong),
        ("pending_free", ctypes.c_ulonglong),
        ("cap_hits", ctypes.c_ulonglong),
        ("fallbacks", ctypes.c_ulonglong),
        ("passthrough", ctypes.c_ulonglong),
        ("trimmed", ctypes.c_ulonglong),
        ("stall_s", ctypes.c_double),
    ]


# name -> (restype, argtypes), in the header's order. Strings the caller
# must free (gpuslack_summary_json, gpuslack_render_summary's char**) are
# c_void_p, not c_char_p, so that the pointer survives to be handed back to
# gpuslack_free. cudaStream_t is
# c_void_p: 0 or None is the legacy default stream.
PROTOTYPES = {
    "gpuslack_version": (ctypes.c_char_p, []),
    "gpuslack_build_info": (ctypes.c_char_p, []),
    "gpuslack_knobs_json": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]),
    "gpuslack_summary_json": (ctypes.c_void_p, []),
    "gpuslack_write_summary": (ctypes.c_int, []),
    "gpuslack_render_summary": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                               ctypes.POINTER(ctypes.c_void_p)]),
    "gpuslack_format_figure": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_double, ctypes.c_void_p, ctypes.c_size_t]),
    "gpuslack_labels_json": (ctypes.c_void_p, []),
    "gpuslack_render_findings": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]),
    "gpuslack_step": (None, []),
    "gpuslack_launch_count": (ctypes.c_ulonglong, []),
    "gpuslack_device_stats_get": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(DeviceStats)]),
    "gpuslack_reset_peak_stats": (None, [ctypes.c_int]),
    "gpuslack_trim": (ctypes.c_ulonglong, [ctypes.c_int]),
    "gpuslack_pinned_stats_get": (ctypes.c_int, [ctypes.POINTER(PinnedStats)]),
    "gpuslack_pinned_trim": (ctypes.c_ulonglong, []),
    "gpuslack_device_alloc": (ctypes.c_void_p, [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]),
    "gpuslack_device_free": (None, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]),
    "gpuslack_record_stream": (None, [ctypes.c_void_p, ctypes.c_void_p]),
    "gpuslack_init": (None, [ctypes.c_int]),
    "gpuslack_device_init": (None, [ctypes.c_int]),
    "gpuslack_reset": (None, []),
    "gpuslack_set_memory_fraction": (None, [ctypes.c_double, ctypes.c_int]),
    "gpuslack_base_alloc": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "gpuslack_free": (None, [ctypes.c_void_p]),
}


def _mapped_library():
    """The path of a libgpuslack.so mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if os.path.basename(path).startswith(LIBRARY_NAME) and os.path.isfile(path):
                        return path
    except OSError:
        pass
    return None


def candidates():
    """(where, path) pairs in the order library_path() tries them."""
    out = []
    mapped = _mapped_library()
    if mapped:
        out.append(("already loaded in this process", mapped))
    env = os.environ.get(ENV_LIBRARY)
    if env:
        out.append((ENV_LIBRARY, env))
    out.append(("installed with the package", os.path.join(_PACKAGE_DIR, LIBRARY_NAME)))
    checkout = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
    out.append(("the source checkout's build folder", os.path.join(checkout, "build", LIBRARY_NAME)))
    return out


def library_path():
    """The absolute path of the libgpuslack.so this process uses (see above).

    Raises LibraryNotFound, saying where it looked and how to fix it."""
    tried = []
    for where, path in candidates():
        if os.path.isfile(path):
            return os.path.abspath(path)
        if where == ENV_LIBRARY:
            raise LibraryNotFound("%s=%s: no such file" % (ENV_LIBRARY, path))
        tried.append("%s (%s)" % (path, where))
    raise LibraryNotFound(
        "libgpuslack.so not found; looked at " + ", ".join(tried) +
        ". Build it (scripts/build.sh build), then `pip install ./python_shim`, "
        "or set %s=/path/to/libgpuslack.so" % ENV_LIBRARY)


class _Missing:
    """Stands for a function the loaded library lacks; raises when called."""

    def __init__(self, name, path):
        self.name, self.path = name, path

    def __call__(self, *args):
        raise MissingFunction("%s does not export %s: it was built from an older gpuslack; rebuild it"
                              % (self.path, self.name))


class Library:
    """The loaded libgpuslack.so: one attribute per C API function, without
    the gpuslack_ prefix (lib.trim(-1) calls gpuslack_trim)."""

    def __init__(self, path):
        self.path = path
        # RTLD_GLOBAL is not needed: nothing resolves symbols against it.
        self.dll = ctypes.CDLL(path)
        self.missing = []
        for name, (restype, argtypes) in PROTOTYPES.items():
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                self.missing.append(name)
                fn = _Missing(name, path)
            else:
                fn.restype = restype
                fn.argtypes = argtypes
            setattr(self, name[len("gpuslack_"):], fn)

    def has(self, name):
        """Whether the library exports `name` (with or without the prefix)."""
        if not name.startswith("gpuslack_"):
            name = "gpuslack_" + name
        return name in PROTOTYPES and name not in self.missing


_lock = threading.Lock()
_loaded = None


def load():
    """The process's Library, loaded on first call. Raises LibraryNotFound."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = Library(library_path())
        return _loaded

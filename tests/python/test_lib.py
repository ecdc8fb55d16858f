"""The package's side of the C API: every prototype of gpuslack.h declared
exactly (PROTOTYPES and DeviceStats against the header's text), where the
library is found, and a library lacking a function."""
import ctypes
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import LIBRARY, ROOT, SHIM, needs_library
from gpuslack import _lib

HEADER = os.path.join(ROOT, "include", "gpuslack", "gpuslack.h")

# C type in the header -> the ctypes type it must be declared as.
C_TYPES = {
    "void": None,
    "const char*": ctypes.c_char_p,
    "char*": ctypes.c_void_p,  # owned by the caller: handed back to gpuslack_free
    "char**": ctypes.POINTER(ctypes.c_void_p),  # the same, handed out through a pointer
    "int": ctypes.c_int,
    "double": ctypes.c_double,
    "unsigned long long": ctypes.c_ulonglong,
    "size_t": ctypes.c_size_t,
    "ssize_t": ctypes.c_ssize_t,
    "void*": ctypes.c_void_p,
    "struct CUstream_st*": ctypes.c_void_p,
    "size_t*": ctypes.POINTER(ctypes.c_size_t),
    "gpuslack_device_stats*": ctypes.POINTER(_lib.DeviceStats),
    "gpuslack_pinned_stats*": ctypes.POINTER(_lib.PinnedStats),
}


def header_text():
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"\s+", " ", text)


def c_type(decl):
    """A parameter's type: 'const char* name' -> 'const char*'."""
    t = re.sub(r"\s*\b\w+$", "", decl.strip())
    return re.sub(r"\s+", " ", t).replace(" *", "*").strip()


def header_prototypes():
    out = {}
    for m in re.finditer(r"GPUSLACK_API ([\w\s\*]+?)\s*\b(gpuslack_\w+)\s*\(([^)]*)\);", header_text()):
        restype = re.sub(r"\s+", " ", m.group(1)).replace(" *", "*").strip()
        args = m.group(3).strip()
        argtypes = [] if args in ("", "void") else [c_type(a) for a in args.split(",")]
        out[m.group(2)] = (restype, argtypes)
    return out


def test_every_function_of_the_header_is_declared_exactly():
    header = header_prototypes()
    assert len(header) >= 14, header
    assert list(header) == list(_lib.PROTOTYPES), "PROTOTYPES must list the header's functions in its order"
    for name, (restype, argtypes) in header.items():
        assert restype in C_TYPES and all(a in C_TYPES for a in argtypes), (name, restype, argtypes)
        assert _lib.PROTOTYPES[name] == (C_TYPES[restype], [C_TYPES[a] for a in argtypes]), name


def struct_fields(name):
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), header_text()).group(1)
    fields = [(re.sub(r"\s+", " ", t).strip(), n) for t, n in re.findall(r"([\w ]+?)\s+(\w+);", body)]
    c = {"unsigned long long": ctypes.c_ulonglong, "double": ctypes.c_double}
    return [(n, c[t]) for t, n in fields]


def test_device_stats_matches_the_struct_field_for_field():
    assert struct_fields("gpuslack_device_stats") == _lib.DeviceStats._fields_


def test_pinned_stats_matches_the_struct_field_for_field():
    assert struct_fields("gpuslack_pinned_stats") == _lib.PinnedStats._fields_


def test_the_prototypes_of_the_header_parser_see_the_pluggable_allocator_signatures():
    # torch.cuda.memory.CUDAPluggableAllocator's documented signatures.
    h = header_prototypes()
    assert h["gpuslack_device_alloc"] == ("void*", ["ssize_t", "int", "struct CUstream_st*"])
    assert h["gpuslack_device_free"] == ("void", ["void*", "size_t", "int", "struct CUstream_st*"])


def run_python(code, **env):
    e = dict(os.environ)
    e.pop("GPUSLACK_LIBRARY", None)
    e.pop("LD_PRELOAD", None)
    e.update(env)
    e["PYTHONPATH"] = SHIM
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)


def test_a_missing_library_says_where_it_looked(tmp_path):
    r = run_python("import gpuslack; gpuslack.version()", GPUSLACK_LIBRARY=str(tmp_path / "nope.so"))
    assert r.returncode != 0
    assert "GPUSLACK_LIBRARY=%s: no such file" % (tmp_path / "nope.so") in r.stderr, r.stderr


def test_importing_the_package_loads_nothing():
    r = run_python("import gpuslack, gpuslack.torch, gpuslack.report, gpuslack.launcher, sys\n"
                   "assert 'torch' not in sys.modules\n"
                   "assert not [l for l in open('/proc/self/maps') if 'libgpuslack' in l]\n"
                   "print(gpuslack.__version__)", GPUSLACK_LIBRARY="/nonexistent/libgpuslack.so")
    assert r.returncode == 0, r.stderr


def test_a_function_the_library_lacks_raises_a_clear_error():
    lib = _lib.Library("libc.so.6")  # exports none of them
    assert lib.missing == list(_lib.PROTOTYPES)
    assert not lib.has("trim") and not lib.has("gpuslack_trim")
    with pytest.raises(_lib.MissingFunction, match="libc.so.6 does not export gpuslack_trim"):
        lib.trim(-1)


@needs_library
def test_every_function_is_exported_by_the_built_library():
    r = run_python("from gpuslack import _lib; print(' '.join(_lib.load().missing))", GPUSLACK_LIBRARY=LIBRARY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [], "declared in gpuslack.h, not exported: %s" % r.stdout


@needs_library
def test_the_order_of_the_places_looked_at():
    # In a child process, where nothing has loaded the library yet (tests in
    # this process, such as test_compare.py's, may have: then "already
    # loaded in this process" is rightly first).
    code = ("import os, json\n"
            "from gpuslack import _lib\n"
            "first = [w for w, _ in _lib.candidates()]\n"
            "path = _lib.library_path()\n"
            "del os.environ['GPUSLACK_LIBRARY']\n"
            "print(json.dumps([first, path, [w for w, _ in _lib.candidates()]]))\n")
    r = run_python(code, GPUSLACK_LIBRARY=LIBRARY)
    assert r.returncode == 0, r.stderr
    where, path, without = json.loads(r.stdout)
    assert where[-2:] == ["installed with the package", "the source checkout's build folder"]
    assert where[0] == "GPUSLACK_LIBRARY"  # nothing is preloaded into the child
    assert path == os.path.abspath(LIBRARY)
    assert "GPUSLACK_LIBRARY" not in without


@needs_library
def test_render_summary_hands_out_the_text_or_one_line_and_takes_null_pointers(tmp_path):
    # In a child process: the library must not be mapped into pytest's.
    good = tmp_path / "s.json"
    good.write_text('{"schema_version": 1, "pid": 7, "wall_s": 2, "lost_share": 0, "categories": {}, '
                    '"threads": [], "calls": [], "copies": [], "call_sites": []}')
    code = ("import ctypes, sys\n"
            "from gpuslack import _lib\n"
            "lib = _lib.load()\n"
            "def render(path, want_text=True, want_error=True):\n"
            "    t, e = ctypes.c_void_p(), ctypes.c_void_p()\n"
            "    rc = lib.render_summary(path, ctypes.byref(t) if want_text else None,\n"
            "                            ctypes.byref(e) if want_error else None)\n"
            "    out = [rc] + [ctypes.string_at(p.value).decode() if p.value else None for p in (t, e)]\n"
            "    lib.free(t.value); lib.free(e.value)\n"
            "    return out\n"
            "good, bad = sys.argv[1].encode(), sys.argv[2].encode()\n"
            "rc, text, error = render(good)\n"
            "assert rc == 0 and error is None and text.startswith('gpuslack: 0.0% of 2 s lost (pid 7)'), text\n"
            "assert render(good, want_text=False) == [0, None, None]\n"
            "rc, text, error = render(bad)\n"
            "assert rc == -1 and text is None and error == 'cannot read %s: No such file or directory' % sys.argv[2]\n"
            "assert render(bad, want_error=False) == [-1, None, None]\n"
            "assert render(None)[0] == -1 and 'NULL' in render(None)[2]\n")
    r = subprocess.run([sys.executable, "-c", code, str(good), str(tmp_path / "missing.json")],
                       env=dict(os.environ, GPUSLACK_LIBRARY=LIBRARY, PYTHONPATH=SHIM),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr

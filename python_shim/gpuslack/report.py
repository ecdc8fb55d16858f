"""A summary file (docs/summary.schema.json) as the text gpuslack prints.

The rendering is the library's own (lib/report, through
gpuslack_render_summary): `format_text(path)` is, line for line and digit
for digit, the text the process that wrote the file printed at exit. There
is no second renderer in Python to keep in step.

`load(path)` is the document as dicts and lists, once the library has
accepted it. A file that is missing, is not JSON or is not a summary raises
ReportError with one line saying why; so does a machine where
libgpuslack.so cannot be found (the line says what to do).

Loads libgpuslack.so into this process (which does nothing until a CUDA
call; this process makes none).
"""
import ctypes
import json

from . import _lib


class ReportError(Exception):
    """A summary file that cannot be read, or no library to read it; str()
    is one line."""


class NoLibrary(ReportError):
    """No libgpuslack.so to render with (or one too old): no file can be
    rendered until that is fixed."""


def _take(lib, pointer):
    """The string at a char* the library returned, freed."""
    if not pointer.value:
        return ""
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "replace")
    finally:
        lib.free(pointer.value)


def format_text(path):
    """The text summary of the file at `path`, lines ending in newlines.
    Raises ReportError."""
    try:
        lib = _lib.load()
        text, error = ctypes.c_void_p(), ctypes.c_void_p()
        status = lib.render_summary(str(path).encode("utf-8", "surrogateescape"), ctypes.byref(text),
                                    ctypes.byref(error))
    except (_lib.LibraryNotFound, _lib.MissingFunction, OSError) as e:
        raise NoLibrary(" ".join(str(e).split())) from e
    text, error = _take(lib, text), _take(lib, error)
    if status != 0:
        raise ReportError(error or "%s: the library gave no reason" % path)
    return text


def load(path):
    """The summary document in `path`, once the library has read it as a
    summary. Raises ReportError."""
    format_text(path)
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))

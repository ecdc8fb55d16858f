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


def _read(path, want_text):
    """(status 0, text) or raises ReportError: the library's reader on the
    file at `path`; with want_text False it checks and renders nothing."""
    try:
        lib = _lib.load()
        text, error = ctypes.c_void_p(), ctypes.c_void_p()
        status = lib.render_summary(str(path).encode("utf-8", "surrogateescape"),
                                    ctypes.byref(text) if want_text else None, ctypes.byref(error))
    except (_lib.LibraryNotFound, _lib.MissingFunction, OSError) as e:
        raise NoLibrary(" ".join(str(e).split())) from e
    text, error = _take(lib, text), _take(lib, error)
    if status != 0:
        raise ReportError(error or "%s: the library gave no reason" % path)
    return text


def format_text(path):
    """The text summary of the file at `path`, lines ending in newlines.
    Raises ReportError."""
    return _read(path, True)


def check(path):
    """Nothing when the library's reader accepts the file at `path` as a
    summary; else ReportError with its one line (deeper than 64 levels, NaN,
    a number out of a field's range, over 1 GiB, not a summary, a newer
    schema...). Every reader of summary files in this package calls it
    first, so that all of them refuse what `report` refuses, with the same
    line. Raises NoLibrary when there is no library to ask."""
    _read(path, False)


def check_library():
    """Raises NoLibrary (one line saying what to do) when there is no
    library to read summaries with."""
    try:
        lib = _lib.load()
        if not lib.has("render_summary"):
            lib.render_summary()   # raises MissingFunction, saying what to do
    except (_lib.LibraryNotFound, _lib.MissingFunction, OSError) as e:
        raise NoLibrary(" ".join(str(e).split())) from e


def _int(digits):
    # Python refuses to make an int of more than 4,300 digits (a ValueError
    # from inside json); the library read such a number, in a member it
    # does not read, as a number: so does this, as a float.
    return int(digits) if len(digits) <= 4300 else float(digits)


def load(path):
    """The summary document in `path` as dicts and lists, once the library
    has read it as a summary (check). Raises ReportError."""
    check(path)
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"), parse_int=_int)
    except (OSError, ValueError) as e:
        # The file changed between the library's read and this one.
        raise ReportError("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e)) from e

"""Every name and figure a reader sees, as the library defines them (labels.py).

The Python renderers (compare, the job report's text and HTML) never spell
a category, an idle cause or a unit themselves: they ask libgpuslack.so,
which defines each once for the text summary too (lib/report/labels.h,
lib/report/units.h; Note [One formatter per unit]; docs/design.md, "Where
rendering lives"). tests/python/test_labels.py renders the same inputs
through both languages and compares.

- seconds(s), percent(share), nbytes(b), gbps(v), size_bucket(b),
  link_gbps(v), link_gbits(v), waves(v): the figure as text;
  None gives "-" (a figure the summary does not hold).
- category_name(key), idle_name(key), busy_name(key), lost_keys(),
  device_syncs(): from
  gpuslack_labels_json, read once per process.
- render_findings(findings, width, indent, parts): a list of findings
  (the summary's "findings" items, or the job report's entries: rule,
  title, cost_s, cost_share, gpu_idle_s, evidence, where, fix) as the text
  summary renders them (lib/report/findings_text.h), lines without the
  trailing newline.

The library is loaded on first use (_lib.load); every command that uses
this already reads its summaries through it.
"""
import ctypes
import json
import threading

from . import _lib

NO_HEADING, BRIEF, BODY = 1, 2, 4   # gpuslack_render_findings' parts

_lock = threading.Lock()
_labels = None


class RenderError(RuntimeError):
    """The library refused the findings handed to it (one line)."""


def _figure(unit, value):
    if value is None:
        return "-"
    buf = ctypes.create_string_buffer(64)
    n = _lib.load().format_figure(unit.encode(), float(value), buf, len(buf))
    if n < 0:
        raise ValueError("gpuslack_format_figure: unknown unit %r" % unit)
    return buf.value.decode()


def seconds(s):
    """'0', '850 ns', '12.3 us', '4.5 ms', '2.10 s'; None: '-'."""
    return _figure("seconds", s)


def percent(share):
    """A share as a percentage: 0.123 -> '12.3%'; None: '-'."""
    return _figure("percent", share)


def nbytes(b):
    """'0 B', '512 B', '1.5 KiB', '300.0 MiB'; None: '-'."""
    return _figure("bytes", b)


def gbps(v):
    """GB/s, the number alone: '12.34'; 0 or None: '-'."""
    return _figure("gbps", v)


def size_bucket(b):
    """A power-of-two size class by its exponent: 26 -> '>=64.0 MiB'."""
    return _figure("size_bucket", b)


def link_gbps(v):
    """A link's capacity: '450 GB/s', '63.02 GB/s'; 0 or less: 'unknown'."""
    return _figure("link_gbps", v)


def link_gbits(v):
    """A NIC port's rate in gigabits: '400 Gb/s'; 0 or less: 'unknown'."""
    return _figure("link_gbits", v)


def waves(v):
    """Waves of blocks a launch took on the SMs: 0.5 -> '0.50'."""
    return _figure("waves", v)


def table():
    """The library's labels (gpuslack_labels_json), parsed, read once."""
    global _labels
    with _lock:
        if _labels is None:
            lib = _lib.load()
            p = lib.labels_json()
            if not p:
                raise MemoryError("gpuslack_labels_json: out of memory")
            try:
                _labels = json.loads(ctypes.string_at(p).decode())
            finally:
                lib.free(p)
        return _labels


def _name(section, key):
    for row in table()[section]:
        if row["key"] == key:
            return row["name"]
    raise KeyError("%s: no %r" % (section, key))


def category_name(key):
    return _name("categories", key)


def idle_name(key):
    return _name("idle_causes", key)


def busy_name(key):
    return _name("busy_kinds", key)


def lost_keys():
    """The categories whose host time counts as lost, in the library's order."""
    return tuple(row["key"] for row in table()["categories"] if row["lost"])


def device_syncs():
    """(explicit, frees): the hooked calls that wait for the whole device,
    explicitly or as a free the runtime or driver serves (the library's
    ApiCall::synchronizes_device)."""
    d = table()["device_syncs"]
    return tuple(d["explicit"]), tuple(d["frees"])


def render_findings(findings, width=70, indent=0, parts=0):
    """The findings' lines as the text summary renders them (module doc)."""
    lib = _lib.load()
    doc = json.dumps({"findings": [_as_finding(f) for f in findings]}).encode()
    text, error = ctypes.c_void_p(), ctypes.c_void_p()
    rc = lib.render_findings(doc, width, indent, parts, ctypes.byref(text), ctypes.byref(error))
    try:
        if rc != 0:
            raise RenderError(ctypes.string_at(error.value).decode() if error.value else "out of memory")
        return ctypes.string_at(text.value).decode().splitlines()
    finally:
        lib.free(text.value)
        lib.free(error.value)


def _as_finding(f):
    """A finding in the summary's shape; the job report's tuples of
    evidence become {"name", "value"}."""
    evidence = [e if isinstance(e, dict) else {"name": e[0], "value": e[1]} for e in f.get("evidence") or []]
    out = {"rule": f.get("rule", ""), "title": f.get("title", ""), "evidence": evidence,
           "where": [list(site) for site in f.get("where") or []], "fix": f.get("fix") or ""}
    for k in ("cost_s", "cost_share"):
        if f.get(k) is not None:
            out[k] = f[k]
    if f.get("gpu_idle_s") is not None and f["gpu_idle_s"] >= 0:
        out["gpu_idle_s"] = f["gpu_idle_s"]
    return out

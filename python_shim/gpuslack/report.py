"""A summary document (docs/summary.schema.json) as the text gpuslack prints.

`format_text(doc)` renders the same lines, in the same order and units, as
the library's own text summary (lib/report/text.cc): the headline with the
share lost, the context line, one table per category, copies by kind,
collectives, the allocator lines, the staged copies, the worst thread and
the call sites.
Keep the two in step: tests/python/test_launcher.py compares them on the
demo. `load(path)` reads and checks a file; a file that is missing, is not
JSON or is not a summary raises ReportError with one line saying why.

Pure Python, no library needed: a summary can be read on any machine.
"""
import json

PREFIX = "gpuslack: "

# JSON key -> the text's name, in the library's category order.
CATEGORIES = [
    ("allocation", "allocation"),
    ("copy", "copies"),
    ("collective", "collectives"),
    ("sync", "waiting for the GPU"),
    ("other", "other"),
]
LOST = ("allocation", "copy", "collective")
REQUIRED = ("schema_version", "pid", "wall_s", "lost_share", "categories", "threads", "calls", "copies",
            "call_sites")


class ReportError(Exception):
    """A summary file that cannot be read; str() is one line."""


def load(path):
    """The summary document in `path`. Raises ReportError."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise ReportError("cannot read %s: %s" % (path, e.strerror or e)) from e
    except (UnicodeDecodeError, ValueError) as e:
        raise ReportError("%s is not a JSON document: %s" % (path, e)) from e
    if not isinstance(doc, dict):
        raise ReportError("%s is not a gpuslack summary: not a JSON object" % path)
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise ReportError("%s is not a gpuslack summary: no %s" % (path, ", ".join(missing)))
    if doc["schema_version"] != 1:
        raise ReportError("%s has schema_version %r; this gpuslack reads version 1" % (path, doc["schema_version"]))
    return doc


# --- numbers for people (text.cc's helpers) --------------------------------

def printable(s):
    return "".join("?" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in str(s))


def duration(s):
    """"0", "850 ns", "12.3 us", "4.5 ms", "2.10 s"."""
    if s <= 0:
        return "0"
    if s < 1e-6:
        return "%.0f ns" % (s * 1e9)
    if s < 1e-3:
        return "%.1f us" % (s * 1e6)
    if s < 1:
        return "%.1f ms" % (s * 1e3)
    return "%.2f s" % s


def seconds_1(s):
    """Seconds for a headline: three significant digits, whole above 1000 s,
    the best unit below 10 ms."""
    if 0 < s < 0.01:
        return duration(s)
    return ("%.0f s" if s >= 1000 else "%.3g s") % s


def percent(share):
    return "%.1f%%" % (share * 100)


def bytes_text(n):
    """"-", "512 B", "1.5 KiB", ... "3.0 PiB"."""
    if n == 0:
        return "-"
    if n < 1024:
        return "%d B" % n
    units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v = n / 1024.0
    unit = 0
    while v >= 1024 and unit < 5:
        v /= 1024
        unit += 1
    return "%.1f %s" % (v, units[unit])


def gbps_text(v):
    return "%.2f" % v if v > 0 else "-"


def nccl_version_text(code):
    if code <= 0:
        return "unknown"
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100)
    return "%d.%d.%d" % (code // 1000, code // 100 % 10, code % 100)


def render_table(rows, left_columns, indent):
    """Aligned columns: the first `left_columns` left, the rest right, two
    spaces apart; returns the lines, each with the prefix."""
    width = []
    for row in rows:
        width += [0] * (len(row) - len(width))
        for i, cell in enumerate(row):
            width[i] = max(width[i], len(cell))
    lines = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            pad = " " * (width[i] - len(cell))
            if i < left_columns:
                cells.append(cell + (pad if i + 1 < len(row) else ""))
            else:
                cells.append(pad + cell)
        lines.append(PREFIX + indent + "  ".join(cells))
    return lines


# --- sections, in text.cc's order ------------------------------------------

def _category(doc, key):
    c = doc["categories"].get(key) or {}
    return c.get("seconds", 0), c.get("share", 0)


def _category_part(doc, key, name):
    seconds, share = _category(doc, key)
    part = "%s %s" % (name, seconds_1(seconds))
    if share >= 0.0005:
        part += " (%s)" % percent(share)
    return part


def _headline(doc, out):
    names = dict(CATEGORIES)
    who = "pid %d" % doc["pid"]
    if doc.get("rank", -1) >= 0:
        who += ", rank %d" % doc["rank"]
    out.append(PREFIX + "%s of %s lost (%s): %s, %s, %s; %s %s (not counted as lost)" % (
        percent(doc["lost_share"]), seconds_1(doc["wall_s"]), who,
        _category_part(doc, "allocation", names["allocation"]), _category_part(doc, "copy", names["copy"]),
        _category_part(doc, "collective", names["collective"]), names["sync"],
        seconds_1(_category(doc, "sync")[0])))
    context = "host " + printable(doc.get("host", ""))
    if doc.get("local_rank", -1) >= 0:
        context += ", local rank %d" % doc["local_rank"]
    others = (doc.get("other_threads") or {}).get("threads", 0)
    exited = others + sum(1 for t in doc["threads"] if t.get("exited"))
    n = len(doc["threads"]) + others
    context += ", %d %s" % (n, "thread" if n == 1 else "threads")
    if exited > 0:
        context += " (%d exited)" % exited
    if doc.get("reason"):
        context += ", written at " + printable(doc["reason"])
    context += ", gpuslack " + printable(doc.get("gpuslack_version", "?"))
    out.append(PREFIX + context)


def _call_tables(doc, out):
    wall = doc["wall_s"]
    for key, name in CATEGORIES:
        rows = [["call", "count", "total", "share", "p50", "p99", "max", "bytes"]]
        for c in doc["calls"]:
            if c["category"] != key:
                continue
            share = c["total_s"] / wall if wall > 0 else 0
            rows.append([printable(c["name"]), "%d" % c["count"], duration(c["total_s"]), percent(share),
                         duration(c["p50_s"]), duration(c["p99_s"]), duration(c["max_s"]), bytes_text(c["bytes"])])
        if len(rows) == 1:
            continue
        title = _category_part(doc, key, name)
        if key not in LOST:
            title += ", not counted as lost"
        out.append(PREFIX + title + ":")
        out += render_table(rows, 1, "  ")


def _copy_table(doc, out):
    if not doc["copies"]:
        return
    rows = [["kind", "host", "count", "bytes", "time", "GB/s"]]
    for c in doc["copies"]:
        kind = c["kind"] if c["kind"] != "none" else "-"
        host = c["host"] if c["host"] != "none" else "-"
        # gbps has 6 significant digits in the file; bytes / total_s (9) is
        # closer to the figure the library printed.
        gbps = c["bytes"] / c["total_s"] / 1e9 if c["gbps"] > 0 and c["total_s"] > 0 else c["gbps"]
        rows.append([kind, host, "%d" % c["count"], bytes_text(c["bytes"]), duration(c["total_s"]),
                     "%.2f" % gbps if gbps > 0 else "-"])
    out.append(PREFIX + "copies by kind:")
    out += render_table(rows, 2, "  ")


def _collective_table(doc, out):
    c = doc.get("collectives")
    if not c:
        return
    out.append(PREFIX + "collectives: NCCL %s, host %s (%s of wall), GPU ~%s (%s of wall); GPU time from 1 call in %d" % (
        nccl_version_text(c["nccl_version"]), seconds_1(c["host_s"]), percent(c["host_share"]),
        seconds_1(c["gpu_s_estimated"]), percent(c["gpu_share"]), c["timing_every"]))
    for w in c.get("warnings", []):
        out.append(PREFIX + "  warning: " + printable(w))
    if c.get("rows"):
        rows = [["op", "type", "size", "ranks", "count", "captured", "bytes", "host", "GPU", "GPU p50", "GPU p99",
                 "algbw GB/s", "busbw GB/s"]]
        for r in c["rows"]:
            timed = r["timed"] > 0
            bucket = r["size_bucket"]
            rows.append([r["op"], r["datatype"], ">=" + bytes_text(1 << bucket if bucket > 0 else 0),
                         str(r["nranks"]) if r["nranks"] > 0 else "?", "%d" % r["count"], "%d" % r["captured"],
                         bytes_text(r["bytes"]), duration(r["host_s"]),
                         duration(r["gpu_s"]) if timed else "-", duration(r["gpu_p50_s"]) if timed else "-",
                         duration(r["gpu_p99_s"]) if timed else "-", gbps_text(r["algbw_gbps"]),
                         gbps_text(r["busbw_gbps"])])
        out += render_table(rows, 5, "  ")
    comms = ", ".join("rank %d/%d on device %d%s" % (m["rank"], m["nranks"], m["device"],
                                                      " (aborted)" if m.get("aborted") else "")
                      for m in c.get("communicators", []))
    if comms:
        out.append(PREFIX + "  communicators: " + comms)
    env = " ".join("%s=%s" % (printable(k), printable(v)) for k, v in sorted(c.get("env", {}).items()))
    if env:
        out.append(PREFIX + "  environment: " + env)
    if c.get("pending", 0) > 0 or c.get("dropped", 0) > 0:
        out.append(PREFIX + "  timed calls still running: %d, lost to failed events: %d" % (c["pending"], c["dropped"]))


def _allocator_lines(doc, out):
    for a in doc.get("allocator", []):
        out.append(PREFIX + (
            "vmm allocator, device %d: peak %s allocated / %s reserved (utilization %s), %d allocations, "
            "%d frees without a device sync, granules mapped %d / released %d, out-of-memory retries %d "
            "(waited %s)") % (a["device"], bytes_text(a["peak_allocated"]), bytes_text(a["peak_reserved"]),
                             percent(a["utilization"]), a["allocations"], a["frees"], a["granules_mapped"],
                             a["granules_unmapped"], a["oom_retries"], seconds_1(a["stall_s"])))


def _copies_text(n):
    return "%d %s" % (n, "copy" if n == 1 else "copies")


def _staging_direction(name, d):
    return "%s %s (%s): %d staged, %d passed through" % (name, _copies_text(d["seen"]), bytes_text(d["seen_bytes"]),
                                                         d["staged"], d["passed"])


def _staging_lines(doc, out):
    g = doc.get("staging")
    if not g:
        return
    h2d, d2h = g["h2d"], g["d2h"]
    title = "pageable copies: %s; %s" % (_staging_direction("H2D", h2d), _staging_direction("D2H", d2h))
    if not g["enabled"]:
        title += " (stage_copies:false)"
    out.append(PREFIX + title)
    if h2d["staged"] + d2h["staged"] > 0:
        unmeasured = ""
        if g["drains_pending"] > 0:
            unmeasured = "; %d skipped stream drains not measured, not included" % g["drains_pending"]
        out.append(PREFIX + "  staged copies blocked %s (H2D %s, D2H %s); natively ~%s (estimate: H2D ~%s, D2H ~%s%s)" % (
            duration(h2d["blocked_s"] + d2h["blocked_s"]), duration(h2d["blocked_s"]), duration(d2h["blocked_s"]),
            duration(h2d["native_estimate_s"] + d2h["native_estimate_s"]), duration(h2d["native_estimate_s"]),
            duration(d2h["native_estimate_s"]), unmeasured))
    out.append(PREFIX + "  copy stalls: %d waits for the application's D2H copies and host functions (%s), "
               "%d waits for staging memory (%s)" % (g["host_work_waits"], duration(g["host_work_wait_s"]),
                                                      g["budget_waits"], duration(g["budget_wait_s"])))
    p = g["passed_because"]
    reasons = [(p["off"], "staging off"), (p["small"], "below the threshold"), (p["capture"], "graph capture"),
               (p["exact"], "exact_copy_semantics"), (p["error_pending"], "error pending"),
               (p["unsupported"], "2D rows wider than a chunk"), (p["measured_faster"], "D2H measured faster natively"),
               (p["unknown_work"], "unknown pending work"), (g["partial"], "staged in part")]
    why = ", ".join("%s %d" % (text, n) for n, text in reasons if n > 0)
    if why:
        out.append(PREFIX + "  passed through: " + why)
    if g["pinned_bytes"] > 0:
        out.append(PREFIX + "  staging memory: %s pinned, peak in use %s, budget %s" % (
            bytes_text(g["pinned_bytes"]), bytes_text(g["peak_in_use_bytes"]), bytes_text(g["budget_bytes"])))
    if not g["sites"]:
        return
    out.append(PREFIX + "pin these buffers (pageable copies by call site, sampled by bytes):")
    for site in g["sites"]:
        out.append(PREFIX + "  %s in ~%s (%s)" % (bytes_text(site["bytes"]), _copies_text(site["copies"]),
                                                 printable(site["api"])))
        for frame in site["frames"]:
            out.append(PREFIX + "      at " + printable(frame))
        if not site["frames"]:
            out.append(PREFIX + "      (no frames outside gpuslack)")


def _worst_thread(doc, out):
    t = doc.get("worst_thread")
    if not doc["threads"] or not t:
        return
    text = "worst thread: tid %d" % t["tid"]
    if t.get("name"):
        text += ' "%s"' % printable(t["name"])
    if t.get("exited"):
        text += " (exited)"
    text += " lost %s (%s of wall)" % (seconds_1(t["lost_s"]), percent(t["lost_share"]))
    names = dict(CATEGORIES)
    parts = []
    for key in LOST:
        seconds = (t["categories"].get(key) or {}).get("seconds", 0)
        if seconds > 0:
            parts.append("%s %s" % (names[key], seconds_1(seconds)))
    if parts:
        text += ": " + ", ".join(parts)
    out.append(PREFIX + text)


def _call_sites(doc, out):
    for key, name in CATEGORIES:
        sites = [s for s in doc["call_sites"] if s["category"] == key]
        if sites:
            out.append(PREFIX + "top call sites, %s:" % name)
        for s in sites:
            out.append(PREFIX + "  %s in %d %s %s" % (duration(s["blocked_s"]), s["count"],
                                                    "call to" if s["count"] == 1 else "calls to",
                                                    printable(s["api"])))
            for frame in s["frames"]:
                out.append(PREFIX + "      at " + printable(frame))
            if not s["frames"]:
                out.append(PREFIX + "      (no frames outside gpuslack)")


def format_text(doc):
    """The text summary of `doc`, lines ending in newlines."""
    out = []
    _headline(doc, out)
    _call_tables(doc, out)
    _copy_table(doc, out)
    _collective_table(doc, out)
    _allocator_lines(doc, out)
    _staging_lines(doc, out)
    _worst_thread(doc, out)
    _call_sites(doc, out)
    return "".join(line + "\n" for line in out)

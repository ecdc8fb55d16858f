"""python -m gpuslack compare BEFORE.json AFTER.json: two runs of one
program side by side, in 80 columns, then what gpuslack found.

The quickstart's last screen (scripts/demo-compare.sh): the demo measured
with every intervention off ("before": the program as it runs natively,
measured), then with gpuslack's fixes on ("after"), and optionally the same
program with no gpuslack at all (--native-log: its own output).

Every figure of the before and after columns comes from the run's JSON
summary (docs/summary.schema.json), read as plain JSON (no library needed):

  time lost                lost_s, lost_share;
  median step              gpu_timeline.devices[].steps.wall_p50_s, when the
                           timeline measured steps the program marked
                           (gpuslack_step); the worst device's;
  device synchronizations  calls that waited for the whole device: the
                           explicit ones (cudaDeviceSynchronize,
                           cuCtxSynchronize) and the implicit ones of the
                           frees the CUDA runtime or driver served (cudaFree,
                           cudaFreeHost, cuMemFree, cuMemFreeHost: each
                           synchronizes the device), less the frees gpuslack
                           served without one (allocator[].frees,
                           pinned.frees); the calls are the library's
                           (gpuslack.labels.device_syncs);
  GPU idle                 gpu_timeline: idle over wall, summed over devices.

A figure a summary does not hold prints "-". The native column takes the
median step (of the steady state: the steps the marks delimit) and, on the
simulated device, the device synchronizations by cudaFree from the lines
the demo prints (bench/demo/train_loop.cc).

Findings: the "findings" array of each summary (lib/report/finding.h), the
before run's in full (what leaks, cost, evidence, where, fix), then what is
left in the after run (title and cost); a summary written before findings
existed says so. They are rendered by the text summary's own renderer
(lib/report/findings_text.h, through gpuslack.labels), and every figure by
the library's formatters, so they read as `report` prints them.
"""
import json
import os
import re
import textwrap

from . import labels, report

WIDTH = 80



class CompareError(Exception):
    """A file that is missing or is not a summary; str() is one line."""


def load(path):
    """The summary at `path`, read as `report` reads it (report.load): what
    the library's reader refuses raises CompareError with its line."""
    try:
        return report.load(path)
    except report.ReportError as e:
        raise CompareError(str(e)) from e


def _calls(doc, names):
    return sum(int(c.get("count", 0)) for c in doc.get("calls") or [] if c.get("name") in names)


def device_syncs(doc):
    """Calls that synchronized the device (module docstring)."""
    served = sum(int(a.get("frees", 0)) for a in doc.get("allocator") or [])
    served += int((doc.get("pinned") or {}).get("frees", 0))
    explicit, frees = labels.device_syncs()   # the library's list (ApiCall::synchronizes_device)
    return _calls(doc, explicit) + max(0, _calls(doc, frees) - served)


def _devices(doc):
    t = doc.get("gpu_timeline") or {}
    return t.get("devices") or [] if t.get("status") == "measured" else []


def gpu_idle_share(doc):
    """Idle over wall time, all devices; None when the timeline did not measure."""
    devices = _devices(doc)
    wall = sum(d.get("wall_s", 0) for d in devices)
    return sum(d.get("idle_s", 0) for d in devices) / wall if wall > 0 else None


def median_step_s(doc):
    """The median of the steps the program marked (the slowest device's);
    None without marks or timeline."""
    steps = [d["steps"] for d in _devices(doc) if (d.get("steps") or {}).get("from_marks") and d["steps"].get("count")]
    return max(s["wall_p50_s"] for s in steps) if steps else None


def read_native_log(path):
    """(median step in s, device syncs by cudaFree) from the demo's output;
    None where it printed none."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    m = (re.search(r"^train_loop: median step in steady state \(steps [0-9.]+\): ([0-9.]+) ms", text, re.M)
         or re.search(r"^train_loop: median step ([0-9.]+) ms", text, re.M))
    s = re.search(r"^train_loop: device synchronizations by cudaFree in all: (\d+)", text, re.M)
    return (float(m.group(1)) / 1e3 if m else None), (int(s.group(1)) if s else None)


seconds = labels.seconds    # the library's formatters (Note [One formatter per unit])
percent = labels.percent


def rows(before, after, native=None):
    """The table's rows: (label, native, before, after) as printed."""
    n_step, n_syncs = native if native else (None, None)
    return [
        ("time lost (share of wall)", "-",
         "%s (%s)" % (seconds(before["lost_s"]), percent(before.get("lost_share"))),
         "%s (%s)" % (seconds(after["lost_s"]), percent(after.get("lost_share")))),
        ("median step", seconds(n_step), seconds(median_step_s(before)), seconds(median_step_s(after))),
        ("device synchronizations", "-" if n_syncs is None else str(n_syncs), str(device_syncs(before)),
         str(device_syncs(after))),
        ("GPU idle (share of wall)", "-", percent(gpu_idle_share(before)), percent(gpu_idle_share(after))),
    ]


def table(before, after, native=None, labels=("before", "after")):
    """The rows aligned: labels left, figures right, two spaces apart."""
    heads = ("",) + (("no gpuslack",) if native else ()) + tuple(labels)
    body = [(r[0],) + ((r[1],) if native else ()) + tuple(r[2:]) for r in rows(before, after, native)]
    all_rows = [heads] + body
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(heads))]
    return [(r[0].ljust(widths[0]) + "".join("  " + c.rjust(w) for c, w in zip(r[1:], widths[1:]))).rstrip()
            for r in all_rows]


def _wrap(text, indent, more):
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=more, break_long_words=False,
                         break_on_hyphens=False) or [indent.rstrip()]


def findings_lines(doc, title, full=True):
    if "findings" not in doc:
        return _wrap(title + ": this summary holds no findings (written by a gpuslack without them)", "", "  ")
    found = doc["findings"] or []
    if not found:
        return [title + ": none"]
    # The text summary's own renderer (lib/report/findings_text.h), indented.
    return [title + ":"] + labels.render_findings(found, WIDTH, 2, labels.NO_HEADING | (0 if full else labels.BRIEF))


def format_compare(before, after, native=None, labels=("before", "after"), paths=None):
    """The whole screen, lines ending in newlines, none wider than 80."""
    out = table(before, after, native, labels)
    out += _wrap("device synchronizations: calls that waited for the whole device (cudaDeviceSynchronize, "
                 "and each cudaFree/cudaFreeHost the CUDA runtime served).", "", "  ")
    if native and native[0] and median_step_s(before):
        out += _wrap("median step, before against no gpuslack: %+.1f%% (what measuring costs, and the noise of "
                     "one run each)." % ((median_step_s(before) / native[0] - 1) * 100), "", "  ")
    out.append("")
    out += findings_lines(before, "What gpuslack found (%s)" % labels[0])
    out += findings_lines(after, "Left with its fixes on (%s)" % labels[1], full=False)
    if paths:
        out.append("")
        out += _wrap("The full summaries: python -m gpuslack report %s" % " ".join(paths), "", "  ")
    return "".join(l + "\n" for l in out)


def run(before_path, after_path, native_log=None, labels=("before", "after")):
    """The CLI: prints the screen; 0, or 2 with one line on stderr."""
    import sys
    try:
        before, after = load(before_path), load(after_path)
        native = read_native_log(native_log) if native_log else None
    except (CompareError, OSError) as e:
        print("gpuslack compare: %s" % e, file=sys.stderr)
        return 2
    shown = [os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p for p in (before_path, after_path)]
    sys.stdout.write(format_compare(before, after, native, labels, shown))
    return 0

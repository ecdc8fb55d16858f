"""python -m gpuslack merge: one report for a whole job (merge.py).

    python -m gpuslack merge DIR|FILE... [--out DIR] [--expected-busbw GBPS]

Reads every rank's summary (a folder gives its *.json files), prints the
text report and writes job-report.txt, job-report.json
(docs/job_report.schema.json) and job-report.html (self-contained) into
--out (default: the folder given, else the current folder).

Exit status: 0 when every file was merged; 1 when the report was written
but some files were skipped (one "skipped: FILE ..." line on stderr
each, the line `python -m gpuslack report FILE` prints); 2 when no report could be written (no usable summary, an
unwritable --out, a usage error).
"""
import json
import os
import sys

from . import aggregate, html, load, text

NAMES = ("job-report.txt", "job-report.json", "job-report.html")


def write_atomically(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, path)


def report(paths, expected_busbw=0.0):
    """(report dict, skipped) for the files or folders in paths."""
    ranks, skipped, notes = load.load(paths)
    return (aggregate.build(ranks, skipped, notes, expected_busbw) if ranks else None), skipped


def run(paths, out=None, expected_busbw=0.0, stdout=sys.stdout, stderr=sys.stderr):
    try:
        rep, skipped = report(paths, expected_busbw)
    except load.report.NoLibrary as e:
        print("gpuslack merge: %s" % e, file=stderr)
        return 2
    for f, why in skipped:
        print(load.skipped_line(why), file=stderr)
    if rep is None:
        print("gpuslack merge: no gpuslack summary among %s" % " ".join(paths), file=stderr)
        return 2
    if out is None:
        out = paths[0] if len(paths) == 1 and os.path.isdir(paths[0]) else "."
    txt = text.render(rep)
    stdout.write(txt)
    try:
        os.makedirs(out, exist_ok=True)
        write_atomically(os.path.join(out, NAMES[0]), txt)
        write_atomically(os.path.join(out, NAMES[1]), json.dumps(rep, separators=(",", ":"), allow_nan=False) + "\n")
        write_atomically(os.path.join(out, NAMES[2]), html.render(rep))
    except OSError as e:
        print("gpuslack merge: cannot write the report into %s: %s" % (out, e.strerror or e), file=stderr)
        return 2
    print("gpuslack merge: wrote %s" % ", ".join(os.path.join(out, n) for n in NAMES), file=stderr)
    return 1 if skipped else 0

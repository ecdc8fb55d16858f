"""python -m gpuslack: run a command under gpuslack, or print a summary file.

    python -m gpuslack run [--out DIR] [--conf key:value,...] -- COMMAND ...
    python -m gpuslack report FILE...
    python -m gpuslack library        # the libgpuslack.so this package uses
    python -m gpuslack merge DIR|FILE... [--out DIR] [--expected-busbw GBPS]   # one report for a job
    python -m gpuslack compare BEFORE.json AFTER.json [--native-log LOG]  # two runs side by side
    python -m gpuslack doctor [--json] [--conf k:v,...] [--out DIR] [-- COMMAND ...]  # what gpuslack finds here

Exit status: run passes the command's through (128+N for signal N);
report gives 2 when a file is missing or is not a summary, or when no
libgpuslack.so is found to render it with (one line on stderr says which and
why); usage errors give 2. merge gives 0 when every file was merged, 1
when the report was written but some files were skipped (one line each on
stderr), 2 when no report could be written (gpuslack/job/merge.py).
compare gives 2 when a file is missing or is not a summary (gpuslack/compare.py).
doctor gives 0 when nothing is wrong, 1 when it names a problem (gpuslack/doctor.py).
"""
import argparse
import sys

from . import _lib, compare, doctor, launcher, report
from .job import merge


def _parser():
    p = argparse.ArgumentParser(prog="python -m gpuslack", description="Measure and recover GPU time lost around "
                                "the model (gpuslack).")
    sub = p.add_subparsers(dest="action", metavar="{run,report,library,merge,compare,doctor}")
    sub.required = True
    r = sub.add_parser("run", help="run COMMAND under gpuslack (LD_PRELOAD) and say where its summary is",
                       usage="python -m gpuslack run [--out DIR] [--conf key:value,...] -- COMMAND ...")
    r.add_argument("--out", metavar="DIR", help="folder for the summary files (default: ./gpuslack-out)")
    r.add_argument("--conf", metavar="key:value,...",
                   help="GPUSLACK_CONF items, after any inherited ones (e.g. allocator:vmm,top_call_sites:10)")
    rep = sub.add_parser("report", help="print summary JSON files as text")
    rep.add_argument("files", nargs="+", metavar="FILE")
    sub.add_parser("library", help="print the path of the libgpuslack.so this package uses")
    m = sub.add_parser("merge", help="one report (text, JSON, HTML) from every rank's summary of a job")
    m.add_argument("paths", nargs="+", metavar="DIR|FILE")
    m.add_argument("--out", metavar="DIR", help="folder for job-report.{txt,json,html} (default: the folder "
                   "given, else the current one)")
    m.add_argument("--expected-busbw", type=float, default=0.0, metavar="GBPS",
                   help="expected bus bandwidth, GB/s (default: from the summaries' expected_busbw_gbps warnings)")
    c = sub.add_parser("compare", help="two runs' summaries side by side (80 columns), then the findings")
    c.add_argument("before", metavar="BEFORE.json")
    c.add_argument("after", metavar="AFTER.json")
    c.add_argument("--native-log", metavar="LOG", help="the program's output without gpuslack (the demo's: its "
                   "median step and device synchronizations)")
    c.add_argument("--labels", nargs=2, metavar=("BEFORE", "AFTER"), default=("before", "after"),
                   help="the two columns' titles")
    d = sub.add_parser("doctor", help="what gpuslack finds here and what it will do; each problem with its fix",
                       usage="python -m gpuslack doctor [--json] [--conf key:value,...] [--out DIR] [-- COMMAND ...]")
    d.add_argument("--json", action="store_true", help="the same as one JSON document")
    d.add_argument("--conf", metavar="key:value,...", help="GPUSLACK_CONF items, as gpuslack run --conf adds them")
    d.add_argument("--out", metavar="DIR", help="the summary folder, as gpuslack run --out gives it")
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    command = []
    if argv[:1] == ["doctor"] and "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
    if argv[:1] == ["run"]:
        # Everything after the first "--" is the command, untouched; without
        # "--", the command starts at the first argument that is not ours.
        if "--" in argv:
            cut = argv.index("--")
            argv, command = argv[:cut], argv[cut + 1:]
        else:
            i = 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 1 if "=" in argv[i] or argv[i] in ("-h", "--help") else 2
            argv, command = argv[:i], argv[i:]
    args = _parser().parse_args(argv)
    if args.action == "run":
        return launcher.run(command, out=args.out, conf=args.conf)
    if args.action == "doctor":
        return doctor.run(json_output=args.json, conf=args.conf, out=args.out, command=command)
    if args.action == "compare":
        return compare.run(args.before, args.after, native_log=args.native_log, labels=tuple(args.labels))
    if args.action == "merge":
        return merge.run(args.paths, out=args.out, expected_busbw=args.expected_busbw)
    if args.action == "report":
        status = 0
        for path in args.files:
            try:
                sys.stdout.write(report.format_text(path))
            except report.ReportError as e:
                print("gpuslack report: %s" % e, file=sys.stderr)
                status = 2
                if isinstance(e, report.NoLibrary):
                    break  # the same line for every file would say nothing more
        return status
    try:
        print(_lib.library_path())
    except _lib.LibraryNotFound as e:
        print("gpuslack: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

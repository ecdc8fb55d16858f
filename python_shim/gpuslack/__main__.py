"""python -m gpuslack: run a command under gpuslack, or print a summary file.

    python -m gpuslack run [--out DIR] [--conf key:value,...] -- COMMAND ...
    python -m gpuslack report FILE...
    python -m gpuslack library        # the libgpuslack.so this package uses

Exit status: run passes the command's through (128+N for signal N);
report gives 2 when a file is missing or is not a summary, or when no
libgpuslack.so is found to render it with (one line on stderr says which and
why); usage errors give 2.
"""
import argparse
import sys

from . import _lib, launcher, report


def _parser():
    p = argparse.ArgumentParser(prog="python -m gpuslack", description="Measure and recover GPU time lost around "
                                "the model (gpuslack).")
    sub = p.add_subparsers(dest="action", metavar="{run,report,library}")
    sub.required = True
    r = sub.add_parser("run", help="run COMMAND under gpuslack (LD_PRELOAD) and say where its summary is",
                       usage="python -m gpuslack run [--out DIR] [--conf key:value,...] -- COMMAND ...")
    r.add_argument("--out", metavar="DIR", help="folder for the summary files (default: ./gpuslack-out)")
    r.add_argument("--conf", metavar="key:value,...",
                   help="GPUSLACK_CONF items, after any inherited ones (e.g. allocator:vmm,top_call_sites:10)")
    rep = sub.add_parser("report", help="print summary JSON files as text")
    rep.add_argument("files", nargs="+", metavar="FILE")
    sub.add_parser("library", help="print the path of the libgpuslack.so this package uses")
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    command = []
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

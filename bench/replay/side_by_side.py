#!/usr/bin/env python3
"""gpuslack's allocator beside torch expandable_segments, trace by trace.

A quick check between goals runs: every trace replayed by gpuslack's
defaults (bench/trace_replay --tsv, 80 GB simulated device) set beside the
same event streams replayed by PyTorch's allocator with
expandable_segments:True (peers.py's own torch child), one line per trace:
peak reserved (MiB), driver calls (every cuMem*/cudaMalloc call the
simulated device counts), allocation p99 (ns; torch's timed from Python),
and the failed allocations. A '*' marks a trace over torch (p99: over 2x).
The last line counts the traces that meet each row of issue 28's goals and
the minimalloc sum's ratio. `scripts/bench-peers.sh --goals` remains the
measurement of record; this is the same comparison without the pressure
bisection, the latency loops and the report (about a minute).

  python3 bench/replay/side_by_side.py --build build --torch-python PY [--traces PATH]... [-v]
      [--torch-rows FILE]   (torch's rows, written if missing, read if there: torch is
                             replayed once while gpuslack's side is rebuilt and rerun)

-v adds each side's per-call breakdown. PY: scripts/torch-env.sh | tail -n1.
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--torch-python", required=True)
    ap.add_argument("--traces", action="append")
    ap.add_argument("--torch-rows")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    traces = args.traces or [os.path.join(ROOT, "..", "shared", "traces"), os.path.join(ROOT, "bench", "traces")]
    with tempfile.TemporaryDirectory() as tmp:
        streams = peers.convert(traces, tmp)
        ours = peers.gpuslack_replay(args.build, streams, [])
        if args.torch_rows and os.path.exists(args.torch_rows):
            with open(args.torch_rows) as f:
                theirs = json.load(f)
        else:
            theirs = peers.torch_child(args.build, args.torch_python, "expandable_segments:True",
                                       ["--worker", "replay", *streams])[:-1]
            if args.torch_rows:
                with open(args.torch_rows, "w") as f:
                    json.dump(theirs, f)
    torch = {r["trace"]: r for r in theirs}
    met = {"peak": 0, "calls": 0, "p99": 0}
    calls_sum = [0, 0]
    mm = [0, 0]
    for r in ours:
        t = torch[r["trace"]]
        peak, tpeak = r["peak_reserved"] >> 20, t["peak_reserved"] >> 20
        calls, tcalls = sum(r["calls"].values()), sum(t["calls"].values())
        p99, tp99 = r["alloc_p99_ns"], t["alloc_p99_ns"]
        ok = {"peak": peak <= tpeak, "calls": calls <= tcalls, "p99": p99 <= 2 * tp99}
        for k, v in ok.items():
            met[k] += v
        calls_sum[0] += calls
        calls_sum[1] += tcalls
        if r["trace"].startswith("minimalloc"):
            mm[0] += r["peak_reserved"]
            mm[1] += t["peak_reserved"]
        mark = {k: "" if v else "*" for k, v in ok.items()}
        line = "%-26s peak %5d/%5d%-1s calls %4d/%4d%-1s p99 %8d/%8d%-1s failed %d" % (
            r["trace"], peak, tpeak, mark["peak"], calls, tcalls, mark["calls"], p99, tp99, mark["p99"], r["failed"])
        if args.v:
            line += "  gpuslack %s; torch %s" % (r["calls"], t["calls"])
        print(line)
    n = len(ours)
    print("peak met %d/%d; calls met %d/%d (%d against %d); p99 met %d/%d; minimalloc sum %s" % (
        met["peak"], n, met["calls"], n, calls_sum[0], calls_sum[1], met["p99"], n,
        "%.3fx" % (mm[0] / mm[1]) if mm[1] else "- (no minimalloc trace)"))


if __name__ == "__main__":
    main()

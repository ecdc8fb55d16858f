#!/usr/bin/env python3
"""Runs nvtx_ranges_probe under nvtx_recorder and checks what was recorded.

Usage: check_recording.py --probe P --recorder R --out FILE --mode record|disabled

record:   the gpuslack domain holds exactly the ranges and the mark that the
          probe's drive() makes (ranges_test.cc), balanced on each thread,
          with category names, payloads and one colour per category.
disabled: the tool was attached (it saw the probe's own "probe" mark in the
          global domain) but nothing in the gpuslack domain.
Exits 1 with one line per problem.
"""
import argparse
import json
import os
import subprocess
import sys

BIG = (1 << 40) + 3

# (event, message, message_type, category, category_name, payload, depth)
# on the main thread, in order. Registered calls carry registered strings;
# the call whose id is out of the table's range, its name as ASCII.
MAIN_THREAD = [
    ("push", "cudaMalloc", "registered", 1, "allocation", 4096, 1),
    ("push", "cudaMemcpy", "registered", 2, "copies", BIG, 2),
    ("pop", "cudaMemcpy", "registered", 2, "copies", BIG, 2),
    ("pop", "cudaMalloc", "registered", 1, "allocation", 4096, 1),
    ("push", "cudaStreamSynchronize", "registered", 4, "waiting for the GPU", 0, 1),
    ("pop", "cudaStreamSynchronize", "registered", 4, "waiting for the GPU", 0, 1),
    ("push", "cuOutOfRange", "ascii", 5, "other", 17, 1),
    ("pop", "cuOutOfRange", "ascii", 5, "other", 17, 1),
    ("mark", "OOM retry", "ascii", 0, "", None, 0),
]
OTHER_THREAD = [
    ("push", "cudaMalloc", "registered", 1, "allocation", 7, 1),
    ("pop", "cudaMalloc", "registered", 1, "allocation", 7, 1),
]


def key(e):
    return (e["event"], e["message"], e["message_type"], e["category"], e["category_name"],
            e["payload"], e["depth"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--recorder", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=["record", "disabled"], required=True)
    args = ap.parse_args()

    if os.path.exists(args.out):
        os.remove(args.out)
    env = dict(os.environ, NVTX_INJECTION64_PATH=args.recorder, NVTX_RECORDER_OUT=args.out)
    run = subprocess.run([args.probe, args.mode], env=env, timeout=50)
    problems = []
    if run.returncode != 0:
        problems.append(f"probe exited with {run.returncode}")
    if not os.path.exists(args.out):
        print(f"FAIL: the recorder wrote no {args.out} (was it loaded?)")
        return 1
    with open(args.out) as f:
        events = [json.loads(line) for line in f if line.strip()]

    probe_marks = [e for e in events if e["event"] == "mark" and e["domain"] == "" and e["message"] == "probe"]
    if len(probe_marks) != 1:
        problems.append(f"expected one 'probe' mark in the global domain, got {len(probe_marks)}: tool not attached?")
    main_tid = probe_marks[0]["tid"] if probe_marks else None

    ours = [e for e in events if e["domain"] == "gpuslack"]
    others = [e for e in events if e["domain"] not in ("", "gpuslack")]
    if others:
        problems.append(f"events in unexpected domains: {others}")

    if args.mode == "disabled":
        if ours:
            problems.append(f"disabled, yet {len(ours)} events in the gpuslack domain, first: {ours[0]}")
    else:
        main_events = [key(e) for e in ours if e["tid"] == main_tid]
        if main_events != MAIN_THREAD:
            problems.append("main thread recorded:\n  " + "\n  ".join(map(str, main_events)) +
                            "\nexpected:\n  " + "\n  ".join(map(str, MAIN_THREAD)))
        other_tids = sorted({e["tid"] for e in ours if e["tid"] != main_tid})
        if len(other_tids) != 1:
            problems.append(f"expected events from one other thread, got threads {other_tids}")
        else:
            other_events = [key(e) for e in ours if e["tid"] == other_tids[0]]
            if other_events != OTHER_THREAD:
                problems.append(f"other thread recorded {other_events}, expected {OTHER_THREAD}")
        # Balanced on every thread: each pop closes an open range.
        for tid in {e["tid"] for e in ours}:
            depth = 0
            for e in (e for e in ours if e["tid"] == tid):
                depth += {"push": 1, "pop": -1}.get(e["event"], 0)
                if depth < 0 or (e["event"] == "pop" and e["depth"] == 0):
                    problems.append(f"thread {tid}: pop with no open range")
                    break
            if depth > 0:
                problems.append(f"thread {tid}: {depth} ranges left open")
        # One colour per category, distinct across categories.
        colors = {}
        for e in ours:
            if e["event"] != "push":
                continue
            if e["color"] is None:
                problems.append(f"push without a colour: {e}")
            elif colors.setdefault(e["category"], e["color"]) != e["color"]:
                problems.append(f"category {e['category']} has colours {colors[e['category']]} and {e['color']}")
        if len(set(colors.values())) != len(colors):
            problems.append(f"categories share colours: {colors}")

    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"ok: {len(events)} events, {len(ours)} in the gpuslack domain ({args.mode})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tests of the trace replay (bench/replay/trace_events.py, bench/trace_replay).

    trace_events_test.py            (ctest: bench.trace_events)

Environment: TRACE_REPLAY, the built bench/trace_replay (the replay test is
skipped without it); GPUSLACK_TRACES, the shared trace folder (default
../shared/traces from the repository root; the tests of real files are
skipped without it). The simulated device's size is set here.
"""

import collections
import io
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "replay", "trace_events.py")
TRACES = os.environ.get("GPUSLACK_TRACES", os.path.join(ROOT, "..", "shared", "traces"))
MINIMALLOC_A = os.path.join(TRACES, "minimalloc", "A.1048576.csv")
sys.path.insert(0, os.path.dirname(SCRIPT))
import trace_events  # noqa: E402


def run_script(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


def events(stream):
    """(header dict, [event tuples]) of an EventStream."""
    out = io.StringIO()
    stream.write(out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "# gpuslack-events 1", lines[0]
    header = dict(l[2:].split(" ", 1) for l in lines[1:] if l.startswith("# "))
    return header, [tuple(l.split()) for l in lines[1:] if not l.startswith("#")]


class Custom:  # a class a pickle must name to be loaded
    pass


class RefusesClasses(unittest.TestCase):
    def check_refused(self, obj):
        with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
            f.write(pickle.dumps(obj))
            f.flush()
            r = run_script(f.name)
        self.assertEqual(1, r.returncode)
        self.assertEqual("", r.stdout)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(1, len(lines), r.stderr)
        self.assertIn("refused", lines[0])
        return lines[0]

    def test_a_library_class(self):
        self.assertIn("collections.OrderedDict", self.check_refused(collections.OrderedDict(segments=[])))

    def test_a_class_inside_plain_data(self):
        line = self.check_refused({"segments": [], "device_traces": [[Custom()]]})
        self.assertIn("Custom", line)

    def test_plain_data_that_is_not_a_snapshot(self):
        with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
            f.write(pickle.dumps([1, 2, 3]))
            f.flush()
            r = run_script(f.name)
        self.assertEqual(1, r.returncode)
        self.assertEqual(1, len(r.stderr.strip().splitlines()))
        self.assertIn("not a PyTorch memory snapshot", r.stderr)

    def test_garbage(self):
        with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
            f.write(b"\x80\x04garbage")
            f.flush()
            r = run_script(f.name)
        self.assertEqual(1, r.returncode)
        self.assertEqual(1, len(r.stderr.strip().splitlines()))


class PyTorchSnapshot(unittest.TestCase):
    def test_a_trace_that_begins_mid_run(self):
        # At the end: one segment of 4 MiB holding a live block (0x100, made
        # before the trace) and one the trace made (0x300). The trace frees
        # 0x200 (live at its start) and adds a 2 MiB segment, then frees it.
        snap = {
            "segments": [{"device": 0, "total_size": 4 << 20, "stream": 0, "blocks": [
                {"address": 0x100, "size": 1024, "requested_size": 1000, "state": "active_allocated"},
                {"address": 0x300, "size": 512, "requested_size": 512, "state": "active_allocated"},
                {"address": 0x500, "size": 512, "requested_size": 512, "state": "inactive"}]}],
            "device_traces": [[
                {"action": "free_requested", "addr": 0x200, "size": 700, "stream": 7},
                {"action": "free_completed", "addr": 0x200, "size": 700, "stream": 7},
                {"action": "segment_alloc", "addr": 0x9000, "size": 2 << 20, "stream": 0},
                {"action": "alloc", "addr": 0x300, "size": 512, "stream": 0},
                {"action": "free_requested", "addr": 0x999, "size": 64, "stream": 0},  # never seen... but live at start
                {"action": "free_requested", "addr": 0x999, "size": 64, "stream": 0},  # a second time: dropped
                {"action": "segment_free", "addr": 0x9000, "size": 2 << 20, "stream": 0},
            ]],
        }
        header, ev = events(trace_events.convert(pickle.dumps(snap), "auto", "t"))
        self.assertEqual(str(4 << 20), header["pytorch_reserved_at_start"])
        self.assertEqual(str(6 << 20), header["pytorch_peak_reserved"])
        self.assertEqual("3", header["seeded"])
        self.assertEqual("1", header["dropped_frees"])
        self.assertEqual(
            [("a", "0", "1000", "0"), ("a", "1", "700", "7"), ("a", "2", "64", "0"),
             ("f", "1"), ("a", "3", "512", "0"), ("f", "2")], ev)

    def test_the_shared_trace(self):
        path = os.path.join(TRACES, "opt-finetune.pickle")
        if not os.path.exists(path):
            self.skipTest("no " + path)
        with open(path, "rb") as f:
            header, ev = events(trace_events.convert(f.read(), "auto", "opt"))
        self.assertEqual("1897922560", header["pytorch_peak_reserved"])  # the 61 segments of its end state
        self.assertEqual("0", header["seeded"])  # the ring buffer had not wrapped
        self.assertEqual(7946 + 7549, len(ev))


class RmmLog(unittest.TestCase):
    LOG = (
        "Thread,Time,Action,Pointer,Size,Stream\n"
        "140573312345856,10:11:12.000001,allocate,0x7f8a40000000,1024,0\n"
        "140573312345856,10:11:12.000002,allocate,0x7f8a40000400,2048,0x55d0c0a1b2c0\n"
        "140573312345857,10:11:12.000003,allocate failure,(nil),99999999999,0\n"
        "140573312345856,10:11:12.000004,free,0x7f8a40000000,1024,0\n"
        "140573312345856,10:11:12.000005,free,0x7f8a40001000,64,0\n"
        "140573312345856,10:11:12.000006,allocate,0x7f8a40000000,512,0\n"
    )

    def test_a_small_log(self):
        header, ev = events(trace_events.convert(self.LOG.encode(), "auto", "rmm"))
        self.assertEqual("rmm-log", header["source"])
        self.assertEqual("1", header["skipped"])  # the allocate failure
        self.assertEqual("1", header["dropped_frees"])  # 0x7f8a40001000 was never allocated
        self.assertNotIn("pytorch_peak_reserved", header)
        self.assertEqual(
            [("a", "0", "1024", "0"), ("a", "1", "2048", str(0x55D0C0A1B2C0)), ("f", "0"), ("a", "2", "512", "0")], ev)

    def test_bad_logs_get_one_line(self):
        bad = [
            "Thread,Time,Action,Pointer,Size\n1,00:00:00.0,allocate,0x1,1\n",  # not RMM's header
            "Thread,Time,Action,Pointer,Size,Stream\n1,00:00:00.0,deallocate,0x1,1,0\n",  # RMM writes free
            "Thread,Time,Action,Pointer,Size,Stream\n1,00:00:00.0,allocate,0xZZ,1,0\n",
            "Thread,Time,Action,Pointer,Size,Stream\n1,00:00:00.0,allocate,0x1\n",
        ]
        for text in bad:
            with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
                f.write(text)
                f.flush()
                r = run_script("--format", "rmm", f.name)
            self.assertEqual(1, r.returncode, text)
            self.assertEqual(1, len(r.stderr.strip().splitlines()), r.stderr)
            self.assertEqual("", r.stdout)


class Minimalloc(unittest.TestCase):
    def test_frees_come_before_allocations_at_equal_times(self):
        text = "id,lower,upper,size\n0,0,10,100\n1,10,20,200\n2,0,20,300\n"
        _, ev = events(trace_events.convert(text.encode(), "auto", "m"))
        self.assertEqual([("a", "0", "100", "0"), ("a", "1", "300", "0"), ("f", "0"),
                          ("a", "2", "200", "0"), ("f", "2"), ("f", "1")], ev)

    def test_a_real_problem(self):
        if not os.path.exists(MINIMALLOC_A):
            self.skipTest("no " + MINIMALLOC_A)
        r = run_script("--scale", "1024", MINIMALLOC_A)
        self.assertEqual(0, r.returncode, r.stderr)
        with open(MINIMALLOC_A) as f:
            rows = list(f)[1:]
        lines = r.stdout.splitlines()
        allocs = [l.split() for l in lines if l.startswith("a ")]
        frees = [l for l in lines if l.startswith("f ")]
        self.assertEqual(len(rows), len(allocs))
        self.assertEqual(len(rows), len(frees))
        self.assertIn("# scale 1024", lines)
        self.assertEqual(sorted(int(row.split(",")[3]) * 1024 for row in rows), sorted(int(a[2]) for a in allocs))
        # Replayed by hand: live bytes never exceed the problem's capacity,
        # and reach it (these problems are tight).
        live, peak, size = 0, 0, {}
        for l in lines:
            p = l.split()
            if p[0] == "a":
                size[p[1]] = int(p[2])
                live += int(p[2])
            elif p[0] == "f":
                live -= size[p[1]]
            peak = max(peak, live)
        self.assertEqual(1048576 * 1024, peak)


class Replay(unittest.TestCase):
    """minimalloc A, sizes x1024 (a 1 GiB working set: 512 granules), through the allocator."""

    @classmethod
    def setUpClass(cls):
        replay = os.environ.get("TRACE_REPLAY")
        if not replay or not os.path.exists(replay) or not os.path.exists(MINIMALLOC_A):
            raise unittest.SkipTest("TRACE_REPLAY or the minimalloc traces missing")
        with tempfile.TemporaryDirectory() as tmp:
            stream = os.path.join(tmp, "a.events")
            r = run_script("--scale", "1024", "-o", stream, MINIMALLOC_A)
            assert r.returncode == 0, r.stderr
            env = dict(os.environ, GPUSIM_DEVICE_MEMORY="16G")
            r = subprocess.run([replay, "--tsv", stream], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        head, row = (l.split("\t") for l in r.stdout.splitlines())
        cls.row = dict(zip(head, row))
        print("\nminimalloc A x1024: utilization %s, peak reserved %s, granules %s / %s"
              % (cls.row["utilization"], cls.row["peak_reserved"], cls.row["granules_mapped"],
                 cls.row["granules_unmapped"]), file=sys.stderr)

    def test_every_request_is_served(self):
        self.assertEqual("0", self.row["failed"])
        self.assertEqual(str(1 << 30), self.row["ideal_peak"])
        self.assertEqual(str(1 << 30), self.row["peak_allocated"])  # sizes are multiples of 512 KiB

    # The goal, not met yet (0.247): a stream-less free is reusable
    # only after the next miss has closed its epoch and a later allocation
    # found the epoch's events done, so the miss that needs the memory maps
    # new granules; and cached granules are never moved to where a new block
    # lands, nor trimmed before mapping (bench/README.md, "Trace replay").
    # When the allocator meets it this test passes unexpectedly, which fails
    # the run: then remove the decorator.
    @unittest.expectedFailure
    def test_utilization_goal(self):
        self.assertGreaterEqual(float(self.row["utilization"]), 0.97)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""The recorder of real models' traces end to end (ctest: torch.record_traces,
Release builds with the pinned torch; tests/python/torch_sim.cmake):
bench/replay/record_torch.py records its `tiny` model with real torch on the
simulated device, trace_events.py converts the snapshot, and
bench/trace_replay replays it through gpuslack's allocator.

Environment (set by ctest): TORCH_PYTHON (the pinned torch's Python),
BUILD_DIR (a Release build with trace_replay and the simulated libraries).
A missing one fails the test, saying what is missing.
"""
import gzip
import os
import pickle
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDER = os.path.join(ROOT, "bench", "replay", "record_torch.py")
CONVERTER = os.path.join(ROOT, "bench", "replay", "trace_events.py")


def need(name):
    value = os.environ.get(name)
    if not value or not os.path.exists(value):
        sys.exit("record_torch_test: %s is not set or missing (%r); ctest sets it (tests/python/torch_sim.cmake)"
                 % (name, value))
    return value


class RecordTiny(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = need("BUILD_DIR")
        cls.torch_python = need("TORCH_PYTHON")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_ = subprocess.run([sys.executable, RECORDER, "--build", cls.build, "--torch-python", cls.torch_python,
                                   "--out", cls.tmp.name, "--steps", "2", "tiny"], capture_output=True, text=True,
                                  timeout=240)
        cls.trace = os.path.join(cls.tmp.name, "tiny.pickle.gz")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_recorder_writes_a_gzipped_snapshot_without_frames(self):
        self.assertEqual(0, self.run_.returncode, self.run_.stderr[-3000:])
        self.assertRegex(self.run_.stdout, r"tiny: 2 steps, \d+ events")
        with open(self.trace, "rb") as f:
            snap = pickle.loads(gzip.decompress(f.read()))
        events = snap["device_traces"][0]
        actions = {e["action"] for e in events}
        self.assertTrue({"alloc", "free_requested", "segment_alloc"} <= actions, actions)
        self.assertFalse(any("frames" in e for e in events))
        # Two training steps of a model: hundreds of requests, not a handful.
        self.assertGreater(sum(e["action"] == "alloc" for e in events), 200)

    def test_the_trace_converts_and_replays_through_gpuslack(self):
        self.assertEqual(0, self.run_.returncode, self.run_.stderr[-3000:])
        stream = os.path.join(self.tmp.name, "tiny.events")
        r = subprocess.run([sys.executable, CONVERTER, "-o", stream, self.trace], capture_output=True, text=True)
        self.assertEqual(0, r.returncode, r.stderr)
        with open(stream) as f:
            header = dict(l[2:].strip().split(" ", 1) for l in f if l.startswith("# ") and " " in l[2:].strip())
        # Recorded from before the first tensor: nothing to seed, no free of an unseen block.
        self.assertEqual("0", header["seeded"])
        self.assertEqual("0", header["dropped_frees"])
        self.assertGreater(int(header["pytorch_peak_reserved"]), 0)
        env = dict(os.environ, GPUSIM_DEVICE_MEMORY="8G",
                   LD_LIBRARY_PATH=os.path.join(self.build, "simcuda"), GPUSLACK_CONF="text_summary:off")
        r = subprocess.run([os.path.join(self.build, "bench", "trace_replay"), "--tsv", stream], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(0, r.returncode, r.stderr)
        head, row = (l.split("\t") for l in r.stdout.splitlines()[:2])
        row = dict(zip(head, row))
        self.assertEqual("tiny", row["trace"])
        self.assertEqual("0", row["failed"])
        ideal = int(row["ideal_peak"])
        # The recorder's own figure: torch's peak allocated (512-byte rounded
        # blocks) is at least the trace's peak live bytes, and not far above.
        m = re.search(r"peak allocated (\d+) MiB", self.run_.stdout)
        torch_peak = int(m.group(1)) << 20
        self.assertGreater(ideal, 0)
        self.assertLessEqual(ideal, torch_peak + (1 << 20))
        self.assertGreater(ideal, 0.8 * torch_peak)
        self.assertGreaterEqual(int(row["peak_reserved"]), ideal)


if __name__ == "__main__":
    unittest.main()

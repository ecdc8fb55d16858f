#!/usr/bin/env python3
"""The recorded traces of real models (bench/traces/) and how they are read
(ctest: bench.recorded_traces):

- gzip: trace_events.py reads a gzipped snapshot as the same snapshot
  unzipped, and a broken gzip file gets one line and exit status 1;
- every bench/traces/*.pickle.gz is named in bench/traces/README.md (and
  every trace the README names is there), is a model that
  bench/replay/record_torch.py --list knows, stays within the size budget,
  converts with nothing seeded and no free of an unseen block (recorded from
  before the first tensor), and replays through bench/trace_replay with no
  failed allocation;
- peers.py's default trace set holds bench/traces beside ../shared/traces.

Environment: TRACE_REPLAY, the built bench/trace_replay (ctest sets it; a
missing one fails).
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
REPLAY_DIR = os.path.join(ROOT, "bench", "replay")
CONVERTER = os.path.join(REPLAY_DIR, "trace_events.py")
TRACES = os.path.join(ROOT, "bench", "traces")
BUDGET = 12 << 20  # all of bench/traces together (issue 28)
sys.path.insert(0, REPLAY_DIR)
import peers  # noqa: E402
import record_torch  # noqa: E402


def recorded():
    return sorted(n for n in os.listdir(TRACES) if n.endswith(".pickle.gz"))


def convert(path, out):
    return subprocess.run([sys.executable, CONVERTER, "-o", out, path], capture_output=True, text=True)


def header(stream):
    with open(stream) as f:
        return dict(l[2:].strip().split(" ", 1) for l in f if l.startswith("# ") and " " in l[2:].strip())


SNAPSHOT = {"segments": [], "device_traces": [[
    {"action": "segment_alloc", "addr": 0, "size": 2 << 20, "stream": 0},
    {"action": "alloc", "addr": 0, "size": 4096, "stream": 0},
    {"action": "alloc", "addr": 4096, "size": 8192, "stream": 0},
    {"action": "free_requested", "addr": 0, "size": 4096, "stream": 0},
    {"action": "free_completed", "addr": 0, "size": 4096, "stream": 0},
    {"action": "free_requested", "addr": 4096, "size": 8192, "stream": 0},
    {"action": "segment_free", "addr": 0, "size": 2 << 20, "stream": 0},
]]}


class Gzip(unittest.TestCase):
    def test_a_gzipped_snapshot_reads_as_the_snapshot(self):
        with tempfile.TemporaryDirectory() as tmp:
            plain, zipped = os.path.join(tmp, "s.pickle"), os.path.join(tmp, "s.pickle.gz")
            with open(plain, "wb") as f:
                f.write(pickle.dumps(SNAPSHOT))
            with open(zipped, "wb") as f:
                f.write(gzip.compress(pickle.dumps(SNAPSHOT)))
            outs = []
            for path in (plain, zipped):
                out = path + ".events"
                r = convert(path, out)
                self.assertEqual(0, r.returncode, r.stderr)
                with open(out) as f:
                    outs.append(f.read())
            self.assertEqual(outs[0], outs[1])
            self.assertIn("\na 0 4096 0\na 1 8192 0\nf 0\nf 1\n", outs[1])

    def test_a_broken_gzip_file_gets_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.pickle.gz")
            with open(path, "wb") as f:
                f.write(gzip.compress(pickle.dumps(SNAPSHOT))[:40])
            r = convert(path, os.path.join(tmp, "out"))
            self.assertEqual(1, r.returncode)
            self.assertEqual(1, len(r.stderr.strip().splitlines()), r.stderr)
            self.assertIn("broken gzip", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "out")))


class RecordedTraces(unittest.TestCase):
    def test_the_readme_names_every_trace_and_only_those(self):
        with open(os.path.join(TRACES, "README.md")) as f:
            readme = f.read()
        named = sorted(set(re.findall(r"`([\w.-]+\.pickle\.gz)`", readme)))
        self.assertEqual(recorded(), named)
        self.assertGreaterEqual(len(named), 5)

    def test_every_trace_is_a_model_of_the_recorder(self):
        for name in recorded():
            self.assertIn(name[:-len(".pickle.gz")], record_torch.MODELS)

    def test_the_traces_stay_within_the_budget(self):
        sizes = {n: os.path.getsize(os.path.join(TRACES, n)) for n in recorded()}
        self.assertLessEqual(sum(sizes.values()), BUDGET, sizes)

    def test_every_trace_converts_whole_and_replays(self):
        replay = os.environ.get("TRACE_REPLAY")
        self.assertTrue(replay and os.path.exists(replay), "TRACE_REPLAY is not set or missing: %r" % replay)
        with tempfile.TemporaryDirectory() as tmp:
            streams = []
            for name in recorded():
                out = os.path.join(tmp, name + ".events")
                r = convert(os.path.join(TRACES, name), out)
                self.assertEqual(0, r.returncode, r.stderr)
                h = header(out)
                self.assertEqual(name[:-len(".pickle.gz")], h["name"])
                self.assertEqual(("0", "0", "0"), (h["seeded"], h["dropped_frees"], h["implied_frees"]), name)
                self.assertGreater(int(h["pytorch_peak_reserved"]), 100 << 20, name)  # large enough to matter
                streams.append(out)
            env = dict(os.environ, GPUSIM_DEVICE_MEMORY="80G", GPUSLACK_CONF="text_summary:off")
            r = subprocess.run([replay, "--tsv", *streams], env=env, capture_output=True, text=True, timeout=600)
            self.assertEqual(0, r.returncode, r.stderr)
            lines = r.stdout.splitlines()
            head = lines[0].split("\t")
            rows = [dict(zip(head, l.split("\t"))) for l in lines[1:]]
            self.assertEqual(len(streams), len(rows))
            for row in rows:
                self.assertEqual("0", row["failed"], row["trace"])
                self.assertGreater(int(row["ideal_peak"]), 100 << 20, row["trace"])


class TraceSet(unittest.TestCase):
    def test_the_default_trace_set_holds_bench_traces(self):
        saved = os.environ.pop("GPUSLACK_TRACES", None)
        try:
            self.assertIn(TRACES, [os.path.abspath(t) for t in peers.default_traces()])
            self.assertEqual(2, len(peers.default_traces()))
            os.environ["GPUSLACK_TRACES"] = "/elsewhere"
            self.assertEqual(["/elsewhere"], peers.default_traces())
        finally:
            os.environ.pop("GPUSLACK_TRACES", None)
            if saved is not None:
                os.environ["GPUSLACK_TRACES"] = saved

    def test_a_missing_trace_folder_gets_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(SystemExit) as e:
                peers.convert([os.path.join(tmp, "nowhere")], tmp)
        self.assertRegex(str(e.exception), r"^peers.py: no trace folder or file .*nowhere")

    def test_peers_converts_the_gzipped_traces(self):
        with tempfile.TemporaryDirectory() as tmp:
            streams = peers.convert([TRACES], tmp)
        self.assertEqual(len(recorded()), len(streams))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Tests of bench/trace_replay's configuration, streams and pressure.

    replay_test.py            (ctest: bench.replay)

Environment: TRACE_REPLAY, the built bench/trace_replay (required). The
traces are the repository's own: tests/bench/two_streams.events (three
streams) and tests/bench/pressure_small.csv (a minimalloc-format problem
whose peak live is ~100 MiB once scaled x1024). The simulated device's size
is set per run here.
"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REPLAY = os.environ.get("TRACE_REPLAY", "")
TWO_STREAMS = os.path.join(HERE, "two_streams.events")
PRESSURE_CSV = os.path.join(HERE, "pressure_small.csv")
MiB = 1 << 20


def replay(stream, device="1G", conf=None, args=(), timeout=120, tsv=True):
    """(rows as dicts, or the Markdown text; stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "GPUSLACK_CONF"}
    env["GPUSIM_DEVICE_MEMORY"] = device
    if conf is not None:
        env["GPUSLACK_CONF"] = conf
    r = subprocess.run([REPLAY, *(["--tsv"] if tsv else []), *args, stream], capture_output=True, text=True,
                       env=env, timeout=timeout)
    assert r.returncode == 0, r.stderr
    if not tsv:
        return r.stdout, r.stderr
    lines = r.stdout.splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]], r.stderr


def setUpModule():
    if not REPLAY or not os.path.exists(REPLAY):
        raise RuntimeError("TRACE_REPLAY (the built bench/trace_replay) is needed")
    global TMP, PRESSURE
    TMP = tempfile.TemporaryDirectory()
    PRESSURE = os.path.join(TMP.name, "pressure.events")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "replay", "trace_events.py"), "--scale", "1024",
                        "-o", PRESSURE, PRESSURE_CSV], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


class Configuration(unittest.TestCase):
    """GPUSLACK_CONF as libgpuslack.so reads it; the flags override it."""

    @classmethod
    def setUpClass(cls):
        cls.default = replay(PRESSURE)[0][0]
        cls.limited = replay(PRESSURE, args=("--cache-limit-mb", "2"))[0][0]

    def key(self, row):
        return row["peak_reserved"], row["granules_mapped"], row["granules_unmapped"]

    def test_the_cache_limit_changes_the_replay(self):  # or the tests below prove nothing
        self.assertNotEqual(self.key(self.default), self.key(self.limited))

    def test_cache_limit_from_gpuslack_conf(self):
        row, err = replay(PRESSURE, conf="cache_limit_mb:2")
        self.assertEqual(self.key(self.limited), self.key(row[0]))
        self.assertEqual("", err)

    def test_a_flag_overrides_gpuslack_conf(self):
        row, _ = replay(PRESSURE, conf="cache_limit_mb:2", args=("--cache-limit-mb", "0"))
        self.assertEqual(self.key(self.default), self.key(row[0]))

    def test_map_chunk_from_gpuslack_conf(self):
        row, _ = replay(PRESSURE, conf="map_chunk_mb:0")
        calls = dict(c.split("=") for c in row[0]["driver_calls"].split(","))
        # One granule per handle: one cuMemMap per granule mapped (a handle is
        # created, or moved: GranuleMap's Note [Moving a page instead of making one]).
        self.assertEqual(row[0]["granules_mapped"], calls["cuMemMap"])
        self.assertLessEqual(int(calls["cuMemCreate"]), int(calls["cuMemMap"]))

    def test_a_bad_value_gets_the_librarys_one_line_error(self):
        row, err = replay(PRESSURE, conf="cache_limit_mb:banana")
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn("GPUSLACK_CONF: cache_limit_mb:banana is not a non-negative integer; using 0", err)
        self.assertEqual(self.key(self.default), self.key(row[0]))


class Streams(unittest.TestCase):
    """two_streams.events: blocks on two blocking streams and the legacy one."""

    @classmethod
    def setUpClass(cls):
        cls.row = replay(TWO_STREAMS)[0][0]

    def test_every_request_is_served(self):
        self.assertEqual("0", self.row["failed"])

    def test_one_real_stream_per_trace_stream(self):
        self.assertEqual("3", self.row["streams"])

    def test_a_stream_reuses_what_it_freed(self):
        self.assertGreater(int(self.row["stream_reuses"]), 0)
        # What crosses streams was fenced: events recorded (held ranges'
        # fences or free epochs).
        self.assertGreater(int(self.row["event_records"]), 0)

    def test_memory_crosses_streams_only_after_a_fence(self):
        # Each round S2 asks at once for the size S1 just freed: handed over
        # before an event was recorded, it would count as unfenced.
        self.assertGreater(int(self.row["cross_stream_reuses"]), 0)  # the check sees hand-overs
        self.assertEqual("0", self.row["cross_stream_unfenced"])
        self.assertEqual("0", self.row["gpu_timeouts"])

    def test_no_synchronization_without_pressure(self):
        # The replay's GPU model synchronizes before every allocation; those
        # are its own, not the allocator's, and not counted.
        for k in ("device_syncs", "stream_syncs", "event_syncs", "oom_retries"):
            self.assertEqual("0", self.row[k], k)


class Pressure(unittest.TestCase):
    """pressure_small: ~100 MiB of live blocks on devices too small and just big enough."""

    def test_too_small_a_device_fails_allocations_and_ends(self):
        # Before the GPU model had a bound this hung: the allocator waited in
        # cudaEventSynchronize on events the held stream kept back.
        (row,), err = replay(PRESSURE, device="64M", timeout=120)
        self.assertGreater(int(row["failed"]), 0)
        self.assertGreater(float(row["stall_s"]), 0)
        self.assertGreater(int(row["gpu_timeouts"]), 0)
        self.assertGreater(int(row["oom_retries"]), 0)
        self.assertLessEqual(int(row["peak_reserved"]), 64 * MiB)
        self.assertIn("out of memory", err)

    def test_a_tight_device_serves_everything(self):
        (row,), _ = replay(PRESSURE, device="192M", timeout=120)
        self.assertEqual("0", row["failed"])
        self.assertLessEqual(int(row["peak_reserved"]), 192 * MiB)
        self.assertGreater(int(row["ideal_peak"]), 96 * MiB)

    def test_stop_at_failure(self):
        (row,), _ = replay(PRESSURE, device="64M", args=("--stop-at-failure",), timeout=120)
        self.assertEqual("1", row["failed"])


class Markdown(unittest.TestCase):
    def test_the_table_has_the_pressure_columns(self):
        text, _ = replay(TWO_STREAMS, tsv=False)
        head, rule, row = text.splitlines()
        for column in ("failed", "stall", "fence waits (served)", "OOM retries", "epochs", "stream reuses",
                       "syncs device / stream / event", "driver calls"):
            self.assertIn("| %s |" % column, head)
        self.assertEqual(head.count("|"), row.count("|"))
        self.assertEqual(head.count("|"), rule.count("|"))


class PeerStreams(unittest.TestCase):
    """The peer replays each block on the stream the trace recorded, as
    trace_replay does (bench/replay/peers.py: read_stream, torch_streams)."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bench", "replay"))
        import peers
        self.peers = peers

    def test_read_stream_keeps_each_allocations_stream(self):
        _, events = self.peers.read_stream(TWO_STREAMS)
        streams = {e[3] for e in events if e[0]}
        self.assertEqual({0, 139887823030800, 139887823035936}, streams)
        self.assertEqual((True, 1, 8388608, 139887823030800), events[1])
        self.assertTrue(all(e[3] == 0 for e in events if not e[0]))

    def test_one_peer_stream_per_recorded_stream_and_the_legacy_one_for_0(self):
        made = []

        class Stream:  # torch.cuda.Stream's one attribute used
            def __init__(self):
                made.append(self)
                self.cuda_stream = 1000 + len(made)

        class Cuda:
            pass

        class Torch:
            cuda = Cuda()
        Torch.cuda.Stream = Stream
        handle = self.peers.torch_streams(Torch)
        self.assertEqual(0, handle(0))
        a, b = handle(139887823030800), handle(139887823035936)
        self.assertNotEqual(a, b)
        self.assertEqual(a, handle(139887823030800))
        self.assertEqual(2, len(made))


if __name__ == "__main__":
    unittest.main()

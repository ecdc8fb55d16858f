#!/usr/bin/env python3
"""Tests of the pressure table (bench/replay/pressure.py, peers.py --pressure).

    pressure_test.py            (ctest: bench.pressure)

The bisection against made-up allocators, then gpuslack's side end to end
on tests/bench/pressure_small.csv (~100 MiB of live blocks once scaled
x1024). Environment: BUILD_DIR, the build with bench/trace_replay and the
simulated libraries (required). torch's side: ctest torch.bench_pressure.
"""

import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "replay"))
import pressure  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30


class Bisect(unittest.TestCase):
    def allocator(self, needs):
        """fits() of an allocator that needs needs[t] bytes; records the batches."""
        self.batches = []

        def fits(probes):
            self.batches.append(dict(probes))
            return {t: size >= needs[t] for t, size in probes.items()}
        return fits

    def test_finds_the_smallest_size_within_the_resolution(self):
        ideals = {"a": GiB, "b": 300 * MiB, "c": 10 * MiB}
        needs = {"a": int(1.37 * GiB), "b": 301 * MiB, "c": 39 * MiB}
        found, probes = pressure.bisect(ideals, self.allocator(needs))
        for t in ideals:
            self.assertGreaterEqual(found[t], needs[t], t)
            self.assertLessEqual(found[t] - needs[t], pressure.resolution(ideals[t]) + MiB, t)
            self.assertEqual(0, found[t] % MiB)
        self.assertEqual(2 * MiB, pressure.resolution(10 * MiB))
        self.assertEqual(GiB // 32, pressure.resolution(GiB))
        self.assertEqual(probes, sum(len(b) for b in self.batches))
        # 4x first, then at most ceil(log2(3 * 32)) = 7 halvings per trace.
        self.assertLessEqual(len(self.batches), 8)
        self.assertEqual({t: pressure.round_mib(4 * i) for t, i in ideals.items()}, self.batches[0])

    def test_probes_run_in_lockstep_batches(self):
        ideals = {t: (i + 1) * 100 * MiB for i, t in enumerate("abcdef")}
        found, _ = pressure.bisect(ideals, self.allocator({t: 2 * i for t, i in ideals.items()}))
        self.assertGreater(len(self.batches[1]), 1)  # one batch, several traces: one torch child per round
        for t in ideals:
            self.assertLessEqual(found[t], 2 * ideals[t] + pressure.resolution(ideals[t]) + MiB)

    def test_a_trace_that_does_not_fit_4x(self):
        found, probes = pressure.bisect({"a": 100 * MiB, "b": 100 * MiB},
                                        self.allocator({"a": 500 * MiB, "b": 150 * MiB}))
        self.assertIsNone(found["a"])
        self.assertEqual(["a", "b"], sorted(self.batches[0]))
        self.assertTrue(all("a" not in b for b in self.batches[1:]))  # not probed again
        self.assertEqual("> 4x", pressure.cell(None, 100 * MiB))

    def test_fits_at_the_ideal(self):
        found, _ = pressure.bisect({"a": 64 * MiB}, self.allocator({"a": 64 * MiB}))
        self.assertLessEqual(found["a"], 64 * MiB + pressure.resolution(64 * MiB))


class ServedWherePeerServes(unittest.TestCase):
    IDEALS = {"a": 100 * MiB, "b": 100 * MiB}

    def test_met_on_every_trace(self):
        found = {"gpuslack": {"a": 104 * MiB, "b": 110 * MiB},
                 pressure.PEER: {"a": 104 * MiB, "b": 120 * MiB}}
        line = pressure.served_where_peer_serves(found, self.IDEALS)
        self.assertIn("2 of 2 traces.", line)

    def test_a_trace_the_peer_serves_on_less_is_named(self):
        found = {"gpuslack": {"a": 133 * MiB, "b": None},
                 pressure.PEER: {"a": 105 * MiB, "b": 120 * MiB}}
        line = pressure.served_where_peer_serves(found, self.IDEALS)
        self.assertIn("0 of 2 traces; larger on a (133 MiB (1.33x) against 105 MiB (1.05x)), b (> 4x", line)

    def test_a_trace_the_peer_cannot_serve_counts_as_met(self):
        found = {"gpuslack": {"a": None, "b": 110 * MiB}, pressure.PEER: {"a": None, "b": 110 * MiB}}
        self.assertIn("2 of 2", pressure.served_where_peer_serves(found, self.IDEALS))

    def test_nothing_without_the_peer(self):
        self.assertIsNone(pressure.served_where_peer_serves({"gpuslack": {"a": MiB, "b": MiB}}, self.IDEALS))


class GpuslackEndToEnd(unittest.TestCase):
    def test_pressure_table(self):
        build = os.environ.get("BUILD_DIR")
        if not build:
            raise RuntimeError("BUILD_DIR (the build with bench/trace_replay) is needed")
        r = subprocess.run([sys.executable, "-B", os.path.join(ROOT, "bench", "replay", "peers.py"), "--pressure",
                            "--gpuslack-only", "--build", build, "--traces",
                            os.path.join(HERE, "pressure_small.csv")], capture_output=True, text=True, timeout=600)
        self.assertEqual(0, r.returncode, r.stderr)
        row = [l for l in r.stdout.splitlines() if l.startswith("| pressure_small")]
        self.assertEqual(1, len(row), r.stdout)
        m = re.match(r"\| pressure_small ×1024 \| (\d+) MiB \| (\d+) MiB \(([\d.]+)x\) \|$", row[0])
        self.assertTrue(m, row[0])
        ideal, found, ratio = (float(g) for g in m.groups())
        self.assertEqual(100, ideal)
        # Between the ideal and 4x it; what the replay test's devices say:
        # 64 MiB fails, 192 MiB serves everything.
        self.assertGreater(found, 64)
        self.assertLessEqual(found, 192)
        self.assertGreaterEqual(ratio, 1.0)
        print("\n" + r.stdout, file=sys.stderr)


if __name__ == "__main__":
    unittest.main()

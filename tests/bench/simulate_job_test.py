#!/usr/bin/env python3
"""A real multi-process job on the simulated device (issue 16, point 7's inputs).

Runs scripts/simulate_job.py: 4 ranks of the demo (2 per simulated node), one process each, under
gpuslack, writing into one folder; rank 2's host work is delayed SLOW_MS every step. The ranks'
all-reduces meet across processes (the simulated NCCL's shared segment), so the other ranks wait for
rank 2 in every all-reduce, as on a cluster: in a synchronous job the straggler is the rank that
waits least in its collectives.

Checks that every rank succeeded (its all-reduce results checked each step by the demo) and wrote its
summary, that each summary counts every step's all-reduce, that rank 2's collective GPU time is
clearly the smallest, and that each other rank's is larger by about the delay times the steps (wide
margins: the host has two shared cores).

Environment: BUILD_DIR (set by CMake). Release only: sanitizer builds build no demo.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANKS, SLOW, SLOW_MS, STEPS = 4, 2, 150, 10


class SimulatedJob(unittest.TestCase):
    def test_the_slow_rank_waits_least_in_its_all_reduces(self):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, "-B", os.path.join(ROOT, "scripts", "simulate_job.py"),
                   "--build", os.environ["BUILD_DIR"], "--ranks", str(RANKS), "--ranks-per-node", "2",
                   "--slow-rank", str(SLOW), "--slow-ms", str(SLOW_MS), "--steps", str(STEPS), "--grad-mib", "1",
                   "--out", out, "--job-id", "ctest", "--conf", "collective_timing_every:1",
                   "--timeout", "240"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
            logs = ""
            for path in sorted(glob.glob(os.path.join(out, "launcher", "rank*.log"))):
                with open(path) as f:
                    logs += f"--- {path}\n" + f.read()[-3000:]
            self.assertEqual(0, r.returncode, r.stdout + r.stderr + logs)
            self.assertIn(f"summaries in {out}", r.stdout)
            gpu_s = {}
            for path in glob.glob(os.path.join(out, "*.json")):
                with open(path) as f:
                    doc = json.load(f)
                rows = [row for row in doc["collectives"]["rows"] if row["op"] == "all-reduce"]
                self.assertTrue(rows, path)
                self.assertEqual(STEPS, sum(row["count"] for row in rows), path)
                self.assertEqual(STEPS, sum(row["timed"] for row in rows), path)
                gpu_s[doc["rank"]] = sum(row["gpu_s"] for row in rows)
            self.assertEqual(set(range(RANKS)), set(gpu_s), f"a summary per rank: {os.listdir(out)}")
            delay_s = SLOW_MS / 1000 * STEPS
            slow = gpu_s[SLOW]
            for rank, seconds in gpu_s.items():
                if rank == SLOW:
                    continue
                self.assertLess(slow, 0.5 * seconds, gpu_s)
                self.assertGreater(seconds - slow, 0.5 * delay_s, gpu_s)
                self.assertLess(seconds - slow, 3.0 * delay_s, gpu_s)
            print("collective GPU time per rank (s):", {k: round(v, 3) for k, v in sorted(gpu_s.items())})


if __name__ == "__main__":
    unittest.main()

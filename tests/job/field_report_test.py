"""Issue 26's field report, end to end (scripts/collectives_compare.py): 8 real demo processes as 2 nodes x 4 GPUs
on the simulated fabric (NVLink 450 GB/s per direction within a node, 50 GB/s per GPU between, NCCL's default
Ring), under the libgpuslack.so of GPUSLACK_SO, with no `fabric` knob: gpuslack reads the links from the simulated
NVML and a sysfs fixture of the node's NICs, and NCCL's choice from its profiler plugin.

- before: the merged job report's first finding is collective_algorithm, with its fix as environment lines that
  every rank agrees on;
- after (the same job with the fix in every rank's environment): the collectives' GPU time falls by at least 80%
  of the finding's estimate, summed over the ranks, and no rank has the finding any more.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FieldReport(unittest.TestCase):
    def test_the_algorithm_is_the_first_finding_and_its_fix_recovers_its_estimate(self):
        build = os.path.dirname(os.environ["GPUSLACK_SO"])
        with tempfile.TemporaryDirectory(prefix="gpuslack-field-") as out:
            figures = os.path.join(out, "figures.json")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "collectives_compare.py"), "--build",
                                build, "--out", os.path.join(out, "runs"), "--json", figures],
                               capture_output=True, text=True, timeout=600)
            self.assertTrue(os.path.exists(figures), r.stdout[-3000:] + r.stderr[-3000:])
            with open(figures) as f:
                got = json.load(f)
            with open(os.path.join(out, "runs", "before-report", "job-report.json")) as f:
                job = json.load(f)
        msg = r.stdout[-3000:]
        self.assertEqual("collective_algorithm", got["first_finding"], msg)
        self.assertTrue(any(line.startswith("NCCL_ALGO=") for line in got["fix"]), msg)
        first = job["findings"][0]
        self.assertTrue(first["fix_check"]["same"], json.dumps(first)[:2000])
        self.assertEqual([], first["fix_check"]["differing"], json.dumps(first)[:2000])
        self.assertGreater(got["estimate_s"], 0, msg)
        self.assertGreaterEqual(got["recovered"], 0.8, msg)
        self.assertEqual([], got["after_still"], msg)
        self.assertEqual(0, r.returncode, msg)


if __name__ == "__main__":
    unittest.main()

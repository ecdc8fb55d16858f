#!/usr/bin/env python3
"""scripts/gpu-check.sh end to end on the simulated device: it must finish
within its budget, say that the device is the simulated one (in the JSON
and the Markdown), run every step it can here, and pass the conformance
suite, the benchmarks and the demo. Reduced sizes (the script chooses them
on the simulated device).

Environment (bench/CMakeLists.txt): BUILD_DIR.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Steps that must pass on the simulated device (the others must at least be
# recorded: trace_replay needs ../shared/traces, torch a torch install).
MUST_PASS = ("conformance", "hook_overhead_bench", "alloc_bench", "pinned_bench", "copy_bench", "demo_native",
             "demo_gpuslack", "timeline_overhead", "nccl")
ALL = MUST_PASS + ("trace_replay", "torch")


class GpuCheck(unittest.TestCase):
    def test_the_check_runs_end_to_end_on_the_simulated_device(self):
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            env["PATH"] = "/usr/bin:/bin"  # no nvidia-smi: the simulated device, whatever the machine
            t0 = time.monotonic()
            r = subprocess.run([os.path.join(ROOT, "scripts", "gpu-check.sh"), out, os.environ["BUILD_DIR"]],
                               env=env, capture_output=True, text=True, timeout=900)
            took = time.monotonic() - t0
            sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
            with open(os.path.join(out, "gpu-check.json")) as f:
                doc = json.load(f)
            with open(os.path.join(out, "gpu-check.md")) as f:
                md = f.read()
        self.assertLess(took, doc["budget_s"] + 60)
        self.assertEqual("gpuslack-gpu-check/1", doc["schema"])
        self.assertEqual("simulated", doc["device"])
        self.assertIn("simcuda", doc["libcudart"])
        self.assertTrue(doc["reduced"])
        self.assertIn("Simulated device", md)
        self.assertIn("Reduced sizes", md)
        steps = {s["name"]: s for s in doc["steps"]}
        self.assertEqual(sorted(ALL), sorted(steps))
        for s in doc["steps"]:
            self.assertIn(s["status"], ("passed", "failed", "timeout", "skipped"), s)
        for name in MUST_PASS:
            self.assertEqual("passed", steps[name]["status"], steps[name])
        conf = steps["conformance"]["results"]
        self.assertGreaterEqual(conf["tests"], 30)
        self.assertEqual(0, conf["failures"], conf["failed"])
        self.assertIn("simulated", conf["device_line"])
        self.assertIn("BM_", " ".join(steps["hook_overhead_bench"]["results"]["median_ns"]))
        self.assertGreater(steps["demo_native"]["results"]["median_step_ms"], 0)
        self.assertIn("lost", steps["demo_gpuslack"]["results"]["summary_first_line"])
        self.assertEqual(0 if all(s["status"] in ("passed", "skipped") for s in doc["steps"]) else 1, r.returncode)


if __name__ == "__main__":
    unittest.main()

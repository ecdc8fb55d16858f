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
             "demo_gpuslack", "timeline_overhead", "nccl", "topology", "driver_cupti_nvml")
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
        # What the driver, CUPTI and NVML answer (issue 29): the simulated
        # driver answers its exported functions, and gpuslack's hooks when
        # preloaded; CUPTI keeps buffers per thread, and 20 launching
        # threads lose nothing; NVML answers for the one device.
        p = steps["driver_cupti_nvml"]["results"]
        self.assertTrue(p["driver"]["all_exported"], p["driver"])
        self.assertTrue(all(r["hooked"] for r in p["driver_preloaded"]["rows"]), p["driver_preloaded"])
        self.assertEqual(1, p["cupti"]["per_thread_buffers"], p["cupti"])
        t = p["threads"]
        self.assertEqual(("measured", 0, 0), (t["status"], t["dropped_by_pool"], t["dropped_by_cupti"]), t)
        self.assertEqual(t["launched"], t["kernels_recorded"], t)
        self.assertEqual(0, p["nvml"]["init"], p["nvml"])
        self.assertGreaterEqual(len(p["nvml"]["devices"]), 1, p["nvml"])
        # The topology step (issue 26): two simulated GPUs with 18 NVLink 4
        # links each, and NCCL's choices as the profiler plugin heard them.
        topo = steps["topology"]["results"]
        self.assertIn("simulated", topo["simulated"])
        self.assertEqual(("nccl_profiler_app", 2), (topo["program"], topo["ranks"]))
        self.assertRegex(topo["nccl"]["version"], r"^2\.\d+\.\d+$")
        t = topo["topology"]
        self.assertEqual("read", t["status"], t)
        self.assertEqual([0, 1], [g["device"] for g in t["gpus"]], t)
        for g in t["gpus"]:
            self.assertEqual((18, 4, 450), (g["nvlink_links"], g["nvlink_generation"], g["nvlink_gbps"]), g)
        self.assertEqual((450, True), (t["links"]["intra_gbps"], t["links"]["intra_is_nvlink"]), t["links"])
        self.assertTrue(t["links"]["intra_from"].startswith("measured: NVML"), t["links"])
        coll = topo["collectives"]
        self.assertEqual("on (v6)", coll["profiler"])
        self.assertEqual(2 * 10 * 3, coll["profiler_records"])  # 2 ranks, 10 rounds of 3 collectives
        self.assertEqual(0, coll["profiler_dropped"])
        self.assertEqual({"all-reduce", "all-gather"}, {a["op"] for a in coll["algorithms"]})
        for a in coll["algorithms"]:  # the simulated NCCL's choice on this fabric (Ring, LL or Simple)
            self.assertTrue(a["algo"] and a["proto"], a)
            self.assertGreaterEqual(a["channels"], 1, a)
        self.assertEqual(3, len(coll["rows"]), coll["rows"])
        for row in coll["rows"]:
            self.assertTrue(row["algo"] and row["proto"], row)
            self.assertGreater(row["expected_busbw_gbps"], 0, row)  # the cost model on the measured NVLink
            self.assertTrue(row["best_algo"], row)
        self.assertEqual("(no nvidia-smi)", topo["nvidia_smi_topo"])
        self.assertIn("## topology", md)
        self.assertIn("NCCL profiler plugin: on (v6)", md)
        self.assertEqual(0 if all(s["status"] in ("passed", "skipped") for s in doc["steps"]) else 1, r.returncode)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""The findings on the simulated device: for each rule, a real program
(findings_app) run with libgpuslack.so preloaded that leaks the way the rule
names, whose JSON summary must hold the finding, and a near miss whose
summary must not (Note [A false finding is a bug] in lib/report/finding.h).
Its text summary, rendered from the JSON read back, shows the findings
right after the headline.

Run by ctest, one test method per ctest entry (tests/findings/CMakeLists.txt),
with GPUSLACK_SO, FINDINGS_APP, SCHEMA and VALIDATOR in the environment.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
from preload_harness import OutDirTest, run, summary_file  # noqa: E402

ENV = os.environ


# The simulated device runs each launched kernel this long (findings_app's
# step_kernel).
KERNEL_10MS = {"GPUSIM_COST_KERNEL_US": "10000"}


class Findings(OutDirTest):
    def findings(self, mode, conf=None, extra=None):
        """Runs findings_app MODE; returns (rules that fired: finding, document, stderr)."""
        r = run([ENV["FINDINGS_APP"], mode], self.out, conf=conf, extra=extra, timeout=60)
        self.assertEqual(0, r.returncode, r.stderr)
        path, doc = summary_file(self.out)
        v = subprocess.run(["/usr/bin/python3", ENV["VALIDATOR"], ENV["SCHEMA"], path], capture_output=True, text=True)
        self.assertEqual(0, v.returncode, v.stdout + v.stderr)
        return {f["rule"]: f for f in doc.get("findings", [])}, doc, r.stderr

    def assert_finding(self, f, doc):
        self.assertGreaterEqual(f["cost_s"], 0.05)
        self.assertGreaterEqual(f["cost_share"], 0.01)
        self.assertLessEqual(f["cost_share"], 1.0)
        self.assertTrue(f["evidence"], f)
        self.assertTrue(f["fix"], f)
        self.assertLessEqual(len(f["where"]), 3)

    def test_allocator_sync_fires_on_frees_in_the_loop(self):
        found, doc, err = self.findings("free-loop")
        self.assertIn("allocator_sync", found, found.keys())
        f = found["allocator_sync"]
        self.assert_finding(f, doc)
        self.assertIn("GPUSLACK_CONF=allocator:vmm", f["fix"])
        self.assertIsNone(f["gpu_idle_s"])  # the timeline did not measure
        self.assertTrue(any("free_after_kernel" in fr for site in f["where"] for fr in site), f["where"])
        # The text summary names it right after the headline.
        lines = [l for l in err.splitlines() if l.startswith("gpuslack: ")]
        at = next(i for i, l in enumerate(lines) if "findings, most costly first:" in l)
        self.assertIn("lost", lines[at - 2])
        self.assertIn("1. cudaFree/cudaMalloc wait for the whole GPU", lines[at + 1])

    def test_allocator_sync_near_miss_frees_at_start_up_and_teardown(self):
        found, doc, _ = self.findings("free-edges")
        free = [c for c in doc["calls"] if c["name"] == "cudaFree"][0]
        self.assertGreaterEqual(free["total_s"], 0.5)  # as costly as the loop's, at the ends
        self.assertNotIn("allocator_sync", found)

    def test_allocator_sync_near_miss_under_the_vmm_allocator(self):
        found, _, _ = self.findings("free-loop", conf="allocator:vmm")
        self.assertNotIn("allocator_sync", found)

    def test_pageable_copies_fire_without_staging(self):
        found, doc, _ = self.findings("pageable-loop", conf="stage_copies:false")
        self.assertIn("pageable_copies", found, found.keys())
        f = found["pageable_copies"]
        self.assert_finding(f, doc)
        self.assertIn("cudaMallocHost", f["fix"])
        self.assertIn("stage_copies:true", f["fix"])
        self.assertTrue(any("copy_batch" in fr for site in f["where"] for fr in site), f["where"])

    def test_pageable_copies_near_miss_pinned_buffer(self):
        found, _, _ = self.findings("pinned-loop", conf="stage_copies:false")
        self.assertNotIn("pageable_copies", found)

    def test_pageable_copies_near_miss_one_copy_at_start_up(self):
        found, doc, _ = self.findings("pageable-edges", conf="stage_copies:false")
        h2d = [c for c in doc["copies"] if c["kind"] == "H2D" and c["host"] == "pageable"]
        self.assertGreaterEqual(h2d[0]["total_s"], 0.2)
        self.assertNotIn("pageable_copies", found)

    # underfilled_kernels: a hidden size of 8192 split 8 ways and 4
    # (tp_gemm_app.cc). At 8, the QKV projection (3072 x 2048 outputs) takes
    # 12 x 16 = 192 tiles of 256x128, one per SM: 1.45 waves on 132 SMs, 73%;
    # at 4 it takes 384 (2.91 waves, 97%), and every other GEMM fills whole
    # waves at both. The GEMMs at 8 are named, none at 4.
    TP_COSTS = {"GPUSIM_COST_GEMM_TFLOPS": "25"}

    def tp_run(self, tp):
        r = run([ENV["TP_GEMM_APP"], str(tp)], self.out, conf="gpu_timeline:on", extra=self.TP_COSTS, timeout=60)
        self.assertEqual(0, r.returncode, r.stderr)
        path, doc = summary_file(self.out)
        v = subprocess.run(["/usr/bin/python3", ENV["VALIDATOR"], ENV["SCHEMA"], path], capture_output=True, text=True)
        self.assertEqual(0, v.returncode, v.stdout + v.stderr)
        self.assertEqual("measured", doc["gpu_timeline"]["status"], doc["gpu_timeline"])
        return {f["rule"]: f for f in doc.get("findings", [])}, doc, r.stderr

    def test_underfilled_kernels_fire_at_tensor_parallelism_8(self):
        found, doc, err = self.tp_run(8)
        self.assertIn("underfilled_kernels", found, found.keys())
        f = found["underfilled_kernels"]
        self.assert_finding(f, doc)
        named = {e["name"]: e["value"] for e in f["evidence"]}
        gemm = [k for k in named if "tilesize256x128x64" in k]
        self.assertEqual(1, len(gemm), f["evidence"])
        self.assertIn("192 blocks of 384 threads: 1/SM, 1.45 waves on 132 SMs, wave efficiency 73%", named[gemm[0]])
        self.assertNotIn("512 blocks", named[gemm[0]])  # the efficient GEMMs of the same kernel
        self.assertIn("fewer tensor-parallel ranks", f["fix"])
        # The table: the kernel's launches in three shapes, 192 the smallest.
        kernels = doc["gpu_timeline"]["devices"][0]["top_kernels"]
        k = [k for k in kernels if "tilesize256x128x64" in k["name"]][0]
        self.assertEqual(3, k["launch"]["shapes"])
        self.assertEqual(192, k["launch"]["blocks_min"])
        self.assertEqual(512, k["launch"]["blocks_max"])
        self.assertEqual(1, k["launch"]["blocks_per_sm_max"])
        self.assertEqual(132, k["launch"]["sm_count"])
        self.assertIn("Kernels leave SMs idle", err)  # the text summary lists it
    def test_underfilled_kernels_near_miss_at_tensor_parallelism_4(self):
        found, doc, _ = self.tp_run(4)
        self.assertNotIn("underfilled_kernels", found)
        kernels = doc["gpu_timeline"]["devices"][0]["top_kernels"]
        k = [k for k in kernels if "tilesize256x128x64" in k["name"]][0]
        self.assertEqual(384, k["launch"]["blocks_min"])
        self.assertGreaterEqual(k["launch"]["wave_efficiency"], 0.95)

    def test_sync_copies_fire_on_a_read_back_every_step(self):
        found, doc, _ = self.findings("item-loop", conf="gpu_timeline:on", extra=KERNEL_10MS)
        self.assertIn("sync_copies", found, found.keys())
        f = found["sync_copies"]
        self.assert_finding(f, doc)
        self.assertIn(".item()", f["fix"])
        self.assertTrue(any("read_loss" in fr for site in f["where"] for fr in site), f["where"])

    def test_sync_copies_near_miss_reads_behind_long_kernels(self):
        # Note [What a wait for the GPU costs] (lib/findings/copy_rules.cc):
        # the host waits ~1 s in all, the GPU works through every wait.
        found, doc, _ = self.findings("item-busy", conf="gpu_timeline:on", extra=KERNEL_10MS)
        waited = sum(c["total_s"] for c in doc["calls"] if c["name"] in ("cudaStreamSynchronize", "cudaMemcpyAsync"))
        self.assertGreaterEqual(waited, 0.5)  # the read's copy waits behind the kernel
        self.assertNotIn("sync_copies", found)

    def test_sync_copies_near_miss_one_read_back_at_the_end(self):
        found, doc, _ = self.findings("item-end", conf="gpu_timeline:on")
        d2h = [c for c in doc["copies"] if c["kind"] == "D2H"]
        self.assertGreaterEqual(d2h[0]["total_s"], 0.2)
        self.assertNotIn("sync_copies", found)

    def test_fragmentation_fires_when_allocations_wait_for_frees(self):
        found, doc, _ = self.findings("pressure-loop", conf="allocator:vmm", extra={"GPUSIM_DEVICE_MEMORY": "64M"})
        self.assertIn("fragmentation", found, found.keys())
        f = found["fragmentation"]
        self.assert_finding(f, doc)
        self.assertAlmostEqual(doc["allocator"][0]["stall_s"], f["cost_s"], places=6)
        evidence = {e["name"]: e["value"] for e in f["evidence"]}
        self.assertNotEqual("0", evidence["out-of-memory retries"])
        self.assertIn("largest free range", evidence)
        self.assertNotIn("sync_copies", found)  # its waits are for memory, not reads

    def test_fragmentation_near_miss_the_same_loop_with_room(self):
        found, doc, _ = self.findings("pressure-loop", conf="allocator:vmm")
        self.assertEqual(0, doc["allocator"][0]["oom_retries"])
        self.assertEqual({}, found)  # and the last wait for its queued kernels is no habit


if __name__ == "__main__":
    unittest.main()

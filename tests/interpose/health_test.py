#!/usr/bin/env python3
"""End to end: device health (device_health) and the series, under the demo
(bench/demo/train_loop) on two simulated devices with libgpuslack.so
preloaded (issue 16, point 6).

GPUSIM_NVML_THROTTLE=0:0.85:sw_thermal makes the simulated NVML report
device 0 at 85% of its SM clock, throttled for sw_thermal at 86 C, and its
kernels take 1/0.85 as long: the summary must name the reason and the
ratio, and the GPU timeline must see device 0 busier. Without the knob no
device throttles; with the simulated libnvidia-ml.so.1 hidden, the status is
"unavailable" with one line of why, and nothing else changes.

The topology (issue 26) rides on the same reporter and knob: with
GPUSIM_NVLINK_LINKS=18 the summary's topology has each GPU's 18 NVLink 4
links and the 450 GB/s link within the node; device_health:off leaves it
null.

Run by ctest, one test method per ctest entry, with GPUSLACK_SO, TRAIN_LOOP
and SIMCUDA_DIR in the environment (tests/interpose/CMakeLists.txt).
"""
import os
import tempfile
import unittest

import preload_harness
from preload_harness import OutDirTest, summary_file

ENV = os.environ
KERNEL_US = 20000  # 4 kernels a step per device: 80 ms of GPU a step
STEPS = 25         # about 2.5 s: a reading at the start, one a second, one at exit
ARGV = ["--steps", str(STEPS), "--warmup", "1", "--grad-mib", "4", "--kernel-us", str(KERNEL_US)]
SIM = {"GPUSIM_DEVICE_COUNT": "2", "GPUSIM_COST_KERNEL_US": str(KERNEL_US),
       "GPUSIM_COST_KERNEL_PER_BLOCK_US": "0"}
CONF = "gpu_timeline:on"


class DeviceHealth(OutDirTest):
    def run_demo(self, extra=None, library_path=None, argv=ARGV, conf=CONF):
        env = dict(SIM)
        env["LD_LIBRARY_PATH"] = library_path or ENV["SIMCUDA_DIR"]
        env.update(extra or {})
        r = preload_harness.run([ENV["TRAIN_LOOP"]] + argv, self.out, conf, env, timeout=240)
        self.assertEqual(0, r.returncode, r.stdout[-2000:] + r.stderr[-4000:])
        _, doc = summary_file(self.out)
        return r, doc

    def devices(self, doc):
        h = doc["device_health"]
        return {d["device"]: d for d in h["devices"]}

    def test_a_throttled_device_is_named_with_its_reason_and_clock(self):
        r, doc = self.run_demo({"GPUSIM_NVML_THROTTLE": "0:0.85:sw_thermal"})
        h = doc["device_health"]
        self.assertEqual("measured", h["status"], h)
        devs = self.devices(doc)
        self.assertEqual({0, 1}, set(devs), h)
        d0, d1 = devs[0], devs[1]
        self.assertGreaterEqual(d0["samples"], 2, d0)
        self.assertEqual(d0["samples"], d0["throttled_samples"], d0)
        self.assertIn("sw_thermal", d0["throttle_reasons"], d0)
        self.assertAlmostEqual(0.85, d0["clock_ratio_mean"], delta=0.005, msg=d0)
        self.assertEqual(1980, d0["sm_clock_max_mhz"], d0)
        self.assertEqual(86, d0["temperature_c_max"], d0)
        self.assertEqual("gpusim simulated device 0", d0["name"])
        self.assertTrue(d0["uuid"].startswith("GPU-"), d0)
        self.assertGreater(d0["memory_used_bytes_max"], 0, d0)
        self.assertEqual(700, d0["power_limit_w"], d0)
        self.assertEqual(0, d1["throttled_samples"], d1)
        self.assertEqual([], d1["throttle_reasons"], d1)
        self.assertAlmostEqual(1.0, d1["clock_ratio_mean"], delta=1e-6, msg=d1)
        # One text line, for device 0, wrapped at 80 columns.
        lines = r.stderr.splitlines()
        at = [i for i, l in enumerate(lines) if "throttled" in l]
        self.assertEqual(1, len(at), r.stderr[-3000:])
        self.assertEqual(["gpuslack: GPU 0 throttled 100% of samples: sw_thermal; SM clock 85% of max;",
                          "gpuslack:   86 \u00b0C max"], lines[at[0]:at[0] + 2], r.stderr[-3000:])
        # The series: clock ratio and memory per bucket from NVML, idle from
        # the GPU timeline, one width for all.
        s = doc["series"]
        self.assertEqual(1.0, s["interval_s"], s)
        rows = {d["device"]: d for d in s["devices"]}
        self.assertEqual({0, 1}, set(rows), s)
        ratios = [x for x in rows[0]["sm_clock_ratio"] if x > 0]
        self.assertTrue(ratios and all(abs(x - 0.85) < 0.005 for x in ratios), rows[0])
        self.assertTrue(all(x == 1 for x in rows[1]["sm_clock_ratio"] if x > 0), rows[1])
        self.assertTrue(any(x > 0 for x in rows[0]["memory_used_bytes"]), rows[0])
        for dev in (0, 1):
            idle = rows[dev]["gpu_idle_share"]
            self.assertGreaterEqual(len(idle), 2, rows[dev])
            self.assertTrue(all(0 <= x <= 1 for x in idle), idle)
        self.assertEqual([], s["reserved_bytes"], s)  # allocator:native
        # The throttled device really is slower: its kernels' GPU time is
        # 1/0.85 of the other's (within 5%: the simulated device sleeps).
        g = {d["device"]: d for d in doc["gpu_timeline"]["devices"]}
        ratio = g[0]["busy"]["compute"] / g[1]["busy"]["compute"]
        self.assertAlmostEqual(1 / 0.85, ratio, delta=0.05 / 0.85, msg=(g[0]["busy"], g[1]["busy"]))

    def test_without_the_knob_no_device_throttles(self):
        r, doc = self.run_demo()
        h = doc["device_health"]
        self.assertEqual("measured", h["status"], h)
        for d in h["devices"]:
            self.assertEqual(0, d["throttled_samples"], d)
            self.assertAlmostEqual(1.0, d["clock_ratio_mean"], delta=1e-6, msg=d)
            self.assertLess(d["temperature_c_max"], 80, d)
        self.assertNotIn("throttled", r.stderr)

    def test_the_last_readings_come_before_the_runtime_teardown(self):
        # See Note [Last samples before the runtime's teardown]: the exit
        # summary runs after the CUDA runtime's own teardown, where calling
        # the driver is undefined; the simulated driver says so of any call
        # there (GPUSIM_CHECK_TEARDOWN, tests/simcuda/sim.h). The last NVML
        # readings and the topology's read come before it.
        r, doc = self.run_demo({"GPUSIM_CHECK_TEARDOWN": "1", "GPUSIM_NVLINK_LINKS": "18"})
        self.assertNotIn("after the CUDA runtime's teardown", r.stderr)
        h = doc["device_health"]
        self.assertEqual("measured", h["status"], h)
        self.assertEqual([0, 1], sorted(d["device"] for d in h["devices"]), h)
        self.assertEqual([0, 1], [g["device"] for g in doc["topology"]["gpus"]], doc["topology"])

    def test_a_run_shorter_than_the_first_tick_reads_before_the_teardown(self):
        # The same, for a run that ends before the reporter's first tick
        # (two steps, well under a second): the hooks register the last
        # reads once the runtime made a context. Under allocator:vmm
        # gpuslack binds the context itself on cudaMalloc's thread first.
        short = ["--steps", "2", "--warmup", "1", "--grad-mib", "4", "--kernel-us", "100"]
        for conf in (CONF, CONF + ",allocator:vmm"):
            self.tearDown()
            self.setUp()
            r, doc = self.run_demo({"GPUSIM_CHECK_TEARDOWN": "1", "GPUSIM_COST_KERNEL_US": "100"}, argv=short,
                                   conf=conf)
            self.assertNotIn("after the CUDA runtime's teardown", r.stderr, conf)
            self.assertLess(doc["wall_s"], 1.0, conf)
            h = doc["device_health"]
            self.assertEqual("measured", h["status"], (conf, h))
            self.assertEqual([0, 1], sorted(d["device"] for d in h["devices"]), (conf, h))
        self.tearDown()

    def test_a_mig_instance_is_read_by_its_own_handle(self):
        # See Note [A MIG device's own handle]: with every GPU in MIG mode, the
        # PCI bus id gives the parent GPU, whose memory counts the other
        # tenants' 8 GiB (the simulated NVML, GPUSIM_NVML_MIG); the
        # instance's own handle, found by its UUID (1) or among the
        # parent's MIG devices (2), counts this process's alone.
        for mig in ("1", "2"):
            self.tearDown()
            self.setUp()
            r, doc = self.run_demo({"GPUSIM_NVML_MIG": mig})
            h = doc["device_health"]
            self.assertEqual("measured", h["status"], h)
            self.assertEqual(2, len(h["devices"]), h)
            for d in h["devices"]:
                self.assertEqual("mig", d["nvml_handle"], (mig, d))
                self.assertTrue(d["uuid"].startswith("MIG-"), d)
                self.assertLess(d["memory_used_bytes_max"], 8 << 30, d)
                self.assertEqual(0, d["power_w_mean"], d)  # only the whole GPU's exists
                self.assertGreater(d["sm_clock_mhz_mean"], 0, d)  # the GPU's clock
        self.tearDown()
        self.setUp()
        r, doc = self.run_demo()
        for d in doc["device_health"]["devices"]:
            self.assertEqual("gpu", d["nvml_handle"], d)
            self.assertTrue(d["uuid"].startswith("GPU-"), d)

    def test_without_nvml_it_is_unavailable_in_one_line_and_nothing_else_changes(self):
        with tempfile.TemporaryDirectory() as hidden:
            for name in os.listdir(ENV["SIMCUDA_DIR"]):
                if name != "libnvidia-ml.so.1":
                    os.symlink(os.path.join(ENV["SIMCUDA_DIR"], name), os.path.join(hidden, name))
            r, doc = self.run_demo(library_path=hidden)
        h = doc["device_health"]
        self.assertEqual("unavailable", h["status"], h)
        self.assertIn("libnvidia-ml.so.1", h["detail"])
        self.assertEqual([], h["devices"])
        lines = [l for l in r.stderr.splitlines() if "device health" in l]
        self.assertEqual(["gpuslack: device health: not measured: libnvidia-ml.so.1 not found"], lines, r.stderr[-3000:])
        # The rest of the summary is as usual: the timeline measured, and the
        # series has its idle shares but no NVML figures.
        self.assertEqual("measured", doc["gpu_timeline"]["status"])
        for row in doc["series"]["devices"]:
            self.assertEqual([], row["memory_used_bytes"], row)
            self.assertEqual([], row["sm_clock_ratio"], row)
            self.assertGreaterEqual(len(row["gpu_idle_share"]), 2, row)

    def test_device_health_off_reads_nothing(self):
        env = dict(SIM)
        env["LD_LIBRARY_PATH"] = ENV["SIMCUDA_DIR"]
        env["GPUSIM_NVML_THROTTLE"] = "0:0.85"
        r = preload_harness.run([ENV["TRAIN_LOOP"]] + ARGV, self.out, CONF + ",device_health:off", env, timeout=240)
        self.assertEqual(0, r.returncode, r.stderr[-3000:])
        _, doc = summary_file(self.out)
        self.assertEqual({"status": "off", "detail": "", "devices": []}, doc["device_health"])
        self.assertNotIn("throttled", r.stderr)
        self.assertIsNone(doc["topology"])  # the same knob keeps NVML and the topology out
        self.assertNotIn("topology:", r.stderr)

    def test_the_topology_is_read_once_with_nvlink_from_the_simulated_nvml(self):
        # Issue 26: 18 NVLink 4 links per GPU; sysfs read under an empty
        # root (GPUSLACK_TEST_SYSFS_ROOT), so the NICs are unknown with why.
        with tempfile.TemporaryDirectory() as root:
            r, doc = self.run_demo({"GPUSIM_NVLINK_LINKS": "18", "GPUSLACK_TEST_SYSFS_ROOT": root})
        t = doc["topology"]
        self.assertEqual("read", t["status"], t)
        self.assertEqual(2, t["gpus_on_node"], t)
        self.assertEqual([0, 1], [g["device"] for g in t["gpus"]], t)
        for g in t["gpus"]:
            self.assertEqual((18, 4, 450), (g["nvlink_links"], g["nvlink_generation"], g["nvlink_gbps"]), g)
            self.assertEqual((5, 16), (g["pcie_max_generation"], g["pcie_max_width"]), g)
            self.assertEqual([1 - g["device"]], g["peers"], g)
        self.assertEqual([], t["nics"])
        self.assertIn("no RDMA device", t["nics_unknown"])
        links = t["links"]
        self.assertEqual((450, True), (links["intra_gbps"], links["intra_is_nvlink"]), links)
        self.assertTrue(links["intra_from"].startswith("measured: NVML: GPU 0 has 18 NVLink 4 links up"), links)
        self.assertEqual(0, links["inter_gbps"], links)
        self.assertTrue(links["inter_from"].startswith("unknown: no RDMA device"), links)
        text = " ".join(l[len("gpuslack: "):].strip() for l in r.stderr.splitlines() if l.startswith("gpuslack: "))
        self.assertIn("topology: within the node 450 GB/s (NVLink), between nodes unknown", text)


if __name__ == "__main__":
    unittest.main()

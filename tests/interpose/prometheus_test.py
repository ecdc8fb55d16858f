#!/usr/bin/env python3
"""End to end: live metrics (prometheus_dir, lib/report/prometheus.h).

PrometheusFiles (every build): the .prom file a preloaded process writes,
when it writes it, and an unwritable folder.
NodeExporter (Release builds, registered by tests/interpose/CMakeLists.txt):
the real programs of Debian's packages prometheus-node-exporter and
prometheus (promtool), which scripts/deps.sh installs: the demo runs
preloaded, node_exporter's textfile collector serves the folder on
loopback, its /metrics is scraped and parsed against the JSON summary;
promtool checks the file (clean) and the alert rules of docs/prometheus
(valid, and firing on a series whose GPU idles).

Environment: GPUSLACK_SO, STALL_APP; NodeExporter also TRAIN_LOOP,
SIMCUDA_DIR, ALERT_RULES.
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

from preload_harness import OutDirTest, run

ENV = os.environ
JOB = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "SLURM_JOB_ID": "777"}
SAMPLE = re.compile(r'^(gpuslack_\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset of labels): value} of the gpuslack samples."""
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            out[(m.group(1), frozenset(LABEL.findall(m.group(2))))] = float(m.group(3))
    return out


def value(samples, name, **labels):
    """The one sample of `name` whose labels include `labels`."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def total(samples, name, **labels):
    """The sum of the samples of `name` whose labels include `labels`."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
    assert found, (name, labels)
    return sum(found)


def load(path):
    with open(path) as f:
        return json.load(f)


class PrometheusFiles(OutDirTest):
    def test_metrics_are_written_with_the_summary_and_at_exit(self):
        prom = os.path.join(self.tmp.name, "prom")
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off,prometheus_dir:" + prom, extra=JOB)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertEqual(["gpuslack-777-rank3.prom"], os.listdir(prom))
        with open(os.path.join(prom, "gpuslack-777-rank3.prom")) as f:
            samples = parse(f.read())
        doc = load(os.path.join(self.out, "gpuslack-777-rank3.json"))
        labels = dict(job_id="777", rank="3", local_rank="1", restart="0", host=doc["host"])
        self.assertEqual(doc["wall_s"], value(samples, "gpuslack_wall_seconds_total", **labels))
        self.assertEqual(doc["categories"]["sync"]["seconds"],
                         value(samples, "gpuslack_blocked_seconds_total", category="sync", **labels))

    def test_metrics_are_refreshed_while_the_job_runs(self):
        prom = os.path.join(self.tmp.name, "prom")
        env = dict(ENV, GPUSLACK_OUTPUT=self.out, LD_PRELOAD=ENV["GPUSLACK_SO"],
                   GPUSLACK_CONF="summary_interval_s:0.1,text_summary:off,prometheus_dir:" + prom,
                   ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0")
        p = subprocess.Popen([ENV["STALL_APP"], "sleep"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.assertEqual("ready\n", p.stdout.readline())
        walls = set()
        deadline = time.time() + 1.2
        while time.time() < deadline:
            for path in glob.glob(os.path.join(prom, "*.prom")):
                with open(path) as f:
                    walls.update(v for (n, _), v in parse(f.read()).items() if n == "gpuslack_wall_seconds_total")
            time.sleep(0.05)
        p.wait(timeout=60)
        self.assertEqual(0, p.returncode, p.stderr.read())
        self.assertGreaterEqual(len(walls), 3, walls)  # rewritten, whole, every interval
        self.assertEqual(1, len(os.listdir(prom)))

    def test_an_unwritable_prometheus_dir_is_one_line_and_the_process_is_unaffected(self):
        blocker = os.path.join(self.tmp.name, "file")
        with open(blocker, "w") as f:
            f.write("x")
        plain = run([ENV["STALL_APP"], "sync"], self.out, preload=False)
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off,prometheus_dir:" + blocker + "/prom")
        self.assertEqual(plain.returncode, r.returncode, r.stderr)
        self.assertEqual(plain.stdout, r.stdout)
        lines = [l for l in r.stderr.splitlines() if "cannot write" in l]
        self.assertEqual(1, len(lines), r.stderr)
        self.assertIn(".prom", lines[0])
        self.assertEqual(1, len(glob.glob(os.path.join(self.out, "*.json"))))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeExporter(OutDirTest):
    def setUp(self):
        super().setUp()
        for program in ("prometheus-node-exporter", "promtool"):
            self.assertIsNotNone(shutil.which(program),
                                 program + " is missing: run scripts/deps.sh (prometheus-node-exporter, prometheus)")
        self.prom = os.path.join(self.tmp.name, "prom")

    def run_demo(self):
        """The demo on two simulated devices, all-reducing, on the VMM allocator."""
        self.assertNotEqual("none", ENV["TRAIN_LOOP"], "the demo is built with GPUSLACK_BUILD_BENCH")
        sim = dict(JOB, GPUSIM_DEVICE_COUNT="2", LD_LIBRARY_PATH=ENV["SIMCUDA_DIR"])
        r = run([ENV["TRAIN_LOOP"], "--steps", "4"], self.out, extra=sim,
                conf="collective_timing_every:1,text_summary:off,allocator:vmm,gpu_timeline:on,prometheus_dir:"
                + self.prom)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertEqual(["gpuslack-777-rank3.prom"], os.listdir(self.prom))
        return load(os.path.join(self.out, "gpuslack-777-rank3.json"))

    def scrape(self):
        """node_exporter on a free loopback port serving self.prom: its /metrics."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for _ in range(3):  # the port may be taken between free_port() and the bind
            port = free_port()
            exporter = subprocess.Popen(
                ["prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
                 "--collector.textfile.directory=" + self.prom, "--web.listen-address=127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.time() + 20
                while time.time() < deadline and exporter.poll() is None:
                    try:
                        with opener.open("http://127.0.0.1:%d/metrics" % port, timeout=2) as response:
                            return response.read().decode()
                    except OSError:
                        time.sleep(0.1)
            finally:
                exporter.terminate()
                try:
                    exporter.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    exporter.kill()
                    exporter.wait()
                log = exporter.stderr.read()
        self.fail("node_exporter never answered: " + log)

    def test_node_exporter_serves_the_metrics_of_the_summary(self):
        doc = self.run_demo()
        text = self.scrape()
        self.assertIn("node_textfile_scrape_error 0", text)  # the file parsed
        samples = parse(text)
        labels = dict(job_id="777", rank="3", local_rank="1", restart="0", host=doc["host"])
        for (_, ls) in samples:
            self.assertLessEqual(set(labels.items()), set(ls))
        self.assertEqual(doc["wall_s"], value(samples, "gpuslack_wall_seconds_total"))
        self.assertEqual(doc["lost_s"], value(samples, "gpuslack_lost_seconds_total"))
        for category, figures in doc["categories"].items():
            self.assertEqual(figures["seconds"], value(samples, "gpuslack_blocked_seconds_total", category=category))
        rows = [r for r in doc["collectives"]["rows"] if r["op"] == "all-reduce"]
        self.assertTrue(rows, doc["collectives"])
        # One sample per NCCL algorithm/protocol (the algo_proto label).
        self.assertEqual(sum(r["count"] for r in rows), total(samples, "gpuslack_collective_calls_total", op="all-reduce"))
        self.assertEqual(sum(r["bytes"] for r in rows), total(samples, "gpuslack_collective_bytes_total", op="all-reduce"))
        choices = {(r["algo"] + "/" + r["proto"]) if r["algo"] else "unknown" for r in rows}
        self.assertEqual(1, len(choices), rows)
        busbw = value(samples, "gpuslack_collective_busbw_bytes_per_second", op="all-reduce", algo_proto=choices.pop())
        self.assertGreater(busbw, 0)
        self.assertLessEqual(busbw, max(r["busbw_gbps"] for r in rows) * 1e9 * 1.000001)
        self.assertTrue(doc["allocator"], "allocator:vmm served no device")
        for a in doc["allocator"]:
            device = str(a["device"])
            self.assertEqual(a["reserved"], value(samples, "gpuslack_allocator_reserved_bytes", device=device))
            self.assertEqual(a["allocated"], value(samples, "gpuslack_allocator_allocated_bytes", device=device))
        self.assertEqual(0.0, value(samples, "gpuslack_allocator_vmm_devices_off"))  # it served every device
        timeline = doc["gpu_timeline"]
        self.assertEqual("measured", timeline["status"], timeline)
        self.assertEqual(1.0, value(samples, "gpuslack_gpu_timeline_measured"))
        self.assertTrue(timeline["devices"])
        for d in timeline["devices"]:
            device = str(d["device"])
            self.assertEqual(d["wall_s"], value(samples, "gpuslack_gpu_wall_seconds_total", device=device))
            for cause, seconds in d["idle"].items():
                self.assertEqual(seconds, value(samples, "gpuslack_gpu_idle_seconds_total", device=device, cause=cause))
            for kind, seconds in d["busy"].items():
                self.assertEqual(seconds, value(samples, "gpuslack_gpu_busy_seconds_total", device=device, kind=kind))

    def test_promtool_check_metrics_is_clean(self):
        self.run_demo()
        with open(os.path.join(self.prom, "gpuslack-777-rank3.prom")) as f:
            r = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True, timeout=60)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertEqual("", (r.stdout + r.stderr).strip())

    def test_the_allocator_off_is_served_and_promtool_finds_it_clean(self):
        # Issue 28, point 5: allocator:vmm on a device without VMM support
        # (GPUSIM_NO_VMM) is off; the metrics say on how many devices, and
        # on which and why, as the summary's allocator_status does.
        r = run([ENV["STALL_APP"], "free"], self.out, extra=dict(JOB, GPUSIM_NO_VMM="1"),
                conf="text_summary:off,allocator:vmm,prometheus_dir:" + self.prom)
        self.assertEqual(0, r.returncode, r.stderr)
        doc = load(os.path.join(self.out, "gpuslack-777-rank3.json"))
        (off,) = doc["allocator_status"]["off"]
        text = self.scrape()
        self.assertIn("node_textfile_scrape_error 0", text)
        samples = parse(text)
        self.assertEqual(1.0, value(samples, "gpuslack_allocator_vmm_devices_off"))
        self.assertEqual(1.0, value(samples, "gpuslack_allocator_vmm_off_info", device=str(off["device"]),
                                    reason=off["why"]))
        with open(os.path.join(self.prom, "gpuslack-777-rank3.prom")) as f:
            r = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True, timeout=60)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertEqual("", (r.stdout + r.stderr).strip())

    def test_the_alert_rules_are_valid_and_page_on_an_idle_gpu(self):
        r = subprocess.run(["promtool", "check", "rules", ENV["ALERT_RULES"]], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        # One rank's GPU idles 50% of the time from minute 2 on, another's 5%:
        # only the first pages, once the idle share held for 30 s.
        labels = 'job_id="777",rank="%s",local_rank="0",restart="0",host="n%s",device="0"'
        cases = """
rule_files: [%s]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'gpuslack_gpu_wall_seconds_total{%s}'
        values: '0+15x20'
      - series: 'gpuslack_gpu_idle_seconds_total{%s,cause="host_bound"}'
        values: '0+0.75x8 6+7.5x12'
      - series: 'gpuslack_gpu_wall_seconds_total{%s}'
        values: '0+15x20'
      - series: 'gpuslack_gpu_idle_seconds_total{%s,cause="host_bound"}'
        values: '0+0.75x20'
    alert_rule_test:
      - eval_time: 1m
        alertname: GpuslackGpuIdle
        exp_alerts: []
      - eval_time: 4m
        alertname: GpuslackGpuIdle
        exp_alerts:
          - exp_labels: {severity: page, job_id: "777", rank: "1", host: "n1", device: "0"}
            exp_annotations:
              summary: "GPU 0 of rank 1 (n1) idle 50%%"
              description: "Job 777: the GPU idled more than 20%% of the time for 30 s. gpuslack_gpu_idle_seconds_total by cause says why (host_bound, allocation, copies, ...)."
""" % (json.dumps(ENV["ALERT_RULES"]), labels % (1, 1), labels % (1, 1), labels % (2, 2), labels % (2, 2))
        path = os.path.join(self.tmp.name, "alerts_test.yml")
        with open(path, "w") as f:
            f.write(cases)
        r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()

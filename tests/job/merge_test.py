"""End to end: `python -m gpuslack merge` on a folder of rank files
(python_shim/gpuslack/job/). One slow rank and one whose GPU throttles must
be named as stragglers with their causes; bad files among them give one
line each and the report of the rest; the JSON report validates against
docs/job_report.schema.json; files from before the job fields merge with
their GPU and health figures said to be missing.

The rank files come from make_rank_folder(), today the generator's files
made from real demo summaries (tests/job/fixtures); it is the one function
to swap for the multi-process demo's real rank files."""
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SHIM = os.path.join(ROOT, "python_shim")
FIXTURES = [os.path.join(HERE, "fixtures", f) for f in sorted(os.listdir(os.path.join(HERE, "fixtures")))]
SCHEMA = os.path.join(ROOT, "docs", "job_report.schema.json")
sys.path.insert(0, SHIM)
from gpuslack.job import synth  # noqa: E402

RANKS, SLOW, THROTTLED, RESTARTED = 8, 3, 5, 6


def read_json(path):
    with open(path) as f:
        return json.load(f)


def make_rank_folder(folder):
    """Writes the job's rank files (plus an empty, a truncated, a non-JSON, a
    foreign and a future-schema file) into folder; returns what the report
    must find: {ranks, slow, throttled, restarted, bad: {file name: what}}."""
    templates = [read_json(f) for f in FIXTURES]
    synth.generate(templates, folder, RANKS, seed=7, ranks_per_node=4, slow=[SLOW], throttled=[THROTTLED],
                   restarted=[RESTARTED])
    bad = synth.write_bad_files(folder, templates[0])
    return {"ranks": RANKS, "slow": SLOW, "throttled": THROTTLED, "restarted": RESTARTED, "bad": bad}


def simulated_job_folder(folder):
    """The same job from real processes: scripts/simulate_job.py (issue 16's
    multi-rank demo) runs RANKS demo ranks on the simulated device under the
    libgpuslack.so of GPUSLACK_SO: rank SLOW's host work delayed 40 ms each
    step (a slow loader), rank THROTTLED's device throttled through the
    simulated NVML (70% clock, sw_thermal: its 15 ms kernels take 1/0.7 as
    long, about 25 ms more a step: at 85% its lag, about 130 ms over the run,
    came within the straggler threshold when a loaded machine spread the
    others' waits), every all-reduce coupling the ranks across processes. Every
    collective is timed (one in 8 over a dozen steps is too few to rank by)
    and the GPU timeline is on (gpu_timeline:on: the simulated r580
    driver's CUPTI allows one subscriber, which auto takes as well)."""
    build = os.path.dirname(os.environ["GPUSLACK_SO"])
    env = dict(os.environ, GPUSIM_COST_KERNEL_US="15000")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "simulate_job.py"), "--build", build,
                        "--ranks", str(RANKS), "--ranks-per-node", "4", "--slow-rank", str(SLOW), "--slow-ms", "40",
                        "--throttle-rank", str(THROTTLED), "--throttle", "0.7:sw_thermal", "--job-id", "4242", "--out", folder,
                        "--conf", "collective_timing_every:1,gpu_timeline:on", "--", "--kernel-us", "15000"],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("simulate_job.py failed: " + r.stdout[-2000:] + r.stderr[-2000:])
    bad = synth.write_bad_files(folder, read_json(FIXTURES[0]))
    return {"ranks": RANKS, "slow": SLOW, "throttled": THROTTLED, "restarted": None, "bad": bad}


def merge(*args):
    env = dict(os.environ, PYTHONPATH=SHIM, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "gpuslack", "merge"] + list(args), env=env,
                          capture_output=True, text=True, timeout=120)


def validate(doc):
    from jsonschema import Draft202012Validator
    with open(SCHEMA) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    return [e.json_path + ": " + e.message for e in Draft202012Validator(schema).iter_errors(doc)]


class Merge(unittest.TestCase):
    make_folder = staticmethod(make_rank_folder)
    node_of_slow, node_of_throttled = "node000", "node001"
    nccl_settings_differ = True

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpuslack-merge-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_stragglers_throttling_and_bad_files_in_one_job(self):
        ranks = os.path.join(self.tmp, "ranks")
        job = self.make_folder(ranks)
        out = os.path.join(self.tmp, "report")
        p = merge(ranks, "--out", out)
        self.assertEqual(p.returncode, 1, p.stderr)          # written, some files skipped
        skipped = [l for l in p.stderr.splitlines() if l.startswith("skipped: ")]
        self.assertEqual(len(skipped), len(job["bad"]), p.stderr)
        for name in job["bad"]:
            self.assertEqual(sum(name in l for l in skipped), 1, name)
        # The library reader's lines (python -m gpuslack report says the same).
        self.assertIn("has schema_version 2; this gpuslack reads version 1", p.stderr)
        self.assertIn("is not a JSON document", p.stderr)
        self.assertIn("is not a gpuslack summary", p.stderr)
        with open(os.path.join(out, "job-report.json")) as f:
            rep = json.load(f)
        self.assertEqual(validate(rep), [])
        self.assertEqual(rep["ranks"], job["ranks"])
        s = rep["stragglers"]
        self.assertEqual(sorted(x["rank"] for x in s["stragglers"]), sorted([job["slow"], job["throttled"]]))
        by = {x["rank"]: x for x in s["stragglers"]}
        self.assertTrue(by[job["throttled"]]["throttled"])
        self.assertIn("GPU throttled", by[job["throttled"]]["causes"][0])
        self.assertFalse(by[job["slow"]]["throttled"])
        self.assertIn("host-bound", " ".join(by[job["slow"]]["causes"]))
        self.assertEqual([(t["rank"], t["straggler"]) for t in s["throttled"]], [(job["throttled"], True)])
        self.assertGreater(s["cost_s"], 0)
        self.assertEqual(s["least_wait"][0]["rank"], job["slow"])
        if job["restarted"] is not None:
            self.assertEqual(len(rep["files"]["notes"]), 1)           # the restarted rank's older file
            self.assertIn("rank %d" % job["restarted"], rep["files"]["notes"][0])
            self.assertEqual(next(r for r in rep["per_rank"] if r["rank"] == job["restarted"])["restart"], 1)
        # The text: on stdout and in the file, naming the stragglers and their nodes.
        with open(os.path.join(out, "job-report.txt")) as f:
            self.assertEqual(f.read(), p.stdout)
        self.assertIn("rank %d on %s" % (job["throttled"], self.node_of_throttled), p.stdout)
        self.assertIn("rank %d on %s" % (job["slow"], self.node_of_slow), p.stdout)
        self.assertIn("throttled GPU: rank %d" % job["throttled"], p.stdout)
        # The findings: one per straggler with its cause, one for NCCL settings
        # that differ (where they do); each rank's merged once per rule, present
        # or not (the ranks' summaries may predate findings); most costly first.
        strag_f = {f["worst_rank"]: f for f in rep["findings"] if f["rule"] == "straggler"}
        self.assertEqual(sorted(strag_f), sorted([job["slow"], job["throttled"]]))
        self.assertIn("its host is slow", strag_f[job["slow"]]["title"])
        self.assertIn("its GPU throttles", strag_f[job["throttled"]]["title"])
        for f in strag_f.values():
            self.assertGreater(f["cost_s_total"], 0)
        mismatch = [f for f in rep["findings"] if f["rule"] == "nccl_env_mismatch"]
        self.assertEqual(len(mismatch), 1 if self.nccl_settings_differ else 0)
        rules = [f["rule"] for f in rep["findings"] if f["scope"] == "ranks"]
        self.assertEqual(len(rules), len(set(rules)))
        costs = [f["cost_s_total"] for f in rep["findings"] if f["cost_measured"]]
        self.assertEqual(costs, sorted(costs, reverse=True))
        self.assertTrue(p.stdout.splitlines()[2].startswith("gpuslack job: findings ("), p.stdout[:600])
        self.assertIn("[straggler]", p.stdout)
        self.assertEqual("[nccl_env_mismatch]" in p.stdout, self.nccl_settings_differ)
        for line in p.stdout.splitlines():
            self.assertTrue(line.startswith("gpuslack job: "), line)
        # The HTML: one file, nothing to fetch.
        with open(os.path.join(out, "job-report.html")) as f:
            page = f.read()
        for ref in ("http://", "https://", "<script", "<link", "@import", "src=\"http"):
            self.assertNotIn(ref, page.replace("http://www.w3.org/2000/svg", ""))

    def test_each_kind_of_node_topology_is_shown_once_with_the_job_shape(self):
        ranks = os.path.join(self.tmp, "ranks")
        templates = [read_json(f) for f in FIXTURES]
        synth.generate(templates, ranks, RANKS, seed=7, ranks_per_node=4)
        # Node 1's rank 7 ran with device_health:off: no topology.
        path = [os.path.join(ranks, f) for f in os.listdir(ranks) if f.endswith("rank7.json")][0]
        doc = read_json(path)
        doc["topology"] = None
        with open(path, "w") as f:
            json.dump(doc, f)
        out = os.path.join(self.tmp, "report")
        p = merge(ranks, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "job-report.json")) as f:
            rep = json.load(f)
        self.assertEqual(validate(rep), [])
        t = rep["topology"]
        self.assertEqual(len(t["kinds"]), 1, t["kinds"])     # both nodes read alike
        k = t["kinds"][0]
        self.assertEqual(k["nodes"], ["node000", "node001"])
        self.assertEqual(k["ranks"], RANKS - 1)
        self.assertEqual(k["ranks_per_node"], 4)
        self.assertEqual((k["intra_gbps"], k["intra_is_nvlink"], k["inter_gbps"]), (450.0, True, 50.0))
        self.assertEqual(k["nics"], {"ports": 8, "active": 8, "rdma_active": 8, "gbit_s": 3200.0,
                                     "link_layers": ["InfiniBand"]})
        self.assertEqual([g["closeness"] for g in k["gpus"]], ["same_pcie_switch"] * 4)
        self.assertEqual(t["shapes"], [{"nodes": 2, "ranks_per_node": 4}])
        self.assertEqual(t["ranks_missing"], 1)
        self.assertIn("device_health:off", t["missing_why"])
        with open(os.path.join(out, "job-report.txt")) as f:
            text = f.read()
        self.assertIn("gpuslack job: topology (each kind of node once); job shape 2 nodes x 4 ranks:", text)
        flat = re.sub(r"\ngpuslack job:\s+", " ", text)     # the wrapped lines as one
        self.assertEqual(flat.count("node000, node001 (2 nodes, 7 ranks read it): within the node 450 GB/s (NVLink), "
                                    "between nodes 50 GB/s"), 1, text)
        self.assertEqual(flat.count("NVIDIA H200: 18 NVLink 4 links; nearest NIC"), 4, text)
        self.assertIn("NICs: 8 ports, 8 active (InfiniBand), 3200 Gb/s in all", text)
        self.assertIn("topology missing on 1 ranks", text)

    def test_good_files_only_exit_0_and_the_folder_can_be_merged_again(self):
        ranks = os.path.join(self.tmp, "ranks")
        templates = [read_json(f) for f in FIXTURES]
        synth.generate(templates, ranks, 4, seed=3)
        p = merge(ranks)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(ranks, "job-report.html")))
        self.assertEqual(merge(ranks).returncode, 0)   # its own job-report.json is not read as a rank

    def test_nccl_choice_per_rank_is_merged_and_a_mixed_choice_shown(self):
        # NCCL's profiler plugin gave each rank's rows an algorithm and
        # protocol; one rank chose differently (NCCL needs every rank alike).
        ranks = os.path.join(self.tmp, "choices")
        templates = [read_json(f) for f in FIXTURES]
        synth.generate(templates, ranks, 4, seed=3)
        for name in sorted(os.listdir(ranks)):
            path = os.path.join(ranks, name)
            d = read_json(path)
            c = d.get("collectives")
            self.assertTrue(c and c["rows"], name)
            odd = d["rank"] == 2
            for row in c["rows"]:
                row["algo"], row["proto"] = ("Tree", "LL") if odd else ("Ring", "Simple")
                row["channels"], row["nnodes"] = 2.0, 1
            c["profiler"] = "on (v6)"
            with open(path, "w") as f:
                json.dump(d, f)
        out = os.path.join(self.tmp, "choices-report")
        p = merge(ranks, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("mixed: Ring/Simple on 3, Tree/LL on 1", p.stdout)
        self.assertIn("NCCL profiler plugin: on (v6) on 4 ranks", p.stdout)
        rep = read_json(os.path.join(out, "job-report.json"))
        validate(rep)
        g = rep["collectives"]["groups"][0]
        self.assertEqual([{"algo_proto": "Ring/Simple", "ranks": 3, "example_ranks": [0, 1, 3]},
                          {"algo_proto": "Tree/LL", "ranks": 1, "example_ranks": [2]}], g["algo_proto"])
        self.assertEqual([{"status": "on (v6)", "ranks": 4, "example_ranks": [0, 1, 2, 3]}],
                         rep["collectives"]["profiler"])
        with open(os.path.join(out, "job-report.html")) as f:
            self.assertIn("mixed: Ring/Simple on 3", f.read())

    def test_summaries_from_before_the_job_fields_show_host_figures_and_say_what_is_missing(self):
        old = os.path.join(self.tmp, "old")
        os.makedirs(old)
        for i, f in enumerate(FIXTURES):
            d = read_json(f)
            d["rank"] = i
            if i == 0:
                d.pop("gpu_timeline")          # older still: no timeline at all
            with open(os.path.join(old, "gpuslack-vm-%d-rank%d.json" % (100 + i, i)), "w") as g:
                json.dump(d, g)
        out = os.path.join(self.tmp, "report")
        p = merge(*sorted(os.path.join(old, f) for f in os.listdir(old)), "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("device health missing on %d of %d ranks" % (len(FIXTURES), len(FIXTURES)), p.stdout)
        self.assertIn("GPU figures missing on 1 of %d ranks" % len(FIXTURES), p.stdout)
        with open(os.path.join(out, "job-report.json")) as f:
            rep = json.load(f)
        self.assertEqual(validate(rep), [])
        self.assertEqual(rep["missing"]["series"], len(FIXTURES))
        self.assertIsNone(rep["timeline"])
        self.assertEqual(rep["stragglers"]["basis"], "collectives_gpu_estimate")
        self.assertGreater(rep["time_lost"]["allocation"]["sum"], 0)

    def test_nothing_usable_exits_2_with_one_line_per_file(self):
        bad = os.path.join(self.tmp, "bad")
        os.makedirs(bad)
        synth.write_bad_files(bad, read_json(FIXTURES[0]))
        p = merge(bad)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len([l for l in p.stderr.splitlines() if l.startswith("skipped: ")]), 5)
        self.assertFalse(os.path.exists(os.path.join(bad, "job-report.html")))

    def test_nan_and_members_of_the_wrong_type_are_skipped_not_fatal(self):
        ranks = os.path.join(self.tmp, "ranks")
        synth.generate([read_json(FIXTURES[0])], ranks, 3)
        good = read_json(os.path.join(ranks, "gpuslack-4242-rank0.json"))
        with open(os.path.join(ranks, "gpuslack-4242-rank8.json"), "w") as f:
            f.write(json.dumps(dict(good, rank=8)).replace('"wall_s":', '"wall_s": NaN, "x":', 1))
        with open(os.path.join(ranks, "gpuslack-4242-rank9.json"), "w") as f:
            json.dump(dict(good, rank=9, job=dict(good["job"], rank=9), categories=[1, 2]), f)
        p = merge(ranks)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("rank8.json is not a JSON document: line 1, column ", p.stderr)
        self.assertIn("rank9.json is not a valid gpuslack summary: categories: expected an object", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(read_json(os.path.join(ranks, "job-report.json"))["ranks"], 3)

    def test_names_from_the_files_are_escaped_in_the_html(self):
        ranks = os.path.join(self.tmp, "ranks")
        synth.generate([read_json(FIXTURES[0])], ranks, 3)
        path = os.path.join(ranks, "gpuslack-4242-rank1.json")
        doc = read_json(path)
        evil = "<img src=x onerror=alert(1)>"
        doc["host"] = doc["job"]["node"] = evil
        doc["collectives"]["env"] = {"NCCL_ALGO": evil}
        doc["call_sites"][0]["frames"][0] = evil + "+0x1 (app)"
        with open(path, "w") as f:
            json.dump(doc, f)
        self.assertEqual(merge(ranks).returncode, 0)
        with open(os.path.join(ranks, "job-report.html")) as f:
            page = f.read()
        self.assertNotIn("<img", page)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;", page)

    def test_top_kernels_launch_shapes_merge_across_ranks(self):
        """Each rank's top kernels with their launch shapes (docs/gpu-timeline.md,
        "Launch shapes and waves") merge by name: GPU time summed, ranges
        widened, the efficiency weighted by GPU time; the text shows them."""
        ranks, gemm, p = self.merged_kernels()
        rep = read_json(os.path.join(ranks, "job-report.json"))
        self.assertEqual([], validate(rep))
        k = [k for k in rep["kernels"] if k["name"] == gemm][0]
        self.assertEqual(2, k["ranks"])
        self.assertAlmostEqual(4.0, k["total_s"])
        self.assertEqual((192, 384), (k["blocks_min"], k["blocks_max"]))
        self.assertEqual(132, k["sm_count"])
        self.assertAlmostEqual((192 / 264 + 384 / 396) / 2, k["wave_efficiency"], places=5)
        self.assertAlmostEqual(2.0, k["underfilled_s"])
        line = [l for l in p.stdout.splitlines() + p.stderr.splitlines() if l.find(gemm[:40]) >= 0]
        self.assertTrue(line, p.stdout + p.stderr)
        self.assertIn("192-384", line[0])
        self.assertIn("1.45-2.91", line[0])
        self.assertIn("84.8%", line[0])

    def test_the_html_has_the_top_kernels_table_across_ranks(self):
        """Issue 29: the HTML shows the same merged kernels as the text and
        JSON, with the GPU time and idle SM time of the grids that left SMs
        idle, one row per kernel, most GPU time first."""
        ranks, gemm, _ = self.merged_kernels()
        rep = read_json(os.path.join(ranks, "job-report.json"))
        with open(os.path.join(ranks, "job-report.html")) as f:
            page = f.read()
        section = re.search(r'<section id="kernels">(.*?)</section>', page, re.S)
        self.assertIsNotNone(section, "no kernels section")
        rows = [(html.unescape(name), rest) for name, rest in
                re.findall(r"<tr><td[^>]*>([^<]*)</td>(.*?)</tr>", section.group(1))]
        self.assertEqual([k["name"] for k in rep["kernels"]], [name for name, _ in rows])
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", dict(rows)[gemm])
        self.assertEqual(["2", "4.00 s", "192-384", "1", "1.45-2.91", "84.8%", "2.00 s", "545.5 ms"], cells)
        # No shapes known: dashes, not zeros.
        other = [k for k in rep["kernels"] if k["blocks_min"] is None]
        self.assertTrue(other, rep["kernels"])
        self.assertEqual("-", re.findall(r"<td[^>]*>([^<]*)</td>", dict(rows)[other[0]["name"]])[2])
        self.assertLess(page.index('id="collectives"'), page.index('id="kernels"'))

    def test_the_allocator_off_is_said_in_json_text_and_html(self):
        """Issue 28, point 5: ranks that selected allocator:vmm and run on
        the runtime's allocator on some device say where and why, merged
        by reason; summaries from before allocator_status count as not
        selecting it."""
        ranks = os.path.join(self.tmp, "ranks")
        synth.generate([read_json(FIXTURES[0])], ranks, 4, seed=3)
        why = "the driver does not support virtual memory management on this device"
        names = sorted(f for f in os.listdir(ranks) if f.endswith(".json"))
        for i, name in enumerate(names):
            path = os.path.join(ranks, name)
            doc = read_json(path)
            if i == 3:
                doc.pop("allocator_status", None)  # from before it
            else:
                doc["allocator_status"] = {"selected": "vmm", "off": [] if i == 0 else
                                           [{"device": d, "why": why} for d in range(i)]}
            with open(path, "w") as f:
                json.dump(doc, f)
        p = merge(ranks)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = read_json(os.path.join(ranks, "job-report.json"))
        self.assertEqual([], validate(rep))
        off_ranks = sorted(read_json(os.path.join(ranks, n))["rank"] for n in names[1:3])
        self.assertEqual({"vmm_selected_ranks": 3, "off": [{"why": why, "ranks": 2, "devices": 3,
                                                            "example_ranks": off_ranks}]},
                         rep["memory"]["allocator_status"])
        self.assertIn("vmm allocator off on 2 ranks (3 devices; ranks %d, %d): %s" % (off_ranks[0], off_ranks[1], why),
                      p.stdout + p.stderr)
        with open(os.path.join(ranks, "job-report.html")) as f:
            page = f.read()
        memory = re.search(r'<section id="memory">(.*?)</section>', page, re.S).group(1)
        self.assertIn("allocator:vmm is selected on 3 ranks but off on some devices", memory)
        self.assertIn("<tr><td>2</td><td>3</td><td>%d, %d</td><td class=\"l\">%s</td></tr>" % (
            off_ranks[0], off_ranks[1], why), memory)
        # Where it serves every device, nothing is said.
        for name in names:
            path = os.path.join(ranks, name)
            doc = read_json(path)
            doc["allocator_status"] = {"selected": "vmm", "off": []}
            with open(path, "w") as f:
                json.dump(doc, f)
        p = merge(ranks)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({"vmm_selected_ranks": 4, "off": []},
                         read_json(os.path.join(ranks, "job-report.json"))["memory"]["allocator_status"])
        self.assertNotIn("vmm allocator off", p.stdout + p.stderr)

    def merged_kernels(self):
        """Two ranks whose top kernels include one GEMM launched in two
        shapes, merged: (the folder, the GEMM's name, the merge's process)."""
        ranks = os.path.join(self.tmp, "ranks")
        synth.generate([read_json(FIXTURES[0])], ranks, 2, seed=3)
        gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cublas"
        for i, name in enumerate(sorted(f for f in os.listdir(ranks) if f.endswith(".json"))):
            path = os.path.join(ranks, name)
            doc = read_json(path)
            self.assertEqual("measured", doc["gpu_timeline"]["status"])
            blocks = 192 if i == 0 else 384
            eff = 192 / 264 if i == 0 else 384 / 396
            doc["gpu_timeline"]["devices"][0]["top_kernels"].insert(0, {
                "name": gemm, "count": 100, "total_s": 2.0, "mean_s": 0.02,
                "launch": {"shapes": 1, "blocks_min": blocks, "blocks_max": blocks, "shaped_s": 2.0, "sm_count": 132,
                           "blocks_per_sm_min": 1, "blocks_per_sm_max": 1, "waves_min": blocks / 132,
                           "waves_max": blocks / 132, "wave_efficiency": eff, "wave_efficiency_min": eff,
                           "below_sms_s": 0, "underfilled_s": 2.0 if i == 0 else 0,
                           "underfilled_idle_s": 2.0 * (1 - eff) if i == 0 else 0,
                           "top_shapes": [{"blocks": blocks, "threads_per_block": 384, "registers_per_thread": 168,
                                           "shared_bytes_per_block": 196608, "blocks_per_sm": 1,
                                           "waves": blocks / 132, "wave_efficiency": eff, "count": 100,
                                           "total_s": 2.0}]}})
            with open(path, "w") as f:
                json.dump(doc, f)
        p = merge(ranks)
        self.assertEqual(p.returncode, 0, p.stderr)
        return ranks, gemm, p

    def test_the_schema_rejects_a_broken_report(self):
        ranks = os.path.join(self.tmp, "ranks")
        synth.generate([read_json(FIXTURES[0])], ranks, 3)
        self.assertEqual(merge(ranks).returncode, 0)
        with open(os.path.join(ranks, "job-report.json")) as f:
            rep = json.load(f)
        for breaks in (lambda r: r.pop("stragglers"), lambda r: r.update(unknown=1),
                       lambda r: r["stragglers"].update(cost_s=-1), lambda r: r.update(report_version=2),
                       lambda r: r["missing"].pop("findings"), lambda r: r.pop("findings")):
            broken = json.loads(json.dumps(rep))
            breaks(broken)
            self.assertNotEqual(validate(broken), [])


class SimulatedJob(Merge):
    """The first test of Merge on the rank files of a real 8-process job on
    the simulated device (simulated_job_folder): the slow rank and the
    throttled one must be found from what the processes measured, each with
    its cause. Every rank runs on this machine, so each is on this host."""
    make_folder = staticmethod(simulated_job_folder)
    node_of_slow = node_of_throttled = socket.gethostname()
    nccl_settings_differ = False


if __name__ == "__main__":
    unittest.main()

"""NCCL's profiler plugin inside libgpuslack.so, end to end on the simulated
NCCL (tests/simcuda/nccl_profiler.cc loads plugins as NCCL does): two ranks
as threads of nccl_profiler_app under LD_PRELOAD, and what the summary JSON
says of NCCL's choices.

  - gpuslack offers itself (NCCL_PROFILER_PLUGIN unset) and NCCL loads it
    at the newest version it knows: each of v1..v6
    (GPUSIM_NCCL_PROFILER_VERSION) says "on (vN)", the rows carry NCCL's
    algorithm and protocol, and from v4 on the records carry GPU time;
  - it steps aside, with one log line, for the user's plugin (named by
    NCCL_PROFILER_PLUGIN, or a libnccl-profiler.so the loader finds), which
    then receives the events; "none" and the knob turn it off.

Environment (CMake): GPUSLACK_SO, NCCL_PROFILER_APP, OTHER_PLUGIN.
"""
import os
import shutil
import unittest

from preload_harness import ENV, OutDirTest, run, summary_file

RANKS = 2
ITERATIONS = 10


class NcclProfiler(OutDirTest):
    def app(self, extra=None, conf="text_summary:off"):
        # NCCL's choice pinned (the simulated NCCL honours NCCL_ALGO and
        # NCCL_PROTO as NCCL does), so that the records can be checked
        # against it; its channels are the cost model's count.
        env = {"GPUSIM_DEVICE_COUNT": str(RANKS), "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
        env.update(extra or {})
        r = run([ENV["NCCL_PROFILER_APP"], str(RANKS), str(ITERATIONS)], self.out, conf=conf, extra=env)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertIn("nccl_profiler_app: ok", r.stdout)
        return r, summary_file(self.out)[1]["collectives"]

    def check_on(self, c, version):
        self.assertEqual("on (v%d)" % version, c["profiler"])
        # Per rank thread, per iteration: two all-reduces and an all-gather.
        self.assertEqual(RANKS * ITERATIONS * 3, c["profiler_records"])
        self.assertEqual(0, c["profiler_dropped"])
        algos = {(a["op"], a["algo"], a["proto"]) for a in c["algorithms"]}
        self.assertEqual({("all-reduce", "Ring", "Simple"), ("all-gather", "Ring", "Simple")}, algos)
        channels = {}
        for a in c["algorithms"]:
            self.assertGreaterEqual(a["channels"], 1.0, a)
            channels[(a["op"], a["size_bucket"])] = a["channels"]
            if version >= 4:
                self.assertEqual(RANKS, a["nranks"], a)
                self.assertEqual(1, a["nnodes"], a)
                self.assertGreater(a["gpu_s"], 0, a)  # the kernel channels' GPU timestamps
                self.assertGreater(a["busbw_gbps"], 0, a)
            else:
                self.assertEqual(0, a["gpu_s"], a)  # v1-v3 give no GPU time
        # Every ledger row carries NCCL's choice for its calls.
        for row in c["rows"]:
            self.assertEqual(("Ring", "Simple"), (row["algo"], row["proto"]), row)
            self.assertGreaterEqual(row["channels"], 1.0, row)
            if version >= 4:  # v1-v3 give no communicator size: records bucketed by one rank's bytes
                self.assertEqual(channels[(row["op"], row["size_bucket"])], row["channels"], row)
        # The two all-reduce sizes are two records of one communicator.
        reduce_buckets = sorted(a["size_bucket"] for a in c["algorithms"] if a["op"] == "all-reduce")
        self.assertEqual([16, 22], reduce_buckets)
        self.assertEqual(1, len({a["comm_hash"] for a in c["algorithms"]}))

    def test_gpuslack_joins_nccl_at_its_newest_version(self):
        r, c = self.app()
        self.check_on(c, 6)
        self.assertNotIn("stepped aside", r.stderr)

    def test_each_interface_version_is_understood(self):
        for version in range(1, 7):
            with self.subTest(version=version):
                shutil.rmtree(self.out, ignore_errors=True)
                _, c = self.app({"GPUSIM_NCCL_PROFILER_VERSION": str(version)})
                self.check_on(c, version)

    def test_an_nccl_without_the_interface_leaves_it_off(self):
        _, c = self.app({"GPUSIM_NCCL_PROFILER_VERSION": "0"})
        self.assertTrue(c["profiler"].startswith("off: NCCL did not load it"), c["profiler"])
        self.assertEqual([], c["algorithms"])
        self.assertEqual("", c["rows"][0]["algo"])

    def test_text_summary_names_the_choice(self):
        r, _ = self.app(conf="summary_detail:full")
        self.assertIn("NCCL profiler plugin: on (v6)", r.stderr)
        self.assertIn("NCCL chose Ring/Simple for all-reduce", r.stderr)

    def other_plugin_lines(self, path):
        with open(path) as f:
            return [line.split() for line in f.read().splitlines()]

    def test_steps_aside_for_a_plugin_the_user_names(self):
        out = os.path.join(self.tmp.name, "other.txt")
        r, c = self.app({"NCCL_PROFILER_PLUGIN": ENV["OTHER_PLUGIN"], "OTHER_PLUGIN_OUT": out})
        self.assertEqual("stepped aside: NCCL_PROFILER_PLUGIN=" + ENV["OTHER_PLUGIN"], c["profiler"])
        self.assertEqual(1, r.stderr.count("stepped aside"), r.stderr)
        self.assertEqual([], c["algorithms"])
        # Theirs got every collective, as NCCL's profiler spells it.
        lines = self.other_plugin_lines(out)
        self.assertEqual(RANKS, len(lines), lines)  # one finalize per rank
        self.assertEqual(["colls=%d" % (RANKS * ITERATIONS * 3), "algo=RING", "proto=SIMPLE"], lines[-1])

    def test_steps_aside_for_a_default_libnccl_profiler(self):
        lib = os.path.join(self.tmp.name, "lib")
        os.makedirs(lib)
        shutil.copy(ENV["OTHER_PLUGIN"], os.path.join(lib, "libnccl-profiler.so"))
        out = os.path.join(self.tmp.name, "other.txt")
        path = lib + ":" + ENV.get("LD_LIBRARY_PATH", "")
        r, c = self.app({"LD_LIBRARY_PATH": path, "OTHER_PLUGIN_OUT": out})
        self.assertEqual("stepped aside: " + os.path.join(lib, "libnccl-profiler.so"), c["profiler"])
        self.assertEqual(1, r.stderr.count("stepped aside"), r.stderr)
        self.assertEqual("colls=%d" % (RANKS * ITERATIONS * 3), self.other_plugin_lines(out)[-1][0])

    def test_steps_aside_for_a_plugin_in_nccl_conf(self):
        conf = os.path.join(self.tmp.name, "nccl.conf")
        with open(conf, "w") as f:
            f.write("# site defaults\nNCCL_PROFILER_PLUGIN=inspector\n")
        _, c = self.app({"NCCL_CONF_FILE": conf})
        self.assertEqual("stepped aside: NCCL_PROFILER_PLUGIN in %s=inspector" % conf, c["profiler"])

    def test_none_and_the_knob_turn_it_off(self):
        _, c = self.app({"NCCL_PROFILER_PLUGIN": "none"})
        self.assertEqual("off: NCCL_PROFILER_PLUGIN=none", c["profiler"])
        shutil.rmtree(self.out)
        _, c = self.app(conf="text_summary:off,nccl_profiler:false")
        self.assertEqual("off: nccl_profiler=false", c["profiler"])
        self.assertEqual(0, c["profiler_records"])

    def test_naming_gpuslack_itself_is_on(self):
        _, c = self.app({"NCCL_PROFILER_PLUGIN": ENV["GPUSLACK_SO"]})
        self.check_on(c, 6)


if __name__ == "__main__":
    unittest.main()

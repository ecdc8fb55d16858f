#!/usr/bin/env python3
"""End to end: the job identity (lib/report/job.h) of preloaded processes
in the summary and the file names, and the no-overwrite rule of a job's
files (Note [Claimed names], lib/report/output.cc): two processes of the
same job and rank write two files, a restarted rank its own, and the
periodic rewrites of one process stay one file.

Environment (tests/interpose/CMakeLists.txt): GPUSLACK_SO, STALL_APP.
"""
import glob
import json
import os
import subprocess
import time
import unittest

from preload_harness import OutDirTest, run

ENV = os.environ
TORCHRUN = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "GROUP_RANK": "1",
            "TORCHELASTIC_RUN_ID": "run/42", "TORCHELASTIC_RESTART_COUNT": "0"}


def load(path):
    with open(path) as f:
        return json.load(f)


class Job(OutDirTest):
    def names(self, pattern="*.json"):
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.out, pattern)))

    def start(self, extra, conf=None):
        env = dict(ENV)
        env.pop("GPUSLACK_CONF", None)
        env.update(GPUSLACK_OUTPUT=self.out, LD_PRELOAD=ENV["GPUSLACK_SO"],
                   ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0", **extra)
        if conf:
            env["GPUSLACK_CONF"] = conf
        p = subprocess.Popen([ENV["STALL_APP"], "sleep"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.assertEqual("ready\n", p.stdout.readline())
        return p

    def test_the_job_object_and_the_identity_line(self):
        r = run([ENV["STALL_APP"], "sync"], self.out, extra=TORCHRUN)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertEqual(["gpuslack-run_42-rank3.json"], self.names())
        doc = load(os.path.join(self.out, "gpuslack-run_42-rank3.json"))
        self.assertEqual(3, doc["rank"])
        self.assertEqual({"id": "run/42", "id_from": "TORCHELASTIC_RUN_ID", "rank": 3, "rank_from": "RANK",
                          "local_rank": 1, "world_size": 8, "node_rank": 1, "local_world_size": -1, "nodes": -1,
                          "node": doc["host"], "restart": 0, "launcher": "torchrun", "nccl_ranks": []}, doc["job"])
        first = [l for l in r.stderr.splitlines() if " lost (pid " in l]
        self.assertEqual(1, len(first), r.stderr)
        self.assertIn(", rank 3 of 8, job run/42)", first[0])
        self.assertIn("node rank 1, local rank 1", r.stderr)

    def test_slurm_gives_the_job_id_and_gpuslack_job_id_wins(self):
        slurm = {"SLURM_PROCID": "5", "SLURM_LOCALID": "0", "SLURM_NODEID": "2", "SLURM_NTASKS": "6",
                 "SLURM_JOB_ID": "98765"}
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off", extra=slurm)
        self.assertEqual(0, r.returncode, r.stderr)
        job = load(os.path.join(self.out, "gpuslack-98765-rank5.json"))["job"]
        self.assertEqual(("98765", "SLURM_JOB_ID", "slurm", 2, 6), (job["id"], job["id_from"], job["launcher"],
                                                                    job["node_rank"], job["world_size"]))
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off",
                extra=dict(slurm, GPUSLACK_JOB_ID="nightly"))
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertEqual("GPUSLACK_JOB_ID", load(os.path.join(self.out, "gpuslack-nightly-rank5.json"))["job"]["id_from"])

    def test_no_job_id_keeps_the_host_and_pid_name(self):
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off", extra={"RANK": "2"})
        self.assertEqual(0, r.returncode, r.stderr)
        [name] = self.names()
        self.assertRegex(name, r"^gpuslack-.+-\d+-rank2\.json$")
        self.assertEqual("", load(os.path.join(self.out, name))["job"]["id"])

    def test_two_processes_with_the_same_rank_and_job_write_two_files(self):
        # Both run at once, each rewriting its summary every 0.1 s.
        first = self.start(TORCHRUN, conf="summary_interval_s:0.1,text_summary:off")
        second = self.start(TORCHRUN, conf="summary_interval_s:0.1,text_summary:off")
        for p in (first, second):
            p.wait(timeout=60)
            self.assertEqual(0, p.returncode, p.stderr.read())
        names = self.names()
        self.assertEqual(2, len(names), names)
        self.assertIn("gpuslack-run_42-rank3.json", names)
        other = [n for n in names if n != "gpuslack-run_42-rank3.json"][0]
        self.assertRegex(other, r"^gpuslack-run_42-rank3-(%d|%d)\.json$" % (first.pid, second.pid))
        pids = {load(os.path.join(self.out, n))["pid"] for n in names}
        self.assertEqual({first.pid, second.pid}, pids)
        self.assertEqual(["exit", "exit"], [load(os.path.join(self.out, n))["reason"] for n in names])
        self.assertEqual([], glob.glob(os.path.join(self.out, ".*")))  # no temporary left

    def test_a_second_run_never_overwrites_the_first(self):
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off", extra=TORCHRUN)
        self.assertEqual(0, r.returncode, r.stderr)
        path = os.path.join(self.out, "gpuslack-run_42-rank3.json")
        with open(path) as f:
            before = f.read()
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off", extra=TORCHRUN)
        self.assertEqual(0, r.returncode, r.stderr)
        with open(path) as f:
            self.assertEqual(before, f.read())
        self.assertEqual(2, len(self.names()))

    def test_a_restarted_rank_writes_a_restart_file(self):
        for restart in ("0", "1"):
            r = run([ENV["STALL_APP"], "sync"], self.out, conf="text_summary:off",
                    extra=dict(TORCHRUN, TORCHELASTIC_RESTART_COUNT=restart))
            self.assertEqual(0, r.returncode, r.stderr)
        self.assertEqual(["gpuslack-run_42-rank3-restart1.json", "gpuslack-run_42-rank3.json"], self.names())
        self.assertEqual(1, load(os.path.join(self.out, "gpuslack-run_42-rank3-restart1.json"))["job"]["restart"])

    def test_periodic_rewrites_stay_one_file(self):
        p = self.start(TORCHRUN, conf="summary_interval_s:0.1,text_summary:off")
        seen = set()
        deadline = time.time() + 1.2
        while time.time() < deadline:
            seen.update(self.names())
            time.sleep(0.05)
        p.wait(timeout=60)
        self.assertEqual(0, p.returncode)
        self.assertEqual({"gpuslack-run_42-rank3.json"}, seen)
        self.assertEqual(["gpuslack-run_42-rank3.json"], self.names())
        self.assertEqual("exit", load(os.path.join(self.out, "gpuslack-run_42-rank3.json"))["reason"])


if __name__ == "__main__":
    unittest.main()

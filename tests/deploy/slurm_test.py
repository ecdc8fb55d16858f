"""docs/deploy.md's Slurm recipe on a real (one-node) Slurm cluster.

Starts munged, slurmctld and slurmd on this machine (slurm_cluster.py),
writes the page's batch script (block slurm-script) as gpuslack-job.sh and
runs the page's submit block (slurm-submit) in a fresh submit folder: its
first line with this machine's shape (--nodes=1 --ntasks-per-node=4, a
10-minute limit) and the multi-process demo for the command
(bench/demo/train_loop --world-from-env: 4 processes, one simulated device
each, whose all-reduces meet through the simulated NCCL across processes),
its second line (the report job, afterany) as it stands. Then checks:

  - both jobs COMPLETED with exit code 0;
  - gpuslack-<job id>/ holds exactly gpuslack-<job id>-rank<R>.json for R
    in 0..3 (named from SLURM_JOB_ID and SLURM_PROCID);
  - each summary's job object: launcher slurm, the job id from
    SLURM_JOB_ID, rank R from SLURM_PROCID, world size 4, local rank R,
    4 ranks on the node, 1 node, this host; an NCCL communicator of 4 with
    rank R; every step's all-reduce counted and timed (the
    collective_timing_every:1 given in GPUSLACK_CONF before submitting:
    the script keeps the knobs it finds);
  - the report job wrote gpuslack-<job id>/report/job-report.{txt,json,html}:
    4 ranks, world size 4, 1 node, the job id, nothing skipped, valid
    against docs/job_report.schema.json.

Every daemon and leftover process is ended at the end, pass or fail; every
wait is bounded; a failure message carries the daemons' logs and the jobs'
output. Needs root and Debian's slurm-wlm (scripts/deps.sh); Release builds
(the demo is built with the benchmarks).

Environment (set by ctest): GPUSLACK_SO, TRAIN_LOOP, SIMCUDA_DIR.
"""
import glob
import json
import os
import re
import socket
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import doc_blocks  # noqa: E402
from slurm_cluster import Cluster  # noqa: E402

TASKS, STEPS = 4, 6
SUBMIT = re.compile(r"^jobid=\$\(sbatch --parsable (?P<shape>.+) gpuslack-job\.sh (?P<command>.+)\)$")
# Bounds (the whole within ctest's 900 s): the node idle 120 s, the submit
# block 120 s, the demo job 300 s, the report job 180 s. It takes about 8 s.
DEMO_TIMEOUT_S, REPORT_TIMEOUT_S = 300, 180


def job_environment(submit):
    """What the test's shell would have: the simulated device under the
    demo, the package from the checkout with the build's library, and a
    knob in GPUSLACK_CONF before the script adds output_dir."""
    drop = ("LD_PRELOAD", "GPUSLACK_CONF", "GPUSLACK_OUTPUT", "GPUSLACK_JOB_ID", "RANK", "WORLD_SIZE",
            "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_PORT", "MASTER_ADDR")
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("GPUSIM_", "TORCHELASTIC_", "NCCL_"))}
    rendezvous = os.path.join(submit, "rendezvous")
    os.mkdir(rendezvous)
    env.update({
        "LD_LIBRARY_PATH": os.environ["SIMCUDA_DIR"],
        "GPUSIM_DEVICE_COUNT": str(TASKS),
        "GPUSIM_NCCL_TIMEOUT_S": "120",
        "TRAIN_LOOP_RENDEZVOUS": rendezvous,
        "GPUSLACK_LIBRARY": os.environ["GPUSLACK_SO"],
        "PYTHONPATH": os.path.join(ROOT, "python_shim"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "GPUSLACK_CONF": "collective_timing_every:1",
    })
    return env


def read(path, chars=6000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-chars:]
    except OSError as e:
        return "(%s)" % e


class SlurmJob(unittest.TestCase):
    def test_the_documented_batch_script_names_each_ranks_summary_and_the_report_job_merges_them(self):
        demo = os.environ["TRAIN_LOOP"]  # checked at the bottom
        script = doc_blocks.block("slurm-script")
        submit_lines = [l for l in doc_blocks.block("slurm-submit").splitlines() if l.strip()]
        self.assertEqual(len(submit_lines), 2, "docs/deploy.md's slurm-submit block: %s" % submit_lines)
        m = SUBMIT.match(submit_lines[0])
        self.assertTrue(m, "docs/deploy.md's submit line is not `jobid=$(sbatch --parsable SHAPE gpuslack-job.sh "
                        "COMMAND)`: %s" % submit_lines[0])
        self.assertTrue(submit_lines[1].startswith("sbatch --dependency=afterany:$jobid "), submit_lines[1])
        command = "%s --world-from-env --steps %d --warmup 1 --grad-mib 1 --hidden 128 --batch 2" % (demo, STEPS)
        first = "jobid=$(sbatch --parsable --nodes=1 --ntasks-per-node=%d --time=10 gpuslack-job.sh %s)" % (
            TASKS, command)
        shell = "set -eu\n%s\necho \"job $jobid\"\n%s\n" % (first, submit_lines[1])

        with tempfile.TemporaryDirectory(prefix="gpuslack-submit-") as submit:
            with open(os.path.join(submit, "gpuslack-job.sh"), "w") as f:
                f.write(script)
            os.chmod(os.path.join(submit, "gpuslack-job.sh"), 0o755)
            env = job_environment(submit)
            t0 = time.monotonic()
            with Cluster() as cluster:
                t_up = time.monotonic() - t0
                r = cluster.command(["bash", "-c", shell], env=cluster.env(env), cwd=submit, timeout=120)
                ids = re.findall(r"^job (\d+)$", r.stdout, re.M) + re.findall(r"Submitted batch job (\d+)", r.stdout)
                cluster.jobs += ids
                self.assertEqual((r.returncode, len(ids)), (0, 2), "the submit block failed:\n%s\n--- stdout\n%s\n"
                                 "--- stderr\n%s\n%s" % (shell, r.stdout, r.stderr, cluster.logs()))
                job, report_job = ids

                def failure(what):
                    outs = "".join("\n--- %s\n%s" % (p, read(p)) for p in sorted(glob.glob(os.path.join(submit, "*.out"))))
                    return "%s%s\n%s" % (what, outs, cluster.logs())

                for j, what, timeout in ((job, "the demo job", DEMO_TIMEOUT_S),
                                         (report_job, "the report job", REPORT_TIMEOUT_S)):
                    state, fields = cluster.wait(j, timeout)
                    self.assertEqual((state, fields.get("ExitCode")), ("COMPLETED", "0:0"),
                                     failure("%s %s: %s" % (what, j, fields)))
                t_jobs = time.monotonic() - t0 - t_up

            out = os.path.join(submit, "gpuslack-" + job)
            names = sorted(n for n in os.listdir(out) if n.endswith(".json"))
            self.assertEqual(names, ["gpuslack-%s-rank%d.json" % (job, r) for r in range(TASKS)],
                             "summaries in %s: %s" % (out, os.listdir(out)))
            host = socket.gethostname().split(".")[0]
            for rank, name in enumerate(names):
                with open(os.path.join(out, name)) as f:
                    doc = json.load(f)
                j = doc["job"]
                want = {"launcher": "slurm", "id": job, "id_from": "SLURM_JOB_ID", "rank": rank,
                        "rank_from": "SLURM_PROCID", "world_size": TASKS, "local_rank": rank,
                        "local_world_size": TASKS, "nodes": 1, "node": host,
                        "nccl_ranks": [{"nranks": TASKS, "rank": rank}]}
                self.assertEqual({k: j.get(k) for k in want}, want, name)
                rows = [row for row in doc["collectives"]["rows"] if row["op"] == "all-reduce"]
                self.assertEqual((sum(r["count"] for r in rows), sum(r["timed"] for r in rows)), (STEPS, STEPS),
                                 "%s: all-reduce rows %s" % (name, rows))

            report = os.path.join(out, "report")
            self.assertEqual(sorted(os.listdir(report)), ["job-report.html", "job-report.json", "job-report.txt"])
            with open(os.path.join(report, "job-report.json")) as f:
                rep = json.load(f)
            self.assertEqual((rep["ranks"], rep["world_size"], rep["nodes"], rep["job_ids"], rep["files"]["read"],
                              rep["files"]["skipped"]), (TASKS, TASKS, 1, [job], TASKS, []))
            self.assertEqual(validate(rep), [])
            with open(os.path.join(report, "job-report.txt")) as f:
                first_line = f.readline()
            self.assertIn("job %s: %d ranks on 1 nodes" % (job, TASKS), first_line)
        print("slurm_test: cluster up in %.1f s; job %s (%d tasks) and its report job done in %.1f s"
              % (t_up, job, TASKS, t_jobs))


def validate(doc):
    from jsonschema import Draft202012Validator
    with open(os.path.join(ROOT, "docs", "job_report.schema.json")) as f:
        schema = json.load(f)
    return [e.json_path + ": " + e.message for e in Draft202012Validator(schema).iter_errors(doc)]


if __name__ == "__main__":
    for name in ("GPUSLACK_SO", "TRAIN_LOOP", "SIMCUDA_DIR"):
        if not os.environ.get(name) or not os.path.exists(os.environ[name]):
            sys.exit("slurm_test.py: %s=%r is not there (ctest sets it: tests/deploy/CMakeLists.txt)"
                     % (name, os.environ.get(name)))
    unittest.main()

#!/usr/bin/env python3
"""End to end: what a careless or hostile configuration and environment
cannot make gpuslack do inside a preloaded process (issue 11, points 5, 8
and 9): knobs out of their range, a summary that cannot be written,
secrets in NCCL_* variables.

Run by ctest, one test method per ctest entry, with the paths of the built
programs in the environment (tests/interpose/CMakeLists.txt): GPUSLACK_SO,
STALL_APP, DLOPEN_LOCAL_APP, NCCL_USER_LIB.
"""
import os
import shutil
import subprocess
import unittest

from preload_harness import OutDirTest, run, summary_file

ENV = os.environ
UNWRITABLE = "/dev/null/gpuslack"  # even root cannot make a directory under a device


def write_failures(stderr):
    return [l for l in stderr.splitlines() if "cannot write summary" in l]


class HostileInput(OutDirTest):
    def sleeper(self, out, conf):
        """stall_app sleep: one CUDA call, then 1.5 s asleep."""
        return run([ENV["STALL_APP"], "sleep"], out, conf=conf)

    # Point 5: summary_interval_s of inf, 1e-9 became a 0 ms period (the
    # summary rewritten in a tight loop: with an unwritable output, an
    # error line each time); 3e6 and more silently disabled the periodic
    # summaries. Each is now refused with one line, and the default (no
    # periodic summary) holds: the only write failure is the one at exit.
    def test_an_interval_out_of_range_is_refused_not_run_in_a_tight_loop(self):
        for value in ("inf", "1e-9", "1e300", "3e6"):
            r = self.sleeper(UNWRITABLE, "summary_interval_s:" + value)
            self.assertEqual(0, r.returncode, r.stderr)
            refused = [l for l in r.stderr.splitlines()
                       if l.startswith("gpuslack: GPUSLACK_CONF: summary_interval_s:" + value + " ")]
            self.assertEqual(1, len(refused), value + ": " + r.stderr[:2000])
            self.assertIn("; using 0", refused[0])
            self.assertEqual(1, len(write_failures(r.stderr)), value + ": " + r.stderr[:2000])

    # Point 5: a periodic summary that cannot be written is told once, not
    # every interval (Note [Periodic failures]); the one at exit is told too.
    def test_a_failing_periodic_summary_is_reported_once(self):
        r = self.sleeper(UNWRITABLE, "summary_interval_s:0.1")
        self.assertEqual(0, r.returncode, r.stderr)
        failures = write_failures(r.stderr)
        self.assertEqual(2, len(failures), r.stderr[:2000])
        self.assertIn("(periodic summaries: not repeated until one is written)", failures[0])
        self.assertNotIn("periodic", failures[1])  # the summary at exit

    # Point 5: staging_chunk_kb had no upper bound and raised the staging
    # budget to match (a 1 MiB copy pinned 1 GiB).
    def test_a_huge_staging_chunk_is_refused(self):
        r = run([ENV["STALL_APP"], "pageable"], self.out, conf="staging_chunk_kb:1048576")
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("gpuslack: GPUSLACK_CONF: staging_chunk_kb:1048576 is out of range (4 to 65536); using 1024",
                      r.stderr.splitlines())
        st = summary_file(self.out)[1]["staging"]
        self.assertEqual(1, st["h2d"]["staged"])
        self.assertEqual(1 << 20, st["chunk_bytes"])
        self.assertEqual(256 << 20, st["budget_bytes"])
        self.assertLessEqual(st["pinned_bytes"], 4 << 20)

    # Point 8: NCCL_* variables went verbatim into the JSON (mode 0644) and
    # onto stderr, NCCL_IB_PASSWORD included. Only the allow-listed tuning
    # variables are recorded, and never one whose name says it holds a secret.
    def test_nccl_secrets_stay_out_of_the_summary(self):
        secret = "hunter2-do-not-print"
        extra = {"NCCL_IB_PASSWORD": secret, "NCCL_IB_HCA": "mlx5_0", "NCCL_ALGO": "Ring",
                 "NCCL_SOCKET_IFNAME": "=eth0", "NCCL_NET_TOKEN": secret, "NCCL_MY_OWN_SETTING": secret,
                 "NCCL_IB_SECRET_KEY": secret}
        r = run([ENV["DLOPEN_LOCAL_APP"], ENV["NCCL_USER_LIB"], "run_nccl_all_reduce"], self.out, extra=extra)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        path, doc = summary_file(self.out)
        env = doc["collectives"]["env"]
        self.assertEqual({"NCCL_ALGO": "Ring", "NCCL_IB_HCA": "mlx5_0", "NCCL_SOCKET_IFNAME": "=eth0"}, env)
        with open(path) as f:
            self.assertNotIn(secret, f.read())
        self.assertIn("NCCL_ALGO=Ring", r.stderr)  # the text summary's environment line
        self.assertNotIn(secret, r.stderr)

    # Point 9: error lines quoted GPUSLACK_CONF raw, so a newline in it
    # forged a log line of the user's choosing (Note [Escaped input]).
    def test_configuration_cannot_forge_a_log_line(self):
        conf = "novalue\ngpuslack FORGED LINE,colour\n\x1b[2J:1,log_level:info\rFORGED"
        r = run([ENV["STALL_APP"], "sync"], self.out, conf=conf)
        self.assertEqual(0, r.returncode, r.stderr)
        lines = r.stderr.splitlines()
        self.assertFalse([l for l in lines if "FORGED" in l and "GPUSLACK_CONF" not in l], r.stderr)
        self.assertNotIn("\x1b", r.stderr)
        self.assertNotIn("\r", r.stderr)
        self.assertIn("gpuslack: GPUSLACK_CONF: 'novalue\\ngpuslack FORGED LINE' is not key:value; ignored", lines)
        self.assertIn("gpuslack: GPUSLACK_CONF: unknown key 'colour\\n\\x1b[2J'; ignored", lines)

    # Point 9: log_file followed symlinks, created every missing directory
    # on its path, and was created (empty) by a process that logged nothing
    # (Note [Log file]).
    def test_log_file_never_follows_a_symlink_nor_creates_what_it_does_not_write(self):
        victim = os.path.join(self.tmp.name, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        link = os.path.join(self.tmp.name, "link.log")
        os.symlink(victim, link)
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="log_level:debug,log_file:" + link)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("gpuslack: cannot open log_file %s (a symlink, not followed); logging to stderr" % link,
                      r.stderr.splitlines())
        self.assertIn("gpuslack: session started", r.stderr)  # the log went to stderr instead
        with open(victim) as f:
            self.assertEqual("precious\n", f.read())

        deep = os.path.join(self.tmp.name, "missing", "dir", "gpuslack.log")
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="log_level:debug,log_file:" + deep)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("cannot open log_file " + deep, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "missing")))

        quiet = os.path.join(self.tmp.name, "quiet.log")
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="log_file:" + quiet)  # nothing at warn
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertFalse(os.path.exists(quiet))
        r = run([ENV["STALL_APP"], "sync"], self.out, conf="log_level:debug,log_file:" + quiet)
        with open(quiet) as f:
            self.assertIn("gpuslack: session started", f.read())

    # Point 9: configuration was read with getenv, so in a setuid program
    # GPUSLACK_CONF=log_file:... and GPUSLACK_OUTPUT let an unprivileged
    # user make root create directories and files of their choosing, and
    # NVTX_INJECTION64_PATH made root load a library of their choosing
    # (Note [Secure execution]). A real setuid-root copy of secure_app, run
    # as nobody: it reads none of it and writes no file; the text summary
    # still goes to stderr. Needs root (CI runs as root) and setpriv.
    def test_a_setuid_process_reads_no_variable_and_writes_no_file(self):
        # Runs everywhere the suite runs (CI is root; setpriv comes with
        # util-linux, which scripts/deps.sh installs): never skipped.
        self.assertEqual(0, os.geteuid(), "making a setuid-root program needs root: run the suite as root")
        self.assertIsNotNone(shutil.which("setpriv"), "setpriv (util-linux) is missing: run scripts/deps.sh")
        root = os.path.join(self.tmp.name, "setuid")
        work = os.path.join(root, "work")  # the unprivileged user's directory
        os.makedirs(work)
        os.chmod(self.tmp.name, 0o755)
        os.chmod(root, 0o755)
        os.chmod(work, 0o777)
        app = os.path.join(root, "secure_app")
        shutil.copy(ENV["SECURE_APP"], app)
        os.chown(app, 0, 0)
        os.chmod(app, 0o4755)
        env = dict(ENV)
        env.update(GPUSLACK_CONF="log_file:%s/gpuslack.log,log_level:debug,json_summary:true" % work,
                   GPUSLACK_OUTPUT=os.path.join(work, "out"),
                   NVTX_INJECTION64_PATH=ENV["NVTX_RECORDER"],
                   NVTX_RECORDER_OUT=os.path.join(work, "nvtx.jsonl"),
                   ASAN_OPTIONS="detect_leaks=0")

        def run_app(argv_prefix):
            r = subprocess.run(argv_prefix + [app, ENV["GPUSLACK_SO"]], env=env, cwd=work, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(0, r.returncode, r.stdout + r.stderr)
            self.assertIn(" lost (pid ", r.stderr)  # the text summary at exit, on stderr
            return r, sorted(os.listdir(work))

        # The same program and environment, not setuid: all of it is obeyed.
        r, written = run_app([])
        self.assertEqual("AT_SECURE=0\n", r.stdout)
        self.assertEqual(["gpuslack.log", "nvtx.jsonl", "out"], written)
        with open(os.path.join(work, "gpuslack.log")) as f:
            self.assertIn("gpuslack: session started", f.read())  # log_level:debug
        for name in written:
            path = os.path.join(work, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
        # Setuid root, run by nobody: none of it.
        r, written = run_app(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        self.assertEqual("AT_SECURE=1\n", r.stdout)
        self.assertEqual([], written)
        self.assertNotIn("session started", r.stderr)  # log_level stayed warn


if __name__ == "__main__":
    unittest.main()

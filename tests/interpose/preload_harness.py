"""What the end-to-end tests of tests/interpose share: running a program
with libgpuslack.so preloaded into a fresh output folder, reading the
summary it wrote, and a test case with such a folder.

Environment (set by CMake): GPUSLACK_SO, and whatever the program needs.
"""
import glob
import json
import os
import subprocess
import tempfile
import unittest

ENV = os.environ


def run(argv, out_dir, conf=None, extra=None, preload=True, timeout=60):
    """Runs `argv` with gpuslack preloaded (unless `preload` is false),
    GPUSLACK_CONF=`conf` (nothing inherited) and its output in `out_dir`."""
    env = dict(ENV)
    env.pop("GPUSLACK_CONF", None)
    env["GPUSLACK_OUTPUT"] = out_dir
    env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
    if preload:
        env["LD_PRELOAD"] = ENV["GPUSLACK_SO"]
    if conf:
        env["GPUSLACK_CONF"] = conf
    env.update(extra or {})
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def summary_file(out_dir):
    """The one summary JSON in `out_dir`: (its path, the document)."""
    files = glob.glob(os.path.join(out_dir, "gpuslack-*.json"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        return files[0], json.load(f)


def call(doc, name):
    """The summary's row of the hooked call `name`."""
    rows = [c for c in doc["calls"] if c["name"] == name]
    assert len(rows) == 1, (name, [c["name"] for c in doc["calls"]])
    return rows[0]


class OutDirTest(unittest.TestCase):
    """A test with a fresh output folder, self.out, removed afterwards."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

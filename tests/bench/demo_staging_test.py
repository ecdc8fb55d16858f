#!/usr/bin/env python3
"""The demo under gpuslack, its pageable input copies staged against native,
in one run (issue 5: "the demo under gpuslack shows its pageable input copy
no longer blocking (copy stall near zero), against native in the same
run").

The demo prefetches each step's input batch (pageable, ~45 KiB per rank) at
the end of the previous step, behind that step's all-reduce on the same
stream. Natively the driver drains the stream first, so the host waits for
the all-reduce there; staged, the copy returns at once. The copies are at
most 64 KiB, which the Programming Guide makes asynchronous natively (the
simulated device's default); the Runtime API's "API synchronization
behavior" drains before them. The runs take the Runtime API's reading
(GPUSIM_PAGEABLE_ASYNC_BYTES=0: tests/simcuda/README.md, "Where the
documentation is not clear"), the one under which staging them matters;
tests/conformance tells which one a real GPU follows. Runs
bench/demo/train_loop on the simulated device three times: without
gpuslack, under gpuslack with stage_copies:false, and under gpuslack as it
ships. The simulated link is slowed (GPUSIM_COST_NCCL_GBPS=0.2) and the
gradients made small (4 MiB) so that the all-reduce is ~20 ms of modeled
GPU time rather than host CPU spent reducing: on a 2-core machine that CPU
work would starve the host thread and blur what is measured.

Reads the demo's own measure of host time blocked in the input copies, and
each gpuslack run's summary. Prints the rows; fails unless the staged copies
block less than a fifth of the native ones, in total and per step, none
of them waited (no pending device-to-host work, no staging budget), and the
summary names the call site.

Environment: TRAIN_LOOP, GPUSLACK_SO, GPUSIM_DIR (set by CMake).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ENV = os.environ
STEPS = 8


def run(conf, out):
    env = dict(ENV)
    env.update({
        "LD_LIBRARY_PATH": ENV["GPUSIM_DIR"],
        "GPUSIM_DEVICE_COUNT": "2",
        "GPUSIM_COST_NCCL_GBPS": "0.2",
        "GPUSIM_PAGEABLE_ASYNC_BYTES": "0",
        "GPUSLACK_OUTPUT": out,
    })
    if conf is not None:
        env["LD_PRELOAD"] = ENV["GPUSLACK_SO"]
        env["GPUSLACK_CONF"] = conf
    argv = [ENV["TRAIN_LOOP"], "--steps", str(STEPS), "--hidden", "256", "--grad-mib", "4"]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        raise AssertionError(f"train_loop ({conf}) failed: {r.stdout}\n{r.stderr}")
    copies = re.search(r"input copies: ([0-9.]+) ms in total, median ([0-9.]+) ms per step", r.stdout)
    if not copies:
        raise AssertionError(f"unexpected output ({conf}): {r.stdout}")
    row = {"total_ms": float(copies.group(1)), "median_ms": float(copies.group(2))}
    if conf is not None:
        docs = glob.glob(os.path.join(out, "gpuslack-*.json"))
        if len(docs) != 1:
            raise AssertionError(f"no summary ({conf}): {docs}\n{r.stderr}")
        with open(docs[0]) as f:
            row["doc"] = json.load(f)
    return row


class DemoStaging(unittest.TestCase):
    def test_staged_input_copies_do_not_block(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, \
                tempfile.TemporaryDirectory() as c:
            plain = run(None, a)
            native = run("stage_copies:false,text_summary:off", b)
            staged = run("text_summary:off", c)
        for name, r in (("no gpuslack", plain), ("stage_copies:false", native), ("staged", staged)):
            print(f"{name:18}  input copies blocked {r['total_ms']:9.3f} ms in total, "
                  f"median {r['median_ms']:7.3f} ms per step", file=sys.stderr)
        # The control: natively each prefetch waits for the all-reduce.
        self.assertGreater(native["median_ms"], 5.0)
        self.assertGreater(plain["median_ms"], 5.0)
        # Near zero: ~0.15 ms a step against ~20 on a quiet machine; on a
        # loaded one the simulated GPU's work competes with the host thread
        # for the same two cores, hence the margin.
        self.assertLess(staged["total_ms"], native["total_ms"] / 5)
        self.assertLess(staged["median_ms"], native["median_ms"] / 5)
        st = staged["doc"]["staging"]
        ranks = 2
        self.assertEqual(ranks * (STEPS + 1), st["h2d"]["seen"])
        self.assertEqual(st["h2d"]["seen"], st["h2d"]["staged"])
        self.assertEqual(0, st["host_work_waits"])
        self.assertEqual(0, st["budget_waits"])
        self.assertTrue(st["sites"] and any("main" in f for f in st["sites"][0]["frames"]), st["sites"])
        # The summary's own copy table agrees: pageable H2D time lost.
        def pageable_h2d_s(doc):
            return sum(c["total_s"] for c in doc["copies"] if c["kind"] == "H2D" and c["host"] == "pageable")
        self.assertLess(pageable_h2d_s(staged["doc"]), pageable_h2d_s(native["doc"]) / 10)
        self.assertEqual(ranks * (STEPS + 1), native["doc"]["staging"]["passed_because"]["off"])


if __name__ == "__main__":
    unittest.main()

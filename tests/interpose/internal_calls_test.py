#!/usr/bin/env python3
"""End to end: a preloaded program's calls are counted exactly once each,
and the summary shows no call the program did not make, even for the
runtime calls the simulated runtime implements on top of another of its
calls (Note [Internal calls] in tests/simcuda/sim.h: cudaMallocPitch and
cudaMalloc3D allocate as cudaMalloc does, the stream-creation calls create
as cudaStreamCreateWithPriority does, cudaMemcpyPeer copies as
cudaMemcpyPeerAsync does).

Environment (tests/interpose/CMakeLists.txt): GPUSLACK_SO, INTERNAL_CALLS_APP.
"""
import os
import unittest

from preload_harness import OutDirTest, run, summary_file

ENV = os.environ

# What internal_calls_app calls, and how often.
MADE = {
    "cudaMallocPitch": 1,
    "cudaMalloc3D": 1,
    "cudaStreamCreate": 1,
    "cudaStreamCreateWithFlags": 1,
    "cudaMemcpyPeer": 1,
    "cudaStreamDestroy": 2,
    "cudaFree": 2,
}


class InternalCalls(OutDirTest):
    def test_each_call_is_counted_once_and_none_is_invented(self):
        r = run([ENV["INTERNAL_CALLS_APP"]], self.out)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("internal_calls_app: ok", r.stdout)
        doc = summary_file(self.out)[1]
        counted = {c["name"]: c["count"] for c in doc["calls"]}
        for name, n in MADE.items():
            self.assertEqual(n, counted.get(name), (name, counted))
        # The runtime's own entry points (cudaGetErrorString is never
        # called on success) are not the program's calls.
        invented = {n: c for n, c in counted.items() if n not in MADE}
        self.assertEqual({}, invented)


if __name__ == "__main__":
    unittest.main()

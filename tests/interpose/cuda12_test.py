#!/usr/bin/env python3
"""A program built against CUDA 12 (programs/cuda12_app.cc) on the simulated
libcudart.so.12 (tests/simcuda, "CUDA 12"): natively and with gpuslack
preloaded it must print the same lines -- every call's result, the last
error after it, cudaMemcpyBatchAsync's failIdx, what the copies moved, what
the capture queries said -- and the summary must count its calls; gpuslack's
C API must find a capture's graph on that runtime (issue 18, point 4).

Environment (set by CMake): GPUSLACK_SO, CUDA12_APP.
"""
import os
import subprocess
import unittest

from preload_harness import OutDirTest, call, run, summary_file

ENV = os.environ


class Cuda12(OutDirTest):
    def app(self, conf=None, preload=True):
        r = run([ENV["CUDA12_APP"], "run"], self.out, conf=conf, preload=preload)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        return r.stdout

    def native(self):
        out = self.app(preload=False)
        # What the CUDA 12 runtime itself answers, so that agreement with it
        # means something.
        self.assertIn("runtime 12090\n", out)
        self.assertIn("batch made: rc 0 failIdx 77 last 0\n", out)
        self.assertIn("batch refused at 1: rc 1 failIdx 1 last 1\n", out)
        self.assertIn("batch refused at 0: rc 1 failIdx 0 last 1\n", out)
        self.assertIn("batch empty: rc 1 failIdx SIZE_MAX 0 last 1\n", out)
        self.assertIn("batch ptsz: rc 0 failIdx 77 last 0\n", out)
        self.assertIn("capture status 1 same id 1 graph set\n", out)
        self.assertIn("same graph 1\n", out)
        self.assertIn("past the struct intact\n", out)
        return out

    def test_runs_against_libcudart_so_12_only(self):
        r = subprocess.run(["ldd", ENV["CUDA12_APP"]], capture_output=True, text=True)
        self.assertIn("libcudart.so.12 =>", r.stdout)
        self.assertNotIn("libcudart.so.13", r.stdout)

    def test_same_results_natively_and_under_gpuslack(self):
        self.assertEqual(self.native(), self.app(conf="text_summary:off"))

    def test_same_results_under_the_vmm_allocator(self):
        # The VMM allocator's refusals of a batch (Note [Ranges in VMM
        # blocks]) name the copy in failIdx as the runtime does.
        self.assertEqual(self.native(), self.app(conf="allocator:vmm,text_summary:off"))

    def test_summary_counts_the_cuda12_calls(self):
        self.app(conf="text_summary:off")
        _, doc = summary_file(self.out)
        expected = {"cudaMemcpyBatchAsync": 4, "cudaMemcpyBatchAsync_ptsz": 1, "cudaMalloc": 2, "cudaFree": 2,
                    "cudaMallocHost": 2, "cudaMemcpy": 2, "cudaStreamBeginCapture": 1, "cudaStreamEndCapture": 1,
                    "cudaGraphLaunch": 1, "cudaMemsetAsync": 1}
        for name, count in expected.items():
            self.assertEqual(count, call(doc, name)["count"], name)
        # The bytes of the batches that succeeded: made (64 + 32 KiB), and
        # the per-thread one (64 KiB); refused and empty ones move none.
        self.assertEqual(96 << 10, call(doc, "cudaMemcpyBatchAsync")["bytes"])
        self.assertEqual(64 << 10, call(doc, "cudaMemcpyBatchAsync_ptsz")["bytes"])

    def test_c_api_finds_the_capture_graph_on_cuda12(self):
        r = run([ENV["CUDA12_APP"], "capi", ENV["GPUSLACK_SO"]], self.out, preload=False)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertIn("capi: ok", r.stdout)


if __name__ == "__main__":
    unittest.main()

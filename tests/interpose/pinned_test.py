#!/usr/bin/env python3
"""End to end: the pinned heap behind cudaMallocHost/cudaHostAlloc/
cudaFreeHost, with libgpuslack.so preloaded under pinned_app on the
simulated device, against the same program run natively.

Run by ctest, one test method per ctest entry, with GPUSLACK_SO, PINNED_APP,
SCHEMA and VALIDATOR in the environment (tests/interpose/CMakeLists.txt).
"""
import os
import subprocess
import sys
import unittest

import preload_harness
from preload_harness import OutDirTest, call, summary_file

ENV = os.environ


def run(mode, out_dir, conf=None, extra=None, preload=True):
    return preload_harness.run([ENV["PINNED_APP"], mode], out_dir, conf, extra, preload)


summary = summary_file


def printed(r, key):
    """The number after `key` on stdout."""
    words = r.stdout.split()
    return float(words[words.index(key) + 1])


class Pinned(OutDirTest):
    def test_cuda_free_host_no_longer_waits_for_the_device(self):
        native = run("free", self.out, preload=False)
        self.assertEqual(0, native.returncode, native.stderr)
        r = run("free", self.out)
        self.assertEqual(0, r.returncode, r.stderr)
        # The same cudaFreeHost behind the same 50 ms kernel. Natively it
        # waits for the kernel; under gpuslack it must not. 20 ms leaves room
        # for a loaded machine and the sanitizer builds (5.1 ms seen under
        # load) and still tells a wait of 50 ms from none.
        self.assertGreaterEqual(printed(native, "free_ms"), 45)
        self.assertLess(printed(r, "free_ms"), 20)
        path, doc = summary(self.out)
        self.assertLess(call(doc, "cudaFreeHost")["max_s"], 0.020)
        p = doc["pinned"]
        self.assertEqual(1, p["allocations"])
        self.assertEqual(1, p["frees"])
        self.assertEqual(64 << 20, p["chunk_size"])
        self.assertEqual(64 << 20, p["pinned"])
        self.assertGreater(p["cap"], 0)
        self.assertEqual(0, p["fallbacks"])
        self.assertIn("pinned heap: 64.0 MiB pinned", r.stderr)
        self.assertIn("1 frees without a device sync", r.stderr.replace("\ngpuslack:   ", " "))  # wrapped at 80
        v = subprocess.run(["/usr/bin/python3", ENV["VALIDATOR"], ENV["SCHEMA"], path], capture_output=True, text=True)
        self.assertEqual(0, v.returncode, v.stdout + v.stderr)

    def test_pin_off_leaves_pinned_memory_to_the_runtime(self):
        r = run("free", self.out, conf="pin:false")
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertGreaterEqual(printed(r, "free_ms"), 45)
        _, doc = summary(self.out)
        self.assertNotIn("pinned", doc)
        self.assertGreaterEqual(call(doc, "cudaFreeHost")["max_s"], 0.045)

    def test_blocks_freed_under_pending_copies_keep_their_bytes_with_eight_threads(self):
        native = run("reuse", self.out, preload=False)
        self.assertEqual(0, native.returncode, native.stderr)
        r = run("reuse", self.out, conf="pinned_chunk_mb:8")
        self.assertEqual(0, r.returncode, r.stderr)
        _, doc = summary(self.out)
        p = doc["pinned"]
        self.assertEqual(400, p["allocations"])  # 8 threads x 25 x 2
        self.assertEqual(400, p["frees"])
        self.assertEqual(0, p["live"])
        self.assertEqual(0, p["fallbacks"])
        self.assertGreater(p["epochs"], 0)

    def test_write_combined_is_left_to_the_runtime(self):
        r = run("flags", self.out)
        self.assertEqual(0, r.returncode, r.stderr)
        _, doc = summary(self.out)
        p = doc["pinned"]
        self.assertEqual(2, p["passthrough"])
        self.assertEqual(0, p["allocations"])

    def test_a_failing_cuda_host_alloc_falls_back_cleanly(self):
        # The heap's first chunk is the runtime's first cudaHostAlloc: it
        # fails (4 MiB chunks: no smaller one to try); the application's
        # call reaches the runtime and succeeds.
        r = run("fault", self.out, conf="pinned_chunk_mb:4", extra={"GPUSIM_FAIL": "cudaHostAlloc:1"})
        self.assertEqual(0, r.returncode, r.stderr)
        _, doc = summary(self.out)
        p = doc["pinned"]
        self.assertEqual(1, p["fallbacks"])
        self.assertEqual(0, p["cap_hits"])
        self.assertEqual(1, p["allocations"])  # the second call: the heap recovered
        self.assertEqual(1, p["frees"])
        self.assertEqual(2, call(doc, "cudaMallocHost")["count"])
        self.assertEqual(2, call(doc, "cudaFreeHost")["count"])
        # When every cudaHostAlloc fails, the application gets the runtime's
        # own error, as without gpuslack.
        fail_all = {"GPUSIM_FAIL": "cudaHostAlloc:1+"}
        native = run("fault", os.path.join(self.tmp.name, "native"), extra=fail_all, preload=False)
        r = run("fault", os.path.join(self.tmp.name, "all"), extra=fail_all)
        self.assertEqual(1, native.returncode)
        self.assertEqual(native.returncode, r.returncode)
        self.assertIn("cudaMallocHost(&p, 4096): cudaErrorMemoryAllocation", native.stderr)
        self.assertIn("cudaMallocHost(&p, 4096): cudaErrorMemoryAllocation", r.stderr)

    def test_trim_through_the_c_api_gives_chunks_back(self):
        r = run("trim", self.out, conf="pinned_chunk_mb:8")
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertGreater(printed(r, "trimmed"), 0)
        self.assertEqual(8 << 20, printed(r, "pinned"))  # the chunk with jemalloc's metadata
        _, doc = summary(self.out)
        self.assertEqual(printed(r, "trimmed"), doc["pinned"]["trimmed"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])

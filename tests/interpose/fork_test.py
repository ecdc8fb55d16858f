#!/usr/bin/env python3
"""End to end: a fork while another thread runs the VMM allocator's cached
pair (its front cache's lock held for most of each pair) never hangs nor
breaks the child (Note [The allocators after a fork] in
lib/alloc/process_allocators.cc).

fork_app (tests/interpose/programs/fork_app.cc) forks FORKS times, with
libgpuslack.so preloaded and allocator:vmm, while a second thread loops
cudaMallocAsync/cudaFreeAsync served by its front cache. Each child mallocs
and frees host memory, calls the allocation hooks (cudaMemGetInfo, the
parent's blocks freed, new ones allocated and freed), and exits through
exit(), writing its own summary. Before the child forgot its parent's
allocators, a child whose fork caught a front cache's lock held waited for
it forever (about one fork in two).

Run by ctest, one test method per ctest entry, with GPUSLACK_SO and
FORK_APP in the environment (tests/interpose/CMakeLists.txt).
"""
import glob
import json
import os
import re
import sys
import unittest

from preload_harness import OutDirTest, run

ENV = os.environ
# Under a sanitizer a fork of the instrumented process costs several times
# more (ASan: ~0.1 s): fewer forks, the same check.
FORKS = 40 if ENV.get("GPUSLACK_TEST_SANITIZED") else 200
# A cudaError_t the runtime may answer in the child, as a number: 0 (success)
# or an error; never a hang. The child's own allocations are served (the
# simulated runtime, unlike a real one, works in a forked child).
CHILD_LINE = re.compile(
    r"^child (\d+) get_info (\d+) free_parent (\d+) free_front_held (\d+) malloc (\d+) free (\d+) async (\d+) "
    r"free_parent_pinned (\d+) pinned (\d+)$",
    re.M)


class Fork(OutDirTest):
    def test_a_fork_during_the_cached_pair_never_hangs_the_child(self):
        # Each child's first CUDA call starts its session, whose reporter is
        # a thread: TSan, which refuses threads in the child of a
        # multi-threaded process by default, is told to allow them (as for
        # tests/lib/session/fork_test.cc). And the pinned heap's jemalloc
        # instance takes all its locks in its prefork handler, more than
        # the 64 that TSan's deadlock detector holds per thread (a CHECK
        # failure in TSan itself): races are still detected, lock-order
        # inversions not.
        tsan = ":".join(o for o in (ENV.get("TSAN_OPTIONS", ""), "die_after_fork=0", "detect_deadlocks=0") if o)
        r = run([ENV["FORK_APP"], str(FORKS)], self.out, conf="allocator:vmm,text_summary:off", timeout=280,
                extra={"TSAN_OPTIONS": tsan})
        self.assertEqual(0, r.returncode, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("forks %d hung 0 failed 0" % FORKS, r.stdout)
        # A child that hung on a lock of the sanitizer's runtime was forked
        # again (Note [A sanitizer's lock held at a fork]): its fork number
        # may have printed twice, and it may have written a summary.
        retried = int(re.search(r"^sanitizer_hangs (\d+)$", r.stdout, re.M).group(1))
        if not ENV.get("GPUSLACK_TEST_SANITIZED"):
            self.assertEqual(0, retried, r.stderr[-3000:])
        children = {int(c[0]): c for c in CHILD_LINE.findall(r.stdout)}
        self.assertEqual(list(range(FORKS)), sorted(children), r.stdout[-3000:] + r.stderr[-3000:])
        children = list(children.values())
        for c in children:
            # The child's own allocations, on the device, on stream 0 and pinned.
            self.assertEqual(("0", "0", "0"), c[4:7], c)
            self.assertEqual("0", c[8], c)
        # Each child wrote its own summary, and the parent its own: no
        # child wrote the parent's, nor failed to write its own.
        files = glob.glob(os.path.join(self.out, "gpuslack-*.json"))
        self.assertLessEqual(FORKS + 1, len(files), r.stderr[-3000:])
        self.assertGreaterEqual(FORKS + 1 + retried, len(files), r.stderr[-3000:])
        for path in files:
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual("exit", doc["reason"], path)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:])

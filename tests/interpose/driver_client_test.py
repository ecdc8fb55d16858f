#!/usr/bin/env python3
"""End to end: a program that uses the CUDA driver only and finds every
function through cuGetProcAddress (driver_client_app), as JAX/XLA do, with
libgpuslack.so preloaded on the simulated device (issue 18): each of its
driver calls is in the summary once, under the exported variant the lookup
resolved to; the VMM functions found through the runtime's
cudaGetDriverEntryPointByVersion(name, 12000), as PyTorch's expandable
segments find them, are accounted too; and gpuslack's own driver calls (its
VMM allocator under allocator:vmm) never reach its hooks. With --dlsym the
same program finds each function by dlsym on libcuda.so.1's handle
(interpose/dl_hooks.cc): the same calls are counted, and every other lookup
(unhooked and missing names, dlvsym, RTLD_NEXT and RTLD_DEFAULT from a
library) answers as without gpuslack, dlerror()'s text included.

Run by ctest, one test method per ctest entry, with GPUSLACK_SO,
DRIVER_CLIENT_APP and SIMCUDA_DIR in the environment
(tests/interpose/CMakeLists.txt).
"""
import os
import sys
import unittest

import preload_harness
from preload_harness import OutDirTest, call, summary_file

ENV = os.environ
N = 5
MIB = 1 << 20


class DriverClient(OutDirTest):
    def run_app(self, args, conf="text_summary:off", preload=True):
        extra = {"LD_LIBRARY_PATH": ENV["SIMCUDA_DIR"]}
        r = preload_harness.run([ENV["DRIVER_CLIENT_APP"], str(N)] + args, self.out, conf, extra,
                                preload=preload, timeout=100)
        self.assertEqual(0, r.returncode, r.stdout[-2000:] + r.stderr[-4000:])
        self.assertIn("driver_client_app: ok", r.stdout)
        return r

    def counts(self, doc):
        return {c["name"]: c for c in doc["calls"]}

    def lines(self, r, kind):
        return [l for l in r.stdout.splitlines() if l.startswith(kind + ": ")]

    def test_native_run_succeeds(self):
        self.run_app([], preload=False)
        self.run_app(["--runtime"], preload=False)

    def test_driver_calls_are_in_the_summary_once_each(self, args=()):
        self.run_app(list(args))
        _, doc = summary_file(self.out)
        rows = self.counts(doc)
        expected = {
            "cuMemAlloc_v2": 2 * N, "cuMemFree_v2": 2 * N, "cuMemAllocHost_v2": N, "cuMemFreeHost": N,
            "cuMemcpyHtoD_v2": N, "cuMemcpyHtoD_v2_ptds": N, "cuMemcpyDtoD_v2": N, "cuMemcpyDtoH_v2": 2 * N,
            "cuMemcpyHtoDAsync_v2": N, "cuMemsetD8_v2": N, "cuMemsetD32Async": N,
            "cuStreamSynchronize": N, "cuEventSynchronize": N, "cuCtxSynchronize": N,
            "cuStreamCreate": 1, "cuStreamDestroy_v2": 1,
            "cuMemAddressReserve": N, "cuMemCreate": N, "cuMemMap": N, "cuMemSetAccess": N,
            "cuMemUnmap": N, "cuMemRelease": N, "cuMemAddressFree": N,
        }
        for name, n in expected.items():
            self.assertIn(name, rows, sorted(rows))
            self.assertEqual(n, rows[name]["count"], name)
        # Categories and bytes: what the summary's figures are made of.
        self.assertEqual("allocation", rows["cuMemAlloc_v2"]["category"])
        self.assertEqual("copy", rows["cuMemcpyHtoD_v2"]["category"])
        self.assertEqual("sync", rows["cuStreamSynchronize"]["category"])
        self.assertEqual("allocation", rows["cuMemMap"]["category"])
        self.assertEqual(2 * N * 4 * MIB, rows["cuMemAlloc_v2"]["bytes"])
        self.assertEqual(N * 4 * MIB, rows["cuMemcpyHtoD_v2"]["bytes"])
        self.assertEqual(N * 2 * MIB, rows["cuMemMap"]["bytes"])
        # The lookups themselves are not calls of the ledger.
        self.assertNotIn("cuGetProcAddress_v2", rows)

    def test_vmm_entry_points_of_the_runtime_are_accounted(self):
        self.run_app(["--runtime"])
        _, doc = summary_file(self.out)
        rows = self.counts(doc)
        for name in ("cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess"):
            self.assertEqual(N, rows[name]["count"], name)
        self.assertEqual(N, rows["cudaMalloc"]["count"])

    def test_gpuslacks_own_driver_calls_never_reach_its_hooks(self):
        # Under allocator:vmm, cudaMalloc is served by gpuslack's VMM
        # allocator, which reserves, creates, maps and grants access through
        # the driver itself (cuda/driver_api.h: resolved on libcuda.so.1's
        # handle). None of it may appear as the program's calls.
        self.run_app(["--runtime"], conf="text_summary:off,allocator:vmm")
        _, doc = summary_file(self.out)
        rows = self.counts(doc)
        self.assertTrue(any(a["peak_reserved"] > 0 for a in doc["allocator"]), doc["allocator"])
        for name in ("cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess"):
            self.assertEqual(N, rows[name]["count"], name)
            self.assertEqual(N * 2 * MIB if name != "cuMemCreate" else N * 2 * MIB, rows[name]["bytes"], name)

    def test_dlsym_on_the_drivers_handle_hands_out_the_hooks(self):
        # Each function found by dlsym(handle of libcuda.so.1, exported name)
        # is gpuslack's hook: every call in the summary once.
        self.test_driver_calls_are_in_the_summary_once_each(["--dlsym"])
        native = self.run_app(["--dlsym"], preload=False)
        self.assertEqual(["hooked: dlsym cuMemAlloc_v2 -> libcuda.so.1", "hooked: dlsym cuGetProcAddress_v2 -> libcuda.so.1"],
                         self.lines(native, "hooked"))
        preloaded = self.run_app(["--dlsym"])
        self.assertEqual(["hooked: dlsym cuMemAlloc_v2 -> libgpuslack.so", "hooked: dlsym cuGetProcAddress_v2 -> libgpuslack.so"],
                         self.lines(preloaded, "hooked"))

    def test_every_other_lookup_is_answered_as_without_gpuslack(self):
        native = self.lines(self.run_app(["--dlsym"], preload=False), "same")
        preloaded = self.lines(self.run_app(["--dlsym"]), "same")
        self.assertEqual(16, len(native), native)
        self.assertEqual(native, preloaded)
        # RTLD_NEXT from the first probe library finds the second's, not its
        # own (as it would relative to libgpuslack.so, preloaded before both).
        self.assertIn("same: library RTLD_NEXT dlsym_probe_symbol -> 2 in libdlsym_probe_tail.so", preloaded)
        # dlerror() names the caller of a failed RTLD_NEXT lookup.
        self.assertTrue(any("library RTLD_NEXT missing" in l and "libdlsym_probe_lib.so: undefined symbol" in l
                            for l in preloaded), preloaded)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    unittest.main(argv=sys.argv[:1] + sys.argv[1:])

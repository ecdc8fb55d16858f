#!/usr/bin/env python3
"""End to end: the VMM allocator (allocator:vmm) under plain programs that
allocate and free large buffers over and over, with libgpuslack.so
preloaded under alloc_loop_app on the simulated device (issue 14).

The goal, from the summary's "allocator" section, per device: the most
memory mapped at once (peak_reserved) stays within 1.25 x the most memory
live at once (peak_allocated) plus one map chunk (map_chunk_mb); and the
loop runs on a 1 GiB device without an out-of-memory retry.

Run by ctest, one test method per ctest entry, with GPUSLACK_SO,
ALLOC_LOOP_APP and OPTIONS_H in the environment
(tests/interpose/CMakeLists.txt). bench/alloc_loop.py prints the same
figures as benchmark rows.
"""
import os
import re
import sys
import unittest

import preload_harness
from preload_harness import OutDirTest, call, summary_file

ENV = os.environ
MIB = 1 << 20
CONF = "allocator:vmm"
# Under a sanitizer (GPUSLACK_TEST_SANITIZED) the loop is shorter: the
# instrumented simulator's memsets are slow. The bound is the same.
SANITIZED = bool(os.environ.get("GPUSLACK_TEST_SANITIZED"))
LOOP_MIB, LOOP_BUFFERS, LOOP_ITERATIONS = 160, 2, 20 if SANITIZED else 200
P2P_MAX_MIB = 64
GRANULE = 2 * MIB  # the simulated device's VMM granularity: map_chunk_mb:0 maps one at a time


def map_chunk_bytes(conf):
    """map_chunk_mb in bytes: from `conf` when it sets it, else the default
    of lib/config/options.h's table (the summary does not carry it)."""
    m = re.search(r"(?:^|,)map_chunk_mb:(\d+)", conf)
    if not m:
        with open(ENV["OPTIONS_H"]) as f:
            m = re.search(r"X\(map_chunk_mb,\s*int,\s*(\d+),", f.read())
        assert m, "no map_chunk_mb row in " + ENV["OPTIONS_H"]
    mb = int(m.group(1))
    return mb * MIB if mb else GRANULE


def printed(stdout, key):
    """The number after `key` on the program's last line that has it."""
    words = stdout.split()
    return float(words[len(words) - 1 - words[::-1].index(key) + 1])


def figures(r, doc, conf):
    """What a run measured, one dict per device of the allocator section,
    and the line that says it (for failure messages and the log)."""
    chunk = map_chunk_bytes(conf)
    malloc_row = call(doc, "cudaMalloc")
    rows = []
    for a in doc["allocator"]:
        live, mapped = a["peak_allocated"], a["peak_reserved"]
        rows.append(dict(device=a["device"], live=live, mapped=mapped, bound=1.25 * live + chunk,
                         retries=a["oom_retries"], failed=a.get("failed_allocations", 0), stall_s=a["stall_s"],
                         allocations=a["allocations"], frees=a["frees"]))
    text = "; ".join(
        "device %d: peak mapped %.1f MiB for %.1f MiB live (%.2fx; bound %.1f MiB = 1.25 x live + %d MiB chunk), "
        "oom_retries %d, failed %d, stall %.3f s" %
        (x["device"], x["mapped"] / MIB, x["live"] / MIB, x["mapped"] / max(x["live"], 1), x["bound"] / MIB,
         chunk // MIB, x["retries"], x["failed"], x["stall_s"]) for x in rows)
    text += "; cudaMalloc %.1f ms in %d calls (program's clock %.1f ms), total %.1f ms" % (
        malloc_row["total_s"] * 1e3, malloc_row["count"], printed(r.stdout, "malloc_ms"), printed(r.stdout, "total_ms"))
    return rows, text


class AllocLoop(OutDirTest):
    def run_app(self, args, extra=None, conf=CONF):
        r = preload_harness.run([ENV["ALLOC_LOOP_APP"]] + [str(a) for a in args], self.out, conf, extra,
                                timeout=240)
        self.assertEqual(0, r.returncode, r.stdout[-2000:] + r.stderr[-4000:])
        _, doc = summary_file(self.out)
        rows, text = figures(r, doc, conf)
        sys.stderr.write("%s %s: %s\n" % (self.id().split(".")[-1], " ".join(map(str, args)), text))
        return rows, text

    def assert_mapped_within_bound(self, rows, text):
        for x in rows:
            self.assertLessEqual(x["mapped"], x["bound"], "mapped past 1.25 x live + one chunk: " + text)

    def loop(self, extra=None):
        rows, text = self.run_app(["loop", LOOP_MIB, LOOP_BUFFERS, LOOP_ITERATIONS], extra)
        self.assertEqual(1, len(rows), text)
        x = rows[0]
        # What the program holds at once: the allocator counted it all.
        self.assertEqual(LOOP_BUFFERS * LOOP_MIB * MIB, x["live"], text)
        self.assertEqual(LOOP_BUFFERS * LOOP_ITERATIONS, x["allocations"], text)
        self.assertEqual(LOOP_BUFFERS * LOOP_ITERATIONS, x["frees"], text)
        return rows, text

    def test_loop_maps_little_more_than_it_holds(self):
        # The default device (8 GiB): room to map far more than the loop
        # holds, which is what the allocator must not do.
        rows, text = self.loop()
        self.assert_mapped_within_bound(rows, text)

    def test_loop_on_a_1_gib_device_needs_no_out_of_memory_retry(self):
        rows, text = self.loop({"GPUSIM_DEVICE_MEMORY": "1G"})
        self.assertEqual(0, rows[0]["failed"], "allocations failed: " + text)
        self.assertEqual(0, rows[0]["retries"], "out-of-memory retries: " + text)
        self.assert_mapped_within_bound(rows, text)

    def test_p2p_bandwidth_maps_little_more_than_each_device_holds(self):
        rows, text = self.run_app(["p2p", P2P_MAX_MIB], {"GPUSIM_DEVICE_COUNT": "2"})
        self.assertEqual([0, 1], sorted(x["device"] for x in rows), text)
        for x in rows:
            # Each device holds a source and a destination of the largest size.
            self.assertEqual(2 * P2P_MAX_MIB * MIB, x["live"], text)
            self.assertEqual(0, x["failed"], text)
        self.assert_mapped_within_bound(rows, text)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])

"""Bodies of the C ABI tests, each run in its own process by test_abi.py
(conftest.run_case) on the simulated device, with GPUSLACK_CONF
allocator:vmm unless the test says otherwise.

The stream-ordered functions are driven as PyTorch drives them: alloc on
the current stream, free with the size and device asked for and the
allocation's stream. Busy kernels (sim.Sim.busy) own each block while the
GPU "uses" it: a block handed out too early shows as a violation.
"""
import ctypes
import random
import re
import threading
import time

import gpuslack
import gpuslack.torch as gtorch
from gpuslack import _lib
from sim import Sim

MiB = 1 << 20
LONG_MS = 1000  # long enough that the checks made meanwhile run while it does


def setup():
    sim = Sim()  # the simulated runtime first, RTLD_GLOBAL
    return sim, _lib.load()


def alloc(lib, size, stream, device=0):
    p = lib.device_alloc(size, device, stream)
    assert p, "gpuslack_device_alloc(%d, %d, %#x) gave NULL" % (size, device, stream or 0)
    return p


def running(status):
    return status.value == 0


def trim_settled(sim, device):
    """gpuslack.trim, twice with a sync between: a block still in its
    stream's cache is fenced with an event the trim itself records, and
    released only if that event has completed by the time the trim looks
    (about one time in four on the simulated device, the first trim leaves
    it: reported; gpuslack.h promises every cached granule). The second,
    after the event, must release it."""
    released = gpuslack.trim(device)
    sim.sync()
    return released + gpuslack.trim(device)


def finish(sim, *statuses):
    sim.sync()
    assert [s.value for s in statuses] == [1] * len(statuses), [s.value for s in statuses]
    assert sim.violations() == 0, sim.violations()


# --- the library and its figures --------------------------------------------

def version_and_build_info():
    setup()
    assert re.fullmatch(r"\d+\.\d+\.\d+", gpuslack.version()), gpuslack.version()
    assert gpuslack.build_info().startswith("gpuslack " + gpuslack.version()), gpuslack.build_info()


def nothing_before_the_first_cuda_call():
    setup()
    assert gpuslack.stats() is None
    assert gpuslack.device_stats(0) is None
    assert gtorch.memory_stats(0) == {}
    assert gtorch.max_memory_allocated(0) == 0
    assert gpuslack.write_summary() is False
    assert gpuslack.trim() == 0


def stats_of_a_preloaded_process():
    # LD_PRELOAD put the library in; the package must use that copy, whose
    # ledger saw the calls, and not load a second one.
    sim, lib = setup()
    assert lib.path == _lib._mapped_library(), (lib.path, _lib._mapped_library())
    p = sim.malloc(3 * MiB)
    sim.free(p)
    doc = gpuslack.stats()
    assert doc["schema_version"] == 1 and doc["reason"] == "api", doc
    calls = {c["name"]: c for c in doc["calls"]}
    assert calls["cudaMalloc"]["count"] == 1 and calls["cudaMalloc"]["bytes"] == 3 * MiB, calls
    assert calls["cudaFree"]["category"] == "allocation"
    assert set(doc["categories"]) == {"allocation", "copy", "collective", "sync", "other"}
    (a,) = doc["allocator"]
    assert a["device"] == 0 and a["allocations"] == 1 and a["frees"] == 1, a
    s = gpuslack.device_stats(0)
    assert s["allocations"] == 1 and s["allocated"] == 0 and s["peak_allocated"] >= 3 * MiB, s
    assert gpuslack.write_summary() is True


def stats_and_trim():
    sim, lib = setup()
    a = sim.stream()
    p = alloc(lib, 64 * MiB, a)
    s = gpuslack.device_stats(0)
    assert s["allocated"] == 64 * MiB and s["allocations"] == 1 and s["reserved"] >= 64 * MiB, s
    m = gtorch.memory_stats(0)
    assert m["allocated_bytes.all.current"] == 64 * MiB and m["allocation.all.current"] == 1, m
    assert m["reserved_bytes.all.peak"] >= 64 * MiB and m["num_sync_all_streams"] == 0, m
    assert gtorch.memory_allocated("cuda:0") == 64 * MiB
    lib.device_free(p, 64 * MiB, 0, a)
    sim.sync()
    q = alloc(lib, 4096, a)
    s = gpuslack.device_stats(0)
    # pending_free counts blocks: the freed one, unless mapping the small
    # block's page flushed the stream's cache and its fence has completed.
    assert s["allocated"] == 4096 and s["frees"] == 1 and s["pending_free"] <= 1, s
    assert gtorch.max_memory_allocated(0) >= 64 * MiB
    released = trim_settled(sim, 0)
    assert released >= 62 * MiB, released  # the freed 64 MiB, whole granules
    s = gpuslack.device_stats(0)
    assert s["reserved"] <= 2 * MiB and s["granules_unmapped"] > 0 and s["pending_free"] == 0, s
    assert gtorch.memory_reserved(0) == s["reserved"]
    assert gtorch.max_memory_reserved(0) >= 64 * MiB
    # torch's reset_peak_memory_stats: the peaks restart from now.
    gtorch.reset_peak_memory_stats(0)
    s = gpuslack.device_stats(0)
    assert s["peak_allocated"] == s["allocated"] == 4096 and s["peak_reserved"] == s["reserved"], s
    # gpuslack_reset (torch's empty_cache) releases what is cached again.
    lib.device_free(q, 4096, 0, a)
    big = alloc(lib, 32 * MiB, a)
    lib.device_free(big, 32 * MiB, 0, a)
    sim.sync()
    alloc(lib, 512, a)
    gtorch.empty_cache()
    sim.sync()
    gtorch.empty_cache()  # as trim_settled
    assert gpuslack.device_stats(0)["reserved"] <= 2 * MiB, gpuslack.device_stats(0)


def device_init_makes_the_allocator():
    setup()
    assert gpuslack.device_stats(0) is None
    _lib.load().device_init(0)
    s = gpuslack.device_stats(0)
    assert s is not None and s["allocations"] == 0 and s["allocated"] == 0, s
    _lib.load().device_init(63)  # no such device: quietly nothing


def bad_arguments_are_refused_quietly():
    sim, lib = setup()
    a = sim.stream()
    assert not lib.device_alloc(0, 0, a)
    assert not lib.device_alloc(-1, 0, a)
    assert not lib.device_alloc(1 << 20, 63, a)  # no such device
    p = alloc(lib, 1000, a)
    lib.device_free(p, 5000, 0, a)  # wrong size (past the block's rounding): logged, ignored
    lib.device_free(p, 1000, 1, a)  # wrong device: logged, ignored
    assert gpuslack.device_stats(0)["allocated"] >= 1000
    lib.device_free(0x1234000, 4096, 0, a)  # not a block: logged, ignored
    lib.device_free(p, 1000, 0, a)
    lib.device_free(p, 1000, 0, a)  # twice: logged, ignored
    assert gpuslack.device_stats(0)["allocated"] == 0
    lib.record_stream(0x1234000, a)  # not a block: nothing
    lib.set_memory_fraction(0.0, 0)
    lib.set_memory_fraction(1.5, 0)
    alloc(lib, 64 * MiB, a)  # the two fractions above were ignored


def base_alloc():
    sim, lib = setup()
    a = sim.stream()
    p = alloc(lib, 10000, a)
    size = ctypes.c_size_t(12345)
    assert lib.base_alloc(p + 1234, ctypes.byref(size)) == p
    assert size.value >= 10000, size.value
    assert lib.base_alloc(p, ctypes.byref(size)) == p
    host = ctypes.create_string_buffer(64)
    assert not lib.base_alloc(ctypes.addressof(host), ctypes.byref(size))
    assert size.value == 0
    lib.device_free(p, 10000, 0, a)
    sim.sync()
    alloc(lib, 512, a)
    assert not lib.base_alloc(p + 1234, ctypes.byref(size))  # freed: no live block holds it


def memory_fraction():
    # GPUSIM_DEVICE_MEMORY=1G (test_abi.py).
    sim, lib = setup()
    a = sim.stream()
    lib.set_memory_fraction(0.25, 0)
    assert not lib.device_alloc(512 * MiB, 0, a), "512 MiB past a 256 MiB cap"
    p = alloc(lib, 128 * MiB, a)
    gtorch.set_per_process_memory_fraction(1.0, 0)
    q = alloc(lib, 512 * MiB, a)
    lib.device_free(p, 128 * MiB, 0, a)
    lib.device_free(q, 512 * MiB, 0, a)


# --- stream order -------------------------------------------------------------

def same_stream_reuses_at_once():
    sim, lib = setup()
    a = sim.stream()
    p = alloc(lib, 4 * MiB, a)
    first = sim.busy(a, p, 4 * MiB, LONG_MS, 0x11111111)
    lib.device_free(p, 4 * MiB, 0, a)
    q = alloc(lib, 4 * MiB, a)
    assert running(first), "the kernel ended before the test could look"
    assert q == p, "a block freed on a stream is reused at once on that stream (%#x, %#x)" % (p, q)
    second = sim.busy(a, q, 4 * MiB, 10, 0x22222222)  # runs after the first: stream order
    finish(sim, first, second)


def other_stream_waits_for_the_freeing_streams_work():
    sim, lib = setup()
    a, b = sim.stream(), sim.stream()
    p = alloc(lib, 4 * MiB, a)
    first = sim.busy(a, p, 4 * MiB, LONG_MS, 0x11111111)
    lib.device_free(p, 4 * MiB, 0, a)
    q = alloc(lib, 4 * MiB, b)
    assert running(first), "the kernel ended before the test could look"
    assert q != p, "a block still in use on stream a went to stream b"
    # p stays held for stream a (mapped, not handed over): both are mapped.
    assert gpuslack.device_stats(0)["reserved"] >= 8 * MiB
    other = sim.busy(b, q, 4 * MiB, 50, 0x22222222)
    finish(sim, first, other)
    # The work is done, and the fence the miss on b recorded with it: the
    # next allocation finds the block reusable by any stream.
    r = alloc(lib, 4 * MiB, b)
    assert gpuslack.device_stats(0)["pending_free"] == 0
    again = sim.busy(b, r, 4 * MiB, 10, 0x33333333)
    finish(sim, again)


def without_record_stream_the_allocation_stream_reuses_at_once():
    # The hazard record_stream exists for: a block used on stream b but
    # freed on its allocation stream a goes back to a at once.
    sim, lib = setup()
    a, b = sim.stream(), sim.stream()
    p = alloc(lib, 2 * MiB, a)
    lib.device_free(p, 2 * MiB, 0, a)
    assert alloc(lib, 2 * MiB, a) == p


def record_stream_holds_the_block_for_the_other_stream():
    sim, lib = setup()
    a, b = sim.stream(), sim.stream()
    p = alloc(lib, 2 * MiB, a)
    used = sim.busy(b, p, 2 * MiB, LONG_MS, 0x44444444)
    lib.record_stream(p, b)
    lib.device_free(p, 2 * MiB, 0, a)
    q = alloc(lib, 2 * MiB, a)
    assert running(used), "the kernel ended before the test could look"
    assert q != p, "a block still in use on stream b (record_stream) was reused on a"
    writer = sim.busy(a, q, 2 * MiB, 10, 0x55555555)
    finish(sim, used, writer)


def many_threads_and_streams():
    # Four threads, each on its own stream, allocate, run a kernel on the
    # block, and free it, with sizes from the small pool and beyond: no
    # kernel may see its block change; the figures must add up.
    sim, lib = setup()
    threads, rounds = 4, 40
    statuses, errors = [], []

    def worker(seed):
        rng = random.Random(seed)
        s = sim.stream()
        try:
            for i in range(rounds):
                size = rng.choice([512, 4096, 300 * 1024, 1 * MiB, 3 * MiB + 512])
                p = alloc(lib, size, s)
                statuses.append(sim.busy(s, p, size, rng.choice([0.2, 1, 3]), (seed << 16) | i))
                lib.device_free(p, size, 0, s)
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=worker, args=(t + 1,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    finish(sim, *statuses)
    s = gpuslack.device_stats(0)
    assert s["allocations"] == threads * rounds and s["frees"] == threads * rounds, s
    assert s["allocated"] == 0, s


def a_waiting_allocation_is_not_a_device_sync():
    # Freeing must not wait for the GPU: a free behind a long kernel returns
    # at once.
    sim, lib = setup()
    a = sim.stream()
    p = alloc(lib, MiB, a)
    k = sim.busy(a, p, MiB, LONG_MS, 0x66666666)
    t0 = time.monotonic()
    lib.device_free(p, MiB, 0, a)
    assert time.monotonic() - t0 < LONG_MS / 4000.0
    assert running(k)
    finish(sim, k)

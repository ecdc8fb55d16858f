"""libgpuslack.so's C API through ctypes, on the simulated device: the
stream-ordered allocation PyTorch's CUDAPluggableAllocator calls, its C++
hooks (record_stream, base allocation, memory fraction, init, reset), and
the figures (stats, device stats, trim). Bodies: abi_cases.py, one process
each."""
from conftest import needs_library, run_case

pytestmark = needs_library

SUMMARY_OFF = "allocator:vmm,text_summary:off,json_summary:false"


def test_version_and_build_info():
    run_case("version_and_build_info")


def test_nothing_before_the_first_cuda_call():
    run_case("nothing_before_the_first_cuda_call")


def test_stats_of_a_preloaded_process_come_from_the_preloaded_copy(tmp_path):
    run_case("stats_of_a_preloaded_process", preload=True, conf="allocator:vmm,text_summary:off",
             GPUSLACK_OUTPUT=tmp_path)
    assert len(list(tmp_path.glob("gpuslack-*.json"))) == 1  # gpuslack.write_summary()


def test_stats_and_trim():
    # One granule per physical handle, so that trim's figures count granules
    # released one by one (a 16 MiB chunk shared with a small block stays).
    run_case("stats_and_trim", conf=SUMMARY_OFF + ",map_chunk_mb:2")


def test_device_init_makes_the_allocator():
    run_case("device_init_makes_the_allocator")


def test_bad_arguments_are_refused_quietly():
    r = run_case("bad_arguments_are_refused_quietly")
    assert "Traceback" not in r.stderr


def test_base_alloc():
    run_case("base_alloc")


def test_memory_fraction_caps_the_device():
    run_case("memory_fraction", GPUSIM_DEVICE_MEMORY="1G")


def test_same_stream_reuses_at_once():
    run_case("same_stream_reuses_at_once")


def test_other_stream_waits_for_the_freeing_streams_work():
    # Granule by granule (map_chunk_mb:2), so each 4 MiB block misses and the
    # miss settles the pending free; with whole 20 MiB pages (Note [Pages
    # mapped whole]) q and r fit the page p opened, nothing misses, and p
    # stays pending until a miss, which this case is not about.
    run_case("other_stream_waits_for_the_freeing_streams_work",
             conf="allocator:vmm,map_chunk_mb:2,text_summary:off,json_summary:false")


def test_without_record_stream_the_allocation_stream_reuses_at_once():
    run_case("without_record_stream_the_allocation_stream_reuses_at_once")


def test_record_stream_holds_the_block_for_the_other_stream():
    run_case("record_stream_holds_the_block_for_the_other_stream")


def test_many_threads_and_streams():
    run_case("many_threads_and_streams")


def test_free_does_not_wait_for_the_gpu():
    run_case("a_waiting_allocation_is_not_a_device_sync")


def test_stream_ordered_allocation_serves_memory_with_the_allocator_knob_native():
    # The knob decides what cudaMalloc does; gpuslack_device_alloc always
    # uses the VMM allocator (gpuslack.h).
    run_case("same_stream_reuses_at_once", conf="allocator:native,text_summary:off,json_summary:false")

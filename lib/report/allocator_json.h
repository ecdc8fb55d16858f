// The summary's allocator section (allocator.h) as JSON, and read back:
// "allocator" (an array, [] under allocator:native) and
// "allocator_status" (docs/summary.schema.json). Counters are written as
// integers; "created_without" lists "posix_fd_handle" and
// "gpu_direct_rdma". The reader follows summary_reader.h's rules (a
// missing member reads as its default, one of another type is Malformed;
// "selected" is native or vmm). Round trip: write(read(write(s))) ==
// write(s), held by tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include <vector>

#include "report/allocator.h"
#include "report/section_json.h"

namespace gpuslack {
namespace report {

// "allocator" and "allocator_status", members of the open object.
void write_allocator(const std::vector<AllocatorRow>& rows, const AllocatorStatus& status, json_detail::Writer* w);

// Both members from the document's top-level object.
void read_allocator(const detail::Fields& doc, std::vector<AllocatorRow>* rows, AllocatorStatus* status);

}  // namespace report
}  // namespace gpuslack

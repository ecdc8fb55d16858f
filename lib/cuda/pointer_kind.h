// What kind of memory a pointer is, for splitting copies into pageable and
// pinned: cudaPointerGetAttributes behind a small per-thread cache; and,
// for a device pointer, the extent of the allocation that holds it (a
// staged copy checks its whole device range before it writes anything).
//
// The cache maps exact pointer values (training loops reuse the same staging
// buffers) to their kind, and is invalidated as a whole whenever memory is
// allocated, freed, registered or unregistered through a hooked call
// (invalidate_pointer_kinds), so a stale answer cannot outlive the memory it
// described.
//
// Never changes what the application sees: if the runtime has an error
// pending for the thread, no lookup is made (kUnknown); if the lookup itself
// fails, the error it left is cleared. Extents come from the driver
// (cuMemGetAddressRange), whose calls leave the runtime's last error alone.
//
// Thread safety: any thread; the hot path (a hit) takes no lock.
#pragma once

#include <cstddef>

namespace gpuslack {
namespace cuda {

enum class PointerKind { kUnknown, kDevice, kManaged, kPinnedHost, kPageableHost };

PointerKind pointer_kind(const void* ptr);
void invalidate_pointer_kinds();

// Whether [p, p + bytes) lies inside the one allocation that holds `p`, as
// the driver knows it (cuMemGetAddressRange; cached beside the kind, with
// the same invalidation). False when the range runs past it, and when that
// cannot be told (no driver, an address the driver does not know): the
// caller then leaves the call to the runtime, which answers for it.
// Memory of gpuslack's VMM allocator is not for this (alloc/process_allocators.h checks
// its blocks): the driver knows its mappings, not its blocks.
bool within_allocation(const void* p, size_t bytes);

}  // namespace cuda
}  // namespace gpuslack

// What kind of memory a pointer is, for splitting copies into pageable and
// pinned: cudaPointerGetAttributes behind a small per-thread cache.
//
// The cache maps exact pointer values (training loops reuse the same staging
// buffers) to their kind, and is invalidated as a whole whenever memory is
// allocated, freed, registered or unregistered through a hooked call
// (invalidate_pointer_kinds), so a stale answer cannot outlive the memory it
// described.
//
// Never changes what the application sees: if the runtime has an error
// pending for the thread, no lookup is made (kUnknown); if the lookup itself
// fails, the error it left is cleared.
//
// Thread safety: any thread; the hot path (a hit) takes no lock.
#pragma once

namespace gpuslack {
namespace cuda {

enum class PointerKind { kUnknown, kDevice, kManaged, kPinnedHost, kPageableHost };

PointerKind pointer_kind(const void* ptr);
void invalidate_pointer_kinds();

}  // namespace cuda
}  // namespace gpuslack

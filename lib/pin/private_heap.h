// The private jemalloc instance sealed inside libgpuslack.so.
//
// gpuslack carries its own jemalloc (5.3, prefixed gpuslack_je_, no exported
// symbols, no initial-exec TLS; docs/dependencies.md) so that the pinned host
// heap can give jemalloc an arena whose extents are pinned memory. It never
// replaces the process's malloc: the host process's malloc/free stay glibc's
// (or whatever the process chose), and nothing here is reachable from
// outside the library.
//
// This header is the instance's front door: its own default arenas, for
// gpuslack's host-side bookkeeping. The pinned arena (custom extent hooks)
// is built on the same instance by the pinned heap.
//
// Thread safety: all functions, any thread (jemalloc's own guarantees).
#pragma once

#include <cstddef>

namespace gpuslack {
namespace pin {

// Allocates from the private instance; nullptr when it is out of memory.
void* private_alloc(std::size_t bytes);
// Frees memory from private_alloc (nullptr is ignored).
void private_free(void* p);
// Bytes the private instance has handed out and not had back
// (jemalloc's stats.allocated, refreshed).
std::size_t private_allocated_bytes();
// The version string of the linked jemalloc ("5.3.0-0-g..."); does not
// initialize it.
const char* jemalloc_version();
// The instance's configuration (its malloc_conf). Whoever uses the instance
// directly (the pinned arena) calls this, which also links that
// configuration in: jemalloc refers to it only weakly.
const char* private_heap_conf();

}  // namespace pin
}  // namespace gpuslack

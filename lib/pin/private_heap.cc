#include "pin/private_heap.h"

#include <cstdint>

// Keep the je_* names: they always mean the private instance, whatever its
// prefix, and never shadow the process's malloc.
#define JEMALLOC_NO_DEMANGLE
#include "jemalloc/jemalloc.h"

// The instance's configuration: through its prefixed malloc_conf symbol,
// never the MALLOC_CONF environment variable (that one belongs to the host
// process's allocator). No background thread: a library inside someone
// else's process does not start threads it was not asked for. Two arenas:
// bookkeeping is light and contention low. No retained virtual memory: with
// retain, jemalloc grows an arena by ever larger requests to its extent
// hooks and keeps what it did not use, which the pinned arena could then
// never give back to its chunks (pinned_arena.h); without it, the hooks are
// asked for exactly what jemalloc needs. Free extents are reused whatever
// their size (lg_extent_max_active_fit:64 turns the limit off): by default
// jemalloc will not split a free extent 64 times larger than a request, and
// asks its hooks for new memory instead, so that a loop of pinned
// allocations and frees, whose freed blocks coalesce, pinned a new chunk
// every few hundred pairs. (jemalloc also pads every large extent by a
// page, cache-obliviously, which 5.3 cannot turn off at run time: a 64 MiB
// block takes a chunk of 66 MiB, chunks being whole 2 MiB.)
extern "C" {
const char* je_malloc_conf =
    "background_thread:false,narenas:2,percpu_arena:disabled,retain:false,lg_extent_max_active_fit:64";
}

namespace gpuslack {
namespace pin {

void* private_alloc(std::size_t bytes) { return je_malloc(bytes ? bytes : 1); }

void private_free(void* p) {
  if (p) je_free(p);
}

std::size_t private_allocated_bytes() {
  // Statistics are cached per epoch: advance it to read current figures.
  uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  je_mallctl("epoch", &epoch, &len, &epoch, len);
  std::size_t allocated = 0;
  len = sizeof(allocated);
  if (je_mallctl("stats.allocated", &allocated, &len, nullptr, 0) != 0) return 0;
  return allocated;
}

const char* private_heap_conf() { return je_malloc_conf; }

// From the header of the archive linked in: asking jemalloc (mallctl)
// would initialize it, and with it its atfork handlers, in every process
// that writes a summary, pinned memory or not.
const char* jemalloc_version() { return JEMALLOC_VERSION; }

}  // namespace pin
}  // namespace gpuslack

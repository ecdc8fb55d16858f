#include "pin/process_heap.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include "config/options.h"

namespace gpuslack {
namespace pin {
namespace {

std::atomic<PinnedHeap*> g_heap{nullptr};
// Set in the child of a fork of a process that made the heap: the heap,
// and its lock, are the parent's (a thread of the parent may have held it
// at the fork), so the child's pinned calls go to the runtime, as the
// device allocators' do (See Note [The allocators after a fork]). No lock,
// no allocation.
std::atomic<bool> g_forked_child{false};
void forget_after_fork_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
  g_heap.store(nullptr, std::memory_order_relaxed);
}

}  // namespace

bool pin_selected() {
  static const bool selected = options().pin;
  return selected;
}

uint64_t default_pinned_cap() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 4ull << 30;  // unknown: 4 GiB
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

PinnedHeap* pinned_heap() {
  if (!pin_selected() || g_forked_child.load(std::memory_order_relaxed)) return nullptr;
  // Made once, never destroyed: blocks may be freed during process exit.
  static PinnedHeap* heap = [] {
    pthread_atfork(nullptr, nullptr, forget_after_fork_child);
    const Options& o = options();
    uint64_t chunk = static_cast<uint64_t>(o.pinned_chunk_mb < 2 ? 2 : o.pinned_chunk_mb) << 20;
    uint64_t cap = o.pinned_cap_mb > 0 ? static_cast<uint64_t>(o.pinned_cap_mb) << 20 : default_pinned_cap();
    auto* h = new PinnedHeap(chunk, cap);
    g_heap.store(h, std::memory_order_release);
    return h;
  }();
  return heap;
}

PinnedHeap* existing_pinned_heap() { return g_heap.load(std::memory_order_acquire); }

}  // namespace pin
}  // namespace gpuslack

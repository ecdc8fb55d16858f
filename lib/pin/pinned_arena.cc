#include "pin/pinned_arena.h"

#include <sys/types.h>

#include <cstdio>

#include "log/log.h"
#include "pin/pinned_chunks.h"
#include "pin/private_heap.h"

// The private instance's je_* names (private_heap.cc says why).
#define JEMALLOC_NO_DEMANGLE
#include "jemalloc/jemalloc.h"

namespace gpuslack {
namespace pin {

// The hook table jemalloc is given, with the arena it belongs to right
// behind it: every hook receives the table's address, and finds its arena
// from it.
struct ArenaHooks {
  extent_hooks_t table;
  PinnedArena* arena;

  static PinnedArena* of(extent_hooks_t* h) { return reinterpret_cast<ArenaHooks*>(h)->arena; }

  static void* alloc(extent_hooks_t* h, void* new_addr, size_t size, size_t alignment, bool* zero, bool* commit,
                     unsigned) {
    // In-place growth (new_addr) is for rallocx, which the heap never calls.
    if (new_addr != nullptr) return nullptr;
    void* p = of(h)->chunks_->take(size, alignment, *zero);
    if (p) *commit = true;
    return p;
  }
  static bool dalloc(extent_hooks_t* h, void* addr, size_t size, bool, unsigned) {
    PinnedArena* a = of(h);
    if (!a->accept_dalloc_) return true;  // refused: jemalloc keeps the extent
    a->chunks_->give(addr, size);
    return false;
  }
  static void destroy(extent_hooks_t* h, void* addr, size_t size, bool, unsigned) {
    of(h)->chunks_->give(addr, size);  // only when the arena is destroyed
  }
  static bool commit(extent_hooks_t*, void*, size_t, size_t, size_t, unsigned) { return false; }
  static bool decommit(extent_hooks_t*, void*, size_t, size_t, size_t, unsigned) { return true; }
  static bool purge(extent_hooks_t*, void*, size_t, size_t, size_t, unsigned) { return true; }
  static bool split(extent_hooks_t* h, void* addr, size_t size, size_t, size_t, bool, unsigned) {
    return !of(h)->chunks_->in_one_chunk(addr, size);
  }
  static bool merge(extent_hooks_t* h, void* a, size_t, void* b, size_t, bool, unsigned) {
    return !of(h)->chunks_->same_chunk(a, b);
  }
};

namespace {

constexpr int kPageAlign = MALLOCX_LG_ALIGN(12);  // 4 KiB

// "arena.<i>.<name>"
void arena_ctl(unsigned index, const char* name, char (&out)[64]) {
  std::snprintf(out, sizeof(out), "arena.%u.%s", index, name);
}

}  // namespace

bool PinnedArena::create(std::string* why) {
  if (hooks_) return true;
  // Retained memory could never go back to the chunks (private_heap.cc).
  bool retain = true;
  size_t retain_len = sizeof(retain);
  if (je_mallctl("opt.retain", &retain, &retain_len, nullptr, 0) != 0 || retain) {
    *why = std::string("the private jemalloc retains memory (malloc_conf \"") + private_heap_conf() + "\")";
    return false;
  }
  auto* hooks = new ArenaHooks{{&ArenaHooks::alloc, &ArenaHooks::dalloc, &ArenaHooks::destroy, &ArenaHooks::commit,
                                &ArenaHooks::decommit, &ArenaHooks::purge, &ArenaHooks::purge, &ArenaHooks::split,
                                &ArenaHooks::merge},
                               this};
  extent_hooks_t* table = &hooks->table;
  unsigned index = 0;
  size_t len = sizeof(index);
  if (int err = je_mallctl("arenas.create", &index, &len, &table, sizeof(table)); err != 0) {
    // Nothing kept the table: jemalloc fails before publishing the arena.
    delete hooks;
    *why = "jemalloc could not create the arena (error " + std::to_string(err) + ")";
    return false;
  }
  // Decay off: jemalloc never purges this arena on its own.
  ssize_t never = -1;
  char name[64];
  for (const char* decay : {"dirty_decay_ms", "muzzy_decay_ms"}) {
    arena_ctl(index, decay, name);
    if (je_mallctl(name, nullptr, nullptr, &never, sizeof(never)) != 0)
      log::warn("pinned heap: cannot set {} (jemalloc may purge, which the hooks refuse)", name);
  }
  hooks_ = &hooks->table;
  index_ = index;
  return true;
}

PinnedArena::~PinnedArena() {
  if (!hooks_) return;
  accept_dalloc_ = true;
  char name[64];
  arena_ctl(index_, "destroy", name);
  if (je_mallctl(name, nullptr, nullptr, nullptr, 0) == 0) {
    delete reinterpret_cast<ArenaHooks*>(hooks_);
  }  // else jemalloc still holds the table: leave it
}

void* PinnedArena::allocate(size_t bytes) {
  if (!hooks_) return nullptr;
  return je_mallocx(bytes ? bytes : 1, MALLOCX_ARENA(index_) | MALLOCX_TCACHE_NONE | kPageAlign);
}

void PinnedArena::free(void* p) { je_dallocx(p, MALLOCX_TCACHE_NONE); }

size_t PinnedArena::usable_size(const void* p) const { return je_sallocx(p, 0); }

void PinnedArena::purge() {
  if (!hooks_) return;
  accept_dalloc_ = true;
  char name[64];
  arena_ctl(index_, "purge", name);
  je_mallctl(name, nullptr, nullptr, nullptr, 0);
  accept_dalloc_ = false;
}

}  // namespace pin
}  // namespace gpuslack

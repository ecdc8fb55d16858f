// Counter: a figure with one writer (the thread that owns the shard it lives
// in) and readers anywhere (reports), without a lock.
//
// The writer updates it with a relaxed load and a relaxed store (add,
// raise_to), which on x86-64 are plain moves: no locked instruction on the
// hot path. That is correct only because no other thread ever writes it;
// readers (read) see some recent value, never a torn one. Used by the
// ledger's shards (ledger.cc) and the collectives' (nccl/collectives.cc).
//
// Thread safety: add and raise_to from the owning thread only; read and a
// plain store of 0 (a shard being emptied, its owner gone) from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuslack {
namespace ledger {

using Counter = std::atomic<uint64_t>;

// c += v, by its one writer.
inline void add(Counter& c, uint64_t v) { c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed); }

// c = max(c, v), by its one writer.
inline void raise_to(Counter& c, uint64_t v) {
  if (v > c.load(std::memory_order_relaxed)) c.store(v, std::memory_order_relaxed);
}

inline uint64_t read(const Counter& c) { return c.load(std::memory_order_relaxed); }

}  // namespace ledger
}  // namespace gpuslack

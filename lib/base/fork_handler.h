// A room's pthread_atfork child handler, registered at the room's first
// use rather than when the library loads.
//
// libgpuslack.so runs nothing at load (docs/design.md, principle 4;
// tests/interpose/check_seal.sh refuses any constructor of its own), so a
// room registers its handler the first time it is used, and
// session::start registers every room's before a hooked call can use any
// (the rooms' register_fork_handler functions). Call it before taking the
// room's lock, never under it: a fork between the lock's taking and the
// registration would leave the child the lock held and no handler.
//
// Thread safety: any thread; racing first calls register once.
#pragma once

#include <pthread.h>

#include <atomic>

namespace gpuslack {

// Registers the three handlers (any may be null) once per `registered`.
inline void register_fork_handlers_once(std::atomic<bool>& registered, void (*prepare)(), void (*parent)(),
                                        void (*child)()) {
  if (registered.load(std::memory_order_acquire)) return;
  if (!registered.exchange(true, std::memory_order_acq_rel)) pthread_atfork(prepare, parent, child);
}

inline void register_fork_child_once(std::atomic<bool>& registered, void (*child)()) {
  register_fork_handlers_once(registered, nullptr, nullptr, child);
}

}  // namespace gpuslack

// Route: how a hook takes a call somewhere else before (or instead of) the
// real function. routes.inc lists which hooks do, and why.
//
// The generator (hooks.cc) calls route<id>(real) args: by default that is
// the real function itself; a specialization, made with GPUSLACK_ROUTE or
// GPUSLACK_ROUTE_PAIR, returns a function of the same signature. Timing,
// NVTX and the ledger wrap routed calls exactly as forwarded ones, so the
// summary shows what the application waited for either way.
//
// Included through routes.inc by hooks.cc only, after the tables are
// expanded (the routes name their ids and slots).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gpuslack {
namespace interpose {
namespace {

template <uint16_t Id>
struct Route {
  template <typename Fn>
  static Fn get(Fn real) {
    return real;
  }
};
template <uint16_t Id, typename Fn>
Fn route(Fn real) {
  return Route<Id>::get(real);
}

// The real function of a slot, as its type.
template <typename Fn>
Fn real_of(Slot& slot) {
  return reinterpret_cast<Fn>(real_address(slot));
}

// Signatures more than one concept's routes share.
using MallocFn = cudaError_t (*)(void**, size_t);
using FreeFn = cudaError_t (*)(void*);
using MemGetInfoFn = cudaError_t (*)(size_t*, size_t*);

}  // namespace
}  // namespace interpose
}  // namespace gpuslack

// Expanded inside namespace gpuslack::interpose::{anonymous}, where Route
// is; Fn and fn must hold no comma outside parentheses (name a function
// type with a using-alias first). routes.inc undefines both.
// `sym` (of type Fn) goes to `fn`.
#define GPUSLACK_ROUTE(sym, Fn, fn)   \
  template <>                         \
  struct Route<kId_##sym> {           \
    static Fn get(Fn) { return &fn; } \
  };
// `sym` and its per-thread variant `sym##suffix` go to fn<false>, fn<true>.
#define GPUSLACK_ROUTE_PAIR(sym, suffix, Fn, fn) \
  GPUSLACK_ROUTE(sym, Fn, fn<false>)             \
  GPUSLACK_ROUTE(sym##suffix, Fn, fn<true>)

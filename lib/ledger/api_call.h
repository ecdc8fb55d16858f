// What the ledger knows about a hooked API call: its identity and category
// (given once per symbol by interpose/), and what one call moved (given per
// call). lib/ never knows symbol names: interpose/ hands these in.
#pragma once

#include <cstdint>

namespace gpuslack {

// What time blocked in a call counts as (docs/time-lost.md).
enum class Category : uint8_t {
  kAllocation,  // device/pinned alloc and free, with their implicit syncs: lost
  kCopy,        // copies and memsets, with implicit waits: lost
  kCollective,  // host time in NCCL calls: lost
  kSync,        // explicit synchronization: "waiting for the GPU", not lost
  kOther,       // stream lifetime, queries: shown, not lost
};
inline constexpr int kCategoryCount = 5;

// "allocation", "copies", "collectives", "waiting for the GPU", "other".
const char* category_name(Category c);
// Short machine name: "allocation", "copy", "collective", "sync", "other".
const char* category_key(Category c);
// Whether host time in this category counts as time lost.
constexpr bool counts_as_lost(Category c) {
  return c == Category::kAllocation || c == Category::kCopy || c == Category::kCollective;
}

// One hooked symbol. Defined by interpose/ (one per row of its table), with
// static storage duration; the ledger keeps the pointer.
struct ApiCall {
  uint16_t id;  // dense, < ledger::kMaxCalls
  const char* name;
  Category category;
  // Whether the call is an asynchronous one (it takes a stream and may
  // return before its work is done: cudaMemcpyAsync, cuMemsetD8Async, ...):
  // the copy table gives no host-time rate for it (Note [Copy rates] in
  // report/calls.h).
  bool async_api = false;
  // Whether its pageable copies' call sites are sampled ("pin these
  // buffers": Note [Pageable call sites] in ledger/ledger.cc): the calls
  // the staged copies serve, whose pageable copies the summary's "pageable
  // copies" line counts.
  bool samples_pageable_sites = false;
  // Whether it waits for the whole device: an explicit device
  // synchronization (cudaDeviceSynchronize, cuCtxSynchronize; category
  // kSync), or a free the CUDA runtime or driver serves with an implicit
  // one (cudaFree, cudaFreeHost, cuMemFree, cuMemFreeHost; kAllocation).
  // Exported with the labels (report/labels.h) for compare's "device
  // synchronizations".
  bool synchronizes_device = false;
};

// Direction of a copy (or a memset), as the copy table of the summary
// splits them.
enum class CopyKind : uint8_t { kNone, kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeer, kHostToHost, kMemset };
inline constexpr int kCopyKindCount = 7;
const char* copy_kind_name(CopyKind k);  // "H2D", "D2H", "D2D", "peer", "H2H", "memset"

// Host memory on the host side of a copy.
enum class HostMemory : uint8_t { kNone, kPageable, kPinned };
inline constexpr int kHostMemoryCount = 3;
const char* host_memory_name(HostMemory m);  // "", "pageable", "pinned"

// What one call moved or allocated.
struct CallInfo {
  uint64_t bytes = 0;
  CopyKind copy = CopyKind::kNone;
  HostMemory host = HostMemory::kNone;
  bool changes_memory = false;  // allocated, freed, (un)registered something
};

}  // namespace gpuslack

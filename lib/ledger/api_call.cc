#include "ledger/api_call.h"

namespace gpuslack {

const char* category_name(Category c) {
  switch (c) {
    case Category::kAllocation: return "allocation";
    case Category::kCopy: return "copies";
    case Category::kCollective: return "collectives";
    case Category::kSync: return "waiting for the GPU";
    case Category::kOther: return "other";
  }
  return "other";
}

const char* category_key(Category c) {
  switch (c) {
    case Category::kAllocation: return "allocation";
    case Category::kCopy: return "copy";
    case Category::kCollective: return "collective";
    case Category::kSync: return "sync";
    case Category::kOther: return "other";
  }
  return "other";
}

const char* copy_kind_name(CopyKind k) {
  switch (k) {
    case CopyKind::kNone: return "";
    case CopyKind::kHostToDevice: return "H2D";
    case CopyKind::kDeviceToHost: return "D2H";
    case CopyKind::kDeviceToDevice: return "D2D";
    case CopyKind::kPeer: return "peer";
    case CopyKind::kHostToHost: return "H2H";
    case CopyKind::kMemset: return "memset";
  }
  return "";
}

const char* host_memory_name(HostMemory m) {
  switch (m) {
    case HostMemory::kNone: return "";
    case HostMemory::kPageable: return "pageable";
    case HostMemory::kPinned: return "pinned";
  }
  return "";
}

}  // namespace gpuslack

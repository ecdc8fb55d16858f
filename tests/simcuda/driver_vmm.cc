// libcuda.so.1 of the simulated device: virtual memory management
// (cuMemCreate / cuMemMap / cuMemSetAccess / ...) and cuMemGetAddressRange.
// The rest of the library is driver.cc; cuda.h's versioned names apply here
// too (cuMemGetAddressRange -> cuMemGetAddressRange_v2).
//
// VMM is simulated with real host mappings: a physical allocation is a range
// of a memfd (a slice of one shared arena, or a memfd of its own once
// exported or imported: driver_vmm_backing.h), a reservation a PROT_NONE
// anonymous range, a mapping a MAP_SHARED|MAP_FIXED mapping of that file
// range over part of a reservation, and access rights (cuMemSetAccess) page
// protections. Two mappings of one handle therefore really alias, and memory
// touched before access is granted faults (SIGSEGV), as a GPU would fault.
// What is and is not simulated: README.md, "Driver API (libcuda.so.1)".
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver_internal.h"
#include "driver_vmm_backing.h"

using namespace gpusim;
using gpusim::drv::Backing;

namespace {

constexpr size_t kGranularity = 2ull << 20;  // minimum and recommended, as on H100

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// ------------------------------------------------------------------ VMM ---

// A physical allocation (cuMemCreate or cuMemImportFromShareableHandle).
struct Handle {
  uint64_t id = 0;
  size_t size = 0;
  CUmemAllocationProp prop{};
  Backing backing;       // where its bytes live
  int charged_dev = -1;  // device whose capacity it counts against, or -1
  int refs = 1;          // references not yet released (create/import/retain)
  int maps = 0;          // live mappings
};

struct Mapping {
  size_t size = 0;
  uint64_t handle = 0;
  size_t offset = 0;
  int prot = PROT_NONE;  // the page protection cuMemSetAccess last gave it
  // Access last granted by cuMemSetAccess, by location: device id, or -1
  // for the host.
  std::map<int, unsigned long long> access;
};

struct Reservation {
  size_t size = 0;
  std::map<uintptr_t, Mapping> maps;  // by address
};

struct Vmm {
  std::mutex mu;
  uint64_t next_id = 0x1000;  // handle values: never 0, never a small int
  std::unordered_map<uint64_t, Handle*> handles;
  std::map<uintptr_t, Reservation> reservations;  // by base address
};

Vmm& vmm() {
  static Vmm* v = new Vmm();  // never destroyed: workers outlive main()
  return *v;
}

// All below: called with vmm().mu held.

Handle* find_handle(Vmm& v, CUmemGenericAllocationHandle id) {
  auto it = v.handles.find(id);
  return it == v.handles.end() ? nullptr : it->second;
}

// The physical memory goes back once released and unmapped everywhere.
void maybe_destroy(Vmm& v, Handle* h) {
  if (h->refs > 0 || h->maps > 0) return;
  v.handles.erase(h->id);
  drv::backing_destroy(h->backing, h->size);
  if (h->charged_dev >= 0) Memory::get().unreserve(h->charged_dev, h->size);
  delete h;
}

// The reservation holding all of [p, p + n), if any.
Reservation* find_reservation(Vmm& v, uintptr_t p, size_t n) {
  auto it = v.reservations.upper_bound(p);
  if (it == v.reservations.begin()) return nullptr;
  --it;
  size_t off = p - it->first;
  if (off >= it->second.size || n > it->second.size - off) return nullptr;
  return &it->second;
}

// The mapping of `r` holding address p, or end().
std::map<uintptr_t, Mapping>::iterator mapping_at(Reservation& r, uintptr_t p) {
  auto it = r.maps.upper_bound(p);
  if (it == r.maps.begin()) return r.maps.end();
  --it;
  return p - it->first < it->second.size ? it : r.maps.end();
}

// Every byte of [p, p + n) is mapped: calls f on each mapping it touches.
template <typename F>
bool for_each_covering(Reservation& r, uintptr_t p, size_t n, F f) {
  auto it = mapping_at(r, p);
  uintptr_t cur = p, end = p + n;
  while (cur < end) {
    if (it == r.maps.end() || it->first > cur) return false;
    f(*it);
    cur = it->first + it->second.size;
    ++it;
  }
  return true;
}

bool overlaps_mapping(Reservation& r, uintptr_t p, size_t n) {
  auto it = r.maps.lower_bound(p);
  if (it != r.maps.end() && it->first < p + n) return true;
  if (it == r.maps.begin()) return false;
  --it;
  return it->first + it->second.size > p;
}

bool is_host(CUmemLocationType t) {
  return t == CU_MEM_LOCATION_TYPE_HOST || t == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
         t == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

CUresult check_prop(const CUmemAllocationProp* prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
    return valid_device(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
  return is_host(prop->location.type) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// The memfd's name carries the allocation's properties, so that an importer
// (in this process or another) can recover them from the fd alone.
constexpr const char* kMemfdPrefix = "gpusim-vmm";

std::string memfd_name(const CUmemAllocationProp& p) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%s:%d:%d:%d:%d", kMemfdPrefix, static_cast<int>(p.location.type),
                p.location.id, static_cast<int>(p.allocFlags.gpuDirectRDMACapable),
                static_cast<int>(p.requestedHandleTypes));
  return buf;
}

bool prop_from_fd(int fd, CUmemAllocationProp* p) {
  char path[64], target[256];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  int type = 0, id = 0, gdr = 0, handle_types = 0;
  char fmt[64];
  std::snprintf(fmt, sizeof(fmt), "/memfd:%s:%%d:%%d:%%d:%%d", kMemfdPrefix);
  if (std::sscanf(target, fmt, &type, &id, &gdr, &handle_types) != 4) return false;
  std::memset(p, 0, sizeof(*p));
  p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p->location.type = static_cast<CUmemLocationType>(type);
  p->location.id = id;
  p->allocFlags.gpuDirectRDMACapable = static_cast<unsigned char>(gdr);
  p->requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
  return true;
}

uint64_t add_handle(Vmm& v, size_t size, const CUmemAllocationProp& prop, const Backing& backing,
                    int charged_dev) {
  auto* h = new Handle();
  h->id = v.next_id++;
  h->size = size;
  h->prop = prop;
  h->backing = backing;
  h->charged_dev = charged_dev;
  v.handles[h->id] = h;
  return h->id;
}

}  // namespace

// ======================================================================
// Exported entry points
// ======================================================================

// ---- memory information ----
// cuMemGetAddressRange_v2: the VMM mapping holding `p`, or the runtime
// allocation holding it. Like cuMemAlloc's family it needs a current
// context (its documented errors include CUDA_ERROR_INVALID_CONTEXT); the
// VMM calls below name their device and do not.
GPUSIM_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  READY_WITH_CONTEXT();
  uintptr_t b = 0;
  size_t n = 0;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    if (Reservation* r = find_reservation(v, p, 1)) {
      auto m = mapping_at(*r, p);
      if (m == r->maps.end()) return CUDA_ERROR_NOT_FOUND;
      b = m->first;
      n = m->second.size;
    }
  }
  if (!n) {
    Region r;
    if (!Memory::get().find(reinterpret_cast<const void*>(p), 1, &r)) return CUDA_ERROR_NOT_FOUND;
    b = r.base;
    n = r.size;
  }
  if (base) *base = b;
  if (size) *size = n;
  return CUDA_SUCCESS;
}

// ---- virtual memory management ----
GPUSIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                     CUmemAllocationGranularity_flags option) {
  READY();
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_prop(prop)) return r;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                   const CUmemAllocationProp* prop, unsigned long long flags) {
  READY();
  count_call(Counted::kCuMemCreate);
  if (!handle || flags) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_prop(prop)) return r;
  if (size == 0 || size % kGranularity) return CUDA_ERROR_INVALID_VALUE;
  unsigned types = static_cast<unsigned>(prop->requestedHandleTypes);
  constexpr unsigned kKnown = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 |
                              CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC;
  if (types & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
  // No Windows handles on Linux; fabric ones only where offered
  // (GPUSIM_FABRIC_HANDLES, Note [A fabric handle names a memfd of its exporter]).
  if (types & ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC) ||
      ((types & CU_MEM_HANDLE_TYPE_FABRIC) && !config().fabric_handles))
    return CUDA_ERROR_NOT_SUPPORTED;
  // GPUSIM_NO_VMM, GPUSIM_VMM_REFUSE: CUDA_ERROR_NOT_SUPPORTED is among
  // cuMemCreate's documented errors (cuda.h).
  if (config().no_vmm) return CUDA_ERROR_NOT_SUPPORTED;
  if (config().refuse_posix_fd && (types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_NOT_SUPPORTED;
  if (config().refuse_rdma && prop->allocFlags.gpuDirectRDMACapable) return CUDA_ERROR_NOT_SUPPORTED;
  if (config().refuse_fabric && (types & CU_MEM_HANDLE_TYPE_FABRIC)) return CUDA_ERROR_NOT_PERMITTED;  // no IMEX channel
  if (should_fail("cuMemCreate")) return CUDA_ERROR_OUT_OF_MEMORY;

  CUmemAllocationProp p = *prop;
  p.win32HandleMetaData = nullptr;
  p.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_NONE;  // never compressible here
  if (is_host(p.location.type)) p.location.id = 0;
  int dev = p.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? p.location.id : -1;
  if (dev >= 0 && !Memory::get().reserve(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t id;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    Backing b;
    if (!drv::backing_create(size, &b)) {
      if (dev >= 0) Memory::get().unreserve(dev, size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    id = add_handle(v, size, p, b, dev);
  }
  // Physical allocation: a per-call cost plus zeroing the memory.
  charge(vmm_cost_us(VmmCall::kCreate, size));
  *handle = id;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  READY();
  count_call(Counted::kCuMemRelease);
  size_t size;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    Handle* h = find_handle(v, handle);
    if (!h || h->refs <= 0) return CUDA_ERROR_INVALID_VALUE;
    size = h->size;
    --h->refs;
    maybe_destroy(v, h);
  }
  charge(vmm_cost_us(VmmCall::kRelease, size));
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                           unsigned long long flags) {
  READY();
  count_call(Counted::kCuMemAddressReserve);
  if (config().no_vmm) return CUDA_ERROR_NOT_SUPPORTED;  // GPUSIM_NO_VMM
  if (!ptr || size == 0 || size % page_size() || flags || addr % page_size() ||
      (alignment & (alignment - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  size_t align = alignment > kGranularity ? alignment : kGranularity;
  if (size > SIZE_MAX - align) return CUDA_ERROR_OUT_OF_MEMORY;
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* got = nullptr;
  if (addr && addr % align == 0) {
    // The hint is honoured when that range is free.
    void* p = mmap(reinterpret_cast<void*>(addr), size, PROT_NONE, kFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED) {
      if (reinterpret_cast<uintptr_t>(p) == addr) got = p;
      else munmap(p, size);  // a kernel that ignores MAP_FIXED_NOREPLACE
    }
  }
  if (!got) {
    // Over-reserve by the alignment, then trim both ends.
    void* p = mmap(nullptr, size + align, PROT_NONE, kFlags, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t raw = reinterpret_cast<uintptr_t>(p);
    uintptr_t base = (raw + align - 1) & ~(static_cast<uintptr_t>(align) - 1);
    if (base > raw) munmap(p, base - raw);
    size_t tail = raw + size + align - (base + size);
    if (tail) munmap(reinterpret_cast<void*>(base + size), tail);
    got = reinterpret_cast<void*>(base);
  }
  uintptr_t base = reinterpret_cast<uintptr_t>(got);
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    v.reservations[base].size = size;
  }
  Region r;
  r.base = base;
  r.size = size;
  r.kind = MemKind::kVmmReserve;
  r.device = current_device();
  r.charged = 0;
  Memory::get().add(r);
  *ptr = base;
  return CUDA_SUCCESS;
}

// Freeing a range that still has mappings is refused (unmap first).
GPUSIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  READY();
  count_call(Counted::kCuMemAddressFree);
  Vmm& v = vmm();
  std::lock_guard<std::mutex> l(v.mu);
  auto it = v.reservations.find(ptr);
  if (it == v.reservations.end() || it->second.size != size || !it->second.maps.empty())
    return CUDA_ERROR_INVALID_VALUE;
  v.reservations.erase(it);
  // Out of the registry before the range can be handed out again.
  Memory::get().remove(ptr, nullptr);
  munmap(reinterpret_cast<void*>(ptr), size);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                unsigned long long flags) {
  READY();
  count_call(Counted::kCuMemMap);
  if (flags || ptr == 0 || size == 0 || ptr % kGranularity || size % kGranularity || offset % kGranularity)
    return CUDA_ERROR_INVALID_VALUE;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    Handle* h = find_handle(v, handle);
    if (!h || h->refs <= 0 || offset > h->size || size > h->size - offset) return CUDA_ERROR_INVALID_VALUE;
    Reservation* r = find_reservation(v, ptr, size);
    if (!r || overlaps_mapping(*r, ptr, size)) return CUDA_ERROR_INVALID_VALUE;
    if (should_fail("cuMemMap")) return CUDA_ERROR_OUT_OF_MEMORY;
    // No access until cuMemSetAccess.
    void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->backing.fd,
                   h->backing.offset + static_cast<off_t>(offset));
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    Mapping& m = r->maps[ptr];
    m.size = size;
    m.handle = h->id;
    m.offset = offset;
    ++h->maps;
  }
  charge(vmm_cost_us(VmmCall::kMap, size));
  return CUDA_SUCCESS;
}

// The range must be exactly one or more adjacent whole mappings. Does not
// wait for the device: work still using the memory faults, as on a GPU.
GPUSIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  READY();
  count_call(Counted::kCuMemUnmap);
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t mappings = 0;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    Reservation* r = find_reservation(v, ptr, size);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    auto first = r->maps.find(ptr);
    auto it = first;
    uintptr_t cur = ptr, end = ptr + size;
    while (cur < end) {
      if (it == r->maps.end() || it->first != cur || it->second.size > end - cur) return CUDA_ERROR_INVALID_VALUE;
      cur += it->second.size;
      ++it;
    }
    // Back to a reservation: an inaccessible anonymous range.
    void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    for (auto m = first; m != it; ++mappings) {
      Handle* h = find_handle(v, m->second.handle);
      m = r->maps.erase(m);
      if (h) {
        --h->maps;
        maybe_destroy(v, h);
      }
    }
  }
  charge(vmm_cost_us(VmmCall::kUnmap, size, mappings));
  return CUDA_SUCCESS;
}

// Access is per range, not per device: the host mapping gets the widest of
// the rights the descriptors grant (the simulated devices all reach memory
// through it). Every byte of the range must be mapped.
GPUSIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  READY();
  count_call(Counted::kCuMemSetAccess);
  if (ptr == 0 || size == 0 || !desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long widest = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  bool host = false;
  for (size_t i = 0; i < count; ++i) {
    unsigned long long f = desc[i].flags;
    if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
      if (!valid_device(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
    } else if (is_host(desc[i].location.type)) {
      host = true;
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (f > widest) widest = f;
  }
  int prot = widest == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
             : widest == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                                                          : PROT_NONE;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> l(v.mu);
    Reservation* r = find_reservation(v, ptr, size);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    bool device_memory = false;
    bool covered = for_each_covering(*r, ptr, size, [&](std::pair<const uintptr_t, Mapping>& m) {
      Handle* h = find_handle(v, m.second.handle);
      if (h && h->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE) device_memory = true;
    });
    if (!covered) return CUDA_ERROR_INVALID_VALUE;
    // Host access can be granted to host-located allocations only.
    if (host && device_memory) return CUDA_ERROR_INVALID_VALUE;
    if (should_fail("cuMemSetAccess")) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t start = ptr & ~(page_size() - 1);
    uintptr_t end = (ptr + size + page_size() - 1) & ~(page_size() - 1);
    if (mprotect(reinterpret_cast<void*>(start), end - start, prot) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    for_each_covering(*r, ptr, size, [&](std::pair<const uintptr_t, Mapping>& m) {
      m.second.prot = prot;
      for (size_t i = 0; i < count; ++i) {
        int key = desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE ? desc[i].location.id : -1;
        m.second.access[key] = desc[i].flags;
      }
    });
  }
  charge(vmm_cost_us(VmmCall::kSetAccess, size));
  return CUDA_SUCCESS;
}

// The rights last granted to `location` over (any part of) the mapping that
// holds `ptr`.
GPUSIM_EXPORT CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  READY();
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  int key;
  if (location->type == CU_MEM_LOCATION_TYPE_DEVICE) {
    if (!valid_device(location->id)) return CUDA_ERROR_INVALID_DEVICE;
    key = location->id;
  } else if (is_host(location->type)) {
    key = -1;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Vmm& v = vmm();
  std::lock_guard<std::mutex> l(v.mu);
  Reservation* r = find_reservation(v, ptr, 1);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  auto m = mapping_at(*r, ptr);
  if (m == r->maps.end()) return CUDA_ERROR_INVALID_VALUE;
  auto a = m->second.access.find(key);
  *flags = a == m->second.access.end() ? static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE)
                                        : a->second;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                                    CUmemAllocationHandleType type, unsigned long long flags) {
  READY();
  if (!shareable || flags) return CUDA_ERROR_INVALID_VALUE;
  if ((type == CU_MEM_HANDLE_TYPE_FABRIC && !config().fabric_handles) || type == CU_MEM_HANDLE_TYPE_WIN32 ||
      type == CU_MEM_HANDLE_TYPE_WIN32_KMT)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && type != CU_MEM_HANDLE_TYPE_FABRIC)
    return CUDA_ERROR_INVALID_VALUE;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> l(v.mu);
  Handle* h = find_handle(v, handle);
  if (!h || h->refs <= 0) return CUDA_ERROR_INVALID_VALUE;
  // Only a handle created with this type requested can be exported to it.
  if (!(h->prop.requestedHandleTypes & type)) return CUDA_ERROR_INVALID_VALUE;
  // The first export moves the handle out of the arena onto a memfd of its
  // own, whose name carries its properties (driver_vmm_backing.h).
  if (!h->backing.own) {
    std::vector<drv::LiveMapping> live;
    for (auto& r : v.reservations)
      for (auto& m : r.second.maps)
        if (m.second.handle == h->id) live.push_back({m.first, m.second.size, m.second.offset, m.second.prot});
    // No op of the simulated device may write the handle's memory while
    // its bytes move (a write to the old pages after their copy would be
    // lost): the workers run nothing meanwhile.
    std::unique_lock<std::shared_timed_mutex> no_access(device_access_lock(), kDeviceAccessWait);
    if (!drv::backing_make_own(&h->backing, h->size, memfd_name(h->prop).c_str(), live))
      return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // A fabric handle names that memfd (Note [A fabric handle names a memfd of its exporter]).
  if (type == CU_MEM_HANDLE_TYPE_FABRIC)
    return drv::fabric_name(h->backing.fd, static_cast<drv::FabricName*>(shareable)) ? CUDA_SUCCESS
                                                                                      : CUDA_ERROR_OUT_OF_MEMORY;
  int fd = fcntl(h->backing.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

namespace {
// A new handle over a duplicate of `fd` (the caller still owns and closes
// it), not charged against the device's capacity again: the exporter's
// handle already is.
CUresult import_fd(CUmemGenericAllocationHandle* handle, int fd) {
  struct stat st;
  CUmemAllocationProp prop;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !prop_from_fd(fd, &prop))
    return CUDA_ERROR_INVALID_VALUE;
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0 || size % kGranularity) return CUDA_ERROR_INVALID_VALUE;
  if (prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE && !valid_device(prop.location.id))
    return CUDA_ERROR_NOT_SUPPORTED;
  Backing b;
  if (!drv::backing_adopt(fd, &b)) return CUDA_ERROR_OUT_OF_MEMORY;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> l(v.mu);
  *handle = add_handle(v, size, prop, b, -1);
  return CUDA_SUCCESS;
}
}  // namespace

// POSIX fd: `os_handle` is the fd itself, cast to a pointer; fabric: a
// CUmemFabricHandle*, opened as Note [A fabric handle names a memfd of its
// exporter] says.
GPUSIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                                      CUmemAllocationHandleType type) {
  READY();
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if ((type == CU_MEM_HANDLE_TYPE_FABRIC && !config().fabric_handles) || type == CU_MEM_HANDLE_TYPE_WIN32 ||
      type == CU_MEM_HANDLE_TYPE_WIN32_KMT)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return import_fd(handle, static_cast<int>(reinterpret_cast<intptr_t>(os_handle)));
  if (type != CU_MEM_HANDLE_TYPE_FABRIC || !os_handle) return CUDA_ERROR_INVALID_VALUE;
  int fd = drv::fabric_open(*static_cast<const drv::FabricName*>(os_handle));
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = import_fd(handle, fd);
  close(fd);
  return r;
}

GPUSIM_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                              CUmemGenericAllocationHandle handle) {
  READY();
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> l(v.mu);
  Handle* h = find_handle(v, handle);
  if (!h) return CUDA_ERROR_INVALID_VALUE;
  *prop = h->prop;
  return CUDA_SUCCESS;
}

// The handle mapped at `addr` (any address inside the mapping), with one more
// reference for the caller to release.
GPUSIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  READY();
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  Vmm& v = vmm();
  std::lock_guard<std::mutex> l(v.mu);
  Reservation* r = find_reservation(v, p, 1);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  auto m = mapping_at(*r, p);
  if (m == r->maps.end()) return CUDA_ERROR_INVALID_VALUE;
  Handle* h = find_handle(v, m->second.handle);
  if (!h) return CUDA_ERROR_INVALID_VALUE;
  ++h->refs;
  *handle = h->id;
  return CUDA_SUCCESS;
}

// The simulated device's memory: one registry of every range it handed out
// or was told about, and the capacity accounting of each device.
#include <sys/mman.h>

#include <cstdio>

#include "sim.h"

namespace gpusim {

Memory& Memory::get() {
  static Memory* m = new Memory();
  return *m;
}

void* Memory::map_anonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void Memory::unmap(void* p, size_t bytes) { munmap(p, bytes ? bytes : 1); }

bool Memory::reserve(int device, size_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  if (used_.size() <= static_cast<size_t>(device)) used_.resize(device + 1, 0);
  if (used_[device] + bytes > config().device_bytes) return false;
  used_[device] += bytes;
  return true;
}

void Memory::unreserve(int device, size_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  if (used_.size() > static_cast<size_t>(device)) used_[device] -= bytes;
}

size_t Memory::used(int device) {
  std::lock_guard<std::mutex> l(mu_);
  return used_.size() > static_cast<size_t>(device) ? used_[device] : 0;
}

void Memory::add(const Region& r) {
  std::lock_guard<std::mutex> l(mu_);
  regions_[r.base] = r;
}

bool Memory::remove(uintptr_t base, Region* out) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = regions_.find(base);
  if (it == regions_.end()) return false;
  if (out) *out = it->second;
  regions_.erase(it);
  return true;
}

bool Memory::find(const void* p, size_t bytes, Region* out) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> l(mu_);
  auto it = regions_.upper_bound(a);
  if (it == regions_.begin()) return false;
  --it;
  const Region& r = it->second;
  if (a < r.base || a - r.base >= (r.size ? r.size : 1)) return false;
  if (bytes > r.size - (a - r.base)) return false;
  if (out) *out = r;
  return true;
}

bool Memory::find_start(const void* p, MemKind a, MemKind b, Region* out) {
  Region r;
  if (!find(p, 1, &r) || r.base != reinterpret_cast<uintptr_t>(p) || (r.kind != a && r.kind != b)) return false;
  *out = r;
  return true;
}

Where classify(const void* p, size_t bytes, int* device) {
  Region r;
  if (!Memory::get().find(p, bytes ? bytes : 1, &r)) return Where::kPageable;
  if (device) *device = r.device;
  switch (r.kind) {
    case MemKind::kDevice:
    case MemKind::kDeviceAsync:
    case MemKind::kVmmReserve:
    case MemKind::kManaged:
      return Where::kDevice;
    case MemKind::kPinned:
    case MemKind::kRegistered:
      return Where::kPinned;
  }
  return Where::kPageable;
}

namespace {
thread_local int t_device = 0;
}

int current_device() { return t_device; }
void set_current_device(int d) { t_device = d; }
bool valid_device(int d) { return d >= 0 && d < config().device_count; }

}  // namespace gpusim

// libcudart.so.13 of the simulated device: IPC of cudaMalloc memory, as the
// CUDA Runtime API's "Device Management" section documents
// cudaIpcGetMemHandle, cudaIpcOpenMemHandle and cudaIpcCloseMemHandle
// (README.md, "IPC of memory").
//
// Note [An exported allocation is a memfd the importer opens]: cudaMalloc
// memory is a private anonymous mapping (cudart_memory.cc). Its first
// cudaIpcGetMemHandle moves it onto a memfd of its own named
// "gpusim-ipc-<serial>" (the device is synchronized first, the data copied
// page by page, all-zero pages left as holes, then the file mapped
// MAP_SHARED over the same addresses), so the exporter keeps its pointer and
// every mapping of the file shows the same bytes; no op of the simulated
// device runs meanwhile (device_access_lock, sim.h). The handle carries the
// exporter's pid, the memfd's descriptor number, the serial, the device and
// the size; another process opens /proc/<pid>/fd/<fd> (the same user's
// processes may: ptrace read access), checks the link's name for the serial
// (the number may have been reused), and maps the file. So a handle is good
// while the exporter lives and the allocation is not freed, as CUDA's; the
// importer's mapping holds the file, so the exporter's cudaFree before the
// importer's close (undefined behaviour in CUDA) leaves the importer's bytes
// readable, not freed under it. No file outlives the processes: nothing is
// named in /dev/shm.
//
// What CUDA documents and this models:
//   - the handle of an allocation is the same for every call until it is
//     freed; a new allocation at the same address gets a new handle;
//   - opened in another process, the same bytes at an address of that
//     process ("no guarantees are made about the address"); opened again in
//     the same process: the same pointer, one more reference; closed as many
//     times as opened, then unmapped;
//   - flags: 0 or cudaIpcMemLazyEnablePeerAccess; another device's handle
//     opens either way (peer access is always possible here);
//   - memory from cudaIpcOpenMemHandle is released by
//     cudaIpcCloseMemHandle, not cudaFree (cudaErrorInvalidValue).
// What CUDA leaves undocumented, as real drivers answer it: a handle opened
// in the process that exported it fails with "invalid device context"
// (cudaErrorDeviceUninitialized; reported against real drivers in
// NVIDIA/DALI#4817 and openucx/ucx#11226), and a handle that names no
// allocation with cudaErrorInvalidValue ("invalid argument",
// NVIDIA/nccl#842).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "cudart_internal.h"

using namespace gpusim;
using namespace gpusim::rt;

namespace {

constexpr char kMagic[8] = {'g', 'p', 'u', 's', 'i', 'm', 'I', 'P'};

// The 64 bytes of a cudaIpcMemHandle_t of the simulated runtime.
struct Wire {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t serial;
  uint64_t size;
  int32_t device;
  char unused[64 - 8 - 4 - 4 - 8 - 8 - 4];
};
static_assert(sizeof(Wire) == sizeof(cudaIpcMemHandle_t), "a handle is 64 bytes");

struct Export {
  int fd = -1;
  uint64_t serial = 0;
};

struct Import {
  uintptr_t base = 0;
  size_t size = 0;
  int device = 0;
  int refs = 0;
};

struct Ipc {
  std::mutex mu;
  std::map<uintptr_t, Export> exports;                   // by allocation base
  std::map<std::pair<int, uint64_t>, Import> imports;    // by (pid, serial)
  std::map<uintptr_t, std::pair<int, uint64_t>> opened;  // base -> its key
};

Ipc& ipc() {
  static Ipc* i = new Ipc();  // never destroyed: mappings outlive main()
  return *i;
}

std::atomic<uint64_t> g_serial{1};

std::string memfd_name(uint64_t serial) { return "gpusim-ipc-" + std::to_string(serial); }

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Copies [p, p + size) into `fd`, leaving all-zero pages as holes.
bool copy_into(int fd, const char* p, size_t size) {
  static const std::string zeros(1 << 16, '\0');
  const size_t page = page_size();
  for (size_t off = 0; off < size; off += page) {
    size_t n = std::min(page, size - off);
    if (std::memcmp(p + off, zeros.data(), n) == 0) continue;
    if (pwrite(fd, p + off, n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) return false;
  }
  return true;
}

// Moves the allocation `r` onto a memfd of its own (Note [An exported
// allocation is a memfd the importer opens]).
bool make_shareable(const Region& r, Export* out) {
  uint64_t serial = g_serial.fetch_add(1);
  int fd = memfd_create(memfd_name(serial).c_str(), MFD_CLOEXEC);
  if (fd < 0) return false;
  size_t len = round_up(r.size ? r.size : 1, page_size());
  char* p = reinterpret_cast<char*>(r.base);
  if (ftruncate(fd, static_cast<off_t>(len)) != 0 || !copy_into(fd, p, r.size) ||
      mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    close(fd);
    return false;
  }
  out->fd = fd;
  out->serial = serial;
  return true;
}

// The exporter's memfd named in `w`, opened here; -1 when the exporter is
// gone or the allocation was freed.
int open_exported(const Wire& w) {
  char path[64], target[128];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", w.pid, w.fd);
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  if (n <= 0) return -1;
  target[n] = '\0';
  if (std::strncmp(target, ("/memfd:" + memfd_name(w.serial) + " ").c_str(),
                   7 + memfd_name(w.serial).size() + 1) != 0)
    return -1;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < w.size) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

namespace gpusim::rt {

void ipc_forget_export(uintptr_t base) {
  Ipc& i = ipc();
  std::lock_guard<std::mutex> l(i.mu);
  auto it = i.exports.find(base);
  if (it == i.exports.end()) return;
  close(it->second.fd);  // importers' mappings keep the file
  i.exports.erase(it);
}

}  // namespace gpusim::rt

GPUSIM_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* p) {
  READY();
  Region r;
  if (!handle || !Memory::get().find_start(p, MemKind::kDevice, MemKind::kDevice, &r) ||
      (r.flags & kRegionIpcImported))
    return ret(cudaErrorInvalidValue);
  Ipc& i = ipc();
  Export e;
  {
    std::lock_guard<std::mutex> l(i.mu);
    auto it = i.exports.find(r.base);
    if (it != i.exports.end()) e = it->second;
  }
  if (e.fd < 0) {
    // Work in flight may still write the allocation: the copy must see it.
    sync_device(r.device);
    std::lock_guard<std::mutex> l(i.mu);
    auto it = i.exports.find(r.base);
    if (it != i.exports.end()) e = it->second;
    else if (std::unique_lock<std::shared_timed_mutex> no_access(device_access_lock(), kDeviceAccessWait);
             make_shareable(r, &e))
      i.exports[r.base] = e;
    else return ret(cudaErrorMemoryAllocation);
  }
  Wire w{};
  std::memcpy(w.magic, kMagic, sizeof(kMagic));
  w.pid = static_cast<int32_t>(getpid());
  w.fd = e.fd;
  w.serial = e.serial;
  w.size = r.size;
  w.device = r.device;
  std::memcpy(handle, &w, sizeof(w));
  return cudaSuccess;
}

GPUSIM_EXPORT cudaError_t cudaIpcOpenMemHandle(void** p, cudaIpcMemHandle_t handle, unsigned flags) {
  READY();
  if (!p || (flags & ~static_cast<unsigned>(cudaIpcMemLazyEnablePeerAccess))) return ret(cudaErrorInvalidValue);
  *p = nullptr;
  Wire w;
  std::memcpy(&w, &handle, sizeof(w));
  if (std::memcmp(w.magic, kMagic, sizeof(kMagic)) != 0 || w.size == 0) return ret(cudaErrorInvalidValue);
  if (w.pid == static_cast<int32_t>(getpid())) return ret(cudaErrorDeviceUninitialized);
  if (!valid_device(w.device)) return ret(cudaErrorInvalidDevice);
  Ipc& i = ipc();
  std::lock_guard<std::mutex> l(i.mu);
  auto key = std::make_pair(static_cast<int>(w.pid), w.serial);
  auto it = i.imports.find(key);
  if (it != i.imports.end()) {
    ++it->second.refs;
    *p = reinterpret_cast<void*>(it->second.base);
    return cudaSuccess;
  }
  int fd = open_exported(w);
  if (fd < 0) return ret(cudaErrorInvalidValue);
  size_t len = round_up(w.size, page_size());
  void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the mapping holds the file
  if (mem == MAP_FAILED) return ret(cudaErrorMapBufferObjectFailed);
  uintptr_t base = reinterpret_cast<uintptr_t>(mem);
  // Not charged against this process's device: the exporter's allocation is.
  Memory::get().add(Region(mem, w.size, MemKind::kDevice, w.device, kRegionIpcImported, 0));
  i.imports[key] = Import{base, w.size, w.device, 1};
  i.opened[base] = key;
  *p = mem;
  return cudaSuccess;
}

GPUSIM_EXPORT cudaError_t cudaIpcCloseMemHandle(void* p) {
  READY();
  Ipc& i = ipc();
  Import im;
  {
    std::lock_guard<std::mutex> l(i.mu);
    auto o = i.opened.find(reinterpret_cast<uintptr_t>(p));
    if (o == i.opened.end()) return ret(cudaErrorInvalidValue);
    auto it = i.imports.find(o->second);
    if (--it->second.refs > 0) return cudaSuccess;
    im = it->second;
    i.imports.erase(it);
    i.opened.erase(o);
    Memory::get().remove(im.base, nullptr);
  }
  // Work queued on the device may still use the mapping.
  sync_device(im.device);
  munmap(reinterpret_cast<void*>(im.base), round_up(im.size, page_size()));
  return cudaSuccess;
}

// ---- interprocess events ----
//
// Note [An interprocess event is a shared page]: an event created with
// cudaEventInterprocess gets a page of its own memfd
// ("gpusim-ipc-event-<serial>") holding two counters: records made (by any
// process holding the event) and the highest record the device reached. A
// record bumps the first at once and enqueues, behind the stream's work, an
// op that raises the second to it; so a query or a synchronize in any
// process compares the two, and cudaStreamWaitEvent on an event opened from
// another process holds the waiting stream (its worker sleeps in 50 µs
// steps) until the device reached the record seen when the wait was
// enqueued. The exporter's own queries keep using its local record (the
// same answer, exactly). Records made while a stream captures stay in the
// graph only. cudaIpcOpenEventHandle returns "an event that behaves like a
// locally created event with cudaEventDisableTiming" (CUDA Runtime API,
// cudaIpcOpenEventHandle), destroyed with cudaEventDestroy.
namespace {

struct EventPage {
  std::atomic<uint64_t> recorded;
  std::atomic<uint64_t> reached;
};

struct IpcEvent {
  EventPage* page = nullptr;
  int fd = -1;           // the exporter's memfd (-1 in an importer)
  uint64_t serial = 0;
  bool imported = false;
};

// The 64 bytes of a cudaIpcEventHandle_t of the simulated runtime.
struct EventWire {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t serial;
  char unused[64 - 8 - 4 - 4 - 8];
};
static_assert(sizeof(EventWire) == sizeof(cudaIpcEventHandle_t), "a handle is 64 bytes");
constexpr char kEventMagic[8] = {'g', 'p', 'u', 's', 'i', 'm', 'I', 'E'};

std::string event_memfd_name(uint64_t serial) { return "gpusim-ipc-event-" + std::to_string(serial); }

EventPage* map_page(int fd) {
  void* p = mmap(nullptr, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<EventPage*>(p);
}

void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load();
  while (cur < v && !a.compare_exchange_weak(cur, v)) {
  }
}

}  // namespace

namespace gpusim::rt {

bool ipc_event_create(CUevent_st* e) {
  auto* ev = new IpcEvent();
  ev->serial = g_serial.fetch_add(1);
  ev->fd = memfd_create(event_memfd_name(ev->serial).c_str(), MFD_CLOEXEC);
  if (ev->fd < 0 || ftruncate(ev->fd, static_cast<off_t>(page_size())) != 0 || !(ev->page = map_page(ev->fd))) {
    if (ev->fd >= 0) close(ev->fd);
    delete ev;
    return false;
  }
  e->ipc = ev;
  return true;
}

void ipc_event_record(CUevent_st* e, CUstream_st* s) {
  if (is_capturing(s)) return;
  EventPage* page = static_cast<IpcEvent*>(e->ipc)->page;
  uint64_t gen = page->recorded.fetch_add(1) + 1;
  enqueue(s, [page, gen] { raise_to(page->reached, gen); });
}

bool ipc_event_done(CUevent_st* e) {
  auto* ev = static_cast<IpcEvent*>(e->ipc);
  if (!ev->imported) return event_done(e);
  return ev->page->reached.load() >= ev->page->recorded.load();
}

void ipc_event_sync(CUevent_st* e) {
  auto* ev = static_cast<IpcEvent*>(e->ipc);
  if (!ev->imported) return sync_event(e);
  uint64_t target = ev->page->recorded.load();
  while (ev->page->reached.load() < target) usleep(50);
}

void ipc_event_wait(CUstream_st* s, CUevent_st* e) {
  auto* ev = static_cast<IpcEvent*>(e->ipc);
  if (!ev->imported) return wait_event(s, e);
  EventPage* page = ev->page;
  uint64_t target = page->recorded.load();
  if (page->reached.load() >= target) return;
  enqueue(s, [page, target] {
    while (page->reached.load() < target) usleep(50);
  });
}

void ipc_event_destroy(CUevent_st* e) {
  auto* ev = static_cast<IpcEvent*>(e->ipc);
  munmap(ev->page, page_size());
  if (ev->fd >= 0) close(ev->fd);
  delete ev;
  e->ipc = nullptr;
}

}  // namespace gpusim::rt

GPUSIM_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t e) {
  READY();
  if (!handle) return ret(cudaErrorInvalidValue);
  if (!e || !e->ipc || static_cast<IpcEvent*>(e->ipc)->imported) return ret(cudaErrorInvalidResourceHandle);
  auto* ev = static_cast<IpcEvent*>(e->ipc);
  EventWire w{};
  std::memcpy(w.magic, kEventMagic, sizeof(kEventMagic));
  w.pid = static_cast<int32_t>(getpid());
  w.fd = ev->fd;
  w.serial = ev->serial;
  std::memcpy(handle, &w, sizeof(w));
  return cudaSuccess;
}

GPUSIM_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* e, cudaIpcEventHandle_t handle) {
  READY();
  if (!e) return ret(cudaErrorInvalidValue);
  EventWire w;
  std::memcpy(&w, &handle, sizeof(w));
  if (std::memcmp(w.magic, kEventMagic, sizeof(kEventMagic)) != 0) return ret(cudaErrorInvalidValue);
  if (w.pid == static_cast<int32_t>(getpid())) return ret(cudaErrorDeviceUninitialized);
  char path[64], target[128];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", w.pid, w.fd);
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  if (n <= 0) return ret(cudaErrorInvalidValue);
  target[n] = '\0';
  std::string want = "/memfd:" + event_memfd_name(w.serial) + " ";
  if (std::strncmp(target, want.c_str(), want.size()) != 0) return ret(cudaErrorInvalidValue);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return ret(cudaErrorInvalidValue);
  EventPage* page = map_page(fd);
  close(fd);
  if (!page) return ret(cudaErrorMapBufferObjectFailed);
  auto* ev = new IpcEvent();
  ev->page = page;
  ev->serial = w.serial;
  ev->imported = true;
  *e = new CUevent_st();
  (*e)->flags = cudaEventDisableTiming | cudaEventInterprocess;
  (*e)->ipc = ev;
  return cudaSuccess;
}
